//! Every path `--top` reads under `/proc` (and `/sys/dev/block`), and how it reads them:
//! part of the one reader of `/proc`, used by `src/top/scan.rs`.
//!
//! Owns: the `io` files kept open and read again with `pread` (one call per process per
//! look instead of an open, a read and a close), within a budget of descriptors (half of
//! the limit on open files, less a margin; the processes beyond it are read with an open,
//! a read and a close), and the buffer of the path. Must not: interpret what it reads
//! beyond the files' format (the scanner does).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::{FileExt, MetadataExt};

/// The largest number of `io` files kept open, whatever the limit.
const MAX_KEPT: usize = 8192;
/// Descriptors left for everything else (the pipelines' watchers keep files of their own).
const MARGIN: usize = 64;

/// Reads `/proc` for the scanner.
pub(crate) struct ProcFiles {
    /// The `io` file of each process read so far (within the budget).
    io: HashMap<u32, File>,
    budget: usize,
    path: String,
}

/// Reads a small `/proc` file into `buf`: an open, reads until the end, a close
/// (`read_to_end` would also ask the file's size and position: two calls more per file).
fn read_small(path: &str, buf: &mut Vec<u8>) -> io::Result<()> {
    let file = File::open(path)?;
    read_all(&file, buf)
}

/// Reads `file` from its start into `buf` with `pread` (a file of `/proc` gives what it
/// has in one read when it fits).
fn read_all(file: &File, buf: &mut Vec<u8>) -> io::Result<()> {
    buf.clear();
    let mut chunk = [0u8; 4096];
    loop {
        match file.read_at(&mut chunk, buf.len() as u64) {
            Ok(0) => return Ok(()),
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                if n < chunk.len() {
                    return Ok(());
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

impl ProcFiles {
    pub(crate) fn new() -> ProcFiles {
        let limit = usize::try_from(
            rustix::process::getrlimit(rustix::process::Resource::Nofile)
                .current
                .unwrap_or(u64::MAX),
        )
        .unwrap_or(usize::MAX);
        ProcFiles {
            io: HashMap::new(),
            budget: (limit / 2).saturating_sub(MARGIN).min(MAX_KEPT),
            path: String::with_capacity(64),
        }
    }

    /// `/proc/PID/NAME` in the path buffer.
    fn path(&mut self, pid: u32, name: &str) -> &str {
        self.path.clear();
        let _ = write!(self.path, "/proc/{pid}/{name}");
        &self.path
    }

    /// Every PID listed in `/proc`, to `each`.
    pub(crate) fn pids(&self, mut each: impl FnMut(u32)) -> io::Result<()> {
        for entry in std::fs::read_dir("/proc")?.flatten() {
            if let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            {
                each(pid);
            }
        }
        Ok(())
    }

    /// `/proc/PID/io` into `buf`: through the file kept open for `pid` (opened and kept
    /// the first time, within the budget). A kept file whose process is gone (its PID
    /// perhaps taken by another since) is closed and the path opened again.
    pub(crate) fn io(&mut self, pid: u32, buf: &mut Vec<u8>) -> io::Result<()> {
        if let Some(file) = self.io.get(&pid) {
            if read_all(file, buf).is_ok() {
                return Ok(());
            }
            self.io.remove(&pid);
        }
        let file = File::open(self.path(pid, "io"))?;
        read_all(&file, buf)?;
        if self.io.len() < self.budget {
            self.io.insert(pid, file);
        }
        Ok(())
    }

    /// Closes `pid`'s kept files (it is gone, or no longer read).
    pub(crate) fn forget(&mut self, pid: u32) {
        self.io.remove(&pid);
    }

    /// How many `io` files are kept open.
    pub(crate) fn kept(&self) -> usize {
        self.io.len()
    }

    /// `/proc/PID/stat` into `buf`.
    pub(crate) fn stat(&mut self, pid: u32, buf: &mut Vec<u8>) -> io::Result<()> {
        read_small(self.path(pid, "stat"), buf)
    }

    /// `/proc/PID/cmdline` (empty if it cannot be read).
    pub(crate) fn cmdline(&mut self, pid: u32) -> Vec<u8> {
        std::fs::read(self.path(pid, "cmdline")).unwrap_or_default()
    }

    /// The owner of `/proc/PID` (the process's user).
    pub(crate) fn owner(&mut self, pid: u32) -> Option<u32> {
        std::fs::metadata(self.path(pid, "")).ok().map(|m| m.uid())
    }

    /// The directory of `pid`'s descriptors (each entry's path is the descriptor's link).
    pub(crate) fn fd_dir(&mut self, pid: u32) -> io::Result<std::fs::ReadDir> {
        std::fs::read_dir(self.path(pid, "fd"))
    }

    /// What `pid`'s descriptor `fd` is open on (followed through the link).
    pub(crate) fn fd_metadata(&mut self, pid: u32, fd: i32) -> io::Result<std::fs::Metadata> {
        self.path.clear();
        let _ = write!(self.path, "/proc/{pid}/fd/{fd}");
        std::fs::metadata(&self.path)
    }

    /// `/proc/PID/fdinfo/FD` into `buf`.
    pub(crate) fn fdinfo(&mut self, pid: u32, fd: i32, buf: &mut Vec<u8>) -> io::Result<()> {
        self.path.clear();
        let _ = write!(self.path, "/proc/{pid}/fdinfo/{fd}");
        let mut file = File::open(&self.path)?;
        buf.clear();
        file.read_to_end(buf).map(|_| ())
    }

    /// The size in bytes of block device `rdev`, from `/sys/dev/block` (readable by
    /// anyone, unlike the device itself); 0 if unknown.
    pub(crate) fn device_size(&mut self, rdev: u64) -> u64 {
        let (major, minor) = (libc::major(rdev), libc::minor(rdev));
        self.path.clear();
        let _ = write!(self.path, "/sys/dev/block/{major}:{minor}/size");
        std::fs::read_to_string(&self.path)
            .ok()
            .and_then(|t| t.trim().parse::<u64>().ok())
            .map_or(0, |sectors| sectors.saturating_mul(512))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn its_own_io_is_read_again_through_the_kept_file() {
        let mut proc = ProcFiles::new();
        let me = std::process::id();
        let mut buf = Vec::new();
        proc.io(me, &mut buf).unwrap();
        let first = crate::procfs::Io::parse(&String::from_utf8_lossy(&buf)).unwrap();
        assert_eq!(proc.kept(), 1);
        let mut file = tempfile::tempfile().unwrap();
        std::io::Write::write_all(&mut file, &[7u8; 100_000]).unwrap();
        proc.io(me, &mut buf).unwrap();
        let second = crate::procfs::Io::parse(&String::from_utf8_lossy(&buf)).unwrap();
        assert!(
            second.wchar >= first.wchar + 100_000,
            "{first:?} then {second:?}"
        );
        assert_eq!(proc.kept(), 1);
        proc.forget(me);
        assert_eq!(proc.kept(), 0);
    }
}
