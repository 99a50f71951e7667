//! Integration tests: they spawn the real `rpv` binary.

mod cursor;
mod display;
mod errors;
mod integrity;
mod modifiers;
mod monitor;
mod options;
mod pty;
mod remote;
mod signals;
mod tee;
mod terminal;
mod util;
mod watchfd;
