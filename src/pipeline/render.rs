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

use super::watch::{Share, StageView};
use crate::screen::{Cell, Column, Row, Table};
use crate::units::{describe_amount, CountKind};

/// Cells of the pipe bar.
const BAR_CELLS: u64 = 8;
/// The marker of the row holding the pipeline back.
pub const MARK: &str = "bottleneck";

/// What a stage shows in one column.
type CellOf = fn(&StageView, CountKind) -> Cell<'static>;

/// The columns of the table, left to right, and what a stage shows in each. Priorities
/// (lower gives way first): 5 a command longer than 24 columns is cut to 24; 10 the pipe
/// bar; 20 the command's arguments (to 12 columns); 40 the PID; 45 the CPU; 55 the state;
/// 60 the command to 8 columns; 90 and up, below 40 columns, the minimal layout.
pub fn columns() -> Vec<(Column, CellOf)> {
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
pub fn table<'a>(stages: &[&StageView], kind: CountKind) -> Table<'a> {
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

/// One stage's row alone, at most `width` columns (for `--log`).
pub fn row(stage: &StageView, width: usize, kind: CountKind) -> String {
    let table = Table {
        header: false,
        ..table(&[stage], kind)
    };
    let layout = table.layout(width, false);
    table.row_line(&table.rows[0], &layout)
}

/// `bottleneck: gzip -9 (92% of the time), cat (3%)`; shares under 1% are left out.
pub fn summary(shares: &[Share]) -> String {
    let named: Vec<&Share> = shares.iter().filter(|s| s.share >= 0.005).collect();
    if named.is_empty() {
        return format!("{MARK}: none found");
    }
    let mut out = format!("{MARK}: ");
    for (i, s) in named.iter().enumerate() {
        let percent = (s.share * 100.0).round().min(100.0);
        let command = crate::display::cut_to_width(&s.command, 40);
        if i == 0 {
            out.push_str(&format!("{command} ({percent:.0}% of the time)"));
        } else {
            out.push_str(&format!(", {command} ({percent:.0}%)"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::display::display_width;
    use crate::pipeline::classify::{Activity, Sleep};
    use crate::pipeline::procfs::Fill;

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
        let at81 = lines(
            &[stage(13325, "cat big.bin", Activity::WaitOutput), s.clone()],
            81,
        );
        assert_eq!(
            at81,
            [
                "    PID COMMAND      CPU STATE              IN/s     OUT/s PIPE",
                "  13325 cat big.bin  99% wait output    203MiB/s 68.1MiB/s [#       ]",
                "  13326 gzip -9      99% running        203MiB/s 68.1MiB/s [#       ] bottleneck",
            ]
        );
        // One column less: the pipe bar goes first; the command takes what is left.
        let at80 = lines(&[stage(13325, "cat big.bin", Activity::WaitOutput), s], 80);
        assert_eq!(
            at80[2],
            "  13326 gzip -9                99% running        203MiB/s 68.1MiB/s bottleneck"
        );
        assert!(!at80[0].contains("PIPE"));
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
        // 60 columns: the PID and the CPU go; the command is cut with an ellipsis.
        let at60 = lines(&stages, 60);
        assert_eq!(at60[0], "COMMAND        STATE              IN/s     OUT/s");
        assert_eq!(
            at60[2],
            "tar cf - /ver… running        203MiB/s 68.1MiB/s bottleneck"
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
        };
        let at80 = lines(&[s], 80);
        assert_eq!(
            at80[1],
            "      7 tar cf - /very/long/…    - not permitted         -         -"
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

    #[test]
    fn summary_lines() {
        let shares = [
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
        assert_eq!(
            summary(&shares),
            "bottleneck: gzip -9 (92% of the time), cat (3%)"
        );
        assert_eq!(summary(&[]), "bottleneck: none found");
    }
}
