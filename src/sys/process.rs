//! Processes, sockets and the standard descriptors: user and process ids, `kill(pid, 0)`,
//! the peer of a Unix socket, `shutdown`, and the thread name.
//!
//! Owns: nothing beyond the calls. Must not: decide trust (the control socket's server
//! compares the ids it gets from here).

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

use rustix::process::Pid;

/// Standard input, borrowed for the life of the process (rpv never closes fds 0–2).
pub fn stdin_fd() -> BorrowedFd<'static> {
    rustix::stdio::stdin()
}

/// Standard output, borrowed for the life of the process.
pub fn stdout_fd() -> BorrowedFd<'static> {
    rustix::stdio::stdout()
}

/// Standard error, borrowed for the life of the process.
pub fn stderr_fd() -> BorrowedFd<'static> {
    rustix::stdio::stderr()
}

/// `geteuid(2)`.
pub fn geteuid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// The soft limit on open descriptors (`RLIMIT_NOFILE`); `u64::MAX` when unlimited.
pub fn open_files_limit() -> u64 {
    rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .current
        .unwrap_or(u64::MAX)
}

/// `kill(pid, 0)`: whether `pid` exists and may be signalled by us (ESRCH if `pid` is not
/// a process id at all: 0, or beyond the kernel's range).
pub fn process_check(pid: u32) -> io::Result<()> {
    let pid = i32::try_from(pid)
        .ok()
        .and_then(Pid::from_raw)
        .filter(|p| p.as_raw_nonzero().get() > 0)
        .ok_or_else(|| io::Error::from_raw_os_error(libc::ESRCH))?;
    Ok(rustix::process::test_kill_process(pid)?)
}

/// `kill(pid, sig)` (SIGTERM or SIGKILL; other numbers are not sent).
pub fn send_signal(pid: u32, sig: libc::c_int) -> io::Result<()> {
    let pid = i32::try_from(pid)
        .ok()
        .and_then(Pid::from_raw)
        .filter(|p| p.as_raw_nonzero().get() > 0)
        .ok_or_else(|| io::Error::from_raw_os_error(libc::ESRCH))?;
    let sig = match sig {
        libc::SIGTERM => rustix::process::Signal::TERM,
        libc::SIGKILL => rustix::process::Signal::KILL,
        _ => return Err(io::Error::from_raw_os_error(libc::EINVAL)),
    };
    Ok(rustix::process::kill_process(pid, sig)?)
}

/// Whether our child `pid` has ended (`waitid` with `WNOHANG | WNOWAIT`: it is not reaped,
/// so its PID stays ours, and a later `wait` still gets its status). True too if it is not
/// a child of ours (nothing to wait for).
pub fn child_ended(pid: u32) -> bool {
    use rustix::process::{waitid, WaitId, WaitIdOptions};
    let Some(pid) = i32::try_from(pid).ok().and_then(Pid::from_raw) else {
        return true;
    };
    let options = WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
    loop {
        match waitid(WaitId::Pid(pid), options) {
            Ok(status) => return status.is_some(),
            Err(rustix::io::Errno::INTR) => {}
            Err(_) => return true,
        }
    }
}

/// Whether a SIGCONT sent to this process is pending, not yet handled (`ShdPnd` in
/// `/proc/self/status`): the process was stopped and has just been continued, and the
/// handler has not run yet. False if it cannot tell.
pub fn continue_pending() -> bool {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return false;
    };
    status
        .lines()
        .find_map(|l| l.strip_prefix("ShdPnd:"))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .is_some_and(|mask| mask & (1 << (libc::SIGCONT - 1)) != 0)
}

/// `kill(pid, SIGTERM)`; errors (the process is gone) are ignored.
pub fn terminate(pid: u32) {
    if let Some(pid) = i32::try_from(pid).ok().and_then(Pid::from_raw) {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
    }
}

/// `kill(pid, 0)`: true if the process exists (one we may not signal, EPERM, counts as
/// existing).
pub fn process_exists(pid: u32) -> bool {
    match process_check(pid) {
        Ok(()) => true,
        Err(e) => e.raw_os_error() == Some(libc::EPERM),
    }
}

/// The credentials of a Unix socket's peer at connect time (`SO_PEERCRED`): (pid, euid).
/// The pid is 0 when the peer is in a PID namespace we cannot see.
pub fn peer_cred(fd: BorrowedFd<'_>) -> io::Result<(u32, u32)> {
    // Not rustix's `socket_peercred`: its `UCred` holds the pid as a non-zero `Pid`, and the
    // kernel reports 0 for a peer in a PID namespace we cannot see.
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `cred`, which is a `ucred` we own,
    // and updates `len`; the descriptor is borrowed.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((u32::try_from(cred.pid).unwrap_or(0), cred.uid))
}

/// `shutdown(fd, SHUT_RDWR)`: on a listening socket this wakes a thread blocked in accept.
pub fn shutdown(fd: BorrowedFd<'_>) {
    let _ = rustix::net::shutdown(fd, rustix::net::Shutdown::Both);
}

/// `prctl(PR_SET_NAME)`: the calling thread's name (15 bytes, cut at a NUL; what
/// `ps -o comm` shows for the main thread).
pub fn set_thread_name(text: &[u8]) {
    let len = text
        .iter()
        .take(15)
        .position(|&b| b == 0)
        .unwrap_or(text.len().min(15));
    if let Ok(name) = std::ffi::CString::new(&text[..len]) {
        let _ = rustix::thread::set_name(&name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn kill_zero_tells_who_exists() {
        assert!(process_exists(std::process::id()));
        assert!(process_check(std::process::id()).is_ok());
        assert!(process_exists(1), "init exists (EPERM or not)");
        for pid in [0, u32::MAX, i32::MAX as u32 + 1] {
            assert!(!process_exists(pid));
            let err = process_check(pid).unwrap_err();
            assert_eq!(err.raw_os_error(), Some(libc::ESRCH), "{pid}");
        }
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert!(!process_exists(pid), "a reaped child is gone");
    }

    #[test]
    fn peer_credentials_of_a_socket_pair_are_ours() {
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        let (pid, uid) = peer_cred(a.as_fd()).unwrap();
        assert_eq!((pid, uid), (std::process::id(), geteuid()));
        let (r, _w) = crate::sys::pipe().unwrap();
        assert!(peer_cred(r.as_fd()).is_err(), "not a socket");
    }

    #[test]
    fn thread_name_is_cut_to_fifteen_bytes() {
        std::thread::spawn(|| {
            set_thread_name(b"abcdefghijklmnopqrstuvwxyz");
            let name = rustix::thread::name().unwrap();
            assert_eq!(name.to_bytes(), b"abcdefghijklmno");
            set_thread_name(b"ab\0cd");
            assert_eq!(rustix::thread::name().unwrap().to_bytes(), b"ab");
        })
        .join()
        .unwrap();
    }
}
