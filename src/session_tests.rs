//! Unit tests of the display loop, in-process: scripted sources, recording sinks and an
//! in-memory terminal.

use std::cell::RefCell;
use std::rc::Rc;

use super::*;
use crate::error::Side;
use crate::meter::Blocked;
use crate::sink::tests::config;
use crate::term::memory::MemoryTerm;

/// What a scripted source does, and what was asked of it.
#[derive(Debug, Default)]
struct Script {
    /// `finished()` is true once this many samples were taken.
    finish_after: usize,
    /// Never finish (the stall tests).
    endless: bool,
    /// Units moved per sample (0: nothing moves).
    step: u64,
    size: u64,
    status: u8,
    aborted: bool,
    /// `final_update()` says no (as `-d` does).
    no_final: bool,
    /// Handed out at the next `events` call.
    events: Vec<Event>,
    blocked: Option<Blocked>,
    samples: usize,
    stops: usize,
    /// A watch (`-d`, `--top`): it moves no data of its own.
    watch: bool,
}

struct Scripted(Rc<RefCell<Script>>);

impl Source for Scripted {
    /// A real source wakes the loop when it ends (the transfer's waker); this one is looked
    /// at every millisecond instead, so a run never waits for its next update to see it.
    fn poll_period_ns(&self) -> Option<u64> {
        Some(1_000_000)
    }
    fn sample(&mut self, now_ns: u64, out: &mut Vec<MeterState>) {
        let mut s = self.0.borrow_mut();
        s.samples += 1;
        let amount = s.step * s.samples as u64;
        out.push(MeterState {
            id: 1,
            amount,
            moved: amount,
            size: s.size,
            started_ns: Some(now_ns.saturating_sub(1_000_000_000)),
            ..MeterState::default()
        });
    }
    fn events(&mut self, out: &mut Vec<Event>) {
        out.append(&mut self.0.borrow_mut().events);
    }
    fn finished(&mut self) -> bool {
        let s = self.0.borrow();
        !s.endless && s.samples >= s.finish_after
    }
    fn status(&self) -> u8 {
        self.0.borrow().status
    }
    fn aborted(&self) -> bool {
        self.0.borrow().aborted
    }
    fn stop(&mut self) {
        self.0.borrow_mut().stops += 1;
    }
    fn blocked(&self) -> Option<Blocked> {
        self.0.borrow().blocked.clone()
    }
    fn final_update(&self) -> bool {
        !self.0.borrow().no_final
    }
    fn end(&mut self, out: &mut Vec<Event>) {
        out.push(Event::Trace("source ended".into()));
    }
    fn watches(&self) -> bool {
        self.0.borrow().watch
    }
}

/// What a sink was handed.
#[derive(Debug, Default)]
struct Record {
    /// Per update: whether it was final, and the amounts of the meters.
    updates: Vec<(bool, Vec<u64>)>,
    /// Every event, as its debug text.
    events: Vec<String>,
    /// Per `finish`: whether its snapshot was final, and the amounts.
    finishes: Vec<(bool, Vec<u64>)>,
    reconfigured: usize,
}

struct Recorder(Rc<RefCell<Record>>);

fn amounts(snapshot: &Snapshot<'_>) -> Vec<u64> {
    snapshot.readings.iter().map(|r| r.meter.amount).collect()
}

impl Sink for Recorder {
    fn event(&mut self, event: &Event, _config: &DisplayConfig, _term: &mut Term) {
        self.0.borrow_mut().events.push(format!("{event:?}"));
    }
    fn update(&mut self, snapshot: &Snapshot<'_>, _config: &DisplayConfig, _term: &mut Term) {
        let update = (snapshot.final_update, amounts(snapshot));
        self.0.borrow_mut().updates.push(update);
    }
    fn finish(&mut self, snapshot: &Snapshot<'_>, _config: &DisplayConfig, _term: &mut Term) {
        let finish = (snapshot.final_update, amounts(snapshot));
        self.0.borrow_mut().finishes.push(finish);
    }
    fn reconfigure(&mut self, _config: &DisplayConfig) {
        self.0.borrow_mut().reconfigured += 1;
    }
}

/// A display updating every millisecond.
fn fast() -> DisplayConfig {
    DisplayConfig {
        interval_ns: 1_000_000,
        ..config()
    }
}

struct Run {
    scripts: Vec<Rc<RefCell<Script>>>,
    record: Rc<RefCell<Record>>,
    out: MemoryTerm,
    end: End,
    status: u8,
}

