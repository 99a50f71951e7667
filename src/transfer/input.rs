//! Inputs and the output: opening, the "input is the output" check, and total-size detection
//!.
//!
//! Must not: print. Errors come back as values; the engine queues them as events.

use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::sys::{self, FileInfo, FileKind};

/// One input of a transfer, as the plan resolved it.
#[derive(Debug)]
pub(crate) struct InputSpec {
    /// Where the data comes from.
    pub source: InputSource,
    /// The name shown in messages: the operand, `(stdin)` for `-`, `(pipe)` for a pipe
    /// handed over by `-M`.
    pub name: String,
    /// Line counts made while the total size was counted (`-l`), reused by the transfer
    /// while the file is unchanged.
    pub(super) memo: Option<super::linememo::Memo>,
}

/// Where an input's data comes from.
#[derive(Debug)]
pub(crate) enum InputSource {
    /// Standard input (`-`).
    Stdin,
    /// A file named on the command line (opened when the transfer reaches it).
    Path(PathBuf),
    /// A descriptor already open (a pipe from the command of `-M`).
    Fd(OwnedFd),
}

impl InputSpec {
    /// The input for a command-line operand (`-` is standard input).
    pub(crate) fn operand(operand: &OsStr) -> InputSpec {
        if operand == "-" {
            InputSpec::new(InputSource::Stdin, "(stdin)".into())
        } else {
            let name = operand.to_string_lossy().into_owned();
            InputSpec::new(InputSource::Path(PathBuf::from(operand)), name)
        }
    }

    /// An input from an open descriptor, shown as `name`.
    pub(crate) fn new(source: InputSource, name: String) -> InputSpec {
        InputSpec {
            source,
            name,
            memo: None,
        }
    }

    /// What `stat` says about it, without opening it (opening a FIFO would take its
    /// writer's pair, and leave it with EPIPE).
    pub(crate) fn info(&self) -> io::Result<FileInfo> {
        match &self.source {
            InputSource::Stdin => sys::fstat(sys::stdin_fd()),
            InputSource::Fd(fd) => sys::fstat(fd.as_fd()),
            InputSource::Path(path) => sys::stat(path),
        }
    }

    /// Opens the input and stats it.
    pub(crate) fn open(&self) -> io::Result<(Source<'_>, FileInfo)> {
        let source = match &self.source {
            // Closed when rpv started (Rust's runtime put /dev/null there).
            InputSource::Stdin if crate::stdio::stdin_was_closed() => {
                return Err(io::Error::from_raw_os_error(libc::EBADF));
            }
            InputSource::Stdin => Source::Borrowed(sys::stdin_fd()),
            InputSource::Fd(fd) => Source::Borrowed(fd.as_fd()),
            InputSource::Path(path) => Source::File(open_for_reading(path)?),
        };
        let info = sys::fstat(source.fd())?;
        Ok((source, info))
    }
}

/// `open(path, O_RDONLY|O_CLOEXEC)`, retried after a signal unless the user asked rpv to
/// exit (std's `File::open` always retries, so a FIFO without a writer would hold the data
/// thread after Ctrl-C): then ErrorKind::Interrupted.
fn open_for_reading(path: &Path) -> io::Result<File> {
    use rustix::fs::{Mode, OFlags};
    loop {
        match rustix::fs::open(path, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty()) {
            Ok(fd) => return Ok(File::from(fd)),
            Err(rustix::io::Errno::INTR) if crate::signals::exit_requested() => {
                return Err(io::Error::from(io::ErrorKind::Interrupted));
            }
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
}

/// An open input.
#[derive(Debug)]
pub(crate) enum Source<'a> {
    /// A descriptor owned elsewhere (standard input, a `-M` pipe).
    Borrowed(BorrowedFd<'a>),
    /// A file opened for this transfer.
    File(File),
}

impl Source<'_> {
    /// The descriptor to read from.
    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        match self {
            Source::Borrowed(fd) => *fd,
            Source::File(f) => f.as_fd(),
        }
    }
}

/// True if an input with `input` metadata is the same file as the output (pv's rule: same
/// device and inode, and the input is a regular file or block device; a tty never is).
pub(crate) fn is_output(input: &FileInfo, output: &FileInfo) -> bool {
    matches!(input.kind, FileKind::Regular | FileKind::Block)
        && input.dev == output.dev
        && input.ino == output.ino
}

/// Size of a block device in bytes, by seeking to its end. Opened without blocking (a FIFO
/// put at the path since it was looked at would otherwise hold the open, which std retries
/// through every signal) and checked to be a block device still.
fn block_device_size(path: &Path) -> io::Result<u64> {
    use rustix::fs::{Mode, OFlags};
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let f = File::from(rustix::fs::open(path, flags, Mode::empty())?);
    if sys::fstat(f.as_fd())?.kind != FileKind::Block {
        return Err(io::Error::from_raw_os_error(libc::ENOTBLK));
    }
    sys::lseek(f.as_fd(), 0, libc::SEEK_END)
}

