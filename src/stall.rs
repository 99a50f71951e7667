//! The stall watchdog (`--stall-timeout`): when a transfer that stopped moving is ended, and
//! what rpv says about it.
//!
//! Owns: the watchdog's clock ([`Watchdog`]: the session's stall watch applied to everything
//! the transfer moves, stopped time (Ctrl-Z) not counted), and the report ([`report`]):
//! which side rpv waited on (the source tells, from its pipes' fill and its buffer) and the
//! process at the other end of that side's pipe, found once, when the watchdog fires, from
//! `/proc/*/fd` (the holders of the pipe's inode, open for writing on the input side and for
//! reading on the output side). Must not: end anything itself: the session stops the
//! sources and exits the way an interrupt does; the engine never sees the watchdog.

use std::fs;

use crate::error::{Error, Side, Stall};
use crate::meter::Blocked;
use crate::procfs::{command_text, pipe_inode, Stat};
use crate::stats::StallWatch;

/// How long a command line in the message may be (characters).
const COMMAND_WIDTH: usize = 80;

/// Whether nothing has moved for the timeout.
#[derive(Debug)]
pub struct Watchdog {
    timeout: f64,
    watch: StallWatch,
    /// When the watch started (monotonic ns) and the stopped time then.
    started: (u64, u64),
}

impl Watchdog {
    /// A watchdog of `timeout` seconds, from `now` (monotonic ns; `stopped_now`: the ns
    /// spent stopped so far).
    pub fn new(timeout: f64, now: u64, stopped_now: u64) -> Watchdog {
        Watchdog {
            timeout,
            watch: StallWatch::default(),
            started: (now, stopped_now),
        }
    }

    /// The timeout in seconds.
    pub fn timeout(&self) -> f64 {
        self.timeout
    }

    /// Records `moved` (everything the transfer has moved so far) at `now`; true once nothing
    /// moved for the timeout, not counting time stopped.
    pub fn expired(&mut self, now: u64, stopped_now: u64, moved: u64) -> bool {
        let stopped = stopped_now.saturating_sub(self.started.1);
        let running = now.saturating_sub(self.started.0).saturating_sub(stopped);
        let seconds = running as f64 / 1e9;
        self.watch
            .observe(seconds, moved, self.timeout)
            .stalled_for
            .is_some()
    }
}

/// The error that ends a stalled transfer: the timeout, the side (if the source could tell)
/// and the process at the other end of its pipe (if there is one we may see).
pub fn report(timeout: f64, blocked: Option<Blocked>) -> Error {
    let Some(b) = blocked else {
        return Error::Stalled(Stall {
            timeout,
            side: None,
            peer: None,
            command: false,
            copy: None,
        });
    };
    let command = b.command.is_some();
    let peer = match b.command {
        Some(command) => Some(command),
        None => match (b.pipe, b.fifo) {
            (Some(inode), _) => peer(&Target::Pipe(inode), b.side),
            (None, Some((dev, ino))) => peer(&Target::Fifo(dev, ino), b.side),
            (None, None) => None,
        },
    };
    Error::Stalled(Stall {
        timeout,
        side: Some(b.side),
        peer,
        command,
        copy: b.copy,
    })
}

/// What the peer holds open: an anonymous pipe (by inode) or a named FIFO (device, inode).
enum Target {
    Pipe(u64),
    Fifo(u64, u64),
}

/// The process holding the other end of the pipe `inode`: a writer when rpv waits on its
/// input, a reader when it waits on its output; rpv itself left out. Of several, one that is
/// not the parent of another holder (a subshell that only passes the pipe on), then the
/// lowest PID.
fn peer(target: &Target, side: Side) -> Option<(u32, String)> {
    let me = std::process::id();
    let mut holders = Vec::new();
    for entry in fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != me && holds(pid, target, side) {
            let ppid = Stat::of(pid).map_or(0, |s| s.ppid);
            holders.push((pid, ppid));
        }
    }
    let pid = choose(&holders)?;
    let cmdline = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let command = command_text(&cmdline).unwrap_or_else(|| "?".into());
    Some((pid, shorten(&command)))
}

