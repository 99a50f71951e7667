//! The `--top` view: a row per flow, busiest first, redrawn in place through the screen
//! layer; on a terminal it takes keys (↑/↓ select, Home/End the first and the last row,
//! Enter opens the selected flow in the `--pipeline` or `-d` view, Esc comes back, `s`
//! changes the order, `p` freezes it, `/` filters, `q` quits; what each key changes is
//! [`Browse`]'s). Without a terminal, or with `--once`, it prints each update as a plain
//! frame (a title, the rows, a blank line).
//!
//! Owns: the rows of the last update (so keys redraw at once, without a new sample), each
//! flow's rate history (its sparkline), the view's [`Browse`] state, the terminal's input mode (no echo,
//! no line editing, signals kept: Ctrl-C and Ctrl-Z work as everywhere; put back at the
//! end and set again after `fg`), and the opened view: another rpv, on the alternate
//! screen, ended (SIGTERM) when Esc comes back or the run ends.
//! Must not: read `/proc` (the source does), print messages.

use std::collections::{HashMap, VecDeque};
use std::process::{Child, Command, Stdio};

use super::{DisplayConfig, Sink, Snapshot};
use crate::meter::{Event, Phase, Request, Role, Unit};
use crate::sys;
use crate::term::Term;
use crate::top::browse::{Action, Browse};
use crate::top::view::{self, Key, Line, Screenful, HISTORY};
use crate::top::{Hidden, Zoom};

/// How often the display loop wakes while the view takes keys (nanoseconds).
const KEYS_POLL_NS: u64 = 50_000_000;

/// Switch to the alternate screen (the cursor saved), and back.
const ALT_SCREEN: &str = "\x1b[?1049h\x1b[H\x1b[2J";
const MAIN_SCREEN: &str = "\x1b[?1049l";

/// `--top`'s view.
pub(crate) struct Top {
    /// The processes rpv may not read (the source's last word on them).
    hidden: Hidden,
    /// What the keys asked of the source since the last tick.
    asked: Vec<Request>,
    /// Every flow of the last update.
    lines: Vec<Line>,
    /// The rows shown: filtered and in order.
    shown: Vec<Line>,
    history: HashMap<u64, VecDeque<f64>>,
    /// The selection, the order, the filter.
    browse: Browse,
    /// `--once`: one plain frame, on a terminal too.
    once: bool,
    /// The terminal's attributes before the view took its keys.
    tty: Option<sys::TtyMode>,
    /// The view Enter opened.
    zoom: Option<Child>,
}

impl Top {
    /// The view; it takes keys when standard input and standard error are the terminal
    /// (and not `-q` or `--once`).
    pub(crate) fn new(config: &DisplayConfig, once: bool) -> Top {
        let interactive =
            config.stderr_tty && config.enabled && !once && sys::isatty(sys::stdin_fd());
        let tty = interactive
            .then(|| sys::tty_mode_for_reply(sys::stdin_fd()).ok())
            .flatten();
        Top {
            hidden: Hidden::default(),
            asked: Vec::new(),
            lines: Vec::new(),
            shown: Vec::new(),
            history: HashMap::new(),
            browse: Browse::default(),
            once,
            tty,
            zoom: None,
        }
    }

    fn interactive(&self) -> bool {
        self.tty.is_some()
    }

    fn draw(&mut self, config: &DisplayConfig, term: &mut Term) {
        if self.zoom.is_some() || !config.visible() {
            return;
        }
        self.shown = self.browse.arrange(&self.lines, self.interactive());
        let hidden = self.hidden.line();
        let screen = Screenful {
            lines: &self.shown,
            history: &self.history,
            selected: self.browse.selected,
            sort: self.browse.sort,
            interactive: self.interactive(),
            frozen: self.browse.frozen,
            filter: &self.browse.filter,
            typing: self.browse.typing,
            hidden,
            kind: config.style.kind(Unit::Bytes),
            utf8: config.style.utf8,
        };
        if config.stderr_tty && !self.once {
            let rows = view::lines(&screen, config.width, config.height);
            term.draw_screen(&rows, config.width);
        } else {
            // A plain frame: every row, for a file or a pipe.
            let rows = view::lines(&screen, config.width, self.shown.len() + 8);
            let mut text = rows.join("\n");
            text.push_str("\n\n");
            term.raw(&text);
        }
    }

    /// Enter: the selected flow in its own view (another rpv on the alternate screen).
    fn open(&mut self, config: &DisplayConfig, term: &mut Term) {
        let Some(line) = self
            .shown
            .iter()
            .find(|l| Some(l.id) == self.browse.selected)
        else {
            return;
        };
        let Ok(exe) = std::env::current_exe() else {
            return;
        };
        let mut cmd = Command::new(exe);
        match line.zoom {
            Zoom::Pipeline(pid) => cmd.arg(format!("--pipeline={pid}")),
            Zoom::Watch(pid, Some(fd)) => cmd.arg("-d").arg(format!("{pid}:{fd}")),
            Zoom::Watch(pid, None) => cmd.arg("-d").arg(pid.to_string()),
        };
        cmd.arg("-i")
            .arg(format!("{}", config.interval_ns as f64 / 1e9))
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        term.suspend();
        term.raw(ALT_SCREEN);
        match cmd.spawn() {
            Ok(child) => {
                self.asked.push(Request::Exclude(Some(child.id())));
                self.zoom = Some(child);
            }
            Err(_) => term.raw(MAIN_SCREEN),
        }
    }

