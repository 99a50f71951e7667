//! A pseudo-terminal for tests: `openpty`, an emulated screen (vt100) that can answer
//! cursor-position queries like a real terminal, and bash as a session leader on it.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

const QUERY: &[u8] = b"\x1b[6n";

/// A pseudo-terminal pair of the given size: (master, slave).
pub fn openpty(cols: u16, rows: u16) -> (OwnedFd, OwnedFd) {
    let (mut master, mut slave) = (0, 0);
    let ws = libc::winsize {
        ws_row: rows,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: openpty fills two fds that we then own.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            &ws,
        )
    };
    assert_eq!(rc, 0, "openpty");
    // SAFETY: openpty returned this new descriptor to us and nothing else owns it.
    let master = unsafe { OwnedFd::from_raw_fd(master) };
    // SAFETY: as for the master.
    let slave = unsafe { OwnedFd::from_raw_fd(slave) };
    for fd in [&master, &slave] {
        rustix::io::fcntl_setfd(fd, rustix::io::FdFlags::CLOEXEC).unwrap();
    }
    (master, slave)
}

/// The emulated terminal: everything written to it, its screen, and the queries answered.
pub struct Screen {
    parser: vt100::Parser,
    bytes: Vec<u8>,
    queries: usize,
}

/// The terminal side of a pty: a thread feeds the output to `vt100` and answers `ESC[6n`
/// from the emulated cursor position, until every slave fd is closed.
pub struct Terminal {
    screen: Arc<Mutex<Screen>>,
    master: OwnedFd,
    reader: Option<JoinHandle<()>>,
}

impl Terminal {
    pub fn new(master: OwnedFd, cols: u16, rows: u16, answer: bool) -> Terminal {
        let screen = Arc::new(Mutex::new(Screen {
            parser: vt100::Parser::new(rows, cols, 0),
            bytes: Vec::new(),
            queries: 0,
        }));
        let mut input = File::from(master.try_clone().unwrap());
        let mut replies = File::from(master.try_clone().unwrap());
        let shared = Arc::clone(&screen);
        let reader = std::thread::spawn(move || {
            let mut pending: Vec<u8> = Vec::new();
            let mut buf = [0u8; 4096];
            loop {
                let n = match input.read(&mut buf) {
                    Ok(0) | Err(_) => return, // EIO once the slave side is closed
                    Ok(n) => n,
                };
                pending.extend_from_slice(&buf[..n]);
                let mut screen = shared.lock().unwrap();
                screen.bytes.extend_from_slice(&buf[..n]);
                // Process up to each query, answer it, keep a partial query for later.
                while let Some(at) = pending.windows(QUERY.len()).position(|w| w == QUERY) {
                    let end = at + QUERY.len();
                    screen.parser.process(&pending[..end]);
                    pending.drain(..end);
                    screen.queries += 1;
                    if answer {
                        let (row, col) = screen.parser.screen().cursor_position();
                        let reply = format!("\x1b[{};{}R", row + 1, col + 1);
                        let _ = replies.write_all(reply.as_bytes());
                    }
                }
                let keep = (1..QUERY.len())
                    .rev()
                    .find(|&k| pending.len() >= k && pending.ends_with(&QUERY[..k]))
                    .unwrap_or(0);
                let upto = pending.len() - keep;
                screen.parser.process(&pending[..upto]);
                pending.drain(..upto);
            }
        });
        Terminal {
            screen,
            master,
            reader: Some(reader),
        }
    }

    /// Every byte written to the terminal so far.
    pub fn bytes(&self) -> Vec<u8> {
        self.screen.lock().unwrap().bytes.clone()
    }

    /// The text on the screen now.
    pub fn contents(&self) -> String {
        self.screen.lock().unwrap().parser.screen().contents()
    }

