//! Number formatting, as pv 1.11 does it.
//!
//! Owns: turning amounts, rates and durations into pv's fixed-width text ("describe amount").
//! Parsing option values lives in `cli::number`.
//! Must not: do any I/O. Everything here is a pure function.
//!
//! Deliberate difference from pv: values below 1 are never scaled down to
//! milli/micro prefixes. pv prints half a byte per second as `" 512miB/s"` (a binary "milli"
//! that means nothing); we print the unscaled value with two decimals (`"0.50  B/s"`), which
//! also keeps the field width stable and avoids exponent notation for tiny values.

/// What is being counted; decides the prefix ratio (1024 or 1000) and the prefix field width.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum CountKind {
    /// Bytes with binary prefixes (`KiB`, `MiB`): the default.
    #[default]
    BinaryBytes,
    /// Bytes with decimal prefixes (`kB`, `MB`): `-k`/`--si`.
    DecimalBytes,
    /// Lines (`-l`/`-0`): decimal prefixes, no unit.
    Lines,
}

/// What a meter's amount counts: bytes, or lines (also what a `-Q` reply counts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Unit {
    /// Bytes.
    #[default]
    Bytes,
    /// Lines (`-l`), or NUL-terminated records (`-0`).
    Lines,
}

/// Prefixes for scaling up, binary bytes (`i` is appended).
const BINARY_PREFIXES: [char; 8] = ['K', 'M', 'G', 'T', 'P', 'E', 'Z', 'Y'];
/// Prefixes for scaling up, decimal bytes and lines.
const DECIMAL_PREFIXES: [char; 8] = ['k', 'M', 'G', 'T', 'P', 'E', 'Z', 'Y'];
/// Largest magnitude printed.
const AMOUNT_CLAMP: f64 = 100_000.0;
/// Seconds in a day: above this, times gain a day field.
const DAY: u64 = 86_400;

/// pv's "describe amount": number field + prefix field + `suffix`.
/// `value` is already multiplied by 8 for `-8`. Example: (1024.0, BinaryBytes, "B") → "1.00KiB".
pub(crate) fn describe_amount(value: f64, kind: CountKind, suffix: &str) -> String {
    let (ratio, prefixes) = match kind {
        CountKind::BinaryBytes => (1024.0, &BINARY_PREFIXES),
        CountKind::DecimalBytes | CountKind::Lines => (1000.0, &DECIMAL_PREFIXES),
    };
    let mut value = if value.is_finite() { value } else { 0.0 };
    let mut prefix = None;
    if value.abs() >= 1e-8 {
        for &p in prefixes {
            if value.abs() < ratio {
                break;
            }
            value /= ratio;
            prefix = Some(p);
        }
    }
    let prefix_field = match (kind, prefix) {
        (CountKind::BinaryBytes, Some(p)) => format!("{p}i"),
        (CountKind::BinaryBytes, None) => "  ".to_string(),
        (_, Some(p)) => p.to_string(),
        (_, None) => " ".to_string(),
    };
    let value = value.clamp(-AMOUNT_CLAMP, AMOUNT_CLAMP);
    format!("{}{prefix_field}{suffix}", number_field(value))
}

/// The 4-column number of describe-amount: `%4ld` above 99.9, else `%#4.3g`.
fn number_field(value: f64) -> String {
    if value.abs() > 99.9 {
        // Truncation toward zero is what pv does (`99.95` → `"  99"`).
        format!("{:4}", value.trunc() as i64)
    } else if value != 0.0 && value.abs() < 1.0 {
        // Only reachable because we never scale down (see module docs).
        format!("{value:4.2}")
    } else {
        format!("{:>4}", format_g(value, 3, true))
    }
}

