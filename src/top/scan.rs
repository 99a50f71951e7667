//! Finding and following flows in `/proc`.
//!
//! Owns: the process table of the last scan (one `io` read per process per scan, a quiet
//! one about every 4 s, every 8 s after half a minute; `/proc` listed again only when a
//! process has started; `stat` and the command line at its walks, three walks in four of a
//! steady one only listing its descriptors' numbers; kernel threads recognised once and
//! skipped after), the
//! descriptors of processes that moved, and the
//! flows built from them: file and device flows (`files`), socket flows and rpv and pv
//! instances (`counts`), pipelines (`pipes`, through the pipeline view's `Watcher`, which
//! names the bottleneck; `sweep`: the look at every process they share within a scan).
//! It reads `/proc` only through the `procfs::Proc` boundary (the real one, or a test's
//! table). Must not: draw or sleep.
//!
//! A flow shows once it has moved. It ends when its process exits or closes the file, or
//! after [`IDLE_DROP_NS`] without moving; then it appears once more, ended, and is gone.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::io;
use std::rc::Rc;

use counts::CountFlow;
use files::FileFlow;
use pipes::{pipe_flow, PipeFlow};
use sweep::Sweep;

use super::{Flow, Hidden, Kind};
use crate::procfs::{command_text, parse_pids, pipe_inode, FdKind, Io, Proc, ProcFile, Stat};

mod counts;
mod files;
mod pipes;
mod sweep;
#[cfg(test)]
mod tests;

/// A flow that has not moved for this long leaves the list (nanoseconds).
pub const IDLE_DROP_NS: u64 = 60_000_000_000;
/// How often at most the pipelines' wait states are sampled between two looks: twice a
/// second (the pipeline view samples up to 50 times; a list of flows needs each
/// pipeline's bottleneck, not each stage's time to the percent, and each sample is a
/// `stat` and a `wchan` per thread of every stage).
const TICKS_PER_SECOND: u64 = 2;
/// A process whose counters did not move for this many scans in a row is looked at only
/// about every [`QUIET_LOOK_S`] seconds (by turns, so each scan reads a share of them):
/// most processes sleep, and reading their counters is most of a scan's cost. One that
/// starts moving is found within that time (a new process at once).
const QUIET_SCANS: u32 = 5;
const QUIET_LOOK_S: f64 = 4.0;
/// A process still quiet after this many more looks (about half a minute) is looked at
/// half as often again, about every 8 s: most processes of a machine sleep for hours, and
/// one that starts moving keeps its bytes in its counters until it is found (its row shows
/// them all).
const LONG_QUIET_LOOKS: u32 = 7;
/// Least time between two walks of one process's descriptors, once it has been walked
/// (nanoseconds): a process that keeps moving opens new files rarely, and one walk costs a
/// `readlink` per descriptor.
const WALK_EVERY_NS: u64 = 2_000_000_000;
/// Of the walks of a process whose descriptors stay the same, one in this many reads them
/// all; the others only list their numbers (no `readlink` each, no command line): the same
/// numbers, nothing new. (A file a followed descriptor's number now holds ends its flow and
/// walks the process in full at once: see `files`.)
const FULL_WALK_EVERY: u32 = 4;
/// A process whose walks found nothing to follow (a shell's child, `nice`, `taskset`, `env`
/// before the program they run) is walked again at once when it moves, for this many
/// walks in a row of each program it runs (an `exec` starts the count again): each program
/// of a chain of wrappers moves the counters once, with its loader's reads, and a copy
/// moves none once it has started.
const EMPTY_WALKS_AT_ONCE: u8 = 4;
/// A process walked since its counters last moved, which have not moved again for up to
/// this long (seconds), has its descriptors' numbers listed at every scan, and is walked
/// when they change: a program starved of CPU on a busy machine (a copy started
/// at nice 15) can open its files seconds after its loader's last read, and a copy inside
/// the kernel moves no counter once it has started.
const AWAIT_FILES_S: f64 = 4.0;
/// An unreadable process is tried again every this many scans.
const UNREADABLE_RETRY: u64 = 16;
/// Descriptors looked at per process at most (a process with more is followed through
/// its first ones only).
const MAX_FDS: usize = 4096;

/// What a descriptor is open on.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    /// A regular file or block device.
    File {
        dev: u64,
        ino: u64,
        /// A block device (its size from `/sys/dev/block`).
        device: bool,
        path: String,
    },
    Pipe(u64),
    /// A socket, by inode.
    Socket(u64),
    Other,
}

/// One descriptor of a process, as the last walk found it.
#[derive(Debug, Clone)]
struct Fd {
    fd: i32,
    link: String,
    target: Target,
}

