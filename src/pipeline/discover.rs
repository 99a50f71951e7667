//! Finding the stages of the pipeline a process belongs to.
//!
//! Owns: the process table snapshot ([`scan`]) and the walk along the pipes on standard
//! input and output ([`discover`]). Must not: sample figures or keep state between scans
//! (that is `watch`).
//!
//! The rules:
//! - Stages are chained by pipes: a stage's standard output is the same pipe (inode) as the
//!   next stage's standard input. The walk goes both ways from the start process.
//! - The processes holding the same pipe end form one stage. A holder that has a descendant
//!   holding the same end is a *container* (a subshell or shell waiting for its children),
//!   not a member: `{ a; b; } | c` shows `a` (then `b`), not the subshell.
//! - Processes whose descriptors we may not read (other users') cannot be placed by their
//!   pipes. Where the chain has an open end (a pipe nobody we can see holds the other end
//!   of), the unreadable siblings of the end stage (same parent: the shell that started the
//!   pipeline) are placed there in PID order (shells start the stages left to right), and
//!   the walk resumes from a readable sibling whose pipe has no visible other end. A
//!   readable sibling passed over that holds no pipe yet (the shell forked it for a stage
//!   and has not yet given it its pipes) leaves the segment *pending*: scanned again.
//! - Only processes in the start process's session are scanned unless the chain has open
//!   ends a session-wide scan does not close (a stage started with `setsid`, `sudo`).

use std::collections::{HashMap, HashSet};
use std::io;

pub(crate) use crate::procfs::End;
use crate::procfs::{pipe_inode, Proc, ProcFile, Stat};

/// One process of the snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProcInfo {
    /// Its PID.
    pub pid: u32,
    /// Its `stat` fields.
    pub stat: Stat,
    /// Descriptor 0.
    pub stdin: End,
    /// Descriptor 1.
    pub stdout: End,
    /// It runs a command for each batch of its input (see [`launcher`]).
    pub launcher: bool,
}

impl ProcInfo {
    fn hidden(&self) -> bool {
        self.stdin == End::Hidden || self.stdout == End::Hidden
    }
}

/// A snapshot of the processes that may be stages.
#[derive(Debug, Default, Clone)]
pub(crate) struct Table {
    procs: HashMap<u32, ProcInfo>,
}

impl Table {
    /// A table of these processes (tests).
    #[cfg(test)]
    pub(crate) fn from_procs(procs: impl IntoIterator<Item = ProcInfo>) -> Table {
        Table {
            procs: procs.into_iter().map(|p| (p.pid, p)).collect(),
        }
    }

    /// The process with this PID, if it was scanned.
    pub(crate) fn get(&self, pid: u32) -> Option<&ProcInfo> {
        self.procs.get(&pid)
    }

    /// The PIDs of the children of `pid` in the table.
    pub(crate) fn children(&self, pid: u32) -> Vec<u32> {
        let mut out: Vec<u32> = self
            .procs
            .values()
            .filter(|p| p.stat.ppid == pid)
            .map(|p| p.pid)
            .collect();
        out.sort_unstable();
        out
    }

    /// True if `ancestor` is a parent, grandparent, … of `pid`.
    fn is_ancestor(&self, ancestor: u32, pid: u32) -> bool {
        let mut current = pid;
        for _ in 0..64 {
            match self.procs.get(&current) {
                Some(p) if p.stat.ppid == ancestor => return true,
                Some(p) if p.stat.ppid > 1 && p.stat.ppid != current => current = p.stat.ppid,
                _ => return false,
            }
        }
        false
    }

    fn holders(&self, pick: impl Fn(&ProcInfo) -> bool) -> Vec<u32> {
        let mut out: Vec<u32> = self
            .procs
            .values()
            .filter(|p| pick(p))
            .map(|p| p.pid)
            .collect();
        out.sort_unstable();
        out
    }

    /// The processes with this pipe as standard output.
    fn writers(&self, inode: u64) -> Vec<u32> {
        self.holders(|p| p.stdout == End::Pipe(inode))
    }

    /// The processes with this pipe as standard input.
    fn readers(&self, inode: u64) -> Vec<u32> {
        self.holders(|p| p.stdin == End::Pipe(inode))
    }
}

