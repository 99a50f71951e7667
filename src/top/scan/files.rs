//! File and device flows: a descriptor's position from `/proc/PID/fdinfo/FD`, the size
//! from the file or `/sys/dev/block`; new descriptors only of processes walked at this
//! scan, positions only of processes that moved (or flows that have).
//!
//! A copy made inside the kernel (`copy_file_range`, `sendfile`, `splice`: `cp` copies a
//! file in calls of up to 2 GiB) moves no counter of `/proc/PID/io` and no position until
//! a call returns; the written file grows all along. So the file a process writes, when it
//! also reads a file, is looked at (one `stat` through its link) at each scan, and its
//! growth is the flow's progress when it is ahead of the position. A process reading one file and
//! writing another is one flow, a copy, with both names, the source's size and, at its
//! end, the written file's final size.

use std::collections::HashSet;

use super::{Instance, Scanner, Target};
use crate::procfs::ProcFile;
use crate::procfs::{command_text, fdinfo_flags, fdinfo_ino, fdinfo_pos, stat_fields, FdStat};
use crate::top::{Flow, FlowView, Kind, Zoom};

/// A file or device flow's state.
pub(super) struct FileFlow {
    pub(super) id: u64,
    pub(super) pid: u32,
    pub(super) start: u64,
    pub(super) fd: i32,
    /// Other descriptors of the process on the same open file description (`> log 2>&1`:
    /// descriptors 1 and 2 share one position; one flow, counted once).
    pub(super) dups: Vec<i32>,
    pub(super) dev: u64,
    pub(super) ino: u64,
    /// The inode its descriptor's `fdinfo` gave when it was first followed (`None` on
    /// kernels before 5.10): another inode there later is another file on the same
    /// descriptor number. (Not compared with `ino`, a `stat`'s: a filesystem such as
    /// overlayfs may number the two differently.)
    pub(super) open_ino: Option<u64>,
    pub(super) device: bool,
    pub(super) path: String,
    /// The path's exact bytes, when they are not UTF-8 (`path` then has U+FFFD in place of
    /// what does not decode).
    pub(super) raw: Option<Vec<u8>>,
    /// Its open flags (`fdinfo`).
    pub(super) flags: u32,
    pub(super) writes: bool,
    /// Opened to append (a log): never the written side of a copy.
    pub(super) append: bool,
    pub(super) pos: u64,
    pub(super) moved: u64,
    pub(super) size: u64,
    pub(super) growing: bool,
    /// Its progress was seen as the written file's growth ahead of its position: it
    /// copies inside the kernel.
    pub(super) in_kernel: bool,
    /// Of the written side of a copy: at this scan its process worked inside the kernel
    /// while neither side moved nor the written file grew (a copy whose progress cannot
    /// be seen: into a file made to its size first, or a device); and its user and
    /// system time at the last look.
    pub(super) unseen: bool,
    pub(super) ticks: Option<(u64, u64)>,
    /// Of a file written: what it held when first seen (its growth beyond that is what
    /// a copy inside the kernel moved; a file made to its full size first, or written in
    /// place, holds its size from the start).
    pub(super) held_at_start: u64,
    pub(super) since_ns: u64,
    pub(super) last_move_ns: u64,
    /// When its size was last read.
    pub(super) sized_ns: u64,
}

/// True if the `flags` of an `fdinfo` file open the file for writing only.
pub(super) fn write_only(flags: u32) -> bool {
    flags & libc::O_ACCMODE as u32 == libc::O_WRONLY as u32
}

/// The bytes a file being written holds: its size, or the space it takes when that is
/// less (a file made to its full size first and then filled, or a sparse one).
fn written(m: &FdStat) -> u64 {
    m.size.min(m.blocks.saturating_mul(512))
}

/// How often the size of a file read within its size is read again (see
/// [`Scanner::moved_to`]).
const SIZE_EVERY_NS: u64 = 2_000_000_000;

/// A copy is looked at for work inside the kernel while its process's counters have not
/// moved for at most this many looks (see [`Scanner::busy_in_kernel`]).
const UNSEEN_QUIET: u32 = 20;