/// How rpv or pv figures are read.
enum Instance {
    /// An rpv, asked over its control channel (the one client, `control::client::RpvLink`,
    /// behind `Proc::rpv_figures`): a transfer shows with its own figures, in its unit.
    Rpv,
    /// pv.
    Pv,
    /// An rpv that only watches (`--top`, `-d`, `-Q`, `--pipeline=PID`): not a flow.
    Watching,
}

/// One process of the table.
struct Process {
    start: u64,
    /// Its `io` may not be read.
    unreadable: bool,
    other_user: bool,
    kernel: bool,
    io: Io,
    /// The larger of bytes read and written, summed over the scans since it was first
    /// seen.
    moved: u64,
    /// Bytes its TCP sockets sent and received since it was first seen (`send` and
    /// `recv` do not show in `/proc/PID/io`).
    tcp: u64,
    fds: Vec<Fd>,
    /// Its name (`stat`), as last read.
    comm: String,
    /// Of an interpreter, the scripts its command line named at the walks of its
    /// descriptors (read just before and just after each, so a script it `exec`s between
    /// two walks, as a chain of wrapper scripts does, is known with the descriptor it
    /// keeps it open on).
    scripts: Vec<String>,
    command: Option<String>,
    instance: Option<Instance>,
    /// An rpv that said it counts lines (`-l`, `-0`).
    lines: bool,
    /// The scan that last saw it.
    seen: u64,
    /// When its descriptors were last walked (monotonic ns).
    walked_ns: Option<u64>,
    /// The scan that last walked its descriptors.
    walked: u64,
    /// Scans in a row its counters did not move.
    quiet: u32,
    /// It moved since its descriptors were last walked.
    walk_owed: bool,
    /// It opened or closed a descriptor while it awaited its files (see
    /// [`Process::awaits_files`]): it is walked at the next scan, however recent its last
    /// walk.
    opened: bool,
    /// It has been walked again since its first walk.
    rewalked: bool,
    /// Walks in a row that found nothing to follow (see [`EMPTY_WALKS_AT_ONCE`]).
    empty_walks: u8,
    /// First seen after the first scan: it started while rpv ran (see
    /// [`Process::awaits_files`]).
    late: bool,
    /// Its last walk found the descriptors the one before had found: it is walked half as
    /// often (a reader of one file for an hour opens nothing new).
    steady: bool,
    /// Walks in a row that only listed its descriptors' numbers (see [`FULL_WALK_EVERY`]).
    light_walks: u32,
    /// It moved since its command line was read: it may run another program now.
    command_stale: bool,
    /// An rpv or a pv by its name, found in the midst of its `exec` (no command line yet):
    /// what it is gets decided when it moves.
    unsure: bool,
}

/// What one scan cost (for `rpv-bench top --cost` and the tests).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cost {
    /// Processes listed.
    pub processes: usize,
    /// Processes whose descriptors were walked.
    pub walked: usize,
    /// Of those, the walks that only listed the descriptors' numbers.
    pub light: usize,
    /// `fdinfo` files read.
    pub fdinfo: usize,
    /// `io` files kept open (read again with one `pread` each).
    pub kept: usize,
    /// Processes looked at with the pipeline view's discovery (a walk of every process).
    pub pipelines_tried: usize,
    /// Whether `/proc` was listed (not when no process had started since the last
    /// listing).
    pub listed: bool,
}

/// Makes the `/proc` reader of each pipeline followed.
pub(crate) type MakeProc = Box<dyn FnMut() -> Box<dyn Proc>>;
/// Reads every TCP socket's bytes, by inode (see [`crate::sys::tcp_bytes`]); `Ok(false)`
/// when it did not, no socket having moved since the last read (see [`gated`]).
pub(crate) type TcpBytes = Box<dyn FnMut(&mut HashMap<u64, u64>) -> io::Result<bool>>;

/// True if `numbers` are the numbers of `fds` (those of a walk: the first [`MAX_FDS`]).
fn same_numbers(numbers: &[u32], fds: &[Fd]) -> bool {
    numbers.len().min(MAX_FDS) == fds.len()
        && (numbers.iter().zip(fds)).all(|(&n, f)| i64::from(n) == i64::from(f.fd))
}

/// True if none of `fds` is a file or a socket: nothing a flow could be made of.
fn follows_nothing(fds: &[Fd]) -> bool {
    !fds.iter()
        .any(|f| matches!(f.target, Target::File { .. } | Target::Socket(_)))
}

/// The TCP sockets' bytes read by `bytes` only when the namespace's TCP segments
/// (`segments`, see [`crate::procfs::tcp_segments_of`]) moved since the last read, or cannot be
/// told: an idle machine's TCP table is not dumped at every scan.
fn gated(
    mut segments: impl FnMut() -> Option<u64> + 'static,
    mut bytes: impl FnMut(&mut HashMap<u64, u64>) -> io::Result<()> + 'static,
) -> TcpBytes {
    let mut last = None;
    Box::new(move |out| {
        let now = segments();
        if now.is_some() && now == last {
            return Ok(false);
        }
        bytes(out)?;
        last = now;
        Ok(true)
    })
}

