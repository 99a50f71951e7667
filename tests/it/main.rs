//! Integration tests: they spawn the real `rpv` binary.

mod contract;
mod cursor;
mod display;
mod docs;
mod errors;
mod faults;
mod integrations;
mod integrity;
mod json;
mod modifiers;
mod monitor;
mod options;
mod pipeline;
mod proptests;
mod pty;
mod regression;
mod reliability;
mod remote;
mod screens;
mod signals;
mod soak;
mod tee;
mod terminal;
mod title;
mod util;
mod watchfd;
