//! Format-string parsing (spec 2.4, 2.5).

/// One parsed piece of a format string.
#[derive(Debug, Clone, PartialEq)]
pub enum Segment {
    /// Literal text, copied as is.
    Literal(String),
}

/// A parsed format: the segments, in order (at most 100, like pv).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Format {
    /// The segments.
    pub segments: Vec<Segment>,
}

impl Format {
    /// Parses a format string; never fails (unknown sequences become literal text).
    pub fn parse(text: &str) -> Format {
        todo!("{text}")
    }
}

/// Which display switches are on, for the default format (spec 2.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DisplaySwitches {
    /// `-p`
    pub progress: bool,
    /// `-t`
    pub timer: bool,
    /// `-e`
    pub eta: bool,
    /// `-I`
    pub fineta: bool,
    /// `-r`
    pub rate: bool,
    /// `-a`
    pub average_rate: bool,
    /// `-b` (or `-8`)
    pub bytes: bool,
    /// `-T`
    pub buffer_percent: bool,
    /// `-A N`; 0 = off
    pub last_written: u32,
    /// a `-N` name is set
    pub name: bool,
    /// `-n`
    pub numeric: bool,
}

/// Builds pv's switch-derived format string (spec 2.4); `size_known` decides `%e`/`%I`.
pub fn default_format(switches: &DisplaySwitches, size_known: bool) -> String {
    todo!("{switches:?}{size_known}")
}
