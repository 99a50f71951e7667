//! The bench's own fast sources and sinks, and a bare relay, run as hidden subcommands
//! of the same binary (`rpv-bench source ...`, `rpv-bench sink ...`, `rpv-bench relay ...`).
//!
//! Sources write exactly the requested number of bytes to stdout; sinks
//! count what they receive on stdin and exit with status 3 when the count
//! differs from the expected one.

use rpv::sys::{self, ConstBuf};
use std::io;
use std::os::fd::{AsFd, BorrowedFd};

/// The byte every generated data stream is made of.
pub const FILL: u8 = b'r';
/// Size of the vmsplice source's constant buffer, the largest `--chunk`.
const BUFFER: usize = 1 << 20;
/// vmsplice request size without `--chunk` (the research's `w2`: 256 KiB).
const CHUNK: usize = 256 << 10;
/// Pipe size of the vmsplice source without `--pipe` (the research's `w2`: 512 KiB).
const SOURCE_PIPE: usize = 512 << 10;
/// Splice request size of `sink splice`.
const SINK_SPLICE: usize = 1 << 20;
/// Request size (and pipe size) of `relay`: rpv's.
const RELAY_CHUNK: usize = 1 << 20;
/// Read size of `sink read`.
const READ_SIZE: usize = 256 << 10;

/// Runs `rpv-bench source|sink ARGS`; returns the process exit status.
pub fn main(role: &str, args: &[String]) -> i32 {
    let result = match role {
        "source" => source(args),
        "sink" => sink(args),
        "relay" => relay(args),
        _ => Err(format!("unknown helper role {role}")),
    };
    match result {
        Ok(()) => 0,
        Err(msg) => {
            eprintln!("rpv-bench {role}: {msg}");
            3
        }
    }
}

/// Options shared by sources and sinks: positional words plus `--flags`.
struct HelperArgs<'a> {
    words: Vec<&'a str>,
    nonblock: bool,
    /// `--pipe=N`: F_SETPIPE_SZ on the helper's pipe end first.
    pipe: Option<usize>,
    /// `--chunk=N`: vmsplice request size.
    chunk: Option<usize>,
}

fn parse(args: &[String]) -> Result<HelperArgs<'_>, String> {
    let mut out = HelperArgs {
        words: Vec::new(),
        nonblock: false,
        pipe: None,
        chunk: None,
    };
    let size = |v: &str, what: &str| -> Result<usize, String> {
        v.parse().map_err(|_| format!("bad {what}: {v}"))
    };
    for a in args {
        match a.as_str() {
            "--nonblock" => out.nonblock = true,
            s if s.starts_with("--pipe=") => out.pipe = Some(size(&s[7..], "--pipe")?),
            s if s.starts_with("--chunk=") => out.chunk = Some(size(&s[8..], "--chunk")?),
            s if s.starts_with("--") => return Err(format!("unknown option {s}")),
            s => out.words.push(s),
        }
    }
    Ok(out)
}

fn number(words: &[&str], i: usize, what: &str) -> Result<u64, String> {
    let w = words.get(i).ok_or_else(|| format!("missing {what}"))?;
    w.parse().map_err(|_| format!("bad {what}: {w}"))
}

/// `source vmsplice BYTES [--chunk=N] [--pipe=N] [--nonblock]` (defaults: 256 KiB
/// requests into a 512 KiB pipe) or `source write BYTES CHUNK [--pipe=N] [--nonblock]`
/// (default: the pipe as found, like most producers).
fn source(args: &[String]) -> Result<(), String> {
    let a = parse(args)?;
    let bytes = number(&a.words, 1, "BYTES")?;
    if a.nonblock {
        set_nonblock(1)?;
    }
    match a.words.first().copied() {
        Some("vmsplice") => {
            set_pipe_size(1, a.pipe.unwrap_or(SOURCE_PIPE));
            let chunk = a.chunk.unwrap_or(CHUNK);
            if !(1..=BUFFER).contains(&chunk) {
                return Err(format!("--chunk must be 1..={BUFFER}"));
            }
            source_vmsplice(bytes, chunk)
        }
        Some("write") => {
            if let Some(size) = a.pipe {
                set_pipe_size(1, size);
            }
            let chunk = number(&a.words, 2, "CHUNK")? as usize;
            write_loop(&vec![FILL; chunk.max(1)], bytes)
        }
        other => Err(format!("unknown source kind {other:?}")),
    }
}

