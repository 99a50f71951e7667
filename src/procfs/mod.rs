//! The one reader of `/proc`: typed parsers, the [`Proc`] boundary and its real
//! implementation ([`SysProc`], in `sys.rs`), and the one-shot reads of the readers that need
//! no boundary.
//!
//! Owns: the typed fields of `/proc/PID/stat` ([`Stat`]), `io` ([`Io`]), a thread's
//! `schedstat`, `/proc/stat`'s CPU times, `children`, `cmdline` (as a shell would quote
//! it), fd links (pipe and socket inodes), `fdinfo` (position, flags), `syscall` (the
//! descriptor a call blocks on) and `net/{tcp,tcp6,unix}`; the [`Proc`] trait that the
//! pipeline view and the stall report read through (tests implement it over synthetic
//! tables); `sys.rs`, the only file of rpv that names a path under `/proc` (besides the
//! completion scripts and `--top`'s scanner). Must not: import rpv's modules (but
//! `display::printable`, for command lines): `sys` reads `/proc` through this module. A
//! pipe is never held open: it is re-opened for each fill reading and closed at once,
//! because while it is open it is an extra reader (a writer would not get EPIPE if the real
//! reader died).

use std::io;

#[cfg(test)]
pub(crate) mod fake;
mod sys;
#[cfg(test)]
pub(crate) use sys::pipe_max_size;
pub(crate) use sys::{
    exe, fd_link, fd_path, fdinfo, fds, own_fd_path, owner, read, tasks, tcp_segments, SysProc,
};

/// `InSegs` + `OutSegs` of the `Tcp:` lines of the network namespace's SNMP table: while
/// they stand still no TCP socket's byte counts change, and a dump of every socket (which
/// walks the kernel's whole table of connections, a millisecond on a large machine) can
/// be spared.
pub(crate) fn tcp_segments_of(text: &str) -> Option<u64> {
    let mut tcp = text.lines().filter(|l| l.starts_with("Tcp:"));
    let (names, values) = (tcp.next()?, tcp.next()?);
    let mut found = 0;
    let mut sum = 0u64;
    for (name, value) in names.split_whitespace().zip(values.split_whitespace()) {
        if matches!(name, "InSegs" | "OutSegs") {
            sum = sum.wrapping_add(value.parse::<u64>().ok()?);
            found += 1;
        }
    }
    (found == 2).then_some(sum)
}

/// A file of a process (or of one of its threads) under `/proc/PID`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ProcFile {
    /// `stat`.
    Stat,
    /// `io`.
    Io,
    /// `wchan`: the kernel function a sleeping task waits in (`0` while it runs).
    Wchan,
    /// `cmdline`.
    Cmdline,
    /// `comm`: the name (at most 15 bytes), with a newline.
    Comm,
    /// `status`: the process's state, one `Name:\tvalue` per line.
    Status,
    /// `task/TID/stat`.
    TaskStat(u32),
    /// `task/TID/wchan`.
    TaskWchan(u32),
    /// `task/TID/children`: the PIDs of the children of thread TID.
    Children(u32),
    /// `task/TID/schedstat`: time on a CPU and time waiting for one.
    TaskSchedstat(u32),
    /// `task/TID/syscall`: the system call a thread is blocked in, with its arguments.
    TaskSyscall(u32),
    /// `task/TID/io`: the thread's own byte counters (`io` also counts the children the
    /// process has waited for).
    TaskIo(u32),
    /// `net/tcp` of the process's network namespace.
    NetTcp,
    /// `net/tcp6`, likewise.
    NetTcp6,
    /// `net/unix`, likewise.
    NetUnix,
}

impl ProcFile {
    /// One of the socket tables (`net/*`): read in several calls, to their end.
    pub(crate) fn is_table(self) -> bool {
        matches!(
            self,
            ProcFile::NetTcp | ProcFile::NetTcp6 | ProcFile::NetUnix
        )
    }
}

/// What a process has as its standard input or output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    /// A pipe, by inode.
    Pipe(u64),
    /// Anything else: a file, a terminal, a socket.
    Other,
    /// Not permitted to look (another user's process).
    Hidden,
    /// No such descriptor, or the process is gone.
    Closed,
}

impl End {
    /// The pipe's inode, if it is one.
    pub(crate) fn pipe(self) -> Option<u64> {
        match self {
            End::Pipe(inode) => Some(inode),
            _ => None,
        }
    }
}

/// How full a pipe is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fill {
    /// Bytes queued (`FIONREAD`).
    pub queued: u64,
    /// Capacity in bytes (`F_GETPIPE_SZ`).
    pub capacity: u64,
}

/// What another rpv tells of its run over its control channel.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct RpvFigures {
    /// Moved so far, and the size (0 = unknown), in its unit.
    pub amount: u64,
    pub size: u64,
    /// It counts lines (`-l`, `-0`), not bytes.
    pub lines: bool,
    /// It runs a transfer (not only a watch, which has no figures of its own).
    pub transfer: bool,
}

