//! Fitting rows to the width (pure): a table of columns, each of which says how it gives
//! way when a row does not fit.
//!
//! A column is shown at its natural width (its widest cell, its title, or what it reserves)
//! unless the rows do not fit. Then the columns give way one step at a time, lowest
//! priority first: a step either lets a column's cells be cut (with an ellipsis) down to a
//! width, or leaves the column out. What is left over once the rows fit goes first back to
//! the columns that were cut, then to the columns that grow (bars, a command), all growing
//! columns of a table getting the same width, so the bars of one view line up.
//!
//! A row may end in a span: one text (an error's reason) from a column to the end of the
//! row, instead of the cells there. Spans are fitted too: the columns before a span give
//! way for it, and the span itself is cut only as a last resort.
//!
//! Must not: write anything or know what the cells mean.

use crate::display::{cut_to_width, display_width, printable};

/// The priority of the step that lets an overlong span (an error's reason) be cut to what
/// is left of the row: after every step above 40 columns, before the minimal layouts
/// (priorities from 90), so a reason stays whole as long as the figures do.
pub(crate) const SPAN_CUT: u8 = 89;

/// Columns a cut span needs at least (its ellipsis).
const SPAN_MIN: usize = 1;

/// How a column lines up its cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Align {
    /// Text at the left edge, spaces after it.
    Left,
    /// Text at the right edge (numbers).
    Right,
}

/// One way a column gives way when a row does not fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Give {
    /// Its cells may be cut, with an ellipsis, down to this many columns (its suffix
    /// included).
    Cut(usize),
    /// The column is left out.
    Drop,
}

/// One column of a table: its title, how it lines up, and how it gives way.
#[derive(Debug, Clone)]
pub(crate) struct Column {
    /// Title in the header row (when the table has one).
    pub title: String,
    /// How cells line up.
    pub align: Align,
    /// Text after every non-empty cell (`:` after a name); never cut.
    pub suffix: &'static str,
    /// The column is at least this wide when shown, so a live table does not jump as
    /// figures change (and a growing column never gets narrower than this).
    pub reserve: usize,
    /// The column takes the width left over (shared with the other growing columns).
    pub grow: bool,
    /// How it gives way: (priority, step); lower priorities give way first.
    pub steps: Vec<(u8, Give)>,
    /// (divisor, floor): never wider than the table's width divided by `divisor` (its
    /// suffix included), unless that is below `floor` columns, whatever room is left: a
    /// long name leaves room for the bar.
    pub at_most: Option<(usize, usize)>,
}

impl Column {
    /// A left-aligned column that never gives way.
    pub(crate) fn new(title: &str) -> Column {
        Column {
            title: title.to_string(),
            align: Align::Left,
            suffix: "",
            reserve: 0,
            grow: false,
            steps: Vec::new(),
            at_most: None,
        }
    }

    /// Cells are right-aligned.
    pub(crate) fn right(mut self) -> Column {
        self.align = Align::Right;
        self
    }

    /// At least `columns` wide when shown.
    pub(crate) fn reserve(mut self, columns: usize) -> Column {
        self.reserve = columns;
        self
    }

    /// `suffix` after every non-empty cell.
    pub(crate) fn suffix(mut self, suffix: &'static str) -> Column {
        self.suffix = suffix;
        self
    }

    /// Takes the width left over; never narrower than its reserve.
    pub(crate) fn grow(mut self) -> Column {
        self.grow = true;
        self
    }

    /// At `priority`, its cells may be cut down to `columns`.
    pub(crate) fn cut(mut self, priority: u8, columns: usize) -> Column {
        self.steps.push((priority, Give::Cut(columns)));
        self
    }

    /// At `priority`, the column is left out.
    pub(crate) fn drop_at(mut self, priority: u8) -> Column {
        self.steps.push((priority, Give::Drop));
        self
    }

