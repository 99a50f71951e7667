//! Signal handling: every handler only sets flags and writes a byte to the wake pipe.
//!
//! Owns: the process's one set of handlers (installed once, however many display loops
//! run) and the wake pipe the display loop waits on, which sources and the control server
//! also use to wake it.
//!
//! - SIGINT/SIGHUP/SIGTERM: request exit (status bit 32). The handlers are installed
//!   without `SA_RESTART`, so a blocking call on the main thread (opening a FIFO, a write
//!   to a blocked terminal) returns EINTR and rpv exits promptly; other threads
//!   block these signals.
//! - SIGTSTP: note the time and stop with SIGSTOP; SIGCONT adds the stopped time to a total
//!   that elapsed time excludes, and asks for a redraw. While the terminal's progress
//!   indicator (`--term-progress`) is shown, the handler first writes the sequence that
//!   clears it ([`write_on_stop`]): one `write(2)` of a fixed buffer to a non-blocking
//!   descriptor, async-signal-safe, the one thing a handler does beyond flags and the wake
//!   pipe. The next update after SIGCONT sets it again.
//!   While the display loop waits (and only then), the stop is left to it ([`take_stop`],
//!   [`stop_unless_continued`]): it first erases a multi-row view's rows, so the shell's job
//!   lines do not land on them. A SIGCONT that comes before the loop stops drops the
//!   deferred stop (the loop may be blocked writing to a stuck standard error meanwhile).
//! - SIGWINCH: re-read the terminal size at the next update.
//! - SIGUSR1, SIGUSR2, SIGALRM: never end a transfer. pv uses the first two for its own
//!   remote control (`pv -R`/`pv -Q` send them to "the pv process"); rpv says once that it
//!   is controlled through `rpv -R`/`rpv -Q` instead.
//! - SIGPIPE ignored (EPIPE is handled where it happens); SIGTTOU ignored, so a background
//!   rpv never stops the pipeline. rpv never sets TOSTOP (pv does, and then shows nothing in
//!   the background).
//! - SIGURG (the "kick"): a handler that does nothing, so that a blocking call of the thread
//!   it is sent to returns (EINTR, or the part it had done). After an exit signal the display
//!   loop kicks each data thread until it has stopped, so its last call is counted
//!   ([`Kick`]). Only data threads leave it unblocked; a stray SIGURG is only an EINTR, which
//!   every call of theirs retries.
//! - After an exit signal the main thread must not block for good (on a standard error that
//!   nobody reads, say): [`bound_blocking_calls`] starts SIGALRM ticks, which interrupt any
//!   blocking call of the main thread (the only thread that does not block SIGALRM), so the
//!   writers can give up at a deadline.
//!
//! signal-hook is not used: it installs its handlers with `SA_RESTART`, and rpv needs the
//! interrupted system calls above.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::OnceLock;

use crate::sys;

