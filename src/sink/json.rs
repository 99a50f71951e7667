//! The NDJSON sink (`--json`): one JSON object per line on standard error, for scripts,
//! wrappers and GUIs. The schema is documented in docs/json.md and shipped as
//! docs/json.schema.json.
//!
//! Owns: the objects `start` (once, first), `progress` (every update, one per meter that
//! has a line: the transfer with its per-input and per-output figures, each side of `-M
//! both`, each watched descriptor), `input` (opened, path chosen, fallback, done),
//! `message` (what is otherwise printed as `rpv: ...`), `output` (the reader went away),
//! `trace` (a test hook's notes), `summary`, `phase_end` and `end` (once, last: exact
//! totals and the exit status, written through the [`Ledger`] once the status is known);
//! the `time` of every object; names as given, kept exactly when they are not UTF-8. Must
//! not: write anything but whole JSON lines.

use std::cell::RefCell;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::rc::Rc;

use base64::Engine as _;
use serde_json::{json, Map, Value};

use super::{DisplayConfig, Reading, Sink, Snapshot};
use crate::error::{Error, Side, Stall};
use crate::meter::{Event, Label, MeterState, Phase, Role, Unit};
use crate::sys;
use crate::term::Term;

/// What is known before the run starts (the `start` object).
#[derive(Debug, Clone, Default)]
pub(crate) struct Start {
    /// `transfer`, `store`, `forward`, `monitor`, `watch`, `query` or `pipeline`.
    pub mode: &'static str,
    /// What the amounts count.
    pub unit: Unit,
    /// The inputs, by index: the name as given (bytes, so a name that is not UTF-8 is kept
    /// exactly) and the size in bytes of a regular file.
    pub inputs: Vec<(OsString, Option<u64>)>,
    /// The `--tee` outputs, by index: the path as given.
    pub outputs: Vec<OsString>,
    /// The total size in the unit, 0 = unknown.
    pub size: u64,
}

/// What the `--json` objects of one rpv process share between its display loops (`-U` has
/// two) and the set-up around them ([`super::report::Report`]): whether a `start` was
/// written, the messages that came before it, and the closing object of the last loop,
/// which is written as `end` only when rpv knows the status it exits with.
#[derive(Debug, Default)]
pub(crate) struct Ledger {
    /// A `start` object has been written.
    started: bool,
    /// Messages of the set-up, held until the `start` (or the `end`) is written.
    held: Vec<Value>,
    /// The closing object of the last display loop, without its status yet.
    end: Option<Map<String, Value>>,
    /// That loop was `-U`'s store phase: nothing of it has reached the output.
    stored: bool,
    /// The `stall` of a display loop before the last one (the store phase of `-U`, whose
    /// stall ends the run after what was stored is forwarded): the `end` carries it too.
    stall: Option<Value>,
}

/// A shared [`Ledger`].
pub(crate) type SharedLedger = Rc<RefCell<Ledger>>;

impl Ledger {
    /// Writes `message` now if a `start` was written, else holds it until one is (or until
    /// the end).
    pub(crate) fn message(&mut self, message: Value, term: &mut Term) {
        if self.started {
            write(term, message);
        } else {
            self.held.push(message);
        }
    }

    /// Writes what is held and then the one `end` object, with `status` (the exit status)
    /// and `interrupted`: the last display loop's closing object, or, when the run ended
    /// before any display loop (a usage or set-up error, `-R`), one without figures.
    pub(crate) fn close(&mut self, status: u8, interrupted: bool, term: &mut Term) {
        for message in std::mem::take(&mut self.held) {
            write(term, message);
        }
        if std::mem::take(&mut self.stored) {
            if let Some(end) = &mut self.end {
                nothing_forwarded(end);
            }
        }
        let mut end = self.end.take().unwrap_or_else(|| {
            let mut end = Map::new();
            end.insert("type".into(), json!("end"));
            end.insert("interrupted".into(), json!(interrupted));
            for key in ["inputs", "outputs", "meters"] {
                end.insert(key.into(), json!([]));
            }
            end
        });
        if let Some(stall) = self.stall.take() {
            end.entry("stall").or_insert(stall);
        }
        end.insert("status".into(), json!(status));
        end.insert("time".into(), json!(now()));
        write(term, Value::Object(end));
    }
}

