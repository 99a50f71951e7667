//! The display loop: what is shown, when, and the state between updates (spec 2.1, 2.2,
//! 2.3, 2.9). It runs on the main thread, reads the counters the data thread publishes in
//! [`Shared`], turns them into numbers (`stats`) and text (`display`), and hands the text to
//! `term`. It also answers `-R`/`-Q` requests between updates.
//!
//! Must not: move data, or block the data thread in any way.

use std::os::fd::BorrowedFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::cli::Options;
use crate::display::{self, BarStyle, BufferFill, DisplaySwitches, Format, Frame, Segment};
use crate::shared::{status, Shared};
use crate::stats::RateTracker;
use crate::sys::{self, FileKind};
use crate::term::{self, ExtraSpec, Term};
use crate::units::CountKind;
use crate::{modes, signals};

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

/// The format text: `-F` if given, else the default built from the switches (with
/// ` %{ratio}` on the output side of `-M both`).
pub(crate) fn format_text(
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

/// The display switches of the options; none given means `-p -t -e -r -b` (spec 1.4).
pub(crate) fn switches(o: &Options) -> DisplaySwitches {
    let all = o.display_switches == 0;
    DisplaySwitches {
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
    }
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
pub(crate) struct View {
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
    /// The format shows `%A` or `%L`, so the engine must keep the tail of the data.
    pub(crate) fn shows_tail(&self) -> bool {
        let tail = |s: &Segment| {
            matches!(
                s,
                Segment::LastWritten { .. } | Segment::PreviousLine { .. }
            )
        };
        self.format.segments.iter().any(tail)
    }

    /// The counts in `Shared` are final as published (`-Q`): no unread-pipe adjustment.
    pub(crate) fn use_published_counts(&mut self) {
        self.published_counts = true;
    }

    pub(crate) fn new(o: &Options, prog: &str, size: u64, setup: Setup) -> View {
        let stderr_tty = sys::isatty(sys::stderr_fd());
        let switches = switches(o);
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
            utf8: term::utf8_locale(),
            colour: term::colour_allowed(o.force),
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
            // Name and numeric mode are not display switches a sender can change.
            self.switches = DisplaySwitches {
                name: self.switches.name,
                numeric: self.switches.numeric,
                ..*sw
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
    pub(crate) fn run(&mut self, shared: &Shared, wake: BorrowedFd<'_>, out: BorrowedFd<'_>) {
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
