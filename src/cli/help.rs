//! `--help` and `--version` text.
//!
//! Owns: pv's help layout for the rows of the option table (`flags`): a description column
//! shared by all rows, word wrapping to the terminal width, groups separated by blank lines,
//! rpv's own options in a group with a heading of its own, and the list of format
//! sequences. Must not: ask the terminal for its width (the caller passes it in), print
//! anything, or name an option (the rows come from `flags`).
//!
//! The man page (`doc/rpv.1`) is written by hand, because it explains far more than a help
//! row can hold; the integration tests (`tests/it/docs.rs`) hold it to `rpv --help`: an
//! option missing from either side, or shown with a different value name, fails them.

use super::flags::{Opt, OPTIONS};
use crate::display::wrap;

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
fn option_part(row: &Opt) -> String {
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
    let widest = OPTIONS
        .iter()
        .map(|r| option_part(r).len())
        .max()
        .unwrap_or(0);
    (widest + 4).min(margin.saturating_sub(50)).max(2)
}

fn push_row(out: &mut String, row: &Opt, col: usize, margin: usize) {
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
pub(crate) fn help_text(width: usize) -> String {
    let margin = right_margin(width);
    let col = description_column(margin);
    let mut out = String::from("Usage: rpv [OPTION] [FILE]...\n");
    push_wrapped(&mut out, DESCRIPTION, 0, margin);
    let mut group = None;
    for row in OPTIONS {
        if group != Some(row.group) {
            group = Some(row.group);
            out.push('\n');
            let heading = row.group.heading();
            if !heading.is_empty() {
                push_wrapped(&mut out, heading, 0, margin);
            }
        }
        push_row(&mut out, row, col, margin);
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
pub(crate) fn version_text() -> String {
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
    use crate::cli::flags::{long_only, Group, Value};
    use crate::display::wrap;

    /// The heading of the group of rpv's own options (pv's groups have none).
    const RPV_OWN_HEADING: &str = Group::Own.heading();

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
        for opt in OPTIONS {
            let lead = match opt.letter() {
                Some(letter) => format!("\n  -{letter}, --{}", opt.long),
                None => format!("\n      --{}", opt.long),
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
        assert_eq!(shown, OPTIONS.len());
        // Aliases are accepted but not shown.
        assert!(!help.contains("sparse-output"));
    }

    #[test]
    fn groups_are_listed_once_each_in_order() {
        let mut seen: Vec<Group> = Vec::new();
        for opt in OPTIONS {
            if seen.last() != Some(&opt.group) {
                assert!(
                    !seen.contains(&opt.group),
                    "{:?} split at --{}",
                    opt.group,
                    opt.long
                );
                seen.push(opt.group);
            }
        }
        assert_eq!(
            seen,
            [
                Group::Display,
                Group::Modifiers,
                Group::Transfer,
                Group::Modes,
                Group::Other,
                Group::Own
            ]
        );
        // One blank line before each group; two around the format sequences' heading, one
        // before the systemd note and one before the last line.
        let help = help_text(80);
        let blank = help.lines().filter(|l| l.is_empty()).count();
        assert_eq!(blank, seen.len() + 4, "{help}");
    }

    #[test]
    fn switches_complete_nothing() {
        for opt in OPTIONS.iter().filter(|o| o.arg.is_empty()) {
            assert_eq!(
                opt.value,
                Value::Free,
                "a switch has no value: --{}",
                opt.long
            );
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
        let expected: Vec<&str> = OPTIONS
            .iter()
            .filter(|f| !PV_LONG_NAMES.contains(&f.long))
            .map(|f| f.long)
            .collect();
        assert_eq!(own, expected, "every rpv option, in table order");
        assert!(own.contains(&"completions".to_owned()));
    }

    #[test]
    fn pv_options_keep_pv_identities() {
        for opt in OPTIONS {
            let pv = PV_LONG_NAMES.contains(&opt.long);
            assert_eq!(pv, !long_only(opt.short), "--{}", opt.long);
            assert_eq!(pv, opt.group != Group::Own, "--{}", opt.long);
            for alias in opt.aliases {
                assert!(pv && *alias == "sparse-output", "--{alias}");
            }
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
        let row = |short, arg| Opt {
            short,
            long: "name",
            aliases: &[],
            arg,
            value: Value::Free,
            text: "",
            group: Group::Other,
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
