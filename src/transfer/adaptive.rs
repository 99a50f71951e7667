//! Adaptive small-chunk switch for pipe input on the splice path.
//!
//! When splices from the input pipe keep moving little (an EWMA of the bytes per call under
//! [`SMALL`]), the producer is the bottleneck and every call hands the next stage a small
//! slot. The engine then reads into its buffer and writes it out (one copy, but a slower loop
//! lets more data gather per call, and the output gets whole pages). It goes back to splice
//! when reads come back nearly full (data piles up), and probes splice again after
//! [`PROBE_READS`] reads. Switches happen only between whole steps, when the read/write
//! buffer is empty, so nothing is lost or duplicated.
//!
//!
//! The second half is [`Pacer`]: a fast producer that writes in small pieces wakes a relay
//! for every write, and on two CPUs the two then take turns: each write hands the CPU to the
//! relay, which moves 1000 bytes and sleeps again (measured: a call every 35 µs, 28 MB/s,
//! from a producer that alone writes 1.5 GB/s). After a call on the pipe input that moved
//! little, came soon after the previous one ([`BUSY_NS`]) and left the pipe nearly empty, the
//! engine waits a moment (at most [`MAX_PAUSE_NS`]) so that the next call moves a batch
//! ([`TARGET`]). A wait that does not gather half the target (a chatty protocol, a producer
//! that is really slow, a pipe full of small slots) stops the waits for [`COOLDOWN`] calls,
//! and calls further apart than [`BUSY_NS`] never wait, so a slow or idle stream is never
//! delayed.
//!
//! Must not: allocate or format per chunk (the trace messages exist only under the test hook).

use std::os::fd::BorrowedFd;
use std::time::Duration;

use super::{Engine, Step};
use crate::sys;

impl Engine<'_> {
    /// One read/write step while coalescing; switches back to splice when due.
    pub(super) fn coalesce_step(&mut self, fd: BorrowedFd<'_>, name: &str) -> Step {
        let before = self.read;
        let step = self.rw_step(fd, name);
        if matches!(step, Step::Continue) && self.pending.0 == self.pending.1 {
            let n = usize::try_from(self.read - before).unwrap_or(usize::MAX);
            if self.adaptive.after_read(n, self.buf.len()) {
                self.trace(|| format!("trace: {name}: Splice again"));
            }
            self.pace_input(fd, n);
        }
        step
    }

    /// Feeds the switch after a splice from the input moved `n` bytes.
    pub(super) fn after_splice(&mut self, fd: BorrowedFd<'_>, name: &str, n: usize) {
        if self.adaptive.after_splice(n) {
            self.trace(|| format!("trace: {name}: coalescing with ReadWrite"));
        }
        self.pace_input(fd, n);
    }

    /// Waits a moment when a fast producer's small pieces left the input pipe nearly empty
    /// (see [`Pacer`]).
    fn pace_input(&mut self, fd: BorrowedFd<'_>, n: usize) {
        if !self.pacer.active() {
            return;
        }
        let queued = || sys::unread_bytes(fd).unwrap_or(usize::MAX);
        let pause = self.pacer.pause_ns(n, sys::monotonic_ns(), queued);
        if pause > 0 {
            if !std::mem::replace(&mut self.pacer.announced, true) {
                self.trace(|| "trace: pacing the input".to_string());
            }
            std::thread::sleep(Duration::from_nanos(pause));
        }
    }
}

/// EWMA of bytes per splice below which the engine coalesces with read/write.
const SMALL: u64 = 32 << 10;
/// Splices seen before the EWMA is trusted.
const WARMUP: u32 = 32;
/// Reads in coalescing mode before splice is tried again.
const PROBE_READS: u32 = 4096;

/// Per-input state of the switch.
#[derive(Debug, Default)]
pub(super) struct Adaptive {
    /// The input is a pipe and the splice path is in use: the switch may act.
    enabled: bool,
    /// Reading and writing through the buffer right now.
    pub(super) coalescing: bool,
    /// EWMA of bytes per call, times 8.
    ewma8: u64,
    /// Calls since the last switch.
    calls: u32,
    /// Test hook (`RPV_TEST_ADAPT=N`): switch after every N calls in each mode.
    every: Option<u32>,
}