    /// Never wider than `1/divisor` of the table's width, nor cut below `floor` columns
    /// by this rule (cells cut with an ellipsis).
    pub(crate) fn at_most(mut self, divisor: usize, floor: usize) -> Column {
        self.at_most = Some((divisor.max(1), floor));
        self
    }
}

/// What a row shows in one column.
pub(crate) enum Cell<'a> {
    /// Nothing (spaces).
    Empty,
    /// Text, already safe for the terminal (see [`Cell::text`]).
    Text(String),
    /// Drawn at the width the column gets (a bar): the text must be that wide at most.
    Draw(Box<dyn Fn(usize) -> String + 'a>),
}

impl std::fmt::Debug for Cell<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Cell::Empty => f.write_str("Empty"),
            Cell::Text(t) => write!(f, "Text({t:?})"),
            Cell::Draw(_) => f.write_str("Draw(..)"),
        }
    }
}

impl Cell<'_> {
    /// A text cell; control characters are shown escaped (a newline never starts a row).
    pub(crate) fn text(text: &str) -> Cell<'static> {
        Cell::Text(printable(text).into_owned())
    }

    fn width(&self) -> usize {
        match self {
            Cell::Text(t) => display_width(t),
            Cell::Empty | Cell::Draw(_) => 0,
        }
    }
}

/// One row of a table.
#[derive(Debug)]
pub(crate) struct Row<'a> {
    /// One cell per column (missing cells are empty).
    pub cells: Vec<Cell<'a>>,
    /// From this column on, one text instead of the cells (an error's reason).
    pub span: Option<(usize, String)>,
    /// Stays visible when the terminal is short (a total, the bottleneck).
    pub keep: bool,
    /// A total: a `+N more` row goes above it.
    pub total: bool,
    /// Among rows that are not kept, higher ranks are shown first when the terminal is
    /// short; equal ranks in table order.
    pub rank: u32,
}

impl<'a> Row<'a> {
    /// A row of `cells`.
    pub(crate) fn new(cells: Vec<Cell<'a>>) -> Row<'a> {
        Row {
            cells,
            span: None,
            keep: false,
            total: false,
            rank: 0,
        }
    }

    /// From column `from` on, `text` (escaped for the terminal) instead of cells.
    pub(crate) fn span(mut self, from: usize, text: &str) -> Row<'a> {
        self.span = Some((from, printable(text).into_owned()));
        self
    }

    /// Kept visible when the terminal is short.
    pub(crate) fn keep(mut self, keep: bool) -> Row<'a> {
        self.keep = keep;
        self
    }

    /// A total row (kept, and `+N more` goes above it).
    pub(crate) fn total(mut self) -> Row<'a> {
        self.total = true;
        self.keep = true;
        self
    }

    /// Its rank among the rows that are not kept.
    pub(crate) fn rank(mut self, rank: u32) -> Row<'a> {
        self.rank = rank;
        self
    }

    fn cell(&self, column: usize) -> Option<&Cell<'a>> {
        match self.span {
            Some((from, _)) if column >= from => None,
            _ => self.cells.get(column),
        }
    }
}

/// Rows in columns, with an optional header row of the column titles.
#[derive(Debug, Default)]
pub(crate) struct Table<'a> {
    /// The columns, left to right.
    pub columns: Vec<Column>,
    /// Show a header row with the titles.
    pub header: bool,
    /// The rows.
    pub rows: Vec<Row<'a>>,
}

/// A table being fitted to a width ([`Table::layout`]).
struct Fit<'t> {
    table: &'t Table<'t>,
    width: usize,
    /// Each column's width with nothing cut (capped by its `at_most`).
    natural: Vec<usize>,
    /// The columns still shown.
    shown: Vec<bool>,
    /// Each column's width so far.
    floor: Vec<usize>,
    /// The rows' spans: the column each starts at, and its text's width.
    spans: Vec<(usize, usize)>,
    /// The spans are cut to [`SPAN_MIN`].
    cut_spans: bool,
}

