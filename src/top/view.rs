//! The `--top` view as rows (pure): one row per flow, its columns and how they give way,
//! the order, the selection, the sparkline of each flow's rate, and the keys.
//!
//! ```text
//!   KIND        PID      RATE     BYTES    %      ETA HISTORY    FLOW
//! > pipeline  41327  203MiB/s  1.02GiB                  ▂▄▆█▇▆█ cat big | gzip -9 | wc -c  bottleneck gzip -9 (running)
//!   file      41388  9.8MiB/s   120MiB  23%  0:00:41    ▅▅▆▅▅▅▅ dd if=/dev/sdb of=img ← /dev/sdb
//!   socket    41402  1.1MiB/s  30.2MiB                   ▁▁▂▂▁▁ ssh host cat f
//! ↑↓ select  Enter open  Esc back  / filter  s sort  p freeze  q quit
//! ```
//!
//! The flow's name takes the width the others leave (at least 24 columns while the
//! figures are shown): a process and its file read `command → file` (it writes the file)
//! or `command ← file` (it reads it); where that does not fit, the file comes first
//! (`file ← command`, the path's end when even the file is long), so the two sides of one
//! command (dd's input and output) still read differently. A pipeline's bottleneck
//! follows its name, on its row only. As the terminal narrows, the history goes first,
//! then the name is cut to 16 columns, then the bytes, the percentage, the PID, the kind
//! and the ETA go; at 80 columns the PID and the file stay. The key help is a footer line
//! on a terminal of 8 rows or more. Must not: write anything or read the clock.

use std::collections::{HashMap, VecDeque};

use super::{Bottleneck, Kind, Zoom};
use crate::display::{display_width, printable};
use crate::screen::{cut, Block, Cell, Column, Row, Table, View};
use crate::units::Unit;
use crate::units::{describe_amount, format_elapsed, format_eta, CountKind};

/// Rates kept per flow for its sparkline.
pub const HISTORY: usize = 64;

/// A flow's row, as the last update left it.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// The meter's id.
    pub id: u64,
    /// Its kind.
    pub kind: Kind,
    /// Its process.
    pub pid: u32,
    /// Its command line (of a pipeline, the stages' joined by ` | `).
    pub command: String,
    /// The file or device it reads or writes, if any (of a copy, the file read).
    pub file: Option<String>,
    /// Of a copy, the file written.
    pub to: Option<String>,
    /// It writes (rather than reads) the file.
    pub writes: bool,
    /// It copies inside the kernel.
    pub in_kernel: bool,
    /// Its progress cannot be seen now (a copy inside the kernel): no rate, no ETA.
    pub unseen: bool,
    /// What it counts: bytes, or lines (an `rpv -l`).
    pub unit: Unit,
    /// Bytes (or lines) so far.
    pub amount: u64,
    /// Its rate now, per second.
    pub rate: f64,
    /// Percentage, when the size is known.
    pub percent: Option<f64>,
    /// Seconds to the end, when known.
    pub eta: Option<f64>,
    /// Seconds without moving, once stalled.
    pub stalled_for: Option<f64>,
    /// It ended (shown once more).
    pub ended: bool,
    /// A pipeline's bottleneck.
    pub bottleneck: Option<Bottleneck>,
    /// What Enter opens.
    pub zoom: Zoom,
}

/// The order of the rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Sort {
    /// Busiest first.
    #[default]
    Rate,
    /// Most bytes first.
    Bytes,
    /// Soonest to finish first (flows without an ETA last).
    Eta,
    /// By process.
    Pid,
}

impl Sort {
    /// The next order (`s`).
    pub fn next(self) -> Sort {
        match self {
            Sort::Rate => Sort::Bytes,
            Sort::Bytes => Sort::Eta,
            Sort::Eta => Sort::Pid,
            Sort::Pid => Sort::Rate,
        }
    }

    /// Its name in the title line.
    pub fn name(self) -> &'static str {
        match self {
            Sort::Rate => "rate",
            Sort::Bytes => "bytes",
            Sort::Eta => "eta",
            Sort::Pid => "pid",
        }
    }

    /// Sorts `lines` in this order (ties by PID, then id, so the order is stable).
    pub fn apply(self, lines: &mut [Line]) {
        lines.sort_by(|a, b| {
            let first = match self {
                Sort::Rate => b.rate.total_cmp(&a.rate),
                Sort::Bytes => b.amount.cmp(&a.amount),
                Sort::Eta => {
                    let key = |l: &Line| l.eta.unwrap_or(f64::INFINITY);
                    key(a).total_cmp(&key(b))
                }
                Sort::Pid => a.pid.cmp(&b.pid),
            };
            first.then(a.pid.cmp(&b.pid)).then(a.id.cmp(&b.id))
        });
    }
}

