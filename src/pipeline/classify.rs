//! What a stage is doing, and which stage holds the pipeline back (pure).
//!
//! Owns: turning a task's state letter and `wchan` into an [`Activity`], combining the
//! tasks of a multi-threaded process, settling "sleeping in poll" with the fill of the
//! stage's pipes, the state shown for a stage over a window ([`state`]), and the
//! bottleneck rule ([`bottleneck`]). Must not: read anything: every input is an argument,
//! so the rules are tested on synthetic samples.
//!
//! The bottleneck is the stage that holds the pipeline back: the one that spends the most
//! of its time on its own account — on a CPU, waiting for a CPU, or waiting on something
//! other than its neighbours (a timer, as for a rate limit; a disk; the network; stopped).
//! A stage waiting to read an empty input or to write a full output is held back by a
//! neighbour instead. The rule reads shares of time over a window (see `timeshare`), never
//! one instant: a hash using a whole core is caught waiting for its input at most instants
//! it is looked at, because each chunk its producer writes is read at once.

use super::model::{Activity, Fill, Part, Sleep, Split};

/// One task (thread) from its state letter (`stat` field 3) and its `wchan` text.
pub(crate) fn task_activity(state: char, wchan: &str) -> Activity {
    let wchan = wchan.trim();
    match state {
        'R' => return Activity::Running,
        'T' | 't' => return Activity::Stopped,
        'Z' | 'X' | 'x' => return Activity::Ended,
        'D' => return Activity::Sleeping(Sleep::Disk),
        _ => {}
    }
    let has = |part: &str| wchan.contains(part);
    if wchan.is_empty() || wchan == "0" {
        // Woken between the two reads: it is about to run.
        Activity::Running
    } else if has("pipe_read") || has("pipe_wait_readable") {
        Activity::WaitInput
    } else if has("pipe_write") || has("pipe_wait_writable") {
        Activity::WaitOutput
    } else if has("do_wait") || has("kernel_wait") || has("waitid") {
        Activity::WaitChild
    } else if has("poll") || has("select") || has("pipe_wait") {
        // Old kernels wait in `pipe_wait` for either direction: the fills tell which.
        Activity::Sleeping(Sleep::Poll)
    } else if has("nanosleep") || has("hrtimer") || has("schedule_timeout") {
        Activity::Sleeping(Sleep::Timer)
    } else if [
        "sk_wait",
        "sk_stream",
        "skb",
        "tcp",
        "inet",
        "unix_",
        "sock",
    ]
    .iter()
    .any(|p| has(p))
    {
        Activity::Sleeping(Sleep::Network)
    } else {
        Activity::Sleeping(Sleep::Other)
    }
}

/// A process from its tasks, each given as (activity, CPU ticks used so far). A running
/// task wins; then a task blocked on a pipe, on the disk, or on a timer (the thread doing
/// the work, whatever the others do); otherwise the task that has used the most CPU (the
/// worker, not an idle helper thread).
pub(crate) fn process_activity(tasks: &[(Activity, u64)]) -> Activity {
    let order = [
        Activity::Running,
        Activity::Stopped,
        Activity::WaitOutput,
        Activity::WaitInput,
        Activity::Sleeping(Sleep::Disk),
        Activity::Sleeping(Sleep::Timer),
    ];
    if let Some(found) = order.iter().find(|a| tasks.iter().any(|(t, _)| t == *a)) {
        return *found;
    }
    tasks
        .iter()
        .max_by_key(|(_, ticks)| *ticks)
        .map_or(Activity::Ended, |(a, _)| *a)
}

/// True if a writer would wait: less than a page of room left.
pub(crate) fn is_full(fill: Fill) -> bool {
    fill.queued.saturating_add(4096) > fill.capacity
}

/// Settles a sleep in `poll` (or an old kernel's `pipe_wait`) with the pipes: an empty input
/// means waiting for it; a full output means waiting to write it; an input with data and an
/// output with room mean waiting for a timeout (pv's rate limit sleeps in `select`).
pub(crate) fn resolve(activity: Activity, input: Option<Fill>, output: Option<Fill>) -> Activity {
    if activity != Activity::Sleeping(Sleep::Poll) {
        return activity;
    }
    match (input, output) {
        (Some(i), _) if i.queued == 0 => Activity::WaitInput,
        (_, Some(o)) if is_full(o) => Activity::WaitOutput,
        (Some(_), Some(_)) => Activity::Sleeping(Sleep::Timer),
        _ => activity,
    }
}

