//! The watcher: the stages of one pipeline over time.
//!
//! Owns: the list of stages in pipeline order (ended ones keep their row and their final
//! figures), when to scan `/proc` again, per-stage counters, rates and time split (over
//! the same window as the rates), the fill of each pipe, the bottleneck of each sample and
//! each stage's share of the time as the bottleneck.
//! Must not: draw anything or sleep: [`Watcher::sample`] is called by whoever runs the
//! display loop, with the time.
//!
//! `/proc` is scanned again only when needed: a member of a stage ended, a shell holding a
//! stage's pipe end got a new child, or the chain has an open end (a pipe whose other end
//! no visible process holds, as at start-up before the shell has started every stage);
//! open ends are looked at again after 1, 2, 4, 8 and then every 16 seconds.
//!
//! The stage list (scans, merges, new and ended stages, shells that run loops) is in
//! `watch/stages.rs`; each window's judgement (rates, time split, bottleneck, advice) in
//! `watch/judge.rs`.

use std::collections::VecDeque;
use std::io;

use super::advice::Tools;
use super::discover::{self, DiscoverError, End, Segment, StageSpec, Table};
use super::member::{self, Member, Pipes};
use super::model::{Activity, Fill, Part, Split, StageView};
use super::timeshare;
use crate::procfs::CpuTimes;
use crate::procfs::{self, Proc, ProcFile, Stat};

mod judge;
mod stages;
mod thief;

/// Rates and CPU use are averaged over at least this long, in nanoseconds (tick-based CPU
/// times are too coarse for a tenth of a second).
const MIN_WINDOW_NS: u64 = 1_000_000_000;
/// Time constant of the "currently the bottleneck" score, in nanoseconds.
const MARK_TAU_NS: f64 = 2e9;
/// Score above which the row is marked.
const MARK_THRESHOLD: f64 = 0.3;
/// How often the wait states of the stages are sampled between two readings, at most, in
/// nanoseconds: 50 times a second.
pub(crate) const TICK_NS: u64 = 20_000_000;
/// The time between two samples grows by this much per thread sampled beyond five, so that
/// a long pipeline costs no more per second than a short one (a `stat` and a `wchan` per
/// thread, about 250 threads sampled a second; 20 single-threaded stages are sampled 12
/// times a second, still a dozen samples of each in the shortest window).
const TICK_PER_TASK_NS: u64 = 4_000_000;
/// Least time between two readings of the stages' counters, per stage running: a long
/// pipeline's counters are read at most `1 / (stages × this)` times a second (20 stages:
/// 4 times), however short the display interval; updates in between show the last reading.
const READ_PER_STAGE_NS: u64 = 12_500_000;
/// Least time between two readings of the machine's CPU times, in nanoseconds.
const MACHINE_EVERY_NS: u64 = 500_000_000;
/// First wait between looks at an open end, in nanoseconds (doubled each time).
const OPEN_BACKOFF_NS: u64 = 1_000_000_000;
/// ... for an end open when the pipeline is found: a shell starting a pipeline may
/// connect its first stage a moment after the others, and a script's pipeline may last a
/// second.
const FIRST_OPEN_BACKOFF_NS: u64 = 250_000_000;
/// Longest wait between looks at an open end, in nanoseconds.
const MAX_OPEN_BACKOFF_NS: u64 = 16_000_000_000;

/// Why a pipeline cannot be watched.
#[derive(Debug)]
pub(crate) enum WatchError {
    /// The process does not exist.
    NoSuchProcess(u32),
    /// The process has ended and waits for its parent to collect its status: it has no
    /// descriptors left.
    Zombie(u32),
    /// A kernel thread: no descriptors, never in a pipeline.
    KernelThread(u32, String),
    /// Its descriptors may not be read.
    NotPermitted(u32),
    /// Neither it nor a child of it has a pipe on standard input or output.
    NotInPipeline(u32),
    /// `/proc` could not be read.
    Proc(io::Error),
}

