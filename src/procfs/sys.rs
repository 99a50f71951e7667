//! The real `/proc`: [`SysProc`] behind the [`Proc`] boundary, and the one-shot reads of
//! the readers that need no boundary (`-d`, the `-c` registry, the `-M` clean-up, the
//! shell's jobs, the process title, the control socket's owner).
//!
//! Owns: every path under `/proc` (and `/sys/dev/block`) that rpv's own code reads (the
//! completion scripts aside); [`SysProc`]'s files kept open and re-read with `pread` at
//! offset 0 (the kernel regenerates them on each read: one syscall per file per sample
//! instead of three, and a read on a process that exited fails with ESRCH, even if its PID
//! has been reused since), within one budget for every [`SysProc`] of the process (half the
//! limit on open files, less [`MARGIN`], at most [`MAX_KEPT`]; beyond it, files are opened
//! for each read); the `O_PATH` handles of the pipes whose fill it reads; the tellers of other rpv processes' counts. Must not: parse `/proc`
//! text (the parsers are in `procfs/mod.rs`) or decide anything about stages; import
//! rpv's `sys` layer (which reads `/proc` through this module): its system calls are rustix's.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use super::{fdinfo_flags, CpuTimes, FdKind, FdStat, Fill, Proc, ProcFile, RpvFigures};

/// Most `/proc` files kept open at once by all the readers of the process together,
/// whatever the limit on open files; beyond the budget, files are opened for each read (a
/// very long pipeline, or `--top` on a machine of many processes, must not run the process
/// out of descriptors).
const MAX_KEPT: usize = 8192;
/// Descriptors left for everything else when the budget is half the limit.
const MARGIN: usize = 64;

/// Files kept open by every [`SysProc`] of the process.
static KEPT: AtomicUsize = AtomicUsize::new(0);

/// How many `/proc` files the process may keep open: half its limit on open files, less
/// [`MARGIN`], at most [`MAX_KEPT`] (asked once).
fn budget() -> usize {
    static BUDGET: OnceLock<usize> = OnceLock::new();
    *BUDGET.get_or_init(|| {
        let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile)
            .current
            .map_or(usize::MAX, |l| usize::try_from(l).unwrap_or(usize::MAX));
        (limit / 2).saturating_sub(MARGIN).min(MAX_KEPT)
    })
}

/// Takes one place in the budget, if there is one left.
fn take_place() -> bool {
    KEPT.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
        (n < budget()).then_some(n + 1)
    })
    .is_ok()
}

/// Gives back `n` places.
fn give_back(n: usize) {
    KEPT.fetch_sub(n, Ordering::Relaxed);
}

impl ProcFile {
    /// Its path.
    pub(crate) fn path(self, pid: u32) -> String {
        match self {
            ProcFile::Stat => format!("/proc/{pid}/stat"),
            ProcFile::Io => format!("/proc/{pid}/io"),
            ProcFile::Wchan => format!("/proc/{pid}/wchan"),
            ProcFile::Cmdline => format!("/proc/{pid}/cmdline"),
            ProcFile::Comm => format!("/proc/{pid}/comm"),
            ProcFile::Status => format!("/proc/{pid}/status"),
            ProcFile::TaskStat(tid) => format!("/proc/{pid}/task/{tid}/stat"),
            ProcFile::TaskWchan(tid) => format!("/proc/{pid}/task/{tid}/wchan"),
            ProcFile::Children(tid) => format!("/proc/{pid}/task/{tid}/children"),
            ProcFile::TaskSchedstat(tid) => format!("/proc/{pid}/task/{tid}/schedstat"),
            ProcFile::TaskSyscall(tid) => format!("/proc/{pid}/task/{tid}/syscall"),
            ProcFile::TaskIo(tid) => format!("/proc/{pid}/task/{tid}/io"),
            ProcFile::NetTcp => format!("/proc/{pid}/net/tcp"),
            ProcFile::NetTcp6 => format!("/proc/{pid}/net/tcp6"),
            ProcFile::NetUnix => format!("/proc/{pid}/net/unix"),
        }
    }
}

