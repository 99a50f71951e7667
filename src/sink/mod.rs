//! Sinks of progress: every form of output, each fed the same snapshots and events.
//!
//! Owns: the [`Sink`] trait, the [`Snapshot`] sinks receive (one [`Reading`] per meter:
//! its state, elapsed time, rates and the one ETA, [`Reading::eta`]), the drawing settings
//! ([`DisplayConfig`], which `-R` may change during a run), and the choice of format per
//! meter. The sinks: [`messages`] (`rpv: …` lines), [`line`](mod@line) (the `\r` line, and
//! `-c` cursor rows), [`numeric`] (`-n`), [`multi`] (the rows of `-d` and `--each`),
//! [`stages`] (`--pipeline`), [`top`](mod@top) (`--top`'s view), [`json`] (`--json`),
//! [`log`](mod@log) (`--log`), [`title`] (`-x`), [`stats`] (`--stats`), and the
//! integrations: [`term_progress`] (`--term-progress`, the terminal's own progress
//! indicator), [`notify`] (systemd's service status), [`metrics`] (`--metrics-file`,
//! Prometheus) and [`top_metrics`] (`--top --metrics-file`). [`report`] is the run's voice
//! outside the display loops, and hands sinks their way to warn in it
//! ([`report::Warn`]). Which sinks a run has is the plan's choice (`plan::OutputKind`).
//!
//! Must not: know where progress comes from (sources), or move data. A new form of output
//! is a new `Sink`; the sources and the other sinks do not change.

pub(crate) mod json;
pub(crate) mod line;
pub(crate) mod log;
pub(crate) mod messages;
pub(crate) mod metrics;
pub(crate) mod multi;
pub(crate) mod notify;
pub(crate) mod numeric;
pub(crate) mod report;
pub(crate) mod stages;
pub(crate) mod stats;
pub(crate) mod term_progress;
pub(crate) mod title;
pub(crate) mod top;
pub(crate) mod top_metrics;

#[cfg(test)]
pub(crate) mod tests;

use crate::cli::Voice;
use crate::display::{self, BarStyle, DisplaySwitches, Format, Frame, Segment};
use crate::meter::{Event, Label, MeterId, MeterState, Request, Role, Unit};
use crate::stats::{RateTracker, Rates};
use crate::sys;
use crate::term::{self, Term};
use crate::units::CountKind;

/// One meter at one update, with the figures the display shows.
#[derive(Debug)]
pub(crate) struct Reading<'a> {
    /// The meter's state.
    pub meter: &'a MeterState,
    /// Seconds since its clock started, stopped time (Ctrl-Z) excluded.
    pub elapsed: f64,
    /// Rate, average rate, percentage, maximum rate.
    pub rates: Rates,
    /// The meter's rate history (for `--stats`).
    pub tracker: &'a RateTracker,
    /// This is the meter's final update (its rates are whole-run averages).
    pub final_update: bool,
    /// Seconds without progress, once the meter counts as stalled.
    pub stalled_for: Option<f64>,
}

/// A rate below this (units per second) is too small to estimate from.
const ETA_MIN_RATE: f64 = 0.001;

impl Reading<'_> {
    /// Seconds left at the average rate: the one estimate every output shows (`%e`, `%I`,
    /// `--json`'s `eta`, the metrics, notifications, `--top`). There is none when the size
    /// is unknown, nothing has moved yet (a watched descriptor: nothing past where watching
    /// began), the average is negligible or not a number, the meter is stalled, or this is
    /// its final update (done, or interrupted). A rate-limited transfer needs no rule of its
    /// own: its average is the limited rate. Past the size, 0.
    pub(crate) fn eta(&self) -> Option<f64> {
        let m = self.meter;
        let avg = self.rates.avg_rate;
        let estimable = m.size > 0
            && m.moved > 0
            && avg.is_finite()
            && avg >= ETA_MIN_RATE
            && self.stalled_for.is_none()
            && !self.final_update;
        estimable.then(|| m.size.saturating_sub(m.amount) as f64 / avg)
    }
}

