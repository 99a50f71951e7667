//! Signal handling: every handler only sets flags (and pokes the wake pipe).
//!
//! - SIGINT/SIGHUP/SIGTERM: request exit (status bit 32, no final update; spec 5).
//! - SIGTSTP: note the time and stop with SIGSTOP; SIGCONT adds the stopped time to a total
//!   that elapsed time excludes, and asks for a redraw.
//! - SIGWINCH: re-read the terminal size at the next update.
//! - SIGPIPE ignored (EPIPE is handled where it happens); SIGTTOU ignored, so a background
//!   rpv never stops the pipeline. rpv never sets TOSTOP (pv does, and then shows nothing in
//!   the background: spec 7.3 #30).

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};

use crate::sys;

static WAKE_FD: AtomicI32 = AtomicI32::new(-1);
static EXIT: AtomicBool = AtomicBool::new(false);
static RESIZED: AtomicBool = AtomicBool::new(false);
static CONTINUED: AtomicBool = AtomicBool::new(false);
static STOPPED_AT: AtomicU64 = AtomicU64::new(0);
static STOPPED_TOTAL: AtomicU64 = AtomicU64::new(0);

/// The signals the display thread handles; the data thread blocks them.
pub const HANDLED: [libc::c_int; 6] = [
    libc::SIGINT,
    libc::SIGHUP,
    libc::SIGTERM,
    libc::SIGTSTP,
    libc::SIGCONT,
    libc::SIGWINCH,
];

fn poke() {
    let fd = WAKE_FD.load(Ordering::Relaxed);
    if fd >= 0 {
        sys::write_raw(fd, b"s");
    }
}

extern "C" fn on_exit_signal(_: libc::c_int) {
    EXIT.store(true, Ordering::Relaxed);
    poke();
}

extern "C" fn on_tstp(_: libc::c_int) {
    STOPPED_AT.store(sys::monotonic_ns(), Ordering::Relaxed);
    sys::raise(libc::SIGSTOP);
}

extern "C" fn on_cont(_: libc::c_int) {
    let at = STOPPED_AT.swap(0, Ordering::Relaxed);
    if at != 0 {
        STOPPED_TOTAL.fetch_add(sys::monotonic_ns().saturating_sub(at), Ordering::Relaxed);
    }
    RESIZED.store(true, Ordering::Relaxed);
    CONTINUED.store(true, Ordering::Relaxed);
    poke();
}

extern "C" fn on_winch(_: libc::c_int) {
    RESIZED.store(true, Ordering::Relaxed);
    poke();
}

/// Installs the handlers; `wake` (the write end of the display thread's wake pipe) is kept
/// open for the rest of the process.
pub fn install(wake: OwnedFd) {
    let _ = sys::set_nonblocking(std::os::fd::AsFd::as_fd(&wake), true);
    WAKE_FD.store(wake.as_raw_fd(), Ordering::Relaxed);
    std::mem::forget(wake);
    sys::ignore_signal(libc::SIGPIPE);
    sys::ignore_signal(libc::SIGTTOU);
    for sig in [libc::SIGINT, libc::SIGHUP, libc::SIGTERM] {
        let _ = sys::set_signal_handler(sig, on_exit_signal);
    }
    let _ = sys::set_signal_handler(libc::SIGTSTP, on_tstp);
    let _ = sys::set_signal_handler(libc::SIGCONT, on_cont);
    let _ = sys::set_signal_handler(libc::SIGWINCH, on_winch);
}

/// Ignores SIGPIPE only (for runs without a display loop).
pub fn ignore_pipe() {
    sys::ignore_signal(libc::SIGPIPE);
}

/// True once SIGINT, SIGHUP or SIGTERM arrived.
pub fn exit_requested() -> bool {
    EXIT.load(Ordering::Relaxed)
}

/// True (once) after SIGWINCH or SIGCONT: the terminal size should be re-read.
pub fn take_resized() -> bool {
    RESIZED.swap(false, Ordering::Relaxed)
}

/// True (once) after SIGCONT: the line should be redrawn now.
pub fn take_continued() -> bool {
    CONTINUED.swap(false, Ordering::Relaxed)
}

/// Nanoseconds spent stopped (Ctrl-Z) so far.
pub fn stopped_ns() -> u64 {
    STOPPED_TOTAL.load(Ordering::Relaxed)
}
