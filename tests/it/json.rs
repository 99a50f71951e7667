//! `--json`, `--log` and `--each` through the binary: real output validated against the
//! published schema, totals equal to what went through, the stall seen and recovered from.

use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::Value;

use crate::util::{data, rpv, s, text, Dir};

/// The schema shipped in docs/.
const SCHEMA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/json.schema.json");

/// A Python with the `jsonschema` package (Debian's python3-jsonschema; CI installs it).
pub fn python_with_jsonschema() -> Option<&'static str> {
    static FOUND: OnceLock<Option<&'static str>> = OnceLock::new();
    *FOUND.get_or_init(|| {
        ["/usr/bin/python3", "python3"].into_iter().find(|python| {
            Command::new(python)
                .args(["-c", "import jsonschema"])
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        })
    })
}

/// Validates every line of `ndjson` against the schema with Python's `jsonschema`
/// (Draft 2020-12); the errors, one line each, or nothing.
pub fn schema_errors(ndjson: &str) -> Vec<String> {
    let Some(python) = python_with_jsonschema() else {
        eprintln!("json: no Python jsonschema module (apt-get install python3-jsonschema): schema not checked");
        return Vec::new();
    };
    let script = "import json, sys, jsonschema\n\
        schema = json.load(open(sys.argv[1]))\n\
        jsonschema.Draft202012Validator.check_schema(schema)\n\
        v = jsonschema.Draft202012Validator(schema)\n\
        for n, line in enumerate(sys.stdin, 1):\n\
        \x20   for e in v.iter_errors(json.loads(line)):\n\
        \x20       print(f'line {n}: {e.message} at {list(e.path)}')\n";
    let mut child = Command::new(python)
        .args(["-c", script, SCHEMA])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python");
    let mut stdin = child.stdin.take().unwrap();
    let input = ndjson.to_string();
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        let _ = stdin.write_all(input.as_bytes());
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(out.status.success(), "the validator failed");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// Parses NDJSON, validating every object against the schema; checks start first, end last.
#[track_caller]
pub(crate) fn parse_ndjson(stderr: &[u8]) -> Vec<Value> {
    let text = String::from_utf8(stderr.to_vec()).expect("UTF-8");
    assert!(text.ends_with('\n'), "whole lines: {text:?}");
    let objects: Vec<Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect();
    let errors = schema_errors(&text);
    assert!(errors.is_empty(), "{errors:#?}\n{text}");
    assert_eq!(
        objects.first().map(|o| &o["type"]),
        Some(&Value::from("start"))
    );
    assert_eq!(
        objects.last().map(|o| &o["type"]),
        Some(&Value::from("end"))
    );
    let ends = objects.iter().filter(|o| o["type"] == "end").count();
    assert_eq!(ends, 1, "one end object");
    objects
}

pub(crate) fn of_type<'a>(objects: &'a [Value], kind: &str) -> Vec<&'a Value> {
    objects.iter().filter(|o| o["type"] == kind).collect()
}

