//! One process of a stage, read over time.
//!
//! Owns: a member's identity (PID and start time, so a reused PID is not mistaken for it),
//! its command line, its threads, the wait states sampled of each thread between two
//! readings ([`Member::sample_states`], cheap: a `stat` and, when asleep, a `wchan` per
//! thread) and each reading ([`Member::read`]: CPU ticks, byte counters, and each thread's
//! CPU times from `schedstat`, turned into the member's time split over the interval).
//! Must not: decide anything about the stage or the pipeline (that is `watch` and
//! `classify`).

use super::classify;
use super::discover;
use super::model::{Activity, Part, Sleep, Split};
use super::timeshare::{self, Waits};
use crate::procfs::{self, Io, Proc, ProcFile, Schedstat, Stat};

/// Threads of one process read at most (a stage with thousands of threads would cost too
/// much per sample; the first ones are the main thread and those started early).
const MAX_TASKS: usize = 64;

/// Nanoseconds of CPU time per clock tick of `/proc/PID/stat`.
const NS_PER_TICK: u64 = 1_000_000_000 / procfs::TICKS_PER_SECOND;

/// One reading of a member process.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Reading {
    /// CPU time used so far, in clock ticks (every thread).
    pub ticks: u64,
    /// Its `/proc/PID/io` counters.
    pub io: Option<Io>,
    /// Its own count, if it is an rpv that tells.
    pub rpv: Option<u64>,
}

impl Reading {
    /// Bytes (in, out): the rpv's own count, or `/proc/PID/io`.
    pub(crate) fn bytes(&self) -> Option<(u64, u64)> {
        match (self.rpv, self.io) {
            (Some(b), _) => Some((b, b)),
            (None, Some(io)) => Some((io.rchar, io.wchar)),
            (None, None) => None,
        }
    }
}

/// A thread of a member.
#[derive(Debug, Clone)]
struct Task {
    tid: u32,
    /// Its CPU times at the last reading.
    sched: Option<Schedstat>,
    /// Its CPU ticks when last sampled (when `schedstat` cannot be read).
    ticks: u64,
    /// Its wait states since the last reading.
    waits: Waits,
    /// What it was doing when last sampled.
    activity: Activity,
}

impl Task {
    fn new(tid: u32) -> Task {
        Task {
            tid,
            sched: None,
            ticks: 0,
            waits: Waits::default(),
            activity: Activity::Running,
        }
    }
}

/// The pipes of the stage a member belongs to (to settle a sleep in `poll`).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Pipes {
    /// The pipe on standard input, by inode.
    pub input: Option<u64>,
    /// The pipe on standard output, by inode.
    pub output: Option<u64>,
}

/// A process of a stage.
#[derive(Debug)]
pub(crate) struct Member {
    /// Its PID.
    pub pid: u32,
    /// Its start time (`stat` field 22).
    pub start: u64,
    /// Its session.
    pub session: u32,
    /// Its name in `stat` when `command` was read.
    comm: String,
    /// Its command line, for display.
    pub command: String,
    /// It had no command line when `command` was read, which a process in the midst of an
    /// `exec` has for a moment (its new name, not yet its arguments): read again at each
    /// reading until it has one.
    unnamed: bool,
    /// The threads read, listed when the process had `threads` of them.
    tasks: Vec<Task>,
    threads: u32,
    /// The thread that speaks for the process (index in `tasks`).
    lead: usize,
    /// When its threads' CPU times were last read (monotonic nanoseconds).
    clock_ns: Option<u64>,
    /// What it was doing when last sampled.
    pub activity: Activity,
    /// The last reading; `None` before the first one and once it has ended.
    pub last: Option<Reading>,
    /// The last count an rpv member gave over its control channel.
    pub last_rpv: Option<u64>,
    /// Started after the stage was first seen: everything it counted is recent.
    pub fresh: bool,
    /// Bytes moved in the last sample (for choosing which member to show).
    pub moved: u64,
    /// CPU ticks used in the last sample.
    pub used: u64,
    /// For a shell that is a stage of its own (a loop), its children, whose time and
    /// bytes count as its own.
    pub kids: Option<Kids>,
    /// The socket (by inode) it was last seen blocked on, or for a member of a stage
    /// writing no pipe, its first socket ([`Member::find_socket`]).
    pub socket: Option<u64>,
    /// That socket's bytes (sent and received) at the last reading, by inode.
    sent: Option<(u64, u64)>,
    /// The first socket among its first descriptors, and when that was looked for (for a
    /// process in `poll` that its pipes do not explain: ssh, nc).
    sockets: Option<(u64, Option<u64>)>,
}

