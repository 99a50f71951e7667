//! Byte-for-byte integrity of every transfer path and every fallback, at size boundaries.
//! Each case also checks (through the hidden `RPV_TEST_TRACE` hook) that the path it meant
//! to exercise really moved the data.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::process::{Command, Stdio};

use crate::util::{
    assert_same, data, rpv, run_with_input, run_with_input_keep_stdout, s, sized_data, text, Dir,
    SIZES,
};

#[derive(Debug, Clone, Copy)]
enum Topo {
    PipePipe,
    FilePipe,
    PipeFile,
    FileFile,
}

const TOPOS: [Topo; 4] = [
    Topo::PipePipe,
    Topo::FilePipe,
    Topo::PipeFile,
    Topo::FileFile,
];

/// Runs rpv on `input` in topology `topo` with extra `env` and `args`; returns the bytes
/// that arrived at the output and stderr.
fn transfer(topo: Topo, input: &[u8], env: &[(&str, &str)], args: &[&str]) -> (Vec<u8>, String) {
    transfer_with(topo, input, env, &["-q"], args)
}

/// [`transfer`] with `base` options in place of `-q`.
fn transfer_with(
    topo: Topo,
    input: &[u8],
    env: &[(&str, &str)],
    base: &[&str],
    args: &[&str],
) -> (Vec<u8>, String) {
    let dir = Dir::new();
    let mut all_args = base.to_vec();
    all_args.extend_from_slice(args);
    let in_path = dir.file("in", input);
    if matches!(topo, Topo::FilePipe | Topo::FileFile) {
        all_args.push(s(&in_path));
    }
    let mut cmd = rpv(&all_args);
    cmd.env("RPV_TEST_TRACE", "1");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out_path = dir.path("out");
    if matches!(topo, Topo::PipeFile | Topo::FileFile) {
        cmd.stdout(File::create(&out_path).unwrap());
    }
    let output = match topo {
        Topo::PipePipe => run_with_input(cmd, input),
        Topo::PipeFile => run_with_input_keep_stdout(cmd, input),
        Topo::FilePipe | Topo::FileFile => {
            cmd.stdin(Stdio::null()).stderr(Stdio::piped());
            if matches!(topo, Topo::FilePipe) {
                cmd.stdout(Stdio::piped());
            }
            cmd.output().unwrap()
        }
    };
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        output.status.success(),
        "{topo:?} {env:?} {args:?}: exit {:?}, stderr {stderr}",
        output.status
    );
    let bytes = match topo {
        Topo::PipePipe | Topo::FilePipe => output.stdout,
        _ => std::fs::read(&out_path).unwrap(),
    };
    (bytes, stderr)
}

fn check_all_sizes(
    topo: Topo,
    env: &[(&str, &str)],
    args: &[&str],
    expect_trace: impl Fn(usize) -> Option<String>,
) {
    for (&size, input) in SIZES.iter().zip(sized_data(1).iter()) {
        let (out, stderr) = transfer(topo, input, env, args);
        assert_same(
            &out,
            input,
            &format!("{topo:?} {env:?} {args:?} size {size}"),
        );
        if let Some(trace) = expect_trace(size) {
            assert!(
                stderr.contains(&trace),
                "{topo:?} {env:?} size {size}: expected {trace:?} in {stderr:?}"
            );
        }
    }
}

fn name(topo: Topo) -> &'static str {
    match topo {
        Topo::PipePipe | Topo::PipeFile => "(stdin)",
        _ => "/in",
    }
}

#[test]
fn default_paths_are_zero_copy_and_exact() {
    let _cores = crate::util::cores_busy();
    for topo in TOPOS {
        let path = if matches!(topo, Topo::FileFile) {
            "CopyRange"
        } else {
            "Splice"
        };
        check_all_sizes(topo, &[], &[], |_| Some(format!("{}: {path}", name(topo))));
    }
}

#[test]
fn forced_read_write_is_exact() {
    for topo in TOPOS {
        check_all_sizes(topo, &[("RPV_TEST_PATH", "rw")], &[], |_| {
            Some(format!("{}: ReadWrite", name(topo)))
        });
    }
}

#[test]
fn no_splice_option_uses_read_write() {
    for topo in TOPOS {
        check_all_sizes(topo, &[], &["-C"], |_| {
            Some(format!("{}: ReadWrite", name(topo)))
        });
    }
}