impl WatchError {
    /// The system error number behind it, if there is one.
    pub(crate) fn errno(&self) -> Option<i32> {
        match self {
            WatchError::NoSuchProcess(_) => Some(libc::ESRCH),
            WatchError::NotPermitted(_) => Some(libc::EACCES),
            WatchError::Proc(e) => e.raw_os_error(),
            WatchError::Zombie(_) | WatchError::KernelThread(..) | WatchError::NotInPipeline(_) => {
                None
            }
        }
    }
}

impl std::fmt::Display for WatchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WatchError::NoSuchProcess(pid) => write!(f, "pid {pid}: No such process"),
            WatchError::Zombie(pid) => write!(
                f,
                "pid {pid}: a zombie (it has ended; its parent has not collected it), not in \
                 a pipeline"
            ),
            WatchError::KernelThread(pid, name) => write!(
                f,
                "pid {pid}: a kernel thread ({}), not in a pipeline",
                crate::display::printable(name)
            ),
            WatchError::NotPermitted(pid) => write!(f, "pid {pid}: Permission denied"),
            WatchError::NotInPipeline(pid) => write!(
                f,
                "pid {pid}: not in a pipeline (no pipe on its standard input or output)"
            ),
            WatchError::Proc(e) => write!(f, "/proc: {}", crate::sys::strerror(e)),
        }
    }
}

/// One sample of the whole pipeline.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct View {
    /// The stages in pipeline order.
    pub stages: Vec<StageView>,
    /// The stages together waited for a CPU longer than they ran over the last window:
    /// the machine is short of CPU.
    pub short_of_cpu: bool,
    /// What to try about the stage marked as the bottleneck, when the cause is clear.
    pub advice: Option<String>,
}

/// The end of a watch: who held the pipeline back and for how long, where each stage's
/// time went, and what to try.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Report {
    /// Each stage's share of the watched time as the bottleneck, largest first.
    pub shares: Vec<Share>,
    /// Each stage (by the command it showed most while it was the bottleneck, else its
    /// last) and where its time went over the whole watch.
    pub stages: Vec<(String, Option<Split>)>,
    /// What to try about the stage that was the bottleneck most.
    pub advice: Option<String>,
}

/// A stage's share of the time as the bottleneck.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Share {
    /// The stage's command.
    pub command: String,
    /// Fraction of the watched time, 0 to 1.
    pub share: f64,
}

/// Running totals of a stage.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Totals {
    ticks: u64,
    bytes_in: u64,
    bytes_out: u64,
    /// Where the stage's time went, in nanoseconds.
    time: Split,
}

/// A stage over time.
#[derive(Debug)]
struct Stage {
    spec: StageSpec,
    members: Vec<Member>,
    /// Shells whose children are watched for new members: (pid, children last seen).
    parents: Vec<(u32, Vec<u32>)>,
    totals: Totals,
    /// When the stage's own byte counts began (its own rates need a whole window of them;
    /// until then they are its neighbours').
    counted_since: Option<u64>,
    /// What it moved in the last sample by its own count (read, written).
    moved: Option<(u64, u64)>,
    /// What it has moved since the watch began as shown: its own counts, or its
    /// neighbours' where it cannot count, added sample by sample so they never go back.
    shown_bytes: (Option<u64>, Option<u64>),
    history: VecDeque<(u64, Totals)>,
    shown: Option<u32>,
    ended: bool,
    matched: bool,
    bottleneck_ns: u64,
    /// The bottleneck time by the command shown at the time (a stage whose member is
    /// replaced keeps its credit, under the name it had then).
    credit: Vec<(String, u64)>,
    /// The process credited last, the command it had then, and all the time credited to
    /// it: when it runs another program (an `exec`: a launcher, a shim, `env`), its time
    /// moves to that program, which the process is now.
    credited_last: Option<(u32, String, u64)>,
    score: f64,
    /// What it was doing at the last sample (its shown member's state, settled with the
    /// fills of its pipes).
    now: Activity,
    view: StageView,
    /// The shell running the stage's commands, if one holds its pipe ends (a subshell, a
    /// script): it becomes the stage when it turns out to be a loop.
    shell: Option<Shell>,
    /// The stage is that shell and its short-lived children (a loop).
    looping: bool,
    /// The other end of the socket it was last seen waiting on.
    peer: Option<String>,
    /// The socket whose peer was last looked for, and when.
    peer_of: Option<(u64, u64)>,
    /// It was seen with files open for reading, and for writing (besides its pipes): its
    /// own counts are not its pipes' traffic (`sort` spilling to temporary files).
    elsewhere: (bool, bool),
}