#[test]
fn transfer_objects_follow_the_schema_and_the_end_has_the_exact_totals() {
    let dir = Dir::new();
    let a = data(700_000, 31);
    let b = data(1_234, 32);
    let (pa, pb) = (dir.file("a", &a), dir.file("b", &b));
    let out = dir.path("out");
    let missing = dir.path("missing");
    let run = rpv(&[
        "--json",
        "-i",
        "0.1",
        "-L",
        "2M",
        "-o",
        s(&out),
        s(&pa),
        s(&missing),
        s(&pb),
    ])
    .output()
    .unwrap();
    assert_eq!(run.status.code(), Some(2));
    let objects = parse_ndjson(&run.stderr);
    let start = &objects[0];
    assert_eq!(start["mode"], "transfer");
    assert_eq!(start["unit"], "bytes");
    assert_eq!(start["size"], (a.len() + b.len()) as u64);
    assert_eq!(start["inputs"][0]["size"], a.len() as u64);
    assert_eq!(start["inputs"][1]["size"], Value::Null);
    let progress = of_type(&objects, "progress");
    assert!(progress.len() >= 2, "{} progress objects", progress.len());
    let mut last = 0;
    // `inputs` holds the inputs opened so far: empty only in an update that came before the
    // first input was opened (a loaded machine can start the data thread that late).
    let mut opened = false;
    for o in &objects {
        if o["type"] == "input" && o["event"] == "opened" {
            opened = true;
        }
        if o["type"] != "progress" {
            continue;
        }
        let p = o;
        let bytes = p["bytes"].as_u64().unwrap();
        assert!(bytes >= last, "amounts never go back");
        last = bytes;
        assert_eq!(p["meter"], "transfer");
        if opened {
            assert!(!p["inputs"].as_array().unwrap().is_empty(), "{p}");
        }
    }
    assert!(opened, "no input was opened");
    let messages = of_type(&objects, "message");
    assert_eq!(messages.len(), 1, "{messages:?}");
    assert_eq!(messages[0]["input"], 1);
    assert_eq!(messages[0]["kind"], "open_input");
    assert_eq!(messages[0]["errno"], libc::ENOENT);
    assert_eq!(messages[0]["level"], "error");
    let done: Vec<u64> = of_type(&objects, "input")
        .iter()
        .filter(|o| o["event"] == "done")
        .map(|o| o["bytes"].as_u64().unwrap())
        .collect();
    assert_eq!(done, [a.len() as u64, b.len() as u64]);
    let end = objects.last().unwrap();
    let copied = std::fs::read(&out).unwrap();
    assert_eq!(copied, [a.clone(), b.clone()].concat());
    assert_eq!(
        end["bytes"],
        copied.len() as u64,
        "the end total is what went through"
    );
    assert_eq!(end["status"], 2);
    assert_eq!(end["interrupted"], false);
    let inputs = end["inputs"].as_array().unwrap();
    assert_eq!(inputs.len(), 3);
    assert_eq!(inputs[0]["bytes"], a.len() as u64);
    assert_eq!(inputs[0]["percent"], 100.0);
    assert_eq!(inputs[1]["bytes"], 0);
    assert!(inputs[1]["error"]
        .as_str()
        .unwrap()
        .contains("No such file"));
    assert_eq!(inputs[2]["bytes"], b.len() as u64);
    assert!(end["meters"][0]["rate_stats"]["avg"].as_f64().unwrap() > 0.0);
}

#[test]
fn line_mode_counts_lines_and_quiet_keeps_only_start_messages_and_end() {
    let dir = Dir::new();
    let input = dir.file("t", &text(20_000));
    let run = rpv(&["--json", "-l", "-q", s(&input)])
        .stdout(Stdio::null())
        .output()
        .unwrap();
    assert!(run.status.success());
    let objects = parse_ndjson(&run.stderr);
    assert!(
        of_type(&objects, "progress").is_empty(),
        "-q: no progress objects"
    );
    assert_eq!(objects[0]["unit"], "lines");
    let end = objects.last().unwrap();
    assert_eq!(end["lines"], 20_000);
    assert_eq!(end["size"], 20_000);
}

#[test]
fn monitor_both_and_watched_descriptors_have_a_meter_each() {
    let dir = Dir::new();
    let input = dir.file("in", &data(300_000, 33));
    let run = rpv(&["--json", "-i", "0.1", "-L", "1M", "-M", "both", "--", "cat"])
        .stdin(std::fs::File::open(&input).unwrap())
        .stdout(Stdio::null())
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let objects = parse_ndjson(&run.stderr);
    assert_eq!(objects[0]["mode"], "monitor");
    let sides: Vec<&Value> = of_type(&objects, "progress")
        .iter()
        .map(|p| &p["meter"])
        .collect();
    assert!(sides.contains(&&Value::from("monitor_in")), "{sides:?}");
    assert!(sides.contains(&&Value::from("monitor_out")), "{sides:?}");
    let end = objects.last().unwrap();
    let meters = end["meters"].as_array().unwrap();
    assert_eq!(meters.len(), 2);
    for m in meters {
        assert_eq!(m["bytes"], 300_000, "{m}");
    }

    // -d: one object per descriptor, with its pid, fd and path.
    let file = dir.file("watched", &data(1 << 20, 34));
    let mut holder = Command::new("bash")
        .arg("-c")
        .arg(format!("exec 7<{}; sleep 1.5", s(&file)))
        .spawn()
        .unwrap();
    let fd7 = format!("/proc/{}/fd/7", holder.id());
    crate::util::wait_until("bash to open descriptor 7", crate::util::PATIENCE, || {
        std::fs::read_link(&fd7).is_ok()
    });
    let target = format!("{}:7", holder.id());
    let run = rpv(&["--json", "-i", "0.2", "-d", &target])
        .output()
        .unwrap();
    let _ = holder.wait();
    let objects = parse_ndjson(&run.stderr);
    assert_eq!(objects[0]["mode"], "watch");
    let progress = of_type(&objects, "progress");
    assert!(!progress.is_empty());
    assert_eq!(progress[0]["meter"], "descriptor");
    assert_eq!(progress[0]["fd"], 7);
    assert_eq!(progress[0]["path"], s(&file));
    assert_eq!(progress[0]["size"], 1 << 20);
}

