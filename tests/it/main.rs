//! Integration tests: they spawn the real `rpv` binary.

mod display;
mod errors;
mod integrity;
mod monitor;
mod options;
mod pty;
mod remote;
mod signals;
mod util;
