//! A whole view (pure): its tables and lines, fitted to the terminal's width and height.
//!
//! The rows a view draws never use the terminal's last column: a row that fills it leaves
//! the cursor waiting to wrap, and the next character (the `^C` the terminal echoes on
//! Ctrl-C) would start a new line and push every row below it down. When the view has more
//! rows than the terminal (less one row, for the cursor), the header rows, the lines, the
//! rows marked `keep` (a total, the bottleneck) stay; the other rows are shown by rank
//! while there is room, and each table that lost rows says so in a `+N more` row (above
//! its total, or at its end).

use super::fit::{cut, Table};
use crate::display::printable;

/// Columns a row may use on a terminal `width` columns wide: never the last one.
pub(crate) fn usable_width(width: usize) -> usize {
    width.saturating_sub(1).max(1)
}

/// Rows a view may use on a terminal `height` rows high: one is left for the cursor.
pub(crate) fn usable_height(height: usize) -> usize {
    height.saturating_sub(1).max(1)
}

/// One part of a view, top to bottom.
#[derive(Debug)]
pub(crate) enum Block<'a> {
    /// Rows in columns.
    Table(Table<'a>),
    /// A line of its own (a transfer's progress line, advice): always shown, cut with an
    /// ellipsis when wider than the terminal.
    Line(String),
}

impl Block<'_> {
    /// A line of text a file or process may have chosen: control characters are escaped.
    pub(crate) fn text(text: &str) -> Block<'static> {
        Block::Line(printable(text).into_owned())
    }

    /// A line already safe for the terminal (rendered by the `-F` renderer, which may
    /// colour it): drawn as it is.
    pub(crate) fn rendered(line: String) -> Block<'static> {
        Block::Line(line)
    }
}

/// Everything one multi-row view shows.
#[derive(Debug, Default)]
pub(crate) struct View<'a> {
    /// Tables and lines, top to bottom.
    pub blocks: Vec<Block<'a>>,
    /// The locale is UTF-8 (the ellipsis is `…`, else `...`).
    pub utf8: bool,
}

/// One row the view could show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
    Header(usize),
    Row(usize, usize),
    Line(usize),
}