/// What a descriptor is open on, from a `stat` through its link (which opens nothing: a
/// FIFO never blocks it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct FdStat {
    /// What kind of file it is.
    pub kind: FdKind,
    /// The device the file is on, and its inode.
    pub dev: u64,
    pub ino: u64,
    /// For a device node, the device it is.
    pub rdev: u64,
    /// Its size in bytes (`st_size`).
    pub size: u64,
    /// The space it takes, in 512-byte blocks (`st_blocks`).
    pub blocks: u64,
}

/// The kinds of file a descriptor can be open on that rpv tells apart.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum FdKind {
    /// A regular file.
    Regular,
    /// A block device.
    Block,
    /// Anything else (a character device, a FIFO, a directory).
    #[default]
    Other,
}

/// The process table as the pipeline view, `--top`'s scanner and the stall report see it. [`SysProc`] reads
/// the real `/proc`; the tests implement it over synthetic tables.
pub(crate) trait Proc {
    /// Every process ID.
    fn pids(&mut self) -> io::Result<Vec<u32>>;
    /// The text of a file of `pid`. With `keep`, the file stays open for the next read of
    /// the same file (for processes sampled repeatedly); [`Proc::release`] closes them.
    fn read(&mut self, pid: u32, file: ProcFile, keep: bool) -> io::Result<Vec<u8>>;
    /// The target of `/proc/PID/fd/FD`.
    fn fd_link(&mut self, pid: u32, fd: u32) -> io::Result<String>;
    /// The exact bytes of the target of `/proc/PID/fd/FD`, for a path that is not UTF-8
    /// (which [`Proc::fd_link`] gives with U+FFFD in place of what does not decode).
    fn fd_link_bytes(&mut self, pid: u32, fd: u32) -> Option<Vec<u8>> {
        self.fd_link(pid, fd).ok().map(String::into_bytes)
    }
    /// The open descriptors of `pid`, sorted, with their links' targets (a descriptor
    /// closed while they are listed is left out).
    fn fds(&mut self, pid: u32) -> io::Result<Vec<(u32, String)>>;
    /// The numbers of `pid`'s descriptors, in order (what [`Proc::fds`] lists, without
    /// reading where each one leads).
    fn fd_numbers(&mut self, pid: u32) -> io::Result<Vec<u32>> {
        Ok(self.fds(pid)?.into_iter().map(|(fd, _)| fd).collect())
    }
    /// The flags descriptor `fd` of `pid` was opened with (`fdinfo`'s `flags:`); `None` if
    /// they cannot be read.
    fn fd_flags(&mut self, pid: u32, fd: u32) -> Option<u32>;
    /// The device and inode of the file descriptor `fd` of `pid` is open on (a `stat`
    /// through the link, which opens nothing: a FIFO never blocks it); `None` if it cannot
    /// be told.
    fn fd_file(&mut self, pid: u32, fd: u32) -> Option<(u64, u64)>;
    /// The thread IDs of `pid` (for this process, without the calling thread).
    fn tasks(&mut self, pid: u32) -> io::Result<Vec<u32>>;
    /// Closes the files kept open for `pid`.
    fn release(&mut self, pid: u32);
    /// How full the pipe with this inode is, reached through descriptor `fd` of `holder`;
    /// `None` if it cannot be read (gone, not permitted, not that pipe any more).
    fn pipe_fill(&mut self, inode: u64, holder: u32, fd: u32) -> Option<Fill>;
    /// Forgets every pipe not in `keep`.
    fn retain_pipes(&mut self, keep: &[u64]);
    /// What `pid` tells of its run if it is an rpv that answers over its control channel;
    /// `None` otherwise.
    fn rpv_figures(&mut self, pid: u32) -> Option<RpvFigures>;
    /// Bytes moved so far by `pid` if it is an rpv transfer that tells them (one counting
    /// lines gives no bytes); `None` otherwise.
    fn rpv_bytes(&mut self, pid: u32) -> Option<u64> {
        let f = self.rpv_figures(pid)?;
        (f.transfer && !f.lines).then_some(f.amount)
    }
    /// The whole machine's CPU times (`/proc/stat`).
    fn cpu_times(&mut self) -> Option<CpuTimes>;
    /// The cores this process (and so a pipeline it watches, as a rule) may run on.
    fn cores(&self) -> usize;
    /// Whether `pid` has files or sockets open (besides descriptors 0 to 2) for reading,
    /// and for writing: its `/proc/PID/io` counters then count more than its pipes carry.
    /// `None` when that cannot be told.
    fn open_files(&mut self, _pid: u32) -> Option<(bool, bool)> {
        None
    }
    /// The bytes of every TCP socket (sent and received, added up) by inode, through
    /// `sock_diag`; `None` when they cannot be read.
    fn tcp_bytes(&mut self) -> Option<std::collections::HashMap<u64, u64>> {
        None
    }
    /// Like [`Proc::read`], into `buf` (its allocation kept from read to read).
    fn read_into(
        &mut self,
        pid: u32,
        file: ProcFile,
        keep: bool,
        buf: &mut Vec<u8>,
    ) -> io::Result<()> {
        *buf = self.read(pid, file, keep)?;
        Ok(())
    }
    /// What descriptor `fd` of `pid` is open on.
    fn fd_stat(&mut self, pid: u32, fd: u32) -> io::Result<FdStat>;
    /// The text of `/proc/PID/fdinfo/FD` into `buf` (parsed by [`fdinfo_pos`] and
    /// [`fdinfo_flags`]).
    fn fdinfo(&mut self, pid: u32, fd: u32, buf: &mut Vec<u8>) -> io::Result<()>;
    /// What the file at `path` is (a `stat`; a file a process has closed, by its name).
    fn path_stat(&mut self, path: &str) -> io::Result<FdStat>;
    /// The user that owns process `pid`.
    fn owner(&mut self, pid: u32) -> Option<u32>;
    /// The size in bytes of block device `rdev`; 0 if unknown.
    fn device_size(&mut self, rdev: u64) -> u64;
    /// How many files it keeps open.
    fn kept(&self) -> usize {
        0
    }
    /// `pid`'s `stat`, parsed; `None` if it cannot be read (gone, not permitted, or not in
    /// the kernel's format).
    fn stat(&mut self, pid: u32) -> Option<Stat> {
        let text = self.read(pid, ProcFile::Stat, false).ok()?;
        Stat::parse(&String::from_utf8_lossy(&text))
    }
    /// The last process or thread ID the kernel gave out in this PID namespace (the last
    /// field of `/proc/loadavg`): while it stands still, no process has started, and the
    /// list of processes need not be read again. `None` when it cannot be told.
    fn last_pid(&mut self) -> Option<u32> {
        None
    }
}

