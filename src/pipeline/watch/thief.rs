//! The CPU thief: when the pipeline waits for a CPU because of other work, the busiest
//! process outside it, for the advice to name.
//!
//! Owns: reading every process's CPU time (`/proc/PID/stat`, not kept open) while the
//! stages are short of CPU, at most once per window, and picking the one that used the
//! most since the last look. Must not: judge the pipeline or word the advice (that is
//! `judge.rs` and `advice`).

use std::collections::HashMap;

use super::Watcher;
use crate::pipeline::advice::Thief;
use crate::pipeline::member;
use crate::procfs::Stat;

/// Each process's CPU ticks at the last look, by PID (with its start time, so a reused
/// PID is not compared with another process), and when that was.
#[derive(Debug, Default)]
pub(super) struct Others {
    ticks: HashMap<u32, (u64, u64)>,
    at_ns: Option<u64>,
    /// The busiest process outside the pipeline over the last two looks.
    pub(super) thief: Option<Thief>,
}

/// A process using less than this share of a core is nobody's thief.
const LEAST_SHARE: f64 = 0.2;

impl Watcher {
    /// While the stages are short of CPU, looks at every process's CPU time (once per
    /// window at most) and keeps the busiest outside the pipeline as the thief.
    pub(super) fn find_thief(&mut self, now_ns: u64) {
        if !self.short_of_cpu || !self.names_thief {
            // (Looked at afresh when it is short again: old counts would span the gap.)
            self.others = Others::default();
            return;
        }
        if self
            .others
            .at_ns
            .is_some_and(|at| now_ns < at + self.window_ns)
        {
            return;
        }
        let Ok(pids) = self.proc.pids() else {
            return;
        };
        let mut ours: Vec<u32> = vec![std::process::id()];
        for stage in &self.stages {
            ours.extend(stage.members.iter().map(|m| m.pid));
            ours.extend(&stage.spec.containers);
        }
        let mut ticks = HashMap::with_capacity(pids.len());
        let mut best: Option<(u64, u32, Stat)> = None;
        for pid in pids {
            let Some(stat) = self.proc.stat(pid) else {
                continue;
            };
            ticks.insert(pid, (stat.start, stat.cpu_ticks));
            // A stage's own children (a loop's, xargs's) are the pipeline's work too, as
            // is its process group (the script or shell running it).
            let outside = !ours.contains(&pid)
                && !ours.contains(&stat.ppid)
                && (self.group <= 1 || stat.pgrp != self.group);
            if stat.kernel_thread || !outside {
                continue;
            }
            let used = match self.others.ticks.get(&pid) {
                Some(&(start, before)) if start == stat.start => {
                    stat.cpu_ticks.saturating_sub(before)
                }
                _ => continue,
            };
            if best.as_ref().is_none_or(|(most, _, _)| used > *most) {
                best = Some((used, pid, stat));
            }
        }
        let seconds = self
            .others
            .at_ns
            .map(|at| now_ns.saturating_sub(at) as f64 / 1e9);
        self.others.thief = match (best, seconds) {
            (Some((used, pid, stat)), Some(s)) if s > 0.0 => {
                let share = used as f64 / crate::procfs::TICKS_PER_SECOND as f64 / s;
                (share >= LEAST_SHARE).then(|| Thief {
                    pid,
                    command: member::command_of(self.proc.as_mut(), pid, &stat.comm),
                    share,
                })
            }
            _ => None,
        };
        self.others.ticks = ticks;
        self.others.at_ns = Some(now_ns);
    }
}
