//! `--help` and `--version` text (spec 1.10).
//!
//! Owns: the wording of the help rows (our own, not pv's) and pv's help layout: a description
//! column shared by all rows, word wrapping to the terminal width, groups separated by blank
//! lines, and the list of format sequences. Must not: ask the terminal for its width (the
//! caller passes it in) or print anything.

/// One help row: `  -S, --long ARG` followed by the description.
struct Row {
    short: char,
    long: &'static str,
    /// Value name, or `""` for switches.
    arg: &'static str,
    text: &'static str,
}

const fn row(short: char, long: &'static str, arg: &'static str, text: &'static str) -> Row {
    Row {
        short,
        long,
        arg,
        text,
    }
}

const DISPLAY: &[Row] = &[
    row('p', "progress", "", "show a progress bar"),
    row(
        't',
        "timer",
        "",
        "show how long the transfer has been running",
    ),
    row(
        'e',
        "eta",
        "",
        "show the estimated time left until completion",
    ),
    row(
        'I',
        "fineta",
        "",
        "show the estimated local time of completion",
    ),
    row('r', "rate", "", "show the current transfer rate"),
    row('a', "average-rate", "", "show the average transfer rate"),
    row('b', "bytes", "", "show the amount transferred so far"),
    row('8', "bits", "", "count and show bits rather than bytes"),
    row(
        'k',
        "si",
        "",
        "use powers of 1000 rather than 1024 for units, and for size and rate values given \
         after this option",
    ),
    row(
        'T',
        "buffer-percent",
        "",
        "show how full the transfer buffer is",
    ),
    row(
        'A',
        "last-written",
        "NUM",
        "show the last NUM bytes written",
    ),
    row(
        'F',
        "format",
        "FORMAT",
        "lay out the display with FORMAT (see below) instead of the switches above",
    ),
    row(
        'n',
        "numeric",
        "",
        "print plain numbers, one line per update, instead of a display",
    ),
    row('q', "quiet", "", "show nothing at all"),
];

const MODIFIERS: &[Row] = &[
    row(
        'W',
        "wait",
        "",
        "show nothing until the first data has been transferred",
    ),
    row(
        'D',
        "delay-start",
        "SEC",
        "show nothing until SEC seconds have passed",
    ),
    row(
        's',
        "size",
        "SIZE",
        "take SIZE as the total amount to transfer; @PATH means the size of PATH",
    ),
    row(
        'g',
        "gauge",
        "",
        "if the total size is unknown, show the rate as a share of the highest rate seen",
    ),
    row('l', "line-mode", "", "count lines rather than bytes"),
    row('0', "null", "", "lines end with a zero byte (implies -l)"),
    row(
        'i',
        "interval",
        "SEC",
        "redraw every SEC seconds (default 1)",
    ),
    row(
        'm',
        "average-rate-window",
        "SEC",
        "average the rate over the last SEC seconds (default 30)",
    ),
    row(
        'w',
        "width",
        "WIDTH",
        "assume the terminal is WIDTH columns wide",
    ),
    row(
        'H',
        "height",
        "HEIGHT",
        "assume the terminal is HEIGHT rows tall",
    ),
    row('N', "name", "NAME", "label the display with NAME"),
    row(
        'u',
        "bar-style",
        "STYLE",
        "draw progress bars as plain, block, granular or shaded",
    ),
    row(
        'x',
        "extra-display",
        "SPEC",
        "also show progress where SPEC says: windowtitle, processtitle",
    ),
    row('v', "stats", "", "print rate statistics at the end"),
    row(
        'f',
        "force",
        "",
        "show progress even if standard error is not a terminal",
    ),
    row(
        'c',
        "cursor",
        "",
        "position the cursor so that several instances can share one terminal",
    ),
];

