//! The log sink (`--log`): plain lines for standard error when it is a file, a pipe or a
//! journal.
//!
//! Owns: one newline-terminated line per meter and update, starting with the local time in
//! ISO 8601 with its UTC offset (`2026-11-23T18:40:01+01:00`), then the usual fields (the display's format, without colour
//! and without `\r` or escape sequences); nothing for a meter that did not move during an
//! update, except a heartbeat once a minute; always a final line; messages as timestamped
//! `rpv: ...` lines (control characters in them, from a file name, escaped: one line each;
//! names in progress lines, `-N` and file names, escaped the same way). A flow of
//! `--top` is a line of its own words (its bytes since rpv saw it, next to the time since
//! then; no bar).
//! The stages of `--pipeline` are a table written at every update (a header, then a row
//! per stage), and the pipeline's summary comes last. Must not: write carriage returns or
//! escape sequences.

use std::collections::HashMap;

use super::{render_row, DisplayConfig, Formats, Reading, Sink, Snapshot};
use crate::display::printable;
use crate::meter::{Event, MeterId, Phase, Role};
use crate::sys;
use crate::term::Term;

/// Seconds between lines for a meter that does not move.
const HEARTBEAT: u64 = 60;

/// `--log`.
#[derive(Debug)]
pub(crate) struct Log {
    prog: String,
    formats: Formats,
    /// Per meter: the amount and the time (ns) of its last line.
    last: HashMap<MeterId, (u64, u64)>,
    /// The pipeline view's summaries (one per pipeline), written after the final rows.
    summary: Vec<String>,
}

impl Log {
    /// A log sink; `prog` prefixes messages.
    pub(crate) fn new(prog: &str) -> Log {
        Log {
            prog: prog.to_string(),
            formats: Formats::default(),
            last: HashMap::new(),
            summary: Vec::new(),
        }
    }

    fn lines(
        &mut self,
        snapshot: &Snapshot<'_>,
        config: &DisplayConfig,
        term: &mut Term,
        all: bool,
    ) {
        if config.quiet {
            return;
        }
        let now = sys::monotonic_ns();
        let stamp = timestamp(snapshot.wall_clock());
        let mut config = config.clone();
        config.style.colour = false;
        let mut out = String::new();
        let mut stages = Vec::new();
        for r in &snapshot.readings {
            if matches!(r.meter.role, Role::Input(_) | Role::Output(_)) && !config.each {
                continue;
            }
            let id = r.meter.id;
            let moved = self
                .last
                .get(&id)
                .is_none_or(|&(amount, _)| amount != r.meter.amount);
            let quiet_for = self
                .last
                .get(&id)
                .map_or(u64::MAX, |&(_, at)| now.saturating_sub(at));
            // The stages of a pipeline are written at every update, as a table (below): a
            // stage waiting for a neighbour is news too.
            if let (None, Some(stage)) = (&r.meter.note, r.meter.stage()) {
                self.last.insert(id, (r.meter.amount, now));
                stages.push(stage);
                continue;
            }
            if !all && !moved && quiet_for < HEARTBEAT * 1_000_000_000 {
                continue;
            }
            self.last.insert(id, (r.meter.amount, now));
            // Names (`-N`, file names) escaped as on the terminal: one record per line.
            let line = match &r.meter.note {
                Some(note) => {
                    let name = config.label(r.meter).unwrap_or_default();
                    printable(&format!("{name}: {note}")).into_owned()
                }
                None if r.meter.role == Role::Flow => flow_line(r, &config),
                None => render_row(&mut self.formats, &config, r, snapshot, config.width),
            };
            out.push_str(&stamp);
            out.push(' ');
            out.push_str(line.trim());
            out.push('\n');
        }
        // The table first, then the other records (an inline rpv's own line): the order
        // the terminal shows them in.
        let kind = config.style.kind(crate::meter::Unit::Bytes);
        let mut table = String::new();
        for line in crate::pipeline::render::table_lines(&stages, config.width, kind) {
            table.push_str(&stamp);
            table.push(' ');
            table.push_str(line.trim_end());
            table.push('\n');
        }
        table.push_str(&out);
        term.raw(&table);
    }
}

