//! The data engine: moves every input to the output on the fastest path that works, and
//! bumps the shared counters (spec 3.1–3.11; DESIGN.md "Transfer paths").
//!
//! Paths, chosen per input and downgraded at run time:
//! - [`Path::Splice`] when either side is a pipe (both stdio pipes enlarged first);
//! - [`Path::CopyRange`] (`copy_file_range`) for regular file → regular file;
//! - [`Path::ReadWrite`] otherwise, and whenever an option needs the bytes (`-l`, `-0`,
//!   `-C`, `-B`, …).
//!
//! A zero-copy call that fails with anything but EINTR/EAGAIN/EPIPE moved nothing, so the
//! engine switches that input to read/write and carries on at the same offset: nothing is
//! lost or duplicated, and a real error (EIO, ENOSPC) is then reported by read/write with
//! pv's message.
//!
//! Must not: format progress or touch the terminal. Per chunk: one or two syscalls, one
//! relaxed atomic store, the stop/limit checks. No locks, no allocation.

pub mod input;
pub mod limit;
pub mod output;

use std::io;
use std::os::fd::BorrowedFd;
use std::sync::atomic::Ordering;

use crate::shared::{status, Shared};
use crate::sys::{self, FileInfo, FileKind};
use limit::Limiter;
use output::{AlignedBuf, Modifiers, Writer};

/// Capacity rpv asks for on neighbouring pipes (the unprivileged maximum).
const PIPE_SIZE: usize = 1 << 20;
/// Largest single copy_file_range call, so counters and -L stay responsive.
const COPY_CHUNK: usize = 8 << 20;
/// Default read/write buffer (`-B` overrides).
pub const DEFAULT_BUFFER: usize = 256 << 10;

/// How one input is moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Path {
    /// `splice(2)` straight from input to output (one of them is a pipe).
    Splice,
    /// `copy_file_range(2)` (regular file to regular file).
    CopyRange,
    /// `read(2)` into a buffer and `write(2)` it out.
    ReadWrite,
}

/// Test hooks, read from hidden environment variables so tests can force every path and
/// every fallback: `RPV_TEST_PATH=splice|copy|rw` and `RPV_TEST_FAIL_AT=N` (the N-th
/// zero-copy call fails with EINVAL as if the kernel refused it).
#[derive(Debug, Clone, Default)]
pub struct Hooks {
    /// Use this path for every input instead of choosing.
    pub force: Option<Path>,
    /// Make the N-th zero-copy call (1-based) fail with EINVAL.
    pub fail_at: Option<u64>,
    /// `RPV_TEST_TRACE=1`: report each path choice and fallback as a message, so tests can
    /// check which path really moved the data.
    pub trace: bool,
    /// `RPV_TEST_READ_ERRORS=A-B,C-D`: reads of input bytes in [A, B) fail with EIO, like a
    /// disk with bad sectors (regular-file inputs on the read/write path).
    pub read_errors: Vec<(u64, u64)>,
}

impl Hooks {
    /// Reads the hooks from the environment.
    pub fn from_env() -> Hooks {
        let force = match std::env::var("RPV_TEST_PATH").as_deref() {
            Ok("splice") => Some(Path::Splice),
            Ok("copy") => Some(Path::CopyRange),
            Ok("rw") => Some(Path::ReadWrite),
            _ => None,
        };
        let fail_at = std::env::var("RPV_TEST_FAIL_AT")
            .ok()
            .and_then(|v| v.parse().ok());
        let trace = std::env::var_os("RPV_TEST_TRACE").is_some();
        let read_errors = std::env::var("RPV_TEST_READ_ERRORS")
            .unwrap_or_default()
            .split(',')
            .filter_map(|r| r.split_once('-'))
            .filter_map(|(a, b)| Some((a.trim().parse().ok()?, b.trim().parse().ok()?)))
            .collect();
        Hooks {
            force,
            fail_at,
            trace,
            read_errors,
        }
    }
}

/// What the engine is asked to do.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Input operands in order (`-` = stdin).
    pub inputs: Vec<String>,
    /// Count lines (`-l`); then `-L` and `-S` are in lines.
    pub line_mode: bool,
    /// Line separator: `\n`, or NUL with `-0`.
    pub separator: u8,
    /// splice/copy_file_range allowed (not `-C` and nothing needs the bytes).
    pub zero_copy: bool,
    /// Read/write buffer size in bytes.
    pub buffer_size: usize,
    /// `-L` in units per second; 0 = none.
    pub rate_limit: u64,
    /// `-S`: stop after this many units.
    pub stop_at: Option<u64>,
    /// Keep the tail of the data for `%A`/`%L` (read/write path only).
    pub capture: bool,
    /// `-X -O -Y -K` (read/write path only).
    pub modifiers: Modifiers,
    /// `-E` count: 0 = stop a file at its first read error; 1 = skip and report each skip;
    /// 2 = skip with only a warning.
    pub skip_errors: u8,
    /// `-Z`: skip this many bytes per read error (0 = adaptive, like pv).
    pub skip_block: u64,
    /// Test hooks.
    pub hooks: Hooks,
}

