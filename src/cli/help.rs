//! `--help` and `--version` text, and the table of documented options behind them.
//!
//! Owns: the wording of the help rows (our own, not pv's), what kind of value each option
//! takes (shell completions are generated from these rows: see `complete`), and pv's help
//! layout: a description column shared by all rows, word wrapping to the terminal width,
//! groups separated by blank lines, rpv's own options in a group with a heading of its own,
//! and the list of format sequences. Must not: ask the terminal for its width (the caller
//! passes it in) or print anything.
//!
//! The man page (`doc/rpv.1`) is written by hand, because it explains far more than a help
//! row can hold; the integration tests (`tests/it/docs.rs`) hold it to these rows: an option
//! missing from either side, or shown with a different value name, fails them.

use super::args::long_only;
use super::complete::SHELL_NAMES;
use crate::display::wrap;

/// What an option's value is, for shell completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Value {
    /// No value (a switch), or a value nothing can suggest (a number, a format, a name).
    Free,
    /// A file name.
    File,
    /// The ID of any process.
    Pid,
    /// The ID of a running rpv (what `-R` and `-Q` talk to).
    RpvPid,
    /// One of these words.
    Words(&'static [&'static str]),
}

/// One help row: `  -S, --long ARG` (or `      --long ARG` for an option with no short
/// letter) followed by the description.
#[derive(Debug)]
pub(crate) struct Row {
    /// The option's identity in the option table (its short letter, or a private character
    /// for an option that has only a long name).
    pub(crate) short: char,
    /// The long name without `--`.
    pub(crate) long: &'static str,
    /// Value name, or `""` for switches.
    pub(crate) arg: &'static str,
    /// What the value is, for completion.
    pub(crate) value: Value,
    /// The description.
    pub(crate) text: &'static str,
}

impl Row {
    /// The short letter, unless the option has only a long name.
    pub(crate) fn letter(&self) -> Option<char> {
        (!long_only(self.short)).then_some(self.short)
    }
}

/// A switch (an option without a value).
const fn switch(short: char, long: &'static str, text: &'static str) -> Row {
    Row {
        short,
        long,
        arg: "",
        value: Value::Free,
        text,
    }
}

/// An option that takes a value named `arg`.
const fn valued(
    short: char,
    long: &'static str,
    arg: &'static str,
    value: Value,
    text: &'static str,
) -> Row {
    Row {
        short,
        long,
        arg,
        value,
        text,
    }
}

use Value::{File, Free, Pid, RpvPid, Words};

const DISPLAY: &[Row] = &[
    switch('p', "progress", "show a progress bar"),
    switch('t', "timer", "show how long the transfer has been running"),
    switch('e', "eta", "show the estimated time left until completion"),
    switch('I', "fineta", "show the estimated local time of completion"),
    switch('r', "rate", "show the current transfer rate"),
    switch('a', "average-rate", "show the average transfer rate"),
    switch('b', "bytes", "show the amount transferred so far"),
    switch('8', "bits", "count and show bits rather than bytes"),
    switch(
        'k',
        "si",
        "use powers of 1000 rather than 1024 for units, and for size and rate values given \
         after this option",
    ),
    switch(
        'T',
        "buffer-percent",
        "show how full the transfer buffer is",
    ),
    valued(
        'A',
        "last-written",
        "NUM",
        Free,
        "show the last NUM bytes written",
    ),
    valued(
        'F',
        "format",
        "FORMAT",
        Free,
        "lay out the display with FORMAT (see below) instead of the switches above",
    ),
    switch(
        'n',
        "numeric",
        "print plain numbers, one line per update, instead of a display",
    ),
    switch('q', "quiet", "show nothing at all"),
];

