//! Integration tests: they spawn the real `rpv` binary.

mod cursor;
mod display;
mod docs;
mod errors;
mod integrity;
mod json;
mod modifiers;
mod monitor;
mod options;
mod pty;
mod regression;
mod remote;
mod signals;
mod terminal;
mod title;
mod util;
mod watchfd;
