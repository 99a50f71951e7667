//! `--top --metrics-file PATH`: the flows for node_exporter's textfile collector,
//! rewritten at each update through the project's atomic writer
//! ([`crate::ownfile::replace`]).
//!
//! Owns: the totals that outlive flows (bytes moved and flows ended per kind since rpv
//! started), turning readings into [`Series`], reporting a failed write once, in the run's
//! voice ([`Warn`]: a time-stamped line with `--log`), and the file's end. The series
//! and their labels are [`crate::top::metrics`]'s. At the end rpv removes the file (when
//! it is still the one rpv wrote last): rpv no longer follows any flow, and a file left
//! behind would say either that the flows still move at their last rates or, rewritten
//! empty, that a busy machine is idle; without the file its series go stale at the next
//! scrape. Must not: write PATH in place, or remove what another process put there.

use std::collections::HashMap;
use std::path::PathBuf;

use super::report::Warn;
use super::{DisplayConfig, Sink, Snapshot};
use crate::meter::{Event, Phase, Role, Unit};
use crate::ownfile::Identity;
use crate::sys;
use crate::term::Term;
use crate::top::metrics::{render, Series, Totals};
use crate::top::{Kind, TopConfig};

/// `--top --metrics-file`.
pub(crate) struct TopMetrics {
    path: PathBuf,
    settings: TopConfig,
    totals: Totals,
    /// Each flow's forward progress at the last update, and its kind.
    last: HashMap<u64, (u64, Kind)>,
    /// How a failed write is reported (in the run's voice: a time-stamped line with
    /// `--log`).
    warner: Warn,
    warned: bool,
    /// The file rpv wrote last, which the end may remove.
    written: Option<Identity>,
}

impl TopMetrics {
    /// A sink writing `path`, warning through `warner`.
    pub(crate) fn new(path: PathBuf, settings: TopConfig, warner: Warn) -> TopMetrics {
        TopMetrics {
            path,
            settings,
            totals: Totals::default(),
            last: HashMap::new(),
            warner,
            warned: false,
            written: None,
        }
    }

    fn write(&mut self, flows: &[Series], term: &mut Term) {
        let (secs, millis) = sys::unix_time_ms();
        self.totals.now = secs as f64 + f64::from(millis) / 1000.0;
        let text = render(
            flows,
            self.settings.metrics_flows,
            self.settings.metrics_pid,
            &self.totals,
        );
        match crate::ownfile::replace_identified(&self.path, text.as_bytes()) {
            Ok(identity) => self.written = Some(identity),
            Err(e) => {
                if !std::mem::replace(&mut self.warned, true) {
                    let subject = format!("--metrics-file: {}", self.path.display());
                    self.warner.warn(term, &subject, &e);
                }
            }
        }
    }

    /// Removes the file if it is still the one rpv wrote last.
    fn remove(&mut self) {
        if let Some(written) = self.written.take() {
            let _ = crate::ownfile::remove_if_ours(&self.path, &written);
        }
    }
}

impl Sink for TopMetrics {
    fn event(&mut self, event: &Event, _config: &DisplayConfig, _term: &mut Term) {
        if let Event::Unreadable(hidden) = event {
            self.totals.unreadable = hidden.count;
        }
    }

    fn update(&mut self, snapshot: &Snapshot<'_>, _config: &DisplayConfig, term: &mut Term) {
        let mut flows = Vec::new();
        let mut seen = HashMap::new();
        for r in &snapshot.readings {
            let (Role::Flow, Some(flow)) = (r.meter.role, r.meter.flow()) else {
                continue;
            };
            let m = r.meter;
            let before = self.last.get(&m.id).map_or(0, |&(moved, _)| moved);
            if m.unit == Unit::Bytes {
                *self.totals.bytes.entry(flow.kind).or_default() += m.moved.saturating_sub(before);
            }
            if m.phase == Phase::Ended {
                *self.totals.completed.entry(flow.kind).or_default() += 1;
                continue;
            }
            seen.insert(m.id, (m.moved, flow.kind));
            let eta = r.eta();
            flows.push(Series {
                kind: flow.kind,
                unit: m.unit,
                command: flow.command.clone(),
                file: flow.file.clone(),
                pid: flow.pid,
                bytes: m.moved,
                rate: r.rates.rate,
                position: (m.size > 0).then_some((m.amount, m.size)),
                eta,
                stalled: r.stalled_for.is_some(),
            });
        }
        self.last = seen;
        self.write(&flows, term);
    }

    fn finish(&mut self, _snapshot: &Snapshot<'_>, _config: &DisplayConfig, _term: &mut Term) {
        self.remove();
    }
}
