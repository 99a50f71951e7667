//! Signals and a blocked stderr: interrupts end cleanly with pv's status, Ctrl-Z time is not
//! counted, and a display that cannot write never holds up the data.

use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::util::{
    catches, pause, pipe_fill, process_state, rpv, spawn_counting, stderr_of, wait_until,
    wait_within,
};

fn kill(child: &Child, signal: libc::c_int) {
    // SAFETY: plain kill(2) on our own child.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, signal) }, 0);
}

#[test]
fn interrupts_end_with_status_32_and_a_final_newline() {
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        let (mut child, out) =
            spawn_counting(rpv(&["-f", "-b", "-i", "0.1", "-L", "100k", "/dev/zero"]));
        wait_until(
            "the data to flow with the handlers in place",
            crate::util::PATIENCE,
            || out.bytes() > 0 && catches(child.id(), signal),
        );
        kill(&child, signal);
        let status = wait_within(&mut child, crate::util::PATIENCE, "rpv");
        assert_eq!(status.code(), Some(32), "signal {signal}");
        let stderr = stderr_of(&mut child);
        assert!(stderr.ends_with("B\r\n"), "signal {signal}: {stderr:?}");
        assert!(out.join() > 0);
    }
}

#[test]
fn interrupt_ends_even_while_blocked_on_a_full_output() {
    // Nobody reads stdout: the data thread sits in a blocking splice/write.
    for extra in [&[][..], &["-C"][..]] {
        let mut args = vec!["-q", "/dev/zero"];
        args.extend_from_slice(extra);
        let mut child = rpv(&args).stdout(Stdio::piped()).spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        wait_until("the output pipe to fill", crate::util::PATIENCE, || {
            let (queued, capacity) = pipe_fill(stdout.as_fd());
            queued + 4096 > capacity && catches(child.id(), libc::SIGINT)
        });
        kill(&child, libc::SIGINT);
        assert_eq!(
            wait_within(&mut child, crate::util::PATIENCE, "rpv").code(),
            Some(32),
            "{extra:?}"
        );
    }
}

#[test]
fn stopped_time_is_not_counted_and_the_transfer_resumes() {
    let _cores = crate::util::cores_free();
    // 2 MiB at 1 MiB/s, stopped for 1.5 s in the middle.
    let start = Instant::now();
    let (mut child, out) = spawn_counting(crate::util::rpv_on_time(&[
        "-n",
        "-t",
        "-b",
        "-i",
        "0.2",
        "-L",
        "1M",
        "-S",
        "-s",
        "2M",
        "/dev/zero",
    ]));
    // Stopped in the middle: once a quarter of the data went through.
    wait_until("512 KiB copied", crate::util::PATIENCE, || {
        out.bytes() >= 512 << 10
    });
    kill(&child, libc::SIGTSTP);
    wait_until("SIGTSTP to stop rpv", crate::util::PATIENCE, || {
        process_state(child.id()) == 'T'
    });
    // The stop being measured: time passes while rpv is stopped.
    pause(Duration::from_millis(1500));
    kill(&child, libc::SIGCONT);
    let status = wait_within(&mut child, crate::util::PATIENCE, "rpv");
    let wall = start.elapsed().as_secs_f64();
    assert!(status.success());
    assert_eq!(out.join(), 2 << 20);
    let stderr = stderr_of(&mut child);
    let last = stderr.lines().last().unwrap().to_string();
    let elapsed: f64 = last.split(' ').next().unwrap().parse().unwrap();
    assert!(
        elapsed < wall - 1.2,
        "elapsed {elapsed} s should exclude the 1.5 s stop (wall {wall:.2} s)"
    );
    assert!(
        elapsed > 1.5,
        "elapsed {elapsed} s: 2 MiB at 1 MiB/s takes about 2 s"
    );
    assert!(last.ends_with(&format!(" {}", 2 << 20)), "{last}");
}

/// A pipe whose buffer is already full, so any write to it blocks.
pub(crate) fn full_pipe() -> (OwnedFd, OwnedFd) {
    // Close-on-exec, so other tests' children do not inherit them.
    let (r, w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).unwrap();
    rustix::fs::fcntl_setfl(&w, rustix::fs::OFlags::NONBLOCK).unwrap();
    let mut wf = std::fs::File::from(w.try_clone().unwrap());
    while wf.write(&[b'x'; 4096]).is_ok() {}
    rustix::fs::fcntl_setfl(&w, rustix::fs::OFlags::empty()).unwrap();
    (r, w)
}

#[test]
fn data_keeps_flowing_while_stderr_is_blocked() {
    let (err_r, err_w) = full_pipe();
    let size = 64 << 20;
    let mut child = rpv(&[
        "-f",
        "-i",
        "0.1",
        "-S",
        "-s",
        &size.to_string(),
        "/dev/zero",
    ])
    .stdout(Stdio::piped())
    .stderr(Stdio::from(err_w))
    .spawn()
    .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut buf = vec![0u8; size as usize];
    // All the data arrives although rpv cannot write a single progress line.
    stdout.read_exact(&mut buf).unwrap();
    assert!(buf.iter().all(|&b| b == 0));
    // Unblock stderr: rpv then finishes its display and exits normally.
    let drainer = std::thread::spawn(move || {
        let mut f = std::fs::File::from(err_r);
        let mut sink = Vec::new();
        f.read_to_end(&mut sink).unwrap();
        sink
    });
    assert!(wait_within(&mut child, crate::util::PATIENCE, "rpv").success());
    let mut rest = Vec::new();
    stdout.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty(), "-S stops at exactly --size");
    let text = drainer.join().unwrap();
    assert!(text.ends_with(b"\r\n"), "the final line is still drawn");
}

/// The first two fields of `/proc/PID/syscall`: the call the main thread is in and its
/// first argument (`1 0x2`: a write to standard error).
fn main_thread_call(pid: u32) -> String {
    let text = std::fs::read_to_string(format!("/proc/{pid}/syscall")).unwrap_or_default();
    text.split(' ').take(2).collect::<Vec<_>>().join(" ")
}

/// Ctrl-Z then `bg` while `--top` is blocked writing to a standard error nobody reads (a
/// stuck log pipe, a Ctrl-S'd terminal): the continue comes before the display loop could
/// stop, so the deferred stop is dropped, and a SIGINT then ends it with status 32.
/// Before, it stopped itself after the SIGCONT and stayed stopped, deaf to SIGINT
/// (reliability-4 F2).
#[test]
fn a_stop_continued_before_it_took_effect_is_dropped() {
    let (err_r, err_w) = full_pipe();
    let mut child = rpv(&["--top", "--json", "-i", "0.2"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(err_w))
        .spawn()
        .unwrap();
    let pid = child.id();
    wait_until(
        "--top blocked writing to its full standard error",
        60.0,
        || main_thread_call(pid) == "1 0x2" && process_state(pid) == 'S',
    );
    kill(&child, libc::SIGTSTP);
    wait_until("SIGTSTP handled", crate::util::PATIENCE, || {
        !crate::util::pending(pid, libc::SIGTSTP)
    });
    kill(&child, libc::SIGCONT);
    wait_until("SIGCONT handled", crate::util::PATIENCE, || {
        !crate::util::pending(pid, libc::SIGCONT)
    });
    kill(&child, libc::SIGINT);
    let status = match crate::util::exit_within(&mut child, 15.0) {
        Some(status) => status,
        None => {
            let state = process_state(pid);
            let _ = child.kill();
            let _ = child.wait();
            panic!("rpv still runs 15 s after SIGINT, in state {state}");
        }
    };
    drop(err_r);
    assert_eq!(status.code(), Some(32));
}
