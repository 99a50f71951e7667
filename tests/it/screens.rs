//! Multi-row views (`--each` with its `--tee` rows, `--pipeline`) on real terminals: tmux,
//! which reflows its lines on a resize as most terminals users have do, and the
//! pseudo-terminal harness with the `vt100` emulator. A screen passes when every row it
//! should show is on it exactly once, no row is wider than the terminal less its last
//! column, and nothing else (debris of an older frame) is left on it.
//!
//! Tests wait for conditions (the rows appearing, the prompt coming back) with generous
//! deadlines; nothing depends on a sleep being long enough. Inputs that must keep a run
//! going are FIFOs the test feeds and closes when it is done with the screen.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::shell::Pipeline;
use crate::terminal::bash_on_terminal;
use crate::tmux::{Tmux, DEADLINE_SECS};
use crate::util::{data, poll, s, Dir};

/// How long any awaited screen may take (a loaded 2-core machine included).
const DEADLINE: f64 = DEADLINE_SECS;

/// Waits until the screen is clean by `check` (see [`Rows::check`]); returns it.
#[track_caller]
fn wait_clean(tmux: &Tmux, what: &str, rows: &Rows, width: usize) -> Vec<String> {
    let mut why = String::new();
    let clean = poll(DEADLINE, || {
        let (lines, joined) = (tmux.pane(false), tmux.pane(true));
        match rows.check(&lines, &joined, width) {
            Ok(()) => Some(lines),
            Err(e) => {
                why = format!("{e}\n{lines:#?}\njoined: {joined:#?}");
                None
            }
        }
    });
    clean.unwrap_or_else(|| panic!("{what}: {why}"))
}

/// What a screen of rows must hold: every row (by the text it starts with, leading blanks
/// aside) exactly once, and besides them only the lines `others` allows.
struct Rows<'a> {
    /// Starts of the rows that must each be on the screen once.
    rows: Vec<String>,
    /// Other lines that may be there (the command line, messages, the prompt...).
    others: &'a dyn Fn(&str) -> bool,
}

impl Rows<'_> {
    fn is_row(&self, line: &str) -> bool {
        let line = line.trim_start();
        self.rows.iter().any(|r| line.starts_with(r.as_str())) || is_more(line)
    }

    /// `lines` (as shown) and `joined` (wrapped lines joined): each row once, no row wider
    /// than `width − 1` (a row that wrapped is one joined line wider than that), nothing
    /// that is neither a row nor an allowed line.
    fn check(&self, lines: &[String], joined: &[String], width: usize) -> Result<(), String> {
        for row in &self.rows {
            let n = joined
                .iter()
                .filter(|l| l.trim_start().starts_with(row.as_str()))
                .count();
            if n != 1 {
                return Err(format!("{row:?} is on {n} lines"));
            }
        }
        for line in joined.iter().filter(|l| !l.is_empty()) {
            if self.is_row(line) {
                if line.chars().count() > width - 1 {
                    return Err(format!("a row wider than {}: {line:?}", width - 1));
                }
            } else if !(self.others)(line) {
                return Err(format!("debris: {line:?}"));
            }
        }
        if lines.iter().any(|l| l.chars().count() > width) {
            return Err("a line wider than the terminal".into());
        }
        Ok(())
    }
}

/// `N earlier files, all done` (`--each` on a short terminal).
pub(crate) fn is_earlier(line: &str) -> bool {
    line.strip_suffix(" earlier files, all done")
        .is_some_and(|n| n.parse::<usize>().is_ok())
}

/// `+N more`.
pub(crate) fn is_more(line: &str) -> bool {
    line.strip_prefix('+')
        .and_then(|rest| rest.strip_suffix(" more"))
        .is_some_and(|n| n.parse::<usize>().is_ok())
}

/// The shell's own lines: prompts, commands typed, `rc=N`.
fn shell_line(line: &str) -> bool {
    line.starts_with("$ ") || line == "$" || line.starts_with("rc=")
}

/// A line that is (the end of) `typed`: what is left on the screen of a command line that
/// wrapped and scrolled partly away.
fn part_of(typed: &str, line: &str) -> bool {
    !line.is_empty() && typed.ends_with(line)
}

/// A FIFO input that keeps a run going: a thread opens it (waiting for rpv to open it as
/// its input), writes `bytes`, and holds it open until [`Feed::close`].
struct Feed {
    done: std::sync::mpsc::Sender<()>,
    thread: std::thread::JoinHandle<()>,
}

