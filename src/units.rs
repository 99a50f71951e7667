//! Number formatting, as pv 1.11 does it (spec 2.7, 2.8.2, 2.8.3).
//!
//! Owns: turning amounts, rates and durations into pv's fixed-width text ("describe amount").
//! Parsing option values lives in `cli::number`.
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
