//! Finding and following flows in `/proc`.
//!
//! Owns: the process table of the last scan (one `io` read per process per scan; `stat`
//! and the command line once per process), the descriptors of processes that moved, and
//! the flows built from them: file and device flows (a descriptor's position from
//! `/proc/PID/fdinfo/FD`, the size from the file or `/sys/dev/block`), socket flows (the
//! larger of what the process read and wrote, from `/proc/PID/io`), rpv instances (their
//! own count, over their control channel), pv instances (the file they read, else their
//! counters), and pipelines (the pipeline view's `Watcher`, which names the
//! bottleneck). Must not: draw or sleep.
//!
//! A flow shows once it has moved. It ends when its process exits or closes the file, or
//! after [`IDLE_DROP_NS`] without moving; then it appears once more, ended, and is gone.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::rc::Rc;

use sweep::{SharedProc, Sweep};

use super::proc::ProcFiles;
use super::{Bottleneck, Flow, FlowView, Hidden, Kind, Zoom};
use crate::control::client::ProgressQuery;
use crate::pipeline::Watcher;
use crate::procfs::{command_text, pipe_inode, Io, Stat};

mod sweep;

/// A flow that has not moved for this long leaves the list (nanoseconds).
pub const IDLE_DROP_NS: u64 = 60_000_000_000;
/// A process found not to be in a pipeline of two stages or more is looked at again after
/// this long (nanoseconds).
const PIPELINE_RETRY_NS: u64 = 30_000_000_000;
/// How long an answer from an rpv may take.
const RPV_ANSWER: std::time::Duration = std::time::Duration::from_millis(100);
/// How often at most the pipelines' wait states are sampled between two looks: twice a
/// second (the pipeline view samples up to 50 times; a list of flows needs each
/// pipeline's bottleneck, not each stage's time to the percent, and each sample is a
/// `stat` and a `wchan` per thread of every stage).
const TICKS_PER_SECOND: u64 = 2;
/// A process whose counters did not move for this many scans in a row is looked at only
/// every [`QUIET_EVERY`] scans (by turns, so each scan reads a share of them): most
/// processes sleep, and reading their counters is most of a scan's cost. One that starts
/// moving is found within that many scans.
const QUIET_SCANS: u32 = 5;
const QUIET_EVERY: u64 = 3;
/// Least time between two walks of one process's descriptors, once it has been walked
/// (nanoseconds): a process that keeps moving opens new files rarely, and one walk costs a
/// `readlink` per descriptor.
const WALK_EVERY_NS: u64 = 2_000_000_000;
/// Least time between two walks of every process's descriptors (to find who holds a
/// socket that moved), in nanoseconds.
const FULL_WALK_NS: u64 = 30_000_000_000;
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
    /// An rpv transfer, asked over its control channel.
    Rpv(Option<ProgressQuery>),
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
    command: Option<String>,
    instance: Option<Instance>,
    /// The scan that last saw it.
    seen: u64,
    /// When its descriptors were last walked (monotonic ns).
    walked_ns: Option<u64>,
    /// The scan that last walked its descriptors.
    walked: u64,
    /// Scans in a row its counters did not move.
    quiet: u32,
    /// It moved since its command line was read: it may run another program now.
    command_stale: bool,
}

/// A file or device flow's state.
struct FileFlow {
    id: u64,
    pid: u32,
    start: u64,
    fd: i32,
    dev: u64,
    ino: u64,
    device: bool,
    path: String,
    writes: bool,
    pos: u64,
    moved: u64,
    size: u64,
    growing: bool,
    since_ns: u64,
    last_move_ns: u64,
}

/// A flow followed through a process's counters (sockets, rpv, pv).
struct CountFlow {
    id: u64,
    kind: Kind,
    start: u64,
    /// The process's I/O and TCP counts when the flow was first seen (sockets).
    base: (u64, u64),
    amount: u64,
    moved: u64,
    size: u64,
    file: Option<String>,
    since_ns: u64,
    last_move_ns: u64,
}

