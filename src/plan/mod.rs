//! The plan: from the parsed options to what will run (the counterpart of ripgrep's
//! "high-level arguments").
//!
//! Owns: every piece of set-up I/O — stating inputs and finding the total size, reading
//! `-s @PATH`, counting lines for `-l`, opening `-o` (truncated only if some input is not
//! the output), writing the `-P` pid file, creating the `-U` store, expanding `-d` items,
//! probing the terminal (size, locale, colour) — and the engine's settings. Must not: move
//! data, start threads or draw (the one word set-up says, that it waits for a FIFO's
//! reader, is `term`'s): the app module runs what the plan describes.
//!
//! `-U` and `-M` are plans of their own (two phases; two sides), not rewritten options.
//! The plan also chooses the run's outputs ([`OutputKind`], in `display`): the app makes a
//! sink of each and decides nothing about them.

mod display;
mod open;
mod own;
mod store;

use std::ffi::OsString;
use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::PathBuf;
use std::sync::Arc;

pub(crate) use self::display::{line_view, OutputKind};
use self::open::notices;
use crate::cli::{Action, MonitorSide, Options, SizeArg, Voice};
use crate::control::Changes;
use crate::display::DisplaySwitches;
use crate::error::{status, Error};
use crate::meter::{Role, Unit};
use crate::session::SessionConfig;
use crate::sink::{self, DisplayConfig};
use crate::source::engine::EngineMeter;
use crate::source::watch::items::{self, Target};
use crate::sys::{self, FileKind};
use crate::term;
use crate::transfer::output::Modifiers;
pub(crate) use crate::transfer::output::Output;
use crate::transfer::outputs::{OutputMeter, TeeOutput};
use crate::transfer::{self, input, Hooks, InputSpec, Settings};

/// One transfer: the engine's settings, where it writes, and how its meter is shown.
#[derive(Debug)]
pub(crate) struct TransferPlan {
    /// What the engine does.
    pub settings: Settings,
    /// Where it writes.
    pub output: Output,
    /// How its progress is shown.
    pub meter: EngineMeter,
    /// `--pipeline` without a PID: the pipeline rpv is a stage of is watched beside the
    /// transfer (a source of its own), whatever shows it.
    pub own_pipeline: bool,
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
    /// What runs.
    pub job: Job,
    /// How the sinks draw.
    pub display: DisplayConfig,
    /// How the display loop runs.
    pub session: SessionConfig,
    /// The run's outputs, in order: each becomes one sink.
    pub outputs: Vec<OutputKind>,
}

/// Makes the plan for `o`. The files rpv writes for itself (`-P`, `--metrics-file`) are
/// checked, then written first, like pv's pid file.
pub(crate) fn plan(o: &Options) -> Result<Plan, Error> {
    own::write_own_files(o)?;
    let display = display::display(o);
    let job = match &o.action {
        // `--pipeline` without a PID: a transfer that also shows its own pipeline.
        Action::Transfer | Action::Pipeline(None) => {
            let inputs = operands(o);
            let output = open::open_output(o.output.as_deref(), &inputs, notices(&display))?;
            let tees = open::open_tees(o, &inputs, notices(&display))?;
            let sizing = Sizing::Inputs(&o.size);
            let mut plan = transfer(o, &display, inputs, output, Role::Transfer, sizing, tees)?;
            plan.own_pipeline = o.action == Action::Pipeline(None);
            Job::Transfer(plan)
        }
        Action::StoreAndForward(path) => store::first_phase(o, &display, path)?,
        Action::Monitor(side) => {
            let Some((command, args)) = o.files.split_first() else {
                return Err(Error::Usage(
                    "-M: a command to run must be specified".into(),
                ));
            };
            let output = open::monitor_output(o, &display)?;
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
    Ok(Plan {
        outputs: display::outputs(o, &display, &job),
        session: display::session(o),
        display,
        job,
    })
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
    let output = open::open_output(o.output.as_deref(), &inputs, notices(display))?;
    let tees = open::open_tees(o, &inputs, notices(display))?;
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
    let capture = shows_tail(display, role, size);
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
    let outputs = (settings.tees.iter())
        .map(|t| (t.name.clone(), Arc::clone(&t.meter)))
        .collect();
    let meter = meter(o, role, size, capture, outputs);
    Ok(TransferPlan {
        settings,
        output,
        meter,
        own_pipeline: false,
    })
}

/// Whether a meter of `role` with `size` shows the end of the data (`%A`, `%L` in its
/// format or in `-x`'s): the engine then keeps the last bytes.
fn shows_tail(display: &DisplayConfig, role: Role, size: u64) -> bool {
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
    capture
}

/// How a transfer of `role` is shown: its meter (`-M both`'s two sides are meters 1 and 2,
/// each the other's partner in `%{ratio}`) and the tees' `outputs`.
fn meter(
    o: &Options,
    role: Role,
    size: u64,
    capture: bool,
    outputs: Vec<(String, Arc<OutputMeter>)>,
) -> EngineMeter {
    EngineMeter {
        id: match role {
            Role::MonitorOut => 2,
            _ => 1,
        },
        role,
        unit: if o.line_mode {
            Unit::Lines
        } else {
            Unit::Bytes
        },
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
    }
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