impl Adaptive {
    /// Starts an input: the switch acts only on a pipe input.
    pub(super) fn reset(&mut self, pipe_input: bool, every: Option<u32>) {
        *self = Adaptive {
            enabled: pipe_input,
            every,
            ..Adaptive::default()
        };
    }

    fn update(&mut self, n: usize) {
        self.calls = self.calls.saturating_add(1);
        self.ewma8 = self.ewma8 - self.ewma8 / 8 + n as u64;
    }

    fn switch(&mut self, coalescing: bool) -> bool {
        self.coalescing = coalescing;
        self.calls = 0;
        true
    }

    /// After a splice moved `n` bytes; true when the engine switches to read/write.
    pub(super) fn after_splice(&mut self, n: usize) -> bool {
        if !self.enabled {
            return false;
        }
        self.update(n);
        let small = match self.every {
            Some(every) => self.calls >= every,
            None => self.calls >= WARMUP && self.ewma8 / 8 < SMALL,
        };
        small && self.switch(true)
    }

    /// After a read/write step read `n` bytes into a buffer of `cap`; true when the engine
    /// switches back to splice (only call with the buffer drained).
    pub(super) fn after_read(&mut self, n: usize, cap: usize) -> bool {
        self.update(n);
        let back = match self.every {
            Some(every) => self.calls >= every,
            None => {
                self.calls >= PROBE_READS
                    || (self.calls >= WARMUP && self.ewma8 / 8 >= (cap as u64) / 4 * 3)
            }
        };
        if back {
            // Start the splice side from a neutral estimate.
            self.ewma8 = SMALL * 8;
        }
        back && self.switch(false)
    }
}

/// What one call on a trickling pipe should move (at most half the input pipe).
const TARGET: u64 = 128 << 10;
/// Smaller targets (a small pipe that could not be enlarged) are not worth waiting for.
const MIN_TARGET: u64 = 16 << 10;
/// The longest wait between two calls.
const MAX_PAUSE_NS: u64 = 250_000;
/// Shorter waits are not worth a timer.
const MIN_PAUSE_NS: u64 = 20_000;
/// Calls further apart than this (fewer than 10,000 a second) never wait.
const BUSY_NS: u64 = 100_000;
/// Waits in a row that did not gather half the target before the waits stop for a while
/// (something other than time limits the pipe: its slots, or a producer that waits for
/// something else, such as a reply).
const STRIKES: u32 = 4;
/// Calls without waiting after [`STRIKES`] such waits.
const COOLDOWN: u32 = 1024;

/// Waits between calls on a pipe input fed in small pieces at a high rate.
#[derive(Debug, Default)]
pub(super) struct Pacer {
    /// Bytes one call should move; 0 disables the waits.
    target: u64,
    /// When the previous call returned (0: no call yet on this input).
    last_ns: u64,
    /// The wait after the previous call (0: none).
    waited_ns: u64,
    /// Waits in a row that did not pay.
    strikes: u32,
    /// Calls left without waits.
    cooldown: u32,
    /// Test hook: wait this long after every call that moved data.
    forced_ns: Option<u64>,
    /// The first wait on this input was reported (test trace).
    pub(super) announced: bool,
}

impl Pacer {
    /// Starts a new input: a pipe of `capacity` bytes, or 0 (never wait). `forced_ns` is
    /// the `RPV_TEST_PACE` hook.
    pub(super) fn reset(&mut self, capacity: usize, forced_ns: Option<u64>) {
        let target = TARGET.min(capacity as u64 / 2);
        *self = Pacer {
            target: if target >= MIN_TARGET { target } else { 0 },
            forced_ns: forced_ns.filter(|_| capacity > 0),
            ..Pacer::default()
        };
    }

    /// False for non-pipe inputs (and pipes too small to gather a batch): never waits.
    pub(super) fn active(&self) -> bool {
        self.target > 0 || self.forced_ns.is_some()
    }