impl<'t> Fit<'t> {
    fn new(table: &'t Table<'t>, width: usize) -> Fit<'t> {
        let mut natural = table.natural();
        for (c, col) in table.columns.iter().enumerate() {
            if let Some((divisor, floor)) = col.at_most {
                natural[c] = natural[c].min((width / divisor).max(floor).max(col.reserve));
            }
        }
        let shown = (table.columns.iter().enumerate())
            .map(|(c, col)| natural[c] > 0 || col.grow)
            .collect();
        let spans = (table.rows.iter())
            .filter_map(|r| r.span.as_ref())
            .map(|(from, text)| (*from, display_width(text)))
            .collect();
        Fit {
            table,
            width,
            floor: natural.clone(),
            natural,
            shown,
            spans,
            cut_spans: false,
        }
    }

    /// The widths of the shown columns before `upto`, and how many they are.
    fn need(&self, upto: usize) -> (usize, usize) {
        let cols: Vec<usize> = (0..upto.min(self.floor.len()))
            .filter(|&c| self.shown[c])
            .collect();
        (cols.iter().map(|&c| self.floor[c]).sum(), cols.len())
    }

    /// The width of a regular row: the shown columns and a blank between two.
    fn regular(&self) -> usize {
        let (sum, count) = self.need(self.floor.len());
        sum + count.saturating_sub(1)
    }

    /// The width of a row whose span of `text` columns starts at column `from`.
    fn span_need(&self, from: usize, text: usize) -> usize {
        let (sum, count) = self.need(from);
        let text = if self.cut_spans {
            text.min(SPAN_MIN)
        } else {
            text
        };
        sum + count + text
    }

    /// The columns give way, step by step, lowest priority first (of equal priorities,
    /// the rightmost column first), until every row fits.
    fn give_way(&mut self) {
        let mut steps: Vec<(u8, usize, Give)> = (self.table.columns.iter().enumerate())
            .flat_map(|(c, col)| col.steps.iter().map(move |&(p, g)| (p, c, g)))
            .collect();
        if !self.spans.is_empty() {
            steps.push((SPAN_CUT, usize::MAX, Give::Cut(SPAN_MIN)));
        }
        steps.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        for (_, c, give) in steps {
            let over_regular = self.regular() > self.width;
            let over_spans: Vec<usize> = (self.spans.iter())
                .filter(|&&(from, text)| self.span_need(from, text) > self.width)
                .map(|&(from, _)| from)
                .collect();
            if !over_regular && over_spans.is_empty() {
                break;
            }
            if c == usize::MAX {
                if !over_spans.is_empty() {
                    self.cut_spans = true;
                }
                continue;
            }
            let helps = over_regular || over_spans.iter().any(|&from| c < from);
            if !helps || !self.shown[c] {
                continue;
            }
            match give {
                Give::Cut(min) => self.floor[c] = self.floor[c].min(min),
                Give::Drop => self.shown[c] = false,
            }
        }
    }

    /// The room left on every row, counting only rows whose span starts after a shown
    /// (with `grow_only`, a shown growing) column.
    fn tightest(&self, grow_only: bool) -> usize {
        let mut spare = self.width.saturating_sub(self.regular());
        for &(from, text) in &self.spans {
            let affected = (0..from.min(self.floor.len()))
                .any(|c| self.shown[c] && (!grow_only || self.table.columns[c].grow));
            if affected {
                let used = self.span_need(from, text);
                spare = spare.min(self.width.saturating_sub(used));
            }
        }
        spare
    }

    /// What is left: first back to the columns that were cut, then to growing columns.
    fn hand_back(&mut self) {
        let n = self.floor.len();
        let mut spare = self.tightest(false);
        for c in 0..n {
            if self.shown[c] && self.floor[c] < self.natural[c] {
                let more = spare.min(self.natural[c] - self.floor[c]);
                self.floor[c] += more;
                spare -= more;
            }
        }
        let growing: Vec<usize> = (0..n)
            .filter(|&c| self.shown[c] && self.table.columns[c].grow)
            .collect();
        if !growing.is_empty() {
            let spare = self.tightest(true);
            let share = spare / growing.len();
            let mut rest = spare % growing.len();
            for &c in &growing {
                self.floor[c] += share + usize::from(rest > 0);
                rest = rest.saturating_sub(1);
            }
        }
    }
}