impl Feed {
    fn new(dir: &Dir, name: &str, bytes: usize) -> Feed {
        let path = dir.path(name);
        let made = Command::new("mkfifo").arg(&path).status().unwrap();
        assert!(made.success());
        let (done, wait) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            let mut fifo = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
            fifo.write_all(&data(bytes, 7)).unwrap();
            let _ = wait.recv_timeout(Duration::from_secs(120));
        });
        Feed { done, thread }
    }

    /// Ends the input (rpv reads its end).
    fn close(self) {
        let _ = self.done.send(());
        self.thread.join().unwrap();
    }
}

/// Each width and height: the `--each` rows fit, the figures stay whole from 40 columns
/// on, a long name is cut with an ellipsis, an unreadable input says why on its row
/// (aligned, without repeating its name), an empty input shows 100 %, and on a short
/// terminal the total stays, the earliest finished inputs giving way to one row above
/// the others, `N earlier files, all done` (issue 36 D11: a `+N more` read as inputs still
/// to come).
#[test]
fn each_rows_fit_every_width_and_height() {
    let sizes = [(40, 12), (60, 12), (80, 5), (100, 40), (160, 12)];
    let threads: Vec<_> = sizes
        .iter()
        .map(|&(w, h)| std::thread::spawn(move || each_rows_at(w, h)))
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}

fn each_rows_at(width: usize, height: usize) {
    let dir = Dir::new();
    let long = "a-rather-long-file-name-that-needs-cutting.img";
    for name in ["alpha", long, "zeta"] {
        dir.file(name, &data(300_000, 1));
    }
    dir.file("empty", b"");
    let Some(tmux) = Tmux::start(&dir, &format!("each{width}x{height}"), width, height, true)
    else {
        return;
    };
    let typed =
        format!("r --each -i 0.2 -L 3M alpha {long} missing empty zeta > /dev/null; echo rc=$?");
    tmux.keys(&typed);
    let lines = tmux.wait_for("the end", |rows| rows.iter().any(|r| r == "rc=2"));
    let joined = tmux.pane(true);
    let message = |l: &str| l.starts_with("rpv: failed to read file: missing");
    let tall = height >= 12;
    let starts: Vec<String> = if tall {
        [
            "alpha:", "a-rather", "missing:", "empty:", "zeta:", "total:",
        ]
        .map(String::from)
        .to_vec()
    } else {
        vec!["total:".to_string()]
    };
    let others = |l: &str| {
        shell_line(l)
            || part_of(&typed, l)
            || message(l)
            || is_earlier(l)
            || (!tall
                && ["alpha:", "a-rather", "missing:", "empty:", "zeta:"]
                    .iter()
                    .any(|r| l.trim_start().starts_with(r)))
    };
    let rows = Rows {
        rows: starts,
        others: &others,
    };
    if let Err(why) = rows.check(&lines, &joined, width) {
        panic!("{width}x{height}: {why}\n{lines:#?}\n{joined:#?}");
    }
    let row = |start: &str| {
        lines
            .iter()
            .find(|l| l.trim_start().starts_with(start))
            .unwrap_or_else(|| panic!("{width}x{height}: no {start} row: {lines:#?}"))
            .clone()
    };
    let total = row("total:");
    assert!(
        total.contains("878KiB") && total.contains("100%") && total.contains("B/s]"),
        "{width}x{height}: the figures stay whole: {total:?}"
    );
    if !tall {
        // (The shell's last lines push the top row into the scrollback.)
        let all = tmux.history();
        let last = all.iter().rposition(|l| l.contains("total:")).unwrap();
        let screen = &all[last.saturating_sub(height - 2)..=last];
        assert!(!screen.iter().any(|l| is_more(l)), "{screen:#?}");
        assert!(
            is_earlier(&screen[0]),
            "the earlier files above the rows: {screen:#?}"
        );
        return;
    }
    let missing = row("missing:");
    assert!(
        missing.ends_with("missing: No such file or directory"),
        "the reason, once: {missing:?}"
    );
    let colon = |l: &str| l.find(':').unwrap();
    assert_eq!(
        colon(&missing),
        colon(&row("alpha:")),
        "aligned: {lines:#?}"
    );
    assert!(row("empty:").contains("100%"), "{lines:#?}");
    for name in ["alpha:", "zeta:"] {
        let r = row(name);
        assert!(r.contains("292KiB") && r.contains("100%"), "{r:?}");
    }
    let long_row = row("a-rather");
    // The names take at most a third of the width: 47 columns (`NAME:`) fit at 160.
    if long.len() < width / 3 {
        assert!(long_row.contains(&format!("{long}:")), "{long_row:?}");
    } else {
        assert!(
            long_row.contains("…:"),
            "cut with an ellipsis: {long_row:?}"
        );
    }
    // Bars in one view share one width.
    let bars: Vec<usize> = lines
        .iter()
        .filter_map(|l| Some(l[l.find("] [")? + 2..].find(']')? + 1))
        .collect();
    assert!(
        bars.windows(2).all(|w| w[0] == w[1]),
        "{width}: bars of one width: {lines:#?}"
    );
    if width >= 80 {
        assert_eq!(bars.len(), 5, "{lines:#?}");
    }
}

