//! `-R PID` (remote control) and `-Q PID` (query), spec 4.2 and 4.3, over a private Unix
//! socket instead of pv's signal + raw-struct files.
//!
//! Owns: the control channel (the listener every running display starts, the client side of
//! `-R` and `-Q`), the text protocol, and the query mode's producer. Must not: touch the
//! display state itself: the display loop (`app::View`) receives [`Request`]s through
//! [`Server::serve`] and applies them on its own thread.
//!
//! Channel: `$XDG_RUNTIME_DIR/rpv/<pid>.sock`, or `/tmp/rpv-<euid>/<pid>.sock` without
//! `XDG_RUNTIME_DIR`. The directory is created with mode 0700 and must be a real directory
//! (not a symlink) owned by the effective user; the socket is 0600. Every connection is
//! checked with `SO_PEERCRED` (same effective user, or root) before a byte is read; the
//! client checks in turn that the socket is served by the target PID itself.
//!
//! Protocol (one connection per client; UTF-8 text lines; values escape `\` and newlines):
//!
//! ```text
//! client: set                    server: ok
//!         rate_limit=0
//!         name=copy
//!         end
//! client: query                  server: state elapsed=1.5 transferred=1234 size=5678
//!         end
//! ```
//!
//! `set` carries only the options given on the `-R` command line; keys: `switches` (letters
//! of p t e I r a b T), `last_written`, `rate_limit`, `buffer_size`, `size`, `interval`,
//! `width`, `height`, `name`, `format`, `extra_display`. `query` may be repeated on one
//! connection. Unknown keys are ignored; a bad request gets `error TEXT`.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::app;
use crate::cli::{Action, Options, SizeArg};
use crate::display::DisplaySwitches;
use crate::shared::{status, Shared};
use crate::sys;
use crate::transfer::input;

/// How long a client waits for the answer (pv waits 1.1 s; a busy machine gets more).
const REPLY_TIMEOUT: Duration = Duration::from_secs(10);
/// `-Q`: time between fetches (pv's 0.1 s).
const QUERY_PERIOD: Duration = Duration::from_millis(100);
/// Longest request line accepted.
const MAX_LINE: usize = 64 << 10;

/// The settings a `-R` changes: `None` = not given, leave it alone.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Changes {
    /// Display switches (replace the receiver's set; the default format is rebuilt).
    pub switches: Option<DisplaySwitches>,
    /// `-L`, 0 removes the limit.
    pub rate_limit: Option<u64>,
    /// `-B`.
    pub buffer_size: Option<u64>,
    /// `-s`, 0 makes the size unknown.
    pub size: Option<u64>,
    /// `-i` seconds.
    pub interval: Option<f64>,
    /// `-w`.
    pub width: Option<u32>,
    /// `-H`.
    pub height: Option<u32>,
    /// `-N`, empty clears the name.
    pub name: Option<String>,
    /// `-F`, empty returns to the default format.
    pub format: Option<String>,
    /// `-x`, empty clears it.
    pub extra_display: Option<String>,
}

/// What a client asks of a running display.
#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    /// `-R`: apply these changes.
    Set(Changes),
    /// `-Q`: report the progress.
    Query,
}

/// The display loop's answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// Changes applied.
    Done,
    /// Progress: elapsed seconds, amount transferred and total size (0 = unknown), in the
    /// target's unit (bytes, or lines with `-l`).
    State {
        /// Elapsed seconds.
        elapsed: f64,
        /// Transferred so far.
        transferred: u64,
        /// Total size, 0 = unknown.
        size: u64,
    },
}

// ---- the text protocol (pure) ----

fn escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
    out
}

fn unescape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