/// A key the view understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    /// ↑ or `k`.
    Up,
    /// ↓ or `j`.
    Down,
    /// Home or `g`: the first row.
    First,
    /// End or `G`: the last row.
    Last,
    /// Enter: open the selected flow (while typing a filter: apply it).
    Enter,
    /// Esc: back from the opened flow, or the filter cleared.
    Escape,
    /// `s`: the next order.
    Sort,
    /// `/`: type a filter.
    Filter,
    /// `p`: freeze the order (and again: let it follow the figures).
    Freeze,
    /// `q`.
    Quit,
    /// Backspace, while typing a filter.
    Erase,
    /// A character of a filter being typed.
    Char(char),
}

/// The keys in the bytes read from the terminal (escape sequences it does not know are
/// skipped whole), none of them typed into a filter.
#[cfg(test)]
pub fn keys(bytes: &[u8]) -> Vec<Key> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let (key, used) = next_key(&bytes[i..], false);
        out.extend(key);
        i += used;
    }
    out
}

/// The first key in `bytes` and how many bytes it took (at least one). While `typing` a
/// filter, a printable character is itself (a `Char`), Backspace erases, and letters are
/// not commands.
pub fn next_key(bytes: &[u8], typing: bool) -> (Option<Key>, usize) {
    let Some(&first) = bytes.first() else {
        return (None, 0);
    };
    if first == 0x1b && bytes.get(1).is_some_and(|&b| b == b'[' || b == b'O') {
        // CSI or SS3: parameters, then a final byte in @..~.
        let mut j = 2;
        while j < bytes.len() && !(0x40..=0x7e).contains(&bytes[j]) {
            j += 1;
        }
        // Home and End: `ESC [ H`, `ESC O H` (and `F`), or `ESC [ 1 ~`, `ESC [ 7 ~`
        // (and `4`, `8`), as terminals and terminfo entries differ.
        let params = &bytes[2..j.min(bytes.len())];
        let key = match (bytes.get(j), params) {
            (Some(b'A'), _) => Some(Key::Up),
            (Some(b'B'), _) => Some(Key::Down),
            (Some(b'H'), []) | (Some(b'~'), b"1" | b"7") => Some(Key::First),
            (Some(b'F'), []) | (Some(b'~'), b"4" | b"8") => Some(Key::Last),
            _ => None,
        };
        return (key, (j + 1).min(bytes.len()));
    }
    let key = match first {
        0x1b => Some(Key::Escape),
        b'\r' | b'\n' => Some(Key::Enter),
        0x7f | 0x08 if typing => Some(Key::Erase),
        _ if typing => return typed(bytes),
        b'k' => Some(Key::Up),
        b'j' => Some(Key::Down),
        b'g' => Some(Key::First),
        b'G' => Some(Key::Last),
        b's' => Some(Key::Sort),
        b'/' => Some(Key::Filter),
        b'p' => Some(Key::Freeze),
        b'q' | b'Q' => Some(Key::Quit),
        _ => None,
    };
    (key, 1)
}

/// The character typed at the start of `bytes` (UTF-8; control bytes and broken
/// sequences are skipped).
fn typed(bytes: &[u8]) -> (Option<Key>, usize) {
    let len = match bytes[0] {
        0x00..=0x7f => 1,
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf7 => 4,
        _ => return (None, 1),
    };
    match bytes.get(..len).and_then(|b| std::str::from_utf8(b).ok()) {
        Some(text) => {
            let c = text.chars().next().filter(|c| !c.is_control());
            (c.map(Key::Char), len)
        }
        None => (None, 1),
    }
}

