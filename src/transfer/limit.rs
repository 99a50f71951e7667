//! The `-L` rate limiter: a token bucket paced on absolute time.
//!
//! Tokens are computed from the elapsed time since the start, never accumulated per wakeup,
//! so oversleeping does not drift: at every moment the amount moved is at most
//! `rate × elapsed`, never ahead of it (so the display's amount and ETA match the limit
//! exactly). The engine waits until a quantum (1/100 s of the rate, at least one unit) is
//! available, so there are about 100 wakeups a second. The bucket
//! keeps at most 1/10 s worth, which bounds what moves at once after the input or the output
//! stalled (pv keeps up to 5 s worth). A wakeup from the limiter's own sleep that comes late
//! (a busy machine gives rpv its CPU late) is different: nothing else held the transfer back,
//! so up to 1 s of lateness is made up rather than lost, and the average rate holds on a
//! loaded machine. Time stopped (Ctrl-Z, or a SIGSTOP from outside) is neither lateness nor a
//! stall: the engine says so ([`Limiter::resumed`]) and the schedule starts again at the
//! resume, with nothing in the bucket, so no burst follows a stop. Pure: callers pass `now`
//! in nanoseconds.

/// Token bucket over units (bytes, or lines in line mode) per second.
#[derive(Debug, Clone)]
pub(crate) struct Limiter {
    rate: f64,
    start_ns: u64,
    /// Units granted so far, including those wasted by the bucket cap.
    spent: f64,
    quantum: f64,
    cap: f64,
    /// What the bucket keeps after the limiter's own sleep (late wakeups are made up).
    late_cap: f64,
    /// The last answer was "wait": the time since then was the limiter's own sleep.
    slept: bool,
    /// What is left of the tokens kept after the limiter's own sleep (drawn down as units
    /// move): time outside the limiter never adds to the bucket beyond this or `cap`.
    carry: f64,
}

impl Limiter {
    /// A limiter for `rate` units per second, starting at `now_ns`.
    pub(crate) fn new(rate: u64, now_ns: u64) -> Limiter {
        let rate = rate as f64;
        let quantum = (rate / 100.0).max(1.0);
        // Nothing is available in advance (pv's first refill is immediate, so pv runs a
        // tenth of a second ahead): the first quantum comes a hundredth of a second in.
        Limiter {
            rate,
            start_ns: now_ns,
            spent: 0.0,
            quantum,
            cap: (rate / 10.0).max(quantum),
            late_cap: rate.max(quantum),
            slept: false,
            carry: 0.0,
        }
    }

    fn tokens(&mut self, now_ns: u64) -> f64 {
        let earned = self.rate * (now_ns.saturating_sub(self.start_ns) as f64 / 1e9);
        let tokens = earned - self.spent;
        // Idle time does not build up a burst; the limiter's own late wakeup is made up.
        let cap = if self.slept {
            self.late_cap
        } else {
            self.cap.max(self.carry)
        };
        let tokens = if tokens > cap {
            self.spent = earned - cap;
            cap
        } else {
            tokens
        };
        if self.slept {
            self.carry = tokens;
        }
        tokens
    }

    /// How many units may move now, up to `want`: either at least `min(want, quantum)`, or
    /// 0 with the nanoseconds to sleep before asking again.
    pub(crate) fn allowance(&mut self, want: u64, now_ns: u64) -> Result<u64, u64> {
        let tokens = self.tokens(now_ns);
        let need = (want as f64).min(self.quantum);
        if tokens >= need.max(1.0) || (tokens >= 1.0 && tokens >= need) {
            self.slept = false;
            return Ok((tokens.floor() as u64).min(want));
        }
        self.slept = true;
        let wait_s = (need.max(1.0) - tokens) / self.rate;
        Err((wait_s * 1e9).ceil().max(1.0) as u64)
    }

    /// The process was stopped (Ctrl-Z, SIGSTOP) since the last answer and runs again at
    /// `now_ns`: the time stopped is not made up, and what the bucket held is dropped, so
    /// from the resume on at most `rate × time since` moves, as after the start.
    pub(crate) fn resumed(&mut self, now_ns: u64) {
        let earned = self.rate * (now_ns.saturating_sub(self.start_ns) as f64 / 1e9);
        self.spent = self.spent.max(earned);
        self.slept = false;
        self.carry = 0.0;
    }