/// The last PID given out, from the text of `/proc/loadavg`
/// (`0.52 0.58 0.59 3/466 12345`).
pub(crate) fn last_pid_of(loadavg: &str) -> Option<u32> {
    let fields: Vec<&str> = loadavg.split_whitespace().collect();
    match fields.as_slice() {
        [_, _, _, tasks, last] if tasks.contains('/') => last.parse().ok(),
        _ => None,
    }
}

/// The `pos:` field of an `fdinfo` file: the descriptor's offset.
pub(crate) fn fdinfo_pos(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|line| line.strip_prefix("pos:"))
        .and_then(|v| v.trim().parse().ok())
}

/// The `ino:` field of an `fdinfo` file: the inode the descriptor is open on (Linux 5.10
/// on; `None` before).
pub(crate) fn fdinfo_ino(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|line| line.strip_prefix("ino:"))
        .and_then(|v| v.trim().parse().ok())
}

/// The `flags:` field of an `fdinfo` file (octal): the descriptor's open flags.
pub(crate) fn fdinfo_flags(text: &str) -> Option<u32> {
    let flags = text.lines().find_map(|l| l.strip_prefix("flags:"))?.trim();
    u32::from_str_radix(flags, 8).ok()
}

/// The clock ticks per second of the times in `/proc/PID/stat` (the kernel's `USER_HZ`,
/// which is 100 on every architecture rpv builds for).
pub(crate) const TICKS_PER_SECOND: u64 = 100;

/// The flag of field 9 of `/proc/PID/stat` that marks a kernel thread (`PF_KTHREAD` in the
/// kernel's `include/linux/sched.h`; not in the libc crate).
const PF_KTHREAD: u64 = 0x0020_0000;

/// The fields of `/proc/PID/stat` (or `/proc/PID/task/TID/stat`) the view uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stat {
    /// `comm`, the name in parentheses (at most 15 bytes, may contain spaces and `)`).
    pub comm: String,
    /// Field 3: `R` running, `S` sleeping, `D` uninterruptible (disk), `T`/`t` stopped,
    /// `Z` zombie, `X` dead, `I` idle kernel thread.
    pub state: char,
    /// Field 4.
    pub ppid: u32,
    /// Field 5.
    pub pgrp: u32,
    /// Field 6. Reads 0 for every process of a PID namespace whose session leader is
    /// outside it (a container), so it does not tell kernel threads apart.
    pub session: u32,
    /// Field 9 has the kernel's `PF_KTHREAD` flag: a kernel thread (no descriptors, no
    /// pipeline).
    pub kernel_thread: bool,
    /// Fields 14 + 15 (user + system time), in clock ticks.
    pub cpu_ticks: u64,
    /// Fields 16 + 17: the CPU time of its children that it has waited for (with theirs),
    /// in clock ticks.
    pub child_ticks: u64,
    /// Field 20.
    pub threads: u32,
    /// Field 22: start time in clock ticks after boot; with the PID, identifies a process.
    pub start: u64,
}

