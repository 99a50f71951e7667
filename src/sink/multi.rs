//! The multi-line sink: one row per meter, redrawn in place — the descriptors of `-d`, or
//! with `--each` one row per input and a total row below.
//!
//! Owns: the rows (at most one per terminal row; an input that could not be read shows its
//! error on its row) and the screen protocol ([`super::screen::Screen`]). Must not: print
//! messages.

use super::screen::Screen;
use super::{render_line, DisplayConfig, Formats, Sink, Snapshot};
use crate::term::Term;

/// Rows of watched descriptors.
#[derive(Debug, Default)]
pub struct Multi {
    formats: Formats,
    screen: Screen,
}

impl Sink for Multi {
    fn update(&mut self, snapshot: &Snapshot<'_>, config: &DisplayConfig, term: &mut Term) {
        if !config.visible() {
            return;
        }
        let lines: Vec<String> = snapshot
            .readings
            .iter()
            .take(config.height)
            .map(|r| match &r.meter.note {
                Some(note) => format!("{}: {note}", config.label(r.meter).unwrap_or_default()),
                None => render_line(&mut self.formats, config, r, snapshot),
            })
            .collect();
        self.screen.shift(std::mem::take(&mut term.screen_shift));
        let text = self.screen.round(&lines, config.width);
        term.raw(&text);
        term.wrote_line = false;
        term.screen_rows = self.screen.lines();
        term.screen_first = lines
            .first()
            .map_or(0, |l| crate::display::display_width(l));
    }

    fn finish(&mut self, _snapshot: &Snapshot<'_>, _config: &DisplayConfig, term: &mut Term) {
        let text = self.screen.finish();
        term.raw(&text);
        term.wrote_line = false;
        term.screen_rows = 0;
    }

    fn reconfigure(&mut self, _config: &DisplayConfig) {
        self.formats.clear();
    }
}
