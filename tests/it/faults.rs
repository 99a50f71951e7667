//! Fault injection with strace (`strace -f -e inject=SYSCALL:error=E:when=N`) on every
//! transfer path and fallback: pipe→pipe, file→pipe, pipe→file, file→file, `-o FILE`,
//! /dev/zero into a pipe and a file, `-l` from a pipe and a file, and `-C` (read/write),
//! with splice, copy_file_range, tee, vmsplice, read and write failing with EINVAL, EIO,
//! EAGAIN, EINTR or ENOSPC at several call numbers. Every run must either copy the input
//! byte for byte with status 0, or report the error with status 16 and leave a prefix of
//! the input: never a silent difference, a hang or a crash.
//!
//! strace counts calls per thread, so `when=N` also hits the main thread's N-th call of the
//! same kind. The main thread's first `read`s are the dynamic loader's (a failure there is
//! exit 127 before rpv runs) and its first `write` is the error message itself, so `read`
//! faults start at call 3 and `write` faults at call 2. Skipped, with a message, when strace
//! is not installed.

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use crate::reliability::strace_available;
use crate::util::{data, text, Dir};

/// Where the data comes from.
#[derive(Clone, Copy, Debug)]
enum Source {
    /// A pipe on stdin.
    Pipe,
    /// A file operand.
    File,
    /// `/dev/zero` with `-S -s` the length.
    Zero,
}

/// Where it goes.
#[derive(Clone, Copy, Debug)]
enum Sink {
    /// A pipe on stdout.
    Pipe,
    /// A regular file on stdout.
    File,
    /// `-o FILE`.
    Named,
}

/// One transfer path and the syscalls it uses.
struct Route {
    name: &'static str,
    source: Source,
    sink: Sink,
    /// Extra options (`-l`, `-C`).
    options: &'static [&'static str],
    /// Text with newlines (for `-l`) instead of random bytes.
    lines: bool,
    /// The syscalls worth failing on this path.
    syscalls: &'static [&'static str],
}

const ROUTES: &[Route] = &[
    Route {
        name: "pipe→pipe",
        source: Source::Pipe,
        sink: Sink::Pipe,
        options: &[],
        lines: false,
        syscalls: &["splice", "read", "write"],
    },
    Route {
        name: "file→pipe",
        source: Source::File,
        sink: Sink::Pipe,
        options: &[],
        lines: false,
        syscalls: &["splice", "read", "write"],
    },
    Route {
        name: "pipe→file",
        source: Source::Pipe,
        sink: Sink::File,
        options: &[],
        lines: false,
        syscalls: &["splice", "read", "write"],
    },
    Route {
        name: "file→file",
        source: Source::File,
        sink: Sink::File,
        options: &[],
        lines: false,
        syscalls: &["copy_file_range", "read", "write"],
    },
    Route {
        name: "file→-o file",
        source: Source::File,
        sink: Sink::Named,
        options: &[],
        lines: false,
        syscalls: &["copy_file_range", "write"],
    },
    Route {
        name: "zero→pipe",
        source: Source::Zero,
        sink: Sink::Pipe,
        options: &[],
        lines: false,
        syscalls: &["vmsplice", "write"],
    },
    Route {
        name: "zero→file",
        source: Source::Zero,
        sink: Sink::File,
        options: &[],
        lines: false,
        syscalls: &["write"],
    },
    Route {
        name: "-l pipe→pipe",
        source: Source::Pipe,
        sink: Sink::Pipe,
        options: &["-l"],
        lines: true,
        syscalls: &["tee", "splice", "read"],
    },
    Route {
        name: "-l file→file",
        source: Source::File,
        sink: Sink::File,
        options: &["-l"],
        lines: true,
        syscalls: &["copy_file_range", "write"],
    },
    Route {
        name: "-l file→pipe",
        source: Source::File,
        sink: Sink::Pipe,
        options: &["-l"],
        lines: true,
        syscalls: &["splice"],
    },
    Route {
        name: "-C pipe→file",
        source: Source::Pipe,
        sink: Sink::File,
        options: &["-C"],
        lines: false,
        syscalls: &["read", "write"],
    },
    Route {
        name: "-C file→pipe",
        source: Source::File,
        sink: Sink::Pipe,
        options: &["-C"],
        lines: false,
        syscalls: &["read", "write"],
    },
];

const ERRNOS: &[&str] = &["EINVAL", "EIO", "EAGAIN", "EINTR", "ENOSPC"];

