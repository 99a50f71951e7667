//! The bytes that redraw a view's rows in place (pure).
//!
//! Between rounds the cursor waits at the start of the first row. A round goes back to the
//! first column (`\r`: whatever the terminal echoed there, such as `^C`, is overwritten),
//! draws each row (clearing what is left of a longer row drawn there before), clears below
//! the last row when rows went away, and goes back up to the first row. Rows are at most
//! `width − 1` columns wide, so the cursor never waits in the last column to wrap.
//!
//! While a round is drawn, auto-wrap is off (`ESC[?7l`, back on at the end): if the
//! terminal narrowed after the rows were fitted, a row is cut at the edge instead of
//! wrapping onto a line of its own, so "back up N rows" still lands on the first row.
//! After a change of width, a round first clears everything from the first row down: a
//! terminal that reflows (tmux, VTE, kitty, iTerm2) has re-wrapped the old rows, so they may
//! now take more lines than before.
//!
//! A view that has only ever had one row is drawn like pv's progress line (padding with
//! spaces, `\r`, no escapes).

use crate::display::display_width;

/// Auto-wrap off.
pub(crate) const NO_WRAP: &str = "\x1b[?7l";
/// Auto-wrap on.
pub(crate) const WRAP: &str = "\x1b[?7h";
/// Clear to the end of the line.
const CLEAR_LINE: &str = "\x1b[K";
/// Clear to the end of the screen.
const CLEAR_DOWN: &str = "\x1b[J";
/// Cursor up one row.
const UP: &str = "\x1b[A";

/// The rows on the terminal now.
#[derive(Debug, Default, Clone)]
pub(crate) struct Screen {
    /// The rows drawn last round (the cursor waits at the start of the first).
    rows: Vec<String>,
    /// Their widths in columns.
    columns: Vec<usize>,
    /// The terminal width they were drawn at.
    width: usize,
    /// More than one row has been drawn: rounds use escapes.
    multi: bool,
}

impl Screen {
    /// True while rows are on the terminal.
    pub(crate) fn active(&self) -> bool {
        !self.rows.is_empty()
    }

    /// The bytes for one round: `rows` (each at most `width − 1` columns) drawn from the
    /// first row, the cursor back at its start.
    pub(crate) fn round(&mut self, rows: &[String], width: usize) -> String {
        self.multi |= rows.len() > 1;
        let mut out = String::new();
        if self.multi {
            out.push_str(NO_WRAP);
        }
        out.push('\r');
        let mut before = std::mem::take(&mut self.columns);
        if self.multi && self.width != 0 && self.width != width && !before.is_empty() {
            out.push_str(CLEAR_DOWN);
            before.clear();
        }
        let mut columns = Vec::with_capacity(rows.len());
        for (i, row) in rows.iter().enumerate() {
            if i > 0 {
                out.push_str("\r\n");
            }
            out.push_str(row);
            let cols = display_width(row);
            if let Some(&prev) = before.get(i).filter(|&&p| p > cols) {
                if self.multi {
                    out.push_str(CLEAR_LINE);
                } else {
                    let pad = (prev - cols).min(width.saturating_sub(cols + 1));
                    out.extend(std::iter::repeat_n(' ', pad));
                }
            }
            columns.push(cols);
        }
        if before.len() > rows.len() {
            if self.multi {
                out.push_str(CLEAR_DOWN);
            } else if rows.is_empty() {
                out.extend(std::iter::repeat_n(
                    ' ',
                    before[0].min(width.saturating_sub(1)),
                ));
            }
        }
        out.push('\r');
        for _ in 1..rows.len() {
            out.push_str(UP);
        }
        if self.multi {
            out.push_str(WRAP);
        }
        self.rows = rows.to_vec();
        self.columns = columns;
        self.width = width;
        out
    }

    /// The bytes that write `text` (a message, no newline) on the first row and draw the
    /// rows again below it, the cursor back at the start of the first of them.
    pub(crate) fn over(&mut self, text: &str, width: usize) -> String {
        let mut out = String::from("\r");
        out.push_str(text);
        if self.multi {
            out.push_str(CLEAR_LINE);
        } else {
            let cols = display_width(text);
            let prev = self.columns.first().copied().unwrap_or(0);
            out.extend(std::iter::repeat_n(' ', prev.saturating_sub(cols)));
        }
        out.push_str("\r\n");
        if self.multi {
            // The old rows are one row (or, with a long message, more) lower now.
            out.push_str(CLEAR_DOWN);
        }
        let rows = std::mem::take(&mut self.rows);
        self.columns.clear();
        if !rows.is_empty() {
            out.push_str(&self.round(&rows, width));
        }
        out
    }

