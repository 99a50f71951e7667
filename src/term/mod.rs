//! The terminal side: where progress lines and messages are written.
//!
//! Owns: the only writes to standard error, the `\r`/`\n` protocol of normal and numeric
//! mode, padding when a line gets shorter, the rows of a multi-row view on the terminal
//! (their bytes come from [`crate::screen::Screen`]), cursor mode ([`cursor`]), the extra
//! display ([`title`]), the terminal's progress indicator ([`progress`]), and terminal
//! size detection. Only the display thread uses it, so a blocked
//! terminal (Ctrl-S, a full pipe) stalls only the display.

pub(crate) mod cursor;
#[cfg(test)]
pub(crate) mod memory;
pub(crate) mod progress;
pub(crate) mod title;

use std::os::fd::BorrowedFd;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::display::printable;
use crate::screen::Screen;
use crate::{signals, sys};

pub(crate) use title::ExtraSpec;

/// Runs `wait` with `PROG: text` (cut to the terminal's width) on a line of standard error,
/// blanked when `wait` returns: what set-up waits for (a FIFO's reader), instead of a blank
/// screen. The display starts on that line.
pub(crate) fn saying_while<T>(text: &str, wait: impl FnOnce() -> T) -> T {
    let prog = std::env::args_os()
        .next()
        .and_then(|a| {
            Some(
                std::path::Path::new(&a)
                    .file_name()?
                    .to_string_lossy()
                    .into_owned(),
            )
        })
        .unwrap_or_else(|| "rpv".into());
    let text = format!("{prog}: {text}");
    let width = crate::screen::usable_width(size(0, 0).0);
    let text = crate::screen::cut(&text, width, utf8_locale());
    let mut term = Term::new(&prog);
    term.raw(&format!("{text}\r"));
    let done = wait();
    let blank = " ".repeat(crate::display::display_width(&text));
    term.raw(&format!("{blank}\r"));
    done
}

/// True if `$TERM` is `dumb`: no escape sequences at all (no cursor mode, no window title).
pub(crate) fn dumb_terminal() -> bool {
    std::env::var("TERM").is_ok_and(|t| t == "dumb")
}

/// Terminal width and height for the display: `-w`/`-H` if non-zero, else `TIOCGWINSZ` on
/// stderr, else 80×25.
pub(crate) fn size(fixed_width: u32, fixed_height: u32) -> (usize, usize) {
    let detected = sys::window_size(sys::stderr_fd());
    let width = match (fixed_width, detected) {
        (w, _) if w > 0 => w as usize,
        (_, Some((cols, _))) => cols as usize,
        _ => 80,
    };
    let height = match (fixed_height, detected) {
        (h, _) if h > 0 => h as usize,
        (_, Some((_, rows))) if rows > 0 => rows as usize,
        _ => 25,
    };
    (width.min(65535), height)
}

/// Where a [`Term`] writes.
#[derive(Debug)]
enum Out {
    /// Standard error.
    Stderr,
    /// A buffer a test reads (see [`memory::MemoryTerm`]); `tty`: whether it passes for a
    /// terminal (messages escape control characters).
    #[cfg(test)]
    Memory {
        buffer: memory::MemoryTerm,
        tty: bool,
    },
}

/// Writes progress lines and messages to standard error (or, in tests, to memory).
#[derive(Debug)]
pub(crate) struct Term {
    fd: BorrowedFd<'static>,
    out: Out,
    prog: String,
    /// Columns of the previous progress line.
    prev_columns: usize,
    /// Terminal width at the previous line.
    prev_term_width: usize,
    /// A normal (`\r`) progress line has been written: messages start with `\n`, and the
    /// run ends with `\n`.
    pub wrote_line: bool,
    /// The rows of a multi-row view on the terminal (the cursor waits at the start of the
    /// first): a message is written over the first row and the rows are drawn again below.
    screen: Screen,
    /// Terminal width the screen's rows were drawn at.
    screen_width: usize,
    /// Cursor mode (`-c`), when it is usable on this terminal.
    cursor: Option<cursor::Cursor>,
    /// Terminal height (for cursor mode).
    height: usize,
    /// Start the next line with `\r` (after an interrupt).
    restart_line: bool,
    /// A write found nobody reading (EPIPE) or no standard error at all (EBADF).
    gone: bool,
}

