//! `-M SIDE -- COMMAND` through the binary: byte-exact data on every side, the
//! command's exit status passed through, exec failures, names and `%{ratio}` per side.

use crate::util::{assert_same, data, err, rpv, run_with_input, s, Dir};

#[test]
fn every_side_is_byte_exact() {
    let input = data(3 << 20, 11);
    for side in ["in", "out", "both"] {
        let out = run_with_input(rpv(&["-q", "-M", side, "--", "cat"]), &input);
        assert_eq!(out.status.code(), Some(0), "{side}: {}", err(&out));
        assert_same(&out.stdout, &input, side);
        assert!(out.stderr.is_empty(), "{side}: {}", err(&out));
    }
}

#[test]
fn command_output_is_metered_byte_exact_through_a_filter() {
    // The command changes the data: the output is exactly what it wrote.
    let input = crate::util::text(20_000);
    let expected = input.to_ascii_uppercase();
    let script = "tr a-z A-Z";
    for side in ["in", "out", "both"] {
        let out = run_with_input(rpv(&["-q", "-M", side, "--", "sh", "-c", script]), &input);
        assert_eq!(out.status.code(), Some(0), "{side}: {}", err(&out));
        assert_same(&out.stdout, &expected, side);
    }
}

#[test]
fn output_file_with_monitor() {
    let dir = Dir::new();
    let target = dir.file("out", b"old contents that must go away");
    let input = data(100_000, 2);
    for side in ["in", "out", "both"] {
        let out = run_with_input(
            rpv(&["-q", "-o", s(&target), "-M", side, "--", "cat"]),
            &input,
        );
        assert_eq!(out.status.code(), Some(0), "{side}: {}", err(&out));
        assert!(out.stdout.is_empty(), "{side}");
        assert_same(&std::fs::read(&target).unwrap(), &input, side);
    }
}

#[test]
fn the_command_exit_status_is_passed_through() {
    let input = data(200_000, 9);
    for side in ["in", "out", "both"] {
        let out = run_with_input(
            rpv(&["-q", "-M", side, "--", "sh", "-c", "cat; exit 3"]),
            &input,
        );
        assert_eq!(out.status.code(), Some(3), "{side}: {}", err(&out));
        assert_same(&out.stdout, &input, side);
        // A command that stops reading early: EPIPE is quiet, its own status counts.
        let out = run_with_input(
            rpv(&["-q", "-M", side, "--", "sh", "-c", "head -c 1000; exit 0"]),
            &input,
        );
        assert_eq!(out.status.code(), Some(0), "{side}: {}", err(&out));
        assert_same(&out.stdout, &input[..1000], side);
        // Killed by a signal: 128 + N, like a shell.
        let out = run_with_input(
            rpv(&["-q", "-M", side, "--", "sh", "-c", "kill -TERM $$"]),
            &input,
        );
        assert_eq!(out.status.code(), Some(128 + 15), "{side}: {}", err(&out));
    }
}

#[test]
fn a_command_that_cannot_run_is_reported() {
    for side in ["in", "out", "both"] {
        let out = run_with_input(rpv(&["-q", "-M", side, "--", "/nonexistent/cmd"]), b"x");
        assert_eq!(out.status.code(), Some(127), "{side}");
        assert_eq!(
            err(&out),
            "rpv: /nonexistent/cmd: No such file or directory\n"
        );
    }
    let dir = Dir::new();
    let not_exec = dir.file("script", b"#!/bin/sh\n");
    let out = run_with_input(rpv(&["-q", "-M", "out", "--", s(&not_exec)]), b"x");
    assert_eq!(out.status.code(), Some(126));
    assert_eq!(
        err(&out),
        format!("rpv: {}: Permission denied\n", s(&not_exec))
    );
}