/// Descriptors looked at for a socket when a process waits in `poll`.
const SOCKET_FDS: u32 = 16;
/// How often they are looked at again, in nanoseconds.
const SOCKETS_EVERY_NS: u64 = 1_000_000_000;

/// The children of a shell that is a stage (a loop, `… | while read l; do …; done`): each
/// lives a moment, so they are not members; their CPU time (the shell's `cutime` once it
/// has waited for them, their own while they run), their bytes (likewise: a process's
/// `io` counts its children once it has waited for them), their run delay and their
/// sampled wait states stand for the shell's time waiting for them.
#[derive(Debug, Default)]
pub(crate) struct Kids {
    /// The children's CPU ticks and bytes so far, never going back (a child between its
    /// exit and its reaping is briefly in neither count).
    ticks: u64,
    io: Io,
    /// CPU ticks of the children since the last reading (to split the shell's time).
    run_ticks: u64,
    /// Run delay of the children since the last reading, in nanoseconds, and each live
    /// child's delay when last read.
    delay_ns: u64,
    delays: Vec<(u32, u64)>,
    /// The children's states sampled while the shell waited for them.
    waits: Waits,
    /// Distinct programs the children ran, in the order first seen (at most
    /// three).
    pub programs: Vec<String>,
    /// Children seen so far.
    pub seen: u64,
    /// The children listed at the last look (to tell new ones).
    listed: Vec<u32>,
    /// The process is a launcher (xargs, GNU parallel): the stage keeps its command line
    /// for a name, and is no shell loop.
    pub launcher: bool,
}

/// Programs a loop is named by, at most.
const LOOP_NAMES: usize = 3;

impl Kids {
    /// Looks at the children of `shell` at `now_ns`: their states (when the shell waits for
    /// them), run delays and programs. Returns their CPU ticks and bytes so far, counting
    /// reaped ones through the shell's own figures `reaped` (its `cutime + cstime`).
    fn look(
        &mut self,
        proc: &mut dyn Proc,
        shell: u32,
        shell_comm: &str,
        waiting: bool,
        now_ns: u64,
    ) -> (u64, Io, Option<Activity>) {
        let pids = proc
            .read(shell, ProcFile::Children(shell), false)
            .map(|t| procfs::parse_pids(&text(&t)))
            .unwrap_or_default();
        let mut ticks = 0;
        let mut io = Io::default();
        let mut states = Vec::with_capacity(pids.len());
        let mut delays = Vec::with_capacity(pids.len());
        for &pid in &pids {
            let Some(stat) = proc.stat(pid) else {
                continue;
            };
            ticks += stat.cpu_ticks + stat.child_ticks;
            if let Some(kid_io) = proc
                .read(pid, ProcFile::Io, false)
                .ok()
                .and_then(|t| Io::parse(&text(&t)))
            {
                io.rchar += kid_io.rchar;
                io.wchar += kid_io.wchar;
            }
            if let Some(sched) = proc
                .read(pid, ProcFile::TaskSchedstat(pid), false)
                .ok()
                .and_then(|t| Schedstat::parse(&text(&t)))
            {
                let before = self
                    .delays
                    .iter()
                    .find(|(p, _)| *p == pid)
                    .map_or(0, |(_, d)| *d);
                self.delay_ns += sched.delay_ns.saturating_sub(before);
                delays.push((pid, sched.delay_ns));
            }
            if waiting {
                let wchan = if stat.state == 'S' {
                    proc.read(pid, ProcFile::Wchan, false).unwrap_or_default()
                } else {
                    Vec::new()
                };
                states.push((
                    classify::task_activity(stat.state, &text(&wchan)),
                    stat.cpu_ticks,
                ));
            }
            // A child not yet past its exec still has the shell's name; one that has
            // ended has no command line left to name it by.
            let named = stat.comm != shell_comm && !matches!(stat.state, 'Z' | 'X');
            if named && !self.listed.contains(&pid) {
                // (No command line: it ended meanwhile; it is not named by its `[comm]`.)
                let command = proc
                    .read(pid, ProcFile::Cmdline, false)
                    .ok()
                    .and_then(|c| procfs::command_text(&c));
                if let Some(command) = command {
                    self.listed.push(pid);
                    self.seen += 1;
                    let program = command.split(' ').next().unwrap_or_default().to_string();
                    if self.programs.len() < LOOP_NAMES
                        && !program.is_empty()
                        && !self.programs.contains(&program)
                    {
                        self.programs.push(program);
                    }
                }
            }
        }
        self.listed.retain(|p| pids.contains(p));
        self.delays = delays;
        let activity = match states.as_slice() {
            [] => None,
            [(one, _)] => Some(*one),
            _ => Some(classify::process_activity(&states)),
        };
        if let Some(activity) = activity {
            self.waits.sample(activity, now_ns);
        }
        (ticks, io, activity)
    }