/// The closing object of `-U`'s store phase when the run ends there (interrupted, or the
/// store failed): its totals are what reached the output, which is nothing. (The store's
/// own figures were in its `progress` objects.)
fn nothing_forwarded(end: &mut Map<String, Value>) {
    fn zero(o: &mut Map<String, Value>) {
        for key in ["bytes", "lines", "rate", "average_rate"] {
            if let Some(v) = o.get_mut(key) {
                *v = json!(0);
            }
        }
        if let Some(p) = o.get_mut("percent").filter(|p| !p.is_null()) {
            *p = json!(0.0);
        }
        if let Some(stats) = o.get_mut("rate_stats") {
            *stats = Value::Null;
        }
    }
    zero(end);
    for key in ["meters", "inputs", "outputs"] {
        for figures in end
            .get_mut(key)
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            if let Value::Object(o) = figures {
                zero(o);
                if key != "meters" {
                    o.insert("done".into(), json!(false));
                }
            }
        }
    }
}

/// Now, as the `time` of every object: RFC 3339, UTC, milliseconds.
pub(crate) fn now() -> String {
    let (secs, millis) = sys::unix_time_ms();
    crate::display::iso8601(secs, Some(millis), None)
}

/// Writes one object as a line (with its `time`, if it has none yet).
pub(crate) fn write(term: &mut Term, value: Value) {
    term.raw(&line(value));
}

/// One object as a line (with its `time`, if it has none yet).
fn line(mut value: Value) -> String {
    if let Value::Object(o) = &mut value {
        if !o.contains_key("time") {
            o.insert("time".into(), json!(now()));
        }
    }
    let mut line = hidden_escaped(value.to_string());
    line.push('\n');
    line
}

