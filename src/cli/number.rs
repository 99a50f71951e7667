//! Number syntax of option values: validators and lenient converters.
//!
//! Owns: deciding whether an option value is acceptable (the three validators) and turning
//! accepted text into numbers the way pv does (integer arithmetic, truncated fractions).
//! Must not: do any I/O or produce messages; `args.rs` words the errors.
//! Pure functions, no I/O.

/// Skips leading spaces and tabs, then one or more ASCII digits. Returns the rest, or `None`
/// if there was no digit.
fn leading_digits(s: &str) -> Option<&str> {
    let s = s.trim_start_matches([' ', '\t']);
    let rest = s.trim_start_matches(|c: char| c.is_ascii_digit());
    (rest.len() < s.len()).then_some(rest)
}

/// Consumes an optional decimal mark (`.` or `,`) and any digits after it.
fn skip_fraction(s: &str) -> &str {
    match s.strip_prefix(['.', ',']) {
        Some(rest) => rest.trim_start_matches(|c: char| c.is_ascii_digit()),
        None => s,
    }
}

/// True if `s` is a valid `ANY_WITH_SUFFIX` value: `-s -L -B -Z`.
///
/// Syntax: `[ \t]* digit+ ( [.,] digit* )? ( [ \t]* [kKmMgGtT] )?`, whole string.
pub(crate) fn is_valid_size(s: &str) -> bool {
    let Some(rest) = leading_digits(s) else {
        return false;
    };
    let rest = skip_fraction(rest);
    if rest.is_empty() {
        return true;
    }
    let rest = rest.trim_start_matches([' ', '\t']);
    let mut chars = rest.chars();
    matches!(
        chars.next(),
        Some('k' | 'K' | 'm' | 'M' | 'g' | 'G' | 't' | 'T')
    ) && chars.next().is_none()
}

/// True if `s` is a valid `BARE_INTEGER` value: `-A -w -H -R -Q -m`.
///
/// Syntax: `[ \t]* digit+`, whole string.
pub(crate) fn is_valid_integer(s: &str) -> bool {
    leading_digits(s).is_some_and(str::is_empty)
}

/// True if `s` is a valid `BARE_DOUBLE` value: `-i -D`.
///
/// Syntax: `[ \t]* digit+ ( [.,] digit* )?`, whole string.
pub(crate) fn is_valid_double(s: &str) -> bool {
    leading_digits(s).is_some_and(|rest| skip_fraction(rest).is_empty())
}

/// The pieces of a number as pv's converters read them.
struct Scanned<'a> {
    /// Integer part; `None` if it does not fit in 64 bits.
    integer: Option<u64>,
    /// Kept fraction digits as an integer, e.g. `2345` for `.23456789` with 4 kept.
    fraction: u64,
    /// Number of kept fraction digits.
    fraction_digits: u32,
    /// Everything after the fraction.
    rest: &'a str,
}

/// Skips non-digits, reads the integer part and up to `max_fraction` fraction digits
/// (further fraction digits are consumed and ignored).
fn scan(s: &str, max_fraction: u32) -> Scanned<'_> {
    let start = s.find(|c: char| c.is_ascii_digit()).unwrap_or(s.len());
    let mut bytes = s[start..].bytes().peekable();
    let mut consumed = start;
    let mut integer = Some(0u64);
    while let Some(d) = bytes.next_if(u8::is_ascii_digit) {
        integer = integer
            .and_then(|i| i.checked_mul(10))
            .and_then(|i| i.checked_add(u64::from(d - b'0')));
        consumed += 1;
    }
    let (mut fraction, mut fraction_digits) = (0u64, 0u32);
    if bytes.next_if(|&b| b == b'.' || b == b',').is_some() {
        consumed += 1;
        while let Some(d) = bytes.next_if(u8::is_ascii_digit) {
            if fraction_digits < max_fraction {
                fraction = fraction * 10 + u64::from(d - b'0');
                fraction_digits += 1;
            }
            consumed += 1;
        }
    }
    Scanned {
        integer,
        fraction,
        fraction_digits,
        rest: &s[consumed..],
    }
}

/// The multiplier selected by a unit suffix letter; 1 for anything else.
fn multiplier(suffix: Option<char>, si: bool) -> u64 {
    let power = match suffix {
        Some('k' | 'K') => 1,
        Some('m' | 'M') => 2,
        Some('g' | 'G') => 3,
        Some('t' | 'T') => 4,
        _ => return 1,
    };
    if si {
        1000u64.pow(power)
    } else {
        1u64 << (10 * power)
    }
}