/// Least share of the time a stage must spend on its own account (not waiting for its
/// neighbours) to be named the bottleneck.
pub(crate) const MIN_OWN: f64 = 0.5;

/// Shares closer than this are taken as equal.
const TIE: f64 = 0.01;

/// One stage as the bottleneck rule sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct StageState {
    /// What it is doing now (already [`resolve`]d): `Unknown` for another user's stage,
    /// `Stopped` and `Ended` as they are.
    pub activity: Activity,
    /// Where its time went over the last window, as fractions ([`Split::shares`]); `None`
    /// before two readings.
    pub time: Option<Split>,
    /// A stage of the pipeline writes its input pipe (false for the first stage: what it
    /// reads comes from outside the pipeline).
    pub upstream: bool,
    /// A stage of the pipeline reads its output pipe (false for the last stage).
    pub downstream: bool,
}

impl StageState {
    /// Its time on its own account: [`Split::own`], and for the first stage its waits for
    /// input (its source is outside the pipeline: a FIFO, another program), for the last its
    /// waits for output.
    pub(crate) fn own(&self, time: &Split) -> f64 {
        let mut own = time.own();
        if !self.upstream {
            own += time.get(Part::Input);
        }
        if !self.downstream {
            own += time.get(Part::Output);
        }
        own
    }
}

/// The stage holding the pipeline back, by index, if any: of the stages that spent at
/// least [`MIN_OWN`] of the window on their own account — on a CPU, waiting for one, or
/// blocked on anything but their neighbours (a timer, the disk, the network, a lock,
/// stopped; for the first stage its source, for the last its destination) — the one that
/// spent the most, the busier of two equals. A stage waiting to read an empty pipe from
/// the stage before it, or to write a full one to the stage after it, is held back by
/// that neighbour instead. The shares cover
/// the whole window, so a stage that is busy 98 % of the time is found even if every
/// instant it was looked at, it was waiting for its input.
///
/// Another user's stage has no wait states: its CPU time counts, and its blocked time
/// (unknown) only when a neighbour spent at least half the window waiting for it.
pub(crate) fn bottleneck(stages: &[StageState]) -> Option<usize> {
    // A pipeline stopped as a whole (Ctrl-Z) is not held back by any one stage.
    let live = stages.iter().filter(|s| s.activity != Activity::Ended);
    if live.clone().count() > 1 && live.clone().all(|s| s.activity == Activity::Stopped) {
        return None;
    }
    let part = |i: usize, part: Part| {
        stages
            .get(i)
            .and_then(|s| s.time)
            .map_or(0.0, |t| t.get(part))
    };
    let mut best: Option<(usize, f64, f64)> = None;
    for (i, s) in stages.iter().enumerate() {
        let Some(time) = s.time.filter(|_| s.activity != Activity::Ended) else {
            continue;
        };
        let score = if s.activity == Activity::Unknown {
            let waited =
                (i > 0 && part(i - 1, Part::Output) >= 0.5) || part(i + 1, Part::Input) >= 0.5;
            if waited {
                s.own(&time) + time.get(Part::Unknown)
            } else {
                s.own(&time)
            }
        } else {
            s.own(&time)
        };
        if score < MIN_OWN {
            continue;
        }
        let better = match best {
            None => true,
            Some((_, b, cpu)) => score > b + TIE || (score >= b - TIE && time.cpu() > cpu),
        };
        if better {
            best = Some((i, score, time.cpu()));
        }
    }
    best.map(|(i, _, _)| i).or_else(|| held_by_one(stages))
}

/// The stage every other stage waits on, when none spent enough time on its own account
/// to be named: the stages before it mostly waited to write (their output pipes full
/// down to it), those after it mostly waited to read. Whatever it is doing, it is what
/// the others wait for.
fn held_by_one(stages: &[StageState]) -> Option<usize> {
    let live: Vec<(usize, Split)> = stages
        .iter()
        .enumerate()
        .filter(|(_, s)| !matches!(s.activity, Activity::Ended))
        .filter_map(|(i, s)| s.time.map(|t| (i, t)))
        .collect();
    if live.len() < 2
        || live.len()
            < stages
                .iter()
                .filter(|s| s.activity != Activity::Ended)
                .count()
    {
        return None;
    }
    let waits = |t: &Split, part: Part| t.get(part) >= MIN_OWN;
    live.iter().map(|(i, _)| *i).find(|&k| {
        live.iter().all(|(j, t)| {
            *j == k
                || (*j < k && waits(t, Part::Output) && stages[*j].downstream)
                || (*j > k && waits(t, Part::Input) && stages[*j].upstream)
        })
    })
}

