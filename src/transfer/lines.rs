//! Line counting (`-l`) without copying the data through rpv.
//!
//! - [`Path::TeeLines`], pipe input: `tee(2)` duplicates up to a pipe's worth of the input
//!   into a private pipe, `splice(2)` moves exactly those bytes to the output, and rpv
//!   `read()`s the private copy only to count separators. If the splice moves only part of
//!   them and then fails, only that part is counted; the rest is still in the input pipe and
//!   read/write takes over from there.
//! - [`Path::FileLines`], regular file input: `splice` (pipe output) or `copy_file_range`
//!   (regular file output) moves a chunk, and rpv counts the same file range with `pread`.
//!
//! Used only when nothing needs exact line boundaries: no `-S`/`-L` line budget, no `%A`/`%L`
//! capture, not `-C` (those keep the read/write line path, which cuts writes after
//! separators).
//!
//! Must not: allocate per chunk (the counting buffer and private pipe are made once).

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use super::linememo::{self, Memo};
use super::{grow_pipe, Engine, Path, Step, COPY_CHUNK};
use crate::error::{status, Error};
use crate::meter::Event;
use crate::sys::{self, FileInfo, FileKind, FileMap};

/// Bytes counted per read of the private pipe or pread of the file: small enough to stay in
/// L2 between the copy and the count.
const COUNT_CHUNK: usize = 128 << 10;
/// Bytes of a regular file mapped at a time for counting. Mapped file pages count in the
/// resident set, so this stays small (the memory target is 8 MiB).
const WINDOW: u64 = 2 << 20;

/// State of the fast line paths, kept across inputs.
#[derive(Default)]
pub(super) struct LineState {
    /// Private pipe (read end, write end) that tee(2) fills, and its capacity.
    side: Option<(OwnedFd, OwnedFd, usize)>,
    /// Counting buffer ([`COUNT_CHUNK`] bytes once used).
    buf: Vec<u8>,
    /// Offset of the next byte of the current regular-file input (FileLines).
    pos: Option<u64>,
    /// Read-only mapping of the current input around `pos`: (file offset, mapping).
    window: Option<(u64, FileMap)>,
    /// Counts of the current input made by the `-l` size count, while the file is unchanged.
    memo: Option<Memo>,
}

impl LineState {
    /// Forgets per-input state (called when an input starts).
    pub(super) fn next_input(&mut self) {
        self.pos = None;
        self.window = None;
        self.memo = None;
    }
}

/// The fast line path for an input of kind `info`, if line mode may use one.
pub(super) fn choose(info: &FileInfo, out: &FileInfo, budgets: bool) -> Option<Path> {
    if budgets {
        return None;
    }
    match (info.kind, out.kind) {
        (FileKind::Pipe, _) => Some(Path::TeeLines),
        (FileKind::Regular, FileKind::Pipe | FileKind::Regular) => Some(Path::FileLines),
        _ => None,
    }
}

