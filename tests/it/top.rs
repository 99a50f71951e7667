//! `--top` through the binary, with flows the tests start themselves: a Python file
//! reader written for the test, dd fed at a limited rate, a pipeline with gzip, an rpv -L
//! and a pv -L, a Python socket sender to a slow local reader. The frames without a
//! terminal, `--json` against the schema, the metrics file through a real node_exporter,
//! and the view on terminals of several sizes (tmux) with its keys and resizes.
//!
//! Every test's flows are children of one shell of its own, and its rpv watches that
//! shell's tree only (`--top=PID`): the tests hold beside each other and beside anything
//! else the machine moves. The shell's process group is killed when the test ends; tests
//! wait for what they expect with deadlines, never for a fixed time.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::util::{data, rpv, s, Dir};

/// How long any awaited frame may take (a loaded 2-core machine included).
const DEADLINE: Duration = Duration::from_secs(60);

/// Reads a file slowly: `reader.py FILE CHUNK`.
const READER: &str = "import sys, time\n\
with open(sys.argv[1], 'rb', buffering=0) as f:\n\
\x20   while f.read(int(sys.argv[2])):\n\
\x20       time.sleep(0.05)\n\
time.sleep(3600)\n";

/// `sock.py serve PORTFILE` (reads slowly) or `sock.py send PORT` (sends as fast as the
/// reader takes).
const SOCKETS: &str = "import os, socket, sys, time\n\
if sys.argv[1] == 'serve':\n\
\x20   srv = socket.socket()\n\
\x20   srv.bind(('127.0.0.1', 0))\n\
\x20   srv.listen(1)\n\
\x20   open(sys.argv[2] + '.tmp', 'w').write(str(srv.getsockname()[1]))\n\
\x20   os.rename(sys.argv[2] + '.tmp', sys.argv[2])\n\
\x20   c, _ = srv.accept()\n\
\x20   while c.recv(8192):\n\
\x20       time.sleep(0.02)\n\
else:\n\
\x20   s = socket.create_connection(('127.0.0.1', int(sys.argv[2])))\n\
\x20   block = b'x' * 65536\n\
\x20   while True:\n\
\x20       s.sendall(block)\n";

/// Writes about 1 MB/s of bytes that do not compress to nothing.
const PRODUCER: &str = "import os, sys, time\n\
while True:\n\
\x20   sys.stdout.buffer.write(os.urandom(65536))\n\
\x20   sys.stdout.buffer.flush()\n\
\x20   time.sleep(0.05)\n";

/// `slowly.sh WEIGHT CPU NICE PROGRAM ARGS...` (see [`Flows::slowly`]): its session's
/// group at nice WEIGHT (not when refused: not root), a busy loop on CPU at nice 10, then
/// the program on CPU at nice NICE.
const SLOWLY: &str = "echo \"$1\" > /proc/$$/autogroup 2>/dev/null\n\
taskset -c \"$2\" nice -n 10 sh -c 'while :; do :; done' &\n\
cpu=$2 nice=$3\n\
shift 3\n\
exec taskset -c \"$cpu\" nice -n \"$nice\" \"$@\"\n";

/// The shell whose children are a test's flows: it runs each line it reads with `sh -c`
/// in the background (its output to the shell's, which goes nowhere) and says its PID.
const ROOT: &str = "while read -r line; do sh -c \"$line\" >&2 & echo $!; done";

/// Processes started for a test, children of one shell in a process group of its own,
/// killed on drop.
struct Flows {
    dir: Dir,
    root: Child,
    lines: ChildStdin,
    pids: BufReader<ChildStdout>,
    /// Sessions of its own started by [`Flows::slowly`], killed with the shell's group.
    sessions: Vec<u32>,
    /// The busy-loop turn of a copy test ([`Flows::copy_turn`]).
    turn: Option<crate::util::Turn>,
}