/// A pipeline flow: the pipeline view's watcher.
struct PipeFlow {
    id: u64,
    watcher: Watcher,
    view: FlowView,
    first: Option<u64>,
    amount: u64,
    since_ns: u64,
    last_move_ns: u64,
}

/// What one scan cost (for `rpv-bench top --cost` and the tests).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cost {
    /// Processes listed.
    pub processes: usize,
    /// Processes whose descriptors were walked.
    pub walked: usize,
    /// `fdinfo` files read.
    pub fdinfo: usize,
    /// `io` files kept open (read again with one `pread` each).
    pub kept: usize,
    /// Processes looked at with the pipeline view's discovery (a walk of every process).
    pub pipelines_tried: usize,
}

/// Finds and follows the flows.
pub struct Scanner {
    procs: HashMap<u32, Process>,
    files: Vec<FileFlow>,
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
    next_full_walk_ns: u64,
    next_id: u64,
    generation: u64,
    own: u32,
    euid: u32,
    /// A process not to show (the view Enter opened).
    exclude: Option<u32>,
    interval: f64,
    hidden: Hidden,
    cost: Cost,
    /// The files of `/proc` it reads.
    proc: ProcFiles,
    /// The PIDs of a scan and a file's text (kept from scan to scan: no allocation per
    /// process).
    pids: Vec<u32>,
    buf: Vec<u8>,
    /// What the pipelines read of every process during a scan (read once for all).
    sweep: Rc<RefCell<Sweep>>,
}

/// `pos:` and `flags:` of an `fdinfo` file (flags in octal).
pub fn parse_fdinfo(text: &str) -> Option<(u64, u32)> {
    let mut pos = None;
    let mut flags = None;
    for line in text.lines() {
        if let Some(v) = line.strip_prefix("pos:") {
            pos = v.trim().parse().ok();
        } else if let Some(v) = line.strip_prefix("flags:") {
            flags = u32::from_str_radix(v.trim(), 8).ok();
        }
    }
    Some((pos?, flags?))
}

/// True if the `flags` of an `fdinfo` file open the file for writing only.
fn write_only(flags: u32) -> bool {
    flags & libc::O_ACCMODE as u32 == libc::O_WRONLY as u32
}

/// Whether an rpv command line runs a transfer (the others have no figures to show).
fn rpv_transfers(cmdline: &[u8]) -> bool {
    use crate::cli::{Action, Parsed};
    use std::os::unix::ffi::OsStrExt;
    let args: Vec<std::ffi::OsString> = cmdline
        .split(|&b| b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| std::ffi::OsStr::from_bytes(a).to_owned())
        .collect();
    let Some((argv0, rest)) = args.split_first() else {
        return false;
    };
    match crate::cli::parse(&argv0.to_string_lossy(), rest) {
        Parsed::Run(o) => matches!(
            o.action,
            Action::Transfer
                | Action::StoreAndForward(_)
                | Action::Monitor(_)
                | Action::Pipeline(None)
        ),
        _ => false,
    }
}

impl Scanner {
    /// A scanner of the real `/proc`, showing processes other than rpv itself; `interval`
    /// is the display interval in seconds (the pipeline view averages over it).
    pub fn new(interval: f64) -> Scanner {
        Scanner {
            procs: HashMap::new(),
            files: Vec::new(),
            counts: HashMap::new(),
            pipes: Vec::new(),
            not_pipeline: HashMap::new(),
            ended: Vec::new(),
            commands: HashMap::new(),
            tcp_last: HashMap::new(),
            tcp_unknown: HashSet::new(),
            next_full_walk_ns: 0,
            next_id: 1,
            generation: 0,
            own: std::process::id(),
            euid: crate::sys::geteuid(),
            exclude: None,
            interval,
            hidden: Hidden::default(),
            cost: Cost::default(),
            proc: ProcFiles::new(),
            pids: Vec::new(),
            buf: Vec::with_capacity(4096),
            sweep: Rc::default(),
        }
    }

