//! Cursor mode (`-c`): several rpv instances on one terminal, each on its own row.
//!
//! Owns: the per-terminal registry file that coordinates the instances, the cursor-position
//! query, and the positioned writes. Every write to the terminal in cursor mode happens while
//! holding an exclusive `flock` on the registry, so lines from different instances never
//! interleave.
//!
//! The registry (`rpv-cursor-<tty>-<euid>` in `$XDG_RUNTIME_DIR`, else `$TMPDIR`, else
//! `/tmp`; mode 0600, opened with `O_NOFOLLOW`, must be a regular file owned by us) holds the
//! terminal row of the first slot, the number of rows handed out, the slot written last, the
//! terminal size when the first row was last measured (an instance that sees another size,
//! or gets SIGWINCH, measures again), and one `pid start-time slot` line per running
//! instance. An instance joins at its first
//! drawn update (the first one of a fresh registry asks the terminal where the cursor is, with
//! a timeout), keeps its slot for the whole run, and leaves at exit; the last one to leave
//! moves the cursor below all rows and removes the file. Entries of instances that died
//! without leaving (SIGKILL) are dropped when their process is gone.
//!
//! The rows move when the terminal changes under them. A new height: the first instance to
//! see it asks where the cursor is (on the row written last). A new width: every instance,
//! at its first line at that width, clears below the rows what a terminal that rewraps
//! lines left there. Ctrl-Z: the shell writes its job lines meanwhile, so the first
//! instance to draw after a stop asks where the cursor is and the rows start again there.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::procfs::Stat;
use crate::screen::redraw::{NO_WRAP, WRAP};
use crate::sys;

/// How long to wait for the terminal's answer to `ESC[6n` (pv waits forever).
const QUERY_TIMEOUT_MS: u64 = 1000;

/// How long one round waits for the registry's lock (held by another instance while it
/// draws, or for as long as that one is stopped in the middle of it).
const LOCK_WAIT_NS: u64 = 200_000_000;
/// How long the end of a run waits for the lock: its last line and its leaving must not
/// be lost to another instance's cursor query (which holds the lock for up to
/// [`QUERY_TIMEOUT_MS`]), as a line of the run may be.
const FINISH_LOCK_WAIT_NS: u64 = QUERY_TIMEOUT_MS * 1_000_000 + 500_000_000;
/// Time between two tries of the lock.
const LOCK_RETRY_NS: u64 = 5_000_000;

/// One running instance in the registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Entry {
    /// Process id.
    pub pid: u32,
    /// Start time of the process (`/proc/PID/stat` field 22), to tell a reused pid apart;
    /// 0 if unknown.
    pub start: u64,
    /// Row index below the top row.
    pub slot: usize,
}

/// The shared state of the instances on one terminal (pure: parsed from and written to the
/// registry file).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Registry {
    /// Terminal row (1-based) of slot 0.
    pub top: usize,
    /// Rows handed out so far (slots and message rows); finished instances keep theirs.
    pub rows: usize,
    /// When `top` was last set from the cursor's position (monotonic ns). An instance that
    /// was stopped (Ctrl-Z) after that moves the rows below what the shell wrote meanwhile
    /// (the job's "Stopped" line, `fg`), for all of them.
    pub anchored: u64,
    /// The slot whose line was written last (the cursor is on its row).
    pub last: usize,
    /// Terminal size (columns, rows) when `top` was last measured; (0, 0) if unknown. An
    /// instance that sees another size re-measures first: the screen may have reflowed,
    /// and an instance started after the resize got no SIGWINCH.
    pub size: (usize, usize),
    /// Running instances.
    pub entries: Vec<Entry>,
}

impl Registry {
    /// Parses the file contents; anything malformed gives an empty registry.
    pub(crate) fn parse(text: &str) -> Registry {
        let mut lines = text.lines();
        let Some(head) = lines.next() else {
            return Registry::default();
        };
        let nums: Vec<usize> = head
            .split_whitespace()
            .filter_map(|w| w.parse().ok())
            .collect();
        let (top, rows, last, size, anchored) = match nums[..] {
            [top, rows, last] => (top, rows, last, (0, 0), 0),
            [top, rows, last, cols, height] => (top, rows, last, (cols, height), 0),
            [top, rows, last, cols, height, anchored] => {
                (top, rows, last, (cols, height), anchored as u64)
            }
            _ => return Registry::default(),
        };
        let mut entries = Vec::new();
        for line in lines {
            let w: Vec<u64> = line
                .split_whitespace()
                .filter_map(|w| w.parse().ok())
                .collect();
            if let [pid, start, slot] = w[..] {
                if let Ok(pid) = u32::try_from(pid) {
                    entries.push(Entry {
                        pid,
                        start,
                        slot: slot as usize,
                    });
                }
            }
        }
        Registry {
            top: top.max(1),
            rows,
            last,
            size,
            anchored,
            entries,
        }
    }

