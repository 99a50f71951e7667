//! `--pipeline`: every stage of a shell pipeline, as meters.
//!
//! Owns: running the pipeline view's [`Watcher`]s at each update — one per pipeline (job)
//! when the process watched is a shell running several — and turning their rows into one
//! meter per stage (its amount: the bytes that came through it since the watch began, so
//! rates, averages and stalls are a stage's own; the row's figures ride along in
//! [`MeterState::stage`], with the job it belongs to), sampling wait states between
//! updates ([`Source::tick`]), and a summary per job at the end (each stage's share of the
//! time as the bottleneck, where each stage's time went, what to try). Watching another
//! pipeline (`--pipeline=PID`) the source ends when every stage has ended; given a shell,
//! pipelines it starts later are added as jobs of their own (looked for every second, and
//! every tenth of a second while none runs) and the watch follows the shell until it ends
//! (a shell running no pipeline yet is waited on, with a note); inside a transfer
//! (`--pipeline`) it ends with the transfer, whose own row then reads `ended`.
//! Must not: draw.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use super::Source;
use crate::error::{status, Error};
use crate::meter::{Event, Label, MeterState, Phase, Role};
use crate::pipeline::advice::Tools;
use crate::pipeline::model::Activity;
use crate::pipeline::{render, WatchError, Watcher};
use crate::procfs::Stat;
use crate::procfs::{Proc, ProcFile};
use crate::sys;

/// Ids of the stage meters start here (other sources use small numbers); each job gets a
/// block of [`JOB_IDS`].
const FIRST_ID: u64 = 50_000;
/// Meter ids per job.
const JOB_IDS: u64 = 1_000;
/// How often a watched shell is looked at for pipelines it started since.
const JOBS_SCAN_NS: u64 = 1_000_000_000;
/// While no pipeline of a watched shell runs, how often it is looked at for its next one
/// (a script's next pipeline starts within milliseconds of the last; the watch follows
/// the shell until it ends).
const JOBS_GRACE_SCAN_NS: u64 = 100_000_000;
/// Programs taken for shells: given one that runs no pipeline now, the watch waits for
/// its next one rather than failing.
const SHELLS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "fish", "busybox", "tcsh", "csh",
];
/// Jobs a watch takes at most (their meter ids must stay apart from other sources').
const MAX_JOBS: usize = 1_000;

/// What the transfer this process runs tells the pipeline view about its own stage (a
/// process cannot ask itself over its control channel).
#[derive(Debug, Default)]
pub(crate) struct OwnStage {
    /// Bytes written so far.
    pub bytes: AtomicU64,
    /// The transfer is over: its row reads `ended`.
    pub done: AtomicBool,
}

/// The stages of one or more pipelines.
pub(crate) struct PipelineSource {
    watchers: Vec<Watcher>,
    /// Inside a transfer: what it tells of its own stage; the transfer decides when the
    /// run ends.
    own: Option<Arc<OwnStage>>,
    start_ns: u64,
    /// The shell watched (not itself a stage): its new pipelines join the watch.
    shell: Option<u32>,
    /// Its process group, read when the watch began (it may be gone at the end).
    shell_group: Option<u32>,
    interval: f64,
    next_jobs_ns: u64,
    /// A note for the start of the watch (a shell that runs no pipeline yet).
    note: Option<String>,
    /// The watched shell's children at the last look (a new pipeline is a new child), and
    /// whether they had changed then (a child just forked may not have its pipes yet, so
    /// the next look scans too).
    shell_children: Option<Vec<u8>>,
    children_changed: bool,
    /// A reader of `/proc` for each new watcher (the real one, or a test's table).
    make_proc: MakeProc,
    /// The reader of the watched shell's children, name and state.
    proc: Box<dyn Proc>,
}

/// Makes a reader of `/proc` for a watcher.
type MakeProc = Box<dyn FnMut() -> Box<dyn Proc>>;

/// What a look at the watched shell found.
#[derive(Debug, PartialEq, Eq)]
enum Jobs {
    /// A pipeline no watcher had: it joined the watch.
    Added,
    /// Nothing new.
    Same,
    /// The shell is gone (or not a shell to watch any more): nothing more will come.
    Gone,
}