#[test]
fn names_and_formats_per_side() {
    let input = vec![0u8; 400_000];
    // Two -N: the first names the input side, the last the output side, which also shows
    // the ratio (gzip shrinks zeros a lot: the input side is larger).
    let out = run_with_input(
        rpv(&[
            "-f", "-M", "both", "-N", "IN", "-N", "OUT", "--", "gzip", "-c",
        ]),
        &input,
    );
    assert_eq!(out.status.code(), Some(0), "{}", err(&out));
    let text = err(&out);
    assert!(text.contains("IN:"), "{text:?}");
    assert!(text.contains("OUT:"), "{text:?}");
    let out_lines: Vec<&str> = text
        .split(['\r', '\n'])
        .filter(|l| l.contains("OUT:"))
        .collect();
    assert!(
        out_lines.iter().any(|l| l.trim_end().ends_with(":1")),
        "no ratio on the output side: {out_lines:?}"
    );
    // Two -F: one format per side.
    let out = run_with_input(
        rpv(&[
            "-f",
            "-M",
            "both",
            "-F",
            "in=%b",
            "-F",
            "out=%b %{ratio}",
            "--",
            "cat",
        ]),
        &input,
    );
    let text = err(&out);
    assert!(text.contains("in= 390KiB\r"), "{text:?}");
    assert!(text.contains("out= 390KiB 1:1\r"), "{text:?}");
    // One -N: both sides use it; a single side shows -:- for the ratio.
    let out = run_with_input(
        rpv(&["-f", "-M", "out", "-F", "%b %{ratio}", "--", "cat"]),
        &input,
    );
    assert!(err(&out).contains("390KiB -:-"), "{:?}", err(&out));
}

#[test]
fn monitor_answers_remote_queries() {
    // -Q against a monitor reports the input side.
    let runtime = Dir::new();
    let mut child = rpv(&["-q", "-L", "100k", "-M", "in", "--", "cat"])
        .env("XDG_RUNTIME_DIR", runtime.dir.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        let _ = stdin.write_all(&vec![1u8; 150_000]);
    });
    let socket = runtime
        .dir
        .path()
        .join("rpv")
        .join(format!("{}.sock", child.id()));
    crate::util::wait_until("the control socket", crate::util::PATIENCE, || {
        socket.exists()
    });
    let pid = child.id().to_string();
    let out = rpv(&["-Q", &pid, "-n", "-b", "-i", "0.2"])
        .env("XDG_RUNTIME_DIR", runtime.dir.path())
        .output()
        .unwrap();
    writer.join().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", err(&out));
    let last = err(&out).lines().last().unwrap_or("").trim().to_string();
    assert_eq!(last, "150000");
    assert_eq!(child.wait().unwrap().code(), Some(0));
}

/// `-M SIDE -o FILE < FILE`: rpv's standard input reaches the output through the command,
/// so the run is refused as the plain `rpv -o FILE < FILE` is (status 4, the file intact),
/// on every side; also when the output is standard output opened for appending. Before,
/// -M opened FILE truncated, the command's copy found nothing, and the run said 0
/// (reliability-4 F11).
#[test]
fn the_output_as_rpvs_own_input_is_refused_on_every_side() {
    let dir = Dir::new();
    let bytes = data(100_000, 63);
    let file = dir.file("f", &bytes);
    let refused = |mut cmd: std::process::Command, what: &str| {
        let out = cmd
            .stdin(std::fs::File::open(&file).unwrap())
            .stdout(std::process::Stdio::piped())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(4), "{what}: {}", err(&out));
        assert!(
            err(&out).contains("input file is output file: (stdin)"),
            "{what}: {}",
            err(&out)
        );
        assert_same(&std::fs::read(&file).unwrap(), &bytes, what);
    };
    refused(rpv(&["-q", "-o", s(&file)]), "plain");
    for side in ["in", "out", "both"] {
        refused(rpv(&["-q", "-M", side, "-o", s(&file), "--", "cat"]), side);
        let mut append = rpv(&["-q", "-M", side, "--", "cat"]);
        let appending = std::fs::OpenOptions::new()
            .append(true)
            .open(&file)
            .unwrap();
        append.stdout(appending);
        let out = append
            .stdin(std::fs::File::open(&file).unwrap())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(4), "{side} >>: {}", err(&out));
        assert_same(&std::fs::read(&file).unwrap(), &bytes, side);
    }
}
