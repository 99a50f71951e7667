//! What rpv must undo when it exits, however it exits: the files it made (the `-P` pid
//! file, the `-U -` temporary file), and the command `-M` started, which must not outlive
//! it. Exit paths that cannot unwind (an interrupt while the data thread is blocked) call
//! [`exit`], which removes the files and ends the command first.
//!
//! Ending the command ([`end_command`]): SIGTERM to it and to the processes under it (a
//! `sh -c` runs its commands as children), then, if any is still there after
//! [`COMMAND_GRACE_NS`], SIGKILL. The command is not reaped meanwhile, so its PID cannot be
//! reused; the processes under it are recognised by their start time.

use std::path::PathBuf;
use std::sync::Mutex;

use crate::ownfile::{self, Identity};
use crate::procfs::{self, parse_pids, ProcFile, Stat};
use crate::sys;

/// The files to remove at exit, with the identity of what rpv wrote at each path.
static FILES: Mutex<Vec<(PathBuf, Identity)>> = Mutex::new(Vec::new());

/// The command `-M` started and has not waited for yet: its PID and its command line.
static COMMAND: Mutex<Option<(u32, String)>> = Mutex::new(None);

/// How long the `-M` command has to end after SIGTERM before it gets SIGKILL.
pub(crate) const COMMAND_GRACE_NS: u64 = 1_000_000_000;

/// `-M`: the command rpv started (`pid`, its command line for messages), to end if rpv
/// ends before it.
pub(crate) fn register_command(pid: u32, command: String) {
    if let Ok(mut slot) = COMMAND.lock() {
        *slot = Some((pid, command));
    }
}

/// The command ended (it was waited for): nothing to end any more.
pub(crate) fn forget_command() {
    if let Ok(mut slot) = COMMAND.lock() {
        *slot = None;
    }
}

/// Ends the `-M` command if it is still running (see the module notes); returns what to
/// tell the user, or None if there was nothing to end.
pub(crate) fn end_command() -> Option<String> {
    let (pid, command) = COMMAND.lock().ok()?.take()?;
    if sys::child_ended(pid) {
        return None;
    }
    let family = descendants(pid);
    let _ = sys::send_signal(pid, libc::SIGTERM);
    for &(p, start) in &family {
        if same_process(p, start) {
            let _ = sys::send_signal(p, libc::SIGTERM);
        }
    }
    let running = || !sys::child_ended(pid) || family.iter().any(|&(p, s)| same_process(p, s));
    let deadline = sys::monotonic_ns() + COMMAND_GRACE_NS;
    while running() {
        if sys::monotonic_ns() >= deadline {
            let _ = sys::send_signal(pid, libc::SIGKILL);
            for &(p, start) in &family {
                if same_process(p, start) {
                    let _ = sys::send_signal(p, libc::SIGKILL);
                }
            }
            return Some(format!(
                "ended the command PID {pid} ({command}) with SIGKILL: it was still running \
                 a second after SIGTERM"
            ));
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    Some(format!(
        "ended the command PID {pid} ({command}) with SIGTERM"
    ))
}

/// The processes under `pid` (children, theirs, …) with their start times.
fn descendants(pid: u32) -> Vec<(u32, u64)> {
    let mut found = Vec::new();
    let mut queue = vec![pid];
    while let Some(parent) = queue.pop() {
        let Ok(tasks) = procfs::tasks(parent) else {
            continue;
        };
        for task in tasks {
            let children = procfs::read(parent, ProcFile::Children(task)).unwrap_or_default();
            for child in parse_pids(&String::from_utf8_lossy(&children)) {
                if found.len() < 4096 && !found.iter().any(|&(p, _)| p == child) {
                    if let Some(stat) = Stat::of(child) {
                        found.push((child, stat.start));
                        queue.push(child);
                    }
                }
            }
        }
    }
    found
}

/// Process `pid` is still the one that started at `start`, and not a zombie.
fn same_process(pid: u32, start: u64) -> bool {
    Stat::of(pid).is_some_and(|s| s.start == start && s.state != 'Z' && s.state != 'X')
}

/// Removes `path` at exit if it is still `ours`, the file rpv wrote there (the `-P` pid
/// file): what another process put at the path meanwhile stays.
pub(crate) fn register(path: PathBuf, ours: Identity) {
    if let Ok(mut files) = FILES.lock() {
        files.push((path, ours));
    }
}

/// Removes every registered file that is still rpv's own; returns the messages for the
/// failures (one gone already included, as before). One that is no longer rpv's is left
/// without a word: it was not a failure of rpv's.
pub(crate) fn remove_all() -> Vec<String> {
    let files = FILES
        .lock()
        .map(|mut f| std::mem::take(&mut *f))
        .unwrap_or_default();
    files
        .into_iter()
        .filter_map(|(path, ours)| match ownfile::remove_if_ours(&path, &ours) {
            Err(e) => Some(format!("{}: {}", path.display(), crate::sys::strerror(&e))),
            Ok(_) => None,
        })
        .collect()
}

/// Ends the `-M` command (quietly: callers that can report it call [`end_command`] first),
/// removes the registered files, puts back the O_DIRECT flags `-K` set, and exits with
/// `status`.
pub(crate) fn exit(status: u8) -> ! {
    end_command();
    remove_all();
    crate::transfer::output::restore_direct_flags();
    std::process::exit(status.into())
}
