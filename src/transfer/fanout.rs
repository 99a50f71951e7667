//! Fan-out (`--tee`): the same bytes go to the main output and to every `--tee` output.
//!
//! From a pipe input ([`Path::Fanout`]) no byte is copied through rpv. Each round:
//! 1. `tee(2)` duplicates up to one chunk of the input pipe's pages into one private pipe
//!    per `--tee` output (and one more whose copy is read to count lines with `-l`);
//! 2. `splice(2)` moves the same bytes out of the input pipe into the main output;
//! 3. each private pipe is spliced into its output, as far as the output takes it now.
//!
//! `tee` always copies from the head of the input pipe, and a private pipe is empty when it
//! is tee'd into, so every private pipe receives the same bytes. If one receives fewer (it
//! has fewer slots than the input pipe holds buffers), the round moves only that many and the
//! others throw their extra bytes away: nothing is ever duplicated or skipped.
//!
//! Slow outputs: rpv never waits for an output that has room. It waits for a `--tee` output
//! only when the next round needs its private pipe empty, so each output may lag the others
//! by one chunk in its private pipe plus its own pipe buffer (rpv grows a pipe output to
//! 1 MiB). Beyond that the slowest output sets the pace, because every output gets every byte:
//! a bigger buffer would only postpone that, at the cost of memory.
//!
//! Failures: a splice into a `--tee` output that the kernel refuses (a device without splice,
//! an `O_APPEND` file) switches that output to `read` + `write` out of its private pipe. A
//! refused `tee` or main-output splice ends the round with what the main output got; the
//! private pipes keep exactly that much and the input goes on with read/write. A write error,
//! or a reader going away, stops that output as `--tee-error` says (`outputs::ErrorMode`).
//! The read/write path writes each chunk to every live output ([`Engine::write_tees`]).
//!
//! Must not: allocate per chunk (private pipes and the scratch buffer are made once per
//! output), or format text except for the rare failure and trace messages.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use super::output::{Modifiers, Writer};
use super::outputs::{OutputMeter, OutputState, TeeOutput};
use super::{grow_pipe, Engine, Path, Step};
use crate::shared::status;
use crate::sys::{self, FileInfo, FileKind};

/// Bytes read at a time out of a private pipe (counting, copying, discarding).
const SCRATCH: usize = 128 << 10;

/// One `--tee` output while the engine runs.
pub(super) struct Tee<'a> {
    fd: BorrowedFd<'a>,
    /// What it is (for "input file is output file").
    pub(super) info: FileInfo,
    name: &'a str,
    meter: &'a OutputMeter,
    writer: Writer<'a>,
    /// Still receiving data.
    pub(super) live: bool,
    /// Bytes delivered so far.
    written: u64,
    /// Its private pipe.
    pipe: Option<Private>,
    /// Bytes at the head of the private pipe still to deliver.
    pending: usize,
    /// Bytes after those to throw away (a round that was cut short).
    discard: usize,
    /// Bytes tee'd into the private pipe in the current round.
    teed: usize,
    /// The kernel refused to splice into this output: copy out of the private pipe.
    copy: bool,
}

impl<'a> Tee<'a> {
    /// Prepares `out` for the engine: its kind, its pipe grown, its writer (the modifiers
    /// except `-X`, which discards the main output only).
    pub(super) fn new(out: &'a TeeOutput, modifiers: Modifiers) -> io::Result<Tee<'a>> {
        let fd = out.file.as_fd();
        let info = sys::fstat(fd)?;
        if info.kind == FileKind::Pipe {
            grow_pipe(fd);
        }
        let modifiers = Modifiers {
            discard: false,
            ..modifiers
        };
        out.meter.set_state(OutputState::Open);
        Ok(Tee {
            fd,
            info,
            name: &out.name,
            meter: &out.meter,
            writer: Writer::new(fd, modifiers),
            live: true,
            written: 0,
            pipe: None,
            pending: 0,
            discard: 0,
            teed: 0,
            copy: false,
        })
    }

    fn queued(&self) -> bool {
        self.live && self.pending + self.discard > 0
    }

    fn delivered(&mut self, n: usize) {
        self.pending -= n.min(self.pending);
        self.written += n as u64;
        self.meter.set_bytes(self.written);
    }
}

/// A private pipe of the fan-out.
struct Private {
    /// Read end (non-blocking: rpv knows how much is in it).
    r: OwnedFd,
    /// Write end, tee'd into.
    w: OwnedFd,
    /// Capacity in bytes.
    cap: usize,
}

impl Private {
    /// A new private pipe of `size` bytes (None: as big as rpv may make it).
    fn new(size: Option<usize>) -> Option<Private> {
        let (r, w) = sys::pipe().ok()?;
        let cap = match size {
            Some(size) => sys::set_pipe_size(w.as_fd(), size).ok()?,
            None => grow_pipe(w.as_fd()),
        };
        sys::set_nonblocking(r.as_fd(), true).ok()?;
        Some(Private { r, w, cap })
    }