/// A process with at most this many descriptors is walked again as soon as one of its
/// followed ones closes ([`Scanner::walk_closed`]).
const REWALK_FDS: usize = 64;

/// A candidate: (pid, start, fd, dev, ino, device, path).
type Candidate = (u32, u64, i32, u64, u64, bool, String);

impl Scanner {
    /// File and device flows: new descriptors of processes that moved, and the position
    /// of every followed one.
    pub(super) fn follow_files(&mut self, movers: &[u32], now_ns: u64, buf: &mut Vec<u8>) {
        for c in self.file_candidates() {
            if (self.stop)() {
                return;
            }
            self.add_file(c, now_ns, buf);
        }
        let movers: HashSet<u32> = movers.iter().copied().collect();
        // Processes that read a file: a file they write may be the other side of a copy.
        let readers: HashSet<u32> = (self.files.iter())
            .filter(|f| !f.writes && !f.device)
            .map(|f| f.pid)
            .collect();
        // Processes reading one file and writing another: a copy, perhaps inside the kernel.
        let copiers: HashSet<u32> = (self.files.iter())
            .filter(|w| copy_source(&self.files, w, &HashSet::new()).is_some())
            .map(|w| w.pid)
            .collect();
        let files = std::mem::take(&mut self.files);
        let mut kept = Vec::with_capacity(files.len());
        let mut closed = Vec::new();
        for mut f in files {
            let alive = self.alive(&f);
            // (Both sides of a copy of a process that ran lately are read too: a copy inside
            // the kernel moves no counter, only its descriptors' positions as each call
            // returns. Not any file of an idle process: a descriptor it shares with a
            // child, `cmd > log` in a shell, moves with the child's writes.)
            let lately = copiers.contains(&f.pid)
                && (self.procs.get(&f.pid)).is_some_and(|p| p.quiet <= UNSEEN_QUIET);
            let pos = if alive && (movers.contains(&f.pid) || f.moved > 0 || lately) {
                // (Another file on the same descriptor number since the last walk, as a
                // checksum program opens its next file: this one was closed.)
                (self.fdinfo(f.pid, f.fd, buf))
                    .filter(|&(_, _, ino)| ino == f.open_ino)
                    .map(|(pos, _, _)| pos)
            } else if alive {
                Some(f.pos)
            } else {
                None
            };
            let Some(pos) = pos else {
                if alive && !closed.contains(&f.pid) {
                    closed.push(f.pid);
                }
                self.end_file(f);
                continue;
            };
            if pos != f.pos && !(f.in_kernel && pos < f.pos) {
                self.moved_to(&mut f, pos, now_ns);
            }
            let copying = f.writes && !f.append && !f.device && readers.contains(&f.pid);
            if copying {
                self.grown(&mut f, now_ns);
            }
            kept.push(f);
        }
        self.files = kept;
        self.walk_closed(&closed, now_ns, buf);
        let mut kept = std::mem::take(&mut self.files);
        // A copy nothing of which moved at this scan, while its process works inside the
        // kernel: its progress cannot be seen.
        let moved: HashSet<u32> = (kept.iter())
            .filter(|f| f.last_move_ns == now_ns)
            .map(|f| f.pid)
            .collect();
        let none = HashSet::new();
        // (Only of processes whose counters moved not long ago, or unseen at the last
        // scan: a copy starts as its program starts or as its last call returns, and an
        // idle process holding two files costs no look at every scan.)
        let recent = |f: &FileFlow| {
            f.unseen
                || self
                    .procs
                    .get(&f.pid)
                    .is_some_and(|p| p.quiet <= UNSEEN_QUIET)
        };
        let sides: Vec<bool> = (kept.iter())
            .map(|f| recent(f) && copy_source(&kept, f, &none).is_some())
            .collect();
        for (f, side) in kept.iter_mut().zip(sides) {
            // (Its times are looked at whether it moved or not: the next look compares
            // with this one.)
            f.unseen = side && self.busy_in_kernel(f) && !moved.contains(&f.pid);
            if f.unseen {
                // Working: not an idle flow to drop.
                f.last_move_ns = now_ns;
            }
        }
        self.files = kept;
    }