/// A JSON text with every format character (bidirectional overrides, zero-width characters:
/// [`crate::display::escape::hidden`]) written as a `\uXXXX` escape (a surrogate pair
/// above U+FFFF): the same strings to a parser, but `rpv --json | cat` on a terminal
/// cannot reorder or hide what it shows. (Such characters only occur inside strings,
/// where the escape is valid.)
fn hidden_escaped(text: String) -> String {
    use std::fmt::Write as _;
    if !text.chars().any(crate::display::escape::hidden) {
        return text;
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if crate::display::escape::hidden(c) {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{unit:04x}");
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Puts a name as rpv was given it under `field`: the text if it is UTF-8; otherwise the
/// text with U+FFFD in place of the bytes that are not, and the exact bytes in standard
/// base64 under `FIELD_base64` (`jq -j .name_base64 | base64 -d` gives them back).
pub(crate) fn put_name(o: &mut Map<String, Value>, field: &str, raw: &OsStr) {
    let bytes = raw.as_bytes();
    match std::str::from_utf8(bytes) {
        Ok(text) => {
            o.insert(field.into(), json!(text));
        }
        Err(_) => {
            o.insert(field.into(), json!(String::from_utf8_lossy(bytes)));
            let encoded = base64::engine::general_purpose::STANDARD.encode(bytes);
            o.insert(format!("{field}_base64"), json!(encoded));
        }
    }
}

/// The `message` object of an error, stamped now.
pub(crate) fn message(error: &Error, input: Option<usize>) -> Value {
    let level = if error.exit_bits() == 0 {
        "warning"
    } else {
        "error"
    };
    json!({
        "type": "message",
        "time": now(),
        "level": level,
        "kind": error.kind(),
        "text": error.to_string(),
        "errno": error.errno(),
        "input": input,
    })
}

/// `--json`.
#[derive(Debug)]
pub(crate) struct Json {
    start: Option<Start>,
    /// The run's mode (`start`'s `mode`).
    mode: &'static str,
    /// The inputs' names as given, by index.
    inputs: Vec<OsString>,
    /// The `--tee` outputs' paths as given, by index.
    outputs: Vec<OsString>,
    /// The inputs' sizes when the run started, by index (`Some` for regular files).
    sizes: Vec<Option<u64>>,
    /// The status of the `finished` event, for `end`.
    status: u8,
    /// What the stall watchdog found, if it ended the run (for `end`).
    stall: Option<Stall>,
    ledger: SharedLedger,
}

impl Json {
    /// A sink that starts with `start` and shares `ledger` with the rest of the run.
    pub(crate) fn new(start: Start, ledger: SharedLedger) -> Json {
        Json {
            mode: start.mode,
            inputs: start.inputs.iter().map(|(name, _)| name.clone()).collect(),
            outputs: start.outputs.clone(),
            sizes: start.inputs.iter().map(|&(_, size)| size).collect(),
            start: Some(start),
            status: 0,
            stall: None,
            ledger,
        }
    }

    /// The `start` object, before anything else. A display loop before this one (the store
    /// phase of `-U`) closed with an object that becomes its `phase_end`.
    fn started(&mut self, config: &DisplayConfig, term: &mut Term) {
        let Some(start) = self.start.take() else {
            return;
        };
        let mut ledger = self.ledger.borrow_mut();
        ledger.stored = false;
        if let Some(mut previous) = ledger.end.take() {
            ledger.stall = previous.get("stall").cloned();
            previous.insert("type".into(), json!("phase_end"));
            previous.remove("status");
            previous.remove("interrupted");
            write(term, Value::Object(previous));
        }
        let inputs: Vec<Value> = start
            .inputs
            .iter()
            .enumerate()
            .map(|(i, (name, size))| {
                let mut o = Map::new();
                o.insert("index".into(), json!(i));
                put_name(&mut o, "name", name);
                o.insert("size".into(), json!(size));
                Value::Object(o)
            })
            .collect();
        // The run started before the set-up's messages held until now: the `start` is
        // stamped no later than the first of them, so times never go back.
        let time = (ledger.held.iter())
            .filter_map(|m| m["time"].as_str())
            .min()
            .map_or_else(now, str::to_string);
        write(
            term,
            json!({
                "type": "start",
                "time": time,
                "program": "rpv",
                "version": env!("CARGO_PKG_VERSION"),
                "pid": std::process::id(),
                "mode": start.mode,
                "unit": unit_name(start.unit),
                "size": self.start_size(start.size),
                "interval": config.interval_ns as f64 / 1e9,
                "inputs": inputs,
            }),
        );
        ledger.started = true;
        for message in std::mem::take(&mut ledger.held) {
            write(term, message);
        }
    }

    /// Whether a meter of `role` whose size is 0 (unknown, in the meter model) has a size
    /// known to be 0: an empty regular file, or a transfer of nothing but those.
    fn known_empty(&self, role: Role) -> bool {
        match role {
            Role::Input(i) => self.sizes.get(i) == Some(&Some(0)),
            Role::Transfer => {
                !self.sizes.is_empty() && self.sizes.iter().all(|size| *size == Some(0))
            }
            _ => false,
        }
    }

    /// The total size for the `start` object: as [`known`], but 0 for a transfer of empty
    /// files only.
    fn start_size(&self, size: u64) -> Value {
        if size == 0 && self.known_empty(Role::Transfer) {
            json!(0)
        } else {
            known(size)
        }
    }

    /// The name of input `index` as given, when known.
    fn input_name(&self, index: usize) -> Option<&OsStr> {
        self.inputs.get(index).map(OsString::as_os_str)
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

/// A pipeline stage's time split: each part's fraction of the window.
fn time_shares(time: &crate::pipeline::model::Split) -> Value {
    let parts: Map<String, Value> = crate::pipeline::model::Part::ALL
        .iter()
        .map(|p| (p.key().to_string(), number(time.get(*p))))
        .collect();
    Value::Object(parts)
}

/// What a flow of `--top` is, for its `progress` object.
fn flow_fields(f: &crate::top::FlowView) -> Value {
    let mut o = json!({
        "kind": f.kind.name(),
        "pid": f.pid,
        "command": f.command,
        "file": f.file,
        "to": f.to,
        "writes": f.writes,
        "in_kernel": f.in_kernel,
        "progress_visible": !f.unseen,
        "bottleneck_stage": f.bottleneck.as_ref().map(|b| json!({"command": b.command, "why": b.why})),
    });
    if let Value::Object(map) = &mut o {
        if let Some(fd) = f.fd {
            map.insert("fd".into(), json!(fd));
        }
        // A path that is not UTF-8: its exact bytes beside it, as for names.
        for (field, bytes) in [("file", &f.file_bytes), ("to", &f.to_bytes)] {
            if let Some(bytes) = bytes {
                put_name(map, field, std::ffi::OsStr::from_bytes(bytes));
            }
        }
    }
    o
}

/// The kind of meter `m` is (`meter`), and the fields that kind adds.
fn role_fields(m: &MeterState) -> (&'static str, Option<Value>) {
    match (m.role, &m.label) {
        (Role::Transfer, _) => ("transfer", None),
        (Role::MonitorIn, _) => ("monitor_in", None),
        (Role::MonitorOut, _) => ("monitor_out", None),
        (Role::Input(i), _) => ("input", Some(json!({"index": i}))),
        (Role::Output(i), _) => ("output", Some(json!({"index": i}))),
        (
            Role::Descriptor,
            Label::Descriptor {
                pid,
                fd,
                path,
                raw_path,
                ..
            },
        ) => {
            let mut d = Map::new();
            d.insert("pid".into(), json!(pid));
            d.insert("fd".into(), json!(fd));
            match raw_path {
                Some(raw) => put_name(&mut d, "path", raw),
                None => {
                    d.insert("path".into(), json!(path));
                }
            }
            ("descriptor", Some(Value::Object(d)))
        }
        (Role::Descriptor, _) => ("descriptor", None),
        (Role::Flow, _) => ("flow", m.flow().map(flow_fields)),
        (Role::Stage, _) => ("stage", m.stage().map(stage_fields)),
    }
}

/// What a stage of the pipeline view adds to its figures.
fn stage_fields(st: &crate::pipeline::model::StageView) -> Value {
    json!({
        "pid": st.pid,
        "command": st.command,
        "state": st.activity.label(),
        "cpu": st.cpu.map_or(Value::Null, number),
        "rate_in": st.rate_in.map_or(Value::Null, number),
        "rate_out": st.rate_out.map_or(Value::Null, number),
        "bytes_in": st.bytes_in,
        "bytes_out": st.bytes_out,
        "pipe": st.fill.map(|f| json!({"queued": f.queued, "capacity": f.capacity})),
        "time_shares": st.time.map(|t| time_shares(&t)),
        "bottleneck": st.bottleneck,
        "job": st.job,
        "group": st.group,
        "advice": st.advice,
    })
}

/// The figures of one meter, as in `progress` objects; `names` gives the name as given of
/// an input or output meter.
fn figures(
    r: &Reading<'_>,
    config: &DisplayConfig,
    names: impl Fn(Role) -> Option<OsString>,
) -> Map<String, Value> {
    let m = r.meter;
    let mut o = Map::new();
    let (role, extra) = role_fields(m);
    o.insert("meter".into(), json!(role));
    if let Some(Value::Object(extra)) = extra {
        o.extend(extra);
    }
    match names(m.role) {
        Some(raw) => put_name(&mut o, "name", &raw),
        None => {
            let name = match &m.label {
                Label::Text(text) => Some(text.clone()),
                Label::None => config.name_for(m.role).map(str::to_string),
                Label::Descriptor { .. } => None,
            };
            o.insert("name".into(), json!(name));
        }
    }
    o.insert("elapsed".into(), number(r.elapsed));
    o.insert(unit_name(m.unit).into(), json!(m.amount));
    o.insert("size".into(), known(m.size));
    let percent = (m.size > 0).then_some(r.rates.percentage);
    o.insert("percent".into(), percent.map_or(Value::Null, number));
    o.insert("rate".into(), number(r.rates.rate));
    o.insert("average_rate".into(), number(r.rates.avg_rate));
    o.insert("eta".into(), json!(r.eta().map(number)));
    o.insert("stalled".into(), json!(r.stalled_for.is_some()));
    o.insert(
        "stalled_for".into(),
        r.stalled_for.map_or(Value::Null, number),
    );
    o.insert("done".into(), json!(m.phase == Phase::Ended));
    if m.flow().is_some_and(|f| f.unseen) {
        // A copy whose progress cannot be seen: no rate, no ETA, and not stalled (it works).
        for field in ["rate", "eta", "stalled_for"] {
            o.insert(field.into(), Value::Null);
        }
        o.insert("stalled".into(), json!(false));
    }
    if let Some(note) = &m.note {
        o.insert("error".into(), json!(note));
    }
    o
}

impl Json {
    /// The figures of one meter, with the names as given of inputs and outputs.
    fn figures(&self, r: &Reading<'_>, config: &DisplayConfig) -> Map<String, Value> {
        let mut o = figures(r, config, |role| match role {
            Role::Input(i) => self.inputs.get(i).cloned(),
            Role::Output(i) => self.outputs.get(i).cloned(),
            _ => None,
        });
        if r.meter.size == 0 && self.known_empty(r.meter.role) {
            // Nothing to move: the size is 0, and all of it has moved.
            o.insert("size".into(), json!(0));
            o.insert("percent".into(), json!(100.0));
        }
        o
    }

    /// The figures of the meters with one of the roles `which` picks (the per-input or
    /// per-output figures of a transfer).
    fn part(
        &self,
        config: &DisplayConfig,
        snapshot: &Snapshot<'_>,
        which: fn(Role) -> bool,
    ) -> Vec<Value> {
        snapshot
            .readings
            .iter()
            .filter(|r| which(r.meter.role))
            .map(|r| Value::Object(self.figures(r, config)))
            .collect()
    }

    /// The object for `event`, if it is written (with `-q`, only messages are).
    fn object(&mut self, event: &Event, config: &DisplayConfig) -> Option<Value> {
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
            Event::Finished { status } => {
                self.status = *status;
                return None;
            }
            Event::Unreadable(_) => return None,
            _ if config.quiet => return None,
            Event::InputOpened {
                input, name, size, ..
            } => self.opened(*input, name, *size),
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
                interrupted,
                ..
            } => {
                json!({"type": "input", "event": "done", "index": input, "bytes": bytes,
                       "lines": lines, "interrupted": interrupted})
            }
            Event::OutputGone => json!({"type": "output", "event": "reader_gone"}),
            Event::Trace(text) if config.trace => json!({"type": "trace", "text": text}),
            Event::Trace(_) => return None,
            Event::Summary { .. } => summary(event)?,
        };
        Some(value)
    }

    /// The `input` object of an input opened: its index, name as given and size (`0` only
    /// when it is known to be empty, else `null` for unknown).
    fn opened(&self, input: usize, name: &str, size: u64) -> Value {
        let mut o = Map::new();
        o.insert("type".into(), json!("input"));
        o.insert("event".into(), json!("opened"));
        o.insert("index".into(), json!(input));
        match self.input_name(input) {
            Some(raw) => put_name(&mut o, "name", raw),
            None => {
                o.insert("name".into(), json!(name));
            }
        }
        let size = if size == 0 && self.known_empty(Role::Input(input)) {
            json!(0)
        } else {
            known(size)
        };
        o.insert("size".into(), size);
        Value::Object(o)
    }
}

/// The `summary` object of the pipeline view's end summary.
fn summary(event: &Event) -> Option<Value> {
    let Event::Summary {
        text,
        job,
        shares,
        stages,
        advice,
    } = event
    else {
        return None;
    };
    let shares: Vec<Value> = (shares.iter())
        .map(|(command, share)| json!({"command": command, "share": number(*share)}))
        .collect();
    let stages: Vec<Value> = (stages.iter())
        .map(|(command, time)| {
            json!({"command": command, "time_shares": time.map(|t| time_shares(&t))})
        })
        .collect();
    Some(
        json!({"type": "summary", "text": text, "job": job, "bottleneck": shares,
                "stages": stages, "advice": advice}),
    )
}

fn is_input(role: Role) -> bool {
    matches!(role, Role::Input(_))
}

fn is_output(role: Role) -> bool {
    matches!(role, Role::Output(_))
}

impl Sink for Json {
    fn event(&mut self, event: &Event, config: &DisplayConfig, term: &mut Term) {
        self.started(config, term);
        if let Some(value) = self.object(event, config) {
            write(term, value);
        }
    }

    fn update(&mut self, snapshot: &Snapshot<'_>, config: &DisplayConfig, term: &mut Term) {
        self.started(config, term);
        if config.quiet {
            return;
        }
        // An update's lines in one write (`--top` writes one per flow: fifty flows, one
        // system call instead of fifty).
        let mut lines = String::new();
        for r in &snapshot.readings {
            if matches!(r.meter.role, Role::Input(_) | Role::Output(_)) {
                continue;
            }
            let mut o = Map::new();
            o.insert("type".into(), json!("progress"));
            o.extend(self.figures(r, config));
            if r.meter.role == Role::Transfer {
                o.insert(
                    "inputs".into(),
                    json!(self.part(config, snapshot, is_input)),
                );
                o.insert(
                    "outputs".into(),
                    json!(self.part(config, snapshot, is_output)),
                );
            }
            lines.push_str(&line(Value::Object(o)));
        }
        if !lines.is_empty() {
            term.raw_lines(&lines);
        }
    }

    /// The closing object, handed to the ledger: it is written as `end` once rpv knows the
    /// status it exits with (after a `-M` command has ended, and after the set-up's files
    /// are removed), or as `phase_end` when another display loop follows (`-U`).
    fn finish(&mut self, snapshot: &Snapshot<'_>, config: &DisplayConfig, term: &mut Term) {
        self.started(config, term);
        let meters: Vec<Value> = snapshot
            .readings
            .iter()
            .filter(|r| !matches!(r.meter.role, Role::Input(_) | Role::Output(_)))
            .map(|r| {
                let mut o = self.figures(r, config);
                // The run is over: every meter's figures are final.
                o.insert("done".into(), json!(true));
                let stats = r.tracker.rate_stats().map(|(min, avg, max, mdev)| {
                    json!({"min": number(min), "avg": number(avg), "max": number(max), "mdev": number(mdev)})
                });
                o.insert("rate_stats".into(), json!(stats));
                Value::Object(o)
            })
            .collect();
        let mut end = Map::new();
        end.insert("type".into(), json!("end"));
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
                    "tee": stall.copy,
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
        // Watching a pipeline: the watch's own time, that of the stage that ran longest (a
        // stage's clock stops when it ends; they all start with the watch).
        if self.mode == "pipeline" {
            let longest = snapshot
                .readings
                .iter()
                .map(|r| r.elapsed)
                .fold(0.0, f64::max);
            end.insert("elapsed".into(), number(longest));
        }
        end.insert(
            "inputs".into(),
            json!(self.part(config, snapshot, is_input)),
        );
        end.insert(
            "outputs".into(),
            json!(self.part(config, snapshot, is_output)),
        );
        end.insert("meters".into(), json!(meters));
        let mut ledger = self.ledger.borrow_mut();
        ledger.end = Some(end);
        ledger.stored = self.mode == "store";
    }
}
