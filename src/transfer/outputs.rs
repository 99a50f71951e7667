//! Extra outputs (`--tee FILE`): what a failing output does to the run (`--tee-error
//! MODE`), and the per-output counters a display reads.
//!
//! Owns: the outside interface of the fan-out. The plan opens each `--tee` path (before the
//! data thread starts) and hands the [`TeeOutput`]s to the engine in `Settings::tees`; each
//! carries an [`OutputMeter`] that the engine updates with relaxed stores, at most once per
//! call that moved data, and that the display reads at any time through its `Arc`. Must not:
//! move data (the engine does, in `fanout.rs` and the read/write path) or print (failures
//! are events).

use std::fs::File;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;

pub(crate) use crate::cli::TeeErrorMode as ErrorMode;

/// Where an output stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum OutputState {
    /// Receiving data (or waiting for it).
    Open = 0,
    /// A write failed: it gets no more data (the bytes it has are a prefix of the stream).
    Failed = 1,
    /// Its reader went away: it gets no more data.
    Closed = 2,
}

/// Figures of one output, written by the data thread and read by the display thread.
#[derive(Debug, Default)]
pub(crate) struct OutputMeter {
    bytes: AtomicU64,
    state: AtomicU8,
    /// The pipe or FIFO the output is, if it is one, and its descriptor (for the stall
    /// watchdog: how full it is, and the process at its other end).
    pipe: Option<(crate::sys::PipeId, std::os::fd::RawFd)>,
}

impl OutputMeter {
    /// The meter of an output open on `file`.
    pub(crate) fn for_file(file: &File) -> OutputMeter {
        use std::os::fd::{AsFd, AsRawFd};
        OutputMeter {
            pipe: crate::sys::pipe_id(file.as_fd()).map(|id| (id, file.as_raw_fd())),
            ..OutputMeter::default()
        }
    }

    /// The pipe or FIFO this output is, if it is one.
    pub(crate) fn pipe(&self) -> Option<crate::sys::PipeId> {
        self.pipe.map(|(id, _)| id)
    }

    /// Whether this output is a pipe or FIFO that is (nearly) full: its reader does not
    /// keep up. Looked at from the display thread, once, when a stall is reported.
    pub(crate) fn full(&self) -> bool {
        self.pipe
            .and_then(|(id, raw)| crate::sys::pipe_fill(raw, id))
            .is_some_and(|(unread, capacity)| unread * 10 >= capacity * 9)
    }

    /// Bytes this output has received: written to it, or moved into its pipe.
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Whether it still receives data.
    pub(crate) fn state(&self) -> OutputState {
        match self.state.load(Ordering::Relaxed) {
            1 => OutputState::Failed,
            2 => OutputState::Closed,
            _ => OutputState::Open,
        }
    }

    pub(super) fn set_bytes(&self, bytes: u64) {
        self.bytes.store(bytes, Ordering::Relaxed);
    }

    pub(super) fn set_state(&self, state: OutputState) {
        self.state.store(state as u8, Ordering::Relaxed);
    }
}

/// One `--tee` output, open and ready for the engine.
#[derive(Debug)]
pub(crate) struct TeeOutput {
    /// The open file (a regular file, FIFO, device, or a pipe named by `/dev/fd/N`).
    pub file: File,
    /// The path as given, for messages and the display.
    pub name: String,
    /// The path as given, byte for byte (for `--json`, which keeps names that are not
    /// UTF-8).
    pub path: std::path::PathBuf,
    /// Its figures; clone the `Arc` to read them from another thread.
    pub meter: Arc<OutputMeter>,
    /// The descriptor's file description is shared with other processes (`-`, a copy of
    /// standard output), so rpv leaves its flags alone. False for a path rpv opened.
    pub shared: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_by_name_and_their_rules() {
        assert_eq!(ErrorMode::from_name("warn"), Some(ErrorMode::Warn));
        assert_eq!(
            ErrorMode::from_name("exit-nopipe"),
            Some(ErrorMode::ExitNoPipe)
        );
        assert_eq!(ErrorMode::from_name("ex"), None);
        assert_eq!(ErrorMode::default(), ErrorMode::Warn);
        // (mode, reports EPIPE, reports EIO, EPIPE ends, EIO ends, main gone ends)
        let table = [
            (ErrorMode::Warn, true, true, false, false, false),
            (ErrorMode::WarnNoPipe, false, true, false, false, false),
            (ErrorMode::Exit, true, true, true, true, true),
            (ErrorMode::ExitNoPipe, false, true, false, true, false),
        ];
        for (mode, rep_pipe, rep_io, end_pipe, end_io, main) in table {
            assert_eq!(mode.reports(true), rep_pipe, "{mode:?}");
            assert_eq!(mode.reports(false), rep_io, "{mode:?}");
            assert_eq!(mode.ends_run(true), end_pipe, "{mode:?}");
            assert_eq!(mode.ends_run(false), end_io, "{mode:?}");
            assert_eq!(mode.main_gone_ends_run(), main, "{mode:?}");
        }
    }

    #[test]
    fn meter_round_trips() {
        let m = OutputMeter::default();
        assert_eq!((m.bytes(), m.state()), (0, OutputState::Open));
        m.set_bytes(42);
        m.set_state(OutputState::Closed);
        assert_eq!((m.bytes(), m.state()), (42, OutputState::Closed));
        m.set_state(OutputState::Failed);
        assert_eq!(m.state(), OutputState::Failed);
    }
}