impl Flows {
    fn new() -> Flows {
        let dir = Dir::new();
        dir.file("reader.py", READER.as_bytes());
        dir.file("sock.py", SOCKETS.as_bytes());
        dir.file("producer.py", PRODUCER.as_bytes());
        dir.file("slowly.sh", SLOWLY.as_bytes());
        let mut root = Command::new("sh")
            .args(["-c", ROOT])
            .current_dir(dir.dir.path())
            .env("RPV", env!("CARGO_BIN_EXE_rpv"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("sh");
        let lines = root.stdin.take().unwrap();
        let pids = BufReader::new(root.stdout.take().unwrap());
        Flows {
            dir,
            root,
            lines,
            pids,
            sessions: Vec::new(),
            turn: None,
        }
    }

    /// `--top=PID` of the test's shell: its flows and nothing else of the machine.
    fn top(&self) -> String {
        format!("--top={}", self.root.id())
    }

    /// Runs `script` (one line) with `sh -c` in the test's directory (`$RPV` is rpv), a
    /// child of the test's shell; its PID.
    fn start(&mut self, script: &str) -> u32 {
        assert!(!script.contains('\n'), "one line: {script}");
        writeln!(self.lines, "{script}").unwrap();
        let mut pid = String::new();
        self.pids.read_line(&mut pid).unwrap();
        pid.trim()
            .parse()
            .unwrap_or_else(|_| panic!("a PID: {pid:?}"))
    }

    /// A file of `len` bytes.
    fn file(&self, name: &str, len: usize) -> String {
        s(&self.dir.file(name, &data(len, 9))).to_string()
    }

    /// The slow reader of `file`, `chunk` bytes every 50 ms (`exec`: the PID is the
    /// reader's).
    fn reader(&mut self, file: &str, chunk: usize) -> u32 {
        self.start(&format!("exec python3 reader.py {file} {chunk}"))
    }

    /// A file of `len` zero bytes at `path` (data, not a hole), on the disk when this
    /// returns, written by dd under the idle policy rather than by this process (2 GiB
    /// still to write back beside a copy's made the kernel hold the copy's writes back for
    /// a second, in a fresh-clone CI run). Only in a copy test's turn
    /// ([`Flows::copy_turn`]): the idle policy still let dd run at 99 % of a core beside
    /// a doctor's test that names the busiest program of the machine, which must be its
    /// own loop (`pipeline::short_of_cpu_names_the_busiest_program_outside_the_pipeline`
    /// named dd).
    fn zeros(path: &std::path::Path, len: u64) {
        let wrote = Command::new("chrt")
            .args([
                "--idle",
                "0",
                "dd",
                "if=/dev/zero",
                "bs=1M",
                "status=none",
                "conv=fsync",
            ])
            .arg(format!("count={}", len >> 20))
            .arg(format!("of={}", s(path)))
            .status()
            .unwrap();
        assert!(wrote.success(), "dd: {wrote}");
    }

    /// A directory in memory (`/dev/shm`) with room for `len` bytes and 1 GiB to spare,
    /// if the machine has one: a copy's files there leave the disk nothing to write back
    /// (the copy's time is its CPU's), which slowed the tests writing files beside it.
    fn in_memory(len: u64) -> Option<tempfile::TempDir> {
        let dir = tempfile::tempdir_in("/dev/shm").ok()?;
        let room = rustix::fs::statvfs(dir.path()).ok()?;
        (room.f_bavail.saturating_mul(room.f_frsize) >= len + (1 << 30)).then_some(dir)
    }

    /// A copy's two paths, `big` (`len` zero bytes, [`Flows::zeros`]) and `copy` (not
    /// made), in memory where the machine has room for both ([`Flows::in_memory`]), else
    /// in the test's directory; with the directory in memory, which lives as long as it.
    /// Takes the copy test's turn first ([`Flows::copy_turn`]).
    fn copy_files(
        &mut self,
        len: u64,
    ) -> (
        Option<tempfile::TempDir>,
        std::path::PathBuf,
        std::path::PathBuf,
    ) {
        self.copy_turn();
        let shm = Flows::in_memory(2 * len);
        let at = |name: &str| match &shm {
            Some(d) => d.path().join(name),
            None => self.dir.path(name),
        };
        let (big, copy) = (at("big"), at("copy"));
        Flows::zeros(&big, len);
        (shm, big, copy)
    }

    /// Starts `command` (a program and its arguments, one line) on the last CPU at nice
    /// `nice`, beside a busy loop there at nice 10, the two in a session of their own
    /// whose scheduling group has the suite's weight (nice -10, [`crate::util::SUITE_NICE`]):
    /// the copy gets a steady share of that CPU (about a quarter at nice 15, a tenth at
    /// nice 19, of what the group gets: half of the CPU beside the suite's own work there,
    /// most of it beside other sessions at ordinary priority), slow enough to watch
    /// whatever the disk and whatever else the machine runs. In the suite's own group, the
    /// other tests' work (at nice 0) on that CPU took the copy's share for a second and
    /// more (no progress between two looks), and made a copy that takes 10 s alone take
    /// 70 s. Still a child of the test's shell (`setsid` makes the session, not a new
    /// process), so `--top=ROOT` follows it; the session is killed with the test's shell.
    /// It runs a busy loop: one such test at a time, never beside the doctor's busy-loop
    /// tests nor a timing test ([`Flows::copy_turn`]). Its PID (the command's).
    fn slowly(&mut self, nice: i32, command: &str) -> u32 {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let cpu = cpus - 1;
        self.copy_turn();
        let weight = crate::util::SUITE_NICE;
        let pid = self.start(&format!(
            "exec setsid sh slowly.sh {weight} {cpu} {nice} {command}"
        ));
        self.sessions.push(pid);
        pid
    }

    /// Takes the busy-loop turn ([`crate::util::busy_loops`]) for a test that slows a copy
    /// down, unless it has it: before it writes the copy's files ([`Flows::zeros`]) and
    /// runs the copy and its loop. Not beside the doctor's busy-loop tests: a turn of its
    /// own, which let a copy and its loop run beside them, made `pipeline::hashing_consumer`
    /// find its `head` starved rather than `sha256sum` the bottleneck.
    fn copy_turn(&mut self) {
        if self.turn.is_none() {
            self.turn = Some(crate::util::busy_loops());
        }
    }

    /// `rpv --top=ROOT --json -i 0.5` once it has started. As root, rpv and this thread
    /// (and the thread reading rpv's output, which it starts) run under the real-time
    /// round-robin policy, so no load beside them delays a row (`util::rpv_on_time`): its
    /// rows can be timed against the clock.
    fn json_watcher(&self) -> Watcher {
        let watcher = Watcher::start(crate::util::rpv_on_time(&[
            &self.top(),
            "--json",
            "-i",
            "0.5",
        ]));
        crate::util::wait_until("rpv --top to start", DEADLINE.as_secs_f64(), || {
            watcher.text.lock().unwrap().contains("\"type\":\"start\"")
        });
        watcher
    }

    /// A socket reader and its sender.
    fn sockets(&mut self) {
        self.start("exec python3 sock.py serve port");
        let port = self.dir.path("port");
        crate::util::wait_until(
            "the socket reader to listen",
            DEADLINE.as_secs_f64(),
            || port.exists(),
        );
        let port = std::fs::read_to_string(port).unwrap();
        self.start(&format!("exec python3 sock.py send {port}"));
    }
}

impl Drop for Flows {
    fn drop(&mut self) {
        let groups = std::iter::once(self.root.id()).chain(self.sessions.iter().copied());
        let _ = Command::new("kill")
            .args(["-KILL", "--"])
            .args(groups.map(|pid| format!("-{pid}")))
            .stderr(Stdio::null())
            .status();
        let _ = self.root.wait();
    }
}

fn signal(pid: u32, name: &str) {
    let _ = Command::new("kill")
        .args([&format!("-{name}"), &pid.to_string()])
        .status();
}

/// An rpv whose standard error is collected as it comes.
struct Watcher {
    child: Child,
    started: Instant,
    text: Arc<Mutex<String>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Watcher {
    fn start(mut cmd: Command) -> Watcher {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let text = Arc::new(Mutex::new(String::new()));
        let mut stderr = child.stderr.take().unwrap();
        let shared = Arc::clone(&text);
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 65536];
            while let Ok(n) = stderr.read(&mut buf) {
                if n == 0 {
                    break;
                }
                shared
                    .lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        Watcher {
            child,
            started: Instant::now(),
            text,
            reader: Some(reader),
        }
    }

    /// The last whole frame (frames end with a blank line).
    fn last_frame(&self) -> String {
        let text = self.text.lock().unwrap().clone();
        let whole = text.rsplit_once("\n\n").map_or("", |(a, _)| a);
        whole.rsplit("\n\n").next().unwrap_or("").to_string()
    }

    /// Waits for a frame `ready` accepts; returns it.
    #[track_caller]
    fn wait_frame(&self, what: &str, ready: impl Fn(&str) -> bool) -> String {
        crate::util::wait_showing(what, DEADLINE.as_secs_f64(), || {
            let frame = self.last_frame();
            if ready(&frame) {
                Ok(frame)
            } else {
                Err(frame)
            }
        })
    }

    /// How many times a second rpv's main thread went to sleep so far (it wakes for the
    /// updates, the pipelines' samples and the rpv instances' answers: a few dozen times
    /// a second at most).
    fn wakes_per_second(&self) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let switches: f64 = status
            .lines()
            .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap();
        switches / self.started.elapsed().as_secs_f64()
    }

    /// Ends rpv with SIGINT and returns everything it wrote.
    fn stop(mut self) -> (std::process::ExitStatus, String) {
        signal(self.child.id(), "INT");
        let status = crate::util::wait_within(&mut self.child, 30.0, "rpv --top");
        self.reader.take().unwrap().join().unwrap();
        let text = self.text.lock().unwrap().clone();
        (status, text)
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The row of a frame that starts with `kind` and contains every one of `parts`.
fn row<'a>(frame: &'a str, kind: &str, parts: &[&str]) -> Option<&'a str> {
    frame
        .lines()
        .find(|l| l.starts_with(kind) && parts.iter().all(|p| l.contains(p)))
}

/// Without a terminal: frames with every kind of flow, each with what it should show;
/// a flow whose process stops shows `stalled` and for how long; one whose process ends
/// leaves the list.
#[test]
fn frames_show_every_kind_of_flow() {
    let mut flows = Flows::new();
    let big = flows.file("big", 64 << 20);
    let reader = flows.reader(&big, 16384);
    flows.start("exec \"$RPV\" -q -L 300k big > /dev/null");
    let pv = Command::new("pv").arg("-V").output().is_ok();
    if pv {
        flows.start("exec pv -q -L 300k big > /dev/null");
    }
    flows.start("head -c 100000000 /dev/zero | \"$RPV\" -q -L 400k | dd of=out bs=64k status=none");
    flows.start("python3 producer.py | gzip -1 | wc -c > /dev/null");
    flows.sockets();
    let watcher = Watcher::start(rpv(&[&flows.top(), "-i", "0.5", "-w", "250"]));
    let dir = s(flows.dir.dir.path()).to_string();
    let reader_parts = ["reader.py", "<- ", &dir, "%"];
    let frame = watcher.wait_frame("every flow", |f| {
        row(f, "file", &reader_parts).is_some()
            && row(f, "file", &["dd of=out", "-> "]).is_some()
            && row(
                f,
                "pipeline",
                &["producer.py", "gzip -1", "wc -c", "bottleneck"],
            )
            .is_some()
            && row(f, "pipeline", &["head -c", "rpv -q -L 400k", "dd of=out"]).is_some()
            && row(f, "rpv", &["rpv -q -L 300k big", "%"]).is_some()
            && (!pv || row(f, "pv", &["pv -q -L 300k big", "%"]).is_some())
            && row(f, "socket", &["sock.py send"]).is_some()
            && row(f, "socket", &["sock.py serve"]).is_some()
    });
    assert!(frame.starts_with("rpv --top: "), "{frame}");
    assert!(frame.lines().nth(1).unwrap().starts_with("KIND"), "{frame}");
    // The reader's row: its rate (16 KiB every 50 ms, at most 320 KiB/s), an ETA.
    let line = row(&frame, "file", &reader_parts).unwrap();
    assert!(line.contains("B/s"), "{line}");
    assert!(line.contains(&reader.to_string()), "its PID: {line}");
    // (By its PID and its command line: another rpv --top on the machine, in a pipeline
    // of a user's, is a flow like any other.)
    let own = watcher.child.id().to_string();
    assert!(
        !frame.lines().skip(1).any(|l| {
            l.split_whitespace().nth(1) == Some(own.as_str()) || l.contains(" -i 0.5 -w 250")
        }),
        "rpv --top is not a flow of its own: {frame}"
    );
    // (It once woke every millisecond, waiting for a control socket --top never opens.)
    let wakes = watcher.wakes_per_second();
    assert!(wakes < 200.0, "{wakes:.0} wake-ups a second");
    signal(reader, "STOP");
    watcher.wait_frame("the stopped reader stalled", |f| {
        row(f, "file", &["reader.py", &dir, "stalled "]).is_some()
    });
    signal(reader, "CONT");
    signal(reader, "KILL");
    watcher.wait_frame("the ended reader gone", |f| {
        // (This test's reader: another test's may be running beside it.)
        f.starts_with("rpv --top") && row(f, "file", &["reader.py", &dir]).is_none()
    });
    let (status, _) = watcher.stop();
    assert_eq!(status.code(), Some(32), "ended by SIGINT like every watch");
}

/// `--top --json`: a `progress` object per flow (meter `flow`) with what it is, every line
/// valid against docs/json.schema.json, one `end`.
#[test]
fn json_objects_per_flow_match_the_schema() {
    let mut flows = Flows::new();
    let big = flows.file("big", 32 << 20);
    flows.reader(&big, 16384);
    flows.start("python3 producer.py | gzip -1 | wc -c > /dev/null");
    let watcher = Watcher::start(rpv(&[&flows.top(), "--json", "-i", "0.5"]));
    crate::util::wait_showing(
        "the file and the pipeline flows",
        DEADLINE.as_secs_f64(),
        || {
            let text = watcher.text.lock().unwrap().clone();
            let file = text.lines().any(|l| {
                l.contains("\"meter\":\"flow\"")
                    && l.contains(&format!("\"file\":\"{big}\""))
                    && !l.contains("\"percent\":null")
            });
            let pipeline = text.lines().any(|l| {
                l.contains("\"kind\":\"pipeline\"") && l.contains("producer.py | gzip -1")
            });
            if file && pipeline {
                Ok(())
            } else {
                Err(text)
            }
        },
    );
    let (status, text) = watcher.stop();
    assert_eq!(status.code(), Some(32));
    let objects = crate::json::parse_ndjson(text.as_bytes());
    assert_eq!(objects[0]["mode"], "top");
    let reader = objects
        .iter()
        .find(|o| o["type"] == "progress" && o["file"] == big.as_str())
        .unwrap();
    assert_eq!(reader["kind"], "file");
    assert_eq!(reader["meter"], "flow");
    assert_eq!(reader["file"], big.as_str());
    assert_eq!(reader["size"], 32 << 20);
    assert_eq!(reader["writes"], false);
    assert!(reader["fd"].is_number(), "{reader}");
    assert!(reader["bytes"].as_u64().unwrap() > 0);
    let pipeline = objects
        .iter()
        .find(|o| {
            o["type"] == "progress"
                && o["kind"] == "pipeline"
                && o["command"]
                    .as_str()
                    .is_some_and(|c| c.contains("producer.py"))
        })
        .unwrap();
    assert!(
        pipeline["command"]
            .as_str()
            .unwrap()
            .contains(" | gzip -1 | "),
        "{pipeline}"
    );
    assert_eq!(objects.last().unwrap()["type"], "end");
}

/// `--top --once`: one plain frame, taken one interval after the first look (so the flows
/// have rates), then status 0; with `--json`, a `start`, a `progress` object per flow
/// (one update) and an `end`. Run again until this test's reader is in the frame (the
/// reader starts moving at its own pace).
#[test]
fn once_prints_one_frame_and_ends() {
    let mut flows = Flows::new();
    let big = flows.file("big", 32 << 20);
    let reader = flows.reader(&big, 16384);
    let ours = |frame: &str| {
        frame.lines().any(|l| {
            l.starts_with("file") && l.contains(&format!(" {reader} ")) && l.contains("B/s")
        })
    };
    let frame =
        crate::util::wait_showing("a frame with the reader", DEADLINE.as_secs_f64(), || {
            let out = rpv(&["--top", "--once", "-i", "0.3", "-w", "200"])
                .stdin(Stdio::null())
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(0), "{out:?}");
            let text = String::from_utf8_lossy(&out.stderr).into_owned();
            assert_eq!(text.matches("rpv --top: ").count(), 1, "one frame: {text}");
            assert!(text.ends_with("\n\n"), "{text:?}");
            if ours(&text) {
                Ok(text)
            } else {
                Err(text)
            }
        });
    assert!(frame.starts_with("rpv --top: "), "{frame}");
    let json =
        crate::util::wait_showing("an object for the reader", DEADLINE.as_secs_f64(), || {
            let out = rpv(&[&flows.top(), "--once", "--json", "-i", "0.3"])
                .stdin(Stdio::null())
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(0), "{out:?}");
            let objects = crate::json::parse_ndjson(&out.stderr);
            let types: Vec<&str> = objects
                .iter()
                .map(|o| o["type"].as_str().unwrap())
                .collect();
            assert_eq!(types.first(), Some(&"start"), "{types:?}");
            assert_eq!(types.last(), Some(&"end"), "{types:?}");
            assert!(
                types[1..types.len() - 1].iter().all(|t| *t == "progress"),
                "{types:?}"
            );
            // One update: each flow once.
            let progress: Vec<_> = objects.iter().filter(|o| o["type"] == "progress").collect();
            let flows: std::collections::HashSet<String> = (progress.iter())
                .map(|o| format!("{} {} {} {}", o["kind"], o["pid"], o["fd"], o["file"]))
                .collect();
            assert_eq!(flows.len(), progress.len(), "one update: {progress:#?}");
            let found = objects.iter().any(|o| {
                o["type"] == "progress" && o["pid"] == reader && o["file"] == big.as_str()
            });
            if found {
                Ok(objects.len())
            } else {
                Err(String::from_utf8_lossy(&out.stderr).into_owned())
            }
        });
    assert!(json >= 3, "{json}");
}