/// A source that sends, stops for 4 s and sends again: `stalled` during the pause with no
/// ETA, and afterwards an ETA close to the truth within a few intervals.
#[test]
fn a_stall_is_reported_and_the_eta_recovers_after_it() {
    let _cores = crate::util::cores_free();
    let script = format!(
        "(head -c 1M /dev/zero; sleep 4; head -c 3M /dev/zero) | {} --json -i 0.25 -s 4M -L 2M \
         > /dev/null",
        env!("CARGO_BIN_EXE_rpv")
    );
    // The ETA is checked against the time the rest takes at the limit: the pipeline must
    // get the CPU when it asks (a source starved for a second is a stall of its own).
    crate::util::on_time();
    let run = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let objects = parse_ndjson(&run.stderr);
    let progress = of_type(&objects, "progress");
    let stalled: Vec<&&Value> = progress.iter().filter(|p| p["stalled"] == true).collect();
    assert!(
        stalled.len() >= 2,
        "seen stalled during the pause: {progress:#?}"
    );
    let mut previous = 0.0;
    for p in &stalled {
        assert_eq!(p["eta"], Value::Null, "no made-up ETA while stalled: {p}");
        assert_eq!(p["bytes"], 1 << 20);
        let for_ = p["stalled_for"].as_f64().unwrap();
        assert!(for_ >= 2.0 && for_ > previous, "the stall grows: {for_}");
        previous = for_;
    }
    // After the stall: the first progress object past 1 MiB that is at least two intervals
    // old must have an ETA within 50 % of the time really left (3 MiB at 2 MiB/s).
    let resumed_at = progress
        .iter()
        .position(|p| p["bytes"].as_u64().unwrap() > 1 << 20)
        .expect("data after the stall");
    let later = &progress[(resumed_at + 2).min(progress.len() - 1)];
    assert_eq!(later["stalled"], false, "{later}");
    let left = (4u64 << 20).saturating_sub(later["bytes"].as_u64().unwrap()) as f64;
    let truth = left / f64::from(2u32 << 20);
    let eta = later["eta"].as_f64().expect("an ETA again");
    assert!(
        (eta - truth).abs() <= truth * 0.5 + 0.3,
        "ETA {eta:.2} s with {truth:.2} s left: {later}"
    );
}

/// Timestamped lines, no carriage returns or escapes, nothing while nothing moves.
#[test]
fn log_lines_are_plain_and_skip_idle_intervals() {
    let script = format!(
        "(head -c 500k /dev/zero; sleep 2; head -c 500k /dev/zero) | {} --log -i 0.2 -s 1000k \
         -L 1M /dev/stdin /nonexistent > /dev/null",
        env!("CARGO_BIN_EXE_rpv")
    );
    let run = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(2));
    let text = String::from_utf8(run.stderr).unwrap();
    assert!(!text.contains('\r') && !text.contains('\x1b'), "{text:?}");
    let lines: Vec<&str> = text.lines().collect();
    for line in &lines {
        let (date, rest) = line.split_at(25);
        assert!(
            iso8601_with_offset(date),
            "starts with the local time and its UTC offset: {line:?}"
        );
        assert!(rest.starts_with(' '), "{line:?}");
    }
    assert!(
        lines.last().unwrap().contains("1000KiB") && lines.last().unwrap().contains("100%"),
        "a final line: {lines:#?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("rpv: failed to read file: /nonexistent")),
        "messages are lines of the log: {lines:#?}"
    );
    // 2 s idle at -i 0.2: about 10 updates with nothing new, none of them logged.
    let idle = lines.iter().filter(|l| l.contains(" 500KiB ")).count();
    assert!(
        idle <= 1,
        "one line for 500 KiB, not one per idle update: {lines:#?}"
    );
}