    /// The file contents.
    pub(crate) fn serialize(&self) -> String {
        let (cols, height) = self.size;
        let mut out = format!(
            "{} {} {} {cols} {height} {}\n",
            self.top, self.rows, self.last, self.anchored
        );
        for e in &self.entries {
            out.push_str(&format!("{} {} {}\n", e.pid, e.start, e.slot));
        }
        out
    }

    /// Drops the entries of processes that are gone.
    pub(crate) fn prune(&mut self, alive: impl Fn(&Entry) -> bool) {
        self.entries.retain(|e| alive(e));
    }

    /// The slot of `pid`, if it has joined (its first row).
    #[cfg(test)]
    pub(crate) fn slot_of(&self, pid: u32) -> Option<usize> {
        self.entries.iter().find(|e| e.pid == pid).map(|e| e.slot)
    }

    /// The slots of `pid`, in the order it joined them (a process with several progress
    /// lines, like `-M both`, has a row for each).
    pub(crate) fn slots_of(&self, pid: u32) -> Vec<usize> {
        self.entries
            .iter()
            .filter(|e| e.pid == pid)
            .map(|e| e.slot)
            .collect()
    }

    /// Adds an instance on the next free row and returns its slot. Rows of instances that
    /// already finished are never reused (their final line stays on screen).
    pub(crate) fn join(&mut self, pid: u32, start: u64) -> usize {
        let slot = self.rows;
        self.rows += 1;
        self.entries.push(Entry { pid, start, slot });
        slot
    }

    /// Removes `pid`; true if no instance is left.
    pub(crate) fn leave(&mut self, pid: u32) -> bool {
        self.entries.retain(|e| e.pid != pid);
        self.entries.is_empty()
    }

    /// Makes all rows fit on a screen of `height` rows: returns how many lines the screen
    /// must scroll up (the top row moves up by as much; it never goes above row 1).
    pub(crate) fn fit(&mut self, height: usize) -> usize {
        let height = height.max(1);
        let bottom = self.top + self.rows.max(1) - 1;
        if bottom <= height {
            return 0;
        }
        let scroll = (bottom - height).min(self.top - 1);
        self.top -= scroll;
        scroll
    }

    /// Terminal row of `slot`, if it is on a screen of `height` rows.
    pub(crate) fn row(&self, slot: usize, height: usize) -> Option<usize> {
        let row = self.top + slot;
        (row <= height).then_some(row)
    }

    /// The last row in use, on a screen of `height` rows.
    pub(crate) fn bottom(&self, height: usize) -> usize {
        (self.top + self.rows.max(1) - 1).min(height.max(1))
    }
}

/// Ends a round's bytes with the cursor at the start of the row written last (`row`), where
/// the next measure of the rows expects it. Not at the end of the line: a line written at
/// the old width that reaches a terminal already narrowed (its bytes were on the way when it
/// was resized) wraps onto the row below, and the rows measured from there would all move
/// down by one.
fn park(text: &mut String, row: Option<usize>) {
    if let Some(row) = row {
        text.push_str(&format!("\x1b[{row};1H"));
    }
}

/// (columns, rows) of the terminal on `fd`; (0, 0) if unknown.
fn terminal_size(fd: BorrowedFd<'_>) -> (usize, usize) {
    sys::window_size(fd).map_or((0, 0), |(c, r)| (usize::from(c), usize::from(r)))
}

/// Finds a cursor position report `ESC [ row ; col R` in `bytes`: (row, col).
pub(crate) fn parse_reply(bytes: &[u8]) -> Option<(usize, usize)> {
    let mut i = 0;
    while i + 1 < bytes.len() {
        if bytes[i] == 0x1b && bytes[i + 1] == b'[' {
            let rest = &bytes[i + 2..];
            if let Some(end) = rest.iter().position(|&b| b == b'R') {
                let body = std::str::from_utf8(&rest[..end]).ok();
                if let Some((r, c)) = body.and_then(|b| b.split_once(';')) {
                    if let (Ok(r), Ok(c)) = (r.parse::<usize>(), c.parse::<usize>()) {
                        if r > 0 && c > 0 {
                            return Some((r, c));
                        }
                    }
                }
            }
        }
        i += 1;
    }
    None
}