/// How the tests' loops run: a 30 s average, a 60×10 terminal.
fn settings() -> SessionConfig {
    SessionConfig {
        average_window: 30,
        fixed: (60, 10),
        ..SessionConfig::default()
    }
}

/// Runs a session over one scripted source per script, one recording sink and the
/// messages sink.
fn run(config: DisplayConfig, scripts: Vec<Script>) -> Run {
    run_with(config, settings(), scripts)
}

/// [`run`], the loop run as `settings` say.
fn run_with(config: DisplayConfig, settings: SessionConfig, scripts: Vec<Script>) -> Run {
    let scripts: Vec<_> = scripts
        .into_iter()
        .map(|s| Rc::new(RefCell::new(s)))
        .collect();
    let record = Rc::new(RefCell::new(Record::default()));
    let sources: Vec<Box<dyn Source>> = scripts
        .iter()
        .map(|s| Box::new(Scripted(Rc::clone(s))) as Box<dyn Source>)
        .collect();
    let sinks: Vec<Box<dyn Sink>> = vec![
        Box::new(Recorder(Rc::clone(&record))),
        Box::new(crate::sink::messages::Messages),
    ];
    let (term, out) = Term::in_memory("rpv", false);
    let (end, status) = Session::new(sources, sinks, (config, settings), term).run();
    Run {
        scripts,
        record,
        out,
        end,
        status,
    }
}

/// A session that is not run: its parts are driven one by one.
fn idle(
    config: DisplayConfig,
    scripts: &[Rc<RefCell<Script>>],
) -> (Session<'static>, Rc<RefCell<Record>>) {
    let record = Rc::new(RefCell::new(Record::default()));
    let sources: Vec<Box<dyn Source>> = scripts
        .iter()
        .map(|s| Box::new(Scripted(Rc::clone(s))) as Box<dyn Source>)
        .collect();
    let sinks: Vec<Box<dyn Sink>> = vec![Box::new(Recorder(Rc::clone(&record)))];
    let (term, _) = Term::in_memory("rpv", false);
    (
        Session::new(sources, sinks, (config, settings()), term),
        record,
    )
}

fn script(s: Script) -> Rc<RefCell<Script>> {
    Rc::new(RefCell::new(s))
}

// ---- the loop ----

#[test]
fn a_run_updates_at_every_interval_then_once_finally() {
    let run = run(
        fast(),
        vec![Script {
            finish_after: 3,
            step: 10,
            ..Script::default()
        }],
    );
    assert_eq!((run.end, run.status), (End::Finished, 0));
    let record = run.record.borrow();
    assert_eq!(
        record.updates,
        [
            (false, vec![10]),
            (false, vec![20]),
            (false, vec![30]),
            (true, vec![40])
        ],
        "a sample per update, the last one final"
    );
    assert_eq!(record.finishes, [(true, vec![40])]);
    let last = record.events.last().expect("events");
    assert_eq!(last, "Finished { status: 0 }");
}

#[test]
fn the_exit_status_is_the_bits_of_every_source() {
    let run = run(
        fast(),
        vec![
            Script {
                finish_after: 1,
                status: 1,
                ..Script::default()
            },
            Script {
                finish_after: 1,
                status: 2,
                ..Script::default()
            },
        ],
    );
    assert_eq!(run.status, 3);
    let record = run.record.borrow();
    assert!(record
        .events
        .contains(&"Finished { status: 3 }".to_string()));
}

#[test]
fn events_reach_the_sinks_and_the_sources_close_the_run() {
    let run = run(
        fast(),
        vec![Script {
            finish_after: 2,
            step: 1,
            events: vec![Event::Error(Error::other(0, "careful"))],
            ..Script::default()
        }],
    );
    assert_eq!(run.out.text(), "rpv: careful\n", "the messages sink got it");
    let record = run.record.borrow();
    assert!(record.events[0].contains("careful"), "{:?}", record.events);
    // The sources' closing events, then the end, after the final update.
    let n = record.events.len();
    assert_eq!(
        record.events[n - 2..],
        ["Trace(\"source ended\")", "Finished { status: 0 }"]
    );
}

#[test]
fn an_aborted_run_has_no_final_update() {
    let run = run(
        fast(),
        vec![Script {
            finish_after: 2,
            step: 5,
            aborted: true,
            status: 1,
            ..Script::default()
        }],
    );
    let record = run.record.borrow();
    assert_eq!(record.updates, [(false, vec![5]), (false, vec![10])]);
    assert_eq!(record.finishes, [(false, vec![15])], "sinks still finish");
    assert_eq!(run.status, 1);
}

