//! The listener of a running display loop: a thread accepts connections from the same user
//! (checked with `SO_PEERCRED` before anything is read), reads requests and hands them to
//! the display loop, which answers on its own thread.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::protocol::{decode_request, encode_reply, escape};
use super::{own_dir, peer_allowed, private_dir, Reply, Request, MAX_LINE, REPLY_TIMEOUT};
use crate::signals::Waker;
use crate::sys;

/// Removes the sockets of processes that are gone (killed with SIGKILL, or by the OOM
/// killer: they had no chance to remove theirs) from our private directory. Only names of
/// the form `PID.sock` that are sockets are looked at; a live process keeps its socket
/// whatever it is (a reused PID's socket is replaced by its new owner when it listens).
fn remove_stale(dir: &std::path::Path) {
    let Ok(entries) = sys::dir_entries(dir) else {
        return;
    };
    let me = std::process::id();
    for (name, kind) in entries {
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_suffix(".sock"))
            .filter(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        let path = dir.join(&name);
        let kind = kind.or_else(|| std::fs::symlink_metadata(&path).ok().map(|m| kind_of(&m)));
        let socket = kind == Some(sys::FileKind::Socket);
        if socket && pid != me && pid != 0 && !sys::process_exists(pid) {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// The kind of a file from its metadata (a socket is all that matters here).
fn kind_of(meta: &std::fs::Metadata) -> sys::FileKind {
    use std::os::unix::fs::FileTypeExt;
    if meta.file_type().is_socket() {
        sys::FileKind::Socket
    } else {
        sys::FileKind::Other
    }
}

/// Requests waiting for the display loop, each with the channel for its reply.
#[derive(Default)]
struct Inbox {
    pending: Vec<(Request, mpsc::Sender<Reply>)>,
    closed: bool,
    /// Connections that asked for the progress: they get the final state at the end.
    queriers: Vec<Arc<Mutex<UnixStream>>>,
}

/// The listener of a running display: a thread accepts connections; the display loop
/// answers in [`Server::serve`]. Dropping it closes the listener and removes the socket.
pub(crate) struct Server {
    path: PathBuf,
    listener: OwnedFd,
    inbox: Arc<Mutex<Inbox>>,
}

impl Server {
    /// Starts listening at this process's socket; `wake` wakes the display loop. None if
    /// the socket cannot be set up (the transfer then runs without remote control).
    pub(crate) fn start(wake: Waker) -> Option<Server> {
        let euid = sys::geteuid();
        let dir = own_dir(euid);
        private_dir(&dir, euid).ok()?;
        let path = dir.join(format!("{}.sock", std::process::id()));
        // A socket left by an earlier process with our PID (it crashed): ours to replace.
        let _ = std::fs::remove_file(&path);
        remove_stale(&dir);
        let listener = UnixListener::bind(&path).ok()?;
        let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600));
        let handle = OwnedFd::from(listener.try_clone().ok()?);
        let inbox = Arc::new(Mutex::new(Inbox::default()));
        let thread_inbox = Arc::clone(&inbox);
        let spawned = std::thread::Builder::new()
            .name("rpv-control".into())
            .spawn(move || {
                crate::signals::block_in_this_thread();
                listen(&listener, euid, &thread_inbox, wake);
            });
        if spawned.is_err() {
            let _ = std::fs::remove_file(&path);
            return None;
        }
        Some(Server {
            path,
            listener: handle,
            inbox,
        })
    }

    /// Stops serving: every connection that queried gets `last` (the final state) before
    /// it is closed, so a `-Q` ends on the same final numbers as the target.
    pub(crate) fn close(self, last: &Reply) {
        let queriers = match self.inbox.lock() {
            Ok(mut inbox) => {
                inbox.closed = true;
                inbox.pending.clear();
                std::mem::take(&mut inbox.queriers)
            }
            Err(_) => Vec::new(),
        };
        let text = encode_reply(last);
        for querier in queriers {
            if let Ok(mut stream) = querier.lock() {
                let _ = stream.write_all(text.as_bytes());
                let _ = stream.shutdown(std::net::Shutdown::Both);
            }
        }
    }

    /// Answers every pending request with `handler` (called on the display thread).
    pub(crate) fn serve(&self, mut handler: impl FnMut(&Request) -> Reply) {
        let pending = match self.inbox.lock() {
            Ok(mut inbox) => std::mem::take(&mut inbox.pending),
            Err(_) => return,
        };
        for (request, reply) in pending {
            let _ = reply.send(handler(&request));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        if let Ok(mut inbox) = self.inbox.lock() {
            inbox.closed = true;
            inbox.pending.clear();
        }
        sys::shutdown(self.listener.as_fd());
    }
}

fn listen(listener: &UnixListener, euid: u32, inbox: &Arc<Mutex<Inbox>>, wake: Waker) {
    let wake = Arc::new(wake);
    loop {
        let stream = match listener.accept() {
            Ok((stream, _)) => stream,
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
            Err(e) if e.raw_os_error() == Some(libc::ECONNABORTED) => continue,
            Err(_) => return,
        };
        if inbox.lock().map_or(true, |i| i.closed) {
            return;
        }
        // Checked before anything is read or written: other users get nothing.
        match sys::peer_cred(stream.as_fd()) {
            Ok((_, uid)) if peer_allowed(uid, euid) => {}
            _ => continue,
        }
        let inbox = Arc::clone(inbox);
        let wake = Arc::clone(&wake);
        let _ = std::thread::Builder::new()
            .name("rpv-control-conn".into())
            .spawn(move || {
                crate::signals::block_in_this_thread();
                connection(stream, &inbox, &wake);
            });
    }
}

/// Reads one request (lines up to `end`); None at EOF or on a bad connection.
fn read_request(reader: &mut impl BufRead) -> Option<Vec<String>> {
    let mut lines = Vec::new();
    let mut total = 0;
    loop {
        let mut line = Vec::new();
        let n = reader
            .by_ref()
            .take((MAX_LINE + 1) as u64)
            .read_until(b'\n', &mut line)
            .ok()?;
        total += n;
        if n == 0 || line.last() != Some(&b'\n') || total > 16 * MAX_LINE {
            return None;
        }
        line.pop();
        let line = String::from_utf8(line).ok()?;
        if line == "end" {
            return Some(lines);
        }
        lines.push(line);
    }
}

fn connection(stream: UnixStream, inbox: &Mutex<Inbox>, wake: &Waker) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(60)));
    let _ = stream.set_write_timeout(Some(Duration::from_secs(5)));
    let Ok(writer) = stream.try_clone() else {
        return;
    };
    let writer = Arc::new(Mutex::new(writer));
    let mut registered = false;
    let mut reader = BufReader::new(stream);
    while let Some(lines) = read_request(&mut reader) {
        let request = match decode_request(&lines) {
            Ok(r) => r,
            Err(e) => {
                if let Ok(mut w) = writer.lock() {
                    let _ = w.write_all(format!("error {}\n", escape(&e)).as_bytes());
                }
                continue;
            }
        };
        let (tx, rx) = mpsc::channel();
        match inbox.lock() {
            Ok(mut inbox) if !inbox.closed => {
                if request == Request::Query && !registered {
                    inbox.queriers.push(Arc::clone(&writer));
                    registered = true;
                }
                inbox.pending.push((request, tx));
            }
            _ => return,
        }
        wake.wake();
        let Ok(reply) = rx.recv_timeout(REPLY_TIMEOUT) else {
            return;
        };
        let written = writer
            .lock()
            .is_ok_and(|mut w| w.write_all(encode_reply(&reply).as_bytes()).is_ok());
        if !written {
            return;
        }
    }
}
