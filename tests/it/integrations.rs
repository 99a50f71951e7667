//! rpv in the systems people already run: the terminal's progress indicator (`OSC 9;4`,
//! read as raw bytes from a pseudo-terminal), systemd's status (`NOTIFY_SOCKET`, a datagram
//! socket the test listens on), the Prometheus file (checked with promtool and read back
//! through a real node_exporter) and the stall watchdog (`--stall-timeout`).
//!
//! promtool and node_exporter come from Debian's `prometheus` and
//! `prometheus-node-exporter` (.ci/run installs them); a test that needs one skips with a
//! message only when it is missing.

use std::fs::File;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

use crate::terminal::{bash_on_terminal, openpty, Terminal};
use crate::util::{self, data, rpv, Dir};

/// How long anything here may take before the test counts it as hung.
const HANG: Duration = Duration::from_secs(crate::util::PATIENCE as u64);

fn kill(child: &Child, signal: libc::c_int) {
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, signal) };
}

/// Waits for `child`, killing it and failing if it takes longer than [`HANG`].
#[track_caller]
fn wait(child: &mut Child) -> ExitStatus {
    match util::exit_within(child, HANG.as_secs_f64()) {
        Some(status) => status,
        None => {
            let _ = child.kill();
            let _ = child.wait();
            panic!("rpv hung");
        }
    }
}

/// Polls `done` until it holds, failing after [`HANG`].
#[track_caller]
fn wait_until(what: &str, done: impl FnMut() -> bool) {
    util::wait_until(what, HANG.as_secs_f64(), done);
}