/// Resizes in both directions while `--each` and `--tee` rows are drawn: after each, the
/// screen settles with every row once and no debris; the final screen too.
#[test]
fn resizes_leave_no_debris_and_no_repeated_rows() {
    let dir = Dir::new();
    dir.file("f1", &data(200_000, 2));
    let feed = Feed::new(&dir, "pipe", 100_000);
    let Some(tmux) = Tmux::start(&dir, "resize", 100, 20, false) else {
        feed.close();
        return;
    };
    let typed = "r --each -i 0.2 --tee copy f1 pipe > /dev/null; echo rc=$?";
    tmux.keys(typed);
    let others = |l: &str| shell_line(l) || part_of(typed, l);
    let rows = Rows {
        rows: ["f1:", "pipe:", "--tee copy:", "total:"]
            .map(String::from)
            .to_vec(),
        others: &others,
    };
    wait_clean(&tmux, "the first rows", &rows, 100);
    for (w, h) in [(60, 20), (160, 20), (40, 12), (100, 8), (70, 20)] {
        tmux.resize(w, h);
        wait_clean(&tmux, &format!("clean at {w}x{h}"), &rows, w);
    }
    // A terminal tells rpv its new size only after it has resized its own screen (tmux
    // even a moment later): a frame drawn in between is cut at the new edge (never
    // wrapped), and the next one fits. Before the run ends, wait for a frame drawn at the
    // last size (f1's bar fills its row to the last column but one), so that the final
    // frame is one too.
    tmux.wait_for("a frame drawn at 70 columns", |lines| {
        lines
            .iter()
            .any(|l| l.trim_start().starts_with("f1:") && l.chars().count() == 69)
    });
    feed.close();
    tmux.wait_for("the end", |rows| rows.iter().any(|r| r == "rc=0"));
    wait_clean(&tmux, "the final screen", &rows, 70);
}

/// Ctrl-C at 40 and at 100 columns, with `--tee` rows (one of them failed): the final
/// screen has every row once, the echoed `^C` pushed nothing into wrapping, and the
/// prompt comes after the rows.
#[test]
fn ctrl_c_leaves_every_row_once() {
    let threads: Vec<_> = [40, 100]
        .into_iter()
        .map(|w| std::thread::spawn(move || ctrl_c_at(w)))
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}

fn ctrl_c_at(width: usize) {
    let dir = Dir::new();
    dir.file("f1", &data(200_000, 3));
    let feed = Feed::new(&dir, "pipe", 50_000);
    let Some(tmux) = Tmux::start(&dir, &format!("ctrlc{width}"), width, 12, false) else {
        feed.close();
        return;
    };
    let typed = "r --each -i 0.2 --tee copy --tee /dev/full f1 pipe > /dev/null; echo rc=$?";
    tmux.keys(typed);
    let others = |l: &str| {
        shell_line(l) || part_of(typed, l) || l.starts_with("rpv: --tee /dev/full: write failed")
    };
    // (At 40 columns the longest name is cut: `--tee /dev...:`.)
    let rows = Rows {
        rows: ["f1:", "pipe:", "--tee copy:", "--tee /dev", "total:"]
            .map(String::from)
            .to_vec(),
        others: &others,
    };
    wait_clean(&tmux, "the rows", &rows, width);
    tmux.press("C-c");
    // rpv ends with status 32 after a signal (like pv), plus 16 for the failed --tee output.
    let lines = tmux.wait_for("the end", |rows| rows.iter().any(|r| r == "rc=48"));
    feed.close();
    let joined = tmux.pane(true);
    if let Err(why) = rows.check(&lines, &joined, width) {
        panic!("{width}: {why}\n{lines:#?}");
    }
    let total = lines.iter().position(|l| l.contains("total:")).unwrap();
    assert_eq!(lines[total + 1], "rc=48", "{lines:#?}");
    assert!(
        !lines.iter().any(|l| l.contains("^C") && l.contains(':')),
        "the echoed ^C is overwritten: {lines:#?}"
    );
}

