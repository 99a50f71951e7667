//! Integration tests: they spawn the real `rpv` binary.

mod cursor;
mod display;
mod errors;
mod integrity;
mod modifiers;
mod options;
mod pty;
mod signals;
mod util;