#[test]
fn first_zero_copy_failure_falls_back_without_loss() {
    for topo in TOPOS {
        check_all_sizes(topo, &[("RPV_TEST_FAIL_AT", "1")], &[], |_| {
            Some(format!("{}: ReadWrite after 1 zero-copy calls", name(topo)))
        });
    }
}

#[test]
fn mid_stream_zero_copy_failure_falls_back_without_loss_or_duplication() {
    let _cores = crate::util::cores_busy();
    for topo in TOPOS {
        for at in ["2", "3"] {
            // copy_file_range moves up to 8 MiB a call, splice up to the pipe size (1 MiB).
            let chunk = if matches!(topo, Topo::FileFile) {
                8 << 20
            } else {
                1 << 20
            };
            check_all_sizes(topo, &[("RPV_TEST_FAIL_AT", at)], &[], |size| {
                // A second (third) call happens only if the first (two) moved data.
                (size > 0 && (at == "2" || size > chunk))
                    .then(|| format!("{}: ReadWrite after {at} zero-copy calls", name(topo)))
            });
        }
    }
}

#[test]
fn paths_the_kernel_refuses_fall_back() {
    // splice between two regular files, and copy_file_range from a pipe: both EINVAL.
    check_all_sizes(Topo::FileFile, &[("RPV_TEST_PATH", "splice")], &[], |_| {
        Some("/in: ReadWrite after 1 zero-copy calls".into())
    });
    check_all_sizes(Topo::PipePipe, &[("RPV_TEST_PATH", "copy")], &[], |_| {
        Some("(stdin): ReadWrite after 1 zero-copy calls".into())
    });
}

#[test]
fn line_mode_is_exact_on_every_topology() {
    let input = text(30_000);
    for topo in TOPOS {
        // Without line budgets, -l counts on the side: tee for pipes, the file for files.
        let fast = match topo {
            Topo::PipePipe | Topo::PipeFile => "TeeLines",
            Topo::FilePipe | Topo::FileFile => "FileLines",
        };
        for args in [&["-l"][..], &["-0"][..], &["-l", "-B", "4097"][..]] {
            let (out, stderr) = transfer(topo, &input, &[], args);
            assert_same(&out, &input, &format!("{topo:?} {args:?}"));
            // -B implies -C (as in pv): read/write.
            let path = if args.contains(&"-B") {
                "ReadWrite"
            } else {
                fast
            };
            assert!(stderr.contains(path), "{topo:?} {args:?}: {stderr}");
        }
    }
}

#[test]
fn small_buffer_sizes_are_exact() {
    let _cores = crate::util::cores_busy();
    let input = data(300_001, 7);
    for topo in TOPOS {
        for b in ["1", "4095", "65537"] {
            let (out, _) = transfer(topo, &input, &[], &["-B", b]);
            assert_same(&out, &input, &format!("{topo:?} -B {b}"));
        }
    }
}

#[test]
fn several_inputs_are_concatenated_in_order() {
    let dir = Dir::new();
    let a = data(70_000, 1);
    let b = data(1, 2);
    let c = data(4096, 3);
    let (pa, pb, pc) = (dir.file("a", &a), dir.file("b", &b), dir.file("c", &c));
    let stdin_part = data(5000, 4);
    for env in [None, Some("rw")] {
        let mut cmd = rpv(&["-q", s(&pa), "-", s(&pb), s(&pc)]);
        if let Some(p) = env {
            cmd.env("RPV_TEST_PATH", p);
        }
        let out = run_with_input(cmd, &stdin_part);
        let expected = [&a[..], &stdin_part, &b, &c].concat();
        assert_same(&out.stdout, &expected, "concatenation");
        assert!(out.status.success());
    }
}

/// A sparse file just over 4 GiB with data around the 4 GiB mark and at the end.
fn sparse_over_4g(dir: &Dir) -> (std::path::PathBuf, u64, Vec<(u64, Vec<u8>)>) {
    let path = dir.path("sparse");
    let (len, regions) = lay_out_over_4g(&File::create(&path).unwrap());
    (path, len, regions)
}

