//! Cursor mode (`-c`) and the extra display (`-x`) on a pseudo-terminal. The terminal is
//! emulated with `vt100`, and it answers cursor-position queries (`ESC[6n`) like a real one.

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::terminal::{bash_on_terminal, Terminal};
use crate::tmux::Tmux;
use crate::util::{data, poll, rpv, s, wait_until, Dir};

/// Each name is on exactly one row, alone, with its final amount; the rows are consecutive
/// in the order given, the text after them is on the next row. Returns the first row index.
#[track_caller]
fn assert_rows(rows: &[String], names: &[(&str, &str)], after: &str, width: usize) {
    let find = |needle: &str| -> Vec<usize> {
        rows.iter()
            .enumerate()
            .filter(|(_, r)| r.contains(needle))
            .map(|(i, _)| i)
            .collect()
    };
    let mut at = Vec::new();
    for (name, amount) in names {
        let found = find(&format!("{name}:"));
        assert_eq!(found.len(), 1, "{name} on exactly one row: {rows:#?}");
        let row = &rows[found[0]];
        assert!(
            row.trim_start().starts_with(&format!("{name}: ")),
            "{name}'s row starts with its name: {row:?}\n{rows:#?}"
        );
        assert_eq!(row.matches(':').count(), 3, "one name and a timer: {row:?}");
        assert!(
            row.contains(&format!(" {amount} 0:00:")),
            "{name} ends with {amount}: {row:?}\n{rows:#?}"
        );
        assert!(
            row.trim_end().ends_with(']') || row.contains("100%"),
            "{row:?}"
        );
        assert!(row.chars().count() <= width, "{row:?}");
        at.push(found[0]);
    }
    let first = *at.iter().min().unwrap();
    let mut sorted = at.clone();
    sorted.sort_unstable();
    assert_eq!(
        sorted,
        (first..first + at.len()).collect::<Vec<_>>(),
        "consecutive rows: {rows:#?}"
    );
    let after_row = find(after);
    assert_eq!(
        after_row,
        vec![first + at.len()],
        "{after:?} right below the rows: {rows:#?}"
    );
}

