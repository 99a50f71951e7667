//! Prometheus's text exposition format (pure): the one writer of both metrics files
//! (`--metrics-file` of a transfer, `sink::metrics`, and of `--top`, `top::metrics`).
//!
//! Owns: label values (escaped: `\`, `"` and newlines as the format says; every other
//! control character, which would reach a terminal or a dashboard's legend raw, shown as
//! the terminal shows it, `\e`, `\t`, `\x7f`, `\u{009b}`, through
//! [`crate::display::printable`]), a family's `# HELP` and `# TYPE` lines, a sample line,
//! and numbers (a finite float as Rust writes it, never `-0`; `NaN` otherwise).
//! Must not: choose series or write files.

use std::fmt::Write as _;

use crate::display::printable;

/// `value` as a label value between double quotes.
pub(crate) fn label(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for (i, part) in value.split('\n').enumerate() {
        if i > 0 {
            out.push_str(r"\n");
        }
        for c in printable(part).chars() {
            match c {
                '\\' => out.push_str(r"\\"),
                '"' => out.push_str(r#"\""#),
                c => out.push(c),
            }
        }
    }
    out
}

/// A family's `# HELP` and `# TYPE` lines.
pub(crate) fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// A sample: `name{labels} value` (no braces without labels).
pub(crate) fn sample(out: &mut String, name: &str, labels: &str, value: &str) {
    if labels.is_empty() {
        let _ = writeln!(out, "{name} {value}");
    } else {
        let _ = writeln!(out, "{name}{{{labels}}} {value}");
    }
}

/// `x` as a sample's value: `0` for either zero (a sum of nothing is `-0` in Rust), `NaN`
/// for what is not a finite number.
pub(crate) fn number(x: f64) -> String {
    if !x.is_finite() {
        "NaN".into()
    } else if x == 0.0 {
        "0".into()
    } else {
        format!("{x}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_negative_zero() {
        let nothing: f64 = std::iter::empty::<f64>().sum();
        assert_eq!(number(nothing), "0");
        assert_eq!(number(-0.0), "0");
        assert_eq!(number(0.5), "0.5");
        assert_eq!(number(-2.0), "-2");
        assert_eq!(number(f64::INFINITY), "NaN");
    }

    #[test]
    fn label_values_escape_what_the_format_needs_and_every_control_character() {
        assert_eq!(label(r#"a "b" \ c"#), r#"a \"b\" \\ c"#);
        assert_eq!(label("two\nlines"), r"two\nlines");
        // ESC, BEL, CR, TAB, DEL and a C1 control: shown as escapes, never raw.
        let hostile = "f0_\x1b[2J\x1b]0;pwned\x07 \r\t\x7f\u{9b}";
        let text = label(hostile);
        assert!(!text.chars().any(char::is_control), "{text:?}");
        assert_eq!(text, r"f0_\\e[2J\\e]0;pwned\\x07 \\r\\t\\x7f\\u{009b}");
    }

    #[test]
    fn samples_and_headers() {
        let mut out = String::new();
        header(&mut out, "rpv_x", "gauge", "An x.");
        sample(&mut out, "rpv_x", "kind=\"file\"", "1");
        sample(&mut out, "rpv_y", "", "2");
        assert_eq!(
            out,
            "# HELP rpv_x An x.\n# TYPE rpv_x gauge\nrpv_x{kind=\"file\"} 1\nrpv_y 2\n"
        );
    }
}
