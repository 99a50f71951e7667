//! rpv keeps its word on standard error: with `--json` every line is a JSON object the
//! schema accepts, on every path (usage errors, set-up errors, warnings, `-M`, signals), and
//! every run ends with exactly one `end` whose status is rpv's exit status; names that are
//! not UTF-8 survive; `--log` and messages on a terminal stay one line each, time-stamped.
//!
//! The schema checks are batched: each test collects its runs' output and validates it
//! with one Python process.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::process::{Command, Stdio};

use base64::Engine as _;
use serde_json::Value;

use crate::json::schema_errors;
use crate::util::{data, rpv, s, Dir};

/// The objects of one `--json` run: every line parses, and the last one is the only `end`,
/// whose status is `code`.
#[track_caller]
fn objects(what: &str, stderr: &[u8], code: Option<i32>) -> Vec<Value> {
    let text = String::from_utf8_lossy(stderr);
    assert!(text.ends_with('\n'), "{what}: whole lines: {text:?}");
    let objects: Vec<Value> = text
        .lines()
        .map(|line| {
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{what}: {e}: {line:?}\n{text}"))
        })
        .collect();
    let ends = objects.iter().filter(|o| o["type"] == "end").count();
    assert_eq!(ends, 1, "{what}: one end object\n{text}");
    let end = objects.last().unwrap();
    assert_eq!(end["type"], "end", "{what}: the end comes last\n{text}");
    let code = code.unwrap_or_else(|| panic!("{what}: killed by a signal"));
    assert_eq!(
        end["status"], code,
        "{what}: end.status is the exit status\n{text}"
    );
    objects
}

/// Validates the NDJSON of several runs at once; panics naming the run of each bad line.
#[track_caller]
fn validate_all(runs: &[(String, String)]) {
    let mut all = String::new();
    let mut owner = Vec::new();
    for (what, text) in runs {
        for line in text.lines() {
            all.push_str(line);
            all.push('\n');
            owner.push(what.as_str());
        }
    }
    let errors: Vec<String> = schema_errors(&all)
        .into_iter()
        .map(|e| {
            let n: usize = e
                .strip_prefix("line ")
                .and_then(|rest| rest.split(':').next())
                .and_then(|n| n.parse().ok())
                .unwrap_or(1);
            format!("{} — {e}", owner.get(n - 1).copied().unwrap_or("?"))
        })
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
}

fn of_type<'a>(objects: &'a [Value], kind: &str) -> Vec<&'a Value> {
    objects.iter().filter(|o| o["type"] == kind).collect()
}

/// Usage errors, set-up errors, errors of the other modes and warnings: JSON messages of
/// the right kind, then one `end` with the exit status.
#[test]
fn every_error_path_speaks_json_and_ends_once_with_the_status() {
    let dir = Dir::new();
    let input = dir.file("in", &data(10_000, 51));
    let i = s(&input);
    let cases: Vec<(Vec<&str>, i32, &str)> = vec![
        (vec!["--json", "-o", "/nonexistent/x", i], 2, "output"),
        (vec!["--json", "--tee", "/nonexistent/x", i], 2, "output"),
        (vec!["--json", "-P", "/nonexistent/p", i], 1, "file"),
        (vec!["--json", "-U", "/nonexistent/u", i], 1, "file"),
        (vec!["--json", "-s", "@/nonexistent/size", i], 64, "usage"),
        (
            vec!["--json", "-M", "out", "--", "/nonexistent/cmd"],
            127,
            "command",
        ),
        (vec!["--json", "-Q", "999999"], 1, "remote"),
        (vec!["--json", "-R", "999999", "-L", "1M"], 1, "remote"),
        (vec!["--json", "--pipeline=999999"], 2, "error"),
        (vec!["--json", "-A1e3", i], 64, "usage"),
        (vec!["-A1e3", "--json", i], 64, "usage"),
        (vec!["--json", "--no-such-option", i], 64, "usage"),
        (vec!["--js", "-i"], 64, "usage"),
        (vec!["--json", "-M", "out"], 64, "usage"),
        // A warning before the transfer: rpv is not in a pipeline here.
        (vec!["--json", "--pipeline", i], 0, "warning"),
        (vec!["--json", "--tee", "/dev/full", i], 16, "write"),
    ];
    let mut runs = Vec::new();
    for (args, code, kind) in cases {
        let what = format!("{args:?}");
        let out = rpv(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(code),
            "{what}: {}",
            crate::util::err(&out)
        );
        let objects = objects(&what, &out.stderr, out.status.code());
        let messages = of_type(&objects, "message");
        assert!(
            messages.iter().any(|m| m["kind"] == kind),
            "{what}: a {kind} message: {messages:#?}"
        );
        if code == 64 {
            let text = messages[0]["text"].as_str().unwrap();
            assert!(
                !text.starts_with("rpv:") && !text.contains('\n'),
                "{what}: one line, without the program's name: {text:?}"
            );
        }
        runs.push((what, String::from_utf8(out.stderr).unwrap()));
    }
    validate_all(&runs);
}