    /// Resizes the terminal (the kernel sends SIGWINCH to the foreground process group).
    /// Like xterm, a shrink that would leave the cursor below the screen first scrolls the
    /// text up by as much, so the cursor's line stays visible (`vt100` alone would cut the
    /// bottom rows off).
    pub fn resize(&self, cols: u16, rows: u16) {
        let mut screen = self.screen.lock().unwrap();
        let (old_rows, _) = screen.parser.screen().size();
        let (row, col) = screen.parser.screen().cursor_position();
        if row >= rows {
            let shift = usize::from(row - rows + 1);
            let mut bytes = format!("\x1b[{old_rows};1H").into_bytes();
            bytes.extend(std::iter::repeat_n(b'\n', shift));
            bytes.extend(format!("\x1b[{};{}H", row + 1 - shift as u16, col + 1).bytes());
            screen.parser.process(&bytes);
        }
        screen.parser.screen_mut().set_size(rows, cols);
        let ws = rustix::termios::Winsize {
            ws_row: rows,
            ws_col: cols,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        rustix::termios::tcsetwinsize(&self.master, ws).unwrap();
    }

    /// Types `keys` on the terminal's keyboard (the line discipline echoes and signals).
    pub fn type_keys(&self, keys: &[u8]) {
        let mut master = File::from(self.master.try_clone().unwrap());
        master.write_all(keys).unwrap();
    }

    /// Waits for the slave side to close; the visible rows, the raw bytes, the query count.
    pub fn finish(mut self) -> (Vec<String>, Vec<u8>, usize) {
        self.reader.take().unwrap().join().unwrap();
        let screen = self.screen.lock().unwrap();
        let (_, cols) = screen.parser.screen().size();
        let rows = screen.parser.screen().rows(0, cols).collect();
        (rows, screen.bytes.clone(), screen.queries)
    }
}

/// Runs `script` in bash as the session leader of a new terminal; `during` runs while it
/// does (with the terminal, e.g. to resize it). Returns the exit status and the terminal.
pub fn bash_on_terminal(
    script: &str,
    cols: u16,
    rows: u16,
    answer: bool,
    env: &[(&str, &str)],
    during: impl FnOnce(&Terminal),
) -> (std::process::ExitStatus, Terminal) {
    let (master, slave) = openpty(cols, rows);
    let terminal = Terminal::new(master, cols, rows, answer);
    let mut cmd = Command::new("bash");
    cmd.arg("--norc").arg("-c").arg(script);
    cmd.env("RPV", env!("CARGO_BIN_EXE_rpv"))
        .env("LC_ALL", "C")
        .env("TERM", "xterm");
    // The terminal the tests run in must not turn on --term-progress or systemd's status.
    for var in crate::util::INTEGRATION_VARS {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.stdin(Stdio::from(slave.try_clone().unwrap()))
        .stdout(Stdio::from(slave.try_clone().unwrap()))
        .stderr(Stdio::from(slave));
    let session_leader = || -> std::io::Result<()> {
        rustix::process::setsid()?;
        // As ahead of other work as the suite ([`crate::util::suite_ahead`]): a session of
        // its own is a scheduling group of its own, at nice 0 unless told (refused when
        // not root).
        if let Ok(fd) = rustix::fs::open(
            c"/proc/self/autogroup",
            rustix::fs::OFlags::WRONLY,
            rustix::fs::Mode::empty(),
        ) {
            let _ = rustix::io::write(&fd, crate::util::SUITE_NICE.as_bytes());
        }
        Ok(rustix::process::ioctl_tiocsctty(rustix::stdio::stdin())?)
    };
    crate::util::suite_ahead();
    // SAFETY: between fork and exec the closure only makes raw system calls (setsid, open,
    // write, close, TIOCSCTTY) through rustix: async-signal-safe, no allocation.
    unsafe { cmd.pre_exec(session_leader) };
    let mut child = cmd.spawn().unwrap();
    drop(cmd);
    during(&terminal);
    let status = crate::util::exit_within(&mut child, 30.0).expect("the job hung");
    (status, terminal)
}
