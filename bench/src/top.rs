//! `rpv-bench top --cost`: what `rpv --top` costs on a machine with many processes.
//!
//! Usage: `rpv-bench top --cost [--secs N] [--procs N] [--moving N] [--interval S]
//! [--warm-up N]`.
//!
//! `--moving N` adds N more flows that move all along: N processes each reading a file of
//! its own, 16 KiB every 0.1 s (160 KiB/s each; a Python loop, from a sparse file in the
//! temporary directory). The goals: 50 moving flows and 1,000 idle processes at
//! `-i 0.5` under 1 % of a core (`--procs 1000 --moving 50 --interval 0.5`); 500 idle
//! processes at `-i 1` under 0.3 % (the defaults).
//!
//! Starts `--procs` idle processes (default 500: `sleep`s in a process group of their own)
//! beside whatever the machine runs, plus two flows moving data at about 1 MB/s each, so
//! the view has rows of every common kind to draw (`head -c 100G /dev/zero | rpv -q -L 1M
//! | dd of=/dev/null`: a pipeline, an rpv, a process writing; `dd if=FILE | rpv -q -L 1M >
//! /dev/null`: a file read, with its position and size, from a sparse file of 100 GiB in
//! a temporary directory), then runs
//! `rpv --top -i S` (default 1) for `--secs` seconds (default 30) twice: drawing the
//! screen (`-f`, to /dev/null) and writing `--json`. Reports the processes listed in
//! `/proc` and the watcher's CPU time (its threads' time on a CPU, `schedstat`, in ns) over
//! its wall time after its first 5 s (its first look walks every process's descriptors
//! once; that is printed apart): the share of one core it used. `--warm-up N` leaves out
//! its first N seconds instead: with 40, the cost once the idle processes have been seen
//! idle for half a minute, as on a machine whose processes have slept for hours (they are
//! then looked at every 8 s, not every 4 s). Then the flow scanner
//! alone in this process, a look a second: the CPU time of one look. The goal: under 1 % of a core
//! for 500 processes at `-i 1`.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Left out of the measure by default: the start (the first look at every process).
const WARM_UP_S: u64 = 5;

/// Processes listed in `/proc` now.
fn processes() -> usize {
    std::fs::read_dir("/proc").map_or(0, |d| {
        d.flatten()
            .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
            .count()
    })
}

/// `script` with `sh -c` in a process group of its own (`$RPV` is rpv).
fn group(script: &str, rpv: &Path) -> std::io::Result<Child> {
    Command::new("sh")
        .args(["-c", script])
        .env("RPV", rpv)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
}

fn stop(child: &mut Child) {
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", child.id())])
        .stderr(Stdio::null())
        .status();
    let _ = child.wait();
}

