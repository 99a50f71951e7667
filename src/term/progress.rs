//! The terminal's own progress indicator (`--term-progress`): the `OSC 9;4` sequence that
//! Windows Terminal, ConEmu, Ghostty, WezTerm, iTerm2 and VTE terminals (GNOME Terminal,
//! Ptyxis) show as a progress bar in the taskbar or the tab.
//!
//! Owns: which terminals `auto` trusts ([`supported`], from the environment each sets), the
//! sequences ([`State::sequence`]), and the writer ([`indicator`]): on a terminal, a
//! descriptor of rpv's own on it, non-blocking (a terminal stopped with Ctrl-S drops a
//! sequence rather than holding the display), locked with `flock` so that of several rpv
//! in a pipeline on one terminal only the first to show progress drives the indicator (the
//! lock goes with the process, however it ends), and the clear SIGTSTP writes before rpv
//! stops. Must not: decide what the indicator shows (the sink does).

use std::fs::{File, OpenOptions};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::sync::OnceLock;

use crate::{signals, sys};

/// What the indicator shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    /// Nothing: the indicator is removed.
    Clear,
    /// Progress, in percent (0-100).
    Normal(u8),
    /// An error, at this percentage.
    Error(u8),
    /// Busy, amount unknown (the size is not known).
    Indeterminate,
    /// Paused (nothing moves: a stall), at this percentage.
    Paused(u8),
}

/// The sequence that clears the indicator.
pub(crate) const CLEAR: &[u8] = b"\x1b]9;4;0\x1b\\";

impl State {
    /// `ESC ] 9 ; 4 ; STATE [; PERCENT] ST`, with ST = `ESC \`.
    pub(crate) fn sequence(self) -> String {
        let body = match self {
            State::Clear => "0".to_string(),
            State::Normal(p) => format!("1;{}", p.min(100)),
            State::Error(p) => format!("2;{}", p.min(100)),
            State::Indeterminate => "3".to_string(),
            State::Paused(p) => format!("4;{}", p.min(100)),
        };
        format!("\x1b]9;4;{body}\x1b\\")
    }
}

/// A version like `3.6.6` (or `1.2.0-beta`) as numbers, for comparisons; missing parts are 0.
fn version(text: &str) -> [u32; 3] {
    let mut out = [0; 3];
    for (slot, part) in out.iter_mut().zip(text.trim().split('.')) {
        let digits = part.len() - part.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        *slot = part[..digits].parse().unwrap_or(0);
    }
    out
}

/// Whether the terminal described by the environment (`env` reads a variable) shows `OSC
/// 9;4` as progress: Windows Terminal (`WT_SESSION`), ConEmu (`ConEmuANSI=ON`), WezTerm
/// (`TERM_PROGRAM=WezTerm`), Ghostty 1.2.0 or later (`TERM_PROGRAM=ghostty` and its
/// `TERM_PROGRAM_VERSION`), iTerm2 3.6.6 or later (`TERM_PROGRAM=iTerm.app`, whose older
/// versions show `OSC 9` as a desktop notification) and VTE 0.79 or later (`VTE_VERSION`
/// 7900 or more). Never through tmux or screen (`TMUX`, `STY`, or a `TERM` of theirs: they
/// do not pass the sequence on, while the variables of the terminal around them stay set),
/// nor on `TERM=dumb`.
pub(crate) fn supported(env: &dyn Fn(&str) -> Option<String>) -> bool {
    let var = |name: &str| env(name).filter(|v| !v.is_empty());
    let term = var("TERM").unwrap_or_default();
    let multiplexed = var("TMUX").is_some()
        || var("STY").is_some()
        || term.starts_with("screen")
        || term.starts_with("tmux");
    if multiplexed || term == "dumb" {
        return false;
    }
    let program_version = || version(&var("TERM_PROGRAM_VERSION").unwrap_or_default());
    var("WT_SESSION").is_some()
        || var("ConEmuANSI").as_deref() == Some("ON")
        || match var("TERM_PROGRAM").as_deref() {
            Some("WezTerm") => true,
            Some("ghostty") => program_version() >= [1, 2, 0],
            Some("iTerm.app") => program_version() >= [3, 6, 6],
            _ => false,
        }
        || var("VTE_VERSION")
            .and_then(|v| v.trim().parse::<u32>().ok())
            .is_some_and(|v| v >= 7900)
}

/// Where the sequences go.
#[derive(Debug)]
pub(crate) struct Indicator {
    /// rpv's own descriptor on the terminal (non-blocking, locked); `None` when standard
    /// error is not a terminal (`--term-progress=always`): then standard error itself.
    tty: Option<File>,
}

/// The indicator of this process, set up at the first call (later calls return the same):
/// `None` if standard error is a terminal that another rpv's indicator already uses, or that
/// cannot be opened again. `stderr_tty`: standard error is a terminal.
pub(crate) fn indicator(stderr_tty: bool) -> Option<&'static Indicator> {
    static INDICATOR: OnceLock<Option<Indicator>> = OnceLock::new();
    INDICATOR
        .get_or_init(|| {
            if !stderr_tty {
                return Some(Indicator { tty: None });
            }
            let tty = open_terminal()?;
            // Another rpv on this terminal shows its progress: leave the indicator to it.
            if !sys::try_flock(tty.as_fd()).unwrap_or(false) {
                return None;
            }
            if let Ok(fd) = tty.try_clone() {
                signals::write_on_stop(OwnedFd::from(fd), CLEAR);
            }
            Some(Indicator { tty: Some(tty) })
        })
        .as_ref()
}

