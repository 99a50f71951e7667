//! The run: derive the configuration from the options, open the output, start the engine on
//! the data thread and drive the display from this (main) thread.
//!
//! Owns: the only place that stats inputs to derive values (`--size` detection), opens the
//! output, and decides what is displayed when (spec 2.1, 2.2). Must not: move data (the
//! engine does) or format components (the display module does).

use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::atomic::Ordering;

use crate::cli::{Action, Options, SizeArg};
use crate::shared::{status, Shared};
use crate::sys::{self, FileKind};
use crate::term::{self};
use crate::transfer::output::Modifiers;
use crate::transfer::outputs::TeeOutput;
use crate::transfer::{self, input, Engine, Hooks, Settings};
use crate::view::Setup;
use crate::view::View;
use crate::{cli, modes, signals};

/// Entry point used by `main`: parses `args` (argv[0] first), runs, returns the exit status.
pub fn main_with_args(args: Vec<String>) -> i32 {
    let argv0 = args.first().cloned().unwrap_or_else(|| "rpv".into());
    let prog = std::path::Path::new(&argv0)
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "rpv".into());
    match cli::parse(&argv0, &args[1.min(args.len())..]) {
        cli::Parsed::Help => print_stdout(&cli::help_text(term::size(0, 0).0)),
        cli::Parsed::Version => print_stdout(&cli::version_text()),
        cli::Parsed::Error(text) => {
            eprint!("{text}");
            status::USAGE.into()
        }
        cli::Parsed::Run(options) => {
            let status = run(&options, &prog);
            for message in crate::cleanup::remove_all() {
                eprintln!("{prog}: {message}");
            }
            status.into()
        }
    }
}

fn print_stdout(text: &str) -> i32 {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
    0
}

/// The output: standard output or an `-o` file.
pub(crate) enum Output {
    Stdout,
    File(File),
}

impl Output {
    /// The descriptor to write to.
    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        match self {
            Output::Stdout => sys::stdout_fd(),
            Output::File(f) => f.as_fd(),
        }
    }
}

/// Opens `-o FILE` without truncating it, and truncates it only if at least one input is
/// not the output itself: `rpv -o x x` leaves `x` intact (pv empties it first).
fn open_output(path: &str, inputs: &[String]) -> std::io::Result<Output> {
    if path == "-" {
        return Ok(Output::Stdout);
    }
    transfer::outputs::open_output(path, inputs).map(Output::File)
}

/// Opens every `--tee` path the way `-o` is opened; an error is printed and its exit status
/// returned.
fn open_tees(o: &Options, prog: &str, inputs: &[String]) -> Result<Vec<TeeOutput>, u8> {
    let open = |path: &String| {
        transfer::outputs::open_tee(path, inputs).map_err(|e| {
            eprintln!("{prog}: {path}: {}", sys::strerror(&e));
            status::ACCESS
        })
    };
    o.tees.iter().map(open).collect()
}