/// A map by PID: looked up for every process at every scan, so hashed with one
/// multiplication (as the compiler's own `FxHash`) instead of the default SipHash, which
/// guards against keys an adversary chooses (the kernel chooses PIDs).
type PidMap<V> = HashMap<u32, V, std::hash::BuildHasherDefault<PidHasher>>;

#[derive(Default)]
struct PidHasher(u64);

impl std::hash::Hasher for PidHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

/// Finds and follows the flows.
pub struct Scanner {
    procs: PidMap<Process>,
    files: Vec<FileFlow>,
    /// File flows that ended at this scan (shown once more).
    files_ended: Vec<FileFlow>,
    counts: HashMap<u32, CountFlow>,
    pipes: Vec<PipeFlow>,
    /// Processes not in a pipeline, by (PID, start), until when not to look again.
    not_pipeline: HashMap<(u32, u64), u64>,
    /// Flows that ended at the last scan (shown once more).
    ended: Vec<Flow>,
    /// The commands of the processes of the flows shown last.
    commands: HashMap<u32, String>,
    /// Every TCP socket's bytes at the last scan, by inode.
    tcp_last: HashMap<u64, u64>,
    /// Sockets no process rpv may read holds.
    tcp_unknown: HashSet<u64>,
    /// Sockets the processes holding TCP sockets were walked for, in vain.
    tcp_sought: HashSet<u64>,
    next_full_walk_ns: u64,
    next_holders_walk_ns: u64,
    next_id: u64,
    generation: u64,
    own: u32,
    euid: u32,
    /// A process not to show (the view Enter opened).
    exclude: Option<u32>,
    /// `--top=PID`: only that process and its descendants are looked at.
    root: Option<u32>,
    /// The root process was not found at the last scan.
    root_gone: bool,
    interval: f64,
    hidden: Hidden,
    cost: Cost,
    /// The `/proc` it reads.
    proc: Box<dyn Proc>,
    /// The `/proc` of each pipeline it follows.
    watchers: MakeProc,
    /// The TCP sockets' counts.
    tcp: TcpBytes,
    /// Whether the run is ending (SIGINT, SIGTERM...): a scan stops between two processes,
    /// so the run ends within one read of `/proc` whatever the machine runs.
    stop: Box<dyn Fn() -> bool>,
    /// The PIDs of a scan and a file's text (kept from scan to scan: no allocation per
    /// process).
    pids: Vec<u32>,
    buf: Vec<u8>,
    /// The processes of the last listing of `/proc` still there, and the last PID given
    /// out before it (see [`Proc::last_pid`]).
    listed: Vec<u32>,
    last_pid: Option<u32>,
    /// What the pipelines read of every process during a scan (read once for all).
    sweep: Rc<RefCell<Sweep>>,
}

impl Scanner {
    /// A scanner of the real `/proc`, showing processes other than rpv itself; `interval`
    /// is the display interval in seconds (the pipeline view averages over it).
    pub fn new(interval: f64) -> Scanner {
        Scanner::with_proc(
            // The real reader, with other rpvs' figures over their control channels.
            Box::new(crate::control::client::sys_proc()),
            Box::new(|| Box::new(crate::control::client::sys_proc())),
            gated(crate::procfs::tcp_segments, crate::sys::tcp_bytes),
            interval,
        )
    }

    /// A scanner of `proc` (the real `/proc`, or a test's table), whose pipelines read
    /// `watchers()` and the TCP sockets' counts `tcp`.
    pub(crate) fn with_proc(
        proc: Box<dyn Proc>,
        watchers: MakeProc,
        tcp: TcpBytes,
        interval: f64,
    ) -> Scanner {
        Scanner {
            procs: PidMap::default(),
            files: Vec::new(),
            files_ended: Vec::new(),
            counts: HashMap::new(),
            pipes: Vec::new(),
            not_pipeline: HashMap::new(),
            ended: Vec::new(),
            commands: HashMap::new(),
            tcp_last: HashMap::new(),
            tcp_unknown: HashSet::new(),
            tcp_sought: HashSet::new(),
            next_full_walk_ns: 0,
            next_holders_walk_ns: 0,
            next_id: 1,
            generation: 0,
            own: std::process::id(),
            euid: crate::sys::geteuid(),
            exclude: None,
            root: None,
            root_gone: false,
            interval,
            hidden: Hidden::default(),
            cost: Cost::default(),
            proc,
            watchers,
            tcp,
            stop: Box::new(crate::signals::exit_requested),
            pids: Vec::new(),
            listed: Vec::new(),
            last_pid: None,
            buf: Vec::with_capacity(4096),
            sweep: Rc::default(),
        }
    }