const TRANSFER: &[Row] = &[
    row(
        'o',
        "output",
        "FILE",
        "write the data to FILE rather than standard output",
    ),
    row(
        'L',
        "rate-limit",
        "RATE",
        "transfer at most RATE bytes per second",
    ),
    row(
        'B',
        "buffer-size",
        "BYTES",
        "use a transfer buffer of BYTES bytes",
    ),
    row(
        'C',
        "no-splice",
        "",
        "always copy with read and write, never with splice",
    ),
    row(
        'E',
        "skip-errors",
        "",
        "carry on past read errors; give twice to report them briefly",
    ),
    row(
        'Z',
        "error-skip-block",
        "BYTES",
        "when skipping a read error, skip BYTES bytes at a time",
    ),
    row(
        'S',
        "stop-at-size",
        "",
        "stop once the amount given with --size has been transferred",
    ),
    row('Y', "sync", "", "flush the output to disk after each write"),
    row(
        'K',
        "direct-io",
        "",
        "bypass the kernel's page cache (O_DIRECT)",
    ),
    row(
        'O',
        "sparse",
        "",
        "seek over runs of zero bytes in the output instead of writing them",
    ),
    row('X', "discard", "", "read the input but write nothing"),
    row(
        'U',
        "store-and-forward",
        "FILE",
        "read all input into FILE before writing any output; - means a temporary file",
    ),
];

const MODES: &[Row] = &[
    row(
        'd',
        "watchfd",
        "PID[:FD]",
        "show how far process PID has got through its open files, or just descriptor FD",
    ),
    row(
        'R',
        "remote",
        "PID",
        "send these settings to the instance running as process PID",
    ),
    row(
        'Q',
        "query",
        "PID",
        "show the progress of the instance running as process PID",
    ),
    row(
        'M',
        "monitor",
        "SIDE",
        "run the command given after the options and meter its input, output or both",
    ),
];

const OTHER: &[Row] = &[
    row('P', "pidfile", "FILE", "write the process ID to FILE"),
    row('h', "help", "", "show this help and exit"),
    row('V', "version", "", "show version information and exit"),
];

const GROUPS: &[&[Row]] = &[DISPLAY, MODIFIERS, TRANSFER, MODES, OTHER];

const DESCRIPTION: &str = "Copy FILEs, or standard input, to standard output, showing progress.";

const FORMAT_SEQUENCES: &str = "%p %{progress} %{progress-amount-only} %{progress-bar-only} \
     %{bar-plain} %{bar-block} %{bar-granular} %{bar-shaded} %t %{timer} %e %{eta} %I \
     %{fineta} %r %{rate} %a %{average-rate} %b %{bytes} %{transferred} %{ratio} %T \
     %{buffer-percent} %A %{last-written} %L %{previous-line} %N %{name} %{sgr:colour,...}";

/// The project's repository, if Cargo.toml names one.
const REPOSITORY: &str = env!("CARGO_PKG_REPOSITORY");

/// The last column text may reach: terminal width − 3, or 77 if the width is ≤ 5 or unknown.
fn right_margin(width: usize) -> usize {
    if width > 5 {
        width - 3
    } else {
        77
    }
}

/// `-p, --progress` or `-s, --size SIZE`.
fn option_part(row: &Row) -> String {
    match row.arg {
        "" => format!("-{}, --{}", row.short, row.long),
        arg => format!("-{}, --{} {arg}", row.short, row.long),
    }
}

/// Splits `text` into lines of at most `avail` characters, breaking after the last space that
/// fits (the space stays at the end of the line) or, failing that, inside the word.
fn wrap(text: &str, avail: usize) -> Vec<&str> {
    let avail = avail.max(1);
    let mut lines = Vec::new();
    let mut rest = text;
    while rest.chars().count() > avail {
        let cut = rest
            .char_indices()
            .nth(avail)
            .map_or(rest.len(), |(i, _)| i);
        let end = match rest[..cut].rfind(' ') {
            Some(space) if space > 0 => space + 1,
            _ => cut,
        };
        lines.push(&rest[..end]);
        rest = &rest[end..];
    }
    lines.push(rest);
    lines
}

/// Appends `text` wrapped into the columns `[col, margin)`; the first line continues
/// whatever `out` already holds on its current line, later lines are indented to `col`.
fn push_wrapped(out: &mut String, text: &str, col: usize, margin: usize) {
    let avail = margin.saturating_sub(col).max(10);
    for (i, line) in wrap(text, avail).into_iter().enumerate() {
        if i > 0 {
            out.push_str(&" ".repeat(col));
        }
        out.push_str(line);
        out.push('\n');
    }
}