    /// Records that `units` moved.
    pub(crate) fn consume(&mut self, units: u64) {
        self.spent += units as f64;
        self.carry = (self.carry - units as f64).max(0.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEC: u64 = 1_000_000_000;

    /// Drives the limiter like the engine does, with synthetic time, and returns the units
    /// moved by `end_ns` and the largest amount moved within any 100 ms after the first.
    fn simulate(rate: u64, chunk: u64, end_ns: u64) -> (u64, Vec<(u64, u64)>) {
        let mut lim = Limiter::new(rate, 0);
        let mut now = 0;
        let mut moved = 0;
        let mut log = Vec::new();
        while now < end_ns {
            match lim.allowance(chunk, now) {
                Ok(n) => {
                    lim.consume(n);
                    moved += n;
                    log.push((now, moved));
                }
                Err(wait) => now += wait,
            }
        }
        (moved, log)
    }

    #[test]
    fn average_rate_is_exact_over_five_seconds() {
        for rate in [1_000, 1 << 20, 10 << 20, 100 << 20, 1 << 30] {
            let (moved, _) = simulate(rate, 1 << 20, 5 * SEC);
            let target = rate as f64 * 5.0;
            let err = (moved as f64 - target).abs() / target;
            assert!(err < 0.01, "rate {rate}: moved {moved}, target {target}");
        }
    }

    #[test]
    fn never_ahead_of_schedule() {
        for rate in [1, 7, 1000, 10 << 20, 1 << 30] {
            // (Pairs that would take millions of simulated calls are left out.)
            for chunk in [1, 4096, 1 << 20]
                .into_iter()
                .filter(|c| rate / c < 1 << 20)
            {
                let (_, log) = simulate(rate, chunk, 2 * SEC);
                assert!(!log.is_empty(), "rate {rate} chunk {chunk}");
                for (now, moved) in log {
                    let allowed = rate as f64 * now as f64 / 1e9;
                    assert!(
                        moved as f64 <= allowed.floor(),
                        "rate {rate} chunk {chunk}: at {now} ns moved {moved} > {allowed}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_first_quantum_comes_a_hundredth_of_a_second_in() {
        let mut lim = Limiter::new(10 << 20, 0);
        assert_eq!(lim.allowance(1 << 20, 0), Err(SEC / 100));
        assert_eq!(lim.allowance(1 << 20, SEC / 100), Ok((10 << 20) / 100));
    }

    #[test]
    fn idle_time_does_not_build_a_burst() {
        let mut lim = Limiter::new(1000, 0);
        let first = lim.allowance(1000, SEC / 100).unwrap();
        lim.consume(first);
        // Ten seconds idle: only 1/10 s worth (100 units) is available, not 10 000.
        assert_eq!(lim.allowance(1_000_000, 10 * SEC), Ok(100));
    }

    /// 10 MiB/s for 5 s with every wakeup from a wait `late_ns` late: what moved, checked
    /// never to run ahead of the rate.
    fn moved_with_late_wakeups(late_ns: u64) -> u64 {
        let rate = 10 << 20;
        let mut lim = Limiter::new(rate, 0);
        let (mut now, mut moved) = (0, 0);
        while now < 5 * SEC {
            match lim.allowance(1 << 20, now) {
                Ok(n) => {
                    lim.consume(n);
                    moved += n;
                    assert!(moved as f64 <= rate as f64 * now as f64 / 1e9);
                }
                Err(wait) => now += wait + late_ns,
            }
        }
        moved
    }

    #[test]
    fn late_wakeups_lose_nothing() {
        // Every wakeup 5 ms late (a little), or 300 ms late (a busy machine wakes the
        // limiter late after every wait): the average rate still holds within 1 %.
        for late in [5_000_000, 300_000_000] {
            let moved = moved_with_late_wakeups(late);
            let target = f64::from(10u32 << 20) * 5.0;
            assert!(
                (moved as f64 - target).abs() / target < 0.01,
                "{late} ns late: {moved}"
            );
        }
    }

    #[test]
    fn a_stall_outside_the_limiter_still_caps_the_burst() {
        // The output blocked for 2 s after a wait was answered: only 1/10 s worth may go.
        let mut lim = Limiter::new(1000, 0);
        assert!(lim.allowance(1000, 0).is_err());
        let first = lim.allowance(1000, SEC / 100).unwrap();
        lim.consume(first);
        assert_eq!(lim.allowance(1_000_000, 2 * SEC), Ok(100));
        // A late wakeup from the limiter's own sleep is made up, up to 1 s worth.
        let mut lim = Limiter::new(1000, 0);
        let wait = lim.allowance(1000, 0).unwrap_err();
        assert_eq!(lim.allowance(1_000_000, wait + SEC / 2), Ok(510));
        let mut lim = Limiter::new(1000, 0);
        assert!(lim.allowance(1000, 0).is_err());
        assert_eq!(lim.allowance(1_000_000, 10 * SEC), Ok(1000));
        // Stopped (Ctrl-Z, SIGSTOP) during the sleep, resumed at 2 s: nothing is made up,
        // and nothing is kept for a burst either; the schedule starts again at the resume.
        let mut lim = Limiter::new(1000, 0);
        assert!(lim.allowance(1000, 0).is_err());
        lim.resumed(2 * SEC);
        assert_eq!(lim.allowance(1_000_000, 2 * SEC), Err(SEC / 100));
        // (A nanosecond more: the float sums of the schedule round down at the exact time.)
        assert_eq!(lim.allowance(1_000_000, 2 * SEC + SEC / 100 + 1), Ok(10));
    }

    #[test]
    fn after_a_stop_no_window_moves_more_than_the_rate() {
        // 1000 units/s, a stop of 3 s at 1 s (the bucket full of late-wakeup credit then),
        // resumed at 4 s: in the half second after the resume at most 500 units move.
        let mut lim = Limiter::new(1000, 0);
        let (mut now, mut moved) = (0, 0);
        while now < SEC {
            match lim.allowance(1_000_000, now) {
                Ok(n) => {
                    lim.consume(n);
                    moved += n;
                }
                Err(wait) => now += wait,
            }
        }
        let resume = 4 * SEC;
        lim.resumed(resume);
        let (mut now, before) = (resume, moved);
        while now < resume + SEC / 2 {
            match lim.allowance(1_000_000, now) {
                Ok(n) => {
                    lim.consume(n);
                    moved += n;
                }
                Err(wait) => now += wait,
            }
        }
        assert!(moved - before <= 500, "{} units in 0.5 s", moved - before);
        assert!(moved - before >= 480, "the rate holds: {}", moved - before);
    }

    #[test]
    fn slow_rates_wait_for_whole_units() {
        let mut lim = Limiter::new(2, 0);
        let wait = lim.allowance(100, 0).unwrap_err();
        assert_eq!(wait, SEC / 2);
        assert_eq!(lim.allowance(100, wait), Ok(1));
        lim.consume(1);
        let wait = lim.allowance(100, SEC / 2).unwrap_err();
        assert_eq!(wait, SEC / 2);
        assert_eq!(lim.allowance(100, SEC), Ok(1));
    }
}
