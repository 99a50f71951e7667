//! The pipeline view as text (pure).
//!
//! Owns: the table of stages (its columns, what each stage shows in them, how each column
//! gives way on a narrow terminal) and the summary line. Must not: write anything; the
//! screen layer ([`crate::screen`]) fits, chooses and draws the rows.
//!
//! ```text
//!     PID COMMAND      CPU STATE              IN/s     OUT/s PIPE
//!   13325 cat big.bin   3% wait output    203MiB/s  203MiB/s [########]
//!   13326 gzip -9      99% running        203MiB/s 68.1MiB/s [#       ] bottleneck
//!   13327 cat           1% wait input    68.1MiB/s 68.1MiB/s
//! ```
//!
//! The command column takes the width the others leave. As the terminal narrows, a long
//! command is cut to 24 columns, then the pipe bar goes, then the command's arguments are
//! cut (with an ellipsis), then the PID,
//! the CPU and the state columns go; the rates (with their units) and the marker stay whole
//! down to 40 columns. Below that (the minimal layout) the input rate goes, then the output
//! rate, and the command is cut to a few columns: `gzip… bottleneck`.
//!
//! A new column is one entry in [`columns`]: its title, how it lines up, its priority, and
//! what a stage shows in it.

use super::model::StageView;
use super::model::{Part, Split};
use super::watch::{Report, Share};
use crate::screen::{Cell, Column, Row, Table};
use crate::units::{describe_amount, CountKind};

/// Cells of the pipe bar.
const BAR_CELLS: u64 = 8;
/// Cells of the time bar.
const TIME_CELLS: usize = 8;
/// The marker of the row holding the pipeline back.
pub(crate) const MARK: &str = "bottleneck";

/// What a stage shows in one column.
type CellOf = fn(&StageView, CountKind) -> Cell<'static>;

/// The columns of the table, left to right, and what a stage shows in each. Priorities
/// (lower gives way first): 5 a command longer than 24 columns is cut to 24; 8 the bytes
/// that came through the stage since the watch began; 10 the pipe bar; 20 the command's
/// arguments (to 12 columns); 40 the PID; 45 the CPU; 55 the state; 57 the time bar (the
/// view's own figure, so it outlives the state, which the bar's marks also tell); 60 the
/// command to 8 columns; 90 and up, below 40 columns, the minimal layout.
pub(crate) fn columns() -> Vec<(Column, CellOf)> {
    vec![
        (Column::new("PID").right().reserve(7).drop_at(40), |s, _| {
            Cell::Text(s.pid.to_string())
        }),
        (
            Column::new("COMMAND")
                .grow()
                .reserve(8)
                .cut(5, 24)
                .cut(20, 12)
                .cut(60, 8)
                .cut(93, 5),
            |s, _| Cell::text(&s.command),
        ),
        (Column::new("CPU").right().reserve(4).drop_at(45), |s, _| {
            Cell::Text(
                s.cpu
                    .map_or_else(|| "-".into(), |c| format!("{:.0}%", c.max(0.0))),
            )
        }),
        (Column::new("STATE").reserve(13).drop_at(55), |s, _| {
            Cell::Text(s.activity.label().into())
        }),
        (
            Column::new("IN/s").right().reserve(9).drop_at(90),
            |s, kind| Cell::Text(rate(s.rate_in, kind)),
        ),
        (
            Column::new("OUT/s").right().reserve(9).drop_at(91),
            |s, kind| Cell::Text(rate(s.rate_out, kind)),
        ),
        (
            Column::new("BYTES").right().reserve(9).drop_at(8),
            |s, kind| {
                Cell::Text(
                    s.amount
                        .map_or_else(|| "-".into(), |a| describe_amount(a as f64, kind, "B")),
                )
            },
        ),
        (
            Column::new("TIME").reserve(TIME_CELLS).drop_at(57),
            |s, _| s.time.map_or(Cell::Empty, |t| Cell::Text(time_bar(&t))),
        ),
        (
            Column::new("PIPE").reserve(10).drop_at(10),
            |s, _| match s.fill {
                Some(f) => Cell::Text(bar(f.queued, f.capacity)),
                None => Cell::Empty,
            },
        ),
        (Column::new("").reserve(MARK.len()), |s, _| {
            if s.bottleneck {
                Cell::Text(MARK.into())
            } else {
                Cell::Empty
            }
        }),
    ]
}

