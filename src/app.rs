//! The run: derive the configuration from the options, open the output, start the engine on
//! the data thread and drive the display from this (main) thread.
//!
//! Owns: the only place that stats inputs to derive values (`--size` detection), opens the
//! output, and decides what is displayed when (spec 2.1, 2.2). Must not: move data (the
//! engine does) or format components (the display module does).

use std::fs::{File, OpenOptions};
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::atomic::Ordering;

use crate::cli::{Action, Options, SizeArg};
use crate::display::{self, BarStyle, BufferFill, DisplaySwitches, Format, Frame, Segment};
use crate::shared::{status, Shared};
use crate::stats::RateTracker;
use crate::sys::{self, FileKind};
use crate::term::{self, Term};
use crate::transfer::{self, input, Engine, Hooks, Settings};
use crate::units::CountKind;
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
        cli::Parsed::Run(options) => run(&options, &prog).into(),
    }
}

fn print_stdout(text: &str) -> i32 {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
    0
}

/// Options that later issues implement; refused clearly rather than silently ignored.
fn unsupported(o: &Options) -> Option<&'static str> {
    let checks: [(bool, &str); 9] = [
        (o.cursor, "-c/--cursor"),
        (o.extra_display.is_some(), "-x/--extra-display"),
        (o.skip_errors > 0, "-E/--skip-errors"),
        (o.sync, "-Y/--sync"),
        (o.direct_io, "-K/--direct-io"),
        (o.sparse, "-O/--sparse"),
        (o.discard, "-X/--discard"),
        (o.pidfile.is_some(), "-P/--pidfile"),
        (
            matches!(o.action, Action::StoreAndForward(_)),
            "-U/--store-and-forward",
        ),
    ];
    checks
        .iter()
        .find(|(given, _)| *given)
        .map(|(_, name)| *name)
}

/// The output: standard output or an `-o` file.
enum Output {
    Stdout,
    File(File),
}

impl Output {
    fn fd(&self) -> BorrowedFd<'_> {
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
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)?;
    let out_info = sys::fstat(file.as_fd())?;
    if out_info.kind == FileKind::Regular {
        let is_out = |operand: &String| {
            let info = if operand == "-" {
                sys::fstat(sys::stdin_fd()).ok()
            } else {
                input::open(operand).ok().map(|(_, i)| i)
            };
            info.is_some_and(|i| input::is_output(&i, &out_info))
        };
        if !inputs.iter().all(is_out) {
            sys::ftruncate(file.as_fd(), 0)?;
        }
    }
    Ok(Output::File(file))
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
    if let Some(name) = unsupported(o) {
        eprintln!("{prog}: {name}: not supported yet");
        return status::USAGE;
    }
    match o.action {
        Action::WatchFd(_) => return modes::watchfd::run(o, prog),
        Action::Remote(_) | Action::Query(_) => return modes::remote::run(o, prog),
        Action::Monitor(_) => return modes::monitor::run(o, prog),
        Action::Transfer | Action::StoreAndForward(_) => {}
    }
    let inputs = if o.files.is_empty() {
        vec!["-".to_string()]
    } else {
        o.files.clone()
    };
    let output = match o
        .output
        .as_deref()
        .map(|p| open_output(p, &inputs))
        .transpose()
    {
        Ok(out) => out.unwrap_or(Output::Stdout),
        Err(e) => {
            eprintln!(
                "{prog}: {}: {}",
                o.output.as_deref().unwrap_or(""),
                sys::strerror(&e)
            );
            return status::ACCESS;
        }
    };
    let (size, implied_stop) = match detect_size(o, &inputs, output.fd()) {
        Ok(v) => v,
        Err(message) => {
            eprintln!("{prog}: {message}");
            return status::USAGE;
        }
    };
    let view = View::new(o, prog, size);
    let capture = view.format.segments.iter().any(|s| {
        matches!(
            s,
            Segment::LastWritten { .. } | Segment::PreviousLine { .. }
        )
    });
    let settings = Settings {
        inputs,
        line_mode: o.line_mode,
        separator: if o.null { 0 } else { b'\n' },
        // %A and %L need the bytes: rpv then uses read/write (pv leaves them blank). Line
        // mode picks its own paths (transfer::lines).
        zero_copy: !o.no_splice && !capture,
        buffer_size: if o.buffer_size > 0 {
            o.buffer_size as usize
        } else {
            transfer::DEFAULT_BUFFER
        },
        rate_limit: o.rate_limit,
        // -S with an unknown size passes everything through (pv 1.11 passes nothing).
        stop_at: ((o.stop_at_size || implied_stop) && size > 0).then_some(size),
        capture,
        hooks: Hooks::from_env(),
    };
    transfer_with_display(&settings, output.fd(), view)
}

