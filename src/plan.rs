//! The plan: from the parsed options to what will run (the counterpart of ripgrep's
//! "high-level arguments").
//!
//! Owns: every piece of set-up I/O — stating inputs and finding the total size, reading
//! `-s @PATH`, counting lines for `-l`, opening `-o` (truncated only if some input is not
//! the output), writing the `-P` pid file, creating the `-U` store, expanding `-d` items,
//! probing the terminal (size, locale, colour) — and the engine's settings. Must not: move
//! data, start threads or draw: the app module runs what the plan describes.
//!
//! `-U` and `-M` are plans of their own (two phases; two sides), not rewritten options.

use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::cli::{Action, MonitorSide, Options, SizeArg, TermProgress, Voice};
use crate::control::Changes;
use crate::display::{BarStyle, DisplaySwitches};
use crate::error::{status, Error};
use crate::meter::{Role, Unit};
use crate::ownfile::{self, Own};
use crate::sink::{self, DisplayConfig, Style};
use crate::source::engine::EngineMeter;
use crate::source::watch::items::{self, Target};
use crate::sys::{self, FileKind};
use crate::transfer::output::Modifiers;
pub(crate) use crate::transfer::output::Output;
use crate::transfer::outputs::{OutputMeter, TeeOutput};
use crate::transfer::{self, input, Hooks, InputSpec, Settings};
use crate::{signals, term};

/// One transfer: the engine's settings, where it writes, and how its meter is shown.
#[derive(Debug)]
pub(crate) struct TransferPlan {
    /// What the engine does.
    pub settings: Settings,
    /// Where it writes.
    pub output: Output,
    /// How its progress is shown.
    pub meter: EngineMeter,
}

impl TransferPlan {
    /// A run this short needs no data thread: no rate limit, and every input a regular file,
    /// together no bigger than a pipe holds (so no write waits long for a reader). The main
    /// thread copies, then shows the end.
    pub(crate) fn is_small(&self) -> bool {
        const SMALL: u64 = 64 << 10;
        if self.settings.rate_limit > 0 {
            return false;
        }
        let mut total = 0u64;
        for input in &self.settings.inputs {
            match input.info() {
                Ok(info) if info.kind == FileKind::Regular => total += info.size,
                _ => return false,
            }
            if total > SMALL {
                return false;
            }
        }
        true
    }
}

/// `-U`: where the data is stored between the two phases.
#[derive(Debug)]
pub(crate) enum Store {
    /// `-U -`: a file without a name (the kernel removes it however rpv ends).
    Unnamed(File),
    /// `-U FILE`.
    Path(PathBuf),
}

/// `-M SIDE -- COMMAND ARGS`.
#[derive(Debug)]
pub(crate) struct MonitorPlan {
    /// Which side(s).
    pub side: MonitorSide,
    /// The command.
    pub command: OsString,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// rpv's output (the command writes there directly with `-M in`).
    pub output: Output,
}

/// `-d`: what to watch.
#[derive(Debug)]
pub(crate) struct WatchPlan {
    /// The targets, resolved.
    pub targets: Vec<Target>,
    /// Items that found nothing (`=NAME` without a match): messages, status 2.
    pub problems: Vec<String>,
    /// `-s`, for a single `PID:FD`.
    pub size: Option<u64>,
}

/// What runs.
#[derive(Debug)]
pub(crate) enum Job {
    /// Copy the inputs to the output.
    Transfer(TransferPlan),
    /// `-U`: the first phase (inputs to the store); the second is planned when it is over.
    Store(TransferPlan, Store),
    /// `-M`.
    Monitor(MonitorPlan),
    /// `-d`.
    Watch(WatchPlan),
    /// `-Q PID`.
    Query(u32),
    /// `-R PID`.
    Remote(u32, Changes),
    /// `--pipeline=PID`: watch the pipeline PID belongs to.
    Pipeline(u32),
    /// `--top`: every data flow rpv may see.
    Top,
}

/// Everything a run needs.
#[derive(Debug)]
pub(crate) struct Plan {
    /// What to show and how.
    pub display: DisplayConfig,
    /// What runs.
    pub job: Job,
}

