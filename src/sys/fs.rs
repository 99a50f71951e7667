//! Files and descriptors: metadata, plain reads and writes, offsets, status flags, locks.
//!
//! Owns: `FileInfo` (the parts of `struct stat` rpv uses) and the one `fstat` wrapper behind
//! both `fstat` and `file_version`. Must not: decide anything from the metadata (the
//! callers do).

use std::io;
use std::os::fd::BorrowedFd;
use std::path::Path;

use rustix::fs::{FileType, OFlags, SeekFrom};

/// What kind of file a descriptor refers to (from `fstat`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FileKind {
    /// A FIFO or anonymous pipe.
    Pipe,
    /// A regular file.
    Regular,
    /// A block device.
    Block,
    /// A character device (tty, /dev/null, /dev/zero, …).
    Char,
    /// A socket.
    Socket,
    /// A directory.
    Directory,
    /// Anything else.
    Other,
}

/// The parts of `struct stat` rpv uses.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FileInfo {
    /// File type.
    pub kind: FileKind,
    /// Device of the inode.
    pub dev: u64,
    /// Inode number.
    pub ino: u64,
    /// Size in bytes (`st_size`).
    pub size: u64,
    /// Device number for device files (`st_rdev`).
    pub rdev: u64,
    /// `st_mtime` in nanoseconds.
    pub mtime_ns: i128,
    /// `st_ctime` in nanoseconds.
    pub ctime_ns: i128,
}

/// What identifies one version of a file's contents: device, inode, size, and the
/// modification and status-change times in nanoseconds (from `fstat`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileVersion {
    /// Device of the inode.
    pub dev: u64,
    /// Inode number.
    pub ino: u64,
    /// Size in bytes.
    pub size: u64,
    /// `st_mtime` in nanoseconds.
    pub mtime_ns: i128,
    /// `st_ctime` in nanoseconds.
    pub ctime_ns: i128,
}

impl FileInfo {
    /// The fields that identify this version of the file's contents.
    pub(crate) fn version(&self) -> FileVersion {
        FileVersion {
            dev: self.dev,
            ino: self.ino,
            size: self.size,
            mtime_ns: self.mtime_ns,
            ctime_ns: self.ctime_ns,
        }
    }
}

fn kind_of(file_type: FileType) -> FileKind {
    match file_type {
        FileType::Fifo => FileKind::Pipe,
        FileType::RegularFile => FileKind::Regular,
        FileType::BlockDevice => FileKind::Block,
        FileType::CharacterDevice => FileKind::Char,
        FileType::Socket => FileKind::Socket,
        FileType::Directory => FileKind::Directory,
        _ => FileKind::Other,
    }
}

/// The entries of the directory `path` (without `.` and `..`): each name, and its kind as
/// the directory says (None where the filesystem does not; `stat` it then). Unlike std's
/// `read_dir`, whose close asserts that `closedir` succeeded (an EIO there, on a network
/// filesystem or a failing disk, aborted rpv), a failed close is ignored: the entries were
/// read.
pub(crate) fn dir_entries(path: &Path) -> io::Result<Vec<(std::ffi::OsString, Option<FileKind>)>> {
    use std::os::unix::ffi::OsStrExt;
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let fd = rustix::fs::open(path, flags, rustix::fs::Mode::empty())?;
    let mut entries = Vec::new();
    for entry in rustix::fs::Dir::new(fd)? {
        let entry = entry?;
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        let kind = match entry.file_type() {
            FileType::Unknown => None,
            known => Some(kind_of(known)),
        };
        entries.push((std::ffi::OsStr::from_bytes(name).to_os_string(), kind));
    }
    Ok(entries)
}