/// [`sparse_over_4g`] in memory (a memfd, named by its `/proc` path, open while the
/// returned file is): reading a whole file's holes costs a disk file's page cache 4 GiB of
/// zeroed pages (about 6 s of system time here), a memory file's none. rpv reads either as
/// a regular file, with the same calls.
fn sparse_over_4g_in_memory() -> (File, std::path::PathBuf, u64, Vec<(u64, Vec<u8>)>) {
    let fd = rustix::fs::memfd_create("sparse", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
    let f = File::from(fd);
    use std::os::fd::AsRawFd;
    let path = format!("/proc/{}/fd/{}", std::process::id(), f.as_raw_fd()).into();
    let (len, regions) = lay_out_over_4g(&f);
    (f, path, len, regions)
}

/// Makes `f` a file of 4 GiB + 65537 bytes, zeros but for three regions of data (at the
/// start, across 4 GiB, at the end); returns its length and the regions.
fn lay_out_over_4g(f: &File) -> (u64, Vec<(u64, Vec<u8>)>) {
    let len: u64 = (4 << 30) + 65537;
    f.set_len(len).unwrap();
    let regions = vec![
        (0, data(4097, 11)),
        ((4 << 30) - 70_000, data(100_001, 12)),
        (len - 4097, data(4097, 13)),
    ];
    for (off, bytes) in &regions {
        f.write_all_at(bytes, *off).unwrap();
    }
    (len, regions)
}

/// Checks a stream against the sparse layout chunk by chunk (zeros outside the regions).
fn verify_stream(mut r: impl Read, start: u64, len: u64, regions: &[(u64, Vec<u8>)]) {
    let mut expected = vec![0u8; 1 << 20];
    let mut got = vec![0u8; 1 << 20];
    let mut pos = start;
    while pos < len {
        let n = ((len - pos) as usize).min(got.len());
        r.read_exact(&mut got[..n])
            .unwrap_or_else(|e| panic!("short stream at {pos}: {e}"));
        expected[..n].fill(0);
        for (off, bytes) in regions {
            let (lo, hi) = (
                *off.max(&pos),
                (off + bytes.len() as u64).min(pos + n as u64),
            );
            if lo < hi {
                expected[(lo - pos) as usize..(hi - pos) as usize]
                    .copy_from_slice(&bytes[(lo - off) as usize..(hi - off) as usize]);
            }
        }
        assert!(
            got[..n] == expected[..n],
            "content differs in [{pos}, {})",
            pos + n as u64
        );
        pos += n as u64;
    }
    let mut rest = Vec::new();
    r.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty(), "{} bytes too many", rest.len());
}

#[test]
fn past_4_gib_whole_file_to_pipe() {
    let _cores = crate::util::cores_busy();
    let (_file, path, len, regions) = sparse_over_4g_in_memory();
    for path_env in ["splice", "rw"] {
        let mut child = rpv(&["-q", s(&path)])
            .env("RPV_TEST_PATH", path_env)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        verify_stream(child.stdout.take().unwrap(), 0, len, &regions);
        assert!(child.wait().unwrap().success());
    }
}

#[test]
fn past_4_gib_offsets_on_every_file_path() {
    let dir = Dir::new();
    let (path, len, regions) = sparse_over_4g(&dir);
    let start = (4 << 30) - 100_000;
    let out_at: u64 = (5 << 30) + 3;
    for env in [
        None,
        Some(("RPV_TEST_PATH", "rw")),
        Some(("RPV_TEST_FAIL_AT", "2")),
    ] {
        // stdin positioned past 4 GiB - 100 kB; stdout positioned past 5 GiB.
        let mut input = File::open(&path).unwrap();
        input.seek(SeekFrom::Start(start)).unwrap();
        let out_path = dir.path("big-out");
        let mut output = File::create(&out_path).unwrap();
        output.seek(SeekFrom::Start(out_at)).unwrap();
        let mut cmd: Command = rpv(&["-q"]);
        cmd.stdin(input).stdout(output);
        if let Some((k, v)) = env {
            cmd.env(k, v);
        }
        assert!(cmd.status().unwrap().success(), "{env:?}");
        let mut out = File::open(&out_path).unwrap();
        assert_eq!(
            out.metadata().unwrap().len(),
            out_at + len - start,
            "{env:?}"
        );
        out.seek(SeekFrom::Start(out_at)).unwrap();
        // What landed at out_at.. must be the source from `start` on.
        verify_stream(out.take(len - start), start, len, &regions);
        // And file → pipe from an offset past 4 GiB.
        let mut input = File::open(&path).unwrap();
        input.seek(SeekFrom::Start(start)).unwrap();
        let mut cmd = rpv(&["-q"]);
        cmd.stdin(input).stdout(Stdio::piped());
        if let Some((k, v)) = env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().unwrap();
        verify_stream(child.stdout.take().unwrap(), start, len, &regions);
        assert!(child.wait().unwrap().success());
        std::fs::remove_file(&out_path).unwrap();
    }
}

