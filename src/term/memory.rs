//! An in-memory terminal for tests: what a [`super::Term`] writes, kept in a buffer.
//!
//! Owns: the buffer, reading it back as text, and replaying it through a terminal emulator
//! (vt100) to see the screen a person would see. Must not: be used outside tests (a
//! [`super::Term`] made with [`super::Term::in_memory`] never writes to standard error).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// The other end of an in-memory [`super::Term`]: every byte it wrote, in order.
#[derive(Debug, Clone, Default)]
pub(crate) struct MemoryTerm {
    bytes: Arc<Mutex<Vec<u8>>>,
    /// The reader went away ([`MemoryTerm::close`]): writes fail as with EPIPE.
    closed: Arc<AtomicBool>,
}

impl MemoryTerm {
    fn lock(&self) -> MutexGuard<'_, Vec<u8>> {
        self.bytes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Appends what the terminal wrote; false (nothing kept) once [`MemoryTerm::close`]d.
    pub(crate) fn push(&self, data: &[u8]) -> bool {
        if self.closed.load(Ordering::Relaxed) {
            return false;
        }
        self.lock().extend_from_slice(data);
        true
    }

    /// The reader goes away: later writes fail, as a pipe's with EPIPE.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Relaxed);
    }

    /// Everything written so far, as text (bytes that are not UTF-8 as U+FFFD).
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.lock()).into_owned()
    }

    /// Everything written since the last call (or since the start), as text; the buffer is
    /// emptied.
    pub(crate) fn take(&self) -> String {
        let bytes = std::mem::take(&mut *self.lock());
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// The screen a `cols`×`rows` terminal shows after everything written so far: one
    /// string per row, trailing blanks removed.
    pub(crate) fn screen(&self, cols: u16, rows: u16) -> Vec<String> {
        let mut parser = vt100::Parser::new(rows, cols, 0);
        // A terminal's line discipline turns `\n` into `\r\n` on output (onlcr).
        let bytes = self.lock().clone();
        let mut cooked = Vec::with_capacity(bytes.len());
        for b in bytes {
            if b == b'\n' {
                cooked.push(b'\r');
            }
            cooked.push(b);
        }
        parser.process(&cooked);
        parser
            .screen()
            .rows(0, cols)
            .map(|r| r.trim_end().to_string())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::super::Term;

    #[test]
    fn an_in_memory_term_keeps_what_it_writes_and_shows_the_screen() {
        let (mut term, out) = Term::in_memory("rpv", true);
        term.draw("10 B", 80);
        term.draw("5 B", 80);
        term.message("gone");
        term.draw("7 B", 80);
        term.finish_line();
        assert_eq!(out.text(), "10 B\r5 B \r\nrpv: gone\n7 B\r\n");
        assert_eq!(out.screen(20, 4), ["5 B", "rpv: gone", "7 B", ""]);
        assert_eq!(out.take(), "10 B\r5 B \r\nrpv: gone\n7 B\r\n");
        assert_eq!(out.take(), "");
        assert!(term.is_terminal());
        assert!(
            !term.enable_cursor(25),
            "no cursor mode without a real terminal"
        );
    }
}
