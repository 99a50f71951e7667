//! Thin safe wrappers over the Linux system calls rpv needs beyond `std`.
//!
//! Owns: every `unsafe` block of the crate. Each wrapper does one syscall, maps `-1` to
//! `io::Error`, and takes borrowed descriptors. Must not: hold policy (retries, fallbacks and
//! error messages belong to the callers).
#![allow(unsafe_code)]

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};
use std::sync::atomic::AtomicBool;

fn cvt(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

fn cvt_size(ret: libc::ssize_t) -> io::Result<usize> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret as usize)
    }
}

/// The C library's message for an errno value, without Rust's " (os error N)" suffix, as pv
/// prints it (`No such file or directory`).
pub fn strerror(err: &io::Error) -> String {
    match err.raw_os_error() {
        Some(code) => {
            // SAFETY: strerror returns a pointer to a static or thread-local NUL-terminated
            // string, which we copy before any other libc call.
            let text = unsafe { CStr::from_ptr(libc::strerror(code)) };
            text.to_string_lossy().into_owned()
        }
        None => err.to_string(),
    }
}

/// What kind of file a descriptor refers to (from `fstat`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
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
pub struct FileInfo {
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
    /// Preferred I/O block size.
    pub blksize: u64,
}

fn info_from_stat(st: &libc::stat) -> FileInfo {
    let kind = match st.st_mode & libc::S_IFMT {
        libc::S_IFIFO => FileKind::Pipe,
        libc::S_IFREG => FileKind::Regular,
        libc::S_IFBLK => FileKind::Block,
        libc::S_IFCHR => FileKind::Char,
        libc::S_IFSOCK => FileKind::Socket,
        libc::S_IFDIR => FileKind::Directory,
        _ => FileKind::Other,
    };
    FileInfo {
        kind,
        dev: st.st_dev,
        ino: st.st_ino,
        size: u64::try_from(st.st_size).unwrap_or(0),
        rdev: st.st_rdev,
        blksize: u64::try_from(st.st_blksize).unwrap_or(0),
    }
}

/// `fstat(2)`.
pub fn fstat(fd: BorrowedFd<'_>) -> io::Result<FileInfo> {
    // SAFETY: `st` is a valid out-pointer; zeroed is a valid bit pattern for `stat`.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    cvt(unsafe { libc::fstat(fd.as_raw_fd(), &mut st) })?;
    Ok(info_from_stat(&st))
}

/// `stat(2)`: a path's metadata without opening it (opening a FIFO would pair with, and
/// then abandon, its writer).
pub fn stat(path: &std::path::Path) -> io::Result<FileInfo> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: `st` is a valid out-pointer; zeroed is a valid bit pattern for `stat`; `c`
    // is a valid C string.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    cvt(unsafe { libc::stat(c.as_ptr(), &mut st) })?;
    Ok(info_from_stat(&st))
}

/// `splice(2)` between two descriptors using their file offsets; blocking unless the
/// descriptors are non-blocking. Returns the bytes moved (0 = end of input).
///
/// # References
/// splice(2)
pub fn splice(input: BorrowedFd<'_>, output: BorrowedFd<'_>, len: usize) -> io::Result<usize> {
    // SAFETY: null offsets mean "use and update the file offsets"; the fds are borrowed.
    let ret = unsafe {
        libc::splice(
            input.as_raw_fd(),
            std::ptr::null_mut(),
            output.as_raw_fd(),
            std::ptr::null_mut(),
            len,
            libc::SPLICE_F_MORE,
        )
    };
    cvt_size(ret)
}

/// `copy_file_range(2)` using both descriptors' file offsets.
///
/// # References
/// copy_file_range(2)
pub fn copy_file_range(
    input: BorrowedFd<'_>,
    output: BorrowedFd<'_>,
    len: usize,
) -> io::Result<usize> {
    // SAFETY: null offsets use and update the file offsets; the fds are borrowed.
    let ret = unsafe {
        libc::copy_file_range(
            input.as_raw_fd(),
            std::ptr::null_mut(),
            output.as_raw_fd(),
            std::ptr::null_mut(),
            len,
            0,
        )
    };
    cvt_size(ret)
}

