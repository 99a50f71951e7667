//! Regressions of the reliability review, one or more tests per defect: `-E` on inputs that
//! fail the same way everywhere, skips past the end of a file, values that do not fit, huge
//! buffers, closed standard streams, `-Y` sync errors, `-K` flags left behind, misspelt `-x`.

use std::fs::File;
use std::process::Stdio;

use crate::util::{assert_same, data, err, rpv, run_with_input, s, wait_within, Dir};

/// Runs `args` with stdout to a file; returns (output bytes, stderr, exit code), failing the
/// test if rpv runs longer than 20 s (the defects here made it run forever).
fn run_to_file(args: &[&str], env: &[(&str, &str)]) -> (Vec<u8>, String, Option<i32>) {
    let dir = Dir::new();
    let out_path = dir.path("out");
    let mut cmd = rpv(args);
    cmd.envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(File::create(&out_path).unwrap())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let status = wait_within(&mut child, 20.0, &format!("{args:?}"));
    let stderr = crate::util::stderr_of(&mut child);
    (std::fs::read(&out_path).unwrap(), stderr, status.code())
}

// ---- D1: -E / -Z on a directory (EISDIR at every offset) ----

#[test]
fn skip_errors_on_a_directory_reports_it_once_and_goes_on() {
    let dir = Dir::new();
    let sub = dir.path("sub");
    std::fs::create_dir(&sub).unwrap();
    let file = dir.file("file", &data(5000, 1));
    for flags in [
        &["-E"][..],
        &["-EE"],
        &["-Z", "1K"],
        &["-E", "-C", "-B", "4096"],
    ] {
        let mut args = vec!["-q"];
        args.extend_from_slice(flags);
        args.extend([s(&sub), s(&file)]);
        let (out, stderr, code) = run_to_file(&args, &[]);
        assert_same(
            &out,
            &data(5000, 1),
            &format!("{flags:?}: only the file's bytes"),
        );
        assert_eq!(
            stderr,
            format!("rpv: {}: read failed: Is a directory\n", s(&sub)),
            "{flags:?}"
        );
        assert_eq!(code, Some(16), "{flags:?}");
    }
}

// ---- D5: a skip never goes past the end of the input ----

#[test]
fn a_read_error_in_the_last_partial_block_keeps_the_input_length() {
    let dir = Dir::new();
    let input = data(3_000_000, 2);
    let path = dir.file("disk", &input);
    // The last 4096-byte block starts at 2998272 and has 1728 bytes: it cannot be read.
    for flags in [
        &["-E", "-Z", "4096", "-C", "-B", "4096"][..],
        &["-E", "-Z", "1M"],
        &["-EE"],
    ] {
        let mut args = vec!["-q"];
        args.extend_from_slice(flags);
        args.push(s(&path));
        let (out, stderr, code) =
            run_to_file(&args, &[("RPV_TEST_READ_ERRORS", "2998272-3000000")]);
        assert_eq!(out.len(), input.len(), "{flags:?}: {stderr}");
        assert_same(
            &out[..2_998_272],
            &input[..2_998_272],
            "before the bad block",
        );
        assert!(out[2_998_272..].iter().all(|&b| b == 0), "{flags:?}: zeros");
        assert_eq!(code, Some(16), "{flags:?}");
        if flags.starts_with(&["-E", "-Z"]) {
            assert!(
                stderr.contains("skipped past read error: 2998272 - 3000000 (1728 B)"),
                "{flags:?}: {stderr}"
            );
        }
    }
}

#[test]
fn skipped_errors_in_the_middle_still_keep_aligned_blocks() {
    let dir = Dir::new();
    let input = data(100_000, 3);
    let path = dir.file("disk", &input);
    let (out, stderr, _) = run_to_file(
        &["-q", "-E", "-Z", "4096", s(&path)],
        &[("RPV_TEST_READ_ERRORS", "10-11,99999-100000")],
    );
    assert!(
        stderr.contains("skipped past read error: 10 - 4096 (4086 B)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("skipped past read error: 99999 - 100000 (1 B)"),
        "{stderr}"
    );
    assert_eq!(out.len(), input.len());
    assert_same(
        &out[4096..99_999],
        &input[4096..99_999],
        "between the errors",
    );
}

// ---- D6 / D3: option values that do not fit, huge buffers ----

#[test]
fn sizes_past_64_bits_are_refused_before_any_data_moves() {
    for args in [
        &["-S", "-s", "18446744073709551617"][..],
        &["-S", "-s", "18446744073709552616"],
        &["-L", "18446744073709551617"],
        &["-B", "99999999999999999999999999999999999999"],
    ] {
        let out = run_with_input(rpv(args), b"hello");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(
            err(&out).ends_with(": numeric value too large (at most 18446744073709551615)\n"),
            "{args:?}: {}",
            err(&out)
        );
        assert_eq!(out.status.code(), Some(64), "{args:?}");
    }
    let out = run_with_input(rpv(&["-R", "4294967297", "-L", "1"]), b"");
    assert_eq!(
        err(&out),
        "rpv: -R: 4294967297: integer argument too large (at most 4294967295)\n"
    );
    assert_eq!(out.status.code(), Some(64));
}

#[test]
fn huge_buffer_sizes_copy_exactly_instead_of_aborting() {
    let dir = Dir::new();
    let input = data(200_000, 4);
    let path = dir.file("in", &input);
    for size in ["1T", "100G", "9223372036854775807", "18446744073709551615"] {
        for extra in [&[][..], &["-K"]] {
            let mut args = vec!["-q", "-B", size];
            args.extend_from_slice(extra);
            args.push(s(&path));
            let (out, stderr, code) = run_to_file(&args, &[]);
            assert_eq!(stderr, "", "-B {size} {extra:?}");
            assert_eq!(code, Some(0), "-B {size} {extra:?}");
            assert_same(&out, &input, &format!("-B {size} {extra:?}"));
        }
    }
}

#[test]
fn a_buffer_that_cannot_be_allocated_is_a_clear_error() {
    // 1 GiB (the cap) under a 512 MiB address-space limit: the allocation fails.
    let dir = Dir::new();
    let path = dir.file("in", b"some data\n");
    let out = std::process::Command::new("sh")
        .args(["-c", "ulimit -v 524288 && exec \"$0\" \"$@\""])
        .arg(env!("CARGO_BIN_EXE_rpv"))
        .args(["-q", "-B", "1G", s(&path)])
        .env("LC_ALL", "C")
        .output()
        .unwrap();
    assert_eq!(
        err(&out),
        "rpv: buffer allocation failed: Cannot allocate memory\n"
    );
    assert_eq!(out.status.code(), Some(64));
    assert!(out.stdout.is_empty());
}

// ---- 7b: a misspelt -x target ----

#[test]
fn misspelt_extra_display_target_is_an_error() {
    let out = run_with_input(rpv(&["-x", "windowtitel"]), b"hello");
    assert_eq!(
        err(&out),
        "rpv: -x: windowtitel: unknown display target (expected windowtitle or processtitle)\n"
    );
    assert_eq!(out.status.code(), Some(64));
    assert!(out.stdout.is_empty());
    let out = run_with_input(rpv(&["-q", "-x", "window,proc:%b"]), b"hello");
    assert_eq!(out.stdout, b"hello");
    assert_eq!(out.status.code(), Some(0));
}
