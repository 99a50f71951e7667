//! Writing to the output on the read/write path, with pv's transfer modifiers:
//! `-X` (discard), `-O` (sparse), `-Y` (sync) and `-K` (direct I/O).
//!
//! Differences from pv, on purpose: `-O` turns every all-zero 4 KiB block into a hole, not
//! only whole all-zero writes; `-K` writes the unaligned tail of a file by
//! dropping `O_DIRECT` when the kernel refuses an unaligned write (pv fails and truncates).

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::sync::Mutex;

use crate::sys::{self, FileKind};

/// Block size for sparse detection and direct-I/O alignment.
pub(crate) const BLOCK: usize = 4096;

/// The output side of the read/write path.
#[derive(Debug)]
pub(crate) struct Writer<'a> {
    fd: BorrowedFd<'a>,
    discard: bool,
    sparse: bool,
    sync: bool,
    direct: bool,
    /// Puts the output's O_DIRECT flag back as it was when the writer is dropped.
    _direct_guard: Option<DirectGuard<'a>>,
    /// The last sparse write ended in a hole, so the file must be extended at the end.
    hole_at_end: bool,
    /// Bytes of the current (or last) [`Writer::write`] that reached the output: all of
    /// them after a success, the part before the error after a failure.
    done: usize,
    /// The last failure came from a call that is not a write (`fdatasync` for `-Y`,
    /// `ftruncate` or `lseek` for `-O`): its EPIPE is an error like any other, not the reader
    /// going away (a FUSE or network filesystem may return any errno there).
    failed_beside_write: bool,
}

/// Modifiers that change how data is written.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Modifiers {
    /// `-X`: read and count, never write.
    pub discard: bool,
    /// `-O`: seek over all-zero blocks.
    pub sparse: bool,
    /// `-Y`: fdatasync after every write.
    pub sync: bool,
    /// `-K`: O_DIRECT on inputs and output.
    pub direct: bool,
}

