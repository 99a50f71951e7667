//! Mode stub: not implemented yet.

use crate::cli::Options;
use crate::shared::status;

/// Runs this mode; returns the exit status.
pub fn run(_options: &Options, prog: &str) -> u8 {
    eprintln!("{prog}: this mode is not supported yet");
    status::USAGE
}
