//! What a stage is doing, and which stage holds the pipeline back (pure).
//!
//! Owns: turning a task's state letter and `wchan` into an [`Activity`], combining the
//! tasks of a multi-threaded process, settling "sleeping in poll" with the fill of the
//! stage's pipes, and the bottleneck rule. Must not: read anything: every input is an
//! argument, so the rules are tested on synthetic samples.
//!
//! The bottleneck is the stage that holds the pipeline back: busy (running), or waiting on
//! something other than its neighbours (a timer, as for a rate limit; a disk; the network;
//! stopped), while its input pipe has data and its output pipe has room. A stage waiting to
//! read an empty input or to write a full output is held back by a neighbour instead. A
//! running stage whose input is empty at the moment of the sample (it is busy with what it
//! has just read) still counts, at half weight: on a machine short of CPU every stage is
//! "running", and the one using the most CPU is the one to blame.

use super::procfs::Fill;

/// What a stage was doing when it was sampled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activity {
    /// On a CPU, or ready to run.
    Running,
    /// Waiting to read its input (the pipe is empty).
    WaitInput,
    /// Waiting to write its output (the pipe is full).
    WaitOutput,
    /// Sleeping on something other than its pipes.
    Sleeping(Sleep),
    /// A shell waiting for its children.
    WaitChild,
    /// Stopped (Ctrl-Z, a debugger).
    Stopped,
    /// Not known: the process belongs to another user.
    Unknown,
    /// The stage has ended.
    Ended,
}

/// What a sleeping stage waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sleep {
    /// A timer (`nanosleep`): a rate limit, a deliberate pause.
    Timer,
    /// Uninterruptible sleep: usually the disk.
    Disk,
    /// A socket.
    Network,
    /// `poll`/`select` on descriptors that are not known to be its pipes.
    Poll,
    /// Anything else (a lock, a terminal, …).
    Other,
}

impl Activity {
    /// The short word shown in the state column.
    pub fn label(self) -> &'static str {
        match self {
            Activity::Running => "running",
            Activity::WaitInput => "wait input",
            Activity::WaitOutput => "wait output",
            Activity::Sleeping(Sleep::Timer) => "sleep timer",
            Activity::Sleeping(Sleep::Disk) => "wait disk",
            Activity::Sleeping(Sleep::Network) => "wait network",
            Activity::Sleeping(Sleep::Poll) => "sleep poll",
            Activity::Sleeping(Sleep::Other) => "sleeping",
            Activity::WaitChild => "wait child",
            Activity::Stopped => "stopped",
            Activity::Unknown => "not permitted",
            Activity::Ended => "ended",
        }
    }
}

/// One task (thread) from its state letter (`stat` field 3) and its `wchan` text.
pub fn task_activity(state: char, wchan: &str) -> Activity {
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
    } else if ["sk_wait", "skb", "tcp", "inet", "unix_", "sock"]
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
pub fn process_activity(tasks: &[(Activity, u64)]) -> Activity {
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
pub fn is_full(fill: Fill) -> bool {
    fill.queued.saturating_add(4096) > fill.capacity
}

/// Settles a sleep in `poll` (or an old kernel's `pipe_wait`) with the pipes: an empty input
/// means waiting for it; a full output means waiting to write it.
pub fn resolve(activity: Activity, input: Option<Fill>, output: Option<Fill>) -> Activity {
    if activity != Activity::Sleeping(Sleep::Poll) {
        return activity;
    }
    if input.is_some_and(|f| f.queued == 0) {
        Activity::WaitInput
    } else if output.is_some_and(is_full) {
        Activity::WaitOutput
    } else {
        activity
    }
}

/// One stage as the bottleneck rule sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StageState {
    /// What it is doing (already [`resolve`]d).
    pub activity: Activity,
    /// CPU use over the last interval, percent of one core (`None` before two samples).
    pub cpu: Option<f64>,
    /// The pipe it reads: `None` if it reads no pipe or its fill is unknown.
    pub input: Option<Fill>,
    /// The pipe it writes: `None` if it writes no pipe or its fill is unknown.
    pub output: Option<Fill>,
}