/// A flow whose file name is not UTF-8 (and holds control characters): `--top --json`
/// gives its exact bytes in `file_base64` (valid against the schema), and the screen's
/// frame shows no control character raw.
#[test]
fn a_file_name_that_is_not_utf8_is_exact_in_json() {
    use base64::Engine as _;
    let mut flows = Flows::new();
    let dir = s(flows.dir.dir.path()).to_string();
    // f3_ \xff\xfe ESC[31m: invalid UTF-8 and an escape sequence.
    flows.dir.file(
        "odd.py",
        b"import os, sys, time\n\
name = os.fsencode(sys.argv[1]) + b\"/f3_\\xff\\xfe\\x1b[31m\"\n\
open(name, \"wb\").write(os.urandom(32 << 20))\n\
f = open(name, \"rb\", buffering=0)\n\
while f.read(4096): time.sleep(0.05)\n\
time.sleep(3600)\n",
    );
    let reader = flows.start("exec python3 odd.py \"$PWD\"");
    let top = flows.top();
    let mut exact = dir.as_bytes().to_vec();
    exact.extend_from_slice(b"/f3_\xff\xfe\x1b[31m");
    let found = crate::util::wait_showing("the reader's object", DEADLINE.as_secs_f64(), || {
        let out = rpv(&[&top, "--once", "--json", "-i", "0.3"])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stderr).into_owned();
        let objects = crate::json::parse_ndjson(&out.stderr);
        let ours = |o: &serde_json::Value| {
            o["pid"] == reader
                && o["type"] == "progress"
                && o["file"].as_str().is_some_and(|f| f.contains("/f3_"))
        };
        match objects.into_iter().find(ours) {
            Some(o) => Ok((o, text)),
            None => Err(text),
        }
    });
    let (object, text) = found;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(
            object["file_base64"]
                .as_str()
                .unwrap_or_else(|| panic!("{object}")),
        )
        .unwrap();
    assert_eq!(bytes, exact, "{object}");
    assert!(
        crate::json::schema_errors(&text).is_empty(),
        "{:?}",
        crate::json::schema_errors(&text)
    );
    let frame = crate::util::wait_showing("the reader's row", DEADLINE.as_secs_f64(), || {
        let out = rpv(&["--top", "--once", "-i", "0.3", "-w", "250"])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stderr).into_owned();
        match text.lines().find(|l| l.contains(&format!(" {reader} "))) {
            Some(row) => Ok(row.to_string()),
            None => Err(text),
        }
    });
    assert!(!frame.contains('\x1b'), "{frame:?}");
    assert!(frame.contains("f3_\u{fffd}\u{fffd}\\e[31m"), "{frame:?}");
}

