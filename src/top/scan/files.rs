//! File and device flows: a descriptor's position from `/proc/PID/fdinfo/FD`, the size
//! from the file or `/sys/dev/block`; new descriptors only of processes walked at this
//! scan, positions only of processes that moved (or flows that have).

use std::collections::HashSet;

use super::{Instance, Scanner, Target};
use crate::procfs::{fdinfo_flags, fdinfo_pos};
use crate::top::{Flow, FlowView, Kind, Zoom};

/// A file or device flow's state.
pub(super) struct FileFlow {
    pub(super) id: u64,
    pub(super) pid: u32,
    pub(super) start: u64,
    pub(super) fd: i32,
    pub(super) dev: u64,
    pub(super) ino: u64,
    pub(super) device: bool,
    pub(super) path: String,
    pub(super) writes: bool,
    pub(super) pos: u64,
    pub(super) moved: u64,
    pub(super) size: u64,
    pub(super) growing: bool,
    pub(super) since_ns: u64,
    pub(super) last_move_ns: u64,
}

/// True if the `flags` of an `fdinfo` file open the file for writing only.
pub(super) fn write_only(flags: u32) -> bool {
    flags & libc::O_ACCMODE as u32 == libc::O_WRONLY as u32
}

impl Scanner {
    /// File and device flows: new descriptors of processes that moved, and the position
    /// of every followed one.
    pub(super) fn follow_files(&mut self, movers: &[u32], now_ns: u64, buf: &mut Vec<u8>) {
        // New candidates: regular files and block devices of processes walked at this scan
        // (they moved, or are new), not already followed.
        let mut candidates = Vec::new();
        for (&pid, p) in &self.procs {
            let rpv = matches!(p.instance, Some(Instance::Rpv(_) | Instance::Watching));
            if p.walked != self.generation || p.unreadable || rpv {
                continue;
            }
            for f in &p.fds {
                if let Target::File {
                    dev,
                    ino,
                    device,
                    path,
                } = &f.target
                {
                    let followed = self
                        .files
                        .iter()
                        .any(|x| x.pid == pid && x.fd == f.fd && x.dev == *dev && x.ino == *ino);
                    if !followed {
                        candidates.push((pid, p.start, f.fd, *dev, *ino, *device, path.clone()));
                    }
                }
            }
        }
        let movers: HashSet<u32> = movers.iter().copied().collect();
        for (pid, start, fd, dev, ino, device, path) in candidates {
            let Some((pos, flags)) = self.fdinfo(pid, fd, buf) else {
                continue;
            };
            let (size, growing) = self.file_size(pid, fd, device, dev);
            let id = self.new_id();
            self.files.push(FileFlow {
                id,
                pid,
                start,
                fd,
                dev,
                ino,
                device,
                path,
                writes: write_only(flags),
                pos,
                moved: 0,
                size,
                growing,
                since_ns: now_ns,
                last_move_ns: now_ns,
            });
        }
        // Positions of the followed descriptors.
        let mut files = std::mem::take(&mut self.files);
        files.retain_mut(|f| {
            let alive = self.procs.get(&f.pid).is_some_and(|p| {
                p.start == f.start
                    && p.fds.iter().any(|d| {
                        d.fd == f.fd
                            && matches!(&d.target, Target::File { dev, ino, .. }
                                if *dev == f.dev && *ino == f.ino)
                    })
            });
            let pos = if alive && (movers.contains(&f.pid) || f.moved > 0) {
                self.fdinfo(f.pid, f.fd, buf).map(|(pos, _)| pos)
            } else if alive {
                Some(f.pos)
            } else {
                None
            };
            let Some(pos) = pos else {
                if f.moved > 0 {
                    let flow = self.file_flow(f, true);
                    self.ended.push(flow);
                }
                return false;
            };
            if pos != f.pos {
                let (size, growing) = self.file_size(f.pid, f.fd, f.device, f.dev);
                // A position past the end is a seek, not data moved.
                if pos > f.pos && pos <= size.max(f.size) {
                    f.moved += pos - f.pos;
                }
                f.pos = pos;
                f.last_move_ns = now_ns;
                f.growing |= growing || (size != f.size && !f.device);
                f.size = size;
            }
            true
        });
        self.files = files;
    }

    /// The size of the file open on `pid`'s `fd` and whether it is being written (it
    /// grows with the position, so its size says nothing of the end).
    pub(super) fn file_size(&mut self, pid: u32, fd: i32, device: bool, dev: u64) -> (u64, bool) {
        if device {
            return (self.proc.device_size(dev), false);
        }
        match self.proc.fd_stat(pid, fd as u32) {
            Ok(m) => (m.size, false),
            Err(_) => (0, false),
        }
    }

    pub(super) fn fdinfo(&mut self, pid: u32, fd: i32, buf: &mut Vec<u8>) -> Option<(u64, u32)> {
        self.cost.fdinfo += 1;
        self.proc.fdinfo(pid, fd as u32, buf).ok()?;
        let text = String::from_utf8_lossy(buf);
        Some((fdinfo_pos(&text)?, fdinfo_flags(&text)?))
    }

    pub(super) fn file_flow(&self, f: &FileFlow, ended: bool) -> Flow {
        let command = self.known_command(f.pid);
        // A file being written (or growing as it is read) has no end to measure against.
        let size = if f.writes || f.growing || f.pos > f.size {
            0
        } else {
            f.size
        };
        Flow {
            id: f.id,
            view: FlowView {
                kind: if f.device { Kind::Device } else { Kind::File },
                pid: f.pid,
                command,
                file: Some(f.path.clone()),
                fd: Some(f.fd),
                writes: f.writes,
                bottleneck: None,
                zoom: Zoom::Watch(f.pid, Some(f.fd)),
            },
            amount: f.pos,
            moved: f.moved,
            size,
            since_ns: f.since_ns,
            ended,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_only_mode() {
        assert!(write_only(0o100001));
        assert!(!write_only(0o100000));
        assert!(!write_only(0o100002), "read-write is not write-only");
    }
}
