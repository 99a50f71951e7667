//! Options through the binary: parsing forms, -S, -L, -l, -n, -W, -D, -s @PATH, help.

use std::fs::File;
use std::io::Read;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::util::{assert_same, data, err, rpv, run_with_input, s, text, Dir};

fn numeric_lines(stderr: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(stderr)
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn stop_at_size_leaves_the_rest_in_the_input() {
    let dir = Dir::new();
    let path = dir.file("in", b"abcdefghi\n");
    for env in [None, Some("rw")] {
        let mut input = File::open(&path).unwrap();
        let mut cmd = rpv(&["-qSs5"]);
        if let Some(p) = env {
            cmd.env("RPV_TEST_PATH", p);
        }
        let out = cmd.stdin(input.try_clone().unwrap()).output().unwrap();
        assert_eq!(out.stdout, b"abcde", "{env:?}");
        let mut rest = Vec::new();
        input.read_to_end(&mut rest).unwrap();
        assert_eq!(
            rest, b"fghi\n",
            "{env:?}: the rest stays for the next reader"
        );
    }
}

#[test]
fn stop_at_size_in_line_mode_stops_after_whole_lines() {
    let out = run_with_input(rpv(&["-q", "-l", "-S", "-s", "2"]), b"one\ntwo\nthree\n");
    assert_eq!(out.stdout, b"one\ntwo\n");
}

#[test]
fn stop_at_size_with_unknown_size_passes_everything() {
    // pv 1.11 transfers nothing here; rpv passes the data through.
    let out = run_with_input(rpv(&["-q", "-S"]), b"abc");
    assert_eq!(out.stdout, b"abc");
}

#[test]
fn rate_limit_is_accurate_and_never_bursts() {
    let _cores = crate::util::cores_free();
    // 10 MiB/s for 6 s: check the amount at 5 s after the first byte (within 2 %), and that
    // the cumulative amount never runs ahead of rate × t + one interval's worth.
    let rate = 10u64 << 20;
    let mut child = crate::util::rpv_on_time(&["-q", "-L", "10M", "-S", "-s", "60M", "/dev/zero"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = child.stdout.take().unwrap();
    let mut buf = vec![0u8; 1 << 20];
    let mut log: Vec<(Instant, u64)> = Vec::new();
    let mut total = 0u64;
    let mut first = None;
    loop {
        let n = pipe.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        let now = Instant::now();
        let t0 = *first.get_or_insert(now);
        total += n as u64;
        log.push((now, total));
        let t = now.duration_since(t0).as_secs_f64();
        assert!(
            total as f64 <= rate as f64 * (t + 0.1) + 65536.0,
            "burst: {total} bytes at {t:.3} s"
        );
    }
    assert!(child.wait().unwrap().success());
    assert_eq!(total, 60 << 20, "-S stops at exactly --size");
    let t0 = first.unwrap();
    let at5 = log
        .iter()
        .take_while(|(t, _)| t.duration_since(t0) <= Duration::from_secs(5))
        .last()
        .unwrap()
        .1;
    let target = rate as f64 * 5.0;
    let error = (at5 as f64 - target).abs() / target;
    assert!(
        error < 0.02,
        "moved {at5} in 5 s, target {target} ({:.2} %)",
        error * 100.0
    );
}

#[test]
fn line_rate_limit_limits_lines() {
    let input = text(3000);
    let start = Instant::now();
    let out = run_with_input(rpv(&["-q", "-l", "-L", "2000"]), &input);
    let secs = start.elapsed().as_secs_f64();
    assert_same(&out.stdout, &input, "-l -L");
    // 3000 lines at 2000 lines/s cannot take less than about 1.5 s minus one quantum.
    assert!(secs >= 1.4, "3000 lines at 2000/s took only {secs:.2} s");
}

#[test]
fn numeric_mode_counts_bytes_lines_and_percent() {
    let input = text(30_000);
    let lines = 30_000u64;
    let out = run_with_input(rpv(&["-n", "-l", "-b"]), &input);
    assert_eq!(
        numeric_lines(&out.stderr).last().unwrap(),
        &lines.to_string()
    );
    let out = run_with_input(rpv(&["-n", "-b"]), &input);
    assert_eq!(
        numeric_lines(&out.stderr).last().unwrap(),
        &input.len().to_string()
    );
    // Only the final update (a busy machine can stretch the run past a 1 s interval).
    let size = input.len().to_string();
    let out = run_with_input(rpv(&["-n", "-i", "600", "-s", &size]), &input);
    assert_eq!(numeric_lines(&out.stderr), vec!["100"]);
    let out = run_with_input(rpv(&["-n", "-t", "-b", "-r"]), &input);
    let last = numeric_lines(&out.stderr).pop().unwrap();
    let fields: Vec<&str> = last.split(' ').collect();
    assert_eq!(fields.len(), 3, "{last}");
    assert!(
        fields[0].parse::<f64>().is_ok() && fields[0].split('.').nth(1).unwrap().len() == 4,
        "{last}"
    );
    assert_eq!(fields[1], input.len().to_string());
    assert!(fields[2].parse::<f64>().unwrap() > 0.0, "{last}");
    assert!(!out.stderr.contains(&b'\r'), "numeric mode writes no \\r");
}

#[test]
fn numeric_updates_follow_the_interval() {
    // 1.2 MiB at 1 MiB/s with -i 0.2: about 6 updates, plus the final one.
    let out = run_with_input(
        rpv(&["-n", "-b", "-i", "0.2", "-L", "1M"]),
        &data(1_200_000, 1),
    );
    let n = numeric_lines(&out.stderr).len();
    assert!((4..=9).contains(&n), "{n} updates: {}", err(&out));
    let values: Vec<u64> = numeric_lines(&out.stderr)
        .iter()
        .map(|l| l.parse().unwrap())
        .collect();
    assert!(
        values.windows(2).all(|w| w[0] <= w[1]),
        "monotonic: {values:?}"
    );
    assert_eq!(*values.last().unwrap(), 1_200_000);
}

#[test]
fn size_from_a_file_or_a_directory() {
    let dir = Dir::new();
    std::fs::create_dir(dir.path("tree")).unwrap();
    std::fs::write(dir.path("tree/a"), vec![1u8; 300]).unwrap();
    std::fs::create_dir(dir.path("tree/sub")).unwrap();
    std::fs::write(dir.path("tree/sub/b"), vec![2u8; 700]).unwrap();
    let input = vec![0u8; 500];
    let out = run_with_input(
        rpv(&["-n", "-s", &format!("@{}", s(&dir.path("tree")))]),
        &input,
    );
    assert_eq!(numeric_lines(&out.stderr), vec!["50"], "500 of 1000 bytes");
    let out = run_with_input(
        rpv(&["-n", "-s", &format!("@{}", s(&dir.path("tree/sub/b")))]),
        &input,
    );
    assert_eq!(numeric_lines(&out.stderr), vec!["71"], "500 of 700 bytes");
}

#[test]
fn size_is_detected_from_regular_files_and_line_counts() {
    let dir = Dir::new();
    let a = dir.file("a", &text(1000));
    let out = rpv(&["-n", "-l", s(&a)])
        .stdout(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(numeric_lines(&out.stderr), vec!["100"]);
    // A pipe among the inputs makes the size unknown: the bouncing counter, not 100.
    let out = run_with_input(rpv(&["-n", "-", s(&a)]), b"xyz");
    assert_ne!(numeric_lines(&out.stderr).last().unwrap(), "100");
}

#[test]
fn wait_and_delay_hide_short_or_empty_transfers() {
    let out = run_with_input(rpv(&["-f", "-W"]), b"");
    assert!(
        out.stderr.is_empty(),
        "-W with no data prints nothing: {:?}",
        err(&out)
    );
    let out = run_with_input(rpv(&["-f", "-D", "5"]), b"abc");
    assert!(
        out.stderr.is_empty(),
        "finished before -D: nothing: {:?}",
        err(&out)
    );
    assert_eq!(out.stdout, b"abc");
    let out = run_with_input(rpv(&["-f", "-W", "-b"]), b"abc");
    assert_eq!(err(&out), "3.00  B\r\n");
}

#[test]
fn quiet_and_non_tty_stderr_show_nothing() {
    let out = run_with_input(rpv(&["-q", "-f"]), b"abc");
    assert!(out.stderr.is_empty());
    let out = run_with_input(rpv(&[]), b"abc");
    assert!(
        out.stderr.is_empty(),
        "stderr not a tty and no -f: no display"
    );
    assert_eq!(out.stdout, b"abc");
}

#[test]
fn getopt_forms_work_end_to_end() {
    let input = b"0123456789";
    // Bundled, attached, long with =, long with a space, prefix, options after operands.
    for args in [
        &["-fbs10"][..],
        &["-f", "-b", "-s", "10"],
        &["--force", "--bytes", "--size=10"],
        &["--forc", "--byt", "--interv", "0.5", "--size", "10"],
        &["-", "-f", "-b"],
        &["-f", "-b", "--", "-"],
    ] {
        let out = run_with_input(rpv(args), input);
        assert_eq!(out.stdout, input, "{args:?}");
        assert_eq!(err(&out), "10.0  B\r\n", "{args:?}");
    }
}

#[test]
fn help_and_version_go_to_stdout() {
    let out = rpv(&["--help", "--bogus"]).output().unwrap();
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    assert!(
        help.starts_with("Usage: rpv [OPTION] [FILE]...\n"),
        "{help}"
    );
    assert!(help.lines().any(|l| l.starts_with("  -R, --remote")));
    let out = rpv(&["-V"]).output().unwrap();
    let version = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        version.lines().next().unwrap(),
        format!("rpv {}", env!("CARGO_PKG_VERSION"))
    );
}

/// A loop device over a file, detached on drop; None where loop devices are not available.
struct Loop(String);

impl Loop {
    fn new(backing: &std::path::Path) -> Option<Loop> {
        let out = std::process::Command::new("losetup")
            .args(["-f", "--show", s(backing)])
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| Loop(String::from_utf8_lossy(&out.stdout).trim().to_string()))
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = std::process::Command::new("losetup")
            .args(["-d", &self.0])
            .status();
    }
}

#[test]
fn block_devices_give_their_size_in_and_out() {
    let dir = Dir::new();
    let backing = dir.file("disk.img", &vec![0u8; 4 << 20]);
    let Some(dev) = Loop::new(&backing) else {
        eprintln!("SKIPPED: no loop device could be set up (not root, or no loop support)");
        return;
    };
    let image = data(4 << 20, 9);
    // Writing to a block device: its size is the total, and rpv stops there (-S implied).
    let mut input = image.clone();
    input.extend_from_slice(&data(1 << 20, 10));
    let out = crate::util::run_with_input_keep_stdout(
        {
            let mut c = rpv(&["-n"]);
            c.stdout(
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(&dev.0)
                    .unwrap(),
            );
            c
        },
        &input,
    );
    assert!(out.status.success(), "{}", err(&out));
    assert_eq!(numeric_lines(&out.stderr).last().unwrap(), "100");
    // Reading it back: the device's size is known, and the bytes are the image.
    let out = rpv(&["-n", &dev.0])
        .stdout(Stdio::piped())
        .output()
        .unwrap();
    assert_same(&out.stdout, &image, "block device read back");
    assert_eq!(numeric_lines(&out.stderr).last().unwrap(), "100");
    let out = run_with_input(
        rpv(&["-n", "-s", &format!("@{}", dev.0)]),
        &image[..1 << 20],
    );
    assert_eq!(
        numeric_lines(&out.stderr).last().unwrap(),
        "25",
        "1 MiB of a 4 MiB device"
    );
}