/// `--top --metrics-file` read back through a real node_exporter: the flows with bounded
/// labels (no PID unless asked), totals per kind, the flows left out counted (all of them
/// with `--metrics-flows 0`), byte counts as counters, and an ended flow's series gone
/// from the next file.
#[test]
fn metrics_through_node_exporter() {
    let Some(binary) = crate::integrations::node_exporter() else {
        eprintln!("top: no node_exporter (apt-get install prometheus-node-exporter): skipped");
        return;
    };
    let mut flows = Flows::new();
    let big = flows.file("big", 32 << 20);
    let collected = flows.dir.path("collected");
    std::fs::create_dir(&collected).unwrap();
    let exporter = crate::integrations::Exporter::start(&binary, &collected);
    // (Started once the exporter is up: on a loaded machine its start may take longer
    // than the reader takes to read the file.)
    // 16 KiB every 50 ms: the 32 MiB last about 100 s, longer than the deadline, so the
    // flow is still moving whenever a slow first look (a machine running the whole suite)
    // reaches it.
    let reader = flows.reader(&big, 16384);
    flows.sockets();
    let top = flows.top();
    let watch = |path: &std::path::Path, n: &str| {
        let mut cmd = rpv(&[&top, "-q", "-i", "0.3", "--metrics-flows", n]);
        cmd.arg("--metrics-file").arg(path);
        Watcher::start(cmd)
    };
    // (Other flows of the machine may be busier than the test's: all of them get series.
    // The file with none is not the collector's: two rpv --top on one machine would give
    // it the same totals twice.)
    let all = watch(&collected.join("all.prom"), "10000");
    let none_path = flows.dir.path("none.prom");
    let none = watch(&none_path, "0");
    let labels = format!("command=\"python3 reader.py {big} 16384\",file=\"{big}\",kind=\"file\"");
    let number = |body: &str, name: &str| -> f64 {
        body.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(-1.0)
    };
    let start = Instant::now();
    let body = loop {
        let body = exporter.scrape().unwrap_or_default();
        let bytes = crate::integrations::value(&body, "rpv_top_flow_bytes_total", &labels);
        let sockets = body
            .matches("rpv_top_flow_bytes_total{command=\"python3 sock.py")
            .count();
        if bytes.is_some_and(|b| b > 0.0) && sockets == 2 && none_path.exists() {
            break body;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "never scraped the flows:\n{body}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(body.contains("\nnode_textfile_scrape_error 0\n"), "{body}");
    assert!(
        body.contains("# TYPE rpv_top_flow_bytes_total counter"),
        "{body}"
    );
    assert!(
        body.contains("# TYPE rpv_top_bytes_total counter"),
        "{body}"
    );
    assert!(
        !body.contains("pid=\""),
        "no PID labels unless asked: {body}"
    );
    // The file written with --metrics-flows 0: totals only, every flow counted as left out
    // (its own rpv --top may see the test's three flows a scan after the other one does).
    let flows_in = |text: &str| -> f64 {
        text.lines()
            .filter(|l| l.starts_with("rpv_top_flows{"))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    };
    let text = crate::util::wait_showing(
        "the test's three flows in the file of totals",
        DEADLINE.as_secs_f64(),
        || {
            let text = std::fs::read_to_string(&none_path).unwrap_or_default();
            if flows_in(&text) >= 3.0 {
                Ok(text)
            } else {
                Err(text)
            }
        },
    );
    assert!(!text.contains("rpv_top_flow_bytes_total{"), "{text}");
    let flows_now = flows_in(&text);
    assert!(flows_now >= 3.0, "{text}");
    assert_eq!(number(&text, "rpv_top_flows_omitted "), flows_now, "{text}");
    signal(reader, "KILL");
    let start = Instant::now();
    loop {
        let body = exporter.scrape().unwrap_or_default();
        let gone = crate::integrations::value(&body, "rpv_top_flow_bytes_total", &labels).is_none();
        if gone && !body.contains("reader.py") {
            break;
        }
        assert!(start.elapsed() < DEADLINE, "the ended flow stayed:\n{body}");
        std::thread::sleep(Duration::from_millis(50));
    }
    drop((all, none));
}

/// The view in tmux at 40, 80 and 160 columns and 5, 12 and 40 rows: no row wider than
/// the terminal less its last column, `+N more` when the rows do not fit, the selection
/// moved by ↓, `s` changing the order, Enter opening the `-d` view and Esc coming back,
/// a resize followed, and `q` quitting with status 0.
#[test]
fn the_view_on_terminals_of_every_size() {
    // One set of flows, watched from the three terminals at once.
    let mut flows = Flows::new();
    let big = flows.file("big", 32 << 20);
    for _ in 0..4 {
        flows.reader(&big, 16384);
    }
    let (dir, top) = (&flows.dir, &flows.top());
    std::thread::scope(|scope| {
        for (w, h) in [(40, 5), (80, 12), (160, 40)] {
            scope.spawn(move || view_at(dir, top, w, h));
        }
    });
}

fn fits(lines: &[String], width: usize) -> bool {
    lines.iter().all(|l| l.chars().count() < width)
}

fn view_at(dir: &Dir, top: &str, width: usize, height: usize) {
    let Some(tmux) =
        crate::tmux::Tmux::start(dir, &format!("top{width}x{height}"), width, height, true)
    else {
        return;
    };
    tmux.keys(&format!("r {top} -i 0.3; echo rc=$?"));
    let title = |l: &String| l.starts_with("rpv --top: ");
    // A reader's row: its command, or where that is cut, its file first (`…/big → python3…`).
    let reader = |l: &str| l.contains("reader") || l.contains("/big ");
    let readers = |rows: &[String]| rows.iter().filter(|l| reader(l)).count();
    let shown = tmux.wait_for("the flows", |rows| {
        rows.iter().any(title)
            && (readers(rows) >= 4 || rows.iter().any(|l| crate::screens::is_more(l.trim())))
    });
    assert!(fits(&tmux.pane(true), width), "{shown:#?}");
    if height == 5 {
        assert!(
            shown.iter().any(|l| crate::screens::is_more(l.trim())),
            "{shown:#?}"
        );
    }
    assert!(
        shown.iter().any(|l| l.starts_with('>')),
        "a row is selected: {shown:#?}"
    );
    // ↓ moves the selection off the first row (where the terminal has rows to show it).
    let first = |rows: &[String]| rows.iter().position(|l| l.starts_with('>'));
    if height > 5 {
        // The selection follows its flow as the rows re-sort: where it stands on the last
        // row, ↓ has nowhere to go, so ↑ it is.
        let rows = tmux.pane(false);
        let before = first(&rows);
        let last = rows.iter().rposition(|l| !l.trim().is_empty());
        tmux.press(if before.is_some() && before == last {
            "Up"
        } else {
            "Down"
        });
        tmux.wait_for("the selection moved", |rows| {
            rows.iter().any(title) && first(rows).is_some() && first(rows) != before
        });
    }
    tmux.press("s");
    tmux.wait_for("the order by bytes", |rows| {
        rows.iter()
            .any(|l| l.starts_with("rpv --top: ") && l.contains("by bytes"))
    });
    // Select a reader (other flows of the machine may be listed too), then Enter: it
    // opens in the -d view; Esc: back.
    select(&tmux, reader);
    tmux.press("Enter");
    tmux.wait_for("the -d view", |rows| {
        !rows.iter().any(title) && rows.iter().any(|l| l.contains("B/s]") && l.contains('%'))
    });
    tmux.press("Escape");
    tmux.wait_for("the list again", |rows| rows.iter().any(title));
    // `/` and a text: only the rows that contain it (the title says so, where it is wide
    // enough); `p`: frozen.
    tmux.press("/");
    tmux.keys("reader.py");
    tmux.press("p");
    tmux.wait_for("the filter and the freeze", |rows| {
        rows.iter().any(|l| {
            l.starts_with("rpv --top: ")
                && (width < 60
                    || l.contains("matching \"reader.py\", by ") && l.contains(", frozen"))
        }) && rows.iter().any(|l| l.starts_with('>'))
            && (rows.iter())
                .filter(|l| l.starts_with(['>', ' ']) && l.contains("B/s"))
                .all(|l| reader(l))
    });
    tmux.press("Escape");
    tmux.wait_for("the filter cleared", |rows| {
        rows.iter()
            .any(|l| l.starts_with("rpv --top: ") && !l.contains("matching"))
    });
    let (w2, h2) = (width.max(60) - 20, height + 3);
    tmux.resize(w2, h2);
    tmux.wait_for("a frame at the new size", |rows| {
        rows.iter().any(title) && fits(rows, w2) && rows.len() <= h2
    });
    assert!(fits(&tmux.pane(true), w2));
    tmux.press("q");
    tmux.wait_for("the end", |rows| rows.iter().any(|r| r == "rc=0"));
}

/// Selects the row `wanted` accepts (other flows of the machine may be listed too): the
/// list in PID order first (`s` until the title says so: rows that do not move as rates
/// and counts change), then Home and down the list, each press waiting until the selection
/// has moved (or a moment: rows that read the same, or the end of the list), so none is on
/// its way at the next look; past as many presses as there are flows, Home again (flows
/// come and go).
fn select(tmux: &crate::tmux::Tmux<'_>, wanted: impl Fn(&str) -> bool) {
    let by_pid = |rows: &[String]| {
        rows.iter()
            .any(|l| l.starts_with("rpv --top: ") && l.contains("by pid"))
    };
    let start = Instant::now();
    let chosen = |rows: &[String]| rows.iter().any(|l| l.starts_with('>') && wanted(l));
    if chosen(&tmux.pane(false)) {
        return;
    }
    while !by_pid(&tmux.pane(false)) {
        let before = tmux
            .pane(false)
            .into_iter()
            .find(|l| l.starts_with("rpv --top: "));
        tmux.press("s");
        let pressed = Instant::now();
        while tmux
            .pane(false)
            .into_iter()
            .find(|l| l.starts_with("rpv --top: "))
            == before
            && pressed.elapsed() < Duration::from_secs(1)
        {
            std::thread::sleep(Duration::from_millis(30));
        }
        assert!(start.elapsed() < DEADLINE, "never in PID order");
    }
    // Where the selection is and which flow it is on (its row without the figures that
    // change at each redraw, their units included: on a terminal of few rows only the
    // selected row shows).
    let unit = |w: &str| {
        let w = w.strip_suffix("/s").unwrap_or(w);
        matches!(
            w,
            "B" | "KiB" | "MiB" | "GiB" | "TiB" | "kB" | "MB" | "GB" | "%"
        )
    };
    let at = |rows: &[String]| {
        rows.iter().position(|l| l.starts_with('>')).map(|i| {
            let figures_out: String = rows[i]
                .chars()
                .filter(|c| {
                    !c.is_ascii_digit() && *c != '.' && !('\u{2581}'..='\u{2588}').contains(c)
                })
                .collect();
            let flow: Vec<&str> = figures_out
                .split_whitespace()
                .filter(|w| !unit(w))
                .collect();
            (i, flow.join(" "))
        })
    };
    // How many flows the title counts: as many presses from the first row reach the end
    // of the list.
    let count = |rows: &[String]| {
        rows.iter()
            .find_map(|l| l.strip_prefix("rpv --top: "))
            .and_then(|t| t.split(' ').next()?.parse::<usize>().ok())
            .unwrap_or(1)
    };
    // The selection on the first row (right below the header).
    let first = |rows: &[String]| {
        rows.iter()
            .position(|l| l.trim_start().starts_with("KIND"))
            .is_some_and(|k| rows.get(k + 1).is_some_and(|l| l.starts_with('>')))
    };
    let mut seen: Vec<String> = Vec::new();
    loop {
        tmux.press("Home");
        let pressed = Instant::now();
        while !first(&tmux.pane(false)) && pressed.elapsed() < Duration::from_secs(2) {
            std::thread::sleep(Duration::from_millis(30));
        }
        let mut presses = 0;
        loop {
            let rows = tmux.pane(false);
            let before = at(&rows);
            if before.as_ref().is_some_and(|(i, _)| wanted(&rows[*i])) {
                return;
            }
            if presses > count(&rows) {
                break;
            }
            seen.push(format!("Down {before:?}"));
            tmux.press("Down");
            presses += 1;
            let pressed = Instant::now();
            // (A key shows at the next frame, which on a machine busy with other tests may
            // take a while.)
            while at(&tmux.pane(false)) == before && pressed.elapsed() < Duration::from_secs(2) {
                std::thread::sleep(Duration::from_millis(30));
            }
            assert!(
                start.elapsed() < DEADLINE,
                "never selected the row: {rows:#?}\n{seen:#?}"
            );
        }
        seen.push("Home".into());
    }
}

/// Enter on a pipeline's row opens the `--pipeline` view of that pipeline (its stages,
/// one row each); Esc comes back to the list.
#[test]
fn enter_on_a_pipeline_opens_its_stages() {
    let mut flows = Flows::new();
    flows.start("python3 producer.py | gzip -3 | wc -c > /dev/null");
    let Some(tmux) = crate::tmux::Tmux::start(&flows.dir, "toppipe", 160, 30, true) else {
        return;
    };
    tmux.keys(&format!("r {} -i 0.3; echo rc=$?", flows.top()));
    let title = |l: &String| l.starts_with("rpv --top: ");
    let ours = |l: &str| l.contains("pipeline") && l.contains("producer.py | gzip -3");
    tmux.wait_for("the pipeline's row", |rows| {
        rows.iter().any(title) && rows.iter().any(|l| ours(l))
    });
    select(&tmux, ours);
    tmux.press("Enter");
    let stage = |rows: &[String], command: &str| {
        rows.iter()
            .any(|l| l.contains(command) && !l.contains(" | ") && l.contains("B/s"))
    };
    let view = tmux.wait_for("the --pipeline view of its stages", |rows| {
        !rows.iter().any(title)
            && rows
                .iter()
                .any(|l| l.contains("COMMAND") && l.contains("STATE"))
            && stage(rows, "producer.py")
            && stage(rows, "gzip -3")
            && stage(rows, "wc -c")
    });
    assert!(
        view.iter().filter(|l| l.contains("producer.py")).count() >= 1,
        "{view:#?}"
    );
    tmux.press("Escape");
    tmux.wait_for("the list again", |rows| {
        rows.iter().any(title) && rows.iter().any(|l| ours(l))
    });
    tmux.press("q");
    tmux.wait_for("the end", |rows| rows.iter().any(|r| r == "rc=0"));
}

/// The example systemd unit is in the package's assets, and its command line, with the
/// metrics file moved into a temporary directory, runs and writes the file.
#[test]
fn the_example_service_runs() {
    let root = env!("CARGO_MANIFEST_DIR");
    let manifest = std::fs::read_to_string(format!("{root}/Cargo.toml")).unwrap();
    assert!(
        manifest.contains(
            r#"["contrib/rpv-top.service", "lib/systemd/system/rpv-top.service", "644"]"#
        ),
        "the unit is installed by the .deb"
    );
    let unit = std::fs::read_to_string(format!("{root}/contrib/rpv-top.service")).unwrap();
    let exec = unit
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart=/usr/bin/rpv "))
        .expect("ExecStart runs rpv");
    let dir = Dir::new();
    let prom = dir.path("rpv-top.prom");
    let args: Vec<String> = exec
        .split_whitespace()
        .map(|a| {
            if a.ends_with(".prom") {
                s(&prom).to_string()
            } else if a == "15" {
                "0.2".to_string() // (the interval, shorter for the test)
            } else {
                a.to_string()
            }
        })
        .collect();
    assert!(args.iter().any(|a| a == "--top"), "{exec}");
    let mut child = rpv(&[])
        .args(&args)
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    crate::util::wait_showing("the metrics file", DEADLINE.as_secs_f64(), || {
        let text = std::fs::read_to_string(&prom).unwrap_or_default();
        if text.contains("rpv_top_last_update_seconds ") && text.contains("rpv_top_flows{") {
            Ok(())
        } else {
            Err(text)
        }
    });
    let text = std::fs::read_to_string(&prom).unwrap();
    assert!(!text.contains(" -0\n"), "never -0: {text}");
    signal(child.id(), "TERM");
    crate::util::wait_within(&mut child, 30.0, "rpv --top");
    // Not rewritten with every flow at 0 (a running machine made to look idle): gone, so
    // its series go stale.
    assert!(!prom.exists(), "{:?}", std::fs::read_to_string(&prom));
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert_eq!(stderr, "", "-q: nothing on standard error");
}

/// A process first seen as something else that becomes an rpv (a shell's child that runs
/// `exec rpv`, as `nice`, `env` or a script's last line do) shows as that rpv, with its own
/// figures, not as a process reading a file.
#[test]
fn a_process_that_becomes_an_rpv_shows_as_one() {
    let mut flows = Flows::new();
    let big = flows.file("big", 64 << 20);
    let other = flows.file("other", 32 << 20);
    // A flow of its own, to know when --top has looked at every process once.
    flows.reader(&other, 16384);
    let shell = flows.start(&format!(
        "while [ ! -e go ]; do sleep 0.05; done; exec \"$RPV\" -q -L 300k '{big}' > out"
    ));
    let watcher = Watcher::start(rpv(&[&flows.top(), "--json", "-i", "0.3"]));
    let objects = |text: &str| -> Vec<serde_json::Value> {
        text.lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    };
    let flow_of = |o: &serde_json::Value, pid: u32| o["type"] == "progress" && o["pid"] == pid;
    crate::util::wait_showing("a scan", DEADLINE.as_secs_f64(), || {
        let text = watcher.text.lock().unwrap().clone();
        if objects(&text).iter().any(|o| o["file"] == other.as_str()) {
            Ok(())
        } else {
            Err(text)
        }
    });
    std::fs::write(flows.dir.path("go"), b"").unwrap();
    crate::util::wait_showing("the rpv's row", DEADLINE.as_secs_f64(), || {
        let text = watcher.text.lock().unwrap().clone();
        let seen = objects(&text)
            .iter()
            .any(|o| flow_of(o, shell) && o["kind"] == "rpv");
        if seen {
            Ok(())
        } else {
            Err(text)
        }
    });
    let (_, text) = watcher.stop();
    let all = objects(&text);
    let since = all
        .iter()
        .position(|o| flow_of(o, shell) && o["kind"] == "rpv")
        .unwrap();
    let rpv = &all[since];
    assert_eq!(rpv["size"], 64 << 20, "its own figures: {rpv}");
    assert!(
        !all[since..]
            .iter()
            .any(|o| flow_of(o, shell) && o["kind"] != "rpv"),
        "not also as a file reader or a socket user: {text}"
    );
}

/// Not root: another user's flows are not shown (their counters are theirs to read), they
/// are counted in the title with the reason, and the user's own flows are shown.
#[test]
fn another_users_flows_are_counted_not_shown() {
    use std::os::unix::fs::MetadataExt;
    if !std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0) {
        eprintln!("top: needs root to run rpv as another user: skipped");
        return;
    }
    let mut flows = Flows::new();
    let big = flows.file("big", 32 << 20);
    // The test's directory is root's: the other user's reader gets a file of its own.
    let theirs = std::env::temp_dir().join(format!("rpv-top-nobody-{}", std::process::id()));
    std::fs::write(&theirs, data(16 << 20, 3)).unwrap();
    let _cleanup = Removed(theirs.clone());
    flows.reader(&big, 16384);
    let script = flows.dir.path("reader.py");
    let mut cmd = Command::new("setpriv");
    cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(env!("CARGO_BIN_EXE_rpv"))
        .args([&flows.top(), "-i", "0.5", "-w", "250"])
        .env("LC_ALL", "C");
    let watcher = Watcher::start(cmd);
    // nobody's own flow: a reader run as nobody.
    let own = flows.start(&format!(
        "exec setpriv --reuid=65534 --regid=65534 --clear-groups -- /usr/bin/python3 {} {} 16384",
        s(&script),
        s(&theirs)
    ));
    let frame = watcher.wait_frame("nobody's own reader and the count", |f| {
        row(f, "file", &["reader.py", "rpv-top-nobody"]).is_some()
            && f.lines()
                .next()
                .is_some_and(|t| t.contains(" processes not readable: "))
    });
    assert!(
        row(&frame, "file", &[big.as_str()]).is_none(),
        "root's reader is not shown to nobody: {frame}"
    );
    assert!(frame.contains(&own.to_string()), "{frame}");
    drop(watcher);
}

/// Removes a file when dropped.
struct Removed(std::path::PathBuf);

impl Drop for Removed {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// `--top --log`: a time-stamped line per flow that moved, naming it.
#[test]
fn log_lines_per_flow() {
    let mut flows = Flows::new();
    let big = flows.file("big", 32 << 20);
    flows.reader(&big, 16384);
    let watcher = Watcher::start(rpv(&[&flows.top(), "--log", "-i", "0.5"]));
    let line = crate::util::wait_showing("a line for the reader", DEADLINE.as_secs_f64(), || {
        let text = watcher.text.lock().unwrap().clone();
        let line = text
            .lines()
            .find(|l| l.contains("reader.py") && l.contains(&format!(": reads {big}")))
            .map(str::to_owned);
        line.ok_or(text)
    });
    assert!(line.starts_with("20"), "time-stamped: {line}");
    assert!(line.contains('%') && line.contains("B/s"), "{line}");
    assert!(!line.contains('\r') && !line.contains('\x1b'), "{line:?}");
}

/// Ctrl-Z and `fg`, then Ctrl-C: the rows are erased before the stop and drawn again
/// after `fg`; Ctrl-C ends the view with status 32 and gives the terminal back as it was
/// (what is typed next is echoed).
#[test]
fn ctrl_z_and_ctrl_c_leave_the_terminal_clean() {
    let mut flows = Flows::new();
    let big = flows.file("big", 32 << 20);
    flows.reader(&big, 16384);
    let Some(tmux) = crate::tmux::Tmux::start(&flows.dir, "topsignals", 100, 20, true) else {
        return;
    };
    let command = format!("\"$RPV\" {} -i 0.3", flows.top());
    tmux.keys(&command);
    let title = |l: &String| l.starts_with("rpv --top: ");
    tmux.wait_for("the view", |rows| rows.iter().any(title));
    tmux.press("C-z");
    let stopped = tmux.wait_for("stopped", |rows| {
        rows.iter().any(|r| r.contains("Stopped")) && rows.last().is_some_and(|r| r == "$")
    });
    assert!(
        !stopped.iter().any(title),
        "rows erased before the stop: {stopped:#?}"
    );
    tmux.keys("fg");
    tmux.wait_for("the view after fg", |rows| {
        rows.iter().filter(|l| title(l)).count() == 1
    });
    tmux.press("C-c");
    tmux.wait_for("the prompt", |rows| rows.last().is_some_and(|r| r == "$"));
    tmux.keys("echo rc=$?");
    let lines = tmux.wait_for("the status", |rows| rows.iter().any(|r| r == "rc=32"));
    assert!(
        lines.iter().any(|l| l == "$ echo rc=$?"),
        "what is typed is echoed again: {lines:#?}"
    );
    assert_eq!(lines.iter().filter(|l| title(l)).count(), 1, "{lines:#?}");
}

/// A loop device bound (read-only) to a file of the test's directory, detached when the
/// test ends.
struct Loop(String);

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").args(["-d", &self.0]).status();
    }
}

