//! `--tee`: every output gets every byte, byte for byte, on every path (pipe and file
//! inputs; regular file, FIFO and pipe outputs), through forced and real fallbacks, and when
//! an output fails midway; `--tee-error` modes; options that apply to the outputs; Ctrl-C.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::util::{
    assert_same, catches, data, err, pause, pipe_fill, poll, rpv, s, sized_data, text, wait_until,
    wait_within, Dir, SIZES,
};

/// The descriptor number a `--tee /dev/fd/N` pipe gets in rpv.
const TEE_FD: RawFd = 7;

/// A pipe (read end, write end), both close-on-exec.
fn pipe() -> (OwnedFd, OwnedFd) {
    rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).expect("pipe")
}

/// Makes `fd` (close-on-exec in this process) descriptor `as_fd` in the child only.
fn pass_fd(cmd: &mut Command, fd: &OwnedFd, as_fd: RawFd) {
    let raw = fd.as_raw_fd();
    let hook = move || -> std::io::Result<()> {
        let r = if raw == as_fd {
            // SAFETY: fcntl is async-signal-safe and touches only the child's table.
            unsafe { libc::fcntl(raw, libc::F_SETFD, 0) }
        } else {
            // SAFETY: dup2 is async-signal-safe and touches only the child's table.
            unsafe { libc::dup2(raw, as_fd) }
        };
        if r < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    };
    // SAFETY: the hook runs between fork and exec and makes only async-signal-safe calls.
    unsafe { cmd.pre_exec(hook) };
}

/// Reads `fd` to the end (or only its first `limit` bytes, then closes it) on a thread.
fn reader(fd: OwnedFd, limit: Option<usize>) -> JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut f = File::from(fd);
        let mut out = Vec::new();
        match limit {
            Some(n) => {
                out.resize(n, 0);
                f.read_exact(&mut out).unwrap();
            }
            None => {
                f.read_to_end(&mut out).unwrap();
            }
        }
        out
    })
}

/// A FIFO at `path` and a thread that reads it to the end.
pub(crate) fn fifo_reader(path: &Path) -> JoinHandle<Vec<u8>> {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let p = path.to_path_buf();
    std::thread::spawn(move || std::fs::read(&p).unwrap())
}

/// Unblocks a FIFO reader still waiting in open (rpv failed before opening the FIFO).
pub(crate) fn release_fifo(path: &Path) {
    let _ = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path);
}

/// Kills a child that runs longer than `secs`, so that a hang fails the test instead of
/// blocking the suite. Disarmed when dropped.
struct Watchdog(std::sync::Arc<std::sync::atomic::AtomicBool>);