/// Ctrl-Z and `fg`: the rows are erased before the stop, so the shell's lines do not land
/// on them; after `fg` they are drawn again below, every row once.
#[test]
fn ctrl_z_and_fg_keep_every_row_once() {
    let dir = Dir::new();
    dir.file("f1", &data(200_000, 4));
    let feed = Feed::new(&dir, "pipe", 50_000);
    let Some(tmux) = Tmux::start(&dir, "ctrlz", 80, 20, false) else {
        feed.close();
        return;
    };
    // Not through the function `r`: the shell names the job by its command line.
    let command = "\"$RPV\" --each -i 0.2 f1 pipe > /dev/null";
    tmux.keys(command);
    let others = |l: &str| shell_line(l) || l.contains("Stopped") || l == command;
    let rows = Rows {
        rows: ["f1:", "pipe:", "total:"].map(String::from).to_vec(),
        others: &others,
    };
    wait_clean(&tmux, "the rows", &rows, 80);
    tmux.press("C-z");
    let stopped = tmux.wait_for("stopped", |rows| {
        rows.iter().any(|r| r.contains("Stopped")) && rows.last().is_some_and(|r| r == "$")
    });
    assert!(
        !stopped.iter().any(|l| rows.is_row(l)),
        "no row left under the shell's lines: {stopped:#?}"
    );
    tmux.keys("fg");
    wait_clean(&tmux, "the rows after fg", &rows, 80);
    feed.close();
    // (Typed only once the prompt is back: what is typed during a run is echoed where the
    // cursor waits, on the first row.)
    tmux.wait_for("the prompt", |rows| rows.last().is_some_and(|r| r == "$"));
    tmux.keys("echo rc=$?");
    let lines = tmux.wait_for("the end", |rows| rows.iter().any(|r| r == "rc=0"));
    let joined = tmux.pane(true);
    rows.check(&lines, &joined, 80)
        .unwrap_or_else(|why| panic!("{why}: {lines:#?}"));
    let fg = lines.iter().position(|l| l == command);
    let first = lines.iter().position(|l| l.trim_start().starts_with("f1:"));
    assert!(
        fg.is_some() && first > fg,
        "the rows below `fg`'s line: {lines:#?}"
    );
}

/// The pipeline view at 40 columns on a 5-row terminal: the header and the bottleneck's
/// row stay, the others are counted in `+N more`, the rates keep their units and the
/// marker is whole; after Ctrl-C every row is there once and the summary comes after them.
#[test]
fn pipeline_view_on_a_short_narrow_terminal() {
    let dir = Dir::new();
    let Some(tmux) = Tmux::start(&dir, "pipeline", 40, 5, false) else {
        return;
    };
    let pipeline =
        Pipeline::start("yes | cat | cat | \"$RPV\" -q -L 2m | cat | cat | cat > /dev/null");
    let yes = pipeline.find("yes");
    tmux.keys(&format!("r --pipeline={yes} -i 0.3"));
    // (The bottleneck's rates read `-` until its second reading: a frame where they show.)
    let rated = |r: &String| r.ends_with(" bottleneck") && !r.split(' ').any(|w| w == "-");
    let ready = |rows: &[String]| {
        rows.iter().any(rated)
            && rows.iter().any(|r| is_more(r))
            && rows.iter().any(|r| r.starts_with("COMMAND"))
    };
    let lines = tmux.wait_for("the header, the bottleneck and +N more", ready);
    let joined = tmux.pane(true);
    for line in lines.iter().chain(&joined).filter(|l| !l.starts_with("$ ")) {
        assert!(line.chars().count() < 40, "{line:?}: {lines:#?}");
    }
    let marked: Vec<&String> = lines
        .iter()
        .filter(|l| l.ends_with(" bottleneck"))
        .collect();
    assert_eq!(marked.len(), 1, "{lines:#?}");
    assert!(
        marked[0].contains("B/s"),
        "rates with their units: {lines:#?}"
    );
    tmux.press("C-c");
    tmux.wait_for("the prompt after the summary", |rows| {
        rows.last().is_some_and(|r| r == "$")
    });
    // The summary (a line per stage, the advice) is longer than 5 rows: it is read back
    // with the lines that scrolled away (from the command on), the last frame right
    // before it.
    let history = tmux.history();
    let command = history
        .iter()
        .position(|l| l.starts_with("$ r --pipeline="))
        .unwrap_or_else(|| panic!("no command line: {history:#?}"));
    let lines = &history[command + 1..];
    let summary = lines
        .iter()
        .position(|l| l.starts_with("bottleneck: "))
        .unwrap_or_else(|| panic!("no summary: {lines:#?}"));
    // Nothing of the last frame is there twice.
    let header = lines.iter().filter(|l| l.starts_with("COMMAND")).count();
    assert!(header <= 1, "{lines:#?}");
    let marked: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].ends_with(" bottleneck"))
        .collect();
    assert_eq!(marked.len(), 1, "{lines:#?}");
    assert!(
        marked[0] < summary,
        "the summary after the rows: {lines:#?}"
    );
    for line in &lines[..summary] {
        assert!(line.chars().count() < 40, "{line:?}: {lines:#?}");
        assert!(!line.contains("^C"), "{lines:#?}");
    }
    // The summary's long lines are wrapped at spaces to the width, never by the terminal.
    for line in &lines[summary..] {
        assert!(line.chars().count() < 40, "{line:?}: {lines:#?}");
    }
}

