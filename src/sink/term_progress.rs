//! The terminal progress sink (`--term-progress`): the transfer's progress in the terminal's
//! own indicator (a taskbar or tab progress bar, `OSC 9;4`).
//!
//! Owns: what the indicator shows — the percentage while the size is known, busy
//! (indeterminate) while it is not, paused while the transfer is stalled, error once an
//! error was reported — and that it is cleared at the end, however the run ends (after an
//! error state, when the status rpv exits with is a failure: a `-M` command's included, so
//! the last step waits for the report's close). The plan decides whether this sink runs (`auto`'s
//! detection); the writer, its lock (one rpv per terminal) and the clear on Ctrl-Z are
//! `term::progress`'s.

use super::line::is_line;
use super::report::SharedFinals;
use super::{DisplayConfig, Reading, Sink, Snapshot};
use crate::error::status;
use crate::meter::Event;
use crate::term::progress::{self, Indicator, State};
use crate::term::Term;

/// `--term-progress`.
#[derive(Debug)]
pub(crate) struct TermProgress {
    /// The writer, once the first update asked for it (`None` inside: another rpv has it).
    indicator: Option<Option<&'static Indicator>>,
    /// Something was shown (so the end clears it).
    shown: bool,
    /// An error was reported: the indicator shows the error state from then on.
    failed: bool,
    /// The percentage shown last.
    percent: u8,
    /// Where the end (the error state of a failed run, then the clear) goes, once rpv
    /// knows the status it exits with.
    finals: SharedFinals,
}

/// The percentage of a reading whose size is known, 0-100 (rounded down: 100 only at the
/// end).
fn percent(r: &Reading<'_>) -> Option<u8> {
    (r.meter.size > 0).then(|| r.rates.percentage.clamp(0.0, 100.0).floor() as u8)
}

impl TermProgress {
    /// A sink whose end is left in `finals`.
    pub(crate) fn new(finals: SharedFinals) -> TermProgress {
        TermProgress {
            indicator: None,
            shown: false,
            failed: false,
            percent: 0,
            finals,
        }
    }

    fn show(&mut self, state: State, config: &DisplayConfig) {
        let indicator = *self
            .indicator
            .get_or_insert_with(|| progress::indicator(config.stderr_tty));
        if let Some(indicator) = indicator {
            indicator.set(state);
            self.shown = state != State::Clear;
        }
    }
}

impl Sink for TermProgress {
    fn event(&mut self, event: &Event, _config: &DisplayConfig, _term: &mut Term) {
        match event {
            Event::Error(e) | Event::InputFailed { error: e, .. } if e.exit_bits() != 0 => {
                self.failed = true;
            }
            _ => {}
        }
    }

    fn update(&mut self, snapshot: &Snapshot<'_>, config: &DisplayConfig, _term: &mut Term) {
        if snapshot.final_update {
            return;
        }
        let reading = snapshot
            .readings
            .iter()
            .find(|r| is_line(r.meter.role))
            .or(snapshot.readings.first());
        let Some(r) = reading else {
            return;
        };
        let percent = percent(r);
        self.percent = percent.unwrap_or(0);
        let state = if self.failed {
            State::Error(self.percent)
        } else if r.stalled_for.is_some() {
            State::Paused(self.percent)
        } else {
            percent.map_or(State::Indeterminate, State::Normal)
        };
        self.show(state, config);
    }

    fn finish(&mut self, _snapshot: &Snapshot<'_>, _config: &DisplayConfig, _term: &mut Term) {
        let (Some(Some(indicator)), true) = (self.indicator, self.shown) else {
            return;
        };
        let percent = self.percent;
        self.finals.borrow_mut().set(
            "term_progress",
            Box::new(move |exit| {
                // A failed run shows the error state before the indicator goes (an
                // interrupt is the user's choice, not a failure).
                if exit & !status::SIGNAL != 0 {
                    indicator.set(State::Error(percent));
                }
                indicator.set(State::Clear);
            }),
        );
    }
}