// The field types of `struct stat` differ between architectures (u32 or u64, i32 or i64);
// these conversions are lossless everywhere rpv builds.
#[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
fn info_from_stat(st: &rustix::fs::Stat) -> FileInfo {
    let kind = kind_of(FileType::from_raw_mode(st.st_mode as rustix::fs::RawMode));
    let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
    FileInfo {
        kind,
        dev: st.st_dev as u64,
        ino: st.st_ino as u64,
        size: u64::try_from(st.st_size).unwrap_or(0),
        rdev: st.st_rdev as u64,
        mtime_ns: ns(st.st_mtime as i64, st.st_mtime_nsec as i64),
        ctime_ns: ns(st.st_ctime as i64, st.st_ctime_nsec as i64),
    }
}

/// `fstat(2)`.
pub(crate) fn fstat(fd: BorrowedFd<'_>) -> io::Result<FileInfo> {
    Ok(info_from_stat(&rustix::fs::fstat(fd)?))
}

/// `fstat(2)` reduced to a [`FileVersion`].
pub(crate) fn file_version(fd: BorrowedFd<'_>) -> io::Result<FileVersion> {
    fstat(fd).map(|info| info.version())
}

/// `stat(2)`: a path's metadata without opening it (opening a FIFO would pair with, and
/// then abandon, its writer).
pub(crate) fn stat(path: &Path) -> io::Result<FileInfo> {
    Ok(info_from_stat(&rustix::fs::stat(path)?))
}

/// True if the device number is /dev/zero's (character device 1:5).
pub(crate) fn is_dev_zero(info: &FileInfo) -> bool {
    let rdev = info.rdev as rustix::fs::Dev;
    info.kind == FileKind::Char && rustix::fs::major(rdev) == 1 && rustix::fs::minor(rdev) == 5
}

/// `read(2)` into `buf`.
pub fn read(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    Ok(rustix::io::read(fd, buf)?)
}

/// `write(2)` from `buf`.
pub fn write(fd: BorrowedFd<'_>, buf: &[u8]) -> io::Result<usize> {
    Ok(rustix::io::write(fd, buf)?)
}

/// `pread(2)` at `offset`, leaving the file offset alone.
pub(crate) fn pread(fd: BorrowedFd<'_>, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    if i64::try_from(offset).is_err() {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    Ok(rustix::io::pread(fd, buf, offset)?)
}

/// `lseek(2)` with `whence` one of `SEEK_SET`, `SEEK_CUR`, `SEEK_END`; returns the new
/// offset. Any other `whence`, or a negative absolute offset, is EINVAL.
pub(crate) fn lseek(fd: BorrowedFd<'_>, offset: i64, whence: libc::c_int) -> io::Result<u64> {
    let einval = || io::Error::from_raw_os_error(libc::EINVAL);
    let pos = match whence {
        libc::SEEK_SET => SeekFrom::Start(u64::try_from(offset).map_err(|_| einval())?),
        libc::SEEK_CUR => SeekFrom::Current(offset),
        libc::SEEK_END => SeekFrom::End(offset),
        _ => return Err(einval()),
    };
    Ok(rustix::fs::seek(fd, pos)?)
}

/// `ftruncate(2)`.
pub(crate) fn ftruncate(fd: BorrowedFd<'_>, len: u64) -> io::Result<()> {
    if i64::try_from(len).is_err() {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    Ok(rustix::fs::ftruncate(fd, len)?)
}

/// `fdatasync(2)`.
pub(crate) fn fdatasync(fd: BorrowedFd<'_>) -> io::Result<()> {
    Ok(rustix::fs::fdatasync(fd)?)
}

/// `posix_fadvise(POSIX_FADV_SEQUENTIAL)` over the whole file; failures are ignored.
pub(crate) fn advise_sequential(fd: BorrowedFd<'_>) {
    let _ = rustix::fs::fadvise(fd, 0, None, rustix::fs::Advice::Sequential);
}

/// `access(path, R_OK)`.
pub(crate) fn readable(path: &Path) -> bool {
    rustix::fs::access(path, rustix::fs::Access::READ_OK).is_ok()
}

/// What identifies the pipe or FIFO open on `fd`: `Ok(Pipe(inode))` for an anonymous pipe
/// (`/proc/*/fd` shows `pipe:[inode]`), `Fifo(dev, inode)` for a named FIFO (shown by its
/// path); None for anything else.
pub(crate) fn pipe_id(fd: BorrowedFd<'_>) -> Option<PipeId> {
    let info = fstat(fd).ok()?;
    if info.kind != FileKind::Pipe {
        return None;
    }
    let raw = std::os::fd::AsRawFd::as_raw_fd(&fd);
    let link = crate::procfs::fd_link(std::process::id(), raw).ok()?;
    if link.to_str().is_some_and(|l| l.starts_with("pipe:[")) {
        Some(PipeId::Pipe(info.ino))
    } else {
        Some(PipeId::Fifo(info.dev, info.ino))
    }
}

/// A pipe or FIFO, as [`pipe_id`] tells them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PipeId {
    /// An anonymous pipe: its inode.
    Pipe(u64),
    /// A named FIFO: device and inode.
    Fifo(u64, u64),
}