/// Derived size (spec 3.2): bytes or lines; 0 = unknown. Also whether `-S` was implied by
/// an output block device.
fn detect_size(o: &Options, inputs: &[String], out: BorrowedFd<'_>) -> Result<(u64, bool), String> {
    let size = match &o.size {
        SizeArg::Value(n) => *n,
        SizeArg::Path(p) => input::size_of_path(p)?,
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

fn run(o: &Options, prog: &str) -> u8 {
    if let Some(path) = &o.pidfile {
        if let Err(message) = write_pidfile(path) {
            eprintln!("{prog}: {message}");
            return status::REMOTE_OR_PID;
        }
    }
    match &o.action {
        Action::WatchFd(_) => modes::watchfd::run(o, prog),
        Action::Remote(_) | Action::Query(_) => modes::remote::run(o, prog),
        Action::Monitor(_) => modes::monitor::run(o, prog),
        Action::StoreAndForward(file) => store_and_forward(o, prog, file),
        Action::Transfer => transfer(o, prog),
    }
}

/// Writes `"<pid>\n"` to `path` atomically (a temporary file in the same directory, mode
/// 0644, renamed over it) and registers it for removal at exit (spec 4.5).
fn write_pidfile(path: &str) -> Result<(), String> {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    let (mut file, temp) = sys::mkstemp(&format!("{path}.XXXXXX"))
        .map_err(|e| format!("{path}.XXXXXX: {}", sys::strerror(&e)))?;
    let written = file
        .set_permissions(std::fs::Permissions::from_mode(0o644))
        .and_then(|()| writeln!(file, "{}", std::process::id()))
        .and_then(|()| std::fs::rename(&temp, path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&temp);
        return Err(format!("{temp}: {}", sys::strerror(&e)));
    }
    crate::cleanup::register(path.into(), true);
    Ok(())
}

/// `-U FILE`: copy everything to FILE first (shown as `(input)`), then FILE to the output
/// with its now-known size (spec 3.13). `-` is a private temporary file, removed afterwards.
fn store_and_forward(o: &Options, prog: &str, file: &str) -> u8 {
    let path = if file == "-" {
        let dir = ["TMPDIR", "TMP"]
            .iter()
            .find_map(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
            .unwrap_or_else(|| "/tmp".into());
        match sys::mkstemp(&format!("{dir}/rpv.XXXXXX")) {
            Ok((_, path)) => {
                crate::cleanup::register(path.clone().into(), false);
                path
            }
            Err(e) => {
                eprintln!("{prog}: {dir}/rpv.XXXXXX: {}", sys::strerror(&e));
                return status::REMOTE_OR_PID;
            }
        }
    } else {
        file.to_string()
    };
    let mut first = o.clone();
    first.tees.clear(); // the --tee outputs copy the final output
    first.action = Action::Transfer;
    first.name = Some("(input)".into());
    first.output = Some(path.clone());
    let status = transfer(&first, prog);
    if status != 0 {
        return status;
    }
    let mut second = o.clone();
    second.action = Action::Transfer;
    second.files = vec![path.clone()];
    second.size = SizeArg::Auto;
    let status = transfer(&second, prog);
    if file == "-" {
        crate::cleanup::remove(std::path::Path::new(&path));
    }
    status
}

/// One transfer of `o.files` to `-o`/stdout with its display.
fn transfer(o: &Options, prog: &str) -> u8 {
    let inputs = if o.files.is_empty() {
        vec!["-".to_string()]
    } else {
        o.files.clone()
    };
    let output = match output_for(o, prog, &inputs) {
        Ok(out) => out,
        Err(code) => return code,
    };
    let tees = match open_tees(o, prog, &inputs) {
        Ok(tees) => tees,
        Err(code) => return code,
    };
    transfer_to_all(o, prog, inputs, output.fd(), Setup::default(), tees)
}

/// Opens the output (`-o` or stdout); an error is printed and its exit status returned.
pub(crate) fn output_for(o: &Options, prog: &str, inputs: &[String]) -> Result<Output, u8> {
    match o
        .output
        .as_deref()
        .map(|p| open_output(p, inputs))
        .transpose()
    {
        Ok(out) => Ok(out.unwrap_or(Output::Stdout)),
        Err(e) => {
            eprintln!(
                "{prog}: {}: {}",
                o.output.as_deref().unwrap_or(""),
                sys::strerror(&e)
            );
            Err(status::ACCESS)
        }
    }
}

/// Transfers `inputs` to `out` with a display: size detection, engine settings, the run.
pub(crate) fn transfer_to(
    o: &Options,
    prog: &str,
    inputs: Vec<String>,
    out: BorrowedFd<'_>,
    setup: Setup,
) -> u8 {
    transfer_to_all(o, prog, inputs, out, setup, Vec::new())
}

/// [`transfer_to`] with `--tee` outputs.
fn transfer_to_all(
    o: &Options,
    prog: &str,
    inputs: Vec<String>,
    out: BorrowedFd<'_>,
    setup: Setup,
    tees: Vec<TeeOutput>,
) -> u8 {
    let sized = setup.size_from.as_ref().unwrap_or(&inputs);
    let (size, implied_stop) = match detect_size(o, sized, out) {
        Ok(v) => v,
        Err(message) => {
            eprintln!("{prog}: {message}");
            return status::USAGE;
        }
    };
    let view = View::new(o, prog, size, setup);
    let capture = view.shows_tail();
    let modifiers = Modifiers {
        discard: o.discard,
        sparse: o.sparse,
        sync: o.sync,
        direct: o.direct_io,
    };
    let hooks = Hooks::from_env();
    // Modifiers and the read-error hook work on the read/write path.
    // -E in line mode too: the fast -l path counts from a mapping of the file, and a bad
    // sector there would be a SIGBUS instead of a read error to skip.
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
        // mode picks its own paths (transfer::lines).
        zero_copy: !o.no_splice && !capture && !needs_rw,
        buffer_size: if o.buffer_size > 0 {
            o.buffer_size as usize
        } else {
            transfer::DEFAULT_BUFFER
        },
        rate_limit: o.rate_limit,
        // -S with an unknown size passes everything through (pv 1.11 passes nothing).
        stop_at: ((o.stop_at_size || implied_stop) && size > 0).then_some(size),
        capture,
        modifiers,
        skip_errors: o.skip_errors,
        skip_block: o.error_skip_block,
        tees,
        tee_error: o.tee_error,
        hooks,
    };
    drive(out, view, |shared| run_engine(&settings, out, shared))
}

/// A display fed by `producer` instead of the engine (`-Q`): it runs on its own thread,
/// publishes counts in `Shared::bytes`/`lines` and calls `Shared::finish` at the end.
pub(crate) fn display_with(
    o: &Options,
    prog: &str,
    size: u64,
    setup: Setup,
    producer: impl FnOnce(&Shared) + Send,
) -> u8 {
    let mut view = View::new(o, prog, size, setup);
    view.use_published_counts();
    drive(sys::stdout_fd(), view, producer)
}

/// Runs `producer` (the engine) on the data thread and the display loop here.
fn drive(out: BorrowedFd<'_>, mut view: View, producer: impl FnOnce(&Shared) + Send) -> u8 {
    let Ok((wake_r, wake_w)) = sys::pipe() else {
        signals::ignore_pipe();
        let shared = Shared::new(None);
        producer(&shared);
        return shared.status();
    };
    if let Ok(for_signals) = wake_w.try_clone() {
        signals::install(for_signals);
    }
    let _ = sys::set_nonblocking(wake_r.as_fd(), true);
    let shared = Shared::new(Some(wake_w));
    std::thread::scope(|scope| {
        scope.spawn(|| {
            sys::block_signals(&signals::HANDLED);
            producer(&shared);
        });
        view.run(&shared, wake_r.as_fd(), out);
        if shared.stop.load(Ordering::Relaxed) {
            // Interrupted: the data thread may sit in a blocking call; do not wait for it.
            crate::cleanup::exit(shared.status());
        }
    });
    shared.status()
}

fn run_engine(settings: &Settings, out: BorrowedFd<'_>, shared: &Shared) {
    match Engine::new(settings, out, shared) {
        Ok(mut engine) => engine.run(),
        Err(e) => {
            shared.report(
                status::ACCESS,
                format!("failed to stat output file: {}", sys::strerror(&e)),
            );
            shared.finish();
        }
    }
}
