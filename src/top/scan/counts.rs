//! Flows followed through a process's own counts: socket users (the larger of what the
//! process read and wrote, and its TCP sockets' bytes over `sock_diag`), rpv instances
//! (their count, over their control channel) and pv instances (the file they read, else
//! their counters).

use std::collections::HashMap;

use super::{Instance, Process, Scanner, Target};
use crate::top::{Flow, FlowView, Kind, Zoom};
use crate::units::Unit;

/// Least time between two walks of every process's descriptors (to find who holds a
/// socket that moved), in nanoseconds.
const FULL_WALK_NS: u64 = 30_000_000_000;
/// Least time between two walks of the processes that hold TCP sockets (to find which
/// of them holds a new socket that moved), in nanoseconds.
const HOLDERS_WALK_NS: u64 = 1_000_000_000;

/// A flow followed through a process's counters (sockets, rpv, pv).
pub(super) struct CountFlow {
    pub(super) id: u64,
    pub(super) kind: Kind,
    pub(super) start: u64,
    /// An rpv counting lines: its amount and size are lines.
    pub(super) lines: bool,
    /// Of a socket user: its I/O count at the last scan, what of it went through its
    /// sockets since it was first seen, and its TCP count then.
    pub(super) last_io: u64,
    pub(super) io: u64,
    pub(super) base_tcp: u64,
    pub(super) amount: u64,
    pub(super) moved: u64,
    pub(super) size: u64,
    pub(super) file: Option<String>,
    pub(super) since_ns: u64,
    pub(super) last_move_ns: u64,
}

/// Whether `p` holds a socket (at its last walk).
fn holds_socket(p: &Process) -> bool {
    p.fds.iter().any(|f| matches!(f.target, Target::Socket(_)))
}

/// Whether `p`'s descriptors are all sockets and pipes, but for a terminal on 0 to 2 (the
/// few bytes typed and shown there): its I/O counters then count its sockets' and pipes'
/// bytes only. The null device or a file on its standard output is not (its counters
/// would count what it writes there).
fn only_sockets_and_pipes(p: &Process) -> bool {
    (p.fds.iter()).all(|f| match f.target {
        Target::Socket(_) | Target::Pipe(_) => true,
        Target::Other => f.fd <= 2 && is_terminal(&f.link),
        Target::File { .. } => false,
    })
}

/// Whether a descriptor's link names a terminal.
fn is_terminal(link: &str) -> bool {
    ["/dev/pts/", "/dev/tty", "/dev/console"]
        .iter()
        .any(|t| link.starts_with(t))
}