    /// The stage's figures so far, with `live` (the children still running) and the
    /// shell's `reaped` ticks and `io` (which include the children it has waited for):
    /// never less than before. What it read is what the shell itself read, `own_reads`
    /// (its thread's count, without its children's): its pipe. Its children read files
    /// (a program's own modules, the files a loop or xargs names), never counted as its
    /// input.
    fn total(
        &mut self,
        live: (u64, Io),
        reaped_ticks: u64,
        shell_io: Option<Io>,
        own_reads: Option<u64>,
    ) -> (u64, Io) {
        let ticks = (live.0 + reaped_ticks).max(self.ticks);
        self.run_ticks += ticks - self.ticks;
        self.ticks = ticks;
        if let Some(own) = shell_io {
            self.io.wchar = (own.wchar + live.1.wchar).max(self.io.wchar);
        }
        if let Some(own) = own_reads {
            self.io.rchar = own.max(self.io.rchar);
        }
        (self.ticks, self.io)
    }

    /// The shell's time `shell` over an interval, its waits for its children replaced by
    /// theirs: their CPU time, their run delay, and the rest as their states were sampled.
    fn fold(&mut self, shell: Split) -> Split {
        let child = shell.get(Part::Child);
        let run = (self.run_ticks * NS_PER_TICK) as f64;
        let delay = self.delay_ns as f64;
        self.run_ticks = 0;
        self.delay_ns = 0;
        let run = run.min(child);
        let delay = delay.min(child - run);
        let kids = self.waits.split(run as u64, delay as u64, child as u64);
        let mut out = shell;
        out.add(Part::Child, -child);
        out.plus(&kids);
        out
    }

    /// A launcher's children (see [`discover::launcher`]).
    fn of_launcher() -> Kids {
        Kids {
            launcher: true,
            ..Kids::default()
        }
    }

    /// The name of a loop run by a shell named `comm`: the programs its children ran.
    pub(crate) fn name(&self, comm: &str) -> String {
        if self.programs.is_empty() {
            format!("(loop) {}", crate::display::printable(comm))
        } else {
            format!("(loop) {}", self.programs.join(", "))
        }
    }
}

/// The text of a `/proc` file, borrowed when it is UTF-8 (always, but for a process name).
fn text(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(bytes)
}

/// The command line of `pid` for display, or `[comm]` if it has none (a process may set
/// its name to anything, so it is escaped like the command line).
pub(crate) fn command_of(proc: &mut dyn Proc, pid: u32, comm: &str) -> String {
    command_line(proc, pid).unwrap_or_else(|| unnamed(comm))
}

/// The command line of `pid` for display, if it has one.
fn command_line(proc: &mut dyn Proc, pid: u32) -> Option<String> {
    proc.read(pid, ProcFile::Cmdline, false)
        .ok()
        .and_then(|c| procfs::command_text(&c))
}

/// The byte counters in `file` of `pid` (`io`, or a thread's).
fn read_io(proc: &mut dyn Proc, pid: u32, file: ProcFile) -> Option<Io> {
    proc.read(pid, file, true)
        .ok()
        .and_then(|t| Io::parse(&text(&t)))
}

