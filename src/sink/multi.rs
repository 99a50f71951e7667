//! The multi-line sink: one row per meter, redrawn in place (`-d` watching several
//! descriptors).
//!
//! Owns: which meters get a row, at most one per terminal row, and the screen protocol
//! ([`super::screen::Screen`]). Must not: print messages.

use super::screen::Screen;
use super::{render_line, DisplayConfig, Formats, Sink, Snapshot};
use crate::meter::Role;
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
            .filter(|r| r.meter.role == Role::Descriptor)
            .take(config.height)
            .map(|r| render_line(&mut self.formats, config, r, snapshot))
            .collect();
        let text = self.screen.round(&lines, config.width);
        term.raw(&text);
        term.wrote_line = self.screen.lines() > 0;
    }

    fn finish(&mut self, _snapshot: &Snapshot<'_>, _config: &DisplayConfig, term: &mut Term) {
        let text = self.screen.finish();
        term.raw(&text);
        term.wrote_line = false;
    }

    fn reconfigure(&mut self, _config: &DisplayConfig) {
        self.formats.clear();
    }
}
