//! The source of a local transfer: reads the engine's counters and events.
//!
//! Owns: turning [`Progress`] into a [`MeterState`] — the amount (bytes written minus what
//! still sits unread in the output pipe, or lines), `%T`'s buffer fill (rpv's buffer plus
//! the output pipe's unread bytes, over both capacities), the `-W` start — and deciding when
//! the transfer is over (the engine finished and the output's reader has consumed everything,
//! or is gone). Must not: block, or touch the data path: everything here is a relaxed load or
//! an `ioctl(FIONREAD)` on the display thread.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::Source;
use crate::display::{BufferFill, Waiting};
use crate::error::Side;
use crate::meter::{Blocked, Event, MeterId, MeterState, Phase, Role, Tail, Unit};
use crate::sys::{self, FileKind};
use crate::transfer::output::Output;
use crate::transfer::outputs::{OutputMeter, OutputState};
use crate::transfer::Progress;

/// How the engine's transfer is shown.
#[derive(Debug, Clone)]
pub(crate) struct EngineMeter {
    /// The meter's id.
    pub id: MeterId,
    /// Transfer, or a side of `-M both`.
    pub role: Role,
    /// Bytes or lines.
    pub unit: Unit,
    /// Total size in the unit, 0 = unknown.
    pub size: u64,
    /// `-W`: the clock starts at the first write.
    pub wait: bool,
    /// The meter `%{ratio}` compares with.
    pub partner: Option<MeterId>,
    /// The format shows `%A`/`%L`: the tail is published.
    pub capture: bool,
    /// `--each`: a meter per input as well.
    pub each: bool,
    /// The `--tee` outputs: their names and counters (a meter each).
    pub outputs: Vec<(String, Arc<OutputMeter>)>,
    /// `-M`: the command at one side of this transfer (PID, command line, and the side:
    /// input for `-M out`, output for `-M in`).
    pub command: Option<(u32, String, Side)>,
}

/// What is known of one input (`--each`), from the engine's events.
#[derive(Debug, Clone, Default)]
struct InputRow {
    name: String,
    size: u64,
    opened_ns: Option<u64>,
    /// The transfer's bytes and lines when the input was opened.
    start: (u64, u64),
    /// Its bytes and lines once done, and when.
    done: Option<(u64, u64, u64)>,
    /// An interrupt cut it short: it keeps its real figures and is not ended.
    interrupted: bool,
    /// Why it could not be copied.
    error: Option<String>,
}

/// A local transfer, seen from the display thread.
pub(crate) struct EngineSource<'a> {
    progress: &'a Progress,
    /// The engine's output, until the transfer is over (then dropped: a pipe to a `-M`
    /// command closes, so the command sees the end of its input).
    out: Option<Output>,
    /// Capacity of the output pipe (0 if the output is not a pipe).
    out_pipe: usize,
    meter: EngineMeter,
    start_ns: u64,
    /// `--each`: the inputs seen so far, by operand index.
    inputs: Vec<InputRow>,
    /// Bytes and lines of the inputs done so far.
    done: (u64, u64),
    /// The amount, and whether the transfer is over, for the pipeline view's own stage
    /// (`--pipeline`).
    mirror: Option<Arc<crate::source::pipeline::OwnStage>>,
    /// Capacity of standard input when it is a pipe and an input (for `%{bottleneck}`).
    in_pipe: usize,
    /// The user interrupted: rpv leaves without waiting for the reader, so what is in the
    /// output pipe has gone through (the reader gets it after rpv is gone).
    stopped: bool,
    /// Added to the engine's input indexes, so that the inputs of the two sides of `-M both`
    /// have distinct indexes in events and meters.
    first_input: usize,
}

impl<'a> EngineSource<'a> {
    /// Watches `progress`, published by an engine writing to `out`; the clock starts now
    /// (or at the first write with `-W`).
    pub(crate) fn new(progress: &'a Progress, out: Output, meter: EngineMeter) -> Self {
        let out_pipe = match sys::fstat(out.fd()) {
            Ok(info) if info.kind == FileKind::Pipe => sys::pipe_size(out.fd()).unwrap_or(65536),
            _ => 0,
        };
        EngineSource {
            progress,
            out: Some(out),
            out_pipe,
            meter,
            start_ns: sys::monotonic_ns(),
            inputs: Vec::new(),
            done: (0, 0),
            mirror: None,
            in_pipe: 0,
            stopped: false,
            first_input: 0,
        }
    }

    /// Numbers this transfer's inputs from `first` on (the output side of `-M both`, after
    /// the input side's).
    pub(crate) fn number_inputs_from(&mut self, first: usize) {
        self.first_input = first;
    }