/// `YYYY-MM-DDTHH:MM:SS+HH:MM` (or `-HH:MM`): ISO 8601 local time with its UTC offset.
pub fn iso8601_with_offset(text: &str) -> bool {
    let b = text.as_bytes();
    let digits = |range: std::ops::Range<usize>| range.into_iter().all(|i| b[i].is_ascii_digit());
    b.len() == 25
        && digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && b[10] == b'T'
        && digits(11..13)
        && b[13] == b':'
        && digits(14..16)
        && b[16] == b':'
        && digits(17..19)
        && (b[19] == b'+' || b[19] == b'-')
        && digits(20..22)
        && b[22] == b':'
        && digits(23..25)
}

#[test]
fn log_without_interval_writes_every_ten_seconds_so_a_short_run_has_one_line() {
    let dir = Dir::new();
    let input = dir.file("in", &data(3 << 20, 35));
    let run = rpv(&["--log", "-L", "2M", s(&input)])
        .stdout(Stdio::null())
        .output()
        .unwrap();
    assert!(run.status.success());
    let text = String::from_utf8(run.stderr).unwrap();
    assert_eq!(text.lines().count(), 1, "{text:?}");
    assert!(
        text.contains("3.00MiB") && text.contains("100%"),
        "{text:?}"
    );
}

/// `--each`: a row per input (its error if it cannot be read) and a total row.
#[test]
fn each_shows_a_row_per_input_and_a_total() {
    let dir = Dir::new();
    let a = dir.file("first", &data(400_000, 36));
    let b = dir.file("second", &data(100_000, 37));
    let missing = dir.path("gone");
    let run = rpv(&[
        "--each",
        "-f",
        "-i",
        "0.1",
        "-L",
        "2M",
        s(&a),
        s(&missing),
        s(&b),
    ])
    .stdout(Stdio::null())
    .output()
    .unwrap();
    assert_eq!(run.status.code(), Some(2));
    let text = String::from_utf8_lossy(&run.stderr).into_owned();
    let last_round: Vec<&str> = text
        .split(['\r', '\n'])
        .map(|l| l.trim_start_matches("\x1b[A"))
        .filter(|l| !l.trim().is_empty())
        .collect();
    let final_of = |name: &str| -> String {
        last_round
            .iter()
            .rev()
            .find(|l| l.contains(name))
            .unwrap_or_else(|| panic!("no row for {name}: {last_round:#?}"))
            .to_string()
    };
    assert!(final_of(s(&a)).contains("390KiB") && final_of(s(&a)).contains("100%"));
    assert!(final_of(s(&b)).contains("97.7KiB") && final_of(s(&b)).contains("100%"));
    assert!(final_of(s(&missing)).contains("No such file or directory"));
    let total = final_of("total:");
    assert!(
        total.contains("488KiB") && total.contains("100%"),
        "{total}"
    );
}