/// `sink splice|read EXPECTED [--pipe=N] [--nonblock]` (default: the pipe as found).
fn sink(args: &[String]) -> Result<(), String> {
    let a = parse(args)?;
    let expected = number(&a.words, 1, "EXPECTED")?;
    if a.nonblock {
        set_nonblock(0)?;
    }
    if let Some(size) = a.pipe {
        set_pipe_size(0, size);
    }
    let got = match a.words.first().copied() {
        Some("splice") => sink_splice()?,
        Some("read") => sink_read()?,
        other => return Err(format!("unknown sink kind {other:?}")),
    };
    if got != expected {
        return Err(format!("expected {expected} bytes, received {got}"));
    }
    Ok(())
}

/// `relay splice` or `relay tee PATH`: the least a relay between two pipes can do, as a
/// ceiling for rpv in the same topology. It grows its pipes to 1 MiB (as rpv does), then
/// splices stdin to stdout in 1 MiB requests; with `tee`, each round first tee(2)s the same
/// bytes into PATH (opened for writing, a pipe). No counting, no display, no fallbacks: it
/// fails on anything the kernel refuses.
fn relay(args: &[String]) -> Result<(), String> {
    let a = parse(args)?;
    let side = match a.words.as_slice() {
        ["splice"] => None,
        ["tee", path] => Some(
            std::fs::OpenOptions::new()
                .write(true)
                .open(path)
                .map_err(|e| format!("{path}: {e}"))?,
        ),
        _ => return Err("usage: relay splice | relay tee PATH".into()),
    };
    grow_pipe(sys::stdin_fd(), RELAY_CHUNK);
    grow_pipe(sys::stdout_fd(), RELAY_CHUNK);
    if let Some(f) = &side {
        grow_pipe(f.as_fd(), RELAY_CHUNK);
    }
    loop {
        let n = match &side {
            None => RELAY_CHUNK,
            Some(f) => match sys::tee(sys::stdin_fd(), f.as_fd(), RELAY_CHUNK) {
                Ok(0) => return Ok(()),
                Ok(n) => n,
                Err(e) => {
                    retryable(e, 0, libc::POLLIN, "tee")?;
                    continue;
                }
            },
        };
        let mut moved = 0;
        while moved < n {
            match sys::splice(sys::stdin_fd(), sys::stdout_fd(), n - moved) {
                Ok(0) if side.is_none() => return Ok(()),
                Ok(0) => return Err("splice: end of input after tee".into()),
                Ok(k) => moved += k,
                Err(e) => retryable(e, 0, libc::POLLIN, "splice")?,
            }
        }
    }
}

/// The descriptor a helper reads or writes: 0 or 1.
fn stdio(fd: i32) -> BorrowedFd<'static> {
    if fd == 0 {
        sys::stdin_fd()
    } else {
        sys::stdout_fd()
    }
}

fn set_nonblock(fd: i32) -> Result<(), String> {
    sys::set_nonblocking(stdio(fd), true).map_err(|e| format!("O_NONBLOCK on fd {fd}: {e}"))
}

/// Best effort: grows the pipe on `fd` to `size` bytes (fails harmlessly on non-pipes).
/// Never shrinks it: the neighbour under test may have grown the same pipe first, and which
/// of the two calls came last would otherwise decide the pipe's size, run by run.
fn set_pipe_size(fd: i32, size: usize) {
    grow_pipe(stdio(fd), size);
}