    /// Processes (`pids`) one of whose followed descriptors was found closed while they
    /// live on: their descriptors changed (dd moving its output to descriptor 1, a checksum
    /// program going on to its next file), so they are walked again at once and what they
    /// opened instead is followed from this scan, not from their next walk, up to 4 s away.
    /// (Not a process with many descriptors: a walk costs a `readlink` for each.)
    fn walk_closed(&mut self, pids: &[u32], now_ns: u64, buf: &mut Vec<u8>) {
        let mut walked = false;
        for &pid in pids {
            let due = (self.procs.get(&pid))
                .is_some_and(|p| p.walked != self.generation && p.fds.len() <= REWALK_FDS);
            if due && !(self.stop)() {
                self.walk(pid, now_ns);
                walked = true;
            }
        }
        if walked {
            for c in self.file_candidates() {
                if (self.stop)() {
                    return;
                }
                self.add_file(c, now_ns, buf);
            }
        }
    }

    /// Regular files and block devices of processes walked at this scan (they moved, or
    /// are new), not already followed.
    fn file_candidates(&self) -> Vec<Candidate> {
        let mut candidates = Vec::new();
        for (&pid, p) in &self.procs {
            let rpv = matches!(p.instance, Some(Instance::Rpv | Instance::Watching));
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
                    let followed = self.files.iter().any(|x| {
                        x.pid == pid
                            && (x.fd == f.fd || x.dups.contains(&f.fd))
                            && (x.dev, x.ino) == (*dev, *ino)
                    });
                    if !followed {
                        candidates.push((pid, p.start, f.fd, *dev, *ino, *device, path.clone()));
                    }
                }
            }
        }
        candidates
    }

    /// Follows a candidate from its position now.
    fn add_file(&mut self, c: Candidate, now_ns: u64, buf: &mut Vec<u8>) {
        let (pid, start, fd, dev, ino, device, path) = c;
        let Some((pos, flags, open_ino)) = self.fdinfo(pid, fd, buf) else {
            return;
        };
        // The same file at the same position with the same flags: a copy of a descriptor
        // already followed (`dup`, `2>&1`), the same open file description.
        if let Some(same) = self.files.iter_mut().find(|x| {
            (x.pid, x.start, x.dev, x.ino) == (pid, start, dev, ino)
                && x.pos == pos
                && x.flags == flags
        }) {
            same.dups.push(fd);
            return;
        }
        let (size, growing) = self.file_size(pid, fd, device, dev);
        let held_at_start = if write_only(flags) && !device {
            (self.proc.fd_stat(pid, fd as u32)).map_or(0, |m| written(&m))
        } else {
            0
        };
        let raw = (path.contains('\u{FFFD}'))
            .then(|| self.proc.fd_link_bytes(pid, fd as u32))
            .flatten()
            .filter(|bytes| std::str::from_utf8(bytes).is_err());
        let id = self.new_id();
        self.files.push(FileFlow {
            id,
            pid,
            start,
            fd,
            dups: Vec::new(),
            dev,
            ino,
            open_ino,
            device,
            path,
            raw,
            flags,
            writes: write_only(flags),
            append: flags & libc::O_APPEND as u32 != 0,
            pos,
            moved: 0,
            size,
            growing,
            in_kernel: false,
            unseen: false,
            ticks: None,
            held_at_start,
            since_ns: now_ns,
            last_move_ns: now_ns,
            sized_ns: now_ns,
        });
    }

    /// True if the process of `f` still has its file open on the same descriptor.
    fn alive(&self, f: &FileFlow) -> bool {
        self.procs.get(&f.pid).is_some_and(|p| {
            p.start == f.start
                && p.fds.iter().any(|d| {
                    d.fd == f.fd
                        && matches!(&d.target, Target::File { dev, ino, .. }
                            if *dev == f.dev && *ino == f.ino)
                })
        })
    }

    /// The descriptor of `f` is at `pos` now.
    fn moved_to(&mut self, f: &mut FileFlow, pos: u64, now_ns: u64) {
        // A file read within its size is not looked at again at every move (a `stat` a
        // scan per file): its size is read again every [`SIZE_EVERY_NS`], and whenever the
        // position passes it. A device's size is read once.
        let known = if f.device {
            f.size > 0
        } else {
            !f.writes && pos <= f.size && now_ns < f.sized_ns + SIZE_EVERY_NS
        };
        if known {
            // (A position past the end is a seek, not data moved, as below.)
            if pos > f.pos && pos <= f.size {
                f.moved += pos - f.pos;
            }
            f.pos = pos;
            f.last_move_ns = now_ns;
            return;
        }
        f.sized_ns = now_ns;
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

    /// The file `f` writes as one side of a copy: what it holds beyond the descriptor's
    /// position was copied inside the kernel.
    fn grown(&mut self, f: &mut FileFlow, now_ns: u64) {
        let Ok(m) = self.proc.fd_stat(f.pid, f.fd as u32) else {
            return;
        };
        let now = written(&m);
        // Only growth counts: what the file held when first seen was not copied since.
        let from = f.pos.max(f.held_at_start);
        if now > from {
            f.moved += now - from;
            f.pos = now;
            f.size = m.size;
            f.in_kernel = true;
            f.last_move_ns = now_ns;
        }
    }

    /// Whether the process of `f` (the written side of a copy, nothing of which moved at
    /// this scan) works inside the kernel: running with its system time grown more than
    /// its user time since the last look (a program starting or computing spends its time
    /// in user space), or waiting for a disk.
    fn busy_in_kernel(&mut self, f: &mut FileFlow) -> bool {
        let Ok(text) = self.proc.read(f.pid, ProcFile::Stat, false) else {
            return false;
        };
        let text = String::from_utf8_lossy(&text);
        let Some(fields) = stat_fields(&text) else {
            return false;
        };
        // Field 3 is the state, fields 14 and 15 the user and system time.
        let state = fields.first().and_then(|s| s.chars().next());
        let tick = |n: usize| fields.get(n - 3).and_then(|t| t.parse::<u64>().ok());
        let (Some(user), Some(system)) = (tick(14), tick(15)) else {
            return false;
        };
        let before = f.ticks.replace((user, system));
        match state {
            Some('D') => true,
            Some('R') => before.is_some_and(|(u, s)| {
                let (user, system) = (user.saturating_sub(u), system.saturating_sub(s));
                system > 0 && system >= user
            }),
            _ => false,
        }
    }

    /// `f` has ended (its process exited or closed it): a file it wrote is looked at once
    /// more by its path, so the flow's last figures are what the file holds.
    pub(super) fn end_file(&mut self, mut f: FileFlow) {
        if f.writes && !f.device {
            let same = |m: &FdStat| (m.dev, m.ino) == (f.dev, f.ino);
            if let Some(m) = self.proc.path_stat(&f.path).ok().filter(same) {
                let held = m.size;
                if held > f.pos && f.in_kernel {
                    f.moved += held - f.pos;
                    f.pos = held;
                }
            }
        }
        self.files_ended.push(f);
    }
    /// The size of the file open on `pid`'s `fd` and whether it is being written (it
    /// grows with the position, so its size says nothing of the end).
    pub(super) fn file_size(&mut self, pid: u32, fd: i32, device: bool, dev: u64) -> (u64, bool) {
        if device {
            return (self.proc.device_size(dev), false);
        }
        match self.proc.fd_stat(pid, fd as u32) {
            Ok(m) => (m.size, false),
            Err(_) => (0, false),
        }
    }

    pub(super) fn fdinfo(
        &mut self,
        pid: u32,
        fd: i32,
        buf: &mut Vec<u8>,
    ) -> Option<(u64, u32, Option<u64>)> {
        self.cost.fdinfo += 1;
        self.proc.fdinfo(pid, fd as u32, buf).ok()?;
        let text = String::from_utf8_lossy(buf);
        Some((fdinfo_pos(&text)?, fdinfo_flags(&text)?, fdinfo_ino(&text)))
    }

    /// The flows of `files` (followed, or ended at this scan): a process's one file read
    /// and one file written make one flow, a copy; every other file that moved is a flow
    /// of its own.
    pub(super) fn file_flows(
        &self,
        files: &[FileFlow],
        ended: bool,
        not_flows: &HashSet<(u32, i32)>,
        out: &mut Vec<Flow>,
    ) {
        let mut paired = HashSet::new();
        for (i, w) in files.iter().enumerate() {
            let Some(r) = copy_source(files, w, not_flows) else {
                continue;
            };
            // (A copy whose progress was never seen ends without a row: what it copied
            // cannot be told.)
            if w.moved > 0 || files[r].moved > 0 || (w.unseen && !ended) {
                paired.extend([i, r]);
                out.push(self.copy_flow(&files[r], w, ended));
            }
        }
        let pv = |pid: u32| {
            self.procs
                .get(&pid)
                .is_some_and(|p| matches!(p.instance, Some(Instance::Pv)))
        };
        for (i, f) in files.iter().enumerate() {
            let own = !not_flows.contains(&(f.pid, f.fd));
            if f.moved > 0 && own && !paired.contains(&i) && !pv(f.pid) {
                out.push(self.file_flow(f, ended));
            }
        }
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
                file_bytes: f.raw.clone(),
                to: None,
                to_bytes: None,
                fd: Some(f.fd),
                writes: f.writes,
                in_kernel: f.in_kernel,
                unseen: false,
                bottleneck: None,
                zoom: Zoom::Watch(f.pid, Some(f.fd)),
            },
            amount: f.pos,
            moved: f.moved,
            size,
            unit: crate::units::Unit::Bytes,
            since_ns: f.since_ns,
            ended,
        }
    }

    /// The copy of `r` into `w`: its progress is the further of the two sides (in the
    /// kernel, the written file grows while the read position stands still until the call
    /// returns), its size the source's.
    fn copy_flow(&self, r: &FileFlow, w: &FileFlow, ended: bool) -> Flow {
        let mut flow = self.file_flow(w, ended);
        flow.view.file = Some(r.path.clone());
        flow.view.file_bytes = r.raw.clone();
        flow.view.to = Some(w.path.clone());
        flow.view.to_bytes = w.raw.clone();
        flow.view.writes = false;
        flow.amount = r.pos.max(w.pos);
        flow.moved = r.moved.max(w.moved);
        flow.size = if r.growing { 0 } else { r.size };
        flow.since_ns = r.since_ns.min(w.since_ns);
        flow.view.in_kernel |= w.unseen;
        flow.view.unseen = w.unseen && !ended;
        flow
    }
}

