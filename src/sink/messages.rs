//! The messages sink: errors and warnings as `rpv: message` lines on standard error.
//!
//! Owns: which events a person sees (errors, skipped read errors; path choices only under
//! the trace test hook). Must not: show progress.

use super::{DisplayConfig, Sink};
use crate::meter::Event;
use crate::term::Term;

/// Prints events as `prog: text` lines (below the progress rows in cursor mode).
#[derive(Debug, Default)]
pub(crate) struct Messages;

impl Sink for Messages {
    fn event(&mut self, event: &Event, config: &DisplayConfig, term: &mut Term) {
        if let Some(text) = event.message(config.trace) {
            term.message(&text);
        }
    }
}
