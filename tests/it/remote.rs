//! `-R PID` and `-Q PID` through the binary: changes reach a running
//! transfer, only the given options change, queries, errors, and other users locked out.
//!
//! Every target gets its own `XDG_RUNTIME_DIR`, so its socket lives in a private test
//! directory.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::util::{exit_within, pause, rpv, wait_until, Dir};

/// A running rpv with its socket up.
struct Target {
    child: Child,
    runtime: Dir,
    stderr: Arc<Mutex<Vec<u8>>>,
}

impl Target {
    /// Starts `rpv args` with stdout discarded and stdin from `/dev/null`; waits for its
    /// control socket.
    fn start(args: &[&str]) -> Target {
        let runtime = Dir::new();
        // The target answers -R and -Q within the client's timeout, and draws its lines on
        // time: it (and the test thread, and so every client it starts) gets the CPU first.
        let mut cmd = crate::util::rpv_on_time(args);
        cmd.env("XDG_RUNTIME_DIR", runtime.dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn target");
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let mut pipe = child.stderr.take().unwrap();
        let sink = Arc::clone(&stderr);
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        let target = Target {
            child,
            runtime,
            stderr,
        };
        let socket = target.socket();
        // Listening: rpv makes the socket private (0600) after bind and listen. Its mere
        // existence is not enough: a target stopped between bind and listen (a test that
        // sends SIGSTOP at once, on a loaded machine) refuses every connection.
        wait_until(
            &format!("the control socket at {socket:?}"),
            crate::util::PATIENCE,
            || {
                use std::os::unix::fs::PermissionsExt;
                std::fs::metadata(&socket).is_ok_and(|m| m.permissions().mode() & 0o777 == 0o600)
            },
        );
        target
    }

    /// Back to the ordinary policy (from the real-time one of [`crate::util::rpv_on_time`]),
    /// every thread of it, before the test lets it run without a limit: a real-time process
    /// that moves data as fast as it can holds a CPU from every test beside it, the timing
    /// tests of the suite included (one lost 7 % of its rate-limited transfer's 5 s).
    fn ordinary(&self) {
        let tasks = std::fs::read_dir(format!("/proc/{}/task", self.child.id())).unwrap();
        for task in tasks {
            let Some(tid) = task.ok().and_then(|t| t.file_name().to_str()?.parse().ok()) else {
                continue;
            };
            let param = libc::sched_param { sched_priority: 0 };
            // SAFETY: sched_setscheduler reads `param` during the call only; `tid` is a
            // thread of our own child (refused harmlessly if it has just ended).
            unsafe { libc::sched_setscheduler(tid, libc::SCHED_OTHER, &param) };
        }
    }

    fn pid(&self) -> String {
        self.child.id().to_string()
    }

    fn socket(&self) -> PathBuf {
        self.runtime
            .dir
            .path()
            .join("rpv")
            .join(format!("{}.sock", self.child.id()))
    }

    /// `rpv ARGS` as a client of this target (same runtime directory).
    fn client(&self, args: &[&str]) -> Command {
        let mut cmd = rpv(args);
        cmd.env("XDG_RUNTIME_DIR", self.runtime.dir.path());
        cmd
    }

    /// `rpv -R PID ARGS`; asserts success.
    fn remote(&self, args: &[&str]) {
        let pid = self.pid();
        let mut all = vec!["-R", pid.as_str()];
        all.extend_from_slice(args);
        let out = self.client(&all).output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "rpv -R {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Bytes per second seen by `rpv -Q PID -n -b -t -i 0.2` over `secs` seconds of the
    /// target's own clock: each sample carries the target's elapsed time beside its byte
    /// count, so a query client that starts late or is held back between samples (a busy
    /// machine) changes how long this waits, not the rate it finds.
    fn queried_rate(&self, secs: f64) -> f64 {
        let pid = self.pid();
        let mut q = self
            .client(&["-Q", &pid, "-n", "-b", "-t", "-i", "0.2"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let samples: Arc<Mutex<Vec<(f64, f64)>>> = Arc::default();
        let mut pipe = q.stderr.take().unwrap();
        let sink = Arc::clone(&samples);
        let text = Arc::new(Mutex::new(String::new()));
        let seen = Arc::clone(&text);
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            let mut line = Vec::new();
            while let Ok(n) = pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                for &b in &buf[..n] {
                    if b != b'\n' {
                        line.push(b);
                        continue;
                    }
                    let l = String::from_utf8_lossy(&line).into_owned();
                    seen.lock().unwrap().push_str(&l);
                    seen.lock().unwrap().push('\n');
                    let mut fields = l.split_whitespace().map(str::parse::<f64>);
                    if let (Some(Ok(t)), Some(Ok(b)), None) =
                        (fields.next(), fields.next(), fields.next())
                    {
                        sink.lock().unwrap().push((t, b));
                    }
                    line.clear();
                }
            }
        });
        // The first sample is skipped (it may straddle a change made just before).
        let spanned = || {
            let s = samples.lock().unwrap();
            s.len() >= 3 && s[s.len() - 1].0 - s[1].0 >= secs
        };
        let done = crate::util::poll(crate::util::PATIENCE, || spanned().then_some(()));
        let _ = q.kill();
        let _ = q.wait();
        let _ = reader.join();
        assert!(
            done.is_some(),
            "the query did not cover {secs} s of the target's clock: {:?}",
            text.lock().unwrap()
        );
        let s = samples.lock().unwrap();
        // Only the samples drawn while it was being waited for: the first to span `secs`.
        let end = (2..s.len()).find(|&i| s[i].0 - s[1].0 >= secs).unwrap();
        (s[end].1 - s[1].1) / (s[end].0 - s[1].0)
    }

    /// The `\r`/`\n`-separated display lines written since `from` bytes.
    fn lines_since(&self, from: usize) -> Vec<String> {
        let all = self.stderr.lock().unwrap();
        String::from_utf8_lossy(&all[from.min(all.len())..])
            .split(['\r', '\n'])
            .map(|l| l.trim_end().to_string())
            .filter(|l| !l.is_empty())
            .collect()
    }

    /// `rpv -R PID ARGS`, then the display lines of `window` once the change settled (a
    /// line was drawn after it); asserts that there are some.
    fn lines_after(&self, args: &[&str], window: Duration) -> Vec<String> {
        self.remote(args);
        let applied = self.stderr_len();
        wait_until("a line drawn after -R", crate::util::PATIENCE, || {
            self.stderr.lock().unwrap()[applied..].contains(&b'\r')
        });
        let mark = self.stderr_len();
        // The window the lines are counted over.
        pause(window);
        let lines = self.lines_since(mark);
        assert!(!lines.is_empty(), "no display after -R {args:?}");
        lines
    }

    fn stderr_len(&self) -> usize {
        self.stderr.lock().unwrap().len()
    }

    /// Waits for the target to exit, at most `secs`.
    fn wait(&mut self, secs: u64) -> Option<i32> {
        exit_within(&mut self.child, secs as f64)?.code()
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn remote_changes_the_rate_limit_and_query_sees_it() {
    let _cores = crate::util::cores_free();
    let target = Target::start(&["-q", "-L", "400k", "/dev/zero"]);
    let before = target.queried_rate(1.6);
    assert!(
        (200e3..800e3).contains(&before),
        "rate before: {before} (limit 400k)"
    );
    target.remote(&["-L", "40k"]);
    let lowered = target.queried_rate(1.6);
    assert!(
        (15e3..100e3).contains(&lowered),
        "rate after -L 40k: {lowered}"
    );
    target.ordinary();
    target.remote(&["-L", "0"]);
    let unlimited = target.queried_rate(1.6);
    assert!(unlimited > 5e6, "rate after -L 0: {unlimited}");
}

#[test]
fn remote_removes_a_limit_and_the_transfer_completes() {
    let dir = Dir::new();
    let data = crate::util::data(1 << 20, 7);
    let input = dir.file("in", &data);
    let output = dir.path("out");
    let mut target = Target::start(&[
        "-q",
        "-L",
        "10k",
        crate::util::s(&input),
        "-o",
        crate::util::s(&output),
    ]);
    assert_eq!(
        target.wait(1),
        None,
        "a 1 MiB transfer at 10k/s ended early"
    );
    target.remote(&["-L", "0"]);
    assert_eq!(target.wait(20), Some(0));
    crate::util::assert_same(&std::fs::read(&output).unwrap(), &data, "-R -L 0 output");
    assert!(!target.socket().exists(), "socket left behind");
}

#[test]
fn remote_buffer_sizes_past_the_cap_are_capped_and_past_64_bits_refused() {
    let dir = Dir::new();
    let data = crate::util::data(1 << 20, 8);
    let input = dir.file("in", &data);
    let output = dir.path("out");
    let mut target = Target::start(&[
        "-q",
        "-C",
        "-L",
        "100k",
        crate::util::s(&input),
        "-o",
        crate::util::s(&output),
    ]);
    // Capped at 1 GiB on the way (pv 1.11 would try to allocate 16 EiB).
    target.remote(&["-B", "18446744073709551615"]);
    let pid = target.pid();
    let refused = target
        .client(&["-R", &pid, "-B", "18446744073709551616"])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(64));
    target.remote(&["-B", "3", "-L", "0"]);
    assert_eq!(target.wait(20), Some(0));
    let stderr = String::from_utf8_lossy(&target.stderr.lock().unwrap()).into_owned();
    assert_eq!(stderr, "");
    crate::util::assert_same(&std::fs::read(&output).unwrap(), &data, "-R -B output");
}

#[test]
fn remote_changes_only_the_options_given() {
    let _cores = crate::util::cores_free();
    // Timer only, a name, a fast interval and a limit: -R -N must keep all of them.
    let target = Target::start(&[
        "-f",
        "-t",
        "-N",
        "first",
        "-i",
        "0.1",
        "-L",
        "50k",
        "/dev/zero",
    ]);
    wait_until("the first name", crate::util::PATIENCE, || {
        target.lines_since(0).iter().any(|l| l.contains("first:"))
    });
    let lines = target.lines_after(&["-N", "second"], Duration::from_millis(1000));
    assert!(
        lines.len() >= 5,
        "interval reset? {} lines in 1 s",
        lines.len()
    );
    for l in &lines {
        assert!(l.contains("second:"), "name not changed: {l:?}");
        assert!(!l.contains('['), "switches reset to the defaults: {l:?}");
    }
    let rate = target.queried_rate(1.6);
    assert!(rate < 150e3, "rate limit lost: {rate}");

    let lines = target.lines_after(&["-F", "X%bX"], Duration::from_millis(500));
    for l in &lines {
        assert!(
            l.starts_with('X') && l.ends_with('X'),
            "format not applied: {l:?}"
        );
    }

    // Display switches replace the format by their default one.
    let lines = target.lines_after(&["-b", "-r"], Duration::from_millis(500));
    for l in &lines {
        assert!(
            l.contains("second:") && l.contains("B/s]"),
            "switches: {l:?}"
        );
        assert!(!l.contains('X'), "old format kept: {l:?}");
    }
}

#[test]
fn query_follows_a_quiet_transfer_in_numeric_mode() {
    let dir = Dir::new();
    let data = crate::util::data(300_000, 3);
    let input = dir.file("in", &data);
    let mut target = Target::start(&["-q", "-L", "200k", crate::util::s(&input)]);
    let pid = target.pid();
    let out = target
        .client(&["-Q", &pid, "-n", "-i", "0.2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", crate::util::err(&out));
    let values: Vec<f64> = String::from_utf8_lossy(&out.stderr)
        .lines()
        .map(|l| l.trim().parse().expect("numeric line"))
        .collect();
    // Percentages (the size was fetched), rising, ending at 100 when the target exits.
    assert!(values.len() >= 3, "{values:?}");
    assert!(values.windows(2).all(|w| w[0] <= w[1]), "{values:?}");
    assert!(values[0] < 100.0, "{values:?}");
    assert_eq!(*values.last().unwrap(), 100.0, "{values:?}");
    assert_eq!(target.wait(5), Some(0));
    assert!(out.stdout.is_empty());
}

#[test]
fn query_shows_lines_of_a_line_counting_target_without_l() {
    let dir = Dir::new();
    let input = dir.file("in", "x\n".repeat(400).as_bytes());
    let mut target = Target::start(&["-q", "-l", "-L", "200", crate::util::s(&input)]);
    let pid = target.pid();
    // The client is not told -l: the unit comes from the target's reply.
    let out = target
        .client(&["-Q", &pid, "--json", "-i", "0.2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", crate::util::err(&out));
    let text = String::from_utf8_lossy(&out.stderr);
    let start = text
        .lines()
        .find(|l| l.contains(r#""type":"start""#))
        .unwrap_or_else(|| panic!("no start record: {text}"));
    assert!(start.contains(r#""unit":"lines""#), "{start}");
    assert!(start.contains(r#""size":400"#), "{start}");
    assert_eq!(target.wait(5), Some(0));
}

#[test]
fn errors_and_statuses() {
    let check = |args: &[&str], message: &str| {
        let out: Output = rpv(args).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert_eq!(crate::util::err(&out), message, "{args:?}");
    };
    check(
        &["-R", "999999", "-L", "1"],
        "rpv: 999999: No such process\n",
    );
    check(&["-Q", "999999"], "rpv: 999999: No such process\n");
    // A live process that is not rpv.
    let mut sleeper = Command::new("sleep").arg("30").spawn().unwrap();
    let pid = sleeper.id().to_string();
    let message = format!("rpv: {pid}: message not received\n");
    check(&["-R", &pid, "-N", "x"], &message);
    check(&["-Q", &pid], &message);
    let _ = sleeper.kill();
    let _ = sleeper.wait();
}

/// A `-R` value longer than the protocol's line limit used to fail with a misleading
/// "message not received"; it now says what is wrong, and the target carries on.
#[test]
fn remote_value_too_long_says_so() {
    let mut target = Target::start(&["-L", "1M", "-i", "0.2", "-f", "/dev/zero", "-S", "-s", "3M"]);
    let long = "a".repeat(100_000);
    let pid = target.pid();
    for option in ["-N", "-F"] {
        let out = target
            .client(&["-R", &pid, option, &long])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
        assert_eq!(
            crate::util::err(&out),
            format!("rpv: {option}: value too long to send to {pid} (at most 65536 bytes)\n")
        );
    }
    target.remote(&["-N", "short"]);
    assert_eq!(target.wait(20), Some(0));
}

/// `setpriv` arguments that run a command as `nobody`, if we are root and can.
fn as_nobody() -> Option<Vec<&'static str>> {
    let root = std::fs::read_to_string("/proc/self/status")
        .ok()?
        .lines()
        .find(|l| l.starts_with("Uid:"))
        .is_some_and(|l| l.split_whitespace().nth(2) == Some("0"));
    let setpriv = Command::new("setpriv").arg("--version").output().ok()?;
    (root && setpriv.status.success()).then(|| {
        vec![
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
        ]
    })
}

fn chmod(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn another_user_can_neither_control_nor_read() {
    let _cores = crate::util::cores_free();
    let Some(prefix) = as_nobody() else {
        eprintln!("skipped: needs root and setpriv");
        return;
    };
    let target = Target::start(&["-q", "-L", "40k", "/dev/zero"]);
    let pid = target.pid();
    let stranger = |args: &[&str], unchecked: bool| -> Output {
        let mut cmd = Command::new(prefix[0]);
        cmd.args(&prefix[1..])
            .arg(env!("CARGO_BIN_EXE_rpv"))
            .args(args)
            .env("XDG_RUNTIME_DIR", target.runtime.dir.path())
            .env("LC_ALL", "C");
        if unchecked {
            cmd.env("RPV_TEST_CONTROL_UNCHECKED", "1");
        }
        cmd.output().unwrap()
    };
    // As any client: the target cannot even be signalled.
    for args in [&["-R", &pid, "-L", "0"][..], &["-Q", &pid, "-n"][..]] {
        let out = stranger(args, false);
        assert_eq!(out.status.code(), Some(1));
        assert_eq!(
            crate::util::err(&out),
            format!("rpv: {pid}: Operation not permitted\n")
        );
    }
    // Even with the directory and socket opened up and the client's own checks skipped,
    // the server's SO_PEERCRED check refuses the connection.
    chmod(target.runtime.dir.path(), 0o711);
    chmod(&target.runtime.dir.path().join("rpv"), 0o711);
    chmod(&target.socket(), 0o777);
    for args in [&["-R", &pid, "-L", "0"][..], &["-Q", &pid, "-n"][..]] {
        let out = stranger(args, true);
        assert_eq!(out.status.code(), Some(1), "{}", crate::util::err(&out));
        assert_eq!(
            crate::util::err(&out),
            format!("rpv: {pid}: message not received\n")
        );
    }
    // The limit is still in force.
    let rate = target.queried_rate(1.6);
    assert!(rate < 100e3, "a stranger changed the rate: {rate}");
}

#[test]
fn remote_line_limit_reaches_the_zero_copy_line_path() {
    let _cores = crate::util::cores_free();
    // `-l` from a pipe (here a FIFO) starts on the tee + splice line path, which has no line
    // budgets; a limit set later by -R must still hold.
    let dir = Dir::new();
    let fifo = dir.path("fifo");
    let status = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(status.success());
    let writer_path = fifo.clone();
    std::thread::spawn(move || {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open(writer_path)
            .unwrap();
        let block = "123456789\n".repeat(1000);
        while std::io::Write::write_all(&mut f, block.as_bytes()).is_ok() {}
    });
    let mut cmd_args = vec!["-l", "-q"];
    let fifo_arg = crate::util::s(&fifo).to_string();
    cmd_args.push(&fifo_arg);
    let target = Target::start(&cmd_args);
    // Let the transfer run on the zero-copy path for a while first.
    pause(Duration::from_millis(300));
    target.remote(&["-L", "200"]);
    // In line mode the counters of `-Q -n -b` are lines.
    let rate = target.queried_rate(2.0);
    assert!(
        (100.0..400.0).contains(&rate),
        "lines/s after -L 200: {rate}"
    );
}

/// A target killed with SIGKILL cannot remove its socket; the next rpv that listens in the
/// same directory removes it (its PID is gone), and keeps the sockets of live ones, which
/// `-Q` still reaches.
#[test]
fn the_socket_of_a_killed_rpv_is_removed_by_the_next_one() {
    let mut killed = Target::start(&["-q", "-L", "1k", "/dev/zero"]);
    // All in one directory: the first target's runtime directory.
    let dir = killed.runtime.dir.path().to_path_buf();
    let spawn = || {
        KillOnDrop(
            rpv(&["-q", "-L", "1k", "/dev/zero"])
                .env("XDG_RUNTIME_DIR", &dir)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        )
    };
    let socket_of = |child: &KillOnDrop| {
        let socket = dir.join("rpv").join(format!("{}.sock", child.0.id()));
        let deadline = Instant::now() + Duration::from_secs(10);
        while !socket.exists() {
            assert!(Instant::now() < deadline, "no socket at {socket:?}");
            std::thread::sleep(Duration::from_millis(10));
        }
        socket
    };
    let live = spawn();
    let live_socket = socket_of(&live);
    let stale = killed.socket();
    killed.child.kill().unwrap();
    killed.child.wait().unwrap();
    assert!(
        stale.exists(),
        "SIGKILL left the socket (the case under test)"
    );
    // A third rpv starts listening: it removes the dead one's socket.
    let third = spawn();
    socket_of(&third);
    assert!(!stale.exists(), "the killed rpv's socket is still there");
    assert!(live_socket.exists(), "a live rpv's socket was removed");
    let query = rpv(&["-Q", &live.0.id().to_string(), "-n", "-b", "-i", "0.1"])
        .env("XDG_RUNTIME_DIR", &dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut query = KillOnDrop(query);
    let mut stderr = query.0.stderr.take().unwrap();
    let mut first = [0u8; 1];
    assert_eq!(
        stderr.read(&mut first).unwrap(),
        1,
        "-Q reaches the live rpv"
    );
}

/// A child killed (and reaped) when the test ends, whatever happens.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A target that does not answer (stopped with SIGSTOP): `-Q` and `-R` wait for its reply,
/// and SIGINT ends that wait at once (std's reads retried through it, for the whole 10 s
/// reply timeout).
#[test]
fn sigint_ends_a_client_waiting_for_a_stopped_target() {
    let _cores = crate::util::cores_free();
    let target = Target::start(&["-q", "-L", "1k", "/dev/zero"]);
    let signal = |pid: u32, sig| {
        let pid = rustix::process::Pid::from_raw(pid as i32).unwrap();
        rustix::process::kill_process(pid, sig).unwrap();
    };
    signal(target.child.id(), rustix::process::Signal::STOP);
    for args in [&["-Q", "-n"][..], &["-R", "-L", "2k"]] {
        let pid = target.pid();
        let mut all = vec![args[0], pid.as_str()];
        all.extend_from_slice(&args[1..]);
        let mut client = KillOnDrop(
            target
                .client(&all)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        );
        let client_pid = client.0.id();
        // Connected (the socket is in its descriptors): now it waits for the reply.
        let deadline = Instant::now() + Duration::from_secs(10);
        while !std::fs::read_dir(format!("/proc/{client_pid}/fd"))
            .unwrap()
            .flatten()
            .any(|fd| {
                std::fs::read_link(fd.path())
                    .is_ok_and(|l| l.to_string_lossy().starts_with("socket:"))
            })
        {
            assert!(Instant::now() < deadline, "{args:?}: never connected");
            std::thread::sleep(Duration::from_millis(10));
        }
        let sent = Instant::now();
        signal(client_pid, rustix::process::Signal::INT);
        let status = loop {
            if let Some(status) = client.0.try_wait().unwrap() {
                break status;
            }
            assert!(
                sent.elapsed() < Duration::from_secs(1),
                "{args:?}: SIGINT did not end the client within a second"
            );
            std::thread::sleep(Duration::from_millis(10));
        };
        assert_eq!(status.code(), Some(32), "{args:?}");
    }
    signal(target.child.id(), rustix::process::Signal::CONT);
}
