//! Other processes' descriptors, read through `crate::procfs`: what a descriptor is open on,
//! its size and its position.

use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt};

use crate::procfs::{self, Io, ProcFile, Stat};

/// Which of the process's byte counters stands in for a pipe or socket's position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Counter {
    /// `rchar`: the descriptor is open for reading only.
    Reads,
    /// `wchar`: open for writing only.
    Writes,
    /// `rchar + wchar`: open both ways (sockets).
    Both,
}

impl Counter {
    /// The label shown after the name, so nobody mistakes it for the descriptor's own count.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Counter::Reads => " (process reads)",
            Counter::Writes => " (process writes)",
            Counter::Both => " (process reads+writes)",
        }
    }
}

/// How a descriptor's progress is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// A regular file or block device: its offset (`pos:` in fdinfo).
    Offset,
    /// A pipe or socket (beyond pv): the process's I/O counters from `/proc/PID/io`.
    Process(Counter),
}

/// What was found behind `/proc/PID/fd/FD`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FdInfo {
    /// The link target (a path, or `pipe:[N]`, `socket:[N]`), for people: bytes that are
    /// not UTF-8 show as U+FFFD.
    pub path: String,
    /// The link target's exact bytes, when they are not UTF-8 (`path` is then lossy).
    pub raw_path: Option<std::ffi::OsString>,
    /// Device and inode of the open file, and the link's mode (open mode): if any of these
    /// changes, the descriptor was closed and reused.
    pub dev: u64,
    /// Inode.
    pub ino: u64,
    /// Mode of the `/proc` link itself (owner r/w bits = open for reading/writing).
    pub link_mode: u32,
    /// How to measure it.
    pub source: Source,
    /// Total size in bytes; 0 = unknown.
    pub size: u64,
}

/// Why a descriptor cannot be watched; rendered as pv's messages.
#[derive(Debug)]
pub(crate) enum FdError {
    /// `readlink` failed (usually: no such descriptor).
    Link(io::Error),
    /// `stat`/`lstat` of the link failed.
    Stat(String, io::Error),
    /// Neither a regular file, block device, pipe nor socket.
    Unsupported(String),
    /// A pipe or socket, but `/proc/PID/io` is not readable.
    Counters(String, io::Error),
}

impl FdError {
    /// The system error number behind it, if there is one.
    pub(crate) fn errno(&self) -> Option<i32> {
        match self {
            FdError::Link(e) | FdError::Stat(_, e) | FdError::Counters(_, e) => e.raw_os_error(),
            FdError::Unsupported(_) => None,
        }
    }

    /// The message, without `prog: `.
    pub(crate) fn message(&self, pid: u32, fd: i32) -> String {
        let err = crate::sys::strerror;
        match self {
            FdError::Link(e) => format!("pid {pid}: fd {fd}: {}", err(e)),
            FdError::Stat(path, e) => format!("pid {pid}: fd {fd}: {path}: {}", err(e)),
            FdError::Unsupported(path) => format!(
                "pid {pid}: fd {fd}: {path}: not a regular file, block device, pipe or socket"
            ),
            FdError::Counters(path, e) => {
                let io = ProcFile::Io.path(pid);
                format!("pid {pid}: fd {fd}: {path}: {io}: {}", err(e))
            }
        }
    }
}

