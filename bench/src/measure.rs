//! `rpv-bench measure REPORT PROGRAM ARGS...`: runs PROGRAM as a child and
//! writes its own rusage to REPORT as `utime_us stime_us maxrss_kib`.
//!
//! Why a wrapper: Linux carries the pre-exec address space's high-water
//! mark into `ru_maxrss` across execve. A tool spawned straight from the
//! bench (vfork) would report at least the bench's RSS. Forked from this
//! freshly exec'd, tiny process instead, its floor is this process's few
//! hundred KiB. The wrapper only waits; it never touches the data.

use std::io;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::Command;

/// Runs the wrapper; returns the exit status to use (the child's).
pub fn main(args: &[String]) -> i32 {
    match run(args) {
        Ok(code) => code,
        Err((code, msg)) => {
            eprintln!("rpv-bench measure: {msg}");
            code
        }
    }
}

fn run(args: &[String]) -> Result<i32, (i32, String)> {
    let [report, program, argv @ ..] = args else {
        return Err((126, "usage: measure REPORT PROGRAM ARGS...".into()));
    };
    let me = rustix::process::getpid();
    let mut command = Command::new(program);
    command.args(argv);
    let child_setup = move || -> io::Result<()> {
        // Die with the wrapper (the bench SIGKILLs the wrapper on a timeout); if it is
        // already gone, the parent changed: do not start at all.
        rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))?;
        if rustix::process::getppid() != Some(me) {
            return Err(io::Error::from_raw_os_error(libc::ESRCH));
        }
        Ok(())
    };
    // SAFETY: the closure runs in the forked child before exec; it only makes two raw system
    // calls (prctl, getppid) through rustix, which are async-signal-safe, and allocates
    // nothing. (std resets SIGPIPE to its default action in the child.)
    unsafe { command.pre_exec(child_setup) };
    let mut child = command
        .spawn()
        .map_err(|e| (127, format!("cannot execute the tool: {e}")))?;
    // Let EOF and EPIPE reach the neighbours as soon as the child exits: our copies of the
    // pipe ends on stdin and stdout are replaced by /dev/null.
    if let Ok(null) = std::fs::File::options()
        .read(true)
        .write(true)
        .open("/dev/null")
    {
        let _ = rustix::stdio::dup2_stdin(&null);
        let _ = rustix::stdio::dup2_stdout(&null);
    }
    let status = loop {
        match child.wait() {
            Ok(status) => break status,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err((126, format!("wait: {e}"))),
        }
    };
    let usage = children_usage().map_err(|e| (126, format!("getrusage: {e}")))?;
    let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    let line = format!(
        "{} {} {}\n",
        us(usage.ru_utime),
        us(usage.ru_stime),
        usage.ru_maxrss
    );
    std::fs::write(report, line).map_err(|e| (126, format!("{report}: {e}")))?;
    Ok(match (status.code(), status.signal()) {
        (Some(code), _) => code,
        (None, Some(signal)) => 128 + signal,
        (None, None) => 126,
    })
}

/// `getrusage(RUSAGE_CHILDREN)`: the resources of the children waited for, here the one
/// tool (its maximum RSS is its own peak, not a sum). Neither std nor rustix offers it.
fn children_usage() -> io::Result<libc::rusage> {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::uninit();
    // SAFETY: getrusage fills the whole `rusage` we point it at, or fails.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, usage.as_mut_ptr()) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: getrusage succeeded, so it initialised the struct.
    Ok(unsafe { usage.assume_init() })
}

/// Parses a report written by [`main`]: (CPU time, maxrss in KiB).
pub fn read_report(path: &std::path::Path) -> Option<(std::time::Duration, u64)> {
    let text = std::fs::read_to_string(path).ok()?;
    let v: Vec<u64> = text
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    let [user, sys, rss] = v[..] else { return None };
    Some((std::time::Duration::from_micros(user + sys), rss))
}
