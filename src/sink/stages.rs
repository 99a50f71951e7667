//! The pipeline view (`--pipeline`): a header and one row per stage, redrawn in place, the
//! stage that holds the pipeline back marked `bottleneck`, and under the table one line of
//! advice when the cause is clear; a table of its own for each pipeline a shell runs;
//! inside a transfer the transfer's own line below them; at the end, the summary (who was
//! the bottleneck for how long, where each stage's time went, what to try).
//!
//! Owns: which blocks the view has (each pipeline's table from `pipeline::render` and its
//! advice, the transfer's line), and the summary after the rows. The screen layer fits,
//! chooses and draws the rows. Must not: print messages.

use super::line::is_line;
use super::{render_row, DisplayConfig, Formats, Sink, Snapshot};
use crate::display::{printable, wrap};
use crate::meter::{Event, Unit};
use crate::pipeline::render;
use crate::screen::{self, Block, View};
use crate::term::Term;

/// `--pipeline`.
#[derive(Debug, Default)]
pub(crate) struct Stages {
    formats: Formats,
    /// The summaries (one per pipeline watched), printed at the end.
    summary: Vec<String>,
}

impl Sink for Stages {
    fn event(&mut self, event: &Event, _config: &DisplayConfig, _term: &mut Term) {
        if let Event::Summary { text, .. } = event {
            self.summary.push(text.clone());
        }
    }

    fn update(&mut self, snapshot: &Snapshot<'_>, config: &DisplayConfig, term: &mut Term) {
        if !config.visible() {
            return;
        }
        let kind = config.style.kind(Unit::Bytes);
        let stages: Vec<_> = snapshot
            .readings
            .iter()
            .filter_map(|r| r.meter.stage())
            .collect();
        let mut blocks = Vec::new();
        let width = screen::usable_width(config.width);
        for job in render::jobs(&stages) {
            blocks.push(Block::Table(render::table(job, kind)));
            if let Some(advice) = job.iter().find_map(|s| s.advice.as_deref()) {
                // Whole, wrapped at spaces to the terminal (what to try comes first).
                for line in wrapped(&format!("advice: {advice}"), width) {
                    blocks.push(Block::text(&line));
                }
            }
        }
        // Inside a transfer, its own line below the stages.
        for r in snapshot.readings.iter().filter(|r| is_line(r.meter.role)) {
            let line = render_row(&mut self.formats, config, r, snapshot, width);
            blocks.push(Block::rendered(line));
        }
        let view = View {
            blocks,
            utf8: config.style.utf8,
        };
        let rows = view.lines(config.width, config.height);
        term.draw_screen(&rows, config.width);
    }

    fn finish(&mut self, _snapshot: &Snapshot<'_>, config: &DisplayConfig, term: &mut Term) {
        term.finish_screen();
        if config.enabled || config.stats {
            for summary in std::mem::take(&mut self.summary) {
                // Several lines: each escaped on its own (a command chosen by a process
                // cannot break them), and on a terminal wrapped at spaces to its width, a
                // line's continuation indented under it.
                let mut lines = String::new();
                for line in summary.lines() {
                    let line = printable(line);
                    if !config.stderr_tty {
                        lines.push_str(&line);
                        lines.push('\n');
                        continue;
                    }
                    for piece in wrapped(&line, screen::usable_width(config.width)) {
                        lines.push_str(&piece);
                        lines.push('\n');
                    }
                }
                term.raw(&lines);
            }
        }
    }

    fn reconfigure(&mut self, _config: &DisplayConfig) {
        self.formats.clear();
    }
}

/// A line of text (control characters escaped) wrapped at spaces to `width` columns (at
/// least ten, so a tiny terminal still gets words), each continuation indented two
/// columns deeper than the line.
fn wrapped(line: &str, width: usize) -> Vec<String> {
    let line = printable(line);
    let avail = width.max(10);
    let first = wrap(&line, avail)[0];
    let mut out = vec![first.trim_end().to_string()];
    let indent = line.len() - line.trim_start().len() + 2;
    let rest = line[first.len()..].trim_start();
    if !rest.is_empty() {
        for piece in wrap(rest, avail.saturating_sub(indent).max(10)) {
            out.push(format!("{}{}", " ".repeat(indent), piece.trim()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::wrapped;
    use crate::display::display_width;

    #[test]
    fn advice_is_wrapped_whole_never_cut() {
        let advice = "advice: gzip -9 uses a whole core while 1 of 2 cores is idle: pigz would \
                      use them";
        let lines = wrapped(advice, 40);
        assert!(lines.len() > 1, "{lines:?}");
        assert!(lines.iter().all(|l| display_width(l) <= 40), "{lines:?}");
        assert!(lines.iter().skip(1).all(|l| l.starts_with("  ")));
        let words: Vec<&str> = lines.iter().flat_map(|l| l.split_whitespace()).collect();
        assert_eq!(words, advice.split_whitespace().collect::<Vec<_>>());
        assert_eq!(wrapped("advice: x\ty", 80), ["advice: x\\ty"]);
    }
}