/// The registry file name for the terminal at `tty` and user `euid`.
pub(crate) fn registry_name(tty: &Path, euid: u32) -> String {
    let tty = tty.to_string_lossy();
    let tty: String = tty
        .trim_start_matches("/dev/")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("rpv-cursor-{tty}-{euid}")
}

/// The directory for the registry: `$XDG_RUNTIME_DIR`, else `$TMPDIR`, else `/tmp` (empty
/// values ignored).
fn registry_dir() -> PathBuf {
    ["XDG_RUNTIME_DIR", "TMPDIR"]
        .iter()
        .filter_map(std::env::var_os)
        .find(|v| !v.is_empty() && Path::new(v).is_dir())
        .map_or_else(|| PathBuf::from("/tmp"), PathBuf::from)
}

/// Start time of process `pid` (field 22 of `/proc/PID/stat`), 0 if unknown.
fn start_time(pid: u32) -> u64 {
    Stat::of(pid).map_or(0, |s| s.start)
}

fn alive(e: &Entry) -> bool {
    if !sys::process_exists(e.pid) {
        return false;
    }
    e.start == 0 || start_time(e.pid) == 0 || start_time(e.pid) == e.start
}

/// The registry must be a regular file of ours that nobody else can read or write.
fn usable(meta: &std::fs::Metadata) -> bool {
    meta.file_type().is_file() && meta.uid() == sys::geteuid() && meta.mode() & 0o077 == 0
}

/// The registry file, locked for as long as the value lives.
struct Locked {
    file: File,
}

impl Drop for Locked {
    fn drop(&mut self) {
        let _ = sys::unlock(self.file.as_fd());
    }
}

impl Locked {
    fn read(&mut self) -> Registry {
        let mut text = String::new();
        if self.file.seek(SeekFrom::Start(0)).is_err()
            || self.file.read_to_string(&mut text).is_err()
        {
            return Registry::default();
        }
        Registry::parse(&text)
    }

    fn write(&mut self, reg: &Registry) {
        let text = reg.serialize();
        let _ = self.file.set_len(0);
        let _ = self.file.seek(SeekFrom::Start(0));
        let _ = self.file.write_all(text.as_bytes());
    }
}

/// Cursor-mode state of one instance.
#[derive(Debug)]
pub(crate) struct Cursor {
    path: PathBuf,
    tty: PathBuf,
    pid: u32,
    start: u64,
    joined: bool,
    /// Terminal width at this instance's last line (0 before the first).
    width: usize,
    /// The terminal was resized: ask where the cursor is before the next line.
    requery: bool,
    /// After an exit signal, a wait for the lock ran out: later ones try once.
    stuck: std::cell::Cell<bool>,
    /// The last lines (and the width) that could not be drawn, the lock being held
    /// elsewhere: drawn at the finish if no later line was.
    undrawn: Option<(Vec<(String, usize)>, usize)>,
}

impl Cursor {
    /// Cursor mode on the terminal `stderr`, if it has a name and the registry path is not
    /// taken by something unusable.
    pub(crate) fn new(stderr: BorrowedFd<'_>) -> Option<Cursor> {
        let tty = sys::ttyname(stderr)?;
        let path = registry_dir().join(registry_name(&tty, sys::geteuid()));
        // Someone else's file, a symlink or a FIFO there: no cursor mode (normal lines).
        if let Ok(meta) = std::fs::symlink_metadata(&path) {
            if !usable(&meta) {
                return None;
            }
        }
        let pid = std::process::id();
        Some(Cursor {
            path,
            tty,
            pid,
            start: start_time(pid),
            joined: false,
            width: 0,
            requery: false,
            stuck: std::cell::Cell::new(false),
            undrawn: None,
        })
    }

    /// Notes a terminal resize: the rows are re-synchronised at the next line.
    pub(crate) fn resized(&mut self) {
        self.requery = true;
    }