/// The final count of a `-n -b` run (the last line of stderr that is a number).
fn final_count(stderr: &str) -> u64 {
    stderr
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .next_back()
        .unwrap_or_else(|| panic!("no count in {stderr:?}"))
}

/// Separators in `data`.
fn separators(data: &[u8], sep: u8) -> u64 {
    data.iter().filter(|&&b| b == sep).count() as u64
}

#[test]
fn fast_line_paths_are_exact_and_count_every_line() {
    let _cores = crate::util::cores_busy();
    // Random bytes: about one separator in 256, including NUL for -0.
    let inputs = sized_data(21);
    let counts: Vec<[u64; 2]> = inputs
        .iter()
        .map(|input| [separators(input, b'\n'), separators(input, 0)])
        .collect();
    for topo in TOPOS {
        let fast = match topo {
            Topo::PipePipe | Topo::PipeFile => "TeeLines",
            Topo::FilePipe | Topo::FileFile => "FileLines",
        };
        for (i, (&size, input)) in SIZES.iter().zip(inputs.iter()).enumerate() {
            for (flag, count) in [("-l", counts[i][0]), ("-0", counts[i][1])] {
                let what = format!("{topo:?} {flag} size {size}");
                let (out, stderr) = transfer_with(topo, input, &[], &["-n", "-b"], &[flag]);
                assert_same(&out, input, &what);
                assert!(stderr.contains(&format!(": {fast}")), "{what}: {stderr}");
                assert!(!stderr.contains("ReadWrite"), "{what}: {stderr}");
                assert_eq!(final_count(&stderr), count, "{what}");
                // Files of 4 MiB and more reuse the counts of the -l size count.
                let reused = stderr.contains("line counts of the size count reused");
                let file_input = matches!(topo, Topo::FilePipe | Topo::FileFile);
                assert_eq!(reused, file_input && size >= 4 << 20, "{what}: {stderr}");
            }
        }
    }
}

#[test]
fn reused_line_counts_are_exact_from_any_start_offset() {
    // stdin is the file, positioned anywhere: the size count and the transfer both start
    // there, at block boundaries or not.
    let dir = Dir::new();
    let input = data((9 << 20) + 333, 51);
    let path = dir.file("in", &input);
    for start in [0u64, 1, 65_535, 65_536, (1 << 20) + 7, (5 << 20) - 1] {
        for to_file in [false, true] {
            let mut f = File::open(&path).unwrap();
            f.seek(SeekFrom::Start(start)).unwrap();
            let mut cmd = rpv(&["-n", "-b", "-l"]);
            cmd.env("RPV_TEST_TRACE", "1")
                .stdin(f)
                .stderr(Stdio::piped());
            let out_path = dir.path("out");
            if to_file {
                cmd.stdout(File::create(&out_path).unwrap());
            } else {
                cmd.stdout(Stdio::piped());
            }
            let output = cmd.output().unwrap();
            let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
            assert!(output.status.success(), "{stderr}");
            let out = if to_file {
                std::fs::read(&out_path).unwrap()
            } else {
                output.stdout
            };
            let rest = &input[start as usize..];
            let what = format!("start {start} to_file {to_file}");
            assert_same(&out, rest, &what);
            assert!(stderr.contains("FileLines"), "{what}: {stderr}");
            assert!(stderr.contains("size count reused"), "{what}: {stderr}");
            assert_eq!(final_count(&stderr), separators(rest, b'\n'), "{what}");
        }
    }
}

