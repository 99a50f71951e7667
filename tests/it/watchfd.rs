//! `--watchfd`: rpv watching helper processes that read files slowly.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use crate::util::{data, err, rpv, s, wait_until, Dir, Watched, PATIENCE};

const CHUNK: usize = 64 * 1024;

/// A shell that opens files on fds 3, 4, … and reads each of them in 64 KiB steps, then
/// holds them open until the test releases it (it has seen what it waited for), and exits.
/// Killed if the test ends first.
struct Reader {
    child: Child,
    release: std::path::PathBuf,
}

impl Reader {
    fn id(&self) -> u32 {
        self.child.id()
    }

    /// Lets it close its files and exit.
    fn release(&self) {
        std::fs::write(&self.release, b"").unwrap();
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A [`Reader`] of `files` (one `dd` per 64 KiB step, sharing the offset), `steps` times,
/// sleeping `pause` seconds between steps. Returns once the files are open. Its release
/// file goes in `dir`.
fn slow_reader(dir: &Dir, files: &[&Path], steps: usize, pause: &str) -> Reader {
    static READERS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = READERS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let release = dir.path(&format!("release-{n}"));
    let mut script = String::new();
    for (i, _) in files.iter().enumerate() {
        script.push_str(&format!("exec {}<\"${}\"; ", i + 3, i + 2));
    }
    script.push_str(&format!("i=0; while [ $i -lt {steps} ]; do "));
    // Each dd in a subshell: dash applies a simple command's redirections in the shell
    // itself around the fork, so for a moment the shell's own descriptor 0 was the file,
    // and `rpv -d` watching the shell showed a row `0:first.bin` (once in CI).
    for (i, _) in files.iter().enumerate() {
        script.push_str(&format!(
            "(dd bs={CHUNK} count=1 <&{} >/dev/null 2>&1); ",
            i + 3
        ));
    }
    script.push_str(&format!(
        "sleep {pause}; i=$((i+1)); done; while [ ! -e \"$1\" ]; do sleep 0.05; done"
    ));
    let child = Command::new("sh")
        .arg("-c")
        .arg(&script)
        .arg("sh")
        .arg(&release)
        .args(files)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn sh");
    let reader = Reader { child, release };
    if let Some(last) = files.last() {
        wait_for_fd_on(reader.id(), files.len() as i32 + 2, last);
    }
    reader
}

/// Waits until `/proc/PID/fd/FD` is `file`. (Not merely open: while the shell starts, the
/// dynamic loader holds its cache open as descriptor 3 for a moment, and a loaded machine
/// once made that moment long enough for a watch of `PID:3` to start on the cache.)
fn wait_for_fd_on(pid: u32, fd: i32, file: &Path) {
    let path = format!("/proc/{pid}/fd/{fd}");
    let want = std::fs::canonicalize(file).expect("the file");
    wait_until(
        &format!("{path} to be {}", want.display()),
        PATIENCE,
        || std::fs::read_link(&path).is_ok_and(|link| link == want),
    );
}

/// Waits until `/proc/PID/fd/FD` exists.
fn wait_for_fd(pid: u32, fd: i32) {
    let path = format!("/proc/{pid}/fd/{fd}");
    wait_until(&path, PATIENCE, || std::fs::read_link(&path).is_ok());
}

/// Runs `cmd` (rpv watching `readers`) until its stderr so far satisfies `shown` (`what`
/// names it), then releases the readers: rpv must end with them, with status 0. Returns
/// its stdout and stderr.
#[track_caller]
fn watch_until(
    mut cmd: Command,
    readers: &[&Reader],
    what: &str,
    shown: impl Fn(&str) -> bool,
) -> (Vec<u8>, String) {
    cmd.stdin(Stdio::null()).stdout(Stdio::piped());
    let mut watcher = Watched::spawn(cmd);
    let mut stdout = watcher.child.stdout.take().unwrap();
    let drain = std::thread::spawn(move || {
        let mut out = Vec::new();
        let _ = stdout.read_to_end(&mut out);
        out
    });
    watcher.wait_for(what, PATIENCE, shown);
    for reader in readers {
        reader.release();
    }
    let (status, text) = watcher.finish(PATIENCE, "rpv -d once the watched processes ended");
    assert_eq!(status.code(), Some(0), "{text}");
    (drain.join().unwrap(), text)
}

/// The numbers at the end of numeric lines.
fn numbers(text: &str) -> Vec<f64> {
    text.lines()
        .filter_map(|l| l.rsplit(' ').next()?.parse().ok())
        .collect()
}

fn file_of(dir: &Dir, name: &str, chunks: usize, seed: u64) -> std::path::PathBuf {
    dir.file(name, &data(chunks * CHUNK, seed))
}

#[test]
fn single_fd_numeric_rises_to_the_file_size_and_ends_with_the_process() {
    let dir = Dir::new();
    let file = file_of(&dir, "in.bin", 12, 1);
    let helper = slow_reader(&dir, &[&file], 12, "0.05");
    let pid = helper.id().to_string();
    let full = (12 * CHUNK) as f64;
    let (stdout, text) = watch_until(
        rpv(&["-d", &format!("{pid}:3"), "-f", "-n", "-b", "-i", "0.1"]),
        &[&helper],
        "three lines, the last at the file's size",
        |text| {
            let values = numbers(text);
            values.len() >= 3 && values.last() == Some(&full)
        },
    );
    assert!(stdout.is_empty());
    let values = numbers(&text);
    assert!(values.len() >= 3, "{text}");
    assert!(values.windows(2).all(|w| w[0] <= w[1]), "{text}");
    assert_eq!(*values.last().unwrap(), (12 * CHUNK) as f64, "{text}");
    // A single PID:FD gets no name prefix: the lines are bare numbers.
    assert!(text.lines().all(|l| l.parse::<u64>().is_ok()), "{text}");
}

#[test]
fn single_fd_percentages_and_size_override() {
    let dir = Dir::new();
    let file = file_of(&dir, "in.bin", 8, 2);
    let helper = slow_reader(&dir, &[&file], 8, "0.05");
    let pid = helper.id().to_string();
    // --size is honoured for a single PID:FD (pv ignores it): 512 KiB of 1 MiB = 50 %.
    let (_, text) = watch_until(
        rpv(&[
            "-d",
            &format!("{pid}:3"),
            "-f",
            "-n",
            "-i",
            "0.1",
            "-s",
            "1M",
        ]),
        &[&helper],
        "a line at 50",
        |text| numbers(text).last() == Some(&50.0),
    );
    assert_eq!(*numbers(&text).last().unwrap(), 50.0, "{text}");
}

#[test]
fn single_fd_final_line_stays_visible() {
    let dir = Dir::new();
    let file = file_of(&dir, "in.bin", 4, 3);
    let helper = slow_reader(&dir, &[&file], 4, "0.05");
    let pid = helper.id().to_string();
    let (_, text) = watch_until(
        rpv(&["-d", &format!("{pid}:3"), "-f", "-w", "60", "-i", "0.1"]),
        &[&helper],
        "the line at 100%",
        |text| {
            let drawn = text.split('\r').rfind(|l| !l.is_empty());
            drawn.is_some_and(|l| l.contains("100%"))
        },
    );
    assert!(text.ends_with("\r\n"), "{text:?}");
    let last = text.trim_end().rsplit('\r').next().unwrap();
    assert!(last.contains("100%"), "{text:?}");
    assert!(last.contains("256KiB"), "{text:?}");
    assert!(
        !text.contains('\x1b'),
        "one line needs no cursor movement: {text:?}"
    );
}

#[test]
fn whole_process_shows_each_file_on_its_own_line() {
    let dir = Dir::new();
    let a = file_of(&dir, "first.bin", 4, 4);
    let b = file_of(&dir, "second.bin", 6, 5);
    let helper = slow_reader(&dir, &[&a, &b], 6, "0.05");
    let pid = helper.id().to_string();
    let mut cmd = rpv(&["-d", &pid, "-f", "-w", "70", "-H", "10", "-i", "0.1"]);
    cmd.current_dir(dir.dir.path());
    let both_done = |text: &str| {
        let mut screen = vt100::Parser::new(10, 70, 0);
        screen.process(text.replace('\n', "\r\n").as_bytes());
        let rows: Vec<String> = screen.screen().rows(0, 70).collect();
        text.contains("\x1b[A") && rows[0].contains("100%") && rows[1].contains("100%")
    };
    let (_, text) = watch_until(cmd, &[&helper], "a redraw of both lines at 100%", both_done);
    assert!(text.contains("\r\n"), "{text:?}");
    assert!(
        text.contains("\r\x1b[A"),
        "back up after two lines: {text:?}"
    );
    assert!(
        text.ends_with("\n\n"),
        "one newline per line at the end: {text:?}"
    );
    let mut screen = vt100::Parser::new(10, 70, 0);
    screen.process(text.replace('\n', "\r\n").as_bytes());
    let rows: Vec<String> = screen.screen().rows(0, 70).collect();
    // Names are relative to rpv's directory, "%4d:%s", through %N.
    assert!(rows[0].starts_with("   3:first.bin:"), "{rows:?}");
    assert!(rows[0].contains("100%"), "{rows:?}");
    assert!(rows[1].starts_with("   4:second.bin:"), "{rows:?}");
    assert!(rows[1].contains("100%"), "{rows:?}");
}

#[test]
fn whole_process_numeric_lines_carry_names() {
    let dir = Dir::new();
    let a = file_of(&dir, "only.bin", 4, 6);
    let helper = slow_reader(&dir, &[&a], 4, "0.05");
    let pid = helper.id().to_string();
    let (_, text) = watch_until(
        rpv(&["-d", &pid, "-f", "-n", "-i", "0.1"]),
        &[&helper],
        "a line at 100",
        |text| numbers(text).last() == Some(&100.0),
    );
    let last = text.lines().last().unwrap_or("");
    assert!(
        last.starts_with("   3:") && last.contains("only.bin: "),
        "{text}"
    );
    assert_eq!(*numbers(&text).last().unwrap(), 100.0, "{text}");
}

#[test]
fn several_processes_are_named_with_their_pids() {
    let dir = Dir::new();
    let a = file_of(&dir, "a.bin", 4, 7);
    let b = file_of(&dir, "b.bin", 4, 8);
    let one = slow_reader(&dir, &[&a], 4, "0.05");
    let two = slow_reader(&dir, &[&b], 4, "0.05");
    let (p1, p2) = (one.id(), two.id());
    let at_end = |text: &str, pid: u32| {
        let prefix = format!("{pid:8}:   3:");
        let end = format!(" {}", 4 * CHUNK);
        text.lines()
            .any(|l| l.starts_with(&prefix) && l.ends_with(&end))
    };
    let (_, text) = watch_until(
        rpv(&[
            "-d",
            &format!("{p1}:3"),
            &format!("{p2}:3"),
            "-f",
            "-n",
            "-b",
            "-i",
            "0.1",
        ]),
        &[&one, &two],
        "a line of each process at its file's size",
        |text| at_end(text, p1) && at_end(text, p2),
    );
    for (pid, name) in [(p1, "a.bin"), (p2, "b.bin")] {
        let prefix = format!("{pid:8}:   3:");
        let last = text
            .lines()
            .rfind(|l| l.starts_with(&prefix))
            .unwrap_or_else(|| panic!("no line for {pid}: {text}"));
        assert!(last.contains(name), "{last}");
        assert!(last.ends_with(&format!(" {}", 4 * CHUNK)), "{text}");
    }
}

#[test]
fn list_file_items() {
    let dir = Dir::new();
    let a = file_of(&dir, "a.bin", 3, 9);
    let b = file_of(&dir, "b.bin", 3, 10);
    let one = slow_reader(&dir, &[&a], 3, "0.05");
    let two = slow_reader(&dir, &[&b], 3, "0.05");
    let list = dir.file(
        "list",
        format!("# watched\n  {}:3\r\n\n\t{}\n", one.id(), two.id()).as_bytes(),
    );
    let named = |text: &str| {
        [one.id(), two.id()]
            .iter()
            .all(|pid| text.contains(&format!("{pid:8}:   3:")))
    };
    let (_, text) = watch_until(
        rpv(&["-d", &format!("@{}", s(&list)), "-f", "-n", "-i", "0.1"]),
        &[&one, &two],
        "a line of each process",
        named,
    );
    assert!(text.contains(&format!("{:8}:   3:", one.id())), "{text}");
    assert!(text.contains(&format!("{:8}:   3:", two.id())), "{text}");
}

#[test]
fn list_file_errors() {
    let dir = Dir::new();
    let at = dir.file("at", b"# x\n123\n@other\n");
    let out = rpv(&["-d", &format!("@{}", s(&at))]).output().unwrap();
    assert_eq!(out.status.code(), Some(64));
    assert_eq!(
        err(&out),
        format!(
            "rpv: -d @: {}:3: list files may not contain @ lines\n",
            s(&at)
        )
    );
    let bad = dir.file("bad", b"123\nnonsense\n");
    let out = rpv(&["-d", &format!("@{}", s(&bad))]).output().unwrap();
    assert_eq!(out.status.code(), Some(64));
    assert_eq!(
        err(&out),
        format!(
            "rpv: -d: {}:2: process ID or pid:fd pair expected\n",
            s(&bad)
        )
    );
    let missing = dir.path("missing");
    let out = rpv(&["-d", &format!("@{}", s(&missing))]).output().unwrap();
    assert_eq!(out.status.code(), Some(64));
    assert_eq!(
        err(&out),
        format!("rpv: -d @: {}: No such file or directory\n", s(&missing))
    );
}

#[test]
fn missing_process_and_descriptor() {
    if Path::new("/proc/999999").exists() {
        return;
    }
    let out = rpv(&["-d", "999999"]).output().unwrap();
    assert_eq!(err(&out), "rpv: pid 999999: No such process\n");
    assert_eq!(out.status.code(), Some(2));

    // Killed below: it only has to outlive rpv's look at it, however long that takes.
    let mut sleeper = Command::new("sleep")
        .arg("600")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = sleeper.id();
    let out = rpv(&["-d", &format!("{pid}:77")]).output().unwrap();
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    assert_eq!(
        err(&out),
        format!("rpv: pid {pid}: fd 77: No such file or directory\n")
    );
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_character_device_is_refused() {
    // Killed below: it only has to outlive rpv's look at it, however long that takes.
    let mut sleeper = Command::new("sleep")
        .arg("600")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = sleeper.id();
    wait_for_fd(pid, 0);
    let out = rpv(&["-d", &format!("{pid}:0")]).output().unwrap();
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    assert_eq!(
        err(&out),
        format!(
            "rpv: pid {pid}: fd 0: /dev/null: not a regular file, block device, pipe or socket\n"
        )
    );
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn no_process_matches_a_name() {
    let out = rpv(&["-d", "=rpv-no-such-process-name"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        err(&out).ends_with("rpv: -d =rpv-no-such-process-name: no matching process found\n"),
        "{}",
        err(&out)
    );
}

#[test]
fn a_pipe_shows_the_process_read_counter() {
    let mut reader = Command::new("dd")
        .args(["bs=4096", "of=/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = reader.id();
    wait_for_fd(pid, 0);
    let mut stdin = reader.stdin.take().unwrap();
    let mut cmd = rpv(&[
        "-d",
        &format!("{pid}:0"),
        "-f",
        "-n",
        "-i",
        "0.1",
        "-F",
        "%N %b",
    ]);
    cmd.stdin(Stdio::null()).stdout(Stdio::null());
    let watcher = Watched::spawn(cmd);
    // A sample before any data, then one after each chunk has been read, then the end.
    let read_at_least =
        |n: usize| move |text: &str| numbers(text).last().is_some_and(|&v| v >= n as f64);
    watcher.wait_for("the first sample", PATIENCE, read_at_least(0));
    for i in 1..=8 {
        stdin.write_all(&[7u8; 32 * 1024]).unwrap();
        watcher.wait_for(
            "a sample of the chunk read",
            PATIENCE,
            read_at_least(i * 32 * 1024),
        );
    }
    drop(stdin);
    let (status, text) = watcher.finish(PATIENCE, "rpv -d on a pipe");
    let _ = reader.wait();
    assert_eq!(status.code(), Some(0), "{text}");
    let last = text.lines().last().unwrap_or("");
    assert!(last.starts_with("   0:pipe:["), "{text}");
    assert!(last.contains("] (process reads): "), "{text}");
    let values = numbers(&text);
    let (first, last) = (values[0], *values.last().unwrap());
    assert!(last - first >= (7 * 32 * 1024) as f64, "{text}");
    assert!(last >= (8 * 32 * 1024) as f64, "{text}");
}

#[test]
fn interrupt_exits_with_32_and_keeps_the_line() {
    let dir = Dir::new();
    let file = file_of(&dir, "in.bin", 1, 11);
    // Never released: it holds its file until the test ends.
    let helper = slow_reader(&dir, &[&file], 1, "0");
    let pid = helper.id();
    let mut cmd = rpv(&["-d", &format!("{pid}:3"), "-f", "-i", "0.1"]);
    cmd.stdin(Stdio::null()).stdout(Stdio::null());
    let watcher = Watched::spawn(cmd);
    watcher.wait_for("a line", PATIENCE, |text| text.contains('\r'));
    Command::new("kill")
        .args(["-INT", &watcher.child.id().to_string()])
        .status()
        .unwrap();
    let (status, text) = watcher.finish(PATIENCE, "rpv -d after SIGINT");
    drop(helper);
    assert_eq!(status.code(), Some(32));
    assert!(text.ends_with("\r\n"), "{text:?}");
}

#[test]
fn mode_conflicts() {
    let out = rpv(&["-d", "1", "-L", "10"]).output().unwrap();
    assert_eq!(out.status.code(), Some(64));
    assert_eq!(
        err(&out),
        "rpv: cannot use line mode or transfer modifier options when watching file descriptors\n"
    );
}

/// `-d PID:FD` on a pipe, alone and in the default format: the line still names it with
/// its `(process reads)` marker (the figure is the process's count, not a position).
#[test]
fn a_pipe_watched_alone_shows_its_marker() {
    let mut reader = Command::new("dd")
        .args(["bs=4096", "of=/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = reader.id();
    wait_for_fd(pid, 0);
    let mut stdin = reader.stdin.take().unwrap();
    let mut cmd = rpv(&["-d", &format!("{pid}:0"), "-f", "-i", "0.1"]);
    cmd.stdin(Stdio::null()).stdout(Stdio::null());
    let watcher = Watched::spawn(cmd);
    stdin.write_all(&[7u8; 64 * 1024]).unwrap();
    watcher.wait_for("the pipe's line", PATIENCE, |text| {
        text.contains("] (process reads): ")
    });
    // dd ends once its input does, and rpv with it.
    drop(stdin);
    let (status, text) = watcher.finish(PATIENCE, "rpv -d once the pipe's reader ended");
    let _ = reader.wait();
    assert_eq!(status.code(), Some(0), "{text}");
    let last = text
        .split(['\r', '\n'])
        .rfind(|l| !l.trim().is_empty())
        .unwrap_or("");
    assert!(last.starts_with("   0:pipe:["), "{text:?}");
    assert!(last.contains("] (process reads): "), "{text:?}");
}