/// The device number ("MAJOR:MINOR") of a block device rpv's test may read: an existing
/// one of some size whose node, made in the test's directory, opens; else a loop device
/// bound read-only to a sparse file of the test's directory (where the real devices are
/// refused, as in a container: the machine's own device is never written). `Err` says why
/// there is none.
fn readable_block_device(flows: &Flows) -> Result<(String, Option<Loop>), String> {
    let devices: Vec<(String, u64)> = std::fs::read_dir("/sys/dev/block")
        .map(|d| {
            d.flatten()
                .filter_map(|e| {
                    let size = std::fs::read_to_string(e.path().join("size")).ok()?;
                    Some((e.file_name().into_string().ok()?, size.trim().parse().ok()?))
                })
                .collect()
        })
        .unwrap_or_default();
    if devices.is_empty() {
        return Err("no block device on this machine (/sys/dev/block is empty)".into());
    }
    let opens = |number: &str| {
        let node = flows.dir.path("probe");
        let _ = std::fs::remove_file(&node);
        let (major, minor) = number.split_once(':').unwrap();
        let made = Command::new("mknod")
            .arg(&node)
            .args(["b", major, minor])
            .status()
            .is_ok_and(|s| s.success());
        let ok = made && std::fs::File::open(&node).is_ok();
        let _ = std::fs::remove_file(&node);
        ok
    };
    if let Some((number, _)) = devices
        .iter()
        .find(|(number, size)| *size >= 1 << 16 && opens(number))
    {
        return Ok((number.clone(), None));
    }
    let image = flows.dir.path("image");
    std::fs::File::create(&image)
        .unwrap()
        .set_len(64 << 20)
        .unwrap();
    let bound = Command::new("losetup")
        .args(["-r", "-f", "--show"])
        .arg(&image)
        .output();
    let Some(path) = bound
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    else {
        return Err(format!(
            "{} block devices, none readable here and no loop device to bind",
            devices.len()
        ));
    };
    let bound = Loop(path.clone());
    let name = path.rsplit('/').next().unwrap_or_default();
    let number = std::fs::read_to_string(format!("/sys/class/block/{name}/dev")).unwrap();
    assert!(opens(number.trim()), "the loop device {path} does not open");
    Ok((number.trim().to_string(), Some(bound)))
}