#[test]
fn a_source_without_a_final_update_keeps_its_last_screen() {
    let run = run(
        fast(),
        vec![Script {
            finish_after: 1,
            step: 5,
            no_final: true,
            ..Script::default()
        }],
    );
    let record = run.record.borrow();
    assert_eq!(record.updates, [(false, vec![5])]);
    assert_eq!(record.finishes.len(), 1);
}

#[test]
fn a_run_that_ends_before_its_delay_shows_nothing() {
    let s = SessionConfig {
        delay_ns: 60_000_000_000,
        ..settings()
    };
    let run = run_with(fast(), s, vec![Script::default()]);
    let record = run.record.borrow();
    assert!(record.updates.is_empty(), "{:?}", record.updates);
    assert_eq!(record.finishes.len(), 1);
    assert_eq!(run.end, End::Finished);
}

#[test]
fn a_run_that_ends_at_once_still_shows_its_final_figures() {
    let mut c = config();
    c.interval_ns = 60_000_000_000;
    let run = run(
        c,
        vec![Script {
            step: 7,
            ..Script::default()
        }],
    );
    let record = run.record.borrow();
    assert_eq!(record.updates, [(true, vec![7])]);
}

#[test]
fn a_stall_ends_the_run_with_its_status_and_says_which_side_waited() {
    let s = SessionConfig {
        stall_timeout: Some(0.005),
        ..settings()
    };
    let run = run_with(
        fast(),
        s,
        vec![Script {
            endless: true,
            step: 0,
            blocked: Some(Blocked {
                side: Side::Input,
                pipe: None,
                ..Blocked::default()
            }),
            ..Script::default()
        }],
    );
    assert_eq!(run.end, End::Stalled);
    assert_eq!(run.status, status::STALLED);
    assert!(run.scripts[0].borrow().stops > 0, "the source was stopped");
    let text = run.out.text();
    assert!(text.starts_with("rpv: no data moved for "), "{text:?}");
    assert!(text.contains("(--stall-timeout)"), "{text:?}");
    let record = run.record.borrow();
    let (last_final, _) = record.updates.last().expect("updates");
    assert!(
        !last_final,
        "the line is redrawn as it stands, not as a summary"
    );
}

#[test]
fn a_transfer_that_moves_does_not_stall() {
    let s = SessionConfig {
        stall_timeout: Some(0.005),
        ..settings()
    };
    let run = run_with(
        fast(),
        s,
        vec![Script {
            finish_after: 30,
            step: 1,
            ..Script::default()
        }],
    );
    assert_eq!((run.end, run.status), (End::Finished, 0));
}

#[test]
fn an_interrupted_end_stops_the_sources_and_sets_the_signal_bit() {
    let s = script(Script {
        step: 3,
        status: 1,
        ..Script::default()
    });
    let (mut session, record) = idle(fast(), std::slice::from_ref(&s));
    session.update(false);
    let (end, status) = session.end(End::Interrupted);
    assert_eq!(end, End::Interrupted);
    assert_eq!(status, status::SIGNAL | 1);
    assert!(s.borrow().stops > 0);
    let record = record.borrow();
    assert_eq!(record.updates, [(false, vec![3]), (false, vec![6])]);
}

// ---- figures ----

fn meter(id: MeterId, role: Role, amount: u64, size: u64, started: Option<u64>) -> MeterState {
    MeterState {
        id,
        role,
        amount,
        moved: amount,
        size,
        started_ns: started,
        ..MeterState::default()
    }
}

const S: u64 = 1_000_000_000;

/// Writes a line to the terminal at each update, as the display does.
struct Shows;