/// `text` in at most `width` columns: cut with an ellipsis (`…` in a UTF-8 locale, `...`
/// otherwise) when it is wider. Escapes (colours) are kept.
pub(crate) fn cut(text: &str, width: usize, utf8: bool) -> String {
    if display_width(text) <= width {
        return text.to_string();
    }
    let mark = if utf8 { "…" } else { "..." };
    let mark_width = display_width(mark);
    if width < mark_width + 1 {
        return cut_to_width(text, width);
    }
    let mut out = cut_to_width(text, width - mark_width);
    // No blank before the mark (`tar cf…`, not `tar cf …`).
    let tail_at = trailing_escapes(&out);
    let kept = out[..tail_at].trim_end_matches(' ').len();
    out.replace_range(kept..tail_at, "");
    // Keep a colour reset at the end (cut_to_width keeps every escape, so it is there);
    // the mark goes before the trailing escapes.
    let tail_at = trailing_escapes(&out);
    out.insert_str(tail_at, mark);
    out
}

/// Where the escapes at the end of `text` start (its length when there are none).
fn trailing_escapes(text: &str) -> usize {
    let mut end = text.len();
    loop {
        let head = &text[..end];
        let Some(esc) = head.rfind('\x1b') else {
            return end;
        };
        let seq = &head[esc..];
        let is_csi = seq.len() >= 3
            && seq.as_bytes()[1] == b'['
            && seq[2..seq.len() - 1]
                .bytes()
                .all(|b| b.is_ascii_digit() || b == b';')
            && seq.as_bytes()[seq.len() - 1].is_ascii_alphabetic();
        if !is_csi {
            return end;
        }
        end = esc;
    }
}

/// The widths a table's columns get at one terminal width (`None`: left out).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Layout {
    /// Per column.
    pub widths: Vec<Option<usize>>,
    /// The width the rows must fit in.
    pub width: usize,
    /// Ellipsis style.
    pub utf8: bool,
    /// Spans may be cut (the last resort was needed).
    pub cut_spans: bool,
}

