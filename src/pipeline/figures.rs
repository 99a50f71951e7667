//! Byte figures a stage cannot count itself, from its neighbours (pure).
//!
//! Owns: deciding which sides of which stages undercount, and what flows through each pipe.
//! Must not: read anything.
//!
//! `/proc/PID/io` counts read- and write-family calls only: a stage that moves data with
//! `splice` (pv, an rpv that does not answer, another relay) counts little or nothing,
//! though every byte went through it. Both ends of a pipe move the same bytes, so a side
//! that undercounts takes the figure of the other end of its pipe. A side undercounts when
//! it moves less than 1/64 of what the other end moves; a stage between two pipes that
//! moves less than half of what the stages before it write and the stages after it read
//! is a relay that undercounts both sides (pv with a rate limit reads a little with
//! read(2) and splices the rest). A writer that counts less than half of what the reader
//! of its pipe read undercounts that side (nothing can be read that was not written). A stage may count more than its pipe carries (`tee`
//! writes a file too, `sort` its temporary files): the watcher then leaves that side
//! unknown (it has seen the stage with files open on that side), and it takes the other
//! end's figure like a side that undercounts. A run of relays carries the same
//! bytes from one end to the other. A side whose figure is unknown (another user's
//! process) is filled in the same way.

/// Below this rate (bytes per second) nothing is decided: too little moves to tell.
const MIN_RATE: f64 = 65536.0;
/// A side moving less than this fraction of the other end of its pipe does not count.
const NOT_COUNTING: f64 = 1.0 / 64.0;
/// A stage between two pipes moving less than this fraction on both sides is a relay.
const RELAY: f64 = 0.5;

/// A figure of one side of a stage: a rate over the window, and the bytes moved in the
/// last sample (added up by the caller, so totals never go back when a side starts or
/// stops being counted by its own count).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Side {
    /// Bytes per second.
    pub rate: Option<f64>,
    /// Bytes.
    pub moved: Option<u64>,
}

/// One stage as counted by itself.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Counted {
    /// What it read.
    pub input: Side,
    /// What it wrote.
    pub output: Side,
    /// Still running (an ended stage keeps its final figures and gives none).
    pub live: bool,
    /// Its output pipe is the next stage's input pipe.
    pub linked: bool,
}

/// True if `own` is far below `other` (or unknown while `other` is known).
fn below(own: Option<f64>, other: Option<f64>, fraction: f64) -> bool {
    match (own, other) {
        (_, None) => false,
        (None, Some(_)) => true,
        (Some(o), Some(n)) => n > MIN_RATE && o < n * fraction,
    }
}