impl Stat {
    /// Reads and parses `/proc/PID/stat` (for the readers outside the view, which need no
    /// [`Proc`]: `-c`'s registry, the `-M` clean-up, `-d`, the shell's jobs); `None` if it
    /// cannot be read or parsed (the process is gone).
    pub(crate) fn of(pid: u32) -> Option<Stat> {
        Stat::parse(&String::from_utf8_lossy(&read(pid, ProcFile::Stat).ok()?))
    }

    /// Parses the text of a `stat` file; `None` if it is not in the kernel's format.
    pub(crate) fn parse(text: &str) -> Option<Stat> {
        let open = text.find('(')?;
        let close = text.rfind(')')?;
        let comm = text.get(open + 1..close)?.to_string();
        // Fields 3 to 22, without allocating (this is read for every stage many times a
        // second); `fields[0]` is field 3 (state), so field N is at index N - 3.
        let mut fields = [""; 20];
        let mut words = text.get(close + 1..)?.split_ascii_whitespace();
        for field in &mut fields {
            *field = words.next()?;
        }
        let number = |n: usize| fields.get(n - 3).and_then(|f| f.parse::<u64>().ok());
        let small = |n: usize| number(n).and_then(|v| u32::try_from(v).ok());
        Some(Stat {
            comm,
            state: fields[0].chars().next()?,
            ppid: small(4)?,
            pgrp: small(5)?,
            session: small(6)?,
            kernel_thread: number(9)? & PF_KTHREAD != 0,
            cpu_ticks: number(14)?.saturating_add(number(15)?),
            child_ticks: number(16)?.saturating_add(number(17)?),
            threads: small(20)?,
            start: number(22)?,
        })
    }
}

/// The fields of a `stat` file after the name, for the few readers that need fields
/// [`Stat`] leaves out: `fields[0]` is field 3 (the state), so field N is at index N - 3.
pub(crate) fn stat_fields(text: &str) -> Option<Vec<&str>> {
    let close = text.rfind(')')?;
    Some(text.get(close + 1..)?.split_ascii_whitespace().collect())
}

/// The byte counters of `/proc/PID/io`: read- and write-family calls only (splice does not
/// count).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Io {
    /// `rchar`: bytes read.
    pub rchar: u64,
    /// `wchar`: bytes written.
    pub wchar: u64,
    /// `write_bytes`: bytes written to storage (files on a disk; never a pipe or a
    /// socket), 0 when the file does not say.
    pub write_bytes: u64,
}

impl Io {
    /// Reads and parses `/proc/PID/io` (for `-d`); its text not in the kernel's format is
    /// EINVAL.
    pub(crate) fn of(pid: u32) -> io::Result<Io> {
        let text = read(pid, ProcFile::Io)?;
        Io::parse(&String::from_utf8_lossy(&text))
            .ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))
    }

    /// Parses the text of an `io` file; `None` if either counter is missing.
    pub(crate) fn parse(text: &str) -> Option<Io> {
        let mut rchar = None;
        let mut wchar = None;
        let mut write_bytes = None;
        for line in text.lines() {
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            let value = value.trim().parse().ok();
            match key {
                "rchar" => rchar = value,
                "wchar" => wchar = value,
                "write_bytes" => write_bytes = value,
                _ => {}
            }
        }
        Some(Io {
            rchar: rchar?,
            wchar: wchar?,
            write_bytes: write_bytes.unwrap_or(0),
        })
    }
}

/// The two times of `/proc/PID/task/TID/schedstat`, in nanoseconds since the thread
/// started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Schedstat {
    /// Time on a CPU.
    pub run_ns: u64,
    /// Time runnable but waiting for a CPU (the run delay).
    pub delay_ns: u64,
}

impl Schedstat {
    /// Parses the text of a `schedstat` file (`run delay timeslices`); `None` if it is not
    /// in that format.
    pub(crate) fn parse(text: &str) -> Option<Schedstat> {
        let mut fields = text.split_ascii_whitespace().map(|f| f.parse::<u64>().ok());
        Some(Schedstat {
            run_ns: fields.next()??,
            delay_ns: fields.next()??,
        })
    }
}

/// The whole machine's CPU time from the first lines of `/proc/stat`, in clock ticks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct CpuTimes {
    /// Idle (and waiting for I/O), all CPUs together.
    pub idle: u64,
    /// Everything, all CPUs together.
    pub total: u64,
    /// CPUs online (the `cpuN` lines).
    pub cpus: u32,
}

