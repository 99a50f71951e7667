//! The Prometheus sink (`--metrics-file PATH`): the progress in Prometheus's text format,
//! rewritten at each update and at the end, for node_exporter's textfile collector (the way
//! batch jobs on many machines export metrics).
//!
//! Owns: the series ([`render`]: `rpv_…`, labelled with the `-N` name and rpv's PID, each
//! with its HELP and TYPE lines). Each version replaces the file whole through
//! [`crate::ownfile::replace`] (a temporary file in PATH's directory, named `.NAME.RANDOM.tmp`
//! so the collector's `*.prom` pattern never matches it, renamed over PATH), so a scrape
//! never reads half a file. The plan checks the path (a regular file or nothing, none of the
//! transfer's files) and that the directory takes files before the run starts; a write
//! that fails later is reported once and never disturbs the transfer. The file stays after
//! the run with its final values (`rpv_done 1`, `rpv_exit_status`). Must not: write PATH in
//! place.

use std::fmt::Write as _;
use std::path::PathBuf;

use super::line::is_line;
use super::{DisplayConfig, Reading, Sink, Snapshot};
use crate::meter::{Event, Unit};
use crate::sys;
use crate::term::Term;

/// A label value with `\`, `"` and newlines escaped.
fn label(value: &str) -> String {
    value
        .replace('\\', r"\\")
        .replace('"', r#"\""#)
        .replace('\n', r"\n")
}

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
            self.line(name, kind, help, &value.to_string());
        }
    }

    /// A series whose value is a count (exact, however large).
    fn count(&mut self, name: &str, kind: &str, help: &str, value: u64) {
        self.line(name, kind, help, &value.to_string());
    }

    fn line(&mut self, name: &str, kind: &str, help: &str, value: &str) {
        let _ = writeln!(self.out, "# HELP {name} {help}");
        let _ = writeln!(self.out, "# TYPE {name} {kind}");
        let _ = writeln!(self.out, "{name}{{{}}} {value}", self.labels);
    }
}

/// What the file says at one moment.
#[derive(Debug, Clone, Copy)]
pub struct State {
    /// rpv's PID (a label).
    pub pid: u32,
    /// Wall-clock time now, seconds since the epoch.
    pub now: i64,
    /// The run has ended.
    pub done: bool,
    /// The exit status, once done.
    pub exit: Option<u8>,
}

/// The metrics for reading `r` (none before any meter started) of a transfer named `name`.
pub fn render(r: Option<&Reading<'_>>, name: &str, state: State) -> String {
    let mut t = Text {
        out: String::new(),
        labels: format!("name=\"{}\",pid=\"{}\"", label(name), state.pid),
    };
    if let Some(r) = r {
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
        let avg = r.rates.avg_rate;
        let eta_known = m.size > 0 && !state.done && r.stalled_for.is_none() && m.moved > 0;
        if eta_known && avg.is_finite() && avg > 0.001 {
            t.series(
                "rpv_eta_seconds",
                "gauge",
                "The estimated seconds left, when the size is known and data moves.",
                (m.size.saturating_sub(m.amount) as f64 / avg).round(),
            );
        }
        t.series(
            "rpv_elapsed_seconds",
            "gauge",
            "The seconds the transfer has run (time stopped with Ctrl-Z not counted).",
            r.elapsed,
        );
        t.series(
            "rpv_start_time_seconds",
            "gauge",
            "When the transfer started, in seconds since the Unix epoch.",
            (state.now as f64 - r.elapsed).round(),
        );
        t.count(
            "rpv_stalled",
            "gauge",
            "1 while no data has moved for a while (two updates, at least 2 seconds).",
            u64::from(r.stalled_for.is_some()),
        );
    }
    t.count(
        "rpv_done",
        "gauge",
        "1 once rpv has ended.",
        u64::from(state.done),
    );
    if let Some(exit) = state.exit {
        t.count(
            "rpv_exit_status",
            "gauge",
            "rpv's exit status, once it has ended (0: success; see man rpv).",
            u64::from(exit),
        );
    }
    t.out
}

/// `--metrics-file`.
#[derive(Debug)]
pub struct Metrics {
    path: PathBuf,
    /// The program name, for `--log` warnings.
    prog: String,
    /// rpv's PID (read once).
    pid: u32,
    /// The exit status, from the `Finished` event.
    status: u8,
    /// A failed write was reported (once per run).
    warned: bool,
}

impl Metrics {
    /// A sink writing `path`; `prog` starts its warnings.
    pub fn new(path: PathBuf, prog: &str) -> Metrics {
        Metrics {
            path,
            prog: prog.to_string(),
            pid: std::process::id(),
            status: 0,
            warned: false,
        }
    }

    fn write(
        &mut self,
        snapshot: &Snapshot<'_>,
        config: &DisplayConfig,
        term: &mut Term,
        done: bool,
    ) {
        let r = snapshot
            .readings
            .iter()
            .find(|r| is_line(r.meter.role))
            .or(snapshot.readings.first());
        let name = r
            .and_then(|r| config.label(r.meter))
            .or_else(|| config.name.clone())
            .unwrap_or_default();
        let state = State {
            pid: self.pid,
            now: snapshot.wall_clock().0,
            done,
            exit: done.then_some(self.status),
        };
        let text = render(r, &name, state);
        if let Err(e) = crate::ownfile::replace(&self.path, text.as_bytes()) {
            if !std::mem::replace(&mut self.warned, true) {
                let text = format!(
                    "--metrics-file: {}: {}",
                    self.path.display(),
                    sys::strerror(&e)
                );
                warn(config, term, &self.prog, &text, e.raw_os_error());
            }
        }
    }
}

/// A warning on standard error in the voice of the run: an `rpv: …` line, a time-stamped
/// line with `--log`, a `message` object (a `warning`, with its `errno`) with `--json`.
fn warn(config: &DisplayConfig, term: &mut Term, prog: &str, text: &str, errno: Option<i32>) {
    if config.json {
        let mut message = super::json::message(&crate::error::Error::other(0, text), None);
        message["errno"] = errno.into();
        super::json::write(term, message);
    } else if config.log {
        let stamp = super::log::timestamp(sys::wall_clock());
        term.raw(&format!(
            "{stamp} {prog}: {}\n",
            crate::display::printable(text)
        ));
    } else {
        term.message(text);
    }
}

impl Sink for Metrics {
    fn event(&mut self, event: &Event, _config: &DisplayConfig, _term: &mut Term) {
        if let Event::Finished { status } = event {
            self.status = *status;
        }
    }

    fn update(&mut self, snapshot: &Snapshot<'_>, config: &DisplayConfig, term: &mut Term) {
        if !snapshot.final_update {
            self.write(snapshot, config, term, false);
        }
    }

    fn finish(&mut self, snapshot: &Snapshot<'_>, config: &DisplayConfig, term: &mut Term) {
        self.write(snapshot, config, term, true);
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
        now: 1_800_000_010,
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
            &format!("rpv_start_time_seconds{labels} 1800000000"),
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