/// The state shown for a stage: what it did most over the window. Its largest own part
/// (running, starved, a timer, the disk, the network, something else) when its own time
/// was at least its time waiting for neighbours, else the neighbour it waited for most —
/// so the stage named the bottleneck never reads as waiting for a neighbour. `now` when
/// nothing is known yet, and for states the time does not tell (stopped, another user's,
/// ended).
pub(crate) fn state(time: Option<Split>, now: Activity) -> Activity {
    let Some(t) = time else {
        return now;
    };
    if matches!(now, Activity::Unknown | Activity::Ended | Activity::Stopped) {
        return now;
    }
    let waits = t.get(Part::Input) + t.get(Part::Output) + t.get(Part::Child);
    if t.own() >= waits {
        let own = [
            Part::Busy,
            Part::Starved,
            Part::Timer,
            Part::Disk,
            Part::Network,
            Part::Stopped,
            Part::Other,
        ];
        match t.largest(&own).map(|(p, _)| p) {
            Some(Part::Stopped) => Activity::Stopped,
            Some(Part::Starved) => Activity::Starved,
            Some(Part::Timer) => Activity::Sleeping(Sleep::Timer),
            Some(Part::Disk) => Activity::Sleeping(Sleep::Disk),
            Some(Part::Network) => Activity::Sleeping(Sleep::Network),
            Some(Part::Other) => match now {
                Activity::Sleeping(Sleep::Poll | Sleep::Other) => now,
                _ => Activity::Sleeping(Sleep::Other),
            },
            _ => Activity::Running,
        }
    } else {
        match t.largest(&[Part::Input, Part::Output, Part::Child]) {
            Some((Part::Output, _)) => Activity::WaitOutput,
            Some((Part::Child, _)) => Activity::WaitChild,
            _ => Activity::WaitInput,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOME: Fill = Fill {
        queued: 20000,
        capacity: 65536,
    };
    const EMPTY: Fill = Fill {
        queued: 0,
        capacity: 65536,
    };
    const FULL: Fill = Fill {
        queued: 65536,
        capacity: 65536,
    };

    /// A stage now doing `activity` whose window was spent as `parts` say (percent).
    fn stage(activity: Activity, parts: &[(Part, f64)]) -> StageState {
        let mut time = Split::default();
        for (p, v) in parts {
            time.add(*p, *v);
        }
        StageState {
            activity,
            time: time.shares(),
            upstream: true,
            downstream: true,
        }
    }

    /// A stage in `activity` busy `busy`% of its time and waiting the rest on `waits`.
    fn busy(activity: Activity, busy: f64, waits: Part) -> StageState {
        stage(activity, &[(Part::Busy, busy), (waits, 100.0 - busy)])
    }

    /// The bottleneck of `stages` as a pipeline of their own: the first has no stage
    /// before it, the last none after it.
    fn bottleneck_of(stages: &[StageState]) -> Option<usize> {
        let n = stages.len();
        let chained: Vec<StageState> = stages
            .iter()
            .enumerate()
            .map(|(i, s)| StageState {
                upstream: i > 0,
                downstream: i + 1 < n,
                ..*s
            })
            .collect();
        bottleneck(&chained)
    }

    #[test]
    fn tasks_from_state_and_wchan() {
        use Activity::*;
        let cases = [
            ('R', "0", Running),
            ('S', "0", Running),
            ('S', "anon_pipe_read", WaitInput),
            ('S', "pipe_read", WaitInput),
            ('S', "pipe_wait_readable", WaitInput),
            ('S', "anon_pipe_write", WaitOutput),
            ('S', "pipe_wait_writable", WaitOutput),
            ('S', "pipe_wait", Sleeping(Sleep::Poll)),
            (
                'S',
                "poll_schedule_timeout.constprop.0",
                Sleeping(Sleep::Poll),
            ),
            ('S', "do_select", Sleeping(Sleep::Poll)),
            ('S', "do_epoll_wait", Sleeping(Sleep::Poll)),
            ('S', "hrtimer_nanosleep", Sleeping(Sleep::Timer)),
            ('S', "do_nanosleep", Sleeping(Sleep::Timer)),
            ('S', "do_wait", WaitChild),
            ('S', "__skb_wait_for_more_packets", Sleeping(Sleep::Network)),
            ('S', "sk_wait_data", Sleeping(Sleep::Network)),
            ('S', "sk_stream_wait_memory", Sleeping(Sleep::Network)),
            ('S', "futex_wait_queue", Sleeping(Sleep::Other)),
            ('D', "folio_wait_bit_common", Sleeping(Sleep::Disk)),
            ('T', "do_signal_stop", Stopped),
            ('Z', "0", Ended),
        ];
        for (state, wchan, want) in cases {
            assert_eq!(task_activity(state, wchan), want, "{state} {wchan}");
        }
    }

    #[test]
    fn a_multi_threaded_process_shows_its_working_thread() {
        use Activity::*;
        let poll = Sleeping(Sleep::Poll);
        let net = Sleeping(Sleep::Network);
        let timer = Sleeping(Sleep::Timer);
        // rpv: display thread in poll, data thread on the rate limit, control thread in recv.
        assert_eq!(process_activity(&[(poll, 5), (timer, 50), (net, 0)]), timer);
        assert_eq!(
            process_activity(&[(poll, 5), (WaitOutput, 50), (net, 0)]),
            WaitOutput
        );
        assert_eq!(
            process_activity(&[(poll, 5), (Running, 50), (net, 0)]),
            Running
        );
        // Nothing decisive: the busiest thread's state.
        assert_eq!(process_activity(&[(net, 1), (poll, 50)]), poll);
        assert_eq!(process_activity(&[]), Ended);
    }

    #[test]
    fn poll_is_settled_by_the_pipes() {
        let poll = Activity::Sleeping(Sleep::Poll);
        assert_eq!(resolve(poll, Some(EMPTY), Some(SOME)), Activity::WaitInput);
        assert_eq!(resolve(poll, Some(SOME), Some(FULL)), Activity::WaitOutput);
        // Both pipes ready, yet asleep: a timeout (a rate limit in select).
        assert_eq!(
            resolve(poll, Some(SOME), Some(SOME)),
            Activity::Sleeping(Sleep::Timer)
        );
        assert_eq!(resolve(poll, Some(SOME), None), poll);
        assert_eq!(resolve(poll, None, None), poll);
        assert_eq!(
            resolve(Activity::Running, Some(EMPTY), None),
            Activity::Running
        );
        let nearly = Fill {
            queued: 65536 - 100,
            capacity: 65536,
        };
        assert!(is_full(nearly) && !is_full(SOME));
    }

    #[test]
    fn a_busy_stage_is_found_though_caught_waiting_for_its_input() {
        // yes | head | sha256sum: sha256sum on a CPU 97 % of the second, yet its state
        // now (and at most instants) is "wait input"; head mostly blocked on its output.
        let stages = [
            busy(Activity::WaitOutput, 5.0, Part::Output),
            stage(
                Activity::Running,
                &[(Part::Busy, 26.0), (Part::Output, 70.0), (Part::Input, 4.0)],
            ),
            stage(
                Activity::WaitInput,
                &[(Part::Busy, 97.0), (Part::Starved, 1.0), (Part::Input, 2.0)],
            ),
        ];
        assert_eq!(bottleneck_of(&stages), Some(2));
    }

    #[test]
    fn starved_time_counts_as_the_stages_own() {
        // The same pipeline beside two busy loops on two cores: sha256sum waits for a CPU
        // more than it runs; head is starved too, but blocked on its output most of the time.
        let stages = [
            stage(
                Activity::WaitOutput,
                &[(Part::Starved, 4.0), (Part::Output, 96.0)],
            ),
            stage(
                Activity::Running,
                &[
                    (Part::Busy, 12.0),
                    (Part::Starved, 20.0),
                    (Part::Output, 68.0),
                ],
            ),
            stage(
                Activity::Running,
                &[
                    (Part::Busy, 40.0),
                    (Part::Starved, 52.0),
                    (Part::Input, 8.0),
                ],
            ),
        ];
        assert_eq!(bottleneck_of(&stages), Some(2));
        assert_eq!(state(stages[2].time, Activity::Running), Activity::Starved);
        assert_eq!(
            state(stages[1].time, Activity::Running),
            Activity::WaitOutput
        );
    }

    #[test]
    fn producer_middle_and_consumer_bound() {
        let producer = [
            busy(Activity::Running, 98.0, Part::Output),
            busy(Activity::WaitInput, 1.0, Part::Input),
            busy(Activity::WaitInput, 3.0, Part::Input),
        ];
        assert_eq!(bottleneck_of(&producer), Some(0));
        let middle = [
            busy(Activity::WaitOutput, 3.0, Part::Output),
            busy(Activity::Running, 99.0, Part::Input),
            busy(Activity::Running, 2.0, Part::Input),
        ];
        assert_eq!(bottleneck_of(&middle), Some(1));
        let consumer = [
            busy(Activity::WaitOutput, 2.0, Part::Output),
            busy(Activity::WaitOutput, 2.0, Part::Output),
            busy(Activity::Running, 99.0, Part::Input),
        ];
        assert_eq!(bottleneck_of(&consumer), Some(2));
    }

    #[test]
    fn the_stage_every_other_one_waits_on_is_named_whatever_it_does() {
        // `… | while read l; do …; done` as a shell waiting for its children would show it:
        // its own time short of half (it waits for a child), but every stage before it
        // waits to write.
        let stages = [
            busy(Activity::WaitOutput, 1.0, Part::Output),
            busy(Activity::WaitOutput, 2.0, Part::Output),
            stage(
                Activity::WaitChild,
                &[(Part::Busy, 10.0), (Part::Child, 80.0), (Part::Input, 10.0)],
            ),
        ];
        assert_eq!(bottleneck_of(&stages), Some(2));
        // In the middle: those before wait to write, those after to read.
        let middle = [
            busy(Activity::WaitOutput, 10.0, Part::Output),
            stage(
                Activity::WaitChild,
                &[(Part::Child, 70.0), (Part::Input, 30.0)],
            ),
            busy(Activity::WaitInput, 5.0, Part::Input),
        ];
        assert_eq!(bottleneck_of(&middle), Some(1));
        // Not when a stage on either side does not wait on it.
        let split = [
            busy(Activity::WaitOutput, 10.0, Part::Output),
            stage(
                Activity::WaitChild,
                &[(Part::Child, 70.0), (Part::Input, 30.0)],
            ),
            stage(
                Activity::Running,
                &[
                    (Part::Busy, 45.0),
                    (Part::Input, 40.0),
                    (Part::Output, 15.0),
                ],
            ),
            busy(Activity::WaitInput, 5.0, Part::Input),
        ];
        assert_eq!(bottleneck_of(&split), None);
    }

    #[test]
    fn sleepers_on_a_timer_hold_back_their_neighbours() {
        // head | rpv -L 20M | sha256sum: rpv sleeps on its limit.
        let limited = [
            busy(Activity::WaitOutput, 1.0, Part::Output),
            busy(Activity::Sleeping(Sleep::Timer), 2.0, Part::Timer),
            busy(Activity::Running, 6.0, Part::Input),
        ];
        assert_eq!(bottleneck_of(&limited), Some(1));
        // A consumer sleeping between reads (in poll/select with nothing to wait for).
        let sleeper = [
            stage(Activity::WaitOutput, &[(Part::Output, 100.0)]),
            busy(Activity::Sleeping(Sleep::Poll), 1.0, Part::Other),
        ];
        assert_eq!(bottleneck_of(&sleeper), Some(1));
        assert_eq!(
            state(sleeper[1].time, Activity::Running),
            Activity::Sleeping(Sleep::Other)
        );
        assert_eq!(
            state(sleeper[1].time, Activity::Sleeping(Sleep::Poll)),
            Activity::Sleeping(Sleep::Poll)
        );
    }

    #[test]
    fn the_ends_wait_for_the_outside_and_an_ended_pipeline_has_no_bottleneck() {
        // The first stage reads a FIFO whose writer is slow: what it waits for is outside
        // the pipeline, so it holds the others back.
        let source = [
            stage(Activity::WaitInput, &[(Part::Input, 100.0)]),
            stage(Activity::WaitInput, &[(Part::Input, 100.0)]),
        ];
        assert_eq!(bottleneck_of(&source), Some(0));
        // The last stage writes to a slow reader outside the pipeline.
        let sink = [
            stage(Activity::WaitOutput, &[(Part::Output, 100.0)]),
            busy(Activity::WaitOutput, 2.0, Part::Output),
        ];
        assert_eq!(bottleneck_of(&sink), Some(1));
        // In the middle, waiting for a neighbour is not the stage's own time.
        let middle = [stage(Activity::WaitInput, &[(Part::Input, 100.0)])];
        let held = StageState {
            upstream: true,
            downstream: true,
            ..middle[0]
        };
        assert_eq!(bottleneck(&[held]), None);
        let ended = [
            stage(Activity::Ended, &[(Part::Busy, 100.0)]),
            stage(Activity::WaitInput, &[(Part::Input, 100.0)]),
        ];
        assert_eq!(bottleneck_of(&ended), None);
        // Nothing measured yet.
        let unknown = [StageState {
            activity: Activity::Running,
            time: None,
            upstream: false,
            downstream: false,
        }];
        assert_eq!(bottleneck_of(&unknown), None);
        assert_eq!(bottleneck_of(&[]), None);
    }

    #[test]
    fn of_two_equals_the_busier_and_then_the_first() {
        let stages = [
            stage(Activity::Sleeping(Sleep::Timer), &[(Part::Timer, 100.0)]),
            stage(
                Activity::Running,
                &[(Part::Busy, 60.0), (Part::Timer, 39.5), (Part::Input, 0.5)],
            ),
        ];
        assert_eq!(bottleneck_of(&stages), Some(1));
        let sleeps = [
            stage(Activity::Sleeping(Sleep::Timer), &[(Part::Timer, 100.0)]),
            stage(Activity::Sleeping(Sleep::Timer), &[(Part::Timer, 100.0)]),
        ];
        assert_eq!(bottleneck_of(&sleeps), Some(0));
    }

    #[test]
    fn a_stopped_stage_holds_back_the_others_but_a_stopped_pipeline_has_no_bottleneck() {
        let stages = [
            stage(Activity::WaitOutput, &[(Part::Output, 100.0)]),
            stage(Activity::Stopped, &[(Part::Other, 100.0)]),
            stage(Activity::WaitInput, &[(Part::Input, 100.0)]),
        ];
        assert_eq!(bottleneck_of(&stages), Some(1));
        assert_eq!(state(stages[1].time, Activity::Stopped), Activity::Stopped);
        let stopped = [
            stage(Activity::Stopped, &[(Part::Other, 100.0)]),
            stage(Activity::Stopped, &[(Part::Other, 100.0)]),
            stage(Activity::Ended, &[]),
        ];
        assert_eq!(bottleneck_of(&stopped), None);
    }

    #[test]
    fn another_users_stage_is_blamed_only_through_its_neighbours() {
        // Its blocked time has no wait states: it counts only when a neighbour waits.
        let hidden = busy(Activity::Unknown, 30.0, Part::Unknown);
        let stages = [
            busy(Activity::WaitOutput, 1.0, Part::Output),
            hidden,
            busy(Activity::WaitInput, 1.0, Part::Input),
        ];
        assert_eq!(bottleneck_of(&stages), Some(1));
        assert_eq!(state(hidden.time, Activity::Unknown), Activity::Unknown);
        let stages = [busy(Activity::Running, 90.0, Part::Output), hidden];
        assert_eq!(bottleneck_of(&stages), Some(0));
        // Busy on its own: blamed by its CPU time.
        let busy = busy(Activity::Unknown, 95.0, Part::Unknown);
        assert_eq!(bottleneck_of(&[busy]), Some(0));
    }

    #[test]
    fn the_state_shown_is_what_the_window_was_spent_on() {
        let t = |parts: &[(Part, f64)]| stage(Activity::Running, parts).time;
        use Activity::*;
        assert_eq!(state(None, WaitInput), WaitInput);
        assert_eq!(
            state(t(&[(Part::Busy, 60.0), (Part::Input, 40.0)]), WaitInput),
            Running
        );
        assert_eq!(
            state(t(&[(Part::Busy, 30.0), (Part::Input, 70.0)]), Running),
            WaitInput
        );
        assert_eq!(
            state(
                t(&[
                    (Part::Busy, 30.0),
                    (Part::Input, 30.0),
                    (Part::Output, 40.0)
                ]),
                Running
            ),
            WaitOutput
        );
        assert_eq!(
            state(t(&[(Part::Disk, 60.0), (Part::Input, 40.0)]), Running),
            Sleeping(Sleep::Disk)
        );
        assert_eq!(
            state(t(&[(Part::Network, 60.0), (Part::Busy, 40.0)]), Running),
            Sleeping(Sleep::Network)
        );
        assert_eq!(state(t(&[(Part::Child, 100.0)]), WaitChild), WaitChild);
        assert_eq!(state(t(&[(Part::Busy, 100.0)]), Ended), Ended);
        assert_eq!(Starved.label(), "starved");
    }
}
