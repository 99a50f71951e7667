//! Signal dispositions and masks, and the one write a handler makes.
//!
//! Owns: the C-library calls for `signals.rs` (neither rustix nor std installs handlers in a
//! process that uses the C library). Must not: do anything in a handler beyond
//! async-signal-safe calls.

use std::io;

/// Installs `handler` for `signal` with `SA_RESTART` off (so blocking calls return EINTR).
pub(crate) fn set_signal_handler(
    signal: libc::c_int,
    handler: extern "C" fn(libc::c_int),
) -> io::Result<()> {
    // Handlers read the monotonic clock: let rustix find the vDSO now, outside any handler.
    super::monotonic_ns();
    // SAFETY: `sigaction` is plain data (integers, a signal set, function pointers) for which
    // all-zero is a valid value: no handler, no flags, an empty mask.
    let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
    sa.sa_sigaction = handler as usize;
    sa.sa_flags = 0;
    // SAFETY: `sa` is a valid action for a plain (non-SA_SIGINFO) handler with an empty
    // mask; the old action is not asked for.
    let rc = unsafe { libc::sigaction(signal, &sa, std::ptr::null_mut()) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Sets `signal` to be ignored.
pub(crate) fn ignore_signal(signal: libc::c_int) {
    // SAFETY: installing SIG_IGN replaces any handler with no code of ours to run.
    unsafe {
        libc::signal(signal, libc::SIG_IGN);
    }
}

/// Raises `signal` in the calling thread (used to stop with SIGSTOP).
pub(crate) fn raise(signal: libc::c_int) {
    // SAFETY: raise sends a signal to the calling thread; it is async-signal-safe.
    unsafe {
        libc::raise(signal);
    }
}

/// Blocks `signals` in the calling thread, so they are delivered to other threads.
pub(crate) fn block_signals(signals: &[libc::c_int]) {
    // SAFETY: `sigset_t` is plain data; all-zero is the empty set.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    for &s in signals {
        // SAFETY: adds one signal number to the set we own (invalid numbers are refused).
        unsafe { libc::sigaddset(&mut set, s) };
    }
    // SAFETY: applies the set to the calling thread's mask only; the old mask is not asked
    // for.
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
}

/// The calling thread's id (for [`interrupt_thread`]).
pub(crate) fn thread_id() -> i32 {
    rustix::thread::gettid().as_raw_nonzero().get()
}

/// Sends `signal` to thread `tid` of this process (`tgkill`), to interrupt a blocking call
/// it makes. A thread that has ended is not there any more: nothing happens (ESRCH).
pub(crate) fn interrupt_thread(tid: i32, signal: libc::c_int) {
    let pid = libc::c_long::from(std::process::id());
    // SAFETY: tgkill takes three integers and touches no memory of ours; it only signals a
    // thread of this very process (the group id is ours).
    unsafe {
        libc::syscall(
            libc::SYS_tgkill,
            pid,
            libc::c_long::from(tid),
            libc::c_long::from(signal),
        );
    }
}

/// Starts a timer that sends SIGALRM to the process every `period_ms` milliseconds, for
/// good (`setitimer(ITIMER_REAL)`; not inherited by child processes). The threads that
/// block SIGALRM leave it to the one that does not.
pub(crate) fn start_alarm_ticks(period_ms: u32) -> io::Result<()> {
    let period = libc::timeval {
        tv_sec: libc::time_t::from(period_ms / 1000),
        tv_usec: libc::suseconds_t::from((period_ms % 1000) as i32 * 1000),
    };
    let value = libc::itimerval {
        it_interval: period,
        it_value: period,
    };
    // SAFETY: `value` is a valid itimerval we own; the old value is not asked for.
    let rc = unsafe { libc::setitimer(libc::ITIMER_REAL, &value, std::ptr::null_mut()) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
