//! `rpv-bench measure REPORT PROGRAM ARGS...`: runs PROGRAM as a child and
//! writes its own rusage to REPORT as `utime_us stime_us maxrss_kib`.
//!
//! Why a wrapper: Linux carries the pre-exec address space's high-water
//! mark into `ru_maxrss` across execve. A tool spawned straight from the
//! bench (vfork) would report at least the bench's RSS. Forked from this
//! freshly exec'd, tiny process instead, its floor is this process's few
//! hundred KiB. The wrapper only waits; it never touches the data.

use std::ffi::CString;
use std::io;

/// Runs the wrapper; returns the exit status to use (the child's).
pub fn main(args: &[String]) -> i32 {
    match run(args) {
        Ok(code) => code,
        Err(msg) => {
            eprintln!("rpv-bench measure: {msg}");
            126
        }
    }
}

fn run(args: &[String]) -> Result<i32, String> {
    let [report, argv @ ..] = args else {
        return Err("usage: measure REPORT PROGRAM ARGS...".into());
    };
    if argv.is_empty() {
        return Err("missing PROGRAM".into());
    }
    let cargs: Vec<CString> = argv
        .iter()
        .map(|a| CString::new(a.as_bytes()).map_err(|_| format!("NUL in argument {a:?}")))
        .collect::<Result<_, _>>()?;
    let mut ptrs: Vec<*const libc::c_char> = cargs.iter().map(|c| c.as_ptr()).collect();
    ptrs.push(std::ptr::null());
    // SAFETY: getpid/fork in a single-threaded process; the child only calls
    // async-signal-safe functions before exec.
    let pid = unsafe {
        let me = libc::getpid();
        match libc::fork() {
            0 => exec_child(me, &ptrs),
            pid => pid,
        }
    };
    if pid < 0 {
        return Err(format!("fork: {}", io::Error::last_os_error()));
    }
    // Let EOF and EPIPE reach the neighbours as soon as the child exits.
    // SAFETY: closing our own copies of stdin/stdout.
    unsafe {
        libc::close(0);
        libc::close(1);
    }
    let (status, usage) = wait(pid)?;
    let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    let line = format!(
        "{} {} {}\n",
        us(usage.ru_utime),
        us(usage.ru_stime),
        usage.ru_maxrss
    );
    std::fs::write(report, line).map_err(|e| format!("{report}: {e}"))?;
    Ok(if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        128 + libc::WTERMSIG(status)
    })
}

/// In the forked child: die with the wrapper, restore SIGPIPE, exec.
///
/// # Safety
/// Must only be called in the child right after fork; `argv` is a
/// NULL-terminated array of valid C strings.
unsafe fn exec_child(parent: libc::pid_t, argv: &[*const libc::c_char]) -> ! {
    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
    if libc::getppid() != parent {
        libc::_exit(125);
    }
    libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    libc::execvp(argv[0], argv.as_ptr());
    let msg = b"rpv-bench measure: cannot execute the tool\n";
    libc::write(2, msg.as_ptr().cast(), msg.len());
    libc::_exit(127)
}

fn wait(pid: libc::pid_t) -> Result<(libc::c_int, libc::rusage), String> {
    let mut status = 0;
    // SAFETY: rusage is plain old data; wait4 fills it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: valid out-pointers; pid is our child.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == pid {
            return Ok((status, usage));
        }
        let err = io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EINTR) {
            return Err(format!("wait4: {err}"));
        }
    }
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
