//! The watcher on synthetic process tables: discovery, sampling, classification, the
//! bottleneck and its share, stages ending, and when `/proc` is scanned.

use super::discover::End;
use super::model::Part;
use super::model::{Activity, Sleep};
use super::watch::{View, WatchError, Watcher};
use crate::procfs::fake::{FakeProc, FakeTask};

const SEC: u64 = 1_000_000_000;
const CAP: u64 = 65536;
const TTY: End = End::Other;

fn pipe(inode: u64) -> End {
    End::Pipe(inode)
}

/// `sh` (100) running `cat big | gzip -9 | cat` (101, 102, 103) through pipes 1 and 2.
fn three() -> FakeProc {
    let fake = FakeProc::default();
    fake.add(100, 1, "sh -c x", TTY, TTY);
    fake.state(100, 'S', "do_wait");
    fake.add(101, 100, "cat big", TTY, pipe(1));
    fake.add(102, 100, "gzip -9", pipe(1), pipe(2));
    fake.add(103, 100, "cat", pipe(2), TTY);
    fake.fill(1, 0, CAP);
    fake.fill(2, 0, CAP);
    fake
}

fn watch(fake: &FakeProc, pid: u32) -> Watcher {
    Watcher::with_proc(Box::new(fake.clone()), pid).expect("a pipeline")
}

fn commands(view: &View) -> Vec<&str> {
    view.stages.iter().map(|s| s.command.as_str()).collect()
}

fn marked(view: &View) -> Vec<&str> {
    view.stages
        .iter()
        .filter(|s| s.bottleneck)
        .map(|s| s.command.as_str())
        .collect()
}

/// One second of `cat big | gzip -9 | cat` with gzip as the bottleneck: the first cat
/// blocked on a full pipe, gzip compressing 100 MB/s into 30 MB/s, the last cat waiting.
fn gzip_bound_second(fake: &FakeProc) {
    fake.state(101, 'S', "anon_pipe_write");
    fake.work(101, 3, 100_000_000, 100_000_000);
    fake.state(102, 'R', "0");
    fake.work(102, 99, 100_000_000, 30_000_000);
    fake.state(103, 'S', "anon_pipe_read");
    fake.work(103, 1, 30_000_000, 30_000_000);
    fake.fill(1, CAP, CAP);
    fake.fill(2, 0, CAP);
}

#[test]
fn every_stage_in_order_from_any_of_them_or_the_shell() {
    let fake = three();
    for start in [101, 102, 103, 100] {
        let mut w = watch(&fake, start);
        let view = w.sample(0);
        assert_eq!(
            commands(&view),
            ["cat big", "gzip -9", "cat"],
            "from {start}"
        );
        let pids: Vec<u32> = view.stages.iter().map(|s| s.pid).collect();
        assert_eq!(pids, [101, 102, 103]);
    }
}

/// In a PID namespace whose session leader is outside it (a container, a CI sandbox), every
/// process has session 0, the session kernel threads have: the pipeline is still found,
/// and kernel threads are still left out of the scan.
#[test]
fn a_pipeline_in_session_0_is_found_and_kernel_threads_are_not_scanned() {
    let fake = three();
    fake.add(2, 0, "kthreadd", End::Closed, End::Closed);
    fake.with(2, |p| p.kernel = true);
    fake.add(50, 1, "sleep 100", TTY, TTY);
    for pid in [2, 50, 100, 101, 102, 103] {
        fake.with(pid, |p| p.session = 0);
    }
    for start in [101, 102, 103, 100] {
        let view = watch(&fake, start).sample(0);
        assert_eq!(
            commands(&view),
            ["cat big", "gzip -9", "cat"],
            "from {start}"
        );
    }
    let table = super::discover::scan(&mut fake.clone(), Some(&[0])).unwrap();
    assert!(
        table.get(2).is_none(),
        "a kernel thread is not in the table"
    );
    assert!(table.get(50).is_some() && table.get(101).is_some());
}

#[test]
fn errors_name_the_reason() {
    let fake = three();
    fake.add(200, 1, "sleep 100", TTY, TTY);
    let err = |pid| Watcher::with_proc(Box::new(fake.clone()), pid).unwrap_err();
    assert!(matches!(err(999), WatchError::NoSuchProcess(999)));
    // A zombie and a kernel thread are named as such, not as missing.
    fake.add(201, 1, "gzip", End::Closed, End::Closed);
    fake.state(201, 'Z', "0");
    assert_eq!(
        err(201).to_string(),
        "pid 201: a zombie (it has ended; its parent has not collected it), not in a pipeline"
    );
    fake.add(2, 0, "kthreadd", End::Closed, End::Closed);
    fake.with(2, |p| p.kernel = true);
    assert_eq!(
        err(2).to_string(),
        "pid 2: a kernel thread (kthreadd), not in a pipeline"
    );
    assert!(matches!(err(200), WatchError::NotInPipeline(200)));
    fake.with(200, |p| {
        p.hidden = true;
        p.stdin = End::Hidden;
    });
    assert!(matches!(err(200), WatchError::NotPermitted(200)));
    assert_eq!(
        err(200).to_string(),
        "pid 200: Permission denied",
        "the message names the process"
    );
}

#[test]
fn rates_cpu_fills_and_states_of_a_middle_stage_bound_pipeline() {
    let fake = three();
    let mut w = watch(&fake, 103);
    w.sample(0);
    let mut view = View::default();
    for k in 1..=4 {
        gzip_bound_second(&fake);
        view = w.sample(k * SEC);
    }
    let gzip = &view.stages[1];
    assert_eq!(gzip.cpu, Some(99.0));
    assert_eq!(gzip.rate_in, Some(100e6));
    assert_eq!(gzip.rate_out, Some(30e6));
    assert_eq!(gzip.activity, Activity::Running);
    assert_eq!(view.stages[0].activity, Activity::WaitOutput);
    assert_eq!(view.stages[2].activity, Activity::WaitInput);
    assert_eq!(view.stages[0].fill.map(|f| f.queued), Some(CAP));
    assert_eq!(view.stages[1].fill.map(|f| f.queued), Some(0));
    assert_eq!(view.stages[2].fill, None);
    assert_eq!(marked(&view), ["gzip -9"]);
    // Cumulative bytes since the first reading.
    assert_eq!(gzip.bytes_in, Some(400_000_000));
    assert_eq!(gzip.bytes_out, Some(120_000_000));
    assert_eq!(gzip.amount, Some(400_000_000));
    let summary = w.summary();
    assert_eq!(summary.len(), 1);
    assert_eq!(summary[0].command, "gzip -9");
    assert!((summary[0].share - 1.0).abs() < 1e-9, "{summary:?}");
}

#[test]
fn producer_bound() {
    let fake = three();
    let mut w = watch(&fake, 101);
    w.sample(0);
    let mut view = View::default();
    for k in 1..=3 {
        fake.state(101, 'R', "0");
        fake.work(101, 95, 0, 5_000_000);
        fake.state(102, 'S', "anon_pipe_read");
        fake.state(103, 'S', "anon_pipe_read");
        fake.fill(1, 0, CAP);
        fake.fill(2, 0, CAP);
        view = w.sample(k * SEC);
    }
    assert_eq!(marked(&view), ["cat big"]);
}