/// `dd` reading a block device (through a node of the test's directory) is a `device` flow
/// with its percentage (the size from `/sys/dev/block`).
#[test]
fn a_block_device_being_read() {
    let mut flows = Flows::new();
    let (number, _bound) = match readable_block_device(&flows) {
        Ok(found) => found,
        Err(why) => {
            eprintln!("top::a_block_device_being_read skipped: {why}");
            return;
        }
    };
    let node = flows.dir.path("disk");
    let (major, minor) = number.split_once(':').unwrap();
    let made = Command::new("mknod")
        .arg(&node)
        .args(["b", major, minor])
        .status()
        .unwrap();
    assert!(made.success());
    // dd reads it at the pace of a rate-limited rpv (and never writes to it).
    flows.start("dd if=disk bs=16k status=none | \"$RPV\" -q -L 300k > /dev/null");
    let watcher = Watcher::start(rpv(&[&flows.top(), "-i", "0.5", "-w", "250"]));
    let frame = watcher.wait_frame("the device row", |f| {
        row(
            f,
            "device",
            &["dd if=disk", &format!("<- {}", s(&node)), "%"],
        )
        .is_some()
    });
    assert!(frame.contains("device"), "{frame}");
    // dd ends before its loop device is detached.
    drop(watcher);
    drop(flows);
}

