//! No waiting that a signal cannot end, and nothing left running (reliability-3 #5, #12,
//! #13; first-use-3 D10, D16): the command of `-M` ends with rpv (after a stall, SIGINT or
//! SIGTERM) and is named in the stall message, a stalled `--tee` copy is named with its
//! reader, a stall in `-U`'s store phase still forwards what was stored, the watchdog fires
//! within the timeout plus one interval, and `-L` lets no burst through after an outside
//! SIGSTOP/SIGCONT. Every test waits for events (an exit, a file, a line) with a deadline.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::json::parse_ndjson;
use crate::util::{data, rpv, s, stderr_of, wait_within, Dir, PATIENCE};

/// Waits until `cond` holds, at most `secs`.
#[track_caller]
fn wait_for(secs: f64, what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs_f64(secs);
    while !cond() {
        assert!(Instant::now() < deadline, "{what}: not within {secs} s");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Sends `sig` to process `pid`.
fn kill(pid: u32, sig: libc::c_int) {
    // SAFETY: kill(2) with a PID of a process this test started, and a valid signal.
    assert_eq!(unsafe { libc::kill(pid as libc::pid_t, sig) }, 0);
}

/// The PID a script wrote to `path` (once it has).
fn pid_in(path: &Path) -> u32 {
    wait_for(PATIENCE, &format!("a PID in {path:?}"), || {
        std::fs::read_to_string(path).is_ok_and(|t| t.ends_with('\n'))
    });
    std::fs::read_to_string(path)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// The start time of process `pid` (field 22 of its `stat`), if it runs (not a zombie).
fn started(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &text[text.rfind(')')? + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    (fields[0] != "Z" && fields[0] != "X").then(|| fields[19].parse().ok())?
}

/// Asserts that the processes `(pid, start)` are all gone within `secs` (reaped or zombies:
/// rpv's own child is reaped by init once rpv has exited).
#[track_caller]
fn gone_within(secs: f64, processes: &[(u32, u64)], what: &str) {
    wait_for(secs, what, || {
        processes
            .iter()
            .all(|&(pid, start)| started(pid) != Some(start))
    });
}

/// Processes a test started through rpv: killed when the test ends, if rpv left them
/// running (the defect under test), so a failing test neither hangs nor leaves them.
struct Leftovers(Vec<(u32, u64)>);

impl Drop for Leftovers {
    fn drop(&mut self) {
        for &(pid, start) in &self.0 {
            if started(pid) == Some(start) {
                // SAFETY: kill(2) of a process this test started, still the same one.
                unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
            }
        }
    }
}

/// A process and its start time, once it runs.
fn process(pid: u32) -> (u32, u64) {
    (pid, started(pid).expect("the process runs"))
}

/// The JSON object of `kind` `message` whose text starts with `prefix`.
fn message<'a>(objects: &'a [serde_json::Value], prefix: &str) -> &'a serde_json::Value {
    objects
        .iter()
        .find(|o| o["type"] == "message" && o["text"].as_str().unwrap_or("").starts_with(prefix))
        .unwrap_or_else(|| panic!("no message {prefix:?} in {objects:#?}"))
}

/// `-M out` whose command stops writing: the stall names the command as rpv started it
/// (`waiting for output of PID N (sh -c …)`, and in `--json`'s `stall`), and the command and
/// the process it started are ended (SIGTERM), not left running under init.
#[test]
fn a_stall_with_m_names_the_command_and_ends_it_with_what_it_started() {
    let dir = Dir::new();
    let (shell_pid, sleep_pid) = (dir.path("shell.pid"), dir.path("sleep.pid"));
    let script = format!(
        "exec 2>/dev/null; echo $$ > {}; head -c 1000 /dev/zero; sleep 30 & echo $! > {}; wait",
        s(&shell_pid),
        s(&sleep_pid)
    );
    let mut child = rpv(&[
        "--json",
        "-i",
        "0.1",
        "--stall-timeout",
        "1",
        "-M",
        "out",
        "--",
        "sh",
        "-c",
        &script,
    ])
    .stdin(Stdio::null())
    .stdout(File::create(dir.path("out")).unwrap())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let shell = process(pid_in(&shell_pid));
    let sleep = process(pid_in(&sleep_pid));
    let _leftovers = Leftovers(vec![shell, sleep]);
    let status = wait_within(&mut child, PATIENCE, "-M out, stalled");
    let stderr = stderr_of(&mut child);
    assert_eq!(status.code(), Some(128), "{stderr}");
    assert_eq!(std::fs::read(dir.path("out")).unwrap(), vec![0u8; 1000]);
    let objects = parse_ndjson(stderr.as_bytes());
    let end = objects.last().unwrap();
    let command = shown_command(&script);
    assert_eq!(end["stall"]["side"], "input", "{stderr}");
    assert_eq!(end["stall"]["pid"], shell.0, "{stderr}");
    assert_eq!(end["stall"]["command"], command.as_str(), "{stderr}");
    let stalled = message(&objects, "no data moved");
    assert_eq!(
        stalled["text"],
        format!(
            "no data moved for 1s (--stall-timeout): waiting for output of PID {} ({command})",
            shell.0
        )
    );
    let ended = message(&objects, "ended the command");
    assert_eq!(
        ended["text"],
        format!("ended the command PID {} ({command}) with SIGTERM", shell.0)
    );
    gone_within(
        PATIENCE,
        &[shell, sleep],
        "the command and its sleep end with rpv",
    );
}

/// SIGTERM (or SIGINT) to rpv alone, as a supervisor sends it: the `-M` command ends too;
/// one that ignores SIGTERM gets SIGKILL a second later, and rpv still exits promptly.
#[test]
fn an_exit_signal_to_rpv_ends_the_m_command() {
    let _cores = crate::util::cores_free();
    for (sig, ignore, word) in [
        (libc::SIGTERM, "", "SIGTERM"),
        (libc::SIGINT, "trap '' TERM; ", "SIGKILL"),
    ] {
        let dir = Dir::new();
        let pid_file = dir.path("pid");
        let script = format!(
            "exec 2>/dev/null; {ignore}echo $$ > {}; while :; do sleep 1; done",
            s(&pid_file)
        );
        let mut child = crate::util::rpv_on_time(&["-q", "-M", "in", "--", "sh", "-c", &script])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let _feed = child.stdin.take();
        let shell = process(pid_in(&pid_file));
        let _leftovers = Leftovers(vec![shell]);
        let sent = Instant::now();
        kill(child.id(), sig);
        let status = wait_within(&mut child, PATIENCE, "-M in, signalled");
        let took = sent.elapsed();
        let stderr = stderr_of(&mut child);
        assert_eq!(status.code(), Some(32), "{stderr}");
        // A second of grace for the SIGKILL, and the settling rpv does on any exit signal.
        let bound = if word == "SIGKILL" { 3 } else { 2 };
        assert!(
            took < Duration::from_secs(bound),
            "{word}: rpv exited {took:?} after the signal"
        );
        assert!(
            stderr.contains(&format!("rpv: ended the command PID {} (sh -c ", shell.0))
                && stderr.contains(word),
            "{word}: {stderr}"
        );
        gone_within(PATIENCE, &[shell], "the command ends with rpv");
    }
}

/// The transfer is over (the command closed its output) but the command goes on: rpv waits
/// for it, and SIGINT ends that wait (and the command) at once; std's `wait` retried
/// through every signal.
#[test]
fn sigint_ends_the_wait_for_an_m_command_that_closed_its_output() {
    let _cores = crate::util::cores_free();
    let dir = Dir::new();
    let pid_file = dir.path("pid");
    let script = format!(
        "exec >&- 2>/dev/null; echo $$ > {}; exec sleep 30",
        s(&pid_file)
    );
    let mut child = crate::util::rpv_on_time(&["-q", "-M", "out", "--", "sh", "-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let command = process(pid_in(&pid_file));
    let _leftovers = Leftovers(vec![command]);
    wait_for(PATIENCE, "the command runs sleep", || {
        std::fs::read(format!("/proc/{}/cmdline", command.0)).is_ok_and(|c| c.starts_with(b"sleep"))
    });
    let sent = Instant::now();
    kill(child.id(), libc::SIGINT);
    let status = wait_within(&mut child, PATIENCE, "-M out, waiting for the command");
    let took = sent.elapsed();
    let stderr = stderr_of(&mut child);
    assert!(
        took < Duration::from_secs(1),
        "exited {took:?} after SIGINT"
    );
    assert_eq!(status.code(), Some(32), "{stderr}");
    gone_within(PATIENCE, &[command], "the command ends with rpv");
}

/// `-U -` whose input stalls: what was stored reaches the output before rpv fails (status
/// 128); the `end` carries the stall.
#[test]
fn a_stall_in_the_store_phase_forwards_what_was_stored() {
    let dir = Dir::new();
    let bytes = data(100_000, 51);
    for store in ["-", s(&dir.path("store"))] {
        let out = dir.path("out");
        let mut child = rpv(&[
            "--json",
            "-q",
            "-i",
            "0.1",
            "--stall-timeout",
            "1",
            "-U",
            store,
        ])
        .stdin(Stdio::piped())
        .stdout(File::create(&out).unwrap())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
        let mut feed = child.stdin.take().unwrap();
        feed.write_all(&bytes).unwrap();
        let status = wait_within(&mut child, PATIENCE, "-U, stalled input");
        drop(feed);
        let stderr = stderr_of(&mut child);
        assert_eq!(status.code(), Some(128), "-U {store}: {stderr}");
        let got = std::fs::read(&out).unwrap();
        assert!(
            got == bytes,
            "-U {store}: {} of {} bytes: {stderr}",
            got.len(),
            bytes.len()
        );
        let objects = parse_ndjson(stderr.as_bytes());
        let end = objects.last().unwrap();
        assert_eq!(end["status"], 128);
        assert_eq!(end["stall"]["side"], "input", "{stderr}");
        assert_eq!(end["bytes"], 100_000, "{stderr}");
    }
}

/// The man page: the transfer ends "up to one interval after DURATION". With `-i 2` and a
/// 1 s timeout the watchdog saw the last movement only at the first update (2 s) and fired
/// at the second (4 s).
#[test]
fn the_watchdog_fires_within_one_interval_after_the_timeout() {
    let _cores = crate::util::cores_free();
    let mut child = crate::util::rpv_on_time(&["-q", "-i", "2", "--stall-timeout", "1"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut feed = child.stdin.take().unwrap();
    feed.write_all(&data(100_000, 52)).unwrap();
    let last_byte = Instant::now();
    let status = wait_within(&mut child, PATIENCE, "-i 2, stalled input");
    let took = last_byte.elapsed();
    drop(feed);
    assert_eq!(status.code(), Some(128));
    assert!(
        took >= Duration::from_secs(1) && took <= Duration::from_secs(3),
        "the watchdog fired {took:?} after the last byte (timeout 1 s, interval 2 s)"
    );
}

/// A `--tee` FIFO whose reader never reads holds the transfer: the message and `--json`
/// name that copy and its reader, not "waiting to write output".
#[test]
fn a_stalled_tee_copy_is_named_with_its_reader() {
    let dir = Dir::new();
    let fifo = dir.path("copy.fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let input = dir.file("in", &data(4 << 20, 53));
    let mut reader: Child = Command::new("sh")
        .arg("-c")
        .arg(format!("exec sleep 30 < {}", s(&fifo)))
        .spawn()
        .unwrap();
    let mut child = rpv(&[
        "--json",
        "-q",
        "-i",
        "0.1",
        "--stall-timeout",
        "1",
        "--tee",
        s(&fifo),
        s(&input),
    ])
    .stdin(Stdio::null())
    .stdout(File::create(dir.path("out")).unwrap())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let status = wait_within(&mut child, PATIENCE, "--tee FIFO, stalled");
    let stderr = stderr_of(&mut child);
    let reader_pid = reader.id();
    let _ = reader.kill();
    let _ = reader.wait();
    assert_eq!(status.code(), Some(128), "{stderr}");
    let objects = parse_ndjson(stderr.as_bytes());
    let end = objects.last().unwrap();
    assert_eq!(end["stall"]["side"], "output", "{stderr}");
    assert_eq!(end["stall"]["tee"], s(&fifo), "{stderr}");
    assert_eq!(end["stall"]["pid"], reader_pid, "{stderr}");
    assert_eq!(end["stall"]["command"], "sleep 30", "{stderr}");
    assert_eq!(
        message(&objects, "no data moved")["text"],
        format!(
            "no data moved for 1s (--stall-timeout): waiting to write the --tee copy {} to \
             PID {reader_pid} (sleep 30)",
            s(&fifo)
        )
    );
}

/// The state letter of process `pid` (`T` when stopped).
fn state(pid: u32) -> char {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|t| t[t.rfind(')')? + 2..].chars().next())
        .unwrap_or('?')
}

/// `-L` after a stop from outside (SIGSTOP, as a job controller or a debugger sends it) or
/// Ctrl-Z (SIGTSTP), then SIGCONT: the man page says the limit holds at every moment and no
/// burst follows a pause. The bound: at every progress report after the resume, what moved
/// is at most the rate times the time rpv ran (from before it started, less the stop as
/// measured here: generous to rpv by its start-up time). Before, a SIGSTOP let a second's
/// worth through at once (taken for a late wakeup) and Ctrl-Z a tenth of a second's worth.
#[test]
fn the_rate_limit_lets_no_burst_through_after_a_stop() {
    let _cores = crate::util::cores_free();
    use std::io::BufRead;
    const RATE: f64 = 1_048_576.0;
    let dir = Dir::new();
    let input = dir.file("in", &data(12 << 20, 54));
    for stop in [libc::SIGSTOP, libc::SIGTSTP] {
        let spawned = Instant::now();
        let mut child = crate::util::rpv_on_time(&["--json", "-i", "0.05", "-L", "1M", s(&input)])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        // Each progress report's bytes, stamped when it arrives.
        let (tx, rx) = std::sync::mpsc::channel::<(Instant, u64)>();
        let stderr = child.stderr.take().unwrap();
        let reader = std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                let v: serde_json::Value = serde_json::from_str(&line).unwrap();
                if v["type"] == "progress" && v["meter"] == "transfer" {
                    let _ = tx.send((Instant::now(), v["bytes"].as_u64().unwrap()));
                }
            }
        });
        let next = |what: &str| {
            rx.recv_timeout(Duration::from_secs_f64(PATIENCE))
                .unwrap_or_else(|_| panic!("{what}: no progress report"))
        };
        while next("before the stop").1 < 400_000 {}
        let stopped_at = Instant::now();
        kill(pid, stop);
        wait_for(PATIENCE, "rpv stops", || state(pid) == 'T');
        // Stopped for long enough that a late-wakeup credit would be a full second's worth.
        crate::util::pause(Duration::from_secs(2));
        let continued_at = Instant::now();
        kill(pid, libc::SIGCONT);
        let stopped_for = continued_at - stopped_at;
        // Reports queued while stopped came before the resume: skip them.
        let mut checked = 0;
        loop {
            let (at, bytes) = next("after the resume");
            if at < continued_at {
                continue;
            }
            let ran = (at - spawned).saturating_sub(stopped_for).as_secs_f64();
            assert!(
                bytes as f64 <= RATE * ran,
                "signal {stop}: {bytes} bytes after {ran:.3} s of running (limit 1 MiB/s): a \
                 burst after the resume"
            );
            checked += 1;
            if at - continued_at > Duration::from_millis(800) && checked >= 5 {
                break;
            }
        }
        kill(pid, libc::SIGINT);
        wait_within(&mut child, PATIENCE, "-L, interrupted");
        drop(rx);
        reader.join().unwrap();
    }
}

/// `-M in` whose command stops reading: the stall names it as the side rpv waits on
/// (`waiting for PID N (…) to read its input`), and it is ended.
#[test]
fn a_stall_with_m_in_names_the_command_that_does_not_read() {
    let dir = Dir::new();
    let pid_file = dir.path("pid");
    let script = format!(
        "exec 2>/dev/null; echo $$ > {}; exec sleep 30",
        s(&pid_file)
    );
    let input = dir.file("in", &data(4 << 20, 55));
    let mut child = rpv(&[
        "--json",
        "-q",
        "-i",
        "0.1",
        "--stall-timeout",
        "1",
        "-M",
        "in",
        "--",
        "sh",
        "-c",
        &script,
    ])
    .stdin(File::open(&input).unwrap())
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let command = process(pid_in(&pid_file));
    let _leftovers = Leftovers(vec![command]);
    let status = wait_within(&mut child, PATIENCE, "-M in, stalled");
    let stderr = stderr_of(&mut child);
    assert_eq!(status.code(), Some(128), "{stderr}");
    let objects = parse_ndjson(stderr.as_bytes());
    let end = objects.last().unwrap();
    let text = shown_command(&script);
    assert_eq!(end["stall"]["side"], "output", "{stderr}");
    assert_eq!(end["stall"]["pid"], command.0, "{stderr}");
    assert_eq!(end["stall"]["command"], text.as_str(), "{stderr}");
    assert_eq!(
        message(&objects, "no data moved")["text"],
        format!(
            "no data moved for 1s (--stall-timeout): waiting for PID {} ({text}) to read its \
             input",
            command.0
        )
    );
    gone_within(PATIENCE, &[command], "the command ends with rpv");
}

/// `sh -c 'SCRIPT'` as rpv shows a command: cut to 80 characters.
fn shown_command(script: &str) -> String {
    let command = format!("sh -c '{script}'");
    if command.chars().count() > 80 {
        format!("{}...", command.chars().take(77).collect::<String>())
    } else {
        command
    }
}
