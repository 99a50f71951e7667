//! Unit tests of the sinks, through an in-memory terminal: what each writes for given
//! snapshots and events.

use std::cell::OnceCell;

use super::*;
use crate::meter::{Event, MeterState, Phase};
use crate::stats::RateTracker;
use crate::term::memory::MemoryTerm;

/// A display that shows (as with `-f`) at 60×10, with the default switches.
pub(crate) fn config() -> DisplayConfig {
    DisplayConfig {
        enabled: true,
        force: true,
        width: 60,
        height: 10,
        interval_ns: 1_000_000_000,
        switches: DisplaySwitches::from_letters("pterb"),
        ..DisplayConfig::default()
    }
}

/// A running meter whose clock has started.
pub(crate) fn meter(id: MeterId, role: Role, amount: u64, size: u64) -> MeterState {
    MeterState {
        id,
        role,
        amount,
        moved: amount,
        size,
        started_ns: Some(0),
        ..MeterState::default()
    }
}

/// A snapshot of `meters` at `elapsed` seconds, moving at `rate` units/s, with a fixed
/// wall clock (2026-11-23T19:00:01Z).
pub(crate) fn snapshot<'a>(
    meters: &'a [MeterState],
    tracker: &'a RateTracker,
    elapsed: f64,
    rate: f64,
    final_update: bool,
) -> Snapshot<'a> {
    let readings = meters
        .iter()
        .map(|m| Reading {
            meter: m,
            elapsed,
            rates: Rates {
                rate,
                avg_rate: rate,
                percentage: if m.size > 0 {
                    100.0 * m.amount as f64 / m.size as f64
                } else {
                    0.0
                },
                max_rate: rate,
            },
            tracker,
            final_update,
            stalled_for: None,
        })
        .collect();
    let clock = OnceCell::new();
    let _ = clock.set((1_795_460_401, 0));
    Snapshot {
        readings,
        final_update,
        clock,
    }
}

/// [`config`] with the format `-F FORMAT`.
fn format(format: &str) -> DisplayConfig {
    DisplayConfig {
        format: Some(format.into()),
        ..config()
    }
}

fn term(tty: bool) -> (Term, MemoryTerm) {
    Term::in_memory("rpv", tty)
}

fn numeric_config() -> DisplayConfig {
    let mut c = config();
    c.style.numeric = true;
    c.switches = DisplaySwitches {
        numeric: true,
        ..DisplaySwitches::default()
    };
    c
}

fn json_sink(mode: &'static str, ledger: &json::SharedLedger) -> json::Json {
    let start = json::Start {
        mode,
        unit: Unit::Bytes,
        inputs: vec![("in.dat".into(), Some(4096))],
        outputs: Vec::new(),
        size: 4096,
    };
    json::Json::new(start, std::rc::Rc::clone(ledger))
}

/// The JSON objects written, one per line.
fn objects(text: &str) -> Vec<serde_json::Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
        .collect()
}

fn error(text: &str) -> Event {
    Event::Error(crate::error::Error::other(
        crate::error::status::TRANSFER,
        text,
    ))
}

/// What most tests set up: a terminal (a terminal or not) read back from memory, and a
/// rate tracker for the snapshots.
struct Rig {
    tracker: RateTracker,
    term: Term,
    out: MemoryTerm,
}

impl Rig {
    fn new(tty: bool) -> Rig {
        let (term, out) = term(tty);
        Rig {
            tracker: RateTracker::new(30),
            term,
            out,
        }
    }

    /// Hands `sink` an update: `meters` at `elapsed` seconds, moving at `rate` units/s.
    fn update(
        &mut self,
        sink: &mut dyn Sink,
        meters: &[MeterState],
        elapsed: f64,
        rate: f64,
        c: &DisplayConfig,
    ) {
        let snap = snapshot(meters, &self.tracker, elapsed, rate, false);
        sink.update(&snap, c, &mut self.term);
    }

    /// Hands `sink` the final update, as [`Rig::update`].
    fn finish(
        &mut self,
        sink: &mut dyn Sink,
        meters: &[MeterState],
        elapsed: f64,
        rate: f64,
        c: &DisplayConfig,
    ) {
        let snap = snapshot(meters, &self.tracker, elapsed, rate, true);
        sink.finish(&snap, c, &mut self.term);
    }