/// True if `pid`, named `comm`, is a launcher (xargs, GNU parallel).
fn is_launcher(proc: &mut dyn Proc, pid: u32, comm: &str) -> bool {
    discover::launcher(comm, || {
        proc.read(pid, ProcFile::Cmdline, false).unwrap_or_default()
    })
}

/// What a process without a command line is called.
fn unnamed(comm: &str) -> String {
    format!("[{}]", crate::display::printable(comm))
}

impl Member {
    /// Its name in `stat` at its last reading.
    pub(crate) fn comm(&self) -> &str {
        &self.comm
    }

    /// A member found by a scan: `pid` started at `start`, named `comm`.
    pub(crate) fn new(
        proc: &mut dyn Proc,
        pid: u32,
        start: u64,
        session: u32,
        comm: String,
        fresh: bool,
    ) -> Member {
        let line = command_line(proc, pid);
        let launcher = is_launcher(proc, pid, &comm);
        Member {
            pid,
            start,
            session,
            unnamed: line.is_none(),
            command: line.unwrap_or_else(|| unnamed(&comm)),
            comm,
            tasks: Vec::new(),
            threads: 0,
            lead: 0,
            clock_ns: None,
            activity: Activity::Running,
            last: None,
            last_rpv: None,
            fresh,
            moved: 0,
            used: 0,
            kids: launcher.then(Kids::of_launcher),
            socket: None,
            sent: None,
            sockets: None,
        }
    }

    /// The socket thread `tid` is blocked on, if it is: the descriptor of the read or
    /// write it is blocked in (`syscall`), or for a wait in `poll` (`polling`) the
    /// process's first socket.
    fn blocked_socket(
        &mut self,
        proc: &mut dyn Proc,
        tid: u32,
        polling: bool,
        now_ns: u64,
    ) -> Option<u64> {
        let call = proc
            .read(self.pid, ProcFile::TaskSyscall(tid), false)
            .ok()?;
        if let Some(fd) = procfs::blocked_fd(&text(&call)) {
            return procfs::socket_inode(&proc.fd_link(self.pid, fd).ok()?);
        }
        if !polling {
            return None;
        }
        self.first_socket(proc, now_ns)
    }

    /// The first socket among its first descriptors, looked for again at most every
    /// [`SOCKETS_EVERY_NS`].
    fn first_socket(&mut self, proc: &mut dyn Proc, now_ns: u64) -> Option<u64> {
        let stale = self
            .sockets
            .is_none_or(|(at, _)| now_ns >= at + SOCKETS_EVERY_NS);
        if stale {
            // (The open ones only: most of the first descriptors of a stage are closed.)
            let open = proc.fd_numbers(self.pid).unwrap_or_default();
            let found = (open.into_iter().take_while(|&fd| fd < SOCKET_FDS)).find_map(|fd| {
                proc.fd_link(self.pid, fd)
                    .ok()
                    .and_then(|l| procfs::socket_inode(&l))
            });
            self.sockets = Some((now_ns, found));
        }
        self.sockets.and_then(|(_, s)| s)
    }

    /// For a member of a stage writing no pipe: its socket, whatever it is doing, so that
    /// what a sender sends is counted from the first sample on, not only once it is seen
    /// waiting on its socket (a sender the network keeps up with may never be).
    pub(crate) fn find_socket(&mut self, proc: &mut dyn Proc, now_ns: u64) {
        if self.socket.is_none() {
            self.socket = self.first_socket(proc, now_ns);
        }
    }

    /// This member is a shell doing a stage's work with short-lived children (a loop):
    /// from now on their time and bytes count as its own, and its row is named after them.
    pub(crate) fn take_children(&mut self) {
        self.kids = Some(Kids::default());
        self.last = None;
        self.clock_ns = None;
        for task in &mut self.tasks {
            task.sched = None;
        }
    }