/// The wire text of a request, ending with `end\n`.
pub fn encode_request(request: &Request) -> String {
    let mut out = String::new();
    match request {
        Request::Query => out.push_str("query\n"),
        Request::Set(c) => {
            out.push_str("set\n");
            if let Some(sw) = &c.switches {
                let letters: String = [
                    (sw.progress, 'p'),
                    (sw.timer, 't'),
                    (sw.eta, 'e'),
                    (sw.fineta, 'I'),
                    (sw.rate, 'r'),
                    (sw.average_rate, 'a'),
                    (sw.bytes, 'b'),
                    (sw.buffer_percent, 'T'),
                ]
                .iter()
                .filter(|(on, _)| *on)
                .map(|(_, l)| *l)
                .collect();
                out.push_str(&format!(
                    "switches={letters}\nlast_written={}\n",
                    sw.last_written
                ));
            }
            let numbers = [
                ("rate_limit", c.rate_limit),
                ("buffer_size", c.buffer_size),
                ("size", c.size),
                ("width", c.width.map(u64::from)),
                ("height", c.height.map(u64::from)),
            ];
            for (key, value) in numbers {
                if let Some(v) = value {
                    out.push_str(&format!("{key}={v}\n"));
                }
            }
            if let Some(i) = c.interval {
                out.push_str(&format!("interval={i}\n"));
            }
            let texts = [
                ("name", &c.name),
                ("format", &c.format),
                ("extra_display", &c.extra_display),
            ];
            for (key, value) in texts {
                if let Some(v) = value {
                    out.push_str(&format!("{key}={}\n", escape(v)));
                }
            }
        }
    }
    out.push_str("end\n");
    out
}

/// Parses a request from its lines (without `end`).
pub fn decode_request(lines: &[String]) -> Result<Request, String> {
    let Some((kind, fields)) = lines.split_first() else {
        return Err("empty request".into());
    };
    match kind.as_str() {
        "query" => return Ok(Request::Query),
        "set" => {}
        other => return Err(format!("unknown request: {other}")),
    }
    let mut c = Changes::default();
    for field in fields {
        let Some((key, value)) = field.split_once('=') else {
            return Err(format!("bad field: {field}"));
        };
        let number = || {
            value
                .parse::<u64>()
                .map_err(|_| format!("bad number: {field}"))
        };
        let small = || {
            value
                .parse::<u32>()
                .map_err(|_| format!("bad number: {field}"))
        };
        match key {
            "switches" => {
                let has = |l| value.contains(l);
                let last = c.switches.map_or(0, |s| s.last_written);
                c.switches = Some(DisplaySwitches {
                    progress: has('p'),
                    timer: has('t'),
                    eta: has('e'),
                    fineta: has('I'),
                    rate: has('r'),
                    average_rate: has('a'),
                    bytes: has('b'),
                    buffer_percent: has('T'),
                    last_written: last,
                    ..DisplaySwitches::default()
                });
            }
            "last_written" => {
                c.switches
                    .get_or_insert_with(DisplaySwitches::default)
                    .last_written = small()?;
            }
            "rate_limit" => c.rate_limit = Some(number()?),
            "buffer_size" => c.buffer_size = Some(number()?),
            "size" => c.size = Some(number()?),
            "width" => c.width = Some(small()?),
            "height" => c.height = Some(small()?),
            "interval" => {
                let i: f64 = value.parse().map_err(|_| format!("bad number: {field}"))?;
                if !i.is_finite() {
                    return Err(format!("bad number: {field}"));
                }
                c.interval = Some(i.clamp(0.1, 600.0));
            }
            "name" => c.name = Some(unescape(value)),
            "format" => c.format = Some(unescape(value)),
            "extra_display" => c.extra_display = Some(unescape(value)),
            _ => {}
        }
    }
    Ok(Request::Set(c))
}

/// The wire text of a reply.
pub fn encode_reply(reply: &Reply) -> String {
    match reply {
        Reply::Done => "ok\n".into(),
        Reply::State {
            elapsed,
            transferred,
            size,
        } => format!("state elapsed={elapsed:.6} transferred={transferred} size={size}\n"),
    }
}

/// Parses a reply line.
pub fn decode_reply(line: &str) -> Option<Reply> {
    let line = line.trim_end();
    if line == "ok" {
        return Some(Reply::Done);
    }
    let fields = line.strip_prefix("state ")?;
    let (mut elapsed, mut transferred, mut size) = (None, None, None);
    for field in fields.split(' ') {
        match field.split_once('=')? {
            ("elapsed", v) => elapsed = v.parse::<f64>().ok().filter(|e| e.is_finite()),
            ("transferred", v) => transferred = v.parse().ok(),
            ("size", v) => size = v.parse().ok(),
            _ => {}
        }
    }
    Some(Reply::State {
        elapsed: elapsed?,
        transferred: transferred?,
        size: size?,
    })
}