/// Whether process `pid` has `target` open on the far side of `side` (a reader's write
/// end, a writer's read end).
fn holds(pid: u32, target: &Target, side: Side) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(fds) = fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.flatten().any(|fd| {
        let link = fs::read_link(fd.path()).ok();
        let link = link.as_deref().and_then(|l| l.to_str());
        let same = match *target {
            Target::Pipe(inode) => link.and_then(pipe_inode).is_some_and(|i| i == inode),
            // A path: stat (which opens nothing, so a FIFO never blocks it) for the inode.
            Target::Fifo(dev, ino) => {
                link.is_some_and(|l| l.starts_with('/'))
                    && fs::metadata(fd.path()).is_ok_and(|m| m.dev() == dev && m.ino() == ino)
            }
        };
        same && {
            let info = format!("/proc/{pid}/fdinfo/{}", fd.file_name().to_string_lossy());
            fs::read_to_string(info)
                .ok()
                .and_then(|text| access_mode(&text))
                .is_some_and(|mode| {
                    matches!((side, mode), (Side::Input, 1 | 2) | (Side::Output, 0 | 2))
                })
        }
    })
}

/// The access mode (`O_RDONLY` 0, `O_WRONLY` 1, `O_RDWR` 2) from an `fdinfo` file's
/// `flags:` line (octal). None for an `O_PATH` descriptor (a watcher holding a reference to
/// the pipe, as a process viewer does, neither reads nor writes it) or without the line.
fn access_mode(fdinfo: &str) -> Option<u32> {
    let flags = fdinfo
        .lines()
        .find_map(|l| l.strip_prefix("flags:"))?
        .trim();
    let flags = u32::from_str_radix(flags, 8).ok()?;
    (flags & libc::O_PATH as u32 == 0).then_some(flags & 3)
}

/// Of the holders `(pid, ppid)`, one that is not the parent of another, lowest PID first.
fn choose(holders: &[(u32, u32)]) -> Option<u32> {
    let mut pids: Vec<u32> = holders
        .iter()
        .filter(|(pid, _)| !holders.iter().any(|(_, ppid)| ppid == pid))
        .map(|(pid, _)| *pid)
        .collect();
    pids.sort_unstable();
    pids.first()
        .copied()
        .or_else(|| holders.iter().map(|(pid, _)| *pid).min())
}

