//! The engine's path choice: which way an input moves, and what that way needs set up.
//!
//! Owns: [`Engine::choose_path`] (per input: read/write, splice, `copy_file_range`, the
//! `/dev/zero` generator, zero-copy `-l`, the `--tee` fan-out), the splice length and the
//! pacer and small-write switch it resets, and growing pipes (never shrinking them).
//! Must not: move bytes (the chunk loops are in `mod.rs` and the path files) or handle a
//! failed call (`failure.rs`).

use std::os::fd::BorrowedFd;

use super::{lines, zero, Engine, Path, PIPE_SIZE};
use crate::sys::{self, FileInfo, FileKind};

impl Engine<'_> {
    pub(super) fn choose_path(&mut self, info: &FileInfo, fd: BorrowedFd<'_>) -> Path {
        self.line_state.next_input();
        self.adaptive.reset(false, None);
        self.pacer.reset(0, None);
        self.pace = false;
        let fan = self.tees_live();
        if let Some(path) = self.settings.hooks.force {
            // With --tee outputs the choice is between the fan-out and read/write.
            return match path {
                Path::ReadWrite => Path::ReadWrite,
                _ if fan => {
                    self.start_fanout(fd);
                    Path::Fanout
                }
                path => path,
            };
        }
        if !self.settings.zero_copy {
            return Path::ReadWrite;
        }
        let in_pipe = info.kind == FileKind::Pipe;
        let in_size = if in_pipe { grow_pipe(fd) } else { 0 };
        self.splice_len = self.out_pipe_size.max(in_size).max(64 << 10);
        if fan {
            // Line budgets cut writes after separators: read/write does that. Only a pipe
            // input can be tee'd; anything else is read once and written to every output.
            let budgets = self.settings.stop_at.is_some() || self.limiter.is_some();
            if !in_pipe || (self.settings.line_mode && budgets) {
                return Path::ReadWrite;
            }
            self.pacer.reset(in_size, self.settings.hooks.pace_ns);
            if self.out_info.kind != FileKind::Pipe {
                // Out of a pipe into a non-pipe: a quarter of the pipe per call (see below).
                self.splice_len = (self.splice_len / 4).max(64 << 10);
            }
            self.start_fanout(fd);
            return Path::Fanout;
        }
        if self.settings.line_mode {
            // Exact line budgets cut writes after separators: read/write does that.
            let budgets = self.settings.stop_at.is_some() || self.limiter.is_some();
            return lines::choose(info, &self.out_info, budgets).unwrap_or(Path::ReadWrite);
        }
        if zero::applies(info, self.settings.line_mode) {
            return Path::Zero;
        }
        let path = match (info.kind, self.out_info.kind) {
            (FileKind::Regular, FileKind::Regular) => Path::CopyRange,
            _ if in_pipe || self.out_info.kind == FileKind::Pipe => Path::Splice,
            _ => Path::ReadWrite,
        };
        self.adaptive.reset(
            in_pipe && path == Path::Splice,
            self.settings.hooks.adapt_every,
        );
        let pace_capacity = if path == Path::Splice { in_size } else { 0 };
        self.pacer.reset(pace_capacity, self.settings.hooks.pace_ns);
        if path == Path::Splice && (in_pipe != (self.out_info.kind == FileKind::Pipe)) {
            // One side is a pipe, the other not: a quarter of the pipe per call, so the
            // neighbour drains (or refills) the pipe while rpv fills (or empties) it, instead
            // of both taking turns on a whole pipe. Into a pipe, the data thread also leaves
            // the pipe to its reader for a moment before each call ([`SPLICE_PAUSE_NS`]).
            // Measured on a quiet 2-vCPU machine against an eighth, a half and the whole
            // pipe, with and without the pause or a zero-timeout poll in its place
            // (BENCHMARKS.md, issue 27).
            self.splice_len = (self.splice_len / 4).max(64 << 10);
            self.pace = !in_pipe;
        }
        path
    }
}

/// Grows a pipe to [`PIPE_SIZE`]; only ever grows. When the kernel refuses (EPERM: more
/// than `/proc/sys/fs/pipe-max-size`, or a per-user hard limit), half as much is tried, down
/// to the pipe's current size: `pipe-max-size` is a power of two pages, so a lower limit is
/// met exactly, without reading it (a read here would be one more system call).
/// Returns the resulting capacity.
///
/// The pipe is usually shared (the shell made it, a neighbour reads or writes it, maybe
/// more than one). Growing it changes nothing for them but how much it can hold: writes of
/// up to `PIPE_BUF` stay atomic, and a neighbour that made it larger keeps its size.
/// Shrinking could fail (EBUSY) or undo a neighbour's choice, so it never happens.
pub(super) fn grow_pipe(fd: BorrowedFd<'_>) -> usize {
    grow_pipe_to(fd, PIPE_SIZE)
}

/// [`grow_pipe`] with the capacity wanted.
fn grow_pipe_to(fd: BorrowedFd<'_>, mut want: usize) -> usize {
    let current = sys::pipe_size(fd).unwrap_or(64 << 10);
    while want > current {
        if let Ok(granted) = sys::set_pipe_size(fd, want) {
            return granted.max(current);
        }
        want /= 2;
    }
    current
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    fn pipe_max_size() -> usize {
        crate::procfs::pipe_max_size().unwrap()
    }

    #[test]
    fn pipes_grow_to_the_limit_and_never_shrink() {
        let max = pipe_max_size();
        let (r, _w) = sys::pipe().unwrap();
        let want = PIPE_SIZE.min(max);
        assert_eq!(grow_pipe(r.as_fd()), want);
        assert_eq!(sys::pipe_size(r.as_fd()).unwrap(), want);
        // Asked for less than it holds: unchanged.
        let (r, _w) = sys::pipe().unwrap();
        sys::set_pipe_size(r.as_fd(), 256 << 10).unwrap();
        assert_eq!(grow_pipe_to(r.as_fd(), 64 << 10), 256 << 10);
        assert_eq!(sys::pipe_size(r.as_fd()).unwrap(), 256 << 10);
        // Asked for more than the kernel allows: refused (EPERM without CAP_SYS_RESOURCE),
        // then half as much until it fits.
        let (r, _w) = sys::pipe().unwrap();
        let got = grow_pipe_to(r.as_fd(), 4 * max);
        assert!(got >= max, "{got} < {max}");
        assert_eq!(sys::pipe_size(r.as_fd()).unwrap(), got);
    }
}