/// Result of one step on one input.
enum Step {
    /// Progress (possibly zero bytes, e.g. after EINTR); go on.
    Continue,
    /// This input is exhausted (or failed to read); go to the next.
    NextInput,
    /// The zero-copy path was refused; switch this input to read/write.
    Fallback,
    /// The whole transfer ends (output gone, -S reached, write error, stop requested).
    End,
}

/// The engine: one per run, used on the data thread.
pub struct Engine<'a> {
    settings: &'a Settings,
    out: BorrowedFd<'a>,
    out_info: FileInfo,
    shared: &'a Shared,
    buf: AlignedBuf,
    pending: (usize, usize),
    writer: Writer<'a>,
    /// Read errors in a row on the current input (for the adaptive -E skip).
    errors_in_a_row: u32,
    /// The "read errors detected" warning was given for the current input.
    warned: bool,
    limiter: Option<Limiter>,
    /// Bytes written (published to `shared.bytes`).
    bytes: u64,
    /// Lines written (published to `shared.lines`).
    lines: u64,
    /// Bytes read from inputs (for the `-S` read cap in byte mode).
    read: u64,
    zero_copy_calls: u64,
    out_pipe_size: usize,
    /// Length asked of each splice on the current input: the larger pipe's capacity.
    splice_len: usize,
    /// Read/write buffer size wanted (`-B`, changeable at run time).
    buffer_size: usize,
    /// The `shared.tuning_version` last applied.
    tuning_seen: u64,
}