/// The children of process `pid`'s main thread, as `/proc` lists them.
fn children_of(proc: &mut dyn Proc, pid: u32) -> Option<Vec<u8>> {
    proc.read(pid, ProcFile::Children(pid), false).ok()
}

/// The name of process `pid` if it is a shell ([`SHELLS`]).
fn shell_name(proc: &mut dyn Proc, pid: u32) -> Option<String> {
    let comm = proc.read(pid, ProcFile::Comm, false).ok()?;
    let comm = String::from_utf8_lossy(&comm);
    let comm = comm.trim_end();
    SHELLS.contains(&comm).then(|| comm.to_string())
}

/// The `stat` of process `pid`; `None` once it is gone.
fn stat_of(proc: &mut dyn Proc, pid: u32) -> Option<Stat> {
    let text = proc.read(pid, ProcFile::Stat, false).ok()?;
    Stat::parse(&String::from_utf8_lossy(&text))
}

/// True if process `pid` exists and has not ended (a zombie has).
fn alive(proc: &mut dyn Proc, pid: u32) -> bool {
    stat_of(proc, pid).is_some_and(|s| !matches!(s.state, 'Z' | 'X'))
}

/// The real `/proc`, one reader per watcher.
fn sys_proc() -> Box<dyn Proc> {
    Box::new(crate::control::client::sys_proc())
}

/// A watcher ready to sample: its interval, the tools advice may name, a first reading
/// (so the first update has an interval to show).
fn prepare(watcher: &mut Watcher, interval: f64, now_ns: u64) {
    watcher.set_interval(interval);
    watcher.set_tools(Tools::from_path(std::env::var_os("PATH").as_deref()));
    watcher.sample(now_ns);
}

impl PipelineSource {
    /// Watches the pipelines of process `pid` (its own, or each one a shell runs), sampled
    /// every `interval` seconds.
    pub(crate) fn watch(pid: u32, interval: f64) -> Result<PipelineSource, Error> {
        PipelineSource::watch_with(Box::new(sys_proc), pid, interval)
    }

    /// [`PipelineSource::watch`], reading `/proc` through the readers `make_proc` makes.
    fn watch_with(
        mut make_proc: MakeProc,
        pid: u32,
        interval: f64,
    ) -> Result<PipelineSource, Error> {
        let mut proc = make_proc();
        let fail = |e: WatchError| {
            Error::other_errno(status::ACCESS, format!("--pipeline: {e}"), e.errno())
        };
        let mut note = None;
        let mut watchers = match Watcher::jobs(&mut make_proc, pid) {
            Ok(watchers) => watchers,
            Err(WatchError::NotInPipeline(_)) if shell_name(proc.as_mut(), pid).is_some() => {
                // A shell between pipelines (or before its first): followed from now on.
                note = Some(format!(
                    "--pipeline: pid {pid} ({}) runs no pipeline now: waiting for one",
                    shell_name(proc.as_mut(), pid).unwrap_or_default()
                ));
                Vec::new()
            }
            Err(e) => return Err(fail(e)),
        };
        let start_ns = sys::monotonic_ns();
        for watcher in &mut watchers {
            prepare(watcher, interval, start_ns);
        }
        let shell = (!watchers.iter().any(|w| w.holds(pid))).then_some(pid);
        let watchers_empty = watchers.is_empty();
        Ok(PipelineSource {
            watchers,
            own: None,
            start_ns,
            shell,
            interval,
            next_jobs_ns: start_ns
                + if watchers_empty {
                    JOBS_GRACE_SCAN_NS
                } else {
                    JOBS_SCAN_NS
                },
            note,
            shell_group: shell.and_then(|sh| stat_of(proc.as_mut(), sh).map(|s| s.pgrp)),
            shell_children: shell.and_then(|sh| children_of(proc.as_mut(), sh)),
            children_changed: true,
            make_proc,
            proc,
        })
    }