/// Reads a file of `pid` once (opened, read whole, closed).
pub(crate) fn read(pid: u32, file: ProcFile) -> io::Result<Vec<u8>> {
    read_from_start(&File::open(file.path(pid))?, file.is_table())
}

/// `/proc/PID/fd/FD`: the link to what descriptor `fd` of `pid` is open on (for `stat`,
/// `readlink`, or opening the same file again).
pub(crate) fn fd_path(pid: u32, fd: i32) -> PathBuf {
    PathBuf::from(format!("/proc/{pid}/fd/{fd}"))
}

/// `/proc/self/fd/FD`: this process's descriptor `fd` by name (to open it again with other
/// flags, or to `linkat` an unnamed file).
pub(crate) fn own_fd_path(fd: i32) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{fd}"))
}

/// The target of descriptor `fd` of `pid` (a path, `pipe:[N]`, `socket:[N]`), exactly.
pub(crate) fn fd_link(pid: u32, fd: i32) -> io::Result<PathBuf> {
    std::fs::read_link(fd_path(pid, fd))
}

/// The text of `/proc/PID/fdinfo/FD` (its position, flags).
pub(crate) fn fdinfo(pid: u32, fd: i32) -> io::Result<String> {
    std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{fd}"))
}

/// The open descriptors of `pid`, sorted by number.
pub(crate) fn fds(pid: u32) -> io::Result<Vec<i32>> {
    let mut fds: Vec<i32> = numbered(format!("/proc/{pid}/fd").as_ref())?;
    fds.sort_unstable();
    Ok(fds)
}

/// The thread IDs of `pid`, in the order `/proc` lists them.
pub(crate) fn tasks(pid: u32) -> io::Result<Vec<u32>> {
    numbered(format!("/proc/{pid}/task").as_ref())
}

/// The entries of the `/proc` directory `path` whose names are numbers (processes,
/// threads, descriptors), in the order the directory lists them. Read through rustix's
/// `Dir` rather than std's `read_dir`, whose close asserts that `closedir` succeeded (an
/// EIO there aborted rpv): a failed close is ignored, the entries were read.
fn numbered<T: std::str::FromStr>(path: &std::path::Path) -> io::Result<Vec<T>> {
    let flags =
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC;
    let fd = rustix::fs::open(path, flags, rustix::fs::Mode::empty())?;
    let mut out = Vec::new();
    for entry in rustix::fs::Dir::new(fd)? {
        let entry = entry?;
        if let Some(n) = (entry.file_name().to_str().ok()).and_then(|name| name.parse().ok()) {
            out.push(n);
        }
    }
    Ok(out)
}

/// The user that owns process `pid` (its `/proc/PID` directory's owner).
pub(crate) fn owner(pid: u32) -> io::Result<u32> {
    std::fs::metadata(format!("/proc/{pid}")).map(|m| m.uid())
}

/// The program `pid` runs (`/proc/PID/exe`).
pub(crate) fn exe(pid: u32) -> io::Result<PathBuf> {
    std::fs::read_link(format!("/proc/{pid}/exe"))
}

