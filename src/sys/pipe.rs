//! Pipes and zero-copy moves: splice, tee, copy_file_range, vmsplice of a constant buffer,
//! pipe capacity, bytes waiting, and `poll` on one descriptor.
//!
//! Owns: the constant buffers, which are mapped once, filled, and never written or unmapped
//! again, so that pages vmspliced from them may stay in pipes for as long as the readers
//! like. Must not: retry or fall back (the transfer engine does).

use std::io;
use std::os::fd::{BorrowedFd, OwnedFd};

use rustix::event::{PollFd, PollFlags};
use rustix::pipe::SpliceFlags;

/// `splice(2)` between two descriptors using their file offsets; blocking unless the
/// descriptors are non-blocking. Returns the bytes moved (0 = end of input).
pub fn splice(input: BorrowedFd<'_>, output: BorrowedFd<'_>, len: usize) -> io::Result<usize> {
    Ok(rustix::pipe::splice(
        input,
        None,
        output,
        None,
        len,
        SpliceFlags::MORE,
    )?)
}

/// `tee(2)`: duplicates up to `len` bytes from pipe `input` into pipe `output` without
/// consuming them. Blocking, unless a descriptor is non-blocking (then EAGAIN).
pub fn tee(input: BorrowedFd<'_>, output: BorrowedFd<'_>, len: usize) -> io::Result<usize> {
    Ok(rustix::pipe::tee(input, output, len, SpliceFlags::empty())?)
}

/// `copy_file_range(2)` using both descriptors' file offsets.
pub(crate) fn copy_file_range(
    input: BorrowedFd<'_>,
    output: BorrowedFd<'_>,
    len: usize,
) -> io::Result<usize> {
    Ok(rustix::fs::copy_file_range(input, None, output, None, len)?)
}

/// `F_GETPIPE_SZ`: the capacity of the pipe in bytes.
pub fn pipe_size(fd: BorrowedFd<'_>) -> io::Result<usize> {
    Ok(rustix::pipe::fcntl_getpipe_size(fd)?)
}

/// `F_SETPIPE_SZ`: asks for a capacity of `size` bytes; returns the capacity granted.
pub fn set_pipe_size(fd: BorrowedFd<'_>, size: usize) -> io::Result<usize> {
    let size = size.min(libc::c_int::MAX as usize);
    Ok(rustix::pipe::fcntl_setpipe_size(fd, size)?)
}

/// `FIONREAD`: bytes waiting unread in a pipe.
pub(crate) fn unread_bytes(fd: BorrowedFd<'_>) -> io::Result<usize> {
    let n = rustix::io::ioctl_fionread(fd)?;
    Ok(usize::try_from(n).unwrap_or(usize::MAX))
}

/// How full the pipe or FIFO `id` open on descriptor `raw` of this process is: (unread
/// bytes, capacity); None if `raw` is no longer that pipe (closed, or reused for something
/// else) or cannot be asked. For the display thread, about a descriptor the data thread
/// owns (a `--tee` FIFO): it only looks (`fstat`, `FIONREAD`, `F_GETPIPE_SZ`), never reads,
/// writes or closes.
pub(crate) fn pipe_fill(raw: std::os::fd::RawFd, id: super::PipeId) -> Option<(usize, usize)> {
    if raw < 0 {
        return None;
    }
    // SAFETY: `raw` is not -1, and the borrow lives only for these three calls, none of
    // which reads, writes or closes it. If the data thread closed it meanwhile they fail
    // with EBADF; if the number was reused, the check of `id` stops before the ioctls.
    let fd = unsafe { BorrowedFd::borrow_raw(raw) };
    if super::pipe_id(fd)? != id {
        return None;
    }
    Some((unread_bytes(fd).ok()?, pipe_size(fd).ok()?))
}

/// `poll(2)` on one descriptor for `events` (`POLLIN`, `POLLOUT`, … as the C bits), waiting
/// at most `timeout_ms` (negative: no limit); returns the `revents` (0 on timeout). EINTR is
/// returned as an error so callers can check their stop flags.
pub fn poll_one(
    fd: BorrowedFd<'_>,
    events: libc::c_short,
    timeout_ms: i32,
) -> io::Result<libc::c_short> {
    let mut fds = [PollFd::from_borrowed_fd(
        fd,
        PollFlags::from_bits_truncate(events as _),
    )];
    let timeout = (timeout_ms >= 0).then(|| rustix::time::Timespec {
        tv_sec: i64::from(timeout_ms / 1000),
        tv_nsec: i64::from(timeout_ms % 1000) * 1_000_000,
    });
    rustix::event::poll(&mut fds, timeout.as_ref())?;
    Ok(fds[0].revents().bits() as libc::c_short)
}

/// An anonymous pipe with both ends close-on-exec: (read end, write end).
pub(crate) fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    Ok(rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?)
}

