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
    let status = wait_within(&mut child, crate::util::PATIENCE, &format!("{args:?}"));
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

#[test]
fn the_largest_skip_block_still_skips_within_the_file() {
    // -Z 2^64-1: rounding the skip must not overflow; it is cut at the buffer and the end.
    let dir = Dir::new();
    let input = data(300_000, 10);
    let path = dir.file("disk", &input);
    let (out, stderr, code) = run_to_file(
        &["-q", "-E", "-Z", "18446744073709551615", s(&path)],
        &[("RPV_TEST_READ_ERRORS", "100000-100001")],
    );
    assert_eq!(code, Some(16), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.len(), input.len());
    assert_same(&out[..100_000], &input[..100_000], "before the error");
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
    let _cores = crate::util::cores_busy();
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

// ---- 6: -K puts O_DIRECT back on descriptors it shares ----

/// O_DIRECT status flag (octal 040000 on x86-64 and aarch64) as /proc shows it.
fn fd_flags(fd: i32) -> u32 {
    let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{fd}")).unwrap();
    let flags = info.lines().find_map(|l| l.strip_prefix("flags:")).unwrap();
    u32::from_str_radix(flags.trim(), 8).unwrap()
}

/// True if `dir`'s filesystem accepts O_DIRECT (tmpfs does not); prints why a test is
/// skipped otherwise.
fn direct_io_works(dir: &Dir) -> bool {
    use std::os::unix::fs::OpenOptionsExt;
    let probe = dir.path("probe");
    let ok = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .custom_flags(libc::O_DIRECT)
        .open(&probe)
        .is_ok();
    if !ok {
        eprintln!("skipped: O_DIRECT is refused in {}", probe.display());
    }
    ok
}

#[test]
fn direct_io_leaves_a_shared_output_as_it_found_it() {
    let dir = Dir::new();
    if !direct_io_works(&dir) {
        return;
    }
    // Whole blocks: O_DIRECT stays on for every write of rpv's, so only the restore clears
    // it for echo's 5-byte write.
    for len in [8192, 1 << 20] {
        let input = data(len, 5);
        let path = dir.file("in", &input);
        let out_path = dir.path("out");
        let status = std::process::Command::new("sh")
            .args(["-c", "{ \"$0\" -K -q \"$1\"; echo done; } > \"$2\""])
            .args([env!("CARGO_BIN_EXE_rpv"), s(&path), s(&out_path)])
            .status()
            .unwrap();
        assert!(status.success());
        let mut want = input.clone();
        want.extend_from_slice(b"done\n");
        assert_same(
            &std::fs::read(&out_path).unwrap(),
            &want,
            "rpv's output, then echo's",
        );
    }
}

#[test]
fn direct_io_leaves_a_shared_input_as_it_found_it() {
    let dir = Dir::new();
    if !direct_io_works(&dir) {
        return;
    }
    let path = dir.file("in", &data(20_000, 6));
    let out = std::process::Command::new("sh")
        .args([
            "-c",
            "{ \"$0\" -K -q -S -s 4096 > /dev/null; grep flags: /proc/self/fdinfo/0; } < \"$1\"",
        ])
        .args([env!("CARGO_BIN_EXE_rpv"), s(&path)])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let flags = u32::from_str_radix(text.trim().trim_start_matches("flags:").trim(), 8).unwrap();
    assert_eq!(
        flags & libc::O_DIRECT as u32,
        0,
        "stdin flags after rpv: {text}"
    );
}

#[test]
fn direct_io_flags_are_restored_after_an_interrupt_too() {
    use std::io::Write;
    use std::os::fd::AsRawFd;
    let dir = Dir::new();
    if !direct_io_works(&dir) {
        return;
    }
    let out = File::create(dir.path("out")).unwrap();
    let mut child = rpv(&["-K", "-q"])
        .stdin(Stdio::piped())
        .stdout(out.try_clone().unwrap())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Whole blocks through a pipe: every write is aligned, so O_DIRECT stays on while rpv
    // waits for more input.
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&data(8192, 7)).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::fs::metadata(dir.path("out")).unwrap().len() < 8192 {
        assert!(std::time::Instant::now() < deadline, "rpv wrote nothing");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    // The child shares `out`'s open file description: it set O_DIRECT on it.
    assert_ne!(fd_flags(out.as_raw_fd()) & libc::O_DIRECT as u32, 0);
    let killed = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = wait_within(&mut child, crate::util::PATIENCE, "interrupted -K");
    assert_eq!(status.code(), Some(32));
    assert_eq!(fd_flags(out.as_raw_fd()) & libc::O_DIRECT as u32, 0);
    drop(stdin);
}

// ---- D8: -Y: a failed fdatasync is a write error ----

/// strace, if installed (prints why a test is skipped otherwise).
pub fn strace_available() -> bool {
    let ok = std::process::Command::new("strace")
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("skipped: strace is not installed");
    }
    ok
}