/// Everything one update shows.
#[derive(Debug)]
pub(crate) struct Snapshot<'a> {
    /// One reading per meter whose clock has started, in the sources' order.
    pub readings: Vec<Reading<'a>>,
    /// The last update of the run.
    pub final_update: bool,
    /// Wall-clock now (seconds since the epoch) and the local UTC offset, for `%I` and log
    /// time stamps: read on first use (the first read loads the time zone).
    pub clock: std::cell::OnceCell<(i64, i32)>,
}

impl Snapshot<'_> {
    /// Wall-clock now and the local UTC offset (read once per snapshot, when needed).
    pub(crate) fn wall_clock(&self) -> (i64, i32) {
        *self.clock.get_or_init(sys::wall_clock)
    }

    /// The reading of meter `id`, if it is in this snapshot.
    pub(crate) fn reading(&self, id: MeterId) -> Option<&Reading<'_>> {
        self.readings.iter().find(|r| r.meter.id == id)
    }

    /// `%{ratio}` for `r`: its amount and its partner's.
    pub(crate) fn ratio(&self, r: &Reading<'_>) -> Option<(u64, u64)> {
        let partner = self.reading(r.meter.partner?)?;
        Some((r.meter.amount, partner.meter.amount))
    }
}

/// A form of output. Every method has a default that does nothing, so a sink implements
/// only what it shows.
pub(crate) trait Sink {
    /// Something happened (an error, a path chosen, ...).
    fn event(&mut self, _event: &Event, _config: &DisplayConfig, _term: &mut Term) {}

    /// A regular (or, at the end, the final) update.
    fn update(&mut self, _snapshot: &Snapshot<'_>, _config: &DisplayConfig, _term: &mut Term) {}

    /// The run is over (after the final update, if there was one).
    fn finish(&mut self, _snapshot: &Snapshot<'_>, _config: &DisplayConfig, _term: &mut Term) {}

    /// The display settings changed (`-R`) or the terminal was resized.
    fn reconfigure(&mut self, _config: &DisplayConfig) {}

    /// Called at every wake-up of the display loop between updates (at least as often as
    /// [`Sink::poll_period_ns`] or a source's asks): for a view that takes keys (`--top`),
    /// which puts what they ask of the sources in `requests` (the loop hands them over).
    fn tick(&mut self, _config: &DisplayConfig, _term: &mut Term, _requests: &mut Vec<Request>) {}

    /// How often the display loop should call [`Sink::tick`] (nanoseconds) while it waits
    /// for its next update; `None`: only at updates and wake-ups.
    fn poll_period_ns(&self) -> Option<u64> {
        None
    }
}

/// How numbers and bars look, fixed for the run.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Style {
    /// `-n`.
    pub numeric: bool,
    /// `-k`: decimal prefixes for bytes.
    pub si: bool,
    /// `-8`.
    pub bits: bool,
    /// `-g`.
    pub gauge: bool,
    /// `-u`.
    pub bar_style: BarStyle,
    /// The locale is UTF-8.
    pub utf8: bool,
    /// Colour escapes may be written.
    pub colour: bool,
}

impl Style {
    /// The unit system for a meter of `unit`.
    pub(crate) fn kind(&self, unit: Unit) -> CountKind {
        match unit {
            Unit::Lines => CountKind::Lines,
            Unit::Bytes if self.si => CountKind::DecimalBytes,
            Unit::Bytes => CountKind::BinaryBytes,
        }
    }
}

/// The display settings: how the sinks draw (which sinks a run has is the plan's
/// `OutputKind` list; how the loop runs, its `SessionConfig`). Built by the plan; `-R` may
/// change the switches, format, name, extra display, size of the terminal and interval
/// during a run.
#[derive(Debug, Clone, Default)]
pub(crate) struct DisplayConfig {
    /// Anything is displayed at all (stderr is a terminal, or `-f`/`-n`; not `-q`; not an
    /// empty `-F`).
    pub enabled: bool,
    /// `-f`.
    pub force: bool,
    /// `-v`.
    pub stats: bool,
    /// The switches the default format is built from.
    pub switches: DisplaySwitches,
    /// `-F`, if given (or set by `-R`).
    pub format: Option<String>,
    /// The `-F` given before the last one (the input side of `-M both`).
    pub prev_format: Option<String>,
    /// `-N`.
    pub name: Option<String>,
    /// The `-N` given before the last one (the input side of `-M both`).
    pub prev_name: Option<String>,
    /// `-x`.
    pub extra: Option<String>,
    /// Terminal width and height now.
    pub width: usize,
    /// Terminal height now.
    pub height: usize,
    /// Numbers and bars.
    pub style: Style,
    /// Standard error is a terminal.
    pub stderr_tty: bool,
    /// `RPV_TEST_TRACE`: show path choices and fallbacks.
    pub trace: bool,
    /// `-i`, nanoseconds.
    pub interval_ns: u64,
    /// `--each`: a row per input and a total row.
    pub each: bool,
    /// `--json`, `--log` (records instead of the display), or the display.
    pub voice: Voice,
    /// `-q`.
    pub quiet: bool,
}

impl DisplayConfig {
    /// The terminal size, from `-w`/`-H` (`fixed`) or the terminal.
    pub(crate) fn measure(&mut self, fixed: (u32, u32)) {
        (self.width, self.height) = term::size(fixed.0, fixed.1);
    }

