//! Number syntax and number formatting, as pv 1.11 does them (spec 1.5, 2.7, 2.8.2).
//!
//! Owns: validating and converting option values (`-s 1.5G`, `-i 0.5`, `-w 80`), and turning
//! amounts, rates and durations into pv's fixed-width text ("describe amount").
//! Must not: do any I/O. Everything here is a pure function.

/// What is being counted; decides the prefix ratio (1024 or 1000) and the prefix field width.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CountKind {
    /// Bytes with binary prefixes (`KiB`, `MiB`): the default.
    BinaryBytes,
    /// Bytes with decimal prefixes (`kB`, `MB`): `-k`/`--si`.
    DecimalBytes,
    /// Lines (`-l`/`-0`): decimal prefixes, no unit.
    Lines,
}

/// True if `s` is a valid ANY_WITH_SUFFIX value (spec 1.5): `-s -L -B -Z`.
pub fn is_valid_size(s: &str) -> bool {
    todo!("{s}")
}

/// True if `s` is a valid BARE_INTEGER value (spec 1.5): `-A -w -H -R -Q -m`.
pub fn is_valid_integer(s: &str) -> bool {
    todo!("{s}")
}

/// True if `s` is a valid BARE_DOUBLE value (spec 1.5): `-i -D`.
pub fn is_valid_double(s: &str) -> bool {
    todo!("{s}")
}

/// Converts a size (spec 1.5 "Size conversion"); `si` selects 1000-based suffixes (`-k`).
/// Never fails: call `is_valid_size` first.
pub fn parse_size(s: &str, si: bool) -> u64 {
    todo!("{s}{si}")
}

/// Converts an interval in seconds (spec 1.5 "Interval conversion"). Never fails.
pub fn parse_interval(s: &str) -> f64 {
    todo!("{s}")
}

/// pv's "describe amount" (spec 2.7): number field + prefix field + `suffix`.
/// `value` is already multiplied by 8 for `-8`. Example: (1024.0, BinaryBytes, "B") → "1.00KiB".
pub fn describe_amount(value: f64, kind: CountKind, suffix: &str) -> String {
    todo!("{value}{kind:?}{suffix}")
}

/// Elapsed-time text of `%t` (spec 2.8.2): `H:MM:SS`, or `D:HH:MM:SS` above 86400 s.
/// `secs` is already clamped to [0, 360000000] by the caller.
pub fn format_elapsed(secs: f64) -> String {
    todo!("{secs}")
}

/// ETA text without the `ETA ` prefix (spec 2.8.3): `H:MM:SS`, or `D:HH:MM:SS` above 86400 s.
pub fn format_eta(secs: u64) -> String {
    todo!("{secs}")
}
