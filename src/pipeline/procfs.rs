//! What the pipeline view reads from `/proc`, behind the [`Proc`] boundary.
//!
//! Owns: the [`Proc`] trait that discovery and sampling read through, and [`SysProc`], the real
//! implementation. Must not: decide anything about stages (that is `discover` and `watch`)
//! or keep a descriptor on a pipe open: a pipe is re-opened for each fill reading and closed
//! at once, because while it is open it is an extra reader (a writer would not get EPIPE if
//! the real reader died).
//!
//! [`SysProc`] keeps the `/proc/PID/{stat,io,wchan}` files of the processes it samples open
//! and re-reads them with `pread` at offset 0 (the kernel regenerates them on each read):
//! one syscall per file per sample instead of three, and a read on a process that exited
//! fails with ESRCH, even if its PID has been reused since.

use std::io;

use super::model::Fill;
// The parsers, here before `crate::procfs`: the view and `--top` name them here.
pub use crate::procfs::*;

mod sysproc;
pub use sysproc::SysProc;

/// A file of a process (or of one of its threads) under `/proc/PID`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProcFile {
    /// `stat`.
    Stat,
    /// `io`.
    Io,
    /// `wchan`: the kernel function a sleeping task waits in (`0` while it runs).
    Wchan,
    /// `cmdline`.
    Cmdline,
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
    /// `net/tcp` of the process's network namespace.
    NetTcp,
    /// `net/tcp6`, likewise.
    NetTcp6,
    /// `net/unix`, likewise.
    NetUnix,
}

impl ProcFile {
    fn path(self, pid: u32) -> String {
        match self {
            ProcFile::Stat => format!("/proc/{pid}/stat"),
            ProcFile::Io => format!("/proc/{pid}/io"),
            ProcFile::Wchan => format!("/proc/{pid}/wchan"),
            ProcFile::Cmdline => format!("/proc/{pid}/cmdline"),
            ProcFile::TaskStat(tid) => format!("/proc/{pid}/task/{tid}/stat"),
            ProcFile::TaskWchan(tid) => format!("/proc/{pid}/task/{tid}/wchan"),
            ProcFile::Children(tid) => format!("/proc/{pid}/task/{tid}/children"),
            ProcFile::TaskSchedstat(tid) => format!("/proc/{pid}/task/{tid}/schedstat"),
            ProcFile::TaskSyscall(tid) => format!("/proc/{pid}/task/{tid}/syscall"),
            ProcFile::NetTcp => format!("/proc/{pid}/net/tcp"),
            ProcFile::NetTcp6 => format!("/proc/{pid}/net/tcp6"),
            ProcFile::NetUnix => format!("/proc/{pid}/net/unix"),
        }
    }
}

/// The process table as the pipeline view sees it. [`SysProc`] reads the real `/proc`; the
/// tests implement it over synthetic tables.
pub trait Proc {
    /// Every process ID.
    fn pids(&mut self) -> io::Result<Vec<u32>>;
    /// The text of a file of `pid`. With `keep`, the file stays open for the next read of
    /// the same file (for processes sampled repeatedly); [`Proc::release`] closes them.
    fn read(&mut self, pid: u32, file: ProcFile, keep: bool) -> io::Result<Vec<u8>>;
    /// The target of `/proc/PID/fd/FD`.
    fn fd_link(&mut self, pid: u32, fd: u32) -> io::Result<String>;
    /// The thread IDs of `pid` (for this process, without the calling thread).
    fn tasks(&mut self, pid: u32) -> io::Result<Vec<u32>>;
    /// Closes the files kept open for `pid`.
    fn release(&mut self, pid: u32);
    /// How full the pipe with this inode is, reached through descriptor `fd` of `holder`;
    /// `None` if it cannot be read (gone, not permitted, not that pipe any more).
    fn pipe_fill(&mut self, inode: u64, holder: u32, fd: u32) -> Option<Fill>;
    /// Forgets every pipe not in `keep`.
    fn retain_pipes(&mut self, keep: &[u64]);
    /// Bytes moved so far by `pid` if it is an rpv that tells (its control channel), in
    /// bytes; `None` otherwise.
    fn rpv_bytes(&mut self, pid: u32) -> Option<u64>;
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
}

#[cfg(test)]
mod tests {
    use super::*;
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
        // The view holds no reader: once ours is closed, a write fails with EPIPE.
        drop(r);
        let err = sys::write(w.as_fd(), b"x").unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EPIPE));
        // And the kept reference still answers (the pipe is empty and unused now).
        assert!(proc.pipe_fill(inode, me, 0).is_some());
    }
}
