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

use super::watch::{Share, StageView, View};
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

/// `bottleneck: gzip -9 (92% of the time), cat (3%)`; shares under 1% are left out.
pub fn summary(shares: &[Share]) -> String {
    let named: Vec<&Share> = shares.iter().filter(|s| s.share >= 0.005).collect();
    if named.is_empty() {
        return format!("{MARK}: none found");
    }
    let mut out = format!("{MARK}: ");
    for (i, s) in named.iter().enumerate() {
        let percent = (s.share * 100.0).round().min(100.0);
        let command = cut(&s.command, 40);
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