impl Term {
    /// A writer on stderr; `prog` prefixes messages (`rpv: …`).
    pub(crate) fn new(prog: &str) -> Term {
        Term {
            fd: sys::stderr_fd(),
            out: Out::Stderr,
            prog: prog.to_string(),
            prev_columns: 0,
            prev_term_width: 0,
            wrote_line: false,
            screen: Screen::default(),
            screen_width: 80,
            cursor: None,
            height: 25,
            restart_line: false,
            gone: false,
        }
    }

    /// A writer into memory, for tests: the [`memory::MemoryTerm`] returned reads what it
    /// wrote. `tty`: it passes for a terminal. Cursor mode is never on (it needs a real
    /// terminal).
    #[cfg(test)]
    pub(crate) fn in_memory(prog: &str, tty: bool) -> (Term, memory::MemoryTerm) {
        let buffer = memory::MemoryTerm::default();
        let mut term = Term::new(prog);
        term.out = Out::Memory {
            buffer: buffer.clone(),
            tty,
        };
        (term, buffer)
    }

    /// Switches to cursor mode (`-c`) if stderr is a terminal with a name and `$TERM` is not
    /// `dumb`; otherwise the normal `\r` mode stays (pv shows nothing at all when stderr is
    /// not a terminal). Returns whether cursor mode is on.
    pub(crate) fn enable_cursor(&mut self, height: usize) -> bool {
        self.height = height;
        if matches!(self.out, Out::Stderr) && sys::isatty(self.fd) && !dumb_terminal() {
            self.cursor = cursor::Cursor::new(self.fd);
        }
        self.cursor.is_some()
    }

    /// The terminal size changed (SIGWINCH or SIGCONT).
    pub(crate) fn resized(&mut self, height: usize) {
        self.height = height;
        if let Some(c) = self.cursor.as_mut() {
            c.resized();
        }
    }

    /// Writes the window-title sequence for `text` (`-x window`).
    pub(crate) fn window_title(&mut self, text: &str) {
        self.write(title::window_sequence(text).as_bytes());
    }

    /// Writes one normal-mode progress line followed by `\r`. When the line is narrower than
    /// the previous one and the terminal did not shrink, it is padded with spaces so no debris
    /// of the old line remains (pv pads at most 15; rpv pads the whole difference).
    #[cfg(test)]
    pub(crate) fn draw(&mut self, line: &str, term_width: usize) {
        let columns = crate::display::display_width(line);
        self.draw_rows(&[(line.to_string(), columns)], term_width);
    }

    /// Draws several progress lines (each with its width in columns): in cursor mode each on
    /// a row of its own; otherwise one after the other on the same line.
    pub(crate) fn draw_rows(&mut self, lines: &[(String, usize)], term_width: usize) {
        if let Some(c) = self.cursor.as_mut() {
            c.draw(self.fd, lines, term_width, self.height);
            return;
        }
        for (line, columns) in lines {
            self.draw_line(line, *columns, term_width);
        }
    }

    /// The run was interrupted: the terminal may have echoed `^C` where the cursor was, so
    /// the next line starts with a carriage return.
    pub(crate) fn interrupted(&mut self) {
        self.restart_line = true;
    }

    fn draw_line(&mut self, line: &str, columns: usize, term_width: usize) {
        let mut out = String::with_capacity(line.len() + 16);
        if std::mem::take(&mut self.restart_line) {
            out.push('\r');
        }
        out.push_str(line);
        if columns < self.prev_columns && term_width >= self.prev_term_width {
            let pad = (self.prev_columns - columns).min(term_width.saturating_sub(columns));
            out.extend(std::iter::repeat_n(' ', pad));
        }
        out.push('\r');
        self.prev_columns = columns;
        self.prev_term_width = term_width;
        self.wrote_line = true;
        self.write(out.as_bytes());
    }

