//! Pipeline flows: a process that moved with a pipe on its standard input or output
//! joined to another process's is looked at with the pipeline view's discovery; a
//! pipeline of two stages or more is followed by the pipeline view's `Watcher` (through
//! the scan's shared [`super::sweep::Sweep`]), which names the bottleneck.

use super::sweep::SharedProc;
use super::{Process, Scanner, Target};
use crate::pipeline::Watcher;
use crate::top::{Bottleneck, Flow, FlowView, Kind, Zoom};

/// A process found not to be in a pipeline of two stages or more is looked at again after
/// this long (nanoseconds).
const PIPELINE_RETRY_NS: u64 = 30_000_000_000;

/// A pipeline flow: the pipeline view's watcher.
pub(super) struct PipeFlow {
    pub(super) id: u64,
    pub(super) watcher: Watcher,
    pub(super) view: FlowView,
    pub(super) first: Option<u64>,
    pub(super) amount: u64,
    pub(super) since_ns: u64,
    pub(super) last_move_ns: u64,
}

/// The bytes through a pipeline: what its first stage wrote (else what the second read).
pub(super) fn pipeline_amount(view: &crate::pipeline::View) -> Option<u64> {
    let first = view.stages.first()?;
    first
        .bytes_out
        .or(first.amount)
        .or_else(|| view.stages.get(1).and_then(|s| s.amount))
}

/// A pipeline's row: the stages' commands, its bottleneck and why.
pub(super) fn pipeline_view(view: &crate::pipeline::View) -> FlowView {
    let command = view
        .stages
        .iter()
        .map(|s| s.command.as_str())
        .collect::<Vec<_>>()
        .join(" | ");
    let pid = view.stages.first().map_or(0, |s| s.pid);
    let bottleneck = view
        .stages
        .iter()
        .find(|s| s.bottleneck)
        .map(|s| Bottleneck {
            command: s.command.clone(),
            why: s.activity.label().to_string(),
        });
    FlowView {
        kind: Kind::Pipeline,
        pid,
        command,
        file: None,
        file_bytes: None,
        to: None,
        to_bytes: None,
        fd: None,
        writes: false,
        in_kernel: false,
        bottleneck,
        zoom: Zoom::Pipeline(pid),
    }
}

pub(super) fn pipe_flow(p: &PipeFlow, ended: bool) -> Flow {
    Flow {
        id: p.id,
        view: p.view.clone(),
        amount: p.amount,
        moved: p.amount,
        size: 0,
        unit: crate::units::Unit::Bytes,
        since_ns: p.since_ns,
        ended,
    }
}

impl Scanner {
    /// Pipelines: a process that moved with a pipe on its standard input or output and
    /// that no followed pipeline holds is looked at with the pipeline view's discovery; a
    /// pipeline of two stages or more becomes a flow.
    pub(super) fn follow_pipelines(&mut self, movers: &[u32], now_ns: u64) {
        self.sweep.borrow_mut().clear();
        self.not_pipeline.retain(|_, until| *until > now_ns);
        for &pid in movers {
            if (self.stop)() {
                break;
            }
            let Some(p) = self.procs.get(&pid) else {
                continue;
            };
            let key = (pid, p.start);
            if !self.joined(pid)
                || self.not_pipeline.contains_key(&key)
                || self.pipes.iter().any(|x| x.watcher.holds(pid))
            {
                continue;
            }
            self.cost.pipelines_tried += 1;
            let proc = Box::new(SharedProc::new((self.watchers)(), self.sweep.clone()));
            match Watcher::with_proc(proc, pid) {
                Ok(mut watcher) if !self.holds_own(&watcher) && !self.followed(&watcher) => {
                    watcher.set_interval(self.interval);
                    watcher.without_thief();
                    let view = watcher.sample(now_ns);
                    if view.stages.len() < 2 {
                        self.not_pipeline.insert(key, now_ns + PIPELINE_RETRY_NS);
                        continue;
                    }
                    let id = self.new_id();
                    self.pipes.push(PipeFlow {
                        id,
                        watcher,
                        view: pipeline_view(&view),
                        first: pipeline_amount(&view),
                        amount: 0,
                        since_ns: now_ns,
                        last_move_ns: now_ns,
                    });
                }
                _ => {
                    self.not_pipeline.insert(key, now_ns + PIPELINE_RETRY_NS);
                }
            }
        }
        let mut pipes = std::mem::take(&mut self.pipes);
        pipes.retain_mut(|p| {
            let view = p.watcher.sample(now_ns);
            if p.watcher.finished() {
                if p.amount > 0 {
                    self.ended.push(pipe_flow(p, true));
                }
                return false;
            }
            p.view = pipeline_view(&view);
            if let Some(now) = pipeline_amount(&view) {
                let first = *p.first.get_or_insert(now);
                let amount = now.saturating_sub(first);
                if amount != p.amount {
                    p.amount = amount;
                    p.last_move_ns = now_ns;
                }
            }
            true
        });
        self.pipes = pipes;
        self.sweep.borrow_mut().clear();
    }

    /// True if `pid`'s standard input or output is a pipe joined to another process's
    /// standard output or input, as the walks found them: a pipeline of two stages at
    /// least (the pipeline view's discovery, a look at every process, is kept for those).
    pub(super) fn joined(&self, pid: u32) -> bool {
        let end = |p: &Process, fd: i32| {
            p.fds
                .iter()
                .take(2)
                .find(|f| f.fd == fd)
                .and_then(|f| match f.target {
                    Target::Pipe(inode) => Some(inode),
                    _ => None,
                })
        };
        let Some(p) = self.procs.get(&pid) else {
            return false;
        };
        let (input, output) = (end(p, 0), end(p, 1));
        if input.is_none() && output.is_none() {
            return false;
        }
        self.procs.iter().any(|(&other, q)| {
            other != pid
                && ((input.is_some() && end(q, 1) == input)
                    || (output.is_some() && end(q, 0) == output))
        })
    }

    /// True if a pipeline already followed has a process of `watcher`'s (found again
    /// from another of its stages).
    pub(super) fn followed(&self, watcher: &Watcher) -> bool {
        watcher
            .processes()
            .any(|(pid, _)| self.pipes.iter().any(|p| p.watcher.holds(pid)))
    }

    /// True if rpv itself (or the view it opened) is a stage of `watcher`'s pipeline.
    pub(super) fn holds_own(&self, watcher: &Watcher) -> bool {
        watcher.holds(self.own) || self.exclude.is_some_and(|pid| watcher.holds(pid))
    }
}
