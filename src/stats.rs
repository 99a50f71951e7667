//! Rate, windowed average rate, percentage counter and `--stats` figures (spec 2.9, 2.11).
//!
//! Owns: turning successive (elapsed, transferred) observations into the numbers the display
//! shows. Must not: read clocks or counters itself; the caller passes them in, so every
//! function here is testable with synthetic time.

/// The figures for one display update.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Rates {
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

/// State kept between display updates (spec 2.9).
#[derive(Debug, Clone)]
pub struct RateTracker {
    _todo: (),
}

impl RateTracker {
    /// `window_secs` is `-m` (default 30, at least 1).
    pub fn new(window_secs: u32) -> Self {
        todo!("{window_secs}")
    }

    /// Records one update at `elapsed` seconds with `transferred` units so far; `size` 0 means
    /// unknown. `final_update` replaces rate and average by transferred / max(elapsed, 1e-6).
    pub fn update(&mut self, elapsed: f64, transferred: u64, size: u64, final_update: bool) -> Rates {
        todo!("{elapsed}{transferred}{size}{final_update}")
    }

    /// The `--stats` line without its newline (spec 2.11), e.g.
    /// `rate min/avg/max/mdev = 1.000/2.000/3.000/0.816 B/s`, or `rate not measured`.
    /// `unit` is the label to print (`B/s`, `b/s`, `/s`); `multiplier` scales the values (8 for -8).
    pub fn stats_line(&self, unit: &str, multiplier: f64) -> String {
        todo!("{unit}{multiplier}")
    }
}