/// Injection points: single calls, every later call, every third call; EAGAIN and EINTR
/// (retried by rpv) get a bounded run instead of "every later call", which would only
/// ever be retried.
fn points(syscall: &str, errno: &str) -> Vec<&'static str> {
    let retried = matches!(errno, "EAGAIN" | "EINTR");
    let mut points = match (syscall, retried) {
        ("read", false) => vec!["3", "5", "4+", "3+3"],
        ("read", true) => vec!["3", "5", "3..8", "3+3"],
        ("write", false) => vec!["2", "3", "3+", "2+3"],
        ("write", true) => vec!["2", "3", "2..6", "2+3"],
        (_, false) => vec!["1", "2", "3+", "2+3"],
        (_, true) => vec!["1", "2", "2..5", "2+3"],
    };
    // Fewer points for the errors every path treats alike.
    if errno == "ENOSPC" {
        points.truncate(2);
    }
    points
}

/// How long a case may run before it counts as hung: every system call of a traced rpv
/// waits for strace to be scheduled, twice, so on a machine busy with other work (three
/// busy loops and ten `gzip` pipelines beside the suite) six cases were still running
/// after a minute.
const HANG: f64 = 3.0 * crate::util::PATIENCE;

/// Bytes moved through each route: several pipe-sized and buffer-sized calls, and not a
/// multiple of a page.
const LEN: usize = (2 << 20) + 4097;

struct Case {
    route: &'static Route,
    syscall: &'static str,
    errno: &'static str,
    when: &'static str,
}

/// How a case ended: exact copy (status 0) or a reported error (16); or what it did wrong.
fn run_case(case: &Case, dir: &Dir, index: usize) -> Result<u8, String> {
    let route = case.route;
    let input = if route.lines {
        let mut t = text(40_000);
        t.truncate(LEN);
        t
    } else {
        data(LEN, index as u64 + 1)
    };
    let expected: Vec<u8> = match route.source {
        Source::Zero => vec![0; LEN],
        _ => input.clone(),
    };
    let in_path = dir.file(&format!("in{index}"), &input);
    let out_path = dir.path(&format!("out{index}"));
    let inject = format!(
        "inject={}:error={}:when={}",
        case.syscall, case.errno, case.when
    );
    let mut cmd = Command::new("strace");
    cmd.args(["-f", "-qq", "-o", "/dev/null", "-e", &inject])
        .arg(env!("CARGO_BIN_EXE_rpv"))
        .arg("-q")
        .args(route.options)
        .env("LC_ALL", "C")
        .stderr(Stdio::piped());
    match route.source {
        Source::Pipe => {
            cmd.stdin(Stdio::piped());
        }
        Source::File => {
            cmd.arg(&in_path).stdin(Stdio::null());
        }
        Source::Zero => {
            cmd.args(["-S", "-s", &LEN.to_string(), "/dev/zero"])
                .stdin(Stdio::null());
        }
    }
    match route.sink {
        Sink::Pipe => {
            cmd.stdout(Stdio::piped());
        }
        Sink::File => {
            cmd.stdout(std::fs::File::create(&out_path).unwrap());
        }
        Sink::Named => {
            cmd.arg("-o").arg(&out_path).stdout(Stdio::null());
        }
    }
    let mut child = cmd.spawn().expect("spawn strace");
    let feeder = child.stdin.take().map(|mut stdin| {
        let input = input.clone();
        std::thread::spawn(move || {
            let _ = stdin.write_all(&input);
        })
    });
    let reader = child.stdout.take().map(|mut stdout| {
        std::thread::spawn(move || {
            let mut out = Vec::new();
            let _ = stdout.read_to_end(&mut out);
            out
        })
    });
    let mut stderr = child.stderr.take().unwrap();
    let err_reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let status = crate::util::exit_within(&mut child, HANG);
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    if let Some(f) = feeder {
        let _ = f.join();
    }
    let out = match reader {
        Some(r) => r.join().unwrap(),
        None => std::fs::read(&out_path).unwrap_or_default(),
    };
    let stderr = err_reader.join().unwrap();
    let _ = std::fs::remove_file(&in_path);
    let _ = std::fs::remove_file(&out_path);
    let what = format!(
        "{} with {} → {} at {}",
        route.name, case.syscall, case.errno, case.when
    );
    let Some(status) = status else {
        return Err(format!("{what}: still running after {HANG} s"));
    };
    match status.code() {
        Some(0) if out == expected => Ok(0),
        Some(0) => Err(format!(
            "{what}: status 0 but {} bytes out of {} differ or are missing",
            out.len(),
            expected.len()
        )),
        Some(16) if !stderr.contains("rpv: ") => {
            Err(format!("{what}: status 16 without a message"))
        }
        Some(16) if !expected.starts_with(&out) => Err(format!(
            "{what}: status 16 ({}) but the {} bytes out are not a prefix of the input",
            stderr.trim(),
            out.len()
        )),
        Some(16) => Ok(16),
        other => Err(format!("{what}: status {other:?}: {}", stderr.trim())),
    }
}