#[test]
fn fast_line_paths_fall_back_without_loss_or_miscount() {
    let _cores = crate::util::cores_busy();
    // TeeLines: call 1 is a tee, 2 the splice of what it duplicated, 3 the next tee.
    // FileLines: every call is a splice or copy_file_range.
    let inputs = sized_data(31);
    let counts: Vec<u64> = inputs.iter().map(|i| separators(i, b'\n')).collect();
    for topo in TOPOS {
        for at in ["1", "2", "3"] {
            for (i, (&size, input)) in SIZES.iter().zip(inputs.iter()).enumerate() {
                let what = format!("{topo:?} fail at {at} size {size}");
                let env = [("RPV_TEST_FAIL_AT", at)];
                let (out, stderr) = transfer_with(topo, input, &env, &["-n", "-b"], &["-l"]);
                assert_same(&out, input, &what);
                assert_eq!(final_count(&stderr), counts[i], "{what}");
                if at == "1" {
                    let trace = format!("{}: ReadWrite after 1 zero-copy calls", name(topo));
                    assert!(stderr.contains(&trace), "{what}: {stderr}");
                }
            }
        }
    }
}

#[test]
fn forced_fast_line_paths_refused_by_the_kernel_fall_back() {
    // tee from a regular file and FileLines from a pipe (lseek fails): read/write takes over.
    let input = text(20_000);
    let cases = [
        (
            Topo::FilePipe,
            "tee",
            "/in: ReadWrite after 1 zero-copy calls",
        ),
        (
            Topo::PipePipe,
            "filelines",
            "(stdin): ReadWrite after 0 zero-copy calls",
        ),
    ];
    for (topo, path, trace) in cases {
        let env = [("RPV_TEST_PATH", path)];
        let (out, stderr) = transfer_with(topo, &input, &env, &["-n", "-b"], &["-l"]);
        assert_same(&out, &input, path);
        assert!(stderr.contains(trace), "{path}: {stderr}");
        assert_eq!(final_count(&stderr), separators(&input, b'\n'), "{path}");
    }
}

#[test]
fn line_budgets_and_capture_keep_the_read_write_line_path() {
    let input = text(5000);
    for topo in TOPOS {
        for args in [
            &["-l", "-S", "-s", "1234"][..],
            &["-l", "-C"][..],
            &["-l", "-L", "1000000"][..],
        ] {
            let (out, stderr) = transfer(topo, &input, &[], args);
            let expect = if args[1] == "-S" {
                let cut = input
                    .iter()
                    .enumerate()
                    .filter(|(_, &b)| b == b'\n')
                    .nth(1233)
                    .unwrap()
                    .0;
                &input[..=cut]
            } else {
                &input[..]
            };
            assert_same(&out, expect, &format!("{topo:?} {args:?}"));
            assert!(
                stderr.contains(": ReadWrite"),
                "{topo:?} {args:?}: {stderr}"
            );
        }
    }
}

/// Runs rpv on /dev/zero (stdin, or `operand`) into a pipe or a new file; returns the
/// output and stderr.
fn from_zero(
    to_file: bool,
    operand: bool,
    env: &[(&str, &str)],
    args: &[&str],
) -> (Vec<u8>, String) {
    let dir = Dir::new();
    let mut all = vec!["-q"];
    all.extend_from_slice(args);
    if operand {
        all.push("/dev/zero");
    }
    let mut cmd = rpv(&all);
    cmd.env("RPV_TEST_TRACE", "1");
    for (k, v) in env {
        cmd.env(k, v);
    }
    if operand {
        cmd.stdin(Stdio::null());
    } else {
        cmd.stdin(File::open("/dev/zero").unwrap());
    }
    let out_path = dir.path("out");
    if to_file {
        cmd.stdout(File::create(&out_path).unwrap());
    } else {
        cmd.stdout(Stdio::piped());
    }
    let output = cmd.stderr(Stdio::piped()).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "{args:?}: {stderr}");
    let bytes = if to_file {
        std::fs::read(&out_path).unwrap()
    } else {
        output.stdout
    };
    (bytes, stderr)
}

#[test]
fn dev_zero_source_stops_exactly_at_the_size() {
    // Size 0 means "unknown" to -s, so the smallest stop size tested is 1.
    for &size in &SIZES[1..] {
        let n = size.to_string();
        for to_file in [false, true] {
            for operand in [false, true] {
                let what = format!("size {size} to_file {to_file} operand {operand}");
                let (out, stderr) = from_zero(to_file, operand, &[], &["-S", "-s", &n]);
                assert_eq!(out.len(), size, "{what}");
                assert!(out.iter().all(|&b| b == 0), "{what}: non-zero byte");
                assert!(stderr.contains(": Zero"), "{what}: {stderr}");
            }
        }
    }
}

