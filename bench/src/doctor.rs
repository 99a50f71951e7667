//! `rpv-bench doctor`: how often `rpv --pipeline` names the right stage, and what watching
//! costs.
//!
//! Usage: `rpv-bench doctor [--secs N] [--loops N] [--only NAME[,NAME...]] [--cost]`.
//!
//! Accuracy: each scenario (a compressor, a hash, a rate limit, a slow reader, a slow
//! producer, a middle stage, a shell loop, a slow socket peer, ...) runs as a shell pipeline in its own process group, with
//! `--loops` busy loops beside it (`sh -c 'while :; do :; done'`; default: as many as the
//! cores), watched with `rpv --pipeline=SHELL --json -i 1` for `--secs` seconds (default
//! 20). Each one-second `progress` update is a sample; it is right when exactly one stage
//! is marked and it runs the program expected. The load average and the CPU pressure
//! (`/proc/pressure/cpu`) are printed with the figures, as the machine may be shared.
//!
//! Cost (`--cost`): a pipeline of 20 stages (a rate-limited rpv feeding 19 `cat`s) is
//! watched at `-i 0.1` with the display drawn (`-f`, to /dev/null) for `--secs` seconds;
//! the watcher's CPU time (its threads' time on a CPU, `schedstat`) over its wall time
//! is the share of a core it used.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One pipeline and the program of the stage that holds it back.
struct Scenario {
    name: &'static str,
    script: &'static str,
    /// The program (the command's first word) of the stage expected to be marked.
    expected: &'static str,
    /// A program the scenario needs, besides those of a Debian base system.
    needs: Option<&'static str>,
}

/// The scenarios; `$RPV` is the rpv under test.
const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "compressor",
        script: "cat /dev/zero | gzip -6 | cat > /dev/null",
        expected: "gzip",
        needs: None,
    },
    Scenario {
        name: "compressor-last",
        script: "cat /dev/zero | bzip2 -9 > /dev/null",
        expected: "bzip2",
        needs: Some("bzip2"),
    },
    Scenario {
        name: "hash",
        script: "yes | head -c 1000G | sha256sum",
        expected: "sha256sum",
        needs: None,
    },
    Scenario {
        name: "rate-limit",
        script: "cat /dev/zero | \"$RPV\" -q -L 5M | sha256sum",
        expected: "rpv",
        needs: None,
    },
    Scenario {
        name: "pv-limit",
        script: "cat /dev/zero | pv -q -L 5M | cat > /dev/null",
        expected: "pv",
        needs: Some("pv"),
    },
    Scenario {
        name: "slow-reader",
        script: "cat /dev/zero | cat | perl -e \
                 'while (sysread(STDIN, $b, 65536)) { select(undef, undef, undef, 0.01) }'",
        expected: "perl",
        needs: Some("perl"),
    },
    Scenario {
        name: "slow-producer",
        script: "perl -e 'while (1) { syswrite(STDOUT, \"x\" x 65536); \
                 select(undef, undef, undef, 0.01) }' | gzip -1 | cat > /dev/null",
        expected: "perl",
        needs: Some("perl"),
    },
    Scenario {
        name: "middle",
        script: "yes | sed s/y/n/ | cat > /dev/null",
        expected: "sed",
        needs: None,
    },
    Scenario {
        name: "loop",
        script: "seq 1 1000000000 | gzip -1 | gzip -d | while read l; do sleep 0.01; done",
        expected: "(loop)",
        needs: None,
    },
    Scenario {
        name: "socket",
        // A TCP peer on the loopback ($PORT: free) reading 16 KiB every 20 ms, started
        // beside the pipeline (no pipe: not a stage); the last stage sends to it.
        script: "python3 -c 'import socket, time, os; s = socket.socket(); \
                 s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); \
                 s.bind((\"127.0.0.1\", int(os.environ[\"PORT\"]))); s.listen(1); \
                 c = s.accept()[0]; \
                 [time.sleep(0.02) for _ in iter(lambda: c.recv(16384), b\"\")]' & \
                 sleep 1; head -c 1000G /dev/zero | cat | python3 -c 'import socket, sys, os, \
                 shutil; s = socket.create_connection((\"127.0.0.1\", int(os.environ[\"PORT\"]))); \
                 shutil.copyfileobj(sys.stdin.buffer, s.makefile(\"wb\"))'",
        expected: "python3",
        needs: Some("python3"),
    },
    Scenario {
        name: "xargs",
        // xargs starting an md5sum per 50 names: one stage, its children's work its own.
        script: "while :; do printf '%s\\n' /usr/bin/*; done | xargs -n 50 md5sum 2>&1 | \
                 cat > /dev/null",
        expected: "xargs",
        needs: None,
    },
    Scenario {
        name: "loop-python",
        // A loop starting a python3 per line (which reads its own modules): the loop.
        script: "seq 1 1000000000 | while read l; do python3 -c 'print(1)'; done | \
                 cat > /dev/null",
        expected: "(loop)",
        needs: Some("python3"),
    },
    Scenario {
        name: "socket-send",
        // As `socket`, the sender using send() (not counted in /proc/PID/io).
        script: "python3 -c 'import socket, time, os; s = socket.socket(); \
                 s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); \
                 s.bind((\"127.0.0.1\", int(os.environ[\"PORT\"]))); s.listen(1); \
                 c = s.accept()[0]; \
                 [time.sleep(0.02) for _ in iter(lambda: c.recv(16384), b\"\")]' & \
                 sleep 1; head -c 1000G /dev/zero | cat | python3 -c 'import socket, sys, os; \
                 s = socket.create_connection((\"127.0.0.1\", int(os.environ[\"PORT\"]))); \
                 [s.sendall(b) for b in iter(lambda: sys.stdin.buffer.read(65536), b\"\")]'",
        expected: "python3",
        needs: Some("python3"),
    },
];