/// Programs that read a script of their own (named by their first argument that is not
/// an option), besides those whose names start with `python`, `perl`, `ruby` or `lua`.
const INTERPRETERS: [&str; 18] = [
    "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox", "fish", "csh", "tcsh", "node",
    "php", "tclsh", "Rscript", "awk", "gawk", "mawk",
];

/// Whether a program named `comm` reads a script of its own.
fn interpreter(comm: &str) -> bool {
    INTERPRETERS.contains(&comm)
        || ["python", "perl", "ruby", "lua"]
            .iter()
            .any(|p| comm.starts_with(p))
}

/// Whether the program of a command line (`cmdline`'s first argument, its directory left
/// out) is an interpreter.
fn runs_interpreter(cmdline: &[u8]) -> bool {
    let program = cmdline.split(|&b| b == 0).next().unwrap_or_default();
    let name = program.rsplit(|&b| b == b'/').next().unwrap_or_default();
    interpreter(&String::from_utf8_lossy(name))
}

/// The script a command line (`cmdline`'s NUL-separated arguments) names: its first
/// argument after the program that is not an option.
fn script_of(cmdline: &[u8]) -> Option<String> {
    let arg =
        (cmdline.split(|&b| b == 0).skip(1)).find(|a| !a.is_empty() && !a.starts_with(b"-"))?;
    Some(String::from_utf8_lossy(arg).into_owned())
}

