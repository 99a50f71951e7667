//! The watcher's stage list: finding the stages and keeping them in step with `/proc`.
//!
//! Owns: scanning `/proc` again and merging what it finds into the stage list (new
//! stages, stages whose processes changed, ended stages), new members of a stage, and the
//! shells behind stages (a shell that turns out to run a loop becomes the stage).
//! Must not: judge a window (rates, time split, bottleneck, advice: `judge.rs`) or draw.

use std::collections::VecDeque;

use super::{
    text, Shell, Stage, StageView, Totals, Watcher, LOOP_BIRTHS, LOOP_CHILDLESS, LOOP_CHILDLESS_NS,
    LOOP_WINDOW_NS,
};
use crate::pipeline::discover::{self, Segment, StageSpec, Table};
use crate::pipeline::member::Member;
use crate::pipeline::model::Activity;
use crate::procfs::{self, Proc, ProcFile};

impl Watcher {
    /// Whether stage `i`'s shell runs a loop (it starts child after child, or it is the
    /// stage's only process and runs builtins): if so, the stage becomes the shell, its
    /// children's time and bytes its own.
    pub(super) fn find_loop(&mut self, i: usize, now_ns: u64) {
        let stage = &mut self.stages[i];
        if stage.looping || stage.ended {
            return;
        }
        let Some(shell) = &mut stage.shell else {
            return;
        };
        if stage
            .members
            .iter()
            .any(|m| m.pid == shell.pid && m.comm() != shell.comm)
        {
            // It was forked for the stage and has run its program since.
            stage.shell = None;
            return;
        }
        shell.look(self.proc.as_mut(), now_ns);
        let alone = stage.spec.members == [shell.pid] && stage.spec.containers.is_empty();
        if alone && shell.children.is_empty() {
            shell.childless += 1;
            shell.childless_since.get_or_insert(now_ns);
        } else {
            shell.childless = 0;
            shell.childless_since = None;
        }
        let builtins = shell.childless >= LOOP_CHILDLESS
            && shell
                .childless_since
                .is_some_and(|since| now_ns.saturating_sub(since) >= LOOP_CHILDLESS_NS);
        if !shell.looped() && !builtins {
            return;
        }
        let pid = shell.pid;
        let kept = stage.members.iter().position(|m| m.pid == pid);
        let member = match kept {
            Some(at) => Some(stage.members.remove(at)),
            None => None,
        };
        let member = match member {
            Some(m) => Some(m),
            None => self.member_from_proc(pid),
        };
        let Some(mut member) = member else {
            return;
        };
        let stage = &mut self.stages[i];
        let others: Vec<u32> = stage.members.drain(..).map(|m| m.pid).collect();
        member.take_children();
        member.fresh = false;
        stage.members = vec![member];
        stage.spec.members = vec![pid];
        stage.spec.containers.clear();
        stage.shown = Some(pid);
        stage.looping = true;
        // What its members counted until now was a child's, files included (a python3
        // reading its modules): no figure of its pipes. Its own start from here.
        stage.shown_bytes = (None, None);
        stage.counted_since = None;
        for other in others {
            self.proc.release(other);
        }
        self.baseline_new_members(i, now_ns);
    }

    /// A member for process `pid`, read from `/proc` (not from a scan).
    fn member_from_proc(&mut self, pid: u32) -> Option<Member> {
        let stat = self.proc.stat(pid)?;
        Some(Member::new(
            self.proc.as_mut(),
            pid,
            stat.start,
            stat.session,
            stat.comm,
            false,
        ))
    }

    /// The first reading of members found by the last scan. A member that started after
    /// its stage was first seen counts everything it did (it is all recent).
    pub(super) fn baseline_new_members(&mut self, i: usize, now_ns: u64) {
        let stage = &mut self.stages[i];
        let permitted = stage.spec.permitted;
        let pipes = stage.pipes();
        for m in stage.members.iter_mut().filter(|m| m.last.is_none()) {
            let Some((reading, _)) = m.read(self.proc.as_mut(), permitted, pipes, now_ns, true)
            else {
                continue;
            };
            if m.fresh {
                stage.totals.ticks += reading.ticks;
                if let Some((r, w)) = reading.bytes() {
                    stage.totals.bytes_in += r;
                    stage.totals.bytes_out += w;
                    m.moved = r + w;
                }
            }
            m.last_rpv = reading.rpv;
            m.last = Some(reading);
        }
    }

    /// Scans `/proc` again from the stages still running and merges what it finds.
    pub(super) fn rescan_now(&mut self, wide: bool) {
        let mut sessions = vec![self.session];
        let mut seeds = vec![self.seed];
        for stage in self.stages.iter().filter(|s| !s.ended && s.spec.permitted) {
            for m in &stage.members {
                if !sessions.contains(&m.session) {
                    sessions.push(m.session);
                }
                seeds.push(m.pid);
            }
            seeds.extend(&stage.spec.containers);
        }
        self.scans += 1;
        let scope = if wide {
            None
        } else {
            Some(sessions.as_slice())
        };
        let Ok(table) = discover::scan(self.proc.as_mut(), scope) else {
            return;
        };
        let seeds: Vec<u32> = seeds
            .into_iter()
            .filter(|p| table.get(*p).is_some())
            .collect();
        let segments = discover::discover(&table, &seeds);
        self.merge(&table, &segments, true);
    }

