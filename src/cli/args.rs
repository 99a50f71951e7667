//! getopt_long emulation and the option table.

use super::Parsed;

/// Parses `args` (without argv[0]); `argv0` is used in glibc-style diagnostics and its
/// basename as `<prog>` in pv's own messages.
pub fn parse(argv0: &str, args: &[String]) -> Parsed {
    todo!("{argv0}{args:?}")
}
