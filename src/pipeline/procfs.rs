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
    fn stat_refuses_garbage() {
        assert_eq!(Stat::parse(""), None);
        assert_eq!(Stat::parse("12 (x"), None);
        assert_eq!(Stat::parse("12 (x) S 1 2"), None);
        assert_eq!(
            Stat::parse("12 (x) S a b c 0 -1 0 0 0 0 0 3 4 0 0 20 0 3 0 99"),
            None
        );
    }

    #[test]
    fn io_counters() {
        let text = "rchar: 7566\nwchar: 0\nsyscr: 9\nsyscw: 0\nread_bytes: 0\n";
        assert_eq!(
            Io::parse(text),
            Some(Io {
                rchar: 7566,
                wchar: 0
            })
        );
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