/// Whether `path` is the file `arg` names (as given: relative or absolute).
fn names(arg: &str, path: &str) -> bool {
    let arg = arg.trim_start_matches("./");
    path == arg || path.strip_suffix(arg).is_some_and(|p| p.ends_with('/'))
}

impl Scanner {
    /// The files read that are not flows of their own, as (PID, descriptor): an
    /// interpreter reading its own script (a shell keeps it open), and a pipeline stage's
    /// reads of files its command line does not name (`tar c dir | gzip`: tar's files,
    /// one after another; the pipeline's row shows what they move).
    pub(super) fn not_flows(&mut self, files: &[FileFlow]) -> HashSet<(u32, i32)> {
        let mut out = HashSet::new();
        for f in files.iter().filter(|f| !f.writes && !f.device) {
            let scripts = self.procs.get(&f.pid).map_or(&[][..], |p| &p.scripts[..]);
            if scripts.iter().any(|arg| names(arg, &f.path)) {
                out.insert((f.pid, f.fd));
                continue;
            }
            if self.pipes.iter().any(|p| p.watcher.holds(f.pid)) {
                let base = f.path.rsplit('/').next().unwrap_or(&f.path);
                if !self.command(f.pid).contains(base) {
                    out.insert((f.pid, f.fd));
                }
            }
        }
        out
    }