fn tmpdir_env(dir: &Dir) -> [(&'static str, String); 2] {
    // A private registry directory per test, so parallel tests do not share registries.
    [
        ("XDG_RUNTIME_DIR", s(dir.dir.path()).to_string()),
        ("TMPDIR", s(dir.dir.path()).to_string()),
    ]
}

fn run(
    dir: &Dir,
    script: &str,
    cols: u16,
    rows: u16,
    answer: bool,
    during: impl FnOnce(&Terminal),
) -> (Vec<String>, Vec<u8>, usize) {
    // Cursor mode is a race between instances that start together, ask the terminal where
    // the cursor is (and give up on an answer after a second), and redraw on a resize: it
    // needs the CPU on time, so it never runs beside a test that loads the cores. (In the
    // fresh-clone CI, three runs in four today lost or doubled a row, or got an answer
    // after its instance gave up. The cause is not known: beside the CPU thief test alone,
    // 5 runs in 5 passed here.)
    let _cores = crate::util::cores_free();
    let env = tmpdir_env(dir);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (status, terminal) = bash_on_terminal(script, cols, rows, answer, &env, during);
    let (screen, bytes, queries) = terminal.finish();
    assert!(
        status.success(),
        "{status:?}: {:?}",
        String::from_utf8_lossy(&bytes)
    );
    (screen, bytes, queries)
}

/// A stage for a test's pipeline that passes its first `held` bytes on, then holds the
/// rest until the shell condition `until` holds (a minute at most), then passes it all
/// on. Instances share rows only while they run together: one that ended before another
/// joined rightly leaves that one to ask the terminal again, so a test of shared rows
/// holds its data until every instance has joined, rather than hoping they start in time.
fn hold(held: usize, until: &str) -> String {
    format!("{{ head -c {held}; {}; cat; }}", wait_in_shell(until))
}

/// Shell commands that wait until the shell condition `until` holds (a minute at most).
fn wait_in_shell(until: &str) -> String {
    format!("i=0; until {until} || [ $i -ge 1200 ]; do sleep 0.05; i=$((i+1)); done")
}

/// The shell condition: `n` instances have joined the registry (one line each, after its
/// first line).
fn joined(n: usize) -> String {
    format!(
        "[ \"$(cat \"$XDG_RUNTIME_DIR\"/rpv-cursor-* 2>/dev/null | tail -n +2 | wc -l)\" -ge {n} ]"
    )
}

fn registry_left(dir: &Dir) -> Vec<String> {
    std::fs::read_dir(dir.dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("rpv-cursor-"))
        .collect()
}

#[test]
fn three_instances_in_a_pipeline_keep_their_rows() {
    let dir = Dir::new();
    let input = dir.file("in", &data(2 << 20, 21));
    let script = format!(
        "printf 'prompt$ \\n'; \"$RPV\" -c -N one -i 0.1 -L 4M {} | {} | \"$RPV\" -c -N two -i 0.1 \
         | \"$RPV\" -c -N three -i 0.1 > /dev/null; echo done",
        s(&input),
        hold(1 << 20, &joined(3))
    );
    let (rows, bytes, queries) = run(&dir, &script, 80, 24, true, |_| {});
    assert_eq!(rows[0].trim_end(), "prompt$");
    assert_rows(
        &rows,
        &[("one", "2.00MiB"), ("two", "2.00MiB"), ("three", "2.00MiB")],
        "done",
        80,
    );
    assert!(rows.iter().position(|r| r.contains("one:")) > Some(0));
    assert_eq!(
        queries, 1,
        "only the first instance asks where the cursor is"
    );
    let text = String::from_utf8_lossy(&bytes);
    assert!(
        !text.replace("\r\n", "\n").contains('\r'),
        "no carriage returns in cursor mode (the pty turns \\n into \\r\\n)"
    );
    assert!(registry_left(&dir).is_empty(), "the registry is removed");
}

#[test]
fn an_instance_that_finishes_early_keeps_its_final_line() {
    let dir = Dir::new();
    let small = dir.file("small", &data(100_000, 22));
    let big = dir.file("big", &data(1 << 20, 23));
    // `one` ends long before the others; its row must stay and nobody may scroll it away.
    let script = format!(
        "{{ \"$RPV\" -c -N one -i 0.1 {}; sleep 1; cat {}; }} | \"$RPV\" -c -N two -i 0.1 -L 2M \
         | \"$RPV\" -c -N three -i 0.1 > /dev/null; echo done",
        s(&small),
        s(&big)
    );
    let (rows, _, _) = run(&dir, &script, 80, 24, true, |_| {});
    assert_rows(
        &rows,
        &[("one", "97.7KiB"), ("two", "1.10MiB"), ("three", "1.10MiB")],
        "done",
        80,
    );
    assert!(registry_left(&dir).is_empty());
}

#[test]
fn rows_at_the_bottom_scroll_the_screen_up() {
    let dir = Dir::new();
    let input = dir.file("in", &data(1 << 20, 24));
    // 12 lines of earlier output on a 10-row screen: the cursor starts on the last row.
    let script = format!(
        "for i in $(seq 1 12); do echo line$i; done; \"$RPV\" -c -N one -i 0.1 -L 4M {} \
         | {} | \"$RPV\" -c -N two -i 0.1 | \"$RPV\" -c -N three -i 0.1 > /dev/null; echo done",
        s(&input),
        hold(1 << 19, &joined(3))
    );
    let (rows, _, _) = run(&dir, &script, 80, 10, true, |_| {});
    assert_rows(
        &rows,
        &[("one", "1.00MiB"), ("two", "1.00MiB"), ("three", "1.00MiB")],
        "done",
        80,
    );
    // Rows 8–10 were needed after line12 (row 9): two lines of scrolling, then `done`'s one.
    assert_eq!(
        rows[4], "line12",
        "earlier output scrolled up, kept: {rows:#?}"
    );
    assert_eq!(rows[9], "", "the cursor ends on the last row");
}

#[test]
fn resizing_keeps_every_row_clean() {
    let dir = Dir::new();
    let input = dir.file("in", &data(3 << 20, 25));
    let go = dir.path("go");
    // (The data is held half way until the terminal has been resized.)
    let script = format!(
        "\"$RPV\" -c -N one -i 0.1 -L 2M {} | {} | \"$RPV\" -c -N two -i 0.1 \
         | \"$RPV\" -c -N three -i 0.1 > /dev/null; echo done",
        s(&input),
        hold(3 << 19, &format!("[ -e {} ]", s(&go)))
    );
    let (rows, _, queries) = run(&dir, &script, 90, 20, true, |t| {
        // Resize once every instance has its row (a fixed sleep raced with slow starts).
        wait_until("the three rows", crate::util::PATIENCE, || {
            ["one:", "two:", "three:"]
                .iter()
                .all(|n| t.contents().contains(n))
        });
        t.resize(60, 12);
        std::fs::write(&go, b"").unwrap();
    });
    assert_rows(
        &rows,
        &[("one", "3.00MiB"), ("two", "3.00MiB"), ("three", "3.00MiB")],
        "done",
        60,
    );
    assert!(
        queries >= 2,
        "the rows are re-synchronised after the resize"
    );
    let one = rows.iter().find(|r| r.contains("one:")).unwrap();
    // All of the new width but its last column (a row that fills it would wrap at the next
    // character the terminal echoes).
    assert_eq!(one.chars().count(), 59, "drawn at the new width: {one:?}");
}

#[test]
fn an_instance_started_after_a_resize_finds_the_rows_again() {
    // `one` draws every 5 s. The screen shrinks under it (the text scrolls up, as xterm
    // does), then `two` starts: it got no SIGWINCH, and `one` has not redrawn yet, so `two`
    // must notice the new size itself and ask where the rows went.
    let dir = Dir::new();
    let one = dir.file("one", &data(600_000, 29));
    let two = dir.file("two", &data(100_000, 30));
    let go = dir.path("go");
    let script = format!(
        "for i in $(seq 1 20); do echo line$i; done; \
         \"$RPV\" -c -N one -i 5 -L 100k {one} > /dev/null & \
         while [ ! -e {go} ]; do sleep 0.05; done; \
         \"$RPV\" -c -N two -i 0.1 -L 200k {two} > /dev/null; wait; echo done",
        one = s(&one),
        two = s(&two),
        go = s(&go),
    );
    let (rows, _, queries) = run(&dir, &script, 80, 24, true, |t| {
        wait_until("`one` to draw", crate::util::PATIENCE, || {
            t.contents().contains("one:")
        });
        // `one` is on row 21; the text scrolls up 3 rows to keep it on the new row 18.
        t.resize(80, 18);
        std::fs::write(&go, b"").unwrap();
    });
    assert_rows(&rows, &[("one", "585KiB"), ("two", "97.7KiB")], "done", 80);
    assert!(queries >= 2, "the rows are found again after the resize");
}

#[test]
fn a_terminal_that_never_answers_does_not_hang() {
    let dir = Dir::new();
    // 8 MiB at 4 MiB/s: `one` is still running after its 1 s query times out, so `two`
    // joins its registry (if `one` had already left, `two` would rightly ask again).
    let input = dir.file("in", &data(8 << 20, 26));
    let script = format!(
        "\"$RPV\" -c -N one -i 0.1 -L 4M {} | {} | \"$RPV\" -c -N two -i 0.1 > /dev/null; \
         echo done",
        s(&input),
        hold(1 << 20, &joined(2))
    );
    let started = Instant::now();
    let (rows, _, queries) = run(&dir, &script, 80, 12, false, |_| {});
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(queries, 1);
    // Without an answer the rows start at the bottom of the screen.
    assert_rows(&rows, &[("one", "8.00MiB"), ("two", "8.00MiB")], "done", 80);
}

#[test]
fn cursor_mode_without_a_terminal_falls_back_to_normal_lines() {
    let dir = Dir::new();
    let input = dir.file("in", &data(100_000, 27));
    let out = rpv(&["-c", "-f", "-N", "x", s(&input)])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("x: 97.7KiB"), "{err:?}");
    assert!(err.ends_with("\r\n") && !err.contains('\x1b'), "{err:?}");
}

