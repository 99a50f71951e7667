//! What a run shows: the sinks' drawing settings ([`DisplayConfig`]), the display loop's
//! own settings ([`SessionConfig`]) and the list of outputs ([`OutputKind`]) the app turns
//! into sinks, as ripgrep's high-level arguments choose its printer.
//!
//! Owns: which outputs a run has and in which order, and probing the terminal (size,
//! locale, colour, the terminal's progress indicator). Must not: make a sink.

use std::path::PathBuf;
use std::sync::Arc;

use super::Job;
use crate::cli::{Action, Options, TermProgress, Voice};
use crate::display::{BarStyle, DisplaySwitches};
use crate::session::SessionConfig;
use crate::sink::notify::Notifier;
use crate::sink::{DisplayConfig, Style};
use crate::top::TopConfig;
use crate::{sys, term};

/// One output of a run, in the plan's order; the app makes one sink of each.
#[derive(Debug, Clone)]
pub(crate) enum OutputKind {
    /// Errors and warnings as `rpv: …` lines.
    Messages,
    /// The progress line (its own row with `-c`).
    Line,
    /// `-n`: numbers, one line each.
    Numeric,
    /// Rows in a screen: the watched descriptors (`-d`), or `--each`'s row per input and
    /// total.
    Multi,
    /// `--each`: [`OutputKind::Multi`], or the total's line when `-c` keeps rpv's own row
    /// of the terminal (known as the loop starts).
    Each,
    /// `--pipeline`: the view of the pipeline's stages.
    Stages,
    /// `--top`: the view of the flows; `--once`: one plain frame.
    TopView(bool),
    /// `--json`: NDJSON objects (they carry the messages).
    Json,
    /// `--log`: time-stamped lines (they carry the messages).
    Log,
    /// `-x`: the window title or the process title.
    Title,
    /// `-v`: statistics at the end.
    Stats,
    /// The terminal's progress indicator (`--term-progress`, decided).
    TermProgress,
    /// `NOTIFY_SOCKET`: the progress is also the systemd service's status.
    Notify(Arc<Notifier>),
    /// `--metrics-file` of a transfer, `-d`, `-Q` or `--pipeline`.
    Metrics(PathBuf),
    /// `--metrics-file` of `--top`.
    TopMetrics(PathBuf, TopConfig),
}

/// The outputs of a run of `job`: `--json` or `--log` in place of the display (they carry
/// the messages themselves), else the messages and one view; titles and statistics for
/// a transfer when asked for (watching, `-d` and `--top`, ends with no final figures);
/// then, whatever the display, the terminal's progress indicator, systemd's status and
/// the metrics file when they are on.
pub(super) fn outputs(o: &Options, display: &DisplayConfig, job: &Job) -> Vec<OutputKind> {
    let watching = matches!(job, Job::Watch(_) | Job::Top);
    let mut outputs = match o.voice {
        Voice::Json => vec![OutputKind::Json],
        Voice::Log => vec![OutputKind::Log],
        Voice::Display => {
            let view = match job {
                Job::Top => OutputKind::TopView(o.once),
                _ if matches!(o.action, Action::Pipeline(_)) => OutputKind::Stages,
                Job::Watch(_) if !display.style.numeric => OutputKind::Multi,
                _ => line_view(display),
            };
            vec![OutputKind::Messages, view]
        }
    };
    if !watching {
        if display.extra.is_some() {
            outputs.push(OutputKind::Title);
        }
        if display.stats && o.voice != Voice::Json {
            outputs.push(OutputKind::Stats);
        }
    }
    if term_progress(o, display.stderr_tty) {
        outputs.push(OutputKind::TermProgress);
    }
    if let Some(notifier) = Notifier::from_env() {
        outputs.push(OutputKind::Notify(Arc::new(notifier)));
    }
    if let Some(path) = o.metrics_file.clone() {
        outputs.push(match job {
            Job::Top => OutputKind::TopMetrics(
                path,
                TopConfig {
                    metrics_flows: o.metrics_flows.unwrap_or(crate::cli::DEFAULT_METRICS_FLOWS),
                    metrics_pid: o.metrics_pid,
                },
            ),
            _ => OutputKind::Metrics(path),
        });
    }
    outputs
}

/// A transfer's view without `--pipeline` (also when its pipeline cannot be seen): `-n`'s
/// numbers, `--each`'s rows, or the line.
pub(crate) fn line_view(display: &DisplayConfig) -> OutputKind {
    if display.style.numeric {
        OutputKind::Numeric
    } else if display.each {
        OutputKind::Each
    } else {
        OutputKind::Line
    }
}

/// Whether the terminal's progress indicator is shown: into a pipe or file too with
/// `always`; never with `--json` or `--log`, whose every line is an object or a record (a
/// terminal included).
fn term_progress(o: &Options, stderr_tty: bool) -> bool {
    !o.voice.records()
        && match o.term_progress {
            TermProgress::Never => false,
            TermProgress::Always => true,
            TermProgress::Auto => {
                stderr_tty && !o.quiet && term::progress::supported(&|k| std::env::var(k).ok())
            }
        }
}

/// How the display loop of `o` runs.
pub(super) fn session(o: &Options) -> SessionConfig {
    SessionConfig {
        delay_ns: (o.delay_start * 1e9) as u64,
        average_window: o.average_window,
        // `--top` has nothing to answer `-Q` with.
        control: o.action != Action::Top,
        fixed: (o.width, o.height),
        // A transfer's watchdog: watching (-d, -Q, --pipeline=PID) moves nothing of rpv's.
        stall_timeout: o.stall_timeout.filter(|_| {
            matches!(
                o.action,
                Action::Transfer
                    | Action::StoreAndForward(_)
                    | Action::Monitor(_)
                    | Action::Pipeline(None)
            )
        }),
        // `--top`'s view is a screen of its own.
        cursor: o.cursor && !o.numeric && o.action != Action::Top,
    }
}

