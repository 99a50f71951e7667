//! The flows in Prometheus's text format (pure), for `--top --metrics-file`.
//!
//! Owns: which series the file has and their labels, following Prometheus's rules for
//! labels: the values of a label must come from a bounded set. So only the `limit`
//! busiest flows get series of their own (labelled `kind`, `command` and, for files,
//! `file`; `pid` only when asked, since PIDs are unbounded), the others count in totals
//! per kind and in `rpv_top_flows_omitted`. Byte counts are counters (`_total`), the rest
//! gauges; a flow that counts lines (an `rpv -l`) has its own `lines` families
//! (`rpv_top_flow_lines_total`, ...) and no part in the totals of bytes. The text itself
//! (escaping, numbers: never `-0`) is [`crate::prometheus`]'s. No time stamps (node_exporter's textfile collector refuses files that have
//! them): `rpv_top_last_update_seconds` says when the file was written. A flow that ended
//! is simply not in the next file, so its series go stale. Two flows with the same labels
//! share one series (their figures added up), so the file never repeats a series.
//! Must not: write the file (the sink does, atomically).

use std::collections::BTreeMap;

use super::Kind;
use crate::prometheus::{header, label, number, sample};
use crate::units::Unit;

/// One flow's figures for the file.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Its kind.
    pub kind: Kind,
    /// What it counts: bytes, or lines (an `rpv -l`).
    pub unit: Unit,
    /// Its command line.
    pub command: String,
    /// Its file, for file and device flows.
    pub file: Option<String>,
    /// Its process.
    pub pid: u32,
    /// Units it moved since rpv first saw it.
    pub bytes: u64,
    /// Units per second now.
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

/// A family of per-flow series: its name (`{unit}` stands for `bytes` or `lines`), type,
/// help, and a flow's value (none: the flow has no sample in it).
type Family = (
    &'static str,
    &'static str,
    &'static str,
    fn(&Series) -> Option<String>,
);

/// The per-flow families, in the file's order.
const FAMILIES: [Family; 6] = [
    (
        "rpv_top_flow_{unit}_total",
        "counter",
        "What the flow moved since rpv first saw it.",
        |s| Some(s.bytes.to_string()),
    ),
    (
        "rpv_top_flow_rate_{unit}_per_second",
        "gauge",
        "The flow's rate over the last interval.",
        |s| Some(number(s.rate)),
    ),
    (
        "rpv_top_flow_position_{unit}",
        "gauge",
        "Where the flow is in its file, when the file's size is known.",
        |s| s.position.map(|(at, _)| at.to_string()),
    ),
    (
        "rpv_top_flow_size_{unit}",
        "gauge",
        "The size of the flow's file, when known.",
        |s| s.position.map(|(_, size)| size.to_string()),
    ),
    (
        "rpv_top_flow_eta_seconds",
        "gauge",
        "Seconds until the flow reaches the end of its file, at its average rate.",
        |s| s.eta.map(number),
    ),
    (
        "rpv_top_flow_stalled",
        "gauge",
        "1 if the flow has not moved for a while.",
        |s| Some(u8::from(s.stalled).to_string()),
    ),
];

/// The labels of a flow's series.
fn labels(s: &Series, pids: bool) -> String {
    let command: String = s.command.chars().take(COMMAND_CHARS).collect();
    let mut labels = format!("kind=\"{}\",command=\"{}\"", s.kind.name(), label(&command));
    if let Some(file) = &s.file {
        labels.push_str(&format!(",file=\"{}\"", label(file)));
    }
    if pids {
        labels.push_str(&format!(",pid=\"{}\"", s.pid));
    }
    labels
}