/// C's `%.{precision}g` (with `alternate`, `%#.{precision}g`: trailing zeros and point kept).
pub(crate) fn format_g(value: f64, precision: usize, alternate: bool) -> String {
    if !value.is_finite() {
        return if value.is_nan() { "nan" } else { "inf" }.to_string();
    }
    let precision = precision.max(1);
    // The exponent is the one %e would print after rounding to `precision` digits.
    let sci = format!("{:.*e}", precision - 1, value);
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exponent: i64 = exponent.parse().unwrap_or(0);
    let text = if value == 0.0 || (-4..precision as i64).contains(&exponent) {
        let decimals = if value == 0.0 {
            precision - 1
        } else {
            (precision as i64 - 1 - exponent).max(0) as usize
        };
        format!("{value:.decimals$}")
    } else {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exponent.abs())
    };
    if alternate {
        if text.contains('.') || text.contains('e') {
            text
        } else {
            format!("{text}.")
        }
    } else {
        strip_fraction_zeros(&text)
    }
}

/// Removes trailing zeros (and a bare point) from the mantissa of a `%g` result.
fn strip_fraction_zeros(text: &str) -> String {
    let (mantissa, exponent) = match text.find('e') {
        Some(at) => text.split_at(at),
        None => (text, ""),
    };
    let mantissa = if mantissa.contains('.') {
        mantissa.trim_end_matches('0').trim_end_matches('.')
    } else {
        mantissa
    };
    format!("{mantissa}{exponent}")
}

/// Elapsed-time text of `%t`: `H:MM:SS`, or `D:HH:MM:SS` above 86400 s.
/// `secs` is already clamped to [0, 360000000] by the caller.
pub(crate) fn format_elapsed(secs: f64) -> String {
    let whole = if secs.is_finite() && secs > 0.0 {
        secs as u64
    } else {
        0
    };
    if secs > DAY as f64 {
        day_form(whole)
    } else {
        hour_form(whole)
    }
}

/// ETA text without the `ETA ` prefix: `H:MM:SS`, or `D:HH:MM:SS` above 86400 s.
pub(crate) fn format_eta(secs: u64) -> String {
    if secs > DAY {
        day_form(secs)
    } else {
        hour_form(secs)
    }
}