    /// Writes one numeric-mode line (`line` + `\n`).
    pub(crate) fn numeric(&mut self, line: &str) {
        let mut out = String::with_capacity(line.len() + 1);
        out.push_str(line);
        out.push('\n');
        self.write(out.as_bytes());
    }

    /// Standard error is a terminal.
    pub(crate) fn is_terminal(&self) -> bool {
        match &self.out {
            Out::Stderr => sys::isatty(self.fd),
            #[cfg(test)]
            Out::Memory { tty, .. } => *tty,
        }
    }

    /// Writes an error message: `prog: message\n`, starting on a new line if a progress line
    /// is on the screen. On a terminal, control characters in it (from a file name) are
    /// shown escaped.
    pub(crate) fn message(&mut self, message: &str) {
        let escaped;
        let message = if self.is_terminal() {
            escaped = printable(message);
            &*escaped
        } else {
            message
        };
        if let Some(c) = self.cursor.as_mut() {
            // Under the lock, on a row of its own below the progress lines.
            if c.place(self.fd, &format!("{}: {message}", self.prog), self.height) {
                return;
            }
        }
        if self.screen.active() {
            // Over the first row of the view, which is drawn again below it.
            let text = format!("{}: {message}", self.prog);
            let bytes = self.screen.over(&text, self.screen_width);
            self.write(bytes.as_bytes());
            return;
        }
        let lead = if self.wrote_line { "\n" } else { "" };
        let text = format!("{lead}{}: {message}\n", self.prog);
        self.prev_columns = 0;
        self.write(text.as_bytes());
    }

    /// Ends the run: `\n` after the last progress line, if any was written.
    pub(crate) fn finish_line(&mut self) {
        if let Some(c) = self.cursor.as_mut() {
            c.finish(self.fd, self.height);
            return;
        }
        if self.wrote_line {
            self.write(b"\n");
        }
    }

    /// Draws the rows of a multi-row view (each fitted by [`crate::screen::View`] to the
    /// width) in place of the rows drawn before.
    pub(crate) fn draw_screen(&mut self, rows: &[String], term_width: usize) {
        let bytes = self.screen.round(rows, term_width);
        self.screen_width = term_width;
        self.wrote_line = false;
        self.write(bytes.as_bytes());
    }

    /// Ends a multi-row view: its rows stay, the cursor goes below them.
    pub(crate) fn finish_screen(&mut self) {
        let bytes = self.screen.finish();
        self.write(bytes.as_bytes());
    }

    /// The process is about to stop (Ctrl-Z): a multi-row view's rows are erased, so the
    /// shell's lines go where they were and the rows start again below them after `fg`.
    pub(crate) fn suspend(&mut self) {
        let bytes = self.screen.erase();
        self.write(bytes.as_bytes());
    }

    /// Cursor mode (`-c`) is on: progress lines are rows of their own.
    pub(crate) fn cursor_rows(&self) -> bool {
        self.cursor.is_some()
    }

    /// Several whole lines, as [`Term::raw`] writes each: in one write where nothing
    /// places them (a full screen or the cursor mode places each line).
    pub(crate) fn raw_lines(&mut self, text: &str) {
        if self.screen.active() || self.cursor.is_some() {
            for line in text.split_inclusive('\n') {
                self.raw(line);
            }
            return;
        }
        self.write(text.as_bytes());
    }

    /// Writes raw text (for `--stats`).
    pub(crate) fn raw(&mut self, text: &str) {
        if self.screen.active() {
            let bytes = self
                .screen
                .over(text.trim_end_matches('\n'), self.screen_width);
            self.write(bytes.as_bytes());
            return;
        }
        if let Some(c) = self.cursor.as_mut() {
            if c.place(self.fd, text.trim_end_matches('\n'), self.height) {
                return;
            }
        }
        self.write(text.as_bytes());
    }

