//! rpv with stderr on a real pseudo-terminal: what ends up on the screen (through the vt100
//! terminal emulator), resizing, and background jobs under job control.

use std::io::Write;
use std::process::Stdio;

use crate::terminal::{bash_on_terminal, openpty, Terminal};
use crate::util::{catches, data, rpv, s, wait_until, Dir};

#[test]
fn progress_is_drawn_on_a_terminal_without_force() {
    let dir = Dir::new();
    let input = dir.file("in", &data(1 << 20, 1));
    let (master, slave) = openpty(60, 10);
    let terminal = Terminal::new(master, 60, 10, false);
    let mut child = rpv(&["-i", "0.1", "-L", "2M", s(&input)])
        .stdout(Stdio::null())
        .stderr(Stdio::from(slave))
        .spawn()
        .unwrap();
    assert!(child.wait().unwrap().success());
    drop(child);
    let (rows, bytes, _) = terminal.finish();
    let text = String::from_utf8_lossy(&bytes);
    assert!(text.matches('\r').count() >= 4, "several updates: {text:?}");
    let mut parser = vt100::Parser::new(10, 60, 0);
    parser.process(&bytes);
    // The final line: 1 MiB, the timer, the average rate, a full bar, 100 %, ETA blanked.
    assert!(rows[0].starts_with("1.00MiB 0:00:0"), "{rows:?}");
    assert!(rows[0].contains("[=========="), "{rows:?}");
    assert!(rows[0].trim_end().ends_with("] 100%"), "{rows:?}");
    assert_eq!(rows[1], "", "nothing else on screen: {rows:?}");
    assert_eq!(
        parser.screen().cursor_position(),
        (1, 0),
        "the run ends with a newline"
    );
}

#[test]
fn resizing_the_terminal_changes_the_line_width() {
    // 600,000 bytes from a pipe the test holds half way until the line was redrawn at the
    // new width: a busy machine cannot end the run before the test looked.
    let input = data(600_000, 2);
    let (master, slave) = openpty(70, 10);
    let terminal = Terminal::new(master, 70, 10, false);
    let mut child = rpv(&["-i", "0.1", "-s", "600000"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::from(slave))
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&input[..300_000]).unwrap();
    wait_until("a line at the first width", crate::util::PATIENCE, || {
        terminal.contents().contains("ETA") && catches(child.id(), libc::SIGWINCH)
    });
    terminal.resize(50, 10);
    // The terminal is not rpv's controlling terminal, so deliver SIGWINCH by hand.
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGWINCH) };
    wait_until("a line at the new width", crate::util::PATIENCE, || {
        let text = String::from_utf8_lossy(&terminal.bytes()).into_owned();
        let last = text.split(['\r', '\n']).rfind(|l| !l.is_empty());
        last.is_some_and(|l| l.chars().count() == 50)
    });
    stdin.write_all(&input[300_000..]).unwrap();
    drop(stdin);
    assert!(child.wait().unwrap().success());
    let (_, bytes, _) = terminal.finish();
    let text = String::from_utf8_lossy(&bytes);
    let lines: Vec<&str> = text.split(['\r', '\n']).filter(|l| !l.is_empty()).collect();
    let widths: Vec<usize> = lines.iter().map(|l| l.chars().count()).collect();
    assert_eq!(widths.first(), Some(&70), "{lines:?}");
    assert_eq!(widths.last(), Some(&50), "{lines:?}");
}

#[test]
fn a_background_job_shows_nothing_and_never_stops_the_pipeline() {
    let dir = Dir::new();
    let input = dir.file("in", &data(3 << 20, 3));
    let out = dir.path("out");
    // With TOSTOP set, a background write to the terminal would stop a process that does
    // not ignore SIGTTOU; rpv must neither stop nor draw.
    let script = format!(
        "set -m; stty tostop; \"$RPV\" -i 0.1 -L 4M {} > {} & wait $!; echo \"status=$?\"",
        s(&input),
        s(&out)
    );
    let text = background_job_output(&script);
    assert!(
        !text.contains("MiB"),
        "no progress from the background: {text:?}"
    );
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&input).unwrap());
}

#[test]
fn a_forced_background_job_draws_and_still_finishes() {
    let dir = Dir::new();
    let input = dir.file("in", &data(1 << 20, 4));
    let script = format!(
        "set -m; stty tostop; \"$RPV\" -f -b -i 0.1 -L 4M {} > /dev/null & wait $!; echo \"status=$?\"",
        s(&input)
    );
    let text = background_job_output(&script);
    assert!(
        text.contains("1.00MiB"),
        "-f draws even in the background (pv shows nothing): {text:?}"
    );
}

/// Runs `script` (a background job and `echo "status=$?"`) on a 60×10 terminal; asserts the
/// job's status was 0 and returns everything written to the terminal.
fn background_job_output(script: &str) -> String {
    let (status, terminal) = bash_on_terminal(script, 60, 10, true, &[], |_| {});
    let (_, bytes, _) = terminal.finish();
    assert!(status.success());
    let text = String::from_utf8_lossy(&bytes).into_owned();
    assert!(text.contains("status=0"), "{text:?}");
    text
}
