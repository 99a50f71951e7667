//! `-U`: the store between the two phases, and the first phase (the inputs into it).
//!
//! Owns: making the store (`-U -`: a file without a name; `-U FILE`: a regular file only)
//! and the store's messages. Must not: move data.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{transfer, Job, Output, Sizing, Store};
use crate::cli::Options;
use crate::error::{status, Error};
use crate::meter::Role;
use crate::ownfile;
use crate::signals;
use crate::sink::DisplayConfig;
use crate::sys::{self, FileKind};
use crate::transfer::{input, InputSpec};

/// The first phase of `-U PATH`: the inputs into the store (the tees get the forwarded
/// data, in the second phase).
pub(super) fn first_phase(o: &Options, display: &DisplayConfig, path: &Path) -> Result<Job, Error> {
    let inputs = super::operands(o);
    let (store, output) = if path.as_os_str() == "-" {
        unnamed()?
    } else {
        ownfile::check_kind("-U", path)?;
        let file = open_store(path, &inputs)?;
        (
            Store::Path(path.to_path_buf()),
            Output::File(Arc::new(file)),
        )
    };
    let sizing = Sizing::Inputs(&o.size);
    let mut first = transfer(
        o,
        display,
        inputs,
        output,
        Role::Transfer,
        sizing,
        Vec::new(),
    )?;
    // A write error there is the store's, not the output's.
    first.settings.output_name = Some(if path.as_os_str() == "-" {
        format!("-U - (in {})", std::env::temp_dir().display())
    } else {
        format!("-U {}", path.display())
    });
    Ok(Job::Store(first, store))
}

/// `-U -`: a file without a name, and the writer the first phase writes it through.
fn unnamed() -> Result<(Store, Output), Error> {
    let file = tempfile::tempfile().map_err(temp_failed)?;
    // The writer is the same file opened again, not a duplicate of `file`: a duplicate
    // shares its position, and a store phase ended by a stall leaves its data thread in a
    // splice that, when it returns, puts back the position it started from, after the
    // forward phase has rewound it (the forward then read nothing). A duplicate only where
    // the file cannot be opened again.
    let reopened = std::fs::OpenOptions::new()
        .write(true)
        .open(crate::procfs::own_fd_path(file.as_raw_fd()));
    let writer = match reopened {
        Ok(writer) => writer,
        Err(_) => file.try_clone().map_err(|err| Error::OwnFile {
            option: None,
            path: PathBuf::from("-"),
            err,
        })?,
    };
    Ok((Store::Unnamed(file), Output::File(Arc::new(writer))))
}

/// `-U -`: the temporary file could not be made; the message names the directory, and
/// `TMPDIR` when that is where it came from.
fn temp_failed(err: io::Error) -> Error {
    let dir = std::env::temp_dir();
    let from = if std::env::var_os("TMPDIR").is_some_and(|v| !v.is_empty()) {
        " (TMPDIR)"
    } else {
        ""
    };
    Error::other(
        status::REMOTE_OR_PID,
        format!(
            "-U -: cannot make a temporary file in {}{from}: {}",
            dir.display(),
            sys::strerror(&err)
        ),
    )
}

/// `-U FILE`: the store is written, then read back, so it must be a regular file (or not
/// exist yet): `/dev/null` would lose the data, `/dev/zero` give zeros for ever, a FIFO
/// wait for a reader that is rpv itself. Opened without waiting (a FIFO put there after
/// [`ownfile::check_kind`] is refused too), truncated unless every input is the store (then
/// the engine refuses them: input file is output file). Problems are the store's (status
/// 1, kind `file`), not the output's.
fn open_store(path: &Path, inputs: &[InputSpec]) -> Result<File, Error> {
    use rustix::fs::{Mode, OFlags};
    let failed = |err| Error::OwnFile {
        option: None,
        path: path.to_path_buf(),
        err,
    };
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let file = loop {
        match rustix::fs::open(path, flags, Mode::from_raw_mode(0o666)) {
            Ok(fd) => break File::from(fd),
            Err(rustix::io::Errno::INTR) if !signals::exit_requested() => {}
            Err(e) => return Err(failed(e.into())),
        }
    };
    let info = sys::fstat(file.as_fd()).map_err(failed)?;
    if info.kind != FileKind::Regular {
        return Err(Error::NotRegular {
            option: "-U",
            path: path.to_path_buf(),
            dir: false,
        });
    }
    sys::set_nonblocking(file.as_fd(), false).map_err(failed)?;
    let is_store = |i: &InputSpec| i.info().is_ok_and(|i| input::is_output(&i, &info));
    if inputs.is_empty() || !inputs.iter().all(is_store) {
        sys::ftruncate(file.as_fd(), 0).map_err(failed)?;
    }
    Ok(file)
}