/// The changes an `rpv -R PID ...` command line asks for: only the options given.
pub fn changes_from(o: &Options) -> Result<Changes, String> {
    let mut c = Changes::default();
    if "pteIrab8TA".chars().any(|l| o.given(l)) {
        c.switches = Some(DisplaySwitches {
            progress: o.progress,
            timer: o.timer,
            eta: o.eta,
            fineta: o.fineta,
            rate: o.rate,
            average_rate: o.average_rate,
            bytes: o.bytes,
            buffer_percent: o.buffer_percent,
            last_written: o.last_written,
            ..DisplaySwitches::default()
        });
    }
    let given = |l: char, v| o.given(l).then_some(v);
    c.rate_limit = given('L', o.rate_limit);
    c.buffer_size = given('B', o.buffer_size).filter(|&b| b > 0);
    if o.given('s') {
        c.size = Some(match &o.size {
            SizeArg::Auto => 0,
            SizeArg::Value(n) => *n,
            SizeArg::Path(p) => input::size_of_path(p)?,
        });
    }
    c.interval = o.given('i').then_some(o.interval);
    c.width = o.given('w').then_some(o.width);
    c.height = o.given('H').then_some(o.height);
    c.name = o.given('N').then(|| o.name.clone().unwrap_or_default());
    c.format = o.given('F').then(|| o.format.clone().unwrap_or_default());
    c.extra_display = o
        .given('x')
        .then(|| o.extra_display.clone().unwrap_or_default());
    Ok(c)
}

// ---- where the sockets live ----

/// The directory this process listens in: `$XDG_RUNTIME_DIR/rpv`, else `/tmp/rpv-<euid>`.
fn own_dir(euid: u32) -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from) {
        Some(dir) if dir.is_absolute() && dir.is_dir() => dir.join("rpv"),
        _ => PathBuf::from(format!("/tmp/rpv-{euid}")),
    }
}

/// Where a client looks for the socket of a process owned by `uid`, in order.
fn candidate_dirs(uid: u32) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    // The test hook lets another user's client try the target's own directory, so the
    // server's SO_PEERCRED check can be tested.
    if uid == sys::geteuid() || std::env::var_os("RPV_TEST_CONTROL_UNCHECKED").is_some() {
        dirs.push(own_dir(uid));
    }
    for dir in [
        PathBuf::from(format!("/run/user/{uid}/rpv")),
        PathBuf::from(format!("/tmp/rpv-{uid}")),
    ] {
        if !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    dirs
}