#[test]
fn dev_zero_source_falls_back_without_loss_or_duplication() {
    for at in ["1", "2", "3"] {
        for &size in &SIZES[1..] {
            let n = size.to_string();
            for to_file in [false, true] {
                let what = format!("fail at {at} size {size} to_file {to_file}");
                let env = [("RPV_TEST_FAIL_AT", at)];
                let (out, stderr) = from_zero(to_file, false, &env, &["-S", "-s", &n]);
                assert_eq!(out.len(), size, "{what}");
                assert!(out.iter().all(|&b| b == 0), "{what}: non-zero byte");
                // A second (third) call happens only if the first (two) left some to do.
                let chunk = 1 << 20;
                if at == "1" || (at == "2" && size > chunk) || size > 2 * chunk {
                    let trace = format!("ReadWrite after {at} zero-copy calls");
                    assert!(stderr.contains(&trace), "{what}: {stderr}");
                }
            }
        }
    }
}

#[test]
fn dev_zero_with_no_splice_reads_the_device() {
    let (out, stderr) = from_zero(false, false, &[], &["-C", "-S", "-s", "70000"]);
    assert_eq!(out.len(), 70_000);
    assert!(out.iter().all(|&b| b == 0));
    assert!(stderr.contains(": ReadWrite"), "{stderr}");
}

#[test]
fn adaptive_switching_between_splice_and_read_write_is_exact() {
    let _cores = crate::util::cores_busy();
    // RPV_TEST_ADAPT=N alternates splice and read/write every N calls on a pipe input.
    for topo in [Topo::PipePipe, Topo::PipeFile] {
        for every in ["1", "2", "3"] {
            let env = [("RPV_TEST_ADAPT", every)];
            // Every splice that moves data counts; with N = 1 the first one switches, and
            // past 1 MiB (more than one splice can move) a read follows and switches back.
            check_all_sizes(topo, &env, &[], |size| match size {
                _ if every != "1" || size == 0 => None,
                _ if size > 1 << 20 => Some("(stdin): Splice again".to_string()),
                _ => Some("(stdin): coalescing with ReadWrite".to_string()),
            });
            // With a mid-stream zero-copy failure as well.
            let env = [("RPV_TEST_ADAPT", every), ("RPV_TEST_FAIL_AT", "2")];
            check_all_sizes(topo, &env, &[], |_| None);
        }
    }
}

#[test]
fn adaptive_switching_keeps_the_stop_size_exact() {
    let input = data((3 << 20) + 7, 41);
    for topo in [Topo::PipePipe, Topo::PipeFile] {
        for stop in [1usize, 4097, 65537, (1 << 20) + 1, (2 << 20) + 3] {
            let n = stop.to_string();
            let env = [("RPV_TEST_ADAPT", "1")];
            let (out, _) = transfer(topo, &input, &env, &["-S", "-s", &n]);
            assert_same(&out, &input[..stop], &format!("{topo:?} -S -s {stop}"));
        }
    }
}

#[test]
fn paced_pipe_input_is_exact() {
    // RPV_TEST_PACE=NS waits after every call that moved data from a pipe input, as rpv
    // does by itself for a fast producer of small pieces; alone, with the read/write
    // coalescing switch, and with a mid-stream fallback.
    let pace = ("RPV_TEST_PACE", "20000");
    let envs = [
        vec![pace],
        vec![pace, ("RPV_TEST_ADAPT", "2")],
        vec![pace, ("RPV_TEST_FAIL_AT", "2")],
    ];
    let traced = |size: usize| (size > 0).then(|| "trace: pacing the input".to_string());
    for topo in [Topo::PipePipe, Topo::PipeFile] {
        for env in &envs {
            check_all_sizes(topo, env, &[], traced);
        }
        let input = data((3 << 20) + 7, 43);
        for stop in [1usize, 65537, (2 << 20) + 3] {
            let n = stop.to_string();
            let (out, _) = transfer(topo, &input, &envs[0], &["-S", "-s", &n]);
            assert_same(
                &out,
                &input[..stop],
                &format!("{topo:?} paced -S -s {stop}"),
            );
        }
    }
    // Only pipe inputs are paced.
    let (out, stderr) = transfer(Topo::FilePipe, &data(1 << 20, 44), &envs[0], &[]);
    assert_eq!(out.len(), 1 << 20);
    assert!(!stderr.contains("pacing"), "{stderr}");
}