struct Options {
    secs: u64,
    loops: Option<usize>,
    only: Vec<String>,
    cost: bool,
}

const USAGE: &str =
    "usage: rpv-bench doctor [--secs N] [--loops N] [--only NAME[,NAME...]] [--cost]";

fn parse(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        secs: 20,
        loops: None,
        only: Vec::new(),
        cost: false,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut number = |name: &str| -> Result<u64, String> {
            it.next()
                .and_then(|n| n.parse().ok())
                .ok_or(format!("{name} needs a number"))
        };
        match a.as_str() {
            "--secs" => o.secs = number("--secs")?.max(2),
            "--loops" => o.loops = Some(number("--loops")? as usize),
            "--only" => {
                let names = it.next().ok_or("--only needs a name")?;
                o.only.extend(names.split(',').map(str::to_string));
            }
            "--cost" => o.cost = true,
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other}\n{USAGE}")),
        }
    }
    Ok(o)
}

/// Runs `rpv-bench doctor`; returns the exit status.
pub fn main(args: &[String], rpv: &Path) -> i32 {
    let o = match parse(args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("rpv-bench doctor: {e}");
            return 2;
        }
    };
    if !rpv.is_file() {
        eprintln!(
            "rpv-bench doctor: {} not found: run `cargo build --release` or set RPV_BENCH_RPV",
            rpv.display()
        );
        return 2;
    }
    if o.cost {
        return cost(rpv, o.secs);
    }
    accuracy(rpv, &o)
}

/// `/proc/loadavg`'s first three fields and `/proc/pressure/cpu`'s `some avg10`.
fn load() -> String {
    let avg = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let avg: Vec<&str> = avg.split_whitespace().take(3).collect();
    let psi = std::fs::read_to_string("/proc/pressure/cpu")
        .ok()
        .and_then(|t| {
            let some = t.lines().find(|l| l.starts_with("some "))?;
            let v = some.split_whitespace().find(|w| w.starts_with("avg10="))?;
            Some(v.trim_start_matches("avg10=").to_string())
        })
        .unwrap_or_else(|| "?".into());
    format!("load {} , cpu pressure avg10 {psi}%", avg.join(" "))
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|d| d.join(program).is_file()))
}

/// A TCP port on the loopback that was free a moment ago (0 if none could be found).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_or(0, |a| a.port())
}

/// A shell running `script` in a process group of its own (`$RPV` the rpv under test,
/// `$PORT` a free loopback port).
fn start(script: &str, rpv: &Path) -> std::io::Result<Child> {
    Command::new("sh")
        .args(["-c", script])
        .env("RPV", rpv)
        .env("PORT", free_port().to_string())
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
}

/// Ends a process group started by [`start`] and waits for its shell.
fn stop(child: &mut Child) {
    let group = rustix::process::Pid::from_raw(child.id() as i32);
    if let Some(group) = group {
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::TERM);
    }
    let _ = child.wait();
}

/// The busy loops beside the pipeline.
struct Loops(Vec<Child>);

impl Loops {
    fn start(n: usize, rpv: &Path) -> Loops {
        Loops(
            (0..n)
                .filter_map(|_| start("while :; do :; done", rpv).ok())
                .collect(),
        )
    }
}

impl Drop for Loops {
    fn drop(&mut self) {
        for child in &mut self.0 {
            stop(child);
        }
    }
}