/// `H:MM:SS` with unpadded hours.
fn hour_form(secs: u64) -> String {
    format!("{}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60)
}

/// `D:HH:MM:SS` with unpadded days.
fn day_form(secs: u64) -> String {
    format!(
        "{}:{:02}:{:02}:{:02}",
        secs / DAY,
        secs / 3600 % 24,
        secs / 60 % 60,
        secs % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_amounts_match_pv() {
        let table: &[(f64, &str)] = &[
            (0.0, "0.00  B"),
            (1.0, "1.00  B"),
            (9.0, "9.00  B"),
            (10.0, "10.0  B"),
            (99.0, "99.0  B"),
            (100.0, " 100  B"),
            (1000.0, "1000  B"),
            (1023.0, "1023  B"),
            (1024.0, "1.00KiB"),
            (10240.0, "10.0KiB"),
            (102348.0, "  99KiB"),
            (102400.0, " 100KiB"),
            (1023999.0, " 999KiB"),
            (1024000.0, "1000KiB"),
            (1048575.0, "1023KiB"),
            (1048576.0, "1.00MiB"),
            (5000000.0, "4.77MiB"),
            (1152.0, "1.12KiB"), // exact tie rounds to even, like glibc
        ];
        for &(value, want) in table {
            assert_eq!(
                describe_amount(value, CountKind::BinaryBytes, "B"),
                want,
                "{value}"
            );
        }
    }

    #[test]
    fn decimal_bits_and_lines_match_pv() {
        let table: &[(f64, CountKind, &str, &str)] = &[
            (999.0, CountKind::DecimalBytes, "B", " 999 B"),
            (1000.0, CountKind::DecimalBytes, "B", "1.00kB"),
            (1500.0, CountKind::DecimalBytes, "B", "1.50kB"),
            (999999.0, CountKind::DecimalBytes, "B", " 999kB"),
            (1e6, CountKind::DecimalBytes, "B", "1.00MB"),
            (123456789.0, CountKind::DecimalBytes, "B", " 123MB"),
            (40000.0, CountKind::DecimalBytes, "b", "40.0kb"),
            (24.0, CountKind::BinaryBytes, "b", "24.0  b"),
            (150000.0, CountKind::BinaryBytes, "b/s", " 146Kib/s"),
            (12345.0, CountKind::Lines, "", "12.3k"),
            (0.0, CountKind::Lines, "", "0.00 "),
            (0.0, CountKind::Lines, "/s", "0.00 /s"),
            (6.39e6, CountKind::Lines, "/s", "6.39M/s"),
            (99.6, CountKind::DecimalBytes, "B/s", "99.6 B/s"),
        ];
        for &(value, kind, suffix, want) in table {
            assert_eq!(
                describe_amount(value, kind, suffix),
                want,
                "{value} {kind:?}"
            );
        }
    }

    #[test]
    fn edge_values() {
        // (99.9, 100) truncates instead of rounding.
        assert_eq!(describe_amount(99.95, CountKind::Lines, ""), "  99 ");
        assert_eq!(describe_amount(99.9, CountKind::Lines, ""), "99.9 ");
        assert_eq!(describe_amount(9.996, CountKind::Lines, ""), "10.0 ");
        // Clamp to 100000 once the prefixes run out.
        assert_eq!(describe_amount(1e40, CountKind::Lines, ""), "100000Y");
        assert_eq!(describe_amount(-5.0, CountKind::Lines, ""), "-5.00 ");
        assert_eq!(describe_amount(-500.0, CountKind::Lines, ""), "-500 ");
        assert_eq!(describe_amount(f64::NAN, CountKind::Lines, ""), "0.00 ");
    }

    #[test]
    fn sub_unit_values_are_not_scaled_down() {
        // pv would print " 500miB/s" and " 217mB/s" here.
        let b = CountKind::BinaryBytes;
        assert_eq!(describe_amount(0.5, b, "B/s"), "0.50  B/s");
        assert_eq!(
            describe_amount(0.217, CountKind::DecimalBytes, "B/s"),
            "0.22 B/s"
        );
        assert_eq!(describe_amount(1e-9, b, "B/s"), "0.00  B/s");
        assert_eq!(describe_amount(3e-7, b, "B/s"), "0.00  B/s");
        assert_eq!(describe_amount(0.999, b, "B/s"), "1.00  B/s");
    }

    #[test]
    fn format_g_like_c() {
        let table: &[(f64, usize, bool, &str)] = &[
            (2.966, 4, false, "2.966"),
            (3.2, 4, false, "3.2"),
            (2.0, 4, false, "2"),
            (12345.0, 4, false, "1.234e+04"),
            (0.0001234, 4, false, "0.0001234"),
            (0.00001234, 4, false, "1.234e-05"),
            (0.0, 3, true, "0.00"),
            (1.0, 3, true, "1.00"),
            (10.0, 3, true, "10.0"),
            (100.0, 3, true, "100."),
            (1000.0, 3, true, "1.00e+03"),
        ];
        for &(value, precision, alternate, want) in table {
            assert_eq!(format_g(value, precision, alternate), want, "{value}");
        }
    }

    #[test]
    fn elapsed_times() {
        let table: &[(f64, &str)] = &[
            (0.0, "0:00:00"),
            (0.99, "0:00:00"),
            (5.0, "0:00:05"),
            (45296.0, "12:34:56"),
            (86400.0, "24:00:00"),
            (86400.5, "1:00:00:00"),
            (86401.0, "1:00:00:01"),
            (360000000.0, "4166:16:00:00"),
        ];
        for &(secs, want) in table {
            assert_eq!(format_elapsed(secs), want, "{secs}");
        }
    }

    #[test]
    fn eta_times() {
        let table: &[(u64, &str)] = &[
            (0, "0:00:00"),
            (3, "0:00:03"),
            (36000, "10:00:00"),
            (86400, "24:00:00"),
            (86401, "1:00:00:01"),
            (12 * 86400 + 12 * 3600 + 102, "12:12:01:42"),
        ];
        for &(secs, want) in table {
            assert_eq!(format_eta(secs), want, "{secs}");
        }
    }
}