/// `rpv -q -N NAME -L 300k -i INTERVAL --metrics-file PATH INPUT`, its stdout to `stdout`;
/// the labels of its series.
fn metrics_run(
    name: &str,
    interval: &str,
    path: &Path,
    input: &Path,
    stdout: Stdio,
) -> (Child, String) {
    let child = rpv(&["-q", "-N", name, "-L", "300k", "-i", interval])
        .arg("--metrics-file")
        .arg(path)
        .arg(input)
        .stdout(stdout)
        .spawn()
        .unwrap();
    let labels = format!("name=\"{name}\",pid=\"{}\"", child.id());
    (child, labels)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The `OSC 9;4` sequences in `bytes`, in order, by their body after `9;4;` (`1;42`, `3`,
/// `0`). Each must end with ST (`ESC \`), and no other `OSC 9` may be there.
#[track_caller]
fn osc(bytes: &[u8]) -> Vec<String> {
    const START: &[u8] = b"\x1b]9;4;";
    let mut out = Vec::new();
    let mut rest = bytes;
    while let Some(at) = find(rest, START) {
        let after = &rest[at + START.len()..];
        let Some(end) = find(after, b"\x1b\\") else {
            break; // not all written yet
        };
        out.push(String::from_utf8(after[..end].to_vec()).unwrap());
        rest = &after[end + 2..];
    }
    let all = bytes.windows(3).filter(|w| w == b"\x1b]9").count();
    let unfinished = usize::from(find(rest, START).is_some());
    assert_eq!(all, out.len() + unfinished, "an OSC 9 of another form");
    out
}

/// The state number of a sequence body (`1` of `1;42`).
fn state(body: &str) -> &str {
    body.split(';').next().unwrap_or("")
}

/// `rpv ARGS` with standard error on a new pseudo-terminal (80×24) and `env` set; stdin is
/// /dev/zero unless `stdin` says otherwise, stdout /dev/null.
fn rpv_on_pty(args: &[&str], env: &[(&str, &str)], stdin: Option<Stdio>) -> (Child, Terminal) {
    let (master, slave) = openpty(80, 24);
    let terminal = Terminal::new(master, 80, 24, false);
    let mut cmd = rpv(args);
    cmd.envs(env.iter().copied())
        .stdin(stdin.unwrap_or_else(|| File::open("/dev/zero").unwrap().into()))
        .stdout(Stdio::null())
        .stderr(Stdio::from(slave));
    let child = cmd.spawn().expect("spawn rpv");
    drop(cmd); // our copy of the slave: the terminal ends when rpv's closes
    (child, terminal)
}

const WINDOWS_TERMINAL: (&str, &str) = ("WT_SESSION", "c6b6f4a2-0d4b-4b39-a5d2-2f8a8e3f0b11");

#[test]
fn term_progress_shows_the_percentage_and_clears_at_the_end() {
    let (mut child, terminal) = rpv_on_pty(
        &["-L", "300k", "-s", "300k", "-S", "-i", "0.1"],
        &[WINDOWS_TERMINAL],
        None,
    );
    assert!(wait(&mut child).success());
    let (_, bytes, _) = terminal.finish();
    let bodies = osc(&bytes);
    assert!(bodies.len() >= 3, "an update every 0.1 s: {bodies:?}");
    assert_eq!(bodies.last().map(String::as_str), Some("0"), "{bodies:?}");
    let percents: Vec<u32> = bodies[..bodies.len() - 1]
        .iter()
        .map(|b| {
            let p = b
                .strip_prefix("1;")
                .unwrap_or_else(|| panic!("{b:?} in {bodies:?}"));
            p.parse().unwrap()
        })
        .collect();
    assert!(percents.windows(2).all(|w| w[0] <= w[1]), "{percents:?}");
    assert!(percents.iter().all(|&p| p <= 100), "{percents:?}");
    assert!(percents.iter().any(|&p| p > 0 && p < 100), "{percents:?}");
    // The clear is the last thing on the terminal that concerns the indicator.
    let clear = find(&bytes, b"\x1b]9;4;0\x1b\\").unwrap();
    assert!(find(&bytes[clear + 1..], b"\x1b]9").is_none());
}

#[test]
fn term_progress_is_busy_without_a_size_then_cleared() {
    let mut producer = Command::new("head")
        .args(["-c", "300000", "/dev/zero"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let input = producer.stdout.take().unwrap();
    let (mut child, terminal) = rpv_on_pty(
        &["-L", "300k", "-i", "0.1"],
        &[("TERM_PROGRAM", "WezTerm")],
        Some(input.into()),
    );
    assert!(wait(&mut child).success());
    producer.wait().unwrap();
    let (_, bytes, _) = terminal.finish();
    let bodies = osc(&bytes);
    let (last, running) = bodies.split_last().expect("sequences");
    assert_eq!(last, "0");
    assert!(!running.is_empty());
    assert!(running.iter().all(|b| b == "3"), "{bodies:?}");
}

#[test]
fn term_progress_pauses_on_a_stall_and_ends_in_the_error_state_of_the_watchdog() {
    // 1000 of 2000 bytes, then nothing: paused after 2 s (the display's stall rule), and the
    // watchdog ends the run at 2.5 s: error state, then cleared.
    let (mut child, terminal) = rpv_on_pty(
        &["-s", "2000", "-i", "0.2", "--stall-timeout", "2.5"],
        &[("VTE_VERSION", "8000")],
        Some(Stdio::piped()),
    );
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&[0; 1000]).unwrap();
    let status = wait(&mut child);
    drop(stdin);
    assert_eq!(status.code(), Some(128));
    let (_, bytes, _) = terminal.finish();
    let bodies = osc(&bytes);
    let paused = bodies.iter().position(|b| b == "4;50");
    let error = bodies.iter().position(|b| b == "2;50");
    assert!(paused.is_some() && error.is_some(), "{bodies:?}");
    assert!(paused < error, "{bodies:?}");
    assert_eq!(bodies.last().map(String::as_str), Some("0"), "{bodies:?}");
    assert!(bodies
        .iter()
        .all(|b| ["1", "4", "2", "0"].contains(&state(b))));
}

#[test]
fn term_progress_shows_an_error_and_still_clears() {
    let dir = Dir::new();
    let first = dir.file("first", &data(200_000, 1));
    let second = dir.file("second", &data(100_000, 2));
    let missing = dir.path("missing");
    let (mut child, terminal) = rpv_on_pty(
        &[
            "-L",
            "300k",
            "-i",
            "0.1",
            first.to_str().unwrap(),
            missing.to_str().unwrap(),
            second.to_str().unwrap(),
        ],
        &[("ConEmuANSI", "ON")],
        None,
    );
    assert_eq!(wait(&mut child).code(), Some(2));
    let (_, bytes, _) = terminal.finish();
    let bodies = osc(&bytes);
    let first_error = bodies.iter().position(|b| state(b) == "2");
    let first_error = first_error.unwrap_or_else(|| panic!("no error state: {bodies:?}"));
    assert!(
        bodies[..first_error].iter().all(|b| state(b) == "1"),
        "{bodies:?}"
    );
    assert!(first_error > 0, "progress before the error: {bodies:?}");
    let (last, after) = bodies[first_error..].split_last().unwrap();
    assert_eq!(last, "0");
    assert!(after.iter().all(|b| state(b) == "2"), "{bodies:?}");
}

#[test]
fn term_progress_is_cleared_on_sigint_sigterm_and_sighup() {
    for (signal, name) in [
        (libc::SIGINT, "SIGINT"),
        (libc::SIGTERM, "SIGTERM"),
        (libc::SIGHUP, "SIGHUP"),
    ] {
        let (mut child, terminal) = rpv_on_pty(
            &["-L", "100k", "-s", "100M", "-i", "0.1"],
            &[WINDOWS_TERMINAL],
            None,
        );
        wait_until("the first sequence", || !osc(&terminal.bytes()).is_empty());
        kill(&child, signal);
        assert_eq!(wait(&mut child).code(), Some(32), "{name}");
        let (_, bytes, _) = terminal.finish();
        let bodies = osc(&bytes);
        assert_eq!(
            bodies.last().map(String::as_str),
            Some("0"),
            "{name}: {bodies:?}"
        );
        assert!(
            bodies[..bodies.len() - 1].iter().all(|b| state(b) == "1"),
            "{name}: {bodies:?}"
        );
    }
}

fn process_state(pid: u32) -> char {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = &stat[stat.rfind(')').map_or(0, |i| i + 2)..];
    after.chars().next().unwrap_or('?')
}

#[test]
fn term_progress_is_cleared_while_stopped_and_set_again_on_continue() {
    let (mut child, terminal) = rpv_on_pty(
        &["-L", "100k", "-s", "100M", "-i", "0.1"],
        &[WINDOWS_TERMINAL],
        None,
    );
    wait_until("the first sequence", || !osc(&terminal.bytes()).is_empty());
    kill(&child, libc::SIGTSTP);
    wait_until("rpv to stop", || process_state(child.id()) == 'T');
    // The handler wrote the clear before stopping: it is the last sequence.
    wait_until("the clear", || {
        osc(&terminal.bytes()).last().map(String::as_str) == Some("0")
    });
    let stopped_at = osc(&terminal.bytes()).len();
    kill(&child, libc::SIGCONT);
    wait_until("the indicator again", || {
        osc(&terminal.bytes())[stopped_at..]
            .iter()
            .any(|b| state(b) == "1")
    });
    kill(&child, libc::SIGTERM);
    assert_eq!(wait(&mut child).code(), Some(32));
    let (_, bytes, _) = terminal.finish();
    let bodies = osc(&bytes);
    assert_eq!(bodies.last().map(String::as_str), Some("0"), "{bodies:?}");
}

#[test]
fn term_progress_auto_stays_off_where_it_does_not_belong() {
    let args = ["-L", "100k", "-s", "40k", "-S", "-i", "0.1"];
    for (env, extra) in [
        // An unrecognised terminal.
        (&[][..], None),
        (&[("TERM_PROGRAM", "Apple_Terminal")][..], None),
        (
            &[
                ("TERM_PROGRAM", "iTerm.app"),
                ("TERM_PROGRAM_VERSION", "3.5.0"),
            ][..],
            None,
        ),
        // A recognised one seen through tmux, or turned off.
        (
            &[WINDOWS_TERMINAL, ("TMUX", "/tmp/tmux-0/default,1,0")][..],
            None,
        ),
        (&[WINDOWS_TERMINAL][..], Some("--term-progress=never")),
        (&[WINDOWS_TERMINAL][..], Some("-q")),
    ] {
        let mut args = args.to_vec();
        args.extend(extra);
        let (mut child, terminal) = rpv_on_pty(&args, env, None);
        assert!(wait(&mut child).success());
        let (_, bytes, _) = terminal.finish();
        assert!(find(&bytes, b"\x1b]9").is_none(), "{env:?} {extra:?}");
        assert!(
            find(&bytes, b"40.0KiB").is_some() || extra == Some("-q"),
            "the line is drawn"
        );
    }
    // `always` needs no recognised terminal.
    let mut always = args.to_vec();
    always.push("--term-progress=always");
    let (mut child, terminal) = rpv_on_pty(&always, &[], None);
    assert!(wait(&mut child).success());
    let (_, bytes, _) = terminal.finish();
    assert_eq!(osc(&bytes).last().map(String::as_str), Some("0"));
}

#[test]
fn term_progress_auto_never_writes_into_a_pipe_or_a_file() {
    let dir = Dir::new();
    let args = [
        "-f",
        "-L",
        "100k",
        "-s",
        "30k",
        "-S",
        "-i",
        "0.1",
        "/dev/zero",
    ];
    let out = rpv(&args)
        .env(WINDOWS_TERMINAL.0, WINDOWS_TERMINAL.1)
        .stdout(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(
        find(&out.stderr, b"30.0KiB").is_some(),
        "-f draws into the pipe"
    );
    assert!(find(&out.stderr, b"\x1b]9").is_none());
    let log = dir.path("stderr");
    let status = rpv(&args)
        .env(WINDOWS_TERMINAL.0, WINDOWS_TERMINAL.1)
        .stdout(Stdio::null())
        .stderr(File::create(&log).unwrap())
        .status()
        .unwrap();
    assert!(status.success());
    let written = std::fs::read(&log).unwrap();
    assert!(find(&written, b"30.0KiB").is_some());
    assert!(find(&written, b"\x1b]9").is_none());
    // `always` writes into the pipe too (and clears), but never between --json lines.
    let out = rpv(&args)
        .arg("--term-progress=always")
        .stdout(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(osc(&out.stderr).last().map(String::as_str), Some("0"));
    let out = rpv(&[
        "--json",
        "--term-progress=always",
        "-L",
        "100k",
        "-s",
        "30k",
        "-S",
    ])
    .args(["-i", "0.1", "/dev/zero"])
    .stdout(Stdio::null())
    .output()
    .unwrap();
    assert!(out.status.success());
    assert!(find(&out.stderr, b"\x1b]9").is_none());
    crate::json::parse_ndjson(&out.stderr);
}

#[test]
fn term_progress_comes_from_one_rpv_per_terminal() {
    // Two rpv share a terminal: the first with a size (state 1), the second without (state
    // 3). Whichever shows progress first owns the indicator; the other never writes to it
    // while the owner runs, so their sequences never interleave.
    let script = r#"$RPV -L 200k -s 300k -S -i 0.1 /dev/zero | $RPV -i 0.1 > /dev/null"#;
    let (status, terminal) = bash_on_terminal(script, 80, 24, false, &[WINDOWS_TERMINAL], |_| {});
    assert!(status.success());
    let (_, bytes, _) = terminal.finish();
    let bodies = osc(&bytes);
    assert!(!bodies.is_empty());
    let mut owner: Option<&str> = None;
    for body in &bodies {
        match (state(body), owner) {
            ("0", _) => owner = None,
            (s, None) => owner = Some(if s == "1" { "1" } else { "3" }),
            (s, Some(o)) => assert_eq!(s, o, "interleaved: {bodies:?}"),
        }
    }
    assert_eq!(owner, None, "cleared at the end: {bodies:?}");
}

/// A datagram socket bound at `address`, with a read timeout.
fn listen(address: &SocketAddr) -> UnixDatagram {
    let socket = UnixDatagram::bind_addr(address).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    socket
}

/// Runs `cmd` to its end with NOTIFY_SOCKET=`value` and `socket` listening; the datagrams
/// received, the exit status and stdout.
fn notified(mut cmd: Command, value: &str, socket: &UnixDatagram) -> (Vec<String>, Output) {
    cmd.env("NOTIFY_SOCKET", value)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = cmd.spawn().unwrap();
    let reader = std::thread::spawn(move || child.wait_with_output().unwrap());
    let mut messages = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = Instant::now() + HANG;
    loop {
        match socket.recv(&mut buf) {
            Ok(n) => messages.push(String::from_utf8(buf[..n].to_vec()).unwrap()),
            Err(_) if reader.is_finished() => break,
            Err(_) => assert!(Instant::now() < deadline, "rpv hung"),
        }
    }
    // Whatever arrived just before the end.
    while let Ok(n) = socket.recv(&mut buf) {
        messages.push(String::from_utf8(buf[..n].to_vec()).unwrap());
    }
    (messages, reader.join().unwrap())
}

#[test]
fn systemd_gets_the_progress_and_a_final_status_over_a_path() {
    let _cores = crate::util::cores_free();
    let dir = Dir::new();
    let path = dir.path("notify");
    let socket = listen(&SocketAddr::from_pathname(&path).unwrap());
    let input = data(300_000, 3);
    let file = dir.file("in", &input);
    let mut cmd = util::rpv_on_time(&["-q", "-N", "backup", "-L", "300k", "-i", "0.1"]);
    cmd.arg(&file);
    let (messages, out) = notified(cmd, path.to_str().unwrap(), &socket);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(out.stdout, input, "the data went through whole");
    assert!(out.stderr.is_empty(), "nothing on stderr with -q");
    assert!(messages.len() >= 4, "{messages:#?}");
    assert!(
        messages.iter().all(|m| m.starts_with("STATUS=backup: ")),
        "{messages:#?}"
    );
    let (last, during) = messages.split_last().unwrap();
    assert!(
        last.starts_with("STATUS=backup: done, 292KiB of 292KiB in 0:00:0")
            && last.ends_with("/s)"),
        "{last}"
    );
    // During the run: percentage, amount of size, rate, ETA.
    let shape = |m: &str| -> bool {
        let Some(rest) = m.strip_prefix("STATUS=backup: ") else {
            return false;
        };
        let Some((percent, rest)) = rest.split_once("% ") else {
            return false;
        };
        percent.parse::<u32>().is_ok_and(|p| p <= 100)
            && rest.contains(" of 292KiB, ")
            && rest.contains("B/s")
            && (rest.contains(", ETA 0:00:0") || rest.contains("stalled for"))
    };
    assert!(during.iter().all(|m| shape(m)), "{during:#?}");
    assert!(
        during.iter().any(|m| !m.starts_with("STATUS=backup: 0% ")),
        "{during:#?}"
    );
}

#[test]
fn systemd_gets_the_status_over_an_abstract_socket_and_failures_say_why() {
    let name = format!(
        "rpv-test-notify-{}-{:?}",
        std::process::id(),
        Instant::now()
    );
    let socket = listen(&SocketAddr::from_abstract_name(name.as_bytes()).unwrap());
    let dir = Dir::new();
    let file = dir.file("in", b"hello\n");
    let mut cmd = rpv(&["-q"]);
    cmd.arg(&file).arg(dir.path("missing"));
    let started = Instant::now();
    let (messages, out) = notified(cmd, &format!("@{name}"), &socket);
    let took = started.elapsed().as_secs();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(out.stdout, b"hello\n");
    let last = messages.last().map(String::as_str).unwrap_or_default();
    let why = format!(
        "STATUS=failed (status 2): failed to read file: {}: No such file or directory; \
         6.00 B of 6.00 B in ",
        dir.path("missing").display()
    );
    // The time the run took, as rpv measured it: 0:00:00 on a quiet machine, and never
    // more than the test saw pass.
    let shown = last.strip_prefix(&why).and_then(|time| {
        let mut parts = time.split(':').map(|p| p.parse::<u64>().ok());
        let (h, m, s) = (parts.next()??, parts.next()??, parts.next()??);
        (parts.next().is_none() && time.len() == 7).then_some(h * 3600 + m * 60 + s)
    });
    assert!(
        shown.is_some_and(|secs| secs <= took),
        "{why}H:MM:SS within {took} s: {messages:#?}"
    );
}

#[test]
fn a_notify_socket_that_takes_nothing_never_disturbs_the_transfer() {
    let dir = Dir::new();
    let input = data(400_000, 4);
    let file = dir.file("in", &input);
    // Nobody there, and a socket that never reads (its queue fills after a few messages).
    let full = dir.path("full");
    let _never_read = UnixDatagram::bind(&full).unwrap();
    for value in [
        dir.path("nobody").to_str().unwrap(),
        full.to_str().unwrap(),
        "@",
        "vsock:2:1",
    ] {
        let out = rpv(&["-q", "-L", "400k", "-i", "0.05"])
            .arg(&file)
            .env("NOTIFY_SOCKET", value)
            .stderr(Stdio::piped())
            .stdout(Stdio::piped())
            .output()
            .unwrap();
        assert!(out.status.success(), "{value}: {out:?}");
        assert!(out.stdout == input, "{value}: the data went through whole");
        assert!(out.stderr.is_empty(), "{value}: {:?}", out.stderr);
    }
}

/// `promtool check metrics` on `text`: its complaints, or `None` without promtool.
fn promtool(text: &str) -> Option<String> {
    let mut child = match Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(_) => {
            eprintln!("integrations: no promtool (apt-get install prometheus): not checked");
            return None;
        }
    };
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Some(if out.status.success() {
        said
    } else {
        format!("failed: {said}")
    })
}

/// The value of the series `name` with labels `labels` in a metrics text.
pub(crate) fn value(text: &str, name: &str, labels: &str) -> Option<f64> {
    let key = format!("{name}{{{labels}}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(key.as_str()))
        .and_then(|v| v.trim().parse().ok())
}

#[test]
fn the_metrics_file_is_whole_at_every_read_and_final_at_the_end() {
    let dir = Dir::new();
    let path = dir.path("rpv.prom");
    let input = data(300_000, 5);
    let file = dir.file("in", &input);
    let (mut child, labels) = metrics_run("nightly", "0.05", &path, &file, Stdio::piped());
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        stdout.read_to_end(&mut out).unwrap();
        out
    });
    // Read the file over and over while rpv rewrites it: always a whole version.
    let mut reads = 0;
    let mut moving = false;
    while !reader.is_finished() {
        if let Ok(text) = std::fs::read_to_string(&path) {
            reads += 1;
            assert!(
                text.ends_with('\n') && value(&text, "rpv_done", &labels).is_some(),
                "a partial file: {text:?}"
            );
            let bytes = value(&text, "rpv_bytes_total", &labels);
            moving |= value(&text, "rpv_done", &labels) == Some(0.0) && bytes > Some(0.0);
        }
        // Reads as fast as the machine allows, a pause between them.
        util::pause(Duration::from_millis(1));
    }
    assert!(wait(&mut child).success());
    assert_eq!(reader.join().unwrap(), input);
    assert!(reads > 0);
    assert!(
        moving,
        "a version during the run shows bytes moved, not done"
    );
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(value(&text, "rpv_bytes_total", &labels), Some(300_000.0));
    assert_eq!(value(&text, "rpv_size_bytes", &labels), Some(300_000.0));
    assert_eq!(value(&text, "rpv_done", &labels), Some(1.0));
    assert_eq!(value(&text, "rpv_exit_status", &labels), Some(0.0));
    assert_eq!(value(&text, "rpv_stalled", &labels), Some(0.0));
    assert!(value(&text, "rpv_elapsed_seconds", &labels).is_some_and(|s| s > 0.5));
    for series in ["rpv_bytes_total", "rpv_done", "rpv_exit_status"] {
        assert!(text.contains(&format!("# HELP {series} ")), "{series}");
        assert!(text.contains(&format!("# TYPE {series} ")), "{series}");
    }
    assert!(text.contains("# TYPE rpv_bytes_total counter\n"));
    if let Some(said) = promtool(&text) {
        assert_eq!(said, "", "promtool check metrics:\n{text}");
    }
    let left: Vec<_> = std::fs::read_dir(dir.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 2, "no temporary file left: {left:?}");
}

#[test]
fn a_metrics_file_that_cannot_be_written_is_an_error_before_the_transfer() {
    let dir = Dir::new();
    let path = dir.path("no/such/dir/rpv.prom");
    let out = rpv(&["--metrics-file", path.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "rpv: --metrics-file: {}: No such file or directory\n",
            path.display()
        )
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn a_metrics_file_that_fails_later_is_reported_once_and_the_transfer_goes_on() {
    for json in [false, true] {
        let dir = Dir::new();
        let metrics_dir = dir.path("metrics");
        std::fs::create_dir(&metrics_dir).unwrap();
        let path = metrics_dir.join("rpv.prom");
        let input = data(300_000, 8);
        let file = dir.file("in", &input);
        let mut cmd = rpv(&["-q", "-L", "300k", "-i", "0.05"]);
        if json {
            cmd.arg("--json");
        }
        let mut child = cmd
            .arg("--metrics-file")
            .arg(&path)
            .arg(&file)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            let mut out = Vec::new();
            stdout.read_to_end(&mut out).unwrap();
            out
        });
        wait_until("the first version", || path.exists());
        // (Again if rpv made its next version's temporary file in it meanwhile.)
        wait_until("the metrics directory removed", || {
            std::fs::remove_dir_all(&metrics_dir).is_ok()
        });
        assert!(wait(&mut child).success(), "json: {json}");
        assert_eq!(reader.join().unwrap(), input, "the data went through whole");
        let mut stderr = Vec::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_end(&mut stderr)
            .unwrap();
        let text = format!(
            "--metrics-file: {}: No such file or directory",
            path.display()
        );
        if json {
            let objects = crate::json::parse_ndjson(&stderr);
            let warnings: Vec<_> = objects.iter().filter(|o| o["type"] == "message").collect();
            assert_eq!(warnings.len(), 1, "{objects:#?}");
            assert_eq!(warnings[0]["level"], "warning");
            assert_eq!(warnings[0]["text"], text.as_str());
            assert_eq!(warnings[0]["errno"], libc::ENOENT);
            assert_eq!(objects.last().unwrap()["status"], 0);
        } else {
            assert_eq!(String::from_utf8_lossy(&stderr), format!("rpv: {text}\n"));
        }
    }
}

/// The node_exporter binary (Debian's name first), if installed.
pub(crate) fn node_exporter() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    let dirs: Vec<PathBuf> = std::env::split_paths(&path).collect();
    ["prometheus-node-exporter", "node_exporter"]
        .iter()
        .flat_map(|name| dirs.iter().map(move |d| d.join(name)))
        .find(|p| p.is_file())
}

/// A node_exporter serving only the textfile collector on a loopback port; killed on drop.
pub(crate) struct Exporter {
    child: Child,
    port: u16,
}

impl Drop for Exporter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Exporter {
    /// Starts it on a free port, reading `dir`; retries with another port if the one chosen
    /// was taken meanwhile.
    pub(crate) fn start(binary: &Path, dir: &Path) -> Exporter {
        for _ in 0..5 {
            let port = TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let child = Command::new(binary)
                .arg(format!("--web.listen-address=127.0.0.1:{port}"))
                .args(["--collector.disable-defaults", "--collector.textfile"])
                .arg(format!("--collector.textfile.directory={}", dir.display()))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start node_exporter");
            let mut exporter = Exporter { child, port };
            // Up, or gone (the port was taken: another one).
            let up = util::poll(HANG.as_secs_f64(), || {
                if exporter.child.try_wait().unwrap().is_some() {
                    return Some(false);
                }
                exporter.scrape().map(|_| true)
            });
            if up == Some(true) {
                return exporter;
            }
        }
        panic!("node_exporter did not start");
    }

    /// The body of `GET /metrics`, if it answered.
    pub(crate) fn scrape(&self) -> Option<String> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).ok()?;
        stream
            .write_all(b"GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
            .ok()?;
        let mut response = String::new();
        stream.read_to_string(&mut response).ok()?;
        let (head, body) = response.split_once("\r\n\r\n")?;
        head.starts_with("HTTP/1.0 200").then(|| body.to_string())
    }
}

#[test]
fn node_exporter_serves_the_series_during_and_after_the_run() {
    let Some(binary) = node_exporter() else {
        eprintln!(
            "integrations: no node_exporter (apt-get install prometheus-node-exporter): skipped"
        );
        return;
    };
    let dir = Dir::new();
    let collected = dir.path("collected");
    std::fs::create_dir(&collected).unwrap();
    let exporter = Exporter::start(&binary, &collected);
    let path = collected.join("backup.prom");
    let input = data(300_000, 6);
    let file = dir.file("in", &input);
    let (mut child, labels) = metrics_run("backup", "0.1", &path, &file, Stdio::null());
    // During the run: bytes moved, not done (the exporter reads the file at each scrape).
    let mut during = None;
    wait_until("a scrape with bytes moved", || {
        let body = exporter.scrape().unwrap_or_default();
        let moved = value(&body, "rpv_bytes_total", &labels).is_some_and(|b| b > 0.0);
        let done = value(&body, "rpv_done", &labels);
        if moved && done.is_some() {
            during = Some(body);
        }
        during.is_some() || child.try_wait().unwrap().is_some()
    });
    assert!(wait(&mut child).success());
    let during = during.expect("scraped during the run");
    assert_eq!(value(&during, "rpv_done", &labels), Some(0.0), "{during}");
    assert_eq!(value(&during, "rpv_size_bytes", &labels), Some(300_000.0));
    assert!(value(&during, "rpv_exit_status", &labels).is_none());
    let after = exporter.scrape().expect("scrape");
    assert!(
        after.contains("\nnode_textfile_scrape_error 0\n"),
        "{after}"
    );
    assert_eq!(value(&after, "rpv_bytes_total", &labels), Some(300_000.0));
    assert_eq!(value(&after, "rpv_done", &labels), Some(1.0));
    assert_eq!(value(&after, "rpv_exit_status", &labels), Some(0.0));
    assert!(
        after.contains("# TYPE rpv_bytes_total counter\n"),
        "{after}"
    );
}

/// A process that writes `head` to a pipe and then sleeps, holding the pipe open: (the
/// process, the read end of its pipe).
fn silent_writer(head: &str) -> (Child, std::process::ChildStdout) {
    let mut writer = Command::new("sh")
        .args(["-c", &format!("printf '{head}'; exec sleep 30")])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let out = writer.stdout.take().unwrap();
    (writer, out)
}

#[test]
fn the_watchdog_ends_a_stalled_input_and_names_its_writer() {
    let (mut writer, pipe) = silent_writer("abc");
    let mut child = rpv(&["-q", "--stall-timeout", "1", "-i", "0.1"])
        .stdin(pipe)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = wait(&mut child);
    let out = child.wait_with_output().unwrap();
    let writer_pid = writer.id();
    let _ = writer.kill();
    let _ = writer.wait();
    assert_eq!(status.code(), Some(128));
    assert_eq!(out.stdout, b"abc", "what came through was passed on");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "rpv: no data moved for 1s (--stall-timeout): waiting to read input from PID \
             {writer_pid} (sleep 30)\n"
        )
    );
}