/// `--pipeline` inside a transfer, with resizes: the table, the transfer's own line and
/// the summary each stay on rows of their own, once.
#[test]
fn inline_pipeline_line_and_summary_stay_on_their_rows() {
    let dir = Dir::new();
    let feed = Feed::new(&dir, "pipe", 1_000_000);
    let Some(tmux) = Tmux::start(&dir, "inline", 80, 14, false) else {
        feed.close();
        return;
    };
    tmux.keys("cat pipe | r --pipeline -i 0.2 | gzip -1 | wc -c > /dev/null; echo rc=$?");
    let transfer = |l: &str| l.contains("iB 0:00:") && l.contains("B/s]");
    let check = |lines: &[String], joined: &[String], width: usize| -> Result<(), String> {
        let once = |what: &str, f: &dyn Fn(&str) -> bool| {
            // (The advice under the table may name a stage, and the summary at the end
            // names every stage again, after the rows.)
            let n = joined
                .iter()
                .take_while(|l| !l.starts_with("bottleneck: "))
                .filter(|l| !l.starts_with("$ ") && !l.starts_with("advice: ") && f(l))
                .count();
            if n == 1 {
                Ok(())
            } else {
                Err(format!("{what} on {n} lines"))
            }
        };
        once("the header", &|l| {
            l.trim_start().starts_with("PID COMMAND") || l.starts_with("COMMAND")
        })?;
        once("the transfer's line", &transfer)?;
        once("cat", &|l| {
            l.contains(" cat pipe") || l.starts_with("cat pipe")
        })?;
        once("gzip", &|l| {
            l.contains("gzip -1 ") || l.starts_with("gzip -1")
        })?;
        once("wc", &|l| l.contains("wc -c"))?;
        let table: Vec<&String> = joined
            .iter()
            .skip_while(|l| !l.contains("COMMAND"))
            .take_while(|l| !l.starts_with("rc=") && !l.starts_with("bottleneck: "))
            .collect();
        if let Some(l) = table.iter().find(|l| l.chars().count() > width - 1) {
            return Err(format!("a row wider than {}: {l:?}", width - 1));
        }
        if lines.iter().any(|l| l.chars().count() > width) {
            return Err("a line wider than the terminal".into());
        }
        Ok(())
    };
    let settle = |what: &str, width: usize| {
        let mut why = String::from("never live");
        let settled = poll(DEADLINE, || {
            let (lines, joined) = (tmux.pane(false), tmux.pane(true));
            let live = lines.iter().any(|l| transfer(l));
            match check(&lines, &joined, width) {
                Ok(()) if live => Some(lines),
                Ok(()) => {
                    why = format!("never live: {lines:#?}");
                    None
                }
                Err(e) => {
                    why = format!("{e}: {lines:#?}");
                    None
                }
            }
        });
        settled.unwrap_or_else(|| panic!("{what}: {why}"))
    };
    settle("the view", 80);
    tmux.resize(60, 14);
    settle("clean at 60", 60);
    // Taller too: the summary (a line per stage, the advice) fits below the rows.
    tmux.resize(100, 24);
    settle("clean at 100", 100);
    feed.close();
    let lines = tmux.wait_for("the end", |rows| rows.iter().any(|r| r == "rc=0"));
    let joined = tmux.pane(true);
    check(&lines, &joined, 100).unwrap_or_else(|why| panic!("{why}: {joined:#?}"));
    let line = joined.iter().position(|l| transfer(l)).unwrap();
    let summary = joined.iter().position(|l| l.starts_with("bottleneck: "));
    assert_eq!(
        summary,
        Some(line + 1),
        "the summary right after the rows: {joined:#?}"
    );
}

