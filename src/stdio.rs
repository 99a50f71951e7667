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
//! /proc/self/fd/2` open the file on that descriptor. An output or `--tee` file whose path
//! leads to one of rpv's descriptors 0-2 through /proc (following symlinks one at a time),
//! where that descriptor was closed at start, is refused as that descriptor would be:
//! `PATH: Bad file descriptor`, status 2 (`reaches_closed`). `-o /dev/null` itself, or
//! another descriptor that is /dev/null, stays fine.
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
/// link (`/dev/stdout`, `/dev/fd/N`, `/proc/self/fd/N`, or a symlink to one of them):
/// writing there would write into the /dev/null Rust's runtime put on it.
pub(crate) fn reaches_closed(path: &Path, info: &FileInfo) -> bool {
    let closed = CLOSED.load(Ordering::Relaxed);
    let Some(n) = descriptor_named(path) else {
        return false;
    };
    let fd = match n {
        0 => sys::stdin_fd(),
        1 => sys::stdout_fd(),
        2 => sys::stderr_fd(),
        _ => return false,
    };
    closed & (1 << n) != 0 && sys::fstat(fd).is_ok_and(|i| (i.dev, i.ino) == (info.dev, info.ino))
}

/// The descriptor of rpv's own that `path` names through /proc (`/proc/self/fd/N`,
/// `/proc/thread-self/fd/N`, `/dev/fd/N`, `/dev/stdout`, and symlinks leading there), if it
/// does. Symlinks are followed one at a time (at most 40, as the kernel does) until a name
/// whose directory is rpv's own descriptor directory.
fn descriptor_named(path: &Path) -> Option<u32> {
    let pid = std::process::id().to_string();
    let mut path = path.to_path_buf();
    for _ in 0..40 {
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let name = path.file_name()?;
        if let Ok(dir) = std::fs::canonicalize(dir) {
            // /proc/PID/fd or /proc/PID/task/TID/fd.
            let parts: Vec<_> = dir
                .iter()
                .map(|p| p.to_string_lossy().into_owned())
                .collect();
            let ours = match parts.as_slice() {
                [root, proc, p, fd] => root == "/" && proc == "proc" && *p == pid && fd == "fd",
                [root, proc, p, task, _, fd] => {
                    root == "/" && proc == "proc" && *p == pid && task == "task" && fd == "fd"
                }
                _ => false,
            };
            if ours {
                return name.to_str()?.parse().ok();
            }
        }
        let target = std::fs::read_link(&path).ok()?;
        path = dir.join(target);
    }
    None
}

/// True if standard input was closed when rpv started.
pub(crate) fn stdin_was_closed() -> bool {
    CLOSED.load(Ordering::Relaxed) & 1 != 0
}

/// True if standard output was closed when rpv started.
pub(crate) fn stdout_was_closed() -> bool {
    CLOSED.load(Ordering::Relaxed) & 2 != 0
}

/// The error if the run would write to a standard output that was closed (checked before
/// anything is read, so no input is consumed for nothing).
pub(crate) fn check_output(o: &Options) -> Result<(), Error> {
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