#[test]
fn every_path_is_exact_or_reports_the_error_under_injected_faults() {
    let _cores = crate::util::cores_busy();
    if !strace_available() {
        return;
    }
    let mut cases = Vec::new();
    for route in ROUTES {
        for &syscall in route.syscalls {
            for &errno in ERRNOS {
                for when in points(syscall, errno) {
                    cases.push(Case {
                        route,
                        syscall,
                        errno,
                        when,
                    });
                }
            }
        }
    }
    let dir = Dir::new();
    let next = AtomicUsize::new(0);
    let failures = Mutex::new(Vec::new());
    let reported = AtomicUsize::new(0);
    let started = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(case) = cases.get(i) else {
                    break;
                };
                match run_case(case, &dir, i) {
                    Ok(0) => {}
                    Ok(_) => {
                        reported.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(failure) => failures.lock().unwrap().push(failure),
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    let reported = reported.into_inner();
    eprintln!(
        "{} fault-injection cases in {:.1} s: {} exact, {} reported with status 16, {} failed",
        cases.len(),
        started.elapsed().as_secs_f64(),
        cases.len() - reported - failures.len(),
        reported,
        failures.len()
    );
    // The injections must really reach rpv's own calls: some runs end in an error.
    assert!(
        reported > cases.len() / 10,
        "only {reported} runs saw an error"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `--tee` from a pipe into a main output that refuses splice (O_APPEND): each round's rest
/// goes to the main output by read + write, and a read error there ended the run with
/// status 0 and no message, both outputs short. It is reported like on every other path:
/// pv's message, status 16, every output a prefix of the input.
#[test]
fn a_read_error_after_the_main_output_refused_splice_is_reported_on_the_tee_path() {
    if !strace_available() {
        return;
    }
    let dir = Dir::new();
    let (main_path, tee_path) = (dir.path("main"), dir.path("tee"));
    for len in [65_537, 300_001, (1 << 20) + 1] {
        let input = data(len, 41);
        for when in ["1", "2", "3"] {
            let what = format!("{len} bytes, read {when} fails");
            std::fs::write(&main_path, b"").unwrap();
            let _ = std::fs::remove_file(&tee_path);
            let main = std::fs::OpenOptions::new()
                .append(true)
                .open(&main_path)
                .unwrap();
            let mut child = Command::new("strace")
                .args(["-f", "-qq", "-o", "/dev/null", "-e"])
                .arg(format!("inject=read:error=EIO:when={when}"))
                .arg(env!("CARGO_BIN_EXE_rpv"))
                .args(["-q", "--tee"])
                .arg(&tee_path)
                .env("LC_ALL", "C")
                .stdin(Stdio::piped())
                .stdout(main)
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let mut stdin = child.stdin.take().unwrap();
            let bytes = input.clone();
            let feeder = std::thread::spawn(move || {
                let _ = stdin.write_all(&bytes);
            });
            let status = crate::util::wait_within(&mut child, HANG, &what);
            feeder.join().unwrap();
            let mut stderr = String::new();
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut stderr)
                .unwrap();
            let main = std::fs::read(&main_path).unwrap();
            let copy = std::fs::read(&tee_path).unwrap();
            // The data thread's first read is the first catch-up (it always fails here); a
            // later one may not happen at all (a short input ends first): then every output
            // is exact.
            if when != "1" && status.code() == Some(0) && stderr.is_empty() {
                assert!(main == input && copy == input, "{what}: status 0, exact");
                continue;
            }
            assert_eq!(
                stderr, "rpv: (stdin): read failed: Input/output error\n",
                "{what}"
            );
            assert_eq!(status.code(), Some(16), "{what}");
            assert!(input.starts_with(&main), "{what}: main output a prefix");
            assert!(input.starts_with(&copy), "{what}: --tee copy a prefix");
        }
    }
}