#[test]
fn the_watchdog_ends_a_stalled_output_and_names_its_reader_in_json() {
    // A reader that never reads: rpv fills the pipe, then waits on it.
    let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).unwrap();
    let mut reader = Command::new("sleep")
        .arg("30")
        .stdin(Stdio::from(read))
        .spawn()
        .unwrap();
    let mut child = rpv(&["--json", "--stall-timeout", "1s", "-i", "0.1", "/dev/zero"])
        .stdout(Stdio::from(write))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = wait(&mut child);
    let out = child.wait_with_output().unwrap();
    let reader_pid = reader.id();
    let _ = reader.kill();
    let _ = reader.wait();
    assert_eq!(status.code(), Some(128));
    let objects = crate::json::parse_ndjson(&out.stderr);
    let end = objects.last().unwrap();
    assert_eq!(end["status"], 128);
    assert_eq!(end["interrupted"], false);
    assert_eq!(end["stall"]["timeout"], 1.0);
    assert_eq!(end["stall"]["side"], "output");
    assert_eq!(end["stall"]["pid"], reader_pid);
    assert_eq!(end["stall"]["command"], "sleep 30");
    let message = objects
        .iter()
        .find(|o| o["type"] == "message" && o["kind"] == "stalled")
        .expect("a message");
    assert_eq!(message["level"], "error");
    assert_eq!(
        message["text"],
        format!(
            "no data moved for 1s (--stall-timeout): waiting to write output to PID \
             {reader_pid} (sleep 30)"
        )
    );
}