/// Sets the pipe on `fd` to `size` bytes unless it is already that large.
fn grow_pipe(fd: BorrowedFd<'_>, size: usize) {
    if sys::pipe_size(fd).is_ok_and(|now| now < size) {
        let _ = sys::set_pipe_size(fd, size);
    }
}

/// Classifies a failed syscall on `fd`: `Ok(())` means "retry" (after waiting until `fd` is
/// ready for `events` on EAGAIN), `Err` is fatal.
fn retryable(err: io::Error, fd: i32, events: libc::c_short, what: &str) -> Result<(), String> {
    match err.raw_os_error() {
        Some(libc::EINTR) => Ok(()),
        Some(libc::EAGAIN) => {
            let _ = sys::poll_one(stdio(fd), events, -1);
            Ok(())
        }
        _ => Err(format!("{what}: {err}")),
    }
}

/// A 1 MiB buffer of [`FILL`] aligned to 2 MiB, advised to use a huge page.
/// It is never freed or modified, so vmspliced pages stay valid.
fn huge_buffer() -> Result<ConstBuf, String> {
    sys::constant_buffer(FILL, BUFFER).map_err(|e| format!("mmap: {e}"))
}

/// vmsplices `bytes` bytes of the constant buffer into stdout, at most `chunk` per call;
/// falls back to write() when stdout is not a pipe (e.g. a file in the "direct" runs).
fn source_vmsplice(bytes: u64, chunk: usize) -> Result<(), String> {
    let buf = huge_buffer()?.slice(0..BUFFER / chunk * chunk);
    let mut left = bytes;
    let mut off = 0usize;
    while left > 0 {
        let len = (chunk - off % chunk).min(left as usize);
        let n = match sys::vmsplice(sys::stdout_fd(), buf.slice(off..off + len)) {
            Ok(n) => n,
            Err(e) => {
                if e.raw_os_error() == Some(libc::EBADF) && left == bytes {
                    return write_loop(buf.bytes(), bytes);
                }
                retryable(e, 1, libc::POLLOUT, "vmsplice")?;
                continue;
            }
        };
        left -= n as u64;
        off = (off + n) % buf.len();
    }
    Ok(())
}

/// Writes `bytes` bytes to stdout in `buf`-sized write() calls.
fn write_loop(buf: &[u8], bytes: u64) -> Result<(), String> {
    let mut left = bytes;
    let mut off = 0usize;
    while left > 0 {
        let len = (buf.len() - off).min(left as usize);
        match sys::write(sys::stdout_fd(), &buf[off..off + len]) {
            Ok(n) => {
                left -= n as u64;
                off = (off + n) % buf.len();
            }
            Err(e) => retryable(e, 1, libc::POLLOUT, "write")?,
        }
    }
    Ok(())
}

/// Splices stdin into /dev/null until EOF; falls back to read() when stdin
/// is not a pipe (a file in the "direct" runs). Returns the byte count.
fn sink_splice() -> Result<u64, String> {
    let null = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/null")
        .map_err(|e| format!("/dev/null: {e}"))?;
    let mut total = 0u64;
    loop {
        let flags = rustix::pipe::SpliceFlags::empty();
        match rustix::pipe::splice(sys::stdin_fd(), None, &null, None, SINK_SPLICE, flags) {
            Ok(0) => return Ok(total),
            Ok(n) => total += n as u64,
            Err(rustix::io::Errno::INVAL) if total == 0 => return sink_read(),
            Err(e) => retryable(e.into(), 0, libc::POLLIN, "splice")?,
        }
    }
}

/// read()s stdin into a 256 KiB buffer until EOF; returns the byte count.
fn sink_read() -> Result<u64, String> {
    let mut buf = vec![0u8; READ_SIZE];
    let mut total = 0u64;
    loop {
        match sys::read(sys::stdin_fd(), &mut buf) {
            Ok(0) => return Ok(total),
            Ok(n) => total += n as u64,
            Err(e) => retryable(e, 0, libc::POLLIN, "read")?,
        }
    }
}