    /// Whether progress lines are shown now: the display is enabled and rpv is in the
    /// terminal's foreground (or `-f`/`-n`).
    pub(crate) fn visible(&self) -> bool {
        self.enabled && (self.style.numeric || self.force || sys::in_foreground(sys::stderr_fd()))
    }

    /// The `-N` name a meter shows.
    pub(crate) fn name_for(&self, role: Role) -> Option<&str> {
        match role {
            Role::MonitorIn => self.prev_name.as_deref().or(self.name.as_deref()),
            Role::Transfer | Role::MonitorOut => self.name.as_deref(),
            Role::Input(_) | Role::Output(_) | Role::Descriptor | Role::Stage | Role::Flow => None,
        }
    }

    /// The format text of a meter: `-F` if given, else the default built from the switches.
    pub(crate) fn format_text(&self, meter: &MeterState) -> String {
        let size_known = meter.size > 0;
        let custom = match meter.role {
            Role::MonitorIn => self.prev_format.as_deref().or(self.format.as_deref()),
            _ => self.format.as_deref(),
        };
        if let Label::Descriptor { prefix, .. } = meter.label {
            return descriptor_format(custom, &self.switches, size_known, prefix);
        }
        let named = match meter.role {
            Role::Input(_) | Role::Output(_) => true,
            Role::Transfer if self.each => true,
            role => self.name_for(role).is_some(),
        };
        let switches = DisplaySwitches {
            name: named,
            ..self.switches
        };
        match custom {
            Some(text) => text.to_string(),
            None if meter.role == Role::MonitorOut => {
                format!(
                    "{} %{{ratio}}",
                    display::default_format(&switches, size_known)
                )
            }
            None => display::default_format(&switches, size_known),
        }
    }

    /// The name shown by `%N` for a meter, at the current width.
    pub(crate) fn label(&self, meter: &MeterState) -> Option<String> {
        match &meter.label {
            Label::None if self.each && meter.role == Role::Transfer => {
                Some(self.name.clone().unwrap_or_else(|| "total".to_string()))
            }
            Label::None => self.name_for(meter.role).map(str::to_string),
            Label::Text(text) => Some(text.clone()),
            Label::Descriptor {
                pid,
                fd,
                path,
                note,
                with_pid,
                ..
            } => Some(crate::screen::names::name(
                *pid, *fd, path, note, *with_pid, self.width,
            )),
        }
    }

