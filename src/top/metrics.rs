//! The flows in Prometheus's text format (pure), for `--top --metrics-file`.
//!
//! Owns: which series the file has and their labels, following Prometheus's rules for
//! labels: the values of a label must come from a bounded set. So only the `limit`
//! busiest flows get series of their own (labelled `kind`, `command` and, for files,
//! `file`; `pid` only when asked, since PIDs are unbounded), the others count in totals
//! per kind and in `rpv_top_flows_omitted`. Byte counts are counters (`_total`), the rest
//! gauges; no time stamps (node_exporter's textfile collector refuses files that have
//! them): `rpv_top_last_update_seconds` says when the file was written. A flow that ended
//! is simply not in the next file, so its series go stale. Two flows with the same labels
//! share one series (their figures added up), so the file never repeats a series.
//! Must not: write the file (the sink does, atomically).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::Kind;

/// One flow's figures for the file.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Its kind.
    pub kind: Kind,
    /// Its command line.
    pub command: String,
    /// Its file, for file and device flows.
    pub file: Option<String>,
    /// Its process.
    pub pid: u32,
    /// Bytes it moved since rpv first saw it.
    pub bytes: u64,
    /// Bytes per second now.
    pub rate: f64,
    /// Its position and size, when its size is known.
    pub position: Option<(u64, u64)>,
    /// Seconds to its end, when known.
    pub eta: Option<f64>,
    /// It has not moved for a while.
    pub stalled: bool,
}

/// What the file says beyond the flows of this update.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Totals {
    /// Bytes moved per kind since rpv started (flows that ended included).
    pub bytes: BTreeMap<Kind, u64>,
    /// Flows ended per kind since rpv started.
    pub completed: BTreeMap<Kind, u64>,
    /// Processes rpv may not read.
    pub unreadable: usize,
    /// Wall-clock time of this update, seconds since the epoch.
    pub now: f64,
}

/// Characters of a command line kept in the `command` label (a label is an identity, not
/// a record: a compiler's whole command line would make every series kilobytes long).
const COMMAND_CHARS: usize = 120;

