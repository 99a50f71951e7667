//! The engine's answers to a failed call.
//!
//! Owns: what a read, write or zero-copy call's error means for the run: retry (EINTR,
//! or the end of the run when an exit was asked for), wait for the descriptor (EAGAIN),
//! the reader gone (EPIPE), `-E`'s skipping of read errors (how far, up to the input's
//! end), a buffer that cannot be had, write errors named after their output, and the
//! events that report them.
//! Must not: choose paths (`path.rs`) or loop over chunks (`mod.rs`).

use std::io;
use std::os::fd::BorrowedFd;
use std::sync::atomic::Ordering;

use super::{Engine, Step};
use crate::error::{status, Error};
use crate::meter::Event;
use crate::sys::{self, FileKind};

impl Engine<'_> {
    pub(super) fn read_failed(&mut self, fd: BorrowedFd<'_>, name: &str, e: &io::Error) -> Step {
        match e.raw_os_error() {
            Some(libc::EINTR) if crate::signals::exit_requested() => self.interrupted(),
            Some(libc::EINTR) => Step::Continue,
            Some(libc::EAGAIN) => {
                let _ = sys::poll_one(fd, libc::POLLIN, 100);
                Step::Continue
            }
            // An unaligned direct read (a -S or -L cut, a short tail): read through the cache.
            Some(libc::EINVAL)
                if self.settings.modifiers.direct
                    && sys::status_flags(fd).is_ok_and(|f| f & libc::O_DIRECT != 0) =>
            {
                let _ = sys::set_status_flag(fd, libc::O_DIRECT, false);
                Step::Continue
            }
            _ if self.settings.skip_errors > 0 && skippable(e) => self.skip_read_error(fd, name, e),
            _ => {
                let err = clone_error(e);
                let name = name.to_string();
                self.progress.emit(Event::InputFailed {
                    input: self.input,
                    error: Error::Read { name, err },
                });
                Step::NextInput
            }
        }
    }

    /// `-E`: go on past a read error: seek forward by the skip amount and write zeros in
    /// place of the unreadable bytes, so every readable byte stays at its offset. A skip
    /// never goes past the end of the input (the size of a regular file or block device), so
    /// the output keeps the input's length; other inputs are not skipped (pv skips blindly,
    /// and a read error on the last partial block made its output longer than its input).
    pub(super) fn skip_read_error(
        &mut self,
        fd: BorrowedFd<'_>,
        name: &str,
        e: &io::Error,
    ) -> Step {
        self.progress.fail(status::TRANSFER);
        if !self.warned {
            self.warned = true;
            self.progress.emit(Event::Error(Error::other(
                status::TRANSFER,
                format!(
                    "{name}: warning: read errors detected: {}",
                    sys::strerror(e)
                ),
            )));
        }
        let offset = match sys::lseek(fd, 0, libc::SEEK_CUR) {
            Ok(o) => o,
            Err(e) => {
                self.progress.emit(Event::Error(Error::other(
                    status::TRANSFER,
                    format!("{name}: file is not seekable: {}", sys::strerror(&e)),
                )));
                return Step::NextInput;
            }
        };
        let Some(end) = input_end(fd, offset) else {
            self.progress.emit(Event::Error(Error::other(
                status::TRANSFER,
                format!("{name}: read errors are skipped only in regular files and block devices"),
            )));
            return Step::NextInput;
        };
        if offset >= end {
            // Nothing left to skip to: the error was at (or past) the end.
            return Step::NextInput;
        }
        self.errors_in_a_row += 1;
        let amount = skip_amount(self.settings.skip_block, self.errors_in_a_row);
        // Jump to the next multiple of the amount (pv's rounding), but not past the end.
        let mut skip = amount - offset % amount;
        skip = skip
            .min(self.buf.len() as u64)
            .min(self.stop_remaining().unwrap_or(u64::MAX))
            .min(end - offset)
            .max(1);
        if sys::lseek(fd, (offset + skip) as i64, libc::SEEK_SET).is_err() {
            skip = 1;
            if let Err(e) = sys::lseek(fd, (offset + 1) as i64, libc::SEEK_SET) {
                if e.raw_os_error() != Some(libc::EINVAL) {
                    self.progress.emit(Event::Error(Error::other(
                        0,
                        format!("{name}: failed to seek past error: {}", sys::strerror(&e)),
                    )));
                }
                return Step::NextInput;
            }
        }
        let n = skip as usize;
        self.buf[..n].fill(0);
        self.pending = (0, n);
        self.read += skip;
        self.progress.emit(Event::ReadErrorSkipped {
            name: name.to_string(),
            from: offset,
            to: offset + skip,
            shown: self.settings.skip_errors == 1,
        });
        Step::Continue
    }

    /// The read/write buffer could not be allocated: the end of the transfer with pv's
    /// message and status 64, or, when `-R -B` asked for a new size, the old buffer goes on.
    pub(super) fn buffer_failed(&mut self, e: &io::Error) -> Step {
        let message = format!("buffer allocation failed: {}", sys::strerror(e));
        if self.buf.is_empty() {
            self.progress.outcome.aborted.store(true, Ordering::Relaxed);
            self.progress
                .emit(Event::Error(Error::other(status::USAGE, message)));
            return Step::End;
        }
        self.buffer_size = self.buf.len();
        self.progress.emit(Event::Error(Error::other(0, message)));
        Step::Continue
    }

    /// A call of the output's writer failed: EPIPE from a write is the reader going away;
    /// anything else (EPIPE from `-Y`'s fdatasync or `-O`'s ftruncate included) is a write
    /// error, named after the output when it is not the main one (the `-U` store).
    pub(super) fn write_failed(&mut self, e: &io::Error) -> Step {
        if self.writer.reader_gone(e) {
            return self.output_gone();
        }
        if e.raw_os_error() == Some(libc::EINTR) {
            return self.interrupted();
        }
        self.progress.outcome.aborted.store(true, Ordering::Relaxed);
        let err = clone_error(e);
        self.progress.emit(Event::Error(Error::Write {
            output: self.settings.output_name.clone(),
            err,
        }));
        Step::End
    }

    /// The user interrupted (SIGINT, SIGTERM, SIGHUP) while a call was blocked: stop here;
    /// the display loop reports it. (A data thread sees this when the display loop kicks it
    /// after the signal; a short run on the main thread when the signal itself arrives.)
    pub(super) fn interrupted(&mut self) -> Step {
        self.progress.control.stop.store(true, Ordering::Relaxed);
        Step::End
    }

    /// The reader went away: end quietly with status 0, like pv. With `--tee` outputs still
    /// open they get the rest of the input (unless `--tee-error exit`): Continue.
    pub(super) fn output_gone(&mut self) -> Step {
        self.progress
            .outcome
            .output_closed
            .store(true, Ordering::Relaxed);
        self.progress.emit(Event::OutputGone);
        self.main_live = false;
        if self.tees_live() && !self.settings.tee_error.main_gone_ends_run() {
            Step::Continue
        } else {
            Step::End
        }
    }

    /// After EAGAIN from a zero-copy call (a neighbour set O_NONBLOCK): wait in poll() for
    /// whichever side is not ready, never sleeping on a timer.
    pub(super) fn wait_ready(&self, fd: BorrowedFd<'_>) {
        let out_ready = sys::poll_one(self.out, libc::POLLOUT, 0)
            .map(|r| r != 0)
            .unwrap_or(true);
        if out_ready {
            let _ = sys::poll_one(fd, libc::POLLIN, 100);
        } else {
            let _ = sys::poll_one(self.out, libc::POLLOUT, 100);
        }
    }
}

