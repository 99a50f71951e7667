//! `--pipeline`: every stage of a shell pipeline, as meters.
//!
//! Owns: running the pipeline view's [`Watcher`]s at each update — one per pipeline (job)
//! when the process watched is a shell running several — and turning their rows into one
//! meter per stage (its amount: the bytes that came through it since the watch began, so
//! rates, averages and stalls are a stage's own; the row's figures ride along in
//! [`MeterState::stage`], with the job it belongs to), sampling wait states between
//! updates ([`Source::tick`]), and a summary per job at the end (each stage's share of the
//! time as the bottleneck, where each stage's time went, what to try). Watching another
//! pipeline (`--pipeline=PID`) the source ends when every stage has ended; inside a
//! transfer (`--pipeline`) it ends with the transfer, whose own row then reads `ended`.
//! Must not: draw.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use super::Source;
use crate::error::{status, Error};
use crate::meter::{Event, Label, MeterState, Phase, Role};
use crate::pipeline::advice::Tools;
use crate::pipeline::classify::Activity;
use crate::pipeline::procfs::{Proc, SysProc};
use crate::pipeline::{render, Watcher};
use crate::sys;

/// Ids of the stage meters start here (other sources use small numbers); each job gets a
/// block of [`JOB_IDS`].
const FIRST_ID: u64 = 50_000;
/// Meter ids per job.
const JOB_IDS: u64 = 1_000;

/// What the transfer this process runs tells the pipeline view about its own stage (a
/// process cannot ask itself over its control channel).
#[derive(Debug, Default)]
pub struct OwnStage {
    /// Bytes written so far.
    pub bytes: AtomicU64,
    /// The transfer is over: its row reads `ended`.
    pub done: AtomicBool,
}

/// The stages of one or more pipelines.
pub struct PipelineSource {
    watchers: Vec<Watcher>,
    /// Inside a transfer: what it tells of its own stage; the transfer decides when the
    /// run ends.
    own: Option<Arc<OwnStage>>,
    start_ns: u64,
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
    pub fn watch(pid: u32, interval: f64) -> Result<PipelineSource, Error> {
        let make: fn() -> Box<dyn Proc> = || Box::new(SysProc::new());
        let mut watchers = Watcher::jobs(make, pid)
            .map_err(|e| Error::other(status::ACCESS, format!("--pipeline: {e}")))?;
        let start_ns = sys::monotonic_ns();
        for watcher in &mut watchers {
            prepare(watcher, interval, start_ns);
        }
        Ok(PipelineSource {
            watchers,
            own: None,
            start_ns,
        })
    }

    /// The pipeline this process sits in, its own stage as `own` tells.
    pub fn inline(own: Arc<OwnStage>, interval: f64) -> Result<PipelineSource, Error> {
        let mut proc = SysProc::new();
        let bytes = Arc::clone(&own);
        proc.set_own_bytes(Box::new(move || bytes.bytes.load(Ordering::Relaxed)));
        let mut watcher = Watcher::with_proc(Box::new(proc), std::process::id())
            .map_err(|e| Error::other(0, format!("--pipeline: {e}")))?;
        let start_ns = sys::monotonic_ns();
        prepare(&mut watcher, interval, start_ns);
        Ok(PipelineSource {
            watchers: vec![watcher],
            own: Some(own),
            start_ns,
        })
    }
}

impl Source for PipelineSource {
    fn sample(&mut self, now_ns: u64, out: &mut Vec<MeterState>) {
        let own_done = self
            .own
            .as_ref()
            .is_some_and(|o| o.done.load(Ordering::Relaxed));
        let me = std::process::id();
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
                    stage: Some(Box::new(stage)),
                    ..MeterState::default()
                });
            }
        }
    }

    fn events(&mut self, _out: &mut Vec<Event>) {}

    fn finished(&mut self) -> bool {
        self.own.is_some() || self.watchers.iter().all(Watcher::finished)
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
                text = format!("pipeline {job} (process group {}): {text}", watcher.group());
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