impl CpuTimes {
    /// Parses the text of `/proc/stat`; `None` if its first line is not the `cpu` total.
    pub(crate) fn parse(text: &str) -> Option<CpuTimes> {
        let mut lines = text.lines();
        let first = lines.next()?.strip_prefix("cpu ")?;
        let fields: Vec<u64> = first
            .split_ascii_whitespace()
            .map(|f| f.parse().ok())
            .collect::<Option<_>>()?;
        // user nice system idle iowait irq softirq steal (guest times are in user).
        let total = fields.iter().take(8).sum();
        let idle = fields.get(3)? + fields.get(4).copied().unwrap_or(0);
        let cpus = lines
            .take_while(|l| l.starts_with("cpu"))
            .filter(|l| l.as_bytes().get(3).is_some_and(u8::is_ascii_digit))
            .count() as u32;
        Some(CpuTimes { idle, total, cpus })
    }

    /// Cores idle between `earlier` and `self`, on average.
    pub(crate) fn idle_cores_since(&self, earlier: &CpuTimes) -> Option<f64> {
        let total = self.total.checked_sub(earlier.total).filter(|t| *t > 0)?;
        let idle = self.idle.saturating_sub(earlier.idle);
        Some(idle as f64 / total as f64 * f64::from(self.cpus.max(1)))
    }
}

/// The inode of a pipe from an fd link's text (`pipe:[12345]`), `None` for anything else.
pub(crate) fn pipe_inode(link: &str) -> Option<u64> {
    link.strip_prefix("pipe:[")?.strip_suffix(']')?.parse().ok()
}

/// The inode of a socket from an fd link's text (`socket:[12345]`).
pub(crate) fn socket_inode(link: &str) -> Option<u64> {
    link.strip_prefix("socket:[")?
        .strip_suffix(']')?
        .parse()
        .ok()
}

/// System calls whose first argument is the descriptor they read or write (this
/// architecture's numbers): read, write, pread64, pwrite64, readv, writev, sendfile (its
/// output), sendto, recvfrom, sendmsg, recvmsg, recvmmsg, sendmmsg.
#[cfg(target_arch = "x86_64")]
const FD_CALLS: &[u64] = &[0, 1, 17, 18, 19, 20, 40, 44, 45, 46, 47, 299, 307];
#[cfg(target_arch = "aarch64")]
const FD_CALLS: &[u64] = &[63, 64, 67, 68, 65, 66, 71, 206, 207, 211, 212, 243, 269];
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const FD_CALLS: &[u64] = &[];

/// The descriptor a thread is blocked reading or writing, from its `syscall` file
/// (`0 0x3 0x7f… …`: the call's number and arguments); `None` for other calls, a thread
/// running (`running`) or a file in another format.
pub(crate) fn blocked_fd(syscall: &str) -> Option<u32> {
    let mut words = syscall.split_ascii_whitespace();
    let number: u64 = words.next()?.parse().ok()?;
    if !FD_CALLS.contains(&number) {
        return None;
    }
    let fd = u64::from_str_radix(words.next()?.strip_prefix("0x")?, 16).ok()?;
    u32::try_from(fd).ok()
}

/// The remote end of the TCP socket with this inode, from the text of `net/tcp` (`v6`
/// false) or `net/tcp6`: `127.0.0.1:9000`, `[::1]:22`.
pub(crate) fn tcp_peer(table: &str, inode: u64, v6: bool) -> Option<String> {
    for line in table.lines().skip(1) {
        let fields: Vec<&str> = line.split_ascii_whitespace().collect();
        if fields.get(9).and_then(|f| f.parse::<u64>().ok()) != Some(inode) {
            continue;
        }
        let (addr, port) = fields.get(2)?.split_once(':')?;
        let port = u16::from_str_radix(port, 16).ok()?;
        // Each 32-bit word of the address is in the machine's byte order.
        let mut bytes = Vec::with_capacity(16);
        for word in addr.as_bytes().chunks(8) {
            let word = u32::from_str_radix(std::str::from_utf8(word).ok()?, 16).ok()?;
            bytes.extend_from_slice(&word.to_ne_bytes());
        }
        return Some(if v6 {
            let octets: [u8; 16] = bytes.try_into().ok()?;
            let ip = std::net::Ipv6Addr::from(octets);
            match ip.to_ipv4_mapped() {
                Some(v4) => format!("{v4}:{port}"),
                None => format!("[{ip}]:{port}"),
            }
        } else {
            let octets: [u8; 4] = bytes.try_into().ok()?;
            format!("{}:{port}", std::net::Ipv4Addr::from(octets))
        });
    }
    None
}

/// The path a Unix socket with this inode is bound to, from the text of `net/unix`
/// (`@name` for an abstract one); `None` if it has none.
pub(crate) fn unix_path(table: &str, inode: u64) -> Option<String> {
    table.lines().skip(1).find_map(|line| {
        let mut words = line.split_ascii_whitespace();
        let found = words.nth(6)?.parse::<u64>().ok()? == inode;
        let path = words.next()?;
        found.then(|| path.to_string())
    })
}

