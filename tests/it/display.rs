//! What rpv writes to stderr, byte for byte (spec section 9 rows, with rpv's deliberate
//! differences), using `-f` with stderr on a pipe.

use crate::util::{err, rpv, run_with_input};

/// rpv's stderr for `args` on `input`. The runs end at once on a quiet machine, so only
/// the final update shows; a busy one can stretch them past the first interval, so the
/// interval is 600 s (a test's own `-i` comes later and wins).
fn stderr_of(args: &[&str], input: &[u8]) -> String {
    let mut all = vec!["-i", "600"];
    all.extend_from_slice(args);
    let out = run_with_input(rpv(&all), input);
    assert!(out.status.success(), "{args:?}: {}", err(&out));
    err(&out)
}

#[test]
fn default_line_with_unknown_size() {
    let expected = format!("0.00  B 0:00:00 [0.00  B/s] [<=>{}]\r\n", " ".repeat(47));
    assert_eq!(stderr_of(&["-f"], b""), expected);
}

#[test]
fn single_components() {
    assert_eq!(stderr_of(&["-f", "-b"], b""), "0.00  B\r\n");
    assert_eq!(stderr_of(&["-f", "-b"], b"abc"), "3.00  B\r\n");
    assert_eq!(
        stderr_of(&["-f", "-l", "-b", "-r", "-a"], b"12345"),
        "0.00  [0.00 /s] (0.00 /s)\r\n"
    );
    assert_eq!(stderr_of(&["-f", "-t"], b"abc"), "0:00:00\r\n");
    assert_eq!(stderr_of(&["-f", "-A", "0"], b"abc"), "\r\n");
}

#[test]
fn progress_bar_with_known_size() {
    // rpv draws a 100 % bar completely full (pv ends it with '>'): docs/compatibility.md.
    assert_eq!(
        stderr_of(&["-f", "-p", "-s", "5", "-w", "30"], b"12345"),
        format!("[{}] 100%\r\n", "=".repeat(23))
    );
    assert_eq!(
        stderr_of(&["-f", "-p", "-s", "4", "-w", "30"], b"12345"),
        format!("[{}] 125%\r\n", "=".repeat(23))
    );
    assert_eq!(
        stderr_of(&["-f", "-p", "-s", "10", "-w", "30"], b"12345"),
        "[==========>            ]  50%\r\n"
    );
    assert_eq!(
        stderr_of(&["-f", "-p", "-s", "10000", "-w", "30"], b"12345"),
        "[>                      ]   0%\r\n"
    );
}

#[test]
fn default_line_with_known_size_blanks_the_eta_at_the_end() {
    let line = stderr_of(&["-f", "-s", "3", "-w", "80"], b"abc");
    assert!(line.starts_with("3.00  B 0:00:00 ["), "{line:?}");
    assert!(
        line.ends_with(&format!("] 100%{}\r\n", " ".repeat(12))),
        "{line:?}"
    );
    assert_eq!(
        line.trim_end_matches("\r\n").chars().count(),
        80,
        "{line:?}"
    );
}

#[test]
fn name_and_width() {
    assert_eq!(
        stderr_of(
            &["-f", "-N", "foo", "-F", "[%N][%20N][%3N][%{name}]"],
            b"abc"
        ),
        "[      foo:][                 foo:][foo:][      foo:]\r\n"
    );
    assert_eq!(stderr_of(&["-f", "-F", "[%N]"], b"abc"), "[]\r\n");
    assert_eq!(
        stderr_of(&["-f", "-w", "40", "-F", "%10p|"], b"abc\ndef\n"),
        "[<=>     ]|\r\n"
    );
    let line = stderr_of(&["-f", "-N", "foo", "-b"], b"abc");
    assert_eq!(line, "      foo: 3.00  B\r\n");
}

#[test]
fn malformed_formats_are_literal_text() {
    for (format, expected) in [
        ("a%", "a%"),
        ("%%", "%"),
        ("x%zx", "x%zx"),
        ("%{foo}", "%{foo}"),
        ("%20", "%20"),
        ("%5x", "%5x"),
    ] {
        assert_eq!(
            stderr_of(&["-f", "-F", format], b"abc"),
            format!("{expected}\r\n"),
            "{format}"
        );
    }
    assert_eq!(
        stderr_of(&["-f", "-F", "%{foo%t"], b"abc"),
        "%{foo0:00:00\r\n"
    );
    assert_eq!(
        stderr_of(&["-f", "-F", "%{timer"], b"abc"),
        "%{timer\r\n",
        "no NUL byte, no over-read"
    );
}

#[test]
fn colours_follow_term_and_no_color() {
    let format = "%{sgr:green,bold}%b%{sgr:reset} %{sgr:red}%p";
    let coloured = format!(
        "\x1b[32;1m3.00  B\x1b[0m \x1b[31m[<=>{}]\x1b[m\r\n",
        " ".repeat(27)
    );
    assert_eq!(
        stderr_of(&["-f", "-w", "40", "-F", format], b"abc"),
        coloured
    );
    let mut cmd = rpv(&["-f", "-w", "40", "-F", format]);
    cmd.env("NO_COLOR", "1");
    let plain = format!("3.00  B [<=>{}]\r\n", " ".repeat(27));
    assert_eq!(err(&run_with_input(cmd, b"abc")), plain);
    let mut cmd = rpv(&["-f", "-w", "40", "-F", format]);
    cmd.env("TERM", "dumb");
    assert_eq!(err(&run_with_input(cmd, b"abc")), plain);
}

