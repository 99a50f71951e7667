//! Byte counts of rpv stages, asked over their control channel.
//!
//! Owns: deciding whether a process is an rpv, and the one place that asks it for its
//! count ([`RpvLink::bytes`]; an rpv counting lines answers in lines, and is not used). Must not: block the view for long: an answer is
//! awaited at most `ANSWER_TIMEOUT`, and a stage that does not answer is asked again only
//! after `RETRY_NS`.
//!
//! rpv moves data with splice, which `/proc/PID/io` does not count, so its stage's rates
//! come from its own count (what its reader has taken, the figure `-Q` shows).

use std::time::Duration;

use crate::control::client::ProgressQuery;
use crate::procfs::{self, SysProc};
use crate::units::Unit;

/// Longest wait for an answer.
const ANSWER_TIMEOUT: Duration = Duration::from_millis(100);
/// Time between attempts to reach an rpv that did not answer, in nanoseconds.
const RETRY_NS: u64 = 1_000_000_000;

/// The link to one rpv stage.
pub(crate) struct RpvLink {
    pid: u32,
    /// False for other programs.
    rpv: bool,
    query: Option<ProgressQuery>,
    next_try_ns: u64,
}

impl RpvLink {
    /// A link to `pid`, whose command line is `cmdline` (NUL-separated, as in `/proc`).
    pub(crate) fn new(pid: u32, cmdline: &[u8]) -> RpvLink {
        RpvLink {
            pid,
            rpv: is_rpv(pid, cmdline),
            query: None,
            next_try_ns: 0,
        }
    }

    /// The bytes the stage has passed on so far, if it is an rpv that answers in bytes (an
    /// rpv counting lines, `-l` or `-0`, gives no bytes).
    pub(crate) fn bytes(&mut self, now_ns: u64) -> Option<u64> {
        if !self.rpv {
            return None;
        }
        if self.query.is_none() && now_ns >= self.next_try_ns {
            self.query = ProgressQuery::connect(self.pid, ANSWER_TIMEOUT);
            if self.query.is_none() {
                self.next_try_ns = now_ns + RETRY_NS;
            }
        }
        let answer = self.query.as_mut()?.state();
        if answer.is_none() {
            self.query = None;
            self.next_try_ns = now_ns + RETRY_NS;
        }
        match answer? {
            (_, transferred, _, Unit::Bytes) => Some(transferred),
            (_, _, _, Unit::Lines) => {
                // Counting lines for the whole run: not asked again.
                self.rpv = false;
                self.query = None;
                None
            }
        }
    }
}

/// The real `/proc`, whose other rpv processes tell their counts through an [`RpvLink`].
pub(crate) fn sys_proc() -> SysProc {
    let mut proc = SysProc::new();
    proc.set_tellers(Box::new(|pid, cmdline| {
        let mut link = RpvLink::new(pid, cmdline);
        Box::new(move || link.bytes(crate::sys::monotonic_ns()))
    }));
    proc
}

/// The same program as this one, or a program whose name starts with `rpv`.
fn is_rpv(pid: u32, cmdline: &[u8]) -> bool {
    let ours = std::env::current_exe().ok();
    if let (Some(ours), Ok(theirs)) = (ours, procfs::exe(pid)) {
        if ours == theirs {
            return true;
        }
    }
    let argv0 = cmdline.split(|&b| b == 0).next().unwrap_or_default();
    let name = argv0.rsplit(|&b| b == b'/').next().unwrap_or_default();
    name.starts_with(b"rpv")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rpv_by_name() {
        // PID 0 has no /proc entry: only the name decides.
        assert!(is_rpv(0, b"/usr/local/bin/rpv\0-q\0"));
        assert!(!is_rpv(0, b"/usr/bin/pv\0-q\0"));
        assert!(!is_rpv(0, b""));
    }
}