/// Reads the process table: every process's `stat`, and descriptors 0 and 1 of those in
/// `sessions` (all processes when `None`). Processes that vanish meanwhile are left out.
pub(crate) fn scan(proc: &mut dyn Proc, sessions: Option<&[u32]>) -> io::Result<Table> {
    let mut procs = HashMap::new();
    for pid in proc.pids()? {
        let Ok(text) = proc.read(pid, ProcFile::Stat, false) else {
            continue;
        };
        let Some(stat) = Stat::parse(&String::from_utf8_lossy(&text)) else {
            continue;
        };
        // Kernel threads and zombies have no descriptors. (Session 0 is not a kernel thread
        // in a PID namespace whose session leader is outside it: every process has it.)
        let wanted = sessions.is_none_or(|s| s.contains(&stat.session));
        if stat.kernel_thread || !wanted || matches!(stat.state, 'Z' | 'X') {
            continue;
        }
        let mut end = |fd| match proc.fd_link(pid, fd) {
            Ok(link) => pipe_inode(&link).map_or(End::Other, End::Pipe),
            Err(e) if matches!(e.raw_os_error(), Some(libc::EACCES | libc::EPERM)) => End::Hidden,
            Err(_) => End::Closed,
        };
        let (stdin, stdout) = (end(0), end(1));
        // (Only a `perl` needs its command line read: GNU parallel is a Perl script.)
        let launcher = launcher(&stat.comm, || {
            proc.read(pid, ProcFile::Cmdline, false).unwrap_or_default()
        });
        procs.insert(
            pid,
            ProcInfo {
                pid,
                stat,
                stdin,
                stdout,
                launcher,
            },
        );
    }
    Ok(Table { procs })
}

/// One stage as found by a scan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StageSpec {
    /// The processes doing the stage's work (usually one), by PID.
    pub members: Vec<u32>,
    /// Shells and subshells holding the stage's pipe ends while they wait for children.
    pub containers: Vec<u32>,
    /// The pipe on the stage's standard input, if it is one.
    pub input: Option<u64>,
    /// The pipe on the stage's standard output, if it is one.
    pub output: Option<u64>,
    /// False for a process whose descriptors we may not read.
    pub permitted: bool,
}

impl StageSpec {
    /// The stage's identity across scans: its pipes, or its process when they are unknown.
    pub(crate) fn key(&self) -> (Option<u64>, Option<u64>, u32) {
        if self.permitted {
            (self.input, self.output, 0)
        } else {
            (None, None, self.members.first().copied().unwrap_or(0))
        }
    }

    fn all(&self) -> impl Iterator<Item = u32> + '_ {
        self.members.iter().chain(&self.containers).copied()
    }
}

/// A run of stages connected by pipes, in pipeline order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Segment {
    /// The stages.
    pub stages: Vec<StageSpec>,
    /// The first stage reads a pipe whose writer is not visible.
    pub open_start: bool,
    /// The last stage writes a pipe whose reader is not visible.
    pub open_end: bool,
    /// A gap was closed past a process of ours that holds no pipe yet (the shell has
    /// forked it for a stage but not yet given it its pipes): it may still join.
    pub pending: bool,
}

/// Why there is no pipeline to show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DiscoverError {
    /// The start process does not exist.
    NoSuchProcess,
    /// Its descriptors may not be read.
    NotPermitted,
    /// Neither it nor any of its children has a pipe on standard input or output.
    NotInPipeline,
}

/// The most common pipe among `ends`, if any is one.
fn common_pipe(ends: impl Iterator<Item = End>) -> Option<u64> {
    let mut counts: Vec<(u64, usize)> = Vec::new();
    for inode in ends.filter_map(End::pipe) {
        match counts.iter_mut().find(|(i, _)| *i == inode) {
            Some((_, n)) => *n += 1,
            None => counts.push((inode, 1)),
        }
    }
    counts.into_iter().max_by_key(|&(_, n)| n).map(|(i, _)| i)
}

/// Programs that run a command for each batch of their input: the stage is the program,
/// and the children it starts are its work, not stages or members of their own.
const LAUNCHERS: &[&str] = &["xargs", "parallel"];

