//! The run: derive the configuration from the options, open the output, start the engine on
//! the data thread and drive the display from this (main) thread.
//!
//! Owns: the only place that stats inputs to derive values (`--size` detection), opens the
//! output, and decides what is displayed when (spec 2.1, 2.2). Must not: move data (the
//! engine does) or format components (the display module does).

use std::fs::{File, OpenOptions};
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::cli::{Action, Options, SizeArg};
use crate::display::{self, BarStyle, BufferFill, DisplaySwitches, Format, Frame, Segment};
use crate::shared::{status, Shared};
use crate::stats::RateTracker;
use crate::sys::{self, FileKind};
use crate::term::{self, ExtraSpec, Term};
use crate::transfer::output::Modifiers;
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
    transfer_to(o, prog, inputs, output.fd(), Setup::default())
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

/// How a display run differs from a plain transfer (used by `-M` and `-Q`).
#[derive(Default)]
pub(crate) struct Setup {
    /// Do not answer `-R`/`-Q` (the other side of `-M both` does).
    pub no_control: bool,
    /// Seconds already elapsed when the display starts (`-Q`: the target's elapsed time).
    pub elapsed: f64,
    /// `-M both`: (this side's count, the other side's count), for `%{ratio}`.
    pub ratio: Option<(Arc<AtomicU64>, Arc<AtomicU64>)>,
    /// `-M both`, output side: ` %{ratio}` is appended to the default format.
    pub ratio_suffix: bool,
    /// The operands whose size is the total, if not the inputs (`-M out`: none).
    pub size_from: Option<Vec<String>>,
}