/// `read(2)` into `buf`.
pub fn read(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: buf is valid for writes of buf.len() bytes.
    cvt_size(unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) })
}

/// `write(2)` from `buf`.
pub fn write(fd: BorrowedFd<'_>, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: buf is valid for reads of buf.len() bytes.
    cvt_size(unsafe { libc::write(fd.as_raw_fd(), buf.as_ptr().cast(), buf.len()) })
}

/// `pread(2)` at `offset`, leaving the file offset alone.
pub fn pread(fd: BorrowedFd<'_>, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    let off =
        libc::off_t::try_from(offset).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: buf is valid for writes of buf.len() bytes.
    cvt_size(unsafe { libc::pread(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), off) })
}

/// `lseek(2)`; returns the new offset.
pub fn lseek(fd: BorrowedFd<'_>, offset: i64, whence: libc::c_int) -> io::Result<u64> {
    // SAFETY: plain syscall on a borrowed fd.
    let ret = unsafe { libc::lseek(fd.as_raw_fd(), offset, whence) };
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret as u64)
    }
}

/// `F_GETPIPE_SZ`: the capacity of the pipe in bytes.
pub fn pipe_size(fd: BorrowedFd<'_>) -> io::Result<usize> {
    // SAFETY: fcntl with an integer-returning command.
    cvt(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETPIPE_SZ) }).map(|n| n as usize)
}

/// `F_SETPIPE_SZ`: asks for a capacity of `size` bytes; returns the capacity granted.
pub fn set_pipe_size(fd: BorrowedFd<'_>, size: usize) -> io::Result<usize> {
    let size = libc::c_int::try_from(size).unwrap_or(libc::c_int::MAX);
    // SAFETY: fcntl with an integer argument.
    cvt(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETPIPE_SZ, size) }).map(|n| n as usize)
}

/// `F_GETFL`: the file status flags (`O_NONBLOCK`, `O_APPEND`, …).
pub fn status_flags(fd: BorrowedFd<'_>) -> io::Result<libc::c_int> {
    // SAFETY: fcntl with an integer-returning command.
    cvt(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) })
}

/// `FIONREAD`: bytes waiting unread in a pipe.
pub fn unread_bytes(fd: BorrowedFd<'_>) -> io::Result<usize> {
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int through the pointer.
    cvt(unsafe { libc::ioctl(fd.as_raw_fd(), libc::FIONREAD, &mut n) })?;
    Ok(usize::try_from(n).unwrap_or(0))
}

/// `poll(2)` on one descriptor; returns the `revents` (0 on timeout). EINTR is returned as
/// an error so callers can check their stop flags.
pub fn poll_one(
    fd: BorrowedFd<'_>,
    events: libc::c_short,
    timeout_ms: i32,
) -> io::Result<libc::c_short> {
    let mut pfd = libc::pollfd {
        fd: fd.as_raw_fd(),
        events,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    cvt(unsafe { libc::poll(&mut pfd, 1, timeout_ms) })?;
    Ok(pfd.revents)
}

/// `posix_fadvise(POSIX_FADV_SEQUENTIAL)` over the whole file; failures are ignored.
pub fn advise_sequential(fd: BorrowedFd<'_>) {
    // SAFETY: advisory call on a borrowed fd.
    unsafe {
        libc::posix_fadvise(fd.as_raw_fd(), 0, 0, libc::POSIX_FADV_SEQUENTIAL);
    }
}

/// `ftruncate(2)`.
pub fn ftruncate(fd: BorrowedFd<'_>, len: u64) -> io::Result<()> {
    let len = libc::off_t::try_from(len).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: plain syscall on a borrowed fd.
    cvt(unsafe { libc::ftruncate(fd.as_raw_fd(), len) }).map(drop)
}

/// `isatty(3)`.
pub fn isatty(fd: BorrowedFd<'_>) -> bool {
    // SAFETY: plain libc call.
    unsafe { libc::isatty(fd.as_raw_fd()) == 1 }
}

/// Terminal size (columns, rows) from `TIOCGWINSZ`, if `fd` is a terminal that knows it.
pub fn window_size(fd: BorrowedFd<'_>) -> Option<(u16, u16)> {
    // SAFETY: TIOCGWINSZ fills one winsize struct.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::ioctl(fd.as_raw_fd(), libc::TIOCGWINSZ, &mut ws) } == 0;
    (ok && ws.ws_col > 0).then_some((ws.ws_col, ws.ws_row))
}

/// True if this process is in the foreground process group of the terminal on `fd`, or if
/// `fd` is not a terminal (pv's rule, spec 2.1).
pub fn in_foreground(fd: BorrowedFd<'_>) -> bool {
    // SAFETY: plain libc calls.
    let fg = unsafe { libc::tcgetpgrp(fd.as_raw_fd()) };
    if fg == -1 {
        return true;
    }
    fg == unsafe { libc::getpgrp() }
}

/// Monotonic clock in nanoseconds (async-signal-safe, usable in signal handlers).
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec; it is async-signal-safe.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64) * 1_000_000_000 + ts.tv_nsec as u64
}