/// The display settings of the options, with the terminal probed.
pub(super) fn display(o: &Options) -> DisplayConfig {
    let stderr_tty = sys::isatty(sys::stderr_fd());
    let mut config = DisplayConfig {
        // Only an explicit empty -F turns the display off; `-A 0` alone draws empty lines.
        // `--top` prints its frames into a file or pipe too.
        enabled: (stderr_tty || o.force || o.numeric || o.action == Action::Top)
            && !o.quiet
            && o.format.as_deref() != Some(""),
        force: o.force,
        stats: o.stats,
        switches: switches(o),
        format: o.format.clone(),
        prev_format: o.prev_format.clone(),
        name: o.name.clone(),
        prev_name: o.prev_name.clone(),
        extra: o.extra_display.clone(),
        width: 80,
        height: 25,
        style: Style {
            numeric: o.numeric,
            si: o.si,
            bits: o.bits,
            gauge: o.gauge,
            bar_style: BarStyle::from_name(o.bar_style.as_deref().unwrap_or("plain")),
            utf8: term::utf8_locale(),
            colour: term::colour_allowed(o.force),
        },
        stderr_tty,
        trace: std::env::var_os("RPV_TEST_TRACE").is_some(),
        interval_ns: (o.interval * 1e9) as u64,
        each: o.each,
        voice: o.voice,
        quiet: o.quiet,
    };
    if o.voice == Voice::Log && !o.given('i') {
        // A log gets a line every 10 seconds unless -i says otherwise.
        config.interval_ns = 10_000_000_000;
    }
    config.measure((o.width, o.height));
    config
}

/// The display switches of the options; none given means `-p -t -e -r -b`.
pub(crate) fn switches(o: &Options) -> DisplaySwitches {
    let given = if o.display_switches == 0 {
        DisplaySwitches::from_letters("pterb")
    } else {
        o.switches
    };
    DisplaySwitches {
        last_written: o.last_written,
        name: o.name.is_some(),
        numeric: o.numeric,
        ..given
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::WatchPlan;
    use OutputKind::{Each, Json, Log, Messages, Metrics, Multi, Numeric, Stages, Stats};
    use OutputKind::{Line, Title, TopMetrics, TopView};

    /// The outputs of `args` for `job`, by name, but for the two that depend on the
    /// environment (the terminal's progress indicator, systemd's status).
    fn outputs_of(args: &[&str], job: &Job) -> Vec<String> {
        let args: Vec<std::ffi::OsString> = args.iter().map(Into::into).collect();
        let crate::cli::Parsed::Run(o) = crate::cli::parse("rpv", &args) else {
            panic!("{args:?} does not parse");
        };
        let kinds = outputs(&o, &display(&o), job);
        kinds
            .iter()
            .filter(|k| !matches!(k, OutputKind::Notify(_) | OutputKind::TermProgress))
            .map(|k| format!("{k:?}"))
            .collect()
    }

    fn names(kinds: &[OutputKind]) -> Vec<String> {
        kinds.iter().map(|k| format!("{k:?}")).collect()
    }

    #[test]
    fn the_plan_chooses_the_outputs() {
        let query = Job::Query(1);
        let watch = Job::Watch(WatchPlan {
            targets: Vec::new(),
            problems: Vec::new(),
            size: None,
        });
        assert_eq!(outputs_of(&["-f"], &query), names(&[Messages, Line]));
        assert_eq!(outputs_of(&["-n"], &query), names(&[Messages, Numeric]));
        assert_eq!(outputs_of(&["--each"], &query), names(&[Messages, Each]));
        assert_eq!(outputs_of(&["--json", "-v"], &query), names(&[Json]));
        assert_eq!(outputs_of(&["--log", "-v"], &query), names(&[Log, Stats]));
        assert_eq!(
            outputs_of(&["--pipeline", "-x", "windowtitle", "-v"], &query),
            names(&[Messages, Stages, Title, Stats])
        );
        // Watching ends with no final figures: no title, no statistics.
        assert_eq!(
            outputs_of(&["-x", "windowtitle", "-v", "-d", "1:1"], &watch),
            names(&[Messages, Multi])
        );
        assert_eq!(
            outputs_of(&["-n", "-d", "1:1"], &watch),
            names(&[Messages, Numeric])
        );
        let path = std::path::PathBuf::from("m.prom");
        assert_eq!(
            outputs_of(&["--metrics-file", "m.prom"], &query),
            names(&[Messages, Line, Metrics(path.clone())])
        );
        let top = TopConfig {
            metrics_flows: crate::cli::DEFAULT_METRICS_FLOWS,
            metrics_pid: false,
        };
        assert_eq!(
            outputs_of(&["--top", "--metrics-file", "m.prom"], &Job::Top),
            names(&[Messages, TopView(false), TopMetrics(path, top)])
        );
        assert_eq!(outputs_of(&["--top", "--log"], &Job::Top), names(&[Log]));
    }

    #[test]
    fn a_transfer_without_its_pipeline_falls_back_to_its_view() {
        let view = |args: &[&str]| {
            let args: Vec<std::ffi::OsString> = args.iter().map(Into::into).collect();
            let crate::cli::Parsed::Run(o) = crate::cli::parse("rpv", &args) else {
                panic!("{args:?} does not parse");
            };
            format!("{:?}", line_view(&display(&o)))
        };
        assert_eq!(view(&["--pipeline"]), "Line");
        assert_eq!(view(&["--pipeline", "-n"]), "Numeric");
        assert_eq!(view(&["--pipeline", "--each"]), "Each");
    }
}
