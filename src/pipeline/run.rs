//! `--pipeline=PID`: the watch mode (no data moved, like `-d`).
//!
//! Owns: the smallest loop that shows a [`Watcher`]: a sample every `-i` seconds, one row
//! per stage redrawn in place, the summary line at the end, `-f`, `-q`, `-w`, `-k`, `-v`.
//! Ctrl-C ends it with status 32; it ends by itself once every stage has ended. Must not:
//! grow: the display session replaces this loop (a pipeline source and a multi-line sink).

use std::os::fd::AsFd;

use super::{render, View, Watcher};
use crate::cli::{Action, Options};
use crate::display::display_width;
use crate::shared::status;
use crate::signals;
use crate::sys;
use crate::term::{self, Term};
use crate::units::CountKind;

/// Runs the watch mode; returns the exit status.
pub fn run(o: &Options, prog: &str) -> u8 {
    let Action::Pipeline(pid) = o.action else {
        return status::USAGE;
    };
    let mut term = Term::new(prog);
    let Some(pid) = pid else {
        term.message("--pipeline: only --pipeline=PID (watch a pipeline) is available so far");
        return status::USAGE;
    };
    let mut watcher = match Watcher::new(pid) {
        Ok(w) => w,
        Err(e) => {
            term.message(&format!("--pipeline: {e}"));
            return status::ACCESS;
        }
    };
    watcher.set_interval(o.interval);
    let wake = match sys::pipe() {
        Ok((r, w)) => {
            signals::install(w);
            let _ = sys::set_nonblocking(r.as_fd(), true);
            Some(r)
        }
        Err(_) => None,
    };
    let enabled = (sys::isatty(sys::stderr_fd()) || o.force) && !o.quiet;
    let kind = if o.si {
        CountKind::DecimalBytes
    } else {
        CountKind::BinaryBytes
    };
    let (mut width, mut height) = term::size(o.width, o.height);
    let interval_ns = (o.interval * 1e9) as u64;
    let mut screen = Screen::default();
    let mut view = View::default();
    let mut next_due = sys::monotonic_ns();
    let mut exit = 0;
    loop {
        let now = sys::monotonic_ns();
        let mut redraw = signals::take_continued();
        if now >= next_due {
            view = watcher.sample(now);
            if watcher.finished() {
                break;
            }
            next_due = (next_due + interval_ns).max(now + interval_ns / 2);
            redraw = true;
        }
        if redraw && enabled && (o.force || sys::in_foreground(sys::stderr_fd())) {
            let lines = render::lines(&view, width, kind);
            let shown = &lines[..lines.len().min(height.max(2) - 1)];
            term.raw(&screen.round(shown, width));
        }
        let timeout_ms = (next_due.saturating_sub(sys::monotonic_ns()) / 1_000_000 + 1).min(1000);
        match &wake {
            Some(r) => {
                let _ = sys::poll_one(r.as_fd(), libc::POLLIN, timeout_ms as i32);
                let mut buf = [0u8; 64];
                while matches!(sys::read(r.as_fd(), &mut buf), Ok(n) if n > 0) {}
            }
            None => std::thread::sleep(std::time::Duration::from_millis(timeout_ms)),
        }
        if signals::exit_requested() {
            exit |= status::SIGNAL;
            break;
        }
        if signals::take_resized() {
            (width, height) = term::size(o.width, o.height);
        }
    }
    if enabled {
        let lines = render::lines(&view, width, kind);
        let shown = &lines[..lines.len().min(height.max(2) - 1)];
        term.raw(&screen.round(shown, width));
        term.raw(&screen.finish());
    }
    if enabled || o.stats {
        term.raw(&format!("{}\n", render::summary(&watcher.summary())));
    }
    exit
}

/// What is on the terminal between rounds: lines redrawn in place.
#[derive(Debug, Default)]
struct Screen {
    /// Columns of each line drawn last round.
    columns: Vec<usize>,
}

impl Screen {
    /// The bytes for one round: each line ending in `\r` (padded over a longer old one),
    /// lines no longer drawn blanked, then the cursor back up to the first line.
    fn round(&mut self, lines: &[String], width: usize) -> String {
        let mut out = String::new();
        let rows = lines.len().max(self.columns.len());
        let mut columns = Vec::with_capacity(lines.len());
        for i in 0..rows {
            if i > 0 {
                out.push('\n');
            }
            let line = lines.get(i).map_or("", String::as_str);
            let cols = display_width(line);
            out.push_str(line);
            let old = self.columns.get(i).copied().unwrap_or(0);
            out.extend(std::iter::repeat_n(
                ' ',
                old.saturating_sub(cols).min(width),
            ));
            out.push('\r');
            if i < lines.len() {
                columns.push(cols);
            }
        }
        for _ in 1..rows {
            out.push_str("\x1b[A");
        }
        self.columns = columns;
        out
    }

    /// The end: the cursor below the last line drawn.
    fn finish(&mut self) -> String {
        let out = "\n".repeat(self.columns.len());
        self.columns.clear();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_redraw_in_place() {
        let mut s = Screen::default();
        let lines = vec!["aaa".to_string(), "bb".to_string()];
        assert_eq!(s.round(&lines, 10), "aaa\r\nbb\r\x1b[A");
        let lines = vec!["a".to_string()];
        assert_eq!(s.round(&lines, 10), "a  \r\n  \r\x1b[A");
        assert_eq!(s.finish(), "\n");
        assert_eq!(s.finish(), "");
    }
}
