//! The multi-row sink: one row per meter, redrawn in place — the descriptors of `-d`, or
//! with `--each` one row per input, one per `--tee` output and a total row below.
//!
//! Owns: what each row shows. With `--each` and the default format the rows are a table
//! (`each_table`): the names in one column (cut with an ellipsis when the terminal is
//! narrow), each figure in a column of its own, one bar width for all rows, an input that
//! could not be read showing its reason in line with the others. With `-F` (or `-d`) each
//! row is the format rendered at the width. The screen layer ([`crate::screen`]) fits,
//! chooses and redraws the rows. Must not: print messages.

use super::{render_row, DisplayConfig, Formats, Reading, Sink, Snapshot};
use crate::display::{self, Format, Frame, Segment};
use crate::meter::{Phase, Role};
use crate::screen::{self, Block, Cell, Column, Row, Table, View};
use crate::term::Term;

/// Rows of watched descriptors, or of inputs and outputs.
#[derive(Debug, Default)]
pub(crate) struct Multi {
    formats: Formats,
}

impl Sink for Multi {
    fn update(&mut self, snapshot: &Snapshot<'_>, config: &DisplayConfig, term: &mut Term) {
        if !config.visible() {
            return;
        }
        let table = if config.each && config.format.is_none() {
            each_table(config, snapshot)
        } else {
            self.rendered_table(config, snapshot)
        };
        let view = View {
            blocks: vec![Block::Table(table)],
            utf8: config.style.utf8,
        };
        let rows = view.lines(config.width, config.height);
        term.draw_screen(&rows, config.width);
    }

    fn finish(&mut self, _snapshot: &Snapshot<'_>, _config: &DisplayConfig, term: &mut Term) {
        term.finish_screen();
    }

    fn reconfigure(&mut self, _config: &DisplayConfig) {
        self.formats.clear();
    }
}

impl Multi {
    /// One column: each row the meter's format rendered at the width (`-d`, `-F`).
    fn rendered_table(
        &mut self,
        config: &DisplayConfig,
        snapshot: &Snapshot<'_>,
    ) -> Table<'static> {
        let width = screen::usable_width(config.width);
        let rows = snapshot
            .readings
            .iter()
            .map(|r| match &r.meter.note {
                Some(note) => {
                    let name = config.label(r.meter).unwrap_or_default();
                    Row::new(vec![Cell::text(&format!(
                        "{name}: {}",
                        reason(note, &name)
                    ))])
                }
                None => {
                    let line = render_row(&mut self.formats, config, r, snapshot, width);
                    Row::new(vec![Cell::Draw(Box::new(move |_| line.clone()))])
                }
            })
            .zip(snapshot.readings.iter())
            .map(|(row, r)| ranked(row, r))
            .collect();
        Table {
            columns: vec![Column::new("").grow()],
            header: false,
            rows,
        }
    }
}

/// Where a row stands when the terminal is short: the total is kept; the `--tee` outputs,
/// the input being read and inputs that failed come next; then the inputs read to their
/// end, the latest first.
fn ranked<'a>(row: Row<'a>, r: &Reading<'_>) -> Row<'a> {
    const ACTIVE: u32 = 3_000_000_000;
    const FAILED: u32 = 2_000_000_000;
    match r.meter.role {
        Role::Transfer if matches!(r.meter.label, crate::meter::Label::None) => row.total(),
        Role::Output(i) => row.rank(ACTIVE + i as u32),
        Role::Input(i) if r.meter.note.is_some() => row.rank(FAILED + i as u32),
        Role::Input(_) if r.meter.phase != Phase::Ended => row.rank(ACTIVE),
        Role::Input(i) => row.rank(i.min(FAILED as usize - 1) as u32),
        _ => row,
    }
}

/// An error's reason without the name the row already shows: `No such file or directory`
/// for `failed to read file: NAME: No such file or directory`.
fn reason(note: &str, name: &str) -> String {
    let mut text = note.replacen(&format!("{name}: "), "", 1);
    if let Some(head) = text.strip_suffix(&format!(": {name}")) {
        text = head.to_string();
    }
    text.strip_prefix("failed to read file: ")
        .map_or(text.clone(), str::to_string)
}

/// A column of the `--each` table: which part of the default format it shows, how it is
/// lined up and how it gives way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Name,
    Bytes,
    Buffer,
    Timer,
    Rate,
    Average,
    Bar,
    Percent,
    Eta,
    FinEta,
    Last,
}

/// The columns, left to right, in the default format's order.
const PARTS: [Part; 11] = [
    Part::Name,
    Part::Bytes,
    Part::Buffer,
    Part::Timer,
    Part::Rate,
    Part::Average,
    Part::Bar,
    Part::Percent,
    Part::Eta,
    Part::FinEta,
    Part::Last,
];