/// Makes the plan for `o`. The files rpv writes for itself (`-P`, `--metrics-file`) are
/// checked, then written first, like pv's pid file.
pub(crate) fn plan(o: &Options) -> Result<Plan, Error> {
    let pidfile = o.pidfile.as_deref().map(|path| Own {
        option: "-P",
        path,
        what: "pid",
    });
    let metrics = o
        .metrics_file
        .as_deref()
        .filter(|_| !matches!(o.action, Action::Remote(_)))
        .map(|path| Own {
            option: "--metrics-file",
            path,
            what: "metrics",
        });
    if let Some(own) = pidfile {
        ownfile::check_kind(own.option, own.path)?;
        ownfile::check_clashes(o, own, metrics.as_slice())?;
    }
    if let Some(own) = metrics {
        ownfile::check_kind(own.option, own.path)?;
        ownfile::check_clashes(o, own, &[])?;
    }
    if let Some(own) = pidfile {
        write_pidfile(own.path)?;
    }
    if let Some(own) = metrics {
        start_metrics(own.path, o)?;
    }
    let display = display(o);
    let job = match &o.action {
        // `--pipeline` without a PID: a transfer that also shows its own pipeline.
        Action::Transfer | Action::Pipeline(None) => {
            let inputs = operands(o);
            let output = open_output(o.output.as_deref(), &inputs, notices(&display))?;
            let tees = open_tees(o, &inputs, notices(&display))?;
            let sizing = Sizing::Inputs(&o.size);
            Job::Transfer(transfer(
                o,
                &display,
                inputs,
                output,
                Role::Transfer,
                sizing,
                tees,
            )?)
        }
        Action::StoreAndForward(path) => {
            let inputs = operands(o);
            let (store, output) = if path.as_os_str() == "-" {
                let file = tempfile::tempfile().map_err(temp_failed)?;
                // The writer is the same file opened again, not a duplicate of `file`: a
                // duplicate shares its position, and a store phase ended by a stall leaves
                // its data thread in a splice that, when it returns, puts back the position
                // it started from, after the forward phase has rewound it (the forward then
                // read nothing). A duplicate only where the file cannot be opened again.
                let reopened = std::fs::OpenOptions::new()
                    .write(true)
                    .open(crate::procfs::own_fd_path(file.as_raw_fd()));
                let writer = match reopened {
                    Ok(writer) => writer,
                    Err(_) => file.try_clone().map_err(|err| Error::OwnFile {
                        option: None,
                        path: path.clone(),
                        err,
                    })?,
                };
                (Store::Unnamed(file), Output::File(Arc::new(writer)))
            } else {
                ownfile::check_kind("-U", path)?;
                let file = open_store(path, &inputs)?;
                (Store::Path(path.clone()), Output::File(Arc::new(file)))
            };
            // The tees get the forwarded data, in the second phase.
            let sizing = Sizing::Inputs(&o.size);
            let mut first = transfer(
                o,
                &display,
                inputs,
                output,
                Role::Transfer,
                sizing,
                Vec::new(),
            )?;
            // A write error there is the store's, not the output's.
            first.settings.output_name = Some(if path.as_os_str() == "-" {
                format!("-U - (in {})", std::env::temp_dir().display())
            } else {
                format!("-U {}", path.display())
            });
            Job::Store(first, store)
        }
        Action::Monitor(side) => {
            let Some((command, args)) = o.files.split_first() else {
                return Err(Error::Usage(
                    "-M: a command to run must be specified".into(),
                ));
            };
            let output = monitor_output(o, &display)?;
            Job::Monitor(MonitorPlan {
                side: *side,
                command: command.clone(),
                args: args.to_vec(),
                output,
            })
        }
        Action::WatchFd(raw) => Job::Watch(watch(o, raw)?),
        Action::Query(pid) => Job::Query(*pid),
        Action::Remote(pid) => Job::Remote(*pid, changes_from(o)?),
        Action::Pipeline(Some(pid)) => Job::Pipeline(*pid),
        Action::Top => Job::Top,
    };
    Ok(Plan { display, job })
}