#[test]
fn consumer_bound_and_a_consumer_sleeping_between_reads() {
    // The consumer busy on a CPU, or sleeping on a timer after each read.
    for (state, wchan, ticks) in [('R', "0", 99), ('S', "hrtimer_nanosleep", 1)] {
        let fake = three();
        let mut w = watch(&fake, 102);
        w.sample(0);
        let mut view = View::default();
        for k in 1..=3 {
            fake.state(101, 'S', "anon_pipe_write");
            fake.state(102, 'S', "anon_pipe_write");
            fake.state(103, state, wchan);
            fake.work(103, ticks, 1_000_000, 1_000_000);
            fake.fill(1, CAP, CAP);
            fake.fill(2, CAP - 100, CAP);
            view = w.sample(k * SEC);
        }
        assert_eq!(marked(&view), ["cat"], "consumer {wchan}");
    }
}

#[test]
fn a_rate_limited_rpv_in_the_middle() {
    // head -c 1G /dev/zero | rpv -q -L 20M | sha256sum: rpv's data thread sleeps on its
    // limit, its display thread polls, its control thread waits on its socket. Its bytes
    // come from its control channel: splice does not show in /proc/PID/io.
    let fake = FakeProc::default();
    fake.add(100, 1, "sh", TTY, TTY);
    fake.add(101, 100, "head -c 1G /dev/zero", TTY, pipe(1));
    fake.add(102, 100, "rpv -q -L 20M", pipe(1), pipe(2));
    fake.add(103, 100, "sha256sum", pipe(2), TTY);
    fake.with(102, |p| {
        p.rpv = Some(0);
        p.tasks = vec![
            FakeTask {
                tid: 102,
                state: 'S',
                wchan: "poll_schedule_timeout.constprop.0".into(),
                ticks: 1,
                run_ns: 10000000,
                delay_ns: 0,
            },
            FakeTask {
                tid: 104,
                state: 'S',
                wchan: "hrtimer_nanosleep".into(),
                ticks: 20,
                run_ns: 200000000,
                delay_ns: 0,
            },
            FakeTask {
                tid: 105,
                state: 'S',
                wchan: "__skb_wait_for_more_packets".into(),
                ticks: 0,
                run_ns: 0,
                delay_ns: 0,
            },
        ];
    });
    let mut w = watch(&fake, 103);
    w.sample(0);
    let mut view = View::default();
    for k in 1..=4 {
        fake.state(101, 'S', "anon_pipe_write");
        fake.work(101, 1, 20_000_000, 20_000_000);
        fake.with(102, |p| {
            p.rpv = Some(p.rpv.unwrap() + 20_000_000);
            p.tasks[1].ticks += 2;
            p.tasks[1].run_ns += 20_000_000;
        });
        fake.fill(1, CAP, CAP);
        // Between readings sha256sum waits for its input; at each reading it happens to be
        // caught hashing the last chunk, with a little of it still queued.
        fake.state(103, 'S', "anon_pipe_read");
        fake.fill(2, 0, CAP);
        for tenth in 1..10 {
            w.tick((k - 1) * SEC + tenth * SEC / 10);
        }
        fake.state(103, 'R', "0");
        fake.work(103, 6, 20_000_000, 0);
        fake.fill(2, 4096, CAP);
        view = w.sample(k * SEC);
    }
    let sha = &view.stages[2];
    assert_eq!(sha.activity, Activity::WaitInput, "{sha:?}");
    let rpv = &view.stages[1];
    assert_eq!(rpv.activity, Activity::Sleeping(Sleep::Timer));
    assert_eq!(rpv.rate_in, Some(20e6));
    assert_eq!(rpv.rate_out, Some(20e6));
    assert_eq!(marked(&view), ["rpv -q -L 20M"]);
}

#[test]
fn a_splice_user_gets_its_rates_from_its_neighbours() {
    // cat | pv | gzip: pv moves data by splice, so its own counters stay near zero.
    let fake = three();
    fake.with(102, |p| p.cmdline = "pv -q".into());
    let mut w = watch(&fake, 102);
    w.sample(0);
    let mut view = View::default();
    for k in 1..=2 {
        fake.work(101, 1, 50_000_000, 50_000_000);
        fake.work(102, 1, 100, 0);
        fake.work(103, 1, 49_000_000, 49_000_000);
        view = w.sample(k * SEC);
    }
    assert_eq!(view.stages[1].rate_in, Some(50e6));
    assert_eq!(view.stages[1].rate_out, Some(49e6));
    // Its totals too: what went through since the watch began.
    assert_eq!(view.stages[1].bytes_in, Some(100_000_000));
    assert_eq!(view.stages[1].bytes_out, Some(98_000_000));
    assert_eq!(view.stages[1].amount, Some(100_000_000));
    // The first stage reads no pipe: its amount is what it wrote.
    assert_eq!(view.stages[0].amount, Some(100_000_000));
}

/// pv with a rate limit reads a little with read(2) and splices the rest: its own counts
/// are a tenth of what goes through it, on both sides. Its figures are its neighbours'.
#[test]
fn a_relay_counting_a_tenth_of_its_bytes_gets_its_neighbours_figures() {
    let fake = three();
    fake.with(102, |p| p.cmdline = "pv -qL 10M".into());
    let mut w = watch(&fake, 102);
    w.sample(0);
    let mut view = View::default();
    for k in 1..=3 {
        fake.work(101, 1, 10_000_000, 10_000_000);
        fake.work(102, 1, 1_000_000, 900_000);
        fake.work(103, 1, 10_000_000, 10_000_000);
        view = w.sample(k * SEC);
    }
    let pv = &view.stages[1];
    assert_eq!((pv.rate_in, pv.rate_out), (Some(10e6), Some(10e6)));
    assert_eq!(
        (pv.bytes_in, pv.bytes_out),
        (Some(30_000_000), Some(30_000_000))
    );
}

#[test]
fn a_subshell_is_not_a_row() {
    // cat | ( gzip ) | cat: the subshell 102 holds both pipes while gzip (104) works.
    let fake = three();
    fake.with(102, |p| p.cmdline = "sh -c x".into());
    fake.state(102, 'S', "do_wait");
    fake.add(104, 102, "gzip -9", pipe(1), pipe(2));
    for start in [101, 102, 104] {
        let mut w = watch(&fake, start);
        let view = w.sample(0);
        assert_eq!(
            commands(&view),
            ["cat big", "gzip -9", "cat"],
            "from {start}"
        );
        assert_eq!(view.stages[1].pid, 104);
    }
}