impl View<'_> {
    /// The rows to draw on a terminal of `width` × `height`: at most `width − 1` columns
    /// each, at most `height − 1` of them.
    pub(crate) fn lines(&self, width: usize, height: usize) -> Vec<String> {
        let width = usable_width(width);
        let room = usable_height(height);
        let units = self.units();
        let chosen = self.choose(&units, room);
        let elided: Vec<usize> = (0..self.blocks.len())
            .map(|b| self.elided(&units, &chosen, b))
            .collect();
        let layouts: Vec<_> = self
            .blocks
            .iter()
            .map(|block| match block {
                Block::Table(t) => Some(t.layout(width, self.utf8)),
                Block::Line(_) => None,
            })
            .collect();
        let last_shown = self.last_shown(&units, &chosen);
        let mut out = Vec::with_capacity(room);
        let mut said = vec![false; self.blocks.len()];
        for (i, &unit) in units.iter().enumerate() {
            match unit {
                Unit::Header(b) if chosen[i] => {
                    let (Block::Table(t), Some(layout)) = (&self.blocks[b], &layouts[b]) else {
                        continue;
                    };
                    out.push(t.header_line(layout));
                }
                Unit::Row(b, r) => {
                    let (Block::Table(t), Some(layout)) = (&self.blocks[b], &layouts[b]) else {
                        continue;
                    };
                    let row = &t.rows[r];
                    if row.total && chosen[i] && elided[b] > 0 && !said[b] {
                        said[b] = true;
                        out.push(more(elided[b], width, self.utf8));
                    }
                    if chosen[i] {
                        out.push(t.row_line(row, layout));
                    }
                }
                Unit::Line(b) if chosen[i] => {
                    let Block::Line(text) = &self.blocks[b] else {
                        continue;
                    };
                    out.push(cut(text, width, self.utf8));
                }
                _ => {}
            }
            if let Unit::Header(b) | Unit::Row(b, _) = unit {
                if last_shown[b] == Some(i) && elided[b] > 0 && !said[b] {
                    said[b] = true;
                    out.push(more(elided[b], width, self.utf8));
                }
            }
        }
        // A table none of whose rows could be shown.
        for b in 0..self.blocks.len() {
            if elided[b] > 0 && !said[b] && out.len() < room {
                out.push(more(elided[b], width, self.utf8));
            }
        }
        out
    }

    /// Every row the view could show, top to bottom.
    fn units(&self) -> Vec<Unit> {
        let mut units = Vec::new();
        for (b, block) in self.blocks.iter().enumerate() {
            match block {
                Block::Table(t) => {
                    if t.header {
                        units.push(Unit::Header(b));
                    }
                    units.extend((0..t.rows.len()).map(|r| Unit::Row(b, r)));
                }
                Block::Line(_) => units.push(Unit::Line(b)),
            }
        }
        units
    }

    /// Where each table's last shown unit is (its `+N more` goes after it, unless the
    /// table has a total row shown).
    fn last_shown(&self, units: &[Unit], chosen: &[bool]) -> Vec<Option<usize>> {
        let mut last_shown: Vec<Option<usize>> = vec![None; self.blocks.len()];
        for (i, &unit) in units.iter().enumerate() {
            if let (Unit::Header(b) | Unit::Row(b, _), true) = (unit, chosen[i]) {
                last_shown[b] = Some(i);
            }
        }
        last_shown
    }

    /// Rows of table `b` that are not shown.
    fn elided(&self, units: &[Unit], chosen: &[bool], b: usize) -> usize {
        units
            .iter()
            .zip(chosen)
            .filter(|(u, c)| !**c && matches!(u, Unit::Row(bb, _) if *bb == b))
            .count()
    }

    /// Kept rows (each table's bottleneck, its total) come first, then headers and lines,
    /// then the other rows by rank: several tables in a short terminal each keep their
    /// bottleneck row before any header.
    fn rank(&self, unit: Unit) -> u32 {
        match unit {
            Unit::Header(_) | Unit::Line(_) => u32::MAX - 1,
            Unit::Row(b, r) => {
                let Block::Table(t) = &self.blocks[b] else {
                    unreachable!()
                };
                let row = &t.rows[r];
                if row.keep {
                    u32::MAX
                } else {
                    row.rank.min(u32::MAX - 2)
                }
            }
        }
    }

    /// Which units are shown in `room` rows: all when they fit; else by rank (kept rows
    /// first), as many as leave room for one `+N more` row per table that loses rows.
    fn choose(&self, units: &[Unit], room: usize) -> Vec<bool> {
        if units.len() <= room {
            return vec![true; units.len()];
        }
        let mut order: Vec<usize> = (0..units.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(self.rank(units[i])));
        for k in (0..=room.min(units.len())).rev() {
            let mut chosen = vec![false; units.len()];
            for &i in &order[..k] {
                chosen[i] = true;
            }
            let losing = (0..self.blocks.len())
                .filter(|&b| self.elided(units, &chosen, b) > 0)
                .count();
            if k + losing <= room || k == 0 {
                return chosen;
            }
        }
        vec![false; units.len()]
    }
}

/// The row that stands for `count` rows not shown.
fn more(count: usize, width: usize, utf8: bool) -> String {
    cut(&format!("+{count} more"), width, utf8)
}

#[cfg(test)]
mod tests {
    use super::super::fit::{Cell, Column, Row};
    use super::*;
    use crate::display::display_width;