    /// Adds the pipelines the watched shell runs that no watcher has yet; looks again
    /// `period_ns` later.
    fn add_new_jobs(&mut self, now_ns: u64, period_ns: u64) -> Jobs {
        self.next_jobs_ns = now_ns + period_ns;
        let Some(shell) = self.shell else {
            return Jobs::Gone;
        };
        // A shell that has ended (a zombie until its parent collects it) starts nothing.
        if !alive(self.proc.as_mut(), shell) {
            return Jobs::Gone;
        }
        // Scanning the shell's session costs a read per process: only when its children
        // changed (or could not be read).
        let children = children_of(self.proc.as_mut(), shell);
        let changed = children.is_none() || children != self.shell_children;
        let look = changed || self.children_changed;
        self.children_changed = changed;
        self.shell_children = children;
        if !look {
            return Jobs::Same;
        }
        let found = match Watcher::jobs(&mut self.make_proc, shell) {
            Ok(found) => found,
            Err(WatchError::NotInPipeline(_)) => return Jobs::Same,
            Err(_) => return Jobs::Gone,
        };
        let mut added = Jobs::Same;
        for mut watcher in found {
            let known = watcher
                .processes()
                .any(|p| self.watchers.iter().any(|w| w.processes().any(|q| q == p)));
            if known || self.watchers.len() >= MAX_JOBS {
                continue;
            }
            prepare(&mut watcher, self.interval, now_ns);
            self.watchers.push(watcher);
            added = Jobs::Added;
        }
        added
    }

    /// The pipeline this process sits in, its own stage as `own` tells.
    pub(crate) fn inline(own: Arc<OwnStage>, interval: f64) -> Result<PipelineSource, Error> {
        let mut proc = crate::control::client::sys_proc();
        let bytes = Arc::clone(&own);
        proc.set_own_bytes(Box::new(move || bytes.bytes.load(Ordering::Relaxed)));
        let mut watcher = Watcher::with_proc(Box::new(proc), std::process::id())
            .map_err(|e| Error::other(0, format!("--pipeline: {e}")))?;
        watcher.set_own(std::process::id());
        let start_ns = sys::monotonic_ns();
        prepare(&mut watcher, interval, start_ns);
        Ok(PipelineSource {
            watchers: vec![watcher],
            own: Some(own),
            start_ns,
            shell: None,
            shell_group: None,
            interval,
            next_jobs_ns: u64::MAX,
            note: None,
            shell_children: None,
            children_changed: false,
            make_proc: Box::new(sys_proc),
            proc: sys_proc(),
        })
    }
}

impl Source for PipelineSource {
    fn watches(&self) -> bool {
        true
    }

    fn sample(&mut self, now_ns: u64, out: &mut Vec<MeterState>) {
        let own_done = self
            .own
            .as_ref()
            .is_some_and(|o| o.done.load(Ordering::Relaxed));
        let me = std::process::id();
        if now_ns >= self.next_jobs_ns {
            self.add_new_jobs(now_ns, JOBS_SCAN_NS);
        }
        for (job, watcher) in self.watchers.iter_mut().enumerate() {
            let group = watcher.group();
            let view = watcher.sample(now_ns);
            for (index, mut stage) in view.stages.into_iter().enumerate() {
                stage.job = job as u32 + 1;
                stage.group = group;
                if stage.bottleneck {
                    stage.advice.clone_from(&view.advice);
                }
                if own_done && stage.pid == me {
                    // The transfer is over: its row says so, and it holds nothing back.
                    stage.activity = Activity::Ended;
                    stage.bottleneck = false;
                }
                let amount = stage.amount.unwrap_or(0);
                out.push(MeterState {
                    id: FIRST_ID + job as u64 * JOB_IDS + index as u64,
                    role: Role::Stage,
                    label: Label::Text(stage.command.clone()),
                    amount,
                    moved: amount,
                    started_ns: Some(self.start_ns),
                    phase: if stage.activity == Activity::Ended {
                        Phase::Ended
                    } else {
                        Phase::Running
                    },
                    subject: crate::meter::Subject::Stage(Box::new(stage)),
                    ..MeterState::default()
                });
            }
        }
    }

    fn events(&mut self, out: &mut Vec<Event>) {
        if let Some(note) = self.note.take() {
            out.push(Event::Error(Error::other(0, note)));
        }
    }

    fn finished(&mut self) -> bool {
        if self.own.is_some() {
            return true;
        }
        if !self.watchers.iter().all(Watcher::finished) {
            return false;
        }
        if self.shell.is_none() {
            return true;
        }
        // A watched shell is followed for as long as it lives: its next pipeline is
        // looked for often while none runs (a script's steps between pipelines: a
        // `sleep`, a `cp`), and the watch ends with the shell.
        let now = sys::monotonic_ns();
        self.next_jobs_ns = self.next_jobs_ns.min(now + JOBS_GRACE_SCAN_NS);
        if now < self.next_jobs_ns {
            return false;
        }
        self.add_new_jobs(now, JOBS_GRACE_SCAN_NS) == Jobs::Gone
    }

