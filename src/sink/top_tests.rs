//! Unit tests of `--top`'s view through an in-memory terminal: what reaches it as events,
//! what it asks of the source, and its plain frames.

use super::*;
use crate::meter::MeterState;
use crate::sink::tests::{config, meter, snapshot};
use crate::stats::RateTracker;
use crate::top::{FlowView, Kind, TopConfig};

/// A reader of `file`, process `pid`.
pub(crate) fn flow(id: u64, pid: u32, file: &str) -> MeterState {
    let mut m = meter(id, Role::Flow, 4096, 0);
    let view = FlowView {
        kind: Kind::File,
        pid,
        command: "cat".into(),
        file: Some(file.into()),
        file_bytes: None,
        to: None,
        to_bytes: None,
        fd: Some(3),
        writes: false,
        in_kernel: false,
        unseen: false,
        bottleneck: None,
        zoom: Zoom::Watch(pid, Some(3)),
    };
    m.label = crate::meter::Label::Text(view.name());
    m.subject = crate::meter::Subject::Flow(Box::new(view));
    m
}

fn top_config() -> DisplayConfig {
    DisplayConfig {
        width: 100,
        ..config()
    }
}

#[test]
fn the_unreadable_processes_reach_the_title_as_an_event() {
    let c = top_config();
    let (mut term, out) = Term::in_memory("rpv", false);
    let mut top = Top::new(&c, false);
    let hidden = Hidden {
        count: 3,
        other_users: 3,
        root: false,
    };
    top.event(&Event::Unreadable(hidden), &c, &mut term);
    let tracker = RateTracker::new(30);
    let meters = [flow(1, 4242, "/data/in")];
    top.update(
        &snapshot(&meters, &tracker, 1.0, 100.0, false),
        &c,
        &mut term,
    );
    let frame = out.take();
    assert!(
        frame.starts_with("rpv --top: 1 flow, by rate; 3 processes not readable: other users'"),
        "{frame}"
    );
    assert!(
        frame.contains("4242") && frame.contains("/data/in"),
        "{frame}"
    );
}

#[test]
fn without_keys_the_view_asks_nothing_and_wakes_no_one() {
    let c = top_config();
    let (mut term, out) = Term::in_memory("rpv", false);
    let mut top = Top::new(&c, false);
    assert_eq!(top.poll_period_ns(), None);
    let mut requests = Vec::new();
    top.tick(&c, &mut term, &mut requests);
    assert!(requests.is_empty(), "{requests:?}");
    assert_eq!(out.take(), "");
}

#[test]
fn once_is_a_plain_frame_on_a_terminal_too() {
    let mut c = top_config();
    c.stderr_tty = true;
    let (mut term, out) = Term::in_memory("rpv", true);
    let mut top = Top::new(&c, true);
    assert_eq!(top.poll_period_ns(), None, "no keys with --once");
    let tracker = RateTracker::new(30);
    let meters = [flow(1, 4242, "/data/in"), flow(2, 4243, "/data/other")];
    top.update(
        &snapshot(&meters, &tracker, 1.0, 100.0, false),
        &c,
        &mut term,
    );
    let frame = out.take();
    assert!(!frame.contains('\x1b'), "no cursor movement: {frame:?}");
    assert!(frame.starts_with("rpv --top: 2 flows"), "{frame}");
    assert!(frame.ends_with("\n\n"), "{frame:?}");
    assert_eq!(frame.lines().filter(|l| l.contains("/data/")).count(), 2);
}

// ---- --top --metrics-file ----

fn metrics(
    path: &std::path::Path,
    voice: crate::cli::Voice,
) -> super::super::top_metrics::TopMetrics {
    let report = crate::sink::report::Report::new("rpv", voice);
    let settings = TopConfig {
        metrics_flows: 10,
        metrics_pid: false,
    };
    super::super::top_metrics::TopMetrics::new(path.to_path_buf(), settings, report.warner())
}

#[test]
fn the_metrics_file_is_removed_at_the_end_not_rewritten_idle() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("top.prom");
    let c = top_config();
    let (mut term, out) = Term::in_memory("rpv", false);
    let mut sink = metrics(&path, crate::cli::Voice::Display);
    let tracker = RateTracker::new(30);
    let meters = [flow(1, 4242, "/data/in")];
    let snap = snapshot(&meters, &tracker, 1.0, 100.0, false);
    sink.update(&snap, &c, &mut term);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}: {}", out.take()));
    assert!(text.contains("rpv_top_flows{kind=\"file\"} 1\n"), "{text}");
    assert!(!text.contains("-0"), "{text}");
    sink.finish(&snap, &c, &mut term);
    assert!(!path.exists(), "no file that says a busy machine is idle");
    // A file another process put at the path since is left alone.
    let mut sink = metrics(&path, crate::cli::Voice::Display);
    sink.update(&snap, &c, &mut term);
    std::fs::remove_file(&path).unwrap();
    std::fs::write(&path, "someone else's\n").unwrap();
    sink.finish(&snap, &c, &mut term);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "someone else's\n");
}

