//! The progress model: what every source of progress publishes and every sink reads.
//!
//! Owns: [`MeterState`] (one measured quantity: an amount, its size if known, when its clock
//! started, what it is called, its unit, how full its buffer is and its phase), [`Event`]
//! (the typed things that happen during a run: an input opened, a path chosen, a fallback,
//! a read error skipped, an output gone, an error, the end), [`Request`] (what a sink asks
//! of the sources: `--top`'s keys) and [`Tail`] (the end of the data, for `%A`/`%L`).
//!
//! Must not: read clocks, files or counters, or format anything for a terminal. Sources
//! (the engine's, `-d`'s, `-Q`'s, `--pipeline`'s and `--top`'s) fill these values; sinks
//! (the line and cursor rows, numeric output, the multi-row views of `--each`, `-d`,
//! `--pipeline` and `--top`, `--json`, `--log`, titles, statistics, and the integrations:
//! the terminal's progress indicator, systemd's status and the two metrics files) consume
//! them and never know which source produced them.

use crate::display::{BufferFill, Waiting};
use crate::error::{Error, Side};
use crate::pipeline::model::{Split, StageView};
// Here for the meter's users; it lives in `units` so the control protocol can name it
// without the meter.
pub(crate) use crate::units::Unit;

/// Identifies a meter for the whole run (the display keeps its rate history by it).
pub(crate) type MeterId = u64;

/// What a meter measures, which tells sinks where it belongs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Role {
    /// A whole transfer: the line pv shows.
    #[default]
    Transfer,
    /// `-M both`, the side that feeds the command's input.
    MonitorIn,
    /// `-M both`, the side that carries the command's output.
    MonitorOut,
    /// One input of a transfer (the `index`-th operand).
    Input(usize),
    /// One `--tee` output of a transfer (the `index`-th).
    Output(usize),
    /// A descriptor watched with `-d`.
    Descriptor,
    /// A stage of a pipeline (`--pipeline`).
    Stage,
    /// A data flow found by `--top`.
    Flow,
}

/// Where a meter is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Phase {
    /// Its clock has not started yet (`-W`: nothing written so far).
    Waiting,
    /// Moving.
    #[default]
    Running,
    /// Finished: its figures are final and stay as they are (a watched descriptor that was
    /// closed, an input that has been read to its end).
    Ended,
}

/// Which side a transfer that does not move waits on (for the stall watchdog's message).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Blocked {
    /// Reading the input, or writing the output.
    pub side: Side,
    /// The inode of the pipe on that side, when it is a pipe (its other end is a process).
    pub pipe: Option<u64>,
    /// The device and inode of the named FIFO on that side (a `--tee` FIFO).
    pub fifo: Option<(u64, u64)>,
    /// The `--tee` copy rpv waits to write, when that is what holds the transfer.
    pub copy: Option<String>,
    /// The command `-M` started, when it is at that side's other end: PID, command line.
    pub command: Option<(u32, String)>,
}

/// The name of a meter, when it has one of its own.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) enum Label {
    /// No name of its own (a transfer: the display's `-N` applies).
    #[default]
    None,
    /// A fixed text (an input's name).
    Text(String),
    /// A watched descriptor: shown as `FD:PATH`, or `PID:FD:PATH` when several processes are
    /// watched, with the path shortened to fit the terminal width.
    Descriptor {
        /// The process.
        pid: u32,
        /// The descriptor.
        fd: i32,
        /// What it is open on (relative to the current directory when below it), for
        /// people: bytes that are not UTF-8 show as U+FFFD.
        path: String,
        /// The same path's exact bytes, when they are not UTF-8.
        raw_path: Option<std::ffi::OsString>,
        /// Appended after shortening (`(process reads)` for a pipe or socket).
        note: &'static str,
        /// Show the PID (several processes are watched).
        with_pid: bool,
        /// The name goes in front of the line even when the format has no `%N` (several
        /// items, or a whole process, are watched).
        prefix: bool,
    },
}