#[test]
fn time_stopped_with_ctrl_z_does_not_count_towards_the_stall_timeout() {
    let input = data(200_000, 7);
    let dir = Dir::new();
    let file = dir.file("in", &input);
    let mut child = rpv(&["-q", "-L", "100k", "-i", "0.1", "--stall-timeout", "2"])
        .arg(&file)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        stdout.read_to_end(&mut out).unwrap();
        out
    });
    wait_until("rpv's handlers", || {
        util::catches(child.id(), libc::SIGTSTP)
    });
    kill(&child, libc::SIGTSTP);
    wait_until("rpv to stop", || process_state(child.id()) == 'T');
    // Stopped for longer than the timeout.
    util::pause(Duration::from_millis(2500));
    kill(&child, libc::SIGCONT);
    assert!(wait(&mut child).success(), "the watchdog did not fire");
    assert_eq!(reader.join().unwrap(), input);
}

#[test]
fn a_bad_stall_timeout_is_a_usage_error() {
    let out = rpv(&["--stall-timeout", "soon"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(64));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "rpv: --stall-timeout: soon: invalid duration (seconds, or numbers with a unit: ms, \
         s, m, h, d; for example 30, 90s, 1.5m, 1h30m)\n"
    );
}

/// With `-M`, the metrics file and systemd's status carry the status rpv exits with: the
/// command's (its exit code, 128 + the signal that killed it), as `--json` does.
#[test]
fn a_failed_command_is_a_failure_in_the_metrics_file_and_for_systemd() {
    for (script, status) in [
        ("head -c 1000 /dev/zero; exit 3", 3),
        ("head -c 1000 /dev/zero; kill -TERM $$", 143),
    ] {
        let dir = Dir::new();
        let metrics = dir.path("m.prom");
        let path = dir.path("notify");
        let socket = listen(&SocketAddr::from_pathname(&path).unwrap());
        let mut cmd = rpv(&["-q", "-M", "out", "--metrics-file"]);
        cmd.arg(&metrics).args(["--", "sh", "-c", script]);
        let (messages, out) = notified(cmd, path.to_str().unwrap(), &socket);
        assert_eq!(out.status.code(), Some(status), "{script}: {out:?}");
        assert_eq!(out.stdout.len(), 1000);
        let text = std::fs::read_to_string(&metrics).unwrap();
        let labels = format!("name=\"\",pid=\"{}\"", pid_of(&text));
        assert_eq!(
            value(&text, "rpv_exit_status", &labels),
            Some(f64::from(status)),
            "{script}: {text}"
        );
        assert_eq!(value(&text, "rpv_done", &labels), Some(1.0), "{text}");
        assert_eq!(value(&text, "rpv_bytes_total", &labels), Some(1000.0));
        let last = messages.last().map(String::as_str).unwrap_or("");
        assert!(
            last.starts_with(&format!(
                "STATUS=failed (status {status}); 1000 B in 0:00:0"
            )),
            "{script}: {messages:#?}"
        );
    }
}