impl Scanner {
    /// The bytes of every TCP socket (see [`crate::sys::tcp_bytes`]) since the last scan,
    /// added to the processes that hold them; returns the processes whose sockets moved.
    /// A socket no walked process holds makes every process's descriptors be walked, at
    /// most every [`FULL_WALK_NS`]; one still unknown then (another user's, another
    /// namespace's) is not looked for again. Between two such walks, a new socket makes the
    /// processes that hold TCP sockets be walked (at most every [`HOLDERS_WALK_NS`], once
    /// per socket): a server's newly accepted connection, whose bytes no io counter shows.
    pub(super) fn follow_tcp(&mut self, now_ns: u64) -> Vec<u32> {
        let mut now = HashMap::new();
        if !(self.tcp)(&mut now).unwrap_or(false) {
            // Not read (no TCP segment since the last read, or an error): nothing moved.
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
        self.tcp_sought.retain(|inode| now.contains_key(inode));
        self.tcp_last = now;
        let mut owners = self.socket_owners();
        let unknown = |s: &Scanner, owners: &HashMap<u64, u32>, sought: bool| -> Vec<u64> {
            (moved.iter())
                .map(|&(inode, _)| inode)
                .filter(|i| !owners.contains_key(i) && !s.tcp_unknown.contains(i))
                .filter(|i| !sought || !s.tcp_sought.contains(i))
                .collect()
        };
        if !unknown(self, &owners, false).is_empty() && now_ns >= self.next_full_walk_ns {
            self.next_full_walk_ns = now_ns + FULL_WALK_NS;
            let everyone: Vec<u32> = (self.procs.iter())
                .filter(|(_, p)| p.seen == self.generation && !p.unreadable && !p.kernel)
                .map(|(&pid, _)| pid)
                .collect();
            if !self.walk_all(&everyone, now_ns) {
                return Vec::new();
            }
            owners = self.socket_owners();
            let still = unknown(self, &owners, false);
            self.tcp_unknown.extend(still);
        } else if !unknown(self, &owners, true).is_empty() && now_ns >= self.next_holders_walk_ns {
            // A new socket of a process already walked: most often a connection a server
            // accepted, or one a client opened beside its others. Its process is among
            // those that hold TCP sockets (a listening one included), found at once;
            // another process's waits for the next walk of every process.
            self.next_holders_walk_ns = now_ns + HOLDERS_WALK_NS;
            let holders: Vec<u32> = (owners.iter())
                .filter(|(inode, _)| self.tcp_last.contains_key(inode))
                .map(|(_, &pid)| pid)
                .collect::<std::collections::BTreeSet<u32>>()
                .into_iter()
                .collect();
            if !self.walk_all(&holders, now_ns) {
                return Vec::new();
            }
            owners = self.socket_owners();
            let still = unknown(self, &owners, true);
            self.tcp_sought.extend(still);
        }
        let mut movers = Vec::new();
        for (inode, delta) in moved {
            let Some(&pid) = owners.get(&inode) else {
                continue;
            };
            if let Some(p) = self.procs.get_mut(&pid) {
                p.tcp = p.tcp.saturating_add(delta);
                // (It may run another program since: its next walk reads its command.)
                p.walk_owed = true;
                if !movers.contains(&pid) {
                    movers.push(pid);
                }
            }
        }
        movers
    }

    /// Walks the descriptors of each of `pids`; false if the run ends meanwhile.
    fn walk_all(&mut self, pids: &[u32], now_ns: u64) -> bool {
        for &pid in pids {
            if (self.stop)() {
                return false;
            }
            self.walk(pid, now_ns);
        }
        true
    }

    /// Which process holds each socket, as the walks found them.
    pub(super) fn socket_owners(&self) -> HashMap<u64, u32> {
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

    /// Socket flows and rpv/pv instances: processes followed through their own counts.
    pub(super) fn follow_counts(&mut self, movers: &[u32], now_ns: u64) {
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
            if let Some(kind) = self.count_kind(pid, movers) {
                self.follow_count(pid, kind, now_ns);
            }
        }
        self.pids = pids;
        let gone: Vec<u32> = (self.counts.iter())
            .filter(|(&pid, c)| {
                self.procs.get(&pid).is_none_or(|p| p.start != c.start)
                    || (c.kind == Kind::Socket && !self.procs.get(&pid).is_some_and(holds_socket))
            })
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

    /// What kind of count `pid` is followed as, if any: an rpv or a pv, or a socket user:
    /// a process that holds a socket now (one that held one once and moves bytes through
    /// other descriptors since is not) and that moved, outside any pipeline followed.
    fn count_kind(&self, pid: u32, movers: &[u32]) -> Option<Kind> {
        let p = self.procs.get(&pid)?;
        if p.seen != self.generation || p.unreadable || p.kernel {
            return None;
        }
        match &p.instance {
            Some(Instance::Rpv) => Some(Kind::Rpv),
            Some(Instance::Pv) => Some(Kind::Pv),
            Some(Instance::Watching) => None,
            None if holds_socket(p)
                && (self.counts.contains_key(&pid) || movers.contains(&pid))
                && !self.pipes.iter().any(|x| x.watcher.holds(pid)) =>
            {
                Some(Kind::Socket)
            }
            None => None,
        }
    }

    /// Follows `pid`'s count as a flow of `kind` (from its count now, if it is new).
    fn follow_count(&mut self, pid: u32, kind: Kind, now_ns: u64) {
        let Some(p) = self.procs.get(&pid) else {
            return;
        };
        let (start, moved, tcp) = (p.start, p.moved, p.tcp);
        // Its I/O counters are its sockets' bytes only when it holds nothing else they
        // could count (no file, no device such as the null device) and no TCP socket of
        // its has told its bytes (`send` and `recv` are not in the counters).
        let io_counts = tcp == 0 && only_sockets_and_pipes(p);
        let (amount, size, file) = self.count_of(pid, kind);
        let lines = self.procs.get(&pid).is_some_and(|p| p.lines);
        if let Some(c) = self.counts.get_mut(&pid) {
            if c.start == start {
                c.lines = lines;
                let amount = if kind == Kind::Socket {
                    if io_counts {
                        c.io += moved.saturating_sub(c.last_io);
                    }
                    c.last_io = moved;
                    // The larger of the two counts: a program using read and write on
                    // its sockets shows in both.
                    c.io.max(tcp.saturating_sub(c.base_tcp))
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
                return;
            }
        }
        let id = self.new_id();
        let first = if kind == Kind::Socket { 0 } else { amount };
        self.counts.insert(
            pid,
            CountFlow {
                id,
                kind,
                start,
                lines,
                last_io: moved,
                io: 0,
                base_tcp: tcp,
                amount: first,
                moved: 0,
                size,
                file,
                since_ns: now_ns,
                last_move_ns: now_ns,
            },
        );
    }

    /// An instance's or socket user's count: (amount, size, file).
    pub(super) fn count_of(&mut self, pid: u32, kind: Kind) -> (u64, u64, Option<String>) {
        let Some(p) = self.procs.get_mut(&pid) else {
            return (0, 0, None);
        };
        if let Some(Instance::Rpv) = p.instance {
            let told = self.proc.rpv_figures(pid);
            let Some(p) = self.procs.get_mut(&pid) else {
                return (0, 0, None);
            };
            return match told {
                Some(f) if f.transfer => {
                    p.lines = f.lines;
                    (f.amount, f.size, None)
                }
                Some(_) => {
                    // It only watches: no figures of its own, not asked again.
                    p.instance = Some(Instance::Watching);
                    (0, 0, None)
                }
                None => (0, 0, None),
            };
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

    pub(super) fn count_flow(&self, pid: u32, c: &CountFlow, ended: bool) -> Flow {
        let command = self.known_command(pid);
        Flow {
            id: c.id,
            view: FlowView {
                kind: c.kind,
                pid,
                command,
                file: c.file.clone(),
                file_bytes: None,
                to: None,
                to_bytes: None,
                fd: None,
                writes: false,
                in_kernel: false,
                unseen: false,
                bottleneck: None,
                zoom: Zoom::Watch(pid, None),
            },
            amount: c.amount,
            moved: c.moved,
            size: c.size,
            unit: if c.lines { Unit::Lines } else { Unit::Bytes },
            since_ns: c.since_ns,
            ended,
        }
    }
}
