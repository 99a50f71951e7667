//! Writing to the output on the read/write path, with the transfer modifiers of spec 3.12:
//! `-X` (discard), `-O` (sparse), `-Y` (sync) and `-K` (direct I/O).
//!
//! Differences from pv, on purpose: `-O` turns every all-zero 4 KiB block into a hole, not
//! only whole all-zero writes (spec 7.1 #6); `-K` writes the unaligned tail of a file by
//! dropping `O_DIRECT` when the kernel refuses an unaligned write (pv fails and truncates).

use std::io;
use std::os::fd::BorrowedFd;

use crate::sys;

/// Block size for sparse detection and direct-I/O alignment.
pub const BLOCK: usize = 4096;

/// The output side of the read/write path.
#[derive(Debug)]
pub struct Writer<'a> {
    fd: BorrowedFd<'a>,
    discard: bool,
    sparse: bool,
    sync: bool,
    direct: bool,
    /// The last sparse write ended in a hole, so the file must be extended at the end.
    hole_at_end: bool,
}

/// Modifiers that change how data is written.
#[derive(Debug, Clone, Copy, Default)]
pub struct Modifiers {
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
    pub fn new(fd: BorrowedFd<'a>, m: Modifiers) -> Writer<'a> {
        let seekable = sys::lseek(fd, 0, libc::SEEK_CUR).is_ok();
        let append = sys::status_flags(fd).is_ok_and(|f| f & libc::O_APPEND != 0);
        if m.sparse && append && seekable {
            let _ = sys::lseek(fd, 0, libc::SEEK_END);
        }
        // O_DIRECT may be refused (tmpfs, pipes): then plain writes are used.
        let direct = m.direct && sys::set_status_flag(fd, libc::O_DIRECT, true).is_ok();
        Writer {
            fd,
            discard: m.discard,
            sparse: m.sparse && seekable && !append,
            sync: m.sync,
            direct,
            hole_at_end: false,
        }
    }

    /// Writes all of `data` (or seeks over its zero blocks, or drops it).
    pub fn write(&mut self, data: &[u8]) -> io::Result<()> {
        if self.discard || data.is_empty() {
            return Ok(());
        }
        if self.sparse {
            self.write_sparse(data)?;
        } else {
            self.write_all(data)?;
        }
        if self.sync {
            match sys::fdatasync(self.fd) {
                Err(e) if e.raw_os_error() == Some(libc::EIO) => return Err(e),
                _ => {}
            }
        }
        Ok(())
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
                Ok(n) => data = &data[n..],
                Err(e) => match e.raw_os_error() {
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
    pub fn finish(&mut self) -> io::Result<()> {
        if self.hole_at_end {
            let end = sys::lseek(self.fd, 0, libc::SEEK_CUR)?;
            sys::ftruncate(self.fd, end)?;
            self.hole_at_end = false;
        }
        Ok(())
    }
}

/// A byte buffer whose usable part starts on a [`BLOCK`] boundary (for O_DIRECT).
#[derive(Debug, Default)]
pub struct AlignedBuf {
    storage: Vec<u8>,
    offset: usize,
    len: usize,
}

impl AlignedBuf {
    /// A zeroed buffer of `len` bytes aligned to [`BLOCK`], or ENOMEM if the system refuses
    /// that much memory (never an abort: `-B` comes from the user).
    ///
    /// The same amount is first reserved and released (a fallible allocation), then
    /// allocated zeroed: that allocation does not touch the pages, so a large `-B` costs
    /// memory only as data passes through it (filling it with zeros would make `-B 1G` take
    /// a second and 1 GiB of memory before the first byte moves).
    pub fn new(len: usize) -> io::Result<AlignedBuf> {
        let no_memory = || io::Error::from_raw_os_error(libc::ENOMEM);
        let total = len.checked_add(BLOCK).ok_or_else(no_memory)?;
        let mut probe: Vec<u8> = Vec::new();
        probe.try_reserve_exact(total).map_err(|_| no_memory())?;
        drop(probe);
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
