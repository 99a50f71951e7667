//! How rpv speaks outside its display loops: usage errors, the set-up's errors and
//! warnings, and, with `--json`, the one `end` object that closes every run.
//!
//! Owns: writing a message in the voice the command line asked for — an `rpv: …` line
//! (control characters escaped on a terminal), a time-stamped line with `--log`, a JSON
//! `message` object with `--json` — and closing a `--json` run with its `end` object once
//! the exit status is known (after a `-M` command has ended and the set-up's files are
//! removed). Must not: decide the exit status (the glue does) or show progress (the
//! sinks do).

use std::rc::Rc;

use serde_json::json;

use super::json::{self, Ledger, SharedLedger};
use crate::cli::Voice;
use crate::display::printable;
use crate::error::Error;
use crate::signals;
use crate::sys;
use crate::term::Term;

/// The voice of one rpv process outside its display loops.
#[derive(Debug)]
pub struct Report {
    prog: String,
    voice: Voice,
    ledger: SharedLedger,
}

impl Report {
    /// Messages prefixed with `prog`, in `voice`.
    pub fn new(prog: &str, voice: Voice) -> Report {
        Report {
            prog: prog.to_string(),
            voice,
            ledger: Rc::new(std::cell::RefCell::new(Ledger::default())),
        }
    }

    /// The program name that prefixes messages.
    pub fn prog(&self) -> &str {
        &self.prog
    }

    /// What the `--json` sinks of this run share with the report.
    pub fn ledger(&self) -> SharedLedger {
        Rc::clone(&self.ledger)
    }

    /// Reports an error or a warning (exit bits 0).
    pub fn error(&self, e: &Error) {
        let mut term = Term::new(&self.prog);
        match self.voice {
            Voice::Display => term.message(&e.to_string()),
            Voice::Log => term.raw(&self.log_line(&format!("{}: {e}", self.prog))),
            Voice::Json => self
                .ledger
                .borrow_mut()
                .message(json::message(e, None), &mut term),
        }
    }

    /// Reports a bad command line: `text` is the whole diagnostic, lines ending in `\n`,
    /// each starting with `argv0` or the program name (glibc's and pv's forms), then the
    /// hint to try `--help`.
    pub fn usage(&self, text: &str, argv0: &str) {
        let mut term = Term::new(&self.prog);
        match self.voice {
            Voice::Display if term.is_terminal() => {
                let lines: String = text
                    .lines()
                    .map(|line| format!("{}\n", printable(line)))
                    .collect();
                term.raw(&lines);
            }
            Voice::Display => term.raw(text),
            Voice::Log => {
                let lines: String = text.lines().map(|line| self.log_line(line)).collect();
                term.raw(&lines);
            }
            Voice::Json => {
                let first = text.lines().next().unwrap_or_default();
                let said = [argv0, self.prog.as_str()]
                    .iter()
                    .find_map(|p| first.strip_prefix(&format!("{p}: ")))
                    .unwrap_or(first);
                let message = json!({
                    "type": "message",
                    "time": json::now(),
                    "level": "error",
                    "kind": "usage",
                    "text": said,
                    "errno": null,
                    "input": null,
                });
                self.ledger.borrow_mut().message(message, &mut term);
            }
        }
    }

    /// `line` as a line of `--log`: the local time stamp first, one line whatever the
    /// text holds.
    fn log_line(&self, line: &str) -> String {
        let stamp = super::log::timestamp(sys::wall_clock());
        format!("{stamp} {}\n", printable(line))
    }

    /// The run is over and rpv exits with `status`: with `--json`, what is held and the
    /// `end` object.
    pub fn close(&self, status: u8) {
        if self.voice == Voice::Json {
            let mut term = Term::new(&self.prog);
            let interrupted = signals::exit_requested();
            self.ledger
                .borrow_mut()
                .close(status, interrupted, &mut term);
        }
    }
}