/// A command line cut to [`COMMAND_WIDTH`] characters.
pub fn shorten(command: &str) -> String {
    if command.chars().count() <= COMMAND_WIDTH {
        return command.to_string();
    }
    let cut: String = command.chars().take(COMMAND_WIDTH - 3).collect();
    format!("{cut}...")
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn fires_after_the_timeout_without_movement() {
        let mut w = Watchdog::new(3.0, 10 * S, 0);
        assert!(!w.expired(11 * S, 0, 0));
        assert!(!w.expired(12 * S, 0, 0));
        assert!(w.expired(13 * S, 0, 0), "3 s without a byte from the start");
        let mut w = Watchdog::new(3.0, 0, 0);
        assert!(!w.expired(S, 0, 100));
        assert!(!w.expired(3 * S, 0, 100), "2 s since the last byte");
        assert!(!w.expired(4 * S, 0, 150), "moved again");
        assert!(!w.expired(6 * S, 0, 150));
        assert!(w.expired(7 * S, 0, 150));
    }

    #[test]
    fn stopped_time_does_not_count() {
        let mut w = Watchdog::new(3.0, 0, 5 * S);
        assert!(!w.expired(S, 5 * S, 10));
        // 10 s later, 9 of them stopped (Ctrl-Z): 2 s of running without movement.
        assert!(!w.expired(11 * S, 14 * S, 10));
        assert!(w.expired(13 * S, 14 * S, 10));
    }

    #[test]
    fn access_modes_from_fdinfo() {
        assert_eq!(access_mode("pos:\t0\nflags:\t01\nmnt_id:\t15\n"), Some(1));
        assert_eq!(access_mode("pos:\t0\nflags:\t02000000\n"), Some(0));
        assert_eq!(access_mode("pos:\t0\nflags:\t0100002\n"), Some(2));
        assert_eq!(access_mode("pos:\t0\n"), None);
        // O_PATH (010000000): not a reader nor a writer.
        assert_eq!(access_mode("pos:\t0\nflags:\t012000000\n"), None);
    }

    #[test]
    fn a_subshell_passing_the_pipe_on_is_not_the_peer() {
        // 100 is a subshell holding the pipe, 105 its child that writes.
        assert_eq!(choose(&[(100, 1), (105, 100)]), Some(105));
        assert_eq!(choose(&[(300, 1), (200, 1)]), Some(200));
        assert_eq!(choose(&[]), None);
        // A parent cycle (PID reuse): still someone.
        assert_eq!(choose(&[(7, 8), (8, 7)]), Some(7));
    }

    #[test]
    fn long_commands_are_cut() {
        assert_eq!(shorten("tar -cf - /srv"), "tar -cf - /srv");
        let long = "x".repeat(200);
        let short = shorten(&long);
        assert_eq!(short.chars().count(), COMMAND_WIDTH);
        assert!(short.ends_with("..."));
    }

    /// The PIDs and command lines of `pid`'s children, once there are `n` of them and each
    /// has its own command line (has run `exec`); `None` after 10 s.
    fn children_once_execed(pid: u32, n: usize) -> Option<Vec<(u32, String)>> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::time::Instant::now() < deadline {
            let text = fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"));
            let kids: Vec<(u32, String)> = crate::procfs::parse_pids(&text.unwrap_or_default())
                .into_iter()
                .map(|k| {
                    let cmdline = fs::read(format!("/proc/{k}/cmdline")).unwrap_or_default();
                    (k, command_text(&cmdline).unwrap_or_default())
                })
                .collect();
            if kids.len() == n && kids.iter().all(|(_, c)| c.starts_with("sleep ")) {
                return Some(kids);
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        None
    }

    #[test]
    fn the_writer_and_the_reader_of_a_pipe_are_found() {
        // The pipe is made by a shell, never in this process: a child that another test
        // thread forks at the same moment would hold a copy of a pipe of ours until its exec.
        let mut shell = std::process::Command::new("sh")
            .args(["-c", "sleep 30 | sleep 31"])
            .spawn()
            .unwrap();
        let kids = children_once_execed(shell.id(), 2);
        let found = kids.as_ref().map(|kids| {
            let writer = kids.iter().find(|(_, c)| c == "sleep 30").cloned();
            let reader = kids.iter().find(|(_, c)| c == "sleep 31").cloned();
            let link = reader
                .as_ref()
                .and_then(|(pid, _)| fs::read_link(format!("/proc/{pid}/fd/0")).ok());
            let inode = link
                .as_deref()
                .and_then(|l| l.to_str())
                .and_then(pipe_inode);
            let peers = inode.map(|i| {
                (
                    peer(&Target::Pipe(i), Side::Input),
                    peer(&Target::Pipe(i), Side::Output),
                )
            });
            (writer, reader, peers)
        });
        let _ = std::process::Command::new("pkill")
            .args(["-P", &shell.id().to_string()])
            .status();
        let _ = shell.kill();
        let _ = shell.wait();
        let (writer, reader, peers) = found.expect("the shell started both sleeps");
        let (on_input, on_output) = peers.expect("the reader's standard input is a pipe");
        assert_eq!(on_input, writer, "waiting on input: the writer");
        assert_eq!(on_output, reader, "waiting on output: the reader");
        assert!(writer.is_some() && reader.is_some());
    }
}