impl<'a> Engine<'a> {
    /// An engine writing to `out` (already opened and, for `-o`, truncated).
    pub fn new(
        settings: &'a Settings,
        out: BorrowedFd<'a>,
        shared: &'a Shared,
    ) -> io::Result<Engine<'a>> {
        let out_info = sys::fstat(out)?;
        let out_pipe_size = if out_info.kind == FileKind::Pipe {
            grow_pipe(out)
        } else {
            0
        };
        let limiter = (settings.rate_limit > 0)
            .then(|| Limiter::new(settings.rate_limit, sys::monotonic_ns()));
        Ok(Engine {
            settings,
            out,
            out_info,
            shared,
            buf: AlignedBuf::default(),
            pending: (0, 0),
            writer: Writer::new(out, settings.modifiers),
            errors_in_a_row: 0,
            warned: false,
            limiter,
            bytes: 0,
            lines: 0,
            read: 0,
            zero_copy_calls: 0,
            out_pipe_size,
            splice_len: 0,
            buffer_size: settings.buffer_size.max(1),
            tuning_seen: 0,
        })
    }

    /// Moves every input in order, then marks the shared state finished.
    pub fn run(&mut self) {
        for operand in &self.settings.inputs {
            if self.shared.stop.load(Ordering::Relaxed) || !self.copy_input(operand) {
                break;
            }
        }
        if let Err(e) = self.writer.finish() {
            self.write_failed(&e);
        }
        self.shared.finish();
    }

    /// Copies one input; false when the whole transfer must end.
    fn copy_input(&mut self, operand: &str) -> bool {
        let name = input::display_name(operand);
        let (source, info) = match input::open(operand) {
            Ok(v) => v,
            Err(e) => {
                self.shared.report(
                    status::ACCESS,
                    format!("failed to read file: {name}: {}", sys::strerror(&e)),
                );
                return true;
            }
        };
        if input::is_output(&info, &self.out_info) {
            self.shared.report(
                status::OUROBOROS,
                format!("input file is output file: {name}"),
            );
            return true;
        }
        let fd = source.fd();
        sys::advise_sequential(fd);
        self.errors_in_a_row = 0;
        self.warned = false;
        if self.settings.modifiers.direct {
            // Refused on some filesystems: then the input is read through the cache.
            let _ = sys::set_status_flag(fd, libc::O_DIRECT, true);
        }
        let mut path = self.choose_path(&info, fd);
        self.trace(|| format!("trace: {name}: {path:?}"));
        loop {
            if self.shared.stop.load(Ordering::Relaxed) {
                return false;
            }
            self.check_tuning();
            self.shared
                .zero_copy
                .store(path != Path::ReadWrite, Ordering::Relaxed);
            let step = match path {
                Path::ReadWrite => self.rw_step(fd, name),
                zero_copy => self.zero_copy_step(fd, zero_copy),
            };
            match step {
                Step::Continue => {}
                Step::NextInput => return true,
                Step::Fallback => {
                    path = Path::ReadWrite;
                    let calls = self.zero_copy_calls;
                    self.trace(|| {
                        format!("trace: {name}: ReadWrite after {calls} zero-copy calls")
                    });
                }
                Step::End => return false,
            }
        }
    }

    fn trace(&self, message: impl FnOnce() -> String) {
        if self.settings.hooks.trace {
            self.shared.report(0, message());
        }
    }

    fn choose_path(&mut self, info: &FileInfo, fd: BorrowedFd<'_>) -> Path {
        if let Some(path) = self.settings.hooks.force {
            return path;
        }
        if !self.settings.zero_copy {
            return Path::ReadWrite;
        }
        let in_pipe = info.kind == FileKind::Pipe;
        let in_size = if in_pipe { grow_pipe(fd) } else { 0 };
        self.splice_len = self.out_pipe_size.max(in_size).max(64 << 10);
        match (info.kind, self.out_info.kind) {
            (FileKind::Regular, FileKind::Regular) => Path::CopyRange,
            _ if in_pipe || self.out_info.kind == FileKind::Pipe => Path::Splice,
            _ => Path::ReadWrite,
        }
    }

    /// Applies `-R` changes: one relaxed load, and the rest only when the version moved.
    fn check_tuning(&mut self) {
        let version = self.shared.tuning_version.load(Ordering::Relaxed);
        if version == self.tuning_seen {
            return;
        }
        std::sync::atomic::fence(Ordering::Acquire);
        self.tuning_seen = version;
        let rate = self.shared.rate_limit.load(Ordering::Relaxed);
        if rate != Shared::UNSET {
            self.limiter = (rate > 0).then(|| Limiter::new(rate, sys::monotonic_ns()));
        }
        let size = self.shared.buffer_size.load(Ordering::Relaxed);
        if size != Shared::UNSET && size > 0 {
            self.buffer_size = usize::try_from(size).unwrap_or(usize::MAX).min(1 << 30);
        }
    }

    /// Sleeps while the `-L` budget is exhausted; at most 100 ms at a time, so a limit
    /// changed by `-R` takes effect promptly.
    fn limit_sleep(&mut self, wait_ns: u64) {
        std::thread::sleep(std::time::Duration::from_nanos(wait_ns.min(100_000_000)));
        self.check_tuning();
    }

    /// Units (bytes or lines) still allowed by `-S`, or None without a stop size.
    fn stop_remaining(&self) -> Option<u64> {
        let done = if self.settings.line_mode {
            self.lines
        } else {
            self.read
        };
        self.settings.stop_at.map(|stop| stop.saturating_sub(done))
    }

    /// Waits for the `-L` budget and returns how many bytes may move now (byte mode), at
    /// most `want`. Line mode is limited per write in `rw_step`.
    fn byte_allowance(&mut self, want: usize) -> usize {
        loop {
            let Some(limiter) = self.limiter.as_mut().filter(|_| !self.settings.line_mode) else {
                return want;
            };
            match limiter.allowance(want as u64, sys::monotonic_ns()) {
                Ok(n) => return n as usize,
                Err(wait_ns) => self.limit_sleep(wait_ns),
            }
        }
    }

    fn zero_copy_step(&mut self, fd: BorrowedFd<'_>, path: Path) -> Step {
        let mut want = match path {
            Path::CopyRange => COPY_CHUNK,
            _ => self.splice_len.max(64 << 10),
        };
        if let Some(left) = self.stop_remaining() {
            if left == 0 {
                return Step::End;
            }
            want = want.min(usize::try_from(left).unwrap_or(usize::MAX));
        }
        let len = self.byte_allowance(want);
        self.zero_copy_calls += 1;
        let result = if self.settings.hooks.fail_at == Some(self.zero_copy_calls) {
            Err(io::Error::from_raw_os_error(libc::EINVAL))
        } else if path == Path::CopyRange {
            sys::copy_file_range(fd, self.out, len)
        } else {
            sys::splice(fd, self.out, len)
        };
        match result {
            Ok(0) => Step::NextInput,
            Ok(n) => {
                self.read += n as u64;
                self.account(n, 0);
                Step::Continue
            }
            Err(e) => match e.raw_os_error() {
                Some(libc::EINTR) => Step::Continue,
                Some(libc::EAGAIN) => {
                    self.wait_ready(fd);
                    Step::Continue
                }
                Some(libc::EPIPE) => self.output_gone(),
                // EINVAL, ENOSYS, EXDEV, EOPNOTSUPP, EBADF (O_APPEND), or a real I/O error:
                // nothing moved, so read/write takes over and reports real errors itself.
                _ => Step::Fallback,
            },
        }
    }

    fn rw_step(&mut self, fd: BorrowedFd<'_>, name: &str) -> Step {
        let size = self.buffer_size.max(1);
        // O_DIRECT needs whole blocks.
        let size = if self.settings.modifiers.direct {
            size.next_multiple_of(output::BLOCK)
        } else {
            size
        };
        if self.buf.len() != size && self.pending.0 == self.pending.1 {
            self.buf = AlignedBuf::new(size);
            self.shared
                .buffer_capacity
                .store(self.buf.len() as u64, Ordering::Relaxed);
        }
        if self.pending.0 == self.pending.1 {
            let mut max = self.buf.len();
            if !self.settings.line_mode {
                if let Some(left) = self.stop_remaining() {
                    if left == 0 {
                        return Step::End;
                    }
                    max = max.min(usize::try_from(left).unwrap_or(usize::MAX));
                }
                max = self.byte_allowance(max);
            }
            let max = self.injected_read_limit(fd, max);
            let result = match max {
                Ok(max) => sys::read(fd, &mut self.buf[..max]),
                Err(e) => Err(e),
            };
            match result {
                Ok(0) => return Step::NextInput,
                Ok(n) => {
                    self.read += n as u64;
                    self.errors_in_a_row = 0;
                    self.pending = (0, n);
                    self.shared.buffered.store(n as u64, Ordering::Relaxed);
                }
                Err(e) => return self.read_failed(fd, name, &e),
            }
        }
        let (start, end) = self.pending;
        let (len, lines) = self.writable_span(start, end);
        if len == 0 {
            return Step::End;
        }
        if let Err(e) = self.writer.write(&self.buf[start..start + len]) {
            return self.write_failed(&e);
        }
        if self.settings.capture {
            if let Ok(mut tail) = self.shared.tail.lock() {
                tail.feed(&self.buf[start..start + len], self.settings.separator);
            }
        }
        self.pending.0 += len;
        self.shared
            .buffered
            .store((end - start - len) as u64, Ordering::Relaxed);
        self.account(len, lines);
        Step::Continue
    }

    /// How much of the pending bytes to write now, and how many lines that is. In line mode
    /// the `-L` and `-S` budgets (in lines) cut the write just after a separator.
    fn writable_span(&mut self, start: usize, end: usize) -> (usize, u64) {
        if !self.settings.line_mode {
            return (end - start, 0);
        }
        let sep = self.settings.separator;
        let data = &self.buf[start..end];
        let mut budget = self.stop_remaining().unwrap_or(u64::MAX);
        if budget == 0 {
            return (0, 0);
        }
        let want = (memchr::memchr_iter(sep, data).count() as u64).clamp(1, budget);
        while let Some(limiter) = self.limiter.as_mut() {
            match limiter.allowance(want, sys::monotonic_ns()) {
                Ok(n) => {
                    budget = budget.min(n);
                    break;
                }
                Err(wait_ns) => self.limit_sleep(wait_ns),
            }
        }
        let data = &self.buf[start..end];
        let mut lines = 0;
        for pos in memchr::memchr_iter(sep, data) {
            lines += 1;
            if lines == budget {
                return (pos + 1, lines);
            }
        }
        (data.len(), lines)
    }

    fn account(&mut self, bytes: usize, lines: u64) {
        if self.bytes == 0 && bytes > 0 {
            self.shared
                .first_write_ns
                .store(sys::monotonic_ns(), Ordering::Relaxed);
        }
        self.bytes += bytes as u64;
        self.shared.bytes.store(self.bytes, Ordering::Relaxed);
        if let Some(limiter) = self.limiter.as_mut() {
            limiter.consume(if self.settings.line_mode {
                lines
            } else {
                bytes as u64
            });
        }
        if self.settings.line_mode {
            self.lines += lines;
            self.shared.lines.store(self.lines, Ordering::Relaxed);
        }
    }

    fn read_failed(&mut self, fd: BorrowedFd<'_>, name: &str, e: &io::Error) -> Step {
        match e.raw_os_error() {
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
            _ if self.settings.skip_errors > 0 => self.skip_read_error(fd, name, e),
            _ => {
                self.shared.report(
                    status::TRANSFER,
                    format!("{name}: read failed: {}", sys::strerror(e)),
                );
                Step::NextInput
            }
        }
    }

    /// `-E`: go on past a read error (spec 3.11): seek forward by the skip amount and write
    /// zeros in place of the unreadable bytes, so the output keeps its length and every
    /// readable byte stays at its offset.
    fn skip_read_error(&mut self, fd: BorrowedFd<'_>, name: &str, e: &io::Error) -> Step {
        self.shared.fail(status::TRANSFER);
        if !self.warned {
            self.warned = true;
            self.shared.report(
                status::TRANSFER,
                format!(
                    "{name}: warning: read errors detected: {}",
                    sys::strerror(e)
                ),
            );
        }
        let offset = match sys::lseek(fd, 0, libc::SEEK_CUR) {
            Ok(o) => o,
            Err(e) => {
                self.shared.report(
                    status::TRANSFER,
                    format!("{name}: file is not seekable: {}", sys::strerror(&e)),
                );
                return Step::NextInput;
            }
        };
        self.errors_in_a_row += 1;
        let amount = skip_amount(self.settings.skip_block, self.errors_in_a_row);
        // Jump to the next multiple of the amount (pv's rounding).
        let mut skip = amount - (offset + amount) % amount;
        skip = skip
            .min(self.buf.len() as u64)
            .min(self.stop_remaining().unwrap_or(u64::MAX))
            .max(1);
        if sys::lseek(fd, (offset + skip) as i64, libc::SEEK_SET).is_err() {
            skip = 1;
            if let Err(e) = sys::lseek(fd, (offset + 1) as i64, libc::SEEK_SET) {
                if e.raw_os_error() != Some(libc::EINVAL) {
                    self.shared.report(
                        0,
                        format!("{name}: failed to seek past error: {}", sys::strerror(&e)),
                    );
                }
                return Step::NextInput;
            }
        }
        let n = skip as usize;
        self.buf[..n].fill(0);
        self.pending = (0, n);
        self.read += skip;
        if self.settings.skip_errors == 1 {
            self.shared.report(
                0,
                format!(
                    "{name}: skipped past read error: {offset} - {} ({skip} B)",
                    offset + skip
                ),
            );
        }
        Step::Continue
    }

    /// Test hook `RPV_TEST_READ_ERRORS`: cut a read short before a bad range, or fail it
    /// with EIO inside one.
    fn injected_read_limit(&self, fd: BorrowedFd<'_>, max: usize) -> io::Result<usize> {
        if self.settings.hooks.read_errors.is_empty() {
            return Ok(max);
        }
        let offset = sys::lseek(fd, 0, libc::SEEK_CUR)?;
        let mut max = max as u64;
        for &(start, end) in &self.settings.hooks.read_errors {
            if (start..end).contains(&offset) {
                return Err(io::Error::from_raw_os_error(libc::EIO));
            }
            if start > offset && start < offset + max {
                max = start - offset;
            }
        }
        Ok(max as usize)
    }

    fn write_failed(&mut self, e: &io::Error) -> Step {
        if e.raw_os_error() == Some(libc::EPIPE) {
            return self.output_gone();
        }
        self.shared.aborted.store(true, Ordering::Relaxed);
        self.shared.report(
            status::TRANSFER,
            format!("write failed: {}", sys::strerror(e)),
        );
        Step::End
    }

    /// The reader went away: end quietly with status 0, like pv.
    fn output_gone(&mut self) -> Step {
        self.shared.output_closed.store(true, Ordering::Relaxed);
        Step::End
    }

    /// After EAGAIN from a zero-copy call (a neighbour set O_NONBLOCK): wait in poll() for
    /// whichever side is not ready, never sleeping on a timer.
    fn wait_ready(&self, fd: BorrowedFd<'_>) {
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

/// Bytes to skip after the `errors`-th read error in a row (spec 3.11): `-Z` if given, else
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

/// Grows a pipe to [`PIPE_SIZE`] (only ever grows; EPERM from the per-user limit is fine,
/// then a quarter of it is tried). Returns the resulting capacity.
fn grow_pipe(fd: BorrowedFd<'_>) -> usize {
    let current = sys::pipe_size(fd).unwrap_or(64 << 10);
    if current >= PIPE_SIZE {
        return current;
    }
    sys::set_pipe_size(fd, PIPE_SIZE)
        .or_else(|_| sys::set_pipe_size(fd, PIPE_SIZE / 4))
        .unwrap_or(current)
        .max(current)
}
