//! Number syntax of option values (spec 1.5): validators and lenient converters.
//! Pure functions, no I/O.

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