impl Watchdog {
    fn new(pid: u32, secs: u64) -> Watchdog {
        use std::sync::atomic::Ordering;
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let seen = std::sync::Arc::clone(&done);
        std::thread::spawn(move || {
            if poll(secs as f64, || seen.load(Ordering::Relaxed).then_some(())).is_some() {
                return;
            }
            // SAFETY: kill(2) on our own child, which has not been reaped (not done).
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
        });
        Watchdog(done)
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Input {
    Pipe,
    File,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Main {
    Pipe,
    File,
}

/// What one run left in every output.
struct Outcome {
    status: Option<i32>,
    stderr: String,
    main: Vec<u8>,
    file: Vec<u8>,
    fifo: Vec<u8>,
    pipe: Vec<u8>,
}

/// Runs `rpv -q --tee FILE --tee FIFO --tee /dev/fd/7 ARGS` on `input`, with the trace on
/// (`-f` in place of `-q` when ARGS has `-n`).
fn run(input: Input, main: Main, bytes: &[u8], env: &[(&str, &str)], args: &[&str]) -> Outcome {
    let dir = Dir::new();
    let (file, fifo) = (dir.path("tee-file"), dir.path("tee-fifo"));
    let fifo_thread = fifo_reader(&fifo);
    let (pipe_r, pipe_w) = pipe();
    let pipe_thread = reader(pipe_r, None);
    let tee_fd = format!("/dev/fd/{TEE_FD}");
    // -q, unless the test reads the numeric output.
    let quiet = if args.contains(&"-n") { "-f" } else { "-q" };
    let mut all = vec![
        quiet,
        "--tee",
        s(&file),
        "--tee",
        s(&fifo),
        "--tee",
        &tee_fd,
    ];
    all.extend_from_slice(args);
    let in_path = dir.file("in", bytes);
    if input == Input::File {
        all.push(s(&in_path));
    }
    let mut cmd = rpv(&all);
    cmd.env("RPV_TEST_TRACE", "1").stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    pass_fd(&mut cmd, &pipe_w, TEE_FD);
    let main_path = dir.path("main");
    match main {
        Main::Pipe => cmd.stdout(Stdio::piped()),
        Main::File => cmd.stdout(File::create(&main_path).unwrap()),
    };
    cmd.stdin(if input == Input::Pipe {
        Stdio::piped()
    } else {
        Stdio::null()
    });
    let mut child = cmd.spawn().unwrap();
    let watchdog = Watchdog::new(child.id(), 120);
    drop(pipe_w);
    let writer = child.stdin.take().map(|mut stdin| {
        let bytes = bytes.to_vec();
        std::thread::spawn(move || {
            let _ = stdin.write_all(&bytes);
        })
    });
    let out = child.wait_with_output().unwrap();
    drop(watchdog);
    if let Some(w) = writer {
        w.join().unwrap();
    }
    release_fifo(&fifo);
    Outcome {
        status: out.status.code(),
        stderr: err(&out),
        main: match main {
            Main::Pipe => out.stdout,
            Main::File => std::fs::read(&main_path).unwrap(),
        },
        file: std::fs::read(&file).unwrap_or_default(),
        fifo: fifo_thread.join().unwrap(),
        pipe: pipe_thread.join().unwrap(),
    }
}

impl Outcome {
    /// Every output holds exactly `expected`, and rpv succeeded.
    #[track_caller]
    fn all_exact(&self, expected: &[u8], what: &str) {
        assert_eq!(self.status, Some(0), "{what}: {}", self.stderr);
        assert_same(&self.main, expected, &format!("{what}: main output"));
        assert_same(&self.file, expected, &format!("{what}: --tee file"));
        assert_same(&self.fifo, expected, &format!("{what}: --tee FIFO"));
        assert_same(&self.pipe, expected, &format!("{what}: --tee pipe"));
    }

    #[track_caller]
    fn traced(&self, text: &str, what: &str) {
        assert!(
            self.stderr.contains(text),
            "{what}: expected {text:?} in {:?}",
            self.stderr
        );
    }
}

#[test]
fn every_output_gets_every_byte_at_size_boundaries() {
    let _cores = crate::util::cores_busy();
    for input in [Input::Pipe, Input::File] {
        for main in [Main::Pipe, Main::File] {
            for (&size, bytes) in SIZES.iter().zip(sized_data(1).iter()) {
                let what = format!("{input:?} -> {main:?}, size {size}");
                let o = run(input, main, bytes, &[], &[]);
                o.all_exact(bytes, &what);
                // A pipe input is tee'd; anything else is read once and written to all.
                match input {
                    Input::Pipe => o.traced("(stdin): Fanout", &what),
                    Input::File => o.traced("/in: ReadWrite", &what),
                }
                assert!(!o.stderr.contains("after"), "{what}: {}", o.stderr);
            }
        }
    }
}

#[test]
fn a_tee_that_copies_less_than_the_others_cuts_the_round_without_loss() {
    // The FIFO's and the pipe's private pipes hold 4 KiB or 12 KiB (one or three pages):
    // each round moves what they got, and the file's private pipe throws away the rest of
    // its copy (the input pipe still holds those bytes for the next round).
    for small in ["4096", "12288"] {
        for &size in &[4097, 65537, (5 << 20) + 3] {
            let bytes = data(size, 20);
            let what = format!("RPV_TEST_TEE_PIPE={small}, size {size}");
            for args in [&[][..], &["-l"][..]] {
                let o = run(
                    Input::Pipe,
                    Main::Pipe,
                    &bytes,
                    &[("RPV_TEST_TEE_PIPE", small)],
                    args,
                );
                o.all_exact(&bytes, &format!("{what} {args:?}"));
                o.traced("(stdin): Fanout", &what);
            }
        }
    }
}

#[test]
fn read_write_path_feeds_every_output() {
    for (env, args) in [
        (&[("RPV_TEST_PATH", "rw")][..], &[][..]),
        (&[][..], &["-C"][..]),
        (&[][..], &["-B", "4097"][..]),
    ] {
        for &size in &[0, 4097, (1 << 20) + 1, (3 << 20) + 5] {
            let bytes = data(size, 3);
            let what = format!("{env:?} {args:?} size {size}");
            let o = run(Input::Pipe, Main::Pipe, &bytes, env, args);
            o.all_exact(&bytes, &what);
            o.traced("(stdin): ReadWrite", &what);
        }
    }
}

#[test]
fn a_refused_tee_or_main_splice_falls_back_without_loss_or_duplication() {
    let _cores = crate::util::cores_busy();
    // The calls counted are the tees from the input (three per round here) and the splices
    // from it: every position in the first two rounds.
    let bytes = data((17 << 20) + 5, 4);
    for main in [Main::Pipe, Main::File] {
        for at in 1..=9 {
            let at_s = at.to_string();
            let what = format!("{main:?} RPV_TEST_FAIL_AT={at}");
            let o = run(
                Input::Pipe,
                main,
                &bytes,
                &[("RPV_TEST_FAIL_AT", &at_s)],
                &[],
            );
            o.all_exact(&bytes, &what);
            o.traced(&format!("ReadWrite after {at} zero-copy calls"), &what);
        }
    }
}

#[test]
fn a_refused_tee_or_splice_into_a_tee_output_changes_only_that_outputs_way() {
    // Per round: a tee straight into the FIFO and into the pipe, then a splice from the
    // file's private pipe. A refused tee sends that pipe through its private pipe; a refused
    // splice switches that output to read + write.
    let bytes = data((5 << 20) + 3, 5);
    let mut traces = String::new();
    for at in ["1", "2", "3", "4", "6", "7"] {
        let what = format!("RPV_TEST_FAIL_TEE_AT={at}");
        let o = run(
            Input::Pipe,
            Main::Pipe,
            &bytes,
            &[("RPV_TEST_FAIL_TEE_AT", at)],
            &[],
        );
        o.all_exact(&bytes, &what);
        o.traced("trace: --tee ", &what);
        // Only that output changed its way; the input stayed on the fan-out.
        assert!(
            !o.stderr.contains("zero-copy calls"),
            "{what}: {}",
            o.stderr
        );
        traces.push_str(&o.stderr);
    }
    assert!(traces.contains(": private pipe"), "{traces}");
    assert!(traces.contains("tee-file: ReadWrite"), "{traces}");
}

#[test]
fn tee_from_a_file_is_refused_by_the_kernel_and_read_write_takes_over() {
    for &size in &[1, 65537, (1 << 20) + 1] {
        let bytes = data(size, 6);
        let o = run(
            Input::File,
            Main::Pipe,
            &bytes,
            &[("RPV_TEST_PATH", "fanout")],
            &[],
        );
        o.all_exact(&bytes, &format!("forced fan-out of a file, size {size}"));
        o.traced("/in: Fanout", "forced");
        o.traced("/in: ReadWrite after 1 zero-copy calls", "forced");
    }
}

#[test]
fn a_main_output_that_refuses_splice_keeps_every_output_exact() {
    // splice into an O_APPEND file fails with EINVAL: the round already tee'd the chunk
    // into every private pipe, which must then hold exactly what the main output got.
    let dir = Dir::new();
    let tee_path = dir.path("t");
    let main_path = dir.path("main");
    for &size in &[1, 65537, (3 << 20) + 7] {
        let bytes = data(size, 7);
        std::fs::write(&main_path, b"head:").unwrap();
        let out = std::fs::OpenOptions::new()
            .append(true)
            .open(&main_path)
            .unwrap();
        let mut cmd = rpv(&["-q", "--tee", s(&tee_path)]);
        cmd.env("RPV_TEST_TRACE", "1").stdout(out);
        let o = crate::util::run_with_input_keep_stdout(cmd, &bytes);
        assert!(o.status.success(), "{}", err(&o));
        assert!(
            err(&o).contains("ReadWrite after"),
            "size {size}: {}",
            err(&o)
        );
        assert_same(&std::fs::read(&tee_path).unwrap(), &bytes, "tee");
        let main = std::fs::read(&main_path).unwrap();
        assert_same(&main, &[&b"head:"[..], &bytes].concat(), "appended main");
    }
}

/// The same at every size boundary, with a FIFO copy too: the main output's share of each
/// round goes by read + write after the refused splice (the catch-up), and read/write then
/// takes over.
#[test]
fn a_main_output_that_refuses_splice_keeps_every_output_exact_at_every_size() {
    let dir = Dir::new();
    let (tee_path, fifo, main_path) = (dir.path("t"), dir.path("fifo"), dir.path("main"));
    for &size in &SIZES {
        let bytes = data(size, 8);
        std::fs::write(&main_path, b"head:").unwrap();
        let _ = std::fs::remove_file(&fifo);
        let fifo_thread = fifo_reader(&fifo);
        let out = std::fs::OpenOptions::new()
            .append(true)
            .open(&main_path)
            .unwrap();
        let mut cmd = rpv(&["-q", "--tee", s(&tee_path), "--tee", s(&fifo)]);
        cmd.stdout(out);
        let o = crate::util::run_with_input_keep_stdout(cmd, &bytes);
        assert!(o.status.success(), "size {size}: {}", err(&o));
        assert_same(&std::fs::read(&tee_path).unwrap(), &bytes, "tee file");
        assert_same(&fifo_thread.join().unwrap(), &bytes, "tee FIFO");
        let main = std::fs::read(&main_path).unwrap();
        assert_same(&main, &[&b"head:"[..], &bytes].concat(), "appended main");
    }
}

/// strace's fault injection, if strace can trace here.
fn strace_works() -> bool {
    Command::new("strace")
        .args(["-f", "-o", "/dev/null", "-e", "trace=tee", "true"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// `rpv ARGS` under strace, which makes tee or splice calls fail as `inject` says
/// (`tee:error=EINVAL:when=2`); the trace is on.
fn strace_rpv(inject: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new("strace");
    cmd.args(["-f", "-o", "/dev/null", "-e", "trace=tee,splice", "-e"])
        .arg(format!("inject={inject}"))
        .arg(env!("CARGO_BIN_EXE_rpv"))
        .args(args)
        .env("RPV_TEST_TRACE", "1");
    cmd
}

#[test]
fn syscall_failures_injected_by_strace_are_exact() {
    if !strace_works() {
        eprintln!("strace missing or not permitted: syscall injection skipped");
        return;
    }
    let dir = Dir::new();
    let bytes = data((9 << 20) + 11, 8);
    let tee_path = dir.path("t");
    for inject in [
        "tee:error=EINVAL:when=2",
        "tee:error=EINVAL:when=5",
        "splice:error=EINVAL:when=2",
        "splice:error=EINVAL:when=3",
        "splice:error=EINVAL:when=6",
        "splice:error=EIO:when=4",
    ] {
        let cmd = strace_rpv(inject, &["-q", "--tee", s(&tee_path)]);
        let o = crate::util::run_with_input(cmd, &bytes);
        assert!(o.status.success(), "{inject}: {}", err(&o));
        assert!(err(&o).contains("ReadWrite"), "{inject}: {}", err(&o));
        assert_same(&o.stdout, &bytes, &format!("{inject}: main"));
        assert_same(&std::fs::read(&tee_path).unwrap(), &bytes, inject);
    }
}

#[test]
fn syscall_failures_injected_by_strace_are_exact_with_a_lone_tee_pipe() {
    if !strace_works() {
        eprintln!("strace missing or not permitted: syscall injection skipped");
        return;
    }
    let bytes = data((9 << 20) + 13, 12);
    for inject in [
        "tee:error=EINVAL:when=1",
        "tee:error=EINVAL:when=3",
        "splice:error=EINVAL:when=1",
        "splice:error=EINVAL:when=4",
        "splice:error=EIO:when=2",
    ] {
        let mut cmd = strace_rpv(inject, &["-q", "--tee", &format!("/dev/fd/{TEE_FD}")]);
        let (r, w) = pipe();
        pass_fd(&mut cmd, &w, TEE_FD);
        let tee = reader(r, None);
        let o = crate::util::run_with_input(cmd, &bytes);
        drop(w);
        let e = err(&o);
        assert!(o.status.success(), "{inject}: {e}");
        assert!(e.contains(LONE), "{inject}: {e}");
        assert_same(&o.stdout, &bytes, &format!("{inject}: main"));
        assert_same(
            &tee.join().unwrap(),
            &bytes,
            &format!("{inject}: --tee pipe"),
        );
    }
}

/// Runs rpv on a pipe input of `bytes` with stdout to a pipe and `--tee` outputs given as
/// arguments; `early` is a pipe output (`/dev/fd/7`) whose reader takes only that many
/// bytes, if given.
fn run_failing(bytes: &[u8], args: &[&str], early: Option<usize>) -> (Output, Option<Vec<u8>>) {
    let mut cmd = rpv(args);
    let reader_thread = early.map(|n| {
        let (r, w) = pipe();
        pass_fd(&mut cmd, &w, TEE_FD);
        (reader(r, Some(n)), w)
    });
    cmd.stdout(Stdio::piped())
        .stdin(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let watchdog = Watchdog::new(child.id(), 120);
    let early = reader_thread.map(|(t, w)| {
        drop(w);
        t
    });
    let mut stdin = child.stdin.take().unwrap();
    let input = bytes.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().unwrap();
    drop(watchdog);
    writer.join().unwrap();
    (out, early.map(|t| t.join().unwrap()))
}

#[test]
fn a_failing_tee_output_is_reported_and_the_others_get_everything() {
    let dir = Dir::new();
    let t = dir.path("t");
    let bytes = data((4 << 20) + 9, 9);
    for extra in [&[][..], &["-C"][..]] {
        let mut args = vec!["-q", "--tee", "/dev/full", "--tee", s(&t)];
        args.extend_from_slice(extra);
        let (o, _) = run_failing(&bytes, &args, None);
        assert_eq!(o.status.code(), Some(16), "{extra:?}: {}", err(&o));
        assert_eq!(
            err(&o).trim_end(),
            "rpv: --tee /dev/full: write failed: No space left on device \
             (no more data goes to it)",
            "{extra:?}"
        );
        assert_same(&o.stdout, &bytes, "main");
        assert_same(&std::fs::read(&t).unwrap(), &bytes, "other --tee");
    }
}

#[test]
fn a_tee_reader_that_exits_early_gets_a_prefix_and_the_others_everything() {
    let dir = Dir::new();
    let t = dir.path("t");
    let bytes = data((6 << 20) + 1, 10);
    let fd = format!("/dev/fd/{TEE_FD}");
    for (mode, status, reported) in [
        ("warn", 16, true),
        ("warn-nopipe", 0, false),
        ("exit-nopipe", 0, false),
    ] {
        // With the file, and alone (then a tee straight into the pipe decides each round).
        for (extra, alone) in [(&[][..], false), (&["-C"][..], false), (&[][..], true)] {
            let mut args = vec!["-q", "--tee-error", mode, "--tee", &fd];
            if !alone {
                args.extend(["--tee", s(&t)]);
            }
            args.extend_from_slice(extra);
            let (o, got) = run_failing(&bytes, &args, Some(100_000));
            let what = format!("{mode} {extra:?} alone: {alone}");
            assert_eq!(o.status.code(), Some(status), "{what}: {}", err(&o));
            let expected_err = if reported {
                format!("rpv: --tee {fd}: write failed: Broken pipe (no more data goes to it)")
            } else {
                String::new()
            };
            assert_eq!(err(&o).trim_end(), expected_err, "{what}");
            assert_same(&got.unwrap(), &bytes[..100_000], &what);
            assert_same(&o.stdout, &bytes, &format!("{what}: main"));
            if !alone {
                assert_same(
                    &std::fs::read(&t).unwrap(),
                    &bytes,
                    &format!("{what}: file"),
                );
            }
        }
    }
}

#[test]
fn exit_modes_end_the_run_at_a_failure_with_a_prefix_everywhere() {
    let dir = Dir::new();
    let t = dir.path("t");
    let bytes = data(24 << 20, 11);
    let fd = format!("/dev/fd/{TEE_FD}");
    // (mode, the failing output, reader limit, message)
    for (mode, failing, early, message) in [
        (
            "exit",
            "/dev/full",
            None,
            "rpv: --tee /dev/full: write failed: No space left on device",
        ),
        (
            "exit-nopipe",
            "/dev/full",
            None,
            "rpv: --tee /dev/full: write failed: No space left on device",
        ),
        (
            "exit",
            fd.as_str(),
            Some(100_000),
            "rpv: --tee /dev/fd/7: write failed: Broken pipe",
        ),
    ] {
        for extra in [&[][..], &["-C"][..]] {
            let mut args = vec!["-q", "--tee-error", mode, "--tee", failing, "--tee", s(&t)];
            args.extend_from_slice(extra);
            let (o, _) = run_failing(&bytes, &args, early);
            let what = format!("{mode} {failing} {extra:?}");
            assert_eq!(o.status.code(), Some(16), "{what}: {}", err(&o));
            assert_eq!(err(&o).trim_end(), message, "{what}");
            let file = std::fs::read(&t).unwrap();
            for (out, name) in [(&o.stdout, "main"), (&file, "file")] {
                assert!(out.len() < bytes.len(), "{what}: {name} got everything");
                assert_same(out, &bytes[..out.len()], &format!("{what}: {name}"));
            }
        }
    }
}

#[test]
fn when_the_main_reader_goes_away_the_tees_get_the_rest_unless_exit() {
    let dir = Dir::new();
    let t = dir.path("t");
    let bytes = data((8 << 20) + 3, 12);
    for (mode, all) in [("warn", true), ("exit-nopipe", true), ("exit", false)] {
        for extra in [&[][..], &["-C"][..]] {
            let mut args = vec!["-q", "--tee-error", mode, "--tee", s(&t)];
            args.extend_from_slice(extra);
            let mut cmd = rpv(&args);
            let (r, w) = pipe();
            let main = reader(r, Some(1000));
            cmd.stdout(w);
            let o = crate::util::run_with_input_keep_stdout(cmd, &bytes);
            let what = format!("{mode} {extra:?}");
            assert_eq!(o.status.code(), Some(0), "{what}: {}", err(&o));
            assert_eq!(err(&o), "", "{what}");
            assert_same(&main.join().unwrap(), &bytes[..1000], &what);
            let file = std::fs::read(&t).unwrap();
            if all {
                assert_same(&file, &bytes, &what);
            } else {
                assert!(file.len() < bytes.len(), "{what}: the run went on");
                assert_same(&file, &bytes[..file.len()], &what);
            }
        }
    }
}

#[test]
fn stop_at_size_and_rate_limit_apply_to_every_output() {
    let bytes = data((3 << 20) + 17, 13);
    for input in [Input::Pipe, Input::File] {
        for n in ["0", "1", "65537", "2097153"] {
            let stop: usize = n.parse().unwrap();
            let what = format!("{input:?} -S -s {n}");
            let o = run(input, Main::Pipe, &bytes, &[], &["-S", "-s", n]);
            if stop == 0 {
                // -s 0 is "unknown size": -S passes everything.
                o.all_exact(&bytes, &what);
            } else {
                o.all_exact(&bytes[..stop], &what);
            }
        }
        let small = &bytes[..(1 << 20) + 3];
        let o = run(input, Main::Pipe, small, &[], &["-L", "20M"]);
        o.all_exact(small, &format!("{input:?} -L 20M"));
    }
}

#[test]
fn line_mode_counts_the_main_output_and_every_output_is_exact() {
    let lines = text(40_000);
    for input in [Input::Pipe, Input::File] {
        for extra in [&[][..], &["-L", "1G"][..], &["-C"][..]] {
            let mut args = vec!["-l", "-n", "-b", "-i", "100"];
            args.extend_from_slice(extra);
            let what = format!("{input:?} {extra:?}");
            let o = run(input, Main::Pipe, &lines, &[], &args);
            o.all_exact(&lines, &what);
            let count: u64 = o
                .stderr
                .lines()
                .filter_map(|l| l.trim().parse().ok())
                .next_back()
                .unwrap_or_else(|| panic!("{what}: no count in {}", o.stderr));
            assert_eq!(count, 40_000, "{what}");
            if input == Input::Pipe && extra.is_empty() {
                o.traced("(stdin): Fanout", &what);
            }
        }
    }
}

#[test]
fn skip_errors_give_every_output_the_same_zeros() {
    let bytes = data(300_000, 14);
    let o = run(
        Input::File,
        Main::Pipe,
        &bytes,
        &[("RPV_TEST_READ_ERRORS", "1000-1003,70000-74000")],
        &["-E", "-Z", "512"],
    );
    assert_eq!(o.status, Some(16), "{}", o.stderr);
    assert_eq!(o.main.len(), bytes.len());
    assert_ne!(o.main, bytes, "the bad ranges became zeros");
    for (out, name) in [(&o.file, "file"), (&o.fifo, "fifo"), (&o.pipe, "pipe")] {
        assert_same(out, &o.main, name);
    }
}

#[test]
fn modifiers_apply_to_tee_files() {
    let dir = Dir::new();
    let t = dir.path("t");
    // Zeros with a little data: -O makes holes in the main and the --tee file.
    let mut bytes = vec![0u8; 8 << 20];
    bytes[..4096].copy_from_slice(&data(4096, 15));
    bytes[(4 << 20)..(4 << 20) + 10].copy_from_slice(b"0123456789");
    for (flags, sparse) in [
        (&["-O"][..], true),
        (&["-Y"][..], false),
        (&["-K"][..], false),
        (&["-O", "-Y", "-K"][..], true),
    ] {
        let main_path = dir.path("main");
        let mut args = vec!["-q", "--tee", s(&t)];
        args.extend_from_slice(flags);
        let mut cmd = rpv(&args);
        cmd.stdout(File::create(&main_path).unwrap());
        let o = crate::util::run_with_input_keep_stdout(cmd, &bytes);
        assert!(o.status.success(), "{flags:?}: {}", err(&o));
        for path in [&main_path, &t] {
            assert_same(&std::fs::read(path).unwrap(), &bytes, &format!("{flags:?}"));
            let blocks = std::fs::metadata(path).unwrap().blocks() * 512;
            if sparse {
                assert!(
                    blocks < 1 << 20,
                    "{flags:?} {path:?}: {blocks} bytes allocated"
                );
            }
        }
    }
}

#[test]
fn discard_drops_the_main_output_only() {
    let bytes = data((2 << 20) + 1, 16);
    for input in [Input::Pipe, Input::File] {
        let o = run(input, Main::Pipe, &bytes, &[], &["-X"]);
        assert_eq!(o.status, Some(0), "{}", o.stderr);
        assert!(o.main.is_empty(), "{input:?}");
        assert_same(&o.file, &bytes, "file");
        assert_same(&o.fifo, &bytes, "fifo");
        assert_same(&o.pipe, &bytes, "pipe");
    }
}

#[test]
fn interrupt_leaves_a_prefix_of_the_stream_in_every_output() {
    let dir = Dir::new();
    let t = dir.path("t");
    let bytes = data(64 << 20, 17);
    for extra in [&[][..], &["-C"][..]] {
        let mut args = vec!["-q", "-L", "4M", "--tee", s(&t)];
        args.extend_from_slice(extra);
        let mut cmd = rpv(&args);
        let (r, w) = pipe();
        let main = reader(r, None);
        cmd.stdout(w).stdin(Stdio::piped()).stderr(Stdio::null());
        let mut child = cmd.spawn().unwrap();
        drop(cmd); // our copy of the main pipe's write end
        let mut stdin = child.stdin.take().unwrap();
        let input = bytes.clone();
        let writer = std::thread::spawn(move || {
            let _ = stdin.write_all(&input);
        });
        // Interrupted in the middle: once the copy has 1 MiB and rpv its handlers.
        wait_until("1 MiB in the copy", crate::util::PATIENCE, || {
            std::fs::metadata(&t).is_ok_and(|m| m.len() >= 1 << 20)
                && catches(child.id(), libc::SIGINT)
        });
        let pid = rustix::process::Pid::from_child(&child);
        rustix::process::kill_process(pid, rustix::process::Signal::INT).expect("kill");
        let status = wait_within(&mut child, crate::util::PATIENCE, "rpv");
        assert_eq!(status.code(), Some(32), "{extra:?}");
        writer.join().unwrap();
        let main = main.join().unwrap();
        let file = std::fs::read(&t).unwrap();
        for (out, name) in [(&main, "main"), (&file, "file")] {
            assert!(!out.is_empty(), "{extra:?}: {name} got nothing");
            assert!(out.len() < bytes.len(), "{extra:?}: {name} got everything");
            assert_same(out, &bytes[..out.len()], &format!("{extra:?} {name}"));
        }
    }
}

/// Starts `rpv -q --tee /dev/fd/7` writing into `main`, fed `bytes` by a thread; the
/// `--tee` pipe's read end is returned unread.
fn spawn_with_unread_tee(bytes: &[u8], main: OwnedFd) -> (Child, OwnedFd, JoinHandle<()>) {
    let mut cmd = rpv(&["-q", "--tee", &format!("/dev/fd/{TEE_FD}")]);
    let (tee_r, tee_w) = pipe();
    pass_fd(&mut cmd, &tee_w, TEE_FD);
    cmd.stdout(main).stdin(Stdio::piped()).stderr(Stdio::null());
    let mut child = cmd.spawn().unwrap();
    drop(cmd); // our copies of the pipes' write ends
    drop(tee_w);
    let mut stdin = child.stdin.take().unwrap();
    let input = bytes.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    (child, tee_r, writer)
}

#[test]
fn interrupt_ends_a_run_blocked_on_a_full_lone_tee_pipe() {
    // A lone --tee pipe whose reader does not read: rpv waits in the tee straight into it.
    // Ctrl-C still ends the run at once, and each output holds a prefix of the stream.
    let bytes = data(16 << 20, 18);
    let (r, w) = pipe();
    let main = reader(r, None);
    let (mut child, tee_r, writer) = spawn_with_unread_tee(&bytes, w);
    wait_until("the --tee pipe to fill", crate::util::PATIENCE, || {
        let (queued, capacity) = pipe_fill(tee_r.as_fd());
        queued + 4096 > capacity && catches(child.id(), libc::SIGINT)
    });
    assert!(child.try_wait().unwrap().is_none(), "rpv did not wait");
    let pid = rustix::process::Pid::from_child(&child);
    rustix::process::kill_process(pid, rustix::process::Signal::INT).expect("kill");
    let status = wait_within(&mut child, crate::util::PATIENCE, "rpv");
    assert_eq!(status.code(), Some(32));
    writer.join().unwrap();
    let tee = reader(tee_r, None).join().unwrap();
    let main = main.join().unwrap();
    for (out, name) in [(&main, "main"), (&tee, "--tee pipe")] {
        assert!(!out.is_empty(), "{name} got nothing");
        assert!(out.len() < bytes.len(), "{name} got everything");
        assert_same(out, &bytes[..out.len()], name);
    }
}

#[test]
fn an_input_that_is_a_tee_file_is_skipped_and_left_intact() {
    let dir = Dir::new();
    let x = dir.file("x", b"precious");
    let y = dir.file("y", b"other");
    let o = rpv(&["-q", "--tee", s(&x), s(&x), s(&y)])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(4), "{}", err(&o));
    assert_eq!(
        err(&o),
        format!("rpv: input file is output file: {}\n", s(&x))
    );
    assert_eq!(o.stdout, b"other");
    assert_eq!(
        std::fs::read(&x).unwrap(),
        b"other",
        "truncated: y is not x"
    );
    // Every input is the tee file: nothing is truncated.
    let o = rpv(&["-q", "--tee", s(&y), s(&y)])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(4));
    assert_eq!(std::fs::read(&y).unwrap(), b"other");
}

#[test]
fn a_tee_path_that_cannot_be_opened_stops_before_any_data_moves() {
    let dir = Dir::new();
    let bad: PathBuf = dir.path("missing/t");
    let ok = dir.path("ok");
    let o = crate::util::run_with_input(rpv(&["-q", "--tee", s(&ok), "--tee", s(&bad)]), b"data");
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        err(&o),
        format!("rpv: {}: No such file or directory\n", s(&bad))
    );
    assert!(o.stdout.is_empty());
}

#[test]
fn tee_dash_is_standard_output_when_the_main_output_is_a_file() {
    let dir = Dir::new();
    let main = dir.path("main");
    let bytes = data(100_003, 18);
    let o = crate::util::run_with_input(rpv(&["-q", "-o", s(&main), "--tee", "-"]), &bytes);
    assert!(o.status.success(), "{}", err(&o));
    assert_same(&o.stdout, &bytes, "stdout");
    assert_same(&std::fs::read(&main).unwrap(), &bytes, "-o file");
}

#[test]
fn store_and_forward_tees_the_forwarded_output() {
    let dir = Dir::new();
    let t = dir.path("t");
    let bytes = data((1 << 20) + 5, 19);
    let o = crate::util::run_with_input(rpv(&["-q", "-U", "-", "--tee", s(&t)]), &bytes);
    assert!(o.status.success(), "{}", err(&o));
    assert_same(&o.stdout, &bytes, "stdout");
    assert_same(&std::fs::read(&t).unwrap(), &bytes, "tee");
}

#[test]
fn a_paused_tee_reader_holds_the_main_output_back_by_a_bounded_amount_only() {
    // The --tee pipe's reader waits; the main output's reader reads all it can. rpv moves
    // ahead on the main output by what the --tee pipe holds (it never waits for an output
    // that has room; it grows the pipe to 1 MiB), and at most a few MiB: then it waits, and
    // when the reader comes back every output gets everything.
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    let bytes = data(24 << 20, 21);
    let (main_r, main_w) = pipe();
    let (mut child, tee_r, writer) = spawn_with_unread_tee(&bytes, main_w);
    let count = Arc::new(AtomicU64::new(0));
    let seen = Arc::clone(&count);
    let main = std::thread::spawn(move || {
        let mut f = File::from(main_r);
        let (mut out, mut buf) = (Vec::new(), vec![0u8; 1 << 16]);
        loop {
            match f.read(&mut buf).unwrap() {
                0 => return out,
                n => out.extend_from_slice(&buf[..n]),
            }
            seen.store(out.len() as u64, Ordering::Relaxed);
        }
    });
    poll(20.0, || {
        (count.load(Ordering::Relaxed) >= 1 << 20).then_some(())
    });
    // Time for the main output to run further ahead, if rpv did not wait.
    pause(Duration::from_millis(300));
    let ahead = count.load(Ordering::Relaxed);
    assert!(ahead >= 1 << 20, "the main output got only {ahead} bytes");
    assert!(ahead <= 8 << 20, "the main output ran {ahead} bytes ahead");
    assert!(child.try_wait().unwrap().is_none(), "rpv did not wait");
    let tee = reader(tee_r, None);
    let status = wait_within(&mut child, crate::util::PATIENCE, "rpv");
    assert!(status.success());
    writer.join().unwrap();
    assert_same(&main.join().unwrap(), &bytes, "main");
    assert_same(&tee.join().unwrap(), &bytes, "--tee pipe");
}

fn set_nonblocking(fd: &OwnedFd) {
    let flags = rustix::fs::fcntl_getfl(fd).expect("F_GETFL");
    rustix::fs::fcntl_setfl(fd, flags | rustix::fs::OFlags::NONBLOCK).expect("F_SETFL");
}

#[test]
fn neighbours_that_set_o_nonblock_are_waited_for_without_loss() {
    // The input's read end and the main output's write end are non-blocking (as a
    // neighbour may leave them); the producer pauses now and then, so the input runs dry.
    let dir = Dir::new();
    let t = dir.path("t");
    let bytes = data((8 << 20) + 5, 22);
    for extra in [&[][..], &["-C"][..], &["-l"][..]] {
        let mut args = vec!["-q", "--tee", s(&t)];
        args.extend_from_slice(extra);
        let mut cmd = rpv(&args);
        let (in_r, in_w) = pipe();
        let (out_r, out_w) = pipe();
        set_nonblocking(&in_r);
        set_nonblocking(&out_w);
        cmd.stdin(in_r).stdout(out_w).stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let watchdog = Watchdog::new(child.id(), 120);
        drop(cmd);
        let main = reader(out_r, None);
        let input = bytes.clone();
        let writer = std::thread::spawn(move || {
            let mut f = File::from(in_w);
            for (i, piece) in input.chunks(300_007).enumerate() {
                f.write_all(piece).unwrap();
                if i % 4 == 0 {
                    // The producer pauses: the input runs dry.
                    pause(Duration::from_millis(5));
                }
            }
        });
        writer.join().unwrap();
        let status = child.wait().unwrap();
        drop(watchdog);
        assert!(status.success(), "{extra:?}");
        assert_same(&main.join().unwrap(), &bytes, &format!("{extra:?} main"));
        assert_same(
            &std::fs::read(&t).unwrap(),
            &bytes,
            &format!("{extra:?} tee"),
        );
    }
}

/// What the trace says when a lone `--tee` pipe takes each round's tee straight.
const LONE: &str = "straight, waited for when full";

/// Runs `rpv -q --tee /dev/fd/7 ARGS` with the trace on, from a pipe into a pipe; returns
/// the run and what the `--tee` pipe got.
fn run_lone(bytes: &[u8], env: &[(&str, &str)], args: &[&str]) -> (Output, Vec<u8>) {
    let fd = format!("/dev/fd/{TEE_FD}");
    let mut all = vec!["-q", "--tee", &fd];
    all.extend_from_slice(args);
    let mut cmd = rpv(&all);
    cmd.env("RPV_TEST_TRACE", "1").envs(env.iter().copied());
    let (r, w) = pipe();
    pass_fd(&mut cmd, &w, TEE_FD);
    let tee = reader(r, None);
    let o = crate::util::run_with_input(cmd, bytes);
    drop(w);
    (o, tee.join().unwrap())
}

#[test]
fn a_lone_tee_pipe_gets_every_byte_at_size_boundaries() {
    // One --tee pipe and nothing to count: a tee straight into it decides each round, with
    // no room check and no private pipe.
    for (i, &size) in SIZES.iter().enumerate() {
        let bytes = data(size, i as u64 + 30);
        let what = format!("size {size}");
        let (o, tee) = run_lone(&bytes, &[], &[]);
        let e = err(&o);
        assert!(o.status.success(), "{what}: {e}");
        assert_same(&o.stdout, &bytes, &format!("{what}: main"));
        assert_same(&tee, &bytes, &format!("{what}: --tee pipe"));
        assert!(
            e.contains("(stdin): Fanout") && e.contains(LONE),
            "{what}: {e}"
        );
        assert!(
            !e.contains("private pipe") && !e.contains("after"),
            "{what}: {e}"
        );
    }
    // Counting lines needs one more copy of the same bytes: the general way.
    let bytes = text(60_000);
    let (o, tee) = run_lone(&bytes, &[], &["-l"]);
    assert!(o.status.success() && !err(&o).contains(LONE), "{}", err(&o));
    assert_same(&o.stdout, &bytes, "-l: main");
    assert_same(&tee, &bytes, "-l: --tee pipe");
}

#[test]
fn a_lone_tee_pipe_through_forced_fallbacks_gets_every_byte() {
    // A refused tee straight into it sends it through its private pipe from then on; a
    // refused splice into the main output moves the input to read/write. Either way, in
    // the first round or later, every byte arrives once.
    let bytes = data((5 << 20) + 3, 31);
    for (var, at, trace) in [
        ("RPV_TEST_FAIL_TEE_AT", "1", "--tee /dev/fd/7: private pipe"),
        ("RPV_TEST_FAIL_TEE_AT", "3", "--tee /dev/fd/7: private pipe"),
        ("RPV_TEST_FAIL_AT", "1", "ReadWrite after 1 zero-copy calls"),
        ("RPV_TEST_FAIL_AT", "3", "ReadWrite after 3 zero-copy calls"),
    ] {
        let what = format!("{var}={at}");
        let (o, tee) = run_lone(&bytes, &[(var, at)], &[]);
        let e = err(&o);
        assert!(o.status.success(), "{what}: {e}");
        assert!(e.contains(trace), "{what}: expected {trace:?} in {e}");
        assert_same(&o.stdout, &bytes, &format!("{what}: main"));
        assert_same(&tee, &bytes, &format!("{what}: --tee pipe"));
    }
}

#[test]
fn a_slow_tee_reader_in_small_pieces_gets_every_byte() {
    // The --tee pipe is read 4 KiB at a time with pauses: tees straight into it come up
    // short or find it full, and the rest of each round goes through its private pipe.
    let dir = Dir::new();
    let t = dir.path("t");
    let bytes = data((8 << 20) + 77, 23);
    // With a file beside it, and alone: then the tee straight into it waits while it is full.
    for (extra, alone) in [(&[][..], false), (&["-l"][..], false), (&[][..], true)] {
        let fd = format!("/dev/fd/{TEE_FD}");
        let mut args = vec!["-q", "--tee", &fd];
        if !alone {
            args.extend(["--tee", s(&t)]);
        }
        args.extend_from_slice(extra);
        let mut cmd = rpv(&args);
        cmd.env("RPV_TEST_TRACE", "1");
        let (r, w) = pipe();
        pass_fd(&mut cmd, &w, TEE_FD);
        let slow = std::thread::spawn(move || {
            let mut f = File::from(r);
            let (mut out, mut buf) = (Vec::new(), [0u8; 4096]);
            for i in 0.. {
                match f.read(&mut buf).unwrap() {
                    0 => return out,
                    n => out.extend_from_slice(&buf[..n]),
                }
                if i % 64 == 0 {
                    // A slow reader.
                    pause(Duration::from_millis(1));
                }
            }
            out
        });
        let o = crate::util::run_with_input(cmd, &bytes);
        drop(w);
        assert!(o.status.success(), "{extra:?}: {}", err(&o));
        assert!(err(&o).contains("(stdin): Fanout"), "{}", err(&o));
        assert_eq!(err(&o).contains(LONE), alone, "{extra:?}: {}", err(&o));
        assert_same(&o.stdout, &bytes, &format!("{extra:?} main"));
        if !alone {
            assert_same(
                &std::fs::read(&t).unwrap(),
                &bytes,
                &format!("{extra:?} file"),
            );
        }
        assert_same(
            &slow.join().unwrap(),
            &bytes,
            &format!("{extra:?} slow pipe"),
        );
    }
}

#[test]
fn several_inputs_switch_paths_without_loss() {
    // Files (read/write) and a pipe (fan-out) in turns: what a private pipe still holds
    // when the path changes reaches its output before the next input's bytes.
    let dir = Dir::new();
    let t = dir.path("t");
    let (a, b) = (data((1 << 20) + 3, 24), data(70_001, 25));
    let (pa, pb) = (dir.file("a", &a), dir.file("b", &b));
    let piped = data((3 << 20) + 1, 26);
    for extra in [&[][..], &["-l"][..]] {
        let fd = format!("/dev/fd/{TEE_FD}");
        let mut args = vec!["-q", "--tee", s(&t), "--tee", &fd, s(&pa), "-", s(&pb), "-"];
        args.extend_from_slice(extra);
        let mut cmd = rpv(&args);
        cmd.env("RPV_TEST_TRACE", "1");
        let (r, w) = pipe();
        pass_fd(&mut cmd, &w, TEE_FD);
        let tee_pipe = reader(r, None);
        let o = crate::util::run_with_input(cmd, &piped);
        drop(w);
        assert!(o.status.success(), "{extra:?}: {}", err(&o));
        assert!(err(&o).contains("(stdin): Fanout"), "{}", err(&o));
        assert!(err(&o).contains("/a: ReadWrite"), "{}", err(&o));
        // The second "-" finds stdin at its end.
        let expected = [&a[..], &piped, &b].concat();
        assert_same(&o.stdout, &expected, &format!("{extra:?} main"));
        assert_same(
            &std::fs::read(&t).unwrap(),
            &expected,
            &format!("{extra:?} file"),
        );
        assert_same(
            &tee_pipe.join().unwrap(),
            &expected,
            &format!("{extra:?} pipe"),
        );
    }
}