/// The largest capacity an unprivileged process may give a pipe
/// (`/proc/sys/fs/pipe-max-size`).
#[cfg(test)]
pub(crate) fn pipe_max_size() -> io::Result<usize> {
    let text = std::fs::read_to_string("/proc/sys/fs/pipe-max-size")?;
    text.trim()
        .parse()
        .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

/// The TCP segments rpv's network namespace has received and sent so far (`InSegs` and
/// `OutSegs` of `/proc/net/snmp`, IPv4 and IPv6 alike; see [`super::tcp_segments_of`]).
pub(crate) fn tcp_segments() -> Option<u64> {
    super::tcp_segments_of(&std::fs::read_to_string("/proc/net/snmp").ok()?)
}

/// Whether the descriptors of `pid` (links and `fdinfo` flags) include files or sockets
/// open for reading, and for writing, leaving out 0 to 2, pipes, and devices (`/dev/…`).
fn open_files_of(proc: &mut SysProc, pid: u32) -> Option<(bool, bool)> {
    let mut found = (false, false);
    for (fd, link) in proc.fds(pid).ok()? {
        if fd <= 2 {
            continue;
        }
        let counted =
            (link.starts_with('/') && !link.starts_with("/dev/")) || link.starts_with("socket:[");
        if !counted {
            continue;
        }
        let Some(flags) = proc.fd_flags(pid, fd) else {
            continue;
        };
        match flags & 3 {
            0 => found.0 = true,
            1 => found.1 = true,
            _ => found = (true, true),
        }
    }
    Some(found)
}

/// Asks one process for its figures (another rpv, over its control channel); `None` when
/// it does not tell.
pub(crate) type Teller = Box<dyn FnMut() -> Option<RpvFigures>>;
/// Makes the [`Teller`] of a process from its PID and command line (`cmdline`'s bytes).
pub(crate) type Tellers = Box<dyn FnMut(u32, &[u8]) -> Teller>;

/// The pipe handle kept for fill readings: an `O_PATH` descriptor, which refers to the pipe
/// without being one of its readers or writers.
#[derive(Debug)]
struct PipeRef {
    path: File,
}

/// Reads every TCP socket's bytes (sent and received) by inode into the map.
pub(crate) type SocketBytes = fn(&mut HashMap<u64, u64>) -> io::Result<()>;

/// The real `/proc`.
pub(crate) struct SysProc {
    me: u32,
    open: HashMap<(u32, ProcFile), File>,
    /// `fdinfo` files kept open, by process and descriptor.
    fdinfo: HashMap<(u32, u32), File>,
    pipes: HashMap<u64, PipeRef>,
    rpv: HashMap<u32, Teller>,
    tellers: Option<Tellers>,
    own_bytes: Option<Box<dyn FnMut() -> u64>>,
    /// How the TCP sockets' byte counts are read ([`Proc::tcp_bytes`]; none without it).
    sockets: Option<SocketBytes>,
    /// `/proc/stat`, kept open.
    stat: Option<File>,
    /// `/proc/loadavg`, kept open.
    loadavg: Option<File>,
    /// The cores this process may run on, once asked.
    cores: std::cell::OnceCell<usize>,
}

impl std::fmt::Debug for SysProc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SysProc")
            .field("open", &self.open.len())
            .field("pipes", &self.pipes.len())
            .finish_non_exhaustive()
    }
}

impl Default for SysProc {
    fn default() -> SysProc {
        SysProc::new()
    }
}

impl SysProc {
    /// A reader of the real `/proc`.
    pub(crate) fn new() -> SysProc {
        SysProc {
            me: std::process::id(),
            open: HashMap::new(),
            fdinfo: HashMap::new(),
            pipes: HashMap::new(),
            rpv: HashMap::new(),
            tellers: None,
            own_bytes: None,
            sockets: None,
            stat: None,
            loadavg: None,
            cores: std::cell::OnceCell::new(),
        }
    }

    /// Where this process's own stage gets its byte count (a pipeline view running inside
    /// the transfer it watches cannot ask itself over its control channel).
    pub(crate) fn set_own_bytes(&mut self, counter: Box<dyn FnMut() -> u64>) {
        self.own_bytes = Some(counter);
    }

    /// How the figures of other processes are asked for ([`Proc::rpv_figures`]; without
    /// tellers, no other process tells).
    pub(crate) fn set_tellers(&mut self, tellers: Tellers) {
        self.tellers = Some(tellers);
    }

    /// How the TCP sockets' byte counts are read (`sock_diag`, which is not `/proc`: the
    /// operating-system layer's, handed in so that this reader imports none of it).
    pub(crate) fn set_socket_bytes(&mut self, sockets: SocketBytes) {
        self.sockets = Some(sockets);
    }
}

/// Reads the whole of a `/proc` file from offset 0 (one `pread` when it fits the buffer).
/// With `to_end`, until a read returns nothing: the socket tables give whole lines of at
/// most a page per read, so a short read is not their end (with a hundred TCP sockets on
/// the machine, a stage's socket was past what the first read returned).
fn read_from_start(file: &File, to_end: bool) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    read_from_start_into(file, to_end, &mut out)?;
    Ok(out)
}