/// `flock(2)` with `LOCK_UN`. (No blocking `LOCK_EX`: an EINTR from it is not enough to end
/// a wait, since a signal that comes between two calls is missed; lockers use [`try_flock`]
/// with a deadline.)
pub(crate) fn unlock(fd: BorrowedFd<'_>) -> io::Result<()> {
    Ok(rustix::fs::flock(fd, rustix::fs::FlockOperation::Unlock)?)
}

/// `flock(2)` with `LOCK_EX | LOCK_NB`: true if this open file now holds the lock, false if
/// another open file of the same inode holds it.
pub(crate) fn try_flock(fd: BorrowedFd<'_>) -> io::Result<bool> {
    match rustix::fs::flock(fd, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(true),
        Err(rustix::io::Errno::WOULDBLOCK) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// `F_GETFL`: the file status flags (`O_NONBLOCK`, `O_APPEND`, …) as the C flag bits.
pub(crate) fn status_flags(fd: BorrowedFd<'_>) -> io::Result<libc::c_int> {
    let flags = rustix::fs::fcntl_getfl(fd)?;
    Ok(flags.bits() as libc::c_int)
}

/// Sets or clears one file status flag (`O_DIRECT`, `O_NONBLOCK`, …, as the C flag bit) with
/// `F_SETFL`; no call if it already has that state.
pub(crate) fn set_status_flag(fd: BorrowedFd<'_>, flag: libc::c_int, on: bool) -> io::Result<()> {
    let flags = rustix::fs::fcntl_getfl(fd)?;
    let flag = OFlags::from_bits_retain(flag as u32);
    let mut new = flags;
    new.set(flag, on);
    if new == flags {
        return Ok(());
    }
    Ok(rustix::fs::fcntl_setfl(fd, new)?)
}

/// Sets or clears `O_NONBLOCK`.
pub fn set_nonblocking(fd: BorrowedFd<'_>, yes: bool) -> io::Result<()> {
    set_status_flag(fd, libc::O_NONBLOCK, yes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsFd;

    #[test]
    fn a_directory_lists_its_entries_with_their_kinds() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("file"), b"x").unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::os::unix::fs::symlink("file", dir.path().join("link")).unwrap();
        let mut entries = dir_entries(dir.path()).unwrap();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        let names: Vec<_> = entries.iter().map(|(n, _)| n.to_str().unwrap()).collect();
        assert_eq!(names, ["file", "link", "sub"]);
        // (A filesystem may not tell the kind: then None, never a wrong one.)
        let kinds: Vec<_> = entries.iter().map(|(_, k)| *k).collect();
        for (kind, want) in
            kinds
                .iter()
                .zip([FileKind::Regular, FileKind::Other, FileKind::Directory])
        {
            assert!(kind.is_none() || *kind == Some(want), "{entries:?}");
        }
        assert!(dir_entries(&dir.path().join("missing")).is_err());
        assert!(
            dir_entries(&dir.path().join("file")).is_err(),
            "not a directory"
        );
    }

    #[test]
    fn try_flock_is_held_by_one_open_file_at_a_time() {
        let file = tempfile::NamedTempFile::new().unwrap();
        let first = std::fs::File::open(file.path()).unwrap();
        let second = std::fs::File::open(file.path()).unwrap();
        assert!(try_flock(first.as_fd()).unwrap());
        assert!(!try_flock(second.as_fd()).unwrap(), "held by the first");
        assert!(
            try_flock(first.as_fd()).unwrap(),
            "the holder may take it again"
        );
        drop(first);
        // (Once every copy of the descriptor is closed: see `sys::wait_until`.)
        crate::sys::wait_until("released when closed", || {
            try_flock(second.as_fd()).unwrap()
        });
    }

    #[test]
    fn fstat_and_file_version_describe_the_same_file() {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(b"12345").unwrap();
        let info = fstat(file.as_fd()).unwrap();
        assert_eq!(info.kind, FileKind::Regular);
        assert_eq!(info.size, 5);
        let meta = file.metadata().unwrap();
        use std::os::unix::fs::MetadataExt;
        assert_eq!((info.dev, info.ino), (meta.dev(), meta.ino()));
        assert_eq!(
            info.mtime_ns,
            i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec())
        );
        assert_eq!(file_version(file.as_fd()).unwrap(), info.version());
        file.write_all(b"6").unwrap();
        assert_ne!(file_version(file.as_fd()).unwrap(), info.version());
    }

    #[test]
    fn kinds_of_files() {
        let (r, _w) = crate::sys::pipe().unwrap();
        assert_eq!(fstat(r.as_fd()).unwrap().kind, FileKind::Pipe);
        assert_eq!(stat(Path::new("/")).unwrap().kind, FileKind::Directory);
        let zero = stat(Path::new("/dev/zero")).unwrap();
        assert!(zero.kind == FileKind::Char && is_dev_zero(&zero));
        assert!(!is_dev_zero(&stat(Path::new("/dev/null")).unwrap()));
        assert!(stat(Path::new("/nonexistent/x")).is_err());
    }

    #[test]
    fn lseek_whence_and_bad_arguments() {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&[7; 100]).unwrap();
        let fd = file.as_fd();
        assert_eq!(lseek(fd, 0, libc::SEEK_END).unwrap(), 100);
        assert_eq!(lseek(fd, 10, libc::SEEK_SET).unwrap(), 10);
        assert_eq!(lseek(fd, -4, libc::SEEK_CUR).unwrap(), 6);
        let einval = Some(libc::EINVAL);
        assert_eq!(
            lseek(fd, -1, libc::SEEK_SET).unwrap_err().raw_os_error(),
            einval
        );
        assert_eq!(lseek(fd, 0, 77).unwrap_err().raw_os_error(), einval);
        let mut buf = [0u8; 8];
        assert_eq!(pread(fd, &mut buf, 96).unwrap(), 4);
        assert_eq!(
            lseek(fd, 0, libc::SEEK_CUR).unwrap(),
            6,
            "pread leaves the offset"
        );
        assert_eq!(
            pread(fd, &mut buf, u64::MAX).unwrap_err().raw_os_error(),
            einval
        );
    }

    #[test]
    fn status_flags_set_and_clear_one_bit() {
        let (r, _w) = crate::sys::pipe().unwrap();
        let fd = r.as_fd();
        assert_eq!(status_flags(fd).unwrap() & libc::O_NONBLOCK, 0);
        set_nonblocking(fd, true).unwrap();
        assert_ne!(status_flags(fd).unwrap() & libc::O_NONBLOCK, 0);
        let mut buf = [0u8; 1];
        let err = read(fd, &mut buf).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EAGAIN));
        set_status_flag(fd, libc::O_NONBLOCK, false).unwrap();
        assert_eq!(status_flags(fd).unwrap() & libc::O_NONBLOCK, 0);
    }
}