/// Wall clock: (seconds since the epoch, local UTC offset in seconds).
pub fn wall_clock() -> (i64, i32) {
    // SAFETY: time(NULL) and localtime_r with valid out-pointers.
    unsafe {
        let now = libc::time(std::ptr::null_mut());
        let mut tm: libc::tm = std::mem::zeroed();
        let offset = if libc::localtime_r(&now, &mut tm).is_null() {
            0
        } else {
            tm.tm_gmtoff as i32
        };
        (now as i64, offset)
    }
}

/// An anonymous pipe with both ends close-on-exec: (read end, write end).
pub fn pipe() -> io::Result<(std::os::fd::OwnedFd, std::os::fd::OwnedFd)> {
    use std::os::fd::FromRawFd;
    let mut fds = [0 as RawFd; 2];
    // SAFETY: pipe2 writes two fds which we then own.
    cvt(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
    Ok(unsafe {
        (
            std::os::fd::OwnedFd::from_raw_fd(fds[0]),
            std::os::fd::OwnedFd::from_raw_fd(fds[1]),
        )
    })
}

/// Sets or clears `O_NONBLOCK`.
pub fn set_nonblocking(fd: BorrowedFd<'_>, yes: bool) -> io::Result<()> {
    let flags = status_flags(fd)?;
    let flags = if yes {
        flags | libc::O_NONBLOCK
    } else {
        flags & !libc::O_NONBLOCK
    };
    // SAFETY: fcntl with an integer argument.
    cvt(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags) }).map(drop)
}

/// Installs `handler` for `signal` with `SA_RESTART` off (so blocking calls return EINTR).
pub fn set_signal_handler(
    signal: libc::c_int,
    handler: extern "C" fn(libc::c_int),
) -> io::Result<()> {
    // SAFETY: sigaction with a zeroed struct, an empty mask and a plain handler.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = handler as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        sa.sa_flags = 0;
        cvt(libc::sigaction(signal, &sa, std::ptr::null_mut())).map(drop)
    }
}

/// Sets `signal` to be ignored.
pub fn ignore_signal(signal: libc::c_int) {
    // SAFETY: installing SIG_IGN is always safe.
    unsafe {
        libc::signal(signal, libc::SIG_IGN);
    }
}

/// Restores the default action of `signal` and raises it (used to stop with SIGSTOP).
pub fn raise(signal: libc::c_int) {
    // SAFETY: raise is async-signal-safe.
    unsafe {
        libc::raise(signal);
    }
}