/// Watches `pid` with `args` for `secs` seconds, then interrupts the watcher; its stderr.
fn watch(rpv: &Path, pid: u32, args: &[&str], secs: f64) -> std::io::Result<String> {
    let mut watcher = Command::new(rpv)
        .arg(format!("--pipeline={pid}"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()?;
    let mut stderr = watcher.stderr.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    std::thread::sleep(Duration::from_secs_f64(secs));
    if let Some(pid) = rustix::process::Pid::from_raw(watcher.id() as i32) {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::INT);
    }
    let _ = watcher.wait();
    Ok(reader.join().unwrap_or_default())
}

/// The samples of a `--json` watch: for each update, the programs of the stages marked.
/// An update starts with the first stage's row (the stages come in pipeline order).
fn samples(ndjson: &str) -> Vec<Vec<String>> {
    let mut updates: Vec<Vec<String>> = Vec::new();
    let mut first: Option<u64> = None;
    for line in ndjson.lines() {
        let Ok(o) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if o["type"] != "progress" || o["meter"] != "stage" {
            continue;
        }
        let pid = o["pid"].as_u64();
        if first.is_none() {
            first = pid;
        }
        if pid == first {
            updates.push(Vec::new());
        }
        if o["bottleneck"] == true {
            let program = o["command"]
                .as_str()
                .unwrap_or("")
                .split(' ')
                .next()
                .unwrap_or("");
            let program = program.rsplit('/').next().unwrap_or(program).to_string();
            if let Some(marked) = updates.last_mut() {
                marked.push(program);
            }
        }
    }
    updates
}

fn accuracy(rpv: &Path, o: &Options) -> i32 {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let loops = o.loops.unwrap_or(cores);
    println!(
        "rpv-bench doctor: {} cores, {loops} busy loop(s) beside each pipeline, {} s each, \
         rpv {}",
        cores,
        o.secs,
        rpv.display()
    );
    println!("before: {}", load());
    let mut worst = 100.0f64;
    for s in SCENARIOS {
        if !o.only.is_empty() && !o.only.iter().any(|n| n == s.name) {
            continue;
        }
        if s.needs.is_some_and(|p| !on_path(p)) {
            println!("{:<16} skipped: needs {}", s.name, s.needs.unwrap_or(""));
            continue;
        }
        let _loops = Loops::start(loops, rpv);
        let Ok(mut shell) = start(s.script, rpv) else {
            println!("{:<16} could not start", s.name);
            continue;
        };
        // (The socket scenario starts its pipeline a second in, once its peer listens.)
        let settle = if s.name == "socket" { 1500 } else { 300 };
        std::thread::sleep(Duration::from_millis(settle));
        let text = watch(rpv, shell.id(), &["--json", "-i", "1"], o.secs as f64 + 0.5);
        stop(&mut shell);
        let samples = samples(&text.unwrap_or_default());
        let right = samples
            .iter()
            .filter(|m| m.len() == 1 && m[0] == s.expected)
            .count();
        let percent = if samples.is_empty() {
            0.0
        } else {
            100.0 * right as f64 / samples.len() as f64
        };
        worst = worst.min(percent);
        let wrong: Vec<String> = samples
            .iter()
            .filter(|m| !(m.len() == 1 && m[0] == s.expected))
            .map(|m| format!("[{}]", m.join(",")))
            .take(5)
            .collect();
        println!(
            "{:<16} {right:>3}/{:<3} {percent:5.1}%  expected {:<9} {}  ({})",
            s.name,
            samples.len(),
            s.expected,
            wrong.join(" "),
            load()
        );
    }
    println!("after: {}", load());
    println!("lowest: {worst:.1}% (goal: 95%)");
    0
}

fn cost(rpv: &Path, secs: u64) -> i32 {
    let stages = 20;
    let cats = vec!["cat"; stages - 2].join(" | ");
    let script = format!("head -c 1000G /dev/zero | \"$RPV\" -q -L 1M | {cats} > /dev/null");
    println!("rpv-bench doctor --cost: {stages} stages watched at -i 0.1 for {secs} s");
    println!("before: {}", load());
    let Ok(mut shell) = start(&script, rpv) else {
        eprintln!("rpv-bench doctor: cannot start sh");
        return 1;
    };
    std::thread::sleep(Duration::from_millis(500));
    let mut results = Vec::new();
    for (what, args) in [
        ("screen", vec!["-f", "-i", "0.1", "-w", "200", "-H", "60"]),
        ("json", vec!["--json", "-i", "0.1"]),
    ] {
        let mut watcher = match Command::new(rpv)
            .arg(format!("--pipeline={}", shell.id()))
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
        {
            Ok(w) => w,
            Err(e) => {
                eprintln!("rpv-bench doctor: {e}");
                stop(&mut shell);
                return 1;
            }
        };
        let t0 = Instant::now();
        std::thread::sleep(Duration::from_secs(secs));
        let used = crate::sysinfo::cpu_time(watcher.id()).unwrap_or_default();
        let wall = t0.elapsed();
        let _ = watcher.kill();
        let _ = watcher.wait();
        let share = 100.0 * used.as_secs_f64() / wall.as_secs_f64();
        results.push((what, share, used));
    }
    stop(&mut shell);
    for (what, share, used) in &results {
        println!(
            "{what:<7} {share:5.2}% of a core ({:.2} s of CPU in {secs} s)  (goal: under 1%)",
            used.as_secs_f64()
        );
    }
    println!("after: {}", load());
    0
}

/// The rpv under test, as for the throughput benchmark.
pub fn rpv_path(exe: &Path) -> PathBuf {
    std::env::var_os("RPV_BENCH_RPV")
        .map(PathBuf::from)
        .unwrap_or_else(|| exe.with_file_name("rpv"))
}