/// The wake pipe: (read end, write end).
static WAKE: OnceLock<(OwnedFd, OwnedFd)> = OnceLock::new();
static EXIT: AtomicBool = AtomicBool::new(false);
static RESIZED: AtomicBool = AtomicBool::new(false);
static CONTINUED: AtomicBool = AtomicBool::new(false);
static STOPPED_AT: AtomicU64 = AtomicU64::new(0);
/// When the process was last stopped by SIGTSTP (monotonic ns; 0 if never): kept after
/// SIGCONT, for cursor mode to notice that the shell wrote to the terminal meanwhile.
static LAST_STOP: AtomicU64 = AtomicU64::new(0);
static STOPPED_TOTAL: AtomicU64 = AtomicU64::new(0);
/// How many times the process was continued (SIGCONT), after Ctrl-Z or a SIGSTOP sent from
/// outside (which no handler sees): the `-L` limiter starts its schedule again after one.
static CONTINUES: AtomicU64 = AtomicU64::new(0);
/// The display loop is waiting in [`wait`]: SIGTSTP leaves the stop to it.
static STOP_DEFERRED: AtomicBool = AtomicBool::new(false);
/// SIGTSTP arrived while the stop was deferred; the display loop stops when it sees this.
static STOP_PENDING: AtomicBool = AtomicBool::new(false);
/// Bits of the "foreign" signals seen and not yet reported: 1 = SIGUSR1, 2 = SIGUSR2.
static FOREIGN: AtomicU32 = AtomicU32::new(0);
/// Bits already reported (each is reported once per run).
static REPORTED: AtomicU32 = AtomicU32::new(0);
/// What SIGTSTP writes before stopping, and where (set once: the terminal progress
/// indicator's clear).
static ON_STOP: OnceLock<(OwnedFd, &'static [u8])> = OnceLock::new();
/// Whether SIGTSTP writes [`ON_STOP`] (the indicator is shown now).
static ON_STOP_ARMED: AtomicBool = AtomicBool::new(false);

/// The signal that interrupts a data thread's blocking call.
const KICK: libc::c_int = libc::SIGURG;

/// The signals the main thread handles; every other thread blocks them.
const HANDLED: [libc::c_int; 9] = [
    libc::SIGINT,
    libc::SIGHUP,
    libc::SIGTERM,
    libc::SIGTSTP,
    libc::SIGCONT,
    libc::SIGWINCH,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGALRM,
];

fn poke() {
    if let Some((_, write)) = WAKE.get() {
        let _ = sys::write(write.as_fd(), b"s");
    }
}

extern "C" fn on_exit_signal(_: libc::c_int) {
    EXIT.store(true, Ordering::Relaxed);
    poke();
}

/// Every SIGTSTP is left to the display loop, not only those that come while it waits
/// (`--top`: a look at every process takes long enough that Ctrl-Z often comes during
/// one, and nothing else is in flight).
static STOPS_TO_LOOP: AtomicBool = AtomicBool::new(false);

/// Leaves every Ctrl-Z to the display loop from now on (see [`take_stop`]): it erases the
/// rows and stops at its next wake-up.
pub(crate) fn leave_stops_to_loop() {
    STOPS_TO_LOOP.store(true, Ordering::Relaxed);
}

extern "C" fn on_tstp(_: libc::c_int) {
    if STOP_DEFERRED.load(Ordering::Relaxed) || STOPS_TO_LOOP.load(Ordering::Relaxed) {
        STOP_PENDING.store(true, Ordering::Relaxed);
        poke();
        return;
    }
    stop();
}

/// Stops the process now (SIGSTOP), noting the time; returns after SIGCONT.
pub(crate) fn stop() {
    if ON_STOP_ARMED.swap(false, Ordering::Relaxed) {
        if let Some((fd, bytes)) = ON_STOP.get() {
            let _ = sys::write(fd.as_fd(), bytes);
        }
    }
    let now = sys::monotonic_ns();
    STOPPED_AT.store(now, Ordering::Relaxed);
    LAST_STOP.store(now, Ordering::Relaxed);
    sys::raise(libc::SIGSTOP);
}

/// When Ctrl-Z arrived while the display loop waited (once): the count of continues
/// ([`continues`]) at that moment. The loop makes the terminal ready, then calls
/// [`stop_unless_continued`] with it.
pub(crate) fn take_stop() -> Option<u64> {
    let continues = CONTINUES.load(Ordering::Relaxed);
    STOP_PENDING
        .swap(false, Ordering::Relaxed)
        .then_some(continues)
}

/// Stops as [`stop`] does, unless the process was continued (SIGCONT) since `continues`
/// ([`take_stop`]'s count) was taken: a stop the display loop deferred is dropped when a
/// SIGCONT comes first (Ctrl-Z then `bg` while the loop was blocked writing to a stuck
/// standard error), or rpv would stop after it and stay stopped, deaf to SIGINT.
pub(crate) fn stop_unless_continued(continues: u64) {
    if CONTINUES.load(Ordering::Relaxed) == continues {
        stop();
    }
}

extern "C" fn on_cont(_: libc::c_int) {
    // A stop still deferred to the display loop is dropped: the continue came first.
    STOP_PENDING.store(false, Ordering::Relaxed);
    CONTINUES.fetch_add(1, Ordering::Relaxed);
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

extern "C" fn on_kick(_: libc::c_int) {}

extern "C" fn on_foreign(sig: libc::c_int) {
    let bit = match sig {
        libc::SIGUSR1 => 1,
        libc::SIGUSR2 => 2,
        _ => return, // SIGALRM: nothing to say
    };
    FOREIGN.fetch_or(bit, Ordering::Relaxed);
    poke();
}

/// Installs the handlers and creates the wake pipe, once per process (later calls do
/// nothing). Returns false if the wake pipe could not be made (the display loop then
/// polls on its interval alone).
pub(crate) fn install() -> bool {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // Non-blocking from its creation: a handler's write never waits, and the loop's
        // read never blocks (with no pipe at all, the loop polls on its interval).
        if let Ok((read, write)) = sys::pipe_nonblocking() {
            let _ = WAKE.set((read, write));
        }
        sys::ignore_signal(libc::SIGPIPE);
        sys::ignore_signal(libc::SIGTTOU);
        for sig in [libc::SIGINT, libc::SIGHUP, libc::SIGTERM] {
            let _ = sys::set_signal_handler(sig, on_exit_signal);
        }
        let _ = sys::set_signal_handler(libc::SIGTSTP, on_tstp);
        let _ = sys::set_signal_handler(libc::SIGCONT, on_cont);
        let _ = sys::set_signal_handler(libc::SIGWINCH, on_winch);
        for sig in [libc::SIGUSR1, libc::SIGUSR2, libc::SIGALRM] {
            let _ = sys::set_signal_handler(sig, on_foreign);
        }
        let _ = sys::set_signal_handler(KICK, on_kick);
    });
    WAKE.get().is_some()
}

