//! `--pipeline`: every stage of a shell pipeline, as meters.
//!
//! Owns: running the pipeline view's [`Watcher`] at each update and turning its rows into
//! one meter per stage (its amount: the bytes that came through it since the watch began,
//! so rates, averages and stalls are a stage's own; the row's figures ride along in
//! [`MeterState::stage`]), sampling wait states between updates ([`Source::tick`]), and the
//! summary at the end (each stage's share of the time as the bottleneck). Watching another
//! pipeline (`--pipeline=PID`) the source ends when every stage has ended; inside a
//! transfer (`--pipeline`) it ends with the transfer. Must not: draw.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::Source;
use crate::error::{status, Error};
use crate::meter::{Event, Label, MeterState, Phase, Role};
use crate::pipeline::classify::Activity;
use crate::pipeline::procfs::SysProc;
use crate::pipeline::{render, Watcher};
use crate::sys;

/// Ids of the stage meters start here (other sources use small numbers).
const FIRST_ID: u64 = 50_000;

/// The stages of a pipeline.
pub struct PipelineSource {
    watcher: Watcher,
    /// Inside a transfer: the transfer decides when the run ends.
    inline: bool,
    start_ns: u64,
}

impl PipelineSource {
    /// Watches the pipeline process `pid` belongs to, sampled every `interval` seconds.
    pub fn watch(pid: u32, interval: f64) -> Result<PipelineSource, Error> {
        let mut watcher = Watcher::new(pid)
            .map_err(|e| Error::other(status::ACCESS, format!("--pipeline: {e}")))?;
        watcher.set_interval(interval);
        // The first reading now: the first update then has an interval to show.
        let start_ns = sys::monotonic_ns();
        watcher.sample(start_ns);
        Ok(PipelineSource {
            watcher,
            inline: false,
            start_ns,
        })
    }

    /// The pipeline this process sits in, its own stage counted from `own_bytes` (the bytes
    /// it has written: a process cannot ask itself over its control channel).
    pub fn inline(own_bytes: Arc<AtomicU64>, interval: f64) -> Result<PipelineSource, Error> {
        let mut proc = SysProc::new();
        proc.set_own_bytes(Box::new(move || own_bytes.load(Ordering::Relaxed)));
        let mut watcher = Watcher::with_proc(Box::new(proc), std::process::id())
            .map_err(|e| Error::other(0, format!("--pipeline: {e}")))?;
        watcher.set_interval(interval);
        let start_ns = sys::monotonic_ns();
        watcher.sample(start_ns);
        Ok(PipelineSource {
            watcher,
            inline: true,
            start_ns,
        })
    }
}

impl Source for PipelineSource {
    fn sample(&mut self, now_ns: u64, out: &mut Vec<MeterState>) {
        let view = self.watcher.sample(now_ns);
        for (index, stage) in view.stages.into_iter().enumerate() {
            let amount = stage.amount.unwrap_or(0);
            out.push(MeterState {
                id: FIRST_ID + index as u64,
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

    fn events(&mut self, _out: &mut Vec<Event>) {}

    fn finished(&mut self) -> bool {
        self.inline || self.watcher.finished()
    }

    fn poll_period_ns(&self) -> Option<u64> {
        Some(crate::pipeline::watch::TICK_NS)
    }

    fn tick(&mut self, now_ns: u64) {
        self.watcher.tick(now_ns);
    }

    fn status(&self) -> u8 {
        0
    }

    fn end(&mut self, out: &mut Vec<Event>) {
        let shares = self.watcher.summary();
        out.push(Event::Summary {
            text: render::summary(&shares),
            shares: shares.into_iter().map(|s| (s.command, s.share)).collect(),
        });
    }
}