#[test]
fn a_compound_stage_shows_the_process_moving_data_and_follows_it() {
    // { a; b; } | cat: the subshell 101 runs a (110), then b (111).
    let fake = FakeProc::default();
    fake.add(100, 1, "sh", TTY, TTY);
    fake.add(101, 100, "sh", TTY, pipe(1));
    fake.state(101, 'S', "do_wait");
    fake.add(110, 101, "a", TTY, pipe(1));
    fake.add(103, 100, "cat", pipe(1), TTY);
    let mut w = watch(&fake, 103);
    let view = w.sample(0);
    assert_eq!(commands(&view), ["a", "cat"]);
    let scans = fake.scans();
    fake.work(110, 10, 0, 1_000_000);
    let view = w.sample(SEC);
    assert_eq!(commands(&view), ["a", "cat"]);
    assert_eq!(fake.scans(), scans, "nothing changed: no scan");
    // a ends and b starts: the row follows, and b's first bytes count.
    fake.remove(110);
    fake.add(111, 101, "b --fast", TTY, pipe(1));
    fake.work(111, 5, 0, 3_000_000);
    let view = w.sample(2 * SEC);
    assert_eq!(commands(&view), ["b --fast", "cat"]);
    assert_eq!(view.stages[0].pid, 111);
    assert!(fake.scans() > scans, "a member ended: scanned again");
    // b's first 3 MB count (it started within the last second).
    assert_eq!(view.stages[0].rate_out, Some(3e6));
    // Between two children only the subshell holds the pipe; its next child is found
    // through its children list.
    fake.remove(111);
    let view = w.sample(3 * SEC);
    assert_eq!(commands(&view), ["sh", "cat"]);
    assert_eq!(view.stages[0].activity, Activity::WaitChild);
    let scans = fake.scans();
    w.sample(4 * SEC);
    assert_eq!(fake.scans(), scans, "children unchanged: no scan");
    fake.add(112, 101, "c", TTY, pipe(1));
    let view = w.sample(5 * SEC);
    assert_eq!(commands(&view), ["c", "cat"]);
}

#[test]
fn another_users_process_is_a_not_permitted_row() {
    // cat | gzip | cat where gzip (102) belongs to another user.
    let fake = three();
    fake.with(102, |p| {
        p.hidden = true;
        p.stdin = End::Hidden;
        p.stdout = End::Hidden;
    });
    let mut w = watch(&fake, 101);
    w.sample(0);
    let mut view = View::default();
    for k in 1..=3 {
        gzip_bound_second(&fake);
        view = w.sample(k * SEC);
    }
    assert_eq!(commands(&view), ["cat big", "gzip -9", "cat"]);
    let gzip = &view.stages[1];
    assert_eq!(gzip.activity, Activity::Unknown);
    assert_eq!(gzip.activity.label(), "not permitted");
    // What can be seen is shown: CPU from stat, and rates from its neighbours.
    assert_eq!(gzip.cpu, Some(99.0));
    assert_eq!(gzip.rate_in, Some(100e6));
    assert_eq!(gzip.rate_out, Some(30e6));
    // Its neighbours wait for it: it is the bottleneck.
    assert_eq!(marked(&view), ["gzip -9"]);
}

#[test]
fn stages_end_one_by_one_and_keep_their_figures() {
    let fake = three();
    let mut w = watch(&fake, 102);
    w.sample(0);
    for k in 1..=2 {
        gzip_bound_second(&fake);
        w.sample(k * SEC);
    }
    fake.remove(101);
    let view = w.sample(3 * SEC);
    assert_eq!(commands(&view), ["cat big", "gzip -9", "cat"]);
    assert_eq!(view.stages[0].activity, Activity::Ended);
    assert_eq!(view.stages[0].rate_out, Some(100e6), "final figures kept");
    assert!(!w.finished());
    // An open end left by an ended stage is looked at again, with a growing pause.
    let scans = fake.scans();
    for k in 4..=12 {
        w.sample(k * SEC);
    }
    let extra = fake.scans() - scans;
    assert!(
        (2..=4).contains(&extra),
        "{extra} scans for an open end in 9 s"
    );
    fake.remove(102);
    let view = w.sample(13 * SEC);
    assert_eq!(view.stages[1].activity, Activity::Ended);
    assert_eq!(view.stages[2].activity, Activity::WaitInput);
    fake.remove(103);
    let view = w.sample(14 * SEC);
    assert!(view.stages.iter().all(|s| s.activity == Activity::Ended));
    assert!(w.finished());
    assert_eq!(w.summary()[0].command, "gzip -9");
}

#[test]
fn a_steady_pipeline_is_not_rescanned() {
    let fake = three();
    let mut w = watch(&fake, 101);
    let scans = fake.scans();
    for k in 0..100 {
        gzip_bound_second(&fake);
        w.sample(k * SEC / 10);
    }
    assert_eq!(fake.scans(), scans);
    assert_eq!(w.scans(), 1);
}

#[test]
fn a_stage_found_between_fork_and_exec_gets_its_program_name() {
    let fake = three();
    fake.with(102, |p| {
        p.comm = "sh".into();
        p.cmdline = "sh -c cat big | gzip -9 | cat".into();
    });
    let mut w = watch(&fake, 101);
    // The fake's command line is split at spaces: `|` is an argument of its own, quoted.
    assert_eq!(
        commands(&w.sample(0))[1],
        "sh -c cat big '|' gzip -9 '|' cat"
    );
    fake.with(102, |p| {
        p.comm = "gzip".into();
        p.cmdline = "gzip -9".into();
    });
    assert_eq!(commands(&w.sample(SEC))[1], "gzip -9");
}

#[test]
fn an_rpv_that_misses_an_answer_is_counted_by_its_next_one() {
    let fake = three();
    fake.with(102, |p| p.rpv = Some(0));
    let mut w = watch(&fake, 101);
    w.sample(0);
    for k in 1..=6 {
        // Every other second the rpv does not answer; its /proc/PID/io (it may use
        // read/write too) must not be mixed with its own count.
        let answers = k % 2 == 0;
        fake.with(102, |p| {
            p.rpv = answers.then_some(k * 10_000_000);
            p.io.rchar += 5_000_000;
            p.io.wchar += 5_000_000;
        });
        let view = w.sample(k * SEC);
        // The two seconds' 20 MB come with the answer; nothing is counted twice.
        let expected = if answers { 20e6 } else { 0.0 };
        if k >= 2 {
            assert_eq!(view.stages[1].rate_in, Some(expected), "second {k}");
            assert_eq!(view.stages[1].rate_out, Some(expected), "second {k}");
        }
    }
}