/// With `-M`, the status rpv exits with is the command's (128 + N after signal N), and so is
/// `end.status`. `-M both` numbers its two inputs apart.
#[test]
fn the_end_status_is_the_commands_with_m() {
    let mut runs = Vec::new();
    for (script, code) in [("exit 3", 3), ("kill -TERM $$", 128 + libc::SIGTERM)] {
        let what = format!("-M out -- sh -c {script:?}");
        let out = rpv(&["--json", "-q", "-M", "out", "--", "sh", "-c", script])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(code), "{what}");
        let objects = objects(&what, &out.stderr, out.status.code());
        assert_eq!(objects.last().unwrap()["interrupted"], false, "{what}");
        runs.push((what, String::from_utf8(out.stderr).unwrap()));
    }
    let dir = Dir::new();
    let input = dir.file("in", &data(200_000, 52));
    let out = rpv(&["--json", "-M", "both", "--", "cat"])
        .stdin(std::fs::File::open(&input).unwrap())
        .stdout(Stdio::null())
        .output()
        .unwrap();
    let objects = objects("-M both", &out.stderr, out.status.code());
    let start = &objects[0];
    assert_eq!(start["inputs"][0]["name"], "(stdin)");
    assert_eq!(start["inputs"][1]["name"], "(pipe)");
    let done: Vec<(u64, u64)> = of_type(&objects, "input")
        .iter()
        .filter(|o| o["event"] == "done")
        .map(|o| (o["index"].as_u64().unwrap(), o["bytes"].as_u64().unwrap()))
        .collect();
    assert_eq!(done, [(0, 200_000), (1, 200_000)], "distinct indexes");
    let end = objects.last().unwrap();
    let indexes: Vec<&Value> = end["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| &i["index"])
        .collect();
    assert_eq!(indexes, [0, 1]);
    runs.push(("-M both".into(), String::from_utf8(out.stderr).unwrap()));
    validate_all(&runs);
}

/// A file name that is not UTF-8 keeps its bytes (`name_base64`), as an input and as a
/// `--tee` output; an empty file is `size: 0` everywhere; every meter is `done` in `end`.
#[test]
fn names_survive_sizes_agree_and_the_end_is_done() {
    let dir = Dir::new();
    let raw_in = OsStr::from_bytes(b"caf\xe9 \xff.bin");
    let raw_tee = OsStr::from_bytes(b"copy\xfe");
    let bytes = data(5_000, 53);
    std::fs::write(dir.dir.path().join(raw_in), &bytes).unwrap();
    let empty = dir.file("empty", b"");
    let mut cmd = rpv(&["--json", "--tee"]);
    cmd.arg(dir.dir.path().join(raw_tee))
        .arg(dir.dir.path().join(raw_in))
        .arg(&empty)
        .stdout(Stdio::null());
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", crate::util::err(&out));
    let objects = objects("non-UTF-8 names", &out.stderr, out.status.code());
    let decode = |v: &Value| {
        base64::engine::general_purpose::STANDARD
            .decode(v.as_str().expect("a name_base64"))
            .unwrap()
    };
    let full_in = dir.dir.path().join(raw_in).into_os_string().into_vec();
    let full_tee = dir.dir.path().join(raw_tee).into_os_string().into_vec();
    let start = &objects[0];
    assert_eq!(decode(&start["inputs"][0]["name_base64"]), full_in);
    assert_eq!(start["inputs"][1]["name"], s(&empty));
    assert!(start["inputs"][1].get("name_base64").is_none());
    let opened = of_type(&objects, "input");
    let opened: Vec<&&Value> = opened.iter().filter(|o| o["event"] == "opened").collect();
    assert_eq!(decode(&opened[0]["name_base64"]), full_in);
    let end = objects.last().unwrap();
    assert_eq!(decode(&end["inputs"][0]["name_base64"]), full_in);
    assert_eq!(decode(&end["outputs"][0]["name_base64"]), full_tee);
    assert_eq!(end["outputs"][0]["bytes"], bytes.len());
    // The empty file: size 0 in start, opened and the end's inputs alike.
    assert_eq!(start["inputs"][1]["size"], 0);
    assert_eq!(opened[1]["size"], 0);
    assert_eq!(end["inputs"][1]["size"], 0);
    assert_eq!(end["inputs"][1]["percent"], 100.0);
    for meter in end["meters"].as_array().unwrap() {
        assert_eq!(meter["done"], true, "{meter}");
    }
    validate_all(&[("names".into(), String::from_utf8(out.stderr).unwrap())]);
}