/// True if a process named `comm` (its command line from `cmdline`, read only when it is
/// needed) is a launcher: `xargs`, or GNU `parallel`, which runs as `perl
/// /usr/bin/parallel …` when started through `env`.
pub(crate) fn launcher(comm: &str, cmdline: impl FnOnce() -> Vec<u8>) -> bool {
    if LAUNCHERS.contains(&comm) {
        return true;
    }
    if comm != "perl" {
        return false;
    }
    let line = cmdline();
    let script = line
        .split(|&b| b == 0)
        .skip(1)
        .find(|arg| !arg.starts_with(b"-"))
        .unwrap_or_default();
    let name = script.rsplit(|&b| b == b'/').next().unwrap_or_default();
    LAUNCHERS.iter().any(|l| l.as_bytes() == name)
}

/// A stage from the processes holding its pipe ends.
fn stage_from(table: &Table, holders: &[u32]) -> StageSpec {
    let launcher = holders
        .iter()
        .copied()
        .find(|&h| table.get(h).is_some_and(|p| p.launcher));
    if let Some(launcher) = launcher {
        // Its children (xargs's commands write to its output pipe) are its work; shells
        // above it that hold the pipe too are containers as usual.
        let info = table.get(launcher);
        return StageSpec {
            members: vec![launcher],
            containers: holders
                .iter()
                .copied()
                .filter(|&h| h != launcher && table.is_ancestor(h, launcher))
                .collect(),
            input: info.and_then(|p| p.stdin.pipe()),
            output: info.and_then(|p| p.stdout.pipe()),
            permitted: true,
        };
    }
    let (containers, members): (Vec<u32>, Vec<u32>) = holders
        .iter()
        .partition(|&&h| holders.iter().any(|&o| o != h && table.is_ancestor(h, o)));
    let infos = || members.iter().filter_map(|pid| table.get(*pid));
    StageSpec {
        input: common_pipe(infos().map(|p| p.stdin)),
        output: common_pipe(infos().map(|p| p.stdout)),
        members,
        containers,
        permitted: true,
    }
}

/// The stage of one process: every holder of its input pipe's read end and of its output
/// pipe's write end.
fn stage_of(table: &Table, pid: u32) -> StageSpec {
    let Some(p) = table.get(pid) else {
        return StageSpec {
            members: vec![pid],
            containers: Vec::new(),
            input: None,
            output: None,
            permitted: false,
        };
    };
    let mut holders = vec![pid];
    if let Some(inode) = p.stdin.pipe() {
        holders.extend(table.readers(inode));
    }
    if let Some(inode) = p.stdout.pipe() {
        holders.extend(table.writers(inode));
    }
    holders.sort_unstable();
    holders.dedup();
    stage_from(table, &holders)
}

fn hidden_stage(pid: u32) -> StageSpec {
    StageSpec {
        members: vec![pid],
        containers: Vec::new(),
        input: None,
        output: None,
        permitted: false,
    }
}

/// The parent of the outermost holder of a stage: the shell that started the pipeline.
fn pipeline_parent(table: &Table, stage: &StageSpec) -> Option<u32> {
    let all: Vec<u32> = stage.all().collect();
    all.iter()
        .filter_map(|pid| table.get(*pid))
        .find(|p| !all.contains(&p.stat.ppid))
        .map(|p| p.stat.ppid)
}

/// The walk from one process.
struct Walk<'a> {
    table: &'a Table,
    seen: HashSet<u32>,
    pipes: HashSet<u64>,
}

