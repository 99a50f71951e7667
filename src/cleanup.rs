//! Files rpv must remove when it exits, however it exits: the `-P` pid file and the
//! `-U -` temporary file. Exit paths that cannot unwind (an interrupt while the data thread
//! is blocked) call [`exit`], which removes them first.

use std::path::PathBuf;
use std::sync::Mutex;

static FILES: Mutex<Vec<(PathBuf, bool)>> = Mutex::new(Vec::new());

/// Removes `path` at exit; `report` says whether a failure to remove it is an error worth
/// a message (the pid file) or not (a temporary file already gone).
pub(crate) fn register(path: PathBuf, report: bool) {
    if let Ok(mut files) = FILES.lock() {
        files.push((path, report));
    }
}

/// Removes every registered file; returns the messages for the failures worth reporting.
pub(crate) fn remove_all() -> Vec<String> {
    let files = FILES
        .lock()
        .map(|mut f| std::mem::take(&mut *f))
        .unwrap_or_default();
    files
        .into_iter()
        .filter_map(|(path, report)| match std::fs::remove_file(&path) {
            Err(e) if report => Some(format!("{}: {}", path.display(), crate::sys::strerror(&e))),
            _ => None,
        })
        .collect()
}

/// Removes the registered files, puts back the O_DIRECT flags `-K` set, and exits with
/// `status` at once.
pub(crate) fn exit(status: u8) -> ! {
    remove_all();
    crate::transfer::output::restore_direct_flags();
    std::process::exit(status.into())
}