/// One series per label set (two flows with the same labels add up), in `order`.
fn merged(order: &[&Series], pids: bool) -> Vec<(String, Series)> {
    let mut series: Vec<(String, Series)> = Vec::new();
    for s in order {
        let labels = labels(s, pids);
        match series
            .iter_mut()
            .find(|(l, m)| *l == labels && m.unit == s.unit)
        {
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
    series
}

/// The text of the file: the `limit` busiest of `flows` (by rate) with series of their
/// own, PID labels when `pids`, and the totals. A flow that counts lines (an `rpv -l`)
/// has its series in the `lines` families and none in the totals of bytes.
pub fn render(flows: &[Series], limit: usize, pids: bool, totals: &Totals) -> String {
    let mut order: Vec<&Series> = flows.iter().collect();
    order.sort_by(|a, b| b.rate.total_cmp(&a.rate).then(b.bytes.cmp(&a.bytes)));
    let (shown, omitted) = order.split_at(limit.min(order.len()));
    let series = merged(shown, pids);
    let mut out = String::new();
    for unit in [Unit::Bytes, Unit::Lines] {
        let of_unit: Vec<&(String, Series)> =
            series.iter().filter(|(_, s)| s.unit == unit).collect();
        if unit == Unit::Lines && of_unit.is_empty() {
            continue;
        }
        for (name, kind, help, value) in FAMILIES {
            if unit == Unit::Lines && !name.contains("{unit}") {
                continue;
            }
            let name = name.replace("{unit}", unit_name(unit));
            header(&mut out, &name, kind, help);
            for (labels, s) in &of_unit {
                if let Some(v) = value(s) {
                    sample(&mut out, &name, labels, &v);
                }
            }
        }
    }
    kinds(&mut out, flows, totals);
    let machine: [(&str, &str, String); 3] = [
        (
            "rpv_top_flows_omitted",
            "Flows moving now that have no series of their own (beyond --metrics-flows).",
            omitted.len().to_string(),
        ),
        (
            "rpv_top_processes_unreadable",
            "Processes whose flows rpv may not read (other users' processes).",
            totals.unreadable.to_string(),
        ),
        (
            "rpv_top_last_update_seconds",
            "When rpv last wrote this file, seconds since the epoch.",
            format!("{:.3}", totals.now),
        ),
    ];
    for (name, help, value) in machine {
        header(&mut out, name, "gauge", help);
        sample(&mut out, name, "", &value);
    }
    out
}

/// `bytes` or `lines`, in a family's name.
fn unit_name(unit: Unit) -> &'static str {
    match unit {
        Unit::Bytes => "bytes",
        Unit::Lines => "lines",
    }
}

/// The series per kind: flows now, their rate, bytes and flows ended since rpv started
/// (rates and bytes of the flows that count bytes).
fn kinds(out: &mut String, flows: &[Series], totals: &Totals) {
    type PerKind<'a> = (&'a str, &'a str, &'a str, Box<dyn Fn(Kind) -> String + 'a>);
    let of = |kind: Kind| flows.iter().filter(move |s| s.kind == kind);
    let per_kind: [PerKind<'_>; 4] = [
        (
            "rpv_top_flows",
            "gauge",
            "Flows moving now, by kind.",
            Box::new(|k| of(k).count().to_string()),
        ),
        (
            "rpv_top_rate_bytes_per_second",
            "gauge",
            "The rates of the flows moving now, added up by kind.",
            Box::new(|k| {
                number(
                    of(k)
                        .filter(|s| s.unit == Unit::Bytes)
                        .map(|s| s.rate)
                        .sum(),
                )
            }),
        ),
        (
            "rpv_top_bytes_total",
            "counter",
            "Bytes moved by the flows of a kind since rpv started (ended flows included).",
            Box::new(|k| totals.bytes.get(&k).copied().unwrap_or(0).to_string()),
        ),
        (
            "rpv_top_completed_total",
            "counter",
            "Flows that ended since rpv started, by kind.",
            Box::new(|k| totals.completed.get(&k).copied().unwrap_or(0).to_string()),
        ),
    ];
    for (name, kind, help, value) in per_kind {
        header(out, name, kind, help);
        for k in Kind::ALL {
            sample(out, name, &format!("kind=\"{}\"", k.name()), &value(k));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(kind: Kind, command: &str, rate: f64) -> Series {
        Series {
            kind,
            unit: Unit::Bytes,
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

    #[test]
    fn no_negative_zero_anywhere() {
        // No flow at all (the sums of nothing), and flows at rest.
        for flows in [vec![], vec![flow(Kind::File, "cat", 0.0)]] {
            let text = render(&flows, 10, false, &Totals::default());
            assert!(!text.contains("-0"), "{text}");
            assert!(text.contains("rpv_top_rate_bytes_per_second{kind=\"pipeline\"} 0\n"));
        }
    }

    #[test]
    fn the_file_label_escapes_control_characters_as_the_command_does() {
        let mut a = flow(Kind::File, "cat \\e[2J", 1.0);
        a.file = Some("/tmp/f0_\x1b[2J\x1b]0;pwned\x07 cr\r tab\t del\x7f c1\u{9b}".into());
        let text = render(&[a], 10, false, &Totals::default());
        assert!(
            !text.chars().any(|c| c.is_control() && c != '\n'),
            "{text:?}"
        );
        assert!(
            text.contains(
                r#"file="/tmp/f0_\\e[2J\\e]0;pwned\\x07 cr\\r tab\\t del\\x7f c1\\u{009b}""#
            ),
            "{text}"
        );
        assert!(text.contains(r#"command="cat \\e[2J""#), "{text}");
    }

    #[test]
    fn a_flow_of_lines_has_lines_families_and_no_part_in_the_bytes() {
        let mut l = flow(Kind::Rpv, "rpv -l", 50.0);
        l.unit = Unit::Lines;
        l.bytes = 700;
        let b = flow(Kind::Rpv, "rpv -q", 10.0);
        let text = render(&[l, b], 10, false, &Totals::default());
        assert!(
            text.contains("rpv_top_flow_lines_total{kind=\"rpv\",command=\"rpv -l\"} 700\n"),
            "{text}"
        );
        assert!(text.contains("# TYPE rpv_top_flow_rate_lines_per_second gauge\n"));
        assert!(text.contains("rpv_top_flow_bytes_total{kind=\"rpv\",command=\"rpv -q\"} 1000\n"));
        assert!(!text.contains("rpv_top_flow_bytes_total{kind=\"rpv\",command=\"rpv -l\""));
        assert!(
            text.contains("rpv_top_rate_bytes_per_second{kind=\"rpv\"} 10\n"),
            "{text}"
        );
        assert!(text.contains("rpv_top_flows{kind=\"rpv\"} 2\n"));
        // Families of lines only when a flow counts lines.
        let text = render(
            &[flow(Kind::File, "cat", 1.0)],
            10,
            false,
            &Totals::default(),
        );
        assert!(!text.contains("lines"), "{text}");
    }
}