/// Blocks `signals` in the calling thread, so they are delivered to other threads.
pub fn block_signals(signals: &[libc::c_int]) {
    // SAFETY: builds a sigset and applies it to this thread only.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for &s in signals {
            libc::sigaddset(&mut set, s);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

/// Writes `buf` to a raw fd from a signal handler (async-signal-safe, errors ignored).
pub fn write_raw(fd: RawFd, buf: &[u8]) {
    // SAFETY: write is async-signal-safe; buf is valid.
    unsafe {
        libc::write(fd, buf.as_ptr().cast(), buf.len());
    }
}

/// `access(path, R_OK)`.
pub fn readable(path: &std::path::Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: valid C string.
    unsafe { libc::access(c.as_ptr(), libc::R_OK) == 0 }
}

/// Standard input, borrowed for the life of the process (rpv never closes fds 0–2).
pub fn stdin_fd() -> BorrowedFd<'static> {
    // SAFETY: fd 0 stays open for the whole process.
    unsafe { BorrowedFd::borrow_raw(0) }
}

/// Standard output, borrowed for the life of the process.
pub fn stdout_fd() -> BorrowedFd<'static> {
    // SAFETY: fd 1 stays open for the whole process.
    unsafe { BorrowedFd::borrow_raw(1) }
}

/// Standard error, borrowed for the life of the process.
pub fn stderr_fd() -> BorrowedFd<'static> {
    // SAFETY: fd 2 stays open for the whole process.
    unsafe { BorrowedFd::borrow_raw(2) }
}

/// `fdatasync(2)`.
pub fn fdatasync(fd: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: plain syscall on a borrowed fd.
    cvt(unsafe { libc::fdatasync(fd.as_raw_fd()) }).map(drop)
}

/// Sets or clears one file status flag (`O_DIRECT`, `O_NONBLOCK`, …) with `F_SETFL`.
pub fn set_status_flag(fd: BorrowedFd<'_>, flag: libc::c_int, on: bool) -> io::Result<()> {
    let flags = status_flags(fd)?;
    let new = if on { flags | flag } else { flags & !flag };
    if new == flags {
        return Ok(());
    }
    // SAFETY: fcntl with an integer argument.
    cvt(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, new) }).map(drop)
}

/// Creates a unique file from `template` (ending in `XXXXXX`) with mode 0600, like
/// `mkstemp(3)`; returns the open file and its path.
pub fn mkstemp(template: &str) -> io::Result<(std::fs::File, String)> {
    use std::os::fd::FromRawFd;
    let mut bytes = std::ffi::CString::new(template)
        .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?
        .into_bytes_with_nul();
    // SAFETY: mkstemp rewrites the XXXXXX in place and returns a new fd that we own.
    let fd = cvt(unsafe { libc::mkostemp(bytes.as_mut_ptr().cast(), libc::O_CLOEXEC) })?;
    bytes.pop();
    let path = String::from_utf8_lossy(&bytes).into_owned();
    Ok((unsafe { std::fs::File::from_raw_fd(fd) }, path))
}

// ---- Cursor mode and extra display (term/cursor.rs, term/title.rs) ----