    /// Leaves process `pid` out (the view opened on a flow is an rpv of its own).
    pub fn exclude(&mut self, pid: Option<u32>) {
        self.exclude = pid;
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
        let mut pids = std::mem::take(&mut self.pids);
        pids.clear();
        if self.proc.pids(|pid| pids.push(pid)).is_err() {
            self.pids = pids;
            self.buf = buf;
            return;
        }
        for &pid in &pids {
            if pid == self.own || Some(pid) == self.exclude {
                continue;
            }
            self.cost.processes += 1;
            match self.look(pid, &mut buf) {
                Look::Moved => movers.push(pid),
                Look::New => fresh.push(pid),
                Look::Same | Look::Skip => {}
            }
        }
        self.pids = pids;
        let generation = self.generation;
        let proc = &mut self.proc;
        self.procs.retain(|&pid, p| {
            if p.seen != generation {
                proc.forget(pid);
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
            self.walk(pid, now_ns);
        }
        for &pid in &movers {
            let due = self
                .procs
                .get(&pid)
                .is_some_and(|p| p.walked_ns.is_none_or(|at| now_ns >= at + WALK_EVERY_NS));
            if due {
                self.walk(pid, now_ns);
            }
        }
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

    /// Reads `pid`'s counters: whether it is new, moved or not.
    fn look(&mut self, pid: u32, buf: &mut Vec<u8>) -> Look {
        let generation = self.generation;
        if let Some(p) = self.procs.get_mut(&pid) {
            // An unreadable process is tried again now and then (its PID may have gone to
            // a process of the user's), spread over the scans.
            let retry = p.unreadable && (generation + u64::from(pid)) % UNREADABLE_RETRY == 0;
            if (p.unreadable && !retry) || p.kernel {
                p.seen = generation;
                return Look::Skip;
            }
            // A process quiet for a while is looked at every few scans only, by turns.
            if !p.unreadable
                && p.quiet >= QUIET_SCANS
                && (generation + u64::from(pid)) % QUIET_EVERY != 0
            {
                p.seen = generation;
                return Look::Same;
            }
            if retry {
                self.procs.remove(&pid);
            }
        }
        let io = match self.proc.io(pid, buf) {
            Ok(()) => Io::parse(&String::from_utf8_lossy(buf)),
            Err(e) if matches!(e.raw_os_error(), Some(libc::EACCES | libc::EPERM)) => {
                self.proc.forget(pid);
                let other_user = self.proc.owner(pid).is_some_and(|uid| uid != self.euid);
                self.procs
                    .insert(pid, Process::unreadable(other_user, generation));
                return Look::Skip;
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
                    return Look::Same;
                }
                p.quiet = 0;
                // It may run another program since its command line was read (a
                // wrapper's `exec`): read again if it is shown.
                p.command_stale = p.instance.is_none();
                let delta = (io.rchar - p.io.rchar).max(io.wchar - p.io.wchar);
                p.moved = p.moved.saturating_add(delta);
                p.io = io;
                return Look::Moved;
            }
        }
        let Some(stat) = self
            .proc
            .stat(pid, buf)
            .ok()
            .and_then(|()| Stat::parse(&String::from_utf8_lossy(buf)))
        else {
            return Look::Skip;
        };
        let mut p = Process::unreadable(false, generation);
        p.unreadable = false;
        p.start = stat.start;
        p.kernel = stat.kernel_thread;
        p.io = io;
        if p.kernel {
            // Never read again: a kernel thread moves no data of a user's.
            self.proc.forget(pid);
        }
        if !p.kernel && matches!(stat.comm.as_str(), "rpv" | "pv") {
            let cmdline = self.proc.cmdline(pid);
            p.command = command_text(&cmdline);
            p.instance = match stat.comm.as_str() {
                "pv" => Some(Instance::Pv),
                _ if rpv_transfers(&cmdline) => Some(Instance::Rpv(None)),
                // Another rpv watching (`--top`, `-d`, `-Q`): it moves nothing of its own.
                _ => Some(Instance::Watching),
            };
        }
        self.procs.insert(pid, p);
        if stat.kernel_thread {
            Look::Skip
        } else {
            Look::New
        }
    }

    /// The bytes of every TCP socket (see [`crate::sys::tcp_bytes`]) since the last scan,
    /// added to the processes that hold them; returns the processes whose sockets moved.
    /// A socket no walked process holds makes every process's descriptors be walked, at
    /// most every [`FULL_WALK_NS`]; one still unknown then (another user's, another
    /// namespace's) is not looked for again.
    fn follow_tcp(&mut self, now_ns: u64) -> Vec<u32> {
        let mut now = HashMap::new();
        if crate::sys::tcp_bytes(&mut now).is_err() {
            return Vec::new();
        }
        let first = self.tcp_last.is_empty();
        let moved: Vec<(u64, u64)> = now
            .iter()
            .filter_map(|(&inode, &bytes)| {
                let delta = match self.tcp_last.get(&inode) {
                    Some(&before) => bytes.saturating_sub(before),
                    None if first => 0,
                    None => bytes,
                };
                (delta > 0).then_some((inode, delta))
            })
            .collect();
        // Sockets that closed are forgotten (a long watch sees many come and go).
        self.tcp_unknown.retain(|inode| now.contains_key(inode));
        self.tcp_last = now;
        let mut owners = self.socket_owners();
        let unknown = moved
            .iter()
            .any(|(inode, _)| !owners.contains_key(inode) && !self.tcp_unknown.contains(inode));
        if unknown && now_ns >= self.next_full_walk_ns {
            self.next_full_walk_ns = now_ns + FULL_WALK_NS;
            let pids: Vec<u32> = self
                .procs
                .iter()
                .filter(|(_, p)| p.seen == self.generation && !p.unreadable && !p.kernel)
                .map(|(&pid, _)| pid)
                .collect();
            for pid in pids {
                self.walk(pid, now_ns);
            }
            owners = self.socket_owners();
            for (inode, _) in &moved {
                if !owners.contains_key(inode) {
                    self.tcp_unknown.insert(*inode);
                }
            }
        }
        let mut movers = Vec::new();
        for (inode, delta) in moved {
            let Some(&pid) = owners.get(&inode) else {
                continue;
            };
            if let Some(p) = self.procs.get_mut(&pid) {
                p.tcp = p.tcp.saturating_add(delta);
                if p.instance.is_none() {
                    // As for a walk: it may run another program since.
                    p.command_stale = true;
                }
                if !movers.contains(&pid) {
                    movers.push(pid);
                }
            }
        }
        movers
    }

    /// Which process holds each socket, as the walks found them.
    fn socket_owners(&self) -> HashMap<u64, u32> {
        let mut owners = HashMap::new();
        for (&pid, p) in &self.procs {
            for f in &p.fds {
                if let Target::Socket(inode) = f.target {
                    owners.insert(inode, pid);
                }
            }
        }
        owners
    }

    /// Walks `pid`'s descriptors (links already known are not looked at again).
    fn walk(&mut self, pid: u32, now_ns: u64) {
        let Some(p) = self.procs.get_mut(&pid) else {
            return;
        };
        self.cost.walked += 1;
        p.walked_ns = Some(now_ns);
        p.walked = self.generation;
        if p.instance.is_none() {
            // It moved: it may have run another program since (a wrapper's `exec`).
            p.command_stale = true;
        }
        let Ok(dir) = self.proc.fd_dir(pid) else {
            p.fds.clear();
            return;
        };
        let mut fds = Vec::with_capacity(p.fds.len());
        for entry in dir.flatten().take(MAX_FDS) {
            let Some(fd) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<i32>().ok())
            else {
                continue;
            };
            let Ok(link) = std::fs::read_link(entry.path()) else {
                continue;
            };
            let link = link.to_string_lossy().into_owned();
            if let Some(known) = p.fds.iter().find(|f| f.fd == fd && f.link == link) {
                fds.push(known.clone());
                continue;
            }
            let target = if let Some(inode) = link
                .strip_prefix("socket:[")
                .and_then(|l| l.strip_suffix(']'))
                .and_then(|l| l.parse().ok())
            {
                Target::Socket(inode)
            } else if let Some(inode) = pipe_inode(&link) {
                Target::Pipe(inode)
            } else if link.starts_with('/') {
                match std::fs::metadata(entry.path()) {
                    Ok(m) if m.file_type().is_file() => Target::File {
                        dev: m.dev(),
                        ino: m.ino(),
                        device: false,
                        path: link.clone(),
                    },
                    Ok(m) if m.file_type().is_block_device() => Target::File {
                        dev: m.rdev(),
                        ino: 0,
                        device: true,
                        path: link.clone(),
                    },
                    _ => Target::Other,
                }
            } else {
                Target::Other
            };
            fds.push(Fd { fd, link, target });
        }
        fds.sort_by_key(|f| f.fd);
        p.fds = fds;
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
            let cmdline = self.proc.cmdline(pid);
            // A process that has just ended keeps the command it was seen with.
            match (command_text(&cmdline), &p.command) {
                (Some(text), _) => p.command = Some(text),
                (None, None) => p.command = Some(format!("[{pid}]")),
                (None, Some(_)) => {}
            }
        }
        p.command.clone().unwrap_or_default()
    }

