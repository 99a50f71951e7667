//! The real `/proc` behind the [`Proc`] boundary.
//!
//! Owns: [`SysProc`] (the files it keeps open and re-reads with `pread`, at most
//! [`MAX_KEPT`] of them; the `O_PATH` handles of the pipes whose fill it reads; the links to
//! other rpv processes whose counts it asks for) and the scan of a process's descriptors for
//! files it reads or writes besides its pipes.
//! Must not: parse `/proc` text (the parsers are in `procfs.rs`) or decide anything about
//! stages.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::fs::OpenOptionsExt;

use super::{CpuTimes, Fill, Proc, ProcFile};
use crate::sys::{self, FileKind};

/// Most `/proc` files kept open at once; beyond this, files are opened for each read (a
/// very long pipeline must not run the process out of descriptors).
const MAX_KEPT: usize = 512;

/// Whether the descriptors of `pid` (links and `fdinfo` flags) include files or sockets
/// open for reading, and for writing, leaving out 0 to 2, pipes, and devices (`/dev/…`).
fn open_files_of(pid: u32) -> Option<(bool, bool)> {
    let mut found = (false, false);
    for entry in std::fs::read_dir(format!("/proc/{pid}/fd")).ok()? {
        let Some(fd) = entry
            .ok()
            .and_then(|e| e.file_name().to_str()?.parse::<u32>().ok())
        else {
            continue;
        };
        if fd <= 2 {
            continue;
        }
        let Ok(link) = std::fs::read_link(format!("/proc/{pid}/fd/{fd}")) else {
            continue;
        };
        let link = link.to_string_lossy();
        let counted =
            (link.starts_with('/') && !link.starts_with("/dev/")) || link.starts_with("socket:[");
        if !counted {
            continue;
        }
        let info = std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{fd}")).unwrap_or_default();
        let flags = info
            .lines()
            .find_map(|l| l.strip_prefix("flags:"))
            .and_then(|f| u32::from_str_radix(f.trim(), 8).ok());
        let Some(flags) = flags else {
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

/// The pipe handle kept for fill readings: an `O_PATH` descriptor, which refers to the pipe
/// without being one of its readers or writers.
#[derive(Debug)]
struct PipeRef {
    path: File,
}

/// The real `/proc`.
pub struct SysProc {
    me: u32,
    open: HashMap<(u32, ProcFile), File>,
    pipes: HashMap<u64, PipeRef>,
    rpv: HashMap<u32, crate::pipeline::control::RpvLink>,
    own_bytes: Option<Box<dyn FnMut() -> u64>>,
    /// `/proc/stat`, kept open.
    stat: Option<File>,
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
    pub fn new() -> SysProc {
        SysProc {
            me: std::process::id(),
            open: HashMap::new(),
            pipes: HashMap::new(),
            rpv: HashMap::new(),
            own_bytes: None,
            stat: None,
            cores: std::cell::OnceCell::new(),
        }
    }

    /// Where this process's own stage gets its byte count (a pipeline view running inside
    /// the transfer it watches cannot ask itself over its control channel).
    pub fn set_own_bytes(&mut self, counter: Box<dyn FnMut() -> u64>) {
        self.own_bytes = Some(counter);
    }
}

/// Reads the whole of a `/proc` file from offset 0 (one `pread` when it fits the buffer).
fn read_from_start(file: &File) -> io::Result<Vec<u8>> {
    let mut out = vec![0u8; 1024];
    let mut len = 0;
    loop {
        let n = sys::pread(file.as_fd(), &mut out[len..], len as u64)?;
        len += n;
        if n == 0 || len < out.len() {
            out.truncate(len);
            return Ok(out);
        }
        out.resize(out.len() * 2, 0);
    }
}

impl Proc for SysProc {
    fn pids(&mut self) -> io::Result<Vec<u32>> {
        let mut pids = Vec::new();
        for entry in std::fs::read_dir("/proc")? {
            let entry = entry?;
            if let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) {
                pids.push(pid);
            }
        }
        Ok(pids)
    }

    fn read(&mut self, pid: u32, file: ProcFile, keep: bool) -> io::Result<Vec<u8>> {
        if let Some(open) = self.open.get(&(pid, file)) {
            let result = read_from_start(open);
            if result.is_err() {
                self.open.remove(&(pid, file));
            }
            return result;
        }
        let opened = File::open(file.path(pid))?;
        let text = read_from_start(&opened)?;
        if keep && self.open.len() < MAX_KEPT {
            self.open.insert((pid, file), opened);
        }
        Ok(text)
    }

    fn fd_link(&mut self, pid: u32, fd: u32) -> io::Result<String> {
        let target = std::fs::read_link(format!("/proc/{pid}/fd/{fd}"))?;
        Ok(target.to_string_lossy().into_owned())
    }

    fn tasks(&mut self, pid: u32) -> io::Result<Vec<u32>> {
        let mut tids = Vec::new();
        for entry in std::fs::read_dir(format!("/proc/{pid}/task"))? {
            if let Some(tid) = entry?.file_name().to_str().and_then(|n| n.parse().ok()) {
                tids.push(tid);
            }
        }
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
        self.open.retain(|(p, _), _| *p != pid);
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
                .open(format!("/proc/{holder}/fd/{fd}"))
                .ok()?;
            let info = sys::fstat(path.as_fd()).ok()?;
            if info.kind != FileKind::Pipe || info.ino != inode {
                return None;
            }
            slot.insert(PipeRef { path });
        }
        let pipe = self.pipes.get(&inode)?;
        // A new reader of the same pipe, non-blocking, closed at the end of this block.
        let reader = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(format!("/proc/self/fd/{}", pipe.path.as_raw_fd()))
            .ok()?;
        let queued = sys::unread_bytes(reader.as_fd()).ok()? as u64;
        let capacity = sys::pipe_size(reader.as_fd()).ok()? as u64;
        Some(Fill { queued, capacity })
    }

    fn retain_pipes(&mut self, keep: &[u64]) {
        self.pipes.retain(|inode, _| keep.contains(inode));
    }

    fn cpu_times(&mut self) -> Option<CpuTimes> {
        let file = match &self.stat {
            Some(file) => file,
            None => self.stat.insert(File::open("/proc/stat").ok()?),
        };
        let text = read_from_start(file).ok()?;
        CpuTimes::parse(&String::from_utf8_lossy(&text))
    }

    fn cores(&self) -> usize {
        // Asked once: the answer reads the process's cgroup files.
        *self
            .cores
            .get_or_init(|| std::thread::available_parallelism().map_or(1, usize::from))
    }

    fn open_files(&mut self, pid: u32) -> Option<(bool, bool)> {
        open_files_of(pid)
    }

    fn rpv_bytes(&mut self, pid: u32) -> Option<u64> {
        if pid == self.me {
            return self.own_bytes.as_mut().map(|count| count());
        }
        let link = self.rpv.entry(pid).or_insert_with(|| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            crate::pipeline::control::RpvLink::new(pid, &cmdline)
        });
        link.bytes(sys::monotonic_ns())
    }
}