const MODIFIERS: &[Row] = &[
    switch(
        'W',
        "wait",
        "show nothing until the first data has been transferred",
    ),
    valued(
        'D',
        "delay-start",
        "SEC",
        Free,
        "show nothing until SEC seconds have passed",
    ),
    valued(
        's',
        "size",
        "SIZE",
        Free,
        "take SIZE as the total amount to transfer; @PATH means the size of PATH",
    ),
    switch(
        'g',
        "gauge",
        "if the total size is unknown, show the rate as a share of the highest rate seen",
    ),
    switch('l', "line-mode", "count lines rather than bytes"),
    switch('0', "null", "lines end with a zero byte (implies -l)"),
    valued(
        'i',
        "interval",
        "SEC",
        Free,
        "redraw every SEC seconds (default 1)",
    ),
    valued(
        'm',
        "average-rate-window",
        "SEC",
        Free,
        "average the rate over the last SEC seconds (default 30)",
    ),
    valued(
        'w',
        "width",
        "WIDTH",
        Free,
        "assume the terminal is WIDTH columns wide",
    ),
    valued(
        'H',
        "height",
        "HEIGHT",
        Free,
        "assume the terminal is HEIGHT rows tall",
    ),
    valued('N', "name", "NAME", Free, "label the display with NAME"),
    valued(
        'u',
        "bar-style",
        "STYLE",
        Words(&["plain", "block", "granular", "shaded"]),
        "draw progress bars as plain, block, granular or shaded",
    ),
    valued(
        'x',
        "extra-display",
        "WHERE[:FORMAT]",
        Words(&["windowtitle", "processtitle", "windowtitle,processtitle"]),
        "also show progress in the window title, the process title or both (WHERE is \
         windowtitle, processtitle or both with a comma), laid out with FORMAT if given",
    ),
    switch('v', "stats", "print rate statistics at the end"),
    switch(
        'f',
        "force",
        "show progress even if standard error is not a terminal",
    ),
    switch(
        'c',
        "cursor",
        "position the cursor so that several instances can share one terminal",
    ),
];

const TRANSFER: &[Row] = &[
    valued(
        'o',
        "output",
        "FILE",
        File,
        "write the data to FILE rather than standard output",
    ),
    valued(
        'L',
        "rate-limit",
        "RATE",
        Free,
        "transfer at most RATE bytes per second",
    ),
    valued(
        'B',
        "buffer-size",
        "BYTES",
        Free,
        "use a transfer buffer of BYTES bytes",
    ),
    switch(
        'C',
        "no-splice",
        "always copy with read and write, never with splice",
    ),
    switch(
        'E',
        "skip-errors",
        "carry on past read errors; give twice to report them briefly",
    ),
    valued(
        'Z',
        "error-skip-block",
        "BYTES",
        Free,
        "when skipping a read error, skip BYTES bytes at a time",
    ),
    switch(
        'S',
        "stop-at-size",
        "stop once the amount given with --size has been transferred",
    ),
    switch('Y', "sync", "flush the output to disk after each write"),
    switch(
        'K',
        "direct-io",
        "bypass the kernel's page cache (O_DIRECT)",
    ),
    switch(
        'O',
        "sparse",
        "seek over runs of zero bytes in the output instead of writing them",
    ),
    switch('X', "discard", "read the input but write nothing"),
    valued(
        'U',
        "store-and-forward",
        "FILE",
        File,
        "read all input into FILE before writing any output; - means a temporary file",
    ),
];

const MODES: &[Row] = &[
    valued(
        'd',
        "watchfd",
        "PID[:FD]|=NAME|@LISTFILE",
        Pid,
        "show how far process PID (or every process called NAME, or every item listed in \
         LISTFILE) has got through its open files, or just descriptor FD",
    ),
    valued(
        'R',
        "remote",
        "PID",
        RpvPid,
        "send these settings to the instance running as process PID",
    ),
    valued(
        'Q',
        "query",
        "PID",
        RpvPid,
        "show the progress of the instance running as process PID",
    ),
    valued(
        'M',
        "monitor",
        "in|out|both",
        Words(&["in", "out", "both"]),
        "run the command given after the options (and after --) and meter its standard \
         input, its standard output or both",
    ),
];