/// `rpv args` under strace with `inject` (e.g. `fdatasync:error=EIO:when=3`), stdout to
/// `out`; returns (stderr, exit code).
fn run_injected(inject: &str, args: &[&str], out: &std::path::Path) -> (String, Option<i32>) {
    let output = std::process::Command::new("strace")
        .args([
            "-f",
            "-qq",
            "-o",
            "/dev/null",
            "-e",
            &format!("inject={inject}"),
        ])
        .arg(env!("CARGO_BIN_EXE_rpv"))
        .args(args)
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .stdout(File::create(out).unwrap())
        .output()
        .unwrap();
    (err(&output), output.status.code())
}

#[test]
fn sync_failures_other_than_unsupported_are_write_errors() {
    if !strace_available() {
        return;
    }
    let dir = Dir::new();
    let input = data(1 << 20, 8);
    let path = dir.file("in", &input);
    let out = dir.path("out");
    for (errno, text) in [
        ("ENOSPC", "No space left on device"),
        ("EDQUOT", "Disk quota exceeded"),
        ("EIO", "Input/output error"),
    ] {
        for when in ["1", "3"] {
            let (stderr, code) = run_injected(
                &format!("fdatasync:error={errno}:when={when}"),
                &["-q", "-Y", s(&path)],
                &out,
            );
            assert_eq!(
                stderr,
                format!("rpv: write failed: {text}\n"),
                "{errno} at {when}"
            );
            assert_eq!(code, Some(16), "{errno} at {when}");
        }
    }
    // "Cannot sync this kind of file" is not an error, and an interrupted sync is retried.
    for errno in ["EINVAL", "EROFS", "EINTR"] {
        let (stderr, code) = run_injected(
            &format!("fdatasync:error={errno}:when=2"),
            &["-q", "-Y", s(&path)],
            &out,
        );
        assert_eq!((stderr.as_str(), code), ("", Some(0)), "{errno}");
        assert_same(&std::fs::read(&out).unwrap(), &input, errno);
    }
}

// ---- D11: -l from a pipe: the private counting pipe fails ----

/// `input | strace … rpv -l -n -b -f` with `inject`; returns (stdout bytes, last numeric line
/// of stderr, stderr, exit code).
fn count_lines_injected(input: &[u8], inject: &str) -> (Vec<u8>, String, String, Option<i32>) {
    let mut cmd = std::process::Command::new("strace");
    cmd.args([
        "-f",
        "-qq",
        "-o",
        "/dev/null",
        "-e",
        &format!("inject={inject}"),
    ])
    .arg(env!("CARGO_BIN_EXE_rpv"))
    .args(["-l", "-n", "-b", "-f"])
    .env("LC_ALL", "C");
    let out = run_with_input(cmd, input);
    let stderr = err(&out);
    let last = stderr
        .lines()
        .rfind(|l| l.bytes().all(|b| b.is_ascii_digit()))
        .unwrap_or("")
        .to_string();
    (out.stdout, last, stderr, out.status.code())
}

#[test]
fn a_failed_read_of_the_counting_pipe_is_retried_or_reported() {
    if !strace_available() {
        return;
    }
    let input = crate::util::text(100_000);
    let lines = input.iter().filter(|&&b| b == b'\n').count().to_string();
    // The data thread's reads are the private pipe's (the main thread reads fewer than 10
    // times: the loader, /proc/self/maps, the wake pipe, the time zone).
    for inject in [
        "read:error=EAGAIN:when=20",
        "read:error=EINTR:when=20",
        "read:error=EAGAIN:when=12..40",
    ] {
        let (out, last, stderr, code) = count_lines_injected(&input, inject);
        assert_same(&out, &input, inject);
        assert_eq!(
            (last.as_str(), code),
            (lines.as_str(), Some(0)),
            "{inject}: {stderr}"
        );
    }
    for inject in ["read:error=EIO:when=20", "read:error=EIO:when=12+"] {
        let (out, last, stderr, code) = count_lines_injected(&input, inject);
        if inject.ends_with('+') {
            // Every later read fails too, the input's on the read/write path included.
            assert!(stderr.contains("rpv: (stdin): read failed: Input/output error\n"));
            assert_same(&out, &input[..out.len()], "a prefix");
        } else {
            assert_same(&out, &input, inject);
        }
        assert!(
            stderr.contains("rpv: (stdin): line count is short: "),
            "{inject}: {stderr}"
        );
        assert!(
            stderr.contains(" bytes could not be counted: Input/output error\n"),
            "{stderr}"
        );
        assert_eq!(code, Some(16), "{inject}: {stderr}");
        assert!(
            last.parse::<u64>().unwrap() < lines.parse().unwrap(),
            "{inject}"
        );
    }
}

