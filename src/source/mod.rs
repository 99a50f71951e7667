//! Sources of progress: everything that produces [`MeterState`]s and [`Event`]s for the
//! display loop.
//!
//! Owns: the [`Source`] trait and its implementations — [`engine::EngineSource`] (a local
//! transfer: the engine's counters and events), [`watch::WatchSource`] (`-d`: descriptors of
//! other processes, from `/proc`), [`query::QuerySource`] (`-Q`: another rpv's progress
//! through its control socket), [`pipeline::PipelineSource`] (`--pipeline`: every stage
//! of a shell pipeline) and [`top::TopSource`] (`--top`: every data flow rpv may see, a
//! meter per flow). Must not: draw, print or know which sinks exist. A new kind of progress
//! is a new `Source`; nothing else changes.

pub(crate) mod engine;
pub(crate) mod pipeline;
pub(crate) mod query;
pub(crate) mod top;
pub(crate) mod watch;

use crate::meter::{Blocked, Event, MeterState, Request};

/// A producer of progress, polled by the display loop on its own thread.
pub(crate) trait Source {
    /// Appends the current state of this source's meters to `out` (`now_ns`: monotonic).
    fn sample(&mut self, now_ns: u64, out: &mut Vec<MeterState>);

    /// Moves the events that happened since the last call into `out`.
    fn events(&mut self, out: &mut Vec<Event>);

    /// True when nothing more will happen: the display loop ends once every source is
    /// finished.
    fn finished(&mut self) -> bool;

    /// Exit-status bits so far.
    fn status(&self) -> u8;

    /// The run must end without a final update (a write error).
    fn aborted(&self) -> bool {
        false
    }

    /// The user interrupted: stop as soon as possible. Called again (with a short wait in
    /// between) until [`Source::stopped`] says so, or a deadline passed.
    fn stop(&mut self) {}

    /// After [`Source::stop`]: nothing is in flight any more, so the figures are final (a
    /// transfer's data thread has counted its last call).
    fn stopped(&self) -> bool {
        true
    }

    /// Which side a transfer that stopped moving waits on, if the source can tell (asked
    /// once, when `--stall-timeout` ends the run).
    fn blocked(&self) -> Option<Blocked> {
        None
    }

    /// `-R`: a new rate limit and/or buffer size.
    fn retune(&mut self, _rate_limit: Option<u64>, _buffer_size: Option<u64>) {}

    /// What a sink asked (`--top`'s keys: quit, leave a process out).
    fn request(&mut self, _request: Request) {}

    /// How often the display loop should call [`Source::tick`] and [`Source::finished`]
    /// (nanoseconds) while it waits for its next update; `None` means only at updates and
    /// wake-ups.
    fn poll_period_ns(&self) -> Option<u64> {
        None
    }

    /// Called by the display loop at every wake-up between updates (at least every
    /// [`Source::poll_period_ns`]), with the time: for sources that sample something
    /// several times per interval (`--pipeline`'s wait states).
    fn tick(&mut self, _now_ns: u64) {}

    /// Whether the run ends with a last, final update of the display (transfers: yes; `-d`
    /// leaves its last screen as it is).
    fn final_update(&self) -> bool {
        true
    }

    /// The run is over: events that sum it up (after the final update).
    fn end(&mut self, _out: &mut Vec<Event>) {}

    /// A watch: it moves no data of its own (`-d`, `-Q`, `--pipeline`, `--top`), so its
    /// display is all it is for, and a run of watches alone ends once nobody reads that
    /// display any more. A transfer goes on without its display.
    fn watches(&self) -> bool {
        false
    }
}
