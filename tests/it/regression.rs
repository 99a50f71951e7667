//! One test per defect found after the first release, named after what was wrong. Each
//! fails on the code before its fix.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileTypeExt;
use std::process::{Child, Stdio};
use std::time::Duration;

use crate::terminal::bash_on_terminal;
use crate::util::{data, rpv, s, spawn_draining, stderr_of, wait_within, Dir};

fn kill(child: &Child, signal: libc::c_int) {
    // SAFETY: plain kill(2) on our own child.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, signal) }, 0);
}

/// `rpv $'f\xff' -o $'g\xff'`: file names are bytes, not text.
#[test]
fn file_names_that_are_not_utf8_are_used_as_given() {
    let dir = Dir::new();
    let input = dir.dir.path().join(OsStr::from_bytes(b"f\xff"));
    let output = dir.dir.path().join(OsStr::from_bytes(b"g\xfe"));
    let bytes = data(100_000, 1);
    std::fs::write(&input, &bytes).unwrap();
    let status = rpv(&["-q"])
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(std::fs::read(&output).unwrap(), bytes);
    let names: Vec<Vec<u8>> = std::fs::read_dir(dir.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().as_bytes().to_vec())
        .collect();
    assert_eq!(names.len(), 2, "no other name was created: {names:?}");
    // And as standard output's input, through a pipe.
    let out = rpv(&["-q"]).arg(&input).output().unwrap();
    assert_eq!(out.stdout, bytes);
}

/// pv 1.11's own `-Q`/`-R` send SIGUSR1/SIGUSR2 to "the pv process"; with `alias pv=rpv`
/// they used to kill a running copy. SIGALRM too.
#[test]
fn sigusr1_sigusr2_and_sigalrm_do_not_end_a_transfer() {
    let dir = Dir::new();
    let bytes = data(3 << 20, 2);
    let input = dir.file("in", &bytes);
    let pidfile = dir.path("pid");
    let (mut child, reader) =
        spawn_draining(rpv(&["-q", "-L", "4M", "-P", s(&pidfile), s(&input)]));
    // The pid file is written once the handlers are in place (a signal before that, like
    // one before any program's start-up is done, takes its default action).
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !pidfile.exists() {
        assert!(std::time::Instant::now() < deadline, "no pid file");
        std::thread::sleep(Duration::from_millis(10));
    }
    for signal in [libc::SIGUSR1, libc::SIGUSR2, libc::SIGALRM, libc::SIGUSR1] {
        kill(&child, signal);
        std::thread::sleep(Duration::from_millis(50));
    }
    let status = wait_within(&mut child, 10.0, "rpv after USR1/USR2/ALRM");
    let copied = reader.join().unwrap();
    let stderr = stderr_of(&mut child);
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert_eq!(copied, bytes.len() as u64, "the whole input went through");
    assert!(!pidfile.exists(), "the pid file is removed");
    assert_eq!(
        stderr.matches("SIGUSR1 ignored").count(),
        1,
        "said once: {stderr:?}"
    );
    assert!(stderr.contains("SIGUSR2 ignored"), "{stderr:?}");
}

/// A Ctrl-C while rpv waits to open `-o FIFO` (no reader yet) used to be swallowed (with
/// `-U`) or to kill rpv by the default action, leaving the pid file.
#[test]
fn an_interrupt_while_waiting_for_a_fifo_reader_exits_32_and_cleans_up() {
    let dir = Dir::new();
    let input = dir.file("in", &data(10_000, 3));
    let fifo = dir.path("fifo");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let pidfile = dir.path("pid");
    let cases: [(&[&str], libc::c_int); 3] = [
        (
            &["-q", "-P", s(&pidfile), "-o", s(&fifo), s(&input)],
            libc::SIGTERM,
        ),
        (
            &["-q", "-P", s(&pidfile), "-o", s(&fifo), s(&input)],
            libc::SIGINT,
        ),
        (
            &[
                "-q",
                "-P",
                s(&pidfile),
                "-U",
                "-",
                "-o",
                s(&fifo),
                s(&input),
            ],
            libc::SIGINT,
        ),
    ];
    for (args, signal) in cases {
        let mut child = rpv(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(400));
        assert!(pidfile.exists(), "{args:?}: pid file written first");
        kill(&child, signal);
        let status = wait_within(&mut child, 3.0, "blocked open");
        assert_eq!(
            status.code(),
            Some(32),
            "{args:?}: {}",
            stderr_of(&mut child)
        );
        assert!(!pidfile.exists(), "{args:?}: pid file removed");
    }
}

/// `-P` messages named the random temporary file instead of the pid file the user gave.
#[test]
fn pid_file_errors_name_the_pid_file() {
    let dir = Dir::new();
    let input = dir.file("in", b"x");
    let sub = dir.path("adir");
    std::fs::create_dir(&sub).unwrap();
    let out = rpv(&["-q", "-P", s(&sub), s(&input)]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!("rpv: {}: Is a directory\n", s(&sub))
    );
    let out = rpv(&["-q", "-P", "", s(&input)]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "rpv: : No such file or directory\n"
    );
    let missing = dir.path("no/such/dir/pid");
    let out = rpv(&["-q", "-P", s(&missing), s(&input)]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!("rpv: {}: No such file or directory\n", s(&missing))
    );
    let leftovers = std::fs::read_dir(dir.dir.path()).unwrap().count();
    assert_eq!(leftovers, 2, "no temporary file left behind");
}

