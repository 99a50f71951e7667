//! Where a stage's time goes (pure).
//!
//! Owns: the parts of a thread's time ([`Part`]: on a CPU, waiting for a CPU, blocked on its
//! input pipe, its output pipe, a timer, the disk, the network, a child, something else),
//! the record of one thread's sampled wait states ([`Waits`]), turning an interval's CPU
//! times and those samples into a [`Split`], and choosing the thread that speaks for a
//! process ([`lead`]). Must not: read anything: times and states come in as arguments.
//!
//! The kernel counts two of the parts exactly, per thread: time on a CPU and time runnable
//! but waiting for one (`/proc/PID/task/TID/schedstat`). The rest of the interval the thread
//! was blocked; what on is not counted anywhere, so it is split in the proportions of the
//! wait states sampled several times per interval, each sample standing for the time since
//! the one before. A thread sampled only while running, though its CPU times say it also
//! slept, is taken to have slept where it slept last, or, never seen asleep, on something
//! unknown: many short sleeps that fall between samples are typical of a stage taking
//! turns with a neighbour on a pipe, so they are not counted as its own time.

use super::model::{Activity, Part, Split, PARTS};

/// Longest time one wait-state sample stands for, in nanoseconds: after a longer gap (the
/// display loop was held up) the state seen says little about the time before it.
const MAX_WEIGHT_NS: u64 = 100_000_000;

/// The wait states sampled of one thread since its last [`Waits::split`].
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Waits {
    /// Nanoseconds stood for by samples in each blocked part.
    weights: [u64; PARTS],
    /// The blocked part of the latest sample that was blocked.
    last: Option<Part>,
    /// When the thread was last sampled (monotonic nanoseconds).
    sampled_ns: Option<u64>,
}

impl Waits {
    /// Records the state seen at `now_ns`; it stands for the time since the last sample.
    pub(crate) fn sample(&mut self, activity: Activity, now_ns: u64) {
        let weight = self
            .sampled_ns
            .map_or(1, |t| now_ns.saturating_sub(t).clamp(1, MAX_WEIGHT_NS));
        self.sampled_ns = Some(now_ns);
        if let Some(part) = Part::of(activity) {
            self.weights[part.index()] += weight;
            self.last = Some(part);
        }
    }

    /// The thread's time over an interval of `elapsed_ns` in which it ran `run_ns` and
    /// waited `delay_ns` for a CPU: those two as counted, the rest blocked, split as the
    /// samples were. Starts the record of the next interval.
    pub(crate) fn split(&mut self, run_ns: u64, delay_ns: u64, elapsed_ns: u64) -> Split {
        let mut split = Split::default();
        split.add(Part::Busy, run_ns as f64);
        split.add(Part::Starved, delay_ns as f64);
        let blocked = elapsed_ns.saturating_sub(run_ns.saturating_add(delay_ns)) as f64;
        let sampled: u64 = self.weights.iter().sum();
        if sampled > 0 {
            for part in Part::ALL {
                let weight = self.weights[part.index()];
                if weight > 0 {
                    split.add(part, blocked * weight as f64 / sampled as f64);
                }
            }
        } else if blocked > 0.0 {
            split.add(self.last.unwrap_or(Part::Unknown), blocked);
        }
        self.weights = [0; PARTS];
        split
    }
}

