//! The control channel: `-R PID` (remote control) and `-Q PID` (query) over a private Unix
//! socket, instead of pv's signal + raw-struct files.
//!
//! Owns: the protocol ([`protocol`]), the listener every running display loop starts
//! ([`server`]), the client side of `-R` and `-Q` ([`client`]), and where the sockets live.
//! Must not: touch the display or the engine itself. The display loop receives
//! [`Request`]s through [`server::Server::serve`] and applies them on its own thread; it
//! answers queries from its latest progress figures.
//!
//! Channel: `$XDG_RUNTIME_DIR/rpv/<pid>.sock`, or `/tmp/rpv-<euid>/<pid>.sock` without
//! `XDG_RUNTIME_DIR`. The directory is created with mode 0700 and must be a real directory
//! (not a symlink) owned by the effective user; the socket is 0600. Every connection is
//! checked with `SO_PEERCRED` (same effective user, or root) before a byte is read; the
//! client checks in turn that the socket is served by the target PID itself. A server that
//! starts listening removes the sockets of PIDs that are gone (SIGKILL leaves them), so none
//! piles up.
//!
//! Protocol (one connection per client; UTF-8 text lines; values escape `\` and newlines):
//!
//! ```text
//! client: set                    server: ok
//!         rate_limit=0
//!         name=copy
//!         end
//! client: query                  server: state elapsed=1.5 transferred=1234 size=5678
//!         end
//! ```
//!
//! `set` carries only the options given on the `-R` command line; keys: `switches` (letters
//! of p t e I r a b T), `last_written`, `rate_limit`, `buffer_size`, `size`, `interval`,
//! `width`, `height`, `name`, `format`, `extra_display`. `query` may be repeated on one
//! connection. Unknown keys are ignored; a bad request gets `error TEXT`. A line may hold at
//! most [`MAX_LINE`] bytes.

pub(crate) mod client;
pub(crate) mod protocol;
pub(crate) mod server;

use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::display::DisplaySwitches;
use crate::sys;
use crate::units::Unit;

/// How long a client waits for the answer (pv waits 1.1 s; a busy machine gets more).
pub(crate) const REPLY_TIMEOUT: Duration = Duration::from_secs(10);
/// How long `-R`/`-Q` wait for a live target's socket to appear (a run opens it a moment
/// after it starts).
pub(crate) const CONNECT_WAIT: Duration = Duration::from_secs(1);
/// `-Q`: time between fetches (pv's 0.1 s).
pub(crate) const QUERY_PERIOD: Duration = Duration::from_millis(100);
/// Longest request line accepted.
pub(crate) const MAX_LINE: usize = 64 << 10;

/// The settings a `-R` changes: `None` = not given, leave it alone.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Changes {
    /// Display switches (replace the receiver's set; the default format is rebuilt).
    pub switches: Option<DisplaySwitches>,
    /// `-L`, 0 removes the limit.
    pub rate_limit: Option<u64>,
    /// `-B`.
    pub buffer_size: Option<u64>,
    /// `-s`, 0 makes the size unknown.
    pub size: Option<u64>,
    /// `-i` seconds.
    pub interval: Option<f64>,
    /// `-w`.
    pub width: Option<u32>,
    /// `-H`.
    pub height: Option<u32>,
    /// `-N`, empty clears the name.
    pub name: Option<String>,
    /// `-F`, empty returns to the default format.
    pub format: Option<String>,
    /// `-x`, empty clears it.
    pub extra_display: Option<String>,
}

/// What a client asks of a running display.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Request {
    /// `-R`: apply these changes.
    Set(Changes),
    /// `-Q`: report the progress.
    Query,
}

/// The display loop's answer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Reply {
    /// Changes applied.
    Done,
    /// Progress: elapsed seconds, amount transferred and total size (0 = unknown), in the
    /// target's unit.
    State {
        /// Elapsed seconds.
        elapsed: f64,
        /// Transferred so far.
        transferred: u64,
        /// Total size, 0 = unknown.
        size: u64,
        /// What `transferred` and `size` count: bytes, or lines with `-l`/`-0` (a reply
        /// from an rpv that did not send its unit counts bytes).
        unit: Unit,
        /// The target runs a transfer (false: it only watches, as `-d`, `-Q` or
        /// `--pipeline=PID` do, and has no figures of its own; a reply from an rpv that
        /// did not say is a transfer's).
        transfer: bool,
    },
}

/// The hidden test hook that lets a client skip its own trust checks, so tests can show
/// that the server refuses other users by itself. It exists only in debug builds: a release
/// build never weakens a check, whatever its environment says.
pub(crate) fn unchecked_for_tests() -> bool {
    cfg!(debug_assertions) && std::env::var_os("RPV_TEST_CONTROL_UNCHECKED").is_some()
}

// ---- where the sockets live ----

/// The directory this process listens in: `$XDG_RUNTIME_DIR/rpv`, else `/tmp/rpv-<euid>`.
pub(crate) fn own_dir(euid: u32) -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from) {
        Some(dir) if dir.is_absolute() && dir.is_dir() => dir.join("rpv"),
        _ => PathBuf::from(format!("/tmp/rpv-{euid}")),
    }
}

/// Where a client looks for the socket of a process owned by `uid`, in order.
pub(crate) fn candidate_dirs(uid: u32) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    // The test hook lets another user's client try the target's own directory, so the
    // server's SO_PEERCRED check can be tested (debug builds only).
    if uid == sys::geteuid() || unchecked_for_tests() {
        dirs.push(own_dir(uid));
    }
    for dir in [
        PathBuf::from(format!("/run/user/{uid}/rpv")),
        PathBuf::from(format!("/tmp/rpv-{uid}")),
    ] {
        if !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    dirs
}

/// Creates (or checks) the private directory: a real directory, owned by `euid`, mode 0700
/// (a directory of ours with looser permissions is tightened).
pub(crate) fn private_dir(dir: &Path, euid: u32) -> std::io::Result<()> {
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let meta = std::fs::symlink_metadata(dir)?;
    if !meta.file_type().is_dir() || meta.uid() != euid {
        return Err(std::io::Error::from_raw_os_error(libc::EPERM));
    }
    if meta.mode() & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// A peer may talk to us if it runs as the same effective user, or as root.
pub(crate) fn peer_allowed(peer_uid: u32, own_euid: u32) -> bool {
    peer_uid == own_euid || peer_uid == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_same_user_or_root() {
        assert!(peer_allowed(1000, 1000));
        assert!(peer_allowed(0, 1000));
        assert!(!peer_allowed(65534, 1000));
        assert!(!peer_allowed(1000, 0));
    }
}
