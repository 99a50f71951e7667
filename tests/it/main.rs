//! Integration tests: they spawn the real `rpv` binary.

mod display;
mod errors;
mod integrity;
mod options;
mod pty;
mod signals;
mod util;
mod watchfd;
