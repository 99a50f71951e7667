//! What rpv says about a transfer the stall watchdog (`--stall-timeout`, its clock in
//! `session.rs`) ended.
//!
//! Owns: the report ([`report`]): which side rpv waited on (the source tells, from its
//! pipes' fill and its buffer) and the process at the other end of that side's pipe, found
//! once, when the watchdog fires, through the [`Proc`] reader (the holders of the pipe's
//! inode among every process's descriptors, open for writing on the input side and for
//! reading on the output side). Must not: end anything itself: the session stops the
//! sources and exits the way an interrupt does; the engine never sees the watchdog.

use crate::error::{Error, Side, Stall};
use crate::meter::Blocked;
use crate::procfs::{command_text, pipe_inode, Proc, ProcFile, Stat, SysProc};

/// How long a command line in the message may be (characters).
const COMMAND_WIDTH: usize = 80;

/// The error that ends a stalled transfer: the timeout, the side (if the source could tell)
/// and the process at the other end of its pipe (if there is one we may see).
pub(crate) fn report(timeout: f64, blocked: Option<Blocked>) -> Error {
    report_from(&mut SysProc::new(), timeout, blocked)
}

/// [`report`], reading the process table through `proc`.
fn report_from(proc: &mut dyn Proc, timeout: f64, blocked: Option<Blocked>) -> Error {
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
            (Some(inode), _) => peer(proc, &Target::Pipe(inode), b.side),
            (None, Some((dev, ino))) => peer(proc, &Target::Fifo(dev, ino), b.side),
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
fn peer(proc: &mut dyn Proc, target: &Target, side: Side) -> Option<(u32, String)> {
    let me = std::process::id();
    let mut holders = Vec::new();
    for pid in proc.pids().ok()? {
        if pid != me && holds(proc, pid, target, side) {
            let stat = proc.read(pid, ProcFile::Stat, false).unwrap_or_default();
            let ppid = Stat::parse(&String::from_utf8_lossy(&stat)).map_or(0, |s| s.ppid);
            holders.push((pid, ppid));
        }
    }
    let pid = choose(&holders)?;
    let cmdline = proc.read(pid, ProcFile::Cmdline, false).unwrap_or_default();
    let command = command_text(&cmdline).unwrap_or_else(|| "?".into());
    Some((pid, shorten(&command)))
}

/// Whether process `pid` has `target` open on the far side of `side` (a reader's write
/// end, a writer's read end).
fn holds(proc: &mut dyn Proc, pid: u32, target: &Target, side: Side) -> bool {
    let Ok(fds) = proc.fds(pid) else {
        return false;
    };
    fds.into_iter().any(|(fd, link)| {
        let same = match *target {
            Target::Pipe(inode) => pipe_inode(&link) == Some(inode),
            Target::Fifo(dev, ino) => {
                link.starts_with('/') && proc.fd_file(pid, fd) == Some((dev, ino))
            }
        };
        same && proc
            .fd_flags(pid, fd)
            .and_then(access_mode)
            .is_some_and(|mode| {
                matches!((side, mode), (Side::Input, 1 | 2) | (Side::Output, 0 | 2))
            })
    })
}

/// The access mode (`O_RDONLY` 0, `O_WRONLY` 1, `O_RDWR` 2) from a descriptor's open
/// flags. None for an `O_PATH` descriptor (a watcher holding a reference to the pipe, as a
/// process viewer does, neither reads nor writes it).
fn access_mode(flags: u32) -> Option<u32> {
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

/// A command line cut to [`COMMAND_WIDTH`] columns, with `...` where it was cut (the report
/// is a plain message line, whatever the locale).
fn shorten(command: &str) -> String {
    crate::screen::cut(command, COMMAND_WIDTH, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn access_modes_from_open_flags() {
        assert_eq!(access_mode(0o1), Some(1));
        assert_eq!(access_mode(0o2000000), Some(0));
        assert_eq!(access_mode(0o100002), Some(2));
        // O_PATH (010000000): not a reader nor a writer.
        assert_eq!(access_mode(0o12000000), None);
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
        // Wide characters count as the two columns they take.
        let wide = shorten(&"漢".repeat(60));
        assert_eq!(crate::display::display_width(&wide), COMMAND_WIDTH - 1);
        assert!(wide.ends_with("..."));
    }

    #[test]
    fn the_writer_and_the_reader_of_a_pipe_are_found() {
        use crate::pipeline::discover::End;
        use crate::procfs::fake::FakeProc;
        // sh -c 'sleep 30 | sleep 31': the shell (100) holds neither end, its children do;
        // 90 holds the pipe through O_PATH only (a viewer), 104 reads another pipe.
        let fake = FakeProc::default();
        fake.add(100, 1, "sh -c x", End::Other, End::Other);
        fake.add(101, 100, "sleep 30", End::Other, End::Pipe(7));
        fake.add(102, 100, "sleep 31", End::Pipe(7), End::Other);
        fake.add(90, 1, "viewer", End::Pipe(7), End::Other);
        fake.with(90, |p| p.stdin_flags = libc::O_PATH as u32);
        fake.add(104, 1, "cat", End::Pipe(8), End::Other);
        let mut proc = fake.clone();
        let writer = Some((101, "sleep 30".to_string()));
        let reader = Some((102, "sleep 31".to_string()));
        assert_eq!(peer(&mut proc, &Target::Pipe(7), Side::Input), writer);
        assert_eq!(peer(&mut proc, &Target::Pipe(7), Side::Output), reader);
        assert_eq!(peer(&mut proc, &Target::Pipe(9), Side::Input), None);
        // A subshell that holds the write end and passes it on to its child: the child.
        fake.add(110, 1, "sh", End::Other, End::Pipe(7));
        fake.add(111, 110, "tar -cf - /srv", End::Other, End::Pipe(7));
        fake.remove(101);
        let found = peer(&mut proc, &Target::Pipe(7), Side::Input);
        assert_eq!(found, Some((111, "tar -cf - /srv".to_string())));
        // The report names it, with the side.
        let blocked = Blocked {
            side: Side::Input,
            pipe: Some(7),
            ..Blocked::default()
        };
        match report_from(&mut proc, 3.0, Some(blocked)) {
            Error::Stalled(stall) => {
                assert_eq!(stall.peer, found);
                assert_eq!(stall.side, Some(Side::Input));
            }
            other => panic!("{other:?}"),
        }
    }
}