/// A side counting this many times what the other end of its pipe counts (and more than
/// this many bytes a second) may count more than the pipe: its files are looked at.
const OVERCOUNT: f64 = 64.0;
const OVERCOUNT_RATE: f64 = 65536.0;

/// A shell holding a stage's pipe ends, watched for the children it starts.
#[derive(Debug, Clone, Default)]
struct Shell {
    pid: u32,
    /// Its name when it was found: a process forked for a stage that has run its
    /// program since (another name) is no shell.
    comm: String,
    /// Its children at the last look.
    children: Vec<u32>,
    /// When each new child was seen, over the last [`LOOP_WINDOW_NS`].
    births: VecDeque<u64>,
    /// Its children whose program is known (they have run one since their fork), and how
    /// many of its children ran each program over the whole watch: a shell that starts the
    /// same program [`LOOP_BIRTHS`] times is a loop however slowly its children start (a
    /// `python3` per line on a loaded machine takes seconds to start).
    named: Vec<u32>,
    programs: Vec<(String, usize)>,
    /// Readings in a row at which it had no child while it was the stage's only process
    /// (a loop of builtins: `while read l; do :; done`).
    childless: u32,
    /// Since when it has been so (a process forked for a stage is a shell too until it
    /// runs its program, which on a loaded machine can take a while).
    childless_since: Option<u64>,
}

/// A shell that starts [`LOOP_BIRTHS`] children within this long is a loop (as is one that
/// has started one program that many times, however long it took: [`Shell::programs`]).
const LOOP_WINDOW_NS: u64 = 3_000_000_000;
const LOOP_BIRTHS: usize = 3;
/// A subshell that is a stage's only process, with no child, for this many readings in a
/// row runs a loop of builtins.
const LOOP_CHILDLESS: u32 = 2;
/// ... and for at least this long.
const LOOP_CHILDLESS_NS: u64 = 2_000_000_000;

impl Stage {
    /// The command the stage showed most while it was the bottleneck, else its current one.
    fn credited_name(&self) -> &str {
        self.credit
            .iter()
            .max_by_key(|(_, ns)| *ns)
            .map_or(&self.view.command, |(name, _)| name)
    }

    /// Credits `ns` of bottleneck time to the command the stage shows now (and the time
    /// its process had under the programs it ran before, see `credited_last`).
    fn credit_now(&mut self, ns: u64) {
        let (pid, command) = (self.view.pid, &self.view.command);
        let mut moved = 0;
        match &mut self.credited_last {
            Some((last, before, total)) if *last == pid => {
                if before != command {
                    moved = *total;
                    if let Some(i) = self.credit.iter().position(|(c, _)| c == before) {
                        self.credit[i].1 -= moved.min(self.credit[i].1);
                        if self.credit[i].1 == 0 {
                            self.credit.remove(i);
                        }
                    }
                    before.clone_from(command);
                }
                *total += ns;
            }
            _ => self.credited_last = Some((pid, command.clone(), ns)),
        }
        match self.credit.iter_mut().find(|(c, _)| c == command) {
            Some((_, t)) => *t += ns + moved,
            None => self.credit.push((command.clone(), ns + moved)),
        }
    }

    fn pipes(&self) -> Pipes {
        Pipes {
            input: self.spec.input,
            output: self.spec.output,
        }
    }
}