/// A copy inside the kernel: coreutils `cp` copies a file with `copy_file_range` in calls
/// of up to 2 GiB, during which neither its `/proc/PID/io` counters nor its descriptors'
/// positions move. Over an earlier copy, which cp empties inside its second open (seconds
/// at its share of the CPU, after rpv may have seen only the file it reads). Its row shows
/// from its first second, with the written file's growth as progress, at 1, 2 and 3
/// seconds, and ends at the file's size, not short of it.
#[test]
fn a_copy_in_the_kernel_is_followed_from_its_first_second_to_its_end() {
    const SIZE: u64 = 2 << 30;
    let mut flows = Flows::new();
    // 2 GiB of data (no hole: cp would pass a hole at once).
    let (_shm, big, copy) = flows.copy_files(SIZE);
    // The copy goes over an earlier one, which cp empties first: it then fills memory
    // the machine has just used. Into memory the machine had not used for a while, the
    // copy took two to three times the CPU (5.1-5.8 s, not 1.9-3 s, in runs of the
    // suite), and as long at its share of the CPU.
    Flows::zeros(&copy, SIZE);
    // Slow enough to watch whatever the disk: cp shares one CPU, at nice 15, with the
    // test's loop at nice 10 (about a quarter of what the two get for the copy: a copy of
    // 2 GiB in memory takes a second of CPU or more).
    let watcher = flows.json_watcher();
    let cp = flows.slowly(15, &format!("cp {} {}", s(&big), s(&copy)));
    // The copy's first second counts from the copy, not from the test's request: a
    // loaded machine can take more than a second to start cp (the shell, taskset and
    // nice, at nice 15), and cp empties the earlier copy before its call (a second or
    // more at its share of the CPU). Its call writes at once. This thread runs under the
    // real-time policy (the watcher's), so it sees the first bytes at once.
    crate::util::wait_until(
        "cp to start writing its copy",
        DEADLINE.as_secs_f64(),
        || std::fs::metadata(&copy).is_ok_and(|m| m.len() > 0 && m.len() < SIZE),
    );
    let started = Instant::now();
    let began = unix_seconds(std::time::SystemTime::now());
    // Each of cp's rows with the time rpv wrote it (its `time`), from the copy's start:
    // not when this test read it, which a loaded machine delayed by a second once (two
    // rows read at the same instant).
    let mut rows: Vec<(f64, serde_json::Value)> = Vec::new();
    let mut read = 0;
    let pid = u64::from(cp);
    while !rows.iter().any(|(_, o)| o["done"] == true) {
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "waited 300 s for cp's last row; its rows: {rows:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
        let text = watcher.text.lock().unwrap().clone();
        let end = text.rfind('\n').map_or(0, |n| n + 1);
        if end <= read {
            continue;
        }
        for line in text[read..end].lines() {
            let o: serde_json::Value = serde_json::from_str(line).unwrap();
            if o["type"] == "progress" && o["pid"] == pid {
                let at = json_time(o["time"].as_str().unwrap()) - began;
                rows.push((at, o));
            }
        }
        read = end;
    }
    let copy = s(&copy).to_string();
    let first = rows.first().unwrap().0;
    assert!(
        first < 2.0,
        "cp's first row came {first:.1} s after it started: {rows:?}"
    );
    let mut last = 0;
    for mark in [1.0, 2.0, 3.0] {
        let (at, o) = rows
            .iter()
            .find(|(at, _)| *at >= mark - 0.5 && *at < mark + 0.5)
            .unwrap_or_else(|| panic!("no row of cp at {mark} s: {rows:?}"));
        let bytes = o["bytes"].as_u64().unwrap();
        assert!(
            bytes > last && bytes < SIZE,
            "at {at:.1} s after {last}: {o}"
        );
        assert_eq!(o["done"], false, "{o}");
        assert_eq!(o["size"], SIZE, "{o}");
        assert_eq!(o["file"], s(&big), "{o}");
        assert_eq!(o["to"], copy.as_str(), "{o}");
        assert_eq!(o["in_kernel"], true, "{o}");
        last = bytes;
    }
    let (_, end) = rows.iter().find(|(_, o)| o["done"] == true).unwrap();
    assert_eq!(end["bytes"], SIZE, "ends at the copy's size: {end}");
    assert_eq!(std::fs::metadata(&copy).unwrap().len(), SIZE);
    let short = rows
        .iter()
        .find(|(_, o)| o["done"] == true && o["bytes"] != SIZE);
    assert!(short.is_none(), "done short of the copy: {short:?}");
}

/// A copy inside the kernel whose progress cannot be seen at all: one `copy_file_range`
/// call into a file made to its full size first (neither its size nor its blocks grow),
/// from and to
/// descriptors whose positions move only when the call returns. While the call runs, its
/// row says so (`progress_visible` false, no rate, no ETA), from its first second, never
/// `0 B/s` nor done; at its end the figures are the copy's size.
#[test]
fn a_copy_whose_progress_cannot_be_seen_says_so() {
    const SIZE: u64 = 1 << 30;
    let mut flows = Flows::new();
    let (_shm, big, copy) = flows.copy_files(SIZE);
    // Written to its full size first: neither its size nor its blocks grow as the copy
    // fills it (a file only set to its size would show the copy's progress in its
    // blocks). Written, not only allocated: a copy into memory the machine had not used
    // for a while took up to eight times the CPU (1.9 s, not 0.25 s, in runs of the
    // suite), and as long at its share of the CPU.
    Flows::zeros(&copy, SIZE);
    flows.dir.file(
        "copier.py",
        format!(
            "import os\n\
             src = os.open('{}', os.O_RDONLY)\n\
             dst = os.open('{}', os.O_WRONLY)\n\
             os.nice(19)\n\
             left = {SIZE}\n\
             while left > 0:\n\
             \x20   n = os.copy_file_range(src, dst, left)\n\
             \x20   if n == 0:\n\
             \x20       break\n\
             \x20   left -= n\n",
            s(&big),
            s(&copy)
        )
        .as_bytes(),
    );
    // A flow with a row at every look, to count looks by.
    let slow = flows.file("slow", 32 << 20);
    let clock = flows.reader(&slow, 16384);
    let watcher = flows.json_watcher();
    wait_rows(&watcher, clock, 1);
    let started = Instant::now();
    // Slow enough to be seen across looks: one CPU shared, at nice 19, with the test's
    // loop at nice 10 (about a tenth of what the two get for the copy, which takes 0.2-0.6 s
    // of CPU into the file written above; at a quarter, as cp above, it ended after one
    // look in a run of the suite). Python starts at nice 0 and takes nice 19 for the copy
    // only: started at nice 19, its start (0.1 s of CPU alone) ran at that share too.
    let copier = flows.slowly(0, "python3 copier.py");
    // The copier's end: a last row at the copy's size if a look saw its call return, else
    // none (a copy whose progress was never seen ends without a row: what it copied
    // cannot be told). So: until it has exited (a zombie of the test's shell) and the
    // clock (a slow reader's rows, one a look) has shown two looks after that.
    let exited = || {
        std::fs::read_to_string(format!("/proc/{copier}/stat")).map_or(true, |t| {
            t.rsplit(')')
                .next()
                .is_some_and(|r| r.trim_start().starts_with('Z'))
        })
    };
    crate::util::wait_until("the copier to end", 5.0 * DEADLINE.as_secs_f64(), exited);
    let took = started.elapsed().as_secs_f64();
    let seen = rows_of(&watcher.text.lock().unwrap(), clock).len();
    wait_rows(&watcher, clock, seen + 2);
    let rows = rows_of(&watcher.text.lock().unwrap(), copier);
    let unseen: Vec<&serde_json::Value> = (rows.iter())
        .filter(|o| o["progress_visible"] == false)
        .collect();
    // The call ran across looks (two a second): rows said so while it ran.
    assert!(
        unseen.len() >= 2,
        "{} rows said the progress cannot be seen in {took:.1} s: {rows:#?}",
        unseen.len()
    );
    for o in &unseen {
        assert_eq!(o["rate"], serde_json::Value::Null, "{o}");
        assert_eq!(o["eta"], serde_json::Value::Null, "{o}");
        assert_eq!(o["in_kernel"], true, "{o}");
        assert_eq!(o["done"], false, "{o}");
        assert_eq!(o["file"], s(&big), "{o}");
        assert_eq!(o["to"], s(&copy), "{o}");
    }
    // Every row short of the copy's end says the progress cannot be seen: none claims
    // that nothing moves.
    let shown_idle =
        (rows.iter()).find(|o| o["progress_visible"] == true && o["bytes"].as_u64() != Some(SIZE));
    assert!(shown_idle.is_none(), "{shown_idle:?} in {rows:#?}");
    let short = (rows.iter()).find(|o| o["done"] == true && o["bytes"] != SIZE);
    assert!(short.is_none(), "done short of the copy: {short:?}");
    // (Its size only: reading both gigabytes back would be a second of this process's
    // CPU, for the same reason as dd above.)
    assert_eq!(std::fs::metadata(&copy).unwrap().len(), SIZE);
}