/// Names a file chose are shown escaped: a newline does not start a row, an escape
/// sequence does not reach the terminal (it would set the window title).
#[test]
fn odd_names_are_shown_escaped() {
    let dir = Dir::new();
    dir.file("plain", &data(100_000, 6));
    dir.file("nl\nname", &data(100_000, 6));
    dir.file("esc\x1b]2;owned\x07x", &data(100_000, 6));
    let Some(tmux) = Tmux::start(&dir, "odd", 80, 12, false) else {
        return;
    };
    let before = tmux.title();
    tmux.keys("r --each -i 0.2 -L 2M plain nl*name esc* > /dev/null; echo rc=$?");
    let lines = tmux.wait_for("the end", |rows| rows.iter().any(|r| r == "rc=0"));
    let joined = tmux.pane(true);
    let others = |l: &str| shell_line(l);
    let rows = Rows {
        rows: ["plain:", "nl\\nname:", "esc\\e]2;owned\\x07x:", "total:"]
            .map(String::from)
            .to_vec(),
        others: &others,
    };
    rows.check(&lines, &joined, 80)
        .unwrap_or_else(|why| panic!("{why}: {lines:#?}"));
    assert_ne!(tmux.title(), "owned");
    assert_eq!(tmux.title(), before);
}

/// An output or `--tee` FIFO without a reader: the terminal says what rpv waits for, and
/// the line goes once the reader comes.
#[test]
fn a_fifo_without_a_reader_is_waited_for_visibly() {
    let dir = Dir::new();
    dir.file("in", &data(100_000, 8));
    for fifo in ["ff", "oo"] {
        let made = Command::new("mkfifo").arg(dir.path(fifo)).status().unwrap();
        assert!(made.success());
    }
    let Some(tmux) = Tmux::start(&dir, "fifo", 80, 12, false) else {
        return;
    };
    for (command, fifo, which) in [
        ("r --tee ff in > /dev/null", "ff", "--tee"),
        ("r -o oo in", "oo", "-o"),
    ] {
        tmux.keys(&format!("clear; {command}; echo rc=$?"));
        let notice = format!("rpv: waiting for a reader of {fifo} ({which})");
        tmux.wait_for("the notice", |rows| rows.contains(&notice));
        let path = dir.path(fifo);
        let reader = std::thread::spawn(move || std::fs::read(path).unwrap().len());
        let lines = tmux.wait_for("the end", |rows| rows.iter().any(|r| r == "rc=0"));
        assert_eq!(reader.join().unwrap(), 100_000);
        assert!(
            !lines.iter().any(|l| l.contains("waiting for a reader")),
            "the notice is gone: {lines:#?}"
        );
    }
}

/// The fitting rules in an emulator (`vt100` on a pseudo-terminal) at many widths: no row
/// wraps, every row is there once, the figures stay whole from 40 columns on.
#[test]
fn rows_never_wrap_in_an_emulator() {
    let dir = Dir::new();
    for name in ["one", "a-long-name-for-a-file-of-data.bin"] {
        dir.file(name, &data(100_000, 9));
    }
    dir.file("empty", b"");
    let script = format!(
        "cd {}; \"$RPV\" --each -i 0.1 -L 2M one a-long-name-for-a-file-of-data.bin missing \
         empty > /dev/null",
        s(dir.dir.path())
    );
    for width in [20u16, 30, 39, 40, 41, 59, 60, 79, 80, 100, 133, 160] {
        let (_, terminal) = bash_on_terminal(&script, width, 12, false, &[], |_| {});
        let (_, bytes, _) = terminal.finish();
        let mut parser = vt100::Parser::new(12, width, 0);
        parser.process(&bytes);
        let screen = parser.screen();
        let rows: Vec<String> = screen
            .rows(0, width)
            .map(|r| r.trim_end().to_string())
            .collect();
        // The message above the rows may wrap; no row of the frame may.
        let first = rows
            .iter()
            .position(|r| r.trim_start().starts_with("one:"))
            .unwrap_or_else(|| panic!("{width}: no rows: {rows:#?}"));
        for i in first..12 {
            assert!(
                !screen.row_wrapped(i as u16),
                "{width}: row {i} wrapped: {rows:#?}"
            );
        }
        for start in ["one:", "a-", "missing:", "empty:", "total:"] {
            let n = rows
                .iter()
                .filter(|r| r.trim_start().starts_with(start))
                .count();
            assert_eq!(n, 1, "{width}: {start}: {rows:#?}");
        }
        let total = rows.iter().find(|r| r.contains("total:")).unwrap();
        if width >= 40 {
            assert!(
                total.contains("195KiB") && total.contains("B/s]") && total.contains("100%"),
                "{width}: {total:?}"
            );
        } else {
            assert!(total.contains("100%"), "{width}: {total:?}");
        }
    }
}

