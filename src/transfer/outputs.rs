//! Extra outputs (`--tee FILE`): opening them the way `-o` opens its file, what a failing
//! output does to the run (`--tee-error MODE`), and the per-output counters a display reads.
//!
//! Owns: the outside interface of the fan-out. The caller opens each `--tee` path with
//! [`open_tee`] (before the data thread starts) and hands the [`TeeOutput`]s to the engine in
//! `Settings::tees`; each carries an [`OutputMeter`] that the engine updates with relaxed
//! stores, at most once per chunk, and that a display may read at any time through its
//! `Arc`. Must not: move data (the engine does, in `fanout.rs` and the read/write path) or
//! print (failures go through `Shared::report`).

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;

use super::input;
use crate::sys::{self, FileKind};

/// What a failing output does to the run (`--tee-error MODE`; the names are GNU tee's
/// `--output-error` modes). The main output's write errors always end the run, as in pv;
/// these modes decide what a failed `--tee` output does, and whether the main output's
/// reader going away ends the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ErrorMode {
    /// A failed `--tee` output (write error or reader gone) is reported and gets no more
    /// data; the other outputs go on. The default.
    #[default]
    Warn,
    /// As [`ErrorMode::Warn`], but a `--tee` output whose reader went away stops quietly
    /// (no message, no status bit), as the main output does.
    WarnNoPipe,
    /// Any output failure ends the run: a `--tee` output's (reported, status 16), or the
    /// main output's reader going away (quietly, status 0, as pv alone does).
    Exit,
    /// A write error on a `--tee` output ends the run; a reader going away (on any output)
    /// only stops that output.
    ExitNoPipe,
}

impl ErrorMode {
    /// Every mode by its option value.
    pub const NAMES: [(&'static str, ErrorMode); 4] = [
        ("warn", ErrorMode::Warn),
        ("warn-nopipe", ErrorMode::WarnNoPipe),
        ("exit", ErrorMode::Exit),
        ("exit-nopipe", ErrorMode::ExitNoPipe),
    ];

    /// The mode named `name` (exact match).
    pub fn from_name(name: &str) -> Option<ErrorMode> {
        Self::NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|&(_, mode)| mode)
    }

    /// Whether a `--tee` output's failure is reported (message and exit status 16);
    /// `broken_pipe`: its reader went away.
    pub fn reports(self, broken_pipe: bool) -> bool {
        match self {
            ErrorMode::Warn | ErrorMode::Exit => true,
            ErrorMode::WarnNoPipe | ErrorMode::ExitNoPipe => !broken_pipe,
        }
    }

    /// Whether a `--tee` output's failure ends the whole run.
    pub fn ends_run(self, broken_pipe: bool) -> bool {
        match self {
            ErrorMode::Exit => true,
            ErrorMode::ExitNoPipe => !broken_pipe,
            ErrorMode::Warn | ErrorMode::WarnNoPipe => false,
        }
    }

    /// Whether the main output's reader going away ends the run while `--tee` outputs are
    /// still open (otherwise they get the rest of the input).
    pub fn main_gone_ends_run(self) -> bool {
        self == ErrorMode::Exit
    }
}

/// Where an output stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum OutputState {
    /// Receiving data (or waiting for it).
    Open = 0,
    /// A write failed: it gets no more data (the bytes it has are a prefix of the stream).
    Failed = 1,
    /// Its reader went away: it gets no more data.
    Closed = 2,
}

/// Figures of one output, written by the data thread and read by the display thread.
#[derive(Debug, Default)]
pub struct OutputMeter {
    bytes: AtomicU64,
    state: AtomicU8,
}

impl OutputMeter {
    /// Bytes this output has received: written to it, or moved into its pipe.
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Whether it still receives data.
    pub fn state(&self) -> OutputState {
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
pub struct TeeOutput {
    /// The open file (a regular file, FIFO, device, or a pipe named by `/dev/fd/N`).
    pub file: File,
    /// The path as given, for messages and the display.
    pub name: String,
    /// Its figures; clone the `Arc` to read them from another thread.
    pub meter: Arc<OutputMeter>,
    /// The descriptor's file description is shared with other processes (`-`, a copy of
    /// standard output), so rpv leaves its flags alone. False for a path rpv opened.
    pub shared: bool,
}

/// Opens the `--tee` path `path` like `-o` opens its file (see [`open_output`]); `-` is a
/// second descriptor for standard output (for `-o FILE --tee -`). Errors name nothing:
/// the caller prints `rpv: PATH: <error>`.
pub fn open_tee(path: &str, inputs: &[String]) -> io::Result<TeeOutput> {
    let file = if path == "-" {
        File::from(sys::stdout_fd().try_clone_to_owned()?)
    } else {
        open_output(path, inputs)?
    };
    Ok(TeeOutput {
        file,
        name: path.to_string(),
        meter: Arc::new(OutputMeter::default()),
        shared: path == "-",
    })
}

/// Opens an output path for writing the way `-o` does: created if missing (mode 0666 minus
/// the umask), opened without truncation (a FIFO waits here for its reader), and then
/// truncated only if it is a regular file and at least one input is not that file, so
/// `rpv -o x x` leaves `x` intact (the engine then skips the input as "input file is output
/// file").
pub fn open_output(path: &str, inputs: &[String]) -> io::Result<File> {
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)?;
    let out_info = sys::fstat(file.as_fd())?;
    if out_info.kind == FileKind::Regular {
        let is_out = |operand: &String| {
            let info = if operand == "-" {
                sys::fstat(sys::stdin_fd()).ok()
            } else {
                sys::stat(std::path::Path::new(operand)).ok()
            };
            info.is_some_and(|i| input::is_output(&i, &out_info))
        };
        if !inputs.iter().all(is_out) {
            sys::ftruncate(file.as_fd(), 0)?;
        }
    }
    Ok(file)
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

    #[test]
    fn a_tee_file_is_truncated_unless_every_input_is_that_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t");
        let p = path.to_str().unwrap().to_string();
        std::fs::write(&path, b"old contents").unwrap();
        drop(open_tee(&p, std::slice::from_ref(&p)).unwrap());
        assert_eq!(std::fs::read(&path).unwrap(), b"old contents");
        let other = dir.path().join("in").to_str().unwrap().to_string();
        std::fs::write(&other, b"x").unwrap();
        let tee = open_tee(&p, &[p.clone(), other]).unwrap();
        assert_eq!(tee.name, p);
        assert_eq!(std::fs::read(&path).unwrap(), b"");
        let missing = dir.path().join("new");
        drop(open_tee(missing.to_str().unwrap(), &["-".into()]).unwrap());
        assert!(missing.exists());
    }
}