    /// Throws away the next `n` bytes: spliced into /dev/null, else read into `buf`.
    fn discard(&self, null: Option<BorrowedFd<'_>>, buf: &mut [u8], mut n: usize) -> bool {
        while n > 0 {
            let want = n.min(buf.len());
            let result = match null {
                Some(null) => sys::splice(self.r.as_fd(), null, n),
                None => sys::read(self.r.as_fd(), &mut buf[..want]),
            };
            match result {
                Ok(k) if k > 0 => n -= k,
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
                _ if null.is_some() => return self.discard(None, buf, n),
                _ => return false,
            }
        }
        true
    }
}

/// Engine state of the fan-out that is not per output.
#[derive(Default)]
pub(super) struct FanState {
    /// `/dev/null`, where the input's bytes go once the main output's reader is gone, and
    /// bytes thrown away.
    null: Option<File>,
    /// Private pipe whose copy is read to count lines of the main output (`-l`).
    count: Option<Private>,
    /// Bytes tee'd into the counting pipe in the current round.
    count_teed: usize,
    /// Buffer for reading private pipes ([`SCRATCH`] bytes once needed).
    scratch: Vec<u8>,
    /// Splices into `--tee` outputs so far (for `RPV_TEST_FAIL_TEE_AT`).
    tee_splices: u64,
}

impl Engine<'_> {
    /// True while some `--tee` output receives data.
    pub(super) fn tees_live(&self) -> bool {
        self.tees.iter().any(|t| t.live)
    }

    /// One fan-out round on a pipe input.
    pub(super) fn fanout_step(&mut self, fd: BorrowedFd<'_>, name: &str) -> Step {
        // Every private pipe empty before it is tee'd into (this is where rpv waits for a
        // slow --tee output).
        if let Err(step) = self.flush_tees(true) {
            return step;
        }
        if !self.tees_live() {
            if !self.main_live {
                return Step::End;
            }
            // Only the main output is left: the ordinary zero-copy paths.
            return if self.settings.line_mode {
                self.tee_lines_step(fd)
            } else {
                self.zero_copy_step(fd, name, Path::Splice)
            };
        }
        let counting = self.settings.line_mode && self.main_live;
        let cap = self.fan_ready(counting);
        if cap == 0 {
            return Step::Fallback;
        }
        // No more than the smallest private pipe takes (in whole pages), so that usually
        // every tee copies the same.
        let Some(len) = self.next_len(self.splice_len.max(64 << 10).min(cap)) else {
            return Step::End;
        };
        let round = match self.tee_round(fd, len, counting) {
            Ok(0) => return Step::NextInput,
            Ok(n) => Some(n),
            Err(Retry) => return Step::Continue,
            Err(Refused) => None,
        };
        let (moved, to_main, mut end) = match round {
            Some(n) => self.move_to_main(fd, n),
            None => (0, 0, Some(Step::Fallback)),
        };
        // Every private pipe keeps exactly what left the input pipe; the rest stays there.
        for tee in self.tees.iter_mut().filter(|t| t.live && t.teed > 0) {
            tee.pending = moved.min(tee.teed);
            tee.discard = tee.teed - tee.pending;
            tee.teed = 0;
        }
        let lines = if counting {
            self.count_main_lines(to_main)
        } else {
            0
        };
        self.read += moved as u64;
        self.account_moved(moved, to_main, lines);
        if let Err(step) = self.flush_tees(false) {
            return step;
        }
        if moved > 0 && end.is_none() {
            self.after_splice(fd, name, moved);
        }
        if matches!(end, Some(Step::Fallback)) {
            let calls = self.zero_copy_calls;
            self.trace(|| format!("trace: fan-out stopped after {calls} zero-copy calls"));
            if let Err(step) = self.flush_tees(true) {
                end = Some(step);
            }
        }
        end.unwrap_or(Step::Continue)
    }

    /// Makes the private pipes the round needs. Returns the smallest one's capacity (0 if
    /// a pipe cannot be made).
    fn fan_ready(&mut self, counting: bool) -> usize {
        let small = self.settings.hooks.tee_pipe;
        let mut cap = usize::MAX;
        for (i, tee) in self.tees.iter_mut().enumerate().filter(|(_, t)| t.live) {
            let hooked = small.filter(|_| i > 0);
            if tee.pipe.is_none() {
                tee.pipe = Private::new(hooked);
            }
            match &tee.pipe {
                None => return 0,
                // The test hook's pipes are left out, so that their tees copy less.
                Some(p) if hooked.is_none() => cap = cap.min(p.cap),
                Some(_) => {}
            }
        }
        if counting {
            if self.fan.count.is_none() {
                self.fan.count = Private::new(None);
            }
            match &self.fan.count {
                None => return 0,
                Some(p) => cap = cap.min(p.cap),
            }
            if self.fan.scratch.is_empty() {
                self.fan.scratch = vec![0; SCRATCH];
            }
        }
        cap
    }

