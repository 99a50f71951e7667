//! The Prometheus sink (`--metrics-file PATH`): the progress in Prometheus's text format,
//! rewritten at each update and at the end, for node_exporter's textfile collector (the way
//! batch jobs on many machines export metrics).
//!
//! Owns: the series ([`render`]: `rpv_…`, labelled with the `-N` name and rpv's PID, each
//! with its HELP and TYPE lines, written by [`crate::prometheus`]). Each version replaces the file whole through
//! [`crate::ownfile::replace`] (a temporary file in PATH's directory, named `.NAME.RANDOM.tmp`
//! so the collector's `*.prom` pattern never matches it, renamed over PATH), so a scrape
//! never reads half a file. The plan checks the path (a regular file or nothing, none of the
//! transfer's files) and that the directory takes files before the run starts; a write
//! that fails later is reported once and never disturbs the transfer. The file stays after
//! the run with its final values (`rpv_done 1`, `rpv_exit_status`). Must not: write PATH in
//! place.

use std::path::{Path, PathBuf};

use super::line::is_line;
use super::report::{SharedFinals, Warn};
use super::{DisplayConfig, Reading, Sink, Snapshot};
use crate::meter::{Label, MeterState, Role, Unit};
use crate::prometheus::{header, label, number, sample};
use crate::stats::Rates;
use crate::sys;
use crate::term::Term;

/// The text of the metrics file.
#[derive(Debug, Default)]
struct Text {
    out: String,
    labels: String,
}

impl Text {
    /// One series with its HELP and TYPE lines; a value that is not a finite number is left
    /// out (the series is absent while it is unknown).
    fn series(&mut self, name: &str, kind: &str, help: &str, value: f64) {
        if value.is_finite() {
            self.line(name, kind, help, &number(value));
        }
    }

    /// A series whose value is a count (exact, however large).
    fn count(&mut self, name: &str, kind: &str, help: &str, value: u64) {
        self.line(name, kind, help, &value.to_string());
    }

    fn line(&mut self, name: &str, kind: &str, help: &str, value: &str) {
        header(&mut self.out, name, kind, help);
        sample(&mut self.out, name, &self.labels, value);
    }
}

/// What the file says at one moment.
#[derive(Debug, Clone, Copy)]
pub(crate) struct State {
    /// rpv's PID (a label).
    pub pid: u32,
    /// When the transfer started, seconds since the epoch (with their fraction): found
    /// once, at the first update that has a meter, so the series never moves.
    pub start_time: Option<f64>,
    /// The run has ended.
    pub done: bool,
    /// The exit status, once done.
    pub exit: Option<u8>,
}

/// The `rpv_exit_status` series, for a file rendered with `done` and no `exit` yet.
pub(crate) fn exit_status(name: &str, pid: u32, exit: u8) -> String {
    let mut t = Text {
        out: String::new(),
        labels: labels(name, pid),
    };
    t.count(
        "rpv_exit_status",
        "gauge",
        "rpv's exit status, once it has ended (0: success; see man rpv).",
        u64::from(exit),
    );
    t.out
}

fn labels(name: &str, pid: u32) -> String {
    format!("name=\"{}\",pid=\"{pid}\"", label(name))
}

/// The metrics for reading `r` (none before any meter started) of a transfer named `name`.
pub(crate) fn render(r: Option<&Reading<'_>>, name: &str, state: State) -> String {
    let mut out = r.map(|r| figures(r, name, state)).unwrap_or_default();
    out.push_str(&closing(name, state));
    out
}

/// The series of reading `r`.
fn figures(r: &Reading<'_>, name: &str, state: State) -> String {
    let mut t = Text {
        out: String::new(),
        labels: labels(name, state.pid),
    };
    let m = r.meter;
    let unit = match m.unit {
        Unit::Bytes => "bytes",
        Unit::Lines => "lines",
    };
    t.count(
        &format!("rpv_{unit}_total"),
        "counter",
        &format!("The {unit} rpv has moved so far."),
        m.amount,
    );
    if m.size > 0 {
        t.count(
            &format!("rpv_size_{unit}"),
            "gauge",
            &format!("The size of the transfer in {unit}, when it is known."),
            m.size,
        );
    }
    t.series(
        &format!("rpv_rate_{unit}_per_second"),
        "gauge",
        &format!("The current transfer rate in {unit} per second."),
        r.rates.rate,
    );
    t.series(
        &format!("rpv_average_rate_{unit}_per_second"),
        "gauge",
        &format!("The average transfer rate in {unit} per second."),
        r.rates.avg_rate,
    );
    if let Some(eta) = r.eta().filter(|_| !state.done) {
        t.series(
            "rpv_eta_seconds",
            "gauge",
            "The estimated seconds left, when the size is known and data moves.",
            eta.round(),
        );
    }
    t.series(
        "rpv_elapsed_seconds",
        "gauge",
        "The seconds the transfer has run (time stopped with Ctrl-Z not counted).",
        r.elapsed,
    );
    if let Some(start) = state.start_time {
        t.series(
            "rpv_start_time_seconds",
            "gauge",
            "When the transfer started, in seconds since the Unix epoch.",
            start,
        );
    }
    t.count(
        "rpv_stalled",
        "gauge",
        "1 while no data has moved for a while (two updates, at least 2 seconds).",
        u64::from(r.stalled_for.is_some()),
    );
    t.out
}