/// `yes | head -c 8G | sha256sum` on two cores: sha256sum is on a CPU 97 % of the time, yet
/// it empties its input at once each time head writes, so nearly every look at it finds
/// it waiting for its input; head, on a CPU a quarter of the time, is often caught running.
/// The shares over the interval name sha256sum all the same, and its row says `running`.
#[test]
fn a_hash_using_a_whole_core_is_found_though_always_caught_waiting() {
    let fake = FakeProc::default();
    fake.add(100, 1, "sh", TTY, TTY);
    fake.add(101, 100, "yes", TTY, pipe(1));
    fake.add(102, 100, "head -c 8G", pipe(1), pipe(2));
    fake.add(103, 100, "sha256sum", pipe(2), TTY);
    fake.fill(1, CAP, CAP);
    fake.fill(2, 0, CAP);
    let mut w = watch(&fake, 102);
    w.sample(0);
    let mut view = View::default();
    for k in 1..=3 {
        fake.state(101, 'S', "anon_pipe_write");
        fake.work(101, 2, 0, 500_000_000);
        fake.state(102, 'R', "0");
        fake.work(102, 26, 500_000_000, 500_000_000);
        fake.state(103, 'S', "anon_pipe_read");
        fake.work(103, 97, 500_000_000, 0);
        for tenth in 1..=10 {
            w.tick((k - 1) * SEC + tenth * SEC / 10);
        }
        view = w.sample(k * SEC);
    }
    assert_eq!(marked(&view), ["sha256sum"], "{view:?}");
    assert_eq!(view.stages[2].activity, Activity::Running);
    let time = view.stages[2].time.expect("shares");
    assert!((time.get(Part::Busy) - 0.97).abs() < 1e-6, "{time:?}");
    assert!((time.get(Part::Input) - 0.03).abs() < 1e-6, "{time:?}");
    // head, caught running at every look, was blocked 74 % of the time where it was last
    // seen blocked (never, here: "other"), so it is not blamed for a pipe it waits on.
    assert_eq!(w.summary()[0].command, "sha256sum");
}

/// The same pipeline beside busy loops: every stage waits for a CPU; sha256sum waits more
/// than it runs, and its row says `starved`.
#[test]
fn a_stage_waiting_for_a_cpu_more_than_it_runs_reads_starved() {
    let fake = FakeProc::default();
    fake.add(100, 1, "sh", TTY, TTY);
    fake.add(101, 100, "head -c 8G /dev/zero", TTY, pipe(1));
    fake.add(102, 100, "sha256sum", pipe(1), TTY);
    fake.fill(1, CAP, CAP);
    let mut w = watch(&fake, 102);
    w.sample(0);
    let mut view = View::default();
    for k in 1..=3 {
        fake.state(101, 'S', "anon_pipe_write");
        fake.work(101, 5, 0, 100_000_000);
        fake.starve(101, 150_000_000);
        fake.state(102, 'R', "0");
        fake.work(102, 40, 100_000_000, 0);
        fake.starve(102, 550_000_000);
        for tenth in 1..=10 {
            w.tick((k - 1) * SEC + tenth * SEC / 10);
        }
        view = w.sample(k * SEC);
    }
    assert_eq!(marked(&view), ["sha256sum"]);
    assert_eq!(view.stages[1].activity, Activity::Starved);
    assert_eq!(view.stages[1].activity.label(), "starved");
    assert_eq!(view.stages[0].activity, Activity::WaitOutput);
}

/// A process chooses its own name (`prctl(PR_SET_NAME)`, `/proc/self/comm`) and may have
/// no command line: the `[comm]` shown instead is escaped like a command line, so a name
/// made of escape sequences cannot retitle or clear the watcher's terminal.
#[test]
fn a_process_name_with_escape_sequences_is_shown_escaped() {
    let fake = three();
    fake.with(102, |p| {
        p.comm = "\x1b]0;owned\x07\x1b[2J".into();
        p.cmdline = String::new();
    });
    fake.with(103, |p| p.cmdline = "cat\n\x1b[1A".into());
    let view = watch(&fake, 101).sample(0);
    assert_eq!(
        commands(&view),
        ["cat big", "[\\e]0;owned\\x07\\e[2J]", "cat\\n\\e[1A"]
    );
}

/// A stage found in the midst of its `exec` (its new name, no command line yet) is named
/// by its command line once it has one, not `[name]` for good.
#[test]
fn a_stage_found_in_the_midst_of_an_exec_gets_its_command_line() {
    let fake = three();
    fake.with(102, |p| {
        p.comm = "rpv".into();
        p.cmdline = String::new();
    });
    let mut w = watch(&fake, 101);
    assert_eq!(commands(&w.sample(0)), ["cat big", "[rpv]", "cat"]);
    fake.with(102, |p| p.cmdline = "rpv -q -L 8M".into());
    assert_eq!(commands(&w.sample(SEC)), ["cat big", "rpv -q -L 8M", "cat"]);
}

/// The advice follows the marked stage: gzip on a whole core with a core idle gets pigz
/// (when installed), and the report at the end says where each stage's time went.
#[test]
fn advice_and_the_report_follow_the_bottleneck() {
    let fake = three();
    let mut w = watch(&fake, 101);
    w.set_tools(super::advice::Tools::of(&["pigz"]));
    fake.machine(0, 0);
    w.sample(0);
    let mut view = View::default();
    for k in 1..=3 {
        gzip_bound_second(&fake);
        // Two cores: gzip's and a little for the cats busy, about one idle.
        fake.machine(95, 105);
        view = w.sample(k * SEC);
    }
    assert_eq!(marked(&view), ["gzip -9"]);
    assert!(!view.short_of_cpu);
    assert_eq!(
        view.advice.as_deref(),
        Some("try pigz -p 2: gzip -9 uses a whole core while 1 of 2 cores is idle")
    );
    let report = w.report();
    assert_eq!(report.advice, view.advice);
    let names: Vec<&str> = report.stages.iter().map(|(c, _)| c.as_str()).collect();
    assert_eq!(names, ["cat big", "gzip -9", "cat"]);
    let gzip = report.stages[1].1.expect("measured");
    assert!((gzip.get(Part::Busy) - 0.99).abs() < 1e-6, "{gzip:?}");
    // Without pigz installed: no advice (only installed tools are named).
    w.set_tools(super::advice::Tools::default());
    gzip_bound_second(&fake);
    fake.machine(95, 105);
    assert_eq!(w.sample(4 * SEC).advice, None);
}