const OTHER: &[Row] = &[
    valued('P', "pidfile", "FILE", File, "write the process ID to FILE"),
    switch('h', "help", "show this help and exit"),
    switch('V', "version", "show version information and exit"),
];

/// rpv's own options: pv does not have them. Each has only a long name, so that no pv
/// command line changes meaning.
const RPV_OWN: &[Row] = &[
    switch(
        super::args::EACH,
        "each",
        "show a row for each input (its own amount, bar and percentage) and a total",
    ),
    switch(
        super::args::JSON,
        "json",
        "write progress as JSON objects, one per line, instead of the display",
    ),
    switch(
        super::args::LOG,
        "log",
        "write plain, timestamped lines for a log file instead of the display",
    ),
    valued(
        super::args::PIPELINE,
        "pipeline",
        "[=PID]",
        Pid,
        "show every stage of the pipeline (PID's, or the one rpv copies in) and \
         name the stage that holds it back",
    ),
    valued(
        super::args::TEE,
        "tee",
        "FILE",
        File,
        "copy the stream to FILE as well (repeatable; a file, FIFO, device or /dev/fd/N)",
    ),
    valued(
        super::args::TEE_ERROR,
        "tee-error",
        "MODE",
        Words(&["warn", "warn-nopipe", "exit", "exit-nopipe"]),
        "what a failing output does: warn (default), warn-nopipe, exit, exit-nopipe",
    ),
    valued(
        super::args::TERM_PROGRESS,
        "term-progress",
        "WHEN",
        Words(&["auto", "always", "never"]),
        "show progress in the terminal's taskbar or tab indicator (OSC 9;4): auto (default: \
         on terminals known to support it), always, never",
    ),
    valued(
        super::args::METRICS_FILE,
        "metrics-file",
        "FILE",
        File,
        "keep FILE up to date with the progress in Prometheus text format (for \
         node_exporter's textfile collector)",
    ),
    valued(
        super::args::STALL_TIMEOUT,
        "stall-timeout",
        "DURATION",
        Free,
        "end the transfer (status 128) when no data has moved for DURATION (30, 90s, 5m, \
         1h30m), saying which side it waited on",
    ),
    switch(
        super::args::TOP,
        "top",
        "show every data flow rpv may see (pipelines, files and devices being read or \
         written, rpv and pv, sockets), busiest first; keys: arrows, Enter, Esc, s, q",
    ),
    valued(
        super::args::METRICS_FLOWS,
        "metrics-flows",
        "N",
        Free,
        "with --top --metrics-file: the N busiest flows get series of their own (default \
         10); the others count in totals",
    ),
    switch(
        super::args::METRICS_PID,
        "metrics-pid",
        "with --top --metrics-file: label each flow's series with its PID",
    ),
    valued(
        super::args::COMPLETIONS,
        "completions",
        "SHELL",
        Words(SHELL_NAMES),
        "print the command-line completion script for SHELL (bash, zsh or fish) and exit",
    ),
];

/// The heading of the group of rpv's own options (pv's groups have none).
pub(crate) const RPV_OWN_HEADING: &str = "rpv's own options (not in pv):";

/// The help groups in order: a heading (`""` for none) and the rows.
const GROUPS: &[(&str, &[Row])] = &[
    ("", DISPLAY),
    ("", MODIFIERS),
    ("", TRANSFER),
    ("", MODES),
    ("", OTHER),
    (RPV_OWN_HEADING, RPV_OWN),
];

/// Every documented option, in help order.
pub(crate) fn rows() -> impl Iterator<Item = &'static Row> {
    GROUPS.iter().flat_map(|(_, rows)| rows.iter())
}

const DESCRIPTION: &str = "Copy FILEs, or standard input, to standard output, showing progress.";

