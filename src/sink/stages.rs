//! The pipeline view (`--pipeline`): a header and one row per stage, redrawn in place, the
//! stage that holds the pipeline back marked `bottleneck`; inside a transfer the transfer's
//! own line below them; at the end, the summary of who was the bottleneck for how long.
//!
//! Owns: the rows' layout (through `pipeline::render`) and the screen. Must not: print
//! messages.

use super::line::is_line;
use super::screen::Screen;
use super::{render_line, DisplayConfig, Formats, Sink, Snapshot};
use crate::display::display_width;
use crate::meter::{Event, Unit};
use crate::pipeline::render;
use crate::term::Term;

/// `--pipeline`.
#[derive(Debug, Default)]
pub struct Stages {
    formats: Formats,
    screen: Screen,
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
        let mut lines = vec![render::header(config.width)];
        let stages = snapshot
            .readings
            .iter()
            .filter_map(|r| r.meter.stage.as_ref());
        let mut job = None;
        for stage in stages {
            // Each pipeline a shell runs is a table of its own, under its own header.
            if job.is_some_and(|j| j != stage.job) {
                lines.push(render::header(config.width));
            }
            job = Some(stage.job);
            lines.push(render::row(stage, config.width, kind));
        }
        // Inside a transfer, its own line below the stages.
        for r in snapshot.readings.iter().filter(|r| is_line(r.meter.role)) {
            lines.push(render_line(&mut self.formats, config, r, snapshot));
        }
        lines.truncate(config.height.max(2) - 1);
        self.screen.shift(std::mem::take(&mut term.screen_shift));
        let text = self.screen.round(&lines, config.width);
        term.raw(&text);
        term.wrote_line = false;
        term.screen_rows = self.screen.lines();
        term.screen_first = lines.first().map_or(0, |l| display_width(l));
    }

    fn finish(&mut self, _snapshot: &Snapshot<'_>, config: &DisplayConfig, term: &mut Term) {
        let text = self.screen.finish();
        term.raw(&text);
        term.screen_rows = 0;
        if config.enabled || config.stats {
            for summary in std::mem::take(&mut self.summary) {
                term.raw(&format!("{summary}\n"));
            }
        }
    }

    fn reconfigure(&mut self, _config: &DisplayConfig) {
        self.formats.clear();
    }
}