/// Creates (or checks) the private directory: a real directory, owned by `euid`, mode 0700
/// (a directory of ours with looser permissions is tightened).
fn private_dir(dir: &Path, euid: u32) -> std::io::Result<()> {
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let meta = std::fs::symlink_metadata(dir)?;
    if !meta.file_type().is_dir() || meta.uid() != euid {
        return Err(std::io::Error::from_raw_os_error(libc::EPERM));
    }
    if meta.mode() & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// A peer may talk to us if it runs as the same effective user, or as root.
pub fn peer_allowed(peer_uid: u32, own_euid: u32) -> bool {
    peer_uid == own_euid || peer_uid == 0
}

// ---- the server side (every running display) ----

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
pub struct Server {
    path: PathBuf,
    listener: OwnedFd,
    inbox: Arc<Mutex<Inbox>>,
}

impl Server {
    /// Starts listening at this process's socket; `wake` wakes the display loop. None if
    /// the socket cannot be set up (the transfer then runs without remote control).
    pub fn start(wake: Option<OwnedFd>) -> Option<Server> {
        let euid = sys::geteuid();
        let dir = own_dir(euid);
        private_dir(&dir, euid).ok()?;
        let path = dir.join(format!("{}.sock", std::process::id()));
        // A socket left by an earlier process with our PID (it crashed): ours to replace.
        let _ = std::fs::remove_file(&path);
        let listener = UnixListener::bind(&path).ok()?;
        let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600));
        let handle = OwnedFd::from(listener.try_clone().ok()?);
        let inbox = Arc::new(Mutex::new(Inbox::default()));
        let thread_inbox = Arc::clone(&inbox);
        let spawned = std::thread::Builder::new()
            .name("rpv-control".into())
            .spawn(move || {
                sys::block_signals(&crate::signals::HANDLED);
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
    pub fn close(self, last: &Reply) {
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
    pub fn serve(&self, mut handler: impl FnMut(&Request) -> Reply) {
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

fn listen(listener: &UnixListener, euid: u32, inbox: &Arc<Mutex<Inbox>>, wake: Option<OwnedFd>) {
    let wake = wake.map(Arc::new);
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
        let wake = wake.clone();
        let _ = std::thread::Builder::new()
            .name("rpv-control-conn".into())
            .spawn(move || {
                sys::block_signals(&crate::signals::HANDLED);
                connection(stream, &inbox, wake.as_deref());
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

fn connection(stream: UnixStream, inbox: &Mutex<Inbox>, wake: Option<&OwnedFd>) {
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
        if let Some(fd) = wake {
            use std::os::fd::AsRawFd;
            sys::write_raw(fd.as_raw_fd(), b"r");
        }
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

// ---- the client side ----

/// A connection to another rpv's control socket.
struct Client {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
}

impl Client {
    /// Connects to `pid`'s socket and checks that `pid` itself serves it.
    fn connect(pid: u32) -> Option<Client> {
        let unchecked = std::env::var_os("RPV_TEST_CONTROL_UNCHECKED").is_some();
        let uid = match std::fs::metadata(format!("/proc/{pid}")) {
            Ok(meta) => meta.uid(),
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
            let _ = stream.set_read_timeout(Some(REPLY_TIMEOUT));
            let _ = stream.set_write_timeout(Some(REPLY_TIMEOUT));
            let writer = stream.try_clone().ok()?;
            return Some(Client {
                reader: BufReader::new(stream),
                writer,
            });
        }
        None
    }

    fn ask(&mut self, request: &Request) -> Option<Reply> {
        // A target that has finished shuts the connection down after sending its final
        // state: the write then fails, but that state is still there to read.
        let _ = self.writer.write_all(encode_request(request).as_bytes());
        let mut line = String::new();
        let n = (&mut self.reader)
            .take(MAX_LINE as u64)
            .read_line(&mut line)
            .ok()?;
        if n == 0 {
            return None;
        }
        decode_reply(&line)
    }
}

/// A standing query connection to another rpv, for an observer that polls its progress
/// (the pipeline view): the same checks as `-Q`, but answers are awaited only `timeout`.
pub(crate) struct ProgressQuery {
    client: Client,
}

impl ProgressQuery {
    /// Connects to `pid`'s control channel; `None` if it has none we may use.
    pub(crate) fn connect(pid: u32, timeout: Duration) -> Option<ProgressQuery> {
        let client = Client::connect(pid)?;
        client
            .reader
            .get_ref()
            .set_read_timeout(Some(timeout))
            .ok()?;
        client.writer.set_write_timeout(Some(timeout)).ok()?;
        Some(ProgressQuery { client })
    }

    /// (elapsed seconds, amount transferred, size or 0) in the target's unit; `None` once
    /// it stops answering (then drop the connection: a late answer may still be on it).
    pub(crate) fn ask(&mut self) -> Option<(f64, u64, u64)> {
        match self.client.ask(&Request::Query)? {
            Reply::State {
                elapsed,
                transferred,
                size,
            } => Some((elapsed, transferred, size)),
            Reply::Done => None,
        }
    }
}

/// Checks the target like pv (`kill(pid, 0)`); prints `prog: PID: error` on failure.
fn check_target(pid: u32, prog: &str) -> bool {
    if std::env::var_os("RPV_TEST_CONTROL_UNCHECKED").is_some() {
        return true;
    }
    match sys::process_check(pid) {
        Ok(()) => true,
        Err(e) => {
            eprintln!("{prog}: {pid}: {}", sys::strerror(&e));
            false
        }
    }
}

fn not_received(pid: u32, prog: &str) -> u8 {
    eprintln!("{prog}: {pid}: message not received");
    status::REMOTE_OR_PID
}

/// Runs `-R PID` or `-Q PID`; returns the exit status.
pub fn run(o: &Options, prog: &str) -> u8 {
    match o.action {
        Action::Remote(pid) => remote(o, prog, pid),
        Action::Query(pid) => query(o, prog, pid),
        _ => status::USAGE,
    }
}

fn remote(o: &Options, prog: &str, pid: u32) -> u8 {
    let changes = match changes_from(o) {
        Ok(c) => c,
        Err(message) => {
            eprintln!("{prog}: {message}");
            return status::REMOTE_OR_PID;
        }
    };
    if !check_target(pid, prog) {
        return status::REMOTE_OR_PID;
    }
    let reply = Client::connect(pid).and_then(|mut c| c.ask(&Request::Set(changes)));
    match reply {
        Some(Reply::Done) => 0,
        _ => not_received(pid, prog),
    }
}

fn query(o: &Options, prog: &str, pid: u32) -> u8 {
    if !check_target(pid, prog) {
        return status::REMOTE_OR_PID;
    }
    let Some(mut client) = Client::connect(pid) else {
        return not_received(pid, prog);
    };
    let Some(Reply::State {
        elapsed,
        transferred,
        size,
    }) = client.ask(&Request::Query)
    else {
        return not_received(pid, prog);
    };
    let setup = crate::view::Setup {
        elapsed,
        ..crate::view::Setup::default()
    };
    app::display_with(o, prog, size, setup, move |shared| {
        let publish = |shared: &Shared, elapsed: f64, transferred: u64| {
            shared.bytes.store(transferred, Ordering::Relaxed);
            shared.lines.store(transferred, Ordering::Relaxed);
            if transferred > 0 && shared.first_write_ns.load(Ordering::Relaxed) == 0 {
                let start = sys::monotonic_ns().saturating_sub((elapsed * 1e9) as u64);
                shared.first_write_ns.store(start.max(1), Ordering::Relaxed);
            }
        };
        publish(shared, elapsed, transferred);
        // Until the target stops answering (it exited or finished its display).
        while !shared.stop.load(Ordering::Relaxed) {
            std::thread::sleep(QUERY_PERIOD);
            match client.ask(&Request::Query) {
                Some(Reply::State {
                    elapsed,
                    transferred,
                    ..
                }) => publish(shared, elapsed, transferred),
                _ => break,
            }
        }
        shared.finish();
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_round_trip() {
        let c = Changes {
            switches: Some(DisplaySwitches {
                progress: true,
                bytes: true,
                last_written: 7,
                ..DisplaySwitches::default()
            }),
            rate_limit: Some(0),
            buffer_size: Some(4096),
            size: Some(123),
            interval: Some(0.5),
            width: Some(60),
            height: Some(10),
            name: Some("a\\b\nc=d".into()),
            format: Some(String::new()),
            extra_display: None,
        };
        let text = encode_request(&Request::Set(c.clone()));
        let lines: Vec<String> = text.lines().map(String::from).collect();
        assert_eq!(lines.last().map(String::as_str), Some("end"));
        let decoded = decode_request(&lines[..lines.len() - 1]).unwrap();
        assert_eq!(decoded, Request::Set(c));
        assert_eq!(
            decode_request(&["query".to_string()]).unwrap(),
            Request::Query
        );
        assert!(decode_request(&["set".into(), "rate_limit=x".into()]).is_err());
        assert!(decode_request(&["bogus".into()]).is_err());
    }

    #[test]
    fn empty_set_changes_nothing() {
        let text = encode_request(&Request::Set(Changes::default()));
        assert_eq!(text, "set\nend\n");
    }

    #[test]
    fn replies_round_trip() {
        let r = Reply::State {
            elapsed: 1.25,
            transferred: 99,
            size: 0,
        };
        assert_eq!(decode_reply(&encode_reply(&r)), Some(r));
        assert_eq!(decode_reply("ok\n"), Some(Reply::Done));
        assert_eq!(decode_reply("state elapsed=inf transferred=1 size=2"), None);
        assert_eq!(decode_reply("garbage"), None);
    }

    fn parsed(args: &[&str]) -> Options {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        match crate::cli::parse("rpv", &args) {
            crate::cli::Parsed::Run(o) => *o,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn only_given_options_are_sent() {
        let c = changes_from(&parsed(&["-R", "1", "-L", "0", "-N", "x"])).unwrap();
        assert_eq!(
            c,
            Changes {
                rate_limit: Some(0),
                name: Some("x".into()),
                ..Changes::default()
            }
        );
        assert_eq!(
            changes_from(&parsed(&["-R", "1"])).unwrap(),
            Changes::default()
        );
        let c = changes_from(&parsed(&["-R", "1", "-p", "-i", "2", "-s", "0", "-F", ""])).unwrap();
        assert_eq!(
            c.switches,
            Some(DisplaySwitches {
                progress: true,
                ..DisplaySwitches::default()
            })
        );
        assert_eq!((c.interval, c.size), (Some(2.0), Some(0)));
        assert_eq!(c.format.as_deref(), Some(""));
        assert_eq!((c.rate_limit, c.name, c.width), (None, None, None));
    }

    #[test]
    fn only_same_user_or_root() {
        assert!(peer_allowed(1000, 1000));
        assert!(peer_allowed(0, 1000));
        assert!(!peer_allowed(65534, 1000));
        assert!(!peer_allowed(1000, 0));
    }
}
