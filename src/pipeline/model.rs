//! The pipeline view's vocabulary (pure types, a leaf: it imports nothing).
//!
//! Owns: what a stage is doing ([`Activity`], [`Sleep`]), the parts of its time ([`Part`])
//! and its time by part ([`Split`]), how full a pipe is ([`Fill`]), and one row of the view
//! ([`StageView`]).
//! Must not: read, decide or draw anything: the rules that make these values are in
//! `classify` (activity, bottleneck), `timeshare` (time split), `procfs` (fill) and `watch`.

/// What a stage was doing when it was sampled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Activity {
    /// On a CPU, or ready to run.
    #[default]
    Running,
    /// Ready to run but waiting for a CPU more than it runs (over a window, never an
    /// instant).
    Starved,
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
pub(crate) enum Sleep {
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
    pub(crate) fn label(self) -> &'static str {
        match self {
            Activity::Running => "running",
            Activity::Starved => "starved",
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

/// A part of a thread's time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Part {
    /// On a CPU.
    Busy,
    /// Runnable, waiting for a CPU.
    Starved,
    /// Blocked reading its input pipe (empty).
    Input,
    /// Blocked writing its output pipe (full).
    Output,
    /// Sleeping on a timer (a rate limit, a pause).
    Timer,
    /// Waiting for the disk (uninterruptible sleep).
    Disk,
    /// Waiting on a socket.
    Network,
    /// A shell waiting for its children.
    Child,
    /// Stopped (Ctrl-Z, SIGSTOP, a debugger).
    Stopped,
    /// Anything else: `poll` on something other than its pipes, a lock, a terminal.
    Other,
    /// Blocked, but never seen blocked (another user's process, whose wait states cannot
    /// be read; a thread whose sleeps all fell between two samples).
    Unknown,
}

/// Number of parts.
pub(super) const PARTS: usize = 11;

impl Part {
    /// Every part, in the order of [`Split`]'s fields.
    pub(crate) const ALL: [Part; PARTS] = [
        Part::Busy,
        Part::Starved,
        Part::Input,
        Part::Output,
        Part::Timer,
        Part::Disk,
        Part::Network,
        Part::Child,
        Part::Stopped,
        Part::Other,
        Part::Unknown,
    ];

    pub(super) fn index(self) -> usize {
        self as usize
    }

    /// The name of the part in `--json` (`busy`, `starved`, `wait_input`, …).
    pub(crate) fn key(self) -> &'static str {
        match self {
            Part::Busy => "busy",
            Part::Starved => "starved",
            Part::Input => "wait_input",
            Part::Output => "wait_output",
            Part::Timer => "timer",
            Part::Disk => "disk",
            Part::Network => "network",
            Part::Child => "child",
            Part::Stopped => "stopped",
            Part::Other => "other",
            Part::Unknown => "unknown",
        }
    }

    /// The part a sampled state is counted in; `None` for a thread on or waiting for a CPU
    /// (the CPU times count those exactly) and for states that say nothing.
    pub(crate) fn of(activity: Activity) -> Option<Part> {
        match activity {
            Activity::WaitInput => Some(Part::Input),
            Activity::WaitOutput => Some(Part::Output),
            Activity::Sleeping(Sleep::Timer) => Some(Part::Timer),
            Activity::Sleeping(Sleep::Disk) => Some(Part::Disk),
            Activity::Sleeping(Sleep::Network) => Some(Part::Network),
            Activity::Sleeping(Sleep::Poll | Sleep::Other) => Some(Part::Other),
            Activity::Stopped => Some(Part::Stopped),
            Activity::WaitChild => Some(Part::Child),
            Activity::Running | Activity::Starved | Activity::Unknown | Activity::Ended => None,
        }
    }

    /// Time spent on the stage's own account rather than waiting for a neighbour (its
    /// pipes) or for a child (the child is the stage shown). Unknown time is neither.
    pub(crate) fn own(self) -> bool {
        !matches!(
            self,
            Part::Input | Part::Output | Part::Child | Part::Unknown
        )
    }
}

/// A thread's (or a stage's) time, by part: nanoseconds, or fractions after
/// [`Split::shares`].
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Split([f64; PARTS]);