    /// What the socket it was last seen blocked on moved since the last call, from `tcp`
    /// (every TCP socket's bytes by inode, `sock_diag`): a sender's writes that
    /// `/proc/PID/io` does not count (`send`). `None` without such a socket; 0 at the first
    /// look at one.
    pub(crate) fn socket_moved(
        &mut self,
        tcp: &std::collections::HashMap<u64, u64>,
    ) -> Option<u64> {
        let inode = self.socket?;
        let bytes = *tcp.get(&inode)?;
        let moved = match self.sent {
            Some((was, before)) if was == inode => bytes.saturating_sub(before),
            _ => 0,
        };
        self.sent = Some((inode, bytes));
        Some(moved)
    }

    /// True if it is a launcher (xargs, GNU parallel) whose children are its work.
    pub(crate) fn launcher(&self) -> bool {
        self.kids.as_ref().is_some_and(|k| k.launcher)
    }

    /// Threads sampled (at least one).
    pub(crate) fn task_count(&self) -> usize {
        self.tasks.len().max(1)
    }

    /// The files holding a thread's state and wait channel: the process's own for a
    /// single-threaded process (one file fewer to keep open), the thread's otherwise.
    fn state_files(&self, tid: u32) -> (ProcFile, ProcFile) {
        if self.threads <= 1 && tid == self.pid {
            (ProcFile::Stat, ProcFile::Wchan)
        } else {
            (ProcFile::TaskStat(tid), ProcFile::TaskWchan(tid))
        }
    }

    /// Lists the threads again when their number changed (keeping what is known of those
    /// that stay): true if it did.
    fn refresh_tasks(&mut self, proc: &mut dyn Proc, threads: u32) -> bool {
        if !self.tasks.is_empty() && self.threads == threads {
            return false;
        }
        let tids = if threads <= 1 {
            vec![self.pid]
        } else {
            let mut tids = proc.tasks(self.pid).unwrap_or_default();
            // An rpv's control threads answer queries on a Unix socket: never the stage's
            // work (a watch inside a short transfer would otherwise read its own stage as
            // waiting on the network once the data thread is done).
            tids.retain(|&tid| {
                !proc
                    .read(self.pid, ProcFile::TaskStat(tid), false)
                    .ok()
                    .and_then(|t| Stat::parse(&text(&t)))
                    .is_some_and(|s| s.comm.starts_with("rpv-control"))
            });
            tids.truncate(MAX_TASKS);
            tids
        };
        let lead = self.tasks.get(self.lead).map(|t| t.tid);
        let mut old = std::mem::take(&mut self.tasks);
        self.tasks = tids
            .into_iter()
            .map(|tid| match old.iter().position(|t| t.tid == tid) {
                Some(i) => old.swap_remove(i),
                None => Task::new(tid),
            })
            .collect();
        self.lead = lead
            .and_then(|l| self.tasks.iter().position(|t| t.tid == l))
            .unwrap_or(0);
        self.threads = threads;
        true
    }

    /// Samples what each thread is doing at `now_ns` (between readings, several times per
    /// interval). A sleep in `poll` of the thread speaking for the process is settled with
    /// the fill of its pipes.
    pub(crate) fn sample_states(&mut self, proc: &mut dyn Proc, pipes: Pipes, now_ns: u64) {
        self.sample_states_with(proc, pipes, now_ns, None);
    }

