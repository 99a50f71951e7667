//! The pipeline view (`--pipeline`): a header and one row per stage, redrawn in place, the
//! stage that holds the pipeline back marked `bottleneck`; inside a transfer the transfer's
//! own line below them; at the end, the summary of who was the bottleneck for how long.
//!
//! Owns: which blocks the view has (the stages' table from `pipeline::render`, the
//! transfer's line), and the summary after the rows. The screen layer fits, chooses and
//! draws the rows. Must not: print messages.

use super::line::is_line;
use super::{render_row, DisplayConfig, Formats, Sink, Snapshot};
use crate::display::printable;
use crate::meter::{Event, Unit};
use crate::pipeline::render;
use crate::screen::{self, Block, View};
use crate::term::Term;

/// `--pipeline`.
#[derive(Debug, Default)]
pub struct Stages {
    formats: Formats,
    summary: Option<String>,
}

impl Sink for Stages {
    fn event(&mut self, event: &Event, _config: &DisplayConfig, _term: &mut Term) {
        if let Event::Summary { text, .. } = event {
            self.summary = Some(text.clone());
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
        let mut blocks = vec![Block::Table(render::table(&stages, kind))];
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
            if let Some(summary) = self.summary.take() {
                term.raw(&format!("{}\n", printable(&summary)));
            }
        }
    }

    fn reconfigure(&mut self, _config: &DisplayConfig) {
        self.formats.clear();
    }
}