/// Watches the pipeline a process belongs to.
pub(crate) struct Watcher {
    proc: Box<dyn Proc>,
    stages: Vec<Stage>,
    seed: u32,
    group: u32,
    session: u32,
    window_ns: u64,
    last_ns: Option<u64>,
    /// The view of the last reading (returned again until the next one is due).
    last_view: Option<View>,
    /// When the wait states were last sampled.
    ticked_ns: Option<u64>,
    observed_ns: u64,
    /// A stage may still join: a segment has an open end, or a gap closed past a process
    /// not yet connected. Scanned again with a growing back-off.
    open_ends: bool,
    next_open_scan_ns: u64,
    open_backoff_ns: u64,
    scans: u64,
    /// Programs advice may name that are installed.
    tools: Tools,
    /// The machine's CPU times over the window (for idle cores), and at the first sample.
    machine: VecDeque<(u64, CpuTimes)>,
    machine_first: Option<CpuTimes>,
    /// The last view's advice-worthy facts.
    short_of_cpu: bool,
    advice: Option<String>,
    /// Other processes' CPU times while the stages are short of CPU, and the busiest.
    others: thief::Others,
    /// The busiest other process is looked for (a look at every process's CPU time);
    /// not for a caller that shows no advice (`--top`).
    names_thief: bool,
    /// The process running the watch, when it is a stage (`--pipeline` inside a
    /// transfer): it moves data by splice, so it holds the pipeline back only by its rate
    /// limit; the rest of its own time is the machine's load or its own start and end.
    own: Option<u32>,
}

impl std::fmt::Debug for Watcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watcher")
            .field("seed", &self.seed)
            .field("stages", &self.stages)
            .finish_non_exhaustive()
    }
}

/// What a member moved (read, written) between its readings `before` and `now` (`None`:
/// no count this time), and whether at least half of what it wrote went to storage (a
/// pipe never does: sort's temporary files), its writes then not its pipe's.
fn moved_between(
    now: &member::Reading,
    before: &member::Reading,
    last_rpv: Option<u64>,
) -> (Option<(u64, u64)>, bool) {
    match (now.rpv, last_rpv, now.io, before.io) {
        // An rpv is counted by its own count only: an answer it missed is covered by the
        // next one.
        (Some(n), Some(then), _, _) => (Some((n - n.min(then), n - n.min(then))), false),
        (Some(_), None, _, _) | (None, Some(_), _, _) => (None, false),
        (None, None, Some(io), Some(io0)) => {
            let written = io.wchar.saturating_sub(io0.wchar);
            let stored = io.write_bytes.saturating_sub(io0.write_bytes);
            (
                Some((io.rchar.saturating_sub(io0.rchar), written)),
                written > 0 && stored.saturating_mul(2) >= written,
            )
        }
        (None, None, _, _) => (None, false),
    }
}

