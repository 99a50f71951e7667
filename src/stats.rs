//! Rate, windowed average rate, percentage counter and `--stats` figures.
//!
//! Owns: turning successive (elapsed, transferred) observations into the numbers the display
//! shows. Must not: read clocks or counters itself; the caller passes them in, so every
//! function here is testable with synthetic time.

/// The figures for one display update.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct Rates {
    /// Current rate in units (bytes or lines) per second; at the final update, the
    /// whole-transfer average.
    pub rate: f64,
    /// Windowed average rate (`%a`, ETA); at the final update, the whole-transfer average.
    pub avg_rate: f64,
    /// Percentage: 100 × transferred / size when the size is known (clamped to [0, 100000]);
    /// otherwise pv's bouncing counter (0, 2, 4, … 198, 0 …).
    pub percentage: f64,
    /// Highest measured rate so far (for the `-g` gauge).
    pub max_rate: f64,
}

/// State kept between display updates.
#[derive(Debug, Clone)]
pub(crate) struct RateTracker {
    /// Seconds between samples of the average-rate ring (5 if the window ≥ 20 s, else 1).
    sample_every: f64,
    /// Ring capacity: window / sample_every + 1.
    capacity: usize,
    /// (elapsed, transferred) samples, oldest first.
    samples: std::collections::VecDeque<(f64, u64)>,
    /// The ring was emptied by [`RateTracker::restart_average`] and holds one sample since:
    /// until the next sample, the average is the one since that sample, update by update.
    restarted: bool,
    prev_elapsed: f64,
    prev_transferred: u64,
    carried: u64,
    rate: f64,
    avg_rate: f64,
    percentage: f64,
    max_rate: f64,
    /// --stats accumulators over measurements.
    measured: u64,
    min: f64,
    max: f64,
    sum: f64,
    sum_sq: f64,
}

impl RateTracker {
    /// `window_secs` is `-m` (default 30, at least 1).
    pub(crate) fn new(window_secs: u32) -> Self {
        let window = window_secs.max(1) as usize;
        let (sample_every, capacity) = if window >= 20 {
            (5.0, window / 5 + 1)
        } else {
            (1.0, window + 1)
        };
        RateTracker {
            sample_every,
            capacity,
            samples: std::collections::VecDeque::with_capacity(capacity),
            restarted: false,
            prev_elapsed: 0.0,
            prev_transferred: 0,
            carried: 0,
            rate: 0.0,
            avg_rate: 0.0,
            percentage: 0.0,
            max_rate: 0.0,
            measured: 0,
            min: 0.0,
            max: 0.0,
            sum: 0.0,
            sum_sq: 0.0,
        }
    }

    /// Records one update at `elapsed` seconds with `transferred` units so far; `size` 0 means
    /// unknown. `final_update` replaces rate and average by transferred / max(elapsed, 1e-6).
    pub(crate) fn update(
        &mut self,
        elapsed: f64,
        transferred: u64,
        size: u64,
        final_update: bool,
    ) -> Rates {
        self.measure(elapsed, transferred);
        self.sample(elapsed, transferred);
        if final_update {
            let overall = transferred as f64 / elapsed.max(1e-6);
            self.rate = overall;
            self.avg_rate = overall;
        }
        self.percentage = if size > 0 {
            (100.0 * transferred as f64 / size as f64).clamp(0.0, 100_000.0)
        } else if self.rate > 0.0 {
            let next = self.percentage + 2.0;
            if next > 199.0 {
                0.0
            } else {
                next
            }
        } else {
            self.percentage
        };
        Rates {
            rate: self.rate,
            avg_rate: self.avg_rate,
            percentage: self.percentage,
            max_rate: self.max_rate,
        }
    }

    /// Instantaneous rate since the previous measurement (updates closer than
    /// 10 ms carry their bytes forward).
    fn measure(&mut self, elapsed: f64, transferred: u64) {
        let delta = transferred.saturating_sub(self.prev_transferred);
        self.prev_transferred = transferred;
        let dt = elapsed - self.prev_elapsed;
        if dt <= 0.01 {
            self.carried += delta;
            return;
        }
        self.rate = (delta + self.carried) as f64 / dt;
        self.carried = 0;
        self.prev_elapsed = elapsed;
        self.max_rate = self.max_rate.max(self.rate);
        if self.measured == 0 || self.rate < self.min {
            self.min = self.rate;
        }
        self.max = self.max.max(self.rate);
        self.sum += self.rate;
        self.sum_sq += self.rate * self.rate;
        self.measured += 1;
    }