#[test]
fn stats_line_follows_the_display() {
    // Too short for a measurement (stdout not a pipe, so no wait for a reader): its end
    // comes within 10 ms of its start. Under the real-time policy (as root), so that busy
    // loops and tests beside it cannot stretch that past 10 ms (a measured 0 B/s then).
    let out = crate::util::rpv_on_time(&["-f", "-v", "-b", "-"])
        .stdin(std::fs::File::open("/dev/null").unwrap())
        .stdout(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(err(&out), "0.00  B\r\nrate not measured\n");
    let out = stderr_of(
        &["-q", "-v", "-L", "400k", "-i", "0.1"],
        &vec![0u8; 100_000],
    );
    assert!(
        out.starts_with("rate min/avg/max/mdev = ") && out.ends_with(" B/s\n"),
        "{out:?}"
    );
}

#[test]
fn messages_start_on_a_new_line_after_progress() {
    // Without a line on screen, a message starts at once; after one, on a new line.
    let out = run_with_input(rpv(&["-f", "-b", "missing", "-"]), b"abc");
    assert_eq!(
        err(&out),
        "rpv: failed to read file: missing: No such file or directory\n3.00  B\r\n"
    );
    let out = run_with_input(
        rpv(&["-f", "-b", "-i", "0.1", "-L", "20", "-", "missing"]),
        b"0123456789",
    );
    let e = err(&out);
    assert!(
        !e.starts_with("rpv:") && e.find('\r') < e.find("rpv:"),
        "progress first: {e:?}"
    );
    assert!(
        e.contains("\r\nrpv: failed to read file: missing: No such file or directory\n"),
        "{e:?}"
    );
    assert!(e.ends_with("10.0  B\r\n"), "{e:?}");
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn last_written_and_previous_line_show_the_data() {
    let input: Vec<u8> = (1..=100)
        .flat_map(|i| format!("{i:03}\n").into_bytes())
        .collect();
    assert_eq!(
        stderr_of(&["-f", "-A", "16"], &input),
        "097.098.099.100.\r\n"
    );
    assert_eq!(
        stderr_of(&["-f", "-F", "[%5L]"], b"abc\ndef\nxy"),
        "[def  ]\r\n"
    );
    // Without -C: %L still works, because rpv then moves the data with read/write.
    assert_eq!(
        stderr_of(
            &["-f", "-F", "[%{previous-line}]", "-w", "8"],
            b"one\ntwo\n"
        ),
        "[two   ]\r\n"
    );
}

#[test]
fn numeric_custom_formats_escape_names() {
    let out = run_with_input(
        rpv(&[
            "-n",
            "-N",
            "a \"b\"\\c\td",
            "-F",
            "{\"name\":\"%1N\",\"bytes\":%b}",
        ]),
        b"abc",
    );
    assert_eq!(
        err(&out),
        "{\"name\":\"a \\\"b\\\"\\\\c\\td:\",\"bytes\":3}\n"
    );
    // The terminal display shows the name as given.
    assert_eq!(
        stderr_of(&["-f", "-N", "a\"b", "-F", "%1N"], b""),
        "a\"b:\r\n"
    );
}

#[test]
fn buffer_gauge_styles_bits_and_si_units() {
    assert_eq!(
        stderr_of(&["-f", "-T"], b"abc"),
        "{  0%}\r\n",
        "read/write buffer emptied"
    );
    // -g: the bar shows the rate against the highest rate seen, then "/max".
    let gauge = stderr_of(&["-f", "-g", "-p", "-w", "30"], b"abc");
    assert!(
        gauge.starts_with('[') && gauge.contains("]/") && gauge.ends_with("B/s\r\n"),
        "{gauge:?}"
    );
    // Unicode bars only in a UTF-8 locale.
    assert_eq!(
        stderr_of(&["-f", "-u", "block", "-p", "-s", "6", "-w", "20"], b"abc"),
        "[=====>       ]  50%\r\n"
    );
    let mut cmd = rpv(&["-f", "-u", "block", "-p", "-s", "6", "-w", "20"]);
    cmd.env("LC_ALL", "C.UTF-8");
    assert_eq!(
        err(&run_with_input(cmd, b"abc")),
        "[██████       ]  50%\r\n"
    );
    let mut cmd = rpv(&["-f", "-u", "shaded", "-p", "-s", "6", "-w", "20"]);
    cmd.env("LC_ALL", "C.UTF-8");
    assert_eq!(
        err(&run_with_input(cmd, b"abc")),
        "[██████▒░░░░░░]  50%\r\n"
    );
    assert_eq!(stderr_of(&["-f", "-8"], b"abc"), "24.0  b\r\n");
    assert_eq!(stderr_of(&["-f", "-k", "-b"], b"abc"), "3.00 B\r\n");
    assert_eq!(
        stderr_of(&["-f", "-k", "-8", "-b"], &[0u8; 5000]),
        "40.0kb\r\n"
    );
}