/// The `pid` label of a metrics text (rpv's PID).
fn pid_of(text: &str) -> String {
    let at = text.find("pid=\"").expect("a pid label") + 5;
    text[at..].split('"').next().unwrap().to_string()
}

/// `rpv_start_time_seconds` is one value for the whole run, with its fraction: when the
/// transfer started, not now − elapsed rounded at each update.
#[test]
fn the_metrics_start_time_is_constant_and_exact() {
    let dir = Dir::new();
    let path = dir.path("rpv.prom");
    let file = dir.file("in", &data(400_000, 9));
    let unix_now = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64()
    };
    let before = unix_now();
    let mut child = rpv(&["-q", "-L", "400k", "-i", "0.05", "--metrics-file"])
        .arg(&path)
        .arg(&file)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let labels = format!("name=\"\",pid=\"{}\"", child.id());
    let mut seen = Vec::new();
    let mut first_seen = None;
    while child.try_wait().unwrap().is_none() {
        if let Some(start) = std::fs::read_to_string(&path)
            .ok()
            .and_then(|text| value(&text, "rpv_start_time_seconds", &labels))
        {
            first_seen.get_or_insert_with(unix_now);
            seen.push(start);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(wait(&mut child).success());
    let text = std::fs::read_to_string(&path).unwrap();
    seen.extend(value(&text, "rpv_start_time_seconds", &labels));
    assert!(seen.len() > 5, "{seen:?}");
    assert!(seen.iter().all(|&s| s == seen[0]), "one value: {seen:?}");
    let after = first_seen.unwrap();
    assert!(
        seen[0] >= before - 0.01 && seen[0] <= after + 0.01,
        "the start, to the millisecond: {} not in {before}..{after}",
        seen[0]
    );
}

/// `-d`: the metrics are labelled with the descriptor's path (not the display's padded,
/// shortened row), and `rpv_bytes_total` is the sum over the descriptors watched.
#[test]
fn watched_descriptors_are_named_by_their_path_and_summed_in_the_metrics_file() {
    let dir = Dir::new();
    let long = "a-rather-long-directory-name-that-the-display-shortens";
    std::fs::create_dir(dir.path(long)).unwrap();
    let one = dir.file(&format!("{long}/one"), &data(100_000, 10));
    let two = dir.file("two", &data(50_000, 11));
    let metrics = dir.path("d.prom");
    for (fds, name, total) in [
        ("7", one.to_str().unwrap().to_string(), 60_000.0),
        ("", String::new(), 80_000.0),
    ] {
        // A process holding both files open, each read partway (60,000 and 20,000 bytes).
        let mut holder = Command::new("bash")
            .arg("-c")
            .arg(format!(
                "exec 7<'{}' 8<'{}'; head -c 60000 <&7 >/dev/null; head -c 20000 <&8 \
                 >/dev/null; exec 0<&- 1>&- 2>&-; sleep 30",
                one.display(),
                two.display()
            ))
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let target = if fds.is_empty() {
            holder.id().to_string()
        } else {
            format!("{}:{fds}", holder.id())
        };
        wait_until("the reads", || {
            std::fs::read_to_string(format!("/proc/{}/fdinfo/8", holder.id()))
                .is_ok_and(|t| t.starts_with("pos:\t20000\n"))
        });
        let mut watcher = rpv(&[
            "-q",
            "-i",
            "0.05",
            "-w",
            "60",
            "-d",
            &target,
            "--metrics-file",
        ])
        .arg(&metrics)
        .spawn()
        .unwrap();
        let labels = format!("name=\"{name}\",pid=\"{}\"", watcher.id());
        wait_until("the figures", || {
            std::fs::read_to_string(&metrics)
                .is_ok_and(|t| value(&t, "rpv_bytes_total", &labels) == Some(total))
        });
        let _ = holder.kill();
        let _ = holder.wait();
        wait(&mut watcher);
        let text = std::fs::read_to_string(&metrics).unwrap();
        assert_eq!(value(&text, "rpv_done", &labels), Some(1.0), "{text}");
    }
}

/// `--json` and `--log` on a terminal: no `OSC 9;4` (`--term-progress`, `auto` on a
/// recognised terminal or `always`) and no window title (`-x`) on their lines; every line
/// of `--json` is a JSON object, every line of `--log` a time-stamped record.
#[test]
fn json_and_log_lines_stay_pure_on_a_terminal() {
    for voice in ["--json", "--log"] {
        for (env, extra) in [
            (&[WINDOWS_TERMINAL][..], &[][..]),
            (&[][..], &["--term-progress=always"][..]),
            (&[][..], &["-x", "windowtitle"][..]),
            (
                &[WINDOWS_TERMINAL][..],
                &["--term-progress=always", "-x", "windowtitle,processtitle"][..],
            ),
        ] {
            let mut args = vec![voice, "-L", "300k", "-s", "150k", "-S", "-i", "0.05"];
            args.extend(extra);
            let (mut child, terminal) = rpv_on_pty(&args, env, None);
            assert!(wait(&mut child).success());
            let (_, bytes, _) = terminal.finish();
            let what = format!("{voice} {env:?} {extra:?}");
            assert!(
                !bytes.contains(&0x1b),
                "{what}: {:?}",
                String::from_utf8_lossy(&bytes)
            );
            let text = String::from_utf8(bytes).unwrap();
            let lines: Vec<&str> = text.lines().map(|l| l.trim_end_matches('\r')).collect();
            assert!(lines.len() >= 2, "{what}: {lines:?}");
            for line in lines {
                if voice == "--json" {
                    let object: serde_json::Value = serde_json::from_str(line)
                        .unwrap_or_else(|e| panic!("{what}: {e}: {line:?}"));
                    assert!(object["type"].is_string(), "{what}: {line}");
                } else {
                    assert!(
                        crate::json::iso8601_with_offset(&line[..25.min(line.len())]),
                        "{what}: {line:?}"
                    );
                }
            }
        }
    }
}

/// A `-M` command that fails is a failure for the terminal's indicator too: it ends in the
/// error state, then is cleared (the status is the command's, known once it has ended).
#[test]
fn term_progress_ends_in_the_error_state_when_the_command_fails() {
    let (mut child, terminal) = rpv_on_pty(
        &[
            "-i",
            "0.1",
            "-s",
            "400k",
            "-L",
            "400k",
            "-M",
            "out",
            "--",
            "sh",
            "-c",
            "head -c 200000 /dev/zero; exit 3",
        ],
        &[WINDOWS_TERMINAL],
        None,
    );
    assert_eq!(wait(&mut child).code(), Some(3));
    let (_, bytes, _) = terminal.finish();
    let bodies = osc(&bytes);
    let (last, before) = bodies.split_last().unwrap_or_else(|| panic!("{bodies:?}"));
    assert_eq!(last, "0", "cleared at the end: {bodies:?}");
    assert!(
        before.last().is_some_and(|b| state(b) == "2"),
        "the error state before the clear: {bodies:?}"
    );
    assert!(before.iter().any(|b| state(b) == "1"), "{bodies:?}");
}