    /// The frame to render for `r`.
    pub(crate) fn frame<'a>(
        &self,
        r: &'a Reading<'_>,
        name: Option<&'a str>,
        snapshot: &Snapshot<'_>,
    ) -> Frame<'a> {
        let m = r.meter;
        let (last_written, previous_line) = match &m.tail {
            Some(t) => (&t.last[..], &t.line[..]),
            None => (&[][..], &[][..]),
        };
        Frame {
            elapsed: r.elapsed,
            transferred: m.amount,
            size: m.size,
            eta: r.eta(),
            rate: r.rates.rate,
            avg_rate: r.rates.avg_rate,
            percentage: r.rates.percentage,
            max_rate: r.rates.max_rate,
            final_update: r.final_update,
            numeric: self.style.numeric,
            kind: self.style.kind(m.unit),
            bits: self.style.bits,
            gauge: self.style.gauge,
            name,
            bar_style: self.style.bar_style,
            utf8: self.style.utf8,
            colour: self.style.colour,
            buffer: m.buffer,
            wall_clock: snapshot.wall_clock(),
            last_written,
            previous_line,
            ratio: snapshot.ratio(r),
            stalled: r.stalled_for,
            waiting: m.waiting,
        }
    }
}

/// The format of a watched descriptor: `-F`, or the switch default without a name (names
/// come from the descriptors); `%N ` in front when several items or a whole process are
/// watched and the format has no `%N` of its own.
fn descriptor_format(
    custom: Option<&str>,
    switches: &DisplaySwitches,
    size_known: bool,
    prefix: bool,
) -> String {
    let text = custom.map(str::to_string).unwrap_or_else(|| {
        let switches = DisplaySwitches {
            name: false,
            ..*switches
        };
        display::default_format(&switches, size_known)
    });
    let has_name = Format::parse(&text)
        .segments
        .iter()
        .any(|s| matches!(s, Segment::Name { .. }));
    if prefix && !has_name && !text.is_empty() {
        format!("%N {text}")
    } else {
        text
    }
}

/// Parsed formats by text, so each is parsed once (formats change only with `-R` or when a
/// size becomes known).
#[derive(Debug, Default)]
pub(crate) struct Formats {
    parsed: Vec<(String, Format)>,
}

impl Formats {
    /// The parsed format for `text`.
    pub(crate) fn get(&mut self, text: &str) -> &Format {
        let at = match self.parsed.iter().position(|(t, _)| t == text) {
            Some(at) => at,
            None => {
                self.parsed.push((text.to_string(), Format::parse(text)));
                self.parsed.len() - 1
            }
        };
        &self.parsed[at].1
    }

    /// Forgets every parsed format (after `-R` changed the settings).
    pub(crate) fn clear(&mut self) {
        self.parsed.clear();
    }
}

/// Renders meter `r` as one line at the current width (the shared step of the line,
/// numeric, title and multi-line sinks).
pub(crate) fn render_line(
    formats: &mut Formats,
    config: &DisplayConfig,
    r: &Reading<'_>,
    snapshot: &Snapshot<'_>,
) -> String {
    let text = config.format_text(r.meter);
    let name = config.label(r.meter);
    let frame = config.frame(r, name.as_deref(), snapshot);
    display::render(formats.get(&text), &frame, config.width)
}

/// Renders meter `r` as one row of a view, `width` columns at most: like [`render_line`],
/// with control characters in its name shown escaped.
pub(crate) fn render_row(
    formats: &mut Formats,
    config: &DisplayConfig,
    r: &Reading<'_>,
    snapshot: &Snapshot<'_>,
    width: usize,
) -> String {
    let text = config.format_text(r.meter);
    let name = config.label(r.meter);
    let name = name.as_deref().map(display::printable);
    let frame = config.frame(r, name.as_deref(), snapshot);
    display::render(formats.get(&text), &frame, width)
}

/// True if a format text shows `%A` or `%L` (the engine then keeps the tail of the data).
pub(crate) fn shows_tail(text: &str) -> bool {
    Format::parse(text).segments.iter().any(|s| {
        matches!(
            s,
            Segment::LastWritten { .. } | Segment::PreviousLine { .. }
        )
    })
}
