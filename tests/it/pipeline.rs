//! `--pipeline=PID` (beyond pv): real shell pipelines watched from one of their processes.
//! Each pipeline runs for a few seconds in its own process group and is then stopped; the
//! watcher must end by itself once every stage has ended.

use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::util::{err, rpv, wait_within};

/// Pipelines that keep CPUs busy run one at a time (and niced), so they neither disturb
/// each other nor the timing-sensitive tests running beside them.
static BUSY: Mutex<()> = Mutex::new(());

/// Columns of the command with `-w 100` (the width the other columns leave: rows never use
/// the terminal's last column).
const COMMAND: usize = 30;

/// A shell pipeline in its own process group.
struct Pipeline {
    shell: Child,
}

impl Pipeline {
    fn start(script: &str) -> Pipeline {
        use std::os::unix::process::CommandExt;
        let shell = Command::new("nice")
            .args(["-n", "5", "sh", "-c", script])
            .env("RPV", env!("CARGO_BIN_EXE_rpv"))
            .env_remove("RPV_TEST_PATH")
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn sh");
        Pipeline { shell }
    }

    /// The PID of the process of the pipeline running `comm` (waits for it to start).
    fn find(&self, comm: &str) -> u32 {
        let start = Instant::now();
        loop {
            if let Some(pid) = descendants(self.shell.id())
                .into_iter()
                .find(|&p| self::comm(p).as_deref() == Some(comm))
            {
                return pid;
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "{comm} never started"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn stop(&mut self) {
        let group = format!("-{}", self.shell.id());
        let _ = Command::new("kill")
            .args(["-TERM", "--", &group])
            .stderr(Stdio::null())
            .status();
        let _ = self.shell.wait();
    }
}

impl Drop for Pipeline {
    fn drop(&mut self) {
        self.stop();
    }
}

fn running_as_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

fn comm(pid: u32) -> Option<String> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    Some(text.trim_end().to_string())
}

fn parent(pid: u32) -> Option<u32> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &text[text.rfind(')')? + 2..];
    after.split(' ').nth(1)?.parse().ok()
}

/// Every process below `root`.
fn descendants(root: u32) -> Vec<u32> {
    let mut found = vec![root];
    let mut all: Vec<u32> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    all.sort_unstable();
    let mut grew = true;
    while grew {
        grew = false;
        for &pid in &all {
            if !found.contains(&pid) && parent(pid).is_some_and(|p| found.contains(&p)) {
                found.push(pid);
                grew = true;
            }
        }
    }
    found.retain(|&p| p != root);
    found
}

/// A row of the view, read back from the screen.
#[derive(Debug, Clone)]
struct Row {
    pid: u32,
    command: String,
    state: String,
    rate_in: String,
    rate_out: String,
    marked: bool,
}

fn parse_row(line: &str) -> Option<Row> {
    let chars: Vec<char> = line.chars().collect();
    let field = |from: usize, len: usize| -> String {
        chars
            .iter()
            .skip(from)
            .take(len)
            .collect::<String>()
            .trim()
            .to_string()
    };
    Some(Row {
        pid: field(0, 7).parse().ok()?,
        command: field(8, COMMAND),
        state: field(8 + COMMAND + 6, 13),
        rate_in: field(8 + COMMAND + 20, 9),
        rate_out: field(8 + COMMAND + 30, 9),
        marked: line.trim_end().ends_with("bottleneck"),
    })
}

/// Every frame drawn (rows only), in order.
fn frames(stderr: &str) -> Vec<Vec<Row>> {
    stderr
        .split("\x1b[A")
        .filter(|chunk| chunk.contains("    PID "))
        .map(|chunk| {
            chunk
                .split('\n')
                .map(|l| l.trim_matches(['\r', '\n']))
                .filter_map(parse_row)
                .collect()
        })
        .collect()
}

/// The last frame drawn while no stage had ended.
fn last_live_frame(frames: &[Vec<Row>]) -> Vec<Row> {
    frames
        .iter()
        .rev()
        .find(|f| !f.is_empty() && f.iter().all(|r| r.state != "ended"))
        .cloned()
        .unwrap_or_else(|| panic!("no live frame in {frames:?}"))
}

fn watcher(pid: u32, extra: &[&str]) -> Child {
    let target = format!("--pipeline={pid}");
    let mut args = vec![target.as_str(), "-f", "-i", "0.2", "-w", "100"];
    args.extend_from_slice(extra);
    rpv(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn rpv")
}

/// Watches `pipeline` from its process `start` for `secs` seconds, stops the pipeline, and
/// returns the watcher's stderr once it has ended by itself (with status 0).
fn watch_to_the_end(pipeline: &mut Pipeline, start: u32, secs: f64) -> String {
    let mut child = watcher(start, &[]);
    std::thread::sleep(Duration::from_secs_f64(secs));
    pipeline.stop();
    let status = wait_within(&mut child, 10.0, "the watcher after the pipeline ended");
    let text = crate::util::stderr_of(&mut child);
    assert_eq!(status.code(), Some(0), "{text}");
    text
}

/// Watches `pipeline` from its process `start` for `secs` seconds and interrupts the
/// watcher (status 32) while the pipeline still runs: its last frame is a live one.
fn watch_for(start: u32, secs: f64) -> String {
    let mut child = watcher(start, &[]);
    std::thread::sleep(Duration::from_secs_f64(secs));
    interrupt(&mut child)
}

/// Ctrl-C: the watcher ends with status 32; returns its stderr.
fn interrupt(child: &mut Child) -> String {
    Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let status = wait_within(child, 10.0, "the watcher after Ctrl-C");
    let text = crate::util::stderr_of(child);
    assert_eq!(status.code(), Some(32), "{text}");
    text
}

/// The bottleneck of `script` is the stage running `comm`, with a command line starting
/// with `command`: marked in the last live frame and named first by the summary.
#[track_caller]
fn bottleneck_is(script: &str, comm: &str, command: &str) {
    let _busy = BUSY.lock().unwrap_or_else(|e| e.into_inner());
    let pipeline = Pipeline::start(script);
    let pid = pipeline.find(comm);
    let text = watch_for(pid, 4.0);
    let frame = last_live_frame(&frames(&text));
    let marked: Vec<&Row> = frame.iter().filter(|r| r.marked).collect();
    assert_eq!(marked.len(), 1, "{frame:?}\n{text}");
    assert!(
        marked[0].command.starts_with(command),
        "{command} expected as the bottleneck: {frame:?}\n{text}"
    );
    let summary = text.lines().last().unwrap_or_default();
    assert!(
        summary.starts_with(&format!("bottleneck: {command}")) && summary.contains("% of the time"),
        "{summary:?}\n{text}"
    );
}

#[test]
fn cpu_bound_middle_stage() {
    bottleneck_is(
        "cat /dev/zero | gzip -9 | cat > /dev/null",
        "gzip",
        "gzip -9",
    );
}

#[test]
fn rate_limited_rpv() {
    // A low limit, so that even a consumer starved of CPU by a busy machine keeps up.
    bottleneck_is(
        "head -c 1G /dev/zero | \"$RPV\" -q -L 2M | sha256sum > /dev/null",
        "sha256sum",
        "rpv -q -L 2M",
    );
}

#[test]
fn consumer_sleeping_between_reads() {
    bottleneck_is(
        "cat /dev/zero | cat | \
         perl -e 'while (sysread(STDIN, $b, 65536)) { select(undef, undef, undef, 0.02) }'",
        "cat",
        "perl -e",
    );
}

#[test]
fn hashing_consumer() {
    bottleneck_is("yes | head -c 8G | sha256sum", "head", "sha256sum");
}

/// A rate as shown (`1.00MiB/s`, `1023KiB/s`) in bytes per second.
fn rate(text: &str) -> f64 {
    let units = [
        ("KiB/s", 1024.0),
        ("MiB/s", 1048576.0),
        ("GiB/s", 1073741824.0),
        ("B/s", 1.0),
    ];
    let (unit, scale) = units
        .iter()
        .find(|(u, _)| text.ends_with(u))
        .unwrap_or_else(|| panic!("not a rate: {text:?}"));
    text.trim_end_matches(unit).trim().parse::<f64>().unwrap() * scale
}

#[test]
fn splice_users_rates_come_from_rpv_itself_and_from_neighbours() {
    // pv and rpv move the data with splice, which /proc/PID/io does not count. rpv's row
    // has its own count (from its control channel); pv's rows get their neighbours'. (At
    // 1 MiB/s rpv would switch to read/write for small pieces: splice is forced.)
    if !std::path::Path::new("/usr/bin/pv").exists() {
        eprintln!("skipped: needs Debian's pv (/usr/bin/pv)");
        return;
    }
    let pipeline = Pipeline::start(
        "cat /dev/zero | /usr/bin/pv -q | RPV_TEST_PATH=splice \"$RPV\" -q -L 1M | \
         /usr/bin/pv -q | cat > /dev/null",
    );
    let pid = pipeline.find("cat");
    let text = watch_for(pid, 3.0);
    let frame = last_live_frame(&frames(&text));
    let commands: Vec<&str> = frame.iter().map(|r| r.command.as_str()).collect();
    assert_eq!(
        commands,
        ["cat /dev/zero", "pv -q", "rpv -q -L 1M", "pv -q", "cat"]
    );
    for row in &frame[1..4] {
        for shown in [&row.rate_in, &row.rate_out] {
            let value = rate(shown);
            assert!((0.8e6..1.3e6).contains(&value), "{row:?}\n{text}");
        }
    }
}

#[test]
fn found_from_any_stage_and_from_the_shell() {
    let mut pipeline = Pipeline::start("cat /dev/zero | \"$RPV\" -q -L 5M | cat > /dev/null");
    let first = pipeline.find("cat");
    let rpv_pid = pipeline.find("rpv");
    let shell = pipeline.shell.id();
    let started = Instant::now();
    let last = loop {
        let second = descendants(shell)
            .into_iter()
            .find(|&p| comm(p).as_deref() == Some("cat") && p != first);
        if let Some(pid) = second {
            break pid;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "no second cat");
        std::thread::sleep(Duration::from_millis(10));
    };
    let expected = ["cat /dev/zero", "rpv -q -L 5M", "cat"];
    for start in [first, rpv_pid, last, shell] {
        let text = watch_for(start, 0.8);
        let frame = last_live_frame(&frames(&text));
        let commands: Vec<&str> = frame.iter().map(|r| r.command.as_str()).collect();
        assert_eq!(commands, expected, "from {start}");
        let pids: Vec<u32> = frame.iter().map(|r| r.pid).collect();
        assert_eq!(pids[1], rpv_pid);
    }
    pipeline.stop();
}

#[test]
fn stages_end_one_by_one_and_the_watch_ends_with_them() {
    let mut pipeline = Pipeline::start("sleep 1 | sleep 2 | sleep 3");
    let pid = pipeline.find("sleep");
    let mut child = watcher(pid, &[]);
    let status = wait_within(&mut child, 15.0, "the watcher");
    let text = crate::util::stderr_of(&mut child);
    assert_eq!(status.code(), Some(0), "{text}");
    let frames = frames(&text);
    let states = |f: &Vec<Row>| f.iter().map(|r| r.state == "ended").collect::<Vec<_>>();
    let seen: Vec<Vec<bool>> = frames.iter().map(states).collect();
    // Ended stages keep their rows, in place, until the last one ends.
    assert!(frames.iter().all(|f| f.len() == 3), "{frames:?}");
    assert!(seen.contains(&vec![true, false, false]), "{seen:?}");
    assert!(seen.contains(&vec![true, true, false]), "{seen:?}");
    assert_eq!(seen.last(), Some(&vec![true, true, true]));
    let commands: Vec<&str> = frames[0].iter().map(|r| r.command.as_str()).collect();
    assert_eq!(commands, ["sleep 1", "sleep 2", "sleep 3"]);
    pipeline.stop();
}

#[test]
fn a_subshell_is_not_a_stage() {
    let _busy = BUSY.lock().unwrap_or_else(|e| e.into_inner());
    // The subshell forks gzip (it has a command after it) and waits for it, holding both
    // pipes all the while.
    let mut pipeline =
        Pipeline::start("cat /dev/zero | (gzip -1; true) | \"$RPV\" -q -L 2M > /dev/null");
    let gzip = pipeline.find("gzip");
    let subshell = parent(gzip).unwrap();
    assert_eq!(comm(subshell).as_deref(), Some("sh"));
    let text = watch_to_the_end(&mut pipeline, subshell, 2.0);
    let frame = last_live_frame(&frames(&text));
    let commands: Vec<&str> = frame.iter().map(|r| r.command.as_str()).collect();
    assert_eq!(commands, ["cat /dev/zero", "gzip -1", "rpv -q -L 2M"]);
    assert_eq!(frame[1].pid, gzip);
}

#[test]
fn a_compound_stage_shows_the_process_moving_data() {
    // `{ a; b; }` runs one command after the other: the row follows them.
    let pipeline = Pipeline::start(
        "{ sleep 1; head -c 50M /dev/zero; sleep 30; } | \"$RPV\" -q -L 10M > /dev/null",
    );
    let rpv_pid = pipeline.find("rpv");
    let text = watch_for(rpv_pid, 3.0);
    let firsts: Vec<String> = frames(&text)
        .iter()
        .filter_map(|f| f.first().map(|r| r.command.clone()))
        .collect();
    let at = |c: &str| firsts.iter().position(|f| f == c);
    let (sleep, head) = (at("sleep 1"), at("head -c 50M /dev/zero"));
    assert!(
        sleep.is_some() && head.is_some() && sleep < head,
        "{firsts:?}"
    );
    assert!(frames(&text).iter().all(|f| f.len() == 2));
}

#[test]
fn another_users_stage() {
    let _busy = BUSY.lock().unwrap_or_else(|e| e.into_inner());
    if !running_as_root() {
        return;
    }
    let nobody = ["--reuid=65534", "--regid=65534", "--clear-groups"].join(" ");
    let mut pipeline = Pipeline::start(&format!(
        "cat /dev/zero | setpriv {nobody} \"$RPV\" -q -L 4M | cat > /dev/null"
    ));
    let theirs = pipeline.find("rpv");
    // Watched by root: every stage is readable.
    let mut child = watcher(theirs, &[]);
    std::thread::sleep(Duration::from_millis(1500));
    // Watched by nobody: its own stage is readable, root's are not permitted, shown in
    // their places, and nothing fails or hangs.
    let target = format!("--pipeline={theirs}");
    let mut as_nobody = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_rpv"))
        .args([target.as_str(), "-f", "-i", "0.2", "-w", "100"])
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    pipeline.stop();
    for (who, child) in [("root", &mut child), ("nobody", &mut as_nobody)] {
        let status = wait_within(child, 10.0, who);
        let text = crate::util::stderr_of(child);
        assert_eq!(status.code(), Some(0), "{who}: {text}");
        let frame = last_live_frame(&frames(&text));
        let rows: Vec<(&str, &str)> = frame
            .iter()
            .map(|r| (r.command.as_str(), r.state.as_str()))
            .collect();
        assert_eq!(rows.len(), 3, "{who}: {rows:?}");
        assert_eq!(rows[1].0, "rpv -q -L 4M", "{who}: {rows:?}");
        assert_ne!(rows[1].1, "not permitted", "{who}: {rows:?}");
        assert_eq!(rows[0].0, "cat /dev/zero", "{who}: {rows:?}");
        assert_eq!(rows[2].0, "cat", "{who}: {rows:?}");
        for outer in [rows[0].1, rows[2].1] {
            assert_eq!(outer == "not permitted", who == "nobody", "{who}: {rows:?}");
        }
    }
}

#[test]
fn quiet_shows_only_the_summary_with_stats() {
    let mut pipeline = Pipeline::start("cat /dev/zero | \"$RPV\" -q -L 2M > /dev/null");
    let pid = pipeline.find("rpv");
    let mut quiet = watcher(pid, &["-q"]);
    let mut stats = watcher(pid, &["-q", "-v"]);
    std::thread::sleep(Duration::from_millis(2500));
    pipeline.stop();
    wait_within(&mut quiet, 10.0, "-q");
    wait_within(&mut stats, 10.0, "-q -v");
    assert_eq!(crate::util::stderr_of(&mut quiet), "");
    let text = crate::util::stderr_of(&mut stats);
    assert!(
        text.starts_with("bottleneck: rpv -q -L 2M (") && text.ends_with("% of the time)\n"),
        "{text:?}"
    );
    assert_eq!(text.lines().count(), 1);
}

#[test]
fn errors() {
    let out = rpv(&["--pipeline=999999999"]).output().unwrap();
    assert_eq!(
        err(&out),
        "rpv: --pipeline: pid 999999999: No such process\n"
    );
    assert_eq!(out.status.code(), Some(2));
    let mut sleeper = Command::new("sleep")
        .arg("5")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let out = rpv(&[&format!("--pipeline={}", sleeper.id())])
        .output()
        .unwrap();
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    assert_eq!(
        err(&out),
        format!(
            "rpv: --pipeline: pid {}: not in a pipeline (no pipe on its standard input or \
             output)\n",
            sleeper.id()
        )
    );
    assert_eq!(out.status.code(), Some(2));
    let out = rpv(&["--pipeline=x"]).output().unwrap();
    assert_eq!(err(&out), "rpv: --pipeline: x: invalid process ID\n");
    assert_eq!(out.status.code(), Some(64));
}

/// `--pipeline` without a PID, inside a pipeline: the data goes through unchanged, and the
/// view shows every stage, rpv's own included (counted by rpv itself), with a summary.
#[test]
fn inline_view_moves_the_data_and_shows_its_own_pipeline() {
    let _busy = BUSY.lock().unwrap_or_else(|e| e.into_inner());
    let dir = crate::util::Dir::new();
    let out = dir.path("out");
    let log = dir.path("log");
    let script = format!(
        "head -c 64M /dev/zero | \"$RPV\" --pipeline -f -i 0.2 -w 100 -L 16M 2>{} | gzip -1 > {}",
        crate::util::s(&log),
        crate::util::s(&out)
    );
    let status = Command::new("sh")
        .arg("-c")
        .arg(&script)
        .env("RPV", env!("CARGO_BIN_EXE_rpv"))
        .status()
        .unwrap();
    assert!(status.success());
    let gunzipped = Command::new("gzip")
        .args(["-dc", crate::util::s(&out)])
        .output()
        .unwrap();
    assert_eq!(gunzipped.stdout.len(), 64 << 20, "every byte went through");
    assert!(gunzipped.stdout.iter().all(|&b| b == 0));
    let text = std::fs::read_to_string(&log).unwrap();
    let frame = last_live_frame(&frames(&text));
    let commands: Vec<&str> = frame.iter().map(|r| r.command.as_str()).collect();
    assert!(commands[0].starts_with("head -c 64M"), "{frame:?}");
    assert!(commands[1].starts_with("rpv --pipeline"), "{frame:?}");
    assert!(commands[2].starts_with("gzip -1"), "{frame:?}");
    let own = &frame[1];
    assert!(own.rate_out.contains("MiB/s"), "rpv's own rate: {own:?}");
    // The rate-limited rpv holds the pipeline back.
    assert!(own.marked, "{frame:?}\n{text}");
    let summary = text.lines().last().unwrap_or_default();
    assert!(
        summary.starts_with("bottleneck: rpv --pipeline"),
        "{summary:?}"
    );
}

/// `%{bottleneck}`: an rpv between a fast producer and a slow consumer waits for its
/// output; between a slow producer and a fast consumer it waits for its input.
#[test]
fn bottleneck_sequence_names_the_side_an_rpv_waits_on() {
    let run = |script: &str| -> Vec<String> {
        let out = Command::new("sh")
            .arg("-c")
            .arg(script)
            .env("RPV", env!("CARGO_BIN_EXE_rpv"))
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stderr)
            .split('\r')
            .map(|l| l.trim().to_string())
            .filter(|l| !l.is_empty())
            .collect()
    };
    let slow_reader = run(
        "head -c 16M /dev/zero | \"$RPV\" -f -i 0.2 -F '%{bottleneck}' | \
         \"$RPV\" -q -L 8M > /dev/null",
    );
    assert!(
        slow_reader
            .iter()
            .filter(|l| *l == "waits for output")
            .count()
            >= 3,
        "{slow_reader:?}"
    );
    let slow_writer = run(
        "head -c 2M /dev/zero | \"$RPV\" -q -L 1M | \"$RPV\" -f -i 0.2 -F '%{bottleneck}' \
         > /dev/null",
    );
    assert!(
        slow_writer
            .iter()
            .filter(|l| *l == "waits for input")
            .count()
            >= 3,
        "{slow_writer:?}"
    );
}