fn rate(value: Option<f64>, kind: CountKind) -> String {
    value.map_or_else(|| "-".to_string(), |v| describe_amount(v, kind, "B/s"))
}

/// The character of a part of a stage's time in the time bar: `#` busy, `+` waiting for a
/// CPU, `<` waiting for its input, `>` waiting for its output, `.` anything else of its
/// own (a timer, the disk, the network, a lock), a blank for time blocked on nothing known
/// or waiting for a child.
fn part_mark(part: Part) -> char {
    match part {
        Part::Busy => '#',
        Part::Starved => '+',
        Part::Input => '<',
        Part::Output => '>',
        Part::Timer | Part::Disk | Part::Network | Part::Stopped | Part::Other => '.',
        Part::Child | Part::Unknown => ' ',
    }
}

/// The time bar: where a stage's time went over the last window, eight cells in
/// the order of [`Part::ALL`], each part its share of the cells (largest remainders get
/// the cells left over): `######<<` is busy three quarters of the time and waiting for its
/// input the rest.
pub(crate) fn time_bar(time: &Split) -> String {
    let total = time.total();
    if total <= 0.0 {
        return " ".repeat(TIME_CELLS);
    }
    let exact: Vec<f64> = Part::ALL
        .iter()
        .map(|p| time.get(*p) / total * TIME_CELLS as f64)
        .collect();
    let mut cells: Vec<usize> = exact.iter().map(|e| e.floor() as usize).collect();
    let mut left = TIME_CELLS.saturating_sub(cells.iter().sum());
    let mut order: Vec<usize> = (0..exact.len()).collect();
    order.sort_by(|&a, &b| (exact[b] - exact[b].floor()).total_cmp(&(exact[a] - exact[a].floor())));
    for i in order {
        if left == 0 {
            break;
        }
        if exact[i] > 0.0 {
            cells[i] += 1;
            left -= 1;
        }
    }
    Part::ALL
        .iter()
        .zip(cells)
        .flat_map(|(p, n)| std::iter::repeat_n(part_mark(*p), n))
        .collect()
}

/// The fill bar: `[###     ]`.
fn bar(queued: u64, capacity: u64) -> String {
    let capacity = capacity.max(1);
    let mut cells = (queued.min(capacity) * BAR_CELLS + capacity / 2) / capacity;
    if queued > 0 {
        cells = cells.max(1);
    }
    let cells = cells as usize;
    format!(
        "[{}{}]",
        "#".repeat(cells),
        " ".repeat(BAR_CELLS as usize - cells)
    )
}

/// The table of `stages`: a header row and one row per stage; the bottleneck's row is
/// kept visible on a short terminal.
pub(crate) fn table<'a>(stages: &[&StageView], kind: CountKind) -> Table<'a> {
    let columns = columns();
    let rows = stages
        .iter()
        .map(|s| {
            Row::new(columns.iter().map(|(_, cell)| cell(s, kind)).collect()).keep(s.bottleneck)
        })
        .collect();
    Table {
        columns: columns.into_iter().map(|(c, _)| c).collect(),
        header: true,
        rows,
    }
}

/// The stages split by pipeline (a shell's pipelines are tables of their own), in order.
pub(crate) fn jobs<'s, 'v>(stages: &'s [&'v StageView]) -> Vec<&'s [&'v StageView]> {
    let mut out = Vec::new();
    let mut start = 0;
    for i in 1..=stages.len() {
        if i == stages.len() || stages[i].job != stages[start].job {
            if i > start {
                out.push(&stages[start..i]);
            }
            start = i;
        }
    }
    out
}

/// Each pipeline's table as lines at most `width` columns wide (header and rows, laid out
/// together), for `--log`.
pub(crate) fn table_lines(stages: &[&StageView], width: usize, kind: CountKind) -> Vec<String> {
    let mut out = Vec::new();
    for job in jobs(stages) {
        let table = table(job, kind);
        let layout = table.layout(width, false);
        out.push(table.header_line(&layout));
        out.extend(table.rows.iter().map(|r| table.row_line(r, &layout)));
    }
    out
}

/// One stage's row alone, at most `width` columns (tests).
#[cfg(test)]
fn row(stage: &StageView, width: usize, kind: CountKind) -> String {
    let table = Table {
        header: false,
        ..table(&[stage], kind)
    };
    let layout = table.layout(width, false);
    table.row_line(&table.rows[0], &layout)
}