/// Examines `/proc/PID/fd/FD`. With `pipes` false, pipes and sockets are `Unsupported`
/// (whole-process watching shows files only, like pv).
pub(crate) fn inspect(pid: u32, fd: i32, pipes: bool) -> Result<FdInfo, FdError> {
    let link = procfs::fd_path(pid, fd);
    let target_path = std::fs::read_link(&link).map_err(FdError::Link)?;
    let raw_path = target_path
        .to_str()
        .is_none()
        .then(|| target_path.clone().into_os_string());
    let path = target_path.to_string_lossy().into_owned();
    let target = std::fs::metadata(&link).map_err(|e| FdError::Stat(path.clone(), e))?;
    let link_meta = std::fs::symlink_metadata(&link).map_err(|e| FdError::Stat(path.clone(), e))?;
    let link_mode = link_meta.mode() & 0o777;
    let ft = target.file_type();
    let (source, size) = if ft.is_file() {
        // A file open for writing may still grow: its size is unknown.
        let size = if link_mode & 0o200 == 0 {
            target.len()
        } else {
            0
        };
        (Source::Offset, size)
    } else if ft.is_block_device() {
        (Source::Offset, block_size(&link).unwrap_or(0))
    } else if pipes && (ft.is_fifo() || ft.is_socket()) {
        let counter = match (link_mode & 0o400 != 0, link_mode & 0o200 != 0) {
            (true, false) => Counter::Reads,
            (false, true) => Counter::Writes,
            _ => Counter::Both,
        };
        read_counters(pid).map_err(|e| FdError::Counters(path.clone(), e))?;
        (Source::Process(counter), 0)
    } else {
        return Err(FdError::Unsupported(path));
    };
    Ok(FdInfo {
        path,
        raw_path,
        dev: target.dev(),
        ino: target.ino(),
        link_mode,
        source,
        size,
    })
}

fn block_size(link: &std::path::Path) -> io::Result<u64> {
    use std::io::Seek;
    let mut f = std::fs::File::open(link)?;
    f.seek(io::SeekFrom::End(0))
}

/// True if the descriptor still refers to the same open file (same device, inode and open
/// mode); false once it was closed or reused.
pub(crate) fn unchanged(pid: u32, fd: i32, info: &FdInfo) -> bool {
    let link = procfs::fd_path(pid, fd);
    let same_file =
        std::fs::metadata(&link).is_ok_and(|m| m.dev() == info.dev && m.ino() == info.ino);
    same_file && std::fs::symlink_metadata(&link).is_ok_and(|m| m.mode() & 0o777 == info.link_mode)
}

/// The current position, or `None` if the descriptor closed or changed.
pub(crate) fn position(pid: u32, fd: i32, info: &FdInfo) -> Option<u64> {
    if !unchanged(pid, fd, info) {
        return None;
    }
    match info.source {
        Source::Offset => procfs::fdinfo_pos(&procfs::fdinfo(pid, fd).ok()?),
        Source::Process(counter) => {
            let (r, w) = read_counters(pid).ok()?;
            Some(match counter {
                Counter::Reads => r,
                Counter::Writes => w,
                Counter::Both => r.saturating_add(w),
            })
        }
    }
}

fn read_counters(pid: u32) -> io::Result<(u64, u64)> {
    Io::of(pid).map(|io| (io.rchar, io.wchar))
}

/// True once the process is gone or a zombie (it has no descriptors any more, and a zombie
/// child of someone else would otherwise be watched forever).
pub(crate) fn process_gone(pid: u32) -> bool {
    Stat::of(pid).is_none_or(|s| matches!(s.state, 'Z' | 'X' | 'x'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_descriptors() {
        let pid = std::process::id();
        let file = tempfile::tempfile().unwrap();
        use std::os::fd::AsRawFd;
        let fd = file.as_raw_fd();
        assert!(procfs::fds(pid).unwrap().contains(&fd));
        let info = inspect(pid, fd, false).unwrap();
        assert_eq!(info.source, Source::Offset);
        assert_eq!(position(pid, fd, &info), Some(0));
        assert!(!process_gone(pid));
        let (r, _w) = crate::sys::pipe().unwrap();
        let rfd = r.as_raw_fd();
        assert!(matches!(
            inspect(pid, rfd, false),
            Err(FdError::Unsupported(_))
        ));
        let info = inspect(pid, rfd, true).unwrap();
        assert_eq!(info.source, Source::Process(Counter::Reads));
        assert!(info.path.starts_with("pipe:["));
    }
}
