//! The tmux harness: a tmux server of the test's own running an interactive bash, for
//! tests that need a real terminal emulator (one that reflows its lines on a resize, as
//! most terminals users have do). Shared by `screens` and `cursor`.

use std::process::{Command, Stdio};

use crate::util::{poll, s, Dir};

/// How long any awaited screen may take (a loaded 2-core machine included).
pub const DEADLINE_SECS: f64 = crate::util::PATIENCE;

/// A tmux server of its own (unique socket, in the test's directory) running an
/// interactive bash with `PS1='$ '`, a function `r` running rpv, in the test's directory.
pub struct Tmux<'a> {
    dir: &'a Dir,
    socket: String,
}

impl<'a> Tmux<'a> {
    /// A `width` × `height` terminal; `None` (the test is skipped) if tmux is missing.
    pub fn start(
        dir: &'a Dir,
        name: &str,
        width: usize,
        height: usize,
        utf8: bool,
    ) -> Option<Self> {
        Self::start_with(dir, name, width, height, utf8, &[])
    }

    /// [`Tmux::start`] with more environment for the shell (`NAME=VALUE`s).
    pub fn start_with(
        dir: &'a Dir,
        name: &str,
        width: usize,
        height: usize,
        utf8: bool,
        env: &[(&str, &str)],
    ) -> Option<Self> {
        if Command::new("tmux").arg("-V").output().is_err() {
            eprintln!("skipped: tmux is not installed (.ci/run installs it)");
            return None;
        }
        let tmux = Tmux {
            dir,
            socket: format!("rpv-{name}-{}", std::process::id()),
        };
        let locale = if utf8 { "LC_ALL=C.UTF-8" } else { "LC_ALL=C" };
        let rpv = format!("RPV={}", env!("CARGO_BIN_EXE_rpv"));
        let extra: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let (w, h) = (width.to_string(), height.to_string());
        let mut args = vec!["-f", "/dev/null"];
        if utf8 {
            args.push("-u");
        }
        args.extend(["new-session", "-d", "-x", &w, "-y", &h]);
        args.extend(["-e", &rpv, "-e", locale, "-e", "TERM=screen"]);
        for e in &extra {
            args.extend(["-e", e]);
        }
        args.extend(["bash", "--norc", "--noprofile"]);
        let started = tmux.cmd(&args);
        assert!(started.status.success(), "{started:?}");
        // The server is a daemon in a session of its own, so a scheduling group of its own:
        // as far ahead of other work as the suite, or it waits behind the suite's tests.
        let server = tmux.cmd(&["display-message", "-p", "#{pid}"]);
        if let Ok(pid) = String::from_utf8_lossy(&server.stdout).trim().parse() {
            crate::util::session_ahead(pid);
        }
        // The pane's shell is a session of its own, so a scheduling group of its own: as
        // root it puts itself as far ahead of other work as the suite is
        // ([`crate::util::suite_ahead`]).
        tmux.keys(&format!(
            "echo {} 2>/dev/null > /proc/self/autogroup; r() {{ \"$RPV\" \"$@\"; }}; PS1='$ '; \
             cd {}; printf '\\033[H\\033[2J'",
            crate::util::SUITE_NICE,
            s(dir.dir.path())
        ));
        tmux.wait_for("a clear screen with the prompt", |rows| rows == ["$"]);
        Some(tmux)
    }

    /// Runs a tmux command on this server.
    pub fn cmd(&self, args: &[&str]) -> std::process::Output {
        Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .env("TMUX_TMPDIR", self.dir.dir.path())
            .env_remove("TMUX")
            .stdin(Stdio::null())
            .output()
            .expect("run tmux")
    }

    /// Types `text` and Enter.
    pub fn keys(&self, text: &str) {
        self.cmd(&["send-keys", "-l", text]);
        self.cmd(&["send-keys", "Enter"]);
    }

    /// Presses a key (`C-c`, `C-z`).
    pub fn press(&self, key: &str) {
        self.cmd(&["send-keys", key]);
    }

    /// Resizes the window.
    pub fn resize(&self, width: usize, height: usize) {
        let (w, h) = (width.to_string(), height.to_string());
        let out = self.cmd(&["resize-window", "-x", &w, "-y", &h]);
        assert!(out.status.success(), "{out:?}");
    }

    /// The visible lines (`joined`: wrapped lines joined back into one), without trailing
    /// blanks and empty lines at the end.
    pub fn pane(&self, joined: bool) -> Vec<String> {
        let args: &[&str] = if joined {
            &["capture-pane", "-p", "-J"]
        } else {
            &["capture-pane", "-p"]
        };
        lines(&self.cmd(args))
    }

    /// Every line of the pane and its scrollback, wrapped lines joined.
    pub fn history(&self) -> Vec<String> {
        lines(&self.cmd(&["capture-pane", "-p", "-J", "-S", "-"]))
    }

    /// Waits until the visible lines satisfy `ready`; returns them.
    #[track_caller]
    pub fn wait_for(&self, what: &str, ready: impl Fn(&[String]) -> bool) -> Vec<String> {
        match poll(DEADLINE_SECS, || {
            Some(self.pane(false)).filter(|r| ready(r))
        }) {
            Some(rows) => rows,
            None => panic!("never {what}: {:#?}", self.pane(false)),
        }
    }

    /// The pane's title.
    pub fn title(&self) -> String {
        let out = self.cmd(&["display-message", "-p", "#{pane_title}"]);
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }
}

impl Drop for Tmux<'_> {
    fn drop(&mut self) {
        self.cmd(&["kill-server"]);
    }
}

fn lines(out: &std::process::Output) -> Vec<String> {
    let mut rows: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.trim_end().to_string())
        .collect();
    while rows.last().is_some_and(|r| r.is_empty()) {
        rows.pop();
    }
    rows
}