    /// Asks `stop` between two processes whether to stop the scan (the run is ending;
    /// by default, a signal that ends the run has come).
    #[cfg(test)]
    pub(crate) fn stop_when(&mut self, stop: Box<dyn Fn() -> bool>) {
        self.stop = stop;
    }

    /// Leaves process `pid` out (the view opened on a flow is an rpv of its own).
    pub fn exclude(&mut self, pid: Option<u32>) {
        self.exclude = pid;
    }

    /// Looks only at process `root` and its descendants (`--top=PID`).
    pub fn only(&mut self, root: Option<u32>) {
        self.root = root;
    }

    /// With [`Scanner::only`], whether the root process had ended at the last scan.
    pub fn root_gone(&self) -> bool {
        self.root_gone
    }

    /// The processes of the tree of `root`: it and its descendants, found through each
    /// thread's `children` (no look at any other process); empty if it is gone.
    fn tree(&mut self, root: u32) -> Vec<u32> {
        let mut pids = vec![root];
        let mut next = 0;
        while next < pids.len() && pids.len() < 1 << 16 {
            let pid = pids[next];
            next += 1;
            let Ok(tids) = self.proc.tasks(pid) else {
                if pid == root {
                    return Vec::new();
                }
                continue;
            };
            for tid in tids {
                if let Ok(text) = self.proc.read(pid, ProcFile::Children(tid), false) {
                    for child in parse_pids(&String::from_utf8_lossy(&text)) {
                        if !pids.contains(&child) {
                            pids.push(child);
                        }
                    }
                }
            }
        }
        pids
    }

    /// The processes whose flows could not be read at the last scan.
    pub fn hidden(&self) -> Hidden {
        self.hidden
    }

    /// What the last scan cost.
    pub fn cost(&self) -> Cost {
        self.cost
    }

    fn new_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// How often [`Scanner::tick`] should be called while pipelines are followed: as
    /// the pipeline view asks, but at most `TICKS_PER_SECOND` times a second (a list of
    /// flows needs each bottleneck, not each stage's time to the percent).
    pub fn tick_period_ns(&self) -> Option<u64> {
        let least = 1_000_000_000 / TICKS_PER_SECOND;
        self.pipes
            .iter()
            .map(|p| p.watcher.tick_period_ns().max(least))
            .min()
    }

    /// Samples the wait states of the pipelines followed (between two scans).
    pub fn tick(&mut self, now_ns: u64) {
        for p in &mut self.pipes {
            p.watcher.tick(now_ns);
        }
    }

    /// Looks at every process once and updates the flows (`now_ns`: monotonic).
    pub fn scan(&mut self, now_ns: u64) {
        self.generation += 1;
        self.cost = Cost::default();
        let mut movers = Vec::new();
        let mut fresh = Vec::new();
        let mut buf = std::mem::take(&mut self.buf);
        let listed = match self.root {
            Some(root) => Ok(self.tree(root)),
            None => self.list(),
        };
        let Ok(pids) = listed else {
            self.buf = buf;
            return;
        };
        let mut gone = Vec::new();
        self.root_gone = self.root.is_some() && pids.is_empty();
        for &pid in &pids {
            if (self.stop)() {
                // The run ends: the rest of the scan would only delay it.
                self.buf = buf;
                return;
            }
            if pid == self.own || Some(pid) == self.exclude {
                continue;
            }
            self.cost.processes += 1;
            match self.look(pid, &mut buf) {
                Look::Moved => movers.push(pid),
                Look::New => fresh.push(pid),
                Look::Gone => gone.push(pid),
                Look::Same | Look::Skip => {}
            }
        }
        if !gone.is_empty() {
            self.listed.retain(|pid| !gone.contains(pid));
        }
        let generation = self.generation;
        let proc = &mut self.proc;
        self.procs.retain(|&pid, p| {
            if p.seen != generation {
                proc.release(pid);
            }
            p.seen == generation
        });
        self.cost.kept = self.proc.kept();
        self.hidden = Hidden {
            count: self.procs.values().filter(|p| p.unreadable).count(),
            other_users: self
                .procs
                .values()
                .filter(|p| p.unreadable && p.other_user)
                .count(),
            root: self.euid == 0,
        };
        for &pid in &fresh {
            if (self.stop)() {
                self.buf = buf;
                return;
            }
            self.walk(pid, now_ns);
        }
        self.walk_owed(now_ns);
        for pid in self.follow_tcp(now_ns) {
            if !movers.contains(&pid) {
                movers.push(pid);
            }
        }
        self.follow_files(&movers, now_ns, &mut buf);
        self.follow_counts(&movers, now_ns);
        self.follow_pipelines(&movers, now_ns);
        self.drop_idle(now_ns);
        self.buf = buf;
    }