    /// Tees up to `len` bytes of the input pipe into every live output's private pipe (and
    /// the counting pipe). Returns how many bytes every one of them holds (0: end of input),
    /// with each one's own count in `teed`.
    fn tee_round(&mut self, fd: BorrowedFd<'_>, len: usize, counting: bool) -> Result<usize, Miss> {
        let mut want = len;
        let mut first = true;
        let members = self.tees.len() + usize::from(counting);
        for i in 0..members {
            if i < self.tees.len() && !self.tees[i].live {
                continue;
            }
            let got = loop {
                let fail = self.injected_failure();
                let target = if i < self.tees.len() {
                    self.tees[i].pipe.as_ref().map(|p| p.w.as_fd())
                } else {
                    self.fan.count.as_ref().map(|p| p.w.as_fd())
                };
                let result = match target {
                    Some(_) if fail => Err(io::Error::from_raw_os_error(libc::EINVAL)),
                    Some(w) => sys::tee(fd, w, want),
                    None => Err(io::Error::from_raw_os_error(libc::EBADF)),
                };
                match result {
                    Ok(n) => break n,
                    Err(e) => match e.raw_os_error() {
                        Some(libc::EINTR) => {}
                        // A non-blocking input with nothing in it yet.
                        Some(libc::EAGAIN) if first => {
                            let _ = sys::poll_one(fd, libc::POLLIN, 100);
                            return Err(Retry);
                        }
                        Some(libc::EAGAIN) => {
                            let _ = sys::poll_one(fd, libc::POLLIN, 100);
                        }
                        _ => {
                            self.throw_away_round();
                            return Err(Refused);
                        }
                    },
                }
            };
            if i < self.tees.len() {
                self.tees[i].teed = got;
            } else {
                self.fan.count_teed = got;
            }
            if got == 0 && first {
                return Ok(0);
            }
            first = false;
            want = want.min(got);
        }
        if want == 0 {
            // A later tee copied nothing (it cannot, with empty private pipes): try again.
            self.throw_away_round();
            return Err(Retry);
        }
        Ok(want)
    }

    /// Marks everything tee'd in this round to be thrown away.
    fn throw_away_round(&mut self) {
        for tee in self.tees.iter_mut() {
            tee.discard += std::mem::take(&mut tee.teed);
        }
        let teed = std::mem::take(&mut self.fan.count_teed);
        self.discard_count(teed);
    }

    /// Moves `n` bytes out of the input pipe: into the main output, or into /dev/null once
    /// its reader is gone. Returns (bytes moved, of which into the main output, how the step
    /// ends if it must).
    fn move_to_main(&mut self, fd: BorrowedFd<'_>, n: usize) -> (usize, usize, Option<Step>) {
        let (mut moved, mut to_main) = (0, 0);
        while moved < n {
            let main = self.main_live;
            let fail = self.injected_failure();
            let sink = if main {
                Some(self.out)
            } else {
                self.null_sink()
            };
            let result = match sink {
                Some(_) if fail => Err(io::Error::from_raw_os_error(libc::EINVAL)),
                Some(sink) => sys::splice(fd, sink, n - moved),
                None => Err(io::Error::from_raw_os_error(libc::ENOENT)),
            };
            match result {
                Ok(k) if k > 0 => {
                    moved += k;
                    if main {
                        to_main += k;
                    }
                }
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
                Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => {
                    let _ = sys::poll_one(self.out, libc::POLLOUT, 100);
                }
                Err(e) if main && e.raw_os_error() == Some(libc::EPIPE) => {
                    if matches!(self.output_gone(), Step::End) {
                        return (moved, to_main, Some(Step::End));
                    }
                }
                // Refused (or the input vanished): read/write takes over from here.
                _ => return (moved, to_main, Some(Step::Fallback)),
            }
        }
        (moved, to_main, None)
    }