/// The state of one meter at one moment.
#[derive(Debug, Clone, Default)]
pub(crate) struct MeterState {
    /// Stable for the whole run.
    pub id: MeterId,
    /// What it measures.
    pub role: Role,
    /// Its own name, if any.
    pub label: Label,
    /// Bytes or lines.
    pub unit: Unit,
    /// The amount shown (bytes or lines transferred; a watched descriptor's position).
    pub amount: u64,
    /// Forward progress since the meter started, what rates are computed from (equal to
    /// `amount` except for watched descriptors, whose position may move back).
    pub moved: u64,
    /// Total size in the same unit; 0 = unknown.
    pub size: u64,
    /// Monotonic time (ns) its clock started; `None` while [`Phase::Waiting`].
    pub started_ns: Option<u64>,
    /// Monotonic time (ns) it ended, when it ended before the run (an input read to its
    /// end): its clock stops there.
    pub ended_ns: Option<u64>,
    /// `%T`: how full the transfer buffer (or, with splice, the output pipe) is.
    pub buffer: BufferFill,
    /// Where it is in its life.
    pub phase: Phase,
    /// The meter this one is compared with in `%{ratio}` (`-M both`).
    pub partner: Option<MeterId>,
    /// The end of the data, when the format shows `%A` or `%L`.
    pub tail: Option<Tail>,
    /// Why the meter ended without moving anything (an input that could not be opened).
    pub note: Option<String>,
    /// `%{bottleneck}`: which side a transfer waits on (from its pipes' fill).
    pub waiting: Option<Waiting>,
    /// What the meter is a view of, besides its figures: a stage of a pipeline or a flow
    /// of `--top` (one or the other, never both).
    pub subject: Subject,
}

/// What a meter is a view of, besides its figures.
#[derive(Debug, Clone, Default)]
pub(crate) enum Subject {
    /// rpv's own transfer, a watched descriptor, another rpv: nothing more to show.
    #[default]
    Figures,
    /// A stage of a pipeline: what the pipeline view shows of it.
    Stage(Box<StageView>),
    /// A flow of `--top`: what it is.
    Flow(Box<crate::top::FlowView>),
}

impl MeterState {
    /// The stage of a pipeline this meter shows, if it shows one.
    pub(crate) fn stage(&self) -> Option<&StageView> {
        match &self.subject {
            Subject::Stage(stage) => Some(stage),
            _ => None,
        }
    }

    /// The flow of `--top` this meter shows, if it shows one.
    pub(crate) fn flow(&self) -> Option<&crate::top::FlowView> {
        match &self.subject {
            Subject::Flow(flow) => Some(flow),
            _ => None,
        }
    }
}

/// Something that happened during a run. Sinks show errors and warnings; the other events
/// are shown only where asked for (`RPV_TEST_TRACE`, NDJSON).
#[derive(Debug)]
pub(crate) enum Event {
    /// An input was opened.
    InputOpened {
        /// Operand index.
        input: usize,
        /// Display name.
        name: String,
        /// Bytes (regular files), 0 = unknown.
        size: u64,
        /// Monotonic time (ns) it was opened.
        at_ns: u64,
    },
    /// An input could not be copied (it could not be opened, it is the output, or a read
    /// failed); its exit bits are counted.
    InputFailed {
        /// Operand index.
        input: usize,
        /// What went wrong.
        error: Error,
    },
    /// The path chosen to move an input (`splice`, `copy_file_range`, `read/write`, …).
    PathChosen {
        /// Operand index.
        input: usize,
        /// Display name.
        name: String,
        /// The path, as the engine names it (`Splice`, `CopyRange`, `ReadWrite`, …).
        path: &'static str,
    },
    /// A zero-copy path was refused and read/write took over at the same offset.
    Fallback {
        /// Operand index.
        input: usize,
        /// Display name.
        name: String,
        /// Zero-copy calls made before the refusal.
        after_calls: u64,
    },
    /// A note on the engine's inner workings, queued only under the `RPV_TEST_TRACE` test
    /// hook (for tests that check which path moved the data).
    Trace(String),
    /// `-E`: unreadable bytes were replaced with zeros.
    ReadErrorSkipped {
        /// Display name.
        name: String,
        /// First byte skipped.
        from: u64,
        /// One past the last byte skipped.
        to: u64,
        /// Whether the skip is reported as a message (`-E` once) or only counted (`-EE`).
        shown: bool,
    },
    /// An input has been read to its end (or abandoned after an error, or cut short by an
    /// interrupt).
    InputDone {
        /// Operand index.
        input: usize,
        /// Bytes written from it.
        bytes: u64,
        /// Lines written from it (line mode).
        lines: u64,
        /// Monotonic time (ns) it was done.
        at_ns: u64,
        /// The run was interrupted (a signal, the stall watchdog) while it was read: it was
        /// not read to its end.
        interrupted: bool,
    },
    /// The output's reader went away: the transfer ends quietly.
    OutputGone,
    /// An error or warning (its exit bits are already counted).
    Error(Error),
    /// The pipeline view's summary at the end: each stage's share of the time as the
    /// bottleneck, where each stage's time went, what to try, and the lines that say it.
    Summary {
        /// `bottleneck: gzip -9 (92% of the time)`, then a line per stage and the advice.
        text: String,
        /// Which pipeline, from 1, when several are watched (one summary each).
        job: Option<u32>,
        /// (command, fraction of the time) for each stage that was ever the bottleneck.
        shares: Vec<(String, f64)>,
        /// (command, where its time went over the watch) for each stage, in order.
        stages: Vec<(String, Option<Split>)>,
        /// What to try, when the cause is clear.
        advice: Option<String>,
    },
    /// The source finished; `status` is its exit status so far.
    Finished {
        /// Exit bits.
        status: u8,
    },
    /// `--top`: the processes rpv may not read, at its last look at the machine.
    Unreadable(crate::top::Hidden),
}