/// Replaces the figures of the sides that undercount with what flows through their pipes.
pub(crate) fn derive(stages: &mut [Counted]) {
    let n = stages.len();
    // The other end of each side's pipe, if it is a live stage.
    let up = |i: usize| (i > 0 && stages[i - 1].linked && stages[i - 1].live).then(|| i - 1);
    let down = |i: usize| (stages[i].linked && i + 1 < n && stages[i + 1].live).then_some(i + 1);
    // The most any stage upstream wrote (downstream read) along the linked run: a relay
    // next to another relay compares with the run's ends.
    let max = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, y) => x.or(y),
    };
    let mut wrote_before = vec![None; n];
    for i in 1..n {
        if let Some(u) = up(i) {
            wrote_before[i] = max(wrote_before[u], stages[u].output.rate);
        }
    }
    let mut read_after = vec![None; n];
    for i in (0..n.saturating_sub(1)).rev() {
        if let Some(d) = down(i) {
            read_after[i] = max(read_after[d], stages[d].input.rate);
        }
    }
    let mut low_in = vec![false; n];
    let mut low_out = vec![false; n];
    let mut relay = vec![false; n];
    for i in (0..n).filter(|&i| stages[i].live) {
        let s = stages[i];
        let upstream = up(i).and_then(|u| stages[u].output.rate);
        let downstream = down(i).and_then(|d| stages[d].input.rate);
        relay[i] = up(i).is_some()
            && down(i).is_some()
            && below(s.input.rate, wrote_before[i], RELAY)
            && below(s.output.rate, read_after[i], RELAY);
        low_in[i] = relay[i] || below(s.input.rate, upstream, NOT_COUNTING);
        // A reader cannot take more from a pipe than its writer put in: a writer counting
        // less than half of what its reader read counts only part of its writes (pv
        // reading a file with read(2) and splicing part of it into the pipe).
        low_out[i] = relay[i] || below(s.output.rate, downstream, RELAY);
    }
    // What flows through the pipe after each stage: the reader's count, else the
    // writer's, when that side counts.
    let mut flow: Vec<Option<Side>> = (0..n)
        .map(|i| {
            let d = down(i)?;
            if !low_in[d] {
                Some(stages[d].input)
            } else if !low_out[i] {
                Some(stages[i].output)
            } else {
                None
            }
        })
        .collect();
    // Through a run of relays, from whichever end is known.
    for _ in 0..n {
        for i in (0..n).filter(|&i| relay[i]) {
            let (before, after) = (i - 1, i);
            match (flow[before], flow[after]) {
                (Some(f), None) => flow[after] = Some(f),
                (None, Some(f)) => flow[before] = Some(f),
                _ => {}
            }
        }
    }
    let ups: Vec<Option<usize>> = (0..n).map(up).collect();
    for i in 0..n {
        if low_in[i] {
            if let Some(f) = ups[i].and_then(|u| flow[u]) {
                stages[i].input = f;
            }
        }
        if low_out[i] {
            if let Some(f) = flow[i] {
                stages[i].output = f;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: f64 = 1e6;

    fn side(rate: f64, moved: u64) -> Side {
        Side {
            rate: Some(rate),
            moved: Some(moved),
        }
    }

    fn stage(input: Option<Side>, output: Option<Side>) -> Counted {
        Counted {
            input: input.unwrap_or_default(),
            output: output.unwrap_or_default(),
            live: true,
            linked: true,
        }
    }

    fn rates(stages: &[Counted]) -> Vec<(Option<f64>, Option<f64>)> {
        stages
            .iter()
            .map(|s| (s.input.rate, s.output.rate))
            .collect()
    }

    #[test]
    fn a_relay_that_counts_a_tenth_takes_its_neighbours_figures() {
        // cat | pv -qL 10M | gzip -1: pv reads a little with read(2), splices the rest.
        let mut stages = [
            stage(Some(side(0.0, 0)), Some(side(10.0 * M, 100_000_000))),
            stage(Some(side(M, 10_000_000)), Some(side(0.9 * M, 9_000_000))),
            stage(
                Some(side(10.0 * M, 99_000_000)),
                Some(side(3.0 * M, 30_000_000)),
            ),
        ];
        stages[2].linked = false;
        derive(&mut stages);
        assert_eq!(stages[1].input, side(10.0 * M, 100_000_000));
        assert_eq!(stages[1].output, side(10.0 * M, 99_000_000));
        // The others keep their own.
        assert_eq!(stages[0].output, side(10.0 * M, 100_000_000));
        assert_eq!(stages[2].output, side(3.0 * M, 30_000_000));
    }

    #[test]
    fn a_run_of_relays_carries_the_same_bytes() {
        // cat | pv | pv | cat: both pvs splice. (The pipe between them carries what one
        // of the ends counts.)
        let mut stages = [
            stage(None, Some(side(50.0 * M, 500))),
            stage(Some(side(0.0, 0)), Some(side(0.0, 0))),
            stage(Some(side(0.0, 0)), Some(side(0.0, 0))),
            stage(Some(side(49.0 * M, 490)), Some(side(49.0 * M, 490))),
        ];
        stages[3].linked = false;
        derive(&mut stages);
        assert_eq!(
            rates(&stages),
            [
                (None, Some(50.0 * M)),
                (Some(50.0 * M), Some(50.0 * M)),
                (Some(50.0 * M), Some(49.0 * M)),
                (Some(49.0 * M), Some(49.0 * M)),
            ]
        );
    }

    #[test]
    fn one_side_that_does_not_count_at_the_ends() {
        // pv file | gzip: pv splices its file into the pipe, and counts nothing.
        let mut stages = [
            stage(Some(side(100.0 * M, 1000)), Some(side(0.0, 0))),
            stage(Some(side(100.0 * M, 1000)), Some(side(30.0 * M, 300))),
        ];
        stages[1].linked = false;
        derive(&mut stages);
        assert_eq!(stages[0].output, side(100.0 * M, 1000));
        // pv -L 4M file | sha256sum: pv writes part with write(2), splices the rest.
        let mut stages = [
            stage(Some(side(4.0 * M, 40)), Some(side(1.3 * M, 13))),
            stage(Some(side(4.0 * M, 40)), Some(side(0.0, 0))),
        ];
        stages[1].linked = false;
        derive(&mut stages);
        assert_eq!(stages[0].output, side(4.0 * M, 40));
        // Another user's stage: nothing of its own.
        let mut stages = [
            stage(None, Some(side(5.0 * M, 50))),
            stage(None, None),
            stage(Some(side(5.0 * M, 50)), None),
        ];
        stages[2].linked = false;
        derive(&mut stages);
        assert_eq!(
            rates(&stages)[1],
            (Some(5.0 * M), Some(5.0 * M)),
            "{stages:?}"
        );
    }

    #[test]
    fn stages_that_change_the_volume_or_count_more_keep_their_own() {
        // cat | gzip -9 | cat on zeros: gzip writes a thousandth of what it reads.
        let mut stages = [
            stage(None, Some(side(100.0 * M, 0))),
            stage(Some(side(100.0 * M, 0)), Some(side(0.1 * M, 0))),
            stage(Some(side(0.1 * M, 0)), Some(side(0.1 * M, 0))),
        ];
        stages[2].linked = false;
        let before = stages;
        derive(&mut stages);
        assert_eq!(stages, before);
        // cat | tee copy | cat: tee writes twice what the pipe carries.
        let mut stages = [
            stage(None, Some(side(10.0 * M, 0))),
            stage(Some(side(10.0 * M, 0)), Some(side(20.0 * M, 0))),
            stage(Some(side(10.0 * M, 0)), None),
        ];
        stages[2].linked = false;
        let before = stages;
        derive(&mut stages);
        assert_eq!(stages, before);
        // Too little moves to tell.
        let mut stages = [
            stage(None, Some(side(1000.0, 0))),
            stage(Some(side(0.0, 0)), None),
        ];
        stages[1].linked = false;
        let before = stages;
        derive(&mut stages);
        assert_eq!(stages, before);
    }

    #[test]
    fn ended_stages_give_and_take_nothing() {
        let mut stages = [
            stage(None, Some(side(10.0 * M, 100))),
            stage(Some(side(0.0, 0)), None),
        ];
        stages[0].live = false;
        stages[1].linked = false;
        let before = stages;
        derive(&mut stages);
        assert_eq!(stages, before);
    }
}