impl Part {
    /// The parts a segment of the default format shows.
    fn of(segment: &Segment) -> &'static [Part] {
        match segment {
            Segment::Name { .. } => &[Part::Name],
            Segment::Bytes => &[Part::Bytes],
            Segment::BufferPercent => &[Part::Buffer],
            Segment::Timer => &[Part::Timer],
            Segment::Rate => &[Part::Rate],
            Segment::AverageRate => &[Part::Average],
            Segment::Progress { .. } => &[Part::Bar, Part::Percent],
            Segment::Eta => &[Part::Eta],
            Segment::FinEta => &[Part::FinEta],
            Segment::LastWritten { .. } => &[Part::Last],
            _ => &[],
        }
    }

    /// How the column lines up and gives way. The names take at most a third of the
    /// width (16 columns at least), so a long name leaves the bar its room. The order
    /// things go in, as the terminal narrows: `%A`, `%T`, `%a`, `%I`; the bar; the elapsed
    /// time, then the ETA; the name is cut (to 16, then 8 columns) along the way. The amount, the rate and the
    /// percentage stay down to 40 columns; below that the minimal layout drops the rate,
    /// then the amount, and cuts the name to 4 columns: `name…: 42%`.
    fn column(self) -> Column {
        match self {
            Part::Name => Column::new("")
                .right()
                .suffix(":")
                .reserve(10)
                .at_most(3, 16)
                .cut(25, 16)
                .cut(60, 8)
                .cut(92, 4),
            Part::Bytes => Column::new("").right().drop_at(91),
            Part::Buffer => Column::new("").drop_at(4),
            Part::Timer => Column::new("").drop_at(50),
            Part::Rate => Column::new("").right().drop_at(90),
            Part::Average => Column::new("").right().drop_at(5),
            Part::Bar => Column::new("").grow().reserve(10).drop_at(30),
            Part::Percent => Column::new("").right().reserve(4),
            Part::Eta => Column::new("").drop_at(55),
            Part::FinEta => Column::new("").drop_at(6),
            Part::Last => Column::new("").drop_at(3),
        }
    }
}

/// The `--each` rows as a table (the default format, split into its parts).
fn each_table<'a>(config: &DisplayConfig, snapshot: &'a Snapshot<'a>) -> Table<'a> {
    // Which parts any row shows, in the default format's order.
    let formats: Vec<Format> = snapshot
        .readings
        .iter()
        .map(|r| Format::parse(&config.format_text(r.meter)))
        .collect();
    let present: Vec<Part> = PARTS
        .iter()
        .copied()
        .filter(|p| {
            *p == Part::Name
                || formats
                    .iter()
                    .any(|f| f.segments.iter().any(|s| Part::of(s).contains(p)))
        })
        .collect();
    let rows = snapshot
        .readings
        .iter()
        .zip(&formats)
        .map(|(r, format)| ranked(each_row(config, snapshot, r, format, &present), r))
        .collect();
    Table {
        columns: present.iter().map(|p| p.column()).collect(),
        header: false,
        rows: fold_finished(rows, &snapshot.readings, config.height),
    }
}

/// When the rows do not fit the terminal, the earliest inputs read to their end give way
/// to one row where they were, at the top, saying how many they were: `28 earlier files,
/// all done` (a `+28 more` under the rows read as inputs still to come). What still does
/// not fit is left to the screen layer.
fn fold_finished<'a>(rows: Vec<Row<'a>>, readings: &[Reading<'_>], height: usize) -> Vec<Row<'a>> {
    let room = screen::usable_height(height);
    if rows.len() <= room {
        return rows;
    }
    // (One row more than the excess: the one that says so.)
    let excess = rows.len() - room + 1;
    let done: Vec<usize> = readings
        .iter()
        .enumerate()
        .filter(|(_, r)| {
            matches!(r.meter.role, Role::Input(_))
                && r.meter.phase == Phase::Ended
                && r.meter.note.is_none()
        })
        .map(|(i, _)| i)
        .take(excess)
        .collect();
    if done.len() < 2 {
        return rows;
    }
    let text = format!("{} earlier files, all done", done.len());
    let mut out = Vec::with_capacity(rows.len() - done.len() + 1);
    for (i, row) in rows.into_iter().enumerate() {
        if i == done[0] {
            out.push(Row::new(Vec::new()).span(0, &text).keep(true));
        }
        if !done.contains(&i) {
            out.push(row);
        }
    }
    out
}

/// One `--each` row: the name, then each part of its format in its column (or the reason
/// it failed, from the second column on).
fn each_row<'a>(
    config: &DisplayConfig,
    snapshot: &Snapshot<'_>,
    r: &'a Reading<'a>,
    format: &Format,
    present: &[Part],
) -> Row<'a> {
    let name = config.label(r.meter).unwrap_or_default();
    if let Some(note) = &r.meter.note {
        return Row::new(vec![Cell::text(&name)]).span(1, &reason(note, &name));
    }
    let mut frame = config.frame(r, None, snapshot);
    if matches!(r.meter.role, Role::Input(_)) && r.meter.phase == Phase::Ended {
        // Read to its end: all of it is done, whether or not its size was known (an empty
        // file of size 0 included).
        frame.size = frame.transferred.max(1);
        frame.percentage = 100.0;
    }
    if frame.size > 0 && frame.transferred >= frame.size {
        // All of it has moved (the input's end may not be seen yet): no `ETA 0:00:00`,
        // the ETA is blank as on a finished line.
        frame.final_update = true;
    }
    let cells = present
        .iter()
        .map(|&part| {
            if part == Part::Name {
                return Cell::text(&name);
            }
            let Some(segment) = format.segments.iter().find(|s| Part::of(s).contains(&part)) else {
                return Cell::Empty;
            };
            part_cell(part, segment, &frame)
        })
        .collect();
    Row::new(cells)
}

