//! `--top`: every data flow rpv may see, one meter each.
//!
//! Owns: running the flow [`Scanner`] at each update (and once when the run starts, so
//! the first update already compares two looks), turning each flow into a meter (its
//! amount, forward progress and size, so rates, ETA and stalls are the display's usual
//! ones; what the flow is rides along in [`MeterState::flow`]), sampling the pipelines'
//! wait states between updates, telling the sinks which processes rpv may not read (an
//! [`Event::Unreadable`] after each look), and what the view asks through the display
//! loop ([`Request`]: quit; leave out the process of the view Enter opened). The run lasts
//! until the view quits or a signal ends it; with `--once`, until the first update (one
//! interval after the first look, so it has rates).
//! Must not: draw, or know the sinks.

use super::Source;
use crate::meter::{Event, Label, MeterState, Phase, Request, Role};
use crate::top::scan::Scanner;
use crate::top::Flow;

/// `--top`.
pub(crate) struct TopSource {
    scanner: Scanner,
    flows: Vec<Flow>,
    /// `--once`: the run ends after the first update.
    once: bool,
    /// An update has sampled the flows.
    sampled: bool,
    /// The view asked to quit.
    quit: bool,
    /// The process of the view Enter opened: not a flow.
    excluded: Option<u32>,
    /// The processes rpv may not read changed at the last look: an event to pass on.
    unreadable: Option<crate::top::Hidden>,
}

impl TopSource {
    /// Looks at every process once (so the first update sees what moved since);
    /// `interval` is `-i` in seconds; with `root` (`--top=PID`), only that process and its
    /// descendants, until it has ended; `once`: finished after the first update.
    pub(crate) fn new(interval: f64, root: Option<u32>, once: bool) -> TopSource {
        let mut scanner = Scanner::new(interval);
        scanner.only(root);
        scanner.scan(crate::sys::monotonic_ns());
        let unreadable = Some(scanner.hidden());
        TopSource {
            scanner,
            flows: Vec::new(),
            once,
            sampled: false,
            quit: false,
            excluded: None,
            unreadable,
        }
    }
}

/// The meter of one flow.
pub(crate) fn meter(flow: &Flow, now_ns: u64) -> MeterState {
    MeterState {
        id: flow.id,
        role: Role::Flow,
        label: Label::Text(flow.view.name()),
        unit: flow.unit,
        amount: flow.amount,
        moved: flow.moved,
        size: flow.size,
        started_ns: Some(flow.since_ns),
        ended_ns: flow.ended.then_some(now_ns),
        phase: if flow.ended {
            Phase::Ended
        } else {
            Phase::Running
        },
        subject: crate::meter::Subject::Flow(Box::new(flow.view.clone())),
        ..MeterState::default()
    }
}

impl Source for TopSource {
    fn watches(&self) -> bool {
        true
    }

    fn sample(&mut self, now_ns: u64, out: &mut Vec<MeterState>) {
        self.scanner.exclude(self.excluded);
        self.scanner.scan(now_ns);
        self.unreadable = Some(self.scanner.hidden());
        self.flows.clear();
        self.scanner.flows(&mut self.flows);
        out.extend(self.flows.iter().map(|f| meter(f, now_ns)));
        self.sampled = true;
    }

    fn events(&mut self, out: &mut Vec<Event>) {
        out.extend(self.unreadable.take().map(Event::Unreadable));
    }

    fn finished(&mut self) -> bool {
        self.quit || (self.once && self.sampled) || self.scanner.root_gone()
    }

    fn status(&self) -> u8 {
        0
    }

    fn request(&mut self, request: Request) {
        match request {
            Request::Quit => self.quit = true,
            Request::Exclude(pid) => self.excluded = pid,
        }
    }

    fn poll_period_ns(&self) -> Option<u64> {
        if self.once && self.sampled {
            // Done: the loop looks again at once.
            return Some(0);
        }
        self.scanner.tick_period_ns()
    }

    fn tick(&mut self, now_ns: u64) {
        self.scanner.tick(now_ns);
    }

    fn final_update(&self) -> bool {
        false
    }
}
