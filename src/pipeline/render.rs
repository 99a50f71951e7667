//! The pipeline view as text (pure).
//!
//! Owns: the header, one row per stage at a given width, and the summary line. Must not:
//! write anything; the caller draws the lines.
//!
//! ```text
//!     PID COMMAND      CPU STATE              IN/s     OUT/s PIPE
//!   13325 cat big.bin   3% wait output    203MiB/s  203MiB/s [########]
//!   13326 gzip -9      99% running        203MiB/s 68.1MiB/s [#       ] bottleneck
//!   13327 cat           1% wait input    68.1MiB/s 68.1MiB/s
//! ```
//!
//! The command column takes the width the others leave (at least [`MIN_COMMAND`]
//! columns); a row never exceeds the width, and where everything does not fit the bar is
//! left out first so the marker stays. The bar is the fill of the pipe to the next stage,
//! eight cells, at least one when anything is queued.

use unicode_width::UnicodeWidthChar;

use super::timeshare::{Part, Split};
use super::watch::{Report, Share, StageView, View};
use crate::display::display_width;
use crate::units::{describe_amount, CountKind};

/// Columns of everything but the command, the marker included.
const FIXED: usize = 7 + 1 + 1 + 4 + 1 + 13 + 1 + 9 + 1 + 9 + 1 + 10 + 11;
/// Columns of the pipe bar and the space before it, left out on narrow terminals so that
/// the marker stays visible.
const BAR_COLUMNS: usize = 11;
/// The command column is never narrower than this.
pub const MIN_COMMAND: usize = 8;
/// Cells of the pipe bar.
const BAR_CELLS: u64 = 8;
/// The marker of the row holding the pipeline back.
pub const MARK: &str = "bottleneck";

/// Cuts `text` to at most `columns` display columns.
fn cut(text: &str, columns: usize) -> String {
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if used + w > columns {
            break;
        }
        used += w;
        out.push(c);
    }
    out
}

/// `text` cut or padded with spaces to exactly `columns` display columns.
fn fit(text: &str, columns: usize) -> String {
    let mut out = cut(text, columns);
    let pad = columns.saturating_sub(display_width(&out));
    out.extend(std::iter::repeat_n(' ', pad));
    out
}

/// True if the pipe bar fits beside a command of [`MIN_COMMAND`] columns.
fn with_bar(width: usize) -> bool {
    width >= FIXED + MIN_COMMAND
}

fn command_width(width: usize) -> usize {
    let fixed = if with_bar(width) {
        FIXED
    } else {
        FIXED - BAR_COLUMNS
    };
    width.saturating_sub(fixed).max(MIN_COMMAND)
}

/// The column titles.
pub fn header(width: usize) -> String {
    let line = format!(
        "{:>7} {} {:>4} {:<13} {:>9} {:>9}{}",
        "PID",
        fit("COMMAND", command_width(width)),
        "CPU",
        "STATE",
        "IN/s",
        "OUT/s",
        if with_bar(width) { " PIPE" } else { "" }
    );
    cut(&line, width)
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

/// One stage's row.
pub fn row(stage: &StageView, width: usize, kind: CountKind) -> String {
    let cpu = stage
        .cpu
        .map_or_else(|| "-".to_string(), |c| format!("{:.0}%", c.max(0.0)));
    let bar = match stage.fill {
        Some(f) if with_bar(width) => format!(" {:<10}", bar(f.queued, f.capacity)),
        _ if with_bar(width) => " ".repeat(BAR_COLUMNS),
        _ => String::new(),
    };
    let mark = if stage.bottleneck { MARK } else { "" };
    let line = format!(
        "{:>7} {} {:>4} {:<13} {:>9} {:>9}{} {mark}",
        stage.pid,
        fit(&stage.command, command_width(width)),
        cpu,
        stage.activity.label(),
        rate(stage.rate_in, kind),
        rate(stage.rate_out, kind),
        bar,
    );
    cut(line.trim_end(), width)
}

/// The header and every row.
pub fn lines(view: &View, width: usize, kind: CountKind) -> Vec<String> {
    let mut out = Vec::with_capacity(view.stages.len() + 1);
    out.push(header(width));
    out.extend(view.stages.iter().map(|s| row(s, width, kind)));
    out
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
        Part::Other => "other",
        Part::Unknown => "unknown",
    }
}