// ---- D4: closed standard input and output ----

/// Runs `script` under sh with `$0` = rpv and `$1` = `arg`; returns (stdout, stderr, code).
fn sh(script: &str, arg: &str) -> (String, String, Option<i32>) {
    let out = std::process::Command::new("sh")
        .args(["-c", script, env!("CARGO_BIN_EXE_rpv"), arg])
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        err(&out),
        out.status.code(),
    )
}

#[test]
fn a_closed_standard_output_is_an_error_not_a_black_hole() {
    let dir = Dir::new();
    let path = dir.file("in", b"hello\n");
    let closed = "rpv: failed to stat output file: Bad file descriptor\n";
    for script in [
        "\"$0\" -q \"$1\" >&-",
        "cat \"$1\" | \"$0\" -q >&-",
        "\"$0\" -q -S -s 100 /dev/zero >&-",
        "\"$0\" -q -o - \"$1\" >&-",
        "\"$0\" -q -U - \"$1\" >&-",
        "\"$0\" -q -M out -- cat \"$1\" >&-",
    ] {
        assert_eq!(
            sh(script, s(&path)),
            (String::new(), closed.into(), Some(2)),
            "{script}"
        );
    }
    // Nothing was read: the rest of a pipe is still there for the next reader.
    let (out, _, _) = sh("{ \"$0\" -q >&-; cat; } < \"$1\"", s(&path));
    assert_eq!(out, "hello\n");
    // With -o the closed stdout is not the output.
    let out_path = dir.path("out");
    let script = format!("\"$0\" -q -o {} \"$1\" >&-", s(&out_path));
    assert_eq!(
        sh(&script, s(&path)),
        (String::new(), String::new(), Some(0))
    );
    assert_eq!(std::fs::read(&out_path).unwrap(), b"hello\n");
}

#[test]
fn a_closed_standard_input_is_an_error_not_an_empty_input() {
    let dir = Dir::new();
    let path = dir.file("in", b"hello\n");
    let closed = "rpv: failed to read file: (stdin): Bad file descriptor\n";
    assert_eq!(
        sh("\"$0\" -q <&-", ""),
        (String::new(), closed.into(), Some(2))
    );
    // The other inputs are still copied.
    assert_eq!(
        sh("\"$0\" -q - \"$1\" - <&-", s(&path)),
        ("hello\n".into(), format!("{closed}{closed}"), Some(2))
    );
    // Not an input: no matter.
    assert_eq!(
        sh("\"$0\" -q \"$1\" <&-", s(&path)),
        ("hello\n".into(), String::new(), Some(0))
    );
}