    /// Merges freshly discovered segments into the stage list: known stages are updated in
    /// place, new ones are put next to their neighbours, and stages no longer found end.
    pub(super) fn merge(&mut self, table: &Table, segments: &[Segment], later: bool) {
        for stage in &mut self.stages {
            stage.matched = false;
        }
        self.open_ends = segments
            .iter()
            .any(|s| s.open_start || s.open_end || s.pending);
        let loops: Vec<u32> = self
            .stages
            .iter()
            .filter(|s| s.looping && !s.ended)
            .filter_map(|s| s.shell.as_ref().map(|sh| sh.pid))
            .collect();
        let segments: Vec<Segment> = segments
            .iter()
            .map(|segment| {
                let mut segment = segment.clone();
                for spec in &mut segment.stages {
                    if let Some(&shell) = loops
                        .iter()
                        .find(|l| spec.members.contains(l) || spec.containers.contains(l))
                    {
                        // A loop is its shell: its children are not members.
                        spec.members = vec![shell];
                        spec.containers.clear();
                    }
                }
                segment
            })
            .collect();
        for segment in &segments {
            let mut anchor: Option<usize> = None;
            let mut pending: Vec<&StageSpec> = Vec::new();
            for spec in &segment.stages {
                let found = self.stages.iter().position(|s| {
                    !s.ended
                        && !s.matched
                        && (s.spec.key() == spec.key()
                            || s.members.iter().any(|m| spec.members.contains(&m.pid)))
                });
                match (found, anchor) {
                    (Some(idx), _) => {
                        // Stages found before the first known one go in front of it.
                        let before = pending.len();
                        for (k, p) in pending.drain(..).enumerate() {
                            let stage = self.new_stage(table, p, later);
                            self.stages.insert(idx + k, stage);
                        }
                        self.update_stage(idx + before, table, spec);
                        anchor = Some(idx + before);
                    }
                    (None, Some(a)) => {
                        let stage = self.new_stage(table, spec, later);
                        self.stages.insert(a + 1, stage);
                        anchor = Some(a + 1);
                    }
                    (None, None) => pending.push(spec),
                }
            }
            for p in pending {
                let stage = self.new_stage(table, p, later);
                self.stages.push(stage);
            }
        }
        for i in 0..self.stages.len() {
            if !self.stages[i].matched && !self.stages[i].ended {
                self.end_stage(i);
            }
        }
        let pipes: Vec<u64> = self
            .stages
            .iter()
            .flat_map(|s| s.spec.input.into_iter().chain(s.spec.output))
            .collect();
        self.proc.retain_pipes(&pipes);
    }

    fn new_member(&mut self, table: &Table, pid: u32, fresh: bool) -> Member {
        let (start, session, comm) = table
            .get(pid)
            .map(|p| (p.stat.start, p.stat.session, p.stat.comm.clone()))
            .unwrap_or_default();
        Member::new(self.proc.as_mut(), pid, start, session, comm, fresh)
    }

    fn new_stage(&mut self, table: &Table, spec: &StageSpec, later: bool) -> Stage {
        let members: Vec<Member> = spec
            .members
            .iter()
            .map(|&pid| self.new_member(table, pid, later))
            .collect();
        let shown = members.first().map(|m| m.pid);
        let view = StageView {
            pid: shown.unwrap_or(0),
            command: members
                .first()
                .map(|m| m.command.clone())
                .unwrap_or_default(),
            activity: if spec.permitted {
                Activity::Running
            } else {
                Activity::Unknown
            },
            time: None,
            cpu: None,
            rate_in: None,
            rate_out: None,
            bytes_in: None,
            bytes_out: None,
            amount: None,
            fill: None,
            bottleneck: false,
            job: 0,
            group: 0,
            advice: None,
        };
        let shell = shell_of(self.proc.as_mut(), table, spec).map(|pid| Shell::new(table, pid));
        Stage {
            shell,
            looping: false,
            peer: None,
            peer_of: None,
            elsewhere: (false, false),
            now: view.activity,
            parents: parents(table, spec),
            spec: spec.clone(),
            members,
            totals: Totals::default(),
            counted_since: None,
            moved: None,
            shown_bytes: (None, None),
            history: VecDeque::new(),
            shown,
            ended: false,
            matched: true,
            bottleneck_ns: 0,
            credit: Vec::new(),
            credited_last: None,
            score: 0.0,
            view,
        }
    }

