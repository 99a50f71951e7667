//! The splice lengths where one side is not a pipe: one call asks for a quarter of the
//! pipe, from a file into a pipe and from a pipe into a file, and the data thread makes no
//! other system call while data moves (no `poll`: into a pipe it pauses on the CPU). Checked
//! with strace, and byte for byte at the boundaries of those lengths, with the fallback to
//! read/write forced at the first, second and third call.

use std::fs::File;
use std::io::{Read, Write};
use std::process::{Command, Stdio};

use crate::reliability::strace_available;
use crate::util::{assert_same, data, rpv, s, Dir};

/// The capacity rpv gives its pipes: 1 MiB, or less where the kernel allows less.
fn capacity() -> usize {
    let max = std::fs::read_to_string("/proc/sys/fs/pipe-max-size").unwrap();
    max.trim().parse::<usize>().unwrap().min(1 << 20)
}

#[derive(Clone, Copy, Debug)]
enum Topo {
    FilePipe,
    PipeFile,
}

/// The length rpv asks of each splice next to a file: a quarter of the pipe.
fn chunk() -> usize {
    (capacity() / 4).max(64 << 10)
}

/// Runs `prefix... rpv -q` on `input` in `topo`; returns the output bytes and stderr.
fn run(topo: Topo, input: &[u8], env: &[(&str, &str)], prefix: &[&str]) -> (Vec<u8>, String) {
    let dir = Dir::new();
    let in_path = dir.file("in", input);
    let out_path = dir.path("out");
    let mut cmd = match prefix.split_first() {
        Some((prog, args)) => {
            let mut cmd = Command::new(prog);
            cmd.args(args).arg(env!("CARGO_BIN_EXE_rpv")).arg("-q");
            cmd.env("LC_ALL", "C");
            cmd
        }
        None => rpv(&["-q"]),
    };
    cmd.env("RPV_TEST_TRACE", "1");
    for (k, v) in env {
        cmd.env(k, v);
    }
    match topo {
        Topo::FilePipe => {
            cmd.arg(s(&in_path))
                .stdin(Stdio::null())
                .stdout(Stdio::piped());
        }
        Topo::PipeFile => {
            cmd.stdin(Stdio::piped())
                .stdout(File::create(&out_path).unwrap());
        }
    }
    cmd.stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn rpv");
    let feeder = child.stdin.take().map(|mut stdin| {
        let input = input.to_vec();
        std::thread::spawn(move || {
            let _ = stdin.write_all(&input);
        })
    });
    let mut out = Vec::new();
    if let Some(mut stdout) = child.stdout.take() {
        stdout.read_to_end(&mut out).unwrap();
    }
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let status = child.wait().unwrap();
    if let Some(f) = feeder {
        f.join().unwrap();
    }
    assert!(status.success(), "{topo:?} {env:?}: {status:?}, {stderr}");
    if matches!(topo, Topo::PipeFile) {
        out = std::fs::read(&out_path).unwrap();
    }
    (out, stderr)
}

#[test]
fn splices_next_to_a_file_are_exact_around_their_length_and_fall_back_at_any_call() {
    for topo in [Topo::FilePipe, Topo::PipeFile] {
        let c = chunk();
        let name = match topo {
            Topo::FilePipe => "/in",
            Topo::PipeFile => "(stdin)",
        };
        for (i, size) in [c - 1, c, c + 1, 2 * c - 1, 2 * c, 2 * c + 1, 3 * c + 4097]
            .into_iter()
            .enumerate()
        {
            let input = data(size, 27 + i as u64);
            for at in [None, Some("1"), Some("2"), Some("3")] {
                let env: Vec<(&str, &str)> =
                    at.map(|a| ("RPV_TEST_FAIL_AT", a)).into_iter().collect();
                let (out, stderr) = run(topo, &input, &env, &[]);
                let what = format!("{topo:?} size {size} fail at {at:?}");
                assert_same(&out, &input, &what);
                assert!(
                    stderr.contains(&format!("{name}: Splice")),
                    "{what}: {stderr}"
                );
                // A call moves at most the length, so past n - 1 lengths an n-th call comes.
                if let Some(at) = at {
                    let n: usize = at.parse().unwrap();
                    if size > (n - 1) * c {
                        let fell = format!("{name}: ReadWrite after {at} zero-copy calls");
                        assert!(stderr.contains(&fell), "{what}: {stderr}");
                    }
                }
            }
        }
    }
}

/// The data thread's calls, from `strace -f`: every splice's requested length, and the
/// other calls it made between its first splice and its last.
fn data_thread_calls(trace: &str) -> (Vec<usize>, Vec<String>) {
    let mut by_tid: std::collections::HashMap<&str, Vec<(Option<usize>, &str)>> =
        Default::default();
    for line in trace.lines() {
        let Some((tid, call)) = line.split_once(' ') else {
            continue;
        };
        let call = call.trim_start();
        // (Exits, signals, and the second half of a call another thread's interrupted.)
        if call.starts_with("+++") || call.starts_with("---") || call.starts_with("<...") {
            continue;
        }
        let len = call.strip_prefix("splice(").map(|args| {
            let len = args.split(", ").nth(4).and_then(|l| l.parse().ok());
            len.expect(line)
        });
        by_tid.entry(tid).or_default().push((len, call));
    }
    let mut with_splices = by_tid
        .into_values()
        .filter(|calls| calls.iter().any(|(len, _)| len.is_some()));
    let calls = with_splices.next().expect("no splice in the trace");
    assert!(with_splices.next().is_none(), "splices on two threads");
    let first = calls.iter().position(|(len, _)| len.is_some()).unwrap();
    let last = calls.iter().rposition(|(len, _)| len.is_some()).unwrap();
    let lens = calls.iter().filter_map(|(len, _)| *len).collect();
    let others = calls[first..=last]
        .iter()
        .filter(|(len, _)| len.is_none())
        .map(|(_, call)| call.to_string())
        .collect();
    (lens, others)
}

#[test]
fn splices_next_to_a_file_ask_for_a_quarter_of_the_pipe_and_nothing_else() {
    if !strace_available() {
        return;
    }
    for topo in [Topo::FilePipe, Topo::PipeFile] {
        let dir = Dir::new();
        let trace = dir.path("trace");
        let input = data(16 << 20, 7);
        let prefix = ["strace", "-f", "-qq", "-o", s(&trace)];
        let (out, _) = run(topo, &input, &[], &prefix);
        assert_same(&out, &input, &format!("{topo:?}"));
        let trace = std::fs::read_to_string(&trace).unwrap();
        let (lens, others) = data_thread_calls(&trace);
        assert!(
            others.is_empty(),
            "{topo:?}: calls between splices: {others:#?}"
        );
        assert!(
            lens.iter().all(|&l| l == chunk()),
            "{topo:?}: splice lengths {lens:?}, expected {}",
            chunk()
        );
    }
}