    /// Keeps `mirror` up to date with the bytes written and the end of the transfer (read
    /// by the pipeline view).
    pub(crate) fn mirror_to(&mut self, mirror: Arc<crate::source::pipeline::OwnStage>) {
        self.mirror = Some(mirror);
    }

    /// Standard input is one of the inputs: `%{bottleneck}` looks at its fill too.
    pub(crate) fn watch_stdin(&mut self) {
        if sys::fstat(sys::stdin_fd()).is_ok_and(|i| i.kind == FileKind::Pipe) {
            self.in_pipe = sys::pipe_size(sys::stdin_fd()).unwrap_or(65536);
        }
    }

    /// Which side this stage waits on: its output pipe nearly full (the reader is slower),
    /// else its input pipe nearly empty (the writer is slower), else it is the slow one.
    /// Sampled here, on the display thread: nothing on the data path.
    fn waiting(&self, unread_out: u64) -> Option<Waiting> {
        if self.out_pipe > 0 && unread_out * 10 >= self.out_pipe as u64 * 9 {
            return Some(Waiting::Output);
        }
        if self.in_pipe == 0 {
            return (self.out_pipe > 0).then_some(Waiting::Busy);
        }
        let queued = sys::unread_bytes(sys::stdin_fd()).unwrap_or(0) as u64;
        if queued * 10 <= self.in_pipe as u64 {
            Some(Waiting::Input)
        } else {
            Some(Waiting::Busy)
        }
    }

    /// Id of the meter of input `index`.
    fn input_id(&self, index: usize) -> MeterId {
        self.meter.id * 1000 + 100 + index as MeterId
    }

    /// Follows the inputs through the engine's events (for `--each`).
    fn note(&mut self, event: &Event) {
        let row = |inputs: &mut Vec<InputRow>, i: usize| -> usize {
            if inputs.len() <= i {
                inputs.resize(i + 1, InputRow::default());
            }
            i
        };
        match event {
            Event::InputOpened {
                input,
                name,
                size,
                at_ns,
            } => {
                let i = row(&mut self.inputs, *input);
                self.inputs[i] = InputRow {
                    name: name.clone(),
                    size: *size,
                    opened_ns: Some(*at_ns),
                    start: self.done,
                    ..InputRow::default()
                };
            }
            Event::InputDone {
                input,
                bytes,
                lines,
                at_ns,
                interrupted,
            } => {
                let i = row(&mut self.inputs, *input);
                self.inputs[i].done = Some((*bytes, *lines, *at_ns));
                self.inputs[i].interrupted = *interrupted;
                self.done = (self.done.0 + bytes, self.done.1 + lines);
            }
            Event::InputFailed { input, error } => {
                let i = row(&mut self.inputs, *input);
                let r = &mut self.inputs[i];
                if r.opened_ns.is_none() {
                    // Never opened: nothing moved, and it ended at once.
                    r.name = match error {
                        crate::error::Error::OpenInput { name, .. }
                        | crate::error::Error::InputIsOutput { name } => name.clone(),
                        _ => r.name.clone(),
                    };
                    let now = sys::monotonic_ns();
                    r.opened_ns = Some(now);
                    r.done = Some((0, 0, now));
                }
                r.error = Some(error.to_string());
            }
            _ => {}
        }
    }

    /// The meters of the `--tee` outputs: bytes each has taken; ended once it failed or its
    /// reader went away.
    fn output_meters(&self, out: &mut Vec<MeterState>) {
        for (index, (name, meter)) in self.meter.outputs.iter().enumerate() {
            let amount = meter.bytes();
            let (phase, note) = match meter.state() {
                OutputState::Open => (Phase::Running, None),
                OutputState::Failed => (Phase::Ended, Some("write failed".to_string())),
                OutputState::Closed => (Phase::Ended, Some("reader gone".to_string())),
            };
            out.push(MeterState {
                id: self.meter.id * 1000 + 500 + index as MeterId,
                role: Role::Output(index),
                label: crate::meter::Label::Text(format!("--tee {name}")),
                unit: Unit::Bytes,
                amount,
                moved: amount,
                size: self.meter.size,
                started_ns: Some(self.start_ns),
                phase,
                note: note.filter(|_| amount == 0),
                ..MeterState::default()
            });
        }
    }