/// Total size of the inputs in bytes (pv's rule, with its mixed-input bug fixed): regular
/// files and block devices add up; any other kind (pipe, tty, char device) makes the total
/// unknown (0) for good. Missing or unreadable inputs are skipped: they will be skipped by
/// the transfer too.
pub(crate) fn total_bytes(inputs: &[InputSpec]) -> u64 {
    let mut total = 0u64;
    for input in inputs {
        if let InputSource::Path(path) = &input.source {
            if !sys::readable(path) {
                continue;
            }
        }
        let Ok(info) = input.info() else { continue };
        match info.kind {
            FileKind::Regular => total += info.size,
            FileKind::Block => {
                let size = match &input.source {
                    InputSource::Path(path) => block_device_size(path),
                    InputSource::Stdin => block_device_size(Path::new("/dev/stdin")),
                    InputSource::Fd(fd) => sys::lseek(fd.as_fd(), 0, libc::SEEK_END),
                };
                match size {
                    Ok(n) => total += n,
                    Err(_) => return 0,
                }
            }
            FileKind::Directory => {}
            _ => return 0,
        }
    }
    total
}

/// Total number of lines (separators) in the inputs, for `-l` without `--size`: every input
/// must be a regular file, else 0 (unknown). Counts from each file's current offset
/// (through a read-only mapping, or `pread`), so stdin's position is not disturbed (pv
/// rewinds it). The counts of long files are kept in their [`InputSpec`] for the transfer.
pub(crate) fn total_lines(inputs: &mut [InputSpec], separator: u8) -> io::Result<u64> {
    let mut total = 0u64;
    for input in inputs.iter_mut() {
        // Only regular files are opened here (opening a FIFO would take its writer).
        match input.info() {
            Ok(info) if info.kind == FileKind::Regular => {}
            Ok(_) => return Ok(0),
            Err(_) => continue,
        }
        let Ok((source, info)) = input.open() else {
            continue;
        };
        if info.kind != FileKind::Regular {
            return Ok(0);
        }
        let fd = source.fd();
        let offset = sys::lseek(fd, 0, libc::SEEK_CUR).unwrap_or(0);
        let (lines, memo) = super::lines::count_to_end(fd, offset, separator)?;
        total += lines;
        drop(source);
        input.memo = memo;
    }
    Ok(total)
}

/// Resolves `--size @PATH`: a regular file's size, a directory tree's total of regular-file
/// sizes (symlinks not followed), a block device's size, else `st_size`. Errors carry pv's
/// texts.
pub(crate) fn size_of_path(path: &Path) -> Result<u64, Error> {
    let shown = path.display();
    let meta = std::fs::symlink_metadata(path)
        .and_then(|m| {
            if m.file_type().is_symlink() {
                std::fs::metadata(path)
            } else {
                Ok(m)
            }
        })
        .map_err(|e| {
            Error::Usage(format!(
                "{shown}: failed to stat file: {}",
                sys::strerror(&e)
            ))
        })?;
    let ft = meta.file_type();
    if ft.is_dir() {
        return dir_size(path).map_err(|e| Error::Usage(format!("{shown}: {}", sys::strerror(&e))));
    }
    use std::os::unix::fs::FileTypeExt;
    if ft.is_block_device() {
        return block_device_size(path).map_err(|e| {
            Error::Usage(format!(
                "{shown}: failed to determine size of block device: {}",
                sys::strerror(&e)
            ))
        });
    }
    Ok(meta.len())
}

fn dir_size(dir: &Path) -> io::Result<u64> {
    let mut total = 0;
    for (name, kind) in sys::dir_entries(dir)? {
        let path = dir.join(name);
        let kind = match kind {
            Some(kind) => kind,
            None => std::fs::symlink_metadata(&path).map(|m| sys_kind(&m))?,
        };
        if kind == FileKind::Directory {
            // Unreadable subdirectories are skipped, like pv's nftw walk.
            total += dir_size(&path).unwrap_or(0);
        } else if kind == FileKind::Regular {
            total += std::fs::symlink_metadata(&path).map_or(0, |m| m.len());
        }
    }
    Ok(total)
}

/// Directory, regular file or other, from metadata not followed through a symlink.
fn sys_kind(meta: &std::fs::Metadata) -> FileKind {
    if meta.is_dir() {
        FileKind::Directory
    } else if meta.is_file() {
        FileKind::Regular
    } else {
        FileKind::Other
    }
}