impl<'a> Writer<'a> {
    /// Prepares `fd` for writing with `m`.
    pub(crate) fn new(fd: BorrowedFd<'a>, m: Modifiers) -> Writer<'a> {
        let seekable = sys::lseek(fd, 0, libc::SEEK_CUR).is_ok();
        let append = sys::status_flags(fd).is_ok_and(|f| f & libc::O_APPEND != 0);
        if m.sparse && append && seekable {
            let _ = sys::lseek(fd, 0, libc::SEEK_END);
        }
        // O_DIRECT only where it bypasses a cache (not on pipes, tmpfs refuses it): else
        // plain writes are used.
        let direct_guard = if m.direct { DirectGuard::set(fd) } else { None };
        Writer {
            fd,
            discard: m.discard,
            sparse: m.sparse && seekable && !append,
            sync: m.sync,
            direct: direct_guard.is_some(),
            _direct_guard: direct_guard,
            hole_at_end: false,
            done: 0,
            failed_beside_write: false,
        }
    }

    /// True if `e`, returned by [`Writer::write`] or [`Writer::finish`], means that the
    /// output's reader went away: EPIPE from a write itself. EPIPE from `fdatasync` or
    /// `ftruncate` (no pipe is involved there) is a write error.
    pub(crate) fn reader_gone(&self, e: &io::Error) -> bool {
        e.raw_os_error() == Some(libc::EPIPE) && !self.failed_beside_write
    }

    /// Writes all of `data` (or seeks over its zero blocks, or drops it). After an error,
    /// [`Writer::written`] says how much of it reached the output first.
    pub(crate) fn write(&mut self, data: &[u8]) -> io::Result<()> {
        self.done = 0;
        self.failed_beside_write = false;
        if self.discard || data.is_empty() {
            self.done = data.len();
            return Ok(());
        }
        if self.sparse {
            self.write_sparse(data)?;
        } else {
            self.write_all(data)?;
        }
        if self.sync {
            self.sync_data()?;
        }
        Ok(())
    }

    /// Bytes of the last [`Writer::write`] that reached the output (all of them unless it
    /// failed; with `-Y`, a failed sync counts them as written all the same).
    pub(crate) fn written(&self) -> usize {
        self.done
    }

    /// `-Y`: flushes what was written to the device. Only "this kind of file cannot be
    /// synced" (EINVAL, EROFS: pipes, sockets, some devices) is ignored, and syncing stops
    /// there; any other failure (EIO, ENOSPC, EDQUOT: since Linux 4.13 fdatasync reports
    /// write-back errors) means the data may not be stored, so it is a write error.
    fn sync_data(&mut self) -> io::Result<()> {
        loop {
            return match sys::fdatasync(self.fd) {
                Ok(()) => Ok(()),
                Err(e) => match e.raw_os_error() {
                    Some(libc::EINTR) => continue,
                    Some(libc::EINVAL | libc::EROFS) => {
                        self.sync = false;
                        Ok(())
                    }
                    _ => {
                        self.failed_beside_write = true;
                        Err(e)
                    }
                },
            };
        }
    }

    fn write_sparse(&mut self, data: &[u8]) -> io::Result<()> {
        const ZEROS: [u8; BLOCK] = [0; BLOCK];
        let mut run_start = 0;
        let mut pos = 0;
        while pos < data.len() {
            let end = (pos + BLOCK).min(data.len());
            if data[pos..end] == ZEROS[..end - pos] {
                self.write_all(&data[run_start..pos])?;
                if sys::lseek(self.fd, (end - pos) as i64, libc::SEEK_CUR).is_err() {
                    // Not seekable after all: write everything from here on.
                    self.sparse = false;
                    return self.write_all(&data[pos..]);
                }
                self.done += end - pos;
                self.hole_at_end = true;
                run_start = end;
            }
            pos = end;
        }
        if run_start < data.len() {
            self.hole_at_end = false;
            self.write_all(&data[run_start..])?;
        }
        Ok(())
    }

    fn write_all(&mut self, mut data: &[u8]) -> io::Result<()> {
        while !data.is_empty() {
            match sys::write(self.fd, data) {
                Ok(0) => {
                    let _ = sys::poll_one(self.fd, libc::POLLOUT, 100);
                }
                Ok(n) => {
                    data = &data[n..];
                    self.done += n;
                }
                Err(e) => match e.raw_os_error() {
                    // Interrupted by the user (the display loop kicks the data thread; a
                    // short run copies on the main thread, where signals arrive): give up
                    // the write; otherwise try again.
                    Some(libc::EINTR) if crate::signals::exit_requested() => return Err(e),
                    Some(libc::EINTR) => {}
                    Some(libc::EAGAIN) => {
                        let _ = sys::poll_one(self.fd, libc::POLLOUT, 100);
                    }
                    // An unaligned direct write (the tail of a file): go on without O_DIRECT.
                    Some(libc::EINVAL) if self.direct => {
                        self.direct = false;
                        sys::set_status_flag(self.fd, libc::O_DIRECT, false)?;
                    }
                    _ => return Err(e),
                },
            }
        }
        Ok(())
    }

    /// Ends the output: a file whose last blocks were holes gets its full length.
    pub(crate) fn finish(&mut self) -> io::Result<()> {
        if self.hole_at_end {
            self.failed_beside_write = true;
            let end = sys::lseek(self.fd, 0, libc::SEEK_CUR)?;
            sys::ftruncate(self.fd, end)?;
            self.failed_beside_write = false;
            self.hole_at_end = false;
        }
        Ok(())
    }
}

/// Duplicates of the descriptors rpv turned O_DIRECT on for and that did not have it before
/// (see [`DirectGuard`]), by guard id. Changed once per input, never per chunk.
static DIRECT_SET: Mutex<Vec<(u64, OwnedFd)>> = Mutex::new(Vec::new());
/// The next [`DirectGuard`] id.
static NEXT_GUARD: AtomicU64 = AtomicU64::new(0);

/// `-K`: O_DIRECT on a descriptor for as long as the guard lives. The open file description
/// may be shared with other processes (a shell's redirection), and O_DIRECT makes their
/// unaligned reads and writes fail (`{ rpv -K f; echo done; } > out` lost "done"), so when
/// the guard drops (the input or the run ended) the flag goes back to what it was.
#[derive(Debug)]
pub(crate) struct DirectGuard<'a> {
    fd: BorrowedFd<'a>,
    /// Set when rpv set the flag (it was clear before): the flag is cleared at the end.
    restore: Option<u64>,
}