    /// The meters of the inputs (`--each`): the current one moving, the others final.
    fn input_meters(&self, total: (u64, u64), out: &mut Vec<MeterState>) {
        for (index, r) in self.inputs.iter().enumerate() {
            let Some(opened) = r.opened_ns else { continue };
            let (bytes, lines, ended_ns) = match r.done {
                Some((bytes, lines, at)) => (bytes, lines, Some(at)),
                None => (
                    total.0.saturating_sub(r.start.0),
                    total.1.saturating_sub(r.start.1),
                    None,
                ),
            };
            let amount = match self.meter.unit {
                Unit::Lines => lines,
                Unit::Bytes => bytes,
            };
            // Cut short by an interrupt: its clock stops, but it is not done (its row shows
            // how far it got, not a full bar).
            let ended = (r.done.is_some() && !r.interrupted) || r.error.is_some();
            out.push(MeterState {
                id: self.input_id(index),
                role: Role::Input(self.first_input + index),
                label: crate::meter::Label::Text(r.name.clone()),
                unit: self.meter.unit,
                amount,
                moved: amount,
                size: if self.meter.unit == Unit::Bytes {
                    r.size
                } else {
                    0
                },
                started_ns: Some(opened),
                ended_ns,
                phase: if ended { Phase::Ended } else { Phase::Running },
                note: r.error.clone(),
                ..MeterState::default()
            });
        }
    }

    /// Bytes written but still unread in the output pipe (they have not been transferred
    /// yet as far as the user is concerned). None once the user interrupted: rpv leaves them
    /// to the reader.
    fn unread(&self) -> u64 {
        let Some(out) = &self.out else { return 0 };
        if self.out_pipe == 0
            || self.stopped
            || self.progress.outcome.output_closed.load(Ordering::Relaxed)
        {
            return 0;
        }
        sys::unread_bytes(out.fd()).unwrap_or(0) as u64
    }

    /// `%T`: how full the buffers between rpv's input and its reader are.
    fn buffer(&self, unread: u64) -> BufferFill {
        let c = &self.progress.counters;
        let own = if c.zero_copy.load(Ordering::Relaxed) {
            0
        } else {
            c.buffer_capacity.load(Ordering::Relaxed)
        };
        if own == 0 && self.out_pipe == 0 {
            return if c.zero_copy.load(Ordering::Relaxed) {
                BufferFill::Splice
            } else {
                BufferFill::None
            };
        }
        let held = if own > 0 {
            c.buffered.load(Ordering::Relaxed)
        } else {
            0
        };
        let capacity = own + self.out_pipe as u64;
        BufferFill::Fraction(((held + unread) as f64 / capacity as f64).clamp(0.0, 1.0))
    }

    /// True when the output's reader has consumed everything (or is gone, or the output is
    /// not a pipe): only then is the final update drawn, like pv, but without pv's hang when
    /// the reader exits early.
    fn drained(&self) -> bool {
        let Some(out) = &self.out else { return true };
        if self.out_pipe == 0 || self.progress.outcome.output_closed.load(Ordering::Relaxed) {
            return true;
        }
        if sys::unread_bytes(out.fd()).map_or(true, |n| n == 0) {
            return true;
        }
        // POLLERR on a pipe's write end: the read end is closed.
        sys::poll_one(out.fd(), 0, 0).map_or(true, |r| r & (libc::POLLERR | libc::POLLHUP) != 0)
    }
}