/// Converts a size; `si` selects 1000-based suffixes (`-k`).
/// Call `is_valid_size` first: text that is not a number converts leniently (to 0 or to
/// its first digits). `None` when the value does not fit in 64 bits (2^64 bytes or more).
///
/// At most 4 fraction digits are used, and the fraction is scaled by the multiplier in integer
/// arithmetic, so `1.5` is 1 but `1.5k` is 1536. Unlike pv, which wraps around silently (so
/// `-S -s 18446744073709551617` would stop after 1 byte), a value too large is refused.
pub(crate) fn parse_size(s: &str, si: bool) -> Option<u64> {
    let n = scan(s, 4);
    let suffix = n.rest.trim_start_matches([' ', '\t']).chars().next();
    let mult = multiplier(suffix, si);
    // At most 9999 × 10^12: cannot overflow.
    let scaled_fraction = n.fraction * mult / 10u64.pow(n.fraction_digits);
    n.integer?.checked_mul(mult)?.checked_add(scaled_fraction)
}

/// Converts an interval in seconds. Never fails.
///
/// Leading non-digits are skipped and at most 6 fraction digits are used.
pub(crate) fn parse_interval(s: &str) -> f64 {
    let start = s.find(|c: char| c.is_ascii_digit()).unwrap_or(s.len());
    let digits = s[start..].trim_start_matches(|c: char| c.is_ascii_digit());
    let integer = s[start..s.len() - digits.len()]
        .bytes()
        .fold(0.0, |acc, d| acc * 10.0 + f64::from(d - b'0'));
    let n = scan(s, 6);
    let fraction = n.fraction as f64 / 10f64.powi(n.fraction_digits as i32);
    integer + fraction
}

/// Longest duration accepted: about 11 years (as `-D`).
const MAX_DURATION: f64 = 360_000_000.0;