/// True if the pipe after one stage is the one before the next (as far as is known).
fn connected(output: Option<u64>, input: Option<u64>) -> bool {
    match (output, input) {
        (Some(a), Some(b)) => a == b,
        (a, b) => a.or(b).is_some(),
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The process `pid` and the pipelines found from it: its `stat`, the process table of its
/// session, and the segments reachable from its start points.
fn locate(proc: &mut dyn Proc, pid: u32) -> Result<(Stat, Table, Vec<Segment>), WatchError> {
    let stat = proc.stat(pid).ok_or(WatchError::NoSuchProcess(pid))?;
    if stat.kernel_thread {
        return Err(WatchError::KernelThread(pid, stat.comm));
    }
    if matches!(stat.state, 'Z' | 'X') {
        return Err(WatchError::Zombie(pid));
    }
    let table = discover::scan(proc, Some(&[stat.session])).map_err(WatchError::Proc)?;
    let seeds = discover::start_points(&table, pid).map_err(|e| match e {
        DiscoverError::NoSuchProcess => WatchError::NoSuchProcess(pid),
        DiscoverError::NotPermitted => WatchError::NotPermitted(pid),
        DiscoverError::NotInPipeline => WatchError::NotInPipeline(pid),
    })?;
    let segments = discover::discover(&table, &seeds);
    Ok((stat, table, segments))
}

impl Watcher {
    /// Sets the programs advice may name (those installed: [`Tools::from_path`]).
    pub(crate) fn set_tools(&mut self, tools: Tools) {
        self.tools = tools;
    }

    /// Watches the pipeline of `pid` through `proc`: its own if it is a stage, else every
    /// pipeline it runs, in one list (see [`Watcher::jobs`] for one each).
    pub(crate) fn with_proc(mut proc: Box<dyn Proc>, pid: u32) -> Result<Watcher, WatchError> {
        let (stat, table, segments) = locate(proc.as_mut(), pid)?;
        Watcher::from_segments(proc, &table, &segments, pid, stat.session)
            .ok_or(WatchError::NotInPipeline(pid))
    }

    /// The pipelines of `pid`, each watched on its own (through a `Proc` from
    /// `make_proc`): if `pid` is a stage, its own pipeline; if it is a shell, each pipeline
    /// it runs (a job: a run of stages connected by pipes), so that each gets its own
    /// table and its own bottleneck.
    pub(crate) fn jobs(
        mut make_proc: impl FnMut() -> Box<dyn Proc>,
        pid: u32,
    ) -> Result<Vec<Watcher>, WatchError> {
        let mut proc = make_proc();
        let (stat, table, segments) = locate(proc.as_mut(), pid)?;
        let in_pipeline = table
            .get(pid)
            .is_some_and(|p| matches!(p.stdin, End::Pipe(_)) || matches!(p.stdout, End::Pipe(_)));
        let watchers: Vec<Watcher> = if in_pipeline {
            Watcher::from_segments(proc, &table, &segments, pid, stat.session)
                .into_iter()
                .collect()
        } else {
            let mut procs = std::iter::once(proc).chain(std::iter::repeat_with(make_proc));
            segments
                .iter()
                .filter_map(|segment| {
                    let seed = segment.stages.first()?.members.first().copied()?;
                    let session = table.get(seed).map_or(stat.session, |p| p.stat.session);
                    let proc = procs.next()?;
                    Watcher::from_segments(
                        proc,
                        &table,
                        std::slice::from_ref(segment),
                        seed,
                        session,
                    )
                })
                .collect()
        };
        if watchers.is_empty() {
            return Err(WatchError::NotInPipeline(pid));
        }
        Ok(watchers)
    }

    /// A watcher of `segments` found by a scan, rescanning from `seed` and the stages.
    fn from_segments(
        proc: Box<dyn Proc>,
        table: &Table,
        segments: &[Segment],
        seed: u32,
        session: u32,
    ) -> Option<Watcher> {
        let mut watcher = Watcher {
            proc,
            stages: Vec::new(),
            seed,
            group: table.get(seed).map_or(0, |p| p.stat.pgrp),
            session,
            window_ns: MIN_WINDOW_NS,
            last_ns: None,
            last_view: None,
            ticked_ns: None,
            observed_ns: 0,
            open_ends: false,
            next_open_scan_ns: 0,
            open_backoff_ns: FIRST_OPEN_BACKOFF_NS,
            scans: 1,
            tools: Tools::default(),
            machine: VecDeque::new(),
            machine_first: None,
            short_of_cpu: false,
            advice: None,
            others: thief::Others::default(),
            names_thief: true,
            own: None,
        };
        watcher.merge(table, segments, false);
        if !watcher.open_ends {
            watcher.open_backoff_ns = OPEN_BACKOFF_NS;
        }
        (!watcher.stages.is_empty()).then_some(watcher)
    }

    /// The PID of the pipeline's first stage (the process it was found from until a stage
    /// before it is known: a shell may start the first stage of a job last).
    pub(crate) fn first_stage_pid(&self) -> u32 {
        self.stages
            .first()
            .map(|s| s.view.pid)
            .filter(|&pid| pid != 0)
            .unwrap_or(self.seed)
    }

    /// The process group of the pipeline when it was found (a job of an interactive
    /// shell has its own).
    pub(crate) fn group(&self) -> u32 {
        self.group
    }

    /// Tells the watcher that process `pid` (a stage) is the one running it: it is named
    /// the bottleneck only when its rate limit holds the others back.
    pub(crate) fn set_own(&mut self, pid: u32) {
        self.own = Some(pid);
    }

    /// For a caller that shows the bottleneck and why but no advice (`--top`, which opens
    /// the pipeline view for the advice): the busiest process outside the pipeline is not
    /// looked for, which would read every process's CPU time once per window.
    pub(crate) fn without_thief(&mut self) {
        self.names_thief = false;
    }

    /// Sets the display interval: figures are averaged over it (at least one second).
    pub(crate) fn set_interval(&mut self, seconds: f64) {
        self.window_ns = ((seconds * 1e9) as u64).max(MIN_WINDOW_NS);
    }

    /// The processes doing the work of the stages still running, each by PID and start
    /// time.
    pub(crate) fn processes(&self) -> impl Iterator<Item = (u32, u64)> + '_ {
        self.stages
            .iter()
            .flat_map(|s| s.members.iter().map(|m| (m.pid, m.start)))
    }

    /// True if `pid` does a stage's work or holds a stage's pipe ends (a subshell), as the
    /// last scan found them.
    pub(crate) fn holds(&self, pid: u32) -> bool {
        self.stages
            .iter()
            .any(|s| s.spec.members.contains(&pid) || s.spec.containers.contains(&pid))
    }

    /// True once every stage has ended.
    pub(crate) fn finished(&self) -> bool {
        self.stages.iter().all(|s| s.ended)
    }

    /// How many times `/proc` has been scanned for stages, the first included (tests).
    #[cfg(test)]
    pub(crate) fn scans(&self) -> u64 {
        self.scans
    }

    /// Each stage's share of the watched time as the bottleneck, largest first (stages
    /// that never were are left out).
    pub(crate) fn summary(&self) -> Vec<Share> {
        if self.observed_ns == 0 {
            return Vec::new();
        }
        let mut shares: Vec<Share> = self
            .stages
            .iter()
            .filter(|s| s.bottleneck_ns > 0)
            .map(|s| Share {
                command: s.credited_name().to_string(),
                share: s.bottleneck_ns as f64 / self.observed_ns as f64,
            })
            .collect();
        shares.sort_by(|a, b| b.share.total_cmp(&a.share));
        shares
    }

    /// The end of the watch: [`Watcher::summary`], each stage's time over the whole watch,
    /// and what to try about the stage that was the bottleneck most.
    pub(crate) fn report(&self) -> Report {
        let shares = self.summary();
        let whole: Vec<Option<Split>> =
            self.stages.iter().map(|s| s.totals.time.shares()).collect();
        let stages = self
            .stages
            .iter()
            .zip(&whole)
            .map(|(s, t)| (s.credited_name().to_string(), *t))
            .collect();
        let top = self
            .stages
            .iter()
            .enumerate()
            .filter(|(_, s)| s.bottleneck_ns > 0)
            .max_by_key(|(_, s)| s.bottleneck_ns)
            .map(|(i, _)| i);
        let idle = match (self.machine.back(), self.machine_first) {
            (Some((_, last)), Some(first)) => last.idle_cores_since(&first),
            _ => None,
        };
        // What to try is about the time the pipeline ran: time stopped (Ctrl-Z) is left
        // out, so the summary gives the advice the live view gave.
        let running: Vec<Option<Split>> = self
            .stages
            .iter()
            .map(|s| {
                let mut t = s.totals.time;
                t.add(Part::Stopped, -t.get(Part::Stopped));
                t.shares()
            })
            .collect();
        // (Its rate over the watch: what it moved over the time observed.)
        let rate = |i: usize| {
            let view = &self.stages[i].view;
            let secs = self.observed_ns as f64 / 1e9;
            view.bytes_out
                .or(view.bytes_in)
                .filter(|_| secs > 0.0)
                .map(|b| b as f64 / secs)
        };
        let advice = top.and_then(|i| self.advise(i, &running, idle, rate(i)));
        Report {
            shares,
            stages,
            advice,
        }
    }

    /// Samples every stage at `now_ns` (monotonic nanoseconds) and returns the rows.
    pub(crate) fn sample(&mut self, now_ns: u64) -> View {
        let running = self.stages.iter().filter(|s| !s.ended).count() as u64;
        if let (Some(last), Some(view)) = (self.last_ns, &self.last_view) {
            if now_ns < last + running * READ_PER_STAGE_NS {
                return view.clone();
            }
        }
        // A tick just sampled the wait states (the display loop ticks before it samples):
        // they are not read twice.
        let states = self
            .ticked_ns
            .is_none_or(|t| now_ns >= t + self.tick_period_ns() / 2);
        let mut rescan = false;
        // A stage writing no pipe that has a TCP socket: its sends are counted through
        // `sock_diag` (`/proc/PID/io` does not count `send`), from the first sample on.
        for stage in &mut self.stages {
            if !stage.ended && stage.spec.permitted && stage.spec.output.is_none() {
                for m in &mut stage.members {
                    m.find_socket(self.proc.as_mut(), now_ns);
                }
            }
        }
        let senders = self.stages.iter().any(|s| {
            !s.ended && s.spec.output.is_none() && s.members.iter().any(|m| m.socket.is_some())
        });
        let tcp = if senders { self.proc.tcp_bytes() } else { None };
        for i in 0..self.stages.len() {
            if !self.stages[i].ended {
                rescan |= self.sample_stage(i, now_ns, states, tcp.as_ref());
                self.find_loop(i, now_ns);
            }
        }
        let open_due = self.open_ends && now_ns >= self.next_open_scan_ns;
        if rescan || open_due {
            self.rescan_now(open_due);
            for i in 0..self.stages.len() {
                if !self.stages[i].ended {
                    self.baseline_new_members(i, now_ns);
                }
            }
            if self.open_ends {
                self.next_open_scan_ns = now_ns + self.open_backoff_ns;
                self.open_backoff_ns = (self.open_backoff_ns * 2).min(MAX_OPEN_BACKOFF_NS);
            } else {
                self.open_backoff_ns = OPEN_BACKOFF_NS;
            }
        }
        let dt = self.last_ns.map_or(0, |last| now_ns.saturating_sub(last));
        self.last_ns = Some(now_ns);
        self.ticked_ns = Some(now_ns);
        let fills = self.fills();
        self.update_views(now_ns, &fills);
        self.derive_figures();
        self.mark_bottleneck(dt);
        self.review(now_ns);
        let view = View {
            stages: self.stages.iter().map(|s| s.view.clone()).collect(),
            short_of_cpu: self.short_of_cpu,
            advice: self.advice.clone(),
        };
        self.last_view = Some(view.clone());
        view
    }

    /// How often [`Watcher::tick`] should be called: every [`TICK_NS`], or less often for
    /// a pipeline of many threads.
    pub(crate) fn tick_period_ns(&self) -> u64 {
        let tasks: usize = self
            .stages
            .iter()
            .filter(|s| !s.ended)
            .flat_map(|s| &s.members)
            .map(Member::task_count)
            .sum();
        TICK_NS.max(tasks as u64 * TICK_PER_TASK_NS)
    }

    /// Samples what every running stage is doing (between two readings: several times per
    /// interval, cheaply). Calls closer together than half of
    /// [`Watcher::tick_period_ns`] do nothing.
    pub(crate) fn tick(&mut self, now_ns: u64) {
        if self
            .ticked_ns
            .is_some_and(|t| now_ns < t + self.tick_period_ns() / 2)
        {
            return;
        }
        self.ticked_ns = Some(now_ns);
        // A shell starting children fast is a loop as soon as that is seen.
        for i in 0..self.stages.len() {
            let stage = &mut self.stages[i];
            if stage.ended || !stage.spec.permitted || stage.looping {
                continue;
            }
            if let Some(shell) = &mut stage.shell {
                shell.look(self.proc.as_mut(), now_ns);
                if shell.looped() {
                    self.find_loop(i, now_ns);
                }
            }
        }
        for stage in self.stages.iter_mut() {
            if stage.ended || !stage.spec.permitted {
                continue;
            }
            let pipes = stage.pipes();
            for m in stage.members.iter_mut().filter(|m| m.last.is_some()) {
                m.sample_states(self.proc.as_mut(), pipes, now_ns);
            }
        }
    }

    /// Samples stage `i`'s members and adds what they did to its totals. Returns true if
    /// `/proc` must be scanned again.
    fn sample_stage(
        &mut self,
        i: usize,
        now_ns: u64,
        states: bool,
        tcp: Option<&std::collections::HashMap<u64, u64>>,
    ) -> bool {
        let stage = &mut self.stages[i];
        let permitted = stage.spec.permitted;
        let pipes = stage.pipes();
        let mut rescan = false;
        let mut counted = false;
        let before_bytes = (stage.totals.bytes_in, stage.totals.bytes_out);
        let mut splits = Vec::with_capacity(stage.members.len());
        for m in &mut stage.members {
            let Some((reading, split)) =
                m.read(self.proc.as_mut(), permitted, pipes, now_ns, states)
            else {
                rescan = true;
                m.last = None;
                m.moved = 0;
                m.used = 0;
                continue;
            };
            splits.extend(split);
            let before = match m.last {
                Some(last) => last,
                None => reading,
            };
            m.used = reading.ticks.saturating_sub(before.ticks);
            stage.totals.ticks += m.used;
            m.moved = 0;
            let (moved, stored) = moved_between(&reading, &before, m.last_rpv);
            if stored {
                stage.elsewhere.1 = true;
            }
            let sent = tcp
                .filter(|_| stage.spec.output.is_none())
                .and_then(|t| m.socket_moved(t));
            let moved = moved.map(|(dr, dw)| (dr, dw + sent.unwrap_or(0)));
            if let Some((dr, dw)) = moved {
                stage.totals.bytes_in += dr;
                stage.totals.bytes_out += dw;
                m.moved = dr + dw;
                counted = true;
            }
            let first_answer = reading.rpv.is_some() && m.last_rpv.is_none();
            if reading.rpv.is_some() {
                m.last_rpv = reading.rpv;
            }
            if first_answer || stage.counted_since.is_none() && reading.bytes().is_some() {
                // Its first count, or an rpv's first answer (its count from now on, not
                // its /proc/PID/io): the start of its own figures.
                stage.counted_since = Some(now_ns);
            }
            m.last = Some(reading);
        }
        // What it moved in this sample, by its own count (`None`: no count this time).
        stage.moved = counted.then(|| {
            (
                stage.totals.bytes_in - before_bytes.0,
                stage.totals.bytes_out - before_bytes.1,
            )
        });
        // Of several members at once (`{ a & b; }`), the one most engaged speaks for the
        // stage's time, as a thread does for its process.
        if let Some(lead) = timeshare::lead(&splits) {
            stage.totals.time.plus(&splits[lead]);
        }
        rescan | self.watch_shells(i)
    }

    /// Whether a shell holding stage `i`'s pipe end got a new child (it may be the next
    /// member): `/proc` must be scanned again.
    fn watch_shells(&mut self, i: usize) -> bool {
        let stage = &mut self.stages[i];
        let mut rescan = false;
        let waiting_shells = stage
            .members
            .iter()
            .filter(|m| m.last.is_some() && m.activity == Activity::WaitChild)
            .filter(|m| m.kids.is_none())
            .map(|m| m.pid);
        let watch: Vec<u32> = stage
            .spec
            .containers
            .iter()
            .copied()
            .chain(waiting_shells)
            .collect();
        for pid in watch {
            let now: Vec<u32> = self
                .proc
                .read(pid, ProcFile::Children(pid), false)
                .map(|t| procfs::parse_pids(&text(&t)))
                .unwrap_or_default();
            match stage.parents.iter_mut().find(|(p, _)| *p == pid) {
                Some((_, seen)) if *seen == now => {}
                Some((_, seen)) => {
                    *seen = now;
                    rescan = true;
                }
                None => stage.parents.push((pid, now)),
            }
        }
        rescan
    }

    /// The fill of the pipe after each stage (to the next one).
    fn fills(&mut self) -> Vec<Option<Fill>> {
        let mut fills = Vec::with_capacity(self.stages.len());
        for i in 0..self.stages.len() {
            let Some(next) = self.stages.get(i + 1) else {
                fills.push(None);
                break;
            };
            let here = &self.stages[i];
            let pipe = here.spec.output.or(next.spec.input);
            let Some(inode) = pipe.filter(|_| connected(here.spec.output, next.spec.input)) else {
                fills.push(None);
                continue;
            };
            let writers = here.members.iter().map(|m| (m.pid, 1));
            let readers = next.members.iter().map(|m| (m.pid, 0));
            let holders: Vec<(u32, u32)> = writers
                .chain(here.spec.containers.iter().map(|&c| (c, 1)))
                .chain(readers)
                .chain(next.spec.containers.iter().map(|&c| (c, 0)))
                .collect();
            let mut fill = None;
            for (pid, fd) in holders {
                fill = self.proc.pipe_fill(inode, pid, fd);
                if fill.is_some() {
                    break;
                }
            }
            fills.push(fill);
        }
        fills
    }
}
