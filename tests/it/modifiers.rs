//! Transfer modifiers: -E/-Z (read errors injected with the `RPV_TEST_READ_ERRORS` hook),
//! -O sparse output, -X discard, -Y sync, -K direct I/O — byte-exact.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::MetadataExt;

use crate::util::{
    assert_same, data, err, rpv, run_with_input, run_with_input_keep_stdout, s, Dir,
};

/// Parses `skipped past read error: A - B (N B)` lines into ranges.
fn skipped_ranges(stderr: &str) -> Vec<(usize, usize)> {
    stderr
        .lines()
        .filter_map(|l| l.split_once("skipped past read error: "))
        .map(|(_, r)| {
            let (a, rest) = r.split_once(" - ").unwrap();
            let b = rest.split_once(' ').unwrap().0;
            (a.parse().unwrap(), b.parse().unwrap())
        })
        .collect()
}

fn run_skip(input: &[u8], bad: &str, args: &[&str]) -> (Vec<u8>, String, Option<i32>) {
    let dir = Dir::new();
    let path = dir.file("disk", input);
    let out_path = dir.path("image");
    let mut all = args.to_vec();
    all.push(s(&path));
    let mut cmd = rpv(&all);
    cmd.env("RPV_TEST_READ_ERRORS", bad)
        .stdout(File::create(&out_path).unwrap());
    let out = cmd.output().unwrap();
    (
        std::fs::read(&out_path).unwrap(),
        err(&out),
        out.status.code(),
    )
}

#[test]
fn skip_errors_writes_zeros_in_place_and_keeps_every_other_byte() {
    let input = data(300_000, 1);
    let (out, stderr, code) = run_skip(&input, "1000-1003,70000-74000,299990-300000", &["-E"]);
    assert_eq!(code, Some(16), "read errors set bit 16 even when skipped");
    assert_eq!(out.len(), input.len(), "the image has the disk's length");
    assert!(stderr.starts_with("rpv: "), "{stderr}");
    assert_eq!(
        stderr
            .matches("warning: read errors detected: Input/output error")
            .count(),
        1,
        "{stderr}"
    );
    let ranges = skipped_ranges(&stderr);
    assert_eq!(ranges.first(), Some(&(1000, 1001)), "{stderr}");
    // Every bad byte was skipped; skipped bytes are zeros; every other byte is intact.
    let skipped = |i: usize| ranges.iter().any(|&(a, b)| (a..b).contains(&i));
    for bad in (1000..1003).chain(70_000..74_000).chain(299_990..300_000) {
        assert!(skipped(bad), "byte {bad} was not skipped");
    }
    for (i, (&o, &x)) in out.iter().zip(&input).enumerate() {
        let expected = if skipped(i) { 0 } else { x };
        assert_eq!(o, expected, "byte {i}");
    }
    // The adaptive skip grows: 1-byte skips first, then 2, …, up to 512.
    let sizes: Vec<usize> = ranges.iter().map(|(a, b)| b - a).collect();
    assert!(
        sizes.contains(&1) && sizes.contains(&2) && sizes.contains(&512),
        "{sizes:?}"
    );
}

#[test]
fn twice_e_only_warns_and_z_skips_aligned_blocks() {
    let input = data(100_000, 2);
    let (out, stderr, code) = run_skip(&input, "5000-5010", &["-EE"]);
    assert_eq!(code, Some(16));
    assert_eq!(out.len(), input.len());
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    let (out, stderr, _) = run_skip(&input, "5000-5010", &["-Z", "1024"]);
    assert_eq!(
        skipped_ranges(&stderr),
        vec![(5000, 5120)],
        "to the next 1024 boundary"
    );
    assert_same(&out[..5000], &input[..5000], "before the error");
    assert!(out[5000..5120].iter().all(|&b| b == 0));
    assert_same(&out[5120..], &input[5120..], "after the skip");
}

#[test]
fn without_skip_errors_a_read_error_ends_the_file() {
    let input = data(100_000, 3);
    let (out, stderr, code) = run_skip(&input, "50000-50001", &[]);
    assert_eq!(code, Some(16));
    assert!(
        stderr.ends_with("/disk: read failed: Input/output error\n"),
        "{stderr}"
    );
    assert_same(&out, &input[..50_000], "everything before the bad byte");
}

