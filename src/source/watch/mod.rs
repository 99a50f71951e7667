//! `--watchfd`: the progress of descriptors opened by other processes, sampled from
//! `/proc` (their offsets).
//!
//! Owns: resolving the items, the per-descriptor state (size, position,
//! forward progress), rescanning whole processes, and retiring descriptors that closed.
//! Beyond pv: a pipe or socket watched as `PID:FD` shows the process's read or write byte
//! counter (`/proc/PID/io`), labelled as such, with an unknown size. Must not: draw; each
//! descriptor is a meter, and the multi-line sink shows them.

pub(crate) mod fds;
pub(crate) mod items;

use std::collections::HashMap;
use std::os::unix::ffi::OsStrExt;

use super::Source;
use crate::error::{status, Error};
use crate::meter::{Event, Label, MeterId, MeterState, Phase, Role};
use crate::sys;

use fds::{FdInfo, Source as Measure};
use items::Target;

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
    position: u64,
    /// Forward movement since first seen (what the rate tracker is fed): a backward seek
    /// counts as no progress rather than a negative rate.
    progress: u64,
    start_ns: u64,
    closed_at: Option<u64>,
    id: MeterId,
}

/// Watches the descriptors of other processes (`-d`).
pub(crate) struct WatchSource {
    items: Vec<Item>,
    fds: Vec<Watched>,
    with_pid: bool,
    size_override: Option<u64>,
    interval_ns: u64,
    next_id: MeterId,
    cwd: String,
    events: Vec<Event>,
    status: u8,
}

impl WatchSource {
    /// Watches `targets`; `size_override` is `-s` (it applies to a single `PID:FD`);
    /// `interval_ns` is how long a closed descriptor stays on screen. `problems` are the
    /// items that could not be resolved (reported as errors, status 2). Checks every item
    /// at once (like pv, before the first update).
    pub(crate) fn new(
        targets: Vec<Target>,
        problems: Vec<String>,
        size_override: Option<u64>,
        interval_ns: u64,
    ) -> WatchSource {
        let with_pid = targets.windows(2).any(|w| w[0].pid != w[1].pid);
        // --size applies to a single PID:FD (the manual's promise; pv ignores it).
        let size_override = match targets.as_slice() {
            [Target { fd: Some(_), .. }] => size_override,
            _ => None,
        };
        let mut source = WatchSource {
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
            interval_ns,
            next_id: 1,
            cwd: std::env::current_dir()
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default(),
            events: Vec::new(),
            status: 0,
        };
        for problem in problems {
            source.problem(problem, None);
        }
        let messages = source.start();
        for (message, errno) in messages {
            source.problem(message, errno);
        }
        source
    }

    fn problem(&mut self, message: String, errno: Option<i32>) {
        self.status |= status::ACCESS;
        let error = Error::other_errno(status::ACCESS, message, errno);
        self.events.push(Event::Error(error));
    }

    /// True when every item has ended (its process or descriptor is gone).
    pub(crate) fn all_finished(&self) -> bool {
        self.items.iter().all(|i| i.finished)
    }

