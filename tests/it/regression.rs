//! One test per defect found after the first release, named after what was wrong. Each
//! fails on the code before its fix.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileTypeExt;
use std::process::{Child, Stdio};

use crate::terminal::bash_on_terminal;
use crate::util::{
    catches, data, pending, process_state, rpv, s, spawn_draining, stderr_of, wait_until,
    wait_within, Dir,
};

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
    wait_until("the pid file", crate::util::PATIENCE, || pidfile.exists());
    for signal in [libc::SIGUSR1, libc::SIGUSR2, libc::SIGALRM, libc::SIGUSR1] {
        kill(&child, signal);
        // Delivered before the next one is sent (two of a kind pending would be one).
        wait_until("the signal to be delivered", crate::util::PATIENCE, || {
            !pending(child.id(), signal)
        });
    }
    let status = wait_within(
        &mut child,
        crate::util::PATIENCE,
        "rpv after USR1/USR2/ALRM",
    );
    let copied = reader.join().unwrap();
    let stderr = stderr_of(&mut child);
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert_eq!(copied, bytes.len() as u64, "the whole input went through");
    assert!(!pidfile.exists(), "the pid file is removed");
    // Each is said once, alone or in one line with the other (both arrived before the
    // display loop looked: "SIGUSR1 and SIGUSR2 ignored").
    let notes: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains(" ignored: this is rpv"))
        .collect();
    for signal in ["SIGUSR1", "SIGUSR2"] {
        let saying = notes.iter().filter(|l| l.contains(signal)).count();
        assert_eq!(saying, 1, "{signal} said once: {stderr:?}");
    }
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
        // The pid file is written first; then rpv blocks opening the FIFO.
        wait_until(
            "the pid file, then a blocked open",
            crate::util::PATIENCE,
            || pidfile.exists() && process_state(child.id()) == 'S' && catches(child.id(), signal),
        );
        kill(&child, signal);
        let status = wait_within(&mut child, crate::util::PATIENCE, "blocked open");
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
        format!("rpv: -P {}: Is a directory\n", s(&sub))
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
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!("rpv: -P {}: not a regular file\n", s(&fifo))
    );
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
        wait_until("a progress line", crate::util::PATIENCE, || {
            t.contents().contains("ETA")
        });
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

/// `-P FILE` with FILE also an input, the output or a `--tee` output: the pid file replaced
/// it (and was removed at the end), so the data was lost with status 0 (`rpv -P f f` deleted
/// f and wrote the PID into the output). Refused like an input that is the output: status
/// 4, before anything is opened, written or read.
#[test]
fn a_pid_file_that_is_also_an_input_or_an_output_is_refused() {
    let dir = Dir::new();
    let bytes = data(70_000, 31);
    let f = dir.path("f");
    let o = dir.path("o");
    let other = dir.file("other", b"other");
    let sh = |script: &str| {
        std::process::Command::new("sh")
            .args(["-c", script, env!("CARGO_BIN_EXE_rpv")])
            .current_dir(dir.dir.path())
            .env("LC_ALL", "C")
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    for (script, message) in [
        ("\"$0\" -q -P f f > o", "input file is pid file: f"),
        (
            "\"$0\" -q -P f other - < f > o",
            "input file is pid file: (stdin)",
        ),
        ("\"$0\" -q -P ./f -o o f", "input file is pid file: f"),
        (
            "ln -sf f lnk; \"$0\" -q -P f lnk > o",
            "input file is pid file: lnk",
        ),
        (
            "\"$0\" -q -P f --tee f other > o",
            "--tee file is pid file: f",
        ),
        ("\"$0\" -q -P f -o f other", "output file is pid file: f"),
        (
            "\"$0\" -q -P f other >> f",
            "output file is pid file: (stdout)",
        ),
        ("\"$0\" -q -P f -U f other > o", "-U file is pid file: f"),
        (
            "\"$0\" -q -P f -M in -o f -- cat < other",
            "output file is pid file: f",
        ),
    ] {
        std::fs::write(&f, &bytes).unwrap();
        let _ = std::fs::remove_file(&o);
        let out = sh(script);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.starts_with(&format!("rpv: {message}")) && stderr.lines().count() == 1,
            "{script}: {stderr}"
        );
        assert_eq!(out.status.code(), Some(4), "{script}: {stderr}");
        assert!(std::fs::read(&f).unwrap() == bytes, "{script}: f untouched");
        assert!(
            std::fs::metadata(&o).map_or(true, |m| m.len() == 0),
            "{script}: nothing written"
        );
    }
    // A pid file that does not exist yet, named as the output: refused as well (the output
    // would be created, then deleted at the end).
    let _ = std::fs::remove_file(&f);
    let out = sh("\"$0\" -q -P f -o f other");
    assert_eq!(out.status.code(), Some(4));
    assert!(!f.exists(), "no pid file left behind");
    // Anything else still works.
    let out = sh("\"$0\" -q -P f other > o");
    assert!(out.status.success());
    assert_eq!(std::fs::read(&o).unwrap(), b"other");
    assert!(!f.exists());
    assert_eq!(std::fs::read(&other).unwrap(), b"other");
}