/// The one integration without an option: what rpv does in a systemd service.
const SYSTEMD_NOTE: &str = "In a systemd service (NOTIFY_SOCKET set), rpv also reports its \
     progress as the service's status, shown by systemctl status (the service needs \
     NotifyAccess=all).";

/// The format sequences `-F` understands, as the help lists them.
pub(crate) const FORMAT_SEQUENCES: &str = "%p %{progress} %{progress-amount-only} \
     %{progress-bar-only} %{bar-plain} %{bar-block} %{bar-granular} %{bar-shaded} %t \
     %{timer} %e %{eta} %I %{fineta} %r %{rate} %a %{average-rate} %b %{bytes} \
     %{transferred} %{ratio} %T %{buffer-percent} %{bottleneck} %A %{last-written} %L \
     %{previous-line} %N %{name} %{sgr:colour,...}";

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

/// `-p, --progress`, `-s, --size SIZE`, or `    --completions SHELL` for an option with no
/// short letter (its long name lines up with the others); an optional value is written
/// `[=VALUE]`, attached to the name.
fn option_part(row: &Row) -> String {
    let names = match row.letter() {
        Some(letter) => format!("-{letter}, --{}", row.long),
        None => format!("    --{}", row.long),
    };
    match row.arg {
        "" => names,
        // An optional value is attached: `--pipeline[=PID]`.
        arg if arg.starts_with("[=") => format!("{names}{arg}"),
        arg => format!("{names} {arg}"),
    }
}

/// Appends `text` wrapped into the columns `[col, margin)`; the first line continues
/// whatever `out` already holds on its current line, later lines are indented to `col`.
fn push_wrapped(out: &mut String, text: &str, col: usize, margin: usize) {
    let avail = margin.saturating_sub(col).max(10);
    for (i, line) in wrap(text, avail).into_iter().enumerate() {
        if i > 0 {
            out.push_str(&" ".repeat(col));
        }
        // The space a line was broken at stays behind: no line ends in a space.
        out.push_str(line.trim_end_matches(' '));
        out.push('\n');
    }
}