/// The description column: the widest option part plus indent and gap, but leaving at least
/// 50 columns for descriptions.
fn description_column(margin: usize) -> usize {
    let widest = GROUPS
        .iter()
        .flat_map(|g| g.iter())
        .map(|r| option_part(r).len())
        .max()
        .unwrap_or(0);
    (widest + 4).min(margin.saturating_sub(50)).max(2)
}

fn push_row(out: &mut String, row: &Row, col: usize, margin: usize) {
    let lead = format!("  {}", option_part(row));
    out.push_str(&lead);
    if lead.len() + 2 <= col {
        out.push_str(&" ".repeat(col - lead.len()));
    } else {
        out.push('\n');
        out.push_str(&" ".repeat(col));
    }
    push_wrapped(out, row.text, col, margin);
}

/// The last line: where to report bugs.
fn bug_report_line() -> String {
    if REPOSITORY.is_empty() {
        "Please report any bugs to the rpv project's issue tracker.".to_owned()
    } else {
        format!("Please report any bugs to: {REPOSITORY}/issues")
    }
}

/// The `--help` text (spec 1.10), wrapped for a terminal `width` columns wide (0 = unknown).
///
/// Line 1 is `Usage: rpv [OPTION] [FILE]...`; every option has a row starting with two
/// spaces and its short letter (`  -R, --remote PID ...`), which scripts grep for.
pub fn help_text(width: usize) -> String {
    let margin = right_margin(width);
    let col = description_column(margin);
    let mut out = String::from("Usage: rpv [OPTION] [FILE]...\n");
    push_wrapped(&mut out, DESCRIPTION, 0, margin);
    for group in GROUPS {
        out.push('\n');
        for row in group.iter() {
            push_row(&mut out, row, col, margin);
        }
    }
    out.push_str("\nSupported format sequences:\n\n  ");
    push_wrapped(&mut out, FORMAT_SEQUENCES, 2, margin);
    out.push('\n');
    push_wrapped(&mut out, &bug_report_line(), 0, margin);
    out
}