    fn poll_period_ns(&self) -> Option<u64> {
        self.watchers.iter().map(Watcher::tick_period_ns).min()
    }

    fn tick(&mut self, now_ns: u64) {
        for watcher in &mut self.watchers {
            watcher.tick(now_ns);
        }
    }

    fn status(&self) -> u8 {
        0
    }

    fn end(&mut self, out: &mut Vec<Event>) {
        let several = self.watchers.len() > 1;
        for (index, watcher) in self.watchers.iter().enumerate() {
            let report = watcher.report();
            let job = several.then_some(index as u32 + 1);
            let mut text = render::summary(&report);
            if let Some(job) = job {
                // Without job control (a script) every pipeline is in the shell's own
                // process group: the first stage's PID tells them apart.
                let label = if self.shell_group == Some(watcher.group()) {
                    format!("first stage PID {}", watcher.first_stage_pid())
                } else {
                    format!("process group {}", watcher.group())
                };
                text = format!("pipeline {job} ({label}): {text}");
            }
            out.push(Event::Summary {
                text,
                job,
                shares: report
                    .shares
                    .into_iter()
                    .map(|s| (s.command, s.share))
                    .collect(),
                stages: report.stages,
                advice: report.advice,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::discover::End;
    use crate::procfs::fake::FakeProc;

    const SEC: u64 = 1_000_000_000;

    /// A watch of the shell 90 of `fake`'s table.
    fn watch_shell(fake: &FakeProc) -> PipelineSource {
        let fake = fake.clone();
        let make: MakeProc = Box::new(move || Box::new(fake.clone()));
        PipelineSource::watch_with(make, 90, 1.0).expect("a shell is watched")
    }

    #[test]
    fn a_shell_between_pipelines_is_followed_and_its_next_pipeline_joins_the_watch() {
        let fake = FakeProc::default();
        fake.add(90, 1, "bash", End::Other, End::Other);
        fake.state(90, 'S', "do_wait");
        let mut source = watch_shell(&fake);
        let note = source.note.clone().unwrap_or_default();
        assert!(
            note.contains("pid 90 (bash) runs no pipeline now"),
            "{note}"
        );
        assert!(source.watchers.is_empty());
        assert_eq!(source.add_new_jobs(SEC, SEC), Jobs::Same);
        // yes | cat: two new children on one pipe.
        fake.add(101, 90, "yes", End::Other, End::Pipe(1));
        fake.add(102, 90, "cat", End::Pipe(1), End::Other);
        assert_eq!(source.add_new_jobs(2 * SEC, SEC), Jobs::Added);
        assert_eq!(source.watchers.len(), 1);
        // The same children: looked at once more (a child just forked may have no pipes
        // yet), then not scanned again; nothing is added twice.
        let scans = fake.scans();
        assert_eq!(source.add_new_jobs(3 * SEC, SEC), Jobs::Same);
        assert_eq!(source.add_new_jobs(4 * SEC, SEC), Jobs::Same);
        assert_eq!(source.add_new_jobs(5 * SEC, SEC), Jobs::Same);
        assert!(
            fake.scans() <= scans + 1,
            "unchanged children are not scanned"
        );
        assert_eq!(source.watchers.len(), 1);
        // A second pipeline: a second watcher.
        fake.add(111, 90, "cat big", End::Other, End::Pipe(2));
        fake.add(112, 90, "wc -c", End::Pipe(2), End::Other);
        assert_eq!(source.add_new_jobs(6 * SEC, SEC), Jobs::Added);
        assert_eq!(source.watchers.len(), 2);
        assert_eq!(source.add_new_jobs(7 * SEC, SEC), Jobs::Same);
        // The shell ends (a zombie until it is collected, its children unchanged): nothing
        // more comes.
        fake.state(90, 'Z', "0");
        assert_eq!(source.add_new_jobs(8 * SEC, SEC), Jobs::Gone);
    }
}