/// Whether rpv has ended, and its exit status once known.
fn closing(name: &str, state: State) -> String {
    let mut t = Text {
        out: String::new(),
        labels: labels(name, state.pid),
    };
    t.count(
        "rpv_done",
        "gauge",
        "1 once rpv has ended.",
        u64::from(state.done),
    );
    let mut out = t.out;
    if let Some(exit) = state.exit {
        out.push_str(&exit_status(name, state.pid, exit));
    }
    out
}

/// The reading the file is about: the transfer (or the first meter); with `-d`, the sum of
/// the watched descriptors (kept in `sum`).
fn main_reading<'s>(
    snapshot: &'s Snapshot<'_>,
    sum: &'s mut Option<MeterState>,
) -> Option<Reading<'s>> {
    let descriptors: Vec<&Reading<'_>> = (snapshot.readings.iter())
        .filter(|r| r.meter.role == Role::Descriptor)
        .collect();
    let [first, rest @ ..] = &descriptors[..] else {
        let r = (snapshot.readings.iter())
            .find(|r| is_line(r.meter.role))
            .or(snapshot.readings.first())?;
        return Some(Reading { ..*r });
    };
    let all = || descriptors.iter().map(|r| r.meter);
    let meter = sum.insert(MeterState {
        role: Role::Descriptor,
        unit: first.meter.unit,
        amount: all().map(|m| m.amount).sum(),
        moved: all().map(|m| m.moved).sum(),
        size: if all().all(|m| m.size > 0) {
            all().map(|m| m.size).sum()
        } else {
            0
        },
        label: match rest {
            [] => first.meter.label.clone(),
            _ => Label::None,
        },
        ..MeterState::default()
    });
    let rates = |f: fn(&Rates) -> f64| descriptors.iter().map(|r| f(&r.rates)).sum::<f64>();
    Some(Reading {
        meter,
        elapsed: descriptors.iter().map(|r| r.elapsed).fold(0.0, f64::max),
        rates: Rates {
            rate: rates(|r| r.rate),
            avg_rate: rates(|r| r.avg_rate),
            percentage: first.rates.percentage,
            max_rate: rates(|r| r.max_rate),
        },
        tracker: first.tracker,
        final_update: first.final_update,
        stalled_for: (descriptors.iter().map(|r| r.stalled_for))
            .try_fold(f64::INFINITY, |least, s| s.map(|s| least.min(s))),
    })
}

/// `--metrics-file`.
#[derive(Debug)]
pub(crate) struct Metrics {
    path: PathBuf,
    /// How a failed write is reported.
    warn: Warn,
    /// rpv's PID (read once).
    pid: u32,
    /// When the transfer started (seconds since the epoch), once a meter has started.
    start_time: Option<f64>,
    /// A failed write was reported (once per run).
    warned: bool,
    /// The name label and the series of the last update that had a meter: what the file
    /// keeps when the meters are gone (`-d` of a process that has ended).
    last: Option<(String, String)>,
    /// Where the last version goes, once rpv knows its exit status.
    finals: SharedFinals,
}

impl Metrics {
    /// A sink writing `path`; `prog` starts its warnings; the last version, with the status
    /// rpv exits with, is left in `finals`.
    pub(crate) fn new(path: PathBuf, warn: Warn, finals: SharedFinals) -> Metrics {
        Metrics {
            path,
            warn,
            pid: std::process::id(),
            start_time: None,
            warned: false,
            last: None,
            finals,
        }
    }

    /// The name label and the text for this update, without the exit status.
    fn text(
        &mut self,
        snapshot: &Snapshot<'_>,
        config: &DisplayConfig,
        done: bool,
    ) -> (String, String) {
        let mut sum = None;
        let r = main_reading(snapshot, &mut sum);
        let name = match r.as_ref().map(|r| &r.meter.label) {
            // A watched descriptor: its path, not the row the display shows.
            Some(Label::Descriptor { path, .. }) => Some(path.clone()),
            _ => r.as_ref().and_then(|r| config.label(r.meter)),
        };
        let name = config.name.clone().or(name).unwrap_or_default();
        if let (None, Some(r)) = (self.start_time, &r) {
            let (secs, millis) = sys::unix_time_ms();
            let now = secs as f64 + f64::from(millis) / 1000.0;
            self.start_time = Some(((now - r.elapsed) * 1000.0).round() / 1000.0);
        }
        let state = State {
            pid: self.pid,
            start_time: self.start_time,
            done,
            exit: None,
        };
        if let Some(r) = &r {
            self.last = Some((name.clone(), figures(r, &name, state)));
        }
        match &self.last {
            Some((name, figures)) => {
                // Figures kept from an earlier update: no ETA once done.
                let kept: String = (figures.lines())
                    .filter(|l| !(done && l.contains("rpv_eta_seconds")))
                    .map(|l| format!("{l}\n"))
                    .collect();
                (name.clone(), kept + &closing(name, state))
            }
            None => (name.clone(), closing(&name, state)),
        }
    }
}