impl Engine<'_> {
    /// One tee + splice + count round on a pipe input.
    pub(super) fn tee_lines_step(&mut self, fd: BorrowedFd<'_>, name: &str) -> Step {
        if self.limiter.is_some() {
            // A line limit set by -R: budgets need read/write (the private pipe is empty
            // between steps, so nothing is lost).
            return Step::Fallback;
        }
        if self.line_state.buf.is_empty() {
            self.line_state.buf = vec![0; COUNT_CHUNK];
        }
        if self.line_state.side.is_none() {
            let Ok((r, w)) = sys::pipe() else {
                return Step::Fallback;
            };
            let cap = grow_pipe(w.as_fd());
            self.line_state.side = Some((r, w, cap));
        }
        let fail = self.injected_failure();
        let Some((_, side_w, cap)) = self.line_state.side.as_ref() else {
            return Step::Fallback;
        };
        // The private pipe is empty here, so tee never waits on it.
        let len = (*cap).min(self.splice_len.max(64 << 10));
        let teed = if fail {
            Err(io::Error::from_raw_os_error(libc::EINVAL))
        } else {
            sys::tee(fd, side_w.as_fd(), len)
        };
        let n = match teed {
            Ok(0) => return Step::NextInput,
            Ok(n) => n,
            Err(e) => {
                return match e.raw_os_error() {
                    Some(libc::EINTR) => Step::Continue,
                    Some(libc::EAGAIN) => {
                        let _ = sys::poll_one(fd, libc::POLLIN, 100);
                        Step::Continue
                    }
                    _ => Step::Fallback,
                }
            }
        };
        let (moved, mut end, interrupted) = self.splice_teed(fd, n);
        let (lines, failure) = self.drain_side(n, moved);
        self.read += moved as u64;
        self.account(moved, lines);
        if let Some((uncounted, e)) = failure {
            // The bytes went out, but some were never counted: say so (status 16), and count
            // the rest of this input on the read/write path.
            self.progress.emit(Event::Error(Error::other(
                status::TRANSFER,
                format!(
                    "{name}: line count is short: {uncounted} bytes could not be counted: {}",
                    sys::strerror(&e)
                ),
            )));
            if end.is_none() {
                end = Some(Step::Fallback);
            }
        }
        match end {
            _ if interrupted => Step::End,
            None => Step::Continue,
            Some(Step::End) => self.output_gone(),
            Some(step) => step,
        }
    }

    /// Moves exactly the `n` bytes just duplicated from `fd` to the output: how many moved,
    /// the step that ended it early (the output gone, a failure), and whether the user
    /// interrupted it (the display loop kicks this thread; what moved is counted).
    fn splice_teed(&mut self, fd: BorrowedFd<'_>, n: usize) -> (usize, Option<Step>, bool) {
        let mut moved = 0;
        while moved < n {
            let result = if self.injected_failure() {
                Err(io::Error::from_raw_os_error(libc::EINVAL))
            } else {
                sys::splice(fd, self.out, n - moved)
            };
            match result {
                Ok(0) => return (moved, Some(Step::Fallback), false),
                Ok(k) => moved += k,
                Err(e) => match e.raw_os_error() {
                    Some(libc::EINTR | libc::EAGAIN) if self.stopping() => {
                        return (moved, None, true);
                    }
                    Some(libc::EINTR) => {}
                    Some(libc::EAGAIN) => {
                        let _ = sys::poll_one(self.out, libc::POLLOUT, 100);
                    }
                    Some(libc::EPIPE) => return (moved, Some(Step::End), false),
                    _ => return (moved, Some(Step::Fallback), false),
                },
            }
        }
        (moved, None, false)
    }

    /// One splice (or copy_file_range) from a regular file, then a count of the same range.
    pub(super) fn file_lines_step(&mut self, fd: BorrowedFd<'_>, name: &str) -> Step {
        if self.limiter.is_some() {
            // A line limit set by -R: budgets need read/write, from the current offset.
            return Step::Fallback;
        }
        if self.line_state.buf.is_empty() {
            self.line_state.buf = vec![0; COUNT_CHUNK];
        }
        let pos = match self.line_state.pos {
            Some(pos) => pos,
            None => match sys::lseek(fd, 0, libc::SEEK_CUR) {
                Ok(pos) => {
                    self.take_memo(fd, pos);
                    pos
                }
                Err(_) => return Step::Fallback,
            },
        };
        self.line_state.pos = Some(pos);
        let to_pipe = self.out_info.kind == FileKind::Pipe;
        let mut len = if to_pipe {
            self.splice_len.max(64 << 10)
        } else {
            COPY_CHUNK
        };
        if let Some(memo) = &self.line_state.memo {
            // The counts are good only while the file is the version that was counted.
            if sys::file_version(fd).ok() == Some(memo.version) {
                len = memo.aligned_len(pos, len as u64) as usize;
            } else {
                self.line_state.memo = None;
            }
        }
        let result = if self.injected_failure() {
            Err(io::Error::from_raw_os_error(libc::EINVAL))
        } else if to_pipe {
            sys::splice(fd, self.out, len)
        } else {
            sys::copy_file_range(fd, self.out, len)
        };
        match result {
            Ok(0) => Step::NextInput,
            Ok(n) => {
                let counted = self.count_file_range(fd, pos, n);
                self.line_state.pos = Some(pos + n as u64);
                self.read += n as u64;
                match counted {
                    Ok(lines) => {
                        self.account(n, lines);
                        Step::Continue
                    }
                    Err(e) => {
                        // The bytes went out uncounted: say so, and count the rest of this
                        // input on the read/write path (from the same offset).
                        self.account(n, 0);
                        self.progress.emit(Event::Error(Error::other(
                            status::TRANSFER,
                            format!(
                                "{name}: line count is short: up to {n} bytes could not be \
                                 counted: {}",
                                sys::strerror(&e)
                            ),
                        )));
                        Step::Fallback
                    }
                }
            }
            Err(e) => self.zero_copy_failed(fd, &e),
        }
    }

    /// Separators in the file range `[pos, pos + n)` (the bytes already went out), or the
    /// error that kept some of them from being counted.
    fn count_file_range(&mut self, fd: BorrowedFd<'_>, pos: u64, n: usize) -> io::Result<u64> {
        let sep = self.settings.separator;
        let LineState {
            window, buf, memo, ..
        } = &mut self.line_state;
        match memo {
            Some(memo) => {
                let mut failed = None;
                let lines = memo.lines(pos, pos + n as u64, |lo, hi| {
                    count_range(window, buf, fd, lo, hi - lo, sep).unwrap_or_else(|e| {
                        failed = Some(e);
                        0
                    })
                });
                failed.map_or(Ok(lines), Err)
            }
            None => count_range(window, buf, fd, pos, n as u64, sep),
        }
    }

    /// Takes the counts the `-l` size count made of this input, if it is unchanged.
    fn take_memo(&mut self, fd: BorrowedFd<'_>, pos: u64) {
        let Ok(version) = sys::file_version(fd) else {
            return;
        };
        let settings = self.settings;
        let memo = settings
            .inputs
            .get(self.input)
            .and_then(|i| i.memo.as_ref());
        self.line_state.memo = memo
            .filter(|m| m.fits(&version, settings.separator, pos))
            .cloned();
        if self.line_state.memo.is_some() {
            self.trace(|| "trace: line counts of the size count reused".to_string());
        }
    }

    /// Reads the `n` bytes tee put in the private pipe and counts the separators in the first
    /// `counted` of them. Interruptions and EAGAIN (the pipe is rpv's own and blocking, so
    /// only a neighbour's or a test's doing) are retried a while. Any other failure drops the
    /// private pipe (a new one is made) and comes back with how many of the `counted` bytes
    /// were not counted.
    fn drain_side(&mut self, n: usize, counted: usize) -> (u64, Option<(usize, io::Error)>) {
        /// Retries of EINTR/EAGAIN in a row before giving up.
        const RETRIES: u32 = 100;
        let sep = self.settings.separator;
        let state = &mut self.line_state;
        let Some((side_r, _, _)) = state.side.as_ref() else {
            return (0, None);
        };
        let (mut done, mut lines, mut retries) = (0, 0, 0);
        while done < n {
            let want = (n - done).min(state.buf.len());
            let e = match sys::read(side_r.as_fd(), &mut state.buf[..want]) {
                Ok(k) if k > 0 => {
                    let count_to = k.min(counted.saturating_sub(done));
                    lines += count(&state.buf[..count_to], sep);
                    done += k;
                    retries = 0;
                    continue;
                }
                // The write end is ours and open: end of file cannot happen.
                Ok(_) => io::Error::from(io::ErrorKind::UnexpectedEof),
                Err(e) => e,
            };
            let retry = matches!(e.raw_os_error(), Some(libc::EINTR | libc::EAGAIN));
            if retry && retries < RETRIES {
                retries += 1;
                if e.raw_os_error() == Some(libc::EAGAIN) {
                    let _ = sys::poll_one(side_r.as_fd(), libc::POLLIN, 10);
                }
                continue;
            }
            state.side = None;
            return (lines, Some((counted.saturating_sub(done), e)));
        }
        (lines, None)
    }
}