/// [`read_from_start`] into `out` (its allocation kept).
fn read_from_start_into(file: &File, to_end: bool, out: &mut Vec<u8>) -> io::Result<()> {
    let mut len = 0;
    out.resize(out.capacity().max(1024), 0);
    loop {
        let n = match rustix::io::pread(file.as_fd(), &mut out[len..], len as u64) {
            Ok(n) => n,
            Err(e) => {
                out.clear();
                return Err(e.into());
            }
        };
        len += n;
        if n == 0 || (!to_end && len < out.len()) {
            out.truncate(len);
            return Ok(());
        }
        if len == out.len() {
            out.resize(out.len() * 2, 0);
        }
    }
}

/// The text of the machine-wide file at `path`, opened once into `slot` and read again
/// from its start at each call.
fn kept_text(slot: &mut Option<File>, path: &str) -> Option<String> {
    let file = match slot {
        Some(file) => file,
        None => slot.insert(File::open(path).ok()?),
    };
    let text = read_from_start(file, false).ok()?;
    Some(String::from_utf8_lossy(&text).into_owned())
}

impl Drop for SysProc {
    fn drop(&mut self) {
        give_back(self.open.len() + self.fdinfo.len());
    }
}

impl Proc for SysProc {
    fn pids(&mut self) -> io::Result<Vec<u32>> {
        numbered("/proc".as_ref())
    }

    fn read(&mut self, pid: u32, file: ProcFile, keep: bool) -> io::Result<Vec<u8>> {
        let mut text = Vec::new();
        self.read_into(pid, file, keep, &mut text)?;
        Ok(text)
    }

    fn read_into(
        &mut self,
        pid: u32,
        file: ProcFile,
        keep: bool,
        buf: &mut Vec<u8>,
    ) -> io::Result<()> {
        if let Some(open) = self.open.get(&(pid, file)) {
            if read_from_start_into(open, file.is_table(), buf).is_ok() {
                return Ok(());
            }
            // Its process is gone (its PID perhaps taken since): the path is opened again.
            self.open.remove(&(pid, file));
            give_back(1);
        }
        let opened = File::open(file.path(pid))?;
        read_from_start_into(&opened, file.is_table(), buf)?;
        if keep && take_place() {
            self.open.insert((pid, file), opened);
        }
        Ok(())
    }

    fn fd_stat(&mut self, pid: u32, fd: u32) -> io::Result<FdStat> {
        self.path_stat(&fd_path(pid, fd as i32).to_string_lossy())
    }

    fn path_stat(&mut self, path: &str) -> io::Result<FdStat> {
        let m = std::fs::metadata(path)?;
        let kind = if m.file_type().is_file() {
            FdKind::Regular
        } else if std::os::unix::fs::FileTypeExt::is_block_device(&m.file_type()) {
            FdKind::Block
        } else {
            FdKind::Other
        };
        Ok(FdStat {
            kind,
            dev: m.dev(),
            ino: m.ino(),
            rdev: m.rdev(),
            size: m.size(),
            blocks: m.blocks(),
        })
    }

    fn fdinfo(&mut self, pid: u32, fd: u32, buf: &mut Vec<u8>) -> io::Result<()> {
        // Kept open as `io` files are: a file followed is read at every scan. (Read again,
        // the file shows the descriptor of that number as it is then.)
        if let Some(open) = self.fdinfo.get(&(pid, fd)) {
            if read_from_start_into(open, false, buf).is_ok() {
                return Ok(());
            }
            self.fdinfo.remove(&(pid, fd));
            give_back(1);
        }
        let file = File::open(format!("/proc/{pid}/fdinfo/{fd}"))?;
        read_from_start_into(&file, false, buf)?;
        if take_place() {
            self.fdinfo.insert((pid, fd), file);
        }
        Ok(())
    }

    fn owner(&mut self, pid: u32) -> Option<u32> {
        owner(pid).ok()
    }