/// The second phase of `-U`: the store, now complete, to the output with its known size.
pub(crate) fn second_phase(
    o: &Options,
    display: &DisplayConfig,
    store: Store,
) -> Result<TransferPlan, Error> {
    let input = match store {
        Store::Unnamed(file) => {
            sys::lseek(file.as_fd(), 0, libc::SEEK_SET).map_err(|err| Error::OwnFile {
                option: None,
                path: std::env::temp_dir(),
                err,
            })?;
            InputSpec::new(
                transfer::InputSource::Fd(OwnedFd::from(file)),
                "(stored)".into(),
            )
        }
        Store::Path(path) => InputSpec::operand(path.as_os_str()),
    };
    let inputs = vec![input];
    let output = open_output(o.output.as_deref(), &inputs, notices(display))?;
    let tees = open_tees(o, &inputs, notices(display))?;
    // The store's own size, whatever -s said about the input.
    let sizing = Sizing::Inputs(&SizeArg::Auto);
    transfer(o, display, inputs, output, Role::Transfer, sizing, tees)
}

/// One side of `-M`: `input` (stdin, or the command's output) to `output`. The input side's
/// size comes from the inputs; the output side's only from `-s` or an output block device.
pub(crate) fn monitor_side(
    o: &Options,
    display: &DisplayConfig,
    input: InputSpec,
    output: Output,
    role: Role,
) -> Result<TransferPlan, Error> {
    let sizing = if role == Role::MonitorOut {
        Sizing::Given(&o.size)
    } else {
        Sizing::Inputs(&o.size)
    };
    transfer(o, display, vec![input], output, role, sizing, Vec::new())
}

/// The inputs named on the command line (none: standard input).
fn operands(o: &Options) -> Vec<InputSpec> {
    if o.files.is_empty() {
        vec![InputSpec::operand("-".as_ref())]
    } else {
        o.files.iter().map(|f| InputSpec::operand(f)).collect()
    }
}