/// [`pipe`] with both ends non-blocking from the start (`pipe2` with `O_NONBLOCK`): no
/// separate `fcntl` that could fail and leave a blocking end behind.
pub(crate) fn pipe_nonblocking() -> io::Result<(OwnedFd, OwnedFd)> {
    use rustix::pipe::PipeFlags;
    Ok(rustix::pipe::pipe_with(
        PipeFlags::CLOEXEC | PipeFlags::NONBLOCK,
    )?)
}

/// Bytes in the constant zero buffer used by [`vmsplice_zeros`] and [`zeros`].
pub(crate) const ZERO_CHUNK: usize = 1 << 20;

/// Bytes in read-only pages that stay mapped until the process ends: what [`vmsplice`] may
/// hand to a pipe. Only [`constant_buffer`] makes them (and [`ConstBuf::slice`] narrows
/// them), so no descriptor, not even a pipe's read end, can make the kernel write into them.
#[derive(Debug, Clone, Copy)]
pub struct ConstBuf(&'static [u8]);

impl ConstBuf {
    /// The bytes.
    pub fn bytes(self) -> &'static [u8] {
        self.0
    }

    /// A part of the buffer; panics like slice indexing if `range` is out of bounds.
    pub fn slice(self, range: std::ops::Range<usize>) -> ConstBuf {
        ConstBuf(&self.0[range])
    }

    /// Its length in bytes.
    pub fn len(self) -> usize {
        self.0.len()
    }

    /// True if it has no bytes.
    pub fn is_empty(self) -> bool {
        self.0.is_empty()
    }
}

/// A buffer of `len` bytes (at most 2 MiB) all equal to `fill`, aligned to 2 MiB with
/// `MADV_HUGEPAGE` where the kernel allows, then made read-only, never unmapped: pages
/// vmspliced from it may stay referenced by pipes (ours and downstream ones) for as long as
/// they like. Each call makes a new one; keep it.
pub fn constant_buffer(fill: u8, len: usize) -> io::Result<ConstBuf> {
    use rustix::mm::{Advice, MapFlags, MprotectFlags, ProtFlags};
    const HUGE: usize = 2 << 20;
    let len = len.min(HUGE);
    // SAFETY: a fresh anonymous private mapping at an address the kernel picks: it cannot
    // overlap anything else. It is never unmapped (leaked on purpose).
    let base = unsafe {
        rustix::mm::mmap_anonymous(
            std::ptr::null_mut(),
            2 * HUGE,
            ProtFlags::READ | ProtFlags::WRITE,
            MapFlags::PRIVATE,
        )
    }?;
    let aligned = (base as usize).next_multiple_of(HUGE) as *mut u8;
    // SAFETY: advice on [aligned, aligned + HUGE), which lies inside the 2 * HUGE mapping
    // made above; a refusal (no THP) changes nothing, so the result is ignored.
    let _ = unsafe { rustix::mm::madvise(aligned.cast(), HUGE, Advice::LinuxHugepage) };
    // SAFETY: [aligned, aligned + len) is inside our writable mapping and nothing else
    // refers to it yet; filling it faults the pages in (one huge page where THP is allowed).
    unsafe { std::ptr::write_bytes(aligned, fill, len) };
    // SAFETY: the whole aligned 2 MiB range is inside our mapping and nothing refers to it;
    // from here on it cannot be written by anyone, the kernel included.
    unsafe { rustix::mm::mprotect(aligned.cast(), HUGE, MprotectFlags::READ) }?;
    // SAFETY: the initialised range, in read-only pages that stay mapped until the process
    // ends, so the borrow may be 'static.
    Ok(ConstBuf(unsafe {
        std::slice::from_raw_parts(aligned, len)
    }))
}

/// The process's constant zero buffer ([`ZERO_CHUNK`] bytes), made on first use.
fn zero_buffer() -> io::Result<ConstBuf> {
    static BUF: std::sync::OnceLock<ConstBuf> = std::sync::OnceLock::new();
    if let Some(buf) = BUF.get() {
        return Ok(*buf);
    }
    let buf = constant_buffer(0, ZERO_CHUNK)?;
    // A concurrent first call leaks a second buffer and never uses it.
    Ok(*BUF.get_or_init(|| buf))
}

/// The constant zero buffer, for `write()` to outputs that are not pipes.
pub(crate) fn zeros() -> io::Result<&'static [u8]> {
    zero_buffer().map(ConstBuf::bytes)
}