/// `ttyname_r(3)`: the path of the terminal on `fd`, if it is one.
pub fn ttyname(fd: BorrowedFd<'_>) -> Option<std::path::PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let mut buf = [0u8; 256];
    // SAFETY: buf is valid for buf.len() bytes; ttyname_r NUL-terminates on success.
    let rc = unsafe { libc::ttyname_r(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return None;
    }
    let len = buf.iter().position(|&b| b == 0)?;
    Some(std::ffi::OsStr::from_bytes(&buf[..len]).into())
}

/// `flock(2)` with `LOCK_EX` (blocking) or `LOCK_UN`; EINTR is returned as an error.
pub fn flock(fd: BorrowedFd<'_>, exclusive: bool) -> io::Result<()> {
    let op = if exclusive {
        libc::LOCK_EX
    } else {
        libc::LOCK_UN
    };
    // SAFETY: plain syscall on a borrowed fd.
    cvt(unsafe { libc::flock(fd.as_raw_fd(), op) }).map(drop)
}

/// `geteuid(2)`.
pub fn geteuid() -> u32 {
    // SAFETY: always succeeds.
    unsafe { libc::geteuid() }
}

/// `kill(pid, 0)`: true if the process exists (EPERM counts as existing).
pub fn process_exists(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 only checks for existence.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Saved terminal attributes, restored with [`restore_tty_mode`].
#[derive(Clone, Copy)]
pub struct TtyMode(libc::termios);

/// Turns off `ICANON` and `ECHO` on the terminal `fd` (`TCSANOW`: type-ahead is kept) with
/// `VMIN = VTIME = 0`, so a cursor-position reply can be read without being echoed. Returns
/// the previous attributes.
pub fn tty_mode_for_reply(fd: BorrowedFd<'_>) -> io::Result<TtyMode> {
    // SAFETY: tcgetattr fills one termios; zeroed is a valid bit pattern.
    let mut saved: libc::termios = unsafe { std::mem::zeroed() };
    cvt(unsafe { libc::tcgetattr(fd.as_raw_fd(), &mut saved) })?;
    let mut raw = saved;
    raw.c_lflag &= !(libc::ICANON | libc::ECHO);
    raw.c_cc[libc::VMIN] = 0;
    raw.c_cc[libc::VTIME] = 0;
    // SAFETY: tcsetattr reads one valid termios.
    cvt(unsafe { libc::tcsetattr(fd.as_raw_fd(), libc::TCSANOW, &raw) })?;
    Ok(TtyMode(saved))
}

/// Restores attributes saved by [`tty_mode_for_reply`].
pub fn restore_tty_mode(fd: BorrowedFd<'_>, mode: &TtyMode) {
    // SAFETY: tcsetattr reads one valid termios.
    unsafe { libc::tcsetattr(fd.as_raw_fd(), libc::TCSANOW, &mode.0) };
}

/// The argv area of this process, `[arg_start, arg_end)` from `/proc/self/stat` (fields 48
/// and 49), read once.
fn argv_area() -> Option<(usize, usize)> {
    static AREA: std::sync::OnceLock<Option<(usize, usize)>> = std::sync::OnceLock::new();
    *AREA.get_or_init(|| {
        let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
        let after = &stat[stat.rfind(')')? + 1..];
        let fields: Vec<&str> = after.split_whitespace().collect();
        // `after` starts at field 3 (state), so field N is at index N - 3.
        let start: usize = fields.get(45)?.parse().ok()?;
        let end: usize = fields.get(46)?.parse().ok()?;
        (start != 0 && end > start + 1 && end - start < (1 << 20)).then_some((start, end))
    })
}

/// Sets the process title shown by `ps`/`top` (`/proc/PID/cmdline`) by overwriting the
/// original argv strings in place, NUL-padded and truncated to the space they occupied (the
/// environment strings after them are left alone). Returns false if the area is unknown.
/// `main` collects argv before any title is set, so nothing reads the old strings later.
pub fn set_process_title(text: &[u8]) -> bool {
    let Some((start, end)) = argv_area() else {
        return false;
    };
    let space = end - start;
    let len = text.len().min(space - 1);
    // SAFETY: [start, end) is this process's own argv string area on the initial stack
    // (reported by the kernel), which is writable and stays mapped for the whole process;
    // we write exactly `space` bytes inside it. Only the display thread calls this.
    unsafe {
        let area = std::slice::from_raw_parts_mut(start as *mut u8, space);
        area[..len].copy_from_slice(&text[..len]);
        area[len..].fill(0);
    }
    true
}

/// `prctl(PR_SET_NAME)`: the calling thread's name (15 bytes; what `ps -o comm` shows for
/// the main thread).
pub fn set_thread_name(text: &[u8]) {
    let mut name = [0u8; 16];
    let len = text
        .iter()
        .take(15)
        .position(|&b| b == 0)
        .unwrap_or(text.len().min(15));
    name[..len].copy_from_slice(&text[..len]);
    // SAFETY: PR_SET_NAME reads a NUL-terminated string of at most 16 bytes.
    unsafe { libc::prctl(libc::PR_SET_NAME, name.as_ptr() as libc::c_ulong, 0, 0, 0) };
}

/// `kill(pid, 0)`: whether `pid` exists and may be signalled by us.
pub fn process_check(pid: u32) -> io::Result<()> {
    let pid = libc::pid_t::try_from(pid).map_err(|_| io::Error::from_raw_os_error(libc::ESRCH))?;
    if pid <= 0 {
        return Err(io::Error::from_raw_os_error(libc::ESRCH));
    }
    // SAFETY: signal 0 only checks existence and permission.
    cvt(unsafe { libc::kill(pid, 0) }).map(drop)
}

/// The credentials of a Unix socket's peer at connect time (`SO_PEERCRED`): (pid, euid).
pub fn peer_cred(fd: BorrowedFd<'_>) -> io::Result<(u32, u32)> {
    // SAFETY: getsockopt fills a ucred of the length we pass.
    unsafe {
        let mut cred: libc::ucred = std::mem::zeroed();
        let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
        cvt(libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        ))?;
        Ok((cred.pid as u32, cred.uid))
    }
}

/// `shutdown(fd, SHUT_RDWR)`: on a listening socket this wakes a thread blocked in accept.
pub fn shutdown(fd: BorrowedFd<'_>) {
    // SAFETY: shutdown on a valid descriptor.
    unsafe {
        libc::shutdown(fd.as_raw_fd(), libc::SHUT_RDWR);
    }
}

/// True if the device number is /dev/zero's (character device 1:5).
pub fn is_dev_zero(info: &FileInfo) -> bool {
    info.kind == FileKind::Char && info.rdev == libc::makedev(1, 5)
}

/// Bytes in the constant zero buffer used by [`vmsplice_zeros`] and [`zeros`].
pub const ZERO_CHUNK: usize = 1 << 20;

/// A buffer of `len` bytes (at most 2 MiB) all equal to `fill`, aligned to 2 MiB with
/// `MADV_HUGEPAGE` where the kernel allows, never written again nor freed: pages vmspliced
/// from it may stay referenced by pipes (ours and downstream ones) for as long as they like.
/// Each call makes a new one; keep it.
pub fn constant_buffer(fill: u8, len: usize) -> io::Result<&'static [u8]> {
    const HUGE: usize = 2 << 20;
    let len = len.min(HUGE);
    // SAFETY: a fresh anonymous private mapping; only its 2 MiB-aligned part is used.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            2 * HUGE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    let aligned = (base as usize).next_multiple_of(HUGE);
    // SAFETY: [aligned, aligned + HUGE) lies inside the 2 * HUGE mapping, which is leaked.
    // Filling it faults the pages in (one huge page where THP is allowed) before anything
    // else can see it; afterwards it is only read.
    unsafe {
        libc::madvise(aligned as *mut libc::c_void, HUGE, libc::MADV_HUGEPAGE);
        std::ptr::write_bytes(aligned as *mut u8, fill, len);
        Ok(std::slice::from_raw_parts(aligned as *const u8, len))
    }
}