impl Table<'_> {
    /// Natural width of each column: its widest cell (with suffix), its title, its reserve.
    fn natural(&self) -> Vec<usize> {
        self.columns
            .iter()
            .enumerate()
            .map(|(c, col)| {
                let suffix = display_width(col.suffix);
                let cells = self
                    .rows
                    .iter()
                    .filter_map(|r| r.cell(c))
                    .map(|cell| match cell.width() {
                        0 => 0,
                        w => w + suffix,
                    })
                    .max()
                    .unwrap_or(0);
                let title = if self.header {
                    display_width(&col.title)
                } else {
                    0
                };
                cells.max(title).max(col.reserve)
            })
            .collect()
    }

    /// Fits the table's columns to `width` columns: the columns give way in their steps'
    /// order (lowest priority first) until every row fits, then what is left goes back to
    /// the columns that were cut, then to the growing ones.
    pub(crate) fn layout(&self, width: usize, utf8: bool) -> Layout {
        let mut fit = Fit::new(self, width);
        fit.give_way();
        fit.hand_back();
        let n = self.columns.len();
        Layout {
            widths: (0..n)
                .map(|c| fit.shown[c].then_some(fit.floor[c]))
                .collect(),
            width,
            utf8,
            cut_spans: fit.cut_spans,
        }
    }

    /// The header row, at `layout`.
    pub(crate) fn header_line(&self, layout: &Layout) -> String {
        let cells: Vec<Cell<'_>> = self
            .columns
            .iter()
            .map(|c| Cell::Text(c.title.clone()))
            .collect();
        let row = Row::new(cells);
        self.line(&row, layout, false)
    }

    /// Row `row` at `layout`.
    pub(crate) fn row_line(&self, row: &Row<'_>, layout: &Layout) -> String {
        self.line(row, layout, true)
    }

    fn line(&self, row: &Row<'_>, layout: &Layout, suffixes: bool) -> String {
        let mut out = String::new();
        let mut first = true;
        for (c, width) in layout.widths.iter().enumerate() {
            let Some(width) = *width else { continue };
            if matches!(row.span, Some((from, _)) if c >= from) {
                break;
            }
            let cell = row.cells.get(c).unwrap_or(&Cell::Empty);
            if !first {
                out.push(' ');
            }
            first = false;
            let col = &self.columns[c];
            let suffix = if suffixes { col.suffix } else { "" };
            out.push_str(&cell_text(cell, width, col.align, suffix, layout.utf8));
        }
        if let Some((_, text)) = &row.span {
            if !first {
                out.push(' ');
            }
            let used = display_width(&out);
            out.push_str(&cut(text, layout.width.saturating_sub(used), layout.utf8));
        }
        let out = out.trim_end();
        cut(out, layout.width, layout.utf8)
    }
}