    /// After a call moved `n` bytes, returning at `now_ns`: how long to wait before the next
    /// call (0: go on). `queued` tells how much the call left in the pipe; it is asked only
    /// when a wait is in question (a full pipe means the output, not the producer, set `n`).
    pub(super) fn pause_ns(
        &mut self,
        n: usize,
        now_ns: u64,
        queued: impl FnOnce() -> usize,
    ) -> u64 {
        if let Some(ns) = self.forced_ns {
            return if n > 0 { ns } else { 0 };
        }
        let last = std::mem::replace(&mut self.last_ns, now_ns);
        let n = n as u64;
        let target = self.target;
        let waited = std::mem::take(&mut self.waited_ns);
        if waited > 0 {
            self.strikes = if n < target / 2 { self.strikes + 1 } else { 0 };
            if self.strikes >= STRIKES {
                self.strikes = 0;
                self.cooldown = COOLDOWN;
            }
        }
        if self.cooldown > 0 {
            self.cooldown -= 1;
            return 0;
        }
        let dt = now_ns.saturating_sub(last);
        if last == 0 || n == 0 || n >= target || dt == 0 {
            return 0;
        }
        // Not counting the wait: the call returned at once or the producer was quick.
        if dt.saturating_sub(waited) > BUSY_NS {
            return 0;
        }
        let pause = (dt.saturating_mul(target - n) / n).min(MAX_PAUSE_NS);
        if pause < MIN_PAUSE_NS || queued() as u64 >= n {
            return 0;
        }
        self.waited_ns = pause;
        pause
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: u64 = 1_000;

    fn pacer(capacity: usize) -> Pacer {
        let mut p = Pacer::default();
        p.reset(capacity, None);
        p
    }

    #[test]
    fn pacer_waits_only_for_fast_small_pieces_on_an_emptied_pipe() {
        let mut p = pacer(1 << 20);
        // The first call of an input has no interval: no wait.
        assert_eq!(p.pause_ns(4000, 1_000 * US, || 0), 0);
        // 4000 bytes in 4 µs (1 GB/s), pipe left empty: wait long enough for about TARGET
        // bytes at that rate.
        let pause = p.pause_ns(4000, 1_004 * US, || 0);
        assert_eq!(pause, 4 * US * (TARGET - 4000) / 4000);
        // The wait paid off (TARGET gathered in 128 µs); the next call comes 101 µs later:
        // the producer is slow (under 10,000 calls a second), never wait.
        assert_eq!(p.pause_ns(TARGET as usize, 1_132 * US, || 0), 0);
        assert_eq!(p.pause_ns(4000, 1_233 * US, || 0), 0);
        // 4000 bytes 100 µs after the previous return: still busy, wait (capped).
        assert_eq!(p.pause_ns(4000, 1_333 * US, || 0), MAX_PAUSE_NS);
        // 4000 bytes gathered during that wait, returned 50 µs after it: busy, not counting
        // the wait; then 4000 bytes 101 µs after a return without a wait: not busy.
        let pause = p.pause_ns(4000, 1_633 * US, || 0);
        assert_eq!(pause, MAX_PAUSE_NS);
        assert_eq!(p.pause_ns(4000, 1_633 * US + pause + 101 * US, || 0), 0);
        let mut p = pacer(1 << 20);
        p.pause_ns(1, 1_000 * US, || 0);
        // Soon, but the pipe still holds more than was moved: the output limited the call.
        assert_eq!(p.pause_ns(4000, 1_004 * US, || 1 << 20), 0);
        // A big call: no wait, and `queued` is not even asked.
        assert_eq!(p.pause_ns(1 << 20, 1_008 * US, || unreachable!()), 0);
        // 1000 bytes 35 µs after the previous call (a producer and rpv taking turns on the
        // CPUs): the wait is capped at MAX_PAUSE_NS.
        assert_eq!(p.pause_ns(1000, 1_043 * US, || 0), MAX_PAUSE_NS);
    }

    #[test]
    fn pacer_skips_tiny_waits_and_restarts_per_input() {
        let mut p = pacer(1 << 20);
        p.pause_ns(1, 1_000 * US, || 0);
        // 120 KiB in 50 µs: the wait to reach TARGET would be under MIN_PAUSE_NS.
        assert_eq!(p.pause_ns(120 << 10, 1_050 * US, || 0), 0);
        p.reset(1 << 20, None);
        assert_eq!(p.pause_ns(4000, 1_054 * US, || 0), 0);
        // The interval runs from the previous return, so it includes any wait: 64 KiB
        // gathered in 65 µs is about 1 GB/s.
        let pause = p.pause_ns(64 << 10, 1_119 * US, || 0);
        assert_eq!(pause, 65 * US * (TARGET - (64 << 10)) / (64 << 10));
    }

    #[test]
    fn pacer_target_fits_the_pipe_and_backs_off_when_waits_do_not_pay() {
        // A 64 KiB pipe (not enlarged): aim for 32 KiB; a full 64000-byte call never waits;
        // a small one soon after does.
        let mut p = pacer(64 << 10);
        p.pause_ns(1, 1_000 * US, || 0);
        assert_eq!(p.pause_ns(64000, 1_050 * US, || 0), 0);
        let mut pause = p.pause_ns(4000, 1_054 * US, || 0);
        assert_eq!(pause, 4 * US * ((32 << 10) - 4000) / 4000);
        // Waits that gather less than half the target: after STRIKES of them in a row (one
        // that paid in between starts the count again), no waits for COOLDOWN calls.
        let mut now = 1_054 * US;
        for gathered in [8000, 8000, 8000, 20000, 8000, 8000, 8000] {
            now += pause + US;
            pause = p.pause_ns(gathered, now, || 0);
            assert!(pause > 0, "{gathered}");
        }
        now += pause + US;
        assert_eq!(p.pause_ns(8000, now, || 0), 0);
        for _ in 1..COOLDOWN {
            now += 4 * US;
            assert_eq!(p.pause_ns(4000, now, || 0), 0);
        }
        now += 4 * US;
        assert!(p.pause_ns(4000, now, || 0) > 0);
        // Pipes too small to gather MIN_TARGET, and non-pipes (0), never wait.
        for capacity in [0, 16 << 10] {
            let mut p = pacer(capacity);
            p.pause_ns(1, 1_000 * US, || 0);
            assert_eq!(p.pause_ns(200, 1_001 * US, || 0), 0);
        }
        // The test hook waits after every call that moved data, on pipes only.
        let mut p = Pacer::default();
        p.reset(1 << 20, Some(7));
        assert_eq!(
            (p.pause_ns(1 << 20, 1, || 1 << 20), p.pause_ns(0, 2, || 0)),
            (7, 0)
        );
        p.reset(0, Some(7));
        assert_eq!(p.pause_ns(1, 1, || 0), 0);
    }

    #[test]
    fn small_splices_switch_to_coalescing_after_warmup() {
        let mut a = Adaptive::default();
        a.reset(true, None);
        for _ in 0..WARMUP - 1 {
            assert!(!a.after_splice(1000));
        }
        assert!(a.after_splice(1000));
        assert!(a.coalescing);
    }

    #[test]
    fn big_splices_and_non_pipes_never_switch() {
        let mut a = Adaptive::default();
        a.reset(true, None);
        for _ in 0..1000 {
            assert!(!a.after_splice(1 << 20));
        }
        a.reset(false, None);
        for _ in 0..1000 {
            assert!(!a.after_splice(1));
        }
    }

    #[test]
    fn full_reads_or_the_probe_switch_back() {
        let mut a = Adaptive::default();
        a.reset(true, Some(1));
        assert!(a.after_splice(1));
        a.every = None;
        let mut n = 0;
        while !a.after_read(256 << 10, 256 << 10) {
            n += 1;
        }
        assert!(n < WARMUP && !a.coalescing);
        a.coalescing = true;
        a.calls = 0;
        let mut n = 0;
        while !a.after_read(100, 256 << 10) {
            n += 1;
        }
        assert_eq!(n + 1, PROBE_READS);
    }

    #[test]
    fn test_hook_alternates_every_n_calls() {
        let mut a = Adaptive::default();
        a.reset(true, Some(2));
        assert!(!a.after_splice(5));
        assert!(a.after_splice(5));
        assert!(!a.after_read(5, 10));
        assert!(a.after_read(5, 10));
        assert!(!a.coalescing);
    }
}