/// The selection after `key`: the row above or below the selected one in `lines` (in
/// display order), the first or the last row, the first row when nothing was selected.
pub fn move_selection(lines: &[Line], selected: Option<u64>, key: Key) -> Option<u64> {
    let at = selected.and_then(|id| lines.iter().position(|l| l.id == id));
    let to = match (at, key) {
        (_, Key::First) => 0,
        (_, Key::Last) => lines.len().saturating_sub(1),
        (None, _) => 0,
        (Some(i), Key::Up) => i.saturating_sub(1),
        (Some(i), Key::Down) => (i + 1).min(lines.len().saturating_sub(1)),
        (Some(i), _) => i,
    };
    lines.get(to).map(|l| l.id)
}

/// The sparkline of `rates` (oldest first) in `width` cells, the newest at the right,
/// scaled to the largest shown.
pub fn sparkline(rates: &VecDeque<f64>, width: usize, utf8: bool) -> String {
    const BLOCKS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    const ASCII: [char; 8] = ['_', '.', ',', '-', '~', '=', '*', '#'];
    let marks = if utf8 { &BLOCKS } else { &ASCII };
    let shown: Vec<f64> = rates.iter().rev().take(width).rev().copied().collect();
    let top = shown.iter().copied().fold(0.0_f64, f64::max);
    let mut out = String::new();
    for _ in shown.len()..width {
        out.push(' ');
    }
    for rate in shown {
        if top <= 0.0 || rate <= 0.0 {
            out.push(' ');
        } else {
            let level = ((rate / top) * 7.0).round().clamp(0.0, 7.0) as usize;
            out.push(marks[level]);
        }
    }
    out
}

/// `value` in `kind`'s units (`1.53GiB`, `12 lines`), `/s` after a rate, without the
/// padding of the display's fixed-width fields.
pub fn figure(value: f64, kind: CountKind, rate: bool) -> String {
    let suffix = match (kind, rate) {
        (CountKind::Lines, false) => " lines",
        (CountKind::Lines, true) => " lines/s",
        (_, false) => "B",
        (_, true) => "B/s",
    };
    let text = describe_amount(value, kind, suffix);
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// What the state column says: the ETA, `stalled 12s`, `ended`, `unseen` (a copy whose
/// progress cannot be seen), or nothing.
pub fn state(line: &Line) -> String {
    if line.ended {
        "ended".into()
    } else if line.unseen {
        "unseen".into()
    } else if let Some(s) = line.stalled_for {
        format!("stalled {}", short_time(s))
    } else if let Some(eta) = line.eta {
        format_eta(eta.max(0.0).round() as u64)
    } else {
        String::new()
    }
}

/// `12s`, `3m05s`, or `H:MM:SS` beyond an hour.
fn short_time(secs: f64) -> String {
    let s = secs.max(0.0) as u64;
    if s < 60 {
        format!("{s}s")
    } else if s < 3600 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format_elapsed(secs)
    }
}

/// The note after a pipeline's name.
pub fn note(line: &Line) -> String {
    line.bottleneck
        .as_ref()
        .map(|b| format!("bottleneck {} ({})", b.command, b.why))
        .unwrap_or_default()
}

impl Line {
    /// What the `/` filter looks in: the kind, the PID, the command and the file.
    pub fn text(&self) -> String {
        let file = self.file.as_deref().unwrap_or("");
        let to = self.to.as_deref().unwrap_or("");
        format!(
            "{} {} {} {file} {to}",
            self.kind.name(),
            self.pid,
            self.command
        )
    }
}

/// The FLOW cell of `line` in `width` columns: `command → file` or `command ← file` when
/// that fits, else the file first (its end when it takes over half the cell, its last
/// name whole where that leaves a quarter of the cell to the command); a copy reads
/// `command: from → to`, else `to ← from command` (the file written first, each file
/// its end); a copy inside the kernel says so; a pipeline's bottleneck after its name. Escaped for the terminal.
pub fn flow_text(line: &Line, width: usize, utf8: bool) -> String {
    let command = printable(&line.command);
    let (right, left) = if utf8 { ("→", "←") } else { ("->", "<-") };
    let room = |file: &str, share: usize| {
        let base = file.rsplit('/').next().map_or(0, display_width);
        (width / share).max(base + 1).min(width * 3 / 4).max(1)
    };
    let text = match (&line.file, &line.to) {
        (None, _) => command.into_owned(),
        (Some(from), Some(to)) => {
            let (from, to) = (printable(from), printable(to));
            let whole = format!("{command}: {from} {right} {to}");
            if display_width(&whole) <= width {
                whole
            } else {
                let to = cut_start(&to, room(&to, 2), utf8);
                let rest = width.saturating_sub(display_width(&to) + 3).max(1);
                let from = cut_start(&from, rest.min(room(&from, 2)), utf8);
                format!("{to} {left} {from} {command}")
            }
        }
        (Some(file), None) => {
            let file = printable(file);
            let (along, back) = if line.writes {
                (right, left)
            } else {
                (left, right)
            };
            let whole = format!("{command} {along} {file}");
            if display_width(&whole) <= width {
                whole
            } else {
                format!(
                    "{} {back} {command}",
                    cut_start(&file, room(&file, 2), utf8)
                )
            }
        }
    };
    let text = if line.unseen {
        format!("{text} (in kernel, progress not visible)")
    } else if line.in_kernel {
        format!("{text} (in kernel)")
    } else {
        text
    };
    let note = note(line);
    let text = if note.is_empty() {
        text
    } else {
        format!("{text}  {}", printable(&note))
    };
    cut(&text, width, utf8)
}

