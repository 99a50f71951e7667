//! The soak run (ignored by default): random pipelines of one to three rpv instances for a
//! while, checking every byte. Sources are a file, a bursty pipe writer or /dev/zero; sinks a
//! file, `-o FILE` or a slow reader; options mix paths and modifiers (`-C`, `-l`, `-L`,
//! `-B`, `-K`, `-E`, a display on a drained stderr); meanwhile the instances get SIGSTOP and
//! SIGCONT, SIGTSTP and SIGCONT, and SIGWINCH at random. Every run must end with status 0
//! and the exact bytes. It prints each run, and a summary.
//!
//! Three runs in ten are interrupted: one instance gets SIGINT, SIGTERM or SIGHUP at a
//! random moment. It must end with status 32 (or 0 if it had finished), the others with 0;
//! the output and every `--tee` copy must be a prefix of the stream, and every instance with
//! `--json` must report in its `end` what reached its `--tee` copies and, from the
//! interrupted instance on, what reached its output (the next stages pass everything on).
//!
//! `RPV_SOAK_SECS=300 cargo test --release --test it soak -- --ignored --nocapture`
//! (default 60 s; `RPV_SOAK_SEED` repeats a sequence).

use std::io::{Read, Write};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::util::{catches, data, pause, poll, rpv, Dir};

/// A small deterministic generator (xorshift), so a seed repeats a whole soak.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

/// Stands for the run's `--tee` file of an instance in a plan (`@tee@N`).
const TEE: &str = "@tee@";
/// Stands for a FIFO that a thread reads into the run's `--tee` file (`@fifo@N`): alone, it
/// is the `--tee` pipe that takes each round's tee straight.
const FIFO: &str = "@fifo@";

