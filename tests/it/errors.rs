//! Bad input, bad output, readers that go away: pv's messages and exit status, and no data
//! lost or half-written silently.

use std::fs::OpenOptions;
use std::io::Read;
use std::os::fd::AsFd;
use std::process::Stdio;

use crate::util::{assert_same, data, err, pipe_fill, rpv, s, wait_until, wait_within, Dir};

#[test]
fn missing_input_is_reported_and_the_next_one_still_copied() {
    let dir = Dir::new();
    let a = dir.file("a", b"hello\n");
    let out = rpv(&["missing-file", s(&a)]).output().unwrap();
    assert_eq!(out.stdout, b"hello\n");
    assert_eq!(
        err(&out),
        "rpv: failed to read file: missing-file: No such file or directory\n"
    );
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn directory_input_is_a_read_error_and_bits_combine() {
    let dir = Dir::new();
    let a = dir.file("a", b"x");
    let d = dir.path("");
    let out = rpv(&[s(&d), "missing", s(&a)]).output().unwrap();
    assert_eq!(out.stdout, b"x");
    let e = err(&out);
    assert!(
        e.contains(&format!("rpv: {}: read failed: Is a directory\n", s(&d))),
        "{e}"
    );
    assert!(
        e.contains("rpv: failed to read file: missing: No such file or directory\n"),
        "{e}"
    );
    assert_eq!(out.status.code(), Some(18));
}

#[test]
fn write_error_is_reported_with_status_16() {
    let dir = Dir::new();
    let a = dir.file("a", &data(100_000, 1));
    for extra in [&[][..], &["-C"][..]] {
        let mut args = vec![s(&a)];
        args.extend_from_slice(extra);
        let full = OpenOptions::new().write(true).open("/dev/full").unwrap();
        let out = rpv(&args).stdout(full).output().unwrap();
        assert_eq!(
            err(&out),
            "rpv: write failed: No space left on device\n",
            "{extra:?}"
        );
        assert_eq!(out.status.code(), Some(16));
    }
}

#[test]
fn reader_going_away_ends_quietly_with_status_0() {
    let dir = Dir::new();
    let big = dir.file("big", &data(8 << 20, 2));
    for extra in [&[][..], &["-C"][..], &["-f", "-i", "0.1"][..]] {
        let mut args = vec![s(&big)];
        args.extend_from_slice(extra);
        let mut child = rpv(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut one = [0u8; 1];
        child.stdout.as_mut().unwrap().read_exact(&mut one).unwrap();
        drop(child.stdout.take());
        let status = wait_within(&mut child, crate::util::PATIENCE, "rpv big | head -c1");
        let stderr = crate::util::stderr_of(&mut child);
        assert_eq!(status.code(), Some(0), "{extra:?}: {stderr}");
        assert!(
            !stderr.contains("rpv:"),
            "no error message expected: {stderr}"
        );
    }
}

#[test]
fn reader_exiting_without_reading_does_not_hang() {
    // printf abc | rpv | sleep 0.5 — pv 1.11 never exits here.
    for extra in [&["-q"][..], &["-f", "-i", "0.1"][..]] {
        let mut child = rpv(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        use std::io::Write;
        child.stdin.take().unwrap().write_all(b"abc").unwrap();
        // The reader exits without reading once rpv has passed the data on.
        let stdout = child.stdout.take().unwrap();
        wait_until("abc in the pipe", crate::util::PATIENCE, || {
            pipe_fill(stdout.as_fd()).0 == 3
        });
        drop(stdout);
        let status = wait_within(
            &mut child,
            crate::util::PATIENCE,
            "printf abc | rpv | sleep 0.5",
        );
        assert_eq!(status.code(), Some(0));
    }
}

#[test]
fn input_that_is_the_output_is_refused_and_left_intact() {
    let dir = Dir::new();
    let original = data(70_000, 3);
    let x = dir.file("x", &original);
    let out = rpv(&["-o", s(&x), s(&x)]).output().unwrap();
    assert_eq!(out.status.code(), Some(4));
    assert_eq!(
        err(&out),
        format!("rpv: input file is output file: {}\n", s(&x))
    );
    assert_same(
        &std::fs::read(&x).unwrap(),
        &original,
        "rpv -o x x must leave x intact",
    );

    // rpv x >> x
    let append = OpenOptions::new().append(true).open(&x).unwrap();
    let out = rpv(&[s(&x)]).stdout(append).output().unwrap();
    assert_eq!(out.status.code(), Some(4));
    assert_same(
        &std::fs::read(&x).unwrap(),
        &original,
        "rpv x >> x must leave x intact",
    );
}

#[test]
fn output_option_writes_and_truncates_when_inputs_differ() {
    let dir = Dir::new();
    let a = data(300_000, 4);
    let pa = dir.file("a", &a);
    let out_path = dir.file("out", &data(1_000_000, 5));
    for extra in [&[][..], &["-C"][..]] {
        let mut args = vec!["-o", s(&out_path), s(&pa)];
        args.extend_from_slice(extra);
        let out = rpv(&args).output().unwrap();
        assert!(out.status.success(), "{}", err(&out));
        assert_same(&std::fs::read(&out_path).unwrap(), &a, "-o FILE");
    }
    let bad = rpv(&["-o", "/nonexistent-dir/x"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(
        err(&bad),
        "rpv: /nonexistent-dir/x: No such file or directory\n"
    );
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn append_mode_output_falls_back_and_appends() {
    // splice into an O_APPEND file fails with EINVAL; the data must still all arrive.
    let dir = Dir::new();
    let head = b"existing\n".to_vec();
    let body = data((2 << 20) + 3, 6);
    let path = dir.file("log", &head);
    let a = dir.file("a", &body);
    for extra in [None, Some(s(&a))] {
        std::fs::write(&path, &head).unwrap();
        let append = OpenOptions::new().append(true).open(&path).unwrap();
        let mut cmd = rpv(&["-q"]);
        cmd.args(extra).stdout(append);
        let out = if extra.is_some() {
            cmd.output().unwrap()
        } else {
            crate::util::run_with_input_keep_stdout(cmd, &body)
        };
        assert!(out.status.success(), "{}", err(&out));
        assert_same(
            &std::fs::read(&path).unwrap(),
            &[&head[..], &body].concat(),
            "append",
        );
    }
}

#[test]
fn bad_option_values_give_pv_messages_and_status_64() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["-s", "foo"],
            "rpv: -s: foo: numeric value not understood\n",
        ),
        (
            &["--size=1KB"],
            "rpv: -s: 1KB: numeric value not understood\n",
        ),
        (&["-i", "abc"], "rpv: -i: abc: numeric argument expected\n"),
        (&["-w", "1.5"], "rpv: -w: 1.5: integer argument expected\n"),
        (&["-L", "-3"], "rpv: -L: -3: numeric value not understood\n"),
    ];
    for (args, expected) in cases {
        let out = rpv(args).stdin(Stdio::null()).output().unwrap();
        assert_eq!(err(&out), *expected, "{args:?}");
        assert_eq!(out.status.code(), Some(64), "{args:?}");
        assert!(out.stdout.is_empty());
    }
    let out = rpv(&["--bogus"]).stdin(Stdio::null()).output().unwrap();
    let bin = env!("CARGO_BIN_EXE_rpv");
    assert_eq!(
        err(&out),
        format!("{bin}: unrecognized option '--bogus'\nTry `rpv --help' for more information.\n")
    );
    assert_eq!(out.status.code(), Some(64));
}

#[test]
fn size_from_a_missing_path_is_an_error() {
    let out = rpv(&["-s", "@/nonexistent-file"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(
        err(&out),
        "rpv: /nonexistent-file: failed to stat file: No such file or directory\n"
    );
    assert_eq!(out.status.code(), Some(64));
}
