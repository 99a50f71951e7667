//! The operating-system layer: every system call rpv makes beyond `std`, as safe functions on
//! borrowed descriptors.
//!
//! Owns: the wrappers (most are one call into rustix, which does the raw syscall safely), and
//! every `unsafe` block of the library: what neither rustix nor `std` covers is hand-written
//! here, one unsafe operation per block, each with its `SAFETY` reason. The parts:
//!
//! | module | what |
//! |---|---|
//! | `fs` | `fstat`/`stat`, read/write/seek, file status flags, `flock` |
//! | `pipe` | splice, tee, copy_file_range, pipe sizes, `poll`, the constant buffer and vmsplice |
//! | `filemap` | the `-l` counting mapping and its SIGBUS recovery |
//! | `term` | terminal tests, size, foreground, attributes |
//! | `process` | the standard descriptors, ids, `kill(pid, 0)`, peer credentials, `shutdown`, thread name |
//! | `title` | the process title (the argv and environment areas) |
//! | `signal` | handlers, masks, the async-signal-safe write |
//! | `clock` | monotonic and wall clocks, pv's error texts |
//!
//! Must not: hold policy (retries, fallbacks and messages belong to the callers). Callers use
//! `crate::sys::name`; the modules are private.

#[allow(unsafe_code)]
mod clock;
mod diag;
#[allow(unsafe_code)]
mod filemap;
#[allow(unsafe_code)]
mod fs;
#[allow(unsafe_code)]
mod pipe;
#[allow(unsafe_code)]
mod process;
#[allow(unsafe_code)]
mod signal;
mod term;
#[allow(unsafe_code)]
mod title;

pub use clock::monotonic_ns;
pub(crate) use clock::{strerror, unix_time_ms, wall_clock};
pub(crate) use diag::{tcp_bytes, unix_peer};
pub(crate) use filemap::FileMap;
pub(crate) use fs::{
    advise_sequential, dir_entries, fdatasync, file_version, fstat, ftruncate, is_dev_zero, lseek,
    pipe_id, pread, readable, set_status_flag, stat, status_flags, try_flock, unlock, FileInfo,
    FileKind, FileVersion, PipeId,
};
pub use fs::{read, set_nonblocking, write};
pub use pipe::{
    constant_buffer, pipe_size, poll_one, set_pipe_size, splice, tee, vmsplice, ConstBuf,
};
pub(crate) use pipe::{
    copy_file_range, pipe, pipe_fill, pipe_nonblocking, unread_bytes, vmsplice_zeros, zeros,
    ZERO_CHUNK,
};
pub(crate) use process::{
    child_ended, continue_pending, geteuid, peer_cred, process_check, process_exists, send_signal,
    set_thread_name, shutdown, stderr_fd, terminate,
};
pub use process::{stdin_fd, stdout_fd};
pub(crate) use signal::{
    block_signals, ignore_signal, interrupt_thread, raise, set_signal_handler, start_alarm_ticks,
    thread_id,
};
pub(crate) use term::{
    in_foreground, isatty, restore_tty_mode, tty_line_mode, tty_mode_for_reply, ttyname,
    window_size, TtyMode,
};
pub use title::{prepare_process_title, set_process_title};

/// Tests: waits until `done` holds, looking every millisecond, for at most 10 s; fails the
/// test, saying `what` it waited for, if it never does. (What a closed descriptor releases,
/// for one, can lag its close: a process another test forks meanwhile holds a copy of the
/// descriptor until its exec.)
#[cfg(test)]
#[track_caller]
pub(crate) fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !done() {
        assert!(std::time::Instant::now() < deadline, "timed out: {what}");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}
