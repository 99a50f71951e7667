//! Fan-out (`--tee`): the same bytes go to the main output and to every `--tee` output.
//!
//! From a pipe input ([`Path::Fanout`]) no byte is copied through rpv. Each round:
//! 1. `tee(2)` duplicates up to one chunk of the input pipe's pages into the private pipe of
//!    each `--tee` output that is not a pipe of rpv's own (and into one more private pipe,
//!    read to count lines with `-l`). The shortest copy decides the round's length; longer
//!    ones throw their extra bytes away.
//! 2. For each `--tee` pipe that rpv opened itself (made non-blocking), `tee(2)` duplicates
//!    the same bytes straight into it. Such a pipe cuts the round to its room (`FIONREAD`)
//!    if it has room for at least half of it; with less room it takes step 1 this round. If
//!    it takes only part anyway, the rest goes through its private pipe: a full copy of the
//!    round, whose first part is thrown away.
//!
//!    The usual case, one `--tee` pipe and nothing to count, skips all that: its description
//!    is made blocking again, and one `tee(2)` straight into it takes what it has room for
//!    (waiting while it is full) and decides the round. Each round is then one `tee` and one
//!    `splice`, the fewest calls a fan-out can make; the room check would take the pipe's
//!    lock while its reader drains it.
//! 3. `splice(2)` moves the same bytes out of the input pipe into the main output.
//! 4. Each private pipe is spliced into its output, as far as the output takes it now.
//!
//! `tee` always copies from the head of the input pipe, and a private pipe is empty when it
//! is tee'd into, so every output gets the same bytes: nothing is duplicated or skipped. A
//! private pipe has at least as many slots as the input pipe holds buffers, so a copy into it
//! never comes up short in step 2 (an output whose private pipe is smaller takes step 1).
//!
//! Slow outputs: rpv never waits for an output that has room. It waits for a `--tee` output
//! only when the next round needs its private pipe empty, so each output may lag the others
//! by one chunk in its private pipe plus its own pipe buffer (rpv grows a pipe output to
//! 1 MiB). A lone `--tee` pipe has no private pipe in use: the main output may run ahead of it
//! by its pipe buffer. Beyond that the slowest output sets the pace, because every output
//! gets every byte: a bigger buffer would only postpone that, at the cost of memory.
//!
//! Failures: a splice into a `--tee` output that the kernel refuses (a device without splice,
//! an `O_APPEND` file) switches that output to `read` + `write` out of its private pipe, and
//! a refused tee straight into an output sends it through its private pipe. A refused `tee`
//! from the input ends the round before any output got anything; a refused splice into the
//! main output gives it the rest of the round with read + write. Either way the input then
//! goes on with read/write. A write error, or a reader going away, stops that output as
//! `--tee-error` says (`outputs::ErrorMode`). The read/write path writes each chunk to every
//! live output ([`Engine::write_tees`]). Delivery out of the private pipes, the read/write
//! path's writes and a failed output are in `fanout/deliver.rs`.
//!
//! Must not: allocate per chunk (private pipes and the scratch buffer are made once per
//! output), or format text except for the rare failure and trace messages.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use super::output::{Modifiers, Writer};
use super::outputs::{OutputMeter, OutputState, TeeOutput};
use super::{grow_pipe, Engine, Path, Step};
use crate::sys::{self, FileInfo, FileKind};

/// Bytes read at a time out of a private pipe (counting, copying, discarding).
mod deliver;

const SCRATCH: usize = 128 << 10;
/// Pipe buffers hold at most a page.
const PAGE: usize = 4096;

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
    /// A pipe whose file description is rpv's own, made non-blocking.
    nonblocking: bool,
    /// That description is blocking for now: the only output, tee'd straight into
    /// ([`Engine::fan_ready`]).
    blocking: bool,
    /// Tees go straight into the output in this round (see [`Engine::fan_ready`]).
    direct: bool,
    /// The kernel refused a tee straight into it: never again.
    no_direct: bool,
    /// Capacity of its pipe, if it is one.
    out_cap: usize,
}