    /// [`Member::sample_states`], with the process's `stat` when it was just read (a
    /// single-threaded process's state is in it: one read fewer).
    fn sample_states_with(
        &mut self,
        proc: &mut dyn Proc,
        pipes: Pipes,
        now_ns: u64,
        known: Option<&Stat>,
    ) {
        let mut lost = false;
        for i in 0..self.tasks.len() {
            let tid = self.tasks[i].tid;
            let (stat_file, wchan_file) = self.state_files(tid);
            let (activity, ticks) = match known {
                Some(stat) if stat_file == ProcFile::Stat => {
                    let wchan = if stat.state == 'S' {
                        proc.read(self.pid, wchan_file, true).unwrap_or_default()
                    } else {
                        Vec::new()
                    };
                    (
                        classify::task_activity(stat.state, &text(&wchan)),
                        Some(stat.cpu_ticks),
                    )
                }
                _ => match self.state_of(proc, stat_file, wchan_file) {
                    Some(found) => found,
                    None => {
                        lost = true;
                        continue;
                    }
                },
            };
            let mut activity = activity;
            if activity == Activity::Sleeping(Sleep::Poll) && i == self.lead {
                let input = pipes.input.and_then(|p| proc.pipe_fill(p, self.pid, 0));
                let output = pipes.output.and_then(|p| proc.pipe_fill(p, self.pid, 1));
                activity = classify::resolve(activity, input, output);
            }
            // A sleep its pipes do not explain, on a socket: the network (`wait_woken`
            // and `poll` say nothing of what they wait for; the blocked call does).
            if i == self.lead
                && matches!(
                    activity,
                    Activity::Sleeping(Sleep::Other | Sleep::Network | Sleep::Poll)
                )
            {
                let polling = activity == Activity::Sleeping(Sleep::Poll);
                if let Some(inode) = self.blocked_socket(proc, tid, polling, now_ns) {
                    activity = Activity::Sleeping(Sleep::Network);
                    self.socket = Some(inode);
                }
            }
            let task = &mut self.tasks[i];
            task.waits.sample(activity, now_ns);
            task.activity = activity;
            if let Some(ticks) = ticks {
                task.ticks = ticks;
            }
        }
        if lost {
            // A thread ended: list them again at the next reading.
            self.threads = 0;
        }
        let tasks: Vec<(Activity, u64)> = self
            .tasks
            .iter()
            .map(|t| (t.activity, t.sched.map_or(t.ticks, |s| s.run_ns)))
            .collect();
        self.activity = match tasks.as_slice() {
            [] => Activity::Running,
            [(one, _)] => *one,
            _ => classify::process_activity(&tasks),
        };
        if let Some(kids) = &mut self.kids {
            // While the shell waits for a child, the stage does what the child does.
            let waiting = self.activity == Activity::WaitChild;
            if let (_, _, Some(activity)) = kids.look(proc, self.pid, &self.comm, waiting, now_ns) {
                self.activity = activity;
            }
        }
    }

    /// What a thread is doing, and its CPU ticks when its `stat` was read; `None` if it is
    /// gone. The wait channel comes first: a wait it names (a pipe, `poll`, a timer, a
    /// socket, a child) is an interruptible sleep, and none (`0`) is a thread on a CPU or
    /// about to be, so the costlier `stat` is read only for the rest (the disk, a stop, an
    /// exit, a wait it does not name).
    fn state_of(
        &self,
        proc: &mut dyn Proc,
        stat_file: ProcFile,
        wchan_file: ProcFile,
    ) -> Option<(Activity, Option<u64>)> {
        let wchan = proc.read(self.pid, wchan_file, true).ok()?;
        let named = classify::task_activity('S', &text(&wchan));
        if !matches!(named, Activity::Sleeping(Sleep::Other)) {
            return Some((named, None));
        }
        let stat = Stat::parse(&text(&proc.read(self.pid, stat_file, true).ok()?))?;
        let wchan = if stat.state == 'S' { wchan } else { Vec::new() };
        Some((
            classify::task_activity(stat.state, &text(&wchan)),
            Some(stat.cpu_ticks),
        ))
    }

