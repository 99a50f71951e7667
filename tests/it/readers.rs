//! A watch ends when nobody reads it (reliability-4 F1): `-d`, `-Q`, `--pipeline` and
//! `--top`, whose display is all they are for, end with status 0 once the reader of their
//! progress stream is gone (`rpv --top --json 2>&1 | head -n 3`), as a transfer ends when
//! its output's reader goes. A transfer whose standard error's reader goes keeps copying.

use std::io::Read;
use std::os::fd::OwnedFd;
use std::process::{Child, Command, Stdio};

use crate::shell::Pipeline;
use crate::util::{assert_same, data, rpv, s, wait_until, wait_within, Dir};

/// A pipe (read end, write end), close-on-exec so other tests' children do not inherit it.
fn pipe() -> (OwnedFd, OwnedFd) {
    rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).unwrap()
}

/// A process the test started, killed when the test ends however it ends.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs `watch` with its standard error (where `--json` goes) piped into `head -n 3`, waits
/// for `head` to have its three lines and end, then for the watch to end by itself: its
/// status. What `head` printed is checked to be three JSON objects.
#[track_caller]
fn into_head(mut watch: Command, what: &str) -> std::process::ExitStatus {
    let (read, write) = pipe();
    let mut child = watch
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(write))
        .spawn()
        .unwrap();
    let mut head = Command::new("head")
        .args(["-n", "3"])
        .stdin(Stdio::from(read))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // (The pipe's ends now live only in the two children.) What head prints is read as it
    // comes (a --top object can be long).
    let mut printed = head.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut lines = String::new();
        let _ = printed.read_to_string(&mut lines);
        lines
    });
    let head_status = match crate::util::exit_within(&mut head, 60.0) {
        Some(status) => status,
        None => {
            let _ = head.kill();
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: head -n 3 had no three lines after 60 s");
        }
    };
    let lines = reader.join().unwrap();
    assert!(head_status.success(), "{what}: head: {head_status:?}");
    assert_eq!(lines.lines().count(), 3, "{what}: {lines}");
    for line in lines.lines() {
        let _: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{what}: not JSON ({e}): {line}"));
    }
    ended(&mut child, what)
}

/// The status of `child` once it ends after its reader went (at its next update, which on
/// a loaded machine may be seconds away); fails the test, killing it, if it still runs
/// after [`crate::util::PATIENCE`].
#[track_caller]
fn ended(child: &mut Child, what: &str) -> std::process::ExitStatus {
    wait_within(
        child,
        crate::util::PATIENCE,
        &format!("{what} after its reader went"),
    )
}

/// A process holding a file of `dir` open on its descriptor 3 (it runs `sleep`); the
/// `-d` target `PID:3`.
fn holding(dir: &Dir) -> (Killed, String) {
    let file = dir.file("held", b"held open");
    let holder = Killed(
        Command::new("sh")
            .args(["-c", "exec 3< \"$1\"; exec sleep 120", "sh"])
            .arg(&file)
            .stdin(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let pid = holder.0.id();
    let fd3 = format!("/proc/{pid}/fd/3");
    wait_until(
        "the holder to run sleep with its file open",
        crate::util::PATIENCE,
        || {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c.starts_with(b"sleep"))
                && std::fs::read_link(&fd3).is_ok()
        },
    );
    (holder, format!("{pid}:3"))
}

#[test]
fn a_descriptor_watch_ends_when_its_reader_goes() {
    let dir = Dir::new();
    let (holder, target) = holding(&dir);
    let status = into_head(rpv(&["--json", "-i", "0.1", "-d", &target]), "-d");
    drop(holder);
    assert_eq!(status.code(), Some(0), "-d");
}

#[test]
fn a_query_ends_when_its_reader_goes() {
    let runtime = Dir::new();
    let input = runtime.file("in", &data(4 << 20, 61));
    // 4 MiB at 20 KiB/s: it runs far longer than the test.
    let target = Killed(
        rpv(&["-q", "-L", "20k", s(&input)])
            .env("XDG_RUNTIME_DIR", runtime.dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let pid = target.0.id();
    let socket = runtime.dir.path().join("rpv").join(format!("{pid}.sock"));
    wait_until("the target's control socket", crate::util::PATIENCE, || {
        socket.exists()
    });
    let mut query = rpv(&["--json", "-i", "0.1", "-Q", &pid.to_string()]);
    query.env("XDG_RUNTIME_DIR", runtime.dir.path());
    let status = into_head(query, "-Q");
    drop(target);
    assert_eq!(status.code(), Some(0), "-Q");
}

#[test]
fn a_pipeline_watch_ends_when_its_reader_goes() {
    let pipeline = Pipeline::start("sleep 120 | sleep 121");
    let pid = pipeline.find_command("sleep 121");
    let target = format!("--pipeline={pid}");
    let status = into_head(rpv(&[&target, "--json", "-i", "0.1"]), "--pipeline");
    drop(pipeline);
    assert_eq!(status.code(), Some(0), "--pipeline");
}

#[test]
fn top_ends_when_its_reader_goes() {
    let status = into_head(rpv(&["--top", "--json", "-i", "0.2"]), "--top --json");
    assert_eq!(status.code(), Some(0), "--top");
}

/// The other side: a transfer whose standard error's reader is gone copies everything
/// (its display was only ever a view of it), with status 0.
#[test]
fn a_transfer_copies_on_when_its_display_has_no_reader() {
    let dir = Dir::new();
    let bytes = data(1 << 20, 62);
    let input = dir.file("in", &bytes);
    let output = dir.path("out");
    let (read, write) = pipe();
    drop(read);
    let mut child = rpv(&["-f", "-i", "0.05", "-L", "2M", "-o", s(&output), s(&input)])
        .stdin(Stdio::null())
        .stderr(Stdio::from(write))
        .spawn()
        .unwrap();
    let status = wait_within(
        &mut child,
        crate::util::PATIENCE,
        "a transfer with no reader of its display",
    );
    assert_eq!(status.code(), Some(0));
    assert_same(&std::fs::read(&output).unwrap(), &bytes, "the copy");
}

/// `--top` and `-d` read directories of /proc at every look: with every `close` failing
/// (EIO, by strace), std's directory stream aborted them at their first look (it asserts
/// that `closedir` succeeded; reliability-4 F12). They now go on: three JSON lines into
/// `head -n 3`, then the end as above, status 0.
#[test]
fn watches_survive_a_failing_close() {
    if !crate::reliability::strace_available() {
        return;
    }
    let dir = Dir::new();
    let trace = dir.path("trace");
    let traced = |args: &[&str]| {
        let mut cmd = Command::new("strace");
        cmd.args(["-f", "-qq", "-o", s(&trace), "-e", "trace=close"])
            .args(["-e", "inject=close:error=EIO:when=1+"])
            .arg(env!("CARGO_BIN_EXE_rpv"))
            .args(args)
            .env("LC_ALL", "C");
        cmd
    };
    let (holder, target) = holding(&dir);
    let status = into_head(
        traced(&["--json", "-i", "0.1", "-d", &target]),
        "-d, close failing",
    );
    drop(holder);
    assert_eq!(status.code(), Some(0), "-d");
    let status = into_head(
        traced(&["--top", "--json", "-i", "0.2"]),
        "--top, close failing",
    );
    assert_eq!(status.code(), Some(0), "--top");
}
