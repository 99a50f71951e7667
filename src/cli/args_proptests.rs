//! Property tests of the command line: random argv built from the option table and a pool
//! of awkward values, and random number texts. Whatever comes in, parsing never panics, a
//! rejection is a message naming the program (exit status 64 is the caller's, for every
//! `Parsed::Error`), and what is accepted stays within the documented limits.

use proptest::prelude::*;

use super::super::number::{is_valid_double, is_valid_size, parse_interval, parse_size};
use super::*;

/// Values that have broken option parsers: empty, signs, exponents, huge, unicode digits,
/// fractions, suffixes, format sequences, paths.
const AWKWARD: &[&str] = &[
    "",
    " ",
    "0",
    "1",
    "-1",
    "+1",
    "1e3",
    "1e309",
    "NaN",
    "inf",
    "0.5",
    "1,5",
    "1.",
    ".5",
    "1k",
    "1.5T",
    "16777216T",
    "4294967295",
    "4294967296",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999999999999999999",
    "١٢٣",
    "１２３",
    "%",
    "%{",
    "%99999A",
    "%-5b",
    "%{sgr:",
    "%{bar-plain}",
    "window",
    "windowtitel",
    "proc:%b",
    "=name",
    "@list",
    "123:4",
    "both",
    "in",
    "-",
    "--",
    "/dev/null",
    "日本語",
];

/// One argument: an option in one of its spellings (with or without a value), a value or
/// an operand.
fn argument() -> impl Strategy<Value = Vec<String>> {
    let flag = prop::sample::select(flags().collect::<Vec<_>>());
    let value = prop_oneof![
        prop::sample::select(AWKWARD).prop_map(str::to_owned),
        "[0-9]{1,25}[.,]?[0-9]{0,6}[ kKmMgGtT]?",
        any::<String>(),
    ];
    let spelled = (flag, value, 0..4u8).prop_map(|(f, v, how)| match (f.takes_value, how) {
        (false, 0 | 1) => vec![format!("-{}", f.short)],
        (false, _) => vec![format!("--{}", f.long)],
        (true, 0) => vec![format!("-{}", f.short), v],
        (true, 1) => vec![format!("-{}{v}", f.short)],
        (true, 2) => vec![format!("--{}={v}", f.long)],
        (true, _) => vec![format!("--{}", f.long), v],
    });
    prop_oneof![
        8 => spelled,
        1 => prop::sample::select(AWKWARD).prop_map(|v| vec![v.to_owned()]),
        1 => "-[a-zA-Z0-9]{1,6}".prop_map(|v| vec![v]),
        1 => "--[a-z-]{0,12}(=.{0,8})?".prop_map(|v| vec![v]),
    ]
}

/// A whole argv (without argv[0]).
/// The arguments as the parser takes them.
fn os(args: &[String]) -> Vec<std::ffi::OsString> {
    args.iter().map(std::ffi::OsString::from).collect()
}

fn argv() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(argument(), 0..8).prop_map(|a| a.concat())
}

proptest! {
    #![proptest_config(crate::proptest_cases::config(3000))]

    #[test]
    fn any_command_line_parses_or_is_refused_with_a_message(args in argv(), posix in any::<bool>()) {
        match parse_with("rpv", &os(&args), posix) {
            Parsed::Help | Parsed::Version | Parsed::Completions(_) => {}
            Parsed::Error(message) => {
                prop_assert!(message.starts_with("rpv: "), "{message:?}");
                prop_assert!(message.ends_with('\n'), "{message:?}");
                // One line, or glibc's line and the "Try" line.
                let lines: Vec<&str> = message.lines().collect();
                prop_assert!(
                    lines.len() == 1 || (lines.len() == 2 && lines[1].starts_with("Try `rpv")),
                    "{message:?}"
                );
            }
            Parsed::Run(o) => {
                prop_assert!(o.width <= 999_999 && o.height <= 999_999);
                prop_assert!((0.1..=600.0).contains(&o.interval));
                prop_assert!((0.0..=360_000_000.0).contains(&o.delay_start));
                prop_assert!((1..=7 * 24 * 3600).contains(&o.average_window));
                prop_assert!(o.buffer_size <= crate::cli::MAX_BUFFER as u64);
                if let Some(spec) = &o.extra_display {
                    prop_assert!(crate::term::title::ExtraSpec::parse(spec).any(), "{spec:?}");
                }
            }
        }
    }

    #[test]
    fn sizes_convert_exactly_or_are_refused(n in any::<u64>(), suffix in 0..5usize, si in any::<bool>()) {
        let (letter, power) = [("", 0), ("k", 1), ("M", 2), ("G", 3), ("T", 4)][suffix];
        let base: u64 = if si { 1000 } else { 1024 };
        let text = format!("{n}{letter}");
        prop_assert!(is_valid_size(&text));
        prop_assert_eq!(parse_size(&text, si), n.checked_mul(base.pow(power)));
        // Through the option: the value, or the "too large" message.
        let args = vec![if si { "-k".into() } else { "-C".into() }, "-L".into(), text.clone()];
        match (parse_with("rpv", &os(&args), false), n.checked_mul(base.pow(power))) {
            (Parsed::Run(o), Some(v)) => prop_assert_eq!(o.rate_limit, v),
            (Parsed::Error(m), None) => prop_assert_eq!(
                m,
                format!("rpv: -L: {text}: numeric value too large (at most 18446744073709551615)\n")
            ),
            (other, want) => prop_assert!(false, "{text}: {other:?}, wanted {want:?}"),
        }
    }

    #[test]
    fn number_texts_never_panic(text in any::<String>(), digits in "[0-9]{0,400}[.,]?[0-9]{0,30}") {
        for s in [text.as_str(), digits.as_str()] {
            let _ = parse_size(s, false);
            let _ = parse_size(s, true);
            let seconds = parse_interval(s);
            prop_assert!(!seconds.is_nan() && seconds >= 0.0, "{s:?}: {seconds}");
            if is_valid_double(s) {
                // Accepted by -i/-D: the clamps make any of them usable.
                let args = vec!["-D".to_string(), s.to_string(), "-i".into(), s.to_string()];
                prop_assert!(matches!(parse_with("rpv", &os(&args), false), Parsed::Run(_)));
            }
        }
    }
}