impl<'a> DirectGuard<'a> {
    /// Sets O_DIRECT on `fd` if it is a regular file or a block device; None if it is not,
    /// or if the kernel refuses (tmpfs). Never on a pipe: there O_DIRECT means "packet
    /// mode", where each write is a packet and a reader asking for less than a packet loses
    /// the rest of it (`rpv -K file | dd bs=1000` kept a quarter of the data).
    pub(crate) fn set(fd: BorrowedFd<'a>) -> Option<DirectGuard<'a>> {
        let kind = sys::fstat(fd).ok()?.kind;
        if !matches!(kind, FileKind::Regular | FileKind::Block) {
            return None;
        }
        let flags = sys::status_flags(fd).ok()?;
        if flags & libc::O_DIRECT != 0 {
            return Some(DirectGuard { fd, restore: None });
        }
        sys::set_status_flag(fd, libc::O_DIRECT, true).ok()?;
        let id = NEXT_GUARD.fetch_add(1, Ordering::Relaxed);
        // A duplicate shares the open file description: `restore_direct_flags` can clear
        // the flag through it without knowing whether `fd` is still open.
        if let (Ok(dup), Ok(mut set)) = (fd.try_clone_to_owned(), DIRECT_SET.lock()) {
            set.push((id, dup));
        }
        Some(DirectGuard {
            fd,
            restore: Some(id),
        })
    }
}

impl Drop for DirectGuard<'_> {
    fn drop(&mut self) {
        let Some(id) = self.restore else {
            return;
        };
        if let Ok(mut set) = DIRECT_SET.lock() {
            set.retain(|(i, _)| *i != id);
        }
        let _ = sys::set_status_flag(self.fd, libc::O_DIRECT, false);
    }
}

/// Clears O_DIRECT again wherever a live [`DirectGuard`] set it: for exits that do not wait
/// for the data thread to drop its guards (an interrupt).
pub(crate) fn restore_direct_flags() {
    let set = DIRECT_SET
        .lock()
        .map(|mut set| std::mem::take(&mut *set))
        .unwrap_or_default();
    for (_, dup) in set {
        let _ = sys::set_status_flag(dup.as_fd(), libc::O_DIRECT, false);
    }
}

/// A byte buffer whose usable part starts on a [`BLOCK`] boundary (for O_DIRECT).
#[derive(Debug, Default)]
pub(crate) struct AlignedBuf {
    storage: Vec<u8>,
    offset: usize,
    len: usize,
}

impl AlignedBuf {
    /// A zeroed buffer of `len` bytes aligned to [`BLOCK`], or ENOMEM if the system refuses
    /// that much memory (never an abort: `-B` comes from the user).
    ///
    /// Beyond the default size, the same amount is first reserved and released (a fallible
    /// allocation), then allocated zeroed: that allocation does not touch the pages, so a large `-B` costs
    /// memory only as data passes through it (filling it with zeros would make `-B 1G` take
    /// a second and 1 GiB of memory before the first byte moves).
    pub(crate) fn new(len: usize) -> io::Result<AlignedBuf> {
        let no_memory = || io::Error::from_raw_os_error(libc::ENOMEM);
        let total = len.checked_add(BLOCK).ok_or_else(no_memory)?;
        // The probe only for sizes beyond the default: freeing a probe that large makes the
        // allocator keep the next one in its heap, which must then be cleared byte by byte
        // (a measurable part of a short run's start-up), and no system that runs rpv at all
        // refuses the default quarter of a megabyte.
        if total > super::DEFAULT_BUFFER + BLOCK {
            let mut probe: Vec<u8> = Vec::new();
            probe.try_reserve_exact(total).map_err(|_| no_memory())?;
            drop(probe);
        }
        let storage = vec![0u8; total];
        let offset = storage.as_ptr().align_offset(BLOCK).min(BLOCK);
        Ok(AlignedBuf {
            storage,
            offset,
            len,
        })
    }
}

impl std::ops::Deref for AlignedBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.storage[self.offset..self.offset + self.len]
    }
}

impl std::ops::DerefMut for AlignedBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.storage[self.offset..self.offset + self.len]
    }
}

#[cfg(test)]
mod tests {
    use super::AlignedBuf;

    #[test]
    fn aligned_buffer_is_aligned_and_sized() {
        for len in [1, 4095, 4096, 65537] {
            let b = AlignedBuf::new(len).unwrap();
            assert_eq!(b.len(), len);
            assert_eq!(b.as_ptr() as usize % super::BLOCK, 0);
            assert!(b.iter().all(|&x| x == 0));
        }
    }

    #[test]
    fn impossible_sizes_are_an_error_not_a_panic_or_abort() {
        for len in [
            usize::MAX,
            usize::MAX - super::BLOCK + 1,
            usize::MAX / 2,
            1 << 62,
        ] {
            let e = AlignedBuf::new(len).unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc::ENOMEM), "{len}");
        }
    }
}

/// Where a transfer writes.
#[derive(Debug, Clone)]
pub(crate) enum Output {
    /// Standard output.
    Stdout,
    /// A file opened with `-o` (or the `-U` store).
    File(Arc<File>),
    /// A pipe to the command of `-M` (closed when the transfer into it is over).
    Pipe(Arc<OwnedFd>),
}

impl Output {
    /// The descriptor to write to.
    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        match self {
            Output::Stdout => sys::stdout_fd(),
            Output::File(f) => f.as_fd(),
            Output::Pipe(p) => p.as_fd(),
        }
    }
}