/// A watched descriptor (`-d`) open on a file whose name is not UTF-8: its `path` comes
/// with `path_base64`, the exact bytes (relative to rpv's directory, as `path` is).
#[test]
fn a_watched_descriptors_path_survives_too() {
    let dir = Dir::new();
    let raw = OsStr::from_bytes(b"w\xe9\xff.log");
    std::fs::write(dir.dir.path().join(raw), data(70_000, 57)).unwrap();
    let mut holder = Command::new("sh")
        .args(["-c", "exec 3< \"$1\"; exec sleep 30", "sh"])
        .arg(dir.dir.path().join(raw))
        .spawn()
        .unwrap();
    // The holder has the file open on descriptor 3 once it runs sleep.
    let fd3 = format!("/proc/{}/fd/3", holder.id());
    crate::util::wait_until("the holder to run sleep", crate::util::PATIENCE, || {
        std::fs::read(format!("/proc/{}/cmdline", holder.id()))
            .is_ok_and(|c| c.starts_with(b"sleep"))
            && std::fs::read_link(&fd3).is_ok()
    });
    let mut watcher = rpv(&["--json", "-i", "0.1", "-d", &format!("{}:3", holder.id())])
        .current_dir(dir.dir.path())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(watcher.stderr.take().unwrap()).lines();
    let mut text = String::new();
    // Read until the descriptor's first progress object, then end the holder: the watch ends.
    for line in lines.by_ref() {
        let line = line.unwrap();
        text.push_str(&line);
        text.push('\n');
        if line.contains("\"descriptor\"") && line.contains("\"progress\"") {
            break;
        }
    }
    let _ = holder.kill();
    let _ = holder.wait();
    for line in lines {
        text.push_str(&line.unwrap());
        text.push('\n');
    }
    let status = watcher.wait().unwrap();
    let objects = objects("-d", text.as_bytes(), status.code());
    let progress = of_type(&objects, "progress");
    let meter = progress
        .iter()
        .find(|o| o["meter"] == "descriptor")
        .unwrap_or_else(|| panic!("a descriptor's progress: {text}"));
    assert_eq!(meter["fd"], 3, "{meter}");
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(meter["path_base64"].as_str().expect("path_base64"))
        .unwrap();
    assert_eq!(decoded, raw.as_bytes(), "{meter}");
    assert_eq!(meter["path"], "w\u{fffd}\u{fffd}.log", "{meter}");
    validate_all(&[("-d".into(), text)]);
}