#[test]
fn cursor_mode_on_a_dumb_terminal_uses_carriage_returns() {
    let dir = Dir::new();
    let input = dir.file("in", &data(100_000, 28));
    let script = format!("\"$RPV\" -c -N x -i 0.1 {} > /dev/null", s(&input));
    let env = tmpdir_env(&dir);
    let mut env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    env.push(("TERM", "dumb"));
    let (status, terminal) = bash_on_terminal(&script, 80, 10, true, &env, |_| {});
    let (_, bytes, queries) = terminal.finish();
    assert!(status.success());
    let text = String::from_utf8_lossy(&bytes);
    assert_eq!(queries, 0);
    assert!(
        !text.contains('\x1b') && text.contains("x: 97.7KiB"),
        "{text:?}"
    );
}

#[test]
fn window_title_follows_each_update() {
    let dir = Dir::new();
    // 0.57 s at 1 MiB/s: five updates at -i 0.1, so three show even when a busy machine
    // delays one or two.
    let input = dir.file("in", &data(600_000, 29));
    let script = format!(
        "\"$RPV\" -x window:'%b|%N' -N nm -i 0.1 -L 1M {} > /dev/null",
        s(&input)
    );
    let (_, bytes, _) = run(&dir, &script, 80, 10, true, |_| {});
    let text = String::from_utf8_lossy(&bytes);
    assert!(text.contains("\r\x1b]2;"), "{text:?}");
    assert!(text.contains("\x1b]2; 585KiB|       nm:\x1b\\"), "{text:?}");
    assert!(
        text.matches("\x1b]2;").count() >= 3,
        "one per update: {text:?}"
    );
}