    /// File and device flows: new descriptors of processes that moved, and the position
    /// of every followed one.
    fn follow_files(&mut self, movers: &[u32], now_ns: u64, buf: &mut Vec<u8>) {
        // New candidates: regular files and block devices of processes walked at this scan
        // (they moved, or are new), not already followed.
        let mut candidates = Vec::new();
        for (&pid, p) in &self.procs {
            let rpv = matches!(p.instance, Some(Instance::Rpv(_) | Instance::Watching));
            if p.walked != self.generation || p.unreadable || rpv {
                continue;
            }
            for f in &p.fds {
                if let Target::File {
                    dev,
                    ino,
                    device,
                    path,
                } = &f.target
                {
                    let followed = self
                        .files
                        .iter()
                        .any(|x| x.pid == pid && x.fd == f.fd && x.dev == *dev && x.ino == *ino);
                    if !followed {
                        candidates.push((pid, p.start, f.fd, *dev, *ino, *device, path.clone()));
                    }
                }
            }
        }
        let movers: HashSet<u32> = movers.iter().copied().collect();
        for (pid, start, fd, dev, ino, device, path) in candidates {
            let Some((pos, flags)) = self.fdinfo(pid, fd, buf) else {
                continue;
            };
            let (size, growing) = self.file_size(pid, fd, device, dev);
            let id = self.new_id();
            self.files.push(FileFlow {
                id,
                pid,
                start,
                fd,
                dev,
                ino,
                device,
                path,
                writes: write_only(flags),
                pos,
                moved: 0,
                size,
                growing,
                since_ns: now_ns,
                last_move_ns: now_ns,
            });
        }
        // Positions of the followed descriptors.
        let mut files = std::mem::take(&mut self.files);
        files.retain_mut(|f| {
            let alive = self.procs.get(&f.pid).is_some_and(|p| {
                p.start == f.start
                    && p.fds.iter().any(|d| {
                        d.fd == f.fd
                            && matches!(&d.target, Target::File { dev, ino, .. }
                                if *dev == f.dev && *ino == f.ino)
                    })
            });
            let pos = if alive && (movers.contains(&f.pid) || f.moved > 0) {
                self.fdinfo(f.pid, f.fd, buf).map(|(pos, _)| pos)
            } else if alive {
                Some(f.pos)
            } else {
                None
            };
            let Some(pos) = pos else {
                if f.moved > 0 {
                    let flow = self.file_flow(f, true);
                    self.ended.push(flow);
                }
                return false;
            };
            if pos != f.pos {
                let (size, growing) = self.file_size(f.pid, f.fd, f.device, f.dev);
                // A position past the end is a seek, not data moved.
                if pos > f.pos && pos <= size.max(f.size) {
                    f.moved += pos - f.pos;
                }
                f.pos = pos;
                f.last_move_ns = now_ns;
                f.growing |= growing || (size != f.size && !f.device);
                f.size = size;
            }
            true
        });
        self.files = files;
    }