/// A stage whose member is replaced keeps its credit, under the name it had when it was
/// the bottleneck: `cat big | gzip -1 | (sleep 5; cat)` credits `sleep 5`, not `cat`.
#[test]
fn the_summary_credits_the_command_shown_while_it_was_the_bottleneck() {
    let fake = FakeProc::default();
    fake.add(100, 1, "sh", TTY, TTY);
    fake.add(101, 100, "cat big", TTY, pipe(1));
    fake.add(102, 100, "gzip -1", pipe(1), pipe(2));
    fake.add(103, 100, "sh", pipe(2), TTY);
    fake.state(103, 'S', "do_wait");
    fake.add(110, 103, "sleep 5", pipe(2), TTY);
    fake.state(110, 'S', "hrtimer_nanosleep");
    fake.fill(1, CAP, CAP);
    fake.fill(2, CAP, CAP);
    let mut w = watch(&fake, 101);
    w.sample(0);
    for k in 1..=5 {
        fake.state(101, 'S', "anon_pipe_write");
        fake.state(102, 'S', "anon_pipe_write");
        let view = w.sample(k * SEC);
        assert_eq!(commands(&view)[2], "sleep 5");
    }
    // sleep ends, cat takes its place and is not the bottleneck: gzip is.
    fake.remove(110);
    fake.add(111, 103, "cat", pipe(2), TTY);
    fake.fill(2, 0, CAP);
    for k in 6..=7 {
        fake.state(101, 'S', "anon_pipe_write");
        fake.work(101, 2, 10_000_000, 10_000_000);
        fake.state(102, 'R', "0");
        fake.work(102, 98, 10_000_000, 5_000_000);
        fake.state(111, 'S', "anon_pipe_read");
        fake.work(111, 1, 5_000_000, 5_000_000);
        let view = w.sample(k * SEC);
        assert_eq!(commands(&view)[2], "cat");
    }
    let summary = w.summary();
    assert_eq!(summary[0].command, "sleep 5", "{summary:?}");
    assert!(summary.iter().all(|s| s.command != "cat"), "{summary:?}");
    assert_eq!(w.report().stages[2].0, "sleep 5");
}

/// A stage's process that runs another program (a shim's chain of `exec`s: `env`, then
/// `bash` on the shim, then the interpreter) is credited as the program it runs now, with
/// the time it was the bottleneck under the launchers' names: a slow start on a loaded
/// machine must not name the shim.
#[test]
fn a_stage_that_execs_is_credited_as_the_program_it_runs_now() {
    let fake = FakeProc::default();
    fake.add(100, 1, "sh", TTY, TTY);
    fake.add(101, 100, "cat big", TTY, pipe(1));
    fake.add(102, 100, "env bash shims/python3 serve.py", pipe(1), TTY);
    fake.fill(1, CAP, CAP);
    let mut w = watch(&fake, 101);
    w.sample(0);
    let busy = |pid: u32, k: u64| {
        fake.state(101, 'S', "anon_pipe_write");
        fake.state(pid, 'R', "0");
        fake.work(pid, 99, 0, 0);
        k * SEC
    };
    for k in 1..=3 {
        let view = w.sample(busy(102, k));
        assert_eq!(commands(&view)[1], "env bash shims/python3 serve.py");
    }
    assert_eq!(w.summary()[0].command, "env bash shims/python3 serve.py");
    fake.with(102, |p| {
        p.comm = "python3".into();
        p.cmdline = "python3 serve.py".into();
    });
    let view = w.sample(busy(102, 4));
    assert_eq!(commands(&view)[1], "python3 serve.py");
    let summary = w.summary();
    assert_eq!(summary.len(), 1, "{summary:?}");
    assert_eq!(summary[0].command, "python3 serve.py");
    assert!(summary[0].share > 0.9, "{summary:?}");
    assert_eq!(w.report().stages[1].0, "python3 serve.py");
    // Another process in its place (not an exec) leaves the credit where it was.
    fake.remove(102);
    fake.add(103, 100, "sort", pipe(1), TTY);
    for k in 5..=6 {
        let view = w.sample(busy(103, k));
        assert_eq!(commands(&view)[1], "sort");
    }
    let summary = w.summary();
    assert_eq!(summary[0].command, "python3 serve.py", "{summary:?}");
}

/// A shell running two pipelines: each is watched on its own, with its own bottleneck,
/// never one merged table. Given a stage's PID, only its own pipeline.
#[test]
fn a_shells_pipelines_are_watched_apart() {
    let fake = FakeProc::default();
    fake.add(90, 1, "bash", TTY, TTY);
    fake.state(90, 'S', "do_wait");
    // Job 1: yes | rpv -qL 1m | cat (process group 101).
    fake.add(101, 90, "yes", TTY, pipe(1));
    fake.add(102, 90, "rpv -qL 1m", pipe(1), pipe(2));
    fake.add(103, 90, "cat", pipe(2), TTY);
    // Job 2, inside a subshell: ( cat big | gzip -9 | wc -c ) (process group 110).
    fake.add(110, 90, "bash", TTY, TTY);
    fake.state(110, 'S', "do_wait");
    fake.add(111, 110, "cat big", TTY, pipe(3));
    fake.add(112, 110, "gzip -9", pipe(3), pipe(4));
    fake.add(113, 110, "wc -c", pipe(4), TTY);
    for pid in [110, 111, 112, 113] {
        fake.with(pid, |p| p.start += 1);
    }
    let make = || -> Box<dyn crate::procfs::Proc> { Box::new(fake.clone()) };
    let mut jobs = Watcher::jobs(make, 90).expect("two jobs");
    assert_eq!(jobs.len(), 2);
    for job in &mut jobs {
        job.sample(0);
    }
    let mut views = vec![View::default(), View::default()];
    for k in 1..=3 {
        fake.state(101, 'S', "anon_pipe_write");
        fake.state(102, 'S', "hrtimer_nanosleep");
        fake.state(103, 'S', "anon_pipe_read");
        fake.state(111, 'S', "anon_pipe_write");
        fake.state(112, 'R', "0");
        fake.work(112, 99, 1_000_000, 100_000);
        fake.state(113, 'S', "anon_pipe_read");
        for (job, view) in jobs.iter_mut().zip(&mut views) {
            *view = job.sample(k * SEC);
        }
    }
    assert_eq!(commands(&views[0]), ["yes", "rpv -qL 1m", "cat"]);
    assert_eq!(commands(&views[1]), ["cat big", "gzip -9", "wc -c"]);
    assert_eq!(marked(&views[0]), ["rpv -qL 1m"]);
    assert_eq!(marked(&views[1]), ["gzip -9"]);
    // From a stage: its own pipeline only.
    let own = Watcher::jobs(make, 112).expect("a pipeline");
    assert_eq!(own.len(), 1);
    let mut own = own.into_iter().next().unwrap();
    assert_eq!(
        commands(&own.sample(4 * SEC)),
        ["cat big", "gzip -9", "wc -c"]
    );
}

/// Between readings, a thread's wait channel tells what it waits for; its `stat` (the
/// costlier file) is read only when the wait channel names no wait it knows (the disk here).
#[test]
fn ticks_read_stat_only_when_the_wait_channel_names_no_known_wait() {
    let fake = three();
    let mut w = watch(&fake, 101);
    gzip_bound_second(&fake);
    w.sample(SEC);
    let (stats, _) = fake.reads();
    for k in 1..=10 {
        w.tick(SEC + k * SEC / 20);
    }
    assert_eq!(
        fake.reads().0,
        stats,
        "pipe waits and a running gzip need no stat"
    );
    fake.state(102, 'D', "io_schedule");
    let now = SEC + 11 * SEC / 20;
    w.tick(now);
    assert!(fake.reads().0 > stats, "an unnamed wait reads stat");
    let view = w.sample(now);
    assert_eq!(view.stages[1].activity, Activity::Sleeping(Sleep::Disk));
}