/// Where a transfer's total size comes from.
#[derive(Debug, Clone, Copy)]
enum Sizing<'a> {
    /// `-s` if given, else the inputs.
    Inputs(&'a SizeArg),
    /// `-s` only (the inputs are a pipe whose size nobody knows).
    Given(&'a SizeArg),
}

/// Plans one transfer of `inputs` to `output`.
fn transfer(
    o: &Options,
    display: &DisplayConfig,
    mut inputs: Vec<InputSpec>,
    output: Output,
    role: Role,
    sizing: Sizing<'_>,
    tees: Vec<TeeOutput>,
) -> Result<TransferPlan, Error> {
    let (size, implied_stop) = detect_size(o, &mut inputs, sizing, output.fd())?;
    let unit = if o.line_mode {
        Unit::Lines
    } else {
        Unit::Bytes
    };
    let probe = crate::meter::MeterState {
        role,
        size,
        ..crate::meter::MeterState::default()
    };
    let mut capture = sink::shows_tail(&display.format_text(&probe));
    if let Some(spec) = display.extra.as_deref() {
        let spec = term::ExtraSpec::parse(spec);
        capture |= spec.format.as_deref().is_some_and(sink::shows_tail);
    }
    let hooks = Hooks::from_env();
    // Modifiers and the read-error hook work on the read/write path. -E in line mode too:
    // the fast -l path counts from a mapping of the file, and a bad sector there would be a
    // SIGBUS instead of a read error to skip.
    let needs_rw = o.discard
        || o.sparse
        || o.sync
        || o.direct_io
        || (o.line_mode && o.skip_errors > 0)
        || !hooks.read_errors.is_empty();
    let settings = Settings {
        inputs,
        line_mode: o.line_mode,
        separator: if o.null { 0 } else { b'\n' },
        // %A and %L need the bytes: rpv then uses read/write (pv leaves them blank). Line
        // mode picks its own paths.
        zero_copy: !o.no_splice && !capture && !needs_rw,
        buffer_size: if o.buffer_size > 0 {
            usize::try_from(o.buffer_size).unwrap_or(usize::MAX)
        } else {
            transfer::DEFAULT_BUFFER
        },
        rate_limit: o.rate_limit,
        // -S with an unknown size passes everything through (pv 1.11 passes nothing).
        stop_at: ((o.stop_at_size || implied_stop) && size > 0).then_some(size),
        capture,
        modifiers: Modifiers {
            discard: o.discard,
            sparse: o.sparse,
            sync: o.sync,
            direct: o.direct_io,
        },
        skip_errors: o.skip_errors,
        skip_block: o.error_skip_block,
        hooks,
        tee_error: o.tee_error,
        tees,
        output_name: None,
    };
    let outputs = settings
        .tees
        .iter()
        .map(|t| (t.name.clone(), Arc::clone(&t.meter)))
        .collect();
    let meter = EngineMeter {
        id: match role {
            Role::MonitorOut => 2,
            _ => 1,
        },
        role,
        unit,
        size,
        wait: o.wait,
        partner: match role {
            Role::MonitorIn => Some(2),
            Role::MonitorOut => Some(1),
            _ => None,
        },
        capture,
        each: o.each || o.voice == Voice::Json,
        outputs,
        command: None,
    };
    Ok(TransferPlan {
        settings,
        output,
        meter,
    })
}

/// The total size: bytes or lines; 0 = unknown. Also whether `-S` is implied by an output
/// block device (its size is the total).
fn detect_size(
    o: &Options,
    inputs: &mut [InputSpec],
    sizing: Sizing<'_>,
    out: BorrowedFd<'_>,
) -> Result<(u64, bool), Error> {
    let (given, sized) = match sizing {
        Sizing::Inputs(given) => (given, true),
        Sizing::Given(given) => (given, false),
    };
    let size = match given {
        SizeArg::Value(n) => *n,
        SizeArg::Path(p) => input::size_of_path(p)?,
        SizeArg::Auto if !sized => 0,
        SizeArg::Auto if o.line_mode => {
            input::total_lines(inputs, if o.null { 0 } else { b'\n' }).unwrap_or(0)
        }
        SizeArg::Auto => input::total_bytes(inputs),
    };
    if size == 0 && !o.line_mode {
        if let Ok(info) = sys::fstat(out) {
            let append = sys::status_flags(out)
                .map(|f| f & libc::O_APPEND != 0)
                .unwrap_or(true);
            if info.kind == FileKind::Block && !append {
                if let Ok(end) = sys::lseek(out, 0, libc::SEEK_END) {
                    let _ = sys::lseek(out, 0, libc::SEEK_SET);
                    return Ok((end, true));
                }
            }
        }
    }
    Ok((size, false))
}

/// Opens `-o FILE` (`-` or none: standard output) without truncating it, and truncates it
/// only if at least one input is not the output itself: `rpv -o x x` leaves `x` intact (pv
/// empties it first). The open is not restarted after a signal, so a Ctrl-C while waiting
/// for a FIFO's reader ends rpv at once. With `notice`, a FIFO without a reader is said to
/// be waited for while the open waits.
pub(crate) fn open_output(
    path: Option<&Path>,
    inputs: &[InputSpec],
    notice: bool,
) -> Result<Output, Error> {
    let Some(path) = path.filter(|p| p.as_os_str() != "-") else {
        return Ok(Output::Stdout);
    };
    let which = notice.then_some("-o");
    Ok(Output::File(Arc::new(open_file_output(
        path, inputs, which,
    )?)))
}

/// The output of `-M` (`-o FILE`, or standard output). rpv's standard input goes through
/// the command (or is the command's own, with `-M out`) to that output: when it is the same
/// file, the run is refused (status 4) before anything is truncated, as the plain
/// `rpv -o f < f` is.
fn monitor_output(o: &Options, display: &DisplayConfig) -> Result<Output, Error> {
    let stdin = InputSpec::operand("-".as_ref());
    let output = open_output(
        o.output.as_deref(),
        std::slice::from_ref(&stdin),
        notices(display),
    )?;
    let clash = match (stdin.info(), sys::fstat(output.fd())) {
        (Ok(input), Ok(out)) => input::is_output(&input, &out),
        _ => false,
    };
    if clash {
        return Err(Error::InputIsOutput { name: stdin.name });
    }
    Ok(output)
}

/// Whether set-up may say on the terminal what it waits for (a FIFO's reader): the
/// progress display is shown there.
fn notices(display: &DisplayConfig) -> bool {
    display.enabled && display.stderr_tty && !display.voice.records()
}

/// Opens an output file (`-o`, `--tee`): created if missing, truncated only if some input
/// is not that file. `which` (the option) is named in the notice shown while a FIFO waits
/// for its reader, if given.
fn open_file_output(path: &Path, inputs: &[InputSpec], which: Option<&str>) -> Result<File, Error> {
    let failed = |err| Error::Output {
        path: Some(path.to_path_buf()),
        err,
    };
    let file = match which {
        Some(which) => open_fifo_saying_so(path, which),
        None => open_for_writing(path),
    }
    .map_err(failed)?;
    let out_info = sys::fstat(file.as_fd()).map_err(failed)?;
    if crate::stdio::reaches_closed(path, &out_info) {
        return Err(failed(io::Error::from_raw_os_error(libc::EBADF)));
    }
    // rpv's own input pipe (`--tee /dev/stdin` with a pipe on stdin): what it wrote would
    // come back as input, for ever.
    if out_info.kind == FileKind::Pipe {
        let same_pipe = |i: &&InputSpec| {
            i.info().is_ok_and(|info| {
                info.kind == FileKind::Pipe && (info.dev, info.ino) == (out_info.dev, out_info.ino)
            })
        };
        if let Some(input) = inputs.iter().find(same_pipe) {
            return Err(Error::InputIsOutput {
                name: input.name.clone(),
            });
        }
    }
    if out_info.kind == FileKind::Regular {
        let is_out = |i: &InputSpec| {
            i.info()
                .is_ok_and(|info| input::is_output(&info, &out_info))
        };
        if inputs.is_empty() || !inputs.iter().all(is_out) {
            sys::ftruncate(file.as_fd(), 0).map_err(failed)?;
        }
    }
    Ok(file)
}

/// Opens every `--tee` path the way `-o` is opened (`-` is a second descriptor for standard
/// output, for `-o FILE --tee -`).
fn open_tees(o: &Options, inputs: &[InputSpec], notice: bool) -> Result<Vec<TeeOutput>, Error> {
    let open = |path: &PathBuf| -> Result<TeeOutput, Error> {
        let shared = path.as_os_str() == "-";
        let file = if shared {
            sys::stdout_fd()
                .try_clone_to_owned()
                .map(File::from)
                .map_err(|err| Error::Output { path: None, err })?
        } else {
            open_file_output(path, inputs, notice.then_some("--tee"))?
        };
        let meter = Arc::new(OutputMeter::for_file(&file));
        Ok(TeeOutput {
            file,
            name: path.to_string_lossy().into_owned(),
            path: path.clone(),
            meter,
            shared,
        })
    };
    o.tees.iter().map(open).collect()
}

/// Like [`open_for_writing`]; but when `path` is a FIFO that no process reads yet (the open
/// would wait for one), a line on the terminal says so (`rpv: waiting for a reader of
/// PATH (--tee)`) until the reader comes, instead of a blank screen.
fn open_fifo_saying_so(path: &Path, which: &str) -> io::Result<File> {
    use rustix::fs::{Mode, OFlags};
    if !sys::stat(path).is_ok_and(|i| i.kind == FileKind::Pipe) {
        return open_for_writing(path);
    }
    // A writer's non-blocking open of a FIFO fails with ENXIO while it has no reader.
    let flags = OFlags::WRONLY | OFlags::NONBLOCK | OFlags::CLOEXEC;
    match rustix::fs::open(path, flags, Mode::empty()) {
        Ok(fd) => {
            let file = File::from(fd);
            sys::set_nonblocking(file.as_fd(), false)?;
            return Ok(file);
        }
        Err(rustix::io::Errno::NXIO) => {}
        Err(_) => return open_for_writing(path),
    }
    let prog = std::env::args_os()
        .next()
        .and_then(|a| Some(Path::new(&a).file_name()?.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "rpv".into());
    let text = format!(
        "{prog}: waiting for a reader of {} ({which})",
        crate::display::printable(&path.to_string_lossy())
    );
    let width = crate::screen::usable_width(crate::term::size(0, 0).0);
    let text = crate::screen::cut(&text, width, crate::term::utf8_locale());
    let mut term = crate::term::Term::new(&prog);
    term.raw(&format!("{text}\r"));
    let opened = open_for_writing(path);
    // The notice goes once the reader came (or the wait ended): the display starts there.
    let blank = " ".repeat(crate::display::display_width(&text));
    term.raw(&format!("{blank}\r"));
    opened
}

/// `open(path, O_WRONLY|O_CREAT|O_CLOEXEC, 0666)`, retried after a signal unless the user
/// asked rpv to exit (std's `File::open` always retries).
fn open_for_writing(path: &Path) -> io::Result<File> {
    use rustix::fs::{Mode, OFlags};
    loop {
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::CLOEXEC;
        match rustix::fs::open(path, flags, Mode::from_raw_mode(0o666)) {
            Ok(fd) => return Ok(File::from(fd)),
            Err(rustix::io::Errno::INTR) if signals::exit_requested() => {
                return Err(io::Error::from(io::ErrorKind::Interrupted));
            }
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
}

/// `-U -`: the temporary file could not be made; the message names the directory, and
/// `TMPDIR` when that is where it came from.
fn temp_failed(err: io::Error) -> Error {
    let dir = std::env::temp_dir();
    let from = if std::env::var_os("TMPDIR").is_some_and(|v| !v.is_empty()) {
        " (TMPDIR)"
    } else {
        ""
    };
    Error::other(
        status::REMOTE_OR_PID,
        format!(
            "-U -: cannot make a temporary file in {}{from}: {}",
            dir.display(),
            sys::strerror(&err)
        ),
    )
}

/// `-U FILE`: the store is written, then read back, so it must be a regular file (or not
/// exist yet): `/dev/null` would lose the data, `/dev/zero` give zeros for ever, a FIFO
/// wait for a reader that is rpv itself. Opened without waiting (a FIFO put there after
/// [`ownfile::check_kind`] is refused too), truncated unless every input is the store (then
/// the engine refuses them: input file is output file). Problems are the store's (status
/// 1, kind `file`), not the output's.
fn open_store(path: &Path, inputs: &[InputSpec]) -> Result<File, Error> {
    use rustix::fs::{Mode, OFlags};
    let failed = |err| Error::OwnFile {
        option: None,
        path: path.to_path_buf(),
        err,
    };
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let file = loop {
        match rustix::fs::open(path, flags, Mode::from_raw_mode(0o666)) {
            Ok(fd) => break File::from(fd),
            Err(rustix::io::Errno::INTR) if !signals::exit_requested() => {}
            Err(e) => return Err(failed(e.into())),
        }
    };
    let info = sys::fstat(file.as_fd()).map_err(failed)?;
    if info.kind != FileKind::Regular {
        return Err(Error::NotRegular {
            option: "-U",
            path: path.to_path_buf(),
            dir: false,
        });
    }
    sys::set_nonblocking(file.as_fd(), false).map_err(failed)?;
    let is_store = |i: &InputSpec| i.info().is_ok_and(|i| input::is_output(&i, &info));
    if inputs.is_empty() || !inputs.iter().all(is_store) {
        sys::ftruncate(file.as_fd(), 0).map_err(failed)?;
    }
    Ok(file)
}

/// `--metrics-file`: the first version of the file (nothing moved yet, not done), which
/// also tells at once whether its directory takes files.
fn start_metrics(path: &Path, o: &Options) -> Result<(), Error> {
    let pid = std::process::id();
    let state = sink::metrics::State {
        pid,
        start_time: None,
        done: false,
        exit: None,
    };
    let text = if o.action == Action::Top {
        let (secs, millis) = sys::unix_time_ms();
        let totals = crate::top::metrics::Totals {
            now: secs as f64 + f64::from(millis) / 1000.0,
            ..Default::default()
        };
        crate::top::metrics::render(&[], 0, false, &totals)
    } else {
        sink::metrics::render(None, o.name.as_deref().unwrap_or(""), state)
    };
    ownfile::replace(path, text.as_bytes()).map_err(|err| Error::OwnFile {
        option: Some("--metrics-file"),
        path: path.to_path_buf(),
        err,
    })
}

/// Writes `"<pid>\n"` to `path` atomically ([`ownfile::replace`]: only a regular file, or
/// nothing, is ever replaced; pv would rename over a device node) and registers it for
/// removal at exit (only if it is still that file then).
fn write_pidfile(path: &Path) -> Result<(), Error> {
    let text = format!("{}\n", std::process::id());
    let ours =
        ownfile::replace_identified(path, text.as_bytes()).map_err(|err| Error::OwnFile {
            option: None,
            path: path.to_path_buf(),
            err,
        })?;
    crate::cleanup::register(path.to_path_buf(), ours);
    Ok(())
}

/// The display settings of the options, with the terminal probed.
pub(crate) fn display(o: &Options) -> DisplayConfig {
    let stderr_tty = sys::isatty(sys::stderr_fd());
    let mut config = DisplayConfig {
        // Only an explicit empty -F turns the display off; `-A 0` alone draws empty lines.
        // `--top` prints its frames into a file or pipe too.
        enabled: (stderr_tty || o.force || o.numeric || o.action == Action::Top)
            && !o.quiet
            && o.format.as_deref() != Some(""),
        force: o.force,
        cursor: o.cursor && !o.numeric,
        stats: o.stats,
        switches: switches(o),
        format: o.format.clone(),
        prev_format: o.prev_format.clone(),
        name: o.name.clone(),
        prev_name: o.prev_name.clone(),
        extra: o.extra_display.clone(),
        fixed: (o.width, o.height),
        width: 80,
        height: 25,
        style: Style {
            numeric: o.numeric,
            si: o.si,
            bits: o.bits,
            gauge: o.gauge,
            bar_style: BarStyle::from_name(o.bar_style.as_deref().unwrap_or("plain")),
            utf8: term::utf8_locale(),
            colour: term::colour_allowed(o.force),
        },
        stderr_tty,
        trace: std::env::var_os("RPV_TEST_TRACE").is_some(),
        interval_ns: (o.interval * 1e9) as u64,
        delay_ns: (o.delay_start * 1e9) as u64,
        average_window: o.average_window,
        // `--top` has nothing to answer `-Q` with.
        control: o.action != Action::Top,
        each: o.each,
        voice: o.voice,
        quiet: o.quiet,
        pipeline: matches!(o.action, Action::Pipeline(_)),
        // Into a pipe or file too with `always`; never with --json or --log, whose every
        // line is an object or a record (a terminal included).
        term_progress: !o.voice.records()
            && match o.term_progress {
                TermProgress::Never => false,
                TermProgress::Always => true,
                TermProgress::Auto => {
                    stderr_tty && !o.quiet && term::progress::supported(&|k| std::env::var(k).ok())
                }
            },
        notify: sink::notify::Notifier::from_env().map(Arc::new),
        metrics_file: o.metrics_file.clone(),
        top: (o.action == Action::Top).then_some(crate::top::TopConfig {
            metrics_flows: o.metrics_flows.unwrap_or(crate::cli::DEFAULT_METRICS_FLOWS),
            metrics_pid: o.metrics_pid,
            once: o.once,
        }),
        // A transfer's watchdog: watching (-d, -Q, --pipeline=PID) moves nothing of rpv's.
        stall_timeout: o.stall_timeout.filter(|_| {
            matches!(
                o.action,
                Action::Transfer
                    | Action::StoreAndForward(_)
                    | Action::Monitor(_)
                    | Action::Pipeline(None)
            )
        }),
    };
    if o.voice == Voice::Log && !o.given('i') {
        // A log gets a line every 10 seconds unless -i says otherwise.
        config.interval_ns = 10_000_000_000;
    }
    config.measure();
    config
}

/// The display switches of the options; none given means `-p -t -e -r -b`.
pub(crate) fn switches(o: &Options) -> DisplaySwitches {
    let given = if o.display_switches == 0 {
        DisplaySwitches::from_letters("pterb")
    } else {
        o.switches
    };
    DisplaySwitches {
        last_written: o.last_written,
        name: o.name.is_some(),
        numeric: o.numeric,
        ..given
    }
}

/// `-d`: resolves the items (reads `@LISTFILE`s, runs `pgrep` for `=NAME`).
fn watch(o: &Options, raw: &[OsString]) -> Result<WatchPlan, Error> {
    let raw: Vec<String> = raw
        .iter()
        .map(|s| s.to_string_lossy().into_owned())
        .collect();
    let mut read_list = |path: &str| std::fs::read_to_string(path).map_err(|e| sys::strerror(&e));
    let expanded =
        items::expand(&raw, &mut read_list, &mut items::run_pgrep).map_err(Error::Usage)?;
    let size = match &o.size {
        SizeArg::Auto => None,
        SizeArg::Value(n) => Some(*n),
        SizeArg::Path(p) => Some(input::size_of_path(p)?),
    };
    Ok(WatchPlan {
        targets: expanded.targets,
        problems: expanded.problems,
        size,
    })
}

/// The changes an `rpv -R PID ...` command line asks for: only the options given.
pub(crate) fn changes_from(o: &Options) -> Result<Changes, Error> {
    let mut c = Changes::default();
    if DisplaySwitches::LETTERS
        .chars()
        .chain(['8', 'A'])
        .any(|l| o.given(l))
    {
        c.switches = Some(DisplaySwitches {
            last_written: o.last_written,
            ..o.switches
        });
    }
    let given = |l: char, v| o.given(l).then_some(v);
    c.rate_limit = given('L', o.rate_limit);
    c.buffer_size = given('B', o.buffer_size).filter(|&b| b > 0);
    if o.given('s') {
        c.size = Some(match &o.size {
            SizeArg::Auto => 0,
            SizeArg::Value(n) => *n,
            SizeArg::Path(p) => input::size_of_path(p)
                .map_err(|e| Error::other(status::REMOTE_OR_PID, e.to_string()))?,
        });
    }
    c.interval = o.given('i').then_some(o.interval);
    c.width = o.given('w').then_some(o.width);
    c.height = o.given('H').then_some(o.height);
    c.name = o.given('N').then(|| o.name.clone().unwrap_or_default());
    c.format = o.given('F').then(|| o.format.clone().unwrap_or_default());
    c.extra_display = o
        .given('x')
        .then(|| o.extra_display.clone().unwrap_or_default());
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(args: &[&str]) -> Options {
        let args: Vec<OsString> = args.iter().map(OsString::from).collect();
        match crate::cli::parse("rpv", &args) {
            crate::cli::Parsed::Run(o) => *o,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn only_given_options_are_sent() {
        let c = changes_from(&parsed(&["-R", "1", "-L", "0", "-N", "x"])).unwrap();
        assert_eq!(
            c,
            Changes {
                rate_limit: Some(0),
                name: Some("x".into()),
                ..Changes::default()
            }
        );
        assert_eq!(
            changes_from(&parsed(&["-R", "1"])).unwrap(),
            Changes::default()
        );
        let c = changes_from(&parsed(&["-R", "1", "-p", "-i", "2", "-s", "0", "-F", ""])).unwrap();
        assert_eq!(
            c.switches,
            Some(DisplaySwitches {
                progress: true,
                ..DisplaySwitches::default()
            })
        );
        assert_eq!((c.interval, c.size), (Some(2.0), Some(0)));
        assert_eq!(c.format.as_deref(), Some(""));
        assert_eq!((c.rate_limit, c.name, c.width), (None, None, None));
    }
}