    /// The reader of standard error is gone: a write failed with EPIPE (or EBADF). A
    /// transfer goes on (its data matters more than its display); a watch, which has
    /// nothing else to show for itself, ends (the display loop decides).
    pub(crate) fn reader_gone(&self) -> bool {
        self.gone
    }

    fn write(&mut self, data: &[u8]) {
        let gone = match &self.out {
            Out::Stderr => write_all(self.fd, data) == Written::Gone,
            #[cfg(test)]
            Out::Memory { buffer, .. } => !buffer.push(data),
        };
        self.gone |= gone;
    }
}

/// What became of a [`write_all`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Written {
    /// Everything was written, or the rest was dropped (an error, or stuck after an exit
    /// signal).
    Done,
    /// Nobody reads standard error any more (EPIPE), or there is none (EBADF).
    Gone,
}

/// After an exit signal, how long one write of a line or message may wait for a standard
/// error that takes nothing (a full pipe nobody reads, a stopped terminal).
const EXIT_WRITE_NS: u64 = 500_000_000;

/// Set when a write after an exit signal gave up: standard error is stuck, and later
/// writes are made only if it has room at once.
static STUCK: AtomicBool = AtomicBool::new(false);

/// Blocking write of everything to `fd`, retrying on EINTR; other errors drop the text (a
/// display problem never stops the transfer); EPIPE and EBADF say so ([`Written::Gone`]).
///
/// Once an exit signal has arrived it never blocks for good, so rpv always exits (and its
/// output closes, so the next stage sees the end of its input): SIGALRM ticks interrupt a
/// blocked write ([`signals::bound_blocking_calls`]), the write gives up after
/// [`EXIT_WRITE_NS`], and after that, text that does not fit at once is dropped. The shared
/// open file description of standard error is never made non-blocking (the shell and the
/// other stages of the pipeline use it too).
fn write_all(fd: BorrowedFd<'_>, mut data: &[u8]) -> Written {
    let mut give_up_at = None;
    while !data.is_empty() {
        if signals::exit_requested() {
            let now = sys::monotonic_ns();
            let at = *give_up_at.get_or_insert_with(|| {
                signals::bound_blocking_calls();
                if STUCK.load(Ordering::Relaxed) {
                    // Only if it has room now; then a tick at most.
                    let ready = sys::poll_one(fd, libc::POLLOUT, 0).is_ok_and(|r| r != 0);
                    if ready {
                        now + 30_000_000
                    } else {
                        now
                    }
                } else {
                    now + EXIT_WRITE_NS
                }
            });
            if now >= at {
                STUCK.store(true, Ordering::Relaxed);
                return Written::Done;
            }
        }
        match sys::write(fd, data) {
            Ok(0) => return Written::Done,
            Ok(n) => data = &data[n..],
            // A signal: after an exit signal the loop checks the deadline; otherwise (a
            // resize, a stray signal) the write goes on.
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
            Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => {
                let _ = sys::poll_one(fd, libc::POLLOUT, 100);
            }
            Err(e) if matches!(e.raw_os_error(), Some(libc::EPIPE | libc::EBADF)) => {
                return Written::Gone;
            }
            Err(_) => return Written::Done,
        }
    }
    Written::Done
}

/// The locale (LC_ALL, else LC_CTYPE, else LANG) uses UTF-8: Unicode bar styles are allowed.
pub(crate) fn utf8_locale() -> bool {
    ["LC_ALL", "LC_CTYPE", "LANG"]
        .iter()
        .find_map(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
        .is_some_and(|v| {
            let v = v.to_ascii_lowercase();
            v.contains("utf-8") || v.contains("utf8")
        })
}

/// Colour escapes may be written: not with `NO_COLOR` set and non-empty, not on `TERM=dumb`,
/// and only with a `TERM` (or `-f`).
pub(crate) fn colour_allowed(force: bool) -> bool {
    let no_color = std::env::var("NO_COLOR").is_ok_and(|v| !v.is_empty());
    let term = std::env::var("TERM").unwrap_or_default();
    !no_color && term != "dumb" && (force || !term.is_empty())
}