#[test]
fn window_title_without_format_uses_the_f_format() {
    let dir = Dir::new();
    let input = dir.file("in", &data(300_000, 30));
    let script = format!(
        "\"$RPV\" -x window -F 'got %b' -i 0.1 {} > /dev/null; TERM=dumb \"$RPV\" -x window -i 0.1 {} > /dev/null",
        s(&input),
        s(&input)
    );
    let (_, bytes, _) = run(&dir, &script, 80, 10, true, |_| {});
    let text = String::from_utf8_lossy(&bytes);
    assert!(text.contains("\x1b]2;got  292KiB\x1b\\"), "{text:?}");
    assert_eq!(
        text.matches("\x1b]2;").count(),
        text.matches("\x1b]2;got").count(),
        "no title on a dumb terminal: {text:?}"
    );
}

#[test]
fn process_title_shows_progress() {
    // rpv reads from a pipe the test holds open until it has seen the title: a run that
    // ended first cannot be looked at.
    let mut child = rpv(&["-q", "-x", "proc:%b", "-i", "0.1"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    std::io::Write::write_all(&mut input, &data(100_000, 31)).unwrap();
    let path = format!("/proc/{}/cmdline", child.id());
    let read = || {
        std::fs::read(&path)
            .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
            .unwrap_or_default()
    };
    let seen = poll(crate::util::PATIENCE, || {
        Some(read()).filter(|seen| seen.starts_with("rpv -- 97.7KiB"))
    })
    .unwrap_or_else(read);
    let comm = std::fs::read_to_string(format!("/proc/{}/comm", child.id())).unwrap_or_default();
    drop(input);
    assert!(child.wait().unwrap().success());
    assert_eq!(seen.trim_end(), "rpv -- 97.7KiB", "{seen:?}");
    assert_eq!(comm.trim(), "rpv", "the command name stays (pgrep/killall)");
}

#[test]
fn entries_of_killed_instances_are_ignored() {
    let dir = Dir::new();
    let big = dir.file("big", &data(4 << 20, 32));
    let input = dir.file("in", &data(1 << 20, 33));
    let go = dir.path("go");
    // A killed instance cannot leave the registry; the next run must start afresh. It is
    // killed once its row is on the screen. (bash's "Killed" notice goes to /dev/null so it
    // cannot land between the rows.)
    let script = format!(
        "exec 3>&2; ( \"$RPV\" -c -N dead -i 0.1 -L 1M {} 2>&3 > /dev/null & pid=$!; \
         {}; kill -9 $pid; wait $pid ) 2>/dev/null; echo; echo mid; \
         \"$RPV\" -c -N one -i 0.1 -L 4M {} | {} | \"$RPV\" -c -N two -i 0.1 > /dev/null; echo done",
        s(&big),
        wait_in_shell(&format!("[ -e {} ]", s(&go))),
        s(&input),
        hold(1 << 19, &joined(2))
    );
    let (rows, _, queries) = run(&dir, &script, 80, 24, true, |t| {
        wait_until("the row of `dead`", crate::util::PATIENCE, || {
            t.contents().contains("dead:")
        });
        std::fs::write(&go, b"").unwrap();
    });
    assert_eq!(
        queries, 2,
        "the second run asked for the cursor again: {rows:#?}"
    );
    let mid =
        (rows.iter().position(|r| r == "mid")).unwrap_or_else(|| panic!("no row `mid`: {rows:#?}"));
    assert_rows(&rows, &[("one", "1.00MiB"), ("two", "1.00MiB")], "done", 80);
    assert_eq!(
        rows.iter()
            .position(|r| r.contains("one:") || r.contains("two:")),
        Some(mid + 1)
    );
    assert!(
        registry_left(&dir).is_empty(),
        "removed by the last live instance"
    );
}

#[test]
fn interrupted_instances_still_leave_the_cursor_below_their_rows() {
    let dir = Dir::new();
    let input = dir.file("in", &data(8 << 20, 34));
    let fifo = dir.path("fifo");
    // Interrupted once both have joined (drawn their first rows), not after a fixed time
    // a loaded machine can spend starting them.
    let script = format!(
        "mkfifo {f}; \"$RPV\" -c -N one -i 0.1 -L 1M {} > {f} & p1=$!; \
         \"$RPV\" -c -N two -i 0.1 < {f} > /dev/null & p2=$!; \
         {}; sleep 0.3; kill -INT $p1 $p2; wait; echo done",
        s(&input),
        wait_in_shell(&joined(2)),
        f = s(&fifo)
    );
    let (rows, _, _) = run(&dir, &script, 80, 24, true, |_| {});
    let at = |what: &str, row: &dyn Fn(&String) -> bool| {
        (rows.iter().position(row)).unwrap_or_else(|| panic!("no row {what}: {rows:#?}"))
    };
    let one = at("one", &|r| r.contains("one:"));
    let two = at("two", &|r| r.contains("two:"));
    let done = at("done", &|r| r == "done");
    assert_eq!(done, one.max(two) + 1, "{rows:#?}");
    assert!(registry_left(&dir).is_empty());
}

#[test]
fn a_planted_symlink_is_not_followed() {
    let dir = Dir::new();
    let input = dir.file("in", &data(100_000, 35));
    let target = dir.file("target", b"keep");
    // Someone put a symlink where the registry goes: rpv must not touch its target, and
    // draws normal lines instead.
    let script = format!(
        "reg=\"$TMPDIR/rpv-cursor-$(tty | sed 's|^/dev/||; s|[^A-Za-z0-9]|_|g')-$(id -u)\"; \
         ln -s {} \"$reg\"; \"$RPV\" -c -N x -i 0.1 {} > /dev/null; echo done",
        s(&target),
        s(&input)
    );
    let (rows, bytes, queries) = run(&dir, &script, 80, 10, true, |_| {});
    assert_eq!(std::fs::read(&target).unwrap(), b"keep");
    assert_eq!(queries, 0);
    let text = String::from_utf8_lossy(&bytes);
    assert!(
        text.contains(" 97.7KiB") && text.contains("\r\r\n"),
        "{text:?}"
    );
    assert!(rows.iter().any(|r| r == "done"), "{rows:#?}");
}

/// A 100×30 tmux terminal whose rpv instances keep their registry in `dir`; `None` (the
/// test is skipped) without tmux.
fn tmux<'a>(dir: &'a Dir, name: &str) -> Option<Tmux<'a>> {
    let env = tmpdir_env(dir);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    Tmux::start_with(dir, name, 100, 30, false, &env)
}

