//! `--watchfd` (spec 4.1): show the progress of descriptors opened by other processes, by
//! sampling their offsets in `/proc`.
//!
//! Owns: resolving the items, the per-descriptor state (size, initial offset, own timer and
//! [`RateTracker`]), rescanning whole processes, and the multi-line display. Beyond pv: a
//! pipe or socket watched as `PID:FD` shows the process's read or write byte counter
//! (`/proc/PID/io`), labelled as such, with an unknown size.

mod items;
mod procfs;
mod screen;

use std::collections::HashMap;
use std::os::fd::AsFd;

use crate::cli::{Action, Options, SizeArg};
use crate::display::{self, BarStyle, DisplaySwitches, Format, Frame, Segment};
use crate::shared::status;
use crate::signals;
use crate::stats::{RateTracker, Rates};
use crate::sys;
use crate::term::{self, Term};
use crate::transfer::input;
use crate::units::CountKind;

use items::Target;
use procfs::{FdInfo, Source};
use screen::Screen;

/// Runs watchfd mode; returns the exit status.
pub fn run(o: &Options, prog: &str) -> u8 {
    let Action::WatchFd(raw_items) = &o.action else {
        return status::USAGE;
    };
    let mut term = Term::new(prog);
    let mut read_list = |path: &str| std::fs::read_to_string(path).map_err(|e| sys::strerror(&e));
    let expanded = match items::expand(raw_items, &mut read_list, &mut items::run_pgrep) {
        Ok(e) => e,
        Err(message) => {
            term.message(&message);
            return status::USAGE;
        }
    };
    let mut exit = 0u8;
    for problem in &expanded.problems {
        term.message(problem);
        exit |= status::ACCESS;
    }
    let size_override = match &o.size {
        SizeArg::Auto => None,
        SizeArg::Value(n) => Some(*n),
        SizeArg::Path(p) => match input::size_of_path(p) {
            Ok(n) => Some(n),
            Err(message) => {
                term.message(&message);
                return status::USAGE;
            }
        },
    };
    let mut watch = Watch::new(o, expanded.targets, size_override);
    for message in watch.start() {
        term.message(&message);
        exit |= status::ACCESS;
    }
    if watch.all_finished() {
        return exit;
    }
    exit | watch.run(o, &mut term)
}

/// One watched item.
struct Item {
    target: Target,
    finished: bool,
    /// Whole process: descriptors seen that are not shown, by (dev, ino), so they are not
    /// examined again every round.
    skipped: HashMap<i32, (u64, u64)>,
}

/// One displayed descriptor.
struct Watched {
    item: usize,
    pid: u32,
    fd: i32,
    info: FdInfo,
    size: u64,
    initial: u64,
    position: u64,
    /// Forward movement since first seen (what the rate tracker is fed): a backward seek
    /// counts as no progress rather than a negative rate.
    progress: u64,
    start_ns: u64,
    stopped_base: u64,
    tracker: RateTracker,
    /// The figures of the last update (shown frozen once the descriptor closed).
    rates: Rates,
    elapsed: f64,
    closed_at: Option<u64>,
}

struct Watch {
    items: Vec<Item>,
    fds: Vec<Watched>,
    with_pid: bool,
    size_override: Option<u64>,
    window: u32,
    interval_ns: u64,
}

impl Watch {
    fn new(o: &Options, targets: Vec<Target>, size_override: Option<u64>) -> Watch {
        let with_pid = targets.windows(2).any(|w| w[0].pid != w[1].pid);
        // --size applies to a single PID:FD (the manual's promise; pv ignores it).
        let size_override = match targets.as_slice() {
            [Target { fd: Some(_), .. }] => size_override,
            _ => None,
        };
        Watch {
            items: targets
                .into_iter()
                .map(|target| Item {
                    target,
                    finished: false,
                    skipped: HashMap::new(),
                })
                .collect(),
            fds: Vec::new(),
            with_pid,
            size_override,
            window: o.average_window,
            interval_ns: (o.interval * 1e9) as u64,
        }
    }

    fn all_finished(&self) -> bool {
        self.items.iter().all(|i| i.finished)
    }

    /// Start-up checks of every item (spec 4.1); returns the messages (each status bit 2).
    fn start(&mut self) -> Vec<String> {
        let mut messages = Vec::new();
        for index in 0..self.items.len() {
            let Target { pid, fd } = self.items[index].target;
            if let Err(e) = sys::process_check(pid) {
                messages.push(format!("pid {pid}: {}", sys::strerror(&e)));
                self.items[index].finished = true;
                continue;
            }
            match fd {
                Some(fd) => match procfs::inspect(pid, fd, true) {
                    Ok(info) => {
                        if !self.add(index, pid, fd, info) {
                            // Closed between the look and the first reading.
                            let gone = std::io::Error::from_raw_os_error(libc::ENOENT);
                            messages.push(procfs::FdError::Link(gone).message(pid, fd));
                            self.items[index].finished = true;
                        }
                    }
                    Err(e) => {
                        messages.push(e.message(pid, fd));
                        self.items[index].finished = true;
                    }
                },
                None => {
                    if let Err(e) = procfs::list_fds(pid) {
                        messages.push(format!("pid {pid}: {}", sys::strerror(&e)));
                        self.items[index].finished = true;
                    } else {
                        self.rescan(index);
                    }
                }
            }
        }
        messages
    }

