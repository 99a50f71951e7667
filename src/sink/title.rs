//! The title sink (`-x`): the progress in the terminal window's title and in the process
//! title (what `ps` shows).
//!
//! Owns: the extra display's own format (`-x SPEC:FORMAT`, else the line's format) and where
//! it goes. The process title is set at every update, even with `-q` or in the background;
//! the window title only while the line itself is shown, on a terminal that is not `dumb`
//! (so never with `--json` or `--log`: every line they write is an object or a record).

use super::line::is_line;
use super::{DisplayConfig, Formats, Sink, Snapshot};
use crate::display;
use crate::term::{self, ExtraSpec, Term};

/// `-x`.
#[derive(Debug)]
pub(crate) struct Title {
    prog: String,
    formats: Formats,
}

impl Title {
    /// A title sink; `prog` starts the process title (`rpv -- …`).
    pub(crate) fn new(prog: &str) -> Title {
        Title {
            prog: prog.to_string(),
            formats: Formats::default(),
        }
    }
}

impl Sink for Title {
    fn update(&mut self, snapshot: &Snapshot<'_>, config: &DisplayConfig, term: &mut Term) {
        let Some(spec) = config.extra.as_deref().map(ExtraSpec::parse) else {
            return;
        };
        let Some(r) = snapshot.readings.iter().find(|r| is_line(r.meter.role)) else {
            return;
        };
        let window = spec.window && config.stderr_tty && !term::dumb_terminal();
        let window = window && !config.voice.records();
        let window = window && config.visible();
        if !window && !spec.process {
            return;
        }
        let text = spec
            .format
            .clone()
            .unwrap_or_else(|| config.format_text(r.meter));
        let name = config.label(r.meter);
        let mut frame = config.frame(r, name.as_deref(), snapshot);
        frame.colour = false;
        let line = display::render(self.formats.get(&text), &frame, config.width);
        if window {
            term.window_title(&line);
        }
        if spec.process {
            term::title::set_process_title(&self.prog, &line);
        }
    }

    fn reconfigure(&mut self, _config: &DisplayConfig) {
        self.formats.clear();
    }
}
