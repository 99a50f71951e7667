//! The environment still reads the same after `prepare_process_title` moved it and a long
//! process title was written over its old area.
//!
//! A test of its own without the test harness (`harness = false`): the environment may only
//! be moved while the process has a single thread, and the harness runs tests on threads.

use std::ffi::OsString;

fn main() {
    let before: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    let home = std::env::var_os("HOME");
    assert!(!before.is_empty(), "cargo runs tests with an environment");
    let cmdline = std::fs::read("/proc/self/cmdline").unwrap();
    assert!(
        rpv::sys::prepare_process_title(),
        "single-threaded, with an environment right after the arguments: room is made"
    );
    assert!(rpv::sys::prepare_process_title(), "again: nothing to do");

    // Longer than the command line, shorter than command line + environment.
    let env_len: usize = before.iter().map(|(k, v)| k.len() + v.len() + 2).sum();
    let len = cmdline.len() + env_len / 2;
    let title: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
    assert!(rpv::sys::set_process_title(&title));
    let shown = std::fs::read("/proc/self/cmdline").unwrap();
    assert_eq!(shown.len(), len + 1, "the whole title and one NUL");
    assert_eq!(&shown[..len], &title[..]);

    let after: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    assert_eq!(after, before, "std::env reads the same variables");
    assert_eq!(std::env::var_os("HOME"), home);
    std::env::set_var("RPV_TITLE_ENV_TEST", "set after the move");
    assert_eq!(
        std::env::var("RPV_TITLE_ENV_TEST").as_deref(),
        Ok("set after the move")
    );

    // A title longer than all the room is cut to it, NUL included.
    let huge = vec![b'z'; cmdline.len() + env_len + 10_000];
    assert!(rpv::sys::set_process_title(&huge));
    let shown = std::fs::read("/proc/self/cmdline").unwrap();
    assert!(
        shown.len() < cmdline.len() + env_len + 64,
        "{}",
        shown.len()
    );
    assert!(shown[..shown.len() - 1].iter().all(|&b| b == b'z'));
    assert_eq!(std::env::vars_os().count(), before.len() + 1);

    // And a short one afterwards leaves nothing of the long ones behind.
    assert!(rpv::sys::set_process_title(b"short"));
    let shown = std::fs::read("/proc/self/cmdline").unwrap();
    assert_eq!(&shown[..6], b"short\0");
    assert!(shown[6..].iter().all(|&b| b == 0), "{shown:?}");
    println!("title_env: ok");
}