/// The process's constant zero buffer ([`ZERO_CHUNK`] bytes), made on first use.
fn zero_buffer() -> io::Result<&'static [u8]> {
    static BUF: std::sync::OnceLock<&'static [u8]> = std::sync::OnceLock::new();
    if let Some(buf) = BUF.get() {
        return Ok(buf);
    }
    let buf = constant_buffer(0, ZERO_CHUNK)?;
    // A concurrent first call leaks a second buffer and never uses it.
    Ok(BUF.get_or_init(|| buf))
}

/// `vmsplice(2)` of `buf` into the pipe `out`. The `'static` borrow of an immutable buffer
/// (see [`constant_buffer`]) is what makes this safe: the pipe may keep referencing the
/// pages after the call returns. Blocking unless the pipe is non-blocking (then EAGAIN).
///
/// # References
/// vmsplice(2)
pub fn vmsplice(out: BorrowedFd<'_>, buf: &'static [u8]) -> io::Result<usize> {
    let iov = libc::iovec {
        iov_base: buf.as_ptr() as *mut libc::c_void,
        iov_len: buf.len(),
    };
    // SAFETY: iov points into a buffer that is never written or freed.
    cvt_size(unsafe { libc::vmsplice(out.as_raw_fd(), &iov, 1, 0) })
}