impl Split {
    /// The time in `part`.
    pub(crate) fn get(&self, part: Part) -> f64 {
        self.0[part.index()]
    }

    /// Adds `value` to `part`.
    pub(crate) fn add(&mut self, part: Part, value: f64) {
        self.0[part.index()] += value;
    }

    /// Adds every part of `other`.
    pub(crate) fn plus(&mut self, other: &Split) {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a += b;
        }
    }

    /// Each part's growth since `earlier` (a cumulative split read before).
    pub(crate) fn since(&self, earlier: &Split) -> Split {
        let mut out = *self;
        for (a, b) in out.0.iter_mut().zip(earlier.0) {
            *a = (*a - b).max(0.0);
        }
        out
    }

    /// The sum of the parts.
    pub(crate) fn total(&self) -> f64 {
        self.0.iter().sum()
    }

    /// Each part as a fraction of the whole; `None` if there is no time at all.
    pub(crate) fn shares(&self) -> Option<Split> {
        let total = self.total();
        (total > 0.0).then(|| {
            let mut out = *self;
            for v in &mut out.0 {
                *v /= total;
            }
            out
        })
    }

    /// The time on the stage's own account ([`Part::own`]).
    pub(crate) fn own(&self) -> f64 {
        Part::ALL
            .iter()
            .filter(|p| p.own())
            .map(|p| self.get(*p))
            .sum()
    }

    /// Time on or waiting for a CPU.
    pub(crate) fn cpu(&self) -> f64 {
        self.get(Part::Busy) + self.get(Part::Starved)
    }

    /// Time doing the stage's work or blocked on it: everything but idle helper states
    /// (another poll, a lock, a socket, a child). The thread with most of it speaks for
    /// its process.
    pub(super) fn engaged(&self) -> f64 {
        [
            Part::Busy,
            Part::Starved,
            Part::Input,
            Part::Output,
            Part::Timer,
            Part::Disk,
        ]
        .iter()
        .map(|p| self.get(*p))
        .sum()
    }

    /// The largest part among `parts`, with its value (the first on a tie).
    pub(crate) fn largest(&self, parts: &[Part]) -> Option<(Part, f64)> {
        parts
            .iter()
            .map(|p| (*p, self.get(*p)))
            .fold(None, |best, (p, v)| match best {
                Some((_, b)) if b >= v => best,
                _ => Some((p, v)),
            })
    }
}

// How full a pipe is: what the reader measures, so it is defined there.
pub(crate) use crate::procfs::Fill;

/// One row of the pipeline view.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct StageView {
    /// The process shown (of a stage of several processes, the one moving data).
    pub pid: u32,
    /// Its command line.
    pub command: String,
    /// What it spent the most time on over the last second (or the interval if longer);
    /// what it is doing now before that is known.
    pub activity: Activity,
    /// Where its time went over the same window, as fractions of it (busy, starved,
    /// waiting for its input, its output, …); `None` before two readings.
    pub time: Option<Split>,
    /// CPU use, percent of one core (over the last second, or the interval if longer).
    pub cpu: Option<f64>,
    /// Bytes per second read.
    pub rate_in: Option<f64>,
    /// Bytes per second written.
    pub rate_out: Option<f64>,
    /// Bytes read since the watch began (its neighbour's count when it cannot count).
    pub bytes_in: Option<u64>,
    /// Bytes written since the watch began (likewise).
    pub bytes_out: Option<u64>,
    /// The bytes that have come through it since the watch began: what it read from the
    /// pipe before it, or for a stage that reads no pipe, what it wrote.
    pub amount: Option<u64>,
    /// The pipe to the next stage.
    pub fill: Option<Fill>,
    /// This stage holds the pipeline back (over the last few seconds).
    pub bottleneck: bool,
    /// Which of the pipelines watched it belongs to, from 1 (set by whoever runs several
    /// watchers, to tell their tables apart; 0 otherwise).
    pub job: u32,
    /// The process group of its pipeline when it was found (likewise).
    pub group: u32,
    /// What to try about it, when it is the bottleneck and the cause is clear (set by
    /// whoever shows the view, from [`View::advice`](crate::pipeline::watch::View::advice)).
    pub advice: Option<String>,
}