/// The short name of a part of a stage's time in the summary.
fn part_label(part: Part) -> &'static str {
    match part {
        Part::Busy => "busy",
        Part::Starved => "starved",
        Part::Input => "waits in",
        Part::Output => "waits out",
        Part::Timer => "timer",
        Part::Disk => "disk",
        Part::Network => "network",
        Part::Child => "child",
        Part::Stopped => "stopped",
        Part::Other => "other",
        Part::Unknown => "unknown",
    }
}

/// A stage's time split in words, parts of at least 1% in a fixed order:
/// `busy 97%, starved 2%, waits in 1%`.
pub(crate) fn split_text(time: &Split) -> String {
    let parts: Vec<String> = Part::ALL
        .iter()
        .map(|p| (p, (time.get(*p) * 100.0).round()))
        .filter(|(_, percent)| *percent >= 1.0)
        .map(|(p, percent)| format!("{} {percent:.0}%", part_label(*p)))
        .collect();
    if parts.is_empty() {
        "-".to_string()
    } else {
        parts.join(", ")
    }
}

/// The summary at the end of a watch:
///
/// ```text
/// bottleneck: gzip -9 (92% of the time), cat (3%)
///   cat big   busy 3%, waits out 96%, starved 1%
///   gzip -9   busy 97%, starved 2%, waits in 1%
///   cat       busy 1%, waits in 99%
/// advice: try pigz -p 2: gzip -9 uses a whole core while 1 of 2 cores is idle
/// ```
///
/// Shares under 1% are left out of the first line; each stage's time is over the whole
/// watch.
pub(crate) fn summary(report: &Report) -> String {
    use crate::display::display_width;
    let utf8 = crate::term::utf8_locale();
    let named: Vec<&Share> = report.shares.iter().filter(|s| s.share >= 0.005).collect();
    let mut out = format!("{MARK}: ");
    if named.is_empty() {
        out.push_str("none found");
    }
    for (i, s) in named.iter().enumerate() {
        let percent = (s.share * 100.0).round().min(100.0);
        let command = crate::screen::cut(&s.command, 40, utf8);
        if i == 0 {
            out.push_str(&format!("{command} ({percent:.0}% of the time)"));
        } else {
            out.push_str(&format!(", {command} ({percent:.0}%)"));
        }
    }
    let commands: Vec<String> = report
        .stages
        .iter()
        .map(|(command, _)| crate::screen::cut(command, 40, utf8))
        .collect();
    let width = commands.iter().map(|c| display_width(c)).max().unwrap_or(0);
    for (command, (_, time)) in commands.iter().zip(&report.stages) {
        let split = time.as_ref().map_or_else(|| "-".to_string(), split_text);
        let pad = " ".repeat(width - display_width(command));
        out.push_str(&format!("\n  {command}{pad}  {split}"));
    }
    if let Some(advice) = &report.advice {
        out.push_str(&format!("\nadvice: {advice}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::display::display_width;
    use crate::pipeline::model::{Activity, Fill, Sleep};

    fn stage(pid: u32, command: &str, activity: Activity) -> StageView {
        StageView {
            pid,
            command: command.into(),
            activity,
            cpu: Some(99.4),
            rate_in: Some(203.0 * 1048576.0),
            rate_out: Some(68.1 * 1048576.0),
            fill: Some(Fill {
                queued: 100,
                capacity: 65536,
            }),
            bottleneck: false,
            time: Some(split(&[(Part::Busy, 75.0), (Part::Input, 25.0)])),
            ..StageView::default()
        }
    }

    /// The view's rows on a terminal `width` columns wide.
    fn lines(stages: &[StageView], width: usize) -> Vec<String> {
        let refs: Vec<&StageView> = stages.iter().collect();
        let view = crate::screen::View {
            blocks: vec![crate::screen::Block::Table(table(
                &refs,
                CountKind::BinaryBytes,
            ))],
            utf8: true,
        };
        view.lines(width, 40)
    }

    #[test]
    fn rows_at_eighty_columns() {
        let mut s = stage(13326, "gzip -9", Activity::Running);
        s.bottleneck = true;
        let at90 = lines(
            &[stage(13325, "cat big.bin", Activity::WaitOutput), s.clone()],
            90,
        );
        assert_eq!(
            at90,
            [
                "    PID COMMAND      CPU STATE              IN/s     OUT/s TIME     PIPE",
                "  13325 cat big.bin  99% wait output    203MiB/s 68.1MiB/s ######<< [#       ]",
                "  13326 gzip -9      99% running        203MiB/s 68.1MiB/s ######<< [#       ] \
                 bottleneck",
            ]
        );
        // Narrower: the pipe bar goes first; the time bar stays; the command takes what is
        // left.
        let at80 = lines(&[stage(13325, "cat big.bin", Activity::WaitOutput), s], 80);
        assert_eq!(
            at80[2],
            "  13326 gzip -9       99% running        203MiB/s 68.1MiB/s ######<< bottleneck"
        );
        assert!(!at80[0].contains("PIPE") && at80[0].ends_with(" TIME"));
        assert!(at80.iter().all(|l| display_width(l) <= 79));
    }

    #[test]
    fn narrow_terminals_keep_the_rates_and_the_marker_whole() {
        let mut marked = stage(
            1234,
            "tar cf - /very/long/directory/name",
            Activity::Running,
        );
        marked.bottleneck = true;
        let stages = [stage(1233, "cat", Activity::WaitOutput), marked];
        // 60 columns: the PID, the CPU and the state go, the time bar stays (its marks tell
        // the state too); the command is cut with an ellipsis.
        let at60 = lines(&stages, 60);
        assert_eq!(at60[0], "COMMAND                  IN/s     OUT/s TIME");
        assert_eq!(
            at60[2],
            "tar cf - /very/lon…  203MiB/s 68.1MiB/s ######<< bottleneck"
        );
        // 40 columns: the state goes too; the rates keep their units, the marker is whole.
        let at40 = lines(&stages, 40);
        assert_eq!(at40[2], "tar cf…   203MiB/s 68.1MiB/s bottleneck");
        assert_eq!(at40[1], "cat       203MiB/s 68.1MiB/s");
        // Below 40: the minimal layout.
        let at30 = lines(&stages, 30);
        assert_eq!(at30[2], "tar cf…  68.1MiB/s bottleneck");
        let at20 = lines(&stages, 20);
        assert_eq!(at20[2], "tar cf…  bottleneck");
        let at15 = lines(&stages, 15);
        // Narrower than the minimal layout: cut at the edge.
        assert_eq!(at15[2], "tar…  bottlen…");
        for width in 1..200 {
            for line in lines(&stages, width) {
                assert!(display_width(&line) < width.max(2), "{width}: {line:?}");
            }
        }
    }

    #[test]
    fn unknowns_wide_characters_and_escapes() {
        let s = StageView {
            pid: 7,
            command: "tar cf - /very/long/directory/name".into(),
            activity: Activity::Unknown,
            cpu: None,
            rate_in: None,
            rate_out: None,
            fill: None,
            bottleneck: false,
            ..StageView::default()
        };
        let at80 = lines(&[s], 80);
        assert_eq!(
            at80[1],
            "      7 tar cf - /v…    - not permitted         -         -"
        );
        for width in [10, 40, 69, 200] {
            for line in lines(&[stage(1, "日本語のコマンド", Activity::WaitInput)], width) {
                assert!(display_width(&line) < width, "{width}: {line:?}");
            }
        }
        // A process that names itself with escape sequences shows them escaped.
        let evil = lines(&[stage(1, "[\x1b]0;owned\x07]", Activity::WaitInput)], 120);
        assert!(
            !evil[1].contains('\x1b') && !evil[1].contains('\x07'),
            "{evil:?}"
        );
        assert!(evil[1].contains("[\\e]0;owned\\x07]"), "{evil:?}");
        // A wide terminal gives the command the room.
        let wide = lines(&[stage(1, &"x".repeat(60), Activity::WaitInput)], 200);
        assert!(wide[1].contains(&"x".repeat(60)));
    }

    #[test]
    fn fill_bars() {
        assert_eq!(bar(0, 65536), "[        ]");
        assert_eq!(bar(1, 65536), "[#       ]");
        assert_eq!(bar(32768, 65536), "[####    ]");
        assert_eq!(bar(65536, 65536), "[########]");
        assert_eq!(bar(70000, 65536), "[########]");
        assert_eq!(bar(5, 0), "[########]");
    }

    #[test]
    fn states_and_units() {
        let mut s = stage(1, "rpv -q -L 20M", Activity::Sleeping(Sleep::Timer));
        s.rate_in = Some(20e6);
        s.rate_out = Some(0.0);
        s.cpu = Some(2.0);
        let line = row(&s, 79, CountKind::DecimalBytes);
        assert!(
            line.contains("  2% sleep timer    20.0MB/s  0.00 B/s"),
            "{line:?}"
        );
    }

    fn split(parts: &[(Part, f64)]) -> Split {
        let mut t = Split::default();
        for (p, v) in parts {
            t.add(*p, *v);
        }
        t.shares().unwrap()
    }

    #[test]
    fn summary_lines() {
        let shares = vec![
            Share {
                command: "gzip -9".into(),
                share: 0.92,
            },
            Share {
                command: "cat".into(),
                share: 0.031,
            },
            Share {
                command: "sha256sum".into(),
                share: 0.001,
            },
        ];
        let report = Report {
            shares,
            stages: vec![
                (
                    "cat big".into(),
                    Some(split(&[
                        (Part::Busy, 3.0),
                        (Part::Output, 96.0),
                        (Part::Starved, 1.0),
                    ])),
                ),
                (
                    "gzip -9".into(),
                    Some(split(&[
                        (Part::Busy, 97.0),
                        (Part::Starved, 2.0),
                        (Part::Input, 1.0),
                    ])),
                ),
                (
                    "cat".into(),
                    Some(split(&[(Part::Busy, 0.4), (Part::Input, 99.6)])),
                ),
                ("sha256sum".into(), None),
            ],
            advice: Some("try pigz".into()),
        };
        assert_eq!(
            summary(&report),
            "bottleneck: gzip -9 (92% of the time), cat (3%)\n\
             \x20 cat big    busy 3%, starved 1%, waits out 96%\n\
             \x20 gzip -9    busy 97%, starved 2%, waits in 1%\n\
             \x20 cat        waits in 100%\n\
             \x20 sha256sum  -\n\
             advice: try pigz"
        );
        assert_eq!(summary(&Report::default()), "bottleneck: none found");
        let times = split(&[
            (Part::Timer, 50.0),
            (Part::Disk, 20.0),
            (Part::Network, 10.0),
            (Part::Child, 10.0),
            (Part::Other, 5.0),
            (Part::Unknown, 5.0),
        ]);
        assert_eq!(
            split_text(&times),
            "timer 50%, disk 20%, network 10%, child 10%, other 5%, unknown 5%"
        );
    }

    #[test]
    fn a_wide_terminal_shows_the_bytes_through_each_stage() {
        let mut s = stage(13326, "gzip -9", Activity::Running);
        s.amount = Some(3 << 30);
        let wide = lines(&[s.clone()], 120);
        assert!(
            wide[0].ends_with(" CPU STATE              IN/s     OUT/s     BYTES TIME     PIPE"),
            "{wide:?}"
        );
        assert!(
            wide[1].contains(" 68.1MiB/s   3.00GiB ######<< [#       ]"),
            "{wide:?}"
        );
        // It is the first to go.
        assert!(!lines(&[s], 90)[0].contains("BYTES"));
    }

    #[test]
    fn time_bars() {
        assert_eq!(time_bar(&split(&[(Part::Busy, 100.0)])), "########");
        assert_eq!(
            time_bar(&split(&[(Part::Busy, 75.0), (Part::Input, 25.0)])),
            "######<<"
        );
        assert_eq!(
            time_bar(&split(&[
                (Part::Busy, 3.0),
                (Part::Output, 96.0),
                (Part::Starved, 1.0)
            ])),
            ">>>>>>>>"
        );
        assert_eq!(
            time_bar(&split(&[
                (Part::Busy, 30.0),
                (Part::Starved, 45.0),
                (Part::Input, 25.0)
            ])),
            "##++++<<"
        );
        assert_eq!(
            time_bar(&split(&[(Part::Timer, 95.0), (Part::Busy, 5.0)])),
            "........"
        );
        assert_eq!(
            time_bar(&split(&[(Part::Unknown, 50.0), (Part::Busy, 50.0)])),
            "####    "
        );
        assert_eq!(time_bar(&Split::default()), "        ");
    }
}