    /// Start-up checks of every item; returns the messages (each status bit 2), with the
    /// system error number behind each.
    fn start(&mut self) -> Vec<(String, Option<i32>)> {
        let mut messages = Vec::new();
        for index in 0..self.items.len() {
            let Target { pid, fd } = self.items[index].target;
            if let Err(e) = sys::process_check(pid) {
                messages.push((
                    format!("pid {pid}: {}", sys::strerror(&e)),
                    e.raw_os_error(),
                ));
                self.items[index].finished = true;
                continue;
            }
            match fd {
                Some(fd) => match fds::inspect(pid, fd, true) {
                    Ok(info) => {
                        if !self.add(index, pid, fd, info) {
                            // Closed between the look and the first reading.
                            let gone =
                                fds::FdError::Link(std::io::Error::from_raw_os_error(libc::ENOENT));
                            messages.push((gone.message(pid, fd), gone.errno()));
                            self.items[index].finished = true;
                        }
                    }
                    Err(e) => {
                        messages.push((e.message(pid, fd), e.errno()));
                        self.items[index].finished = true;
                    }
                },
                None => {
                    if let Err(e) = crate::procfs::fds(pid) {
                        messages.push((
                            format!("pid {pid}: {}", sys::strerror(&e)),
                            e.raw_os_error(),
                        ));
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
        let Some(position) = fds::position(pid, fd, &info) else {
            return false;
        };
        let size = self.size_override.filter(|&s| s > 0).unwrap_or(info.size);
        self.fds.push(Watched {
            item,
            pid,
            fd,
            size,
            position,
            progress: 0,
            start_ns: sys::monotonic_ns(),
            closed_at: None,
            id: self.next_id,
            info,
        });
        self.next_id += 1;
        true
    }

    /// A whole process: finish it if it is gone, else add the files it opened since.
    fn rescan(&mut self, index: usize) {
        let pid = self.items[index].target.pid;
        let listed = if fds::process_gone(pid) {
            None
        } else {
            crate::procfs::fds(pid).ok()
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
                let link = crate::procfs::fd_path(pid, fd);
                use std::os::unix::fs::MetadataExt;
                if std::fs::metadata(&link).is_ok_and(|m| m.dev() == dev && m.ino() == ino) {
                    continue;
                }
            }
            match fds::inspect(pid, fd, false) {
                Ok(info) => {
                    self.items[index].skipped.remove(&fd);
                    self.add(index, pid, fd, info);
                }
                Err(_) => {
                    use std::os::unix::fs::MetadataExt;
                    let link = crate::procfs::fd_path(pid, fd);
                    if let Ok(m) = std::fs::metadata(&link) {
                        self.items[index].skipped.insert(fd, (m.dev(), m.ino()));
                    }
                }
            }
        }
    }

    /// One sampling round: rescan whole processes, read positions, retire descriptors that
    /// have been closed for longer than one interval.
    fn sample_round(&mut self, now: u64) {
        for index in 0..self.items.len() {
            if !self.items[index].finished && self.items[index].target.fd.is_none() {
                self.rescan(index);
            }
        }
        for w in &mut self.fds {
            if w.closed_at.is_some() {
                continue;
            }
            match fds::position(w.pid, w.fd, &w.info) {
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
        // The last round retires nothing: a process's descriptors can be found closed a
        // round apart (it exited between two readings), and a round late on a busy
        // machine would then leave the first of them off the final lines.
        if self.all_finished() {
            return;
        }
        let interval = self.interval_ns;
        self.fds.retain(|w| {
            w.closed_at
                .is_none_or(|at| now.saturating_sub(at) <= interval)
        });
    }

    /// `%N ` goes in front of the format when several items are watched or the first is a
    /// whole process.
    pub(crate) fn needs_name_prefix(&self) -> bool {
        self.items.len() > 1 || self.items.first().is_some_and(|i| i.target.fd.is_none())
    }

    /// The meter of one descriptor.
    fn meter(&self, w: &Watched, prefix: bool) -> MeterState {
        let note = match w.info.source {
            Measure::Offset => "",
            Measure::Process(counter) => counter.label(),
        };
        let path = relative(w.info.path.as_str(), self.cwd.as_str()).to_string();
        let raw_path = w.info.raw_path.as_deref().map(|raw| {
            let bytes = relative(raw.as_bytes(), self.cwd.as_bytes());
            std::ffi::OsStr::from_bytes(bytes).to_os_string()
        });
        MeterState {
            id: w.id,
            role: Role::Descriptor,
            label: Label::Descriptor {
                pid: w.pid,
                fd: w.fd,
                path,
                raw_path,
                note,
                with_pid: self.with_pid,
                // A pipe or socket shows a process's count, not a position: its name and
                // marker are shown even when it is watched alone.
                prefix: prefix || !note.is_empty(),
            },
            amount: w.position,
            moved: w.progress,
            size: w.size,
            started_ns: Some(w.start_ns),
            phase: if w.closed_at.is_some() {
                Phase::Ended
            } else {
                Phase::Running
            },
            ..MeterState::default()
        }
    }
}

impl Source for WatchSource {
    fn watches(&self) -> bool {
        true
    }

    fn sample(&mut self, now_ns: u64, out: &mut Vec<MeterState>) {
        self.sample_round(now_ns);
        let prefix = self.needs_name_prefix();
        out.extend(self.fds.iter().map(|w| self.meter(w, prefix)));
    }

    fn events(&mut self, out: &mut Vec<Event>) {
        out.append(&mut self.events);
    }

    fn finished(&mut self) -> bool {
        self.all_finished()
    }

    fn status(&self) -> u8 {
        self.status
    }

    fn final_update(&self) -> bool {
        false
    }
}

/// `path` relative to `cwd` when it lies below it (and `cwd` is not `/`); for text and for
/// raw bytes alike.
pub(crate) fn relative<'a, T: Relative + ?Sized>(path: &'a T, cwd: &T) -> &'a T {
    path.below(cwd).unwrap_or(path)
}

/// A path as text or as bytes, for [`relative`].
pub(crate) trait Relative {
    /// What is left of `self` below the directory `cwd`, if it lies below it.
    fn below(&self, cwd: &Self) -> Option<&Self>;
}

impl Relative for [u8] {
    fn below(&self, cwd: &[u8]) -> Option<&[u8]> {
        if cwd.is_empty() || cwd == b"/" {
            return None;
        }
        let rest = self.strip_prefix(cwd)?.strip_prefix(b"/")?;
        (!rest.is_empty()).then_some(rest)
    }
}

impl Relative for str {
    fn below(&self, cwd: &str) -> Option<&str> {
        let rest = self.as_bytes().below(cwd.as_bytes())?;
        // A suffix after a '/' of a str is on a character boundary.
        self.get(self.len() - rest.len()..)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A shell holding two files open on descriptors 3 and 4 (and no other file); each
    /// line written to it does the next step: close 4, then exit.
    fn holder(a: &std::path::Path, b: &std::path::Path) -> std::process::Child {
        let child = std::process::Command::new("sh")
            .args([
                "-c",
                "exec 3<\"$1\" 4<\"$2\"; read x; exec 4<&-; read x",
                "sh",
            ])
            .arg(a)
            .arg(b)
            .stdin(std::process::Stdio::piped())
            // (Not the test's own outputs, which may be files: they would be watched too.)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("sh");
        let fd4 = crate::procfs::fd_path(child.id(), 4);
        sys::wait_until("sh to open 4", || std::fs::read_link(&fd4).is_ok());
        child
    }

    /// A process whose descriptors were found closed a round apart (it exited between two
    /// readings), with the last round late: the final lines still show both.
    #[test]
    fn the_final_round_keeps_every_descriptor_of_an_ended_process() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::write(&a, b"aaaa").unwrap();
        std::fs::write(&b, b"bbbb").unwrap();
        let mut child = holder(&a, &b);
        let pid = child.id();
        const SEC: u64 = 1_000_000_000;
        let target = Target { pid, fd: None };
        let mut source = WatchSource::new(vec![target], Vec::new(), None, SEC / 10);
        let mut out = Vec::new();
        source.sample(SEC, &mut out);
        assert_eq!(out.len(), 2);
        let mut stdin = child.stdin.take().unwrap();
        writeln!(stdin).unwrap();
        let fd4 = crate::procfs::fd_path(pid, 4);
        sys::wait_until("sh to close 4", || std::fs::read_link(&fd4).is_err());
        out.clear();
        source.sample(2 * SEC, &mut out);
        assert_eq!(out.len(), 2, "a closed descriptor stays for an interval");
        assert!(!source.all_finished());
        drop(stdin);
        child.wait().unwrap();
        out.clear();
        // Three intervals later: the process has ended, descriptor 3 closed with it.
        source.sample(2 * SEC + 3 * SEC / 10, &mut out);
        assert!(source.all_finished());
        let fds: Vec<i32> = source.fds.iter().map(|w| w.fd).collect();
        assert_eq!(fds, [3, 4]);
        assert_eq!(out.len(), 2);
        assert!(out.iter().all(|m| m.phase == Phase::Ended));
    }

    #[test]
    fn relative_paths() {
        assert_eq!(relative("/tmp/x/big", "/tmp/x"), "big");
        assert_eq!(relative("/tmp/xy/big", "/tmp/x"), "/tmp/xy/big");
        assert_eq!(relative("/tmp/x/", "/tmp/x"), "/tmp/x/");
        assert_eq!(relative("/etc/passwd", "/"), "/etc/passwd");
        assert_eq!(relative("pipe:[12]", "/tmp"), "pipe:[12]");
        assert_eq!(relative(&b"/tmp/x/\xffbig"[..], b"/tmp/x"), b"\xffbig");
        assert_eq!(relative(&b"/tmp/x"[..], b"/tmp/x"), b"/tmp/x");
    }
}