/// A long pipeline's counters are read a few times a second however short the display
/// interval (20 stages: every quarter second); updates in between show the last reading.
#[test]
fn a_long_pipelines_counters_are_read_a_few_times_a_second() {
    let fake = FakeProc::default();
    fake.add(100, 1, "sh -c x", TTY, TTY);
    fake.state(100, 'S', "do_wait");
    for k in 0..20u32 {
        let input = if k == 0 { TTY } else { pipe(u64::from(k)) };
        let output = if k == 19 { TTY } else { pipe(u64::from(k) + 1) };
        fake.add(101 + k, 100, "cat", input, output);
        fake.state(101 + k, 'S', "anon_pipe_read");
    }
    let mut w = watch(&fake, 101);
    w.sample(SEC);
    let (_, io) = fake.reads();
    let mut readings = 0;
    let mut last = fake.reads().1;
    for k in 1..=10 {
        // Ten updates at -i 0.1: one second.
        w.sample(SEC + k * SEC / 10);
        if fake.reads().1 > last {
            readings += 1;
            last = fake.reads().1;
        }
    }
    assert!(
        (3..=4).contains(&readings),
        "{readings} readings in a second"
    );
    assert_eq!((fake.reads().1 - io) % 20, 0, "every stage each time");
    // A short pipeline is read at every update.
    let fake = three();
    let mut w = watch(&fake, 101);
    w.sample(SEC);
    let (_, io) = fake.reads();
    for k in 1..=10 {
        w.sample(SEC + k * SEC / 10);
    }
    assert_eq!(fake.reads().1 - io, 30);
}

/// `cat big | gzip -9 | cat` where the middle stage (102) is still the shell forked for it
/// (a copy of 100: same name, same command line), alone and childless.
fn forked_middle_stage() -> FakeProc {
    let fake = three();
    fake.with(102, |p| {
        p.comm = "sh".into();
        p.cmdline = "sh -c x".into();
    });
    fake
}

#[test]
fn a_stage_forked_as_a_shell_that_runs_its_program_late_is_never_a_loop() {
    // On a loaded machine the forked shell runs gzip only after 1.5 s: four readings
    // alone and childless before that (2 readings made it a loop of builtins).
    let fake = forked_middle_stage();
    let mut w = watch(&fake, 101);
    for k in 0..=3 {
        let view = w.sample(k * SEC / 2);
        assert_eq!(view.stages[1].command, "sh -c x", "at {k} half-seconds");
    }
    fake.with(102, |p| {
        p.comm = "gzip".into();
        p.cmdline = "gzip -9".into();
    });
    for k in 4..=12 {
        gzip_bound_second(&fake);
        let view = w.sample(k * SEC / 2);
        assert_eq!(
            commands(&view),
            ["cat big", "gzip -9", "cat"],
            "at {k} half-seconds"
        );
    }
}

#[test]
fn a_subshell_running_builtins_for_over_two_seconds_is_a_loop() {
    // `cat big | while read l; do :; done`-like: the subshell stays alone and childless,
    // busy on its own.
    let fake = forked_middle_stage();
    let mut w = watch(&fake, 101);
    for k in 0..=3 {
        fake.work(102, 50, 10_000_000, 0);
        let view = w.sample(k * SEC / 2);
        assert_eq!(view.stages[1].command, "sh -c x", "at {k} half-seconds");
    }
    let mut named = None;
    for k in 4..=6 {
        fake.work(102, 50, 10_000_000, 0);
        let view = w.sample(k * SEC / 2);
        if view.stages[1].command == "(loop) sh" {
            named = Some(k);
            break;
        }
    }
    assert_eq!(named, Some(4), "a loop from 2 s on, not before");
    fake.work(102, 50, 10_000_000, 0);
    let view = w.sample(3 * SEC);
    assert_eq!(commands(&view), ["cat big", "(loop) sh", "cat"]);
    assert_eq!(view.stages[1].pid, 102);
}

#[test]
fn a_first_stage_connected_after_the_others_joins_within_a_third_of_a_second() {
    // The shell has forked the first stage (101, still a copy of it) but not yet given it
    // the pipe when the pipeline is found: an open start.
    let fake = three();
    fake.with(101, |p| {
        p.comm = "sh".into();
        p.cmdline = "sh -c x".into();
        p.stdout = TTY;
    });
    let mut w = watch(&fake, 103);
    assert_eq!(commands(&w.sample(0)), ["gzip -9", "cat"]);
    fake.with(101, |p| {
        p.comm = "cat".into();
        p.cmdline = "cat big".into();
        p.stdout = pipe(1);
    });
    let view = w.sample(3 * SEC / 10);
    assert_eq!(commands(&view), ["cat big", "gzip -9", "cat"]);
}

/// A shell's job whose middle stage the shell has forked but not yet given its pipes when
/// the watch starts (a loaded machine): the job is found as its two ends, and the middle
/// stage joins it, between them, within a third of a second of holding the pipes.
#[test]
fn a_middle_stage_connected_after_the_others_joins_its_job() {
    let fake = three();
    fake.with(102, |p| {
        p.comm = "sh".into();
        p.cmdline = "sh -c x".into();
        p.stdin = TTY;
        p.stdout = TTY;
    });
    let make = || -> Box<dyn crate::procfs::Proc> { Box::new(fake.clone()) };
    let mut jobs = Watcher::jobs(make, 100).expect("a job");
    let mut sample = |at: u64| -> Vec<Vec<String>> {
        jobs.iter_mut()
            .map(|j| {
                commands(&j.sample(at))
                    .into_iter()
                    .map(String::from)
                    .collect()
            })
            .collect()
    };
    assert_eq!(sample(0), [["cat big", "cat"]]);
    fake.with(102, |p| {
        p.comm = "gzip".into();
        p.cmdline = "gzip -9".into();
        p.stdin = pipe(1);
        p.stdout = pipe(2);
    });
    assert_eq!(sample(3 * SEC / 10), [["cat big", "gzip -9", "cat"]]);
}