impl Walk<'_> {
    fn claim(&mut self, stage: &StageSpec) {
        self.seen.extend(stage.all());
        self.pipes.extend(stage.input);
        self.pipes.extend(stage.output);
    }

    /// Extends the segment downstream from its last stage, as far as pipes lead.
    fn downstream(&mut self, segment: &mut Segment) {
        loop {
            let Some(last) = segment.stages.last() else {
                return;
            };
            let Some(pipe) = last.output else {
                segment.open_end = false;
                return;
            };
            let readers: Vec<u32> = self
                .table
                .readers(pipe)
                .into_iter()
                .filter(|p| !self.seen.contains(p))
                .collect();
            if readers.is_empty() {
                segment.open_end = true;
                return;
            }
            let stage = stage_from(self.table, &readers);
            if stage.output.is_some_and(|o| self.pipes.contains(&o)) {
                segment.open_end = false;
                self.claim(&stage);
                segment.stages.push(stage);
                return;
            }
            self.claim(&stage);
            segment.stages.push(stage);
        }
    }

    /// Extends the segment upstream from its first stage.
    fn upstream(&mut self, segment: &mut Segment) {
        loop {
            let Some(first) = segment.stages.first() else {
                return;
            };
            let Some(pipe) = first.input else {
                segment.open_start = false;
                return;
            };
            let writers: Vec<u32> = self
                .table
                .writers(pipe)
                .into_iter()
                .filter(|p| !self.seen.contains(p))
                .collect();
            if writers.is_empty() {
                segment.open_start = true;
                return;
            }
            let stage = stage_from(self.table, &writers);
            let cycle = stage.input.is_some_and(|i| self.pipes.contains(&i));
            self.claim(&stage);
            segment.stages.insert(0, stage);
            if cycle {
                segment.open_start = false;
                return;
            }
        }
    }

    /// Siblings of the segment's end stage that may continue it: unreadable ones, and
    /// readable ones whose pipe has no visible other end. `after` picks the side: PIDs
    /// above the end stage's (downstream) or below (upstream), nearest first.
    fn gap(&self, end: &StageSpec, after: bool) -> (Vec<u32>, Option<u32>, bool) {
        let Some(parent) = pipeline_parent(self.table, end) else {
            return (Vec::new(), None, false);
        };
        let pivot = if after {
            end.all().max().unwrap_or(0)
        } else {
            end.all().min().unwrap_or(u32::MAX)
        };
        let mut siblings: Vec<&ProcInfo> = self
            .table
            .procs
            .values()
            .filter(|p| p.stat.ppid == parent && !self.seen.contains(&p.pid))
            .filter(|p| if after { p.pid > pivot } else { p.pid < pivot })
            .collect();
        siblings.sort_by_key(|p| if after { p.pid } else { u32::MAX - p.pid });
        let open_other_end = |p: &ProcInfo| {
            if after {
                p.stdin
                    .pipe()
                    .is_some_and(|i| self.table.writers(i).is_empty())
            } else {
                p.stdout
                    .pipe()
                    .is_some_and(|o| self.table.readers(o).is_empty())
            }
        };
        let resume = siblings
            .iter()
            .find(|p| !p.hidden() && open_other_end(p))
            .map(|p| p.pid);
        let between = || siblings.iter().take_while(|p| Some(p.pid) != resume);
        let hidden = between().filter(|p| p.hidden()).map(|p| p.pid).collect();
        // A readable process between the two that holds no pipe: a stage not yet
        // connected (`resume` set), or just another child of the shell.
        let unconnected = resume.is_some()
            && between()
                .any(|p| !p.hidden() && p.stdin.pipe().is_none() && p.stdout.pipe().is_none());
        (hidden, resume, unconnected)
    }

    /// Closes open ends with unreadable siblings, and resumes from readable ones.
    fn fill_gaps(&mut self, segment: &mut Segment) {
        for _ in 0..64 {
            if !segment.open_end {
                break;
            }
            let Some(last) = segment.stages.last() else {
                break;
            };
            let (hidden, resume, unconnected) = self.gap(last, true);
            if hidden.is_empty() && resume.is_none() {
                break;
            }
            segment.pending |= unconnected;
            for pid in hidden {
                self.seen.insert(pid);
                segment.stages.push(hidden_stage(pid));
            }
            segment.open_end = false;
            if let Some(pid) = resume {
                let stage = stage_of(self.table, pid);
                self.claim(&stage);
                segment.stages.push(stage);
                self.downstream(segment);
            }
        }
        for _ in 0..64 {
            if !segment.open_start {
                break;
            }
            let Some(first) = segment.stages.first() else {
                break;
            };
            let (hidden, resume, unconnected) = self.gap(first, false);
            if hidden.is_empty() && resume.is_none() {
                break;
            }
            segment.pending |= unconnected;
            for pid in hidden {
                self.seen.insert(pid);
                segment.stages.insert(0, hidden_stage(pid));
            }
            segment.open_start = false;
            if let Some(pid) = resume {
                let stage = stage_of(self.table, pid);
                self.claim(&stage);
                segment.stages.insert(0, stage);
                self.upstream(segment);
            }
        }
    }
}

/// Generations of descendants looked through for pipelines run by a shell.
const MAX_DEPTH: usize = 16;