/// Blocks the handled signals and the kick in the calling thread (the control threads), so
/// the signals interrupt the main thread's blocking calls.
pub(crate) fn block_in_this_thread() {
    sys::block_signals(&HANDLED);
    sys::block_signals(&[KICK]);
}

/// Prepares a data thread: the handled signals blocked (they go to the main thread), the
/// kick left open. Returns what the display loop uses to kick this thread.
pub(crate) fn data_thread() -> Kick {
    sys::block_signals(&HANDLED);
    Kick(sys::thread_id())
}

/// Interrupts a blocking call of one data thread (see the module notes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Kick(i32);

impl Kick {
    /// Sends the kick. Harmless if the thread has ended (or makes no blocking call now).
    pub(crate) fn send(self) {
        sys::interrupt_thread(self.0, KICK);
    }

    /// As a number (0 is no thread), to keep in an atomic.
    pub(crate) fn to_raw(self) -> i32 {
        self.0
    }

    /// From [`Kick::to_raw`]; None for 0.
    pub(crate) fn from_raw(raw: i32) -> Option<Kick> {
        (raw != 0).then_some(Kick(raw))
    }
}

/// After an exit signal: from now on no blocking call of the main thread lasts longer than
/// a tick (20 ms of SIGALRM; the call returns EINTR or the part it had done), so its callers
/// can give up at a deadline of their own. Does nothing before an exit signal, or after the
/// first call. Called on the main thread only.
pub(crate) fn bound_blocking_calls() {
    static TICKING: AtomicBool = AtomicBool::new(false);
    if exit_requested() && !TICKING.swap(true, Ordering::Relaxed) {
        let _ = sys::start_alarm_ticks(20);
    }
}

/// A waker for the display loop (a duplicate of the wake pipe's write end).
pub(crate) fn waker() -> Waker {
    match WAKE.get().and_then(|(_, w)| w.try_clone().ok()) {
        Some(fd) => Waker::new(fd),
        None => Waker::none(),
    }
}

/// The read end of the wake pipe, if there is one.
fn wake_fd() -> Option<BorrowedFd<'static>> {
    WAKE.get().map(|(read, _)| read.as_fd())
}