#[derive(Clone, Copy, Debug, PartialEq)]
enum Source {
    File,
    SlowPipe,
    Zero,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Sink {
    File,
    Named,
    SlowReader,
}

/// One random pipeline.
#[derive(Debug)]
struct Plan {
    len: usize,
    seed: u64,
    source: Source,
    sink: Sink,
    /// The options of each instance, in pipeline order.
    stages: Vec<Vec<String>>,
    /// Send signals while it runs.
    signals: bool,
    /// Interrupt an instance: (which, signal, after how many milliseconds).
    interrupt: Option<(usize, libc::c_int, u64)>,
}

fn plan(rng: &mut Rng) -> Plan {
    let len = match rng.below(4) {
        0 => rng.below(5000) as usize,
        1 => *rng.pick(&[4095, 4096, 65_537, 1 << 20, (1 << 20) + 1]),
        _ => rng.below(24 << 20) as usize,
    };
    let source = *rng.pick(&[Source::File, Source::SlowPipe, Source::Zero]);
    // `-S -s 0` would mean "no size": /dev/zero without end.
    let len = if source == Source::Zero {
        len.max(1)
    } else {
        len
    };
    let sink = *rng.pick(&[Sink::File, Sink::Named, Sink::SlowReader]);
    let instances = 1 + rng.below(3) as usize;
    let interrupt = rng.chance(30).then(|| {
        let which = rng.below(instances as u64) as usize;
        let signal = *rng.pick(&[libc::SIGINT, libc::SIGTERM, libc::SIGHUP]);
        (which, signal, 2 + rng.below(150))
    });
    let mut stages = Vec::new();
    for i in 0..instances {
        let mut o: Vec<String> = Vec::new();
        // The interrupted instance mostly reports in --json, whose totals are checked.
        let json = interrupt.is_some_and(|(which, _, _)| which == i) && rng.chance(70);
        match rng.below(8) {
            _ if json => o.extend(["--json", "-i", "0.1"].map(String::from)),
            0..=2 => o.extend(["-f", "-i", "0.1"].map(String::from)),
            3 => o.extend(["--json", "-i", "0.1"].map(String::from)),
            4 => o.extend(["--log", "-i", "0.1"].map(String::from)),
            _ => o.push("-q".into()),
        }
        // /dev/zero has no lines: `-S -s N -l` would never stop.
        let zero = source == Source::Zero && i == 0;
        for (percent, option) in [
            (20, "-C"),
            (if zero { 0 } else { 20 }, "-l"),
            (10, "-E"),
            (10, "-K"),
            (10, "-c"),
            (10, "-t"),
        ] {
            if rng.chance(percent) {
                o.push(option.into());
            }
        }
        if rng.chance(15) {
            o.extend([
                "-B".into(),
                rng.pick(&["4096", "65537", "1M", "3"]).to_string(),
            ]);
        }
        if rng.chance(15) {
            // A copy of the stream; `run` checks it byte for byte.
            let to = if rng.chance(50) { FIFO } else { TEE };
            o.extend(["--tee".into(), format!("{to}{i}")]);
        }
        if rng.chance(5) {
            o.push("--pipeline".into());
        }
        if rng.chance(15) {
            // Fast enough to end within a few seconds.
            let rate = (len as u64 / 2).max(64 << 10);
            o.extend(["-L".into(), rate.to_string()]);
        }
        if source == Source::Zero && i == 0 {
            o.extend([
                "-S".into(),
                "-s".into(),
                len.to_string(),
                "/dev/zero".into(),
            ]);
        }
        stages.push(o);
    }
    Plan {
        len,
        seed: rng.next(),
        source,
        sink,
        stages,
        signals: rng.chance(60),
        interrupt,
    }
}

/// What an interrupted run checked.
#[derive(Debug, Default)]
struct Checked {
    /// An instance ended with status 32.
    interrupted: bool,
    /// `end` totals compared with what reached a main output.
    outputs: usize,
    /// `end` totals compared with a `--tee` copy.
    copies: usize,
}

/// The `end` object of an instance's `--json` output.
fn json_end(stderr: &str) -> Result<serde_json::Value, String> {
    let last = stderr.lines().last().unwrap_or_default();
    let end: serde_json::Value =
        serde_json::from_str(last).map_err(|e| format!("last --json line {last:?}: {e}"))?;
    if end["type"] != "end" {
        return Err(format!("last --json line is not the end: {last}"));
    }
    Ok(end)
}

/// Sends `signal` to `pid`.
fn kill(pid: u32, signal: libc::c_int) {
    // SAFETY: kill(2) on a child of ours that has not been waited for yet.
    unsafe {
        libc::kill(pid as libc::pid_t, signal);
    }
}

/// Runs one plan; returns a description of what went wrong, if anything.
fn run(plan: &Plan, dir: &Dir, rng: &mut Rng) -> Result<Checked, String> {
    let input = data(plan.len, plan.seed);
    let expected = if plan.source == Source::Zero {
        vec![0; plan.len]
    } else {
        input.clone()
    };
    let in_path = dir.file("in", &input);
    let out_path = dir.path("out");
    let _ = std::fs::remove_file(&out_path);
    for i in 0..plan.stages.len() {
        let _ = std::fs::remove_file(dir.path(&format!("tee{i}")));
        let _ = std::fs::remove_file(dir.path(&format!("fifo{i}")));
    }
    // Each FIFO's reader: (FIFO, the file its bytes go to, the thread).
    let mut fifos = Vec::new();
    let mut children: Vec<Child> = Vec::new();
    let mut feeder = None;
    let last = plan.stages.len() - 1;
    for (i, options) in plan.stages.iter().enumerate() {
        // `--tee` names are placeholders until here: the run's own directory.
        let options: Vec<String> = options
            .iter()
            .map(|o| {
                if let Some(n) = o.strip_prefix(FIFO) {
                    let fifo = dir.path(&format!("fifo{n}"));
                    let reader = crate::tee::fifo_reader(&fifo);
                    fifos.push((fifo.clone(), dir.path(&format!("tee{n}")), reader));
                    return fifo.to_string_lossy().into_owned();
                }
                match o.strip_prefix(TEE) {
                    Some(n) => dir.path(&format!("tee{n}")).to_string_lossy().into_owned(),
                    None => o.clone(),
                }
            })
            .collect();
        let mut cmd = rpv(&options.iter().map(String::as_str).collect::<Vec<_>>());
        cmd.stderr(Stdio::piped());
        if i == 0 {
            match plan.source {
                Source::File => {
                    cmd.arg(&in_path).stdin(Stdio::null());
                }
                Source::SlowPipe => {
                    cmd.stdin(Stdio::piped());
                }
                Source::Zero => {
                    cmd.stdin(Stdio::null());
                }
            }
        } else {
            let prev = children[i - 1].stdout.take().unwrap();
            cmd.stdin(Stdio::from(prev));
        }
        if i < last {
            cmd.stdout(Stdio::piped());
        } else {
            match plan.sink {
                Sink::File => {
                    cmd.stdout(std::fs::File::create(&out_path).unwrap());
                }
                Sink::Named => {
                    cmd.arg("-o").arg(&out_path).stdout(Stdio::null());
                }
                Sink::SlowReader => {
                    cmd.stdout(Stdio::piped());
                }
            }
        }
        let mut child = cmd.spawn().map_err(|e| format!("spawn: {e}"))?;
        if i == 0 && plan.source == Source::SlowPipe {
            let mut stdin = child.stdin.take().unwrap();
            let input = input.clone();
            let mut r = Rng(plan.seed | 1);
            feeder = Some(std::thread::spawn(move || {
                let mut at = 0;
                while at < input.len() {
                    let n = (1 + r.below(256 << 10) as usize).min(input.len() - at);
                    if stdin.write_all(&input[at..at + n]).is_err() {
                        return;
                    }
                    at += n;
                    if r.chance(10) {
                        pause(Duration::from_millis(r.below(30)));
                    }
                }
            }));
        }
        children.push(child);
    }
    // Drain every display (a full stderr must not matter, but must not hang the soak).
    let drains: Vec<_> = children
        .iter_mut()
        .map(|c| {
            let mut e = c.stderr.take().unwrap();
            std::thread::spawn(move || {
                let mut text = Vec::new();
                let _ = e.read_to_end(&mut text);
                String::from_utf8_lossy(&text).into_owned()
            })
        })
        .collect();
    let reader = children[last].stdout.take().map(|mut out| {
        let mut r = Rng(plan.seed ^ 0x5555);
        std::thread::spawn(move || {
            let mut got = Vec::new();
            let mut buf = vec![0; 1 << 20];
            loop {
                let want = 1 + r.below(buf.len() as u64) as usize;
                match out.read(&mut buf[..want]) {
                    Ok(0) | Err(_) => return got,
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                }
                if r.chance(5) {
                    pause(Duration::from_millis(r.below(20)));
                }
            }
        })
    });
    // Signals until every instance has ended.
    let pids: Vec<u32> = children.iter().map(Child::id).collect();
    let done = Arc::new(AtomicBool::new(false));
    let signaller = plan.signals.then(|| {
        let done = done.clone();
        let mut r = Rng(plan.seed ^ 0xabcd);
        std::thread::spawn(move || {
            let mut sent = 0;
            while !done.load(Ordering::Relaxed) {
                pause(Duration::from_millis(5 + r.below(60)));
                let pid = *r.pick(&pids);
                match r.below(3) {
                    0 => {
                        kill(pid, libc::SIGSTOP);
                        pause(Duration::from_millis(r.below(50)));
                        kill(pid, libc::SIGCONT);
                    }
                    1 => {
                        kill(pid, libc::SIGTSTP);
                        pause(Duration::from_millis(r.below(50)));
                        kill(pid, libc::SIGCONT);
                    }
                    _ => kill(pid, libc::SIGWINCH),
                }
                sent += 1;
            }
            sent
        })
    });
    let started = Instant::now();
    let deadline = started + Duration::from_secs(120);
    let mut statuses = Vec::new();
    let mut interrupt = plan.interrupt;
    for i in 0..children.len() {
        let left = deadline
            .saturating_duration_since(Instant::now())
            .as_secs_f64();
        let status = poll(left, || {
            // The interrupt, from this thread, which alone reaps the children: the target
            // is signalled only while it has not been reaped (its PID is still its own).
            // Not before it has its handler: a signal that comes first ends any program
            // (pv too) by the signal itself.
            if let Some((which, signal, after)) = interrupt {
                if statuses.len() > which {
                    interrupt = None;
                } else if started.elapsed() >= Duration::from_millis(after)
                    && catches(children[which].id(), signal)
                {
                    kill(children[which].id(), signal);
                    interrupt = None;
                }
            }
            children[i].try_wait().unwrap()
        });
        match status {
            Some(status) => statuses.push(status),
            None => {
                done.store(true, Ordering::Relaxed);
                for c in &mut children {
                    let _ = c.kill();
                }
                return Err("still running after 120 s".into());
            }
        }
    }
    done.store(true, Ordering::Relaxed);
    let sent = signaller.map_or(0, |s| s.join().unwrap());
    if let Some(f) = feeder {
        let _ = f.join();
    }
    let out = match reader {
        Some(r) => r.join().unwrap(),
        None => std::fs::read(&out_path).unwrap_or_default(),
    };
    let stderr: Vec<String> = drains.into_iter().map(|d| d.join().unwrap()).collect();
    for (fifo, file, reader) in fifos {
        crate::tee::release_fifo(&fifo);
        std::fs::write(file, reader.join().unwrap()).unwrap();
    }
    let _ = rng.next();
    let mut checked = Checked::default();
    let interrupted = plan
        .interrupt
        .map(|(which, _, _)| which)
        .filter(|&which| statuses[which].code() == Some(32));
    for (i, status) in statuses.iter().enumerate() {
        if Some(i) == interrupted {
            checked.interrupted = true;
            continue;
        }
        if !status.success() {
            return Err(format!(
                "instance {i} ended with {status} ({sent} signals): {}",
                stderr[i]
                    .chars()
                    .rev()
                    .take(300)
                    .collect::<String>()
                    .chars()
                    .rev()
                    .collect::<String>()
            ));
        }
    }
    if let Some(which) = interrupted {
        // Prefixes everywhere, and the --json totals of what reached each output.
        if !expected.starts_with(&out) {
            return Err(format!(
                "interrupted: the {} bytes out are not a prefix ({sent} signals)",
                out.len()
            ));
        }
        for (i, options) in plan.stages.iter().enumerate() {
            let tee = options
                .iter()
                .find_map(|o| o.strip_prefix(TEE).or_else(|| o.strip_prefix(FIFO)));
            let copy = tee.map(|n| std::fs::read(dir.path(&format!("tee{n}"))).unwrap_or_default());
            if let Some(copy) = &copy {
                if !expected.starts_with(copy) {
                    return Err(format!("interrupted: --tee of instance {i} not a prefix"));
                }
            }
            if !options.iter().any(|o| o == "--json") {
                continue;
            }
            let end = json_end(&stderr[i]).map_err(|e| format!("instance {i}: {e}"))?;
            if let Some(copy) = &copy {
                let total = &end["outputs"][0]["bytes"];
                if *total != copy.len() {
                    return Err(format!(
                        "instance {i}: end says {total} bytes went to --tee, the copy has {}",
                        copy.len()
                    ));
                }
                checked.copies += 1;
            }
            if i >= which {
                let (key, want) = if options.iter().any(|o| o == "-l") {
                    ("lines", out.iter().filter(|&&b| b == b'\n').count())
                } else {
                    ("bytes", out.len())
                };
                if end[key] != want {
                    return Err(format!(
                        "instance {i}: end says {} {key}, {want} reached the output \
                         (instance {which} interrupted)",
                        end[key]
                    ));
                }
                checked.outputs += 1;
            }
        }
        return Ok(checked);
    }
    if out != expected {
        let first = out.iter().zip(&expected).position(|(a, b)| a != b);
        return Err(format!(
            "{} bytes out of {}, first difference at {first:?} ({sent} signals)",
            out.len(),
            expected.len()
        ));
    }
    for (i, options) in plan.stages.iter().enumerate() {
        let tee = options
            .iter()
            .find_map(|o| o.strip_prefix(TEE).or_else(|| o.strip_prefix(FIFO)));
        if let Some(n) = tee {
            let copy = std::fs::read(dir.path(&format!("tee{n}"))).unwrap_or_default();
            if copy != expected {
                let first = copy.iter().zip(&expected).position(|(a, b)| a != b);
                return Err(format!(
                    "--tee of instance {i}: {} bytes out of {}, first difference at {first:?}",
                    copy.len(),
                    expected.len()
                ));
            }
        }
    }
    if sent > 0 {
        eprint!(" [{sent} signals]");
    }
    Ok(checked)
}

#[test]
#[ignore = "a long run: RPV_SOAK_SECS=300 cargo test --release --test it soak -- --ignored --nocapture"]
fn soak() {
    let secs: u64 = std::env::var("RPV_SOAK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let seed: u64 = std::env::var("RPV_SOAK_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
                | 1
        });
    eprintln!("soak: {secs} s, RPV_SOAK_SEED={seed}");
    let mut rng = Rng(seed);
    let dir = Dir::new();
    let end = Instant::now() + Duration::from_secs(secs);
    let (mut runs, mut bytes, mut failures) = (0, 0u64, Vec::new());
    let (mut interrupted, mut outputs, mut copies) = (0, 0, 0);
    while Instant::now() < end {
        let plan = plan(&mut rng);
        let stages: Vec<String> = plan.stages.iter().map(|s| s.join(" ")).collect();
        let stop = match plan.interrupt {
            Some((which, signal, after)) => {
                format!(", signal {signal} to instance {which} after {after} ms")
            }
            None => String::new(),
        };
        eprint!(
            "run {runs}: {:?} {} B → [{}] → {:?}{}{stop}",
            plan.source,
            plan.len,
            stages.join("] | ["),
            plan.sink,
            if plan.signals { ", signals" } else { "" }
        );
        let started = Instant::now();
        match run(&plan, &dir, &mut rng) {
            Ok(checked) => {
                if checked.interrupted {
                    interrupted += 1;
                    outputs += checked.outputs;
                    copies += checked.copies;
                    eprint!(
                        " [interrupted: {} output and {} --tee totals checked]",
                        checked.outputs, checked.copies
                    );
                }
                eprintln!(" ok in {:.2} s", started.elapsed().as_secs_f64());
            }
            Err(e) => {
                eprintln!(" FAILED: {e}");
                failures.push(format!("run {runs} ({plan:?}): {e}"));
            }
        }
        runs += 1;
        bytes += plan.len as u64;
    }
    eprintln!(
        "soak: {runs} runs, {:.1} MiB checked, {} failed (RPV_SOAK_SEED={seed}); \
         {interrupted} interrupted, whose --json end totals matched {outputs} outputs and \
         {copies} --tee copies",
        bytes as f64 / 1048576.0,
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
