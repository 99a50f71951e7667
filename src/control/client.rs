//! The client side of the control channel: `-R` sends changes, `-Q` asks for progress,
//! and [`RpvLink`], the one way the views that show another rpv (`--pipeline`'s stages,
//! `--top`'s flows) ask it for its figures, unit included.

use std::io::{self, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

use super::protocol::{decode_reply, encode_request};
use super::{
    candidate_dirs, unchecked_for_tests, Changes, Reply, Request, CONNECT_WAIT, MAX_LINE,
    REPLY_TIMEOUT,
};
use crate::error::Error;
use crate::procfs::{self, RpvFigures, SysProc};
use crate::sys;
use crate::units::Unit;

/// After an exit signal, how much longer a reply is awaited.
const EXIT_WAIT: Duration = Duration::from_millis(100);

/// A connection to another rpv's control socket.
pub(crate) struct Client {
    stream: UnixStream,
    /// Bytes of a reply received and not yet used.
    pending: Vec<u8>,
    /// How long a reply is awaited.
    timeout: Duration,
}

impl Client {
    /// Connects to `pid`'s socket and checks that `pid` itself serves it.
    pub(crate) fn connect(pid: u32) -> Option<Client> {
        let unchecked = unchecked_for_tests();
        let uid = match procfs::owner(pid) {
            Ok(uid) => uid,
            Err(_) if unchecked => sys::geteuid(),
            Err(_) => return None,
        };
        let euid = sys::geteuid();
        for dir in candidate_dirs(uid) {
            let Ok(stream) = UnixStream::connect(dir.join(format!("{pid}.sock"))) else {
                continue;
            };
            let trusted = match sys::peer_cred(stream.as_fd()) {
                Ok((peer_pid, peer_uid)) => {
                    peer_pid == pid && (peer_uid == euid || peer_uid == 0 || euid == 0)
                }
                Err(_) => false,
            };
            if !trusted && !unchecked {
                continue;
            }
            let _ = stream.set_write_timeout(Some(REPLY_TIMEOUT));
            return Some(Client {
                stream,
                pending: Vec::new(),
                timeout: REPLY_TIMEOUT,
            });
        }
        None
    }

    /// [`Client::connect`], waiting up to `wait` for the socket while `pid` is alive: a run
    /// opens its socket a moment after it starts.
    pub(crate) fn connect_waiting(pid: u32, wait: Duration) -> Option<Client> {
        let deadline = Instant::now() + wait;
        loop {
            if let Some(client) = Client::connect(pid) {
                return Some(client);
            }
            if Instant::now() >= deadline || !sys::process_exists(pid) {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Sends `request` and reads the reply; None if the target did not answer.
    pub(crate) fn ask(&mut self, request: &Request) -> Option<Reply> {
        // A target that has finished shuts the connection down after sending its final
        // state: the write then fails, but that state is still there to read.
        let _ = (&self.stream).write_all(encode_request(request).as_bytes());
        let line = self.read_line()?;
        decode_reply(&line)
    }

    /// The next line of the reply (at most [`MAX_LINE`] bytes; the last one may lack its
    /// newline), waiting at most the timeout. After an exit signal it waits at most
    /// [`EXIT_WAIT`] more (std's reads retry through every signal, so a stopped target held
    /// `-Q`/`-R` for the whole timeout after Ctrl-C; a live one still answers the last
    /// question of a view that is ending).
    fn read_line(&mut self) -> Option<String> {
        let mut deadline = Instant::now() + self.timeout;
        let mut exiting = false;
        let mut buf = [0u8; 4096];
        loop {
            if let Some(end) = self.pending.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.pending.drain(..=end).collect();
                return String::from_utf8(line).ok();
            }
            if self.pending.len() > MAX_LINE {
                return None;
            }
            if !exiting && crate::signals::exit_requested() {
                exiting = true;
                deadline = deadline.min(Instant::now() + EXIT_WAIT);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            // A slice at a time, so a signal that lands between two calls is seen soon.
            let slice = left.min(Duration::from_millis(20)).as_millis().max(1) as i32;
            if !matches!(sys::poll_one(self.stream.as_fd(), libc::POLLIN, slice), Ok(n) if n > 0) {
                continue;
            }
            match sys::read(self.stream.as_fd(), &mut buf) {
                Ok(0) if self.pending.is_empty() => return None,
                Ok(0) => {
                    let line = std::mem::take(&mut self.pending);
                    return String::from_utf8(line).ok();
                }
                Ok(n) => self.pending.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(_) => return None,
            }
        }
    }
}

/// A standing query connection to another rpv, for an observer that polls its progress:
/// the same checks as `-Q`, but answers are awaited only `timeout`.
struct ProgressQuery {
    client: Client,
}

impl ProgressQuery {
    /// Connects to `pid`'s control channel; `None` if it has none we may use.
    fn connect(pid: u32, timeout: Duration) -> Option<ProgressQuery> {
        let mut client = Client::connect(pid)?;
        client.timeout = timeout;
        client.stream.set_write_timeout(Some(timeout)).ok()?;
        Some(ProgressQuery { client })
    }

    /// What the target tells, unit and kind of run included; `None` once it stops
    /// answering (then drop the connection: a late answer may still be on it).
    fn figures(&mut self) -> Option<RpvFigures> {
        match self.client.ask(&Request::Query)? {
            Reply::State {
                transferred,
                size,
                unit,
                transfer,
                ..
            } => Some(RpvFigures {
                amount: transferred,
                size,
                lines: unit == Unit::Lines,
                transfer,
            }),
            Reply::Done => None,
        }
    }
}

/// Longest wait for another rpv's answer.
const ANSWER_TIMEOUT: Duration = Duration::from_millis(100);
/// Time between attempts to reach an rpv that did not answer, in nanoseconds.
const RETRY_NS: u64 = 1_000_000_000;

/// The link to another rpv, for the views that show it with its own figures (a stage of
/// `--pipeline`, a flow of `--top`): whether the process is an rpv at all, and what it
/// tells when asked (its count and size in its unit, and whether it runs a transfer). An
/// answer is awaited at most [`ANSWER_TIMEOUT`], and one that does not come is asked for
/// again only after [`RETRY_NS`], so a view never waits long.
pub(crate) struct RpvLink {
    pid: u32,
    /// False for other programs.
    rpv: bool,
    query: Option<ProgressQuery>,
    next_try_ns: u64,
}

impl RpvLink {
    /// A link to `pid`, whose command line is `cmdline` (NUL-separated, as in `/proc`).
    pub(crate) fn new(pid: u32, cmdline: &[u8]) -> RpvLink {
        RpvLink {
            pid,
            rpv: is_rpv(pid, cmdline),
            query: None,
            next_try_ns: 0,
        }
    }

    /// What the rpv tells now, if it is one and it answers.
    pub(crate) fn figures(&mut self, now_ns: u64) -> Option<RpvFigures> {
        if !self.rpv {
            return None;
        }
        if self.query.is_none() && now_ns >= self.next_try_ns {
            self.query = ProgressQuery::connect(self.pid, ANSWER_TIMEOUT);
            if self.query.is_none() {
                self.next_try_ns = now_ns + RETRY_NS;
            }
        }
        let answer = self.query.as_mut()?.figures();
        if answer.is_none() {
            self.query = None;
            self.next_try_ns = now_ns + RETRY_NS;
        }
        answer
    }
}

/// The real `/proc`, whose other rpv processes tell their figures through an [`RpvLink`],
/// with the TCP sockets' byte counts (`sock_diag`).
pub(crate) fn sys_proc() -> SysProc {
    let mut proc = SysProc::new();
    proc.set_tellers(Box::new(|pid, cmdline| {
        let mut link = RpvLink::new(pid, cmdline);
        Box::new(move || link.figures(sys::monotonic_ns()))
    }));
    proc.set_socket_bytes(sys::tcp_bytes);
    proc
}

/// The same program as this one, or a program whose name starts with `rpv`.
fn is_rpv(pid: u32, cmdline: &[u8]) -> bool {
    let ours = std::env::current_exe().ok();
    if let (Some(ours), Ok(theirs)) = (ours, procfs::exe(pid)) {
        if ours == theirs {
            return true;
        }
    }
    let argv0 = cmdline.split(|&b| b == 0).next().unwrap_or_default();
    let name = argv0.rsplit(|&b| b == b'/').next().unwrap_or_default();
    name.starts_with(b"rpv")
}

/// Checks the target like pv does (`kill(pid, 0)`): it must exist and be ours to signal.
pub(crate) fn check_target(pid: u32) -> Result<(), Error> {
    if unchecked_for_tests() {
        return Ok(());
    }
    sys::process_check(pid).map_err(|err| Error::Remote {
        pid,
        err: Some(err),
    })
}

/// `-R PID`: sends `changes` and waits for the target to apply them.
pub(crate) fn remote(pid: u32, changes: Changes) -> Result<(), Error> {
    let request = Request::Set(changes);
    let text = encode_request(&request);
    if let Some(line) = text.lines().find(|l| l.len() > MAX_LINE) {
        let option = match line.split('=').next().unwrap_or(line) {
            "name" => "-N",
            "format" => "-F",
            _ => "-x",
        };
        return Err(Error::other(
            crate::error::status::REMOTE_OR_PID,
            format!("{option}: value too long to send to {pid} (at most {MAX_LINE} bytes)"),
        ));
    }
    check_target(pid)?;
    let Some(mut client) = Client::connect_waiting(pid, CONNECT_WAIT) else {
        return Err(not_reached(pid));
    };
    match client.ask(&request) {
        Some(Reply::Done) => Ok(()),
        _ => Err(Error::Remote { pid, err: None }),
    }
}

/// The error when no socket of `pid` could be reached: `PID: message not received`, and
/// why, when a directory where its socket would be is not one rpv can use (another user
/// made it first, or it is not a directory: rpv then does not listen there at all).
pub(crate) fn not_reached(pid: u32) -> Error {
    let owner = procfs::owner(pid);
    let why = owner
        .ok()
        .and_then(|uid| candidate_dirs(uid).iter().find_map(|d| unusable(d, uid)));
    Error::Remote {
        pid,
        err: why.map(|why| io::Error::other(format!("message not received: {why}"))),
    }
}

/// Why `dir` cannot hold the sockets of user `uid`, if it exists and cannot.
fn unusable(dir: &Path, uid: u32) -> Option<String> {
    let meta = std::fs::symlink_metadata(dir).ok()?;
    // Quoted and escaped (Debug): the path comes from the environment.
    let shown = format!("{dir:?}");
    if !meta.file_type().is_dir() {
        return Some(format!(
            "{shown} is not a directory, so rpv does not listen there"
        ));
    }
    (meta.uid() != uid).then(|| {
        format!(
            "{shown} belongs to another user (uid {}), so rpv does not listen there",
            meta.uid()
        )
    })
}

#[cfg(test)]
mod rpv_tests {
    use super::*;

    #[test]
    fn rpv_by_name() {
        // PID 0 has no /proc entry: only the name decides.
        assert!(is_rpv(0, b"/usr/local/bin/rpv\0-q\0"));
        assert!(!is_rpv(0, b"/usr/bin/pv\0-q\0"));
        assert!(!is_rpv(0, b""));
    }
}
