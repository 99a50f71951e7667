//! The NDJSON sink (`--json`): one JSON object per line on standard error, for scripts,
//! wrappers and GUIs. The schema is documented in docs/json.md and shipped as
//! docs/json.schema.json.
//!
//! Owns: the objects `start` (once, first), `progress` (every update, one per meter that
//! has a line: the transfer with its per-input figures, each side of `-M both`, each watched
//! descriptor), `input` (opened, path chosen, fallback, done), `message` (what is otherwise
//! printed as `rpv: ...`), `output` (the reader went away) and `end` (once, last: exact
//! totals and the exit status). Must not: write anything but whole JSON lines.

use serde_json::{json, Map, Value};

use super::{DisplayConfig, Reading, Sink, Snapshot};
use crate::error::{Error, Side, Stall};
use crate::meter::{Event, Label, Phase, Role, Unit};
use crate::term::Term;

/// What is known before the run starts (the `start` object).
#[derive(Debug, Clone, Default)]
pub struct Start {
    /// `transfer`, `store`, `monitor`, `watch` or `query`.
    pub mode: &'static str,
    /// What the amounts count.
    pub unit: Unit,
    /// The inputs: name and size in bytes, if known.
    pub inputs: Vec<(String, Option<u64>)>,
    /// The total size in the unit, 0 = unknown.
    pub size: u64,
}

/// `--json`.
#[derive(Debug)]
pub struct Json {
    start: Option<Start>,
    /// The status of the `finished` event, for `end`.
    status: u8,
    /// What the stall watchdog found, if it ended the run (for `end`).
    stall: Option<Stall>,
}

impl Json {
    /// A sink that starts with `start`.
    pub fn new(start: Start) -> Json {
        Json {
            start: Some(start),
            status: 0,
            stall: None,
        }
    }

    /// Writes one object as a line.
    fn write(term: &mut Term, value: &Value) {
        let mut line = value.to_string();
        line.push('\n');
        term.raw(&line);
    }

    /// The `start` object, before anything else.
    fn started(&mut self, config: &DisplayConfig, term: &mut Term) {
        let Some(start) = self.start.take() else {
            return;
        };
        let inputs: Vec<Value> = start
            .inputs
            .iter()
            .enumerate()
            .map(|(i, (name, size))| json!({"index": i, "name": name, "size": size}))
            .collect();
        Self::write(
            term,
            &json!({
                "type": "start",
                "program": "rpv",
                "version": env!("CARGO_PKG_VERSION"),
                "pid": std::process::id(),
                "mode": start.mode,
                "unit": unit_name(start.unit),
                "size": known(start.size),
                "interval": config.interval_ns as f64 / 1e9,
                "inputs": inputs,
            }),
        );
    }
}

fn unit_name(unit: Unit) -> &'static str {
    match unit {
        Unit::Bytes => "bytes",
        Unit::Lines => "lines",
    }
}

/// A size or amount that may be unknown (0).
fn known(n: u64) -> Value {
    if n == 0 {
        Value::Null
    } else {
        json!(n)
    }
}

/// A rate or time: finite numbers only.
fn number(x: f64) -> Value {
    if x.is_finite() {
        json!(x)
    } else {
        Value::Null
    }
}