#[test]
fn small_writes_from_a_fast_producer_are_exact() {
    let _cores = crate::util::cores_busy();
    // A producer writing 1000-byte pieces as fast as it can: the case rpv paces and
    // coalesces by itself (no hooks).
    let input = data((24 << 20) + 999, 45);
    for topo in [Topo::PipePipe, Topo::PipeFile] {
        let dir = Dir::new();
        let out_path = dir.path("out");
        let mut cmd = rpv(&["-q"]);
        cmd.stdin(Stdio::piped()).stderr(Stdio::piped());
        match topo {
            Topo::PipeFile => cmd.stdout(File::create(&out_path).unwrap()),
            _ => cmd.stdout(Stdio::piped()),
        };
        let mut child = cmd.spawn().unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let pieces = input.clone();
        let writer = std::thread::spawn(move || {
            for piece in pieces.chunks(1000) {
                std::io::Write::write_all(&mut stdin, piece).unwrap();
            }
        });
        let output = child.wait_with_output().unwrap();
        writer.join().unwrap();
        assert!(output.status.success(), "{topo:?}: {output:?}");
        let got = match topo {
            Topo::PipeFile => std::fs::read(&out_path).unwrap(),
            _ => output.stdout,
        };
        assert_same(&got, &input, &format!("{topo:?} 1000-byte writes"));
    }
}

#[test]
fn a_fifo_input_is_opened_once() {
    // Sizing the inputs must not open them: a FIFO opened and closed again would pair with
    // the writer and leave it without a reader (EPIPE), then wait for a writer for ever.
    for args in [&["-q"][..], &["-q", "-l"], &["-q", "-o", "OUT"]] {
        let dir = Dir::new();
        let fifo = dir.path("fifo");
        assert!(Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        let input = data((1 << 20) + 3, 46);
        let (path, expected) = (fifo.clone(), input.clone());
        let writer = std::thread::spawn(move || {
            let mut f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
            std::io::Write::write_all(&mut f, &expected)
        });
        let out_path = dir.path("out");
        let mut all: Vec<&str> = args
            .iter()
            .map(|a| if *a == "OUT" { s(&out_path) } else { a })
            .collect();
        all.push(s(&fifo));
        let mut child = rpv(&all)
            .stdin(Stdio::null())
            .stdout(File::create(&out_path).unwrap())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let status = crate::util::wait_within(
            &mut child,
            crate::util::PATIENCE,
            &format!("rpv {args:?} fifo"),
        );
        assert!(status.success(), "{args:?}: {status:?}");
        writer
            .join()
            .unwrap()
            .expect("writer: all data taken by one reader");
        assert_same(
            &std::fs::read(&out_path).unwrap(),
            &input,
            &format!("{args:?} fifo"),
        );
    }
}

#[test]
fn copy_file_range_across_filesystems_falls_back_without_loss() {
    // A tmpfs file into a file on the test directory's filesystem: copy_file_range between
    // two filesystems is refused with EXDEV on most kernels (6.18 here), and read/write
    // takes over at the same offset. Skipped where /dev/shm is missing or the same device.
    use std::os::unix::fs::MetadataExt;
    let Ok(shm) = tempfile::tempdir_in("/dev/shm") else {
        eprintln!("skipped: no /dev/shm");
        return;
    };
    let dir = Dir::new();
    let same_dev = |a: &std::path::Path, b: &std::path::Path| {
        std::fs::metadata(a).unwrap().dev() == std::fs::metadata(b).unwrap().dev()
    };
    if same_dev(shm.path(), dir.dir.path()) {
        eprintln!("skipped: /dev/shm and the test directory are one filesystem");
        return;
    }
    for size in [1usize, 4097, (8 << 20) + 5, (17 << 20) + 3] {
        let input = data(size, 47);
        let in_path = shm.path().join("in");
        std::fs::write(&in_path, &input).unwrap();
        let out_path = dir.path("out");
        let out = rpv(&["-q", s(&in_path)])
            .env("RPV_TEST_TRACE", "1")
            .stdin(Stdio::null())
            .stdout(File::create(&out_path).unwrap())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let trace = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{trace}");
        assert_same(
            &std::fs::read(&out_path).unwrap(),
            &input,
            &format!("{size}"),
        );
        assert!(trace.contains(": CopyRange"), "{trace}");
        if trace.contains("ReadWrite after") {
            assert!(
                trace.contains("ReadWrite after 1 zero-copy calls"),
                "{trace}"
            );
        }
    }
}