    /// Every process: the last listing of `/proc` (less those found gone since) while no
    /// process has started since it, else a new listing. Listing is most of what a scan of
    /// an idle machine costs: the kernel looks up every process's directory entry.
    fn list(&mut self) -> io::Result<Vec<u32>> {
        let last = self.proc.last_pid();
        if last.is_some() && last == self.last_pid {
            return Ok(self.listed.clone());
        }
        // (Read before listing: a process started during the listing is listed next time.)
        self.listed = self.proc.pids()?;
        self.last_pid = last;
        self.cost.listed = true;
        Ok(self.listed.clone())
    }

    /// Reads `pid`'s counters: whether it is new, moved or not.
    fn look(&mut self, pid: u32, buf: &mut Vec<u8>) -> Look {
        let generation = self.generation;
        // (Every scan at -i 4 or slower, every 4th at -i 1, every 8th at -i 0.5.)
        let quiet_every = ((QUIET_LOOK_S / self.interval) as u64).max(1);
        if let Some(p) = self.procs.get_mut(&pid) {
            // An unreadable process is tried again now and then (its PID may have gone to
            // a process of the user's), spread over the scans.
            let retry = p.unreadable && (generation + u64::from(pid)) % UNREADABLE_RETRY == 0;
            if (p.unreadable && !retry) || p.kernel {
                p.seen = generation;
                return Look::Skip;
            }
            if p.skipped_while_quiet(pid, generation, quiet_every) && !p.awaits_files(self.interval)
            {
                p.seen = generation;
                return Look::Same;
            }
            if retry {
                self.procs.remove(&pid);
            }
        }
        let io = match self.proc.read_into(pid, ProcFile::Io, true, buf) {
            Ok(()) => Io::parse(&String::from_utf8_lossy(buf)),
            Err(e) if matches!(e.raw_os_error(), Some(libc::EACCES | libc::EPERM)) => {
                self.proc.release(pid);
                let other_user = self.proc.owner(pid).is_some_and(|uid| uid != self.euid);
                self.procs
                    .insert(pid, Process::unreadable(other_user, generation));
                return Look::Skip;
            }
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ESRCH)) => {
                return Look::Gone;
            }
            Err(_) => return Look::Skip,
        };
        let Some(io) = io else {
            return Look::Skip;
        };
        if let Some(p) = self.procs.get_mut(&pid) {
            // Counters only grow: smaller ones are a new process with the same PID.
            if io.rchar >= p.io.rchar && io.wchar >= p.io.wchar {
                p.seen = generation;
                if io == p.io {
                    p.quiet = p.quiet.saturating_add(1);
                    self.note_opened(pid);
                    return Look::Same;
                }
                p.quiet = 0;
                // (It may run another program since its command line was read, a
                // wrapper's `exec`: its next walk, at most 2 s away, reads it again.)
                p.walk_owed = true;
                let delta = (io.rchar - p.io.rchar).max(io.wchar - p.io.wchar);
                p.moved = p.moved.saturating_add(delta);
                p.io = io;
                return Look::Moved;
            }
        }
        let Some(stat) = self
            .proc
            .read_into(pid, ProcFile::Stat, false, buf)
            .ok()
            .and_then(|()| Stat::parse(&String::from_utf8_lossy(buf)))
        else {
            return Look::Skip;
        };
        let mut p = Process::new(stat.start, stat.kernel_thread, io, generation);
        if p.kernel {
            // Never read again: a kernel thread moves no data of a user's.
            self.proc.release(pid);
        } else {
            (p.command, p.instance, p.unsure) = self.program(pid, &stat.comm);
            p.comm = stat.comm;
        }
        self.procs.insert(pid, p);
        if stat.kernel_thread {
            Look::Skip
        } else {
            Look::New
        }
    }

    /// What `pid`, named `comm`, is: its command line and the instance it is, if it is an
    /// rpv or a pv; and whether that is still unsure (it has no command line yet).
    fn program(&mut self, pid: u32, comm: &str) -> (Option<String>, Option<Instance>, bool) {
        if !matches!(comm, "rpv" | "pv") {
            return (None, None, false);
        }
        let cmdline = self
            .proc
            .read(pid, ProcFile::Cmdline, false)
            .unwrap_or_default();
        let Some(command) = command_text(&cmdline) else {
            // In the midst of its exec: its new name, its arguments not yet in place.
            return (None, None, true);
        };
        // An rpv that only watches (`-d`, `--pipeline=PID`) says so when asked, and one
        // that has no control channel (`--top`) never answers: neither shows.
        let instance = match comm {
            "pv" => Instance::Pv,
            _ => Instance::Rpv,
        };
        (Some(command), Some(instance), false)
    }

    /// Reads again what `pid` is: a process not known as an rpv or a pv may have become
    /// one by an `exec` since it was first seen (a shell's child, `nice`, `env`, a script's
    /// last line). One that has become an rpv shows as that, with its own figures, from now
    /// on, not as its files.
    fn program_again(&mut self, pid: u32) {
        let Some(stat) = self.proc.stat(pid) else {
            return;
        };
        let (command, instance, unsure) = self.program(pid, &stat.comm);
        let Some(p) = self.procs.get_mut(&pid) else {
            return;
        };
        p.unsure = unsure;
        if p.comm != stat.comm {
            p.comm = stat.comm;
            // Another program (an `exec`): its own walks at once (see
            // [`EMPTY_WALKS_AT_ONCE`]), not what its wrappers left.
            p.empty_walks = 0;
        }
        if instance.is_none() {
            return;
        }
        let rpv = matches!(instance, Some(Instance::Rpv | Instance::Watching));
        p.command = command;
        p.instance = instance;
        if rpv {
            self.files.retain(|f| f.pid != pid);
        }
    }

    /// Walks again the descriptors of the processes that moved since their last walk,
    /// once that is due (see [`Process::walk_due`]).
    fn walk_owed(&mut self, now_ns: u64) {
        let due: Vec<u32> = (self.procs.iter())
            .filter(|(_, p)| p.walk_owed && p.seen == self.generation && p.walk_due(now_ns))
            .map(|(&pid, _)| pid)
            .collect();
        for pid in due {
            if (self.stop)() {
                return;
            }
            if !self.light_walk(pid, now_ns) {
                self.walk(pid, now_ns);
            }
        }
    }

    /// A walk of a steady process (see [`FULL_WALK_EVERY`]) that only lists its
    /// descriptors' numbers; false if it is not one, or the numbers changed (a walk in full
    /// is then due).
    fn light_walk(&mut self, pid: u32, now_ns: u64) -> bool {
        let light = (self.procs.get(&pid))
            .is_some_and(|p| p.steady && !p.unsure && p.light_walks + 1 < FULL_WALK_EVERY);
        if !light {
            return false;
        }
        // Still the same program (its name: a wrapper that `exec`s its program is found
        // at once, as by a walk in full), with the same descriptors.
        let comm = (self.proc.read(pid, ProcFile::Stat, true).ok())
            .and_then(|text| Stat::parse(&String::from_utf8_lossy(&text)))
            .map(|stat| stat.comm);
        let Ok(numbers) = self.proc.fd_numbers(pid) else {
            return false;
        };
        let Some(p) = self.procs.get_mut(&pid) else {
            return false;
        };
        let same = comm.is_some_and(|c| c == p.comm) && same_numbers(&numbers, &p.fds);
        if same {
            self.cost.walked += 1;
            self.cost.light += 1;
            p.light_walks += 1;
            if follows_nothing(&p.fds) {
                p.empty_walks = p.empty_walks.saturating_add(1);
            }
            p.walk_owed = false;
            p.opened = false;
            p.walked_ns = Some(now_ns);
        }
        same
    }

    /// Of a process that awaits its files ([`Process::awaits_files`]): a walk of `pid` is
    /// owed if the numbers of its descriptors changed since its last walk (it opened or
    /// closed something).
    fn note_opened(&mut self, pid: u32) {
        let interval = self.interval;
        if !(self.procs.get(&pid)).is_some_and(|p| p.awaits_files(interval)) {
            return;
        }
        let Ok(numbers) = self.proc.fd_numbers(pid) else {
            return;
        };
        if let Some(p) = self.procs.get_mut(&pid) {
            let opened = !same_numbers(&numbers, &p.fds);
            p.walk_owed |= opened;
            p.opened |= opened;
        }
    }

    /// Walks `pid`'s descriptors (links already known are not looked at again).
    fn walk(&mut self, pid: u32, now_ns: u64) {
        let Some(p) = self.procs.get_mut(&pid) else {
            return;
        };
        self.cost.walked += 1;
        p.light_walks = 0;
        p.rewalked = p.walked_ns.is_some();
        p.walk_owed = false;
        p.opened = false;
        p.walked_ns = Some(now_ns);
        p.walked = self.generation;
        if p.instance.is_none() || p.unsure {
            // It moved: it may have run another program since (a wrapper's `exec`).
            p.command_stale = true;
            self.program_again(pid);
        }
        let Some(p) = self.procs.get_mut(&pid) else {
            return;
        };
        let known = std::mem::take(&mut p.fds);
        let first = !p.rewalked;
        // The script an interpreter runs, read before and after its descriptors (a
        // wrapper's `exec` between the two: both scripts are known as scripts). Walked
        // again, the scripts it ran are known already: after them only, with its command.
        if first {
            self.note_script(pid, false);
        }
        let Ok(links) = self.proc.fds(pid) else {
            return;
        };
        self.note_script(pid, true);
        let mut fds = Vec::with_capacity(known.len());
        let mut reopened = false;
        for (fd, link) in links.into_iter().take(MAX_FDS) {
            let fd = fd as i32;
            if let Some(known) = known.iter().find(|f| f.fd == fd && f.link == link) {
                fds.push(known.clone());
                continue;
            }
            match self.target(pid, fd, &link) {
                Some(target) => fds.push(Fd { fd, link, target }),
                // No link: the next walk looks at it again, whatever it finds.
                None => {
                    reopened = true;
                    let (link, target) = (String::new(), Target::Other);
                    fds.push(Fd { fd, link, target });
                }
            }
        }
        let Some(p) = self.procs.get_mut(&pid) else {
            return;
        };
        p.walk_owed |= reopened;
        fds.sort_by_key(|f| f.fd);
        p.empty_walks = if follows_nothing(&fds) {
            p.empty_walks.saturating_add(1)
        } else {
            0
        };
        p.steady = !first
            && fds.len() == known.len()
            && (fds.iter().zip(&known)).all(|(a, b)| a.fd == b.fd && a.link == b.link);
        p.fds = fds;
    }

    /// What descriptor `fd` of `pid`, whose link is `link`, is open on; `None` if it was
    /// opened again on another file while this looked (`dd if=F` moves `F` onto its
    /// standard input): the `stat` may then have found the new file, which the link does
    /// not name.
    fn target(&mut self, pid: u32, fd: i32, link: &str) -> Option<Target> {
        if let Some(inode) = crate::procfs::socket_inode(link) {
            return Some(Target::Socket(inode));
        }
        if let Some(inode) = pipe_inode(link) {
            return Some(Target::Pipe(inode));
        }
        if !link.starts_with('/') {
            return Some(Target::Other);
        }
        let target = match self.proc.fd_stat(pid, fd as u32) {
            Ok(m) if m.kind == FdKind::Regular => Target::File {
                dev: m.dev,
                ino: m.ino,
                device: false,
                path: link.to_string(),
            },
            Ok(m) if m.kind == FdKind::Block => Target::File {
                dev: m.rdev,
                ino: 0,
                device: true,
                path: link.to_string(),
            },
            _ => return Some(Target::Other),
        };
        // Still the link's file after the `stat`: then the `stat` found that file.
        let same = (self.proc.fd_link(pid, fd as u32)).is_ok_and(|now| now == link);
        same.then_some(target)
    }

    /// The command of `pid` as last read: from the process table, else as the flows last
    /// showed it (a process that has just ended).
    fn known_command(&self, pid: u32) -> String {
        self.procs
            .get(&pid)
            .and_then(|p| p.command.clone())
            .or_else(|| self.commands.get(&pid).cloned())
            .unwrap_or_else(|| format!("[{pid}]"))
    }

    /// The command line of `pid` (read once).
    fn command(&mut self, pid: u32) -> String {
        let Some(p) = self.procs.get_mut(&pid) else {
            return String::new();
        };
        if p.command.is_none() || p.command_stale {
            p.command_stale = false;
            let cmdline = self
                .proc
                .read(pid, ProcFile::Cmdline, false)
                .unwrap_or_default();
            // A process that has just ended keeps the command it was seen with.
            match (command_text(&cmdline), &p.command) {
                (Some(text), _) => p.command = Some(text),
                (None, None) => p.command = Some(format!("[{pid}]")),
                (None, Some(_)) => {}
            }
        }
        p.command.clone().unwrap_or_default()
    }

    /// Flows that have not moved for [`IDLE_DROP_NS`] end.
    fn drop_idle(&mut self, now_ns: u64) {
        let idle = |last: u64| now_ns.saturating_sub(last) >= IDLE_DROP_NS;
        let (gone, files) = std::mem::take(&mut self.files)
            .into_iter()
            .partition(|f| f.moved > 0 && idle(f.last_move_ns));
        self.files = files;
        self.files_ended.extend(gone);
        let stale: Vec<u32> = self
            .counts
            .iter()
            .filter(|(_, c)| idle(c.last_move_ns))
            .map(|(&pid, _)| pid)
            .collect();
        for pid in stale {
            if let Some(c) = self.counts.remove(&pid) {
                if c.moved > 0 {
                    let flow = self.count_flow(pid, &c, true);
                    self.ended.push(flow);
                }
                if c.kind == Kind::Socket {
                    // Followed again when it next moves, from its count then.
                }
            }
        }
        let mut pipes = std::mem::take(&mut self.pipes);
        pipes.retain(|p| {
            if idle(p.last_move_ns) {
                if p.amount > 0 {
                    self.ended.push(pipe_flow(p, true));
                }
                return false;
            }
            true
        });
        self.pipes = pipes;
    }

    /// The flows that have moved, and those that ended since the last call (once).
    pub fn flows(&mut self, out: &mut Vec<Flow>) {
        out.append(&mut self.ended);
        let ended = std::mem::take(&mut self.files_ended);
        let not_flows = self.not_flows(&ended);
        self.file_flows(&ended, true, &not_flows, out);
        let pids: Vec<u32> = (self.files.iter().filter(|f| f.moved > 0 || f.unseen))
            .map(|f| f.pid)
            .chain(self.counts.keys().copied())
            .collect();
        self.commands.clear();
        for pid in pids {
            let command = self.command(pid);
            self.commands.insert(pid, command);
        }
        let files = std::mem::take(&mut self.files);
        let not_flows = self.not_flows(&files);
        self.file_flows(&files, false, &not_flows, out);
        self.files = files;
        for (&pid, c) in self.counts.iter().filter(|(_, c)| c.moved > 0) {
            out.push(self.count_flow(pid, c, false));
        }
        for p in self.pipes.iter().filter(|p| p.amount > 0) {
            out.push(pipe_flow(p, false));
        }
    }
}