/// The end of `text` in at most `width` columns, an ellipsis before it when cut.
fn cut_start(text: &str, width: usize, utf8: bool) -> String {
    if display_width(text) <= width {
        return text.to_string();
    }
    let mark = if utf8 { "…" } else { "..." };
    let room = width.saturating_sub(display_width(mark));
    let mut tail = Vec::new();
    let mut used = 0;
    for c in text.chars().rev() {
        let w = display_width(c.encode_utf8(&mut [0; 4]));
        if used + w > room {
            break;
        }
        used += w;
        tail.push(c);
    }
    let mut out = mark.to_string();
    out.extend(tail.into_iter().rev());
    out
}

/// Everything the view shows at one moment.
#[derive(Debug)]
pub struct Screenful<'a> {
    /// The rows, in display order.
    pub lines: &'a [Line],
    /// Rate histories by id.
    pub history: &'a HashMap<u64, VecDeque<f64>>,
    /// The selected row, when keys are taken.
    pub selected: Option<u64>,
    /// The order.
    pub sort: Sort,
    /// Keys are taken (a marker column and the key help are shown).
    pub interactive: bool,
    /// The order is frozen.
    pub frozen: bool,
    /// The `/` filter's text (empty: none).
    pub filter: &'a str,
    /// The filter is being typed.
    pub typing: bool,
    /// The line about processes rpv may not read.
    pub hidden: Option<String>,
    /// How bytes are counted (binary or decimal prefixes); a flow of lines shows lines.
    pub kind: CountKind,
    /// UTF-8 locale.
    pub utf8: bool,
}

/// The table's columns and the rows of `s`.
fn table<'a>(s: &Screenful<'a>) -> Table<'a> {
    let mut columns = Vec::new();
    if s.interactive {
        columns.push(Column::new("").reserve(1));
    }
    columns.extend([
        Column::new("KIND").reserve(8).drop_at(50),
        Column::new("PID").right().reserve(7).drop_at(45),
        Column::new("RATE").right().reserve(10),
        Column::new("BYTES").right().reserve(9).drop_at(30),
        Column::new("%").right().reserve(4).drop_at(40),
        Column::new("ETA").right().reserve(8).drop_at(55),
        Column::new("HISTORY").reserve(12).drop_at(10),
        Column::new("FLOW")
            .grow()
            .reserve(24)
            .cut(20, 16)
            .cut(60, 8)
            .cut(93, 5),
    ]);
    let mut rows = Vec::new();
    let n = s.lines.len() as u32;
    for (i, l) in s.lines.iter().enumerate() {
        let mut cells = Vec::new();
        let selected = s.interactive && s.selected == Some(l.id);
        if s.interactive {
            cells.push(Cell::Text(if selected { ">" } else { " " }.into()));
        }
        let history = s.history.get(&l.id).cloned().unwrap_or_default();
        let utf8 = s.utf8;
        let line = l.clone();
        let (rate, amount) = match l.unit {
            // A copy whose progress cannot be seen has no rate to show (not 0 B/s).
            Unit::Bytes if l.unseen => (
                "?".to_string(),
                describe_amount(l.amount as f64, s.kind, "B"),
            ),
            Unit::Lines => (
                figure(l.rate, CountKind::Lines, true),
                figure(l.amount as f64, CountKind::Lines, false),
            ),
            Unit::Bytes => (
                describe_amount(l.rate, s.kind, "B/s"),
                describe_amount(l.amount as f64, s.kind, "B"),
            ),
        };
        cells.extend([
            Cell::Text(l.kind.name().into()),
            Cell::Text(l.pid.to_string()),
            Cell::Text(rate),
            Cell::Text(amount),
            Cell::Text(l.percent.map_or_else(String::new, |p| format!("{p:.0}%"))),
            Cell::Text(state(l)),
            Cell::Draw(Box::new(move |w| sparkline(&history, w, utf8))),
            Cell::Draw(Box::new(move |w| flow_text(&line, w, utf8))),
        ]);
        rows.push(Row::new(cells).keep(selected).rank(n - i as u32));
    }
    Table {
        columns,
        header: true,
        rows,
    }
}

