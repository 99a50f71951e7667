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
//! Owns: the record and the check of the output. Must not: touch the descriptors (the
//! record is taken by the binary; the library has no `unsafe`).

use std::sync::atomic::{AtomicU8, Ordering};

use crate::cli::{Action, Options};
use crate::error::Error;

/// Bit 0: stdin was closed at start; bit 1: stdout was.
static CLOSED: AtomicU8 = AtomicU8::new(0);

/// Records which standard descriptors were closed when the process started (called by the
/// binary before Rust's runtime reopens them; never by the library itself).
pub fn record_closed(stdin: bool, stdout: bool) {
    CLOSED.store(u8::from(stdin) | u8::from(stdout) << 1, Ordering::Relaxed);
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
