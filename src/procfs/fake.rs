//! A synthetic process table for the tests of discovery, sampling and classification
//! (the pipeline view, the stall report) and of `--top`'s scanner.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::io;
use std::rc::Rc;

use super::{CpuTimes, End, FdKind, FdStat, Fill, Io, Proc, ProcFile, RpvFigures};

/// One thread.
#[derive(Debug, Clone)]
pub(crate) struct FakeTask {
    pub tid: u32,
    pub state: char,
    pub wchan: String,
    pub ticks: u64,
    /// `schedstat`: nanoseconds on a CPU and waiting for one.
    pub run_ns: u64,
    pub delay_ns: u64,
}

/// One process.
#[derive(Debug, Clone)]
pub(crate) struct FakeProcess {
    pub comm: String,
    pub cmdline: String,
    pub ppid: u32,
    pub session: u32,
    pub start: u64,
    pub tasks: Vec<FakeTask>,
    pub stdin: End,
    pub stdout: End,
    pub io: Io,
    pub hidden: bool,
    /// A kernel thread (`PF_KTHREAD` in its stat flags).
    pub kernel: bool,
    /// An rpv's count, when it answers over its control channel (see `rpv_as`).
    pub rpv: Option<u64>,
    /// The rest of what that rpv tells: its size, and whether it counts lines and runs a
    /// transfer.
    pub rpv_as: RpvFigures,
    /// The open flags of its standard input (`O_RDONLY` unless set; standard output is
    /// `O_WRONLY`).
    pub stdin_flags: u32,
    /// CPU ticks of its children it has reaped (`cutime` in `stat`).
    pub reaped_ticks: u64,
    /// Its system time (`stime` in `stat`), in clock ticks, apart from its tasks' ticks
    /// (which `stat` shows as user time).
    pub system_ticks: u64,
    /// Its own I/O counts (`task/TID/io`), when they differ from `io` (which counts the
    /// children it has reaped too).
    pub own_io: Option<Io>,
    /// Descriptors beyond its standard input and output (and those, when set here).
    pub fds: BTreeMap<u32, FakeFd>,
    /// Its user.
    pub uid: u32,
}

/// What a descriptor of [`FakeProcess::fds`] is open on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FakeTarget {
    /// A regular file: its path, inode (on device 1), size and allocated bytes.
    File {
        path: String,
        ino: u64,
        size: u64,
        allocated: u64,
    },
    /// A block device: its path, device number and size.
    Device { path: String, rdev: u64, size: u64 },
    /// A character device (`/dev/null`).
    CharDevice(String),
    /// A socket, by inode.
    Socket(u64),
    /// A pipe, by inode.
    Pipe(u64),
}

/// A descriptor: what it is open on, its position and its open flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FakeFd {
    pub target: FakeTarget,
    pub pos: u64,
    pub flags: u32,
}

/// The table, shared between the test and the watcher it feeds.
#[derive(Debug, Default)]
pub(crate) struct FakeTable {
    pub procs: BTreeMap<u32, FakeProcess>,
    pub pipes: HashMap<u64, Fill>,
    /// Full listings of `/proc` (one per scan).
    pub scans: usize,
    /// The machine's CPU times (`/proc/stat`).
    pub cpu: Option<CpuTimes>,
    /// Cores the watcher may use (2 unless set).
    pub cores: Option<usize>,
    /// Reads of `stat` files (a process's or a thread's) and of `io` files so far.
    pub stat_reads: usize,
    pub io_reads: usize,
    /// Reads of `cmdline` files so far.
    pub cmdline_reads: usize,
    /// `stat`s of descriptors so far.
    pub fd_stats: usize,
    /// Descriptors' links read so far.
    pub link_reads: usize,
    /// Listings of a process's descriptors' numbers only (`fd_numbers`) so far.
    pub number_listings: usize,
    /// Files no process holds open any more, by path (what a `stat` of the path finds).
    pub disk: HashMap<String, FakeTarget>,
    /// Bytes of each TCP socket by inode (`sock_diag`); none read when empty.
    pub tcp: HashMap<u64, u64>,
    /// The last PID given out (`/proc/loadavg`), when the test sets it.
    pub last_pid: Option<u32>,
    /// A descriptor opened again on another file right after the next listing of its
    /// process's descriptors (`dd if=F` moves `F` onto its standard input in the midst of
    /// a walk): (pid, fd, the new target).
    pub reopen_after_listing: Option<(u32, u32, FakeTarget)>,
}