/// The key help (a footer line); while a filter is typed, what ends it.
fn help(s: &Screenful<'_>) -> String {
    if s.typing {
        format!("/{}_  Enter apply  Esc clear", s.filter)
    } else if s.utf8 {
        "↑↓ select  Enter open  Esc back  / filter  s sort  p freeze  q quit".into()
    } else {
        "up/down select  Enter open  Esc back  / filter  s sort  p freeze  q quit".into()
    }
}

/// Rows a terminal needs for the key help to have a footer line of its own.
const HELP_ROWS: usize = 8;

/// The title line: how many flows (matching the filter), the order (frozen or not), and
/// the processes rpv may not read, and why.
fn title(s: &Screenful<'_>) -> String {
    let count = s.lines.iter().filter(|l| !l.ended).count();
    let plural = if count == 1 { "" } else { "s" };
    let mut title = format!("rpv --top: {count} flow{plural}");
    if !s.filter.is_empty() || s.typing {
        title.push_str(&format!(" matching \"{}\"", s.filter));
    }
    title.push_str(&format!(", by {}", s.sort.name()));
    if s.frozen {
        title.push_str(", frozen");
    }
    if let Some(hidden) = &s.hidden {
        title.push_str("; ");
        title.push_str(hidden);
    }
    title
}

/// The view of `s` on a terminal `height` rows high: the title line, the table, and the
/// key help when keys are taken and the terminal has room for it.
pub fn view<'a>(s: &Screenful<'a>, height: usize) -> View<'a> {
    let mut blocks = vec![Block::text(&title(s)), Block::Table(table(s))];
    if s.interactive && height >= HELP_ROWS {
        blocks.push(Block::text(&help(s)));
    }
    View {
        blocks,
        utf8: s.utf8,
    }
}