/// Issue 36 point 4 (D11, D12): Ctrl-C of `--each -L 1M` over 60 files in 20 rows. The
/// final screen says where the earliest files went (`N earlier files, all done`, at the
/// top), never `+N more` under the rows, and the total's rate is its rate over real time:
/// never above the limit (the rate of the last fraction of an interval, in which the
/// limiter's bucket was spent, read 4.98MiB/s at -L 4M).
#[test]
fn ctrl_c_of_each_with_a_limit_ends_honest() {
    let dir = Dir::new();
    let names: Vec<String> = (1..=60).map(|i| format!("f{i:02}")).collect();
    for name in &names {
        dir.file(name, &data(64 * 1024, 11));
    }
    let err = dir.path("err");
    let mut args = vec![
        "--each", "-f", "-H", "20", "-w", "100", "-i", "0.2", "-L", "1M",
    ];
    args.extend(names.iter().map(String::as_str));
    let mut child = crate::util::rpv(&args)
        .current_dir(dir.dir.path())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    // Interrupted once 30 files have started (about 2 s at 1 MiB/s).
    crate::util::wait_for("f30 on the screen", crate::util::PATIENCE, || {
        let text = std::fs::read(&err).unwrap_or_default();
        String::from_utf8_lossy(&text)
            .contains("f30:")
            .then_some(())
    });
    Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let status =
        crate::util::wait_within(&mut child, crate::util::PATIENCE, "rpv --each after Ctrl-C");
    assert_eq!(status.code(), Some(32));
    let mut parser = vt100::Parser::new(20, 100, 0);
    parser.process(&std::fs::read(&err).unwrap());
    let rows: Vec<String> = parser
        .screen()
        .rows(0, 100)
        .map(|r| r.trim_end().to_string())
        .collect();
    let earlier = rows[0]
        .strip_suffix(" earlier files, all done")
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or_else(|| panic!("no earlier files row: {rows:#?}"));
    assert!(earlier >= 12, "{rows:#?}");
    assert!(
        !rows.iter().any(|r| crate::screens::is_more(r)),
        "{rows:#?}"
    );
    // The next file after the earlier ones is the next row.
    assert!(
        rows[1]
            .trim_start()
            .starts_with(&format!("{}:", names[earlier])),
        "{rows:#?}"
    );
    let total = rows
        .iter()
        .find(|r| r.trim_start().starts_with("total:"))
        .unwrap_or_else(|| panic!("{rows:#?}"));
    let rate = total
        .split('[')
        .nth(1)
        .and_then(|r| r.split(']').next())
        .unwrap_or_default()
        .trim();
    let per_second = if let Some(k) = rate.strip_suffix("KiB/s") {
        k.trim().parse::<f64>().unwrap() * 1024.0
    } else if let Some(m) = rate.strip_suffix("MiB/s") {
        m.trim().parse::<f64>().unwrap() * 1024.0 * 1024.0
    } else {
        panic!("{total:?}")
    };
    // (Rounded as shown: 1.00MiB/s is the limit.)
    assert!(
        per_second <= 1.005 * 1024.0 * 1024.0,
        "{total:?}\n{rows:#?}"
    );
}