/// Reads `child`'s stdout 1000 bytes at a time (less than any write of rpv's).
fn read_in_small_pieces(child: &mut std::process::Child) -> Vec<u8> {
    use std::io::Read;
    let mut stdout = child.stdout.take().unwrap();
    let (mut got, mut buf) = (Vec::new(), [0u8; 1000]);
    loop {
        match stdout.read(&mut buf) {
            Ok(0) | Err(_) => return got,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
}

#[test]
fn direct_io_never_puts_a_pipe_in_packet_mode() {
    // O_DIRECT on a pipe makes each write a packet, and a read shorter than the packet
    // dropped the rest: `rpv -K file | dd bs=1000` kept a quarter of the data.
    let dir = Dir::new();
    let input = data(1_000_000, 9);
    let path = dir.file("in", &input);
    for extra in [&[][..], &["-C"], &["-B", "65536"], &["-l"]] {
        let mut args = vec!["-q", "-K"];
        args.extend_from_slice(extra);
        args.push(s(&path));
        let mut child = rpv(&args).stdout(Stdio::piped()).spawn().unwrap();
        let got = read_in_small_pieces(&mut child);
        assert!(child.wait().unwrap().success());
        assert_same(&got, &input, &format!("-K {extra:?} file into a pipe"));
    }
    // A pipe on both sides.
    let mut child = rpv(&["-q", "-K"])
        .stdin(File::open(&path).unwrap())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let got = read_in_small_pieces(&mut child);
    assert!(child.wait().unwrap().success());
    assert_same(&got, &input, "-K stdin file into a pipe");
}

// ---- Issue 18: signals end rpv; totals after an interrupt ----

/// Waits until `cond` holds, polling every 10 ms; fails the test after `secs` seconds.
#[track_caller]
fn wait_for(secs: f64, what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs_f64(secs);
    while !cond() {
        assert!(
            std::time::Instant::now() < deadline,
            "{what}: not within {secs} s"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// True while `pid`'s main thread sits in a `write` to standard error.
fn writing_stderr(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/syscall"))
        .is_ok_and(|s| s.starts_with(&format!("{} 0x2 ", libc::SYS_write)))
}

/// Sends `signal` to `child`.
fn signal(child: &std::process::Child, signal: libc::c_int) {
    // SAFETY: kill(2) on our own child, which has not been waited for.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, signal) }, 0);
}

/// A thread that reads `from` to its end, counting as it goes.
fn counting_reader(
    mut from: impl std::io::Read + Send + 'static,
) -> (
    std::sync::Arc<std::sync::atomic::AtomicUsize>,
    std::thread::JoinHandle<Vec<u8>>,
) {
    let count = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = std::sync::Arc::clone(&count);
    let thread = std::thread::spawn(move || {
        let (mut got, mut buf) = (Vec::new(), vec![0u8; 64 << 10]);
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => return got,
                Ok(n) => {
                    got.extend_from_slice(&buf[..n]);
                    seen.store(got.len(), std::sync::atomic::Ordering::Relaxed);
                }
            }
        }
    });
    (count, thread)
}

/// With standard error a full pipe that nobody reads, rpv's display waits in a write while
/// the data flows on; SIGTERM, SIGINT and SIGHUP then never ended it (each signal only
/// interrupted the write in progress), so its output never closed and the next stage never
/// saw the end of its input.
#[test]
fn signals_end_rpv_even_when_standard_error_is_a_full_pipe_nobody_reads() {
    let dir = Dir::new();
    let bytes = data(16 << 20, 21);
    let input = dir.file("in", &bytes);
    for (mode, sig) in [
        (&["--json"][..], libc::SIGTERM),
        (&["--log"], libc::SIGINT),
        (&["-f"], libc::SIGHUP),
        (&["-q", "--json"], libc::SIGTERM),
    ] {
        let what = format!("{mode:?}, signal {sig}");
        let (_unread, err_w) = crate::signals::full_pipe();
        let mut args = mode.to_vec();
        args.extend(["-i", "0.1", "-L", "2M", s(&input)]);
        let mut child = rpv(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(err_w))
            .spawn()
            .unwrap();
        let (got, reader) = counting_reader(child.stdout.take().unwrap());
        let pid = child.id();
        wait_for(
            20.0,
            &format!("{what}: the display blocks on stderr"),
            || writing_stderr(pid),
        );
        // The data does not wait for the display.
        let at = got.load(std::sync::atomic::Ordering::Relaxed);
        wait_for(
            crate::util::PATIENCE,
            &format!("{what}: data flows meanwhile"),
            || got.load(std::sync::atomic::Ordering::Relaxed) >= at + (256 << 10),
        );
        signal(&child, sig);
        let status = wait_within(&mut child, crate::util::PATIENCE, &what);
        assert_eq!(status.code(), Some(32), "{what}");
        // The output closed (the reader saw its end) and holds the input up to the interrupt.
        let out = reader.join().unwrap();
        assert!(
            !out.is_empty() && bytes.starts_with(&out),
            "{what}: {} bytes",
            out.len()
        );
    }
}

/// The `end` object of rpv's `--json` output (its last line).
fn json_end(stderr: &str) -> serde_json::Value {
    let last = stderr.lines().last().unwrap_or_default();
    let end: serde_json::Value =
        serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}: {last:?} in {stderr}"));
    assert_eq!(end["type"], "end", "{stderr}");
    end
}

/// After SIGINT/SIGTERM, `--json`'s `end` counted less than reached the output: the count
/// was taken while a write was in flight (finding 5: 262144 bytes short in 2 runs of 6),
/// and bytes in the output pipe were left out although the next stage reads them after
/// rpv is gone. Here the output pipe is full and unread when the signal comes, so a write
/// is in flight for sure.
#[test]
fn json_end_totals_after_an_interrupt_equal_what_reached_each_output() {
    use std::os::fd::AsFd;
    let dir = Dir::new();
    let bytes = data(24 << 20, 22);
    let input = dir.file("in", &bytes);
    let tee = dir.path("tee");
    for (name, args, from_pipe) in [
        ("read/write", &["-C", "-B", "300000"][..], false),
        ("splice", &[], false),
        ("-l read/write", &["-l", "-C"], false),
        ("fan-out", &["--tee", s(&tee)], true),
        ("fan-out, read/write", &["--tee", s(&tee), "-C"], true),
    ] {
        let _ = std::fs::remove_file(&tee);
        let (out_r, out_w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).unwrap();
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        if !from_pipe {
            all.push(s(&input));
        }
        let mut child = rpv(&all)
            .stdin(if from_pipe {
                Stdio::from(File::open(&input).unwrap())
            } else {
                Stdio::null()
            })
            .stdout(Stdio::from(out_w))
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // (rpv grows its output pipe: wait until that pipe, whatever its size, is nearly full.)
        wait_for(
            crate::util::PATIENCE,
            &format!("{name}: the output pipe fills"),
            || {
                let cap = rustix::pipe::fcntl_getpipe_size(out_r.as_fd()).unwrap();
                let unread = rustix::io::ioctl_fionread(out_r.as_fd()).unwrap() as usize;
                cap >= 1 << 20 && unread + (128 << 10) >= cap
            },
        );
        signal(&child, libc::SIGTERM);
        let (_, reader) = counting_reader(File::from(out_r));
        let status = wait_within(&mut child, crate::util::PATIENCE, name);
        let stderr = crate::util::stderr_of(&mut child);
        assert_eq!(status.code(), Some(32), "{name}: {stderr}");
        let out = reader.join().unwrap();
        assert!(bytes.starts_with(&out), "{name}: a prefix");
        let end = json_end(&stderr);
        if args.contains(&"-l") {
            let lines = out.iter().filter(|&&b| b == b'\n').count();
            assert_eq!(end["lines"], lines, "{name}: lines in the output");
        } else {
            assert_eq!(end["bytes"], out.len(), "{name}: bytes in the output");
        }
        if from_pipe {
            let copy = std::fs::read(&tee).unwrap();
            assert!(
                bytes.starts_with(&copy),
                "{name}: the --tee copy is a prefix"
            );
            assert_eq!(
                end["outputs"][0]["bytes"],
                copy.len(),
                "{name}: bytes in the --tee copy"
            );
        }
    }
}

/// The same with a file as the output and the transfer running freely: the interrupt comes
/// at a different point each time (here the totals were short in a third of the runs).
#[test]
fn json_end_totals_after_an_interrupt_equal_the_output_file() {
    let dir = Dir::new();
    let bytes = data(48 << 20, 23);
    let input = dir.file("in", &bytes);
    let out_path = dir.path("out");
    for (i, args) in [&["-L", "20M"][..], &[], &["-C"], &["-L", "20M", "-C"]]
        .iter()
        .enumerate()
    {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let mut child = rpv(&all)
            .stdin(File::open(&input).unwrap())
            .stdout(File::create(&out_path).unwrap())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Some data has gone through, a different amount each time.
        let want = (1 << 20) * (i as u64 + 1);
        wait_for(crate::util::PATIENCE, "data reaches the output", || {
            std::fs::metadata(&out_path).is_ok_and(|m| m.len() >= want)
        });
        signal(&child, libc::SIGINT);
        let status = wait_within(&mut child, crate::util::PATIENCE, "rpv");
        let stderr = crate::util::stderr_of(&mut child);
        if status.code() == Some(0) {
            continue; // It ended before the signal (a fast machine).
        }
        assert_eq!(status.code(), Some(32), "{args:?}: {stderr}");
        let out = std::fs::read(&out_path).unwrap();
        assert!(bytes.starts_with(&out), "{args:?}: a prefix");
        assert_eq!(json_end(&stderr)["bytes"], out.len(), "{args:?}");
    }
}

// ---- Issue 18: -R and -Q from the start ----

/// `-R`/`-Q` said `message not received` until the first display update (5 s with `-i 5`,
/// 10 s with `--log`): the listener opened there. A transfer takes them from the moment it
/// moves data.
#[test]
fn remote_and_query_work_from_the_start_of_a_transfer() {
    let dir = Dir::new();
    let bytes = data(3 << 20, 51);
    let input = dir.file("in", &bytes);
    for mode in [&["-q", "-i", "5"][..], &["--log"]] {
        let runtime = Dir::new();
        let mut args = mode.to_vec();
        args.extend(["-L", "300k", s(&input)]);
        let mut target = rpv(&args)
            .env("XDG_RUNTIME_DIR", runtime.dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let (got, reader) = counting_reader(target.stdout.take().unwrap());
        wait_for(crate::util::PATIENCE, "the transfer starts", || {
            got.load(std::sync::atomic::Ordering::Relaxed) > 0
        });
        let pid = target.id().to_string();
        let client = |args: &[&str]| {
            rpv(args)
                .env("XDG_RUNTIME_DIR", runtime.dir.path())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        };
        // -Q follows it (one numeric line per interval) ...
        let mut query = client(&["-Q", &pid, "-n", "-i", "0.1"]);
        let (shown, query_err) = counting_reader(query.stderr.take().unwrap());
        wait_for(
            crate::util::PATIENCE,
            &format!("{mode:?}: -Q shows progress"),
            || {
                shown.load(std::sync::atomic::Ordering::Relaxed) > 0
                    || query.try_wait().is_ok_and(|s| s.is_some())
            },
        );
        // ... and -R lifts the limit, so the rest takes a moment instead of ten seconds.
        let mut remote = client(&["-R", &pid, "-L", "100M"]);
        let status = wait_within(&mut remote, crate::util::PATIENCE, "-R");
        let remote_err = crate::util::stderr_of(&mut remote);
        assert_eq!(status.code(), Some(0), "{mode:?}: -R: {remote_err}");
        assert_eq!(wait_within(&mut target, 8.0, "the target").code(), Some(0));
        assert!(reader.join().unwrap() == bytes, "{mode:?}: all the data");
        assert_eq!(
            wait_within(&mut query, crate::util::PATIENCE, "-Q").code(),
            Some(0)
        );
        let shown = String::from_utf8(query_err.join().unwrap()).unwrap();
        assert!(
            shown.lines().count() > 0 && !shown.contains("rpv:"),
            "{mode:?}: -Q said {shown:?}"
        );
    }
}

/// When the socket directory is not one rpv can use (another user made it, or it is not a
/// directory), the target cannot listen; the client said only `message not received`.
#[test]
fn a_socket_directory_rpv_cannot_use_is_named_by_the_client() {
    let elsewhere = Dir::new();
    let mut cases = vec![("symlink", "is not a directory".to_string())];
    let root = std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"));
    if root {
        cases.push((
            "owned by nobody",
            "belongs to another user (uid 65534)".into(),
        ));
    }
    for (kind, why) in cases {
        let runtime = Dir::new();
        let sockets = runtime.path("rpv");
        if kind == "symlink" {
            std::os::unix::fs::symlink(elsewhere.dir.path(), &sockets).unwrap();
        } else {
            std::fs::create_dir(&sockets).unwrap();
            std::os::unix::fs::chown(&sockets, Some(65534), Some(65534)).unwrap();
        }
        let mut target = rpv(&["-q", "-L", "40k", "/dev/zero"])
            .env("XDG_RUNTIME_DIR", runtime.dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let pid = target.id().to_string();
        for args in [&["-R", &pid, "-L", "0"][..], &["-Q", &pid, "-n"]] {
            let out = rpv(args)
                .env("XDG_RUNTIME_DIR", runtime.dir.path())
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(1), "{kind}: {args:?}");
            assert_eq!(
                err(&out),
                format!(
                    "rpv: {pid}: message not received: {sockets:?} {why}, so rpv does not \
                     listen there\n"
                ),
                "{kind}: {args:?}"
            );
        }
        let _ = target.kill();
        let _ = target.wait();
    }
}

/// SIGURG is the signal that interrupts a data thread's blocking call after an exit signal;
/// from anyone else it is only an EINTR, which every call retries: the transfer goes on,
/// exact, with status 0.
#[test]
fn stray_sigurg_changes_nothing() {
    let dir = Dir::new();
    let bytes = data(3 << 20, 61);
    let tee = dir.path("tee");
    for args in [&[][..], &["-C"], &["--tee", s(&tee)], &["-l"]] {
        let mut all = vec!["-q", "-L", "6M"];
        all.extend_from_slice(args);
        // From a pipe: the splice, fan-out and tee + splice line paths.
        let mut child = rpv(&all)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let feed = bytes.clone();
        let feeder = std::thread::spawn(move || {
            let _ = std::io::Write::write_all(&mut stdin, &feed);
        });
        let (got, reader) = counting_reader(child.stdout.take().unwrap());
        while child.try_wait().unwrap().is_none() {
            if got.load(std::sync::atomic::Ordering::Relaxed) > 0 {
                signal(&child, libc::SIGURG);
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        feeder.join().unwrap();
        let status = wait_within(&mut child, crate::util::PATIENCE, "rpv");
        let stderr = crate::util::stderr_of(&mut child);
        assert_eq!((status.code(), stderr.as_str()), (Some(0), ""), "{args:?}");
        assert_same(&reader.join().unwrap(), &bytes, &format!("{args:?}"));
        if args.contains(&"--tee") {
            assert_same(&std::fs::read(&tee).unwrap(), &bytes, "--tee copy");
        }
    }
}

/// `-P`: at exit rpv removes the pid file only if the path still holds the file it wrote
/// (the same device and inode). A symlink or another file put there during the run stays,
/// and what a symlink points to is untouched; the pid file itself is removed as before.
/// Before, rpv removed whatever was at the path (reliability-4 F10).
#[test]
fn the_pid_file_is_removed_only_if_it_is_still_rpvs() {
    use std::io::Write;
    let dir = Dir::new();
    let victim = dir.file("victim", b"victim-content\n");
    let pid_path = dir.path("pid");
    // The run lasts until the test closes rpv's input.
    let run = |plant: &dyn Fn()| {
        let mut child = rpv(&["-q", "-P", s(&pid_path)])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let pid = child.id();
        crate::util::wait_until("rpv to write its pid file", crate::util::PATIENCE, || {
            std::fs::read_to_string(&pid_path).is_ok_and(|t| t == format!("{pid}\n"))
        });
        plant();
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"data").unwrap();
        drop(stdin);
        let status = wait_within(
            &mut child,
            crate::util::PATIENCE,
            "rpv -P after its input ended",
        );
        assert_eq!(status.code(), Some(0));
    };
    // Nothing planted: the pid file goes.
    run(&|| {});
    assert!(
        std::fs::symlink_metadata(&pid_path).is_err(),
        "the pid file stays"
    );
    // A symlink planted at the path: it stays, and its target is untouched.
    run(&|| {
        std::fs::remove_file(&pid_path).unwrap();
        std::os::unix::fs::symlink(&victim, &pid_path).unwrap();
    });
    let meta = std::fs::symlink_metadata(&pid_path).expect("the planted symlink was removed");
    assert!(meta.file_type().is_symlink());
    assert_eq!(std::fs::read(&victim).unwrap(), b"victim-content\n");
    std::fs::remove_file(&pid_path).unwrap();
    // Another regular file put there (a rename over it): it stays.
    run(&|| {
        let other = dir.file("other", b"another process's file\n");
        std::fs::rename(&other, &pid_path).unwrap();
    });
    assert_eq!(
        std::fs::read(&pid_path).expect("the other file was removed"),
        b"another process's file\n"
    );
}

/// `rpv ARGS` as an unprivileged user of its own at a process limit of `limit` (`ulimit
/// -u`: no thread can be made beyond it), its standard input from `input`: (status,
/// stdout, stderr). The limit counts every process of the user, so the user is one no
/// other process has (a user ID with no name, chosen from this test run's PID), not
/// nobody, whose processes other tests start at the same time. None where `setpriv` or
/// bash (for `ulimit -u`) is missing, or the test does not run as root (CI runs as root).
fn as_a_user_limited(
    limit: u32,
    args: &str,
    input: &std::path::Path,
) -> Option<(i32, Vec<u8>, String)> {
    let root = rustix::process::geteuid().is_root();
    let found = |name: &str| {
        ["/usr/sbin", "/sbin", "/usr/bin", "/bin"]
            .iter()
            .any(|d| std::path::Path::new(d).join(name).exists())
    };
    if !root || !found("setpriv") || !found("bash") {
        eprintln!("skipped: needs root, setpriv and bash");
        return None;
    }
    let uid = (200_000 + std::process::id() % 100_000).to_string();
    let script = format!("ulimit -u {limit} && exec \"$RPV\" {args}");
    let mut cmd = std::process::Command::new("setpriv");
    let user = ["--reuid", &uid, "--regid", &uid, "--clear-groups", "--"];
    cmd.args(user)
        .args(["bash", "-c", &script])
        .env("RPV", env!("CARGO_BIN_EXE_rpv"))
        .env("LC_ALL", "C")
        .env_remove("RUST_BACKTRACE")
        .stdin(File::open(input).unwrap())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        std::io::Read::read_to_end(&mut stdout, &mut out).unwrap();
        out
    });
    let status = wait_within(&mut child, 60.0, "rpv at a process limit");
    let out = reader.join().unwrap();
    let stderr = crate::util::stderr_of(&mut child);
    Some((status.code().unwrap_or(-1), out, stderr))
}

/// At a process limit (`ulimit -u 1` as nobody: rpv cannot make a single thread) a transfer
/// copies everything on its main thread, as pv would, says once that it copies without a
/// progress display, and ends with status 0 (with `--json`, in a warning and an `end`).
/// `-M both`, whose input side cannot run on the main thread, fails in rpv's voice with
/// status 1 (`--json`: an error and an `end`). Before, rpv panicked (status 134 in a
/// release build, 101 in a debug one) with a backtrace and wrote nothing
/// (reliability-4 F3).
#[test]
fn at_a_process_limit_a_transfer_copies_without_its_display_thread() {
    let dir = Dir::new();
    // More than a short run's 64 KiB, so a data thread is wanted; from stdin (nobody
    // cannot read the test's directory).
    let bytes = data(300_000, 64);
    let input = dir.file("in", &bytes);
    let Some((code, out, err)) = as_a_user_limited(1, "-f -i 0.1", &input) else {
        return;
    };
    assert_eq!(code, 0, "{err}");
    assert_same(&out, &bytes, "the copy at a process limit");
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(
        err.matches("cannot start a thread (Resource temporarily unavailable): copying without a progress display").count(),
        1,
        "{err}"
    );
    // -U's two phases: both copy, the warning is given once.
    let (code, out, err) = as_a_user_limited(1, "-f -U -", &input).unwrap();
    assert_eq!(code, 0, "{err}");
    assert_same(&out, &bytes, "the copy through -U - at a process limit");
    assert_eq!(err.matches("cannot start a thread").count(), 1, "{err}");
    let (code, out, err) = as_a_user_limited(1, "--json", &input).unwrap();
    assert_eq!(code, 0, "{err}");
    assert_same(&out, &bytes, "the copy with --json at a process limit");
    let objects = crate::json::parse_ndjson(err.as_bytes());
    assert!(
        objects
            .iter()
            .any(|o| o["type"] == "message" && o["level"] == "warning"),
        "{err}"
    );
    let end = objects.last().expect("JSON objects");
    assert_eq!(
        (end["type"].as_str(), end["status"].as_u64()),
        (Some("end"), Some(0)),
        "{err}"
    );
    // -M both: rpv and cat fit under a limit of 2, a thread does not.
    let (code, out, err) = as_a_user_limited(2, "--json -M both -- cat", &input).unwrap();
    assert_eq!(code, 1, "{err}");
    assert!(out.is_empty());
    let objects = crate::json::parse_ndjson(err.as_bytes());
    assert!(
        objects.iter().any(|o| o["level"] == "error"
            && o["text"]
                .as_str()
                .is_some_and(|t| t.starts_with("cannot start a thread"))),
        "{err}"
    );
    let end = objects.last().expect("JSON objects");
    assert_eq!(
        (end["type"].as_str(), end["status"].as_u64()),
        (Some("end"), Some(1)),
        "{err}"
    );
}

/// Failures only an injected fault reaches (reliability-4 F12): every `close` failing with
/// EIO (std's directory stream asserted that `closedir` succeeded: the control socket's
/// directory, read 20 ms into a run, aborted it) and every `fcntl` failing with EIO (the
/// wake pipe was made non-blocking by an `fcntl` whose failure was ignored, and the start-up
/// probe took any failure for a closed standard descriptor: status 2). A run copies
/// everything with status 0 under either, plain and with `-C`, within a deadline.
#[test]
fn a_failing_close_or_fcntl_neither_aborts_nor_hangs_a_run() {
    if !strace_available() {
        return;
    }
    let dir = Dir::new();
    let bytes = data(300_000, 65);
    let input = dir.file("in", &bytes);
    let output = dir.path("out");
    let trace = dir.path("trace");
    for fault in ["close:error=EIO:when=1+", "fcntl:error=EIO:when=1+"] {
        for extra in [&[][..], &["-C"][..]] {
            // 0.15 s at 2 MB/s: long enough for the control socket's directory to be read.
            let mut args = vec!["-q", "-L", "2M", "-o", s(&output)];
            args.extend_from_slice(extra);
            args.push(s(&input));
            let mut cmd = std::process::Command::new("strace");
            cmd.args(["-f", "-qq", "-o", s(&trace), "-e", "trace=close,fcntl"])
                .args(["-e", &format!("inject={fault}")])
                .arg(env!("CARGO_BIN_EXE_rpv"))
                .args(&args)
                .env("LC_ALL", "C")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped());
            let mut child = cmd.spawn().unwrap();
            let status = wait_within(&mut child, 30.0, &format!("rpv with {fault} {extra:?}"));
            let stderr = crate::util::stderr_of(&mut child);
            assert_eq!(status.code(), Some(0), "{fault} {extra:?}: {stderr}");
            assert_same(&std::fs::read(&output).unwrap(), &bytes, fault);
        }
    }
}