/// What a `stat` finds of `target`.
fn target_stat(target: &FakeTarget) -> FdStat {
    match *target {
        FakeTarget::File {
            ino,
            size,
            allocated,
            ..
        } => FdStat {
            kind: FdKind::Regular,
            dev: 1,
            ino,
            rdev: 0,
            size,
            blocks: allocated.div_ceil(512),
        },
        FakeTarget::Device { rdev, .. } => FdStat {
            kind: FdKind::Block,
            rdev,
            ..FdStat::default()
        },
        _ => FdStat::default(),
    }
}

/// A [`Proc`] over a [`FakeTable`].
#[derive(Debug, Clone, Default)]
pub(crate) struct FakeProc(pub Rc<RefCell<FakeTable>>);

fn denied() -> io::Error {
    io::Error::from_raw_os_error(libc::EACCES)
}

fn gone() -> io::Error {
    io::Error::from_raw_os_error(libc::ESRCH)
}

impl FakeProc {
    /// Adds a single-threaded process in session 1, running, with command line `cmd`.
    pub(crate) fn add(&self, pid: u32, ppid: u32, cmd: &str, stdin: End, stdout: End) {
        let comm = cmd.split(' ').next().unwrap_or_default().to_string();
        self.0.borrow_mut().procs.insert(
            pid,
            FakeProcess {
                comm,
                cmdline: cmd.to_string(),
                ppid,
                session: 1,
                start: u64::from(pid) * 10,
                tasks: vec![FakeTask {
                    tid: pid,
                    state: 'R',
                    wchan: "0".into(),
                    ticks: 0,
                    run_ns: 0,
                    delay_ns: 0,
                }],
                stdin,
                stdout,
                io: Io::default(),
                hidden: false,
                kernel: false,
                rpv: None,
                rpv_as: RpvFigures {
                    transfer: true,
                    ..RpvFigures::default()
                },
                stdin_flags: 0,
                system_ticks: 0,
                fds: BTreeMap::new(),
                uid: 0,
                reaped_ticks: 0,
                own_io: None,
            },
        );
    }

    /// Opens `target` as descriptor `fd` of `pid` with `flags`, at position 0.
    pub(crate) fn open(&self, pid: u32, fd: u32, target: FakeTarget, flags: u32) {
        self.with(pid, |p| {
            p.fds.insert(
                fd,
                FakeFd {
                    target,
                    pos: 0,
                    flags,
                },
            );
        });
    }

    /// Changes descriptor `fd` of `pid`.
    pub(crate) fn fd(&self, pid: u32, fd: u32, change: impl FnOnce(&mut FakeFd)) {
        self.with(pid, |p| {
            change(p.fds.get_mut(&fd).expect("no such fake descriptor"))
        });
    }

    /// Closes descriptor `fd` of `pid`.
    pub(crate) fn close(&self, pid: u32, fd: u32) {
        self.with(pid, |p| {
            p.fds.remove(&fd);
        });
    }

    /// Changes a process.
    pub(crate) fn with(&self, pid: u32, change: impl FnOnce(&mut FakeProcess)) {
        change(
            self.0
                .borrow_mut()
                .procs
                .get_mut(&pid)
                .expect("no such fake process"),
        );
    }

    /// Sets the state and wchan of a process's first thread.
    pub(crate) fn state(&self, pid: u32, state: char, wchan: &str) {
        self.with(pid, |p| {
            p.tasks[0].state = state;
            p.tasks[0].wchan = wchan.to_string();
        });
    }

    /// Adds CPU ticks (and as much time on a CPU) and bytes read and written.
    pub(crate) fn work(&self, pid: u32, ticks: u64, read: u64, written: u64) {
        self.with(pid, |p| {
            p.tasks[0].ticks += ticks;
            p.tasks[0].run_ns += ticks * 10_000_000;
            p.io.rchar += read;
            p.io.wchar += written;
            if let Some(own) = &mut p.own_io {
                own.rchar += read;
                own.wchar += written;
            }
        });
    }

    /// Adds system time (work inside the kernel, such as a copy by `copy_file_range`).
    pub(crate) fn kernel_work(&self, pid: u32, ticks: u64) {
        self.with(pid, |p| p.system_ticks += ticks);
    }