    /// Windowed average: a ring of samples taken at most every `sample_every` seconds.
    fn sample(&mut self, elapsed: f64, transferred: u64) {
        match self.samples.back() {
            None => {
                self.samples.push_back((elapsed, transferred));
                self.avg_rate = self.rate;
            }
            Some(&(last, _)) if elapsed - last >= self.sample_every => {
                self.restarted = false;
                if self.samples.len() == self.capacity {
                    self.samples.pop_front();
                }
                self.samples.push_back((elapsed, transferred));
                let (t0, x0) = self.samples[0];
                let (t1, x1) = (elapsed, transferred);
                if t1 > t0 {
                    self.avg_rate = x1.saturating_sub(x0) as f64 / (t1 - t0);
                }
            }
            Some(&(t0, x0)) if self.restarted && elapsed > t0 => {
                self.avg_rate = transferred.saturating_sub(x0) as f64 / (elapsed - t0);
            }
            Some(_) => {}
        }
    }

    /// Forgets the windowed average's samples: after a stall, the average (and the ETA
    /// built on it) starts again from the rate now, instead of carrying the stall for a
    /// whole window. The update that saw the data come back measured an interval that was
    /// partly stall (the data may have come back at its very end), so its rate is not held
    /// for the next sample's few seconds: until then the average is the rate since that
    /// update, at every update.
    pub(crate) fn restart_average(&mut self) {
        self.samples.clear();
        self.restarted = true;
    }

    /// Minimum, mean, maximum and mean deviation of the rates measured; None before any.
    pub(crate) fn rate_stats(&self) -> Option<(f64, f64, f64, f64)> {
        if self.measured == 0 {
            return None;
        }
        let n = self.measured as f64;
        let mean = self.sum / n;
        let mdev = (self.sum_sq / n - mean * mean).max(0.0).sqrt();
        Some((self.min, mean, self.max, mdev))
    }

    /// The `--stats` line without its newline, e.g.
    /// `rate min/avg/max/mdev = 1.000/2.000/3.000/0.816 B/s`, or `rate not measured`.
    /// `unit` is the label to print (`B/s`, `b/s`, `/s`); `multiplier` scales the values (8 for -8).
    pub(crate) fn stats_line(&self, unit: &str, multiplier: f64) -> String {
        let Some((min, mean, max, mdev)) = self.rate_stats() else {
            return "rate not measured".to_string();
        };
        format!(
            "rate min/avg/max/mdev = {:.3}/{:.3}/{:.3}/{:.3} {unit}",
            min * multiplier,
            mean * multiplier,
            max * multiplier,
            mdev * multiplier
        )
    }
}

/// Watches a meter for stalls: no progress for a while.
#[derive(Debug, Clone, Default)]
pub(crate) struct StallWatch {
    /// The amount last seen, and when it last changed (elapsed seconds).
    last: Option<(u64, f64)>,
    stalled: bool,
}

/// What [`StallWatch::observe`] saw.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct Stall {
    /// Seconds without progress, once that has lasted at least the threshold.
    pub stalled_for: Option<f64>,
    /// Progress came back after a stall (the average rate should start again).
    pub resumed: bool,
}