/// The figures of one meter, as in `progress` objects.
fn figures(r: &Reading<'_>, config: &DisplayConfig) -> Map<String, Value> {
    let m = r.meter;
    let mut o = Map::new();
    let (role, extra): (&str, Option<Value>) = match (m.role, &m.label) {
        (Role::Transfer, _) => ("transfer", None),
        (Role::MonitorIn, _) => ("monitor_in", None),
        (Role::MonitorOut, _) => ("monitor_out", None),
        (Role::Input(i), _) => ("input", Some(json!({"index": i}))),
        (Role::Output(i), _) => ("output", Some(json!({"index": i}))),
        (Role::Descriptor, Label::Descriptor { pid, fd, path, .. }) => (
            "descriptor",
            Some(json!({"pid": pid, "fd": fd, "path": path})),
        ),
        (Role::Descriptor, _) => ("descriptor", None),
        (Role::Stage, _) => match &m.stage {
            Some(st) => (
                "stage",
                Some(json!({
                    "pid": st.pid,
                    "command": st.command,
                    "state": st.activity.label(),
                    "cpu": st.cpu.map_or(Value::Null, number),
                    "rate_in": st.rate_in.map_or(Value::Null, number),
                    "rate_out": st.rate_out.map_or(Value::Null, number),
                    "pipe": st.fill.map(|f| json!({"queued": f.queued, "capacity": f.capacity})),
                    "bottleneck": st.bottleneck,
                })),
            ),
            None => ("stage", None),
        },
    };
    o.insert("meter".into(), json!(role));
    if let Some(Value::Object(extra)) = extra {
        o.extend(extra);
    }
    let name = match &m.label {
        Label::Text(text) => Some(text.clone()),
        Label::None => config.name_for(m.role).map(str::to_string),
        Label::Descriptor { .. } => None,
    };
    o.insert("name".into(), json!(name));
    o.insert("elapsed".into(), number(r.elapsed));
    o.insert(unit_name(m.unit).into(), json!(m.amount));
    o.insert("size".into(), known(m.size));
    let percent = (m.size > 0).then_some(r.rates.percentage);
    o.insert("percent".into(), percent.map_or(Value::Null, number));
    o.insert("rate".into(), number(r.rates.rate));
    o.insert("average_rate".into(), number(r.rates.avg_rate));
    let eta = (m.size > 0
        && r.stalled_for.is_none()
        && !r.final_update
        && m.moved > 0
        && r.rates.avg_rate > 0.001)
        .then(|| number(m.size.saturating_sub(m.amount) as f64 / r.rates.avg_rate));
    o.insert("eta".into(), json!(eta));
    o.insert("stalled".into(), json!(r.stalled_for.is_some()));
    o.insert(
        "stalled_for".into(),
        r.stalled_for.map_or(Value::Null, number),
    );
    o.insert("done".into(), json!(m.phase == Phase::Ended));
    if let Some(note) = &m.note {
        o.insert("error".into(), json!(note));
    }
    o
}

/// The per-input figures of a transfer (from its input meters).
fn inputs(config: &DisplayConfig, snapshot: &Snapshot<'_>) -> Vec<Value> {
    snapshot
        .readings
        .iter()
        .filter(|r| matches!(r.meter.role, Role::Input(_)))
        .map(|r| Value::Object(figures(r, config)))
        .collect()
}

/// The per-output figures of a transfer (its `--tee` outputs).
fn outputs(config: &DisplayConfig, snapshot: &Snapshot<'_>) -> Vec<Value> {
    snapshot
        .readings
        .iter()
        .filter(|r| matches!(r.meter.role, Role::Output(_)))
        .map(|r| Value::Object(figures(r, config)))
        .collect()
}

/// The `message` object of an error.
fn message(error: &Error, input: Option<usize>) -> Value {
    let level = if error.exit_bits() == 0 {
        "warning"
    } else {
        "error"
    };
    json!({
        "type": "message",
        "level": level,
        "kind": error.kind(),
        "text": error.to_string(),
        "errno": error.errno(),
        "input": input,
    })
}