/// A label value with `\`, `"` and newlines escaped.
fn escape(value: &str) -> String {
    value
        .replace('\\', r"\\")
        .replace('"', r#"\""#)
        .replace('\n', r"\n")
}

fn head(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// A finite number as Prometheus writes it.
fn number(x: f64) -> String {
    if x.is_finite() {
        format!("{x}")
    } else {
        "NaN".into()
    }
}

/// The text of the file: the `limit` busiest of `flows` (by rate) with series of their
/// own, PID labels when `pids`, and the totals.
pub fn render(flows: &[Series], limit: usize, pids: bool, totals: &Totals) -> String {
    let mut order: Vec<&Series> = flows.iter().collect();
    order.sort_by(|a, b| b.rate.total_cmp(&a.rate).then(b.bytes.cmp(&a.bytes)));
    let (shown, omitted) = order.split_at(limit.min(order.len()));
    // One series per label set, in the order of the busiest.
    let mut series: Vec<(String, Series)> = Vec::new();
    for s in shown {
        let mut labels = format!(
            "kind=\"{}\",command=\"{}\"",
            s.kind.name(),
            escape(&s.command.chars().take(COMMAND_CHARS).collect::<String>())
        );
        if let Some(file) = &s.file {
            let _ = write!(labels, ",file=\"{}\"", escape(file));
        }
        if pids {
            let _ = write!(labels, ",pid=\"{}\"", s.pid);
        }
        match series.iter_mut().find(|(l, _)| *l == labels) {
            Some((_, sum)) => {
                sum.bytes = sum.bytes.saturating_add(s.bytes);
                sum.rate += s.rate;
                sum.position = None;
                sum.eta = None;
                sum.stalled &= s.stalled;
            }
            None => series.push((labels, (*s).clone())),
        }
    }
    let mut out = String::new();
    head(
        &mut out,
        "rpv_top_flow_bytes_total",
        "counter",
        "Bytes the flow moved since rpv first saw it.",
    );
    for (labels, s) in &series {
        let _ = writeln!(out, "rpv_top_flow_bytes_total{{{labels}}} {}", s.bytes);
    }
    head(
        &mut out,
        "rpv_top_flow_rate_bytes_per_second",
        "gauge",
        "The flow's rate over the last interval.",
    );
    for (labels, s) in &series {
        let _ = writeln!(
            out,
            "rpv_top_flow_rate_bytes_per_second{{{labels}}} {}",
            number(s.rate)
        );
    }
    head(
        &mut out,
        "rpv_top_flow_position_bytes",
        "gauge",
        "Where the flow is in its file, when the file's size is known.",
    );
    for (labels, s) in &series {
        if let Some((position, _)) = s.position {
            let _ = writeln!(out, "rpv_top_flow_position_bytes{{{labels}}} {position}");
        }
    }
    head(
        &mut out,
        "rpv_top_flow_size_bytes",
        "gauge",
        "The size of the flow's file, when known.",
    );
    for (labels, s) in &series {
        if let Some((_, size)) = s.position {
            let _ = writeln!(out, "rpv_top_flow_size_bytes{{{labels}}} {size}");
        }
    }
    head(
        &mut out,
        "rpv_top_flow_eta_seconds",
        "gauge",
        "Seconds until the flow reaches the end of its file, at its average rate.",
    );
    for (labels, s) in &series {
        if let Some(eta) = s.eta {
            let _ = writeln!(out, "rpv_top_flow_eta_seconds{{{labels}}} {}", number(eta));
        }
    }
    head(
        &mut out,
        "rpv_top_flow_stalled",
        "gauge",
        "1 if the flow has not moved for a while.",
    );
    for (labels, s) in &series {
        let _ = writeln!(
            out,
            "rpv_top_flow_stalled{{{labels}}} {}",
            u8::from(s.stalled)
        );
    }
    kinds(&mut out, flows, totals);
    head(
        &mut out,
        "rpv_top_flows_omitted",
        "gauge",
        "Flows moving now that have no series of their own (beyond --metrics-flows).",
    );
    let _ = writeln!(out, "rpv_top_flows_omitted {}", omitted.len());
    head(
        &mut out,
        "rpv_top_processes_unreadable",
        "gauge",
        "Processes whose flows rpv may not read (other users' processes).",
    );
    let _ = writeln!(out, "rpv_top_processes_unreadable {}", totals.unreadable);
    head(
        &mut out,
        "rpv_top_last_update_seconds",
        "gauge",
        "When rpv last wrote this file, seconds since the epoch.",
    );
    let _ = writeln!(out, "rpv_top_last_update_seconds {:.3}", totals.now);
    out
}

/// The series per kind: flows now, their rate, bytes and flows ended since rpv started.
fn kinds(out: &mut String, flows: &[Series], totals: &Totals) {
    head(out, "rpv_top_flows", "gauge", "Flows moving now, by kind.");
    for kind in Kind::ALL {
        let n = flows.iter().filter(|s| s.kind == kind).count();
        let _ = writeln!(out, "rpv_top_flows{{kind=\"{}\"}} {n}", kind.name());
    }
    head(
        out,
        "rpv_top_rate_bytes_per_second",
        "gauge",
        "The rates of the flows moving now, added up by kind.",
    );
    for kind in Kind::ALL {
        let rate: f64 = flows
            .iter()
            .filter(|s| s.kind == kind)
            .map(|s| s.rate)
            .sum();
        let _ = writeln!(
            out,
            "rpv_top_rate_bytes_per_second{{kind=\"{}\"}} {}",
            kind.name(),
            number(rate)
        );
    }
    head(
        out,
        "rpv_top_bytes_total",
        "counter",
        "Bytes moved by the flows of a kind since rpv started (ended flows included).",
    );
    for kind in Kind::ALL {
        let bytes = totals.bytes.get(&kind).copied().unwrap_or(0);
        let _ = writeln!(
            out,
            "rpv_top_bytes_total{{kind=\"{}\"}} {bytes}",
            kind.name()
        );
    }
    head(
        out,
        "rpv_top_completed_total",
        "counter",
        "Flows that ended since rpv started, by kind.",
    );
    for kind in Kind::ALL {
        let n = totals.completed.get(&kind).copied().unwrap_or(0);
        let _ = writeln!(
            out,
            "rpv_top_completed_total{{kind=\"{}\"}} {n}",
            kind.name()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(kind: Kind, command: &str, rate: f64) -> Series {
        Series {
            kind,
            command: command.into(),
            file: None,
            pid: 42,
            bytes: 1000,
            rate,
            position: None,
            eta: None,
            stalled: false,
        }
    }

    #[test]
    fn only_the_busiest_get_series_of_their_own() {
        let flows = vec![
            flow(Kind::Socket, "ssh a", 10.0),
            flow(Kind::File, "cat", 30.0),
            flow(Kind::Socket, "curl", 20.0),
        ];
        let text = render(&flows, 2, false, &Totals::default());
        assert!(text.contains("rpv_top_flow_bytes_total{kind=\"file\",command=\"cat\"} 1000"));
        assert!(text.contains("command=\"curl\""));
        assert!(!text.contains("ssh a"), "{text}");
        assert!(text.contains("rpv_top_flows_omitted 1\n"));
        assert!(text.contains("rpv_top_flows{kind=\"socket\"} 2\n"));
        assert!(text.contains("rpv_top_rate_bytes_per_second{kind=\"socket\"} 30\n"));
        assert!(!text.contains("pid="), "no PID labels unless asked");
        assert!(render(&flows, 2, true, &Totals::default()).contains(",pid=\"42\""));
    }

    #[test]
    fn no_time_stamps_and_each_series_once() {
        let mut a = flow(Kind::File, "gzip \"x\"\n", 1.0);
        a.file = Some("/tmp/a\\b".into());
        a.position = Some((10, 100));
        a.eta = Some(5.0);
        let b = a.clone();
        let text = render(&[a, b], 10, false, &Totals::default());
        let mut seen = std::collections::HashSet::new();
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let fields: Vec<&str> = line.rsplitn(2, ' ').collect();
            assert_eq!(fields.len(), 2, "value without time stamp: {line}");
            assert!(
                seen.insert(fields[1].to_string()),
                "repeated series: {line}"
            );
        }
        assert!(
            text.contains(r#"command="gzip \"x\"\n",file="/tmp/a\\b"} 2000"#),
            "{text}"
        );
        assert!(
            !text.contains("rpv_top_flow_eta_seconds{"),
            "merged: no single ETA"
        );
    }
}