/// Waits up to `timeout_ms` for a wake-up (a signal, an event, the end of the engine), then
/// empties the wake pipe. A Ctrl-Z meanwhile is left to the caller (see [`take_stop`]).
pub(crate) fn wait(timeout_ms: i32) {
    match wake_fd() {
        Some(fd) => {
            STOP_DEFERRED.store(true, Ordering::Relaxed);
            let _ = sys::poll_one(fd, libc::POLLIN, timeout_ms);
            STOP_DEFERRED.store(false, Ordering::Relaxed);
            let mut buf = [0u8; 64];
            while matches!(sys::read(fd, &mut buf), Ok(n) if n > 0) {}
        }
        None => std::thread::sleep(std::time::Duration::from_millis(timeout_ms.max(0) as u64)),
    }
}

/// True once SIGINT, SIGHUP or SIGTERM arrived.
pub(crate) fn exit_requested() -> bool {
    EXIT.load(Ordering::Relaxed)
}

/// True (once) after SIGWINCH or SIGCONT: the terminal size should be re-read.
pub(crate) fn take_resized() -> bool {
    RESIZED.swap(false, Ordering::Relaxed)
}

/// True (once) after SIGCONT: the line should be redrawn now.
pub(crate) fn take_continued() -> bool {
    CONTINUED.swap(false, Ordering::Relaxed)
}

/// How many times the process has been continued (SIGCONT) so far: a change means it was
/// stopped meanwhile, by Ctrl-Z or by a SIGSTOP from outside.
pub(crate) fn continues() -> u64 {
    CONTINUES.load(Ordering::Relaxed)
}

/// When the process was last stopped by SIGTSTP (Ctrl-Z), in monotonic ns; 0 if never.
pub(crate) fn last_stop_ns() -> u64 {
    LAST_STOP.load(Ordering::Relaxed)
}

/// Nanoseconds spent stopped (Ctrl-Z) so far.
pub(crate) fn stopped_ns() -> u64 {
    STOPPED_TOTAL.load(Ordering::Relaxed)
}

/// Has SIGTSTP write `bytes` to `fd` before rpv stops, whenever [`arm_on_stop`] armed it
/// (`fd` should be non-blocking: a handler must not wait). Set once per process; false if it
/// was already set.
pub(crate) fn write_on_stop(fd: OwnedFd, bytes: &'static [u8]) -> bool {
    ON_STOP.set((fd, bytes)).is_ok()
}

/// Arms (or disarms) the write of [`write_on_stop`] at the next SIGTSTP; the handler
/// disarms it when it writes.
pub(crate) fn arm_on_stop(armed: bool) {
    ON_STOP_ARMED.store(armed, Ordering::Relaxed);
}

/// A note for the user after SIGUSR1/SIGUSR2 (pv's own remote control), once per signal.
pub(crate) fn take_foreign() -> Option<String> {
    let seen = FOREIGN.swap(0, Ordering::Relaxed);
    let new = seen & !REPORTED.fetch_or(seen, Ordering::Relaxed);
    let name = match new {
        0 => return None,
        1 => "SIGUSR1",
        2 => "SIGUSR2",
        _ => "SIGUSR1 and SIGUSR2",
    };
    Some(format!(
        "{name} ignored: this is rpv, which is queried with rpv -Q and controlled with rpv -R"
    ))
}

/// Wakes the display loop: a byte written to its wake pipe (never blocks; a full pipe
/// already means "wake up").
#[derive(Debug, Default)]
pub(crate) struct Waker {
    fd: Option<OwnedFd>,
}

impl Waker {
    /// A waker on the write end of the display loop's wake pipe.
    pub(crate) fn new(fd: OwnedFd) -> Waker {
        let _ = sys::set_nonblocking(fd.as_fd(), true);
        Waker { fd: Some(fd) }
    }

    /// A waker that does nothing (no display loop).
    pub(crate) fn none() -> Waker {
        Waker { fd: None }
    }

    /// Wakes the loop.
    pub(crate) fn wake(&self) {
        if let Some(fd) = &self.fd {
            let _ = sys::write(fd.as_fd(), b"w");
        }
    }
}
