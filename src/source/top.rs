//! `--top`: every data flow rpv may see, one meter each.
//!
//! Owns: running the flow [`Scanner`] at each update (and once when the run starts, so
//! the first update already compares two looks), turning each flow into a meter (its
//! amount, forward progress and size, so rates, ETA and stalls are the display's usual
//! ones; what the flow is rides along in [`MeterState::flow`]), sampling the pipelines'
//! wait states between updates, and the [`Board`] it shares with the `--top` view (the
//! processes rpv may not read, the view's keys asking to quit, the process of the view
//! Enter opened). The run lasts until the view quits or a signal ends it.
//! Must not: draw.

use std::cell::RefCell;
use std::rc::Rc;

use super::Source;
use crate::meter::{Event, Label, MeterState, Phase, Role};
use crate::top::scan::Scanner;
use crate::top::{Flow, Hidden};

/// How often the display loop wakes while the view takes keys (nanoseconds).
const KEYS_POLL_NS: u64 = 50_000_000;

/// What the `--top` source and its view share.
#[derive(Debug, Default)]
pub(crate) struct Board {
    /// The processes rpv may not read, at the last scan.
    pub hidden: Hidden,
    /// The view takes keys (the display loop then wakes often enough for them).
    pub keys: bool,
    /// The view asked to quit (`q`).
    pub quit: bool,
    /// The process of the view Enter opened: not shown as a flow.
    pub zoomed: Option<u32>,
}

/// A shared [`Board`].
pub(crate) type SharedBoard = Rc<RefCell<Board>>;

/// `--top`.
pub(crate) struct TopSource {
    scanner: Scanner,
    board: SharedBoard,
    flows: Vec<Flow>,
}

impl TopSource {
    /// Looks at every process once (so the first update sees what moved since);
    /// `interval` is `-i` in seconds; with `root` (`--top=PID`), only that process and its
    /// descendants, until it has ended.
    pub(crate) fn new(interval: f64, root: Option<u32>, board: SharedBoard) -> TopSource {
        let mut scanner = Scanner::new(interval);
        scanner.only(root);
        scanner.scan(crate::sys::monotonic_ns());
        TopSource {
            scanner,
            board,
            flows: Vec::new(),
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
        flow: Some(Box::new(flow.view.clone())),
        ..MeterState::default()
    }
}

impl Source for TopSource {
    fn watches(&self) -> bool {
        true
    }

    fn sample(&mut self, now_ns: u64, out: &mut Vec<MeterState>) {
        let zoomed = self.board.borrow().zoomed;
        self.scanner.exclude(zoomed);
        self.scanner.scan(now_ns);
        self.board.borrow_mut().hidden = self.scanner.hidden();
        self.flows.clear();
        self.scanner.flows(&mut self.flows);
        out.extend(self.flows.iter().map(|f| meter(f, now_ns)));
    }

    fn events(&mut self, _out: &mut Vec<Event>) {}

    fn finished(&mut self) -> bool {
        self.board.borrow().quit || self.scanner.root_gone()
    }

    fn status(&self) -> u8 {
        0
    }

    fn poll_period_ns(&self) -> Option<u64> {
        let keys = self.board.borrow().keys.then_some(KEYS_POLL_NS);
        match (keys, self.scanner.tick_period_ns()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn tick(&mut self, now_ns: u64) {
        self.scanner.tick(now_ns);
    }

    fn final_update(&self) -> bool {
        false
    }
}