impl Sink for Shows {
    fn event(&mut self, _event: &Event, _config: &DisplayConfig, _term: &mut Term) {}
    fn update(&mut self, _snapshot: &Snapshot<'_>, _config: &DisplayConfig, term: &mut Term) {
        term.numeric("shown");
    }
    fn finish(&mut self, _snapshot: &Snapshot<'_>, _config: &DisplayConfig, _term: &mut Term) {}
    fn reconfigure(&mut self, _config: &DisplayConfig) {}
}

/// A session whose terminal's reader is gone from the start, over one scripted source.
fn run_unread(script: &Rc<RefCell<Script>>) -> (End, u8) {
    let sources: Vec<Box<dyn Source>> = vec![Box::new(Scripted(Rc::clone(script)))];
    let (term, out) = Term::in_memory("rpv", false);
    out.close();
    Session::new(sources, vec![Box::new(Shows)], (fast(), settings()), term).run()
}

#[test]
fn a_watch_ends_when_nobody_reads_its_display() {
    let watch = script(Script {
        endless: true,
        watch: true,
        ..Script::default()
    });
    assert_eq!(run_unread(&watch), (End::Unread, 0));
    let watch = watch.borrow();
    // One update nobody read, then the end's last look.
    assert_eq!(watch.samples, 2, "it ends at the first update nobody reads");
    assert!(watch.stops > 0, "it was asked to stop");
}

#[test]
fn a_transfer_goes_on_when_nobody_reads_its_display() {
    let transfer = script(Script {
        finish_after: 20,
        step: 1,
        ..Script::default()
    });
    // It ran until its source finished (20 updates), then the end's last look.
    assert_eq!(run_unread(&transfer), (End::Finished, 0));
    assert_eq!(transfer.borrow().samples, 21, "every update was made");
}

#[test]
fn meters_whose_clock_has_not_started_have_no_reading() {
    let mut book = Book {
        meters: vec![
            meter(1, Role::Transfer, 0, 0, None),
            meter(2, Role::Input(0), 5, 10, Some(0)),
        ],
        ..Book::default()
    };
    let readings = book.readings_at(2 * S, 0, 30, 2.0, false);
    assert_eq!(readings.len(), 1);
    assert_eq!(readings[0].meter.id, 2);
    assert_eq!(readings[0].elapsed, 2.0);
    assert_eq!(readings[0].rates.percentage, 50.0);
}

#[test]
fn stopped_time_is_not_elapsed_time() {
    let mut book = Book {
        meters: vec![meter(1, Role::Transfer, 100, 0, Some(0))],
        ..Book::default()
    };
    // The meter's clock started when 1 s had already been spent stopped (before its start).
    assert_eq!(book.readings_at(4 * S, S, 30, 2.0, false)[0].elapsed, 4.0);
    // Then 2 s more stopped (Ctrl-Z): they do not count.
    assert_eq!(
        book.readings_at(10 * S, 3 * S, 30, 2.0, false)[0].elapsed,
        8.0
    );
}

#[test]
fn an_ended_transfer_gets_final_figures_once_then_keeps_them() {
    let mut book = Book {
        meters: vec![meter(1, Role::Input(0), 1000, 0, Some(0))],
        ..Book::default()
    };
    book.readings_at(S, 0, 30, 2.0, false);
    book.meters[0].phase = Phase::Ended;
    book.meters[0].ended_ns = Some(2 * S);
    let ended = book.readings_at(3 * S, 0, 30, 2.0, false);
    assert!(ended[0].final_update);
    assert_eq!(ended[0].elapsed, 2.0, "its clock stopped when it ended");
    assert_eq!(ended[0].rates.avg_rate, 500.0, "whole-life average");
    let later = book.readings_at(9 * S, 0, 30, 2.0, false);
    assert_eq!(later[0].elapsed, 2.0);
    assert_eq!(later[0].rates.avg_rate, 500.0);
}

#[test]
fn a_closed_descriptor_keeps_the_figures_it_had() {
    let mut book = Book {
        meters: vec![meter(1, Role::Descriptor, 300, 0, Some(0))],
        ..Book::default()
    };
    let open = book.readings_at(3 * S, 0, 30, 2.0, false)[0].rates;
    book.meters[0].phase = Phase::Ended;
    let closed = book.readings_at(8 * S, 0, 30, 2.0, false);
    assert_eq!(closed[0].elapsed, 3.0);
    assert_eq!(closed[0].rates, open);
    assert!(!closed[0].final_update);
}

#[test]
fn a_meter_that_stops_moving_is_shown_as_stalled_after_the_threshold() {
    let mut book = Book {
        meters: vec![meter(1, Role::Transfer, 10, 0, Some(0))],
        ..Book::default()
    };
    assert_eq!(book.readings_at(S, 0, 30, 2.0, false)[0].stalled_for, None);
    assert_eq!(
        book.readings_at(2 * S, 0, 30, 2.0, false)[0].stalled_for,
        None
    );
    let stalled = book.readings_at(4 * S, 0, 30, 2.0, false)[0].stalled_for;
    assert_eq!(stalled, Some(3.0));
    // Never in a final update.
    assert_eq!(
        book.readings_at(5 * S, 0, 30, 2.0, true)[0].stalled_for,
        None
    );
}

#[test]
fn elapsed_time_is_clamped_to_what_the_display_shows() {
    assert_eq!(elapsed_at(5 * S, S, S), 3.0);
    assert_eq!(elapsed_at(S, 5 * S, 0), 0.0, "never negative");
    assert_eq!(elapsed_at(u64::MAX, 0, 0), 360_000_000.0);
}

#[test]
fn a_stall_is_two_seconds_or_two_updates() {
    let (mut session, _) = idle(config(), &[]);
    assert_eq!(session.stall_after(), 2.0);
    session.config.interval_ns = 5 * S;
    assert_eq!(session.stall_after(), 10.0);
}

// ---- -R and -Q ----

#[test]
fn a_query_is_answered_with_the_primary_meter() {
    let (mut session, _) = idle(config(), &[]);
    session.size_override = Some(77);
    assert_eq!(
        session.state_reply(),
        Reply::State {
            elapsed: 0.0,
            transferred: 0,
            size: 77,
            unit: Unit::Bytes,
        }
    );
    session.book.meters = vec![
        meter(1, Role::Input(0), 5, 0, None),
        meter(2, Role::MonitorIn, 9, 90, None),
    ];
    assert_eq!(
        session.state_reply(),
        Reply::State {
            elapsed: 0.0,
            transferred: 9,
            size: 90,
            unit: Unit::Bytes,
        }
    );
    // An -l run answers in lines, so a client without -l shows lines too.
    session.book.meters[1].unit = Unit::Lines;
    assert!(matches!(
        session.state_reply(),
        Reply::State {
            unit: Unit::Lines,
            ..
        }
    ));
}

#[test]
fn remote_switches_keep_the_name_and_numeric_mode_and_drop_a_custom_format() {
    let (mut session, record) = idle(config(), &[]);
    session.config.switches.name = true;
    session.config.format = Some("%b".into());
    let mut next_due = 0;
    let changes = Changes {
        switches: Some(DisplaySwitches::from_letters("a")),
        ..Changes::default()
    };
    session.apply(&changes, &mut next_due);
    let sw = session.config.switches;
    assert_eq!(sw.letters(), "a");
    assert!(sw.name, "the name stays");
    assert_eq!(
        session.config.format, None,
        "switches given: the switches show"
    );
    assert_eq!(record.borrow().reconfigured, 1);
    // Switches and a format together: the format.
    let changes = Changes {
        switches: Some(DisplaySwitches::from_letters("p")),
        format: Some("%t".into()),
        ..Changes::default()
    };
    session.apply(&changes, &mut next_due);
    assert_eq!(session.config.format.as_deref(), Some("%t"));
    // An empty format returns to the default.
    let changes = Changes {
        format: Some(String::new()),
        ..Changes::default()
    };
    session.apply(&changes, &mut next_due);
    assert_eq!(session.config.format, None);
}

#[test]
fn a_remote_size_and_interval_apply_to_the_next_samples_and_updates() {
    let s = script(Script {
        step: 10,
        ..Script::default()
    });
    let (mut session, _) = idle(config(), std::slice::from_ref(&s));
    let mut next_due = 0;
    let changes = Changes {
        size: Some(500),
        interval: Some(0.25),
        width: Some(33),
        ..Changes::default()
    };
    session.apply(&changes, &mut next_due);
    assert_eq!(session.config.interval_ns, 250_000_000);
    assert!(
        next_due > sys::monotonic_ns(),
        "the next update is an interval away"
    );
    assert_eq!(session.config.width, 33);
    session.sample();
    assert_eq!(session.book.meters[0].size, 500);
}

// ---- the stall watchdog's clock ----

#[test]
fn fires_after_the_timeout_without_movement() {
    let mut w = Watchdog::new(3.0, 10 * S, 0);
    assert!(!w.expired(11 * S, 0, 0));
    assert!(!w.expired(12 * S, 0, 0));
    assert!(w.expired(13 * S, 0, 0), "3 s without a byte from the start");
    let mut w = Watchdog::new(3.0, 0, 0);
    assert!(!w.expired(S, 0, 100));
    assert!(!w.expired(3 * S, 0, 100), "2 s since the last byte");
    assert!(!w.expired(4 * S, 0, 150), "moved again");
    assert!(!w.expired(6 * S, 0, 150));
    assert!(w.expired(7 * S, 0, 150));
}

#[test]
fn stopped_time_does_not_count() {
    let mut w = Watchdog::new(3.0, 0, 5 * S);
    assert!(!w.expired(S, 5 * S, 10));
    // 10 s later, 9 of them stopped (Ctrl-Z): 2 s of running without movement.
    assert!(!w.expired(11 * S, 14 * S, 10));
    assert!(w.expired(13 * S, 14 * S, 10));
}
