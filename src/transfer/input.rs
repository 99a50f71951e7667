//! Inputs and the output: opening, the "input is the output" check, and total-size detection
//! (spec 3.1–3.3).
//!
//! Must not: print. Errors come back as values; the engine queues pv's messages.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::Path;

use crate::sys::{self, FileInfo, FileKind};

/// An open input: stdin (borrowed) or a named file (owned).
#[derive(Debug)]
pub enum Source {
    /// Standard input (`-`).
    Stdin,
    /// A named file.
    File(File),
}

impl Source {
    /// The descriptor to read from.
    pub fn fd(&self) -> BorrowedFd<'_> {
        match self {
            Source::Stdin => sys::stdin_fd(),
            Source::File(f) => f.as_fd(),
        }
    }
}

/// Descriptors handed to the engine as inputs by [`hand_over`] (`-M` pipes).
static HANDED: std::sync::Mutex<Vec<(usize, std::os::fd::OwnedFd)>> =
    std::sync::Mutex::new(Vec::new());

/// Prefix of the operands made by [`hand_over`]: argv strings cannot contain NUL, so no
/// file named on the command line can collide with it.
const HANDED_PREFIX: &str = "\0fd:";

/// Makes an already open descriptor (a `-M` pipe) an input operand; the engine takes
/// ownership when it opens the operand.
pub fn hand_over(fd: std::os::fd::OwnedFd) -> String {
    let id = std::os::fd::AsRawFd::as_raw_fd(&fd) as usize;
    if let Ok(mut handed) = HANDED.lock() {
        handed.push((id, fd));
    }
    format!("{HANDED_PREFIX}{id}")
}

/// The name pv shows for an input operand: `(stdin)` for `-`.
pub fn display_name(operand: &str) -> &str {
    if operand == "-" {
        "(stdin)"
    } else if operand.starts_with(HANDED_PREFIX) {
        "(pipe)"
    } else {
        operand
    }
}

/// Opens an input operand and stats it.
pub fn open(operand: &str) -> io::Result<(Source, FileInfo)> {
    let source = if operand == "-" {
        if crate::stdio::stdin_was_closed() {
            // Closed when rpv started (Rust's runtime put /dev/null there).
            return Err(io::Error::from_raw_os_error(libc::EBADF));
        }
        Source::Stdin
    } else if let Some(id) = operand.strip_prefix(HANDED_PREFIX) {
        let taken = HANDED.lock().ok().and_then(|mut handed| {
            let at = handed.iter().position(|(i, _)| i.to_string() == id)?;
            Some(handed.remove(at).1)
        });
        Source::File(File::from(
            taken.ok_or_else(|| io::Error::from_raw_os_error(libc::EBADF))?,
        ))
    } else {
        Source::File(File::open(operand)?)
    };
    let info = sys::fstat(source.fd())?;
    Ok((source, info))
}

/// True if an input with `input` metadata is the same file as the output (pv's rule: same
/// device and inode, and the input is a regular file or block device; a tty never is).
pub fn is_output(input: &FileInfo, output: &FileInfo) -> bool {
    matches!(input.kind, FileKind::Regular | FileKind::Block)
        && input.dev == output.dev
        && input.ino == output.ino
}

/// Size of a block device in bytes, by seeking to its end.
fn block_device_size(path: &Path) -> io::Result<u64> {
    let f = File::open(path)?;
    sys::lseek(f.as_fd(), 0, libc::SEEK_END)
}

/// Total size of the inputs in bytes (spec 3.2, with pv's mixed-input bug fixed): regular
/// files and block devices add up; any other kind (pipe, tty, char device) makes the total
/// unknown (0) for good. Missing or unreadable inputs are skipped: they will be skipped by
/// the transfer too.
pub fn total_bytes(operands: &[String]) -> u64 {
    let mut total = 0u64;
    for operand in operands {
        if operand.starts_with(HANDED_PREFIX) {
            return 0; // a pipe from `-M`
        }
        let info = if operand == "-" {
            sys::fstat(Source::Stdin.fd())
        } else if !sys::readable(Path::new(operand)) {
            continue;
        } else {
            // stat, not open: opening a FIFO would take (and drop) its writer.
            sys::stat(Path::new(operand))
        };
        let Ok(info) = info else { continue };
        match info.kind {
            FileKind::Regular => total += info.size,
            FileKind::Block => {
                let path = if operand == "-" {
                    "/dev/stdin"
                } else {
                    operand
                };
                match block_device_size(Path::new(path)) {
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

/// Total number of lines (separators) in the inputs, for `-l` without `--size` (spec 3.2):
/// every input must be a regular file, else 0 (unknown). Counts from each file's current
/// offset (through a read-only mapping, or `pread`), so stdin's position is not disturbed
/// (pv rewinds it).
pub fn total_lines(operands: &[String], separator: u8) -> io::Result<u64> {
    let mut total = 0u64;
    for operand in operands {
        // Only regular files are opened here (opening a FIFO would take its writer, and
        // opening a `-M` pipe would take it from the engine).
        if operand.starts_with(HANDED_PREFIX) {
            return Ok(0);
        }
        if operand != "-" {
            match sys::stat(Path::new(operand)) {
                Ok(info) if info.kind == FileKind::Regular => {}
                Ok(_) => return Ok(0),
                Err(_) => continue,
            }
        }
        let (source, info) = match open(operand) {
            Ok(v) => v,
            Err(_) => continue,
        };
        if info.kind != FileKind::Regular {
            return Ok(0);
        }
        let fd = source.fd();
        let offset = sys::lseek(fd, 0, libc::SEEK_CUR).unwrap_or(0);
        total += super::lines::count_to_end(fd, offset, separator)?;
    }
    Ok(total)
}

/// Resolves `--size @PATH` (spec 1.6): a regular file's size, a directory tree's total of
/// regular-file sizes (symlinks not followed), a block device's size, else `st_size`.
/// Errors are pv's texts (without the `prog: ` prefix).
pub fn size_of_path(path: &str) -> Result<u64, String> {
    let meta = std::fs::symlink_metadata(path)
        .and_then(|m| {
            if m.file_type().is_symlink() {
                std::fs::metadata(path)
            } else {
                Ok(m)
            }
        })
        .map_err(|e| format!("{path}: failed to stat file: {}", sys::strerror(&e)))?;
    let ft = meta.file_type();
    if ft.is_dir() {
        return dir_size(Path::new(path)).map_err(|e| format!("{path}: {}", sys::strerror(&e)));
    }
    use std::os::unix::fs::FileTypeExt;
    if ft.is_block_device() {
        return block_device_size(Path::new(path)).map_err(|e| {
            format!(
                "{path}: failed to determine size of block device: {}",
                sys::strerror(&e)
            )
        });
    }
    Ok(meta.len())
}

fn dir_size(dir: &Path) -> io::Result<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let ft = entry.file_type()?;
        if ft.is_dir() {
            // Unreadable subdirectories are skipped, like pv's nftw walk.
            total += dir_size(&entry.path()).unwrap_or(0);
        } else if ft.is_file() {
            total += entry.metadata().map(|m| m.len()).unwrap_or(0);
        }
    }
    Ok(total)
}