/// One cell, exactly `width` columns wide.
fn cell_text(cell: &Cell<'_>, width: usize, align: Align, suffix: &str, utf8: bool) -> String {
    let text = match cell {
        Cell::Empty => String::new(),
        Cell::Text(t) if t.is_empty() => String::new(),
        Cell::Text(t) => {
            let room = width.saturating_sub(display_width(suffix));
            format!("{}{suffix}", cut(t, room, utf8))
        }
        Cell::Draw(draw) => cut(&draw(width), width, utf8),
    };
    let pad = width.saturating_sub(display_width(&text));
    match align {
        Align::Left => format!("{text}{}", " ".repeat(pad)),
        Align::Right => format!("{}{text}", " ".repeat(pad)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names_table<'a>(names: &[&str]) -> Table<'a> {
        Table {
            columns: vec![
                Column::new("NAME").cut(20, 6),
                Column::new("RATE").right().reserve(9),
                Column::new("BAR").grow().reserve(10).drop_at(10),
                Column::new("PCT").right(),
            ],
            header: false,
            rows: names
                .iter()
                .map(|n| {
                    Row::new(vec![
                        Cell::text(n),
                        Cell::text("1.00MiB/s"),
                        Cell::Draw(Box::new(|w| "=".repeat(w))),
                        Cell::text("42%"),
                    ])
                })
                .collect(),
        }
    }

    #[test]
    fn cutting_marks_what_is_gone() {
        assert_eq!(cut("abcdef", 6, true), "abcdef");
        assert_eq!(cut("abcdef", 5, true), "abcd…");
        assert_eq!(cut("abcdef", 5, false), "ab...");
        assert_eq!(cut("abcdef", 2, false), "ab");
        assert_eq!(cut("日本語のコマンド", 7, true), "日本語…");
        assert_eq!(cut("\x1b[31mabcdef\x1b[0m", 4, true), "\x1b[31mabc…\x1b[0m");
        for w in 0..8 {
            assert!(display_width(&cut("日本語のコマンド", w, true)) <= w);
        }
    }

    #[test]
    fn bars_take_what_is_left_and_share_it() {
        let table = names_table(&["a", "bbbb"]);
        let layout = table.layout(40, true);
        let lines: Vec<String> = table
            .rows
            .iter()
            .map(|r| table.row_line(r, &layout))
            .collect();
        assert_eq!(lines[0], format!("a    1.00MiB/s {} 42%", "=".repeat(21)));
        assert_eq!(lines[1], format!("bbbb 1.00MiB/s {} 42%", "=".repeat(21)));
        assert!(lines.iter().all(|l| display_width(l) == 40));
    }

    #[test]
    fn the_bar_goes_before_a_name_is_cut_to_its_least() {
        let long = "a-very-long-file-name-indeed.img";
        let table = names_table(&[long, "b"]);
        // Wide: whole names and a bar.
        let layout = table.layout(80, true);
        let line = table.row_line(&table.rows[0], &layout);
        assert!(line.starts_with(long), "{line}");
        assert!(line.contains('='), "{line}");
        // Narrow: the bar goes first, then the name is cut (with an ellipsis) to what is left.
        let layout = table.layout(40, true);
        let line = table.row_line(&table.rows[0], &layout);
        assert!(!line.contains('='), "{line}");
        assert_eq!(line, "a-very-long-file-name-ind… 1.00MiB/s 42%");
        // Narrower still: the name is cut, the figures stay whole.
        let layout = table.layout(20, true);
        let line = table.row_line(&table.rows[0], &layout);
        assert_eq!(line, "a-ver… 1.00MiB/s 42%");
        assert!(display_width(&line) <= 20);
    }

    #[test]
    fn spans_line_up_with_the_names_and_are_cut_last() {
        let mut table = names_table(&["first", "second"]);
        table
            .rows
            .push(Row::new(vec![Cell::text("gone")]).span(1, "No such file or directory"));
        let layout = table.layout(60, true);
        let line = table.row_line(&table.rows[2], &layout);
        assert_eq!(line, "gone   No such file or directory");
        // The name column gives way for the reason before the reason is cut.
        let mut table = names_table(&["x"]);
        table.rows.push(
            Row::new(vec![Cell::text("a-long-name-of-a-missing-file")])
                .span(1, "No such file or directory"),
        );
        let layout = table.layout(36, true);
        let line = table.row_line(&table.rows[1], &layout);
        assert_eq!(line, "a-long-na… No such file or directory");
        assert!(!layout.cut_spans);
        // Only as a last resort is the reason cut.
        let layout = table.layout(20, true);
        let line = table.row_line(&table.rows[1], &layout);
        assert!(layout.cut_spans);
        assert!(display_width(&line) <= 20, "{line}");
        assert!(line.ends_with('…'), "{line}");
    }

    #[test]
    fn headers_suffixes_and_alignment() {
        let table = Table {
            columns: vec![
                Column::new("PID").right().reserve(5),
                Column::new("NAME").suffix(":").right(),
                Column::new("").reserve(10),
            ],
            header: true,
            rows: vec![
                Row::new(vec![
                    Cell::text("42"),
                    Cell::text("ab"),
                    Cell::text("bottleneck"),
                ]),
                Row::new(vec![Cell::text("7"), Cell::text("a\nb"), Cell::Empty]),
            ],
        };
        let layout = table.layout(80, false);
        assert_eq!(table.header_line(&layout), "  PID  NAME");
        assert_eq!(
            table.row_line(&table.rows[0], &layout),
            "   42   ab: bottleneck"
        );
        // A newline in a name is shown escaped: the row stays one row.
        assert_eq!(table.row_line(&table.rows[1], &layout), "    7 a\\nb:");
    }

    #[test]
    fn no_row_is_ever_wider_than_the_width() {
        let long = "x".repeat(300);
        let mut table = names_table(&[&long, "日本語のコマンド", ""]);
        table
            .rows
            .push(Row::new(vec![Cell::text(&long)]).span(1, &long));
        for width in 0..120 {
            for utf8 in [true, false] {
                let layout = table.layout(width, utf8);
                for row in &table.rows {
                    let line = table.row_line(row, &layout);
                    assert!(display_width(&line) <= width, "{width}: {line:?}");
                }
            }
        }
    }
}