/// The progress objects of process `pid` in `--json` text.
fn rows_of(text: &str, pid: u32) -> Vec<serde_json::Value> {
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|o| o["type"] == "progress" && o["pid"] == pid)
        .collect()
}

/// Seconds since 1970 of `time`.
fn unix_seconds(time: std::time::SystemTime) -> f64 {
    time.duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// Seconds since 1970 of a `--json` object's `time` (`2026-11-29T05:28:44.486Z`, UTC).
fn json_time(text: &str) -> f64 {
    let number = |range: std::ops::Range<usize>| -> i64 { text[range].parse().unwrap() };
    let (y, m, d) = (number(0..4), number(5..7), number(8..10));
    // Days since 1970-01-01 of a civil date (March-based years, so that leap days end
    // a year).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((m + 9) % 12) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let clock = number(11..13) * 3600 + number(14..16) * 60;
    let seconds: f64 = text[17..text.len() - 1].parse().unwrap();
    (days * 86_400 + clock) as f64 + seconds
}

#[test]
fn json_times_are_read_as_seconds_since_1970() {
    assert_eq!(json_time("1970-01-01T00:00:00.000Z"), 0.0);
    assert_eq!(json_time("2000-03-01T00:00:01.500Z"), 951_868_801.5);
    let now = std::time::SystemTime::now();
    let text = std::process::Command::new("date")
        .args(["-u", "+%Y-%m-%dT%H:%M:%S.%3NZ"])
        .output()
        .unwrap()
        .stdout;
    let text = String::from_utf8(text).unwrap();
    let diff = json_time(text.trim()) - unix_seconds(now);
    assert!((-0.01..5.0).contains(&diff), "{text}: {diff}");
}

/// Waits until `watcher`'s `--json` has `n` progress objects of `pid`; returns them all.
fn wait_rows(watcher: &Watcher, pid: u32, n: usize) -> Vec<serde_json::Value> {
    crate::util::wait_showing(
        &format!("{n} rows of {pid}"),
        DEADLINE.as_secs_f64(),
        || {
            let text = watcher.text.lock().unwrap().clone();
            let rows = rows_of(&text, pid);
            if rows.len() >= n {
                Ok(rows)
            } else {
                Err(text)
            }
        },
    )
}

/// `cmd > log 2>&1`, written through both descriptors: one flow (one open file
/// description), not two identical rows.
#[test]
fn one_log_written_through_two_descriptors_is_one_flow() {
    let mut flows = Flows::new();
    let pid = flows.start(
        "exec > dup.log 2>&1; while :; do printf '%01000d' 0; printf '%01000d' 0 >&2; \
         sleep 0.05; done",
    );
    let watcher = Watcher::start(rpv(&[&flows.top(), "--json", "-i", "0.3"]));
    let rows = wait_rows(&watcher, pid, 6);
    let log = s(&flows.dir.path("dup.log")).to_string();
    assert!(rows.iter().all(|o| o["file"] == log.as_str()), "{rows:?}");
    let fds: std::collections::BTreeSet<String> =
        rows.iter().map(|o| o["fd"].to_string()).collect();
    assert_eq!(fds.len(), 1, "one flow, not one per descriptor: {rows:?}");
}

/// dd reading one file and writing another: one flow with both names and the source's
/// size, not two identical rows.
#[test]
fn dd_copying_a_file_is_one_flow_with_both_names() {
    let mut flows = Flows::new();
    flows.file("big.bin", 64 << 20);
    // (Each block written to the disk before the next: slow enough to be seen moving.)
    let pid = flows.start("exec dd if=big.bin of=dd.out bs=4k oflag=dsync status=none");
    let (big, out) = (flows.dir.path("big.bin"), flows.dir.path("dd.out"));
    // Watched once dd has written: a look before it opened its output would rightly show a
    // file it only reads, not yet this copy (and one while its output is still on
    // descriptor 3, before it moves it to 1, is the scan tests' case).
    crate::util::wait_until("dd's first block written", DEADLINE.as_secs_f64(), || {
        std::fs::metadata(&out).is_ok_and(|m| m.len() > 0)
    });
    let watcher = Watcher::start(rpv(&[&flows.top(), "--json", "-i", "0.3"]));
    let rows = wait_rows(&watcher, pid, 3);
    for o in &rows {
        assert_eq!(o["file"], s(&big), "{o}");
        assert_eq!(o["to"], s(&out), "{o}");
        assert_eq!(o["size"], 64 << 20, "{o}");
        assert_eq!(o["kind"], "file", "{o}");
    }
    let ids: std::collections::BTreeSet<String> =
        rows.iter().map(|o| o["fd"].to_string()).collect();
    assert_eq!(ids.len(), 1, "one flow: {rows:?}");
}

/// A process holding a socket and writing to the null device (through a descriptor the
/// test's shell opened on the existing device) is no socket flow, and no flow at all:
/// its bytes go nowhere (first-use-4 D8: a process called `socket` at TiB/s).
#[test]
fn a_null_device_writer_with_a_socket_is_not_a_flow() {
    let mut flows = Flows::new();
    let big = flows.file("big", 32 << 20);
    let reader = flows.reader(&big, 16384);
    let writer = flows.start(
        "exec python3 -c \"import os, socket; s = socket.socket(); b = bytes(65536); \
         any(os.write(1, b) < 0 for _ in iter(int, 1))\"",
    );
    // Past its start (python reads locale files then, each a file read of its own while
    // it lasts): it holds its socket.
    crate::util::wait_until("the writer's socket", DEADLINE.as_secs_f64(), || {
        std::fs::read_dir(format!("/proc/{writer}/fd")).is_ok_and(|fds| {
            fds.flatten().any(|fd| {
                std::fs::read_link(fd.path())
                    .is_ok_and(|l| l.to_string_lossy().starts_with("socket:"))
            })
        })
    });
    let watcher = Watcher::start(rpv(&[&flows.top(), "--json", "-i", "0.3"]));
    wait_rows(&watcher, reader, 6);
    let text = watcher.text.lock().unwrap().clone();
    let rows = rows_of(&text, writer);
    assert!(rows.is_empty(), "{rows:?}");
}

/// An rpv counting lines (`-l`) is shown in lines, with its size in lines: --top asks it
/// over its control channel, unit included (before, its lines were shown as bytes).
#[test]
fn an_rpv_counting_lines_shows_in_lines() {
    let mut flows = Flows::new();
    let text: String = (0..200_000).map(|i| format!("{i}\n")).collect();
    flows.dir.file("lines.txt", text.as_bytes());
    let pid = flows.start("exec \"$RPV\" -q -l -L 2000 lines.txt");
    let watcher = Watcher::start(rpv(&[&flows.top(), "--json", "-i", "0.3"]));
    let rows = wait_rows(&watcher, pid, 2);
    for o in &rows {
        assert_eq!(o["kind"], "rpv", "{o}");
        assert!(o["lines"].as_u64().is_some_and(|n| n > 0), "{o}");
        assert!(o.get("bytes").is_none(), "{o}");
        assert_eq!(o["size"], 200_000, "{o}");
    }
}