/// The rows of `names` are all on the screen.
fn all_shown(rows: &[String], names: &[&str]) -> bool {
    names.iter().all(|n| rows.iter().any(|r| r.contains(n)))
}

/// A terminal that reflows (tmux, like VTE and kitty: long lines are rewrapped when it
/// narrows and joined again when it widens) is narrowed and widened while three instances
/// run in an interactive shell: at the end the rows are right below the command line, with
/// nothing left of the rewrapped lines anywhere. (Before the fix, the wrapped-off end of an
/// old line stayed below the rows in about one run of five here.)
#[test]
fn rows_stay_in_place_when_a_reflowing_terminal_narrows_and_widens() {
    let dir = Dir::new();
    // 300 MB at 30 MB/s: 10 seconds. (Written out, not sparse: the instances must be as
    // busy as with real data for the redraws to race with the resizes as they do for users.)
    dir.file("in", &vec![0u8; 300_000_000]);
    // (Redraws racing with resizes: never beside a test that loads the cores, as `run`.)
    let _cores = crate::util::cores_free();
    let Some(tmux) = tmux(&dir, "cursor-reflow") else {
        return;
    };
    tmux.keys("r -c -N raw -L 30M in | r -c -N gz | r -c -N out > /dev/null; echo rc=$?");
    tmux.wait_for("the three rows", |rows| {
        all_shown(rows, &["raw:", "gz:", "out:"])
    });
    // Twice narrowed and widened, each right after one of the instances' redraws (every
    // second), while they run.
    for width in [60, 120, 60, 120] {
        let before = tmux.pane(false);
        tmux.wait_for("a redraw", |rows| rows != before);
        tmux.resize(width, 30);
    }
    let rows = tmux.wait_for("the end and the next prompt", |rows| {
        rows.iter().any(|r| r.starts_with("rc=")) && rows.last().is_some_and(|r| r == "$")
    });
    assert_eq!(rows.len(), 6, "{rows:#?}");
    assert!(rows[0].starts_with("$ r -c -N raw") && rows[0].ends_with("rc=$?"));
    assert_rows(
        &rows,
        &[("raw", "286MiB"), ("gz", "286MiB"), ("out", "286MiB")],
        "rc=0",
        120,
    );
    assert_eq!(rows[4], "rc=0", "{rows:#?}");
    assert_eq!(rows[5], "$", "{rows:#?}");
}

