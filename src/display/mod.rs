//! The pv display language: format strings → segments → one line of text.
//!
//! Owns: parsing `-F` formats (and the switch-derived default format) into [`Format`] once,
//! and rendering a [`Frame`] through it at a given width. Must not: read clocks, counters or
//! the terminal, or write anything. `render` is a pure function of (format, frame, width).

mod bar;
mod clock;
pub(crate) mod escape;
mod format;
mod render;
mod width;

pub(crate) use clock::iso8601;
pub(crate) use escape::printable;
pub(crate) use format::{default_format, DisplaySwitches, Format, Segment};
pub(crate) use render::render;
pub(crate) use width::{cut_to_width, display_width, wrap};

use crate::units::CountKind;

/// Bar styles of `-u`/`%{bar-STYLE}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum BarStyle {
    /// `=` fillers, `>` tip, `<=>` indicator.
    #[default]
    Plain,
    /// `█` fillers, `◀▶` indicator.
    Block,
    /// Eighth blocks `▏▎▍▌▋▊▉█`, `◀▶` indicator.
    Granular,
    /// `░` background, `▒▓█` fillers, `▒▓▒` indicator.
    Shaded,
}

impl BarStyle {
    /// `-u` argument → style; unknown names give `Plain` (silently, like pv).
    pub(crate) fn from_name(name: &str) -> BarStyle {
        match name {
            "block" => BarStyle::Block,
            "granular" => BarStyle::Granular,
            "shaded" => BarStyle::Shaded,
            _ => BarStyle::Plain,
        }
    }
}

/// State of the transfer buffer for `%T`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) enum BufferFill {
    /// No buffer exists yet: `%T` renders empty.
    #[default]
    None,
    /// The last step used splice: `{----}`.
    Splice,
    /// Fraction of the buffer holding unwritten bytes, 0.0–1.0.
    Fraction(f64),
}

/// Which side a stage of a pipeline waits on, from how full its input and output pipes
/// are (`%{bottleneck}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Waiting {
    /// Its input pipe is empty: the stage before it is slower.
    Input,
    /// Its output pipe is full: the stage after it is slower.
    Output,
    /// Data waits in its input and there is room in its output: this stage holds the
    /// pipeline back (or its `-L` limit does).
    Busy,
}

impl Waiting {
    /// The words `%{bottleneck}` shows.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Waiting::Input => "waits for input",
            Waiting::Output => "waits for output",
            Waiting::Busy => "bottleneck",
        }
    }
}

/// Everything one display update may show. Built by the caller from a counters snapshot and
/// [`crate::stats::Rates`]; rendering never looks anywhere else.
#[derive(Debug, Clone, Default)]
pub(crate) struct Frame<'a> {
    /// Elapsed seconds, stopped time excluded.
    pub elapsed: f64,
    /// Bytes or lines transferred (already adjusted for unread pipe contents).
    pub transferred: u64,
    /// Total size in the same unit; 0 = unknown.
    pub size: u64,
    /// Seconds left (the reading's one estimate, `sink::Reading::eta`), `None` when there is
    /// none.
    pub eta: Option<f64>,
    /// Current rate (units/s); the whole-run average at the final update.
    pub rate: f64,
    /// Windowed average rate (units/s); the whole-run average at the final update.
    pub avg_rate: f64,
    /// Percentage, from `RateTracker` (known size: 100×done/size; unknown: bouncing counter).
    pub percentage: f64,
    /// Highest rate measured (for `-g`).
    pub max_rate: f64,
    /// True for the last update of a transfer (ETA is blanked).
    pub final_update: bool,
    /// `-n`: numeric component output.
    pub numeric: bool,
    /// Unit system: binary bytes, decimal bytes (`-k`), or lines (`-l`).
    pub kind: CountKind,
    /// `-8`: show bits (×8, `b` suffixes).
    pub bits: bool,
    /// `-g`: size unknown, bar shows rate as a fraction of the maximum rate.
    pub gauge: bool,
    /// `-N` name, if any.
    pub name: Option<&'a str>,
    /// `-u` default bar style (used by `%p` and `%{progress-bar-only}`).
    pub bar_style: BarStyle,
    /// The locale is UTF-8 (non-plain bar styles need it; otherwise they fall back to plain).
    pub utf8: bool,
    /// Colour (`%{sgr:…}`) may be emitted.
    pub colour: bool,
    /// `%T` state.
    pub buffer: BufferFill,
    /// The last bytes written, oldest first, at most 256 (`%A`); may be shorter than asked.
    pub last_written: &'a [u8],
    /// The most recent complete line written, without its terminator (`%L`).
    pub previous_line: &'a [u8],
    /// `%{ratio}`: (this side's count, the other side's count), monitor mode only.
    pub ratio: Option<(u64, u64)>,
    /// Wall-clock now, seconds since the Unix epoch, and the local UTC offset in seconds
    /// (for `%I`). Passed in so rendering stays pure.
    pub wall_clock: (i64, i32),
    /// Seconds without progress, when the transfer counts as stalled: the ETA then says
    /// so instead of inventing a number.
    pub stalled: Option<f64>,
    /// `%{bottleneck}`: the side this stage waits on, if known.
    pub waiting: Option<Waiting>,
}