    fn null_sink(&mut self) -> Option<BorrowedFd<'_>> {
        self.fan.open_null();
        self.fan.null.as_ref().map(|f| f.as_fd())
    }

    /// Reads this round's copy out of the counting pipe and counts the separators in the
    /// first `counted` bytes (those the main output got).
    fn count_main_lines(&mut self, counted: usize) -> u64 {
        let teed = std::mem::take(&mut self.fan.count_teed);
        let sep = self.settings.separator;
        let fan = &mut self.fan;
        let Some(count) = fan.count.as_ref() else {
            return 0;
        };
        let (mut done, mut lines) = (0, 0);
        while done < teed {
            let want = (teed - done).min(fan.scratch.len());
            match sys::read(count.r.as_fd(), &mut fan.scratch[..want]) {
                Ok(k) if k > 0 => {
                    let upto = k.min(counted.saturating_sub(done));
                    lines += bytecount::count(&fan.scratch[..upto], sep) as u64;
                    done += k;
                }
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
                _ => {
                    // Cannot happen with a pipe of our own; start over with a new one.
                    fan.count = None;
                    break;
                }
            }
        }
        lines
    }

    /// Throws away `n` bytes of the counting pipe.
    fn discard_count(&mut self, n: usize) {
        if n > 0 {
            self.fan.open_null();
            let fan = &mut self.fan;
            let null = fan.null.as_ref().map(|f| f.as_fd());
            let scratch = scratch(&mut fan.scratch);
            if !fan
                .count
                .as_ref()
                .is_some_and(|p| p.discard(null, scratch, n))
            {
                fan.count = None;
            }
        }
    }

    /// Counts `moved` bytes holding `lines` separators that left the input: `to_main` of
    /// them (all or none of the lines) reached the main output. `-L` counts them all.
    pub(super) fn account_moved(&mut self, moved: usize, to_main: usize, lines: u64) {
        let main_lines = if to_main > 0 { lines } else { 0 };
        self.account(to_main, main_lines);
        let rest = if self.settings.line_mode {
            lines - main_lines
        } else {
            (moved - to_main) as u64
        };
        if let Some(limiter) = self.limiter.as_mut().filter(|_| rest > 0) {
            limiter.consume(rest);
        }
    }

    /// Delivers what the private pipes hold. With `wait`, until every one is empty;
    /// otherwise only what the outputs take at once. Err: the run must end.
    pub(super) fn flush_tees(&mut self, wait: bool) -> Result<(), Step> {
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
    fn flush_tee(&mut self, i: usize, wait: bool) -> Result<(), Step> {
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
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
                Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => {
                    if !wait {
                        return Ok(());
                    }
                    let _ = sys::poll_one(tee.fd, libc::POLLOUT, 100);
                    if self.shared.stop.load(std::sync::atomic::Ordering::Relaxed) {
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
    fn copy_tee(&mut self, i: usize) -> Result<(), Step> {
        let scratch = scratch(&mut self.fan.scratch);
        let tee = &mut self.tees[i];
        let want = tee.pending.min(scratch.len());
        let read = match tee.pipe.as_ref() {
            Some(p) => sys::read(p.r.as_fd(), &mut scratch[..want]),
            None => Err(io::Error::from_raw_os_error(libc::EBADF)),
        };
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
            Err(e) => self.tee_failed(i, &e),
        }
    }

    /// Counts one splice into a `--tee` output; true if `RPV_TEST_FAIL_TEE_AT` fails it.
    fn injected_tee_failure(&mut self) -> bool {
        self.fan.tee_splices += 1;
        self.settings.hooks.fail_tee_at == Some(self.fan.tee_splices)
    }

    /// The read/write path: writes `buf[start..start + len]` to every live `--tee` output
    /// (after what its private pipe still holds from the fan-out).
    pub(super) fn write_tees(&mut self, start: usize, len: usize) -> Result<(), Step> {
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
                Err(e) => self.tee_failed(i, &e)?,
            }
        }
        Ok(())
    }

    /// Ends the run for every `--tee` output: what the private pipes hold, then the end of
    /// each writer (a sparse file that ends in a hole gets its length).
    pub(super) fn finish_tees(&mut self) {
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
    fn tee_failed(&mut self, i: usize, e: &io::Error) -> Result<(), Step> {
        let broken = e.raw_os_error() == Some(libc::EPIPE);
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
            let rest = if fatal {
                ""
            } else {
                " (no more data goes to it)"
            };
            self.shared.report(
                status::TRANSFER,
                format!(
                    "--tee {}: write failed: {}{rest}",
                    tee.name,
                    sys::strerror(e)
                ),
            );
        }
        if fatal {
            self.shared
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

/// Why a tee round moved nothing.
enum Miss {
    /// Nothing to move yet (EAGAIN), or a round to redo: go round the loop again.
    Retry,
    /// A tee was refused: read/write takes over.
    Refused,
}
use Miss::{Refused, Retry};

/// The scratch buffer, made on first use.
fn scratch(buf: &mut Vec<u8>) -> &mut [u8] {
    if buf.is_empty() {
        *buf = vec![0; SCRATCH];
    }
    buf
}

impl FanState {
    fn open_null(&mut self) {
        if self.null.is_none() {
            self.null = std::fs::OpenOptions::new()
                .write(true)
                .open("/dev/null")
                .ok();
        }
    }
}