/// A flow of `--top`: its whole name first (a command and a file are often wider than a
/// line), then what it moved since rpv first saw it and in how long (its own bytes and its
/// own time: the view's amount may count from the process's start, before rpv looked),
/// its rate, where it stands (of its size, when known) and its end: `gzip > x.tgz: 12.0MiB
/// in 0:00:02 [6.12MiB/s], 1.53GiB in all`. In the unit the meter counts (lines for an
/// `rpv -l`); no bar.
fn flow_line(r: &Reading<'_>, config: &DisplayConfig) -> String {
    use crate::top::view::figure;
    use crate::units::{format_elapsed, format_eta};
    let m = r.meter;
    let kind = config.style.kind(m.unit);
    let name = printable(&config.label(m).unwrap_or_default()).into_owned();
    let mut line = format!(
        "{name}: {} in {} [{}]",
        figure(m.moved as f64, kind, false),
        format_elapsed(r.elapsed),
        figure(r.rates.rate, kind, true)
    );
    if m.size > 0 {
        let at = figure(m.amount as f64, kind, false);
        let size = figure(m.size as f64, kind, false);
        line.push_str(&format!(", {at} of {size} ({:.0}%)", r.rates.percentage));
        let avg = r.rates.avg_rate;
        if m.phase != Phase::Ended && r.stalled_for.is_none() && avg > 0.001 {
            let eta = m.size.saturating_sub(m.amount) as f64 / avg;
            line.push_str(&format!(", ETA {}", format_eta(eta.round() as u64)));
        }
    } else {
        line.push_str(&format!(
            ", {} in all",
            figure(m.amount as f64, kind, false)
        ));
    }
    if let Some(s) = r.stalled_for {
        line.push_str(&format!(", stalled {}", format_elapsed(s)));
    }
    if m.phase == Phase::Ended {
        line.push_str(", ended");
    }
    line
}

/// Local time in ISO 8601 with its UTC offset, `YYYY-MM-DDTHH:MM:SS+HH:MM`, from (seconds
/// since the epoch, UTC offset in seconds).
pub(crate) fn timestamp((now, offset): (i64, i32)) -> String {
    crate::display::iso8601(now, None, Some(offset))
}

impl Sink for Log {
    fn event(&mut self, event: &Event, config: &DisplayConfig, term: &mut Term) {
        if let Event::Summary { text, .. } = event {
            // After the final rows (`finish`).
            self.summary.push(text.clone());
            return;
        }
        if let Some(text) = event.message(config.trace) {
            let stamp = timestamp(sys::wall_clock());
            let text = printable(&text);
            term.raw(&format!("{stamp} {}: {text}\n", self.prog));
        }
    }

    fn update(&mut self, snapshot: &Snapshot<'_>, config: &DisplayConfig, term: &mut Term) {
        // The final figures are written once, by `finish`.
        if !snapshot.final_update {
            self.lines(snapshot, config, term, false);
        }
    }

    fn finish(&mut self, snapshot: &Snapshot<'_>, config: &DisplayConfig, term: &mut Term) {
        self.lines(snapshot, config, term, true);
        for text in std::mem::take(&mut self.summary) {
            let stamp = timestamp(sys::wall_clock());
            let lines: String = text.lines().map(|l| format!("{stamp} {l}\n")).collect();
            term.raw(&lines);
        }
    }

    fn reconfigure(&mut self, _config: &DisplayConfig) {
        self.formats.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_local_times_with_their_utc_offset() {
        assert_eq!(timestamp((0, 0)), "1970-01-01T00:00:00+00:00");
        assert_eq!(timestamp((1_795_460_401, 0)), "2026-11-23T19:00:01+00:00");
        assert_eq!(
            timestamp((1_795_460_401, 3600)),
            "2026-11-23T20:00:01+01:00"
        );
        assert_eq!(
            timestamp((1_795_460_401, -18000)),
            "2026-11-23T14:00:01-05:00"
        );
        assert_eq!(timestamp((951_782_400, 0)), "2000-02-29T00:00:00+00:00");
        assert_eq!(timestamp((-1, 0)), "1969-12-31T23:59:59+00:00");
    }
}
