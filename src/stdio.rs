//! Standard input and output that were closed when rpv started (`rpv file >&-`,
//! `rpv <&-`).
//!
//! Rust's runtime reopens a closed descriptor 0, 1 or 2 on /dev/null before `main`, so a
//! closed output would swallow everything and a closed input would read as empty, both
//! with status 0. The binary records which of 0 and 1 were closed before that happens (an
//! `.init_array` function in `main.rs`) and the run refuses them the way pv refuses a
//! descriptor it cannot stat: `failed to stat output file: Bad file descriptor` (status 2,
//! before anything is read) for the output, and `failed to read file: (stdin): Bad file
//! descriptor` (status 2, the other inputs still copied) for a standard input named as an
//! input. A closed stdout does not matter with `-o FILE`, nor a closed stdin when it is not
//! an input.
//!
//! The same /dev/null is reached by name: `-o /dev/stdout`, `--tee /dev/fd/1`, `--tee
//! /proc/self/fd/2` open the file on that descriptor. An output or `--tee` file that is
//! the /dev/null put on a closed descriptor (same device and inode) and whose path goes
//! through a descriptor's link in /proc (so `-o /dev/null` itself stays fine) is refused
//! as that descriptor would be: `PATH: Bad file descriptor`, status 2 ([`reaches_closed`]).
//!
//! Owns: the record and the checks. Must not: touch the descriptors (the record is taken by
//! the binary; the library has no `unsafe`).

use std::path::Path;
use std::sync::atomic::{AtomicU8, Ordering};

use crate::cli::{Action, Options};
use crate::error::Error;
use crate::sys::{self, FileInfo};

/// Bit 0: stdin was closed at start; bit 1: stdout was; bit 2: stderr was.
static CLOSED: AtomicU8 = AtomicU8::new(0);

/// Records which standard descriptors were closed when the process started (called by the
/// binary before Rust's runtime reopens them; never by the library itself).
pub fn record_closed(stdin: bool, stdout: bool, stderr: bool) {
    let bits = u8::from(stdin) | u8::from(stdout) << 1 | u8::from(stderr) << 2;
    CLOSED.store(bits, Ordering::Relaxed);
}

/// True if the file opened from `path`, whose `fstat` is `info`, is what stands on a
/// standard descriptor that was closed when rpv started, reached through that descriptor's
/// link (`/dev/stdout`, `/dev/fd/N`, `/proc/self/fd/N`): writing there would write into
/// the /dev/null Rust's runtime put on it.
pub fn reaches_closed(path: &Path, info: &FileInfo) -> bool {
    let closed = CLOSED.load(Ordering::Relaxed);
    let fds = [sys::stdin_fd(), sys::stdout_fd(), sys::stderr_fd()];
    let filled = fds.iter().enumerate().any(|(n, fd)| {
        closed & (1 << n) != 0
            && sys::fstat(*fd).is_ok_and(|i| (i.dev, i.ino) == (info.dev, info.ino))
    });
    filled && through_descriptor_link(path)
}

/// True if resolving `path` goes through a "magic" link of /proc (a descriptor's link, such
/// as `/proc/self/fd/1`, which `/dev/stdout` and `/dev/fd/1` lead to). A kernel without
/// `openat2` (before 5.6) cannot tell: yes, to be safe.
fn through_descriptor_link(path: &Path) -> bool {
    use rustix::fs::{Mode, OFlags, ResolveFlags};
    let flags = OFlags::PATH | OFlags::CLOEXEC;
    matches!(
        rustix::fs::openat2(
            rustix::fs::CWD,
            path,
            flags,
            Mode::empty(),
            ResolveFlags::NO_MAGICLINKS
        ),
        Err(rustix::io::Errno::LOOP | rustix::io::Errno::NOSYS)
    )
}

/// True if standard input was closed when rpv started.
pub fn stdin_was_closed() -> bool {
    CLOSED.load(Ordering::Relaxed) & 1 != 0
}

/// True if standard output was closed when rpv started.
pub fn stdout_was_closed() -> bool {
    CLOSED.load(Ordering::Relaxed) & 2 != 0
}

/// The error if the run would write to a standard output that was closed (checked before
/// anything is read, so no input is consumed for nothing).
pub fn check_output(o: &Options) -> Result<(), Error> {
    let writes_stdout = matches!(
        o.action,
        Action::Transfer | Action::StoreAndForward(_) | Action::Monitor(_)
    ) && (o
        .output
        .as_deref()
        .is_none_or(|path| path.as_os_str() == "-")
        || o.tees.iter().any(|path| path.as_os_str() == "-"));
    if writes_stdout && stdout_was_closed() {
        return Err(Error::Output {
            path: None,
            err: std::io::Error::from_raw_os_error(libc::EBADF),
        });
    }
    Ok(())
}