    /// The size of the file open on `pid`'s `fd` and whether it is being written (it
    /// grows with the position, so its size says nothing of the end).
    fn file_size(&mut self, pid: u32, fd: i32, device: bool, dev: u64) -> (u64, bool) {
        if device {
            return (self.proc.device_size(dev), false);
        }
        match self.proc.fd_metadata(pid, fd) {
            Ok(m) => (m.len(), false),
            Err(_) => (0, false),
        }
    }

    fn fdinfo(&mut self, pid: u32, fd: i32, buf: &mut Vec<u8>) -> Option<(u64, u32)> {
        self.cost.fdinfo += 1;
        self.proc.fdinfo(pid, fd, buf).ok()?;
        parse_fdinfo(&String::from_utf8_lossy(buf))
    }

    fn file_flow(&self, f: &FileFlow, ended: bool) -> Flow {
        let command = self.known_command(f.pid);
        // A file being written (or growing as it is read) has no end to measure against.
        let size = if f.writes || f.growing || f.pos > f.size {
            0
        } else {
            f.size
        };
        Flow {
            id: f.id,
            view: FlowView {
                kind: if f.device { Kind::Device } else { Kind::File },
                pid: f.pid,
                command,
                file: Some(f.path.clone()),
                fd: Some(f.fd),
                writes: f.writes,
                bottleneck: None,
                zoom: Zoom::Watch(f.pid, Some(f.fd)),
            },
            amount: f.pos,
            moved: f.moved,
            size,
            since_ns: f.since_ns,
            ended,
        }
    }