    /// Starts showing a descriptor; false if it closed already.
    fn add(&mut self, item: usize, pid: u32, fd: i32, info: FdInfo) -> bool {
        let Some(position) = procfs::position(pid, fd, &info) else {
            return false;
        };
        let size = self.size_override.filter(|&s| s > 0).unwrap_or(info.size);
        self.fds.push(Watched {
            item,
            pid,
            fd,
            size,
            initial: position,
            position,
            progress: 0,
            start_ns: sys::monotonic_ns(),
            stopped_base: signals::stopped_ns(),
            tracker: RateTracker::new(self.window),
            rates: Rates::default(),
            elapsed: 0.0,
            closed_at: None,
            info,
        });
        true
    }

    /// A whole process: finish it if it is gone, else add the files it opened since.
    fn rescan(&mut self, index: usize) {
        let pid = self.items[index].target.pid;
        let listed = if procfs::process_gone(pid) {
            None
        } else {
            procfs::list_fds(pid).ok()
        };
        let Some(fds) = listed else {
            self.items[index].finished = true;
            return;
        };
        for fd in fds {
            let live = self
                .fds
                .iter()
                .any(|w| w.item == index && w.fd == fd && w.closed_at.is_none());
            if live {
                continue;
            }
            if let Some(&(dev, ino)) = self.items[index].skipped.get(&fd) {
                let link = format!("/proc/{pid}/fd/{fd}");
                use std::os::unix::fs::MetadataExt;
                if std::fs::metadata(&link).is_ok_and(|m| m.dev() == dev && m.ino() == ino) {
                    continue;
                }
            }
            match procfs::inspect(pid, fd, false) {
                Ok(info) => {
                    self.items[index].skipped.remove(&fd);
                    self.add(index, pid, fd, info);
                }
                Err(_) => {
                    use std::os::unix::fs::MetadataExt;
                    let link = format!("/proc/{pid}/fd/{fd}");
                    if let Ok(m) = std::fs::metadata(&link) {
                        self.items[index].skipped.insert(fd, (m.dev(), m.ino()));
                    }
                }
            }
        }
    }

    /// One sampling round: rescan whole processes, read positions, retire descriptors that
    /// have been closed for longer than one interval.
    fn sample(&mut self, now: u64) {
        for index in 0..self.items.len() {
            if !self.items[index].finished && self.items[index].target.fd.is_none() {
                self.rescan(index);
            }
        }
        for w in &mut self.fds {
            if w.closed_at.is_some() {
                continue;
            }
            match procfs::position(w.pid, w.fd, &w.info) {
                Some(pos) => {
                    w.progress += pos.saturating_sub(w.position);
                    w.position = pos;
                }
                None => {
                    w.closed_at = Some(now);
                    if self.items[w.item].target.fd.is_some() {
                        self.items[w.item].finished = true;
                    }
                }
            }
        }
        let interval = self.interval_ns;
        self.fds.retain(|w| {
            w.closed_at
                .is_none_or(|at| now.saturating_sub(at) <= interval)
        });
    }

    fn run(&mut self, o: &Options, term: &mut Term) -> u8 {
        let mut view = View::new(o, self.needs_name_prefix());
        let wake = match sys::pipe() {
            Ok((r, w)) => {
                signals::install(w);
                let _ = sys::set_nonblocking(r.as_fd(), true);
                Some(r)
            }
            Err(_) => None,
        };
        let mut next_due = sys::monotonic_ns() + self.interval_ns;
        let mut exit = 0;
        loop {
            let now = sys::monotonic_ns();
            let timeout_ms = (next_due.saturating_sub(now) / 1_000_000 + 1).min(1000) as i32;
            match &wake {
                Some(r) => {
                    let _ = sys::poll_one(r.as_fd(), libc::POLLIN, timeout_ms);
                    let mut buf = [0u8; 64];
                    while matches!(sys::read(r.as_fd(), &mut buf), Ok(n) if n > 0) {}
                }
                None => std::thread::sleep(std::time::Duration::from_millis(timeout_ms as u64)),
            }
            if signals::exit_requested() {
                exit |= status::SIGNAL;
                break;
            }
            if signals::take_resized() {
                view.resize();
            }
            let now = sys::monotonic_ns();
            let redraw = signals::take_continued();
            if now >= next_due {
                self.sample(now);
                if self.all_finished() {
                    break;
                }
                next_due += self.interval_ns;
                if next_due < now {
                    next_due = now + self.interval_ns;
                }
                view.draw(self, term);
            } else if redraw {
                view.draw(self, term);
            }
        }
        view.finish(term);
        exit
    }

