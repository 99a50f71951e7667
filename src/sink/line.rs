//! The line sink: pv's progress line, redrawn in place with `\r` (or, with `-c`, on rows of
//! their own shared with other rpv instances on the same terminal).
//!
//! Owns: which meters get a line (transfers and the two sides of `-M both`), and ending the
//! run with a newline. Must not: print messages or statistics.

use super::{render_row, DisplayConfig, Formats, Sink, Snapshot};
use crate::display::display_width;
use crate::meter::Role;
use crate::screen;
use crate::term::Term;

/// The `\r` progress line (or cursor rows).
#[derive(Debug, Default)]
pub(crate) struct Line {
    formats: Formats,
}

/// True for the meters a progress line shows.
pub(crate) fn is_line(role: Role) -> bool {
    matches!(role, Role::Transfer | Role::MonitorIn | Role::MonitorOut)
}

impl Sink for Line {
    fn update(&mut self, snapshot: &Snapshot<'_>, config: &DisplayConfig, term: &mut Term) {
        if !config.visible() {
            return;
        }
        // Cursor rows never use the last column (a `^C` echoed after a full row would wrap
        // and push the rows below it down); pv's `\r` line keeps the whole width.
        let width = if term.cursor_rows() {
            screen::usable_width(config.width)
        } else {
            config.width
        };
        let lines: Vec<(String, usize)> = snapshot
            .readings
            .iter()
            .filter(|r| is_line(r.meter.role))
            .map(|r| {
                let line = render_row(&mut self.formats, config, r, snapshot, width);
                let columns = display_width(&line);
                (line, columns)
            })
            .collect();
        if lines.is_empty() {
            return;
        }
        term.draw_rows(&lines, config.width);
    }

    fn finish(&mut self, _snapshot: &Snapshot<'_>, _config: &DisplayConfig, term: &mut Term) {
        term.finish_line();
    }

    fn reconfigure(&mut self, _config: &DisplayConfig) {
        self.formats.clear();
    }
}