    /// What was written since the last look.
    fn take(&self) -> String {
        self.out.take()
    }
}

// ---- the line ----

#[test]
fn the_line_is_the_default_format_ended_by_a_carriage_return() {
    let meters = [meter(1, Role::Transfer, 1024, 4096)];
    let mut rig = Rig::new(true);
    let mut line = line::Line::default();
    rig.update(&mut line, &meters, 2.0, 512.0, &config());
    assert_eq!(
        rig.take(),
        "1.00KiB 0:00:02 [ 512  B/s] [==>          ]  25% ETA 0:00:06\r"
    );
}

#[test]
fn a_shorter_line_is_padded_over_the_longer_one() {
    let mut c = format("%N");
    c.name = Some("a longer one".into());
    let mut rig = Rig::new(true);
    let mut line = line::Line::default();
    let meters = [meter(1, Role::Transfer, 5, 0)];
    rig.update(&mut line, &meters, 1.0, 0.0, &c);
    c.name = Some("short".into());
    rig.update(&mut line, &meters, 1.0, 0.0, &c);
    assert_eq!(
        rig.out.screen(20, 2)[0],
        "    short:",
        "no debris of the longer line"
    );
    assert_eq!(rig.take(), "a longer one:\r    short:   \r");
}

#[test]
fn the_line_shows_nothing_when_the_display_is_off() {
    let mut c = config();
    c.enabled = false;
    let meters = [meter(1, Role::Transfer, 1024, 4096)];
    let mut rig = Rig::new(true);
    let mut line = line::Line::default();
    rig.update(&mut line, &meters, 1.0, 1.0, &c);
    rig.finish(&mut line, &meters, 1.0, 1.0, &c);
    assert_eq!(rig.take(), "", "no line, so no newline at the end either");
}

#[test]
fn the_line_shows_transfers_only_not_inputs_or_descriptors() {
    let c = format("%b");
    let meters = [
        meter(1, Role::Input(0), 1, 0),
        meter(2, Role::Descriptor, 2, 0),
        meter(3, Role::Transfer, 3, 0),
        meter(4, Role::Output(0), 4, 0),
    ];
    let mut rig = Rig::new(true);
    let mut line = line::Line::default();
    rig.update(&mut line, &meters, 1.0, 0.0, &c);
    assert_eq!(rig.take(), "3.00  B\r");
    // Nothing but inputs: nothing at all.
    rig.update(&mut line, &meters[..2], 1.0, 0.0, &c);
    assert_eq!(rig.take(), "");
}

#[test]
fn both_sides_of_monitor_both_get_a_line() {
    let c = format("%b");
    let meters = [
        meter(1, Role::MonitorIn, 10, 0),
        meter(2, Role::MonitorOut, 20, 0),
    ];
    let mut rig = Rig::new(true);
    let mut line = line::Line::default();
    rig.update(&mut line, &meters, 1.0, 0.0, &c);
    assert_eq!(rig.take(), "10.0  B\r20.0  B\r");
}

#[test]
fn the_run_ends_with_a_newline_after_a_line() {
    let c = format("%b");
    let meters = [meter(1, Role::Transfer, 7, 0)];
    let mut rig = Rig::new(true);
    let mut line = line::Line::default();
    rig.update(&mut line, &meters, 1.0, 0.0, &c);
    rig.finish(&mut line, &meters, 1.0, 0.0, &c);
    assert_eq!(rig.take(), "7.00  B\r\n");
}

#[test]
fn after_an_interrupt_the_next_line_starts_with_a_carriage_return() {
    let c = format("%b");
    let meters = [meter(1, Role::Transfer, 7, 0)];
    let mut rig = Rig::new(true);
    let mut line = line::Line::default();
    rig.term.interrupted();
    rig.update(&mut line, &meters, 1.0, 0.0, &c);
    rig.update(&mut line, &meters, 1.0, 0.0, &c);
    assert_eq!(rig.take(), "\r7.00  B\r7.00  B\r", "once only");
}