#[test]
fn a_failed_metrics_write_under_log_is_a_time_stamped_line_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gone").join("top.prom");
    let c = top_config();
    let (mut term, out) = Term::in_memory("rpv", false);
    let mut sink = metrics(&path, crate::cli::Voice::Log);
    let tracker = RateTracker::new(30);
    let meters = [flow(1, 4242, "/data/in")];
    let snap = snapshot(&meters, &tracker, 1.0, 100.0, false);
    sink.update(&snap, &c, &mut term);
    sink.update(&snap, &c, &mut term);
    let text = out.take();
    assert_eq!(text.lines().count(), 1, "once: {text}");
    let (stamp, said) = text.trim_end().split_once(' ').unwrap();
    assert!(
        stamp.starts_with("20") && stamp.contains('T') && stamp.len() >= 25,
        "time-stamped: {text}"
    );
    assert!(said.starts_with("rpv: --metrics-file: "), "{text}");
    assert!(said.ends_with("No such file or directory"), "{text}");
}

// ---- --top --log ----

#[test]
fn a_flow_in_the_log_has_its_own_time_next_to_its_own_bytes_and_no_bar() {
    let c = DisplayConfig {
        voice: crate::cli::Voice::Log,
        ..top_config()
    };
    let (mut term, out) = Term::in_memory("rpv", false);
    let mut log = super::super::log::Log::new("rpv");
    let tracker = RateTracker::new(30);
    // Seen 2 s ago at 1 GiB into a file of unknown size; 4 MiB moved since.
    let mut m = flow(1, 4242, "/data/out");
    m.amount = 1 << 30;
    m.moved = 4 << 20;
    let mut lines = flow(2, 4343, "/data/in");
    lines.unit = crate::meter::Unit::Lines;
    lines.amount = 1500;
    lines.moved = 1500;
    lines.size = 3000;
    let meters = [m, lines];
    log.update(
        &snapshot(&meters, &tracker, 2.0, 2_097_152.0, false),
        &c,
        &mut term,
    );
    let text = out.take();
    let first = text.lines().find(|l| l.contains("/data/out")).unwrap();
    assert!(
        first.ends_with("cat: reads /data/out: 4.00MiB in 0:00:02 [2.00MiB/s], 1.00GiB in all"),
        "{first}"
    );
    assert!(!text.contains("<=>"), "{text}");
    let second = text.lines().find(|l| l.contains("/data/in")).unwrap();
    assert!(
        second
            .contains(": 1.50k lines in 0:00:02 [2.10M lines/s], 1.50k lines of 3.00k lines (50%)"),
        "{second}"
    );
}

// ---- --top --json ----

#[test]
fn a_flow_of_lines_is_in_lines_in_json() {
    let c = DisplayConfig {
        voice: crate::cli::Voice::Json,
        ..top_config()
    };
    let (mut term, out) = Term::in_memory("rpv", false);
    let ledger = std::rc::Rc::new(std::cell::RefCell::new(
        super::super::json::Ledger::default(),
    ));
    let start = super::super::json::Start {
        mode: "top",
        ..super::super::json::Start::default()
    };
    let mut json = super::super::json::Json::new(start, ledger);
    let tracker = RateTracker::new(30);
    let mut lines = flow(2, 4343, "/data/in");
    lines.unit = crate::meter::Unit::Lines;
    lines.amount = 1500;
    let meters = [flow(1, 4242, "/data/out"), lines];
    json.update(
        &snapshot(&meters, &tracker, 2.0, 10.0, false),
        &c,
        &mut term,
    );
    let objects: Vec<serde_json::Value> = (out.take().lines())
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|o: &serde_json::Value| o["type"] == "progress")
        .collect();
    let of = |pid: u32| objects.iter().find(|o| o["pid"] == pid).unwrap();
    assert_eq!(of(4343)["lines"], 1500, "{objects:?}");
    assert!(of(4343).get("bytes").is_none(), "{objects:?}");
    assert_eq!(of(4242)["bytes"], 4096, "{objects:?}");
}