impl Sink for Json {
    fn event(&mut self, event: &Event, config: &DisplayConfig, term: &mut Term) {
        self.started(config, term);
        let value = match event {
            Event::Error(e) => {
                if let Error::Stalled(stall) = e {
                    self.stall = Some(stall.clone());
                }
                message(e, None)
            }
            Event::InputFailed { input, error } => message(error, Some(*input)),
            Event::ReadErrorSkipped { name, from, to, .. } => json!({
                "type": "message",
                "level": "warning",
                "kind": "skipped",
                "text": format!("{name}: skipped past read error: {from} - {to} ({} B)", to - from),
                "errno": null,
                "input": null,
                "from": from,
                "to": to,
            }),
            Event::InputOpened {
                input, name, size, ..
            } => {
                json!({"type": "input", "event": "opened", "index": input, "name": name, "size": known(*size)})
            }
            Event::PathChosen { input, path, .. } => {
                json!({"type": "input", "event": "path", "index": input, "path": path})
            }
            Event::Fallback {
                input, after_calls, ..
            } => {
                json!({"type": "input", "event": "fallback", "index": input, "after_calls": after_calls})
            }
            Event::InputDone {
                input,
                bytes,
                lines,
                ..
            } => {
                json!({"type": "input", "event": "done", "index": input, "bytes": bytes, "lines": lines})
            }
            Event::OutputGone => json!({"type": "output", "event": "reader_gone"}),
            Event::Trace(text) if config.trace => json!({"type": "trace", "text": text}),
            Event::Trace(_) => return,
            Event::Summary { text, shares } => {
                let shares: Vec<Value> = shares
                    .iter()
                    .map(|(command, share)| json!({"command": command, "share": number(*share)}))
                    .collect();
                json!({"type": "summary", "text": text, "bottleneck": shares})
            }
            Event::Finished { status } => {
                self.status = *status;
                return;
            }
        };
        Self::write(term, &value);
    }

    fn update(&mut self, snapshot: &Snapshot<'_>, config: &DisplayConfig, term: &mut Term) {
        self.started(config, term);
        if config.quiet {
            return;
        }
        for r in &snapshot.readings {
            if matches!(r.meter.role, Role::Input(_) | Role::Output(_)) {
                continue;
            }
            let mut o = Map::new();
            o.insert("type".into(), json!("progress"));
            o.extend(figures(r, config));
            if r.meter.role == Role::Transfer {
                o.insert("inputs".into(), json!(inputs(config, snapshot)));
                o.insert("outputs".into(), json!(outputs(config, snapshot)));
            }
            Self::write(term, &Value::Object(o));
        }
    }

    fn finish(&mut self, snapshot: &Snapshot<'_>, config: &DisplayConfig, term: &mut Term) {
        self.started(config, term);
        let meters: Vec<Value> = snapshot
            .readings
            .iter()
            .filter(|r| !matches!(r.meter.role, Role::Input(_) | Role::Output(_)))
            .map(|r| {
                let mut o = figures(r, config);
                let stats = r.tracker.rate_stats().map(|(min, avg, max, mdev)| {
                    json!({"min": number(min), "avg": number(avg), "max": number(max), "mdev": number(mdev)})
                });
                o.insert("rate_stats".into(), json!(stats));
                Value::Object(o)
            })
            .collect();
        let mut end = Map::new();
        end.insert("type".into(), json!("end"));
        end.insert("status".into(), json!(self.status));
        end.insert(
            "interrupted".into(),
            json!(self.status & crate::error::status::SIGNAL != 0),
        );
        if let Some(stall) = &self.stall {
            let (pid, command) = stall.peer.clone().unzip();
            end.insert(
                "stall".into(),
                json!({
                    "timeout": stall.timeout,
                    "side": stall.side.map(Side::name),
                    "pid": pid,
                    "command": command,
                }),
            );
        }
        // The first meter's totals at the top level: the transfer (or -Q's target).
        if let Some(Value::Object(first)) = meters.first() {
            for key in ["elapsed", "bytes", "lines", "size", "average_rate"] {
                if let Some(v) = first.get(key) {
                    end.insert(key.into(), v.clone());
                }
            }
        }
        end.insert("inputs".into(), json!(inputs(config, snapshot)));
        end.insert("outputs".into(), json!(outputs(config, snapshot)));
        end.insert("meters".into(), json!(meters));
        Self::write(term, &Value::Object(end));
    }
}
