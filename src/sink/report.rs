//! How rpv speaks outside its display loops: usage errors, the set-up's errors and
//! warnings, and, with `--json`, the one `end` object that closes every run.
//!
//! Owns: writing a message in the voice the command line asked for — an `rpv: …` line
//! (control characters escaped on a terminal), a time-stamped line with `--log`, a JSON
//! `message` object with `--json` — for itself and for the sinks ([`Warn`], what a sink
//! warns with during the run), and closing a `--json` run with its `end` object once
//! the exit status is known (after a `-M` command has ended and the set-up's files are
//! removed); the same for the other sinks' last word ([`Finals`]: the metrics file's
//! `rpv_exit_status`, systemd's final status), so every sink reports the status rpv exits
//! with. Must not: decide the exit status (the glue does) or show progress (the sinks do).

use std::io;
use std::rc::Rc;

use super::json::{self, Ledger, SharedLedger};
use crate::cli::Voice;
use crate::display::printable;
use crate::error::Error;
use crate::signals;
use crate::sys;
use crate::term::Term;

/// A sink's last word, written once the exit status is known (it is given the status).
pub(crate) type Final = Box<dyn FnOnce(u8)>;

/// The sinks' last words, one per kind of sink: a later display loop's (the second phase
/// of `-U`) replaces an earlier one's.
#[derive(Default)]
pub(crate) struct Finals {
    pending: Vec<(&'static str, Final)>,
}

impl std::fmt::Debug for Finals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kinds: Vec<&str> = self.pending.iter().map(|(kind, _)| *kind).collect();
        f.debug_struct("Finals").field("pending", &kinds).finish()
    }
}

impl Finals {
    /// `last` is what the sink of `kind` writes at the end, in place of what it said before.
    pub(crate) fn set(&mut self, kind: &'static str, last: Final) {
        self.pending.retain(|(k, _)| *k != kind);
        self.pending.push((kind, last));
    }

    /// Writes every last word with `status`, once.
    fn close(&mut self, status: u8) {
        for (_, last) in std::mem::take(&mut self.pending) {
            last(status);
        }
    }
}

/// [`Finals`] shared by a run's sinks and its report.
pub(crate) type SharedFinals = Rc<std::cell::RefCell<Finals>>;

/// How a sink warns in the run's voice: an `rpv: …` line, a time-stamped line with
/// `--log`, a `message` object with `--json` (in the run's order of messages).
#[derive(Debug, Clone)]
pub(crate) struct Warn {
    prog: Rc<str>,
    voice: Voice,
    ledger: SharedLedger,
}

impl Warn {
    /// Warns on `term` that `subject` failed with `err`: `rpv: SUBJECT: Error text`, and with
    /// `--json` the error's number.
    pub(crate) fn warn(&self, term: &mut Term, subject: &str, err: &io::Error) {
        let text = format!("{subject}: {}", sys::strerror(err));
        self.say(term, &Error::other_errno(0, text, err.raw_os_error()));
    }

    /// A terminal of its own, for a last word written once the display loop is over.
    pub(crate) fn term(&self) -> Term {
        Term::new(&self.prog)
    }

    /// Writes `e` on `term` in the run's voice.
    fn say(&self, term: &mut Term, e: &Error) {
        match self.voice {
            Voice::Display => term.message(&e.to_string()),
            Voice::Log => term.raw(&log_line(&format!("{}: {e}", self.prog))),
            Voice::Json => self
                .ledger
                .borrow_mut()
                .message(json::message(e, None), term),
        }
    }
}

/// The voice of one rpv process outside its display loops.
#[derive(Debug)]
pub(crate) struct Report {
    warn: Warn,
    finals: SharedFinals,
}

impl Report {
    /// Messages prefixed with `prog`, in `voice`.
    pub(crate) fn new(prog: &str, voice: Voice) -> Report {
        Report {
            warn: Warn {
                prog: prog.into(),
                voice,
                ledger: Rc::new(std::cell::RefCell::new(Ledger::default())),
            },
            finals: SharedFinals::default(),
        }
    }

    /// The program name that prefixes messages.
    pub(crate) fn prog(&self) -> &str {
        &self.warn.prog
    }

    /// What a sink of this run warns with.
    pub(crate) fn warner(&self) -> Warn {
        self.warn.clone()
    }

    /// What the `--json` sinks of this run share with the report.
    pub(crate) fn ledger(&self) -> SharedLedger {
        Rc::clone(&self.warn.ledger)
    }

    /// Where the sinks of this run leave their last words.
    pub(crate) fn finals(&self) -> SharedFinals {
        Rc::clone(&self.finals)
    }

    /// Reports an error or a warning (exit bits 0).
    pub(crate) fn error(&self, e: &Error) {
        self.warn.say(&mut Term::new(self.prog()), e);
    }

    /// Reports a bad command line: `text` is the whole diagnostic, lines ending in `\n`,
    /// each starting with `argv0` or the program name (glibc's and pv's forms), then the
    /// hint to try `--help`.
    pub(crate) fn usage(&self, text: &str, argv0: &str) {
        let mut term = Term::new(self.prog());
        match self.warn.voice {
            Voice::Display if term.is_terminal() => {
                let lines: String = text
                    .lines()
                    .map(|line| format!("{}\n", printable(line)))
                    .collect();
                term.raw(&lines);
            }
            Voice::Display => term.raw(text),
            Voice::Log => {
                let lines: String = text.lines().map(log_line).collect();
                term.raw(&lines);
            }
            Voice::Json => {
                let first = text.lines().next().unwrap_or_default();
                let said = [argv0, self.prog()]
                    .iter()
                    .find_map(|p| first.strip_prefix(&format!("{p}: ")))
                    .unwrap_or(first);
                self.warn.say(&mut term, &Error::Usage(said.to_string()));
            }
        }
    }

    /// The run is over and rpv exits with `status`: the sinks' last words, then, with
    /// `--json`, what is held and the `end` object.
    pub(crate) fn close(&self, status: u8) {
        self.finals.borrow_mut().close(status);
        if self.warn.voice == Voice::Json {
            let mut term = Term::new(self.prog());
            let interrupted = signals::exit_requested();
            self.warn
                .ledger
                .borrow_mut()
                .close(status, interrupted, &mut term);
        }
    }
}

/// `line` as a line of `--log`: the local time stamp first, one line whatever the text
/// holds.
fn log_line(line: &str) -> String {
    let stamp = super::log::timestamp(sys::wall_clock());
    format!("{stamp} {}\n", printable(line))
}