    /// Opens and locks the registry; reopens if the last instance removed it meanwhile.
    /// Never waits long: the lock is tried for at most `wait_ns` (a line: [`LOCK_WAIT_NS`];
    /// the end of the run: [`FINISH_LOCK_WAIT_NS`]), so another instance
    /// that holds it while stopped (Ctrl-Z, SIGSTOP) can neither hold this one's display
    /// loop nor keep a signal from ending it (instances interrupted together still take
    /// turns at their last rows; once a wait has run out after an exit signal, later ones
    /// try once). None then: this round draws no row (the next one tries again), quietly,
    /// as the terminal has no room for a message that is not coordinated either.
    fn lock(&self, wait_ns: u64) -> Option<Locked> {
        for _ in 0..8 {
            // O_NONBLOCK: a FIFO planted at the path never holds the open (it is then
            // refused as not a regular file).
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
                .open(&self.path)
                .ok()?;
            let meta = file.metadata().ok()?;
            if !usable(&meta) {
                return None;
            }
            let deadline = sys::monotonic_ns() + wait_ns;
            loop {
                match sys::try_flock(file.as_fd()) {
                    Ok(true) => break,
                    Ok(false) => {}
                    Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
                    Err(_) => return None,
                }
                let exiting = crate::signals::exit_requested();
                if exiting && self.stuck.get() {
                    return None;
                }
                if sys::monotonic_ns() >= deadline {
                    self.stuck.set(exiting);
                    return None;
                }
                std::thread::sleep(std::time::Duration::from_nanos(LOCK_RETRY_NS));
            }
            let locked = Locked { file };
            // Still the file at `path` (not unlinked by a leaving instance)?
            let same = std::fs::symlink_metadata(&self.path)
                .is_ok_and(|m| m.ino() == meta.ino() && m.dev() == meta.dev());
            if same {
                return Some(locked);
            }
        }
        None
    }

