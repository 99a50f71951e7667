//! The statistics sink (`-v`/`--stats`): at the end, the minimum, average, maximum and
//! mean deviation of the rates measured.
//!
//! Owns: the stats line of each transfer meter. Must not: draw progress.

use super::line::is_line;
use super::{DisplayConfig, Sink, Snapshot};
use crate::meter::Unit;
use crate::term::Term;

/// `--stats`.
#[derive(Debug, Default)]
pub(crate) struct Stats;

impl Sink for Stats {
    fn finish(&mut self, snapshot: &Snapshot<'_>, config: &DisplayConfig, term: &mut Term) {
        for r in snapshot.readings.iter().filter(|r| is_line(r.meter.role)) {
            let lines = r.meter.unit == Unit::Lines;
            let (unit, mult) = match (lines, config.style.bits) {
                (true, _) => ("/s", 1.0),
                (false, true) => ("b/s", 8.0),
                (false, false) => ("B/s", 1.0),
            };
            term.raw(&format!("{}\n", r.tracker.stats_line(unit, mult)));
        }
    }
}