    /// Socket flows and rpv/pv instances: processes followed through their own counts.
    fn follow_counts(&mut self, movers: &[u32], now_ns: u64) {
        // Only instances, processes followed already and those that moved can be counts.
        let mut pids = std::mem::take(&mut self.pids);
        pids.clear();
        pids.extend(
            self.procs
                .iter()
                .filter(|(_, p)| p.instance.is_some())
                .map(|(&pid, _)| pid),
        );
        pids.extend(self.counts.keys().copied());
        pids.extend(movers.iter().copied());
        pids.sort_unstable();
        pids.dedup();
        for &pid in &pids {
            let Some(p) = self.procs.get(&pid) else {
                continue;
            };
            if p.seen != self.generation || p.unreadable || p.kernel {
                continue;
            }
            let kind = match &p.instance {
                Some(Instance::Rpv(_)) => Kind::Rpv,
                Some(Instance::Pv) => Kind::Pv,
                Some(Instance::Watching) => continue,
                None if self.counts.contains_key(&pid)
                    || (movers.contains(&pid)
                        && p.fds.iter().any(|f| matches!(f.target, Target::Socket(_)))
                        && !self.pipes.iter().any(|x| x.watcher.holds(pid))) =>
                {
                    Kind::Socket
                }
                None => continue,
            };
            let start = p.start;
            let totals = (p.moved, p.tcp);
            let (amount, size, file) = self.count_of(pid, kind);
            if let Some(c) = self.counts.get_mut(&pid) {
                if c.start == start {
                    let amount = if kind == Kind::Socket {
                        // The larger of the two counts: a program using read and write
                        // on its sockets shows in both.
                        totals
                            .0
                            .saturating_sub(c.base.0)
                            .max(totals.1.saturating_sub(c.base.1))
                    } else {
                        amount
                    };
                    if amount != c.amount {
                        c.moved += amount.saturating_sub(c.amount);
                        c.amount = amount;
                        c.last_move_ns = now_ns;
                    }
                    c.size = size;
                    c.file = file;
                    continue;
                }
            }
            let id = self.new_id();
            let base = if kind == Kind::Socket { totals } else { (0, 0) };
            let first = if kind == Kind::Socket { 0 } else { amount };
            self.counts.insert(
                pid,
                CountFlow {
                    id,
                    kind,
                    start,
                    base,
                    amount: first,
                    moved: 0,
                    size,
                    file,
                    since_ns: now_ns,
                    last_move_ns: now_ns,
                },
            );
        }
        self.pids = pids;
        let gone: Vec<u32> = self
            .counts
            .iter()
            .filter(|(pid, c)| self.procs.get(pid).is_none_or(|p| p.start != c.start))
            .map(|(&pid, _)| pid)
            .collect();
        for pid in gone {
            if let Some(c) = self.counts.remove(&pid) {
                if c.moved > 0 {
                    let flow = self.count_flow(pid, &c, true);
                    self.ended.push(flow);
                }
            }
        }
    }

