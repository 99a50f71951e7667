//! rpv with stderr on a real pseudo-terminal: what ends up on the screen (through the vt100
//! terminal emulator), resizing, and background jobs under job control.

use std::fs::File;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::util::{data, rpv, s, Dir};

/// A pseudo-terminal pair of the given size: (master, slave).
fn openpty(cols: u16, rows: u16) -> (OwnedFd, OwnedFd) {
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
    unsafe {
        libc::fcntl(master, libc::F_SETFD, libc::FD_CLOEXEC);
        libc::fcntl(slave, libc::F_SETFD, libc::FD_CLOEXEC);
        (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave))
    }
}

fn resize(fd: &OwnedFd, cols: u16, rows: u16) {
    let ws = libc::winsize {
        ws_row: rows,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCSWINSZ reads one winsize.
    assert_eq!(
        unsafe { libc::ioctl(fd.as_raw_fd(), libc::TIOCSWINSZ, &ws) },
        0
    );
}

/// Collects everything written to the terminal until every slave fd is closed.
fn collect(master: OwnedFd) -> JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut f = File::from(master);
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            match f.read(&mut buf) {
                Ok(0) | Err(_) => return out, // EIO once the slave side is closed
                Ok(n) => out.extend_from_slice(&buf[..n]),
            }
        }
    })
}

fn screen(bytes: &[u8], cols: u16, rows: u16) -> vt100::Parser {
    let mut parser = vt100::Parser::new(rows, cols, 0);
    parser.process(bytes);
    parser
}

#[test]
fn progress_is_drawn_on_a_terminal_without_force() {
    let dir = Dir::new();
    let input = dir.file("in", &data(1 << 20, 1));
    let (master, slave) = openpty(60, 10);
    let reader = collect(master);
    let mut child = rpv(&["-i", "0.1", "-L", "2M", s(&input)])
        .stdout(Stdio::null())
        .stderr(Stdio::from(slave))
        .spawn()
        .unwrap();
    assert!(child.wait().unwrap().success());
    drop(child);
    let bytes = reader.join().unwrap();
    let text = String::from_utf8_lossy(&bytes);
    assert!(text.matches('\r').count() >= 4, "several updates: {text:?}");
    let parser = screen(&bytes, 60, 10);
    let rows: Vec<String> = parser.screen().rows(0, 60).collect();
    // The final line: 1 MiB, the timer, the average rate, a full bar, 100 %, ETA blanked.
    assert!(rows[0].starts_with("1.00MiB 0:00:0"), "{rows:?}");
    assert!(rows[0].contains("[=========="), "{rows:?}");
    assert!(rows[0].trim_end().ends_with("] 100%"), "{rows:?}");
    assert_eq!(rows[1], "", "nothing else on screen: {rows:?}");
    assert_eq!(
        parser.screen().cursor_position(),
        (1, 0),
        "the run ends with a newline"
    );
}

#[test]
fn resizing_the_terminal_changes_the_line_width() {
    let dir = Dir::new();
    let input = dir.file("in", &data(600_000, 2));
    let (master, slave) = openpty(70, 10);
    let control = slave.try_clone().unwrap();
    let reader = collect(master);
    let mut child = rpv(&["-i", "0.1", "-L", "1M", s(&input)])
        .stdout(Stdio::null())
        .stderr(Stdio::from(slave))
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(250));
    resize(&control, 50, 10);
    // The terminal is not rpv's controlling terminal, so deliver SIGWINCH by hand.
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGWINCH) };
    assert!(child.wait().unwrap().success());
    drop(control);
    let bytes = reader.join().unwrap();
    let text = String::from_utf8_lossy(&bytes);
    let lines: Vec<&str> = text.split(['\r', '\n']).filter(|l| !l.is_empty()).collect();
    let widths: Vec<usize> = lines.iter().map(|l| l.chars().count()).collect();
    assert_eq!(widths.first(), Some(&70), "{lines:?}");
    assert_eq!(widths.last(), Some(&50), "{lines:?}");
}

/// Runs `script` in bash as the session leader of a new terminal (job control works there).
fn bash_on_terminal(script: &str, cols: u16, rows: u16) -> (std::process::ExitStatus, Vec<u8>) {
    let (master, slave) = openpty(cols, rows);
    let reader = collect(master);
    let mut cmd = Command::new("bash");
    cmd.arg("--norc").arg("-c").arg(script);
    cmd.env("RPV", env!("CARGO_BIN_EXE_rpv"))
        .env("LC_ALL", "C")
        .env("TERM", "xterm");
    cmd.stdin(Stdio::from(slave.try_clone().unwrap()))
        .stdout(Stdio::from(slave.try_clone().unwrap()))
        .stderr(Stdio::from(slave));
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() == -1 || libc::ioctl(0, libc::TIOCSCTTY, 0) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "the job hung");
        std::thread::sleep(Duration::from_millis(20));
    };
    drop(cmd);
    (status, reader.join().unwrap())
}

#[test]
fn a_background_job_shows_nothing_and_never_stops_the_pipeline() {
    let dir = Dir::new();
    let input = dir.file("in", &data(3 << 20, 3));
    let out = dir.path("out");
    // With TOSTOP set, a background write to the terminal would stop a process that does
    // not ignore SIGTTOU; rpv must neither stop nor draw.
    let script = format!(
        "set -m; stty tostop; \"$RPV\" -i 0.1 -L 4M {} > {} & wait $!; echo \"status=$?\"",
        s(&input),
        s(&out)
    );
    let (status, bytes) = bash_on_terminal(&script, 60, 10);
    assert!(status.success());
    let text = String::from_utf8_lossy(&bytes);
    assert!(text.contains("status=0"), "{text:?}");
    assert!(
        !text.contains("MiB"),
        "no progress from the background: {text:?}"
    );
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&input).unwrap());
}

#[test]
fn a_forced_background_job_draws_and_still_finishes() {
    let dir = Dir::new();
    let input = dir.file("in", &data(1 << 20, 4));
    let script = format!(
        "set -m; stty tostop; \"$RPV\" -f -b -i 0.1 -L 4M {} > /dev/null & wait $!; echo \"status=$?\"",
        s(&input)
    );
    let (status, bytes) = bash_on_terminal(&script, 60, 10);
    assert!(status.success());
    let text = String::from_utf8_lossy(&bytes);
    assert!(text.contains("status=0"), "{text:?}");
    assert!(
        text.contains("1.00MiB"),
        "-f draws even in the background (pv shows nothing): {text:?}"
    );
}