#[test]
fn sparse_output_makes_holes_and_reads_back_the_same() {
    let dir = Dir::new();
    let mut input = vec![0u8; 4 << 20];
    input[100..200].copy_from_slice(&data(100, 4));
    input[(2 << 20) + 7..(2 << 20) + 5000].copy_from_slice(&data(4993, 5));
    // Trailing zeros: the file must still get its full length.
    for (name, extra) in [("a", &[][..]), ("b", &["-B", "10000"][..])] {
        let out_path = dir.path(name);
        let mut args = vec!["-q", "-O", "-o", s(&out_path)];
        args.extend_from_slice(extra);
        let out = run_with_input(rpv(&args), &input);
        assert!(out.status.success(), "{}", err(&out));
        let back = std::fs::read(&out_path).unwrap();
        assert_same(&back, &input, "sparse output reads back identical");
        let allocated = std::fs::metadata(&out_path).unwrap().blocks() * 512;
        assert!(
            allocated <= 64 << 10,
            "{name}: {allocated} bytes allocated for 2 small extents"
        );
    }
}

#[test]
fn discard_counts_without_writing_and_leaves_the_rest() {
    let dir = Dir::new();
    let path = dir.file("in", b"abcdefghij");
    let mut input = File::open(&path).unwrap();
    let out = rpv(&["-X", "-S", "-s", "4", "-n", "-b"])
        .stdin(input.try_clone().unwrap())
        .output()
        .unwrap();
    assert!(out.stdout.is_empty(), "-X writes nothing");
    assert_eq!(err(&out).lines().last(), Some("4"));
    let mut rest = String::new();
    input.read_to_string(&mut rest).unwrap();
    assert_eq!(rest, "efghij");
}

#[test]
fn sync_and_direct_io_are_byte_exact_including_unaligned_tails() {
    let dir = Dir::new();
    for size in [0usize, 1, 4095, 4097, (1 << 20) + 5] {
        let input = data(size, 6);
        let in_path = dir.file("in", &input);
        for args in [
            &["-Y"][..],
            &["-K"][..],
            &["-K", "-Y"][..],
            &["-K", "-B", "5000"][..],
        ] {
            // file → file
            let out_path = dir.path("out");
            let mut all = vec!["-q", "-o", s(&out_path), s(&in_path)];
            all.extend_from_slice(args);
            let out = rpv(&all).output().unwrap();
            assert!(out.status.success(), "{args:?} {size}: {}", err(&out));
            assert_same(
                &std::fs::read(&out_path).unwrap(),
                &input,
                &format!("{args:?} file size {size}"),
            );
            // pipe → file
            let mut cmd = rpv(&[&["-q"][..], args].concat());
            cmd.stdout(File::create(&out_path).unwrap());
            let out = run_with_input_keep_stdout(cmd, &input);
            assert!(out.status.success(), "{args:?} {size}: {}", err(&out));
            assert_same(
                &std::fs::read(&out_path).unwrap(),
                &input,
                &format!("{args:?} pipe size {size}"),
            );
        }
    }
}

#[test]
fn store_and_forward_through_a_private_temporary_file() {
    let dir = Dir::new();
    std::fs::create_dir(dir.path("tmp")).unwrap();
    let input = data(3_000_001, 7);
    let mut cmd = rpv(&["-n", "-U", "-"]);
    cmd.env("TMPDIR", dir.path("tmp"));
    let out = run_with_input(cmd, &input);
    assert!(out.status.success(), "{}", err(&out));
    assert_same(&out.stdout, &input, "-U -");
    // The second phase knows the size: its last percentage is 100.
    assert_eq!(err(&out).lines().last(), Some("100"));
    assert_eq!(
        std::fs::read_dir(dir.path("tmp")).unwrap().count(),
        0,
        "temporary file removed"
    );

    let keep = dir.path("store");
    let out = run_with_input(rpv(&["-q", "-U", s(&keep)]), &input);
    assert!(out.status.success());
    assert_same(&out.stdout, &input, "-U FILE");
    assert_same(
        &std::fs::read(&keep).unwrap(),
        &input,
        "a named store is kept",
    );
}

#[test]
fn pid_file_exists_while_running_and_is_removed_at_exit() {
    let dir = Dir::new();
    let pidfile = dir.path("rpv.pid");
    let mut child = rpv(&[
        "-q",
        "-L",
        "200k",
        "-P",
        s(&pidfile),
        "/dev/zero",
        "-S",
        "-s",
        "100k",
    ])
    .stdout(std::process::Stdio::null())
    .spawn()
    .unwrap();
    let content = crate::util::wait_for("the pid file", crate::util::PATIENCE, || {
        std::fs::read_to_string(&pidfile).ok()
    });
    assert_eq!(content, format!("{}\n", child.id()));
    assert_eq!(std::fs::metadata(&pidfile).unwrap().mode() & 0o777, 0o644);
    assert!(child.wait().unwrap().success());
    assert!(!pidfile.exists(), "removed at exit");
    let out = rpv(&["-P", "/nonexistent-dir/x.pid"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    // The message names the pid file given, not the temporary file next to it.
    assert_eq!(
        err(&out),
        "rpv: /nonexistent-dir/x.pid: No such file or directory\n"
    );
}
