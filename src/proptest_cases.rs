//! How many cases each property test runs (test builds only).
//!
//! Owns: the one reading of `RPV_PROPTEST_CASES`, so that `cargo test --lib` stays fast
//! by default and a full run is one variable away.
//! Must not: be used outside `#[cfg(test)]` code.

use proptest::test_runner::Config;

/// Cases per property when `RPV_PROPTEST_CASES` is unset: enough to catch the common
/// mistakes in a fraction of a second per property.
const QUICK: u32 = 64;

/// The proptest configuration for a property whose full run is `full` cases.
///
/// `RPV_PROPTEST_CASES` unset or empty: [`QUICK`] cases (or `full`, if smaller);
/// `RPV_PROPTEST_CASES=full`: `full` cases; `RPV_PROPTEST_CASES=N`: N cases.
pub(crate) fn config(full: u32) -> Config {
    let cases = cases(std::env::var("RPV_PROPTEST_CASES").ok().as_deref(), full);
    Config {
        cases,
        ..Config::default()
    }
}

fn cases(setting: Option<&str>, full: u32) -> u32 {
    match setting.map(str::trim) {
        None | Some("") => QUICK.min(full),
        Some("full") => full,
        Some(n) => n.parse().unwrap_or_else(|_| {
            panic!("RPV_PROPTEST_CASES must be `full` or a number of cases, not {n:?}")
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_setting_chooses_the_count() {
        assert_eq!(cases(None, 3000), QUICK);
        assert_eq!(cases(Some(""), 3000), QUICK);
        assert_eq!(cases(None, 10), 10);
        assert_eq!(cases(Some("full"), 3000), 3000);
        assert_eq!(cases(Some(" 500 "), 3000), 500);
    }

    #[test]
    #[should_panic(expected = "RPV_PROPTEST_CASES")]
    fn a_bad_setting_is_refused_by_name() {
        cases(Some("lots"), 3000);
    }
}