/// Writes `text` to `path`, and warns on `term` (once: `warned`) when that fails.
fn write(path: &Path, text: &str, warned: &mut bool, warn: &Warn, term: &mut Term) {
    if let Err(e) = crate::ownfile::replace(path, text.as_bytes()) {
        if !std::mem::replace(warned, true) {
            warn.warn(term, &format!("--metrics-file: {}", path.display()), &e);
        }
    }
}

impl Sink for Metrics {
    fn update(&mut self, snapshot: &Snapshot<'_>, config: &DisplayConfig, term: &mut Term) {
        if !snapshot.final_update {
            let (_, text) = self.text(snapshot, config, false);
            write(&self.path, &text, &mut self.warned, &self.warn, term);
        }
    }

    /// The final figures wait for the status rpv exits with (a `-M` command's, known once
    /// it has ended): they are written by the report's close.
    fn finish(&mut self, snapshot: &Snapshot<'_>, config: &DisplayConfig, _term: &mut Term) {
        let (name, text) = self.text(snapshot, config, true);
        let (path, warn, pid) = (self.path.clone(), self.warn.clone(), self.pid);
        let mut warned = self.warned;
        self.finals.borrow_mut().set(
            "metrics",
            Box::new(move |status| {
                let text = text + &exit_status(&name, pid, status);
                // The display loop is over: nothing else writes on stderr now.
                let mut term = warn.term();
                write(&path, &text, &mut warned, &warn, &mut term);
            }),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meter::{MeterState, Role};
    use crate::stats::{RateTracker, Rates};

    fn reading<'a>(m: &'a MeterState, tracker: &'a RateTracker) -> Reading<'a> {
        Reading {
            meter: m,
            elapsed: 10.0,
            rates: Rates {
                rate: 1000.0,
                avg_rate: 2000.0,
                percentage: 25.0,
                max_rate: 0.0,
            },
            tracker,
            final_update: false,
            stalled_for: None,
        }
    }

    const RUNNING: State = State {
        pid: 42,
        start_time: Some(1_800_000_000.25),
        done: false,
        exit: None,
    };

    #[test]
    fn series_while_running() {
        let tracker = RateTracker::new(30);
        let m = MeterState {
            role: Role::Transfer,
            amount: 20_000,
            moved: 20_000,
            size: 80_000,
            ..MeterState::default()
        };
        let text = render(Some(&reading(&m, &tracker)), "backup", RUNNING);
        let labels = r#"{name="backup",pid="42"}"#;
        for line in [
            "# HELP rpv_bytes_total The bytes rpv has moved so far.",
            "# TYPE rpv_bytes_total counter",
            &format!("rpv_bytes_total{labels} 20000"),
            "# TYPE rpv_size_bytes gauge",
            &format!("rpv_size_bytes{labels} 80000"),
            &format!("rpv_rate_bytes_per_second{labels} 1000"),
            &format!("rpv_average_rate_bytes_per_second{labels} 2000"),
            &format!("rpv_eta_seconds{labels} 30"),
            &format!("rpv_elapsed_seconds{labels} 10"),
            &format!("rpv_start_time_seconds{labels} 1800000000.25"),
            &format!("rpv_stalled{labels} 0"),
            &format!("rpv_done{labels} 0"),
        ] {
            assert!(text.lines().any(|l| l == line), "{line}\n{text}");
        }
        assert!(!text.contains("rpv_exit_status"), "{text}");
        assert!(text.ends_with('\n'));
    }

    #[test]
    fn unknown_values_are_left_out_and_the_end_has_a_status() {
        let tracker = RateTracker::new(30);
        let m = MeterState {
            role: Role::Transfer,
            unit: Unit::Lines,
            amount: 7,
            moved: 7,
            ..MeterState::default()
        };
        let done = State {
            done: true,
            exit: Some(16),
            ..RUNNING
        };
        let text = render(Some(&reading(&m, &tracker)), "", done);
        assert!(
            text.contains("\nrpv_lines_total{name=\"\",pid=\"42\"} 7\n"),
            "{text}"
        );
        assert!(!text.contains("rpv_size"), "size unknown: {text}");
        assert!(!text.contains("rpv_eta"), "no ETA: {text}");
        assert!(text.contains("rpv_done{name=\"\",pid=\"42\"} 1\n"));
        assert!(text.contains("rpv_exit_status{name=\"\",pid=\"42\"} 16\n"));
        // Before any meter started: only whether it is done.
        let text = render(None, "x", RUNNING);
        assert_eq!(
            text.lines()
                .filter(|l| !l.starts_with('#'))
                .collect::<Vec<_>>(),
            ["rpv_done{name=\"x\",pid=\"42\"} 0"]
        );
    }

    #[test]
    fn label_values_are_escaped() {
        let text = render(None, "a \"b\" \\ c\nd", RUNNING);
        assert!(
            text.contains(r#"rpv_done{name="a \"b\" \\ c\nd",pid="42"} 0"#),
            "{text}"
        );
    }
}