/// The stage holding the pipeline back right now, by index, if any. Of several candidates,
/// the most convincing wins: a running stage by how busy it was, a sleeping one by how idle
/// (a stage sleeping on a timer while its neighbours wait for it is the clearest case).
pub fn bottleneck(stages: &[StageState]) -> Option<usize> {
    // A pipeline stopped as a whole (Ctrl-Z) is not held back by any one stage.
    let live = stages.iter().filter(|s| s.activity != Activity::Ended);
    if live.clone().count() > 1 && live.clone().all(|s| s.activity == Activity::Stopped) {
        return None;
    }
    let mut best: Option<(usize, f64)> = None;
    for (i, s) in stages.iter().enumerate() {
        let has_data = s.input.is_none_or(|f| f.queued > 0);
        let has_room = s.output.is_none_or(|f| !is_full(f));
        let running = s.activity == Activity::Running;
        if !has_room || !has_data && !running {
            continue;
        }
        let cpu = s.cpu.unwrap_or(50.0).clamp(0.0, 100.0);
        let score = match s.activity {
            Activity::Running if has_data => cpu,
            Activity::Running => cpu / 2.0,
            Activity::Sleeping(_) => 100.0 - cpu,
            Activity::Stopped => 100.0,
            Activity::Unknown => {
                // Another user's stage: held back by it if a neighbour waits for it.
                let upstream_waits = i > 0 && stages[i - 1].activity == Activity::WaitOutput;
                let downstream_waits = stages
                    .get(i + 1)
                    .is_some_and(|n| n.activity == Activity::WaitInput);
                if upstream_waits || downstream_waits || cpu >= 50.0 {
                    cpu.max(50.0)
                } else {
                    continue;
                }
            }
            Activity::WaitInput | Activity::WaitOutput | Activity::WaitChild | Activity::Ended => {
                continue
            }
        };
        if best.is_none_or(|(_, b)| score > b) {
            best = Some((i, score));
        }
    }
    best.map(|(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    const EMPTY: Fill = Fill {
        queued: 0,
        capacity: 65536,
    };
    const FULL: Fill = Fill {
        queued: 65536,
        capacity: 65536,
    };
    const SOME: Fill = Fill {
        queued: 20000,
        capacity: 65536,
    };

    fn stage(
        activity: Activity,
        cpu: f64,
        input: Option<Fill>,
        output: Option<Fill>,
    ) -> StageState {
        StageState {
            activity,
            cpu: Some(cpu),
            input,
            output,
        }
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
        assert_eq!(resolve(poll, Some(SOME), Some(SOME)), poll);
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
    fn producer_bound() {
        // slow producer | cat | sha256sum: the producer runs, the others wait for input.
        let stages = [
            stage(Activity::Running, 98.0, None, Some(EMPTY)),
            stage(Activity::WaitInput, 1.0, Some(EMPTY), Some(EMPTY)),
            stage(Activity::WaitInput, 3.0, Some(EMPTY), None),
        ];
        assert_eq!(bottleneck(&stages), Some(0));
    }

    #[test]
    fn consumer_bound() {
        // cat | cat | slow consumer: everyone upstream waits to write.
        let stages = [
            stage(Activity::WaitOutput, 2.0, None, Some(FULL)),
            stage(Activity::WaitOutput, 2.0, Some(FULL), Some(FULL)),
            stage(Activity::Running, 99.0, Some(FULL), None),
        ];
        assert_eq!(bottleneck(&stages), Some(2));
    }

    #[test]
    fn middle_stage_cpu_bound() {
        // cat big | gzip -9 | cat: gzip's input is full and its output empty; the last cat
        // happened to be running when sampled, with a little data gzip had just written.
        let stages = [
            stage(Activity::WaitOutput, 3.0, None, Some(FULL)),
            stage(Activity::Running, 99.0, Some(FULL), Some(SOME)),
            stage(Activity::Running, 2.0, Some(SOME), None),
        ];
        assert_eq!(bottleneck(&stages), Some(1));
    }

    #[test]
    fn short_of_cpu_the_busiest_running_stage() {
        // yes | head | sha256sum on a machine whose CPUs are all taken: head and sha256sum
        // both wait for a CPU ("running"); sha256sum has just emptied its input.
        let stages = [
            stage(Activity::WaitOutput, 2.0, None, Some(FULL)),
            stage(Activity::Running, 2.0, Some(FULL), Some(EMPTY)),
            stage(Activity::Running, 12.0, Some(EMPTY), None),
        ];
        assert_eq!(bottleneck(&stages), Some(2));
        // A running stage with nothing to read loses to one with data and a similar load.
        let stages = [
            stage(Activity::Running, 20.0, None, Some(SOME)),
            stage(Activity::Running, 30.0, Some(EMPTY), None),
        ];
        assert_eq!(bottleneck(&stages), Some(0));
    }

    #[test]
    fn rate_limited_sleeper() {
        // head | rpv -L 20M | sha256sum: rpv sleeps on its timer; sha256sum was caught
        // hashing the last chunk.
        let stages = [
            stage(Activity::WaitOutput, 1.0, None, Some(FULL)),
            stage(
                Activity::Sleeping(Sleep::Timer),
                2.0,
                Some(FULL),
                Some(SOME),
            ),
            stage(Activity::Running, 6.0, Some(SOME), None),
        ];
        assert_eq!(bottleneck(&stages), Some(1));
    }

    #[test]
    fn consumer_sleeping_between_reads() {
        let stages = [
            stage(Activity::WaitOutput, 0.0, None, Some(FULL)),
            stage(Activity::Sleeping(Sleep::Timer), 0.0, Some(FULL), None),
        ];
        assert_eq!(bottleneck(&stages), Some(1));
    }

    #[test]
    fn nobody_holds_back_an_idle_or_ended_pipeline() {
        let stages = [
            stage(Activity::Ended, 0.0, None, Some(EMPTY)),
            stage(Activity::WaitInput, 0.0, Some(EMPTY), None),
        ];
        assert_eq!(bottleneck(&stages), None);
        // A producer sleeping between writes holds the pipeline back; the consumer, with
        // nothing to read, does not.
        let stages = [
            stage(Activity::Sleeping(Sleep::Timer), 0.0, None, Some(EMPTY)),
            stage(Activity::Sleeping(Sleep::Timer), 0.0, Some(EMPTY), None),
        ];
        assert_eq!(bottleneck(&stages), Some(0));
        assert_eq!(bottleneck(&[]), None);
    }

    #[test]
    fn a_stopped_stage_holds_back_the_others_but_a_stopped_pipeline_has_no_bottleneck() {
        let stages = [
            stage(Activity::WaitOutput, 0.0, None, Some(FULL)),
            stage(Activity::Stopped, 0.0, Some(FULL), Some(EMPTY)),
            stage(Activity::WaitInput, 0.0, Some(EMPTY), None),
        ];
        assert_eq!(bottleneck(&stages), Some(1));
        let stopped = [
            stage(Activity::Stopped, 0.0, None, Some(SOME)),
            stage(Activity::Stopped, 0.0, Some(SOME), Some(SOME)),
            stage(Activity::Ended, 0.0, Some(SOME), None),
        ];
        assert_eq!(bottleneck(&stopped), None);
    }

    #[test]
    fn another_users_stage_is_blamed_only_through_its_neighbours() {
        let hidden = StageState {
            activity: Activity::Unknown,
            cpu: Some(95.0),
            input: Some(FULL),
            output: Some(EMPTY),
        };
        let stages = [
            stage(Activity::WaitOutput, 1.0, None, Some(FULL)),
            hidden,
            stage(Activity::WaitInput, 1.0, Some(EMPTY), None),
        ];
        assert_eq!(bottleneck(&stages), Some(1));
        // Idle, with its neighbours not waiting for it: not blamed.
        let idle = StageState {
            cpu: Some(0.0),
            ..hidden
        };
        let stages = [
            stage(Activity::Running, 90.0, None, Some(SOME)),
            StageState {
                input: Some(SOME),
                ..idle
            },
        ];
        assert_eq!(bottleneck(&stages), Some(0));
    }
}