/// A stage's time split in words, parts of at least 1% in a fixed order:
/// `busy 97%, starved 2%, waits in 1%`.
pub fn split_text(time: &Split) -> String {
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
/// advice: gzip -9 uses a whole core while 1 of 2 cores is idle: pigz would use them
/// ```
///
/// Shares under 1% are left out of the first line; each stage's time is over the whole
/// watch.
pub fn summary(report: &Report) -> String {
    let named: Vec<&Share> = report.shares.iter().filter(|s| s.share >= 0.005).collect();
    let mut out = format!("{MARK}: ");
    if named.is_empty() {
        out.push_str("none found");
    }
    for (i, s) in named.iter().enumerate() {
        let percent = (s.share * 100.0).round().min(100.0);
        let command = cut(&s.command, 40);
        if i == 0 {
            out.push_str(&format!("{command} ({percent:.0}% of the time)"));
        } else {
            out.push_str(&format!(", {command} ({percent:.0}%)"));
        }
    }
    let width = report
        .stages
        .iter()
        .map(|(command, _)| display_width(&cut(command, 40)))
        .max()
        .unwrap_or(0);
    for (command, time) in &report.stages {
        let split = time.as_ref().map_or_else(|| "-".to_string(), split_text);
        out.push_str(&format!("\n  {}  {split}", fit(command, width)));
    }
    if let Some(advice) = &report.advice {
        out.push_str(&format!("\nadvice: {advice}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::classify::{Activity, Sleep};
    use crate::pipeline::procfs::Fill;

    fn stage(pid: u32, command: &str, activity: Activity) -> StageView {
        StageView {
            pid,
            command: command.into(),
            activity,
            time: None,
            cpu: Some(99.4),
            rate_in: Some(203.0 * 1048576.0),
            rate_out: Some(68.1 * 1048576.0),
            bytes_in: None,
            bytes_out: None,
            amount: None,
            fill: Some(Fill {
                queued: 100,
                capacity: 65536,
            }),
            bottleneck: false,
            job: 0,
            group: 0,
        }
    }

    #[test]
    fn a_row_at_eighty_columns() {
        let mut s = stage(13326, "gzip -9", Activity::Running);
        s.bottleneck = true;
        let line = row(&s, 80, CountKind::BinaryBytes);
        assert_eq!(
            line,
            "  13326 gzip -9      99% running        203MiB/s 68.1MiB/s [#       ] bottleneck"
        );
        assert_eq!(display_width(&line), 80);
        assert_eq!(
            header(80),
            "    PID COMMAND      CPU STATE              IN/s     OUT/s PIPE"
        );
    }

    #[test]
    fn unknowns_long_commands_and_narrow_terminals() {
        let s = StageView {
            pid: 7,
            command: "tar cf - /very/long/directory/name".into(),
            activity: Activity::Unknown,
            time: None,
            cpu: None,
            rate_in: None,
            rate_out: None,
            bytes_in: None,
            bytes_out: None,
            amount: None,
            fill: None,
            bottleneck: false,
            job: 0,
            group: 0,
        };
        let line = row(&s, 80, CountKind::BinaryBytes);
        assert_eq!(
            line,
            "      7 tar cf - /v    - not permitted         -         -"
        );
        for width in [10, 40, 69, 200] {
            let line = row(
                &stage(1, "日本語のコマンド", Activity::WaitInput),
                width,
                CountKind::BinaryBytes,
            );
            assert!(display_width(&line) <= width, "{width}: {line:?}");
            assert!(display_width(&header(width)) <= width);
        }
        // Narrower than the full row: the bar goes, the marker stays.
        let mut marked = stage(1, "gzip -9", Activity::Running);
        marked.bottleneck = true;
        let line = row(&marked, 70, CountKind::BinaryBytes);
        assert_eq!(
            line,
            "      1 gzip -9       99% running        203MiB/s 68.1MiB/s bottleneck"
        );
        assert_eq!(display_width(&line), 70);
        assert!(!header(70).contains("PIPE"));
        // A wide terminal gives the command the room.
        let wide = row(
            &stage(1, &"x".repeat(60), Activity::WaitInput),
            200,
            CountKind::BinaryBytes,
        );
        assert!(wide.contains(&"x".repeat(60)));
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
        let line = row(&s, 80, CountKind::DecimalBytes);
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
}