impl<'a> Tee<'a> {
    /// Prepares `out` for the engine: its kind, its pipe grown, its writer (the modifiers
    /// except `-X`, which discards the main output only).
    pub(super) fn new(out: &'a TeeOutput, modifiers: Modifiers) -> io::Result<Tee<'a>> {
        let fd = out.file.as_fd();
        let info = sys::fstat(fd)?;
        let pipe = info.kind == FileKind::Pipe;
        if pipe {
            grow_pipe(fd);
        }
        // Only rpv uses the description (it opened the path), so O_NONBLOCK disturbs no one;
        // with it, a tee or splice into a full pipe returns at once.
        let nonblocking = pipe && !out.shared && sys::set_nonblocking(fd, true).is_ok();
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
            nonblocking,
            blocking: false,
            direct: false,
            no_direct: false,
            out_cap: if pipe {
                sys::pipe_size(fd).unwrap_or(0)
            } else {
                0
            },
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
    /// Splices and tees into `--tee` outputs so far (for `RPV_TEST_FAIL_TEE_AT`).
    tee_splices: u64,
    /// Capacity of the current input pipe.
    in_cap: usize,
}

impl Engine<'_> {
    /// Starts the fan-out of the input `fd` (a pipe).
    pub(super) fn start_fanout(&mut self, fd: BorrowedFd<'_>) {
        self.fan.in_cap = sys::pipe_size(fd).unwrap_or(usize::MAX);
    }

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
                self.tee_lines_step(fd, name)
            } else {
                self.zero_copy_step(fd, name, Path::Splice)
            };
        }
        let counting = self.settings.line_mode && self.main_live;
        let cap = self.fan_ready(counting);
        if cap == 0 {
            return Step::Fallback;
        }
        // No more than the smallest private pipe takes, so that usually every tee copies
        // the same.
        let Some(len) = self.next_len(self.splice_len.max(64 << 10).min(cap)) else {
            return Step::End;
        };
        let n = match self.tee_round(fd, len, counting) {
            Ok(0) => return Step::NextInput,
            Ok(n) => n,
            Err(step) => return step,
        };
        let (mut moved, mut to_main, mut end) = self.move_to_main(fd, n);
        if matches!(end, Some(Step::Fallback)) {
            let calls = self.zero_copy_calls;
            self.trace(|| format!("trace: fan-out stopped after {calls} zero-copy calls"));
            // The --tee outputs have (or will have) all n bytes: the main output gets the
            // rest of them with read + write, and then read/write takes over.
            let (read, k, step) = self.catch_up_main(fd, name, n - moved);
            (moved, to_main) = (moved + read, to_main + k);
            if step.is_some() {
                end = step;
            }
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
        if end.is_none() {
            self.after_splice(fd, name, moved);
        }
        end.unwrap_or(Step::Continue)
    }

    /// Makes the private pipes the round needs and decides which outputs take the tee
    /// directly. Returns the smallest private pipe's capacity (0 if a pipe cannot be made).
    fn fan_ready(&mut self, counting: bool) -> usize {
        let small = self.settings.hooks.tee_pipe;
        let in_cap = self.fan.in_cap;
        let mut cap = usize::MAX;
        for (i, tee) in self.tees.iter_mut().enumerate().filter(|(_, t)| t.live) {
            let hooked = small.filter(|_| i > 0);
            if tee.pipe.is_none() {
                tee.pipe = Private::new(hooked);
            }
            let Some(p) = &tee.pipe else {
                return 0;
            };
            // The test hook's pipes are left out, so that their tees copy less.
            if hooked.is_none() {
                cap = cap.min(p.cap);
            }
            // A direct tee that comes up short sends the rest through the private pipe,
            // which must then take all the input pipe can hold.
            tee.direct = tee.nonblocking && !tee.copy && !tee.no_direct && p.cap >= in_cap;
        }
        // The only output that takes tees straight waits in the tee while it is full, like
        // a blocking relay; with more outputs (or a private pipe) each call returns at once.
        let single = self.only_direct(counting);
        let mut waits = None;
        for (i, tee) in self.tees.iter_mut().enumerate() {
            let blocking = single == Some(i);
            if tee.live
                && tee.nonblocking
                && tee.blocking != blocking
                && sys::set_nonblocking(tee.fd, !blocking).is_ok()
            {
                tee.blocking = blocking;
                waits = waits.or(blocking.then_some(tee.name));
            }
        }
        if let Some(name) = waits {
            self.trace(|| format!("trace: --tee {name}: straight, waited for when full"));
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

    /// Tees the same bytes of the input pipe, at most `len`, to every live `--tee` output
    /// (and the counting pipe): first into the private pipes, whose copies decide how many,
    /// then straight into the outputs that take it (what one does not take now goes through
    /// its private pipe). Returns how many (0: end of input); each output's private pipe
    /// then holds exactly what it still has to get. Err: how the step ends (Continue: try
    /// again).
    fn tee_round(&mut self, fd: BorrowedFd<'_>, len: usize, counting: bool) -> Result<usize, Step> {
        let mut want = len;
        let mut known = false;
        if let Some(i) = self.only_direct(counting) {
            // The usual `--tee >(cmd)`: the tee takes what the output has room for, and that
            // is the round. No room check first (it takes the output pipe's lock, which its
            // reader holds while it drains the pipe).
            match self.tee_direct(fd, i, want, true)? {
                Direct::Took(took) => {
                    self.tees[i].delivered(took);
                    return Ok(took);
                }
                Direct::End => return Ok(0),
                // Nothing moved out of the input: the next step goes on without it.
                Direct::Failed => return Err(Step::Continue),
                // Refused: it takes the private pipe below from now on.
                Direct::Nothing => {}
            }
        }
        want = self.cut_to_room(want);
        // Private copies first: they decide how many bytes the round moves.
        for m in 0..=self.tees.len() {
            let member = match self.tees.get(m) {
                Some(t) if t.live && !t.direct => Some(m),
                None if counting => None,
                _ => continue,
            };
            let got = self.tee_private(fd, member, want, !known)?;
            if got == 0 && !known {
                return Ok(0);
            }
            (want, known) = (want.min(got), true);
        }
        for i in 0..self.tees.len() {
            if !self.tees[i].live || !self.tees[i].direct {
                continue;
            }
            let took = match self.tee_direct(fd, i, want, !known)? {
                Direct::Took(t) => t,
                Direct::End if !known => return Ok(0),
                // (An end of input after a copy cannot be: the bytes are there.)
                Direct::Nothing | Direct::End => 0,
                Direct::Failed => continue,
            };
            if !known {
                if took == 0 {
                    // Its private pipe decides the round.
                    let got = self.tee_private(fd, Some(i), want, true)?;
                    if got == 0 {
                        return Ok(0);
                    }
                    (want, known) = (got, true);
                    continue;
                }
                (want, known) = (took, true);
            }
            self.tees[i].delivered(took);
            if took < want {
                // Its pipe had fewer free slots than bytes of room (or a new size).
                self.tees[i].out_cap = sys::pipe_size(self.tees[i].fd).unwrap_or(0);
                self.rest_through_private(fd, i, took, want)?;
            }
        }
        if want == 0 {
            // A copy of nothing after a copy of something (the bytes are there, so this
            // cannot be): throw the round away and try again.
            self.throw_away_round();
            return Err(Step::Continue);
        }
        self.keep_round(want);
        Ok(want)
    }

    /// The round cut to the room of the outputs that take it straight: one that has room
    /// for at least half of `want` gets it straight (the round cut to its room); one with
    /// less room gets it through its private pipe this time.
    fn cut_to_room(&mut self, mut want: usize) -> usize {
        for tee in self.tees.iter_mut().filter(|t| t.live && t.direct) {
            let unread = sys::unread_bytes(tee.fd).unwrap_or(usize::MAX);
            let room = tee.out_cap.saturating_sub(unread) / PAGE * PAGE;
            if room >= want / 2 && room > 0 {
                want = want.min(room);
            } else {
                tee.direct = false;
            }
        }
        want
    }

    /// Each private pipe keeps the round's `want` bytes; a longer copy throws the rest away.
    fn keep_round(&mut self, want: usize) {
        for tee in self.tees.iter_mut().filter(|t| t.live && t.teed > 0) {
            tee.pending += want.min(tee.teed);
            tee.discard = tee.teed.saturating_sub(want);
            tee.teed = 0;
        }
    }

    /// The one live `--tee` output, if there is just one, it takes tees straight, and no
    /// counting pipe needs the same bytes.
    fn only_direct(&self, counting: bool) -> Option<usize> {
        let mut live = self.tees.iter().enumerate().filter(|(_, t)| t.live);
        match (live.next(), live.next()) {
            (Some((i, tee)), None) if tee.direct && !counting => Some(i),
            _ => None,
        }
    }

    /// Tees up to `want` bytes into a private pipe (`Some(i)`: tee `i`'s, `None`: the counting
    /// pipe) and records how many in its `teed`. `first`: nothing was tee'd in this round yet.
    fn tee_private(
        &mut self,
        fd: BorrowedFd<'_>,
        member: Option<usize>,
        want: usize,
        first: bool,
    ) -> Result<usize, Step> {
        loop {
            let fail = self.injected_failure();
            let target = match member {
                Some(i) => self.tees[i].pipe.as_ref().map(|p| p.w.as_fd()),
                None => self.fan.count.as_ref().map(|p| p.w.as_fd()),
            };
            let result = match target {
                Some(_) if fail => Err(io::Error::from_raw_os_error(libc::EINVAL)),
                Some(w) => sys::tee(fd, w, want),
                None => Err(io::Error::from_raw_os_error(libc::EBADF)),
            };
            match result {
                Ok(got) => {
                    match member {
                        Some(i) => self.tees[i].teed = got,
                        None => self.fan.count_teed = got,
                    }
                    return Ok(got);
                }
                Err(e) => match e.raw_os_error() {
                    Some(libc::EINTR | libc::EAGAIN) if self.stopping() => {
                        self.throw_away_round();
                        return Err(Step::End);
                    }
                    Some(libc::EINTR) => {}
                    // A non-blocking input with nothing in it yet.
                    Some(libc::EAGAIN) => {
                        let _ = sys::poll_one(fd, libc::POLLIN, 100);
                        if first {
                            return Err(Step::Continue);
                        }
                    }
                    _ => {
                        self.throw_away_round();
                        return Err(Step::Fallback);
                    }
                },
            }
        }
    }

    /// Tees up to `want` bytes straight into tee `i`'s output (a pipe rpv made
    /// non-blocking). `first`: nothing was tee'd in this round yet.
    fn tee_direct(
        &mut self,
        fd: BorrowedFd<'_>,
        i: usize,
        want: usize,
        first: bool,
    ) -> Result<Direct, Step> {
        loop {
            let fail = self.injected_tee_failure();
            let tee = &mut self.tees[i];
            let result = if fail {
                Err(io::Error::from_raw_os_error(libc::EINVAL))
            } else {
                sys::tee(fd, tee.fd, want)
            };
            return match result {
                Ok(0) => Ok(Direct::End),
                Ok(t) => Ok(Direct::Took(t)),
                Err(e) => match e.raw_os_error() {
                    // The user interrupted (the display loop kicks the data thread after
                    // the signal).
                    Some(libc::EINTR) if crate::signals::exit_requested() => {
                        Err(self.interrupted())
                    }
                    Some(libc::EINTR) => continue,
                    // O_NONBLOCK counts for both sides: the output is full or the input is
                    // empty. Wait for the one that is not ready, unless the round is
                    // already decided (then the input is not empty: the output filled up).
                    Some(libc::EAGAIN) if first => {
                        let out = sys::poll_one(tee.fd, libc::POLLOUT, 0);
                        if out.is_ok_and(|r| r == 0) {
                            let _ = sys::poll_one(tee.fd, libc::POLLOUT, 100);
                        } else {
                            let _ = sys::poll_one(fd, libc::POLLIN, 100);
                        }
                        Err(Step::Continue)
                    }
                    Some(libc::EAGAIN) => Ok(Direct::Nothing),
                    Some(libc::EPIPE) => {
                        self.tee_failed(i, &e)?;
                        Ok(Direct::Failed)
                    }
                    // Refused: this output goes through its private pipe from now on.
                    _ => {
                        tee.no_direct = true;
                        tee.direct = false;
                        let name = tee.name;
                        self.trace(|| format!("trace: --tee {name}: private pipe"));
                        Ok(Direct::Nothing)
                    }
                },
            };
        }
    }

    /// Tee `i`'s output took only `took` of the round's `want` bytes: the rest goes through
    /// its private pipe (a full copy, whose first `took` bytes are thrown away at once).
    fn rest_through_private(
        &mut self,
        fd: BorrowedFd<'_>,
        i: usize,
        took: usize,
        want: usize,
    ) -> Result<(), Step> {
        let copied = loop {
            let Some(w) = self.tees[i].pipe.as_ref().map(|p| p.w.as_fd()) else {
                break Err(io::Error::from_raw_os_error(libc::EBADF));
            };
            match sys::tee(fd, w, want) {
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
                other => break other,
            }
        };
        // The private pipe is empty and has at least as many slots as the input pipe has
        // buffers, so it gets all `want` bytes; if not, this output cannot be given them.
        let copied = match copied {
            Ok(n) if n == want => n,
            Ok(_) => return self.tee_failed(i, &io::Error::from_raw_os_error(libc::EIO)),
            Err(e) => return self.tee_failed(i, &e),
        };
        self.fan.open_null();
        let fan = &mut self.fan;
        let null = fan.null.as_ref().map(|f| f.as_fd());
        let scratch = scratch(&mut fan.scratch);
        let tee = &mut self.tees[i];
        if !tee
            .pipe
            .as_ref()
            .is_some_and(|p| p.discard(null, scratch, took))
        {
            return self.tee_failed(i, &io::Error::from_raw_os_error(libc::EIO));
        }
        tee.pending = copied - took;
        Ok(())
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
                // Interrupted by the user (the display loop kicks this thread): what moved
                // is counted, and the run ends.
                Err(e)
                    if matches!(e.raw_os_error(), Some(libc::EINTR | libc::EAGAIN))
                        && self.stopping() =>
                {
                    return (moved, to_main, Some(Step::End));
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

    /// Reads the next `n` bytes of the input pipe (they are there: they were tee'd) and
    /// writes them to the main output. Returns how many were read, how many of those the
    /// main output got, and how the step ends if it must: a read error is reported as on
    /// the read/write path (the `--tee` outputs already have this round), a write error as
    /// the main output's.
    fn catch_up_main(
        &mut self,
        fd: BorrowedFd<'_>,
        name: &str,
        mut n: usize,
    ) -> (usize, usize, Option<Step>) {
        let (mut read, mut to_main) = (0, 0);
        let mut buf = std::mem::take(&mut self.fan.scratch);
        let end = loop {
            if n == 0 {
                break None;
            }
            let want = n.min(scratch(&mut buf).len());
            let k = match sys::read(fd, &mut buf[..want]) {
                Ok(k) if k > 0 => k,
                // The tee'd bytes are gone (another reader of the same pipe took them): the
                // input has nothing more for this round.
                Ok(_) => break Some(Step::NextInput),
                Err(e) if e.raw_os_error() == Some(libc::EAGAIN) && !self.stopping() => {
                    let _ = sys::poll_one(fd, libc::POLLIN, 100);
                    continue;
                }
                Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => break Some(Step::End),
                Err(e) => match self.read_failed(fd, name, &e) {
                    Step::Continue => continue,
                    step => break Some(step),
                },
            };
            n -= k;
            read += k;
            if self.main_live {
                match self.writer.write(&buf[..k]) {
                    Ok(()) => to_main += k,
                    Err(e) => {
                        to_main += self.writer.written();
                        match self.write_failed(&e) {
                            Step::Continue => {}
                            step => break Some(step),
                        }
                    }
                }
            }
        };
        self.fan.scratch = buf;
        (read, to_main, end)
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
}

/// What a tee straight into an output did.
enum Direct {
    /// It took this many bytes.
    Took(usize),
    /// It took nothing now (full, refused).
    Nothing,
    /// The input ended.
    End,
    /// The output failed (it is no longer live).
    Failed,
}

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