    /// Reads the member at `now_ns`: its counters, and its time over the interval since the
    /// last reading (`None` at the first). `None` once it has ended (or its PID belongs to
    /// another process now). Another user's process (`permitted` false) gives its CPU times
    /// only. With `states` false the threads' states are not sampled again (a tick just
    /// did).
    pub(crate) fn read(
        &mut self,
        proc: &mut dyn Proc,
        permitted: bool,
        pipes: Pipes,
        now_ns: u64,
        states: bool,
    ) -> Option<(Reading, Option<Split>)> {
        let stat = Stat::parse(&text(&proc.read(self.pid, ProcFile::Stat, true).ok()?))?;
        if stat.start != self.start || matches!(stat.state, 'Z' | 'X') {
            return None;
        }
        if stat.comm != self.comm || self.unnamed {
            // It has run a new program since it was found (a shell's child, found between
            // its fork and its exec), or was found in the midst of an exec.
            let line = command_line(proc, self.pid);
            self.unnamed = line.is_none();
            self.command = line.unwrap_or_else(|| unnamed(&stat.comm));
            self.comm = stat.comm.clone();
            if self.kids.is_none() && is_launcher(proc, self.pid, &self.comm) {
                // (Its figures start again from here: this reading is a first one.)
                self.take_children();
                if let Some(kids) = &mut self.kids {
                    kids.launcher = true;
                }
            }
        }
        let listed = self.refresh_tasks(proc, stat.threads);
        let reading = if permitted {
            if states || listed {
                self.sample_states_with(proc, pipes, now_ns, Some(&stat));
            } else if let [task] = self.tasks.as_mut_slice() {
                task.ticks = stat.cpu_ticks;
            }
            if self.kids.is_some() {
                self.kids_reading(proc, &stat, now_ns)
            } else {
                // A single-threaded process's own counts (its thread's), without those of
                // the children it has waited for (a shell's: their files are no traffic
                // of its pipes); a multi-threaded one's, every thread's.
                let file = if self.threads <= 1 {
                    ProcFile::TaskIo(self.pid)
                } else {
                    ProcFile::Io
                };
                Reading {
                    ticks: stat.cpu_ticks,
                    io: read_io(proc, self.pid, file),
                    rpv: proc.rpv_bytes(self.pid),
                }
            }
        } else {
            self.activity = Activity::Unknown;
            if let [task] = self.tasks.as_mut_slice() {
                task.ticks = stat.cpu_ticks;
            }
            Reading {
                ticks: stat.cpu_ticks,
                io: None,
                rpv: None,
            }
        };
        Some((reading, self.clock(proc, now_ns)))
    }

    /// The reading of a loop's shell or a launcher, its children's figures its own.
    fn kids_reading(&mut self, proc: &mut dyn Proc, stat: &Stat, now_ns: u64) -> Reading {
        let io = read_io(proc, self.pid, ProcFile::Io);
        let own = read_io(proc, self.pid, ProcFile::TaskIo(self.pid)).map(|io| io.rchar);
        let Some(kids) = &mut self.kids else {
            return Reading {
                ticks: stat.cpu_ticks,
                io,
                rpv: None,
            };
        };
        // (The states were just sampled, children's too; without them, a look at the
        // children for their figures.)
        let (ticks, kid_io, _) = kids.look(proc, self.pid, &self.comm, false, now_ns);
        let (ticks, io) = kids.total((ticks, kid_io), stat.child_ticks, io, own);
        if !kids.launcher {
            self.command = kids.name(&self.comm);
        }
        Reading {
            ticks: stat.cpu_ticks + ticks,
            io: Some(io),
            rpv: None,
        }
    }

    /// Reads every thread's CPU times and returns the time of the thread speaking for the
    /// process since the last call.
    fn clock(&mut self, proc: &mut dyn Proc, now_ns: u64) -> Option<Split> {
        let elapsed = self.clock_ns.map(|t| now_ns.saturating_sub(t));
        self.clock_ns = Some(now_ns);
        let mut splits = Vec::with_capacity(self.tasks.len());
        for task in &mut self.tasks {
            let read = proc
                .read(self.pid, ProcFile::TaskSchedstat(task.tid), true)
                .ok()
                .and_then(|t| Schedstat::parse(&text(&t)));
            // Without scheduler statistics (a kernel built without them reads zeros, or
            // the file is missing), the CPU ticks: coarser, and no waiting for a CPU.
            let sched = match read {
                Some(s) if s.run_ns > 0 || task.ticks == 0 => s,
                _ => Schedstat {
                    run_ns: task.ticks.saturating_mul(NS_PER_TICK),
                    delay_ns: 0,
                },
            };
            let split = match (task.sched, elapsed) {
                (Some(before), Some(elapsed)) => task.waits.split(
                    sched.run_ns.saturating_sub(before.run_ns),
                    sched.delay_ns.saturating_sub(before.delay_ns),
                    elapsed,
                ),
                _ => {
                    // The first reading of this thread: only a starting point.
                    let _ = task.waits.split(0, 0, 0);
                    Split::default()
                }
            };
            task.sched = Some(sched);
            splits.push(split);
        }
        let lead = timeshare::lead(&splits)?;
        self.lead = lead;
        let mut split = splits[lead];
        if let Some(kids) = &mut self.kids {
            split = kids.fold(split);
        }
        (split.total() > 0.0).then_some(split)
    }
}