/// What [`Scanner::look`] found.
enum Look {
    /// First seen (or a new process under a PID seen before).
    New,
    /// Its counters moved.
    Moved,
    /// Its counters did not move.
    Same,
    /// Not followed (unreadable, a kernel thread).
    Skip,
    /// Gone.
    Gone,
}

impl Process {
    /// Whether this scan leaves it out for being quiet: one quiet for a while is looked at
    /// every `quiet_every` scans only, by turns (of `pid`); one quiet for long, half as
    /// often again.
    fn skipped_while_quiet(&self, pid: u32, generation: u64, quiet_every: u64) -> bool {
        let every = if self.quiet >= QUIET_SCANS + LONG_QUIET_LOOKS {
            2 * quiet_every
        } else {
            quiet_every
        };
        !self.unreadable && self.quiet >= QUIET_SCANS && (generation + u64::from(pid)) % every != 0
    }

    /// Whether it may be about to open what it will work on: started while rpv ran, or
    /// moved since (not each of a machine's sleeping processes when rpv starts), walked,
    /// no walk owed yet, and its counters still for at most [`AWAIT_FILES_S`] (in scans of
    /// `interval` seconds). (Whether or not its walk found something: a copier starved
    /// between its two opens was walked with the file it reads open, not the one it
    /// writes.)
    fn awaits_files(&self, interval: f64) -> bool {
        let scans = (AWAIT_FILES_S / interval) as u32;
        (self.late || self.moved > 0)
            && self.walked_ns.is_some()
            && !self.walk_owed
            && !self.unreadable
            && self.quiet <= scans
    }