/// `-P` on a device: named as a `-P` problem (it said `rpv: /dev/null: File exists`), and
/// the device stays.
#[test]
fn a_pid_file_that_is_a_device_is_refused_naming_p() {
    let out = rpv(&["-q", "-P", "/dev/null", "/dev/null"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "rpv: -P /dev/null: not a regular file\n"
    );
    let meta = std::fs::metadata("/dev/null").unwrap();
    assert!(meta.file_type().is_char_device());
}

/// `--tee -` with standard output closed wrote the copy into /dev/null (Rust's runtime
/// reopens a closed descriptor 1 there) with status 0; a closed standard output is an error
/// whichever option names it.
#[test]
fn tee_to_a_closed_standard_output_is_an_error() {
    let dir = Dir::new();
    let input = dir.file("in", b"hello\n");
    let o = dir.path("o");
    let out = std::process::Command::new("sh")
        .args(["-c", "\"$0\" -q -o \"$1\" --tee - \"$2\" >&-"])
        .args([env!("CARGO_BIN_EXE_rpv"), s(&o), s(&input)])
        .env("LC_ALL", "C")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "rpv: failed to stat output file: Bad file descriptor\n"
    );
    assert!(!o.exists(), "refused before anything was opened");
}

/// `-U` with a store that is not a regular file: `/dev/null` lost the data with status 0,
/// `/dev/zero` sent zeros for ever, a FIFO waited for a reader that was rpv itself.
#[test]
fn a_store_that_is_not_a_regular_file_is_refused() {
    let dir = Dir::new();
    let fifo = dir.path("fifo");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    for store in ["/dev/null", "/dev/zero", s(&fifo)] {
        let mut child = rpv(&["-q", "-U", store])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let _ = std::io::Write::write_all(&mut stdin, b"abc\n");
        drop(stdin);
        let status = wait_within(&mut child, crate::util::PATIENCE, store);
        let mut out = Vec::new();
        std::io::Read::read_to_end(&mut child.stdout.take().unwrap(), &mut out).unwrap();
        assert_eq!(
            stderr_of(&mut child),
            format!("rpv: -U {store}: not a regular file\n")
        );
        assert_eq!(status.code(), Some(1), "{store}");
        assert!(out.is_empty(), "{store}: nothing forwarded");
    }
}

/// `-U -` with a `TMPDIR` that does not exist said `rpv: /nonexistent: No such file or
/// directory`, naming neither `-U` nor `TMPDIR`.
#[test]
fn a_bad_tmpdir_for_the_store_is_named_as_such() {
    let out = rpv(&["-q", "-U", "-", "/dev/null"])
        .env("TMPDIR", "/nonexistent/dir")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "rpv: -U -: cannot make a temporary file in /nonexistent/dir (TMPDIR): No such file \
         or directory\n"
    );
}
