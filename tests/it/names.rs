//! Every name escaped in every output (reliability-4 F8): a file name with an escape
//! sequence (ESC [31m), a right-to-left override (U+202E, which would show `txt.exe` as
//! `exe.txt` on a bidi-capable terminal) and a byte that is not UTF-8 reaches neither the
//! screen nor `--log` nor `--json` raw: the screen and the log show `\e` and `\u{202e}`,
//! `--json` gives the same string with `\u001b` and `\u202e` escapes, and the exact bytes
//! in `name_base64`.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::process::Stdio;

use crate::terminal::{openpty, Terminal};
use crate::util::{rpv, Dir};

/// The raw bytes of the hostile name.
const RAW: &[u8] = b"n\x1b[31m\xe2\x80\xaetxt.exe\xff";
/// How the screen and the log show it.
const SHOWN: &str = "n\\e[31m\\u{202e}txt.exe\u{fffd}";

/// A directory holding a 200 kB file with the hostile name; (dir, that file's name, the
/// same name with `missing` added, which does not exist). rpv runs in the directory.
fn hostile() -> (Dir, PathBuf, PathBuf) {
    let dir = Dir::new();
    let file = PathBuf::from(OsStr::from_bytes(RAW));
    std::fs::write(dir.dir.path().join(&file), vec![0u8; 200_000]).unwrap();
    let mut missing = RAW.to_vec();
    missing.extend_from_slice(b"missing");
    let missing = PathBuf::from(OsStr::from_bytes(&missing));
    (dir, file, missing)
}

/// `bytes` holds neither an ESC followed by `[31m` nor the UTF-8 of U+202E.
#[track_caller]
fn nothing_raw(bytes: &[u8], what: &str) {
    let text = String::from_utf8_lossy(bytes);
    assert!(
        !bytes.windows(5).any(|w| w == b"\x1b[31m"),
        "{what}: a raw escape sequence: {text:?}"
    );
    assert!(
        !bytes.windows(3).any(|w| w == "\u{202e}".as_bytes()),
        "{what}: a raw U+202E: {text:?}"
    );
}

#[test]
fn a_hostile_name_is_escaped_in_the_log() {
    let (dir, file, missing) = hostile();
    let out = rpv(&["--log", "--each", "-i", "0.1", "-L", "1M"])
        .args([&file, &missing])
        .current_dir(dir.dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .output()
        .unwrap();
    nothing_raw(&out.stderr, "--log");
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(text.contains(&format!(" {SHOWN}: ")), "{text}");
    assert!(
        text.contains(&format!(
            "failed to read file: {SHOWN}missing: No such file"
        )),
        "{text}"
    );
}

#[test]
fn a_hostile_name_is_escaped_in_the_json_and_kept_in_base64() {
    use base64::Engine as _;
    let (dir, file, missing) = hostile();
    let out = rpv(&["--json", "-i", "0.1", "-L", "1M"])
        .args([&file, &missing])
        .current_dir(dir.dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .output()
        .unwrap();
    nothing_raw(&out.stderr, "--json");
    let objects = crate::json::parse_ndjson(&out.stderr);
    let opened = objects
        .iter()
        .find(|o| o["type"] == "input" && o["event"] == "opened")
        .expect("an opened input");
    assert_eq!(opened["name"], "n\x1b[31m\u{202e}txt.exe\u{fffd}");
    let exact = base64::engine::general_purpose::STANDARD
        .decode(opened["name_base64"].as_str().expect("name_base64"))
        .unwrap();
    assert_eq!(exact, RAW);
}

#[test]
fn a_hostile_name_is_escaped_on_the_screen() {
    let (dir, file, missing) = hostile();
    let (master, slave) = openpty(140, 12);
    let terminal = Terminal::new(master, 140, 12, false);
    let mut child = rpv(&["--each", "-i", "0.1", "-L", "1M"])
        .args([&file, &missing])
        .current_dir(dir.dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(slave))
        .spawn()
        .unwrap();
    let status = crate::util::wait_within(
        &mut child,
        crate::util::PATIENCE,
        "rpv --each on a terminal",
    );
    assert_eq!(status.code(), Some(2));
    drop(child);
    let (rows, bytes, _) = terminal.finish();
    nothing_raw(&bytes, "the screen");
    // (The emulator keeps no U+FFFD: what precedes it is checked.)
    let shown = SHOWN.trim_end_matches('\u{fffd}');
    assert!(
        rows.iter()
            .any(|r| r.starts_with(&format!("rpv: failed to read file: {shown}"))),
        "{rows:#?}"
    );
    assert!(
        rows.iter()
            .any(|r| r.trim_start().starts_with(shown) && r.contains("100%")),
        "{rows:#?}"
    );
}