    /// Whether its descriptors may be walked again: [`WALK_EVERY_NS`] after the last walk
    /// (twice that when it is steady), or at once while its walks have found nothing to
    /// follow, [`EMPTY_WALKS_AT_ONCE`] times at most (a shell's child, or a wrapper such as
    /// `nice`, before it runs `cp`: a copy moves no counter once it has started, so it
    /// must be found when the program's loader moves them), or at once when it opened or
    /// closed a descriptor while it awaited its files (a copier walked between its two
    /// opens: `cp` over a file empties it inside its second open, seconds at a small share
    /// of the CPU).
    fn walk_due(&self, now_ns: u64) -> bool {
        let Some(at) = self.walked_ns else {
            return true;
        };
        let every = if self.steady {
            2 * WALK_EVERY_NS
        } else {
            WALK_EVERY_NS
        };
        now_ns >= at + every
            || self.opened
            || (follows_nothing(&self.fds) && self.empty_walks < EMPTY_WALKS_AT_ONCE)
    }

    /// A process whose `io` may not be read.
    fn unreadable(other_user: bool, generation: u64) -> Process {
        Process {
            unreadable: true,
            other_user,
            ..Process::new(0, false, Io::default(), generation)
        }
    }

    /// A process first seen at scan `generation`, with its start time and counters.
    fn new(start: u64, kernel: bool, io: Io, generation: u64) -> Process {
        Process {
            start,
            unreadable: false,
            other_user: false,
            kernel,
            io,
            moved: 0,
            tcp: 0,
            fds: Vec::new(),
            comm: String::new(),
            scripts: Vec::new(),
            command: None,
            instance: None,
            lines: false,
            seen: generation,
            walked_ns: None,
            walked: 0,
            quiet: 0,
            walk_owed: false,
            opened: false,
            rewalked: false,
            empty_walks: 0,
            late: generation > 1,
            steady: false,
            light_walks: 0,
            command_stale: false,
            unsure: false,
        }
    }
}