/// The description column: the widest option part plus indent and gap, but leaving at least
/// 50 columns for descriptions.
fn description_column(margin: usize) -> usize {
    let widest = rows().map(|r| option_part(r).len()).max().unwrap_or(0);
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

/// The `--help` text, wrapped for a terminal `width` columns wide (0 = unknown).
///
/// pv's layout: line 1 is `Usage: rpv [OPTION] [FILE]...`; every option of pv's has a row
/// starting with two spaces and its short letter (`  -R, --remote PID ...`), which scripts
/// grep for to detect features. rpv's own options follow under a heading of their own.
pub fn help_text(width: usize) -> String {
    let margin = right_margin(width);
    let col = description_column(margin);
    let mut out = String::from("Usage: rpv [OPTION] [FILE]...\n");
    push_wrapped(&mut out, DESCRIPTION, 0, margin);
    for (heading, rows) in GROUPS {
        out.push('\n');
        if !heading.is_empty() {
            push_wrapped(&mut out, heading, 0, margin);
        }
        for row in rows.iter() {
            push_row(&mut out, row, col, margin);
        }
    }
    out.push_str("\nSupported format sequences:\n\n  ");
    push_wrapped(&mut out, FORMAT_SEQUENCES, 2, margin);
    out.push('\n');
    push_wrapped(&mut out, SYSTEMD_NOTE, 0, margin);
    out.push('\n');
    push_wrapped(&mut out, &bug_report_line(), 0, margin);
    out
}

/// The `--version` text, in the GNU shape scripts expect: line 1 is `rpv <version>`, then copyright, licence and
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
    use crate::display::wrap;

    /// pv 1.11's long option names (`--sparse-output` is its undocumented alias of
    /// `--sparse`), to tell pv's options from rpv's own.
    const PV_LONG_NAMES: &[&str] = &[
        "progress",
        "timer",
        "eta",
        "fineta",
        "rate",
        "average-rate",
        "bytes",
        "bits",
        "si",
        "buffer-percent",
        "last-written",
        "format",
        "numeric",
        "quiet",
        "wait",
        "delay-start",
        "size",
        "gauge",
        "line-mode",
        "null",
        "interval",
        "average-rate-window",
        "width",
        "height",
        "name",
        "bar-style",
        "extra-display",
        "stats",
        "force",
        "cursor",
        "output",
        "rate-limit",
        "buffer-size",
        "no-splice",
        "skip-errors",
        "error-skip-block",
        "stop-at-size",
        "sync",
        "direct-io",
        "sparse",
        "discard",
        "store-and-forward",
        "watchfd",
        "remote",
        "query",
        "monitor",
        "pidfile",
        "help",
        "version",
    ];

    /// Options of the table that are documented: all but later aliases of an earlier row
    /// (`--sparse-output`).
    fn documented_flags() -> Vec<&'static crate::cli::args::Flag> {
        FLAGS
            .iter()
            .enumerate()
            .filter(|(i, f)| FLAGS[..*i].iter().all(|g| g.short != f.short))
            .map(|(_, f)| f)
            .collect()
    }

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
        assert!(help.contains("%{sgr:colour,...}\n\nIn a systemd service"));
        assert!(help.contains("NotifyAccess=all).\n\nPlease"));
    }

    #[test]
    fn every_option_has_a_row() {
        let help = help_text(80);
        let documented = documented_flags();
        for flag in &documented {
            let lead = if long_only(flag.short) {
                format!("\n      --{}", flag.long)
            } else {
                format!("\n  -{}, --{}", flag.short, flag.long)
            };
            let at = help
                .find(&lead)
                .unwrap_or_else(|| panic!("no help row for {lead:?}"));
            let after = help[at + lead.len()..].chars().next();
            // An optional value is attached: `--pipeline[=PID]`.
            assert!(matches!(after, Some(' ' | '\n' | '[')), "{lead:?}");
        }
        let shown = help
            .lines()
            .filter(|l| l.starts_with("  -") || l.starts_with("      --"))
            .count();
        assert_eq!(shown, documented.len());
        assert_eq!(rows().count(), documented.len());
    }

    #[test]
    fn rows_take_values_exactly_when_the_option_does() {
        for row in rows() {
            let flag = FLAGS
                .iter()
                .find(|f| f.short == row.short)
                .expect("known option");
            assert_eq!(flag.long, row.long);
            assert_eq!(
                flag.takes_value || flag.optional,
                !row.arg.is_empty(),
                "--{}",
                row.long
            );
            assert_eq!(flag.optional, row.arg.starts_with("[="), "--{}", row.long);
            if row.arg.is_empty() {
                assert_eq!(
                    row.value,
                    Value::Free,
                    "a switch has no value: --{}",
                    row.long
                );
            }
        }
    }

    #[test]
    fn rpv_own_options_have_a_section_of_their_own_after_pv_options() {
        let help = help_text(80);
        let lines: Vec<&str> = help.lines().collect();
        let heading = lines
            .iter()
            .position(|l| *l == RPV_OWN_HEADING)
            .expect("heading of rpv's own options");
        assert_eq!(lines[heading - 1], "", "a blank line before the heading");
        fn is_row(l: &&&str) -> bool {
            l.starts_with("  -") || l.starts_with("      --")
        }
        let long_name = |l: &str| {
            let at = l.find("--").expect("long name");
            l[at + 2..]
                .split([' ', '=', '['])
                .next()
                .expect("name")
                .to_owned()
        };
        for line in lines[..heading].iter().filter(is_row) {
            let name = long_name(line);
            assert!(
                PV_LONG_NAMES.contains(&name.as_str()),
                "--{name} is not a pv option: its row belongs under {RPV_OWN_HEADING:?}"
            );
        }
        let own: Vec<String> = lines[heading + 1..]
            .iter()
            .take_while(|l| !l.is_empty())
            .filter(is_row)
            .map(|l| long_name(l))
            .collect();
        for name in &own {
            assert!(!PV_LONG_NAMES.contains(&name.as_str()), "--{name} is pv's");
        }
        let expected: Vec<&str> = FLAGS
            .iter()
            .filter(|f| !PV_LONG_NAMES.contains(&f.long) && f.long != "sparse-output")
            .map(|f| f.long)
            .collect();
        assert_eq!(own, expected, "every rpv option, in table order");
        assert!(own.contains(&"completions".to_owned()));
    }

    #[test]
    fn pv_options_keep_pv_identities() {
        for flag in FLAGS {
            let pv = PV_LONG_NAMES.contains(&flag.long) || flag.long == "sparse-output";
            assert_eq!(pv, !long_only(flag.short), "--{}", flag.long);
        }
    }

    #[test]
    fn feature_detection_rows_keep_their_shape() {
        let help = help_text(80);
        assert!(help.lines().any(|l| l.starts_with("  -R, --remote PID ")));
        assert!(help.lines().any(|l| l.starts_with("  -Q, --query PID ")));
        assert!(help
            .lines()
            .any(|l| l.starts_with("  -d, --watchfd PID[:FD]|=NAME|@LISTFILE")));
    }

    #[test]
    fn value_forms_named_in_rows() {
        let help = help_text(80);
        let row = |lead: &str| {
            help.lines()
                .find(|l| l.starts_with(lead))
                .unwrap_or_else(|| panic!("no row {lead:?}"))
                .to_owned()
        };
        assert!(row("  -M, --monitor ").starts_with("  -M, --monitor in|out|both"));
        assert!(row("  -x, --extra-display ").contains(":FORMAT"));
        assert!(row("      --completions ").starts_with("      --completions SHELL "));
    }

    #[test]
    fn option_parts() {
        let row = |short, arg| Row {
            short,
            long: "name",
            arg,
            value: Value::Free,
            text: "",
        };
        assert_eq!(option_part(&row('N', "")), "-N, --name");
        assert_eq!(option_part(&row('N', "NAME")), "-N, --name NAME");
        assert_eq!(option_part(&row('\u{E0FF}', "NAME")), "    --name NAME");
        assert_eq!(option_part(&row('\u{E0FF}', "[=PID]")), "    --name[=PID]");
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
        // Below 43 columns the -d row's option part alone is wider (as in pv's help).
        for width in [43, 50, 60, 80, 100, 132, 200] {
            let help = help_text(width);
            for line in help.lines() {
                assert!(line.len() <= width - 3, "width {width}: {line:?}");
            }
        }
    }

    #[test]
    fn no_line_ends_in_a_space() {
        for width in [0, 20, 40, 43, 60, 80, 100, 132, 200] {
            for line in help_text(width).lines() {
                assert!(!line.ends_with([' ', '\t']), "width {width}: {line:?}");
            }
        }
    }

    #[test]
    fn fits_80_columns() {
        for width in [0, 80] {
            for line in help_text(width).lines() {
                assert!(line.chars().count() <= 80, "{line:?}");
            }
        }
    }

    #[test]
    fn wide_terminals_widen_the_column_only_up_to_the_widest_option() {
        let help = help_text(200);
        let progress = help.lines().find(|l| l.starts_with("  -p,")).expect("row");
        // Widest option part is "-d, --watchfd PID[:FD]|=NAME|@LISTFILE" (38) + 4.
        assert_eq!(progress.find("show"), Some(42));
        assert!(help
            .lines()
            .any(|l| l.starts_with("  -d, --watchfd PID[:FD]|=NAME|@LISTFILE  show")));
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