/// `-q --json`: start, messages and end only (the man page's promise).
#[test]
fn quiet_json_writes_start_messages_and_end_only() {
    let dir = Dir::new();
    let input = dir.file("in", &data(100_000, 54));
    let out = rpv(&["--json", "-q", s(&input), "/nonexistent/in"])
        .stdout(Stdio::null())
        .output()
        .unwrap();
    let objects = objects("-q", &out.stderr, out.status.code());
    let types: Vec<&str> = objects
        .iter()
        .map(|o| o["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["start", "message", "end"]);
}

/// SIGINT in the middle of a transfer: still exactly one `end`, status 32, interrupted.
#[test]
fn an_interrupted_run_ends_once() {
    let mut child = rpv(&["--json", "-i", "0.1", "-L", "100k", "/dev/zero"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut text = String::new();
    // Wait for the first progress object: the transfer is under way.
    while !text.contains("\"progress\"") {
        let mut line = String::new();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "{text}");
        text.push_str(&line);
    }
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    std::io::Read::read_to_string(&mut stderr, &mut text).unwrap();
    let status = crate::util::wait_within(&mut child, crate::util::PATIENCE, "rpv after SIGINT");
    let objects = objects("SIGINT", text.as_bytes(), status.code());
    assert_eq!(status.code(), Some(32));
    assert_eq!(objects.last().unwrap()["interrupted"], true);
    validate_all(&[("SIGINT".into(), text)]);
}

/// Random command lines with `--json` somewhere: every line on standard error is a JSON
/// object (the schema accepts each, checked in one batch at the end), and the last is the
/// only `end`, with rpv's exit status.
#[test]
fn random_command_lines_with_json_speak_only_json() {
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};
    let dir = Dir::new();
    let input = dir.file("in", &data(70_000, 55));
    let small = dir.file("small", &data(300, 56));
    let out = dir.path("out");
    let tee = dir.path("tee");
    let files = [s(&input), s(&small), "/nonexistent/in", "-"].map(String::from);
    // Odd paths for the files rpv writes itself: they must come out of every run unchanged.
    let fifo = dir.path("planted-fifo");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let planted_dir = dir.path("planted-dir");
    std::fs::create_dir(&planted_dir).unwrap();
    let device = dir.path("planted-null");
    let device = Command::new("mknod")
        .arg(&device)
        .args(["c", "1", "3"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
        .then_some(device);
    let mut odd = vec![s(&fifo), s(&planted_dir)];
    if let Some(device) = &device {
        odd.push(s(device));
    } else {
        eprintln!("mknod not allowed: no device node among the odd paths");
    }
    let metrics = format!("{}/m.prom", s(&planted_dir));
    let mut odd_words: Vec<Vec<String>> = odd
        .iter()
        .flat_map(|p| {
            [
                vec!["--metrics-file".to_string(), p.to_string()],
                vec!["-P".to_string(), p.to_string()],
            ]
        })
        .collect();
    // An input as the value, with that input as an operand (`-` is stdin, the small file).
    for (path, operand) in [(s(&input), s(&input)), (s(&small), "-")] {
        for option in ["--metrics-file", "-P"] {
            odd_words.push([option, path, operand].map(String::from).to_vec());
        }
    }
    odd_words.push(vec!["--metrics-file".into(), metrics]);
    odd_words.push(vec!["-U".into(), s(&fifo).into()]);
    if let Some(device) = &device {
        odd_words.push(vec!["-U".into(), s(device).into()]);
    }
    let (input_bytes, small_bytes) = (
        std::fs::read(&input).unwrap(),
        std::fs::read(&small).unwrap(),
    );
    let restore = || {
        for path in [&fifo, &planted_dir] {
            let _ = std::fs::remove_file(path).or_else(|_| std::fs::remove_dir_all(path));
        }
        assert!(Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        std::fs::create_dir(&planted_dir).unwrap();
        if let Some(device) = &device {
            let _ = std::fs::remove_file(device).or_else(|_| std::fs::remove_dir_all(device));
            assert!(Command::new("mknod")
                .arg(device)
                .args(["c", "1", "3"])
                .status()
                .unwrap()
                .success());
        }
        std::fs::write(&input, &input_bytes).unwrap();
        std::fs::write(&small, &small_bytes).unwrap();
    };
    let unchanged = |args: &[String]| -> Result<(), String> {
        use std::os::unix::fs::{FileTypeExt, MetadataExt};
        let kind = |p: &std::path::Path| std::fs::symlink_metadata(p).map(|m| m.file_type());
        if !kind(&fifo).is_ok_and(|t| t.is_fifo()) {
            return Err("the FIFO was replaced".into());
        }
        if !kind(&planted_dir).is_ok_and(|t| t.is_dir()) {
            return Err("the directory was replaced".into());
        }
        if let Some(device) = &device {
            let meta = std::fs::symlink_metadata(device).map_err(|e| e.to_string())?;
            if !meta.file_type().is_char_device() || meta.rdev() != libc::makedev(1, 3) {
                return Err("the device node was replaced".into());
            }
        }
        // An input is left alone (a file named by --metrics-file or -P without being an
        // input may be replaced: in the watching modes, or when -M takes the operands).
        let other_mode = args.iter().any(|a| {
            ["-M", "-R", "-Q", "-d"].contains(&a.as_str()) || a.starts_with("--pipeline=")
        });
        let owned = |p: &str| {
            args.windows(2)
                .any(|w| (w[0] == "--metrics-file" || w[0] == "-P") && w[1] == p)
        };
        for (path, bytes) in [(&input, &input_bytes), (&small, &small_bytes)] {
            if (!owned(s(path)) || !other_mode) && std::fs::read(path).ok().as_ref() != Some(bytes)
            {
                return Err(format!("{} was changed", s(path)));
            }
        }
        Ok(())
    };
    let words: Vec<Vec<String>> = [
        &["-p"][..],
        &["-q"],
        &["-l"],
        &["-0"],
        &["-n"],
        &["-b"],
        &["-v"],
        &["-E"],
        &["-S"],
        &["-C"],
        &["-W"],
        &["-X"],
        &["-k"],
        &["--each"],
        &["--log"],
        &["--json"],
        &["--pipeline"],
        &["-s", "1k"],
        &["-s", "@/nonexistent"],
        &["-s", "0x"],
        &["-L", "10M"],
        &["-i", "0.1"],
        &["-A", "1e3"],
        &["-F", "%b %r"],
        &["-N", "name"],
        &["-o", s(&out)],
        &["-o", "/nonexistent/out"],
        &["--tee", s(&tee)],
        &["--tee", "/dev/full"],
        &["--tee", "/nonexistent/tee"],
        &["--tee-error", "exit"],
        &["--tee-error", "sometimes"],
        &["-P", "/nonexistent/pid"],
        &["-U", "-"],
        &["-R", "999999"],
        &["-Q", "999999"],
        &["-d", "999999"],
        &["--pipeline=999999"],
        &["-M", "out", "--", "cat"],
        &["-M", "in", "--", "sh", "-c", "exit 5"],
        &["-M", "out", "--", "/nonexistent/cmd"],
        &["-Z"],
        &["--nope"],
        &["-%"],
    ]
    .iter()
    .map(|w| w.iter().map(|s| s.to_string()).collect())
    .chain(odd_words)
    .collect();
    let word = prop::sample::select(words);
    let file = prop::sample::select(files.to_vec()).prop_map(|f| vec![f]);
    let line = (
        prop::collection::vec(prop_oneof![3 => word, 1 => file], 0..5),
        0..12usize,
    )
        .prop_map(|(mut parts, at)| {
            // One --json among rpv's options, between two words (before a `--`: what
            // follows is -M's command; not as the value of a -Z that lacks one), and no
            // --log, which would win over it.
            parts.retain(|p| p[0] != "--log");
            let dashes = parts
                .iter()
                .position(|p| p.iter().any(|a| a == "--"))
                .unwrap_or(parts.len());
            parts.truncate(dashes + 1); // the command's words are the last
            let mut at = at.min(dashes);
            // (Each -Z takes the next word as its value: step back over a run of them.)
            while at > 0 && parts[at - 1] == ["-Z"] {
                at -= 1;
            }
            parts.insert(at, vec!["--json".to_string()]);
            parts.concat()
        });
    let mut runner = TestRunner::new(Config {
        cases: 48,
        failure_persistence: None,
        ..Config::default()
    });
    let runs = std::cell::RefCell::new(Vec::new());
    runner
        .run(&line, |args| {
            let what = format!("{args:?}");
            // Each case starts from the planted objects as made (after a failing case, so
            // that the shrunk case is the one that changed them).
            if unchanged(&args).is_err() {
                restore();
            }
            let mut child = rpv(&[])
                .args(&args)
                .stdin(std::fs::File::open(&small).unwrap())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let status = crate::util::wait_within(&mut child, crate::util::PATIENCE, &what);
            let text = crate::util::stderr_of(&mut child);
            prop_assert!(!text.contains("panicked"), "{what}: {text}");
            let _ = objects(&what, text.as_bytes(), status.code());
            if let Err(e) = unchanged(&args) {
                prop_assert!(false, "{what}: {e}\n{text}");
            }
            runs.borrow_mut().push((what, text));
            Ok(())
        })
        .unwrap();
    validate_all(&runs.into_inner());
}

/// `--log`: the set-up's messages carry the time stamp too, and a name's control
/// characters cannot break a line.
#[test]
fn log_setup_messages_are_time_stamped_lines() {
    let dir = Dir::new();
    let input = dir.file("in", &data(1_000, 57));
    let bad = format!("{}/new\nline\x1b[2J/x", s(&dir.dir.path().join("missing")));
    for args in [
        vec!["--log", "-o", bad.as_str(), s(&input)],
        vec!["--log", "--tee", bad.as_str(), s(&input)],
        vec!["--log", "--pipeline=999999"],
        vec!["--log", "-A1e3", s(&input)],
    ] {
        let out = rpv(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?}");
        let text = String::from_utf8(out.stderr).unwrap();
        assert!(!text.contains('\x1b'), "{args:?}: {text:?}");
        for line in text.lines() {
            let stamp = line.get(..25).unwrap_or_default();
            assert!(
                crate::json::iso8601_with_offset(stamp) && line[25..].starts_with(" rpv: "),
                "{args:?}: a time-stamped message: {line:?}"
            );
        }
    }
}

/// On a terminal, a file name's control characters in a message are shown escaped (an
/// escape sequence in a name must not clear the screen or set the title).
#[test]
fn messages_on_a_terminal_show_control_characters_escaped() {
    let dir = Dir::new();
    let input = dir.file("in", &data(1_000, 58));
    let script = format!(
        "\"$RPV\" -o \"$(printf '{}/a\\033]0;owned\\007b')/x\" {} > /dev/null; echo \"status $?\"",
        s(&dir.dir.path().join("missing")),
        s(&input)
    );
    let (status, terminal) =
        crate::terminal::bash_on_terminal(&script, 200, 10, false, &[], |_| {});
    assert!(status.success());
    let (rows, bytes, _) = terminal.finish();
    let screen = rows.join("\n");
    assert!(
        screen.contains("/a\\e]0;owned\\x07b/x: No such file or directory"),
        "{screen}"
    );
    assert!(screen.contains("status 2"), "{screen}");
    assert!(
        !bytes.windows(4).any(|w| w == b"\x1b]0;"),
        "no raw title sequence reached the terminal"
    );
}

/// `--json` objects name their time in RFC 3339 UTC, close to now.
#[test]
fn every_object_carries_the_wall_clock_time() {
    let before = std::time::SystemTime::now();
    let out = rpv(&["--json", "/nonexistent/in"])
        .stdout(Stdio::null())
        .output()
        .unwrap();
    let after = std::time::SystemTime::now();
    let objects = objects("time", &out.stderr, out.status.code());
    let secs = |t: std::time::SystemTime| {
        t.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64
    };
    for o in &objects {
        let time = o["time"].as_str().unwrap_or_else(|| panic!("a time: {o}"));
        let out = Command::new("date")
            .args(["-u", "-d", time, "+%s"])
            .output()
            .unwrap();
        let at: i64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
        assert!(
            at >= secs(before) && at <= secs(after) + 1,
            "{time} between the start and the end of the run"
        );
        assert!(time.ends_with('Z') && time.len() == 24, "{time}");
    }
}

/// A pipe copied to `--tee` outputs takes the fan-out path, and the test hooks' `trace`
/// objects (here: the output's first splice is refused, so it falls back to read/write):
/// both are values the schema lists.
#[test]
fn the_fanout_path_and_trace_objects_are_in_the_schema() {
    let dir = Dir::new();
    let bytes = data(300_000, 59);
    let copy = dir.path("copy");
    let mut cmd = rpv(&["--json", "--tee", s(&copy)]);
    cmd.env("RPV_TEST_TRACE", "1")
        .env("RPV_TEST_FAIL_TEE_AT", "1");
    let out = crate::util::run_with_input(cmd, &bytes);
    assert!(out.status.success(), "{}", crate::util::err(&out));
    assert_eq!(out.stdout, bytes);
    assert_eq!(std::fs::read(&copy).unwrap(), bytes);
    let objects = objects("fan-out", &out.stderr, out.status.code());
    assert!(
        of_type(&objects, "input")
            .iter()
            .any(|o| o["event"] == "path" && o["path"] == "Fanout"),
        "{objects:#?}"
    );
    let fell_back = format!("trace: --tee {}: ReadWrite", s(&copy));
    assert!(
        of_type(&objects, "trace")
            .iter()
            .any(|o| o["text"] == fell_back.as_str()),
        "{objects:#?}"
    );
    validate_all(&[("fan-out".into(), String::from_utf8(out.stderr).unwrap())]);
}

/// `--help`, `--version` and `--completions` with `--json`: stdout as without it, and
/// stderr exactly one `end` (status 0).
#[test]
fn help_version_and_completions_with_json_end_with_one_end() {
    let mut runs = Vec::new();
    for args in [&["-V"][..], &["-h"], &["--completions", "bash"]] {
        let plain = rpv(args).output().unwrap();
        let mut with_json = vec!["--json"];
        with_json.extend(args);
        let out = rpv(&with_json).output().unwrap();
        let what = format!("{with_json:?}");
        assert_eq!(out.status.code(), Some(0), "{what}");
        assert!(!plain.stdout.is_empty(), "{what}");
        assert_eq!(out.stdout, plain.stdout, "{what}: stdout as without --json");
        let objects = objects(&what, &out.stderr, out.status.code());
        assert_eq!(objects.len(), 1, "{what}: only the end: {objects:#?}");
        runs.push((what, String::from_utf8(out.stderr).unwrap()));
    }
    validate_all(&runs);
}

/// `errno` is the system error behind a message: `ESRCH` for a process that does not exist
/// (`--pipeline=PID`, `-d PID`), `ENOENT` for a descriptor it does not have (`-d PID:FD`) or
/// a `--metrics-file` directory that does not exist.
#[test]
fn messages_carry_the_errno_behind_them() {
    let mut gone = Command::new("true").spawn().unwrap();
    gone.wait().unwrap();
    let gone = gone.id().to_string();
    let mut alive = Command::new("sleep").arg("30").spawn().unwrap();
    let fd = format!("{}:999", alive.id());
    let pipeline = format!("--pipeline={gone}");
    let cases: [(&[&str], i32); 4] = [
        (&["--json", &pipeline], libc::ESRCH),
        (&["--json", "-d", &gone], libc::ESRCH),
        (&["--json", "-d", &fd], libc::ENOENT),
        (
            &["--json", "--metrics-file", "/nonexistent/m.prom"],
            libc::ENOENT,
        ),
    ];
    let mut runs = Vec::new();
    for (args, errno) in cases {
        let what = format!("{args:?}");
        let out = rpv(args).stdin(Stdio::null()).output().unwrap();
        let objects = objects(&what, &out.stderr, out.status.code());
        let messages = of_type(&objects, "message");
        assert_eq!(messages.len(), 1, "{what}: {messages:#?}");
        assert_eq!(messages[0]["errno"], errno, "{what}: {messages:#?}");
        runs.push((what, String::from_utf8(out.stderr).unwrap()));
    }
    let _ = alive.kill();
    let _ = alive.wait();
    validate_all(&runs);
}

/// Times never go back: a message of the set-up (held until the `start` is written, like
/// the inline `--pipeline` warning outside a pipeline) carries no earlier `time` than the
/// `start` before it.
#[test]
fn json_times_never_go_back() {
    let dir = Dir::new();
    let input = dir.file("in", &data(300_000, 52));
    for _ in 0..5 {
        let out = rpv(&["--json", "--pipeline", "-L", "2M", "-i", "0.05", s(&input)])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .output()
            .unwrap();
        let objects = objects("--pipeline", &out.stderr, out.status.code());
        assert!(
            objects.iter().any(|o| o["type"] == "message"),
            "{objects:#?}"
        );
        let times: Vec<&str> = objects
            .iter()
            .map(|o| o["time"].as_str().unwrap())
            .collect();
        assert!(
            times.windows(2).all(|w| w[0] <= w[1]),
            "times in order: {objects:#?}"
        );
    }
}