    /// Adds time waiting for a CPU to a process's first thread.
    pub(crate) fn starve(&self, pid: u32, ns: u64) {
        self.with(pid, |p| p.tasks[0].delay_ns += ns);
    }

    /// Sets how full a pipe is.
    pub(crate) fn fill(&self, inode: u64, queued: u64, capacity: u64) {
        self.0
            .borrow_mut()
            .pipes
            .insert(inode, Fill { queued, capacity });
    }

    /// Removes a process (it exited and was reaped): its parent's `stat` and `io` count
    /// its CPU time and bytes from now on, as the kernel's do.
    pub(crate) fn remove(&self, pid: u32) {
        let mut table = self.0.borrow_mut();
        let Some(gone) = table.procs.remove(&pid) else {
            return;
        };
        if let Some(parent) = table.procs.get_mut(&gone.ppid) {
            let ticks: u64 = gone.tasks.iter().map(|t| t.ticks).sum();
            parent.reaped_ticks += ticks + gone.reaped_ticks;
            let own = parent.io;
            parent.own_io.get_or_insert(own);
            parent.io.rchar += gone.io.rchar;
            parent.io.wchar += gone.io.wchar;
        }
    }

    /// Adds idle and busy CPU time to the machine (ticks, all CPUs together).
    pub(crate) fn machine(&self, idle: u64, busy: u64) {
        let mut table = self.0.borrow_mut();
        let cpu = table.cpu.get_or_insert(CpuTimes {
            idle: 0,
            total: 0,
            cpus: 2,
        });
        cpu.idle += idle;
        cpu.total += idle + busy;
    }

    /// Scans made so far.
    pub(crate) fn scans(&self) -> usize {
        self.0.borrow().scans
    }

    /// `stat` and `io` files read so far.
    pub(crate) fn reads(&self) -> (usize, usize) {
        let table = self.0.borrow();
        (table.stat_reads, table.io_reads)
    }

    fn stat_text(pid: u32, p: &FakeProcess, task: Option<&FakeTask>) -> String {
        let (state, ticks) = match task {
            Some(t) => (t.state, t.ticks),
            None => (p.tasks[0].state, p.tasks.iter().map(|t| t.ticks).sum()),
        };
        format!(
            "{pid} ({}) {state} {} {} {} 0 -1 {} 0 0 0 0 {ticks} {} {} 0 20 0 {} 0 {} 0 0",
            p.comm,
            p.ppid,
            p.session,
            p.session,
            if p.kernel { 0x0020_0040 } else { 0x0040_0000 },
            p.system_ticks,
            p.reaped_ticks,
            p.tasks.len(),
            p.start
        )
    }
}

impl Proc for FakeProc {
    fn tcp_bytes(&mut self) -> Option<HashMap<u64, u64>> {
        let table = self.0.borrow();
        (!table.tcp.is_empty()).then(|| table.tcp.clone())
    }

    fn pids(&mut self) -> io::Result<Vec<u32>> {
        let mut table = self.0.borrow_mut();
        table.scans += 1;
        Ok(table.procs.keys().copied().collect())
    }