/// The terminal on standard error, opened again: a descriptor of rpv's own (its
/// non-blocking flag and its lock are not shared with the other processes on the
/// terminal), never the controlling terminal.
fn open_terminal() -> Option<File> {
    let open = |path: &std::path::Path| {
        OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NOCTTY | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(path)
            .ok()
    };
    open(&crate::procfs::own_fd_path(2)).or_else(|| open(&sys::ttyname(sys::stderr_fd())?))
}

impl Indicator {
    /// Shows `state`. On a terminal that does not take it at once (Ctrl-S), an update is
    /// dropped; a clear waits up to a second.
    pub(crate) fn set(&self, state: State) {
        let text = state.sequence();
        match &self.tty {
            Some(tty) => {
                let patience = if state == State::Clear { 10 } else { 0 };
                write_patiently(tty, text.as_bytes(), patience);
            }
            None => {
                // A reader gone is the display's to notice: this indicator is an extra.
                let _ = super::write_all(sys::stderr_fd(), text.as_bytes());
            }
        }
        signals::arm_on_stop(self.tty.is_some() && state != State::Clear);
    }
}

/// Writes `data` to the non-blocking `tty`, waiting up to `tries` times 100 ms for room.
fn write_patiently(tty: &File, mut data: &[u8], mut tries: u32) {
    while !data.is_empty() {
        match sys::write(tty.as_fd(), data) {
            Ok(0) => return,
            Ok(n) => data = &data[n..],
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
            Err(e) if e.raw_os_error() == Some(libc::EAGAIN) && tries > 0 => {
                tries -= 1;
                let _ = sys::poll_one(tty.as_fd(), libc::POLLOUT, 100);
            }
            Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequences() {
        assert_eq!(State::Clear.sequence(), "\x1b]9;4;0\x1b\\");
        assert_eq!(State::Clear.sequence().as_bytes(), CLEAR);
        assert_eq!(State::Normal(42).sequence(), "\x1b]9;4;1;42\x1b\\");
        assert_eq!(State::Normal(250).sequence(), "\x1b]9;4;1;100\x1b\\");
        assert_eq!(State::Error(7).sequence(), "\x1b]9;4;2;7\x1b\\");
        assert_eq!(State::Indeterminate.sequence(), "\x1b]9;4;3\x1b\\");
        assert_eq!(State::Paused(0).sequence(), "\x1b]9;4;4;0\x1b\\");
    }

    fn with(vars: &[(&str, &str)]) -> bool {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        supported(&|name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()))
    }

    #[test]
    fn terminals_known_to_show_it() {
        let xterm = ("TERM", "xterm-256color");
        assert!(with(&[xterm, ("WT_SESSION", "8f3e1f7a-1111")]));
        assert!(with(&[xterm, ("ConEmuANSI", "ON")]));
        assert!(with(&[xterm, ("TERM_PROGRAM", "WezTerm")]));
        assert!(with(&[
            ("TERM", "xterm-ghostty"),
            ("TERM_PROGRAM", "ghostty"),
            ("TERM_PROGRAM_VERSION", "1.2.3")
        ]));
        assert!(with(&[
            xterm,
            ("TERM_PROGRAM", "iTerm.app"),
            ("TERM_PROGRAM_VERSION", "3.6.6")
        ]));
        assert!(with(&[
            xterm,
            ("TERM_PROGRAM", "iTerm.app"),
            ("TERM_PROGRAM_VERSION", "3.10.0beta1")
        ]));
        assert!(with(&[xterm, ("VTE_VERSION", "7900")]));
        assert!(with(&[xterm, ("VTE_VERSION", "8002")]));
    }

    #[test]
    fn other_terminals_and_multiplexers_do_not() {
        let xterm = ("TERM", "xterm-256color");
        assert!(!with(&[]));
        assert!(!with(&[xterm]));
        assert!(!with(&[xterm, ("WT_SESSION", "")]), "empty is unset");
        assert!(!with(&[xterm, ("ConEmuANSI", "OFF")]));
        assert!(!with(&[xterm, ("TERM_PROGRAM", "Apple_Terminal")]));
        assert!(
            !with(&[
                xterm,
                ("TERM_PROGRAM", "iTerm.app"),
                ("TERM_PROGRAM_VERSION", "3.6.5")
            ]),
            "older iTerm2 shows OSC 9 as a notification"
        );
        assert!(!with(&[xterm, ("TERM_PROGRAM", "iTerm.app")]));
        assert!(!with(&[
            ("TERM_PROGRAM", "ghostty"),
            ("TERM_PROGRAM_VERSION", "1.1.3")
        ]));
        assert!(!with(&[xterm, ("VTE_VERSION", "7803")]));
        assert!(!with(&[xterm, ("VTE_VERSION", "new")]));
        // tmux and screen keep the outer terminal's variables but do not pass the sequence.
        assert!(!with(&[
            ("TERM", "tmux-256color"),
            ("TMUX", "/tmp/tmux-1000/default,1,0"),
            ("WT_SESSION", "x")
        ]));
        assert!(!with(&[("TERM", "screen"), ("VTE_VERSION", "8000")]));
        assert!(!with(&[xterm, ("STY", "123.pts-0"), ("WT_SESSION", "x")]));
        assert!(!with(&[("TERM", "dumb"), ("WT_SESSION", "x")]));
    }

    #[test]
    fn versions_compare_by_number() {
        assert_eq!(version("3.6.6"), [3, 6, 6]);
        assert_eq!(version("3.10"), [3, 10, 0]);
        assert_eq!(version("1.2.0-dev+abc"), [1, 2, 0]);
        assert_eq!(version(""), [0, 0, 0]);
        assert!(version("3.10.0") > version("3.6.6"));
    }
}