/// `--json` with `--pipeline=PID`: one object per stage, and the summary at the end.
#[test]
fn pipeline_stages_are_objects_too() {
    let mut pipeline = Command::new("sh")
        .arg("-c")
        .arg("head -c 64M /dev/zero | gzip -1 | cat > /dev/null")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let children = format!("/proc/{0}/task/{0}/children", pipeline.id());
    crate::util::wait_until(
        "the shell to start its pipeline",
        crate::util::PATIENCE,
        || std::fs::read_to_string(&children).is_ok_and(|c| c.split_whitespace().count() == 3),
    );
    let target = format!("--pipeline={}", pipeline.id());
    let mut watcher = rpv(&["--json", "-i", "0.2", &target])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Its objects are read as they come: a pipeline that runs for a while (a loaded
    // machine) gives more than a pipe holds, and a watcher whose stderr is full cannot end.
    let mut err = watcher.stderr.take().expect("stderr piped");
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut err, &mut text);
        text
    });
    let _ = pipeline.wait();
    let status =
        crate::util::wait_within(&mut watcher, crate::util::PATIENCE, "the pipeline watcher");
    let stderr = reader.join().unwrap();
    assert!(status.success(), "{stderr}");
    let objects = parse_ndjson(stderr.as_bytes());
    assert_eq!(objects[0]["mode"], "pipeline");
    let stages: Vec<&Value> = of_type(&objects, "progress")
        .into_iter()
        .filter(|p| p["meter"] == "stage")
        .collect();
    assert!(stages
        .iter()
        .any(|s| s["command"].as_str().unwrap_or("").starts_with("gzip")));
    let summary = of_type(&objects, "summary");
    assert_eq!(summary.len(), 1);
    assert!(summary[0]["text"]
        .as_str()
        .unwrap()
        .starts_with("bottleneck: "));
}

/// The validation above really checks: an object that breaks the schema is caught.
#[test]
fn the_schema_check_catches_a_broken_object() {
    if python_with_jsonschema().is_none() {
        eprintln!("no Python jsonschema module: skipped");
        return;
    }
    let errors = schema_errors("{\"type\": \"end\", \"status\": 300}\n");
    assert!(
        !errors.is_empty(),
        "an end without its fields and a status past 255"
    );
    let gone = "{\"type\": \"output\", \"event\": \"reader_gone\", \"time\": \"2026-11-24T10:08:05.123Z\"}\n";
    assert!(schema_errors(gone).is_empty());
    assert!(
        !schema_errors(&gone.replace("\"time\"", "\"unknown\": 1, \"time\"")).is_empty(),
        "a field the schema does not know"
    );
    assert!(
        !schema_errors(&gone.replace("05.123Z", "05+01:00")).is_empty(),
        "a time stamp that is not UTC with milliseconds"
    );
}

/// `--tee` outputs have figures of their own: in `--json` (`outputs`) and as rows with
/// `--each`, where a failed output says why.
#[test]
fn tee_outputs_have_their_own_figures() {
    let dir = Dir::new();
    let bytes = data(300_000, 38);
    let input = dir.file("in", &bytes);
    let copy = dir.path("copy");
    let run = rpv(&[
        "--json",
        "-i",
        "0.1",
        "-L",
        "1M",
        "--tee",
        s(&copy),
        "--tee",
        "/dev/full",
        s(&input),
    ])
    .stdout(Stdio::null())
    .output()
    .unwrap();
    assert_eq!(
        run.status.code(),
        Some(16),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let objects = parse_ndjson(&run.stderr);
    let end = objects.last().unwrap();
    let outputs = end["outputs"].as_array().unwrap();
    assert_eq!(outputs.len(), 2, "{end}");
    assert_eq!(outputs[0]["meter"], "output");
    assert_eq!(outputs[0]["bytes"], bytes.len() as u64);
    assert_eq!(outputs[1]["bytes"], 0);
    assert_eq!(outputs[1]["done"], true);
    assert_eq!(std::fs::read(&copy).unwrap(), bytes);
    let progress = of_type(&objects, "progress");
    assert!(progress
        .iter()
        .all(|p| p["outputs"].as_array().is_some_and(|o| o.len() == 2)));

    // Wide enough for the paths as names (a third of the width each at most).
    let run = rpv(&[
        "--each",
        "-f",
        "-w",
        "200",
        "-i",
        "0.1",
        "--tee",
        s(&copy),
        "--tee",
        "/dev/full",
        s(&input),
    ])
    .stdout(Stdio::null())
    .output()
    .unwrap();
    let text = String::from_utf8_lossy(&run.stderr);
    let rows: Vec<&str> = text.split(['\r', '\n']).collect();
    let last = |needle: &str| {
        rows.iter()
            .rev()
            .find(|r| r.contains(needle))
            .copied()
            .unwrap_or("")
    };
    assert!(
        last(&format!("--tee {}", s(&copy))).contains("292KiB"),
        "{text}"
    );
    assert!(last("--tee /dev/full").contains("write failed"), "{text}");
}

/// Reads `child`'s stderr line by line on a thread: the lines so far, shared, and the
/// thread (which ends when stderr closes).
fn collect_lines(
    child: &mut std::process::Child,
) -> (
    std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    std::thread::JoinHandle<()>,
) {
    use std::io::BufRead;
    let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let stderr = child.stderr.take().unwrap();
    let shared = std::sync::Arc::clone(&lines);
    let thread = std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines() {
            shared.lock().unwrap().push(line.unwrap());
        }
    });
    (lines, thread)
}

