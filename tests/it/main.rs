//! Integration tests: they spawn the real `rpv` binary.

mod cursor;
mod display;
mod errors;
mod faults;
mod integrity;
mod modifiers;
mod monitor;
mod options;
mod proptests;
mod pty;
mod reliability;
mod remote;
mod signals;
mod soak;
mod terminal;
mod util;
mod watchfd;