#[test]
fn a_changed_format_is_used_after_reconfigure() {
    let mut c = format("%b");
    let meters = [meter(1, Role::Transfer, 7, 0)];
    let mut rig = Rig::new(true);
    let mut line = line::Line::default();
    rig.update(&mut line, &meters, 1.0, 0.0, &c);
    c.format = Some("<%b>".into());
    line.reconfigure(&c);
    rig.update(&mut line, &meters, 1.0, 0.0, &c);
    assert_eq!(rig.take(), "7.00  B\r<7.00  B>\r");
}

// ---- numeric ----

#[test]
fn numeric_mode_writes_a_percentage_per_line() {
    let meters = [meter(1, Role::Transfer, 1024, 4096)];
    let mut rig = Rig::new(false);
    let mut numeric = numeric::Numeric::default();
    rig.update(&mut numeric, &meters, 1.0, 0.0, &numeric_config());
    let meters = [meter(1, Role::Transfer, 2048, 4096)];
    rig.update(&mut numeric, &meters, 2.0, 0.0, &numeric_config());
    assert_eq!(rig.take(), "25\n50\n");
}

#[test]
fn numeric_mode_with_timer_and_bytes_writes_those_first() {
    let mut c = numeric_config();
    c.switches.timer = true;
    c.switches.bytes = true;
    let meters = [meter(1, Role::Transfer, 1024, 0)];
    let mut rig = Rig::new(false);
    rig.update(&mut numeric::Numeric::default(), &meters, 2.5, 0.0, &c);
    assert_eq!(rig.take(), "2.5000 1024\n");
}

#[test]
fn numeric_descriptors_are_limited_to_the_height_and_inputs_skipped() {
    let mut c = numeric_config();
    c.height = 2;
    let meters = [
        meter(1, Role::Descriptor, 1, 100),
        meter(2, Role::Input(0), 50, 100),
        meter(3, Role::Descriptor, 2, 100),
        meter(4, Role::Descriptor, 3, 100),
    ];
    let mut rig = Rig::new(false);
    rig.update(&mut numeric::Numeric::default(), &meters, 1.0, 0.0, &c);
    assert_eq!(rig.take(), "1\n2\n");
}

// ---- messages ----

#[test]
fn a_message_is_a_line_of_its_own_after_the_progress_line() {
    let c = format("%b");
    let meters = [meter(1, Role::Transfer, 7, 0)];
    let mut rig = Rig::new(true);
    messages::Messages.event(&error("x: gone"), &c, &mut rig.term);
    rig.update(&mut line::Line::default(), &meters, 1.0, 0.0, &c);
    messages::Messages.event(&error("y: gone"), &c, &mut rig.term);
    assert_eq!(rig.take(), "rpv: x: gone\n7.00  B\r\nrpv: y: gone\n");
}

#[test]
fn path_choices_are_messages_only_under_the_trace_hook() {
    let event = Event::PathChosen {
        input: 0,
        name: "f".into(),
        path: "Splice",
    };
    let (mut term, out) = term(false);
    let mut c = config();
    messages::Messages.event(&event, &c, &mut term);
    messages::Messages.event(
        &Event::InputDone {
            input: 0,
            bytes: 1,
            lines: 0,
            at_ns: 0,
            interrupted: false,
        },
        &c,
        &mut term,
    );
    assert_eq!(out.take(), "");
    c.trace = true;
    messages::Messages.event(&event, &c, &mut term);
    assert_eq!(out.take(), "rpv: trace: f: Splice\n");
}

#[test]
fn control_characters_in_messages_are_escaped_on_a_terminal_only() {
    let c = config();
    let (mut tty, on_tty) = term(true);
    messages::Messages.event(&error("a\x1b[2Jb"), &c, &mut tty);
    assert!(!on_tty.text().contains('\x1b'), "{:?}", on_tty.text());
    assert!(on_tty.text().starts_with("rpv: a"));
    let (mut file, in_file) = term(false);
    messages::Messages.event(&error("a\x1b[2Jb"), &c, &mut file);
    assert_eq!(in_file.text(), "rpv: a\x1b[2Jb\n");
}

#[test]
fn skipped_read_errors_are_shown_once_asked_for() {
    let c = config();
    let (mut term, out) = term(false);
    let skip = |shown| Event::ReadErrorSkipped {
        name: "disk".into(),
        from: 512,
        to: 1024,
        shown,
    };
    messages::Messages.event(&skip(false), &c, &mut term);
    messages::Messages.event(&skip(true), &c, &mut term);
    assert_eq!(
        out.take(),
        "rpv: disk: skipped past read error: 512 - 1024 (512 B)\n"
    );
}