    /// The end: the cursor to the start of the row below the rows, which stay as they are.
    pub(crate) fn finish(&mut self) -> String {
        let mut out = String::new();
        if self.multi {
            out.push_str(WRAP);
        }
        if !self.rows.is_empty() {
            out.push('\r');
            out.push_str(&"\n".repeat(self.rows.len()));
        }
        *self = Screen::default();
        out
    }

    /// Ctrl-Z: the rows are erased (what the shell writes next goes where they were; after
    /// `fg` they are drawn again below it).
    pub(crate) fn erase(&mut self) -> String {
        let out = if self.rows.is_empty() {
            String::new()
        } else if self.multi {
            format!("\r{CLEAR_DOWN}{WRAP}")
        } else {
            let blank = " ".repeat(self.columns.first().copied().unwrap_or(0));
            format!("\r{blank}\r")
        };
        *self = Screen::default();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    /// The screen a terminal of `width` × `height` shows after `bytes`.
    fn shown(bytes: &str, width: u16, height: u16) -> Vec<String> {
        let mut parser = vt100::Parser::new(height, width, 0);
        parser.process(bytes.as_bytes());
        parser
            .screen()
            .rows(0, width)
            .map(|r| r.trim_end().to_string())
            .collect()
    }

    #[test]
    fn one_row_is_drawn_like_the_progress_line() {
        let mut s = Screen::default();
        assert_eq!(s.round(&rows(&["aaaa"]), 10), "\raaaa\r");
        assert_eq!(s.round(&rows(&["bb"]), 10), "\rbb  \r");
        assert_eq!(s.over("rpv: x", 10), "\rrpv: x\r\n\rbb\r");
        assert_eq!(s.finish(), "\r\n");
        assert!(!s.active());
    }

    #[test]
    fn rows_are_redrawn_in_place() {
        let mut s = Screen::default();
        let mut bytes = String::from("$ cmd\r\n");
        bytes += &s.round(&rows(&["first row", "second row", "third"]), 20);
        bytes += &s.round(&rows(&["1st", "2nd"]), 20);
        let screen = shown(&bytes, 20, 5);
        assert_eq!(screen, ["$ cmd", "1st", "2nd", "", ""]);
        bytes += &s.finish();
        bytes += "$ ";
        assert_eq!(shown(&bytes, 20, 5), ["$ cmd", "1st", "2nd", "$", ""]);
    }

    #[test]
    fn an_echoed_ctrl_c_is_overwritten() {
        let mut s = Screen::default();
        let mut bytes = s.round(&rows(&["  first: 1", "   total: 2"]), 20);
        // The terminal echoes ^C where the cursor waits.
        bytes += "^C";
        bytes += &s.round(&rows(&["  first: 3", "   total: 4"]), 20);
        bytes += &s.finish();
        bytes += "summary";
        assert_eq!(
            shown(&bytes, 20, 5),
            ["  first: 3", "   total: 4", "summary", "", ""]
        );
    }

    #[test]
    fn a_message_goes_above_the_rows() {
        let mut s = Screen::default();
        let mut bytes = s.round(&rows(&["row one", "row two"]), 20);
        bytes += &s.over("rpv: something went wrong", 20);
        bytes += &s.round(&rows(&["row 1", "row 2"]), 20);
        bytes += &s.finish();
        assert_eq!(
            shown(&bytes, 20, 6),
            ["rpv: something went", "wrong", "row 1", "row 2", "", ""]
        );
    }

    #[test]
    fn a_new_width_clears_from_the_first_row_down() {
        let mut s = Screen::default();
        let mut bytes = s.round(&rows(&["a".repeat(29).as_str(), "b", "c"]), 30);
        // What a reflowing terminal did when it narrowed to 20: the first row now takes two
        // lines, the others moved down one.
        let mut parser = vt100::Parser::new(6, 30, 0);
        parser.process(bytes.as_bytes());
        parser.process(b"\x1b[H\x1b[2J");
        parser
            .process(format!("{}\r\n{}\r\nb\r\nc\x1b[H", "a".repeat(20), "a".repeat(9)).as_bytes());
        bytes = s.round(&rows(&["x".repeat(19).as_str(), "y"]), 20);
        parser.process(bytes.as_bytes());
        let screen: Vec<String> = parser
            .screen()
            .rows(0, 30)
            .map(|r| r.trim_end().to_string())
            .collect();
        assert_eq!(screen, ["x".repeat(19).as_str(), "y", "", "", "", ""]);
        assert!(bytes.contains("\x1b[J"));
    }

    #[test]
    fn ctrl_z_erases_the_rows() {
        let mut s = Screen::default();
        let mut bytes = s.round(&rows(&["one", "two"]), 20);
        bytes += &s.erase();
        assert!(!s.active());
        bytes += "^Z\r\n[1]+ Stopped";
        assert_eq!(shown(&bytes, 20, 3), ["^Z", "[1]+ Stopped", ""]);
    }
}