/// What a sink asks of the sources, handed over by the display loop (as `-R`'s changes
/// reach them): the `--top` view's keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Request {
    /// End the run (`q`).
    Quit,
    /// Leave this process out (the view Enter opened), or none.
    Exclude(Option<u32>),
}

impl Event {
    /// The line a person sees for this event (without `rpv: `), if any. Path choices,
    /// fallbacks and adaptations are shown only when `trace` is set (a test hook).
    pub(crate) fn message(&self, trace: bool) -> Option<String> {
        match self {
            Event::Error(e) | Event::InputFailed { error: e, .. } => Some(e.to_string()),
            Event::ReadErrorSkipped {
                name,
                from,
                to,
                shown: true,
            } => Some(format!(
                "{name}: skipped past read error: {from} - {to} ({} B)",
                to - from
            )),
            Event::PathChosen { name, path, .. } if trace => Some(format!("trace: {name}: {path}")),
            Event::Fallback {
                name, after_calls, ..
            } if trace => Some(format!(
                "trace: {name}: ReadWrite after {after_calls} zero-copy calls"
            )),
            Event::Trace(text) if trace => Some(text.clone()),
            _ => None,
        }
    }
}

/// The end of the data written so far, for `%A` (last bytes) and `%L` (previous line).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Tail {
    /// The last bytes written, oldest first, at most [`Tail::LAST`].
    pub last: Vec<u8>,
    /// The most recent complete line, without its separator, at most [`Tail::LINE`] bytes.
    pub line: Vec<u8>,
    /// The start of the line being written now.
    current: Vec<u8>,
}

impl Tail {
    /// Bytes kept for `%A` (pv's limit).
    pub(crate) const LAST: usize = 256;
    /// Bytes kept of a line for `%L` (pv's limit).
    pub(crate) const LINE: usize = 1024;

    /// Records that `data` was written; `sep` ends lines.
    pub(crate) fn feed(&mut self, data: &[u8], sep: u8) {
        let keep = data.len().min(Self::LAST);
        let excess = (self.last.len() + keep).saturating_sub(Self::LAST);
        self.last.drain(..excess);
        self.last.extend_from_slice(&data[data.len() - keep..]);
        let Some(end) = memchr::memrchr(sep, data) else {
            append_capped(&mut self.current, data);
            return;
        };
        let line_data = &data[..end];
        match memchr::memrchr(sep, line_data) {
            Some(start) => {
                self.line.clear();
                append_capped(&mut self.line, &line_data[start + 1..]);
            }
            None => {
                append_capped(&mut self.current, line_data);
                std::mem::swap(&mut self.line, &mut self.current);
            }
        }
        self.current.clear();
        append_capped(&mut self.current, &data[end + 1..]);
    }
}

fn append_capped(buf: &mut Vec<u8>, data: &[u8]) {
    let room = Tail::LINE.saturating_sub(buf.len());
    buf.extend_from_slice(&data[..data.len().min(room)]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_keeps_the_last_bytes_and_the_previous_line() {
        let mut t = Tail::default();
        t.feed(b"first li", b'\n');
        assert_eq!(t.line, b"");
        t.feed(b"ne\nsecond", b'\n');
        assert_eq!(t.line, b"first line");
        t.feed(b" line\nthird\nfour", b'\n');
        assert_eq!(t.line, b"third");
        assert_eq!(t.last, b"first line\nsecond line\nthird\nfour");
        t.feed(&[b'x'; 300], b'\n');
        assert_eq!(t.last, vec![b'x'; 256]);
        assert_eq!(t.line, b"third");
        t.feed(b"\n", b'\n');
        assert_eq!(t.line, [&b"four"[..], &[b'x'; 300]].concat());
    }

    #[test]
    fn trace_events_are_shown_only_when_tracing() {
        let chosen = Event::PathChosen {
            input: 0,
            name: "f".into(),
            path: "Splice",
        };
        assert_eq!(chosen.message(false), None);
        assert_eq!(chosen.message(true).as_deref(), Some("trace: f: Splice"));
        let skipped = Event::ReadErrorSkipped {
            name: "d".into(),
            from: 10,
            to: 14,
            shown: true,
        };
        assert_eq!(
            skipped.message(false).as_deref(),
            Some("d: skipped past read error: 10 - 14 (4 B)")
        );
        let error = Event::Error(Error::InputIsOutput { name: "x".into() });
        assert_eq!(
            error.message(false).as_deref(),
            Some("input file is output file: x")
        );
    }
}