// ---- stats ----

#[test]
fn stats_are_written_at_the_end_in_the_meter_unit() {
    let mut rig = Rig::new(false);
    for (t, amount) in [(1.0, 100), (2.0, 300), (3.0, 600)] {
        rig.tracker.update(t, amount, 0, false);
    }
    let meters = [
        meter(1, Role::Transfer, 600, 0),
        meter(2, Role::Input(0), 600, 0),
    ];
    let mut c = config();
    rig.finish(&mut stats::Stats, &meters, 3.0, 0.0, &c);
    let bytes = rig.take();
    assert_eq!(bytes.lines().count(), 1, "transfers only: {bytes:?}");
    assert!(bytes.starts_with("rate min/avg/max/mdev = "), "{bytes:?}");
    assert!(bytes.ends_with(" B/s\n"), "{bytes:?}");
    c.style.bits = true;
    rig.finish(&mut stats::Stats, &meters[..1], 3.0, 0.0, &c);
    assert!(rig.take().ends_with(" b/s\n"));
    let mut lines = meters[..1].to_vec();
    lines[0].unit = Unit::Lines;
    rig.finish(&mut stats::Stats, &lines, 3.0, 0.0, &c);
    let text = rig.take();
    assert!(text.ends_with(" /s\n") && !text.contains("B/s"), "{text:?}");
}

#[test]
fn stats_say_so_when_nothing_was_measured() {
    let meters = [meter(1, Role::Transfer, 0, 0)];
    let mut rig = Rig::new(false);
    rig.finish(&mut stats::Stats, &meters, 0.0, 0.0, &config());
    assert_eq!(rig.take(), "rate not measured\n");
}

// ---- json ----