/// The constant zero buffer, for `write()` to outputs that are not pipes.
pub fn zeros() -> io::Result<&'static [u8]> {
    zero_buffer()
}

/// `vmsplice(2)` of `len` (≤ [`ZERO_CHUNK`]) bytes of the constant zero buffer into the pipe
/// `out`. Safe because that buffer is never modified or unmapped, so the pipe may keep
/// referencing its pages. Blocking unless the pipe is non-blocking (then EAGAIN).
///
/// # References
/// vmsplice(2)
pub fn vmsplice_zeros(out: BorrowedFd<'_>, len: usize) -> io::Result<usize> {
    let buf = zero_buffer()?;
    vmsplice(out, &buf[..len.min(buf.len())])
}

/// `tee(2)`: duplicates up to `len` bytes from pipe `input` into pipe `output` without
/// consuming them. Blocking, unless a descriptor is non-blocking (then EAGAIN).
///
/// # References
/// tee(2)
pub fn tee(input: BorrowedFd<'_>, output: BorrowedFd<'_>, len: usize) -> io::Result<usize> {
    // SAFETY: plain syscall on borrowed fds.
    cvt_size(unsafe { libc::tee(input.as_raw_fd(), output.as_raw_fd(), len, 0) })
}

/// A read-only shared mapping of part of a file (`mmap(2)`), unmapped on drop.
///
/// Used only to count separators in data rpv has just moved or is about to measure. The
/// caller maps only ranges inside the file's size as `fstat` reported it. If another process
/// truncates the file while it is mapped, touching the lost pages raises SIGBUS (as for any
/// mmap reader) unless the SIGBUS handler installed by [`FileMap::new`] replaces them with
/// zeros (check [`take_map_fault`]); if it rewrites the range, the bytes seen may be old or
/// new ones.
pub struct FileMap {
    base: *mut libc::c_void,
    map_len: usize,
    skip: usize,
    len: usize,
}

/// The live [`FileMap`] (start, end), so the SIGBUS handler can tell its faults from others.
static MAPPED: (
    std::sync::atomic::AtomicUsize,
    std::sync::atomic::AtomicUsize,
) = (
    std::sync::atomic::AtomicUsize::new(0),
    std::sync::atomic::AtomicUsize::new(0),
);
/// Set when a page of the mapping vanished (the file was truncated) and was replaced.
static MAP_FAULT: AtomicBool = AtomicBool::new(false);
static SIGBUS_HANDLER: std::sync::Once = std::sync::Once::new();
const FAULT_PAGE: usize = 4096;