/// `rpv-bench top ARGS`.
pub fn main(args: &[String], rpv: &Path) -> i32 {
    let (mut secs, mut procs, mut interval, mut cost) = (30u64, 500usize, "1".to_string(), false);
    let mut moving = 0u64;
    let mut warm_up = Duration::from_secs(WARM_UP_S);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut number = |what: &str| {
            it.next()
                .and_then(|v| v.parse::<u64>().ok())
                .ok_or(what.to_string())
        };
        match a.as_str() {
            "--cost" => cost = true,
            "--secs" => match number("--secs needs a number") {
                Ok(n) => secs = n.max(1),
                Err(e) => return usage(&e),
            },
            "--procs" => match number("--procs needs a number") {
                Ok(n) => procs = n as usize,
                Err(e) => return usage(&e),
            },
            "--moving" => match number("--moving needs a number") {
                Ok(n) => moving = n,
                Err(e) => return usage(&e),
            },
            "--warm-up" => match number("--warm-up needs a number") {
                Ok(n) => warm_up = Duration::from_secs(n),
                Err(e) => return usage(&e),
            },
            "--interval" => match it.next() {
                Some(v) => interval = v.clone(),
                None => return usage("--interval needs a number"),
            },
            other => return usage(&format!("unknown argument {other}")),
        }
    }
    if !cost {
        return usage("nothing to do");
    }
    let idle = format!("i=0; while [ $i -lt {procs} ]; do sleep 3600 & i=$((i+1)); done; wait");
    let Ok(mut sleepers) = group(&idle, rpv) else {
        eprintln!("rpv-bench top: cannot start sh");
        return 1;
    };
    let Ok(dir) = tempfile::tempdir() else {
        eprintln!("rpv-bench top: cannot make a temporary directory");
        stop(&mut sleepers);
        return 1;
    };
    let data = dir.path().join("data");
    if std::fs::File::create(&data)
        .and_then(|f| f.set_len(100 << 30))
        .is_err()
    {
        eprintln!("rpv-bench top: cannot make {}", data.display());
        stop(&mut sleepers);
        return 1;
    }
    // Each reader reads the sparse file from its own place, 16 KiB every 0.1 s.
    let reader = format!(
        "python3 -c \"import os, time; f = os.open('{}', os.O_RDONLY); \
         os.lseek(f, $i << 30, 0); [(os.read(f, 16384), time.sleep(0.1)) for _ in \
         iter(int, 1)]\"",
        data.display()
    );
    let flow = format!(
        "head -c 100G /dev/zero | \"$RPV\" -q -L 1M | dd of=/dev/null bs=64k status=none & \
         dd if='{}' bs=64k status=none | \"$RPV\" -q -L 1M > /dev/null & \
         i=0; while [ $i -lt {moving} ]; do {reader} & i=$((i+1)); done; wait",
        data.display()
    );
    let Ok(mut flow) = group(&flow, rpv) else {
        stop(&mut sleepers);
        return 1;
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while processes() < procs && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    println!(
        "rpv-bench top --cost: {} processes listed ({procs} idle ones started, {} moving \
         flows), -i {interval}, {secs} s each",
        processes(),
        moving + 2
    );
    let mut results = Vec::new();
    for (what, extra) in [
        ("screen", vec!["-f", "-w", "200", "-H", "60"]),
        ("json", vec!["--json"]),
    ] {
        let mut watcher = match Command::new(rpv)
            .args(["--top", "-i", &interval])
            .args(&extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
        {
            Ok(w) => w,
            Err(e) => {
                eprintln!("rpv-bench top: {e}");
                stop(&mut flow);
                stop(&mut sleepers);
                return 1;
            }
        };
        // The first look walks every process's descriptors once: a cost of starting, not
        // of watching, reported apart.
        std::thread::sleep(warm_up);
        let start = crate::sysinfo::cpu_time(watcher.id()).unwrap_or_default();
        let t0 = Instant::now();
        std::thread::sleep(Duration::from_secs(secs));
        let used = crate::sysinfo::cpu_time(watcher.id())
            .unwrap_or_default()
            .saturating_sub(start);
        let wall = t0.elapsed();
        println!(
            "{what:<7} starting: {:.2} s of CPU in the first {} s",
            start.as_secs_f64(),
            warm_up.as_secs()
        );
        let _ = watcher.kill();
        let _ = watcher.wait();
        results.push((what, 100.0 * used.as_secs_f64() / wall.as_secs_f64(), used));
    }
    let scans = scan_times(secs.min(20));
    stop(&mut flow);
    stop(&mut sleepers);
    if let Some((per_look, cost)) = scans {
        println!(
            "scan    {:.2} ms of CPU per look at every process (the flow scanner alone, in \
             this process; the last look: {} processes{}, {} files kept open, {} walked, \
             {} fdinfo read, {} looked at for a pipeline)",
            per_look * 1e3,
            cost.processes,
            if cost.listed {
                ", /proc listed"
            } else {
                ", /proc not listed again"
            },
            cost.kept,
            cost.walked,
            cost.fdinfo,
            cost.pipelines_tried
        );
    }
    // The goals: 0.3 % with idle processes only, 1 % with moving flows.
    let goal = if moving == 0 { "0.3%" } else { "1%" };
    for (what, share, used) in &results {
        println!(
            "{what:<7} {share:5.2}% of a core ({:.2} s of CPU in {secs} s)  (goal: under {goal})",
            used.as_secs_f64()
        );
    }
    0
}

/// This thread's time on a CPU so far (`/proc/thread-self/schedstat`, nanoseconds).
fn thread_cpu() -> Duration {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    let ns = (text.split_whitespace().next()).and_then(|f| f.parse::<u64>().ok());
    Duration::from_nanos(ns.unwrap_or(0))
}

/// The flow scanner alone, in this process: a look every second for `secs` seconds; the
/// CPU time of a look on average (this thread's time on a CPU over the looks) and
/// the last one's cost.
fn scan_times(secs: u64) -> Option<(f64, rpv::top::scan::Cost)> {
    let mut scanner = rpv::top::scan::Scanner::new(1.0);
    scanner.scan(rpv::sys::monotonic_ns());
    let before = thread_cpu();
    for _ in 0..secs {
        std::thread::sleep(Duration::from_secs(1));
        scanner.scan(rpv::sys::monotonic_ns());
    }
    let used = thread_cpu().saturating_sub(before);
    (secs > 0).then(|| (used.as_secs_f64() / secs as f64, scanner.cost()))
}

fn usage(why: &str) -> i32 {
    eprintln!(
        "rpv-bench top: {why}\nusage: rpv-bench top --cost [--secs N] [--procs N] [--moving N] \
         [--interval S] [--warm-up N]"
    );
    2
}