/// `vmsplice(2)` of `buf` into the pipe `out`: the pipe references the pages instead of
/// copying them, and may keep them after the call returns, which a [`ConstBuf`] allows.
/// Blocking unless the pipe is non-blocking (then EAGAIN). On a pipe's read end the kernel
/// would copy pipe data into `buf` instead; its pages are read-only, so that fails (EFAULT).
pub fn vmsplice(out: BorrowedFd<'_>, buf: ConstBuf) -> io::Result<usize> {
    let iov = [rustix::pipe::IoSliceRaw::from_slice(buf.0)];
    // SAFETY: rustix requires that memory which must not change is never vmspliced into a
    // descriptor the kernel would write it from (a pipe's read end). `buf` is in read-only
    // pages that stay mapped for the life of the process (`ConstBuf`), so whatever `out` is,
    // the kernel can only read them; no GIFT flag is passed.
    Ok(unsafe { rustix::pipe::vmsplice(out, &iov, SpliceFlags::empty()) }?)
}

/// `vmsplice(2)` of `len` (≤ [`ZERO_CHUNK`]) bytes of the constant zero buffer into the pipe
/// `out`. Blocking unless the pipe is non-blocking (then EAGAIN).
pub(crate) fn vmsplice_zeros(out: BorrowedFd<'_>, len: usize) -> io::Result<usize> {
    let buf = zero_buffer()?;
    vmsplice(out, buf.slice(0..len.min(buf.len())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn constant_buffer_is_filled_and_aligned() {
        let buf = constant_buffer(b'r', 1000).unwrap();
        assert_eq!(buf.len(), 1000);
        assert!(buf.bytes().iter().all(|&b| b == b'r'));
        assert_eq!(buf.bytes().as_ptr() as usize % (2 << 20), 0);
        assert_eq!(
            constant_buffer(0, 8 << 20).unwrap().len(),
            2 << 20,
            "capped"
        );
    }

    #[test]
    fn vmsplice_into_a_read_end_cannot_change_the_constant_buffer() {
        let buf = constant_buffer(b'c', 4096).unwrap();
        let (r, w) = pipe().unwrap();
        crate::sys::write(w.as_fd(), &[b'x'; 100]).unwrap();
        // On a read end, vmsplice copies pipe data into the buffer: refused, read-only pages.
        let err = vmsplice(r.as_fd(), buf.slice(0..100)).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EFAULT), "{err}");
        assert!(buf.bytes().iter().all(|&b| b == b'c'));
        assert_eq!(unread_bytes(r.as_fd()).unwrap(), 100, "nothing was taken");
    }

    #[test]
    fn vmsplice_tee_and_splice_move_the_same_bytes() {
        let (r1, w1) = pipe().unwrap();
        let (r2, w2) = pipe().unwrap();
        let (r3, w3) = pipe().unwrap();
        assert_eq!(vmsplice_zeros(w1.as_fd(), 3000).unwrap(), 3000);
        assert_eq!(unread_bytes(r1.as_fd()).unwrap(), 3000);
        assert_eq!(tee(r1.as_fd(), w2.as_fd(), 1 << 20).unwrap(), 3000);
        assert_eq!(
            unread_bytes(r1.as_fd()).unwrap(),
            3000,
            "tee consumes nothing"
        );
        assert_eq!(splice(r1.as_fd(), w3.as_fd(), 1 << 20).unwrap(), 3000);
        assert_eq!(unread_bytes(r1.as_fd()).unwrap(), 0);
        let mut buf = vec![1u8; 4000];
        assert_eq!(crate::sys::read(r2.as_fd(), &mut buf).unwrap(), 3000);
        assert!(buf[..3000].iter().all(|&b| b == 0));
        assert_eq!(crate::sys::read(r3.as_fd(), &mut buf).unwrap(), 3000);
        assert!(buf[..3000].iter().all(|&b| b == 0));
    }

    #[test]
    fn poll_reports_readiness_and_times_out() {
        let (r, w) = pipe().unwrap();
        let t0 = std::time::Instant::now();
        assert_eq!(poll_one(r.as_fd(), libc::POLLIN, 30).unwrap(), 0);
        assert!(t0.elapsed() >= std::time::Duration::from_millis(25));
        assert_eq!(
            poll_one(w.as_fd(), libc::POLLOUT, -1).unwrap(),
            libc::POLLOUT
        );
        crate::sys::write(w.as_fd(), b"x").unwrap();
        assert_eq!(poll_one(r.as_fd(), libc::POLLIN, 0).unwrap(), libc::POLLIN);
        crate::sys::read(r.as_fd(), &mut [0u8; 1]).unwrap();
        drop(w);
        // (Another test's child may hold a copy of `w` until it execs: wait for the hangup.)
        let revents = poll_one(r.as_fd(), libc::POLLIN, 5000).unwrap();
        assert_ne!(revents & libc::POLLHUP, 0, "{revents:#x}");
    }

    #[test]
    fn pipe_size_grows_and_reports() {
        let (r, _w) = pipe().unwrap();
        let granted = set_pipe_size(r.as_fd(), 256 << 10).unwrap();
        assert!(granted >= 256 << 10);
        assert_eq!(pipe_size(r.as_fd()).unwrap(), granted);
        assert!(
            set_pipe_size(r.as_fd(), usize::MAX).is_err(),
            "clamped, then refused"
        );
    }
}