#[test]
fn json_starts_with_one_start_object_then_progress() {
    let ledger = json::SharedLedger::default();
    let mut sink = json_sink("transfer", &ledger);
    let meters = [
        meter(1, Role::Transfer, 1024, 4096),
        meter(2, Role::Input(0), 1024, 4096),
    ];
    let mut rig = Rig::new(false);
    let c = config();
    rig.update(&mut sink, &meters, 1.0, 1024.0, &c);
    rig.update(&mut sink, &meters, 2.0, 0.0, &c);
    let objects = objects(&rig.take());
    let types: Vec<&str> = objects
        .iter()
        .map(|o| o["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["start", "progress", "progress"]);
    let start = &objects[0];
    assert_eq!(start["mode"], "transfer");
    assert_eq!(start["unit"], "bytes");
    assert_eq!(start["size"], 4096);
    assert_eq!(start["interval"], 1.0);
    assert_eq!(start["inputs"][0]["name"], "in.dat");
    let progress = &objects[1];
    assert_eq!(progress["bytes"], 1024);
    assert_eq!(progress["size"], 4096);
    assert_eq!(progress["percent"], 25.0);
    // The input's figures are inside the transfer's object, not an object of their own.
    assert_eq!(progress["inputs"][0]["bytes"], 1024);
    assert!(objects.iter().all(|o| o["time"].is_string()));
}

#[test]
fn json_quiet_writes_messages_but_no_progress() {
    let ledger = json::SharedLedger::default();
    let mut sink = json_sink("transfer", &ledger);
    let meters = [meter(1, Role::Transfer, 1024, 4096)];
    let mut rig = Rig::new(false);
    let mut c = config();
    c.quiet = true;
    rig.update(&mut sink, &meters, 1.0, 1.0, &c);
    sink.event(&Event::OutputGone, &c, &mut rig.term);
    sink.event(&error("disk full"), &c, &mut rig.term);
    let objects = objects(&rig.take());
    let types: Vec<&str> = objects
        .iter()
        .map(|o| o["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["start", "message"]);
    assert_eq!(objects[1]["text"], "disk full");
    assert_eq!(objects[1]["level"], "error");
}

#[test]
fn json_end_is_written_once_by_the_ledger_with_the_status_and_totals() {
    let ledger = json::SharedLedger::default();
    let mut sink = json_sink("transfer", &ledger);
    let meters = [meter(1, Role::Transfer, 4096, 4096)];
    let mut rig = Rig::new(false);
    let c = config();
    sink.event(&Event::Finished { status: 1 }, &c, &mut rig.term);
    rig.finish(&mut sink, &meters, 2.0, 2048.0, &c);
    let before_close = objects(&rig.take());
    assert_eq!(before_close.len(), 1, "only the start: {before_close:?}");
    ledger.borrow_mut().close(1, false, &mut rig.term);
    let end = objects(&rig.take());
    assert_eq!(end.len(), 1);
    let end = &end[0];
    assert_eq!(end["type"], "end");
    assert_eq!(end["status"], 1);
    assert_eq!(end["interrupted"], false);
    assert_eq!(end["bytes"], 4096);
    assert_eq!(end["elapsed"], 2.0);
    assert_eq!(end["meters"][0]["done"], true);
}

#[test]
fn json_without_a_display_loop_still_ends_with_one_end() {
    let ledger = json::SharedLedger::default();
    let (mut term, out) = term(false);
    ledger.borrow_mut().close(64, false, &mut term);
    let objects = objects(&out.take());
    assert_eq!(objects.len(), 1);
    assert_eq!(objects[0]["type"], "end");
    assert_eq!(objects[0]["status"], 64);
    assert_eq!(objects[0]["meters"], serde_json::json!([]));
}

#[test]
fn json_messages_before_the_start_wait_for_it() {
    let ledger = json::SharedLedger::default();
    let (mut term, out) = term(false);
    let early = json::message(&crate::error::Error::other(0, "early warning"), None);
    ledger.borrow_mut().message(early, &mut term);
    assert_eq!(out.take(), "", "held until the start");
    let mut sink = json_sink("transfer", &ledger);
    sink.event(&Event::OutputGone, &config(), &mut term);
    let objects = objects(&out.take());
    let types: Vec<&str> = objects
        .iter()
        .map(|o| o["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["start", "message", "output"]);
    assert_eq!(objects[1]["level"], "warning");
}

#[test]
fn json_a_second_loop_turns_the_first_end_into_phase_end() {
    let ledger = json::SharedLedger::default();
    let mut rig = Rig::new(false);
    let c = config();
    let meters = [meter(1, Role::Transfer, 10, 0)];
    let mut store = json_sink("store", &ledger);
    rig.finish(&mut store, &meters, 1.0, 10.0, &c);
    let mut forward = json_sink("forward", &ledger);
    rig.update(&mut forward, &meters, 1.0, 10.0, &c);
    rig.finish(&mut forward, &meters, 1.0, 10.0, &c);
    ledger.borrow_mut().close(0, false, &mut rig.term);
    let objects = objects(&rig.take());
    let types: Vec<&str> = objects
        .iter()
        .map(|o| o["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["start", "phase_end", "start", "progress", "end"]);
    assert!(objects[1].get("status").is_none());
    assert_eq!(objects[2]["mode"], "forward");
}

#[test]
fn json_keeps_a_name_that_is_not_utf8_in_base64() {
    use std::os::unix::ffi::OsStringExt;
    let ledger = json::SharedLedger::default();
    let start = json::Start {
        mode: "transfer",
        unit: Unit::Bytes,
        inputs: vec![(std::ffi::OsString::from_vec(b"a\xffb".to_vec()), None)],
        outputs: Vec::new(),
        size: 0,
    };
    let mut sink = json::Json::new(start, ledger);
    let (mut term, out) = term(false);
    sink.event(&Event::OutputGone, &config(), &mut term);
    let start = &objects(&out.take())[0];
    assert_eq!(start["inputs"][0]["name"], "a\u{fffd}b");
    assert_eq!(start["inputs"][0]["name_base64"], "Yf9i");
    assert_eq!(start["size"], serde_json::Value::Null);
}

#[test]
fn json_input_events_are_input_objects() {
    let ledger = json::SharedLedger::default();
    let mut sink = json_sink("transfer", &ledger);
    let (mut term, out) = term(false);
    let c = config();
    let events = [
        Event::InputOpened {
            input: 0,
            name: "in.dat".into(),
            size: 4096,
            at_ns: 0,
        },
        Event::PathChosen {
            input: 0,
            name: "in.dat".into(),
            path: "Splice",
        },
        Event::Fallback {
            input: 0,
            name: "in.dat".into(),
            after_calls: 3,
        },
        Event::InputDone {
            input: 0,
            bytes: 4096,
            lines: 0,
            at_ns: 0,
            interrupted: false,
        },
    ];
    for event in &events {
        sink.event(event, &c, &mut term);
    }
    let objects = objects(&out.take());
    let what: Vec<(&str, &str)> = objects[1..]
        .iter()
        .map(|o| (o["type"].as_str().unwrap(), o["event"].as_str().unwrap()))
        .collect();
    assert_eq!(
        what,
        [
            ("input", "opened"),
            ("input", "path"),
            ("input", "fallback"),
            ("input", "done")
        ]
    );
    assert_eq!(objects[1]["size"], 4096);
    assert_eq!(objects[2]["path"], "Splice");
    assert_eq!(objects[3]["after_calls"], 3);
    assert_eq!(objects[4]["bytes"], 4096);
}

// ---- log ----

#[test]
fn log_lines_are_timestamped_and_have_no_carriage_returns() {
    let meters = [meter(1, Role::Transfer, 1024, 4096)];
    let mut rig = Rig::new(false);
    let mut log = log::Log::new("rpv");
    rig.update(&mut log, &meters, 2.0, 512.0, &config());
    assert_eq!(
        rig.take(),
        "2026-11-23T19:00:01+00:00 1.00KiB 0:00:02 [ 512  B/s] [==>          ]  25% ETA 0:00:06\n"
    );
}

#[test]
fn log_skips_a_meter_that_did_not_move_but_always_writes_the_end() {
    let c = format("%b");
    let mut rig = Rig::new(false);
    let mut log = log::Log::new("rpv");
    let at = |n| [meter(1, Role::Transfer, n, 0)];
    rig.update(&mut log, &at(10), 1.0, 0.0, &c);
    rig.update(&mut log, &at(10), 2.0, 0.0, &c);
    rig.update(&mut log, &at(20), 3.0, 0.0, &c);
    // The final update is written by `finish`, once.
    log.update(
        &snapshot(&at(20), &rig.tracker, 3.0, 0.0, true),
        &c,
        &mut rig.term,
    );
    rig.finish(&mut log, &at(20), 3.0, 0.0, &c);
    let text = rig.take();
    let lines: Vec<&str> = text.lines().map(|l| &l[26..]).collect();
    assert_eq!(lines, ["10.0  B", "20.0  B", "20.0  B"], "{text:?}");
}

#[test]
fn log_messages_are_timestamped_and_escaped() {
    let (mut term, out) = term(false);
    let mut log = log::Log::new("rpv");
    log.event(&error("bad\nname"), &config(), &mut term);
    let text = out.take();
    assert_eq!(text.lines().count(), 1, "{text:?}");
    assert!(text.ends_with(" rpv: bad\\nname\n"), "{text:?}");
    assert!(text.starts_with("20"), "a timestamp first: {text:?}");
}

#[test]
fn log_writes_the_summary_after_the_final_rows() {
    let c = format("%b");
    let mut rig = Rig::new(false);
    let mut log = log::Log::new("rpv");
    let summary = Event::Summary {
        text: "bottleneck: gzip\nadvice: more cores".into(),
        job: None,
        shares: Vec::new(),
        stages: Vec::new(),
        advice: None,
    };
    log.event(&summary, &c, &mut rig.term);
    assert_eq!(rig.take(), "", "kept for the end");
    let meters = [meter(1, Role::Transfer, 10, 0)];
    rig.finish(&mut log, &meters, 1.0, 0.0, &c);
    let text = rig.take();
    let tails: Vec<&str> = text.lines().map(|l| &l[26..]).collect();
    assert_eq!(tails, ["10.0  B", "bottleneck: gzip", "advice: more cores"]);
}

#[test]
fn log_with_quiet_writes_no_figures() {
    let mut c = config();
    c.quiet = true;
    let meters = [meter(1, Role::Transfer, 10, 0)];
    let mut rig = Rig::new(false);
    let mut log = log::Log::new("rpv");
    rig.update(&mut log, &meters, 1.0, 0.0, &c);
    rig.finish(&mut log, &meters, 1.0, 0.0, &c);
    assert_eq!(rig.take(), "");
}

// ---- multi ----

fn named(id: MeterId, role: Role, name: &str, amount: u64, size: u64) -> MeterState {
    MeterState {
        label: crate::meter::Label::Text(name.into()),
        ..meter(id, role, amount, size)
    }
}

#[test]
fn each_shows_a_row_per_input_and_a_total_row() {
    let mut c = config();
    c.each = true;
    let mut done = named(2, Role::Input(0), "first.dat", 100, 100);
    done.phase = Phase::Ended;
    let meters = [
        done,
        named(3, Role::Input(1), "second.dat", 50, 200),
        meter(1, Role::Transfer, 150, 300),
    ];
    let mut rig = Rig::new(true);
    let mut multi = multi::Multi::default();
    rig.update(&mut multi, &meters, 1.0, 50.0, &c);
    rig.finish(&mut multi, &meters, 1.0, 50.0, &c);
    let screen = rig.out.screen(60, 10);
    let rows: Vec<&String> = screen.iter().filter(|r| !r.is_empty()).collect();
    assert_eq!(rows.len(), 3, "{screen:#?}");
    assert_eq!(
        rows,
        [
            " first.dat:  100  B 0:00:01 [50.0  B/s] 100%",
            "second.dat: 50.0  B 0:00:01 [50.0  B/s]  25% ETA 0:00:03",
            "     total:  150  B 0:00:01 [50.0  B/s]  50% ETA 0:00:03",
        ],
        "{screen:#?}"
    );
    assert!(rows.iter().all(|r| r.chars().count() < 60));
}

#[test]
fn a_redrawn_view_replaces_its_rows_in_place() {
    let c = format("%N %b");
    let mut rig = Rig::new(true);
    let mut multi = multi::Multi::default();
    for amount in [1, 2, 3] {
        let meters = [
            named(1, Role::Descriptor, "a", amount, 0),
            named(2, Role::Descriptor, "b", amount * 10, 0),
        ];
        rig.update(&mut multi, &meters, 1.0, 0.0, &c);
    }
    let screen = rig.out.screen(40, 5);
    assert_eq!(
        screen[..3],
        ["        a: 3.00  B", "        b: 30.0  B", ""],
        "{screen:#?}"
    );
}

#[test]
fn a_message_during_a_view_goes_above_its_rows() {
    let c = format("%N %b");
    let mut rig = Rig::new(true);
    let mut multi = multi::Multi::default();
    let meters = [named(1, Role::Descriptor, "a", 1, 0)];
    rig.update(&mut multi, &meters, 1.0, 0.0, &c);
    messages::Messages.event(&error("oops"), &c, &mut rig.term);
    rig.update(&mut multi, &meters, 1.0, 0.0, &c);
    let screen = rig.out.screen(40, 4);
    assert_eq!(
        screen[..2],
        ["rpv: oops", "        a: 1.00  B"],
        "{screen:#?}"
    );
}

#[test]
fn an_input_that_failed_shows_its_reason_in_its_row() {
    let c = format("%N %b");
    let mut failed = named(1, Role::Descriptor, "gone", 0, 0);
    failed.note = Some("failed to read file: gone: No such file or directory".into());
    let meters = [failed];
    let mut rig = Rig::new(true);
    rig.update(&mut multi::Multi::default(), &meters, 1.0, 0.0, &c);
    assert_eq!(rig.out.screen(60, 2)[0], "gone: No such file or directory");
}

/// The one ETA rule (`Reading::eta`), which every output reads.
#[test]
fn the_eta_rule() {
    let tracker = RateTracker::new(30);
    let eta = |amount: u64, moved: u64, size: u64, avg: f64, stalled: bool, last: bool| {
        let m = MeterState {
            moved,
            ..meter(1, Role::Transfer, amount, size)
        };
        let r = Reading {
            meter: &m,
            elapsed: 5.0,
            rates: Rates {
                rate: avg,
                avg_rate: avg,
                percentage: 0.0,
                max_rate: avg,
            },
            tracker: &tracker,
            final_update: last,
            stalled_for: stalled.then_some(12.0),
        };
        r.eta()
    };
    // Halfway through 100 at 10 a second: 5 s, not rounded (outputs round as they show it).
    assert_eq!(eta(50, 50, 100, 10.0, false, false), Some(5.0));
    assert_eq!(eta(50, 50, 100, 3.0, false, false), Some(50.0 / 3.0));
    // A descriptor watched from 40: what it moved counts, not where it stands.
    assert_eq!(eta(50, 10, 100, 10.0, false, false), Some(5.0));
    // Past the size: nothing left.
    assert_eq!(eta(150, 150, 100, 10.0, false, false), Some(0.0));
    // A rate-limited transfer a hair off its limit: the average is the limited rate.
    assert_eq!(eta(50, 50, 100, 10.001, false, false), Some(50.0 / 10.001));
    // No estimate: unknown size, nothing moved yet, a negligible or broken rate, a stall,
    // the final update (done or interrupted).
    assert_eq!(eta(50, 50, 0, 10.0, false, false), None);
    assert_eq!(eta(50, 0, 100, 10.0, false, false), None);
    assert_eq!(eta(50, 50, 100, 0.0009, false, false), None);
    assert_eq!(eta(50, 50, 100, f64::NAN, false, false), None);
    assert_eq!(eta(50, 50, 100, f64::INFINITY, false, false), None);
    assert_eq!(eta(50, 50, 100, -1.0, false, false), None);
    assert_eq!(eta(50, 50, 100, 10.0, true, false), None);
    assert_eq!(eta(50, 50, 100, 10.0, false, true), None);
    assert_eq!(eta(50, 50, 100, 0.001, false, false), Some(50_000.0));
}

/// A sink's warning (`Report::warner`) speaks in the run's voice: an `rpv: …` line, a
/// time-stamped `--log` line, a `--json` message object with its error number.
#[test]
fn a_sinks_warning_is_in_the_runs_voice() {
    use crate::cli::Voice;
    use crate::sink::report::Report;
    let gone = std::io::Error::from_raw_os_error(libc::ENOENT);
    let said = |voice: Voice| {
        let report = Report::new("rpv", voice);
        let (mut term, out) = term(false);
        report
            .warner()
            .warn(&mut term, "--metrics-file: d/x.prom", &gone);
        if voice == Voice::Json {
            report.ledger().borrow_mut().close(0, false, &mut term);
        }
        out.take()
    };
    assert_eq!(
        said(Voice::Display),
        "rpv: --metrics-file: d/x.prom: No such file or directory\n"
    );
    let log = said(Voice::Log);
    let (stamp, rest) = log.split_once(' ').unwrap();
    assert_eq!(
        rest,
        "rpv: --metrics-file: d/x.prom: No such file or directory\n"
    );
    assert!(stamp.len() == 25 && stamp.as_bytes()[10] == b'T', "{log:?}");
    let objects = objects(&said(Voice::Json));
    let message = &objects[0];
    assert_eq!(message["type"], "message");
    assert_eq!(message["level"], "warning");
    assert_eq!(
        message["text"],
        "--metrics-file: d/x.prom: No such file or directory"
    );
    assert_eq!(message["errno"], libc::ENOENT);
    assert_eq!(objects[1]["type"], "end");
}

/// The metrics sink warns once, in the run's voice, when its file cannot be written.
#[test]
fn a_failed_metrics_write_is_logged_with_a_time_stamp() {
    use crate::cli::Voice;
    use crate::sink::report::Report;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gone").join("x.prom");
    let report = Report::new("rpv", Voice::Log);
    let mut sink = metrics::Metrics::new(path.clone(), report.warner(), report.finals());
    let (mut term, out) = term(false);
    let tracker = RateTracker::new(30);
    let meters = [meter(1, Role::Transfer, 10, 100)];
    let c = DisplayConfig {
        voice: Voice::Log,
        ..config()
    };
    for _ in 0..2 {
        sink.update(
            &snapshot(&meters, &tracker, 1.0, 10.0, false),
            &c,
            &mut term,
        );
    }
    let text = out.take();
    let want = format!("rpv: --metrics-file: {}: No such file", path.display());
    assert_eq!(text.lines().count(), 1, "once: {text:?}");
    let (stamp, rest) = text.split_once(' ').unwrap();
    assert!(rest.starts_with(&want), "{text:?}");
    assert!(stamp.as_bytes()[10] == b'T', "{text:?}");
}