/// The rows of the view of `s` on a terminal `width` × `height`.
pub fn lines(s: &Screenful<'_>, width: usize, height: usize) -> Vec<String> {
    view(s, height).lines(width, height)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::display::display_width;

    fn line(id: u64, rate: f64, name: &str) -> Line {
        Line {
            id,
            kind: Kind::File,
            pid: 100 + id as u32,
            command: name.into(),
            file: None,
            to: None,
            writes: false,
            in_kernel: false,
            unseen: false,
            unit: Unit::Bytes,
            amount: id * 1000,
            rate,
            percent: Some(40.0),
            eta: Some(12.0),
            stalled_for: None,
            ended: false,
            bottleneck: None,
            zoom: Zoom::Watch(1, None),
        }
    }

    #[test]
    fn keys_from_terminal_bytes() {
        assert_eq!(
            keys(b"\x1b[A\x1b[Bjk\rsq"),
            [
                Key::Up,
                Key::Down,
                Key::Down,
                Key::Up,
                Key::Enter,
                Key::Sort,
                Key::Quit
            ]
        );
        assert_eq!(keys(b"\x1b"), [Key::Escape]);
        assert_eq!(keys(b"\x1bOA"), [Key::Up], "application cursor mode");
        assert_eq!(
            keys(b"\x1b[H\x1bOH\x1b[1~\x1b[7~g"),
            [Key::First; 5],
            "Home as terminals send it"
        );
        assert_eq!(
            keys(b"\x1b[F\x1bOF\x1b[4~\x1b[8~G"),
            [Key::Last; 5],
            "End as terminals send it"
        );
        assert_eq!(keys(b"\x1b[2~\x1b[1;5H"), [], "Insert, Ctrl-Home: not ours");
        assert_eq!(
            keys(b"\x1b[1;5C"),
            [],
            "unknown sequences are skipped whole"
        );
    }

    #[test]
    fn selection_moves_and_stays_inside() {
        let lines = vec![line(1, 3.0, "a"), line(2, 2.0, "b"), line(3, 1.0, "c")];
        assert_eq!(move_selection(&lines, None, Key::Down), Some(1));
        assert_eq!(move_selection(&lines, Some(1), Key::Down), Some(2));
        assert_eq!(move_selection(&lines, Some(3), Key::Down), Some(3));
        assert_eq!(move_selection(&lines, Some(1), Key::Up), Some(1));
        assert_eq!(
            move_selection(&lines, Some(9), Key::Up),
            Some(1),
            "gone: first"
        );
        assert_eq!(move_selection(&[], Some(1), Key::Up), None);
        assert_eq!(move_selection(&lines, Some(2), Key::First), Some(1));
        assert_eq!(move_selection(&lines, Some(1), Key::Last), Some(3));
        assert_eq!(move_selection(&lines, None, Key::Last), Some(3));
        assert_eq!(move_selection(&[], None, Key::Last), None);
    }

    #[test]
    fn sorts_by_rate_then_by_the_key_chosen() {
        let mut lines = vec![line(1, 1.0, "a"), line(2, 5.0, "b"), line(3, 3.0, "c")];
        Sort::Rate.apply(&mut lines);
        assert_eq!(lines.iter().map(|l| l.id).collect::<Vec<_>>(), [2, 3, 1]);
        Sort::Bytes.apply(&mut lines);
        assert_eq!(lines.iter().map(|l| l.id).collect::<Vec<_>>(), [3, 2, 1]);
        Sort::Pid.apply(&mut lines);
        assert_eq!(lines.iter().map(|l| l.id).collect::<Vec<_>>(), [1, 2, 3]);
        assert_eq!(Sort::Pid.next(), Sort::Rate);
    }

    #[test]
    fn sparkline_scales_to_the_largest_rate() {
        let rates: VecDeque<f64> = [0.0, 1.0, 2.0, 4.0].into_iter().collect();
        assert_eq!(sparkline(&rates, 6, true), "   ▃▅█");
        assert_eq!(sparkline(&rates, 2, false), "~#");
        assert_eq!(sparkline(&VecDeque::new(), 3, true), "   ");
    }

    #[test]
    fn states_say_stalled_and_for_how_long() {
        let mut l = line(1, 0.0, "a");
        assert_eq!(state(&l), "0:00:12");
        l.stalled_for = Some(75.0);
        assert_eq!(state(&l), "stalled 1m15s");
        l.ended = true;
        assert_eq!(state(&l), "ended");
    }

    #[test]
    fn a_copy_whose_progress_cannot_be_seen_says_so_and_shows_no_rate() {
        let mut l = line(1, 0.0, "cp");
        l.file = Some("/d/big".into());
        l.to = Some("/d/copy".into());
        l.in_kernel = true;
        l.unseen = true;
        l.stalled_for = Some(12.0);
        assert_eq!(state(&l), "unseen");
        let text = flow_text(&l, 120, true);
        assert!(text.contains("(in kernel, progress not visible)"), "{text}");
        let (lines, history) = (vec![l], HashMap::new());
        let shown = super::lines(&screen(&lines, &history, false), 120, 5).join("\n");
        let row = shown
            .lines()
            .find(|r| r.contains("/d/big"))
            .unwrap_or_default();
        assert!(row.contains(" ? ") && !row.contains("B/s"), "{shown}");
        assert!(row.contains("unseen"), "{shown}");
    }

    #[test]
    fn rows_fit_every_width_and_height() {
        let mut lines: Vec<Line> = (1..=30)
            .map(|i| {
                line(
                    i,
                    i as f64,
                    &"very long command line ".repeat(i as usize % 5 + 1),
                )
            })
            .collect();
        lines[0].bottleneck = Some(Bottleneck {
            command: "gzip -9".into(),
            why: "running".into(),
        });
        let history = HashMap::new();
        for interactive in [false, true] {
            let s = Screenful {
                lines: &lines,
                history: &history,
                selected: Some(30),
                sort: Sort::Rate,
                interactive,
                frozen: false,
                filter: "",
                typing: false,
                hidden: Some("3 processes not readable".into()),
                kind: CountKind::BinaryBytes,
                utf8: true,
            };
            for width in [20, 40, 80, 160] {
                for height in [5, 12, 40] {
                    let rows = super::lines(&s, width, height);
                    assert!(rows.len() < height, "{width}x{height}: {}", rows.len());
                    for row in &rows {
                        assert!(display_width(row) < width, "{width}: {row:?}");
                    }
                    if height < 30 {
                        assert!(rows.iter().any(|r| r.contains("more")), "{rows:?}");
                    }
                    if interactive {
                        assert!(
                            rows.iter().any(|r| r.starts_with('>')),
                            "{width}x{height}: {rows:?}"
                        );
                    }
                }
            }
            let wide = super::lines(&s, 200, 60).join("\n");
            assert!(wide.contains("bottleneck gzip -9 (running)"), "{wide}");
        }
    }

    /// dd's two sides, a long compiler line, a pipeline with its bottleneck.
    fn machine() -> Vec<Line> {
        let dd = "dd if=/data/run/big.bin of=/data/run/dd.out bs=1M";
        let mut read = line(1, 5e6, dd);
        read.pid = 41388;
        read.file = Some("/data/run/big.bin".into());
        let mut write = line(2, 5e6, dd);
        write.pid = 41388;
        write.file = Some("/data/run/dd.out".into());
        write.writes = true;
        let mut cc = line(
            3,
            4e6,
            &"rustc --crate-name rpv --edition=2021 src/lib.rs ".repeat(3),
        );
        cc.pid = 9396;
        cc.file = Some("/work/target/debug/deps/librpv-3de5b8502a1a644f.rlib".into());
        cc.writes = true;
        cc.percent = None;
        cc.eta = None;
        vec![read, write, cc]
    }

    fn pipeline() -> Line {
        let mut p = line(4, 6e6, "cat big | gzip -9 | wc -c");
        p.kind = Kind::Pipeline;
        p.pid = 51234;
        p.bottleneck = Some(Bottleneck {
            command: "gzip -9".into(),
            why: "running".into(),
        });
        p
    }

    fn screen<'a>(
        lines: &'a [Line],
        history: &'a HashMap<u64, VecDeque<f64>>,
        interactive: bool,
    ) -> Screenful<'a> {
        Screenful {
            lines,
            history,
            selected: lines.first().map(|l| l.id),
            sort: Sort::Rate,
            interactive,
            frozen: false,
            filter: "",
            typing: false,
            hidden: None,
            kind: CountKind::BinaryBytes,
            utf8: true,
        }
    }

    #[test]
    fn at_80_columns_the_pid_and_the_file_stay_and_dd_reads_two_ways() {
        let history = HashMap::new();
        let flows = machine();
        for interactive in [false, true] {
            let s = screen(&flows, &history, interactive);
            let rows = lines(&s, 80, 24);
            let row = |pid: &str, part: &str| {
                rows.iter()
                    .find(|r| r.contains(pid) && r.contains(part))
                    .unwrap_or_else(|| panic!("no row with {pid} and {part}: {rows:#?}"))
                    .clone()
            };
            let read = row("41388", "big.bin");
            let write = row("41388", "dd.out");
            assert_ne!(read, write, "{rows:#?}");
            assert!(
                read.contains("/big.bin → dd if"),
                "file first, read: {read}"
            );
            assert!(
                write.contains("/dd.out ← dd if"),
                "file first, written: {write}"
            );
            let cc = row("9396", "a644f.rlib ← rus");
            assert!(cc.contains("KiB/s") || cc.contains("MiB/s"), "{cc}");
            assert!(rows.iter().all(|r| display_width(r) < 80), "{rows:#?}");
        }
        // Wide: the command first, then its file.
        let s = screen(&flows, &history, false);
        let wide = lines(&s, 200, 24).join("\n");
        assert!(
            wide.contains("bs=1M ← /data/run/big.bin") && wide.contains("bs=1M → /data/run/dd.out"),
            "{wide}"
        );
    }

    #[test]
    fn the_bottleneck_takes_room_only_on_pipeline_rows() {
        let history = HashMap::new();
        let flows = machine();
        let mut with_pipeline = flows.clone();
        with_pipeline.push(pipeline());
        for width in [80, 120, 160] {
            let alone = lines(&screen(&flows, &history, false), width, 24);
            let beside = lines(&screen(&with_pipeline, &history, false), width, 24);
            assert_eq!(
                alone[1..4],
                beside[1..4],
                "{width}: the other rows as wide without the pipeline"
            );
            let p = beside.iter().find(|r| r.contains("51234")).unwrap();
            if width >= 120 {
                assert!(
                    p.contains("cat big | gzip -9 | wc -c  bottleneck gzip"),
                    "{p}"
                );
            }
        }
    }

    #[test]
    fn the_key_help_is_a_footer_that_fits() {
        let history = HashMap::new();
        let mut flows = machine();
        flows.push(pipeline());
        let s = screen(&flows, &history, true);
        for width in [80, 120, 160] {
            let rows = lines(&s, width, 24);
            assert!(
                rows[0].starts_with("rpv --top: 4 flows, by rate"),
                "{rows:#?}"
            );
            assert!(!rows[0].contains('…'), "the title whole: {rows:#?}");
            let help = rows.last().unwrap();
            assert!(
                help.starts_with("↑↓ select") && help.ends_with("q quit"),
                "{width}: {rows:#?}"
            );
        }
        // Five rows: the selected flow and how many more, no room for the help.
        let rows = lines(&s, 80, 5);
        assert_eq!(rows.len(), 4, "{rows:#?}");
        assert!(rows
            .iter()
            .any(|r| r.starts_with('>') && r.contains("41388")));
        assert!(rows.iter().any(|r| r.contains("more")), "{rows:#?}");
        // Forty columns: the rate and the flow.
        let rows = lines(&s, 40, 24);
        assert!(rows.iter().all(|r| display_width(r) < 40), "{rows:#?}");
        assert!(rows.iter().any(|r| r.contains("dd.out")), "{rows:#?}");
    }

    #[test]
    fn a_flow_of_lines_shows_lines() {
        let history = HashMap::new();
        let mut flows = machine();
        let mut rpv_l = line(7, 1500.0, "rpv -l -q");
        rpv_l.kind = Kind::Rpv;
        rpv_l.pid = 7777;
        rpv_l.unit = Unit::Lines;
        rpv_l.amount = 120_000;
        flows.push(rpv_l);
        let rows = lines(&screen(&flows, &history, false), 120, 24);
        let row = rows.iter().find(|r| r.contains("7777")).unwrap();
        assert!(
            row.contains("1.50k lines/s") && row.contains("120k lines"),
            "{row}"
        );
        assert!(!row.contains("B/s") && !row.contains("KiB"), "{row}");
        let dd = rows.iter().find(|r| r.contains("41388")).unwrap();
        assert!(dd.contains("MiB/s"), "bytes stay bytes: {dd}");
        assert_eq!(figure(0.0, CountKind::BinaryBytes, false), "0.00 B");
        assert_eq!(figure(1536.0, CountKind::BinaryBytes, true), "1.50KiB/s");
    }

    #[test]
    fn a_copy_shows_both_files_at_any_width() {
        let history = HashMap::new();
        let mut cp = line(9, 2e8, "cp /srv/backup/vm/debian.img /mnt/usb/debian.img");
        cp.pid = 6060;
        cp.file = Some("/srv/backup/vm/debian.img".into());
        cp.to = Some("/mnt/usb/debian.img".into());
        cp.writes = true;
        cp.in_kernel = true;
        let flows = vec![cp];
        let wide = lines(&screen(&flows, &history, false), 200, 24).join("\n");
        assert!(
            wide.contains(
                "cp /srv/backup/vm/debian.img /mnt/usb/debian.img: /srv/backup/vm/debian.img → \
                 /mnt/usb/debian.img (in kernel)"
            ),
            "{wide}"
        );
        // Short of room: the file written first, then the file read.
        let narrow = lines(&screen(&flows, &history, true), 80, 24);
        let row = narrow.iter().find(|r| r.contains("6060")).unwrap();
        assert!(row.contains("/debian.img ← …"), "{row}");
        let rows = lines(&screen(&flows, &history, true), 120, 24);
        let row = rows.iter().find(|r| r.contains("6060")).unwrap();
        assert!(
            row.contains("/mnt/usb/debian.img ← /srv/backup/vm/debian.img cp"),
            "{row}"
        );
    }
}