/// Ctrl-Z and `fg` while three instances run in an interactive shell: after `fg` the rows
/// start again right below the job's command line that the shell printed, instead of being
/// drawn over the shell's lines where they were. (What the shell writes when the job stops
/// goes where the cursor was and can still land on a row: that part is not checked.)
#[test]
fn after_ctrl_z_and_fg_the_rows_go_below_the_shells_lines() {
    let dir = Dir::new();
    let _cores = crate::util::cores_free();
    let Some(tmux) = tmux(&dir, "cursor-ctrl-z") else {
        return;
    };
    dir.file("in", &vec![0u8; 100_000_000]);
    tmux.keys("r -c -N raw -L 20M in | r -c -N gz | r -c -N out > /dev/null");
    tmux.wait_for("the three rows", |rows| {
        all_shown(rows, &["raw:", "gz:", "out:"])
    });
    tmux.press("C-z");
    tmux.wait_for("the job to stop", |rows| {
        rows.iter().any(|r| r.contains("Stopped"))
    });
    tmux.keys("fg");
    // The end: three final rows, then the next prompt.
    let rows = tmux.wait_for("the end", |rows| {
        let finals = rows.iter().filter(|r| r.contains(" 95.4MiB 0:00:")).count();
        finals == 3 && rows.last().is_some_and(|r| r == "$")
    });
    let first = rows
        .iter()
        .position(|r| r.contains(" 95.4MiB 0:00:"))
        .unwrap();
    assert!(
        first >= 2 && rows[first - 1].starts_with("r -c -N raw -L 20M in | r -c -N gz"),
        "the rows start right below the command `fg` printed: {rows:#?}"
    );
    assert!(
        rows[..first].iter().any(|r| r.contains("Stopped")),
        "{rows:#?}"
    );
    assert_rows(
        &rows[first..],
        &[("raw", "95.4MiB"), ("gz", "95.4MiB"), ("out", "95.4MiB")],
        "$",
        100,
    );
}