    fn table(rows: usize, marked: Option<usize>) -> Table<'static> {
        Table {
            columns: vec![Column::new("NAME").cut(20, 4), Column::new("").reserve(10)],
            header: true,
            rows: (0..rows)
                .map(|i| {
                    let mark = if Some(i) == marked { "bottleneck" } else { "" };
                    Row::new(vec![Cell::text(&format!("row{i}")), Cell::text(mark)])
                        .keep(Some(i) == marked)
                })
                .collect(),
        }
    }

    #[test]
    fn everything_fits_on_a_tall_terminal() {
        let view = View {
            blocks: vec![Block::Table(table(3, Some(1))), Block::text("advice")],
            utf8: true,
        };
        let lines = view.lines(80, 40);
        assert_eq!(lines, ["NAME", "row0", "row1 bottleneck", "row2", "advice"]);
    }

    #[test]
    fn a_short_terminal_keeps_the_header_the_marked_row_and_says_how_many_are_gone() {
        let view = View {
            blocks: vec![Block::Table(table(7, Some(5)))],
            utf8: true,
        };
        // 5 rows: 4 usable, one of them `+N more`.
        let lines = view.lines(80, 5);
        assert_eq!(lines, ["NAME", "row0", "row5 bottleneck", "+5 more"]);
        // 3 rows: the marked row outranks the header.
        let lines = view.lines(80, 3);
        assert_eq!(lines, ["row5 bottleneck", "+6 more"]);
    }

    #[test]
    fn two_tables_in_five_rows_each_keep_their_marked_row() {
        // D11: two pipelines of three stages and an advice line each, 5 rows.
        let view = View {
            blocks: vec![
                Block::Table(table(3, Some(1))),
                Block::text("advice: one"),
                Block::Table(table(3, Some(2))),
                Block::text("advice: two"),
            ],
            utf8: true,
        };
        let lines = view.lines(80, 5);
        assert_eq!(
            lines,
            ["row1 bottleneck", "+2 more", "row2 bottleneck", "+2 more"]
        );
        let lines = view.lines(80, 8);
        assert_eq!(
            lines,
            [
                "NAME",
                "row1 bottleneck",
                "+2 more",
                "advice: one",
                "NAME",
                "row2 bottleneck",
                "+2 more"
            ]
        );
    }

    #[test]
    fn more_goes_above_the_total() {
        let mut t = Table {
            columns: vec![Column::new("")],
            header: false,
            rows: (0..10)
                .map(|i| Row::new(vec![Cell::text(&format!("in{i}"))]).rank(i))
                .collect(),
        };
        t.rows.push(Row::new(vec![Cell::text("total")]).total());
        let view = View {
            blocks: vec![Block::Table(t), Block::rendered("line".into())],
            utf8: false,
        };
        let lines = view.lines(40, 6);
        // Higher ranks first (the latest inputs), in table order; the total and the line stay.
        assert_eq!(lines, ["in8", "in9", "+8 more", "total", "line"]);
    }

    #[test]
    fn two_tables_each_say_what_they_lost() {
        let view = View {
            blocks: vec![
                Block::Table(table(4, Some(0))),
                Block::Table(table(4, Some(3))),
            ],
            utf8: true,
        };
        let lines = view.lines(80, 9);
        // Ranks tie: the earlier table's rows come first; the second keeps its header and
        // its marked row.
        assert_eq!(
            lines,
            [
                "NAME",
                "row0 bottleneck",
                "row1",
                "row2",
                "row3",
                "NAME",
                "row3 bottleneck",
                "+3 more"
            ]
        );
        assert!(lines.iter().all(|l| display_width(l) < 80));
    }

    #[test]
    fn lines_are_cut_and_escaped() {
        let view = View {
            blocks: vec![Block::text(&format!("{}\x1b]0;title\x07", "a".repeat(50)))],
            utf8: true,
        };
        let lines = view.lines(40, 10);
        assert_eq!(lines[0], format!("{}…", "a".repeat(38)));
        let lines = view.lines(100, 10);
        assert_eq!(lines[0], format!("{}\\e]0;title\\x07", "a".repeat(50)));
    }
}