/// More `--each` rows than the terminal has lines (`-H 15`, 40 inputs): the total, the
/// last inputs and, above them, a row saying where the others went (`28 earlier files,
/// all done`: a `+28 more` under the rows read as inputs still to come, issue 36 D11) are
/// on the final screen (they were never shown before: the rows past the height were cut
/// off).
#[test]
fn more_inputs_than_lines_keep_the_total_and_the_latest() {
    let dir = Dir::new();
    let names: Vec<String> = (1..=40).map(|i| format!("f{i:02}")).collect();
    for name in &names {
        dir.file(name, &data(2_000, 10));
    }
    let mut args = vec!["--each", "-f", "-H", "15", "-w", "100", "-i", "0.1"];
    args.extend(names.iter().map(String::as_str));
    let out = crate::util::rpv(&args)
        .current_dir(dir.dir.path())
        .stdout(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let mut parser = vt100::Parser::new(15, 100, 0);
    parser.process(&out.stderr);
    let rows: Vec<String> = parser
        .screen()
        .rows(0, 100)
        .map(|r| r.trim_end().to_string())
        .collect();
    // 14 rows: where the 28 earliest went, the 12 latest inputs, the total.
    assert_eq!(rows[0], "28 earlier files, all done", "{rows:#?}");
    assert!(rows[13].trim_start().starts_with("total:"), "{rows:#?}");
    assert!(rows[13].contains("78.1KiB"), "{rows:#?}");
    for (i, name) in names[28..].iter().enumerate() {
        assert!(
            rows[i + 1].trim_start().starts_with(&format!("{name}:")),
            "{rows:#?}"
        );
    }
    assert!(
        !rows.iter().any(|r| crate::screens::is_more(r)),
        "{rows:#?}"
    );
    for i in 0..14u16 {
        assert!(!parser.screen().row_wrapped(i), "{rows:#?}");
    }
}

/// `-c` gives each rpv of a pipeline one row of the terminal: with `--each`, that row is
/// the total (the per-file rows would be drawn over the other rpv's row), and at the end
/// each row is there once, the prompt below them.
#[test]
fn cursor_rows_with_each_keep_one_row_per_rpv() {
    let dir = Dir::new();
    dir.file("a", &data(1_500_000, 61));
    dir.file("b", &data(1_000_000, 62));
    let Some(tmux) = Tmux::start(&dir, "cursor-each", 80, 12, false) else {
        return;
    };
    tmux.keys("r -c --each -N tot -L 1M a b | r -c -N out -L 1M > /dev/null; echo rc=$?");
    let lines = tmux.wait_for("the end", |rows| rows.iter().any(|r| r == "rc=0"));
    let rows: Vec<&String> = lines
        .iter()
        .filter(|l| !l.starts_with('$') && !l.starts_with("rc="))
        .collect();
    let count = |name: &str| rows.iter().filter(|l| l.contains(name)).count();
    assert_eq!(count("tot:"), 1, "{lines:#?}");
    assert_eq!(count("out:"), 1, "{lines:#?}");
    assert!(
        rows.iter()
            .any(|l| l.contains("tot:") && l.contains("100%")),
        "{lines:#?}"
    );
    // Nothing else on the screen: no per-file row, no debris of one.
    assert_eq!(rows.len(), 2, "{lines:#?}");
    // Where -c is ignored (TERM=dumb), --each has its rows again.
    // (Its own end marker: the first run's `rc=0` may still be on the screen.)
    tmux.keys("clear; TERM=dumb r -c --each -N tot a b > /dev/null; echo dumb-rc=$?");
    let lines = tmux.wait_for("the end", |rows| rows.iter().any(|r| r == "dumb-rc=0"));
    for name in ["a:", "b:", "tot:"] {
        assert_eq!(
            lines
                .iter()
                .filter(|l| l.trim_start().starts_with(name))
                .count(),
            1,
            "{name} {lines:#?}"
        );
    }
}

/// `--each` at 160 columns with a 150-character name: the name column takes at most a
/// third of the width (cut with an ellipsis), so the bar stays long enough to read.
#[test]
fn a_long_name_leaves_the_bar_room() {
    let dir = Dir::new();
    let long = "n".repeat(150);
    let a = dir.file(&long, &data(200_000, 71));
    let b = dir.file("small.bin", &data(100_000, 72));
    let out = crate::util::rpv(&["-f", "-w", "160", "-i", "0.1", "--each", s(&a), s(&b)])
        .current_dir(dir.dir.path())
        .stdout(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stderr).into_owned();
    let rows: Vec<&str> = text
        .split(['\r', '\n'])
        .map(|l| {
            l.trim_start_matches("\x1b[A")
                .trim_start_matches("\x1b[?7l")
        })
        .filter(|l| l.contains("%"))
        .collect();
    assert!(!rows.is_empty(), "{text:?}");
    for row in rows {
        let name = row.split(": ").next().unwrap_or("");
        assert!(
            name.chars().count() < 160 / 3,
            "the name column is capped: {row:?}"
        );
        let bar = row.find('[').map_or(0, |open| {
            let rest = &row[open..];
            rest.rfind(']').map_or(0, |close| close + 1)
        });
        assert!(bar >= 50, "the bar keeps its room ({bar}): {row:?}");
    }
}