/// A duration in seconds (`--stall-timeout`): a bare number of seconds (`30`, `0.5`), or
/// numbers each followed by a unit, `ms`, `s`, `m`, `h` or `d` (`30s`, `1.5m`, `1h30m`).
/// The decimal mark is `.` or `,`; spaces around the value are ignored. `None` for anything
/// else; values beyond about 11 years are that.
pub(crate) fn parse_duration(s: &str) -> Option<f64> {
    let s = s.trim();
    let mut rest = s;
    let mut total = 0.0;
    while !rest.is_empty() {
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits == 0 {
            return None;
        }
        let after = skip_fraction(&rest[digits..]);
        let number: f64 = rest[..rest.len() - after.len()]
            .replace(',', ".")
            .trim_end_matches('.')
            .parse()
            .ok()?;
        let unit_len = after.len()
            - after
                .trim_start_matches(|c: char| c.is_ascii_alphabetic())
                .len();
        let scale = match &after[..unit_len] {
            // A bare number only on its own: `1h30` is more likely a mistake than seconds.
            "" if rest.len() == s.len() => 1.0,
            "ms" => 0.001,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            "d" => 86_400.0,
            _ => return None,
        };
        total += number * scale;
        rest = &after[unit_len..];
    }
    (!s.is_empty() && total.is_finite()).then_some(total.min(MAX_DURATION))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        let cases = [
            ("30", 30.0),
            ("0.5", 0.5),
            ("1,5", 1.5),
            ("30s", 30.0),
            ("5m", 300.0),
            ("1.5m", 90.0),
            ("1h", 3600.0),
            ("1h30m", 5400.0),
            ("2d", 172_800.0),
            ("250ms", 0.25),
            (" 10s ", 10.0),
            ("0", 0.0),
            ("7.", 7.0),
            ("99999999999d", MAX_DURATION),
        ];
        for (text, seconds) in cases {
            assert_eq!(parse_duration(text), Some(seconds), "{text}");
        }
        for bad in [
            "", " ", "s", "-5", "5x", "5 s", "1h30", "1.2.3", "5sec", "m5", ".5", "1e3", "inf",
        ] {
            assert_eq!(parse_duration(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn size_validator() {
        let good = [
            "0",
            "10000",
            "1k",
            "1K",
            "1M",
            "8G",
            "1.5T",
            "2 K",
            "2\tk",
            " 5",
            "\t5",
            "1.",
            "1,5K",
            "1.5k",
            "0.5M",
            "1.23456789G",
            "1.m",
            "3t",
            "3g",
        ];
        let bad = [
            "", " ", "foo", ".5", "-1", "+1", "1KB", "1Ki", "1KiB", "1e3", "1 ", "1k ", "1x",
            "1..2", "1.2.3", "k", "1 2", "1,5,K",
        ];
        for s in good {
            assert!(is_valid_size(s), "{s:?} should be valid");
        }
        for s in bad {
            assert!(!is_valid_size(s), "{s:?} should be invalid");
        }
    }

    #[test]
    fn integer_validator() {
        for s in ["0", "1", " 12", "\t7", "999999999999"] {
            assert!(is_valid_integer(s), "{s:?} should be valid");
        }
        for s in ["", "1.5", "1.", "-1", "+1", "1k", "abc", "1 ", " ", "0x10"] {
            assert!(!is_valid_integer(s), "{s:?} should be invalid");
        }
    }

    #[test]
    fn double_validator() {
        for s in ["0", "1", "1.", "1.5", "0,25", " 2.5", "\t3"] {
            assert!(is_valid_double(s), "{s:?} should be valid");
        }
        for s in ["", "abc", ".5", "-1", "1e3", "1.5s", "1k", "1.5.", "1 "] {
            assert!(!is_valid_double(s), "{s:?} should be invalid");
        }
    }

    #[test]
    fn size_conversion_examples_of_the_spec() {
        let table: &[(&str, bool, u64)] = &[
            ("10000", false, 10000),
            ("1.5", false, 1),
            ("1k", false, 1024),
            ("1K", false, 1024),
            ("1,5K", false, 1536),
            ("1.5k", false, 1536),
            ("1M", false, 1_048_576),
            ("0.5M", false, 524_288),
            ("8G", false, 8_589_934_592),
            ("1.23456789G", false, 1_325_534_281),
            ("2 K", false, 2048),
            ("1.5T", false, 1_649_267_441_664),
            ("1.5k", true, 1500),
            ("1k", true, 1000),
        ];
        for &(s, si, want) in table {
            assert_eq!(parse_size(s, si), Some(want), "parse_size({s:?}, si={si})");
        }
    }

    #[test]
    fn size_conversion_si_multipliers() {
        assert_eq!(parse_size("1M", true), Some(1_000_000));
        assert_eq!(parse_size("1G", true), Some(1_000_000_000));
        assert_eq!(parse_size("1T", true), Some(1_000_000_000_000));
        assert_eq!(parse_size("2t", false), Some(2 << 40));
    }

    #[test]
    fn size_conversion_is_lenient() {
        let table: &[(&str, u64)] = &[
            ("", 0),
            ("foo", 0),
            ("x12", 12),
            ("12x", 12),
            ("1.99999", 1),
            ("0.00009K", 0),
            ("1.K", 1024),
            ("\t3\tm", 3 << 20),
        ];
        for &(s, want) in table {
            assert_eq!(parse_size(s, false), Some(want), "parse_size({s:?})");
        }
    }

    #[test]
    fn sizes_that_do_not_fit_in_64_bits_are_refused() {
        let max = u64::MAX;
        // The largest value and the first ones past it, through every way of overflowing:
        // the digits themselves, the multiplier, and the fraction added last.
        assert_eq!(parse_size("18446744073709551615", false), Some(max));
        assert_eq!(parse_size("18446744073709551616", false), None);
        assert_eq!(parse_size("18446744073709551617", false), None);
        assert_eq!(parse_size("99999999999999999999999999", false), None);
        assert_eq!(
            parse_size("16777215.9999T", false),
            Some((16_777_215 << 40) + 1_099_401_676_613)
        );
        assert_eq!(parse_size("16777216T", false), None);
        assert_eq!(parse_size("18446744073709551615.9999T", true), None);
        assert_eq!(parse_size("18446744073709551.615k", true), Some(max));
        assert_eq!(parse_size("18446744073709551.616k", true), None);
        assert_eq!(
            parse_size("17179869183.9999G", false),
            Some((17_179_869_183 << 30) + 1_073_634_449)
        );
        assert_eq!(parse_size("17179869184G", false), None);
    }

    #[test]
    fn interval_conversion() {
        let table: &[(&str, f64)] = &[
            ("1", 1.0),
            ("0.5", 0.5),
            ("0,25", 0.25),
            ("2.", 2.0),
            ("1.1234567", 1.123_456),
            ("0.0000019", 0.000_001),
            ("abc", 0.0),
            (" 3", 3.0),
            ("600", 600.0),
        ];
        for &(s, want) in table {
            let got = parse_interval(s);
            assert!((got - want).abs() < 1e-12, "parse_interval({s:?}) = {got}");
        }
    }
}