/// `sh` (100) running `find / | xargs -n 50 md5sum | sort` (101, 102, 103): xargs starts
/// an md5sum every half-second, its input /dev/null, its output sort's pipe.
#[test]
fn xargs_is_one_stage_alive_while_it_is_with_its_childrens_time() {
    let fake = FakeProc::default();
    fake.add(100, 1, "sh -c x", TTY, TTY);
    fake.state(100, 'S', "do_wait");
    fake.add(101, 100, "find /", TTY, pipe(1));
    fake.state(101, 'S', "anon_pipe_write");
    fake.add(102, 100, "xargs -n 50 md5sum", pipe(1), pipe(2));
    fake.state(102, 'S', "do_wait");
    fake.add(103, 100, "sort", pipe(2), TTY);
    fake.state(103, 'S', "anon_pipe_read");
    fake.fill(1, CAP, CAP);
    fake.fill(2, 0, CAP);
    let mut w = watch(&fake, 103);
    let mut view = w.sample(0);
    for k in 1..=12u32 {
        // The md5sum of the last half-second ends (and is reaped), a new one starts.
        let child = 200 + k;
        fake.remove(child - 1);
        fake.add(child, 102, "md5sum a b c", TTY, pipe(2));
        fake.work(child, 45, 40_000_000, 4_000);
        fake.work(101, 1, 0, 3_000);
        fake.work(102, 0, 3_000, 0);
        fake.work(103, 0, 4_000, 0);
        view = w.sample(u64::from(k) * SEC / 2);
        assert_eq!(
            commands(&view),
            ["find /", "xargs -n 50 md5sum", "sort"],
            "at {k} half-seconds"
        );
        assert_ne!(view.stages[1].activity, Activity::Ended, "at {k}");
        assert_eq!(view.stages[1].pid, 102, "at {k}");
    }
    // Its children's time is its own: on a CPU most of the time.
    let cpu = view.stages[1].cpu.expect("a CPU figure");
    assert!(cpu > 60.0, "xargs's CPU with its children's: {cpu}");
    assert_eq!(marked(&view), ["xargs -n 50 md5sum"]);
    let advice = view.advice.clone().unwrap_or_default();
    assert!(
        !advice.contains("loop") && advice.contains("-n"),
        "advice for xargs: {advice:?}"
    );
}

/// `cat big | while read p; do python3 -c …; done | cat`: a python3 per line, each reading
/// 6 MB of its own modules and writing 3 bytes. The loop's input is what its shell read
/// from its pipe (30 bytes a line), never its children's reads of files; its output is
/// what the next stage read from its pipe.
#[test]
fn a_loops_bytes_are_its_pipes_not_its_childrens_files() {
    let fake = forked_middle_stage();
    let mut w = watch(&fake, 101);
    let mut view = w.sample(0);
    let mut child = 200;
    for k in 1..=16u64 {
        fake.remove(child);
        child += 1;
        fake.add(child, 102, "python3 -c x", pipe(1), pipe(2));
        fake.work(child, 5, 6_000_000, 3);
        fake.work(101, 0, 30, 30);
        fake.work(102, 0, 30, 0);
        fake.work(103, 0, 3, 3);
        view = w.sample(k * SEC / 4);
    }
    assert_eq!(commands(&view), ["cat big", "(loop) python3", "cat"]);
    let stage = &view.stages[1];
    let read = stage.bytes_in.expect("what the loop read");
    assert!(read <= 16 * 30, "the loop read {read} bytes from its pipe");
    let written = stage.bytes_out.expect("what went through its output pipe");
    assert!(
        written <= 16 * 3,
        "the loop wrote {written} bytes to its pipe"
    );
    // Nothing of its children's files went to its neighbours either.
    assert!(view.stages[0].bytes_out.is_some_and(|b| b <= 16 * 30));
}

/// `cat big | while read p; do python3 -c …; done | cat` on a loaded machine: each python3
/// takes over a second to start and run, so no three start within 3 s. The shell starting
/// one after the other is a loop all the same once the third has started (it never was).
#[test]
fn a_loop_whose_children_start_slowly_is_a_loop_at_its_third() {
    let fake = forked_middle_stage();
    let mut w = watch(&fake, 101);
    w.sample(0);
    let mut child = 200;
    let mut named = None;
    // A sample every 0.4 s; a new python3 every 1.6 s (the last one has ended by then).
    for k in 1..=16u64 {
        if k % 4 == 0 {
            fake.remove(child);
            child += 1;
            fake.add(child, 102, "python3 -c x", pipe(1), pipe(2));
        }
        if child > 200 {
            fake.work(child, 30, 2_000_000, 0);
        }
        fake.work(102, 0, 30, 0);
        let view = w.sample(k * 2 * SEC / 5);
        if view.stages[1].command == "(loop) python3" {
            named.get_or_insert(k);
        }
    }
    assert_eq!(
        named,
        Some(12),
        "a loop at its third python3 (4.8 s), not before"
    );
    let view = w.sample(7 * SEC);
    assert_eq!(commands(&view), ["cat big", "(loop) python3", "cat"]);
    assert_eq!(view.stages[1].pid, 102);
}

/// `head -c 8G /dev/zero | sha256sum` beside two busy loops of another session (their own
/// shell, 300, started them): sha256sum waits for a CPU more than it runs, and the advice
/// names the busiest of the loops, with what to do about it; never a stage, the stages'
/// shell or the watcher itself.
#[test]
fn short_of_cpu_names_the_busiest_process_outside_the_pipeline() {
    let fake = FakeProc::default();
    fake.add(100, 1, "sh", TTY, TTY);
    fake.add(101, 100, "head -c 8G /dev/zero", TTY, pipe(1));
    fake.add(102, 100, "sha256sum", pipe(1), TTY);
    fake.add(300, 1, "sh", TTY, TTY);
    fake.add(301, 300, "python3 spin.py", TTY, TTY);
    fake.add(302, 300, "python3 spin.py", TTY, TTY);
    fake.add(303, 300, "sleep 100", TTY, TTY);
    // (A session and process group each: the fake's are the same number.)
    for pid in [100, 101, 102] {
        fake.with(pid, |p| p.session = 5);
    }
    for pid in [300, 301, 302, 303] {
        fake.with(pid, |p| p.session = 7);
    }
    fake.fill(1, CAP, CAP);
    let mut w = watch(&fake, 102);
    w.sample(0);
    let mut view = View::default();
    for k in 1..=4 {
        fake.state(101, 'S', "anon_pipe_write");
        fake.work(101, 5, 0, 100_000_000);
        fake.starve(101, 150_000_000);
        fake.state(102, 'R', "0");
        fake.work(102, 40, 100_000_000, 0);
        fake.starve(102, 550_000_000);
        // The shell of the pipeline is busy too, but it is the pipeline's.
        fake.work(100, 90, 0, 0);
        fake.work(301, 60, 0, 0);
        fake.work(302, 80, 0, 0);
        for tenth in 1..=10 {
            w.tick((k - 1) * SEC + tenth * SEC / 10);
        }
        view = w.sample(k * SEC);
    }
    assert_eq!(marked(&view), ["sha256sum"]);
    let advice = view.advice.clone().unwrap_or_default();
    assert!(
        advice.starts_with("the machine is short of CPU: sha256sum waits for a CPU")
            && advice.contains(
                "; the busiest other program is python3 spin.py (PID 302, 80% of a \
                 core): renice -n 10 302 lowers its priority, or as root renice -n -5 -g 5 \
                 raises the pipeline's"
            ),
        "{advice}"
    );
    // The summary's advice names it too.
    let report = w.report();
    assert!(
        report
            .advice
            .is_some_and(|a| a.contains("renice -n 10 302")),
        "{:?}",
        w.report()
    );
}

