//! rpv never harms what it is given (issue 25, part A): the files rpv writes for itself
//! (`--metrics-file`, `-P`, `-U FILE`) never replace a device node, a FIFO or one of the
//! transfer's files, and their temporaries cannot be hijacked; an output that reaches a
//! closed standard descriptor or rpv's own input pipe is refused; EPIPE from `-Y`/`-O` is a
//! write error. Device nodes and FIFOs are made in temporary directories, never in /dev.

use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::reliability::strace_available;
use crate::util::{data, err, rpv, wait_within, Dir};

/// Runs `script` under sh in `dir`, with `$0` = rpv; returns (stdout, stderr, code).
fn sh_in(dir: &Path, script: &str) -> (Vec<u8>, String, Option<i32>) {
    let out = Command::new("sh")
        .args(["-c", script, env!("CARGO_BIN_EXE_rpv")])
        .current_dir(dir)
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (out.stdout.clone(), err(&out), out.status.code())
}

/// A character device node (1:3, the null device's numbers) at `path`; false if this
/// system does not let us make one (not root): the caller skips that part.
fn mknod_char(path: &Path) -> bool {
    let made = Command::new("mknod")
        .arg(path)
        .args(["c", "1", "3"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !made {
        eprintln!("skipped: mknod is not allowed here");
    }
    made
}

fn mkfifo(path: &Path) {
    assert!(Command::new("mkfifo").arg(path).status().unwrap().success());
}

/// Still a character device with the numbers 1:3.
#[track_caller]
fn assert_char_device(path: &Path) {
    let meta = std::fs::symlink_metadata(path).unwrap();
    assert!(
        meta.file_type().is_char_device(),
        "{path:?} is still a device"
    );
    assert_eq!(meta.rdev(), libc::makedev(1, 3), "{path:?}");
}

#[track_caller]
fn assert_fifo(path: &Path) {
    let meta = std::fs::symlink_metadata(path).unwrap();
    assert!(meta.file_type().is_fifo(), "{path:?} is still a FIFO");
}

/// Finding 1: `--metrics-file` naming one of the transfer's files, however spelled,
/// destroyed it with status 0. Now: status 4 before anything is written.
#[test]
fn a_metrics_file_that_is_one_of_the_transfers_files_is_refused() {
    let dir = Dir::new();
    let input = data(100_000, 91);
    dir.file("in", &input);
    std::fs::create_dir(dir.path("sub")).unwrap();
    let d = dir.dir.path();
    for (script, message) in [
        (
            "\"$0\" -q --metrics-file f f > out",
            "input file is metrics file: f",
        ),
        (
            "\"$0\" -q --metrics-file ./f f > out",
            "input file is metrics file: f",
        ),
        (
            "\"$0\" -q --metrics-file sub/../f f > out",
            "input file is metrics file: f",
        ),
        (
            "ln f hard; \"$0\" -q --metrics-file hard f > out",
            "input file is metrics file: f",
        ),
        (
            "ln -s f soft; \"$0\" -q --metrics-file soft f > out",
            "input file is metrics file: f",
        ),
        (
            "\"$0\" -q -o f --metrics-file f in",
            "output file is metrics file: f",
        ),
        (
            "\"$0\" -q --metrics-file f in >> f",
            "output file is metrics file: (stdout)",
        ),
        (
            "\"$0\" -q -U f --metrics-file f in > out",
            "-U file is metrics file: f",
        ),
        (
            "\"$0\" -q --tee f --metrics-file f in > out",
            "--tee file is metrics file: f",
        ),
        (
            "\"$0\" -q -P f --metrics-file f in > out",
            "metrics file is pid file: f",
        ),
        (
            "\"$0\" -q -P ./f --metrics-file f in > out",
            "metrics file is pid file: f",
        ),
    ] {
        std::fs::write(d.join("f"), &input).unwrap();
        let _ = std::fs::remove_file(d.join("out"));
        let (_, stderr, code) = sh_in(d, script);
        assert_eq!(
            (stderr.as_str(), code),
            (format!("rpv: {message}\n").as_str(), Some(4)),
            "{script}"
        );
        assert_eq!(
            std::fs::read(d.join("f")).unwrap(),
            input,
            "{script}: f intact"
        );
        let out = std::fs::read(d.join("out")).unwrap_or_default();
        assert!(out.is_empty(), "{script}: nothing copied");
        let _ = std::fs::remove_file(d.join("hard"));
        let _ = std::fs::remove_file(d.join("soft"));
    }
    // Files that are not the transfer's are fine: a hard link to a file nobody copies is
    // replaced (the link), and the file it shared its data with keeps it.
    std::fs::write(d.join("other"), b"other").unwrap();
    let (out, stderr, code) = sh_in(d, "ln other hard; \"$0\" -q --metrics-file hard in");
    assert_eq!((stderr.as_str(), code), ("", Some(0)));
    assert_eq!(out, input);
    assert_eq!(std::fs::read(d.join("other")).unwrap(), b"other");
    let text = std::fs::read_to_string(d.join("hard")).unwrap();
    assert!(text.contains("rpv_done{"), "{text}");
}

/// Finding 2, first-use D1: `--metrics-file` renamed a regular file over a device node, a
/// FIFO, or what a symlink named (as root, `/dev/null` became a file). `-P` and `-U` share
/// the rule. Status 1, before any byte is copied; the objects stay as they were.
#[test]
fn files_rpv_owns_never_replace_a_device_a_fifo_or_a_directory() {
    let dir = Dir::new();
    let d = dir.dir.path();
    let input = data(100_000, 92);
    dir.file("in", &input);
    mkfifo(&dir.path("fifo"));
    std::fs::create_dir(dir.path("adir")).unwrap();
    std::os::unix::fs::symlink("fifo", dir.path("to-fifo")).unwrap();
    std::os::unix::fs::symlink("/proc/self/fd/1", dir.path("stdout")).unwrap();
    let device = mknod_char(&dir.path("null"));
    let mut cases = vec![
        (
            "--metrics-file",
            "fifo",
            "rpv: --metrics-file fifo: not a regular file\n",
        ),
        (
            "--metrics-file",
            "to-fifo",
            "rpv: --metrics-file to-fifo: not a regular file\n",
        ),
        (
            "--metrics-file",
            "adir",
            "rpv: --metrics-file adir: Is a directory\n",
        ),
        ("-P", "adir", "rpv: -P adir: Is a directory\n"),
        ("-U", "adir", "rpv: -U adir: Is a directory\n"),
        // A link to the descriptor, as /dev/stdout is: here a pipe.
        (
            "--metrics-file",
            "stdout",
            "rpv: --metrics-file stdout: not a regular file\n",
        ),
        ("-P", "to-fifo", "rpv: -P to-fifo: not a regular file\n"),
        ("-U", "to-fifo", "rpv: -U to-fifo: not a regular file\n"),
    ];
    if device {
        cases.extend([
            (
                "--metrics-file",
                "null",
                "rpv: --metrics-file null: not a regular file\n",
            ),
            ("-P", "null", "rpv: -P null: not a regular file\n"),
            ("-U", "null", "rpv: -U null: not a regular file\n"),
        ]);
    }
    for (option, path, message) in cases {
        let out = rpv(&["-q", option, path, "in"])
            .current_dir(d)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(
            (err(&out).as_str(), out.status.code()),
            (message, Some(1)),
            "{option} {path}"
        );
        assert!(out.stdout.is_empty(), "{option} {path}: nothing copied");
        assert_fifo(&dir.path("fifo"));
        assert!(std::fs::symlink_metadata(dir.path("to-fifo"))
            .unwrap()
            .file_type()
            .is_symlink());
        assert!(dir.path("adir").is_dir());
        if device {
            assert_char_device(&dir.path("null"));
        }
    }
    // In --json: kind `file`, status 1.
    let out = rpv(&["--json", "-q", "--metrics-file", "fifo", "in"])
        .current_dir(d)
        .stdout(Stdio::null())
        .output()
        .unwrap();
    let text = err(&out);
    assert!(
        text.contains(r#""kind":"file""#) && text.contains("not a regular file"),
        "{text}"
    );
    assert_eq!(out.status.code(), Some(1));
}

/// Finding 16 (and 2's read-only file): a replaced metrics file keeps its owner, group and
/// permission bits; rpv made every version 0644 and its own.
#[test]
fn a_replaced_metrics_file_keeps_its_owner_and_mode() {
    let dir = Dir::new();
    dir.file("in", &data(1000, 93));
    let path = dir.file("job.prom", b"old\n");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
    let root = rustix::process::geteuid().is_root();
    if root {
        std::os::unix::fs::chown(&path, Some(1234), Some(4321)).unwrap();
    }
    let out = rpv(&["-q", "--metrics-file", "job.prom", "in"])
        .current_dir(dir.dir.path())
        .stdout(Stdio::null())
        .output()
        .unwrap();
    assert_eq!((err(&out).as_str(), out.status.code()), ("", Some(0)));
    let meta = std::fs::metadata(&path).unwrap();
    assert_eq!(meta.mode() & 0o7777, 0o640);
    if root {
        assert_eq!((meta.uid(), meta.gid()), (1234, 4321));
    }
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("rpv_done{name=\"\""), "{text}");
}

/// Waits (with a deadline) for `path` to hold a whole line; returns it.
fn wait_for_line(path: &Path) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            if text.ends_with('\n') {
                return text.trim().to_string();
            }
        }
        assert!(Instant::now() < deadline, "{path:?} never written");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Findings 3 and 6: the metrics temporary was `.NAME.PID.tmp`, opened with O_CREAT|O_TRUNC
/// but not O_EXCL: a hard link planted there had its file overwritten, and a FIFO planted
/// there hung rpv for good (signals could not end it). rpv's PID is known before it runs
/// (`exec` from a shell that wrote `$$`), so the old name is planted first.
#[test]
fn things_planted_at_the_metrics_temporary_name_are_left_alone() {
    for planted in ["hard link", "fifo", "symlink"] {
        let dir = Dir::new();
        let d = dir.dir.path();
        let input = data(200_000, 94);
        dir.file("in", &input);
        let victim = dir.file("victim", b"precious\n");
        std::fs::create_dir(dir.path("d")).unwrap();
        let mut shell = Command::new("sh")
            .args([
                "-c",
                "echo $$ > pid; read go; exec \"$0\" -q --metrics-file d/job.prom in > out",
                env!("CARGO_BIN_EXE_rpv"),
            ])
            .current_dir(d)
            .env("LC_ALL", "C")
            .stdin(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = wait_for_line(&dir.path("pid"));
        let temp = dir.path(&format!("d/.job.prom.{pid}.tmp"));
        match planted {
            "hard link" => std::fs::hard_link(&victim, &temp).unwrap(),
            "fifo" => mkfifo(&temp),
            _ => std::os::unix::fs::symlink(&victim, &temp).unwrap(),
        }
        use std::io::Write;
        shell.stdin.take().unwrap().write_all(b"go\n").unwrap();
        let status = wait_within(&mut shell, crate::util::PATIENCE, planted);
        let stderr = crate::util::stderr_of(&mut shell);
        assert_eq!((stderr.as_str(), status.code()), ("", Some(0)), "{planted}");
        assert_eq!(std::fs::read(dir.path("out")).unwrap(), input, "{planted}");
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious\n", "{planted}");
        let text = std::fs::read_to_string(dir.path("d/job.prom")).unwrap();
        assert!(text.contains("rpv_done{"), "{planted}: {text}");
        let meta = std::fs::symlink_metadata(&temp).unwrap();
        match planted {
            "hard link" => assert_eq!(meta.ino(), std::fs::metadata(&victim).unwrap().ino()),
            "fifo" => assert!(meta.file_type().is_fifo()),
            _ => assert!(meta.file_type().is_symlink()),
        }
    }
}

/// Finding 16: a 250-byte metrics file name (legal) failed with "File name too long": its
/// temporary's name went past 255 bytes.
#[test]
fn a_long_metrics_file_name_works() {
    let dir = Dir::new();
    dir.file("in", &data(1000, 95));
    let name = "m".repeat(250);
    let out = rpv(&["-q", "--metrics-file", &name, "in"])
        .current_dir(dir.dir.path())
        .stdout(Stdio::null())
        .output()
        .unwrap();
    assert_eq!((err(&out).as_str(), out.status.code()), ("", Some(0)));
    let text = std::fs::read_to_string(dir.path(&name)).unwrap();
    assert!(text.contains("rpv_done{"), "{text}");
    let names: Vec<_> = std::fs::read_dir(dir.dir.path()).unwrap().collect();
    assert_eq!(names.len(), 2, "no temporary left");
}

/// Finding 4: with stdout or stderr closed, `-o /dev/stdout` and `--tee /dev/fd/1` (etc.)
/// wrote into the /dev/null Rust's runtime puts on a closed descriptor, status 0. Now they
/// are refused like a closed stdout (status 2); `-o /dev/null` itself still works.
#[test]
fn outputs_that_reach_a_closed_standard_descriptor_are_refused() {
    let dir = Dir::new();
    let d = dir.dir.path();
    dir.file("in", b"hello\n");
    for (script, message) in [
        (
            "\"$0\" -q -o /dev/stdout in >&-",
            "rpv: /dev/stdout: Bad file descriptor\n",
        ),
        (
            "\"$0\" -q -o /dev/fd/1 in >&-",
            "rpv: /dev/fd/1: Bad file descriptor\n",
        ),
        (
            "\"$0\" -q -o o --tee /dev/fd/1 in >&-",
            "rpv: /dev/fd/1: Bad file descriptor\n",
        ),
        (
            "\"$0\" -q -o o --tee /proc/self/fd/1 in >&-",
            "rpv: /proc/self/fd/1: Bad file descriptor\n",
        ),
        (
            "\"$0\" -q -o o --tee /proc/thread-self/fd/1 in >&-",
            "rpv: /proc/thread-self/fd/1: Bad file descriptor\n",
        ),
        (
            "\"$0\" -q -o o --tee /dev/stdin in <&-",
            "rpv: /dev/stdin: Bad file descriptor\n",
        ),
        (
            "ln -s /dev/stdout link; \"$0\" -q -o o --tee link in >&-",
            "rpv: link: Bad file descriptor\n",
        ),
        // stderr closed: no message can be seen, the status says it.
        ("\"$0\" -q -o o --tee /dev/stderr in 2>&-", ""),
        ("\"$0\" -q -o o --tee /dev/fd/2 in 2>&-", ""),
    ] {
        let _ = std::fs::remove_file(d.join("o"));
        let _ = std::fs::remove_file(d.join("link"));
        let (_, stderr, code) = sh_in(d, script);
        assert_eq!((stderr.as_str(), code), (message, Some(2)), "{script}");
        let o = std::fs::read(d.join("o")).unwrap_or_default();
        assert!(o.is_empty(), "{script}: refused before copying");
    }
    // /dev/null by its own name is a fine output, closed stdout or not, and so is another
    // descriptor that is /dev/null; an open stdout reached by name is too.
    for script in [
        "\"$0\" -q -o /dev/null in >&-",
        "\"$0\" -q -o o --tee /dev/fd/5 in >&- 5>/dev/null",
        "\"$0\" -q --tee /dev/stdout in > /dev/null <&-",
    ] {
        let (_, stderr, code) = sh_in(d, script);
        assert_eq!((stderr.as_str(), code), ("", Some(0)), "{script}");
    }
    let (out, stderr, code) = sh_in(d, "\"$0\" -q -o o --tee /dev/stdout in");
    assert_eq!((stderr.as_str(), code), ("", Some(0)));
    assert_eq!(out, b"hello\n");
    assert_eq!(std::fs::read(d.join("o")).unwrap(), b"hello\n");
}

/// Finding 8: `--tee /dev/stdin` (or `-o`) with a pipe on stdin copied rpv's output back
/// into its input for ever. Refused like an input that is the output (status 4).
#[test]
fn an_output_that_is_rpvs_own_input_pipe_is_refused() {
    let dir = Dir::new();
    let d = dir.dir.path();
    dir.file("in", &data(300_000, 96));
    for script in [
        "cat in | \"$0\" -q --tee /dev/stdin > o",
        "cat in | \"$0\" -q --tee /dev/fd/0 > o",
        "cat in | \"$0\" -q -o /dev/stdin > o",
        "cat in | \"$0\" -q -o /proc/self/fd/0 - > o",
    ] {
        let mut child = Command::new("sh")
            .args(["-c", script, env!("CARGO_BIN_EXE_rpv")])
            .current_dir(d)
            .env("LC_ALL", "C")
            .stdin(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let status = wait_within(&mut child, crate::util::PATIENCE, script);
        let stderr = crate::util::stderr_of(&mut child);
        assert_eq!(
            (stderr.as_str(), status.code()),
            ("rpv: input file is output file: (stdin)\n", Some(4)),
            "{script}"
        );
        assert!(std::fs::read(d.join("o")).unwrap().is_empty(), "{script}");
    }
}

/// `rpv args` under strace with `inject`, stdout to `out`, in `dir`; (stderr, code).
fn injected(dir: &Path, inject: &str, args: &[&str], out: &Path) -> (String, Option<i32>) {
    let output = Command::new("strace")
        .args(["-f", "-qq", "-o", "/dev/null", "-e"])
        .arg(format!("inject={inject}"))
        .arg(env!("CARGO_BIN_EXE_rpv"))
        .args(args)
        .current_dir(dir)
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(out).unwrap())
        .output()
        .unwrap();
    (err(&output), output.status.code())
}

/// Finding 14: EPIPE from `-Y`'s fdatasync or `-O`'s ftruncate was taken for "the reader
/// went away": status 0 with a short file. No pipe is involved there: a write error.
#[test]
fn epipe_from_fdatasync_or_ftruncate_is_a_write_error() {
    if !strace_available() {
        return;
    }
    let dir = Dir::new();
    let d = dir.dir.path();
    let input = data(1 << 20, 97);
    dir.file("in", &input);
    let out = dir.path("out");
    for when in ["1", "3"] {
        let (stderr, code) = injected(
            d,
            &format!("fdatasync:error=EPIPE:when={when}"),
            &["-q", "-Y", "in"],
            &out,
        );
        assert_eq!(
            (stderr.as_str(), code),
            ("rpv: write failed: Broken pipe\n", Some(16)),
            "-Y, fdatasync call {when}"
        );
    }
    // -O: a file that ends in zero blocks is given its length with ftruncate at the end.
    let mut zeros_at_end = input.clone();
    zeros_at_end.extend_from_slice(&[0; 16_401]);
    dir.file("inz", &zeros_at_end);
    let (stderr, code) = injected(d, "ftruncate:error=EPIPE", &["-q", "-O", "inz"], &out);
    assert_eq!(
        (stderr.as_str(), code),
        ("rpv: write failed: Broken pipe\n", Some(16)),
        "-O"
    );
    // A --tee output's sync failing so is that output's write error, not a closed reader.
    let (stderr, code) = injected(
        d,
        "fdatasync:error=EPIPE:when=2",
        &["-q", "-Y", "--tee", "copy", "in"],
        &out,
    );
    assert_eq!(code, Some(16), "{stderr}");
    assert!(stderr.contains("write failed: Broken pipe"), "{stderr}");
}

/// Finding 16: a `-U FILE` that cannot be opened is a problem of the store (kind `file`,
/// status 1, as docs/json.md says), not of the output; a write error on it names it; and
/// `--metrics-file` errors carry their errno in --json.
#[test]
fn store_and_metrics_file_errors_are_named_and_typed() {
    let dir = Dir::new();
    let d = dir.dir.path();
    dir.file("in", &data(1 << 20, 98));
    for (args, text) in [
        (
            vec!["--json", "-q", "-U", "/nonexistent/u", "in"],
            "/nonexistent/u: No such file or directory",
        ),
        (
            vec!["--json", "-q", "--metrics-file", "/nonexistent/m", "in"],
            "--metrics-file: /nonexistent/m: No such file or directory",
        ),
    ] {
        let out = rpv(&args)
            .current_dir(d)
            .stdout(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let message = err(&out)
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .find(|o| o["type"] == "message")
            .unwrap();
        assert_eq!(message["kind"], "file", "{args:?}");
        assert_eq!(message["errno"], libc::ENOENT, "{args:?}");
        assert_eq!(message["text"], text, "{args:?}");
    }
    if !strace_available() {
        return;
    }
    // -C: read/write; the data thread's second write (to the store) fails.
    let (stderr, code) = injected(
        d,
        "write:error=ENOSPC:when=2",
        &["-q", "-C", "-U", "st", "in"],
        &dir.path("out"),
    );
    assert_eq!(
        (stderr.as_str(), code),
        (
            "rpv: -U st: write failed: No space left on device\n",
            Some(16)
        )
    );
}