    /// Notes the script `pid` runs now, if it is an interpreter (see
    /// `Process::scripts`); with `command`, its command too when it is due to be read
    /// again (one read of the command line for both).
    pub(super) fn note_script(&mut self, pid: u32, command: bool) {
        let Some(p) = self.procs.get(&pid) else {
            return;
        };
        let stale = command && p.command_stale;
        // (Read whatever its name: a script run through its `#!` line has the script's
        // name, `pyenv-exec`, with `bash` only as its command line's program.)
        let Ok(cmdline) = self.proc.read(pid, ProcFile::Cmdline, false) else {
            return;
        };
        let Some(p) = self.procs.get_mut(&pid) else {
            return;
        };
        if stale {
            if let Some(text) = command_text(&cmdline) {
                p.command = Some(text);
                p.command_stale = false;
            }
        }
        if !interpreter(&p.comm) && !runs_interpreter(&cmdline) {
            return;
        }
        if let Some(script) = script_of(&cmdline) {
            if !p.scripts.contains(&script) {
                p.scripts.push(script);
            }
        }
    }
}

/// The file `w` copies from, when `w` is the one file its process writes (not to append)
/// and the process reads one other file (its index in `files`). Files on the standard
/// descriptors (0-2) count only when the process opened none itself: a shell opens them
/// for it (`cp a b > log 2>&1`), and a copy's files are the program's own.
fn copy_source(files: &[FileFlow], w: &FileFlow, not_flows: &HashSet<(u32, i32)>) -> Option<usize> {
    if !w.writes || w.device || w.append {
        return None;
    }
    let same = |f: &FileFlow| f.pid == w.pid && f.start == w.start && !f.device;
    let writer = |f: &&FileFlow| same(f) && f.writes && !f.append;
    let source = |(_, f): &(usize, &FileFlow)| {
        same(f)
            && !f.writes
            && (f.dev, f.ino) != (w.dev, w.ino)
            && !not_flows.contains(&(f.pid, f.fd))
    };
    let own = |f: &FileFlow| f.fd > 2;
    let own_writers = files.iter().filter(writer).any(own);
    let own_sources = files.iter().enumerate().filter(source).any(|(_, f)| own(f));
    let written = one(files
        .iter()
        .filter(writer)
        .filter(|f| !own_writers || own(f)))?;
    let (i, _) = one((files.iter().enumerate())
        .filter(source)
        .filter(|(_, f)| !own_sources || own(f)))?;
    (written.fd == w.fd).then_some(i)
}

/// The only item of `items`, if there is exactly one.
fn one<T>(mut items: impl Iterator<Item = T>) -> Option<T> {
    let first = items.next()?;
    items.next().is_none().then_some(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_only_mode() {
        assert!(write_only(0o100001));
        assert!(!write_only(0o100000));
        assert!(!write_only(0o100002), "read-write is not write-only");
    }
}
