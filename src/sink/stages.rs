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
pub struct Stages {
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
            .filter_map(|r| r.meter.stage.as_deref())
            .collect();
        let mut blocks = Vec::new();
        for job in render::jobs(&stages) {
            blocks.push(Block::Table(render::table(job, kind)));
            if let Some(advice) = job.iter().find_map(|s| s.advice.as_deref()) {
                blocks.push(Block::text(&format!("advice: {advice}")));
            }
        }
        // Inside a transfer, its own line below the stages.
        let width = screen::usable_width(config.width);
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
                    // (At least ten columns a line, so a tiny terminal still gets words.)
                    let avail = screen::usable_width(config.width).max(10);
                    let first = wrap(&line, avail)[0];
                    lines.push_str(first.trim_end());
                    lines.push('\n');
                    let indent = line.len() - line.trim_start().len() + 2;
                    let rest = line[first.len()..].trim_start();
                    if !rest.is_empty() {
                        for piece in wrap(rest, avail.saturating_sub(indent).max(10)) {
                            lines.push_str(&" ".repeat(indent));
                            lines.push_str(piece.trim());
                            lines.push('\n');
                        }
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
