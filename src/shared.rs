//! State shared between the data thread and the display thread.
//!
//! Owns: the counters the engine bumps (one relaxed atomic add per chunk), the exit-status
//! bits, and the queue of messages the engine wants printed. Must not: format progress or
//! write to the terminal; only the display thread prints, so messages never interleave with
//! a half-drawn progress line.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Mutex;

/// Exit-status bits (spec 1.9), OR-ed together over a run.
pub mod status {
    /// Problem with -R/-Q/-P/-M or the store-and-forward file.
    pub const REMOTE_OR_PID: u8 = 1;
    /// An input, the output or a watched descriptor could not be opened or stat'ed.
    pub const ACCESS: u8 = 2;
    /// An input is the same file as the output.
    pub const OUROBOROS: u8 = 4;
    /// Failure closing an input or moving to the next one.
    pub const TRANSITION: u8 = 8;
    /// A read or write error.
    pub const TRANSFER: u8 = 16;
    /// Ended by SIGINT, SIGHUP or SIGTERM.
    pub const SIGNAL: u8 = 32;
    /// Command-line errors (and, in pv, allocation failures).
    pub const USAGE: u8 = 64;
}

/// Counters and flags written by the data thread and read by the display thread.
#[derive(Debug)]
pub struct Shared {
    /// Bytes written to the output so far.
    pub bytes: AtomicU64,
    /// Lines (separators) written so far; only maintained in line mode.
    pub lines: AtomicU64,
    /// Monotonic time (ns) of the first write, 0 before it (for `-W`).
    pub first_write_ns: AtomicU64,
    /// True while the current input is moved by splice/copy_file_range (for `%T`).
    pub zero_copy: AtomicBool,
    /// Bytes read but not yet written, for `%T` (read/write path only).
    pub buffered: AtomicU64,
    /// Capacity of the transfer buffer in bytes, 0 before it exists (for `%T`).
    pub buffer_capacity: AtomicU64,
    /// Set by the display thread to ask the engine to stop (signals).
    pub stop: AtomicBool,
    /// Set by the engine when it has finished (normally or not).
    pub done: AtomicBool,
    /// Set by the engine when the run must end without a final update (write error).
    pub aborted: AtomicBool,
    /// Set when the output's reader went away (EPIPE): nothing is left to drain.
    pub output_closed: AtomicBool,
    /// Bumped (Release) after `rate_limit` or `buffer_size` changed at run time (`-R`); the
    /// engine loads it once per chunk (Relaxed) and re-reads the values only when it moved.
    pub tuning_version: AtomicU64,
    /// `-L` set at run time, units per second; 0 = no limit; [`Shared::UNSET`] = never set.
    pub rate_limit: AtomicU64,
    /// `-B` set at run time, bytes; [`Shared::UNSET`] = never set.
    pub buffer_size: AtomicU64,
    status: AtomicU8,
    messages: Mutex<Vec<String>>,
    wake: Option<OwnedFd>,
    /// What `%A` and `%L` show; fed by the engine only when the format uses them.
    pub tail: Mutex<Tail>,
}

/// The end of the data written so far, for `%A` (last bytes) and `%L` (previous line).
#[derive(Debug, Default, Clone)]
pub struct Tail {
    /// The last bytes written, oldest first, at most [`Tail::LAST`].
    pub last: Vec<u8>,
    /// The most recent complete line, without its separator, at most [`Tail::LINE`] bytes.
    pub line: Vec<u8>,
    /// The start of the line being written now.
    current: Vec<u8>,
}

impl Tail {
    /// Bytes kept for `%A` (pv's limit).
    pub const LAST: usize = 256;
    /// Bytes kept of a line for `%L` (pv's limit).
    pub const LINE: usize = 1024;

    /// Records that `data` was written; `sep` ends lines.
    pub fn feed(&mut self, data: &[u8], sep: u8) {
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

impl Shared {
    /// Value of a run-time setting that was never changed.
    pub const UNSET: u64 = u64::MAX;

    /// New zeroed state; `wake` is the write end of a pipe the display thread polls, written
    /// to whenever a message is queued or the engine finishes.
    pub fn new(wake: Option<OwnedFd>) -> Shared {
        Shared {
            bytes: AtomicU64::new(0),
            lines: AtomicU64::new(0),
            first_write_ns: AtomicU64::new(0),
            zero_copy: AtomicBool::new(false),
            buffered: AtomicU64::new(0),
            buffer_capacity: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            done: AtomicBool::new(false),
            aborted: AtomicBool::new(false),
            output_closed: AtomicBool::new(false),
            tuning_version: AtomicU64::new(0),
            rate_limit: AtomicU64::new(Shared::UNSET),
            buffer_size: AtomicU64::new(Shared::UNSET),
            status: AtomicU8::new(0),
            messages: Mutex::new(Vec::new()),
            wake,
            tail: Mutex::new(Tail::default()),
        }
    }

    /// ORs `bits` into the exit status.
    pub fn fail(&self, bits: u8) {
        self.status.fetch_or(bits, Ordering::Relaxed);
    }

    /// The exit status so far.
    pub fn status(&self) -> u8 {
        self.status.load(Ordering::Relaxed)
    }

    /// Queues an error message (without the `prog: ` prefix) and ORs `bits` into the status.
    /// Rare path: takes a lock and allocates.
    pub fn report(&self, bits: u8, message: String) {
        self.fail(bits);
        if let Ok(mut queue) = self.messages.lock() {
            queue.push(message);
        }
        self.wake();
    }

    /// Takes all queued messages.
    pub fn take_messages(&self) -> Vec<String> {
        self.messages
            .lock()
            .map(|mut q| std::mem::take(&mut *q))
            .unwrap_or_default()
    }

    /// Marks the engine finished and wakes the display thread.
    pub fn finish(&self) {
        self.done.store(true, Ordering::Release);
        self.wake();
    }

    /// Changes the engine's rate limit and/or buffer size during the run (`-R`).
    pub fn retune(&self, rate_limit: Option<u64>, buffer_size: Option<u64>) {
        if let Some(rate) = rate_limit {
            self.rate_limit.store(rate, Ordering::Relaxed);
        }
        if let Some(size) = buffer_size {
            self.buffer_size.store(size, Ordering::Relaxed);
        }
        self.tuning_version.fetch_add(1, Ordering::Release);
    }

    /// A duplicate of the wake pipe's write end, for threads that wake the display loop
    /// (the `-R`/`-Q` listener).
    pub fn wake_handle(&self) -> Option<OwnedFd> {
        self.wake.as_ref().and_then(|fd| fd.try_clone().ok())
    }

    fn wake(&self) {
        if let Some(fd) = &self.wake {
            crate::sys::write_raw(fd.as_raw_fd(), b"w");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Tail;

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
}