/// Waits (at most 30 s) until one of `lines` satisfies `found`.
#[track_caller]
fn wait_for_line(lines: &std::sync::Mutex<Vec<String>>, found: impl Fn(&str) -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !lines.lock().unwrap().iter().any(|l| found(l)) {
        assert!(std::time::Instant::now() < deadline, "{lines:#?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// `-U` interrupted while it stores: nothing reached the output, and the `end` says so
/// (its totals are what reached the output, not what was stored).
#[test]
fn u_interrupted_while_storing_ends_with_the_totals_of_the_output() {
    use std::io::{Read, Write};
    let mut child = rpv(&["--json", "-i", "0.1", "-U", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&data(1 << 20, 40)).unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        stdout.read_to_end(&mut out).unwrap();
        out
    });
    let (lines, thread) = collect_lines(&mut child);
    wait_for_line(&lines, |l| {
        l.contains("\"type\":\"progress\"") && l.contains("\"bytes\":1048576")
    });
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let status = crate::util::wait_within(&mut child, crate::util::PATIENCE, "-U after SIGINT");
    drop(stdin);
    thread.join().unwrap();
    assert_eq!(status.code(), Some(32));
    assert!(reader.join().unwrap().is_empty(), "nothing was forwarded");
    let text = lines.lock().unwrap().join("\n") + "\n";
    let objects = parse_ndjson(text.as_bytes());
    assert!(of_type(&objects, "phase_end").is_empty(), "{text}");
    let end = objects.last().unwrap();
    assert_eq!(end["interrupted"], true);
    assert_eq!(end["bytes"], 0, "what reached the output: {end}");
    for figures in end["meters"].as_array().unwrap() {
        assert_eq!(figures["bytes"], 0, "{end}");
    }
    for figures in end["inputs"].as_array().unwrap() {
        assert_eq!(figures["bytes"], 0, "{end}");
        assert_eq!(figures["done"], false, "{end}");
    }
}

/// `--log` escapes names (`-N`, file names, `--each` rows, an input that cannot be read) as
/// the terminal does: one record per line, each starting with its time stamp, no escape.
#[test]
fn log_escapes_names_and_every_record_has_its_time_stamp() {
    let dir = Dir::new();
    let newline = dir.file("new\nline.bin", b"abc");
    let escape = dir.file("esc\x1b[31mred.bin", b"def");
    let missing = dir.path("gone\x1b]0;x\x07");
    for args in [
        vec!["--each", s(&newline), s(&escape), s(&missing)],
        vec!["-N", "x\ny\x1b[31m", s(&newline)],
    ] {
        let mut all = vec!["--log"];
        all.extend(&args);
        let run = rpv(&all).stdout(Stdio::null()).output().unwrap();
        let text = String::from_utf8(run.stderr).unwrap();
        assert!(!text.contains('\x1b') && !text.contains('\r'), "{text:?}");
        for line in text.lines() {
            assert!(
                line.len() > 25 && iso8601_with_offset(&line[..25]),
                "{args:?}: a record without its time stamp: {line:?} in {text:?}"
            );
        }
        if args[0] == "--each" {
            assert!(text.contains("new\\nline.bin: 3.00  B"), "{text}");
            assert!(text.contains("esc\\e[31mred.bin: 3.00  B"), "{text}");
            assert!(text.contains("gone\\e]0;x\\x07: "), "{text}");
        } else {
            assert!(text.contains(" x\\ny\\e[31m: 3.00  B"), "{text}");
        }
    }
}

/// `--each` interrupted by Ctrl-C: the row of the input being read shows how far it got,
/// never a full bar and 100 %; in `--json` its `done` event says `interrupted` and its
/// figures are not `done`.
#[test]
fn each_input_cut_short_by_an_interrupt_shows_its_real_percentage() {
    let dir = Dir::new();
    let input = dir.file("five", &data(5 << 20, 41));
    for json in [false, true] {
        let mode = if json { "--json" } else { "-f" };
        let mut child = rpv(&[mode, "--each", "-i", "0.1", "-L", "2M", s(&input)])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (lines, thread) = if json {
            collect_lines(&mut child)
        } else {
            // The rows end in \r: read raw chunks instead of lines.
            let shared = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
            let mut stderr = child.stderr.take().unwrap();
            let writer = std::sync::Arc::clone(&shared);
            let thread = std::thread::spawn(move || {
                use std::io::Read;
                let mut buf = [0u8; 4096];
                while let Ok(n @ 1..) = stderr.read(&mut buf) {
                    let text = String::from_utf8_lossy(&buf[..n]).into_owned();
                    writer.lock().unwrap().push(text);
                }
            });
            (shared, thread)
        };
        wait_for_line(&lines, |l| l.contains("MiB") || l.contains("\"bytes\":1"));
        // SAFETY: kill(2) on our own child.
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
        let status =
            crate::util::wait_within(&mut child, crate::util::PATIENCE, "--each after SIGINT");
        thread.join().unwrap();
        assert_eq!(status.code(), Some(32));
        let text = lines.lock().unwrap().join(if json { "\n" } else { "" });
        if json {
            let objects = parse_ndjson((text + "\n").as_bytes());
            let done: Vec<&Value> = of_type(&objects, "input")
                .into_iter()
                .filter(|o| o["event"] == "done")
                .collect();
            assert_eq!(done.len(), 1, "{objects:#?}");
            assert_eq!(done[0]["interrupted"], true, "{objects:#?}");
            let end = objects.last().unwrap();
            let figures = &end["inputs"][0];
            assert_eq!(figures["done"], false, "{end}");
            let percent = figures["percent"].as_f64().unwrap();
            assert!(percent > 0.0 && percent < 100.0, "{end}");
        } else {
            let row = text
                .split(['\r', '\n'])
                .rfind(|r| r.contains("five:"))
                .unwrap_or_else(|| panic!("{text:?}"))
                .to_string();
            assert!(!row.contains("100%"), "the real percentage: {row:?}");
            assert!(
                row.contains('%') && row.contains('>'),
                "a bar part done: {row:?}"
            );
        }
    }
}

/// `--log` with an inline `--pipeline` (rpv a stage of the pipeline it shows): at each
/// update the table comes first and rpv's own line after it, the order of the terminal.
#[test]
fn log_writes_the_pipeline_table_before_rpvs_own_line() {
    let dir = Dir::new();
    let input = dir.file("in", &data(3 << 20, 91));
    let out = Command::new("sh")
        .arg("-c")
        .arg(r#"cat "$1" | "$RPV" --pipeline --log -i 0.2 -L 4M | cat > /dev/null"#)
        .arg("sh")
        .arg(&input)
        .env("RPV", env!("CARGO_BIN_EXE_rpv"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .output()
        .expect("sh");
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stderr).into_owned();
    // Records without their time stamps.
    let records: Vec<&str> = text
        .lines()
        .map(|l| l.split_once(' ').map_or(l, |(_, rest)| rest))
        .collect();
    let own = |r: &str| r.contains("0:00:0") && r.contains('[');
    // The last update (the first ones may come before the stages are found): its table,
    // then rpv's own line.
    let last_own = records.iter().rposition(|r| own(r));
    let last_header = records.iter().rposition(|r| r.contains("PID COMMAND"));
    match (last_header, last_own) {
        (Some(header), Some(line)) => assert!(header < line, "{text}"),
        _ => panic!("no table or no line of rpv's own: {text}"),
    }
}
