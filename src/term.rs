//! The terminal side: where progress lines and messages are written (spec 2.1, 2.3, 2.12).
//!
//! Owns: the only writes to standard error, the `\r`/`\n` protocol of normal and numeric
//! mode, padding when a line gets shorter, and terminal size detection. Only the display
//! thread uses it, so a blocked terminal (Ctrl-S, a full pipe) stalls only the display.

use std::os::fd::BorrowedFd;

use crate::display::display_width;
use crate::sys;

/// Terminal width and height for the display: `-w`/`-H` if non-zero, else `TIOCGWINSZ` on
/// stderr, else 80×25.
pub fn size(fixed_width: u32, fixed_height: u32) -> (usize, usize) {
    let detected = sys::window_size(sys::stderr_fd());
    let width = match (fixed_width, detected) {
        (w, _) if w > 0 => w as usize,
        (_, Some((cols, _))) => cols as usize,
        _ => 80,
    };
    let height = match (fixed_height, detected) {
        (h, _) if h > 0 => h as usize,
        (_, Some((_, rows))) if rows > 0 => rows as usize,
        _ => 25,
    };
    (width.min(65535), height)
}

/// Writes progress lines and messages to standard error.
#[derive(Debug)]
pub struct Term {
    fd: BorrowedFd<'static>,
    prog: String,
    /// Columns of the previous progress line.
    prev_columns: usize,
    /// Terminal width at the previous line.
    prev_term_width: usize,
    /// A normal (`\r`) progress line has been written: messages start with `\n`, and the
    /// run ends with `\n`.
    pub wrote_line: bool,
}

impl Term {
    /// A writer on stderr; `prog` prefixes messages (`rpv: …`).
    pub fn new(prog: &str) -> Term {
        Term {
            fd: sys::stderr_fd(),
            prog: prog.to_string(),
            prev_columns: 0,
            prev_term_width: 0,
            wrote_line: false,
        }
    }

    /// Writes one normal-mode progress line followed by `\r`. When the line is narrower than
    /// the previous one and the terminal did not shrink, it is padded with spaces so no debris
    /// of the old line remains (pv pads at most 15; rpv pads the whole difference).
    pub fn draw(&mut self, line: &str, term_width: usize) {
        let columns = display_width(line);
        let mut out = String::with_capacity(line.len() + 16);
        out.push_str(line);
        if columns < self.prev_columns && term_width >= self.prev_term_width {
            let pad = (self.prev_columns - columns).min(term_width.saturating_sub(columns));
            out.extend(std::iter::repeat_n(' ', pad));
        }
        out.push('\r');
        self.prev_columns = columns;
        self.prev_term_width = term_width;
        self.wrote_line = true;
        self.write(out.as_bytes());
    }

    /// Writes one numeric-mode line (`line` + `\n`).
    pub fn numeric(&mut self, line: &str) {
        let mut out = String::with_capacity(line.len() + 1);
        out.push_str(line);
        out.push('\n');
        self.write(out.as_bytes());
    }

    /// Writes an error message: `prog: message\n`, starting on a new line if a progress line
    /// is on the screen.
    pub fn message(&mut self, message: &str) {
        let lead = if self.wrote_line { "\n" } else { "" };
        let text = format!("{lead}{}: {message}\n", self.prog);
        self.prev_columns = 0;
        self.write(text.as_bytes());
    }

    /// Ends the run: `\n` after the last progress line, if any was written.
    pub fn finish_line(&mut self) {
        if self.wrote_line {
            self.write(b"\n");
        }
    }

    /// Writes raw text (for `--stats`).
    pub fn raw(&mut self, text: &str) {
        self.write(text.as_bytes());
    }

    /// Blocking write of everything, retrying on EINTR; other errors drop the text (a
    /// display problem never stops the transfer).
    fn write(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            match sys::write(self.fd, data) {
                Ok(0) => return,
                Ok(n) => data = &data[n..],
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => {
                    if crate::signals::exit_requested() {
                        return;
                    }
                }
                Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => {
                    let _ = sys::poll_one(self.fd, libc::POLLOUT, 100);
                }
                Err(_) => return,
            }
        }
    }
}