/// The cell of `part` of `segment` for one row.
fn part_cell<'a>(part: Part, segment: &Segment, frame: &Frame<'a>) -> Cell<'a> {
    let one = |segment: Segment| {
        let format = Format {
            segments: vec![segment],
        };
        let text = display::render(&format, frame, 1000);
        // Blanks around a figure are alignment (the ETA is blanked at the end); the last
        // bytes written (`%A`) are shown as they are.
        if part == Part::Last {
            text
        } else {
            text.trim().to_string()
        }
    };
    match part {
        Part::Bar => {
            let frame = frame.clone();
            Cell::Draw(Box::new(move |width| {
                let inner = width.saturating_sub(2);
                let format = Format {
                    segments: vec![Segment::BarOnly {
                        style: None,
                        width: Some(inner.max(1)),
                    }],
                };
                format!("[{}]", display::render(&format, &frame, inner))
            }))
        }
        Part::Percent => Cell::Text(one(Segment::ProgressAmount)),
        _ => Cell::Text(one(segment.clone())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::display::DisplaySwitches;
    use crate::meter::{Label, MeterState};
    use crate::stats::{RateTracker, Rates};

    /// The text of each cell of `row` (bars drawn 20 wide).
    fn texts(row: &Row<'_>) -> Vec<String> {
        row.cells
            .iter()
            .map(|c| match c {
                Cell::Empty => String::new(),
                Cell::Text(t) => t.clone(),
                Cell::Draw(draw) => draw(20),
            })
            .collect()
    }

    #[test]
    fn a_row_read_to_its_size_shows_no_eta() {
        let tracker = RateTracker::new(30);
        let config = DisplayConfig {
            each: true,
            switches: DisplaySwitches {
                progress: true,
                timer: true,
                eta: true,
                rate: true,
                bytes: true,
                ..DisplaySwitches::default()
            },
            ..DisplayConfig::default()
        };
        let snapshot = Snapshot {
            readings: Vec::new(),
            final_update: false,
            clock: std::cell::OnceCell::new(),
        };
        for (amount, eta) in [(500, true), (1000, false)] {
            // Still running (its end not seen yet): at its size, no ETA.
            let m = MeterState {
                role: Role::Input(0),
                label: Label::Text("f01.bin".into()),
                amount,
                moved: amount,
                size: 1000,
                started_ns: Some(0),
                ..MeterState::default()
            };
            let r = Reading {
                meter: &m,
                elapsed: 1.0,
                rates: Rates {
                    rate: 1000.0,
                    avg_rate: 1000.0,
                    percentage: amount as f64 / 10.0,
                    max_rate: 1000.0,
                },
                tracker: &tracker,
                final_update: false,
                stalled_for: None,
            };
            let format = Format::parse(&config.format_text(&m));
            let cells = texts(&each_row(&config, &snapshot, &r, &format, &PARTS));
            assert_eq!(
                cells.iter().any(|c| c.starts_with("ETA ")),
                eta,
                "{amount}: {cells:?}"
            );
        }
    }

    #[test]
    fn reasons_do_not_repeat_the_name() {
        assert_eq!(
            reason(
                "failed to read file: gone: No such file or directory",
                "gone"
            ),
            "No such file or directory"
        );
        assert_eq!(
            reason("input file is output file: x", "x"),
            "input file is output file"
        );
        assert_eq!(
            reason("d: read failed: Is a directory", "d"),
            "read failed: Is a directory"
        );
        assert_eq!(reason("reader gone", "--tee f"), "reader gone");
    }
}