/// The processes to start the walk from: `pid` itself if it has a pipe on standard input
/// or output; else (`pid` is a shell) the nearest of its descendants that do, each
/// branch searched down to the first such process: a pipeline run by a child of the
/// shell, by a subshell (`( a | b )`), or by a shell that a subshell runs.
pub(crate) fn start_points(table: &Table, pid: u32) -> Result<Vec<u32>, DiscoverError> {
    let p = table.get(pid).ok_or(DiscoverError::NoSuchProcess)?;
    if p.hidden() {
        return Err(DiscoverError::NotPermitted);
    }
    if p.stdin.pipe().is_some() || p.stdout.pipe().is_some() {
        return Ok(vec![pid]);
    }
    let mut found = Vec::new();
    let mut generation = table.children(pid);
    for _ in 0..MAX_DEPTH {
        let mut next = Vec::new();
        for child in generation {
            let Some(c) = table.get(child) else {
                continue;
            };
            if c.stdin.pipe().is_some() || c.stdout.pipe().is_some() {
                found.push(child);
            } else if !c.hidden() {
                next.extend(table.children(child));
            }
        }
        if next.is_empty() {
            break;
        }
        generation = next;
    }
    if found.is_empty() {
        Err(DiscoverError::NotInPipeline)
    } else {
        Ok(found)
    }
}