    /// An instance's or socket user's count: (amount, size, file).
    fn count_of(&mut self, pid: u32, kind: Kind) -> (u64, u64, Option<String>) {
        let Some(p) = self.procs.get_mut(&pid) else {
            return (0, 0, None);
        };
        if let Some(Instance::Rpv(query)) = &mut p.instance {
            if query.is_none() {
                *query = ProgressQuery::connect(pid, RPV_ANSWER);
            }
            match query.as_mut().and_then(ProgressQuery::ask) {
                Some((_, amount, size)) => return (amount, size, None),
                None => *query = None,
            }
            return (0, 0, None);
        }
        if kind == Kind::Pv {
            // The file pv reads, when it reads one: its position says how far it is.
            let file = self
                .files
                .iter()
                .filter(|f| f.pid == pid && !f.writes && !f.device)
                .max_by_key(|f| f.size);
            if let Some(f) = file {
                return (f.pos, f.size, Some(f.path.clone()));
            }
        }
        (p.moved, 0, None)
    }

    fn count_flow(&self, pid: u32, c: &CountFlow, ended: bool) -> Flow {
        let command = self.known_command(pid);
        Flow {
            id: c.id,
            view: FlowView {
                kind: c.kind,
                pid,
                command,
                file: c.file.clone(),
                fd: None,
                writes: false,
                bottleneck: None,
                zoom: Zoom::Watch(pid, None),
            },
            amount: c.amount,
            moved: c.moved,
            size: c.size,
            since_ns: c.since_ns,
            ended,
        }
    }