/// Another instance holds the registry's lock and does not let go (it was stopped while it
/// drew): `rpv -c` must neither wait for it for good nor ignore SIGINT. The lock is held by
/// this test on a registry in a temporary directory, never the real one.
#[test]
fn a_registry_locked_by_a_stopped_instance_does_not_hold_rpv() {
    let _cores = crate::util::cores_free();
    use std::os::fd::AsFd;
    use std::os::unix::fs::OpenOptionsExt;
    let dir = Dir::new();
    let input = dir.file("in", &data(4 << 20, 71));
    let out = dir.path("out");
    let (master, slave) = crate::terminal::openpty(80, 24);
    let terminal = Terminal::new(master, 80, 24, true);
    let tty = rustix::termios::ttyname(slave.as_fd(), Vec::new()).unwrap();
    let tty = tty
        .to_str()
        .unwrap()
        .trim_start_matches("/dev/")
        .replace('/', "_");
    let euid = rustix::process::geteuid().as_raw();
    let registry = dir.path(&format!("rpv-cursor-{tty}-{euid}"));
    let held = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(&registry)
        .unwrap();
    rustix::fs::flock(held.as_fd(), rustix::fs::FlockOperation::LockExclusive).unwrap();
    let mut cmd = rpv(&["-c", "-i", "0.1", "-L", "1M", "-o", s(&out), s(&input)]);
    for (k, v) in tmpdir_env(&dir) {
        cmd.env(k, v);
    }
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(slave))
        .spawn()
        .unwrap();
    drop(cmd);
    // A third of a second of data: several updates have tried the lock by then.
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::fs::metadata(&out).map_or(0, |m| m.len()) < 350_000 {
        assert!(Instant::now() < deadline, "no data moved");
        assert!(child.try_wait().unwrap().is_none(), "rpv ended early");
        std::thread::sleep(Duration::from_millis(10));
    }
    let sent = Instant::now();
    rustix::process::kill_process(
        rustix::process::Pid::from_child(&child),
        rustix::process::Signal::INT,
    )
    .unwrap();
    let status =
        crate::util::wait_within(&mut child, crate::util::PATIENCE, "rpv -c, registry locked");
    let took = sent.elapsed();
    drop(held);
    drop(terminal);
    assert!(
        took < Duration::from_secs(1),
        "SIGINT ended rpv after {took:?} (the registry stayed locked)"
    );
    assert_eq!(status.code(), Some(32), "interrupted: {status:?}");
    let copied = std::fs::read(&out).unwrap();
    let all = std::fs::read(&input).unwrap();
    assert!(
        all.starts_with(&copied),
        "the output is a prefix of the input"
    );
}