impl StallWatch {
    /// Records `moved` (forward progress so far) at `elapsed` seconds; a meter is stalled
    /// once nothing moved for `threshold` seconds (from its start, if nothing moved yet).
    pub(crate) fn observe(&mut self, elapsed: f64, moved: u64, threshold: f64) -> Stall {
        let since = match self.last {
            Some((amount, at)) if amount == moved => at,
            Some(_) => {
                self.last = Some((moved, elapsed));
                let resumed = std::mem::take(&mut self.stalled);
                return Stall {
                    stalled_for: None,
                    resumed,
                };
            }
            None => {
                // Nothing seen yet: the clock of a stall starts at the meter's start.
                self.last = Some((moved, if moved == 0 { 0.0 } else { elapsed }));
                if moved != 0 {
                    return Stall::default();
                }
                0.0
            }
        };
        let idle = elapsed - since;
        self.stalled = idle >= threshold;
        Stall {
            stalled_for: self.stalled.then_some(idle),
            resumed: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stall_is_seen_after_the_threshold_and_grows_then_ends() {
        let mut w = StallWatch::default();
        assert_eq!(w.observe(1.0, 100, 3.0), Stall::default());
        assert_eq!(w.observe(2.0, 200, 3.0), Stall::default());
        // Data stops at 2 s.
        assert_eq!(w.observe(3.0, 200, 3.0).stalled_for, None);
        assert_eq!(w.observe(4.0, 200, 3.0).stalled_for, None);
        assert_eq!(w.observe(5.0, 200, 3.0).stalled_for, Some(3.0));
        assert_eq!(w.observe(7.5, 200, 3.0).stalled_for, Some(5.5));
        // It flows again: no stall, and the average should restart.
        let back = w.observe(8.0, 300, 3.0);
        assert_eq!(
            back,
            Stall {
                stalled_for: None,
                resumed: true
            }
        );
        assert_eq!(w.observe(9.0, 400, 3.0), Stall::default());
    }

    #[test]
    fn nothing_moved_since_the_start_is_a_stall_too() {
        let mut w = StallWatch::default();
        assert_eq!(w.observe(1.0, 0, 3.0).stalled_for, None);
        assert_eq!(w.observe(3.5, 0, 3.0).stalled_for, Some(3.5));
        assert!(w.observe(4.0, 10, 3.0).resumed);
    }

    #[test]
    fn a_short_pause_is_not_a_stall() {
        let mut w = StallWatch::default();
        w.observe(1.0, 100, 3.0);
        assert_eq!(w.observe(3.0, 100, 3.0).stalled_for, None);
        assert_eq!(w.observe(3.5, 150, 3.0), Stall::default());
    }

    #[test]
    fn rate_is_delta_over_time_and_carries_short_intervals() {
        let mut t = RateTracker::new(30);
        assert_eq!(t.update(1.0, 1000, 0, false).rate, 1000.0);
        // 5 ms later: too close, rate kept, bytes carried.
        assert_eq!(t.update(1.005, 1500, 0, false).rate, 1000.0);
        // 1 s after the last measurement: (500 carried + 1500) / 1.0
        assert_eq!(t.update(2.0, 3000, 0, false).rate, 2000.0);
    }

    #[test]
    fn percentage_known_size_and_bouncing_counter() {
        let mut t = RateTracker::new(30);
        assert_eq!(t.update(1.0, 25, 100, false).percentage, 25.0);
        assert_eq!(t.update(2.0, 250, 100, false).percentage, 250.0);
        let mut u = RateTracker::new(30);
        let seq: Vec<f64> = (1..=101)
            .map(|i| u.update(i as f64, i * 10, 0, false).percentage)
            .collect();
        assert_eq!(&seq[..3], &[2.0, 4.0, 6.0]);
        assert_eq!(seq[98], 198.0);
        assert_eq!(seq[99], 0.0);
        // No data moved: the counter does not advance.
        let mut w = RateTracker::new(30);
        assert_eq!(w.update(1.0, 0, 0, false).percentage, 0.0);
    }

    #[test]
    fn average_uses_five_second_samples_with_a_thirty_second_window() {
        let mut t = RateTracker::new(30);
        assert_eq!(t.update(1.0, 100, 0, false).avg_rate, 100.0);
        // Less than 5 s since the first sample: unchanged (sticky).
        assert_eq!(t.update(3.0, 1100, 0, false).avg_rate, 100.0);
        // 5 s later: (6100 - 100) / (6 - 1)
        assert_eq!(t.update(6.0, 6100, 0, false).avg_rate, 1200.0);
    }

    /// Data comes back near the end of an update interval after a stall: the first rate
    /// measured is a small part of the real one, and the average after two more intervals
    /// is the real rate, not that part held until the next sample.
    #[test]
    fn after_a_restart_the_average_follows_the_rate_until_the_next_sample() {
        let mut t = RateTracker::new(30);
        t.update(0.25, 500_000, 0, false);
        t.update(0.5, 1_000_000, 0, false);
        t.update(4.5, 1_000_000, 0, false);
        t.restart_average();
        // 5,000 bytes in the last hundredth of the interval.
        assert_eq!(t.update(4.75, 1_005_000, 0, false).avg_rate, 20_000.0);
        assert_eq!(t.update(5.0, 1_505_000, 0, false).avg_rate, 2_000_000.0);
        assert_eq!(t.update(5.5, 2_505_000, 0, false).avg_rate, 2_000_000.0);
        // The next sample, 5 s after the restart: the ring's average again, and sticky.
        assert_eq!(t.update(9.75, 3_505_000, 0, false).avg_rate, 500_000.0);
        assert_eq!(t.update(10.0, 4_505_000, 0, false).avg_rate, 500_000.0);
    }

    #[test]
    fn short_window_samples_every_second_and_drops_old_samples() {
        let mut t = RateTracker::new(2);
        t.update(1.0, 0, 0, false);
        t.update(2.0, 1000, 0, false);
        t.update(3.0, 2000, 0, false);
        // Ring of 3: (1,0) dropped, average over (2,1000)..(4,10000).
        assert_eq!(t.update(4.0, 10000, 0, false).avg_rate, 4500.0);
    }

    #[test]
    fn final_update_uses_the_whole_run_average() {
        let mut t = RateTracker::new(30);
        t.update(1.0, 5000, 0, false);
        let r = t.update(4.0, 8000, 0, true);
        assert_eq!((r.rate, r.avg_rate), (2000.0, 2000.0));
    }

    #[test]
    fn stats_line_min_avg_max_mdev() {
        let mut t = RateTracker::new(30);
        assert_eq!(t.stats_line("B/s", 1.0), "rate not measured");
        t.update(1.0, 1000, 0, false);
        t.update(2.0, 3000, 0, false);
        t.update(3.0, 6000, 0, false);
        assert_eq!(
            t.stats_line("B/s", 1.0),
            "rate min/avg/max/mdev = 1000.000/2000.000/3000.000/816.497 B/s"
        );
        assert_eq!(
            t.stats_line("b/s", 8.0),
            "rate min/avg/max/mdev = 8000.000/16000.000/24000.000/6531.973 b/s"
        );
    }
}