    fn read(&mut self, pid: u32, file: ProcFile, _keep: bool) -> io::Result<Vec<u8>> {
        {
            let mut table = self.0.borrow_mut();
            match file {
                ProcFile::Stat | ProcFile::TaskStat(_) => table.stat_reads += 1,
                ProcFile::Io | ProcFile::TaskIo(_) => table.io_reads += 1,
                ProcFile::Cmdline => table.cmdline_reads += 1,
                _ => {}
            }
        }
        let table = self.0.borrow();
        let p = table.procs.get(&pid).ok_or_else(gone)?;
        let task = |tid: u32| p.tasks.iter().find(|t| t.tid == tid).ok_or_else(gone);
        let text = match file {
            ProcFile::Stat => Self::stat_text(pid, p, None),
            ProcFile::Cmdline => p.cmdline.replace(' ', "\0") + "\0",
            ProcFile::Comm => format!("{}\n", p.comm),
            ProcFile::Status => format!("Name:\t{}\nState:\t{}\n", p.comm, p.tasks[0].state),
            ProcFile::Children(_) => table
                .procs
                .iter()
                .filter(|(_, c)| c.ppid == pid)
                .map(|(c, _)| format!("{c} "))
                .collect(),
            ProcFile::TaskStat(tid) => Self::stat_text(tid, p, Some(task(tid)?)),
            ProcFile::TaskSchedstat(tid) => {
                let t = task(tid)?;
                format!("{} {} 1\n", t.run_ns, t.delay_ns)
            }
            _ if p.hidden => return Err(denied()),
            ProcFile::Io => format!(
                "rchar: {}\nwchar: {}\nsyscr: 0\nsyscw: 0\nwrite_bytes: {}\n",
                p.io.rchar, p.io.wchar, p.io.write_bytes
            ),
            ProcFile::TaskIo(_) => {
                let own = p.own_io.unwrap_or(p.io);
                format!(
                    "rchar: {}\nwchar: {}\nsyscr: 0\nsyscw: 0\nwrite_bytes: {}\n",
                    own.rchar, own.wchar, own.write_bytes
                )
            }
            ProcFile::Wchan => p.tasks[0].wchan.clone(),
            ProcFile::TaskWchan(tid) => task(tid)?.wchan.clone(),
            // No system calls or sockets in the synthetic table.
            ProcFile::TaskSyscall(_) => "running\n".to_string(),
            ProcFile::NetTcp | ProcFile::NetTcp6 | ProcFile::NetUnix => String::new(),
        };
        Ok(text.into_bytes())
    }

    fn fd_link(&mut self, pid: u32, fd: u32) -> io::Result<String> {
        self.0.borrow_mut().link_reads += 1;
        let table = self.0.borrow();
        let p = table.procs.get(&pid).ok_or_else(gone)?;
        if p.hidden {
            return Err(denied());
        }
        if let Some(f) = p.fds.get(&fd) {
            return Ok(match &f.target {
                FakeTarget::File { path, .. }
                | FakeTarget::Device { path, .. }
                | FakeTarget::CharDevice(path) => path.clone(),
                FakeTarget::Socket(inode) => format!("socket:[{inode}]"),
                FakeTarget::Pipe(inode) => format!("pipe:[{inode}]"),
            });
        }
        let end = match fd {
            0 => p.stdin,
            1 => p.stdout,
            _ => End::Closed,
        };
        match end {
            End::Pipe(inode) => Ok(format!("pipe:[{inode}]")),
            End::Other => Ok("/dev/pts/0".into()),
            End::Hidden => Err(denied()),
            End::Closed => Err(io::Error::from_raw_os_error(libc::ENOENT)),
        }
    }

    fn fds(&mut self, pid: u32) -> io::Result<Vec<(u32, String)>> {
        let mut numbers: Vec<u32> = {
            let table = self.0.borrow();
            let p = table.procs.get(&pid).ok_or_else(gone)?;
            if p.hidden {
                return Err(denied());
            }
            p.fds.keys().copied().collect()
        };
        numbers.extend([0, 1]);
        numbers.sort_unstable();
        numbers.dedup();
        let links = (numbers.into_iter())
            .filter_map(|fd| Some((fd, self.fd_link(pid, fd).ok()?)))
            .collect();
        let mut table = self.0.borrow_mut();
        if table
            .reopen_after_listing
            .as_ref()
            .is_some_and(|r| r.0 == pid)
        {
            let (_, fd, target) = table.reopen_after_listing.take().unwrap();
            if let Some(f) = table.procs.get_mut(&pid).and_then(|p| p.fds.get_mut(&fd)) {
                f.target = target;
            }
        }
        Ok(links)
    }

    fn fd_numbers(&mut self, pid: u32) -> io::Result<Vec<u32>> {
        self.0.borrow_mut().number_listings += 1;
        let table = self.0.borrow();
        let p = table.procs.get(&pid).ok_or_else(gone)?;
        if p.hidden {
            return Err(denied());
        }
        // (Standard input and output as `fds` lists them: open unless closed or hidden.)
        let open = |end: End| !matches!(end, End::Closed | End::Hidden);
        let mut numbers: Vec<u32> = p.fds.keys().copied().collect();
        numbers.extend(
            [(0, p.stdin), (1, p.stdout)]
                .into_iter()
                .filter(|&(_, e)| open(e))
                .map(|(fd, _)| fd),
        );
        numbers.sort_unstable();
        numbers.dedup();
        Ok(numbers)
    }