/// The PIDs in a `children` file (`"12 34 "`).
pub(crate) fn parse_pids(text: &str) -> Vec<u32> {
    text.split_ascii_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// A command line for display: the NUL-separated arguments of `/proc/PID/cmdline` joined
/// by spaces, the program by its file name only (`/usr/bin/gzip -9` is `gzip -9`), control
/// characters escaped as everywhere rpv shows a name ([`crate::display::printable`]);
/// `None` if it is empty (a zombie, a kernel thread).
pub(crate) fn command_text(cmdline: &[u8]) -> Option<String> {
    let trimmed = cmdline.strip_suffix(&[0]).unwrap_or(cmdline);
    if trimmed.is_empty() {
        return None;
    }
    let program_end = trimmed
        .iter()
        .position(|&b| b == 0)
        .unwrap_or(trimmed.len());
    let name_start = trimmed[..program_end]
        .iter()
        .rposition(|&b| b == b'/')
        .map_or(0, |slash| slash + 1);
    let name_start = if name_start == program_end {
        0
    } else {
        name_start
    };
    let args: Vec<String> = trimmed[name_start..]
        .split(|&b| b == 0)
        .enumerate()
        .map(|(i, arg)| {
            let arg = String::from_utf8_lossy(arg);
            if i == 0 {
                arg.into_owned()
            } else {
                shell_quoted(&arg)
            }
        })
        .collect();
    Some(crate::display::printable(&args.join(" ")).into_owned())
}

/// An argument as a shell would need it typed: as it is when it is plain, else in single
/// quotes (`tr -s ' ' '\n'`, not `tr -s   \n`), a quote inside written `'\''`.
fn shell_quoted(arg: &str) -> String {
    let plain = !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_alphanumeric() || "-_./:=,+@%^".contains(c));
    if plain {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields() {
        let text = "13326 (gzip) R 13323 13323 5706 0 -1 4194304 143 0 0 0 245 12 0 0 20 0 1 0 \
                    8812345 2658304 214 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0";
        let stat = Stat::parse(text).unwrap();
        assert_eq!(
            stat,
            Stat {
                comm: "gzip".into(),
                state: 'R',
                ppid: 13323,
                pgrp: 13323,
                session: 5706,
                kernel_thread: false,
                cpu_ticks: 257,
                child_ticks: 0,
                threads: 1,
                start: 8_812_345,
            }
        );
    }

    #[test]
    fn stat_with_spaces_and_parentheses_in_the_name() {
        let text = "7 (a) b (c)) S 1 7 7 0 -1 0 0 0 0 0 3 4 0 0 20 0 3 0 99 0 0";
        let stat = Stat::parse(text).unwrap();
        assert_eq!(stat.comm, "a) b (c)");
        assert_eq!(
            (stat.state, stat.ppid, stat.threads, stat.start),
            ('S', 1, 3, 99)
        );
        assert_eq!(stat.cpu_ticks, 7);
        assert!(!stat.kernel_thread);
    }

    #[test]
    fn a_kernel_thread_is_told_by_its_flag_not_its_session() {
        // kthreadd, as the kernel shows it: flags 0x208040 (PF_KTHREAD among them).
        let kthreadd = "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 1 0 0 20 0 1 0 1 0 0";
        assert!(Stat::parse(kthreadd).unwrap().kernel_thread);
        // A shell in a PID namespace whose session leader is outside it: session 0.
        let shell = "1 (sh) S 0 0 0 0 -1 4194560 0 0 0 0 0 1 0 0 20 0 1 0 5 0 0";
        let stat = Stat::parse(shell).unwrap();
        assert_eq!(stat.session, 0);
        assert!(!stat.kernel_thread);
    }

    #[test]
    fn stat_fields_after_the_name() {
        let fields = super::stat_fields("7 (a) b (c)) S 1 7 7").unwrap();
        assert_eq!(fields, ["S", "1", "7", "7"]);
        assert_eq!(super::stat_fields("7 (x"), None);
    }

    #[test]
    fn stat_refuses_garbage() {
        assert_eq!(Stat::parse(""), None);
        assert_eq!(Stat::parse("12 (x"), None);
        assert_eq!(Stat::parse("12 (x) S 1 2"), None);
        assert_eq!(
            Stat::parse("12 (x) S a b c 0 -1 0 0 0 0 0 3 4 0 0 20 0 3 0 99"),
            None
        );
    }

    /// Rule 12 of ARCHITECTURE.md: no code outside the reader names a path under `/proc`
    /// (comments may, to say what is read).
    #[test]
    fn only_the_reader_names_proc_paths() {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let allowed = ["procfs/sys.rs", "cli/complete.rs"];
        // Spelled in pieces, so this test does not find itself.
        let proc = ["/pro", "c"].concat();
        let (dir_in_proc, proc_itself) = (format!("{proc}/"), format!("\"{proc}\""));
        let mut found = Vec::new();
        let mut dirs = vec![src.clone()];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                let rel = path
                    .strip_prefix(&src)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                if path.is_dir() {
                    dirs.push(path);
                    continue;
                }
                if !rel.ends_with(".rs") || allowed.contains(&rel.as_str()) {
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap();
                for (n, line) in text.lines().enumerate() {
                    let code = line.split("//").next().unwrap_or_default();
                    if code.contains(&dir_in_proc) || code.contains(&proc_itself) {
                        found.push(format!("src/{rel}:{}: {}", n + 1, line.trim()));
                    }
                }
            }
        }
        assert!(
            found.is_empty(),
            "/proc paths outside procfs/sys.rs: {found:#?}"
        );
    }

    #[test]
    fn the_last_pid_is_the_last_field_of_loadavg() {
        assert_eq!(last_pid_of("0.52 0.58 0.59 3/466 12345\n"), Some(12345));
        assert_eq!(last_pid_of("0.00 0.00 0.00 1/1 1"), Some(1));
        assert_eq!(last_pid_of("0.52 0.58 0.59 3/466"), None);
        assert_eq!(last_pid_of("0.52 0.58 0.59 3 12345"), None);
        assert_eq!(last_pid_of("0.52 0.58 0.59 3/466 x"), None);
        assert_eq!(last_pid_of(""), None);
        // The real file, read through the one reader.
        let mut proc = SysProc::new();
        let last = proc.last_pid().expect("the last PID given out");
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let after = proc.last_pid().unwrap();
        child.wait().unwrap();
        assert_ne!(after, last, "a process ({}) started since", child.id());
    }

    #[test]
    fn tcp_segments_are_read_from_the_snmp_table() {
        let text = "Ip: Forwarding DefaultTTL\nIp: 1 64\n\
            Tcp: RtoAlgorithm RtoMin ActiveOpens InSegs OutSegs RetransSegs\n\
            Tcp: 1 200 11643 104237 102778 217\n\
            Udp: InDatagrams OutDatagrams\nUdp: 5 6\n";
        assert_eq!(tcp_segments_of(text), Some(104_237 + 102_778));
        assert_eq!(tcp_segments_of("Tcp: InSegs\nTcp: 4\n"), None);
        assert_eq!(tcp_segments_of("Udp: InSegs OutSegs\nUdp: 1 2\n"), None);
        // This machine's own table has both.
        assert!(tcp_segments().is_some());
    }

    #[test]
    fn fdinfo_fields() {
        let text = "pos:\t1048576\nflags:\t0100001\nmnt_id:\t29\nino:\t1234\n";
        assert_eq!(fdinfo_pos(text), Some(1_048_576));
        assert_eq!(fdinfo_flags(text), Some(0o100001));
        assert_eq!(fdinfo_pos("pos:\t0\n"), Some(0));
        assert_eq!(fdinfo_pos("flags:\t02\n"), None);
        assert_eq!(fdinfo_pos("pos:\tx\n"), None);
        assert_eq!(fdinfo_flags("flags:\t09\n"), None);
        assert_eq!(fdinfo_flags("pos:\t0\n"), None);
    }

    #[test]
    fn io_counters() {
        let text = "rchar: 7566\nwchar: 0\nsyscr: 9\nsyscw: 0\nread_bytes: 0\n";
        assert_eq!(
            Io::parse(text),
            Some(Io {
                rchar: 7566,
                wchar: 0,
                write_bytes: 0,
            })
        );
        let text = "rchar: 1\nwchar: 90\nread_bytes: 0\nwrite_bytes: 4096\n";
        assert_eq!(Io::parse(text).map(|io| io.write_bytes), Some(4096));
        assert_eq!(Io::parse("rchar: 1\n"), None);
        assert_eq!(Io::parse(""), None);
    }

    #[test]
    fn stat_and_io_of_a_process_by_pid() {
        let me = std::process::id();
        let stat = Stat::of(me).expect("own stat");
        assert_eq!(stat.ppid, std::os::unix::process::parent_id());
        assert!("RS".contains(stat.state), "{stat:?}");
        assert!(stat.start > 0);
        let io = Io::of(me).expect("own io");
        assert!(io.rchar > 0, "{io:?}");
        // No such process (PIDs stop well below u32::MAX).
        assert_eq!(Stat::of(u32::MAX), None);
        assert_eq!(
            Io::of(u32::MAX).unwrap_err().raw_os_error(),
            Some(libc::ENOENT)
        );
    }

    #[test]
    fn schedstat_times() {
        assert_eq!(
            Schedstat::parse("193871891 9906388 379\n"),
            Some(Schedstat {
                run_ns: 193_871_891,
                delay_ns: 9_906_388
            })
        );
        assert_eq!(Schedstat::parse("12\n"), None);
        assert_eq!(Schedstat::parse("x 1 2"), None);
        assert_eq!(Schedstat::parse(""), None);
    }

    #[test]
    fn pipe_links() {
        assert_eq!(pipe_inode("pipe:[18367]"), Some(18367));
        assert_eq!(pipe_inode("socket:[18367]"), None);
        assert_eq!(pipe_inode("/tmp/pipe:[1]"), None);
        assert_eq!(pipe_inode("pipe:[]"), None);
        assert_eq!(pipe_inode("pipe:[12"), None);
    }

    #[test]
    fn sockets_and_their_peers() {
        assert_eq!(socket_inode("socket:[4242]"), Some(4242));
        assert_eq!(socket_inode("pipe:[4242]"), None);
        #[cfg(target_arch = "x86_64")]
        {
            assert_eq!(
                blocked_fd("1 0x1 0x7f00 0x10000 0 0 0 0x7ffc 0x7f"),
                Some(1)
            );
            assert_eq!(
                blocked_fd("45 0x5 0x7f00 0x10000 0 0 0 0x7ffc 0x7f"),
                Some(5)
            );
            assert_eq!(blocked_fd("7 0x7ffc 0x2 0x3e8 0 0 0 0x7ffc 0x7f"), None);
        }
        assert_eq!(blocked_fd("running"), None);
        assert_eq!(blocked_fd(""), None);
        let tcp = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   \
                   uid  timeout inode\n   \
                   0: 0100007F:A1B2 0100007F:2328 01 00000000:00000000 00:00000000 00000000     \
                   0        0 31337 1 0000000000000000 20 4 30 10 -1\n";
        assert_eq!(
            tcp_peer(tcp, 31337, false).as_deref(),
            Some("127.0.0.1:9000")
        );
        assert_eq!(tcp_peer(tcp, 31338, false), None);
        let tcp6 = "  sl  local_address                         remote_address                        \
                    st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   \
                    0: 00000000000000000000000001000000:0016 00000000000000000000000001000000:C350 \
                    01 00000000:00000000 00:00000000 00000000     0        0 777 1 0 20 4 30 10 -1\n\
                    1: 0000000000000000FFFF00000100007F:0016 0000000000000000FFFF00000100007F:C351 \
                    01 00000000:00000000 00:00000000 00000000     0        0 778 1 0 20 4 30 10 -1\n";
        if cfg!(target_endian = "little") {
            assert_eq!(tcp_peer(tcp6, 777, true).as_deref(), Some("[::1]:50000"));
            assert_eq!(
                tcp_peer(tcp6, 778, true).as_deref(),
                Some("127.0.0.1:50001")
            );
        }
        let unix = "Num       RefCount Protocol Flags    Type St Inode Path\n\
                    0000000000000000: 00000002 00000000 00010000 0001 01 5151 /run/x.sock\n\
                    0000000000000000: 00000003 00000000 00000000 0001 03 5152\n";
        assert_eq!(unix_path(unix, 5151).as_deref(), Some("/run/x.sock"));
        assert_eq!(unix_path(unix, 5152), None);
    }

    #[test]
    fn children_lists() {
        assert_eq!(parse_pids("12 34 "), vec![12, 34]);
        assert_eq!(parse_pids(""), Vec::<u32>::new());
    }

    #[test]
    fn command_lines() {
        assert_eq!(command_text(b"gzip\0-9\0").as_deref(), Some("gzip -9"));
        assert_eq!(
            command_text(b"/usr/bin/gzip\0-9\0/tmp/x\0").as_deref(),
            Some("gzip -9 /tmp/x")
        );
        assert_eq!(command_text(b"/\0").as_deref(), Some("/"));
        assert_eq!(
            command_text(b"sh\0-c\0a\nb\0").as_deref(),
            Some("sh -c 'a\\nb'")
        );
        assert_eq!(
            command_text(b"x\0\x1b]0;owned\x07\x1b[2J\0").as_deref(),
            Some("x '\\e]0;owned\\x07\\e[2J'")
        );
        // Arguments a shell would need quoted are shown quoted.
        assert_eq!(
            command_text(b"/usr/bin/tr\0-s\0 \0\n\0").as_deref(),
            Some("tr -s ' ' '\\n'")
        );
        assert_eq!(
            command_text(b"sh\0-c\0echo 'hi'\0\0").as_deref(),
            Some(r"sh -c 'echo '\''hi'\''' ''")
        );
        assert_eq!(command_text(b"x\xff\0").as_deref(), Some("x\u{fffd}"));
        assert_eq!(command_text(b""), None);
        assert_eq!(command_text(b"\0"), None);
    }
}