    /// Esc (or the opened view ended): back to the list.
    fn close(&mut self, term: &mut Term) {
        let Some(mut child) = self.zoom.take() else {
            return;
        };
        if child.try_wait().ok().flatten().is_none() {
            sys::terminate(child.id());
        }
        let _ = child.wait();
        self.asked.push(Request::Exclude(None));
        term.raw(MAIN_SCREEN);
    }

    fn key(&mut self, key: Key, config: &DisplayConfig, term: &mut Term) {
        match self.browse.press(key, &self.shown, self.zoom.is_some()) {
            Action::Nothing => {}
            Action::Redraw => self.draw(config, term),
            Action::Open => self.open(config, term),
            Action::Back => {
                self.close(term);
                self.draw(config, term);
            }
            Action::Quit => {
                self.close(term);
                self.asked.push(Request::Quit);
            }
        }
    }

    /// The keys typed since the last look (and the opened view's end), each done at once.
    fn read_keys(&mut self, config: &DisplayConfig, term: &mut Term) {
        if self.tty.is_none() {
            return;
        }
        if let Some(child) = &mut self.zoom {
            if child.try_wait().ok().flatten().is_some() {
                self.close(term);
                self.draw(config, term);
            }
        }
        // After `fg` the terminal may be back in line mode, where a read would wait for
        // a whole line: the keys' mode again, and a read only of what is there.
        self.keep_keys_mode();
        if !sys::poll_one(sys::stdin_fd(), libc::POLLIN, 0).is_ok_and(|r| r != 0) {
            return;
        }
        let mut buf = [0u8; 64];
        let Ok(n) = sys::read(sys::stdin_fd(), &mut buf) else {
            return;
        };
        // Key by key: `/` makes the next ones the filter's text.
        let mut i = 0;
        while i < n {
            let (key, used) = view::next_key(&buf[i..n], self.browse.typing);
            if let Some(key) = key {
                self.key(key, config, term);
            }
            i += used.max(1);
        }
    }

    /// After `fg` the shell may have put the terminal back in its own mode: the keys'
    /// mode again (the mode put back at the end stays the one from before the view).
    fn keep_keys_mode(&self) {
        if self.tty.is_some() && sys::tty_line_mode(sys::stdin_fd()) {
            let _ = sys::tty_mode_for_reply(sys::stdin_fd());
        }
    }
}

impl Sink for Top {
    fn event(&mut self, event: &Event, _config: &DisplayConfig, _term: &mut Term) {
        if let Event::Unreadable(hidden) = event {
            self.hidden = *hidden;
        }
    }

    fn update(&mut self, snapshot: &Snapshot<'_>, config: &DisplayConfig, term: &mut Term) {
        self.keep_keys_mode();
        self.lines.clear();
        for r in &snapshot.readings {
            let (Role::Flow, Some(flow)) = (r.meter.role, r.meter.flow()) else {
                continue;
            };
            let m = r.meter;
            let ended = m.phase == Phase::Ended;
            let history = self.history.entry(m.id).or_default();
            if !ended {
                if history.len() == HISTORY {
                    history.pop_front();
                }
                history.push_back(r.rates.rate);
            }
            let unseen = flow.unseen && !ended;
            let eta = r.eta().filter(|_| !unseen);
            self.lines.push(Line {
                id: m.id,
                kind: flow.kind,
                pid: flow.pid,
                command: flow.command.clone(),
                file: flow.file.clone(),
                to: flow.to.clone(),
                writes: flow.writes,
                in_kernel: flow.in_kernel,
                unseen,
                unit: m.unit,
                amount: m.amount,
                rate: if ended { 0.0 } else { r.rates.rate },
                percent: (m.size > 0).then_some(r.rates.percentage),
                eta,
                stalled_for: r.stalled_for,
                ended,
                bottleneck: flow.bottleneck.clone(),
                zoom: flow.zoom,
            });
        }
        let ids: std::collections::HashSet<u64> = self.lines.iter().map(|l| l.id).collect();
        self.history.retain(|id, _| ids.contains(id));
        self.draw(config, term);
    }

    fn poll_period_ns(&self) -> Option<u64> {
        self.interactive().then_some(KEYS_POLL_NS)
    }

    fn tick(&mut self, config: &DisplayConfig, term: &mut Term, requests: &mut Vec<Request>) {
        self.read_keys(config, term);
        requests.append(&mut self.asked);
    }

    fn finish(&mut self, _snapshot: &Snapshot<'_>, _config: &DisplayConfig, term: &mut Term) {
        self.close(term);
        term.finish_screen();
        if let Some(saved) = self.tty.take() {
            sys::restore_tty_mode(sys::stdin_fd(), &saved);
        }
    }
}

#[cfg(test)]
#[path = "top_tests.rs"]
mod tests;
