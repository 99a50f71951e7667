//! Property tests through the binary: random transfer command lines on random data. rpv
//! never panics or dies by a signal; a refused command line is one message and status 64
//! with nothing written; and a transfer that succeeds copies its input exactly (unless the
//! options ask for less: `-S`, `-X`).

use std::process::Stdio;

use proptest::prelude::*;

use crate::util::{data, exit_within, Dir};

/// Options of a transfer, with values that are fine, odd or wrong.
fn option() -> impl Strategy<Value = Vec<String>> {
    let switch = prop::sample::select(vec![
        "-p", "-t", "-e", "-I", "-r", "-a", "-b", "-8", "-k", "-T", "-n", "-q", "-g", "-l", "-0",
        "-v", "-f", "-C", "-E", "-S", "-Y", "-K", "-O", "-X", "-W",
    ])
    .prop_map(|s| vec![s.to_string()]);
    let valued = (
        prop::sample::select(vec![
            "-A", "-F", "-D", "-s", "-i", "-m", "-w", "-H", "-N", "-u", "-x", "-L", "-B", "-Z",
        ]),
        prop_oneof![
            prop::sample::select(vec![
                "0",
                "1",
                "7",
                "4096",
                "1k",
                "64K",
                "1M",
                "1.5",
                "0,5",
                "1T",
                "18446744073709551615",
                "18446744073709551616",
                "4294967296",
                "-1",
                "1e3",
                "",
                "%b %p %e",
                "%{sgr:red}%N%{progress}",
                "block",
                "window:%b",
                "windowtitel",
                "日本",
            ])
            .prop_map(str::to_owned),
            "[0-9]{1,22}[kKmM]?",
        ],
    )
        .prop_map(|(o, v)| vec![o.to_string(), v]);
    prop_oneof![3 => switch, 2 => valued]
}

/// What one run did.
struct Ran {
    code: Option<i32>,
    stdout: Vec<u8>,
    stderr: String,
    timed_out: bool,
}

/// Runs rpv with `args` on `input` (a file operand, or stdin), at most `secs` seconds.
fn run(args: &[String], input: &[u8], as_file: bool, secs: u64) -> Ran {
    let dir = Dir::new();
    let path = dir.file("in", input);
    let out_path = dir.path("out");
    let err_path = dir.path("err");
    let mut cmd = crate::util::rpv(&[]);
    cmd.args(args);
    if as_file {
        cmd.arg("--").arg(&path).stdin(Stdio::null());
    } else {
        cmd.stdin(std::fs::File::open(&path).unwrap());
    }
    let mut child = cmd
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .unwrap();
    let mut timed_out = false;
    let status = match exit_within(&mut child, secs as f64) {
        Some(status) => status,
        None => {
            // A slow -L or a -D delay: not a failure by itself.
            let _ = child.kill();
            timed_out = true;
            child.wait().unwrap()
        }
    };
    Ran {
        code: status.code(),
        stdout: std::fs::read(&out_path).unwrap(),
        stderr: String::from_utf8_lossy(&std::fs::read(&err_path).unwrap()).into_owned(),
        timed_out,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 120, ..ProptestConfig::default() })]

    #[test]
    fn random_transfers_copy_exactly_or_say_why(
        options in prop::collection::vec(option(), 0..6),
        len in prop_oneof![0..5000usize, 60_000..300_000usize],
        seed in any::<u64>(),
        as_file in any::<bool>(),
    ) {
        let args: Vec<String> = options.concat();
        let input = data(len, seed);
        let ran = run(&args, &input, as_file, 10);
        prop_assert!(!ran.stderr.contains("panicked"), "{args:?}: {}", ran.stderr);
        if ran.timed_out {
            return Ok(());
        }
        let code = ran.code;
        prop_assert!(code.is_some(), "{args:?}: killed by a signal");
        match code.unwrap() {
            64 => {
                prop_assert!(ran.stdout.is_empty(), "{args:?}");
                prop_assert!(ran.stderr.starts_with("rpv: "), "{args:?}: {}", ran.stderr);
                let lines = ran.stderr.lines().count();
                let with_try = ran.stderr.contains("Try `rpv --help'");
                prop_assert!(lines == 1 || (lines == 2 && with_try), "{args:?}: {}", ran.stderr);
            }
            0 => {
                let partial = args.iter().any(|a| a == "-S" || a == "-X");
                if !partial {
                    prop_assert!(ran.stdout == input, "{args:?}: output differs ({} of {} bytes)",
                        ran.stdout.len(), input.len());
                }
            }
            other => prop_assert!(false, "{args:?}: status {other}: {}", ran.stderr),
        }
    }
}
