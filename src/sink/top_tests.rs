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
    m.flow = Some(Box::new(FlowView {
        kind: Kind::File,
        pid,
        command: "cat".into(),
        file: Some(file.into()),
        fd: Some(3),
        writes: false,
        bottleneck: None,
        zoom: Zoom::Watch(pid, Some(3)),
    }));
    m
}

fn top_config(once: bool) -> DisplayConfig {
    DisplayConfig {
        width: 100,
        top: Some(TopConfig {
            metrics_flows: 10,
            metrics_pid: false,
            once,
        }),
        ..config()
    }
}

#[test]
fn the_unreadable_processes_reach_the_title_as_an_event() {
    let c = top_config(false);
    let (mut term, out) = Term::in_memory("rpv", false);
    let mut top = Top::new(&c);
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
    let c = top_config(false);
    let (mut term, out) = Term::in_memory("rpv", false);
    let mut top = Top::new(&c);
    assert_eq!(top.poll_period_ns(), None);
    let mut requests = Vec::new();
    top.tick(&c, &mut term, &mut requests);
    assert!(requests.is_empty(), "{requests:?}");
    assert_eq!(out.take(), "");
}

#[test]
fn once_is_a_plain_frame_on_a_terminal_too() {
    let mut c = top_config(true);
    c.stderr_tty = true;
    let (mut term, out) = Term::in_memory("rpv", true);
    let mut top = Top::new(&c);
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
