//! The process title (`-x processtitle`) as `ps` sees it in `/proc/PID/cmdline`: whole when
//! the environment area after the command line gives room, cut at the end of the command
//! line when there is none, and never running past either.

use std::io::Write;
use std::process::{Command, Stdio};

use crate::util::{data, poll, rpv, wait_within, PATIENCE};

/// The arguments of a run whose title (a 300-column bar) is longer than its command line:
/// 512 KiB from standard input.
fn long_title_args() -> Vec<String> {
    [
        "-q", "-x", "proc:%p", "-w", "300", "-s", "512k", "-i", "0.1",
    ]
    .map(String::from)
    .to_vec()
}

/// Bytes of the original command line area: every argument with its NUL.
fn command_line_len(args: &[String]) -> usize {
    let program = env!("CARGO_BIN_EXE_rpv").len() + 1;
    program + args.iter().map(|a| a.len() + 1).sum::<usize>()
}

/// Runs `cmd` on 512 KiB of standard input: the first half, then (once `/proc/PID/cmdline`
/// showed a title whose bar has started to fill, `rpv -- [=`) the rest. Returns that
/// command line. The test holds the run in the middle until it has seen the title, so no
/// wait for a CPU can make it miss the run.
fn title_of(mut cmd: Command) -> Vec<u8> {
    let input = data(512 << 10, 42);
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&input[..256 << 10]).unwrap();
    let path = format!("/proc/{}/cmdline", child.id());
    let mut last = Vec::new();
    let seen = poll(PATIENCE, || {
        let now = std::fs::read(&path).unwrap_or_default();
        if now.starts_with(b"rpv -- [=") {
            return Some(Some(now));
        }
        if !now.is_empty() {
            last = now;
        }
        // Ended without one: nothing more to see.
        child.try_wait().unwrap().map(|_| None)
    })
    .flatten()
    .unwrap_or_else(|| {
        let _ = child.kill();
        panic!(
            "no title with a filling bar half way through the input; the last command line \
             seen: {:?}",
            String::from_utf8_lossy(&last)
        )
    });
    stdin.write_all(&input[256 << 10..]).unwrap();
    drop(stdin);
    let status = wait_within(&mut child, PATIENCE, "rpv -x once its input ended");
    assert!(status.success());
    seen
}

#[test]
fn a_title_longer_than_the_command_line_is_shown_whole() {
    let args = long_title_args();
    let mut cmd = rpv(&[]);
    cmd.args(&args)
        .env_clear()
        .env("LC_ALL", "C")
        .env("PADDING", "x".repeat(4000));
    let seen = title_of(cmd);
    let text = String::from_utf8_lossy(&seen);
    let title = seen.split(|&b| b == 0).next().unwrap();
    assert!(
        title.len() > command_line_len(&args) + 200,
        "{} bytes: {text:?}",
        title.len()
    );
    assert_eq!(seen.len(), title.len() + 1, "one NUL ends it: {text:?}");
    assert!(
        title.ends_with(b"%"),
        "the bar and its percentage: {text:?}"
    );
    assert!(!text.contains("PADDING"), "{text:?}");
}

#[test]
fn without_an_environment_the_title_is_cut_at_the_end_of_the_command_line() {
    let args = long_title_args();
    let mut cmd = rpv(&[]);
    cmd.args(&args).env_clear();
    let seen = title_of(cmd);
    let text = String::from_utf8_lossy(&seen);
    let room = command_line_len(&args);
    assert_eq!(
        seen.len(),
        room,
        "the command line's area, no more: {text:?}"
    );
    let title = seen.split(|&b| b == 0).next().unwrap();
    assert_eq!(title.len(), room - 1, "{text:?}");
    assert!(title.starts_with(b"rpv -- [="), "{text:?}");
}