    /// Pipelines: a process that moved with a pipe on its standard input or output and
    /// that no followed pipeline holds is looked at with the pipeline view's discovery; a
    /// pipeline of two stages or more becomes a flow.
    fn follow_pipelines(&mut self, movers: &[u32], now_ns: u64) {
        self.sweep.borrow_mut().clear();
        self.not_pipeline.retain(|_, until| *until > now_ns);
        for &pid in movers {
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
            let proc = Box::new(SharedProc::new(self.sweep.clone()));
            match Watcher::with_proc(proc, pid) {
                Ok(mut watcher) if !self.holds_own(&watcher) && !self.followed(&watcher) => {
                    watcher.set_interval(self.interval);
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
    fn joined(&self, pid: u32) -> bool {
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
    fn followed(&self, watcher: &Watcher) -> bool {
        watcher
            .processes()
            .any(|(pid, _)| self.pipes.iter().any(|p| p.watcher.holds(pid)))
    }

    /// True if rpv itself (or the view it opened) is a stage of `watcher`'s pipeline.
    fn holds_own(&self, watcher: &Watcher) -> bool {
        watcher.holds(self.own) || self.exclude.is_some_and(|pid| watcher.holds(pid))
    }

    /// Flows that have not moved for [`IDLE_DROP_NS`] end.
    fn drop_idle(&mut self, now_ns: u64) {
        let idle = |last: u64| now_ns.saturating_sub(last) >= IDLE_DROP_NS;
        let mut files = std::mem::take(&mut self.files);
        files.retain(|f| {
            if f.moved > 0 && idle(f.last_move_ns) {
                let flow = self.file_flow(f, true);
                self.ended.push(flow);
                return false;
            }
            true
        });
        self.files = files;
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
        let pids: Vec<u32> = (self.files.iter().filter(|f| f.moved > 0).map(|f| f.pid))
            .chain(self.counts.keys().copied())
            .collect();
        self.commands.clear();
        for pid in pids {
            let command = self.command(pid);
            self.commands.insert(pid, command);
        }
        let pv = |pid: u32| {
            self.procs
                .get(&pid)
                .is_some_and(|p| matches!(p.instance, Some(Instance::Pv)))
        };
        for f in self.files.iter().filter(|f| f.moved > 0 && !pv(f.pid)) {
            out.push(self.file_flow(f, false));
        }
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
    /// Not followed (unreadable, gone, a kernel thread).
    Skip,
}

impl Process {
    fn unreadable(other_user: bool, generation: u64) -> Process {
        Process {
            start: 0,
            unreadable: true,
            other_user,
            kernel: false,
            io: Io::default(),
            moved: 0,
            tcp: 0,
            fds: Vec::new(),
            command: None,
            instance: None,
            seen: generation,
            walked_ns: None,
            walked: 0,
            quiet: 0,
            command_stale: false,
        }
    }
}

/// The bytes through a pipeline: what its first stage wrote (else what the second read).
fn pipeline_amount(view: &crate::pipeline::View) -> Option<u64> {
    let first = view.stages.first()?;
    first
        .bytes_out
        .or(first.amount)
        .or_else(|| view.stages.get(1).and_then(|s| s.amount))
}

/// A pipeline's row: the stages' commands, its bottleneck and why.
fn pipeline_view(view: &crate::pipeline::View) -> FlowView {
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
        fd: None,
        writes: false,
        bottleneck,
        zoom: Zoom::Pipeline(pid),
    }
}

fn pipe_flow(p: &PipeFlow, ended: bool) -> Flow {
    Flow {
        id: p.id,
        view: p.view.clone(),
        amount: p.amount,
        moved: p.amount,
        size: 0,
        since_ns: p.since_ns,
        ended,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fdinfo_position_and_mode() {
        let text = "pos:\t4096\nflags:\t0100001\nmnt_id:\t29\nino:\t1234\n";
        assert_eq!(parse_fdinfo(text), Some((4096, 0o100001)));
        assert!(write_only(0o100001));
        assert!(!write_only(0o100000));
        assert!(!write_only(0o100002), "read-write is not write-only");
        assert_eq!(parse_fdinfo("flags:\t0\n"), None);
    }

    #[test]
    fn rpv_command_lines_that_transfer() {
        assert!(rpv_transfers(b"rpv\0-L\x00100k\0file\0"));
        assert!(rpv_transfers(b"/usr/bin/rpv\0-q\0"));
        assert!(!rpv_transfers(b"rpv\0--top\0"));
        assert!(!rpv_transfers(b"rpv\0-d\x001234\0"));
        assert!(!rpv_transfers(b"rpv\0-Q\x001234\0"));
        assert!(!rpv_transfers(b""));
    }

    #[test]
    fn flow_names_say_the_direction() {
        let mut view = FlowView {
            kind: Kind::File,
            pid: 1,
            command: "dd of=x".into(),
            file: Some("/tmp/x".into()),
            fd: Some(1),
            writes: true,
            bottleneck: None,
            zoom: Zoom::Watch(1, Some(1)),
        };
        assert_eq!(view.name(), "dd of=x > /tmp/x");
        view.writes = false;
        assert_eq!(view.name(), "dd of=x < /tmp/x");
        view.file = None;
        assert_eq!(view.name(), "dd of=x");
    }
}