/// The `--version` text (spec 1.10): line 1 is `rpv <version>`, then copyright, licence and
/// warranty lines, a blank line and a line about the project.
pub fn version_text() -> String {
    format!(
        "rpv {}\n\
         Copyright 2026 The rpv developers\n\
         License: MIT OR Apache-2.0, at your option.\n\
         This software comes with no warranty, to the extent permitted by law.\n\
         \n\
         rpv is a pipe viewer compatible with pv, written in Rust.\n",
        env!("CARGO_PKG_VERSION")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::args::FLAGS;

    #[test]
    fn first_lines() {
        let help = help_text(80);
        let mut lines = help.lines();
        assert_eq!(lines.next(), Some("Usage: rpv [OPTION] [FILE]..."));
        assert!(lines.next().is_some_and(|l| !l.is_empty()));
        assert_eq!(lines.next(), Some(""));
        assert!(lines
            .next()
            .is_some_and(|l| l.starts_with("  -p, --progress ")));
    }

    #[test]
    fn last_lines() {
        let help = help_text(80);
        let lines: Vec<&str> = help.lines().collect();
        assert!(lines[lines.len() - 1].starts_with("Please report any bugs to"));
        assert_eq!(lines[lines.len() - 2], "");
        let at = lines
            .iter()
            .position(|l| *l == "Supported format sequences:");
        let at = at.expect("format sequence heading");
        assert_eq!(lines[at - 1], "");
        assert_eq!(lines[at + 1], "");
        assert!(lines[at + 2].starts_with("  %p %{progress} "));
        assert!(help.contains("%{sgr:colour,...}\n\nPlease"));
    }

    #[test]
    fn every_option_has_a_row() {
        let help = help_text(80);
        for flag in FLAGS.iter().filter(|f| f.long != "sparse-output") {
            let lead = format!("\n  -{}, --{}", flag.short, flag.long);
            let at = help
                .find(&lead)
                .unwrap_or_else(|| panic!("no row for {lead:?}"));
            let after = help[at + lead.len()..].chars().next();
            assert!(matches!(after, Some(' ' | '\n')), "{lead:?}");
        }
        let rows = help.lines().filter(|l| l.starts_with("  -")).count();
        assert_eq!(rows, FLAGS.len() - 1);
    }

    #[test]
    fn rows_take_values_exactly_when_the_option_does() {
        for row in GROUPS.iter().flat_map(|g| g.iter()) {
            let flag = FLAGS
                .iter()
                .find(|f| f.short == row.short)
                .expect("known letter");
            assert_eq!(flag.long, row.long);
            assert_eq!(flag.takes_value, !row.arg.is_empty(), "-{}", row.short);
        }
    }

    #[test]
    fn feature_detection_rows_keep_their_shape() {
        let help = help_text(80);
        assert!(help.lines().any(|l| l.starts_with("  -R, --remote PID ")));
        assert!(help.lines().any(|l| l.starts_with("  -Q, --query PID ")));
        assert!(help
            .lines()
            .any(|l| l.starts_with("  -d, --watchfd PID[:FD] ")));
    }

    #[test]
    fn description_column_at_80_columns() {
        let help = help_text(80);
        let progress = help.lines().find(|l| l.starts_with("  -p,")).expect("row");
        assert_eq!(progress.find("show"), Some(27));
        // Too wide for the column: the description moves to the next line.
        let at = help.find("  -m, --average-rate-window SEC\n").expect("row");
        let next = help[at..].lines().nth(1).expect("next line");
        assert!(next.starts_with(&format!("{}average", " ".repeat(27))));
    }

    #[test]
    fn unknown_and_tiny_widths_use_77() {
        assert_eq!(help_text(0), help_text(80));
        assert_eq!(help_text(5), help_text(80));
        assert_ne!(help_text(6), help_text(80));
    }

    #[test]
    fn wrapping_respects_width() {
        for width in [40, 50, 60, 80, 100, 132, 200] {
            let help = help_text(width);
            for line in help.lines() {
                assert!(line.len() <= width - 3, "width {width}: {line:?}");
            }
        }
    }

    #[test]
    fn wide_terminals_widen_the_column_only_up_to_the_widest_option() {
        let help = help_text(200);
        let progress = help.lines().find(|l| l.starts_with("  -p,")).expect("row");
        // Widest option part is "-m, --average-rate-window SEC" (29) + 4.
        assert_eq!(progress.find("show"), Some(33));
        assert!(!help.contains("SEC\n "));
    }

    #[test]
    fn wrap_breaks_after_spaces_or_inside_words() {
        assert_eq!(wrap("aaa bbb ccc", 8), ["aaa bbb ", "ccc"]);
        assert_eq!(wrap("aaa bbb ccc", 7), ["aaa ", "bbb ccc"]);
        assert_eq!(wrap("aaa bbb ccc", 6), ["aaa ", "bbb ", "ccc"]);
        assert_eq!(wrap("abcdefghij", 4), ["abcd", "efgh", "ij"]);
        assert_eq!(wrap("short", 10), ["short"]);
        assert_eq!(wrap("", 10), [""]);
    }

    #[test]
    fn narrow_terminal_wraps_descriptions_under_the_column() {
        let help = help_text(40);
        let at = help.find("  -k, --si").expect("row");
        let block: Vec<&str> = help[at..]
            .lines()
            .take_while(|l| !l.starts_with("  -T"))
            .collect();
        assert!(block.len() > 2, "{block:?}");
    }

    #[test]
    fn version_lines() {
        let text = version_text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], format!("rpv {}", env!("CARGO_PKG_VERSION")));
        assert_eq!(lines[0], "rpv 0.1.0");
        assert_eq!(lines[1], "Copyright 2026 The rpv developers");
        assert!(lines[2].contains("MIT OR Apache-2.0"));
        assert!(lines[3].contains("warranty"));
        assert_eq!(lines[4], "");
        assert!(lines[5].contains("rpv"));
        assert_eq!(lines.len(), 6);
        assert!(text.ends_with('\n'));
    }
}
