//! Terminals: is it one, its size, its name, who is in the foreground, and the attributes
//! the cursor-position query needs.
//!
//! Owns: [`TtyMode`], the saved attributes. Must not: write escape sequences (`term` does).

use std::io;
use std::os::fd::BorrowedFd;
use std::path::PathBuf;

use rustix::termios::{LocalModes, OptionalActions, SpecialCodeIndex, Termios};

/// `isatty(3)`.
pub(crate) fn isatty(fd: BorrowedFd<'_>) -> bool {
    rustix::termios::isatty(fd)
}

/// Terminal size (columns, rows) from `TIOCGWINSZ`, if `fd` is a terminal that knows it.
pub(crate) fn window_size(fd: BorrowedFd<'_>) -> Option<(u16, u16)> {
    let ws = rustix::termios::tcgetwinsize(fd).ok()?;
    (ws.ws_col > 0).then_some((ws.ws_col, ws.ws_row))
}

/// True if this process is in the foreground process group of the terminal on `fd`, or if
/// `fd` is not a terminal (pv's rule: only a background job on the terminal stays quiet).
pub(crate) fn in_foreground(fd: BorrowedFd<'_>) -> bool {
    match rustix::termios::tcgetpgrp(fd) {
        Ok(fg) => fg == rustix::process::getpgrp(),
        Err(_) => true,
    }
}

/// The path of the terminal on `fd`, if it is one.
pub(crate) fn ttyname(fd: BorrowedFd<'_>) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStringExt;
    let name = rustix::termios::ttyname(fd, Vec::new()).ok()?;
    Some(std::ffi::OsString::from_vec(name.into_bytes()).into())
}

/// Saved terminal attributes, restored with [`restore_tty_mode`].
#[derive(Clone)]
pub(crate) struct TtyMode(Termios);

/// Turns off `ICANON` and `ECHO` on the terminal `fd` (`TCSANOW`: type-ahead is kept) with
/// `VMIN = VTIME = 0`, so a cursor-position reply can be read without being echoed. Returns
/// the previous attributes.
pub(crate) fn tty_mode_for_reply(fd: BorrowedFd<'_>) -> io::Result<TtyMode> {
    let saved = rustix::termios::tcgetattr(fd)?;
    let mut raw = saved.clone();
    raw.local_modes
        .remove(LocalModes::ICANON | LocalModes::ECHO);
    raw.special_codes[SpecialCodeIndex::VMIN] = 0;
    raw.special_codes[SpecialCodeIndex::VTIME] = 0;
    rustix::termios::tcsetattr(fd, OptionalActions::Now, &raw)?;
    Ok(TtyMode(saved))
}

/// True if the terminal `fd` edits lines (`ICANON`), as a shell leaves it.
pub(crate) fn tty_line_mode(fd: BorrowedFd<'_>) -> bool {
    rustix::termios::tcgetattr(fd).is_ok_and(|t| t.local_modes.contains(LocalModes::ICANON))
}

/// Restores attributes saved by [`tty_mode_for_reply`].
pub(crate) fn restore_tty_mode(fd: BorrowedFd<'_>, mode: &TtyMode) {
    let _ = rustix::termios::tcsetattr(fd, OptionalActions::Now, &mode.0);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn a_pipe_is_no_terminal() {
        let (r, _w) = crate::sys::pipe().unwrap();
        assert!(!isatty(r.as_fd()));
        assert_eq!(window_size(r.as_fd()), None);
        assert_eq!(ttyname(r.as_fd()), None);
        assert!(
            in_foreground(r.as_fd()),
            "not a terminal: counts as foreground"
        );
        assert!(tty_mode_for_reply(r.as_fd()).is_err());
    }
}