/// The segments reachable from `seeds` (processes known to be stages), each in pipeline
/// order. A seed already placed by an earlier walk starts none of its own.
pub(crate) fn discover(table: &Table, seeds: &[u32]) -> Vec<Segment> {
    let mut walk = Walk {
        table,
        seen: HashSet::new(),
        pipes: HashSet::new(),
    };
    let mut segments = Vec::new();
    for &seed in seeds {
        let Some(p) = table.get(seed) else {
            continue;
        };
        if walk.seen.contains(&seed) || p.hidden() {
            continue;
        }
        if p.stdin.pipe().is_none() && p.stdout.pipe().is_none() {
            continue;
        }
        let stage = stage_of(table, seed);
        walk.claim(&stage);
        let mut segment = Segment {
            stages: vec![stage],
            open_start: false,
            open_end: false,
            pending: false,
        };
        walk.upstream(&mut segment);
        walk.downstream(&mut segment);
        walk.fill_gaps(&mut segment);
        segments.push(segment);
    }
    segments
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proc(pid: u32, ppid: u32, stdin: End, stdout: End) -> ProcInfo {
        ProcInfo {
            pid,
            stat: Stat {
                comm: format!("p{pid}"),
                state: 'S',
                ppid,
                pgrp: 100,
                session: 100,
                kernel_thread: false,
                cpu_ticks: 0,
                child_ticks: 0,
                threads: 1,
                start: u64::from(pid),
            },
            stdin,
            stdout,
            launcher: false,
        }
    }

    const TTY: End = End::Other;
    fn pipe(n: u64) -> End {
        End::Pipe(n)
    }

    fn members(segment: &Segment) -> Vec<Vec<u32>> {
        segment.stages.iter().map(|s| s.members.clone()).collect()
    }

    /// `sh` (100) runs `a | b | c` (101, 102, 103) through pipes 1 and 2.
    fn three_stages() -> Vec<ProcInfo> {
        vec![
            proc(100, 1, TTY, TTY),
            proc(101, 100, TTY, pipe(1)),
            proc(102, 100, pipe(1), pipe(2)),
            proc(103, 100, pipe(2), TTY),
        ]
    }

    #[test]
    fn found_from_any_stage_in_order() {
        let table = Table::from_procs(three_stages());
        for start in [101, 102, 103] {
            let segments = discover(&table, &[start]);
            assert_eq!(segments.len(), 1, "from {start}");
            assert_eq!(members(&segments[0]), vec![vec![101], vec![102], vec![103]]);
            assert!(!segments[0].open_start && !segments[0].open_end);
            let s = &segments[0].stages;
            assert_eq!((s[0].input, s[0].output), (None, Some(1)));
            assert_eq!((s[1].input, s[1].output), (Some(1), Some(2)));
            assert_eq!((s[2].input, s[2].output), (Some(2), None));
        }
    }

    #[test]
    fn starting_from_the_shell_finds_its_pipeline() {
        let table = Table::from_procs(three_stages());
        let seeds = start_points(&table, 100).unwrap();
        let segments = discover(&table, &seeds);
        assert_eq!(segments.len(), 1);
        assert_eq!(members(&segments[0]), vec![vec![101], vec![102], vec![103]]);
        let lone = Table::from_procs(vec![proc(7, 1, TTY, TTY)]);
        assert_eq!(start_points(&lone, 7), Err(DiscoverError::NotInPipeline));
        assert_eq!(start_points(&lone, 8), Err(DiscoverError::NoSuchProcess));
    }

    #[test]
    fn a_pipeline_in_a_subshell_is_found_from_the_interactive_shell() {
        // bash (90) runs `( a | b ) &`: a subshell (95) with no pipe of its own forks the
        // stages; and `sh -c 'c | d'` (96) under another subshell (94).
        let procs = vec![
            proc(90, 1, TTY, TTY),
            proc(95, 90, TTY, TTY),
            proc(101, 95, TTY, pipe(1)),
            proc(102, 95, pipe(1), TTY),
            proc(94, 90, TTY, TTY),
            proc(96, 94, TTY, TTY),
            proc(103, 96, TTY, pipe(2)),
            proc(104, 96, pipe(2), TTY),
            // A child with no pipeline anywhere below it.
            proc(97, 90, TTY, TTY),
        ];
        let table = Table::from_procs(procs);
        assert_eq!(start_points(&table, 90), Ok(vec![101, 102, 103, 104]));
        let segments = discover(&table, &start_points(&table, 90).unwrap());
        assert_eq!(segments.len(), 2);
        assert_eq!(members(&segments[0]), vec![vec![101], vec![102]]);
        assert_eq!(members(&segments[1]), vec![vec![103], vec![104]]);
        assert_eq!(start_points(&table, 97), Err(DiscoverError::NotInPipeline));
    }

    #[test]
    fn a_subshell_is_a_container_not_a_stage() {
        // sh runs `a | ( b ) | c`: the subshell 102 holds both pipes and waits for b (104).
        let mut procs = three_stages();
        procs.push(proc(104, 102, pipe(1), pipe(2)));
        let table = Table::from_procs(procs);
        for start in [101, 102, 103, 104] {
            let segments = discover(&table, &[start]);
            assert_eq!(members(&segments[0]), vec![vec![101], vec![104], vec![103]]);
            assert_eq!(segments[0].stages[1].containers, vec![102]);
        }
    }

    #[test]
    fn a_compound_stage_has_the_process_moving_data_as_member() {
        // `{ a; b; } | c`: the subshell 101 runs a (111, finished) then b (112), whose own
        // child 113 also holds the pipe: 112 is a container too.
        let procs = vec![
            proc(100, 1, TTY, TTY),
            proc(101, 100, TTY, pipe(1)),
            proc(112, 101, TTY, pipe(1)),
            proc(113, 112, TTY, pipe(1)),
            proc(103, 100, pipe(1), TTY),
        ];
        let table = Table::from_procs(procs);
        let segments = discover(&table, &[103]);
        assert_eq!(members(&segments[0]), vec![vec![113], vec![103]]);
        assert_eq!(segments[0].stages[0].containers, vec![101, 112]);
        // Two members at once (`{ a & b; }`): both are the stage.
        let procs = vec![
            proc(101, 100, TTY, pipe(1)),
            proc(111, 101, TTY, pipe(1)),
            proc(112, 101, TTY, pipe(1)),
            proc(103, 100, pipe(1), TTY),
        ];
        let segments = discover(&Table::from_procs(procs), &[103]);
        assert_eq!(members(&segments[0]), vec![vec![111, 112], vec![103]]);
    }

    #[test]
    fn a_lone_waiting_shell_is_the_stage_until_its_next_child_comes() {
        // Between `a` and `b` of `{ a; b; } | c`, only the subshell holds the pipe.
        let procs = vec![proc(101, 100, TTY, pipe(1)), proc(103, 100, pipe(1), TTY)];
        let segments = discover(&Table::from_procs(procs), &[103]);
        assert_eq!(members(&segments[0]), vec![vec![101], vec![103]]);
        assert!(segments[0].stages[0].containers.is_empty());
    }

    #[test]
    fn xargs_is_the_stage_with_or_without_a_child_at_work() {
        // find | xargs -n 50 md5sum | sort: xargs's child writes sort's pipe, its input
        // is /dev/null. The stage is xargs, with the same pipes, whether a child is at
        // work or not.
        let xargs = |pid| ProcInfo {
            launcher: true,
            ..proc(pid, 100, pipe(1), pipe(2))
        };
        let with_child = vec![
            proc(101, 100, TTY, pipe(1)),
            xargs(102),
            proc(104, 102, TTY, pipe(2)),
            proc(103, 100, pipe(2), TTY),
        ];
        let alone = vec![
            proc(101, 100, TTY, pipe(1)),
            xargs(102),
            proc(103, 100, pipe(2), TTY),
        ];
        for (procs, what) in [(with_child, "a child at work"), (alone, "between children")] {
            let table = Table::from_procs(procs);
            for start in [101, 102, 103] {
                let segments = discover(&table, &[start]);
                assert_eq!(segments.len(), 1, "{what}, from {start}");
                assert_eq!(
                    members(&segments[0]),
                    vec![vec![101], vec![102], vec![103]],
                    "{what}, from {start}"
                );
                let x = &segments[0].stages[1];
                assert_eq!((x.input, x.output), (Some(1), Some(2)), "{what}");
                assert!(x.containers.is_empty(), "{what}");
            }
        }
        // GNU parallel, run through env as perl, is one by its script.
        assert!(launcher("perl", || b"perl\0/usr/bin/parallel\0-j2\0gzip".to_vec()));
        assert!(launcher("parallel", Vec::new));
        assert!(!launcher("perl", || b"perl\0script.pl\0parallel".to_vec()));
        assert!(!launcher("sh", Vec::new));
    }

    #[test]
    fn other_users_processes_fill_the_gaps_in_pid_order() {
        // a | X | b | Y where X (102) and Y (104) belong to someone else.
        let procs = vec![
            proc(100, 1, TTY, TTY),
            proc(101, 100, TTY, pipe(1)),
            proc(102, 100, End::Hidden, End::Hidden),
            proc(103, 100, pipe(2), pipe(3)),
            proc(104, 100, End::Hidden, End::Hidden),
            // An unrelated process of another user elsewhere: not a sibling.
            proc(105, 1, End::Hidden, End::Hidden),
        ];
        let table = Table::from_procs(procs);
        for start in [101, 103] {
            let segments = discover(&table, &[start]);
            assert_eq!(
                members(&segments[0]),
                vec![vec![101], vec![102], vec![103], vec![104]],
                "from {start}"
            );
            let permitted: Vec<bool> = segments[0].stages.iter().map(|s| s.permitted).collect();
            assert_eq!(permitted, vec![true, false, true, false]);
        }
        // The start process itself unreadable: an error, not a guess.
        assert_eq!(start_points(&table, 102), Err(DiscoverError::NotPermitted));
    }

    #[test]
    fn an_ended_stage_leaves_two_segments() {
        // a | (b ended) | c: a's output and c's input have no visible other end.
        let procs = vec![
            proc(100, 1, TTY, TTY),
            proc(101, 100, TTY, pipe(1)),
            proc(103, 100, pipe(2), TTY),
        ];
        let table = Table::from_procs(procs);
        let segments = discover(&table, &[101, 103]);
        assert_eq!(
            segments.len(),
            1,
            "the walk resumes at c as a readable sibling"
        );
        assert_eq!(members(&segments[0]), vec![vec![101], vec![103]]);
        // Without a common parent they stay apart, each with an open end.
        let procs = vec![proc(101, 50, TTY, pipe(1)), proc(103, 60, pipe(2), TTY)];
        let segments = discover(&Table::from_procs(procs), &[101, 103]);
        assert_eq!(segments.len(), 2);
        assert!(segments[0].open_end && segments[1].open_start);
    }

    #[test]
    fn a_cycle_of_pipes_ends_the_walk() {
        let procs = vec![
            proc(101, 100, pipe(2), pipe(1)),
            proc(102, 100, pipe(1), pipe(2)),
        ];
        let segments = discover(&Table::from_procs(procs), &[101]);
        assert_eq!(segments.len(), 1);
        assert_eq!(segments[0].stages.len(), 2);
    }
}