    fn update_stage(&mut self, idx: usize, table: &Table, spec: &StageSpec) {
        // Members still running (same process: same start time) stay; the others go.
        let alive = |m: &Member| {
            spec.members.contains(&m.pid)
                && m.last.is_some()
                && table.get(m.pid).is_some_and(|p| p.stat.start == m.start)
        };
        let (kept, gone): (Vec<Member>, Vec<Member>) =
            std::mem::take(&mut self.stages[idx].members)
                .into_iter()
                .partition(|m| alive(m));
        for m in &gone {
            self.proc.release(m.pid);
        }
        let mut members = kept;
        for &pid in &spec.members {
            if !members.iter().any(|m| m.pid == pid) {
                let member = self.new_member(table, pid, true);
                members.push(member);
            }
        }
        let found = if self.stages[idx].looping {
            None
        } else {
            shell_of(self.proc.as_mut(), table, spec)
        };
        let stage = &mut self.stages[idx];
        stage.members = members;
        stage.parents = parents(table, spec);
        stage.spec = spec.clone();
        stage.matched = true;
        if let Some(pid) = found {
            if stage.shell.as_ref().is_none_or(|s| s.pid != pid) {
                stage.shell = Some(Shell::new(table, pid));
            }
        }
    }

    fn end_stage(&mut self, i: usize) {
        let pids: Vec<u32> = self.stages[i].members.iter().map(|m| m.pid).collect();
        for pid in pids {
            self.proc.release(pid);
        }
        let stage = &mut self.stages[i];
        stage.ended = true;
        stage.view.activity = Activity::Ended;
        stage.view.bottleneck = false;
        stage.members.clear();
    }
}

impl Shell {
    fn new(table: &Table, pid: u32) -> Shell {
        Shell {
            pid,
            comm: table
                .get(pid)
                .map(|p| p.stat.comm.clone())
                .unwrap_or_default(),
            ..Shell::default()
        }
    }

    /// True once it is seen to run a loop: [`LOOP_BIRTHS`] children within
    /// [`LOOP_WINDOW_NS`], or as many running the same program over the whole watch.
    pub(super) fn looped(&self) -> bool {
        self.births.len() >= LOOP_BIRTHS || self.programs.iter().any(|(_, n)| *n >= LOOP_BIRTHS)
    }

    /// Looks at the shell's children at `now_ns`, noting new ones and the program each runs
    /// once it has run one (a child between its fork and its exec has the shell's name).
    pub(super) fn look(&mut self, proc: &mut dyn Proc, now_ns: u64) {
        let now: Vec<u32> = proc
            .read(self.pid, ProcFile::Children(self.pid), false)
            .map(|t| procfs::parse_pids(&text(&t)))
            .unwrap_or_default();
        for &pid in &now {
            if !self.children.contains(&pid) {
                self.births.push_back(now_ns);
            }
            if self.named.contains(&pid) {
                continue;
            }
            let Some(stat) = proc.stat(pid) else {
                continue;
            };
            if stat.comm != self.comm && !matches!(stat.state, 'Z' | 'X') {
                self.named.push(pid);
                match self.programs.iter_mut().find(|(p, _)| *p == stat.comm) {
                    Some((_, n)) => *n += 1,
                    None => self.programs.push((stat.comm, 1)),
                }
            }
        }
        self.named.retain(|p| now.contains(p));
        while self
            .births
            .front()
            .is_some_and(|t| t + LOOP_WINDOW_NS < now_ns)
        {
            self.births.pop_front();
        }
        self.children = now;
    }
}

/// The children of a stage's processes at scan time: a new child of one of them may be a
/// new member.
fn parents(table: &Table, spec: &StageSpec) -> Vec<(u32, Vec<u32>)> {
    spec.containers
        .iter()
        .chain(&spec.members)
        .map(|&pid| (pid, table.children(pid)))
        .collect()
}

/// The shell running a stage's commands: the outermost holder of its pipe ends that has
/// children holding them too (a subshell or script waiting for a child), or a stage's only
/// process when it is a subshell (a copy of its parent: same name and command line).
fn shell_of(proc: &mut dyn Proc, table: &Table, spec: &StageSpec) -> Option<u32> {
    if !spec.permitted {
        return None;
    }
    let holders: Vec<u32> = spec
        .members
        .iter()
        .chain(&spec.containers)
        .copied()
        .collect();
    if let Some(&outer) = spec.containers.iter().find(|&&c| {
        table
            .get(c)
            .is_some_and(|p| !holders.contains(&p.stat.ppid))
    }) {
        return Some(outer);
    }
    let [only] = spec.members.as_slice() else {
        return None;
    };
    let p = table.get(*only)?;
    let parent = table.get(p.stat.ppid)?;
    if p.stat.comm != parent.stat.comm {
        return None;
    }
    let cmdline = |proc: &mut dyn Proc, pid| proc.read(pid, ProcFile::Cmdline, false).ok();
    let own = cmdline(proc, *only)?;
    (cmdline(proc, parent.pid).as_ref() == Some(&own)).then_some(*only)
}