/// Separators in `data`.
fn count(data: &[u8], sep: u8) -> u64 {
    bytecount::count(data, sep) as u64
}

/// Separators in `[pos, pos + n)` of the regular file `fd`, counted from a read-only mapping
/// (`window`, moved forward as needed and kept for the next call) so no byte is copied; what
/// cannot be mapped (the file shrank, mmap refused, or pages vanished under the mapping
/// because another process truncated the file) is counted with `pread` into `buf`. Bytes
/// no longer in the file are not counted; a failed `pread` is an error.
fn count_range(
    window: &mut Option<(u64, FileMap)>,
    buf: &mut Vec<u8>,
    fd: BorrowedFd<'_>,
    pos: u64,
    n: u64,
    sep: u8,
) -> io::Result<u64> {
    let end = pos + n;
    let (mut at, mut lines) = (pos, 0);
    while at < end {
        let covered = matches!(window, Some((start, map))
            if *start <= at && at < *start + map.bytes().len() as u64);
        if !covered {
            *window = None;
            let size = sys::fstat(fd).map(|i| i.size).unwrap_or(0);
            if at >= size {
                break;
            }
            // SAFETY: rpv never writes to an input (one that is the output is refused before
            // any read), and the bytes are only counted, each once: a concurrent writer can
            // only make the count wrong (the size count's version check catches that), and a
            // truncation is caught by `take_fault` below.
            #[allow(unsafe_code)]
            let map = unsafe { FileMap::new(fd, at, (size - at).min(WINDOW) as usize) };
            match map {
                Ok(map) => *window = Some((at, map)),
                Err(_) => break,
            }
        }
        let Some((start, map)) = window.as_ref() else {
            break;
        };
        let bytes = map.bytes();
        let from = (at - start) as usize;
        let to = usize::try_from(end - start)
            .unwrap_or(usize::MAX)
            .min(bytes.len());
        let counted = count(&bytes[from..to], sep);
        if map.take_fault() {
            // The file shrank under the mapping (truncated by another process): what was
            // counted may include zero pages; count the rest with pread, which sees the truth.
            *window = None;
            break;
        }
        lines += counted;
        at = start + to as u64;
    }
    if at < end {
        lines += pread_count(buf, fd, at, end - at, sep)?;
    }
    Ok(lines)
}