    fn device_size(&mut self, rdev: u64) -> u64 {
        let (major, minor) = (libc::major(rdev), libc::minor(rdev));
        std::fs::read_to_string(format!("/sys/dev/block/{major}:{minor}/size"))
            .ok()
            .and_then(|t| t.trim().parse::<u64>().ok())
            .map_or(0, |sectors| sectors.saturating_mul(512))
    }

    fn kept(&self) -> usize {
        self.open.len() + self.fdinfo.len()
    }

    fn fd_link(&mut self, pid: u32, fd: u32) -> io::Result<String> {
        let target = fd_link(pid, fd as i32)?;
        Ok(target.to_string_lossy().into_owned())
    }

    fn fd_link_bytes(&mut self, pid: u32, fd: u32) -> Option<Vec<u8>> {
        use std::os::unix::ffi::OsStringExt as _;
        Some(fd_link(pid, fd as i32).ok()?.into_os_string().into_vec())
    }

    fn fds(&mut self, pid: u32) -> io::Result<Vec<(u32, String)>> {
        Ok(fds(pid)?
            .into_iter()
            .filter_map(|fd| {
                let link = fd_link(pid, fd).ok()?;
                Some((fd as u32, link.to_string_lossy().into_owned()))
            })
            .collect())
    }

    fn fd_numbers(&mut self, pid: u32) -> io::Result<Vec<u32>> {
        Ok(fds(pid)?.into_iter().map(|fd| fd as u32).collect())
    }

    fn fd_flags(&mut self, pid: u32, fd: u32) -> Option<u32> {
        fdinfo_flags(&fdinfo(pid, fd as i32).ok()?)
    }

    fn fd_file(&mut self, pid: u32, fd: u32) -> Option<(u64, u64)> {
        let meta = std::fs::metadata(fd_path(pid, fd as i32)).ok()?;
        Some((meta.dev(), meta.ino()))
    }

    fn tasks(&mut self, pid: u32) -> io::Result<Vec<u32>> {
        let mut tids = tasks(pid)?;
        if pid == self.me {
            // The thread sampling is always running: leave it out of its own stage.
            if let Some(me) = std::fs::read_link("/proc/thread-self")
                .ok()
                .and_then(|l| l.file_name()?.to_str()?.parse::<u32>().ok())
            {
                tids.retain(|&t| t != me);
            }
        }
        tids.sort_unstable();
        Ok(tids)
    }

    fn release(&mut self, pid: u32) {
        let before = self.open.len() + self.fdinfo.len();
        self.open.retain(|(p, _), _| *p != pid);
        self.fdinfo.retain(|(p, _), _| *p != pid);
        give_back(before - self.open.len() - self.fdinfo.len());
        self.rpv.remove(&pid);
    }

    fn pipe_fill(&mut self, inode: u64, holder: u32, fd: u32) -> Option<Fill> {
        if let std::collections::hash_map::Entry::Vacant(slot) = self.pipes.entry(inode) {
            // O_PATH never runs the file's open routine, so even if the descriptor was
            // replaced by a device since its link was read, nothing is opened here; fstat
            // then confirms it is still the same pipe before it is used.
            let path = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_PATH)
                .open(fd_path(holder, fd as i32))
                .ok()?;
            let info = rustix::fs::fstat(path.as_fd()).ok()?;
            let pipe =
                rustix::fs::FileType::from_raw_mode(info.st_mode) == rustix::fs::FileType::Fifo;
            if !pipe || info.st_ino != inode {
                return None;
            }
            slot.insert(PipeRef { path });
        }
        let pipe = self.pipes.get(&inode)?;
        // A new reader of the same pipe, non-blocking, closed at the end of this block.
        let reader = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(own_fd_path(pipe.path.as_raw_fd()))
            .ok()?;
        let (queued, capacity) = fill_of(reader.as_fd())?;
        Some(Fill { queued, capacity })
    }

    fn retain_pipes(&mut self, keep: &[u64]) {
        self.pipes.retain(|inode, _| keep.contains(inode));
    }

    fn cpu_times(&mut self) -> Option<CpuTimes> {
        CpuTimes::parse(&kept_text(&mut self.stat, "/proc/stat")?)
    }

    fn last_pid(&mut self) -> Option<u32> {
        super::last_pid_of(&kept_text(&mut self.loadavg, "/proc/loadavg")?)
    }

    fn cores(&self) -> usize {
        // Asked once: the answer reads the process's cgroup files.
        *self
            .cores
            .get_or_init(|| std::thread::available_parallelism().map_or(1, usize::from))
    }

    fn open_files(&mut self, pid: u32) -> Option<(bool, bool)> {
        open_files_of(self, pid)
    }

    fn tcp_bytes(&mut self) -> Option<std::collections::HashMap<u64, u64>> {
        let mut bytes = std::collections::HashMap::new();
        (self.sockets?)(&mut bytes).ok()?;
        Some(bytes)
    }

    fn rpv_figures(&mut self, pid: u32) -> Option<RpvFigures> {
        if pid == self.me {
            let amount = self.own_bytes.as_mut().map(|count| count())?;
            return Some(RpvFigures {
                amount,
                transfer: true,
                ..RpvFigures::default()
            });
        }
        if !self.rpv.contains_key(&pid) {
            let tellers = self.tellers.as_mut()?;
            let cmdline = read(pid, ProcFile::Cmdline).unwrap_or_default();
            self.rpv.insert(pid, tellers(pid, &cmdline));
        }
        self.rpv.get_mut(&pid).and_then(|tell| tell())
    }
}