/// A copy of an I/O error for an event (the errno, or the kind and text).
fn clone_error(e: &io::Error) -> io::Error {
    match e.raw_os_error() {
        Some(errno) => io::Error::from_raw_os_error(errno),
        None => io::Error::new(e.kind(), e.to_string()),
    }
}

/// True for the read errors `-E` skips: media errors, after which the next blocks may well
/// read fine (EIO from a bad sector or a failing device, EBADMSG/EUCLEAN from a checksum
/// that does not match, ENODATA from drivers that report an unreadable sector so). Any other
/// error (EISDIR, EINVAL, EBADF, ENXIO, ENOMEM...) would fail the same way at every offset,
/// so that input ends with the error reported, as without `-E`.
fn skippable(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EIO | libc::EBADMSG | libc::EUCLEAN | libc::ENODATA)
    )
}

/// Where an input being read at `offset` ends, for `-E`: the size of a regular file, or of a
/// block device (found by seeking to its end, then back to `offset`). None for other kinds.
fn input_end(fd: BorrowedFd<'_>, offset: u64) -> Option<u64> {
    let info = sys::fstat(fd).ok()?;
    match info.kind {
        FileKind::Regular => Some(info.size),
        FileKind::Block => {
            let end = sys::lseek(fd, 0, libc::SEEK_END).ok();
            sys::lseek(fd, i64::try_from(offset).ok()?, libc::SEEK_SET).ok()?;
            end
        }
        _ => None,
    }
}

/// Bytes to skip after the `errors`-th read error in a row: `-Z` if given, else
/// 1 byte for the first four errors, 2 up to nine, then doubling from 1 to 512.
fn skip_amount(block: u64, errors: u32) -> u64 {
    if block > 0 {
        return block;
    }
    match errors {
        0..5 => 1,
        5..10 => 2,
        10..20 => 1 << (errors - 10),
        _ => 512,
    }
}