/// Spawns the engine on the data thread and runs the display loop here.
fn transfer_with_display(settings: &Settings, out: BorrowedFd<'_>, mut view: View) -> u8 {
    let Ok((wake_r, wake_w)) = sys::pipe() else {
        signals::ignore_pipe();
        let shared = Shared::new(None);
        run_engine(settings, out, &shared);
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
            run_engine(settings, out, &shared);
        });
        view.run(&shared, wake_r.as_fd(), out);
        if shared.stop.load(Ordering::Relaxed) {
            // Interrupted: the data thread may sit in a blocking call; do not wait for it.
            std::process::exit(shared.status().into());
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

fn utf8_locale() -> bool {
    ["LC_ALL", "LC_CTYPE", "LANG"]
        .iter()
        .find_map(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
        .is_some_and(|v| {
            let v = v.to_ascii_lowercase();
            v.contains("utf-8") || v.contains("utf8")
        })
}

fn colour_allowed(force: bool) -> bool {
    let no_color = std::env::var("NO_COLOR").is_ok_and(|v| !v.is_empty());
    let term = std::env::var("TERM").unwrap_or_default();
    !no_color && term != "dumb" && (force || !term.is_empty())
}

/// The display side of a run: what to show, and the state between updates.
struct View {
    term: Term,
    /// Anything is displayed at all (spec 2.1 steps 1–3).
    enabled: bool,
    numeric: bool,
    force: bool,
    format: Format,
    fixed: (u32, u32),
    width: usize,
    interval_ns: u64,
    delay_ns: u64,
    stats: bool,
    size: u64,
    line_mode: bool,
    kind: CountKind,
    bits: bool,
    gauge: bool,
    name: Option<String>,
    bar_style: BarStyle,
    utf8: bool,
    colour: bool,
    tracker: RateTracker,
    start_ns: u64,
    stopped_base: u64,
    started: bool,
    displayed: bool,
}

impl View {
    fn new(o: &Options, prog: &str, size: u64) -> View {
        let stderr_tty = sys::isatty(sys::stderr_fd());
        let format_text = o.format.clone().unwrap_or_else(|| {
            let all = o.display_switches == 0;
            let switches = DisplaySwitches {
                progress: o.progress || all,
                timer: o.timer || all,
                eta: o.eta || all,
                fineta: o.fineta,
                rate: o.rate || all,
                average_rate: o.average_rate,
                bytes: o.bytes || all,
                buffer_percent: o.buffer_percent,
                last_written: o.last_written,
                name: o.name.is_some(),
                numeric: o.numeric,
            };
            display::default_format(&switches, size > 0)
        });
        // Only an explicit empty -F turns the display off; `-A 0` alone draws empty lines (pv).
        let enabled =
            (stderr_tty || o.force || o.numeric) && !o.quiet && o.format.as_deref() != Some("");
        let kind = if o.line_mode {
            CountKind::Lines
        } else if o.si {
            CountKind::DecimalBytes
        } else {
            CountKind::BinaryBytes
        };
        View {
            term: Term::new(prog),
            enabled,
            numeric: o.numeric,
            force: o.force,
            format: Format::parse(&format_text),
            fixed: (o.width, o.height),
            width: term::size(o.width, o.height).0,
            interval_ns: (o.interval * 1e9) as u64,
            delay_ns: (o.delay_start * 1e9) as u64,
            stats: o.stats,
            size,
            line_mode: o.line_mode,
            kind,
            bits: o.bits,
            gauge: o.gauge,
            name: o.name.clone(),
            bar_style: BarStyle::from_name(o.bar_style.as_deref().unwrap_or("plain")),
            utf8: utf8_locale(),
            colour: colour_allowed(o.force),
            tracker: RateTracker::new(o.average_window),
            start_ns: sys::monotonic_ns(),
            stopped_base: 0,
            started: !o.wait,
            displayed: false,
        }
    }

    /// The display loop: wakes at each interval, on messages, signals and the engine's end.
    fn run(&mut self, shared: &Shared, wake: BorrowedFd<'_>, out: BorrowedFd<'_>) {
        let first = if self.delay_ns > self.interval_ns {
            self.delay_ns
        } else {
            self.interval_ns
        };
        let mut next_due = self.start_ns + first;
        let mut interrupted = false;
        loop {
            let now = sys::monotonic_ns();
            let engine_done = shared.done.load(Ordering::Acquire);
            let mut timeout_ms =
                (next_due.saturating_sub(now) / 1_000_000 + 1).min(i32::MAX as u64) as i32;
            if engine_done {
                timeout_ms = timeout_ms.min(20);
            }
            let _ = sys::poll_one(wake, libc::POLLIN, timeout_ms);
            drain(wake);
            self.print_messages(shared);
            if signals::exit_requested() {
                shared.stop.store(true, Ordering::Relaxed);
                shared.fail(status::SIGNAL);
                interrupted = true;
                break;
            }
            if signals::take_resized() {
                self.width = term::size(self.fixed.0, self.fixed.1).0;
            }
            if shared.done.load(Ordering::Acquire)
                && (shared.aborted.load(Ordering::Relaxed) || drained(shared, out))
            {
                break;
            }
            self.check_started(shared, &mut next_due);
            let now = sys::monotonic_ns();
            if signals::take_continued() || now >= next_due {
                self.update(shared, out, false);
                next_due += self.interval_ns;
                if next_due < now {
                    next_due = now + self.interval_ns;
                }
            }
        }
        self.print_messages(shared);
        self.check_started(shared, &mut next_due);
        if interrupted {
            self.update(shared, out, false);
        } else if !shared.aborted.load(Ordering::Relaxed)
            && (self.displayed || self.delay_ns < 1_000_000)
        {
            self.update(shared, out, true);
        }
        if !self.numeric {
            self.term.finish_line();
        }
        if self.stats {
            let unit = match (self.line_mode, self.bits) {
                (true, _) => "/s",
                (false, true) => "b/s",
                (false, false) => "B/s",
            };
            let mult = if self.bits && !self.line_mode {
                8.0
            } else {
                1.0
            };
            self.term
                .raw(&format!("{}\n", self.tracker.stats_line(unit, mult)));
        }
    }

    /// `-W`: the clock starts at the first write.
    fn check_started(&mut self, shared: &Shared, next_due: &mut u64) {
        if self.started {
            return;
        }
        let first = shared.first_write_ns.load(Ordering::Relaxed);
        if first != 0 {
            self.started = true;
            self.start_ns = first;
            self.stopped_base = signals::stopped_ns();
            *next_due = first + self.interval_ns;
        }
    }

    fn print_messages(&mut self, shared: &Shared) {
        for message in shared.take_messages() {
            self.term.message(&message);
        }
    }

    fn transferred(&self, shared: &Shared, out: BorrowedFd<'_>) -> u64 {
        if self.line_mode {
            return shared.lines.load(Ordering::Relaxed);
        }
        let written = shared.bytes.load(Ordering::Relaxed);
        if shared.output_closed.load(Ordering::Relaxed) {
            return written;
        }
        // Bytes still sitting unread in the output pipe have not been transferred yet.
        let unread = sys::unread_bytes(out).unwrap_or(0) as u64;
        written.saturating_sub(unread)
    }

    fn update(&mut self, shared: &Shared, out: BorrowedFd<'_>, final_update: bool) {
        if !self.started {
            return;
        }
        let now = sys::monotonic_ns();
        let stopped = signals::stopped_ns().saturating_sub(self.stopped_base);
        let elapsed = (now.saturating_sub(self.start_ns).saturating_sub(stopped) as f64 / 1e9)
            .clamp(0.0, 360_000_000.0);
        let transferred = self.transferred(shared, out);
        let rates = self
            .tracker
            .update(elapsed, transferred, self.size, final_update);
        if !self.enabled || !(self.numeric || self.force || sys::in_foreground(sys::stderr_fd())) {
            return;
        }
        let buffer = match shared.buffer_capacity.load(Ordering::Relaxed) {
            _ if shared.zero_copy.load(Ordering::Relaxed) => BufferFill::Splice,
            0 => BufferFill::None,
            cap => {
                BufferFill::Fraction(shared.buffered.load(Ordering::Relaxed) as f64 / cap as f64)
            }
        };
        let tail = shared.tail.lock().map(|t| t.clone()).unwrap_or_default();
        let frame = Frame {
            elapsed,
            transferred,
            size: self.size,
            rate: rates.rate,
            avg_rate: rates.avg_rate,
            percentage: rates.percentage,
            max_rate: rates.max_rate,
            final_update,
            numeric: self.numeric,
            kind: self.kind,
            bits: self.bits,
            gauge: self.gauge,
            name: self.name.as_deref(),
            bar_style: self.bar_style,
            utf8: self.utf8,
            colour: self.colour,
            buffer,
            wall_clock: sys::wall_clock(),
            last_written: &tail.last,
            previous_line: &tail.line,
            ..Frame::default()
        };
        let line = display::render(&self.format, &frame, self.width);
        if self.numeric {
            self.term.numeric(&line);
        } else {
            self.term.draw(&line, self.width);
        }
        self.displayed = true;
    }
}

/// True when the output's reader has consumed everything (or is gone, or it is not a pipe):
/// only then is the final update drawn, like pv 1.11, but without its hang when the reader
/// exits early (spec 7.1 #1).
fn drained(shared: &Shared, out: BorrowedFd<'_>) -> bool {
    if shared.output_closed.load(Ordering::Relaxed) {
        return true;
    }
    if !sys::fstat(out).is_ok_and(|i| i.kind == FileKind::Pipe) {
        return true;
    }
    if sys::unread_bytes(out).map_or(true, |n| n == 0) {
        return true;
    }
    // POLLERR on a pipe's write end: the read end is closed.
    sys::poll_one(out, 0, 0).map_or(true, |r| r & (libc::POLLERR | libc::POLLHUP) != 0)
}

fn drain(wake: BorrowedFd<'_>) {
    let mut buf = [0u8; 64];
    while matches!(sys::read(wake, &mut buf), Ok(n) if n > 0) {}
}
