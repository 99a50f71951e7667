//! The numeric sink (`-n`): one line of numbers per meter and update, for scripts and
//! `dialog --gauge`.
//!
//! Owns: the newline-terminated output of numeric mode. Must not: draw in place.

use super::line::is_line;
use super::{render_line, DisplayConfig, Formats, Sink, Snapshot};
use crate::meter::Role;
use crate::term::Term;

/// `-n` output.
#[derive(Debug, Default)]
pub(crate) struct Numeric {
    formats: Formats,
}

impl Sink for Numeric {
    fn update(&mut self, snapshot: &Snapshot<'_>, config: &DisplayConfig, term: &mut Term) {
        if !config.visible() {
            return;
        }
        let mut rows = 0;
        for r in &snapshot.readings {
            let descriptor = r.meter.role == Role::Descriptor;
            if !(is_line(r.meter.role) || descriptor) {
                continue;
            }
            if descriptor {
                // Watched descriptors: at most one line per terminal row, like the screen.
                if rows >= config.height {
                    continue;
                }
                rows += 1;
            }
            let line = render_line(&mut self.formats, config, r, snapshot);
            term.numeric(&line);
        }
    }

    fn reconfigure(&mut self, _config: &DisplayConfig) {
        self.formats.clear();
    }
}