/// `-P PATH` renamed a regular file over whatever PATH was (as root, `-P /dev/full`
/// replaced the device node). Only a regular file, or nothing, may be replaced.
#[test]
fn the_pid_file_never_replaces_anything_but_a_regular_file() {
    let dir = Dir::new();
    let input = dir.file("in", b"x");
    let fifo = dir.path("node");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let out = rpv(&["-q", "-P", s(&fifo), s(&input)]).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).starts_with(&format!("rpv: {}: ", s(&fifo))));
    let meta = std::fs::symlink_metadata(&fifo).unwrap();
    assert!(meta.file_type().is_fifo(), "the FIFO is still there");
    // A regular file is replaced (and removed at the end), as before.
    let regular = dir.file("pid", b"old\n");
    let out = rpv(&["-q", "-P", s(&regular), s(&input)]).output().unwrap();
    assert!(out.status.success());
    assert!(!regular.exists());
}

/// After Ctrl-C the terminal echoes `^C` where the cursor is; the final line used to follow
/// it and wrap onto a second row.
#[test]
fn the_line_after_ctrl_c_starts_at_the_first_column() {
    let dir = Dir::new();
    let input = dir.file("in", &data(8 << 20, 4));
    let script = format!(
        "\"$RPV\" -L 1M -i 0.2 {} > /dev/null; echo rc=$?",
        s(&input)
    );
    let (status, terminal) = bash_on_terminal(&script, 80, 24, false, &[], |t| {
        std::thread::sleep(Duration::from_millis(1500));
        t.type_keys(b"\x03");
    });
    let (rows, bytes, _) = terminal.finish();
    assert!(status.success(), "{:?}", String::from_utf8_lossy(&bytes));
    let rc = rows
        .iter()
        .position(|r| r.starts_with("rc="))
        .unwrap_or_else(|| panic!("no rc line: {rows:#?}"));
    assert_eq!(rows[rc].trim_end(), "rc=32");
    let last = &rows[rc - 1];
    assert!(
        !last.starts_with("^C") && last.contains("ETA") && last.contains('%'),
        "the whole final line on one row, from column 1: {rows:#?}"
    );
}

/// `-T` showed one value whatever the consumer did: rpv's own buffer empties at once while
/// the data waits in the output pipe. It now shows how full both are.
#[test]
fn buffer_percent_shows_the_fill_while_the_consumer_stalls() {
    let dir = Dir::new();
    let log = dir.path("log");
    let script = format!(
        "(dd if=/dev/zero bs=1024 count=1024 2>/dev/null; sleep 2) | {rpv} -f -T -i 0.5 -B 1024 \
         2>{log} | (sleep 1; dd bs=1024 count=512 2>/dev/null; sleep 1; cat) > /dev/null",
        rpv = env!("CARGO_BIN_EXE_rpv"),
        log = s(&log)
    );
    let status = std::process::Command::new("bash")
        .arg("-c")
        .arg(&script)
        .status()
        .unwrap();
    assert!(status.success());
    let text = std::fs::read_to_string(&log).unwrap();
    let mut values: Vec<&str> = text
        .split(['\r', '\n'])
        .filter_map(|l| l.trim().strip_prefix('{'))
        .filter_map(|l| l.split('}').next())
        .collect();
    values.dedup();
    assert!(values.len() > 1, "distinct fills: {values:?} in {text:?}");
    assert!(
        values.contains(&"100%"),
        "full while nobody reads: {values:?}"
    );
}

/// `rpv -c -M both` drew both sides on the same row, which flipped between them.
#[test]
fn cursor_mode_gives_each_side_of_monitor_both_its_own_row() {
    let dir = Dir::new();
    let input = dir.file("in", &data(2 << 20, 5));
    let script = format!(
        "printf 'prompt$ \\n'; \"$RPV\" -c -i 0.1 -L 4M -N in -N out -M both -- cat < {} \
         > /dev/null; echo done",
        s(&input)
    );
    let env = [
        ("XDG_RUNTIME_DIR", s(dir.dir.path())),
        ("TMPDIR", s(dir.dir.path())),
    ];
    let (status, terminal) = bash_on_terminal(&script, 100, 24, true, &env, |_| {});
    let (rows, bytes, _) = terminal.finish();
    assert!(status.success(), "{:?}", String::from_utf8_lossy(&bytes));
    let find = |needle: &str| -> Vec<usize> {
        rows.iter()
            .enumerate()
            .filter(|(_, r)| r.trim_start().starts_with(needle))
            .map(|(i, _)| i)
            .collect()
    };
    let (ins, outs, done) = (find("in:"), find("out:"), find("done"));
    assert_eq!((ins.len(), outs.len(), done.len()), (1, 1, 1), "{rows:#?}");
    assert_eq!(
        outs[0],
        ins[0] + 1,
        "the two sides on consecutive rows: {rows:#?}"
    );
    assert_eq!(done[0], outs[0] + 1, "{rows:#?}");
    assert!(rows[ins[0]].contains("2.00MiB"), "{rows:#?}");
    assert!(
        rows[outs[0]].contains("2.00MiB") && rows[outs[0]].contains("1:1"),
        "{rows:#?}"
    );
}
