//! Test harness: build `rpv` commands, feed them, collect what they wrote.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

/// The environment that turns on `--term-progress=auto` (the terminal's identity) or the
/// systemd status (`NOTIFY_SOCKET`): removed from every test's rpv, so a test run inside
/// such a terminal or service sees what CI sees.
pub const INTEGRATION_VARS: [&str; 8] = [
    "WT_SESSION",
    "ConEmuANSI",
    "TERM_PROGRAM",
    "TERM_PROGRAM_VERSION",
    "VTE_VERSION",
    "TMUX",
    "STY",
    "NOTIFY_SOCKET",
];

/// A command for the rpv binary with a neutral environment (C locale, no test hooks).
pub fn rpv(args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rpv"));
    cmd.args(args);
    cmd.env("LANG", "C")
        .env("LC_ALL", "C")
        .env_remove("NO_COLOR")
        .env("TERM", "xterm");
    for var in [
        "RPV_TEST_PATH",
        "RPV_TEST_FAIL_AT",
        "RPV_TEST_FAIL_TEE_AT",
        "RPV_TEST_TEE_PIPE",
        "RPV_TEST_TRACE",
        "RPV_TEST_ADAPT",
        "RPV_TEST_PACE",
        "RPV_TEST_READ_ERRORS",
        "RPV_TEST_CONTROL_UNCHECKED",
        "POSIXLY_CORRECT",
    ] {
        cmd.env_remove(var);
    }
    for var in INTEGRATION_VARS {
        cmd.env_remove(var);
    }
    cmd
}

/// Deterministic pseudo-random bytes (xorshift), so failures are reproducible.
pub fn data(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.truncate(len);
    out
}

/// Text with newlines, for line mode.
pub fn text(lines: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..lines {
        writeln!(out, "line {i} {}", "x".repeat(i % 97)).unwrap();
    }
    out
}

/// Runs `cmd` with `input` on a stdin pipe and captures stdout and stderr.
pub fn run_with_input(mut cmd: Command, input: &[u8]) -> Output {
    cmd.stdout(Stdio::piped());
    run_with_input_keep_stdout(cmd, input)
}

/// Like [`run_with_input`], but stdout stays as the caller set it.
pub fn run_with_input_keep_stdout(mut cmd: Command, input: &[u8]) -> Output {
    cmd.stdin(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn rpv");
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().expect("wait rpv");
    writer.join().unwrap();
    out
}

/// Spawns `cmd` with stdout and stderr on pipes; a thread drains stdout and returns how
/// many bytes it read.
pub fn spawn_draining(mut cmd: Command) -> (Child, std::thread::JoinHandle<u64>) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn rpv");
    let mut stdout = child.stdout.take().unwrap();
    let reader =
        std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()).unwrap());
    (child, reader)
}

/// Everything `child` wrote to its piped stderr (call after it exited).
pub fn stderr_of(child: &mut Child) -> String {
    let mut text = String::new();
    child
        .stderr
        .take()
        .expect("stderr piped")
        .read_to_string(&mut text)
        .unwrap();
    text
}

/// A temporary directory that lives as long as the value.
pub struct Dir {
    pub dir: tempfile::TempDir,
}

impl Dir {
    pub fn new() -> Dir {
        Dir {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn file(&self, name: &str, contents: &[u8]) -> PathBuf {
        let p = self.path(name);
        std::fs::write(&p, contents).unwrap();
        p
    }
}

pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Asserts equal byte strings with a readable message (lengths and first difference).
#[track_caller]
pub fn assert_same(actual: &[u8], expected: &[u8], what: &str) {
    if actual != expected {
        let first = actual
            .iter()
            .zip(expected)
            .position(|(a, b)| a != b)
            .unwrap_or(actual.len().min(expected.len()));
        panic!(
            "{what}: {} bytes out, {} expected, first difference at byte {first}",
            actual.len(),
            expected.len()
        );
    }
}

/// stderr as text.
pub fn err(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Waits for `child` at most `secs` seconds; kills it and fails the test if it hangs.
#[track_caller]
pub fn wait_within(
    child: &mut std::process::Child,
    secs: f64,
    what: &str,
) -> std::process::ExitStatus {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs_f64(secs);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("{what}: rpv still running after {secs} s");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// The byte counts every transfer path is checked at: empty, one byte, around a page,
/// around the default pipe size, just past 1 MiB, and past 16 MiB plus a bit.
pub const SIZES: [usize; 9] = [
    0,
    1,
    4095,
    4096,
    4097,
    65535,
    65537,
    (1 << 20) + 1,
    (17 << 20) + 5,
];