/// `cat big | sort | uniq`, watched while sort reads and spills to temporary files on a
/// disk (its temporary files are never open when looked at): what sort writes goes to
/// storage, not to its pipe, so uniq is credited with nothing, from the first sample, and
/// sort's output is what uniq read.
#[test]
fn sort_spilling_to_disk_credits_its_reader_with_nothing() {
    let fake = three();
    fake.with(102, |p| {
        p.comm = "sort".into();
        p.cmdline = "sort -T /var/tmp".into();
    });
    fake.with(103, |p| {
        p.comm = "uniq".into();
        p.cmdline = "uniq".into();
    });
    let mut w = watch(&fake, 103);
    let mut view = w.sample(0);
    for k in 1..=6 {
        fake.state(101, 'S', "anon_pipe_write");
        fake.work(101, 5, 100_000_000, 100_000_000);
        fake.state(102, 'R', "0");
        fake.work(102, 90, 100_000_000, 84_000_000);
        fake.with(102, |p| p.io.write_bytes += 84_000_000);
        fake.state(103, 'S', "anon_pipe_read");
        fake.fill(1, CAP, CAP);
        fake.fill(2, 0, CAP);
        view = w.sample(k * SEC / 2);
        let uniq = &view.stages[2];
        assert!(
            uniq.bytes_in.unwrap_or(0) == 0 && uniq.rate_in.unwrap_or(0.0) == 0.0,
            "at {k} half-seconds: {uniq:?}"
        );
    }
    assert_eq!(commands(&view), ["cat big", "sort -T /var/tmp", "uniq"]);
    let sort = &view.stages[1];
    assert!(sort.bytes_out.unwrap_or(0) == 0, "{sort:?}");
}

/// `cat big | python3 send.py`: the sender writes to a TCP socket with `send`, which
/// `/proc/PID/io` does not count, and waits on it (in `poll`, its input pipe full). Its
/// output is what its socket moved (`sock_diag`'s count), not 0.
#[test]
fn a_socket_senders_output_is_what_its_socket_sent() {
    socket_sender_at_3_mb_s(0);
}

/// `cat big | python3 send.py` where the sender also wrote a file to the disk once, as it
/// started (a cache of its compiled modules): its output is still what its socket sent,
/// not unknown for the rest of the watch. (Writes to storage make a stage's output side
/// its reader's figure, which a last stage does not have; a run of the suite showed a
/// sender's `rate_out` null for 15 s.)
#[test]
fn a_socket_sender_that_wrote_a_file_once_is_still_counted() {
    socket_sender_at_3_mb_s(40_960);
}

/// `cat big | python3 send.py` for 3 s, its socket sending 3 MB/s while it waits on it, and
/// writing `to_disk` bytes to storage in its first half-second: its `rate_out` is its
/// socket's 3 MB/s.
fn socket_sender_at_3_mb_s(to_disk: u64) {
    use crate::procfs::fake::FakeTarget;
    let fake = FakeProc::default();
    fake.add(100, 1, "sh", TTY, TTY);
    fake.add(101, 100, "cat big", TTY, pipe(1));
    fake.add(102, 100, "python3 send.py", pipe(1), TTY);
    fake.open(102, 3, FakeTarget::Socket(77), 2);
    fake.fill(1, CAP, CAP);
    let mut w = watch(&fake, 102);
    let mut view = w.sample(0);
    let mut sent = 1_000;
    for k in 1..=6 {
        fake.state(101, 'S', "anon_pipe_write");
        fake.work(101, 2, 1_500_000, 1_500_000);
        fake.state(102, 'S', "do_sys_poll");
        let written = if k == 1 { to_disk } else { 0 };
        fake.work(102, 1, 1_500_000, written);
        fake.with(102, |p| p.io.write_bytes += written);
        sent += 1_500_000;
        fake.0.borrow_mut().tcp.insert(77, sent);
        for tenth in 1..=5 {
            w.tick((k - 1) * SEC / 2 + tenth * SEC / 10);
        }
        view = w.sample(k * SEC / 2);
    }
    let sender = &view.stages[1];
    let rate = sender.rate_out.unwrap_or(0.0);
    assert!(
        (2_900_000.0..=3_100_000.0).contains(&rate),
        "its socket sent 3 MB/s: {sender:?}"
    );
}

/// `cat big | sort > sorted`, sort writing its output to a file: its output figure is
/// what it wrote (its own count), not unknown: a last stage has no reader to take it from.
#[test]
fn a_last_stage_writing_a_file_shows_what_it_wrote() {
    let fake = FakeProc::default();
    fake.add(100, 1, "sh", TTY, TTY);
    fake.add(101, 100, "cat big", TTY, pipe(1));
    fake.add(102, 100, "sort", pipe(1), TTY);
    fake.fill(1, CAP, CAP);
    let mut w = watch(&fake, 102);
    let mut view = w.sample(0);
    for k in 1..=4 {
        fake.state(101, 'S', "anon_pipe_write");
        fake.work(101, 2, 1_000_000, 1_000_000);
        fake.state(102, 'R', "0");
        fake.work(102, 40, 1_000_000, 1_000_000);
        fake.with(102, |p| p.io.write_bytes += 1_000_000);
        view = w.sample(k * SEC / 2);
    }
    let sort = &view.stages[1];
    assert_eq!(sort.rate_out, Some(2_000_000.0), "{sort:?}");
    assert_eq!(sort.bytes_out, Some(4_000_000), "{sort:?}");
}

/// `cat big | python3 send.py` to a peer that keeps up: the sender is on a CPU or asleep
/// between its sends, never seen waiting on its socket. Its output is still what its
/// socket sent (`sock_diag`'s count), from the first sample on, not 0.
#[test]
fn a_socket_sender_never_seen_waiting_is_counted_from_the_first_sample() {
    use crate::procfs::fake::FakeTarget;
    let fake = FakeProc::default();
    fake.add(100, 1, "sh", TTY, TTY);
    fake.add(101, 100, "cat big", TTY, pipe(1));
    fake.add(102, 100, "python3 send.py", pipe(1), TTY);
    fake.open(102, 3, FakeTarget::Socket(77), 2);
    fake.0.borrow_mut().tcp.insert(77, 1_000);
    let mut w = watch(&fake, 102);
    let mut view = w.sample(0);
    let mut sent = 1_000;
    for k in 1..=4 {
        fake.state(101, 'S', "anon_pipe_write");
        fake.work(101, 2, 1_500_000, 1_500_000);
        fake.state(102, if k % 2 == 0 { 'R' } else { 'S' }, "hrtimer_nanosleep");
        fake.work(102, 20, 1_500_000, 0);
        sent += 1_500_000;
        fake.0.borrow_mut().tcp.insert(77, sent);
        for tenth in 1..=5 {
            w.tick((k - 1) * SEC / 2 + tenth * SEC / 10);
        }
        view = w.sample(k * SEC / 2);
    }
    let sender = &view.stages[1];
    let rate = sender.rate_out.unwrap_or(0.0);
    assert!(
        (2_900_000.0..=3_100_000.0).contains(&rate),
        "its socket sent 3 MB/s: {sender:?}"
    );
    assert_eq!(sender.bytes_out, Some(6_000_000), "{sender:?}");
}