    /// Asks the terminal for the cursor row (`ESC[6n`), waiting at most a second for the
    /// answer. Called with the registry locked. None if the terminal did not answer, or if
    /// reading from it would stop us (background process group).
    fn query(&self, out: BorrowedFd<'_>) -> Option<(usize, usize)> {
        let tty = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOCTTY | libc::O_CLOEXEC | libc::O_NONBLOCK)
            .open(&self.tty)
            .ok()?;
        if !sys::in_foreground(tty.as_fd()) {
            return None;
        }
        let saved = sys::tty_mode_for_reply(tty.as_fd()).ok()?;
        super::write_all(out, b"\x1b[6n");
        let deadline = sys::monotonic_ns() + QUERY_TIMEOUT_MS * 1_000_000;
        let mut reply = Vec::new();
        let mut buf = [0u8; 64];
        let mut found = None;
        while found.is_none() && reply.len() < 1024 {
            let now = sys::monotonic_ns();
            if now >= deadline {
                break;
            }
            let wait = ((deadline - now) / 1_000_000 + 1) as i32;
            match sys::poll_one(tty.as_fd(), libc::POLLIN, wait) {
                Ok(0) => break,
                Ok(_) => match sys::read(tty.as_fd(), &mut buf) {
                    Ok(0) => {}
                    Ok(n) => reply.extend_from_slice(&buf[..n]),
                    Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => {}
                    Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
                    Err(_) => break,
                },
                Err(_) if crate::signals::exit_requested() => break,
                Err(_) => {}
            }
            found = parse_reply(&reply);
        }
        sys::restore_tty_mode(tty.as_fd(), &saved);
        found
    }

    /// Joins the registry (called locked). The first instance of a fresh registry asks the
    /// terminal for the cursor row; without an answer the rows start at the bottom of the
    /// screen (the cursor is moved there, so the position is known).
    fn join(&mut self, reg: &mut Registry, out: BorrowedFd<'_>, height: usize) -> usize {
        reg.prune(alive);
        if reg.entries.is_empty() {
            // A cursor in mid-line (output without a final newline) keeps its line.
            let top = match self.query(out) {
                Some((row, col)) => row + usize::from(col > 1),
                None => {
                    super::write_all(out, format!("\x1b[{height};1H").as_bytes());
                    height
                }
            };
            // A row below the screen (mid-line at the bottom) is reached by scrolling.
            *reg = Registry {
                top: top.max(1),
                size: terminal_size(out),
                anchored: sys::monotonic_ns(),
                ..Registry::default()
            };
            self.requery = false;
        }
        self.joined = true;
        reg.join(self.pid, self.start)
    }

    /// Draws `lines` (each with its width in columns) on this instance's rows, one row per
    /// line, joining as many rows as there are lines.
    pub(crate) fn draw(
        &mut self,
        out: BorrowedFd<'_>,
        lines: &[(String, usize)],
        width: usize,
        height: usize,
    ) {
        let Some(mut lock) = self.lock(LOCK_WAIT_NS) else {
            // (Not drawn this round: the next line is. If this one was the last, the finish
            // draws it.)
            self.undrawn = Some((lines.to_vec(), width));
            return;
        };
        self.undrawn = None;
        self.draw_locked(&mut lock, out, lines, width, height);
    }

    /// [`Cursor::draw`] with the registry locked.
    fn draw_locked(
        &mut self,
        lock: &mut Locked,
        out: BorrowedFd<'_>,
        lines: &[(String, usize)],
        width: usize,
        height: usize,
    ) {
        let mut reg = lock.read();
        let mut slots = if self.joined {
            reg.slots_of(self.pid)
        } else {
            Vec::new()
        };
        if slots.is_empty() {
            slots.push(self.join(&mut reg, out, height));
        }
        while slots.len() < lines.len() {
            slots.push(reg.join(self.pid, self.start));
        }
        let size = terminal_size(out);
        // Rows move when the terminal's height changes (a shorter screen scrolls the text
        // up): the first instance to see a new height measures again, for all of them. A
        // change of width alone keeps the rows: a terminal that reflows long lines while
        // narrow puts them back when it widens, and measuring in between would move every
        // row to where the narrow layout had it.
        self.requery = false;
        if crate::signals::last_stop_ns() > reg.anchored {
            // Stopped (Ctrl-Z) since the rows were placed: the shell wrote its job lines
            // and `fg` where the cursor was, so the rows start again below them.
            if let Some((row, col)) = self.query(out) {
                reg.top = (row + usize::from(col > 1)).max(1);
            }
            reg.anchored = sys::monotonic_ns();
        } else if reg.size.1 != size.1 || reg.size == (0, 0) {
            // The cursor waits at the start of the row of the slot written last.
            if let Some((row, _)) = self.query(out) {
                reg.top = row.saturating_sub(reg.last).max(1);
            }
        }
        // A reflowing terminal that rewrapped the wider lines while narrow can leave the
        // wrapped-off ends of them below the rows when it widens again: every instance, at
        // its first line at a new width, clears everything below the rows (nothing else is
        // drawn there while they run; messages go on rows of their own). Every instance, not
        // only the first: a line another one wrote at the old width may land after a clear.
        let clear_below = self.width != 0 && self.width != size.0;
        self.width = size.0;
        reg.size = size;
        let mut text = String::with_capacity(lines.iter().map(|(l, _)| l.len() + 32).sum());
        // Auto-wrap off while the rows are drawn (on again after): a line written at the old
        // width that reaches a terminal already narrowed is cut at its edge. Without that, on
        // the last row it would wrap and scroll the screen, moving every row up by one
        // (terminals that ignore the setting still get a cursor [`park`]ed at its row).
        text.push_str(NO_WRAP);
        let scroll = reg.fit(height);
        if scroll > 0 {
            text.push_str(&format!("\x1b[{height};1H"));
            text.extend(std::iter::repeat_n('\n', scroll));
        }
        let below = reg.bottom(height) + 1;
        if clear_below && below <= height {
            text.push_str(&format!("\x1b[{below};1H\x1b[J"));
        }
        let mut parked = None;
        for ((line, columns), &slot) in lines.iter().zip(&slots) {
            if let Some(row) = reg.row(slot, height) {
                text.push_str(&format!("\x1b[{row};1H"));
                text.push_str(line);
                // Clear what is left of a longer line (not after a full-width line: the
                // cursor then waits in the last column and `ESC[K` would erase that column).
                if *columns < width {
                    text.push_str("\x1b[K");
                }
                reg.last = slot;
                parked = Some(row);
            }
        }
        park(&mut text, parked);
        text.push_str(WRAP);
        super::write_all(out, text.as_bytes());
        lock.write(&reg);
    }

    /// Writes `text` (no trailing newline) on new rows below all others, if other instances
    /// are running; false if the caller should write it normally. (With auto-wrap on, unlike
    /// the progress rows: a message is never cut.)
    pub(crate) fn place(&mut self, out: BorrowedFd<'_>, text: &str, height: usize) -> bool {
        let Some(mut lock) = self.lock(LOCK_WAIT_NS) else {
            return false;
        };
        let mut reg = lock.read();
        reg.prune(alive);
        if reg.entries.is_empty() {
            return false;
        }
        let first = reg.rows;
        let lines: Vec<&str> = text.split('\n').collect();
        reg.rows += lines.len();
        let scroll = reg.fit(height);
        let mut buf = String::new();
        if scroll > 0 {
            buf.push_str(&format!("\x1b[{height};1H"));
            buf.extend(std::iter::repeat_n('\n', scroll));
        }
        let mut parked = None;
        for (i, l) in lines.iter().enumerate() {
            if let Some(row) = reg.row(first + i, height) {
                buf.push_str(&format!("\x1b[{row};1H{l}\x1b[K"));
                reg.last = first + i;
                parked = Some(row);
            }
        }
        park(&mut buf, parked);
        super::write_all(out, buf.as_bytes());
        lock.write(&reg);
        true
    }

    /// Leaves the registry at the end of the run, after drawing the last lines if they
    /// could not be drawn then; the last instance moves the cursor below all rows and
    /// removes the file.
    pub(crate) fn finish(&mut self, out: BorrowedFd<'_>, height: usize) {
        let undrawn = self.undrawn.take();
        if !self.joined && undrawn.is_none() {
            return;
        }
        // (After an exit signal, no longer than a line: see [`Cursor::lock`].)
        let wait = if crate::signals::exit_requested() {
            LOCK_WAIT_NS
        } else {
            FINISH_LOCK_WAIT_NS
        };
        let Some(mut lock) = self.lock(wait) else {
            self.joined = false;
            return;
        };
        if let Some((lines, width)) = undrawn {
            self.draw_locked(&mut lock, out, &lines, width, height);
        }
        self.joined = false;
        let mut reg = lock.read();
        reg.prune(alive);
        if reg.leave(self.pid) {
            let row = reg.bottom(height);
            super::write_all(out, format!("\x1b[{row};1H\n").as_bytes());
            let _ = std::fs::remove_file(&self.path);
        } else {
            lock.write(&reg);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An instance whose registry is `dir`'s `registry`, on no terminal (no size, no
    /// answer to where the cursor is).
    fn without_terminal(dir: &Path) -> Cursor {
        Cursor {
            path: dir.join("registry"),
            tty: dir.join("no-terminal"),
            pid: std::process::id(),
            start: 0,
            joined: false,
            width: 0,
            requery: false,
            stuck: std::cell::Cell::new(false),
            undrawn: None,
        }
    }

    #[test]
    fn a_last_line_not_drawn_for_the_lock_is_drawn_at_the_finish() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("registry");
        let mut cursor = without_terminal(dir.path());
        // Another instance holds the lock (asking the terminal where the cursor is).
        let other = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&path)
            .unwrap();
        assert!(sys::try_flock(other.as_fd()).unwrap());
        let (read, write) = rustix::pipe::pipe().unwrap();
        cursor.draw(write.as_fd(), &[("last: 1.00MiB".into(), 13)], 80, 24);
        drop(other);
        cursor.finish(write.as_fd(), 24);
        drop(write);
        let mut shown = String::new();
        File::from(read).read_to_string(&mut shown).unwrap();
        assert!(shown.contains("last: 1.00MiB"), "{shown:?}");
        assert!(!path.exists(), "the last instance removed the registry");
    }

    #[test]
    fn a_line_that_reaches_a_narrowed_terminal_leaves_the_cursor_on_its_row() {
        // Three instances drew at 90 columns; the terminal became 60 columns wide while the
        // last line was on its way. The next measure of the rows reads the cursor's row as the
        // row written last: it must not be the row the long line wrapped onto.
        let dir = tempfile::tempdir().unwrap();
        let mut cursor = without_terminal(dir.path());
        let (read, write) = rustix::pipe::pipe().unwrap();
        let line = format!("one: {}", "=".repeat(84));
        cursor.draw(write.as_fd(), &[(line, 89)], 90, 20);
        drop(write);
        let mut drawn = Vec::new();
        File::from(read).read_to_end(&mut drawn).unwrap();
        // (Without an answer to where the cursor is, the rows start on row 20, the last of
        // the 20 rows the instance was told of. On a terminal of 20 rows the wrapped line
        // would scroll the screen, and no place of the cursor tells where the line is then,
        // but a terminal that honours `ESC[?7l` does not wrap it; this one does not.)
        let mut terminal = vt100::Parser::new(24, 60, 0);
        terminal.process(&drawn);
        let screen = terminal.screen();
        let (row, col) = screen.cursor_position();
        assert_eq!(row, 19, "{:?}", screen.contents());
        let row_text = screen.contents_between(row, 0, row, 60);
        assert!(
            row_text.starts_with("one: "),
            "the cursor waits on the row the line starts on, at {row},{col}: {:?}",
            screen.contents()
        );
    }

    #[test]
    fn registry_round_trips() {
        let mut reg = Registry {
            top: 5,
            ..Registry::default()
        };
        assert_eq!(reg.join(100, 7), 0);
        assert_eq!(reg.join(200, 8), 1);
        reg.last = 1;
        reg.size = (80, 24);
        reg.anchored = 123_456_789;
        let back = Registry::parse(&reg.serialize());
        assert_eq!(back, reg);
        // The older three-number header: size unknown.
        assert_eq!(Registry::parse("5 2 1\n").size, (0, 0));
        assert_eq!(back.slot_of(200), Some(1));
        assert_eq!(back.slot_of(300), None);
    }

    #[test]
    fn malformed_registry_is_empty() {
        assert_eq!(Registry::parse(""), Registry::default());
        assert_eq!(Registry::parse("garbage\n1 2 3\n"), Registry::default());
        let reg = Registry::parse("3 2 0\n10 0 0\nbad line\n11 0 1\n");
        assert_eq!(reg.entries.len(), 2);
        assert_eq!(Registry::parse("0 1 0\n").top, 1, "top is at least row 1");
    }

    #[test]
    fn finished_rows_are_not_reused() {
        let mut reg = Registry {
            top: 1,
            ..Registry::default()
        };
        reg.join(1, 0);
        reg.join(2, 0);
        assert!(!reg.leave(1));
        assert_eq!(reg.join(3, 0), 2, "slot 0 keeps the final line of pid 1");
        assert!(!reg.leave(2));
        assert!(reg.leave(3));
    }

    #[test]
    fn dead_instances_are_pruned() {
        let mut reg = Registry::parse("4 3 2\n10 0 0\n11 0 1\n12 0 2\n");
        reg.prune(|e| e.pid != 11);
        assert_eq!(
            reg.entries.iter().map(|e| e.pid).collect::<Vec<_>>(),
            [10, 12]
        );
        assert_eq!(reg.rows, 3, "the rows stay reserved");
    }

    #[test]
    fn rows_below_the_screen_scroll_it_up() {
        let mut reg = Registry {
            top: 23,
            rows: 3,
            ..Registry::default()
        };
        assert_eq!(reg.fit(24), 1);
        assert_eq!(reg.top, 22);
        assert_eq!(reg.row(2, 24), Some(24));
        assert_eq!(reg.fit(24), 0, "fits now");
        // More rows than the screen: the top stops at row 1, the rest is not drawn.
        let mut reg = Registry {
            top: 3,
            rows: 5,
            ..Registry::default()
        };
        assert_eq!(reg.fit(4), 2);
        assert_eq!(reg.top, 1);
        assert_eq!(reg.row(3, 4), Some(4));
        assert_eq!(reg.row(4, 4), None);
        assert_eq!(reg.bottom(4), 4);
    }

    #[test]
    fn bottom_row_for_the_final_newline() {
        let reg = Registry {
            top: 5,
            rows: 3,
            ..Registry::default()
        };
        assert_eq!(reg.bottom(24), 7);
        assert_eq!(reg.bottom(6), 6);
    }

    #[test]
    fn cursor_reports_are_parsed() {
        assert_eq!(parse_reply(b"\x1b[12;40R"), Some((12, 40)));
        assert_eq!(parse_reply(b"typed\x1b[3;1R"), Some((3, 1)));
        assert_eq!(parse_reply(b"\x1b[A\x1b[7;2R"), Some((7, 2)));
        assert_eq!(parse_reply(b"\x1b[12;40"), None, "incomplete");
        assert_eq!(parse_reply(b"\x1b[0;0R"), None);
    }

    #[test]
    fn registry_names_are_per_tty_and_user() {
        assert_eq!(
            registry_name(Path::new("/dev/pts/3"), 1000),
            "rpv-cursor-pts_3-1000"
        );
        assert_ne!(
            registry_name(Path::new("/dev/pts/3"), 0),
            registry_name(Path::new("/dev/tty3"), 0)
        );
    }
}