/// SIGBUS inside the live mapping means the file shrank under it: put a zero page where the
/// lost page was, note it, and let the load run again. Any other SIGBUS gets the default
/// action (the process dies, as it would have without this handler).
extern "C" fn on_sigbus(_: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    use std::sync::atomic::Ordering::Relaxed;
    // SAFETY: the kernel passes a valid siginfo for SA_SIGINFO handlers.
    let addr = unsafe { (*info).si_addr() } as usize;
    let (start, end) = (MAPPED.0.load(Relaxed), MAPPED.1.load(Relaxed));
    if start <= addr && addr < end {
        let page = addr & !(FAULT_PAGE - 1);
        // SAFETY: replaces one page inside our own read-only mapping (mmap is a plain
        // syscall on Linux, safe to make here).
        let r = unsafe {
            libc::mmap(
                page as *mut libc::c_void,
                FAULT_PAGE,
                libc::PROT_READ,
                libc::MAP_FIXED | libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if r != libc::MAP_FAILED {
            MAP_FAULT.store(true, Relaxed);
            return;
        }
    }
    // SAFETY: restoring the default action; returning re-raises the fault.
    unsafe {
        libc::signal(libc::SIGBUS, libc::SIG_DFL);
    }
}

/// True (once) if a [`FileMap`] lost pages since the last call: what was read from it since
/// then may contain zeros in place of data and must be counted again by other means.
pub fn take_map_fault() -> bool {
    MAP_FAULT.swap(false, std::sync::atomic::Ordering::Relaxed)
}

impl FileMap {
    /// Maps `[offset, offset + len)` of `fd` (len > 0), pre-faulted with `MAP_POPULATE`.
    /// A truncation of the file while it is mapped does not kill the process: see
    /// [`take_map_fault`].
    pub fn new(fd: BorrowedFd<'_>, offset: u64, len: usize) -> io::Result<FileMap> {
        SIGBUS_HANDLER.call_once(|| {
            // SAFETY: installs an SA_SIGINFO handler with an empty mask.
            unsafe {
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = on_sigbus as *const () as usize;
                libc::sigemptyset(&mut sa.sa_mask);
                sa.sa_flags = libc::SA_SIGINFO;
                libc::sigaction(libc::SIGBUS, &sa, std::ptr::null_mut());
            }
        });
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u64;
        let start = offset - offset % page;
        let skip = (offset - start) as usize;
        let map_len = skip + len;
        let off =
            libc::off_t::try_from(start).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
        if len == 0 {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        // SAFETY: a fresh read-only mapping of a borrowed fd; unmapped only in Drop.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                fd.as_raw_fd(),
                off,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: advisory call on our own mapping.
        unsafe { libc::madvise(base, map_len, libc::MADV_SEQUENTIAL) };
        MAPPED
            .0
            .store(base as usize, std::sync::atomic::Ordering::Relaxed);
        MAPPED.1.store(
            base as usize + map_len,
            std::sync::atomic::Ordering::Relaxed,
        );
        Ok(FileMap {
            base,
            map_len,
            skip,
            len,
        })
    }

    /// The mapped bytes.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: [base + skip, base + skip + len) is inside the live mapping (see the type's
        // documentation for what concurrent writers or truncation of the file mean).
        unsafe { std::slice::from_raw_parts((self.base as *const u8).add(self.skip), self.len) }
    }
}

impl Drop for FileMap {
    fn drop(&mut self) {
        MAPPED.1.store(0, std::sync::atomic::Ordering::Relaxed);
        MAPPED.0.store(0, std::sync::atomic::Ordering::Relaxed);
        // SAFETY: unmaps exactly the mapping made in `new`; no slice of it outlives self.
        unsafe {
            libc::munmap(self.base, self.map_len);
        }
    }
}

/// What identifies one version of a file's contents: device, inode, size, and the
/// modification and status-change times in nanoseconds (from `fstat`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileVersion {
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

/// `fstat(2)` reduced to a [`FileVersion`].
pub fn file_version(fd: BorrowedFd<'_>) -> io::Result<FileVersion> {
    // SAFETY: `st` is a valid out-pointer; zeroed is a valid bit pattern for `stat`.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    cvt(unsafe { libc::fstat(fd.as_raw_fd(), &mut st) })?;
    let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
    Ok(FileVersion {
        dev: st.st_dev,
        ino: st.st_ino,
        size: u64::try_from(st.st_size).unwrap_or(0),
        mtime_ns: ns(st.st_mtime, st.st_mtime_nsec),
        ctime_ns: ns(st.st_ctime, st.st_ctime_nsec),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsFd;

    #[test]
    fn a_file_truncated_under_its_mapping_reads_as_zeros_instead_of_killing_us() {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&[b'\n'; 3 * 4096]).unwrap();
        let map = FileMap::new(file.as_fd(), 0, 3 * 4096).unwrap();
        take_map_fault();
        assert_eq!(map.bytes()[5000], b'\n');
        file.set_len(0).unwrap();
        let newlines = map.bytes().iter().filter(|&&b| b == b'\n').count();
        assert_eq!(newlines, 0, "the lost pages read as zeros");
        assert!(take_map_fault(), "the fault is reported");
        assert!(!take_map_fault(), "once");
    }
}