/// The bytes queued in a pipe (`FIONREAD`) and its capacity (`F_GETPIPE_SZ`).
fn fill_of(pipe: BorrowedFd<'_>) -> Option<(u64, u64)> {
    let queued = rustix::io::ioctl_fionread(pipe).ok()?;
    let capacity = rustix::pipe::fcntl_getpipe_size(pipe).ok()?;
    Some((queued, capacity as u64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::procfs::{Io, Stat};
    use crate::sys;
    use std::os::fd::{AsFd, AsRawFd};

    #[test]
    fn machine_cpu_times() {
        let text = "cpu  100 5 50 800 45 0 0 0 0 0\ncpu0 50 2 25 400 20 0 0 0 0 0\n\
                    cpu1 50 3 25 400 25 0 0 0 0 0\nintr 1 2 3\n";
        let t = CpuTimes::parse(text).unwrap();
        assert_eq!(
            t,
            CpuTimes {
                idle: 845,
                total: 1000,
                cpus: 2
            }
        );
        let later = CpuTimes {
            idle: 845 + 150,
            total: 1000 + 200,
            cpus: 2,
        };
        assert_eq!(later.idle_cores_since(&t), Some(1.5));
        assert_eq!(t.idle_cores_since(&t), None);
        assert_eq!(CpuTimes::parse("intr 1\n"), None);
        let real = SysProc::new().cpu_times().unwrap();
        assert!(real.cpus >= 1 && real.total > 0);
    }

    #[test]
    fn the_real_proc_reads_this_process() {
        let mut proc = SysProc::new();
        let me = std::process::id();
        let text = proc.read(me, ProcFile::Stat, true).unwrap();
        let stat = Stat::parse(&String::from_utf8_lossy(&text)).unwrap();
        assert!(stat.threads >= 1);
        // Read again through the kept descriptor: still this process.
        let again = proc.read(me, ProcFile::Stat, true).unwrap();
        assert_eq!(
            Stat::parse(&String::from_utf8_lossy(&again)).unwrap().start,
            stat.start
        );
        assert!(proc.pids().unwrap().contains(&me));
        // The calling thread is left out of its own process's threads, and only it.
        let tid = |_: ()| -> u32 {
            let link = std::fs::read_link("/proc/thread-self").unwrap();
            link.file_name().unwrap().to_str().unwrap().parse().unwrap()
        };
        let here = tid(());
        assert!(!proc.tasks(me).unwrap().contains(&here));
        let seen_elsewhere = std::thread::spawn(move || SysProc::new().tasks(me).unwrap());
        assert!(seen_elsewhere.join().unwrap().contains(&here));
        let io = proc.read(me, ProcFile::Io, false).unwrap();
        assert!(Io::parse(&String::from_utf8_lossy(&io)).is_some());
    }

    #[test]
    fn kept_files_are_read_again_and_share_one_budget() {
        let mut proc = SysProc::new();
        let me = std::process::id();
        let mut buf = Vec::new();
        proc.read_into(me, ProcFile::Io, true, &mut buf).unwrap();
        let first = Io::parse(&String::from_utf8_lossy(&buf)).unwrap();
        assert_eq!(proc.kept(), 1);
        let mut file = tempfile::tempfile().unwrap();
        std::io::Write::write_all(&mut file, &[7u8; 100_000]).unwrap();
        proc.read_into(me, ProcFile::Io, true, &mut buf).unwrap();
        let second = Io::parse(&String::from_utf8_lossy(&buf)).unwrap();
        assert!(
            second.wchar >= first.wchar + 100_000,
            "{first:?} then {second:?}"
        );
        assert_eq!(proc.kept(), 1);
        assert!(budget() >= 1 && budget() <= MAX_KEPT);
        // Every reader of the process takes its places from the one budget, and gives
        // them back (other tests' readers come and go meanwhile: only ours is counted).
        let taken = KEPT.load(Ordering::Relaxed);
        assert!(taken >= 1, "{taken}");
        proc.release(me);
        assert_eq!(proc.kept(), 0);
    }

    #[test]
    fn a_kept_fdinfo_shows_the_descriptor_as_it_is_now() {
        let mut proc = SysProc::new();
        let me = std::process::id();
        let mut buf = Vec::new();
        let mut file = tempfile::tempfile().unwrap();
        let fd = file.as_raw_fd() as u32;
        let pos = |proc: &mut SysProc, buf: &mut Vec<u8>| -> Option<u64> {
            proc.fdinfo(me, fd, buf).ok()?;
            crate::procfs::fdinfo_pos(&String::from_utf8_lossy(buf))
        };
        assert_eq!(pos(&mut proc, &mut buf), Some(0));
        assert_eq!(proc.kept(), 1);
        std::io::Write::write_all(&mut file, &[7u8; 5000]).unwrap();
        assert_eq!(pos(&mut proc, &mut buf), Some(5000));
        assert_eq!(proc.kept(), 1, "read again, not opened again");
        drop(file);
        // Closed: no position (another test may take the number meanwhile; then it is that
        // file's, as a fresh open would show).
        let again = pos(&mut proc, &mut buf);
        assert!(again.is_none() || again != Some(5000), "{again:?}");
        proc.release(me);
        assert_eq!(proc.kept(), 0);
    }

    #[test]
    fn its_own_stage_is_counted_through_the_hook_never_over_its_own_socket() {
        let mut proc = SysProc::new();
        let me = std::process::id();
        assert_eq!(proc.rpv_bytes(me), None);
        proc.set_own_bytes(Box::new(|| 42));
        assert_eq!(proc.rpv_bytes(me), Some(42));
    }

    #[test]
    fn a_pipe_fill_is_read_and_the_pipe_is_not_held() {
        let (r, w) = sys::pipe().unwrap();
        sys::write(w.as_fd(), &[7u8; 1000]).unwrap();
        let inode = sys::fstat(r.as_fd()).unwrap().ino;
        let mut proc = SysProc::new();
        let me = std::process::id();
        let fill = proc.pipe_fill(inode, me, r.as_raw_fd() as u32).unwrap();
        assert_eq!(fill.queued, 1000);
        assert!(fill.capacity >= 4096);
        // A wrong inode is refused.
        assert_eq!(proc.pipe_fill(inode + 1, me, r.as_raw_fd() as u32), None);
        // The view holds no reader: once ours is closed, a write fails with EPIPE (once
        // every copy of ours is closed: see `sys::wait_until`).
        drop(r);
        let mut err = None;
        sys::wait_until("no reader held", || {
            err = sys::write(w.as_fd(), b"x").err();
            err.is_some()
        });
        assert_eq!(err.unwrap().raw_os_error(), Some(libc::EPIPE));
        // And the kept reference still answers (the pipe is empty and unused now).
        assert!(proc.pipe_fill(inode, me, 0).is_some());
    }
}
