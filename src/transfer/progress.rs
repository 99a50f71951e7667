//! What the engine shares with the display loop while it runs.
//!
//! Owns: the counters the engine publishes ([`Counters`]: relaxed atomic stores, at most a
//! few per chunk), the requests the display side sends back ([`Control`]: stop, and `-R`'s
//! rate limit and buffer size), how the run ended ([`Outcome`]), the rare-path event queue
//! (a mutex and an allocation per event, never per chunk) and the `%A`/`%L` tail. Must not:
//! format progress or touch the terminal.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicU8, Ordering};
use std::sync::Mutex;

use crate::meter::{Event, Tail};
use crate::signals::{Kick, Waker};

/// Counters written by the engine, read by the display side.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    /// Bytes written to the output so far.
    pub bytes: AtomicU64,
    /// Lines (separators) written so far; only maintained in line mode.
    pub lines: AtomicU64,
    /// Monotonic time (ns) of the first write, 0 before it (for `-W`).
    pub first_write_ns: AtomicU64,
    /// True while the current input is moved by a zero-copy path (stored when the path
    /// changes, not per chunk).
    pub zero_copy: AtomicBool,
    /// Bytes read but not yet written, for `%T` (read/write path only).
    pub buffered: AtomicU64,
    /// Capacity of the transfer buffer in bytes, 0 before it exists (for `%T`).
    pub buffer_capacity: AtomicU64,
}

/// Requests from the display side to the engine.
#[derive(Debug)]
pub(crate) struct Control {
    /// Set to ask the engine to stop (signals).
    pub stop: AtomicBool,
    /// Bumped (Release) after `rate_limit` or `buffer_size` changed at run time (`-R`); the
    /// engine loads it once per step (Relaxed) and re-reads the values only when it moved.
    pub tuning_version: AtomicU64,
    /// `-L` set at run time, units per second; 0 = no limit; [`Control::UNSET`] = never set.
    pub rate_limit: AtomicU64,
    /// `-B` set at run time, bytes; [`Control::UNSET`] = never set.
    pub buffer_size: AtomicU64,
}

impl Control {
    /// Value of a run-time setting that was never changed.
    pub(crate) const UNSET: u64 = u64::MAX;

    /// Changes the engine's rate limit and/or buffer size during the run (`-R`).
    pub(crate) fn retune(&self, rate_limit: Option<u64>, buffer_size: Option<u64>) {
        if let Some(rate) = rate_limit {
            self.rate_limit.store(rate, Ordering::Relaxed);
        }
        if let Some(size) = buffer_size {
            self.buffer_size.store(size, Ordering::Relaxed);
        }
        self.tuning_version.fetch_add(1, Ordering::Release);
    }
}

impl Default for Control {
    fn default() -> Self {
        Control {
            stop: AtomicBool::new(false),
            tuning_version: AtomicU64::new(0),
            rate_limit: AtomicU64::new(Control::UNSET),
            buffer_size: AtomicU64::new(Control::UNSET),
        }
    }
}

/// How the run ended.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    /// Set by the engine when it has finished (normally or not).
    pub done: AtomicBool,
    /// Set when the run must end without a final update (a write error).
    pub aborted: AtomicBool,
    /// Set when the output's reader went away (EPIPE): nothing is left to drain.
    pub output_closed: AtomicBool,
    status: AtomicU8,
}

/// Everything the engine and the display side share during one transfer.
#[derive(Debug, Default)]
pub(crate) struct Progress {
    /// Engine → display.
    pub counters: Counters,
    /// Display → engine.
    pub control: Control,
    /// How it ended.
    pub outcome: Outcome,
    /// What `%A` and `%L` show; fed by the engine only when the format uses them.
    pub tail: Mutex<Tail>,
    events: Mutex<Vec<Event>>,
    waker: Waker,
    /// The data thread running the engine ([`Kick::to_raw`]; 0: none, or the main thread).
    thread: AtomicI32,
}

impl Progress {
    /// New zeroed state; `waker` wakes the display loop when an event is queued or the
    /// engine finishes.
    pub(crate) fn new(waker: Waker) -> Progress {
        Progress {
            waker,
            ..Progress::default()
        }
    }

    /// ORs `bits` into the exit status.
    pub(crate) fn fail(&self, bits: u8) {
        self.outcome.status.fetch_or(bits, Ordering::Relaxed);
    }

    /// The exit status so far.
    pub(crate) fn status(&self) -> u8 {
        self.outcome.status.load(Ordering::Relaxed)
    }

    /// Queues an event (an error's exit bits are counted at once). Messages wake the
    /// display, so they show at once; the rest (an input opened or done, a path chosen)
    /// wait for its next update, which costs the data thread no system call. Rare path:
    /// takes a lock and may allocate.
    pub(crate) fn emit(&self, event: Event) {
        let urgent = match &event {
            Event::Error(e) | Event::InputFailed { error: e, .. } => {
                self.fail(e.exit_bits());
                true
            }
            Event::ReadErrorSkipped { .. } | Event::OutputGone | Event::Trace(_) => true,
            _ => false,
        };
        if let Ok(mut queue) = self.events.lock() {
            queue.push(event);
        }
        if urgent {
            self.waker.wake();
        }
    }

    /// Takes all queued events.
    pub(crate) fn take_events(&self) -> Vec<Event> {
        self.events
            .lock()
            .map(|mut q| std::mem::take(&mut *q))
            .unwrap_or_default()
    }

    /// Marks the engine finished and wakes the display.
    pub(crate) fn finish(&self) {
        self.outcome.done.store(true, Ordering::Release);
        self.waker.wake();
    }

    /// True once the engine has finished.
    pub(crate) fn is_done(&self) -> bool {
        self.outcome.done.load(Ordering::Acquire)
    }

    /// Records the data thread that runs the engine (called on it before it starts).
    pub(crate) fn set_data_thread(&self, kick: Kick) {
        self.thread.store(kick.to_raw(), Ordering::Relaxed);
    }

    /// Whether a data thread runs the engine ([`Progress::set_data_thread`] was called);
    /// false when it runs on the main thread.
    pub(crate) fn has_data_thread(&self) -> bool {
        self.thread.load(Ordering::Relaxed) != 0
    }

    /// Asks the engine to stop, and interrupts the call its data thread may be blocked in
    /// (it then counts what that call moved, and finishes). Call again until [`is_done`]:
    /// a kick that lands just before a blocking call does not interrupt it.
    ///
    /// [`is_done`]: Progress::is_done
    pub(crate) fn stop(&self) {
        self.control.stop.store(true, Ordering::Relaxed);
        if !self.is_done() {
            if let Some(kick) = Kick::from_raw(self.thread.load(Ordering::Relaxed)) {
                kick.send();
            }
        }
    }
}
