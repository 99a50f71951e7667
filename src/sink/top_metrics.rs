//! `--top --metrics-file PATH`: the flows for node_exporter's textfile collector,
//! rewritten at each update through the project's atomic writer
//! ([`crate::ownfile::replace`]).
//!
//! Owns: the totals that outlive flows (bytes moved and flows ended per kind since rpv
//! started), turning readings into [`Series`], and reporting a failed write once. The
//! series and their labels are [`crate::top::metrics`]'s. At the end the file keeps the
//! totals and no flow (rpv no longer follows any). Must not: write PATH in place.

use std::collections::HashMap;
use std::path::PathBuf;

use super::{DisplayConfig, Sink, Snapshot};
use crate::meter::{Event, Phase, Role};
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
    warned: bool,
}

impl TopMetrics {
    /// A sink writing `path`.
    pub(crate) fn new(path: PathBuf, settings: TopConfig) -> TopMetrics {
        TopMetrics {
            path,
            settings,
            totals: Totals::default(),
            last: HashMap::new(),
            warned: false,
        }
    }

    fn write(&mut self, flows: &[Series], config: &DisplayConfig, term: &mut Term) {
        let (secs, millis) = sys::unix_time_ms();
        self.totals.now = secs as f64 + f64::from(millis) / 1000.0;
        let text = render(
            flows,
            self.settings.metrics_flows,
            self.settings.metrics_pid,
            &self.totals,
        );
        if let Err(e) = crate::ownfile::replace(&self.path, text.as_bytes()) {
            if !std::mem::replace(&mut self.warned, true) {
                let text = format!(
                    "--metrics-file: {}: {}",
                    self.path.display(),
                    sys::strerror(&e)
                );
                let error = crate::error::Error::other(0, text);
                if config.json {
                    super::json::write(term, super::json::message(&error, None));
                } else {
                    term.message(&error.to_string());
                }
            }
        }
    }
}

impl Sink for TopMetrics {
    fn event(&mut self, event: &Event, _config: &DisplayConfig, _term: &mut Term) {
        if let Event::Unreadable(hidden) = event {
            self.totals.unreadable = hidden.count;
        }
    }

    fn update(&mut self, snapshot: &Snapshot<'_>, config: &DisplayConfig, term: &mut Term) {
        let mut flows = Vec::new();
        let mut seen = HashMap::new();
        for r in &snapshot.readings {
            let (Role::Flow, Some(flow)) = (r.meter.role, r.meter.flow.as_deref()) else {
                continue;
            };
            let m = r.meter;
            let before = self.last.get(&m.id).map_or(0, |&(moved, _)| moved);
            *self.totals.bytes.entry(flow.kind).or_default() += m.moved.saturating_sub(before);
            if m.phase == Phase::Ended {
                *self.totals.completed.entry(flow.kind).or_default() += 1;
                continue;
            }
            seen.insert(m.id, (m.moved, flow.kind));
            let eta = (m.size > 0 && r.stalled_for.is_none() && r.rates.avg_rate > 0.001)
                .then(|| m.size.saturating_sub(m.amount) as f64 / r.rates.avg_rate);
            flows.push(Series {
                kind: flow.kind,
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
        self.write(&flows, config, term);
    }

    fn finish(&mut self, _snapshot: &Snapshot<'_>, config: &DisplayConfig, term: &mut Term) {
        self.write(&[], config, term);
    }
}
