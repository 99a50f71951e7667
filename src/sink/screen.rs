//! The pure text side of the multi-line display: descriptor names (`FD:PATH`, shortened to
//! fit) and the multi-line output protocol (rows redrawn in place, cursor back to the top).

use crate::display::display_width;

/// Shortens `path` to at most `max` characters: the first ⌊max/4⌋ characters, `...`, and
/// the last `max − ⌊max/4⌋ − 3` characters (pv's rule, counted in characters so UTF-8 is
/// never split). `max` below 4 is treated as 4.
pub fn shorten(path: &str, max: usize) -> String {
    let max = max.max(4);
    let count = path.chars().count();
    if count <= max {
        return path.to_string();
    }
    let head = max / 4;
    let tail = max - head - 3;
    let mut out: String = path.chars().take(head).collect();
    out.push_str("...");
    out.extend(path.chars().skip(count - tail));
    out
}

/// The `%N` name of a descriptor: `"%4d:%s"`, or `"%8d:%4d:%s"` when several processes are
/// watched; the path shortened to width/2 − 6 (− 9 with PIDs) characters; `label` (for
/// pipes and sockets) is appended after shortening so it always shows.
pub fn name(pid: u32, fd: i32, path: &str, label: &str, with_pid: bool, width: usize) -> String {
    let max = (width / 2).saturating_sub(if with_pid { 15 } else { 6 });
    let path = shorten(path, max);
    if with_pid {
        format!("{pid:8}:{fd:4}:{path}{label}")
    } else {
        format!("{fd:4}:{path}{label}")
    }
}

/// What is on the terminal between rounds.
#[derive(Debug, Default)]
pub struct Screen {
    /// Columns of each line drawn last round (for padding a line that got shorter).
    prev_columns: Vec<usize>,
    /// Terminal width last round.
    prev_width: usize,
}

impl Screen {
    /// The bytes for one round: the lines separated by `\n`, each ending in `\r` (padded if
    /// shorter than last time); lines that disappeared since last round blanked with `width`
    /// spaces; then the cursor back up to the first line with `ESC[A`.
    pub fn round(&mut self, lines: &[String], width: usize) -> String {
        let mut out = String::new();
        let mut columns = Vec::with_capacity(lines.len());
        for (i, line) in lines.iter().enumerate() {
            if i > 0 {
                out.push('\n');
            }
            out.push_str(line);
            let cols = display_width(line);
            if let Some(&prev) = self.prev_columns.get(i) {
                if cols < prev && width >= self.prev_width {
                    let pad = (prev - cols).min(width.saturating_sub(cols));
                    out.extend(std::iter::repeat_n(' ', pad));
                }
            }
            out.push('\r');
            columns.push(cols);
        }
        let mut total = lines.len();
        for _ in lines.len()..self.prev_columns.len() {
            if total > 0 {
                out.push('\n');
            }
            out.extend(std::iter::repeat_n(' ', width));
            out.push('\r');
            total += 1;
        }
        for _ in 1..total {
            out.push_str("\x1b[A");
        }
        self.prev_columns = columns;
        self.prev_width = width;
        out
    }

    /// Lines drawn in the last round.
    pub fn lines(&self) -> usize {
        self.prev_columns.len()
    }

    /// `rows` lines were written over the screen's first rows (messages): what is on the
    /// terminal now starts that many rows further down.
    pub fn shift(&mut self, rows: usize) {
        let rows = rows.min(self.prev_columns.len());
        self.prev_columns.drain(..rows);
    }

    /// The end of the run: one `\n` per line shown, leaving the last state visible.
    pub fn finish(&mut self) -> String {
        let out = "\n".repeat(self.prev_columns.len());
        self.prev_columns.clear();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shortening() {
        assert_eq!(shorten("short", 34), "short");
        let long = "/very/long/directory/name/with/many/parts/file.bin";
        let s = shorten(long, 34);
        assert_eq!(s.chars().count(), 34);
        assert_eq!(s, "/very/lo...ith/many/parts/file.bin");
        assert_eq!(shorten("abcdefghij", 8), "ab...hij");
        assert_eq!(shorten("abcdefghij", 0), "a...");
        assert_eq!(shorten("ééééééééééé", 8), "éé...ééé");
    }

    #[test]
    fn names() {
        assert_eq!(name(42, 3, "big.txt", "", false, 80), "   3:big.txt");
        assert_eq!(
            name(42, 3, "big.txt", "", true, 80),
            "      42:   3:big.txt"
        );
        assert_eq!(
            name(42, 0, "pipe:[99]", " (process reads)", false, 80),
            "   0:pipe:[99] (process reads)"
        );
        // 80 columns: 34 characters of path, 25 with PIDs.
        let long = "x".repeat(50);
        assert_eq!(name(1, 3, &long, "", false, 80).len(), 5 + 34);
        assert_eq!(name(1, 3, &long, "", true, 80).len(), 14 + 25);
    }

    #[test]
    fn rounds() {
        let mut s = Screen::default();
        let lines = vec!["aaa".to_string(), "bb".to_string()];
        assert_eq!(s.round(&lines, 10), "aaa\r\nbb\r\x1b[A");
        let lines = vec!["a".to_string()];
        assert_eq!(s.round(&lines, 10), "a  \r\n          \r\x1b[A");
        assert_eq!(s.round(&[], 10), "          \r");
        assert_eq!(s.finish(), "");
        let lines = vec!["x".to_string(), "y".to_string(), "z".to_string()];
        assert_eq!(s.round(&lines, 5), "x\r\ny\r\nz\r\x1b[A\x1b[A");
        assert_eq!(s.lines(), 3);
        assert_eq!(s.finish(), "\n\n\n");
    }

    #[test]
    fn a_shifted_screen_pads_against_the_rows_now_under_it() {
        let mut s = Screen::default();
        let lines = vec!["aaaa".to_string(), "bbbbbb".to_string()];
        s.round(&lines, 10);
        // A message replaced the first row: the second row is now the first.
        s.shift(1);
        let lines = vec!["cc".to_string(), "dd".to_string()];
        assert_eq!(s.round(&lines, 10), "cc    \r\ndd\r\x1b[A");
    }
}
