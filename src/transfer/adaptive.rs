//! Adaptive small-chunk switch for pipe input on the splice path (research §2.4).
//!
//! When splices from the input pipe keep moving little (an EWMA of the bytes per call under
//! [`SMALL`]), the producer is the bottleneck and every call hands the next stage a small
//! slot. The engine then reads into its buffer and writes it out (one copy, but a slower loop
//! lets more data gather per call, and the output gets whole pages). It goes back to splice
//! when reads come back nearly full (data piles up), and probes splice again after
//! [`PROBE_READS`] reads. Switches happen only between whole steps, when the read/write
//! buffer is empty, so nothing is lost or duplicated.
//!
//! Must not: allocate or format per chunk (the trace messages exist only under the test hook).

use std::os::fd::BorrowedFd;

use super::{Engine, Step};

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
        }
        step
    }

    /// Feeds the switch after a splice from the input moved `n` bytes.
    pub(super) fn after_splice(&mut self, name: &str, n: usize) {
        if self.adaptive.after_splice(n) {
            self.trace(|| format!("trace: {name}: coalescing with ReadWrite"));
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

#[cfg(test)]
mod tests {
    use super::*;

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