impl Source for EngineSource<'_> {
    fn sample(&mut self, _now_ns: u64, out: &mut Vec<MeterState>) {
        let c = &self.progress.counters;
        let unread = self.unread();
        let bytes = c.bytes.load(Ordering::Relaxed).saturating_sub(unread);
        let lines = c.lines.load(Ordering::Relaxed);
        let amount = match self.meter.unit {
            Unit::Lines => lines,
            Unit::Bytes => bytes,
        };
        if self.meter.each {
            self.input_meters((bytes, lines), out);
        }
        self.output_meters(out);
        if let Some(mirror) = &self.mirror {
            mirror
                .bytes
                .store(c.bytes.load(Ordering::Relaxed), Ordering::Relaxed);
            mirror
                .done
                .store(self.progress.is_done(), Ordering::Relaxed);
        }
        let waiting = self.waiting(unread);
        let started_ns = if self.meter.wait {
            Some(c.first_write_ns.load(Ordering::Relaxed)).filter(|&t| t != 0)
        } else {
            Some(self.start_ns)
        };
        let tail = self.meter.capture.then(|| {
            self.progress
                .tail
                .lock()
                .map(|t| t.clone())
                .unwrap_or_else(|_| Tail::default())
        });
        out.push(MeterState {
            id: self.meter.id,
            role: self.meter.role,
            unit: self.meter.unit,
            amount,
            moved: amount,
            size: self.meter.size,
            started_ns,
            buffer: self.buffer(unread),
            phase: if started_ns.is_some() {
                Phase::Running
            } else {
                Phase::Waiting
            },
            partner: self.meter.partner,
            tail,
            waiting,
            ..MeterState::default()
        });
    }

    fn events(&mut self, out: &mut Vec<Event>) {
        for mut event in self.progress.take_events() {
            self.note(&event);
            if let Event::InputOpened { input, .. }
            | Event::InputFailed { input, .. }
            | Event::PathChosen { input, .. }
            | Event::Fallback { input, .. }
            | Event::InputDone { input, .. } = &mut event
            {
                *input += self.first_input;
            }
            out.push(event);
        }
    }

    fn finished(&mut self) -> bool {
        let over = self.progress.is_done()
            && (self.progress.outcome.aborted.load(Ordering::Relaxed) || self.drained());
        if over {
            self.out = None;
        }
        over
    }

    fn status(&self) -> u8 {
        self.progress.status()
    }

    fn aborted(&self) -> bool {
        self.progress.outcome.aborted.load(Ordering::Relaxed)
    }

    fn stop(&mut self) {
        self.stopped = true;
        self.progress.stop();
    }

    fn stopped(&self) -> bool {
        self.progress.is_done()
    }

    fn retune(&mut self, rate_limit: Option<u64>, buffer_size: Option<u64>) {
        self.progress.control.retune(rate_limit, buffer_size);
    }

    /// From the pipes' fill first (a full output pipe: its reader; an empty input pipe: its
    /// writer), then from where the data is: input waiting in its pipe means the writing
    /// waits (a `--tee` output, a file, a device); on the read/write path, bytes in rpv's
    /// buffer mean the write waits and an empty buffer the read; on a zero-copy path into a
    /// pipe with room, the input (a file, a device, a socket) does not deliver.
    fn blocked(&self) -> Option<Blocked> {
        let pipe_of = |fd| match sys::pipe_id(fd) {
            Some(sys::PipeId::Pipe(inode)) => (Some(inode), None),
            Some(sys::PipeId::Fifo(dev, ino)) => (None, Some((dev, ino))),
            None => (None, None),
        };
        let out_pipe = || self.out.as_ref().map_or((None, None), |o| pipe_of(o.fd()));
        let unread = self.unread();
        let c = &self.progress.counters;
        let found = |side, (pipe, fifo)| Blocked {
            side,
            pipe,
            fifo,
            ..Blocked::default()
        };
        // A --tee copy that is full (its reader does not read), or behind the main output
        // (which is not full): that copy holds the rest.
        let lagging = || {
            let written = c.bytes.load(Ordering::Relaxed);
            let open = || {
                self.meter
                    .outputs
                    .iter()
                    .filter(|(_, m)| m.state() == OutputState::Open)
            };
            open().find(|(_, m)| m.full()).or_else(|| {
                open()
                    .filter(|(_, m)| m.bytes() < written)
                    .min_by_key(|(_, m)| m.bytes())
            })
        };
        let blocked = if self.out_pipe > 0 && unread * 10 >= self.out_pipe as u64 * 9 {
            Some(found(Side::Output, out_pipe()))
        } else if let Some((name, meter)) = lagging() {
            let ends = match meter.pipe() {
                Some(sys::PipeId::Pipe(inode)) => (Some(inode), None),
                Some(sys::PipeId::Fifo(dev, ino)) => (None, Some((dev, ino))),
                None => (None, None),
            };
            Some(Blocked {
                copy: Some(name.clone()),
                ..found(Side::Output, ends)
            })
        } else if self.in_pipe > 0 {
            let queued = sys::unread_bytes(sys::stdin_fd()).unwrap_or(0) as u64;
            Some(if queued * 10 <= self.in_pipe as u64 {
                found(Side::Input, pipe_of(sys::stdin_fd()))
            } else {
                found(Side::Output, (None, None))
            })
        } else if !c.zero_copy.load(Ordering::Relaxed)
            && c.buffer_capacity.load(Ordering::Relaxed) > 0
        {
            Some(if c.buffered.load(Ordering::Relaxed) > 0 {
                found(Side::Output, out_pipe())
            } else {
                found(Side::Input, (None, None))
            })
        } else if self.out_pipe > 0 {
            Some(found(Side::Input, (None, None)))
        } else {
            // `-M out` into a file or a device: nothing else can hold it than its command.
            self.meter
                .command
                .as_ref()
                .filter(|(_, _, side)| *side == Side::Input)
                .map(|_| found(Side::Input, (None, None)))
        };
        // The -M command at that side: named as rpv started it (not a process under it).
        blocked.map(|mut b| {
            if let Some((pid, command, side)) = &self.meter.command {
                if *side == b.side && b.copy.is_none() {
                    b.command = Some((*pid, command.clone()));
                }
            }
            b
        })
    }

    fn poll_period_ns(&self) -> Option<u64> {
        // After the engine is done, wait for the reader to drain the pipe.
        self.progress.is_done().then_some(20_000_000)
    }
}