    fn fd_flags(&mut self, pid: u32, fd: u32) -> Option<u32> {
        let table = self.0.borrow();
        let p = table.procs.get(&pid).filter(|p| !p.hidden)?;
        if let Some(f) = p.fds.get(&fd) {
            return Some(f.flags);
        }
        match fd {
            0 => Some(p.stdin_flags),
            1 => Some(libc::O_WRONLY as u32),
            _ => None,
        }
    }

    fn fd_file(&mut self, _pid: u32, _fd: u32) -> Option<(u64, u64)> {
        // No named FIFOs in the synthetic table.
        None
    }

    fn tasks(&mut self, pid: u32) -> io::Result<Vec<u32>> {
        let table = self.0.borrow();
        let p = table.procs.get(&pid).ok_or_else(gone)?;
        Ok(p.tasks.iter().map(|t| t.tid).collect())
    }

    fn release(&mut self, _pid: u32) {}

    fn pipe_fill(&mut self, inode: u64, holder: u32, fd: u32) -> Option<Fill> {
        let table = self.0.borrow();
        let p = table.procs.get(&holder)?;
        let end = if fd == 0 { p.stdin } else { p.stdout };
        if p.hidden || end != End::Pipe(inode) {
            return None;
        }
        table.pipes.get(&inode).copied()
    }

    fn retain_pipes(&mut self, _keep: &[u64]) {}

    fn rpv_figures(&mut self, pid: u32) -> Option<RpvFigures> {
        let table = self.0.borrow();
        let p = table.procs.get(&pid)?;
        Some(RpvFigures {
            amount: p.rpv?,
            ..p.rpv_as
        })
    }

    fn cpu_times(&mut self) -> Option<CpuTimes> {
        self.0.borrow().cpu
    }

    fn cores(&self) -> usize {
        self.0.borrow().cores.unwrap_or(2)
    }

    fn last_pid(&mut self) -> Option<u32> {
        self.0.borrow().last_pid
    }

    fn fd_stat(&mut self, pid: u32, fd: u32) -> io::Result<FdStat> {
        self.0.borrow_mut().fd_stats += 1;
        let table = self.0.borrow();
        let p = table.procs.get(&pid).ok_or_else(gone)?;
        if p.hidden {
            return Err(denied());
        }
        Ok(p.fds
            .get(&fd)
            .map(|f| target_stat(&f.target))
            .unwrap_or_default())
    }

    fn path_stat(&mut self, path: &str) -> io::Result<FdStat> {
        let table = self.0.borrow();
        let open = (table.procs.values().flat_map(|p| p.fds.values()))
            .map(|f| &f.target)
            .find(|t| matches!(t, FakeTarget::File { path: p, .. } if p == path));
        open.or_else(|| table.disk.get(path))
            .map(target_stat)
            .ok_or_else(|| io::Error::from_raw_os_error(libc::ENOENT))
    }

    fn fdinfo(&mut self, pid: u32, fd: u32, buf: &mut Vec<u8>) -> io::Result<()> {
        let table = self.0.borrow();
        let p = table.procs.get(&pid).ok_or_else(gone)?;
        if p.hidden {
            return Err(denied());
        }
        let (pos, flags, ino) = match p.fds.get(&fd) {
            Some(f) => (f.pos, f.flags, target_stat(&f.target).ino),
            None if fd == 0 => (0, p.stdin_flags, 0),
            None if fd == 1 => (0, libc::O_WRONLY as u32, 0),
            None => return Err(io::Error::from_raw_os_error(libc::ENOENT)),
        };
        buf.clear();
        buf.extend_from_slice(
            format!("pos:\t{pos}\nflags:\t0{flags:o}\nmnt_id:\t1\nino:\t{ino}\n").as_bytes(),
        );
        Ok(())
    }

    fn owner(&mut self, pid: u32) -> Option<u32> {
        Some(self.0.borrow().procs.get(&pid)?.uid)
    }

    fn device_size(&mut self, rdev: u64) -> u64 {
        let table = self.0.borrow();
        let sizes = table.procs.values().flat_map(|p| p.fds.values());
        for f in sizes {
            if let FakeTarget::Device { rdev: r, size, .. } = f.target {
                if r == rdev {
                    return size;
                }
            }
        }
        0
    }
}
