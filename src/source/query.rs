//! `-Q PID`: another rpv's progress, asked through its control socket.
//!
//! Owns: the polling of the target (every 100 ms while the display waits, and at each
//! update) and turning its replies into a meter with the target's elapsed time, amount and
//! size. Must not: draw. The run ends when the target stops answering (it finished its
//! display and sent its final state, or it exited).

use super::Source;
use crate::control::client::Client;
use crate::control::{Reply, Request, QUERY_PERIOD};
use crate::meter::{Event, MeterState, Phase, Unit};
use crate::sys;

/// The progress of another rpv.
pub(crate) struct QuerySource {
    client: Option<Client>,
    unit: Unit,
    wait: bool,
    size: u64,
    transferred: u64,
    started_ns: u64,
    asked_ns: u64,
}

impl QuerySource {
    /// Follows the target behind `client`, whose first answer was `first`; `unit` is what
    /// the amounts count, `wait` is `-W` (nothing shown before the first byte).
    pub(crate) fn new(
        client: Client,
        first: (f64, u64, u64),
        unit: Unit,
        wait: bool,
    ) -> QuerySource {
        let (elapsed, transferred, size) = first;
        let now = sys::monotonic_ns();
        QuerySource {
            client: Some(client),
            unit,
            wait,
            size,
            transferred,
            started_ns: start_from(now, elapsed),
            asked_ns: now,
        }
    }

    /// Asks for the progress again (at most every [`QUERY_PERIOD`]); a target that does not
    /// answer has ended.
    fn ask(&mut self, now: u64) {
        if now.saturating_sub(self.asked_ns) < QUERY_PERIOD.as_nanos() as u64 {
            return;
        }
        self.asked_ns = now;
        let reply = self.client.as_mut().and_then(|c| c.ask(&Request::Query));
        match reply {
            Some(Reply::State {
                elapsed,
                transferred,
                ..
            }) => {
                self.transferred = transferred;
                self.started_ns = start_from(now, elapsed);
            }
            _ => self.client = None,
        }
    }
}

/// The monotonic time a clock started that shows `elapsed` seconds at `now`.
fn start_from(now: u64, elapsed: f64) -> u64 {
    now.saturating_sub((elapsed.max(0.0) * 1e9) as u64)
}

impl Source for QuerySource {
    fn watches(&self) -> bool {
        true
    }

    fn sample(&mut self, now_ns: u64, out: &mut Vec<MeterState>) {
        self.ask(now_ns);
        let started = !self.wait || self.transferred > 0;
        out.push(MeterState {
            id: 1,
            unit: self.unit,
            amount: self.transferred,
            moved: self.transferred,
            size: self.size,
            started_ns: started.then_some(self.started_ns),
            phase: if started {
                Phase::Running
            } else {
                Phase::Waiting
            },
            ..MeterState::default()
        });
    }

    fn events(&mut self, _out: &mut Vec<Event>) {}

    fn finished(&mut self) -> bool {
        self.ask(sys::monotonic_ns());
        self.client.is_none()
    }

    fn status(&self) -> u8 {
        0
    }

    fn stop(&mut self) {
        self.client = None;
    }

    fn poll_period_ns(&self) -> Option<u64> {
        Some(QUERY_PERIOD.as_nanos() as u64)
    }
}