/// The thread that speaks for a process, by index in `splits` (each thread's time over the
/// same interval): the one most engaged in the stage's work — running, waiting for a CPU,
/// or blocked on its pipes, a timer or the disk — rather than idling in a helper (rpv's
/// display thread in `poll`, its control thread on its socket). Of equals, the busier,
/// then the first.
pub(crate) fn lead(splits: &[Split]) -> Option<usize> {
    let mut best: Option<(usize, f64, f64)> = None;
    for (i, s) in splits.iter().enumerate() {
        let (engaged, busy) = (s.engaged(), s.get(Part::Busy));
        let better = match best {
            None => true,
            Some((_, e, b)) => engaged > e * 1.01 || (engaged >= e * 0.99 && busy > b),
        };
        if better {
            best = Some((i, engaged, busy));
        }
    }
    best.map(|(i, _, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::model::Sleep;

    const MS: u64 = 1_000_000;

    fn share(split: &Split, part: Part) -> f64 {
        (split.shares().unwrap().get(part) * 1000.0).round() / 1000.0
    }

    #[test]
    fn cpu_times_are_exact_and_the_rest_is_split_by_the_samples() {
        // sha256sum in `yes | head | sha256sum`: caught reading an empty pipe in every
        // sample, yet on a CPU 97 % of the second.
        let mut waits = Waits::default();
        for k in 0..=10 {
            waits.sample(Activity::WaitInput, k * 100 * MS);
        }
        let split = waits.split(970 * MS, 10 * MS, 1000 * MS);
        assert_eq!(share(&split, Part::Busy), 0.97);
        assert_eq!(share(&split, Part::Starved), 0.01);
        assert_eq!(share(&split, Part::Input), 0.02);
        assert!((split.own() - 980.0 * MS as f64).abs() < 1.0);
        // head: on a CPU a quarter of the time, blocked on its output three samples in
        // four and on its input one in four.
        let mut waits = Waits::default();
        for k in 0..=8 {
            let state = if k % 4 == 0 {
                Activity::WaitInput
            } else {
                Activity::WaitOutput
            };
            waits.sample(state, k * 125 * MS);
        }
        let split = waits.split(250 * MS, 50 * MS, 1000 * MS);
        assert_eq!(share(&split, Part::Busy), 0.25);
        assert_eq!(share(&split, Part::Starved), 0.05);
        assert_eq!(share(&split, Part::Output), 0.525);
        assert_eq!(share(&split, Part::Input), 0.175);
    }

    #[test]
    fn samples_stand_for_the_time_since_the_one_before() {
        let mut waits = Waits::default();
        waits.sample(Activity::Running, 0);
        waits.sample(Activity::Sleeping(Sleep::Timer), 75 * MS);
        waits.sample(Activity::WaitOutput, 100 * MS);
        waits.sample(Activity::Running, 150 * MS);
        let split = waits.split(0, 0, 1000 * MS);
        assert_eq!(share(&split, Part::Timer), 0.75);
        assert_eq!(share(&split, Part::Output), 0.25);
        // A long gap counts as at most 100 ms.
        let mut waits = Waits::default();
        waits.sample(Activity::WaitInput, 0);
        waits.sample(Activity::WaitOutput, 50 * MS);
        waits.sample(Activity::WaitInput, 5000 * MS);
        let split = waits.split(0, 0, 5000 * MS);
        assert_eq!(share(&split, Part::Input), 0.667);
    }

    #[test]
    fn a_thread_never_caught_blocked_slept_where_it_slept_last() {
        let mut waits = Waits::default();
        waits.sample(Activity::Sleeping(Sleep::Timer), 0);
        let _ = waits.split(0, 0, 1000 * MS);
        waits.sample(Activity::Running, 1000 * MS);
        let split = waits.split(400 * MS, 0, 1000 * MS);
        assert_eq!(share(&split, Part::Timer), 0.6);
        // Never seen blocked at all: unknown, and not the thread's own time.
        let mut waits = Waits::default();
        let split = waits.split(400 * MS, 100 * MS, 1000 * MS);
        assert_eq!(share(&split, Part::Unknown), 0.5);
        assert_eq!(split.own(), 500.0 * MS as f64);
        // More CPU time than wall time (the reads are not simultaneous): no blocked time.
        let split = Waits::default().split(1010 * MS, 20 * MS, 1000 * MS);
        assert_eq!(split.get(Part::Unknown), 0.0);
        assert_eq!(Split::default().shares(), None);
    }

    #[test]
    fn parts_of_states() {
        use Activity::*;
        assert_eq!(Part::of(Running), None);
        assert_eq!(Part::of(WaitInput), Some(Part::Input));
        assert_eq!(Part::of(WaitOutput), Some(Part::Output));
        assert_eq!(Part::of(Sleeping(Sleep::Timer)), Some(Part::Timer));
        assert_eq!(Part::of(Sleeping(Sleep::Disk)), Some(Part::Disk));
        assert_eq!(Part::of(Sleeping(Sleep::Network)), Some(Part::Network));
        assert_eq!(Part::of(Sleeping(Sleep::Poll)), Some(Part::Other));
        assert_eq!(Part::of(Stopped), Some(Part::Stopped));
        assert_eq!(Part::of(WaitChild), Some(Part::Child));
        assert_eq!(Part::of(Unknown), None);
        let own: Vec<Part> = Part::ALL.into_iter().filter(|p| p.own()).collect();
        assert_eq!(
            own,
            [
                Part::Busy,
                Part::Starved,
                Part::Timer,
                Part::Disk,
                Part::Network,
                Part::Stopped,
                Part::Other
            ]
        );
    }

    fn split(parts: &[(Part, f64)]) -> Split {
        let mut s = Split::default();
        for (p, v) in parts {
            s.add(*p, *v);
        }
        s
    }

    #[test]
    fn the_working_thread_speaks_for_the_process() {
        // rpv: display thread in poll, data thread on its rate limit, control thread on its
        // socket.
        let threads = [
            split(&[(Part::Busy, 1.0), (Part::Other, 99.0)]),
            split(&[(Part::Busy, 2.0), (Part::Timer, 98.0)]),
            split(&[(Part::Network, 100.0)]),
        ];
        assert_eq!(lead(&threads), Some(1));
        // xz -T2: two workers busy, the reader on a lock: the busier worker.
        let threads = [
            split(&[(Part::Busy, 5.0), (Part::Other, 95.0)]),
            split(&[(Part::Busy, 90.0), (Part::Starved, 10.0)]),
            split(&[(Part::Busy, 95.0), (Part::Starved, 5.0)]),
        ];
        assert_eq!(lead(&threads), Some(2));
        // All idle: the first.
        let idle = [
            split(&[(Part::Other, 100.0)]),
            split(&[(Part::Network, 1.0)]),
        ];
        assert_eq!(lead(&idle), Some(0));
        assert_eq!(lead(&[]), None);
    }

    #[test]
    fn splits_add_and_subtract() {
        let mut a = split(&[(Part::Busy, 3.0), (Part::Input, 1.0)]);
        let b = a;
        a.plus(&split(&[(Part::Busy, 1.0), (Part::Timer, 5.0)]));
        let d = a.since(&b);
        assert_eq!(d.get(Part::Busy), 1.0);
        assert_eq!(d.get(Part::Timer), 5.0);
        assert_eq!(d.get(Part::Input), 0.0);
        assert_eq!(d.total(), 6.0);
        assert_eq!(a.largest(&Part::ALL), Some((Part::Timer, 5.0)));
        // Of equals, the first.
        assert_eq!(
            a.largest(&[Part::Input, Part::Busy, Part::Timer]),
            Some((Part::Timer, 5.0))
        );
        assert_eq!(
            b.largest(&[Part::Timer, Part::Output]),
            Some((Part::Timer, 0.0))
        );
        assert_eq!(a.cpu(), 4.0);
    }
}