/// Transfers `inputs` to `out` with a display: size detection, engine settings, the run.
pub(crate) fn transfer_to(
    o: &Options,
    prog: &str,
    inputs: Vec<String>,
    out: BorrowedFd<'_>,
    setup: Setup,
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
    let capture = view.format.segments.iter().any(|s| {
        matches!(
            s,
            Segment::LastWritten { .. } | Segment::PreviousLine { .. }
        )
    });
    let modifiers = Modifiers {
        discard: o.discard,
        sparse: o.sparse,
        sync: o.sync,
        direct: o.direct_io,
    };
    let hooks = Hooks::from_env();
    // Modifiers and the read-error hook work on the read/write path.
    let needs_rw = o.discard || o.sparse || o.sync || o.direct_io || !hooks.read_errors.is_empty();
    let settings = Settings {
        inputs,
        line_mode: o.line_mode,
        separator: if o.null { 0 } else { b'\n' },
        // %A and %L need the bytes: rpv then uses read/write (pv leaves them blank).
        zero_copy: !o.no_splice && !o.line_mode && !capture && !needs_rw,
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
    view.published_counts = true;
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

/// The format text: `-F` if given, else the default built from the switches (with
/// ` %{ratio}` on the output side of `-M both`).
fn format_text(
    custom: Option<&str>,
    switches: &DisplaySwitches,
    size: u64,
    ratio_suffix: bool,
) -> String {
    match custom {
        Some(text) => text.to_string(),
        None if ratio_suffix => {
            format!("{} %{{ratio}}", display::default_format(switches, size > 0))
        }
        None => display::default_format(switches, size > 0),
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

/// `-x SPEC`: its own format and where it goes (window title only on a terminal that is not
/// `dumb`). Without `:FORMAT` it uses the display's format, `-F` included (pv uses the
/// switch default: spec 7.2 #21).
fn extra_display(
    spec: Option<&str>,
    format_text: &str,
    stderr_tty: bool,
) -> Option<(Format, bool, bool)> {
    let spec = ExtraSpec::parse(spec?);
    if !spec.any() {
        return None;
    }
    let text = spec.format.as_deref().unwrap_or(format_text);
    let window = spec.window && stderr_tty && !term::dumb_terminal();
    Some((Format::parse(text), window, spec.process))
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
    /// `-x`: its own format, and where it goes (window title: only on a terminal that is not
    /// `dumb`, when the line is drawn; process title: at every update, even with `-q`).
    extra: Option<(Format, bool, bool)>,
    prog: String,
    /// The switches the default format is built from (changed by `-R`).
    switches: DisplaySwitches,
    /// `-F`, if given (or set by `-R`).
    custom_format: Option<String>,
    setup: Setup,
    /// The counts in `Shared` are final as published (`-Q`): no unread-pipe adjustment.
    published_counts: bool,
    /// `-x` as given (or set by `-R`).
    extra_display: Option<String>,
    /// The `-R`/`-Q` listener, while the display loop runs.
    control: Option<modes::remote::Server>,
}

impl View {
    fn new(o: &Options, prog: &str, size: u64, setup: Setup) -> View {
        let stderr_tty = sys::isatty(sys::stderr_fd());
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
        let format_text = format_text(o.format.as_deref(), &switches, size, setup.ratio_suffix);
        // Only an explicit empty -F turns the display off; `-A 0` alone draws empty lines (pv).
        let enabled =
            (stderr_tty || o.force || o.numeric) && !o.quiet && o.format.as_deref() != Some("");
        let (width, height) = term::size(o.width, o.height);
        let mut term = Term::new(prog);
        if o.cursor && !o.numeric {
            term.enable_cursor(height);
        }
        let extra = extra_display(o.extra_display.as_deref(), &format_text, stderr_tty);
        let kind = if o.line_mode {
            CountKind::Lines
        } else if o.si {
            CountKind::DecimalBytes
        } else {
            CountKind::BinaryBytes
        };
        View {
            term,
            enabled,
            numeric: o.numeric,
            force: o.force,
            format: Format::parse(&format_text),
            fixed: (o.width, o.height),
            width,
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
            start_ns: sys::monotonic_ns().saturating_sub((setup.elapsed.max(0.0) * 1e9) as u64),
            stopped_base: 0,
            started: !o.wait,
            displayed: false,
            extra,
            prog: prog.to_string(),
            switches,
            custom_format: o.format.clone(),
            setup,
            published_counts: false,
            extra_display: o.extra_display.clone(),
            control: None,
        }
    }

    /// Rebuilds the format after `-R` changed switches, `-F`, `-N` or the size.
    fn rebuild_format(&mut self) {
        self.switches.name = self.name.is_some();
        let text = format_text(
            self.custom_format.as_deref(),
            &self.switches,
            self.size,
            self.setup.ratio_suffix,
        );
        self.format = Format::parse(&text);
        let stderr_tty = sys::isatty(sys::stderr_fd());
        self.extra = extra_display(self.extra_display.as_deref(), &text, stderr_tty);
    }

    /// Answers pending `-R`/`-Q` requests.
    fn serve_control(&mut self, shared: &Shared, out: BorrowedFd<'_>, next_due: &mut u64) {
        let Some(control) = self.control.take() else {
            return;
        };
        control.serve(|request| match request {
            modes::remote::Request::Set(changes) => {
                self.apply_changes(changes, shared, next_due);
                modes::remote::Reply::Done
            }
            modes::remote::Request::Query => modes::remote::Reply::State {
                elapsed: self.elapsed(),
                transferred: self.transferred(shared, out),
                size: self.size,
            },
        });
        self.control = Some(control);
    }

    /// Applies the options given to `rpv -R` (only those).
    fn apply_changes(&mut self, c: &modes::remote::Changes, shared: &Shared, next_due: &mut u64) {
        if let Some(sw) = &c.switches {
            self.switches = DisplaySwitches {
                progress: sw.progress,
                timer: sw.timer,
                eta: sw.eta,
                fineta: sw.fineta,
                rate: sw.rate,
                average_rate: sw.average_rate,
                bytes: sw.bytes,
                buffer_percent: sw.buffer_percent,
                last_written: sw.last_written,
                ..self.switches
            };
            if c.format.is_none() {
                // Asking for switches means showing them: a custom -F gives way.
                self.custom_format = None;
            }
        }
        if let Some(format) = &c.format {
            self.custom_format = (!format.is_empty()).then(|| format.clone());
        }
        if let Some(name) = &c.name {
            self.name = (!name.is_empty()).then(|| name.clone());
        }
        if let Some(extra) = &c.extra_display {
            self.extra_display = (!extra.is_empty()).then(|| extra.clone());
        }
        if let Some(size) = c.size {
            self.size = size;
        }
        if let Some(interval) = c.interval {
            self.interval_ns = (interval * 1e9) as u64;
            *next_due = sys::monotonic_ns() + self.interval_ns;
        }
        if let Some(w) = c.width {
            self.fixed.0 = w;
        }
        if let Some(h) = c.height {
            self.fixed.1 = h;
        }
        self.width = term::size(self.fixed.0, self.fixed.1).0;
        if c.rate_limit.is_some() || c.buffer_size.is_some() {
            shared.retune(c.rate_limit, c.buffer_size);
        }
        self.rebuild_format();
    }

    /// Seconds since the start, stopped time excluded (0 before the start with `-W`).
    fn elapsed(&self) -> f64 {
        if !self.started {
            return 0.0;
        }
        let now = sys::monotonic_ns();
        let stopped = signals::stopped_ns().saturating_sub(self.stopped_base);
        (now.saturating_sub(self.start_ns).saturating_sub(stopped) as f64 / 1e9)
            .clamp(0.0, 360_000_000.0)
    }

    /// The display loop: wakes at each interval, on messages, signals and the engine's end.
    fn run(&mut self, shared: &Shared, wake: BorrowedFd<'_>, out: BorrowedFd<'_>) {
        let first = if self.delay_ns > self.interval_ns {
            self.delay_ns
        } else {
            self.interval_ns
        };
        let mut next_due = sys::monotonic_ns() + first;
        let mut interrupted = false;
        if !self.setup.no_control {
            self.control = modes::remote::Server::start(shared.wake_handle());
        }
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
            self.serve_control(shared, out, &mut next_due);
            self.print_messages(shared);
            if signals::exit_requested() {
                shared.stop.store(true, Ordering::Relaxed);
                shared.fail(status::SIGNAL);
                interrupted = true;
                break;
            }
            if signals::take_resized() {
                let (width, height) = term::size(self.fixed.0, self.fixed.1);
                self.width = width;
                self.term.resized(height);
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
        // Stop listening (and remove the socket) before anything that may exit; queriers
        // get the final numbers.
        if let Some(control) = self.control.take() {
            control.close(&modes::remote::Reply::State {
                elapsed: self.elapsed(),
                transferred: self.transferred(shared, out),
                size: self.size,
            });
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
        if self.published_counts || shared.output_closed.load(Ordering::Relaxed) {
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
        let elapsed = self.elapsed();
        let transferred = self.transferred(shared, out);
        let ratio = self.setup.ratio.as_ref().map(|(mine, other)| {
            mine.store(transferred, Ordering::Relaxed);
            (transferred, other.load(Ordering::Relaxed))
        });
        let rates = self
            .tracker
            .update(elapsed, transferred, self.size, final_update);
        let show =
            self.enabled && (self.numeric || self.force || sys::in_foreground(sys::stderr_fd()));
        if !show && self.extra.as_ref().is_none_or(|e| !e.2) {
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
            ratio,
            ..Frame::default()
        };
        if show {
            let line = display::render(&self.format, &frame, self.width);
            if self.numeric {
                self.term.numeric(&line);
            } else {
                self.term.draw(&line, self.width);
            }
            self.displayed = true;
        }
        if let Some((format, window, process)) = &self.extra {
            let plain = Frame {
                colour: false,
                ..frame
            };
            let text = display::render(format, &plain, self.width);
            if show && *window {
                self.term.window_title(&text);
            }
            if *process {
                term::title::set_process_title(&self.prog, &text);
            }
        }
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
