//! Delivery to the `--tee` outputs: what each output's private pipe holds, and each chunk
//! of the read/write path.
//!
//! Owns: emptying a private pipe into its output (splice, or read + write once the kernel
//! refuses splice into it), waiting for an output only when the next round needs its
//! private pipe empty, writing a chunk to every live output on the read/write path, the
//! last flush at the end of an input, and a failed output as `--tee-error` says.
//! Must not: take bytes from the input (the round is in `fanout.rs`) or allocate per
//! chunk.

use std::io;
use std::os::fd::AsFd;

use super::scratch;
use crate::error::Error;
use crate::meter::Event;
use crate::sys;
use crate::transfer::outputs::OutputState;
use crate::transfer::{Engine, Step};

impl Engine<'_> {
    /// Delivers what the private pipes hold. With `wait`, until every one is empty;
    /// otherwise only what the outputs take at once. Err: the run must end.
    pub(in crate::transfer) fn flush_tees(&mut self, wait: bool) -> Result<(), Step> {
        for i in 0..self.tees.len() {
            if self.tees[i].queued() {
                self.flush_tee(i, false)?;
            }
        }
        if wait {
            for i in 0..self.tees.len() {
                if self.tees[i].queued() {
                    self.flush_tee(i, true)?;
                }
            }
        }
        Ok(())
    }

    /// Delivers tee `i`'s private pipe (see [`Engine::flush_tees`]).
    pub(super) fn flush_tee(&mut self, i: usize, wait: bool) -> Result<(), Step> {
        while self.tees[i].live && self.tees[i].pending > 0 {
            if self.tees[i].copy {
                self.copy_tee(i)?;
                continue;
            }
            let fail = self.injected_tee_failure();
            let tee = &mut self.tees[i];
            let result = match tee.pipe.as_ref() {
                Some(_) if fail => Err(io::Error::from_raw_os_error(libc::EINVAL)),
                Some(p) => sys::splice(p.r.as_fd(), tee.fd, tee.pending),
                None => Err(io::Error::from_raw_os_error(libc::EBADF)),
            };
            match result {
                Ok(k) if k > 0 => tee.delivered(k),
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => {
                    if self.stopping() {
                        return Err(Step::End);
                    }
                }
                Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => {
                    if !wait {
                        return Ok(());
                    }
                    let _ = sys::poll_one(tee.fd, libc::POLLOUT, 100);
                    if self.stopping() {
                        return Err(Step::End);
                    }
                }
                Err(e) if e.raw_os_error() == Some(libc::EPIPE) => self.tee_failed(i, &e)?,
                // Refused (EINVAL for a device without splice or an O_APPEND file, or a
                // real error): nothing moved; read + write takes over and reports real
                // errors itself.
                _ => {
                    tee.copy = true;
                    let name = tee.name;
                    self.trace(|| format!("trace: --tee {name}: ReadWrite"));
                }
            }
        }
        if self.tees[i].live && self.tees[i].pending == 0 && self.tees[i].discard > 0 {
            self.fan.open_null();
            let fan = &mut self.fan;
            let null = fan.null.as_ref().map(|f| f.as_fd());
            let scratch = scratch(&mut fan.scratch);
            let tee = &mut self.tees[i];
            let n = std::mem::take(&mut tee.discard);
            if !tee
                .pipe
                .as_ref()
                .is_some_and(|p| p.discard(null, scratch, n))
            {
                // Cannot happen with a pipe of our own; start over with a new one.
                tee.pipe = None;
            }
        }
        Ok(())
    }

    /// Copies one piece of tee `i`'s private pipe to its output with read + write.
    pub(super) fn copy_tee(&mut self, i: usize) -> Result<(), Step> {
        let scratch = scratch(&mut self.fan.scratch);
        let tee = &mut self.tees[i];
        let want = tee.pending.min(scratch.len());
        let read = match tee.pipe.as_ref() {
            Some(p) => sys::read(p.r.as_fd(), &mut scratch[..want]),
            None => Err(io::Error::from_raw_os_error(libc::EBADF)),
        };
        let wrote = matches!(read, Ok(k) if k > 0);
        let result = match read {
            Ok(k) if k > 0 => tee.writer.write(&scratch[..k]).map(|()| k),
            Ok(_) => Err(io::Error::from_raw_os_error(libc::EIO)),
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => Ok(0),
            Err(e) => Err(e),
        };
        match result {
            Ok(k) => {
                tee.delivered(k);
                Ok(())
            }
            Err(e) => {
                if wrote {
                    tee.delivered(tee.writer.written());
                }
                self.tee_failed(i, &e)
            }
        }
    }

    /// Counts one splice or tee into a `--tee` output; true if `RPV_TEST_FAIL_TEE_AT` fails
    /// it.
    pub(super) fn injected_tee_failure(&mut self) -> bool {
        self.fan.tee_splices += 1;
        self.settings.hooks.fail_tee_at == Some(self.fan.tee_splices)
    }

    /// The read/write path: writes `buf[start..start + len]` to every live `--tee` output
    /// (after what its private pipe still holds from the fan-out).
    pub(in crate::transfer) fn write_tees(&mut self, start: usize, len: usize) -> Result<(), Step> {
        for i in 0..self.tees.len() {
            if self.tees[i].queued() {
                self.flush_tee(i, true)?;
            }
            let tee = &mut self.tees[i];
            if !tee.live {
                continue;
            }
            match tee.writer.write(&self.buf[start..start + len]) {
                Ok(()) => tee.delivered(len),
                Err(e) => {
                    tee.delivered(tee.writer.written());
                    self.tee_failed(i, &e)?;
                }
            }
        }
        Ok(())
    }

    /// Ends the run for every `--tee` output: what the private pipes hold, then the end of
    /// each writer (a sparse file that ends in a hole gets its length).
    pub(in crate::transfer) fn finish_tees(&mut self) {
        if self.flush_tees(true).is_err() {
            return;
        }
        for i in 0..self.tees.len() {
            if self.tees[i].live {
                if let Err(e) = self.tees[i].writer.finish() {
                    let _ = self.tee_failed(i, &e);
                }
            }
        }
    }

    /// Output `i` failed with `e`: it gets no more data; reported and fatal as
    /// `--tee-error` says. Err: the run must end.
    pub(super) fn tee_failed(&mut self, i: usize, e: &io::Error) -> Result<(), Step> {
        if e.raw_os_error() == Some(libc::EINTR) {
            // Not a failure: the user interrupted a blocked write (writers give up only
            // then). The output keeps what it got; the run ends.
            return Err(self.interrupted());
        }
        // (EPIPE from -Y's fdatasync or -O's ftruncate is a failure, not a reader gone.)
        let broken = self.tees[i].writer.reader_gone(e);
        let mode = self.settings.tee_error;
        let tee = &mut self.tees[i];
        tee.live = false;
        tee.pipe = None;
        (tee.pending, tee.discard, tee.teed) = (0, 0, 0);
        tee.meter.set_state(if broken {
            OutputState::Closed
        } else {
            OutputState::Failed
        });
        let fatal = mode.ends_run(broken);
        if mode.reports(broken) {
            self.progress.emit(Event::Error(Error::TeeWrite {
                name: tee.name.to_string(),
                err: e.raw_os_error().map_or_else(
                    || io::Error::new(e.kind(), e.to_string()),
                    io::Error::from_raw_os_error,
                ),
                goes_on: !fatal,
            }));
        }
        if fatal {
            self.progress
                .outcome
                .aborted
                .store(true, std::sync::atomic::Ordering::Relaxed);
            return Err(Step::End);
        }
        if !self.main_live && !self.tees_live() {
            return Err(Step::End);
        }
        Ok(())
    }
}