/// Separators in `[pos, pos + n)` read with `pread` into `buf`; stops early at end of file
/// (the file shrank: those bytes are gone). EINTR and EAGAIN are retried a while; any other
/// failure is an error.
fn pread_count(
    buf: &mut Vec<u8>,
    fd: BorrowedFd<'_>,
    pos: u64,
    n: u64,
    sep: u8,
) -> io::Result<u64> {
    /// Retries of EINTR/EAGAIN in a row before giving up.
    const RETRIES: u32 = 100;
    if buf.is_empty() {
        *buf = vec![0; COUNT_CHUNK];
    }
    let (mut done, mut lines, mut retries) = (0u64, 0, 0);
    while done < n {
        let want = usize::try_from(n - done)
            .unwrap_or(usize::MAX)
            .min(buf.len());
        match sys::pread(fd, &mut buf[..want], pos + done) {
            Ok(0) => break,
            Ok(k) => {
                lines += count(&buf[..k], sep);
                done += k as u64;
                retries = 0;
            }
            Err(e)
                if matches!(e.raw_os_error(), Some(libc::EINTR | libc::EAGAIN))
                    && retries < RETRIES =>
            {
                retries += 1;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(lines)
}

/// Separators from `from` to the end of the regular file `fd` (for `-l` size detection),
/// and, for a long file, the counts per block for the transfer to reuse.
pub(crate) fn count_to_end(
    fd: BorrowedFd<'_>,
    from: u64,
    sep: u8,
) -> io::Result<(u64, Option<Memo>)> {
    let version = sys::file_version(fd)?;
    let size = version.size;
    let mut buf = Vec::new();
    let mut window = None;
    let mut lines = 0;
    let mut kept = None;
    if size.saturating_sub(from) >= linememo::MIN_LEN {
        // Count block by block and keep the counts for the transfer (FileLines).
        let mut memo = Memo::new(version, sep, from);
        while let Some((lo, hi)) = memo.next_block() {
            let n = count_range(&mut window, &mut buf, fd, lo, hi - lo, sep)?;
            memo.counts.push(u32::try_from(n).unwrap_or(u32::MAX));
            lines += n;
        }
        // Kept only if the file did not change while it was counted.
        if sys::file_version(fd).ok() == Some(version) {
            kept = Some(memo);
        }
    } else {
        lines = count_range(
            &mut window,
            &mut buf,
            fd,
            from,
            size.saturating_sub(from),
            sep,
        )?;
    }
    // The file may have grown since fstat: count the rest as pread finds it.
    let mut at = size.max(from);
    loop {
        if buf.is_empty() {
            buf = vec![0; COUNT_CHUNK];
        }
        let k = sys::pread(fd, &mut buf, at)?;
        if k == 0 {
            return Ok((lines, kept));
        }
        lines += count(&buf[..k], sep);
        at += k as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsFd;

    #[test]
    fn a_file_truncated_while_counted_is_counted_as_it_now_is() {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&[b'\n'; 3 * 4096]).unwrap();
        let (mut window, mut buf) = (None, Vec::new());
        // Map it by counting the first page, then truncate to one page.
        assert_eq!(
            count_range(&mut window, &mut buf, file.as_fd(), 0, 4096, b'\n').unwrap(),
            4096
        );
        file.set_len(4096 + 10).unwrap();
        // The rest of the old range: only the 10 bytes still in the file are counted, and
        // the process survives the vanished pages.
        let n = count_range(&mut window, &mut buf, file.as_fd(), 4096, 2 * 4096, b'\n').unwrap();
        assert_eq!(n, 10);
    }

    #[test]
    fn a_range_that_cannot_be_read_is_an_error_not_a_short_count() {
        // Write-only: it cannot be mapped for reading (EACCES) nor read with pread (EBADF).
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, [b'\n'; 8192]).unwrap();
        let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        let (mut window, mut buf) = (None, Vec::new());
        let e = count_range(&mut window, &mut buf, file.as_fd(), 0, 8192, b'\n').unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EBADF));
        // Past the end of the file there is nothing to count: not an error.
        let file = std::fs::File::open(&path).unwrap();
        let n = count_range(&mut window, &mut buf, file.as_fd(), 8100, 200, b'\n').unwrap();
        assert_eq!(n, 92);
    }
}
