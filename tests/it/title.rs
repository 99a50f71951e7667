//! The process title (`-x processtitle`) as `ps` sees it in `/proc/PID/cmdline`: whole when
//! the environment area after the command line gives room, cut at the end of the command
//! line when there is none, and never running past either.

use std::process::{Command, Stdio};

use crate::util::{data, poll, rpv, s, Dir};

/// The arguments of a run whose title (a 300-column bar) is longer than its command line.
fn long_title_args(input: &str) -> Vec<String> {
    [
        "-q", "-x", "proc:%p", "-w", "300", "-L", "256k", "-i", "0.1", input,
    ]
    .map(String::from)
    .to_vec()
}

/// Bytes of the original command line area: every argument with its NUL.
fn command_line_len(args: &[String]) -> usize {
    let program = env!("CARGO_BIN_EXE_rpv").len() + 1;
    program + args.iter().map(|a| a.len() + 1).sum::<usize>()
}

/// Runs `cmd` until it ends, and returns the last `/proc/PID/cmdline` read once it showed a
/// title with a bar in it.
fn title_of(mut cmd: Command) -> Vec<u8> {
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let path = format!("/proc/{}/cmdline", child.id());
    let seen = poll(10.0, || {
        Some(std::fs::read(&path).unwrap_or_default()).filter(|now| now.starts_with(b"rpv -- ["))
    })
    .unwrap_or_default();
    assert!(child.wait().unwrap().success());
    seen
}

#[test]
fn a_title_longer_than_the_command_line_is_shown_whole() {
    let dir = Dir::new();
    let input = dir.file("in", &data(512 << 10, 41));
    let args = long_title_args(s(&input));
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
    let dir = Dir::new();
    let input = dir.file("in", &data(512 << 10, 42));
    let args = long_title_args(s(&input));
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