    /// `%N ` goes in front of the format when several items are watched or the first is a
    /// whole process (spec 4.1).
    fn needs_name_prefix(&self) -> bool {
        self.items.len() > 1 || self.items.first().is_some_and(|i| i.target.fd.is_none())
    }
}

/// The display side: formats, terminal size, what is on the screen.
struct View {
    enabled: bool,
    numeric: bool,
    force: bool,
    /// Formats for descriptors of known and of unknown size (`%e`/`%I` only in the first,
    /// so an unknown size leaves no trailing space; identical with `-F`).
    known: Format,
    unknown: Format,
    fixed: (u32, u32),
    width: usize,
    height: usize,
    kind: CountKind,
    bits: bool,
    gauge: bool,
    bar_style: BarStyle,
    utf8: bool,
    colour: bool,
    cwd: String,
    screen: Screen,
}

impl View {
    fn new(o: &Options, name_prefix: bool) -> View {
        let build = |size_known: bool| {
            let text = o.format.clone().unwrap_or_else(|| {
                // -N is ignored in this mode: names come from the descriptors.
                let switches = DisplaySwitches {
                    name: false,
                    ..crate::view::switches(o)
                };
                display::default_format(&switches, size_known)
            });
            let mut format = Format::parse(&text);
            let has_name = format
                .segments
                .iter()
                .any(|s| matches!(s, Segment::Name { .. }));
            if name_prefix && !has_name && !text.is_empty() {
                format = Format::parse(&format!("%N {text}"));
            }
            format
        };
        let (width, height) = term::size(o.width, o.height);
        let stderr_tty = sys::isatty(sys::stderr_fd());
        View {
            enabled: (stderr_tty || o.force || o.numeric)
                && !o.quiet
                && o.format.as_deref() != Some(""),
            numeric: o.numeric,
            force: o.force,
            known: build(true),
            unknown: build(false),
            fixed: (o.width, o.height),
            width,
            height,
            kind: if o.si {
                CountKind::DecimalBytes
            } else {
                CountKind::BinaryBytes
            },
            bits: o.bits,
            gauge: o.gauge,
            bar_style: BarStyle::from_name(o.bar_style.as_deref().unwrap_or("plain")),
            utf8: term::utf8_locale(),
            colour: term::colour_allowed(o.force),
            cwd: std::env::current_dir()
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default(),
            screen: Screen::default(),
        }
    }

    fn resize(&mut self) {
        (self.width, self.height) = term::size(self.fixed.0, self.fixed.1);
    }

    /// Updates every descriptor's figures and, if the display is on, draws one line each.
    fn draw(&mut self, watch: &mut Watch, term: &mut Term) {
        let now = sys::monotonic_ns();
        let stopped_now = signals::stopped_ns();
        let visible =
            self.enabled && (self.numeric || self.force || sys::in_foreground(sys::stderr_fd()));
        let mut lines = Vec::new();
        for w in &mut watch.fds {
            let stopped = stopped_now.saturating_sub(w.stopped_base);
            let elapsed = (now.saturating_sub(w.start_ns).saturating_sub(stopped) as f64 / 1e9)
                .clamp(0.0, 360_000_000.0);
            // A closed descriptor stays frozen: its figures are not updated any more.
            if w.closed_at.is_none() {
                w.rates = w.tracker.update(elapsed, w.progress, 0, false);
                w.elapsed = elapsed;
            }
            let (rates, elapsed) = (w.rates, w.elapsed);
            if !visible || lines.len() >= self.height {
                continue;
            }
            let percentage = if w.size > 0 {
                (100.0 * w.position as f64 / w.size as f64).clamp(0.0, 100_000.0)
            } else {
                rates.percentage
            };
            let label = match w.info.source {
                Source::Offset => "",
                Source::Process(counter) => counter.label(),
            };
            let path = screen::relative(&w.info.path, &self.cwd);
            let name = screen::name(w.pid, w.fd, path, label, watch.with_pid, self.width);
            let frame = Frame {
                elapsed,
                transferred: w.position,
                size: w.size,
                initial_offset: w.initial,
                rate: rates.rate,
                avg_rate: rates.avg_rate,
                percentage,
                max_rate: rates.max_rate,
                numeric: self.numeric,
                kind: self.kind,
                bits: self.bits,
                gauge: self.gauge,
                name: Some(&name),
                bar_style: self.bar_style,
                utf8: self.utf8,
                colour: self.colour,
                wall_clock: sys::wall_clock(),
                ..Frame::default()
            };
            let format = if w.size > 0 {
                &self.known
            } else {
                &self.unknown
            };
            lines.push(display::render(format, &frame, self.width));
        }
        if !visible {
            return;
        }
        if self.numeric {
            for line in &lines {
                term.numeric(line);
            }
        } else {
            let text = self.screen.round(&lines, self.width);
            term.raw(&text);
            term.wrote_line = self.screen.lines() > 0;
        }
    }

    /// The end: leave the last lines visible.
    fn finish(&mut self, term: &mut Term) {
        if !self.numeric {
            let text = self.screen.finish();
            term.raw(&text);
            term.wrote_line = false;
        }
    }
}
