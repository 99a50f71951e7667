//! Opening the outputs: `-o` and every `--tee`, the way pv opens `-o`, with rpv's checks.
//!
//! Owns: creating and truncating output files (never an input's own file), refusing an
//! output that is rpv's own input pipe or a closed descriptor's path, and waiting for a
//! FIFO's reader (said on the terminal, through `term`, while it waits). Must not: write
//! data.

use std::fs::File;
use std::io;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::Output;
use crate::cli::Options;
use crate::error::Error;
use crate::signals;
use crate::sink::DisplayConfig;
use crate::sys::{self, FileKind};
use crate::transfer::outputs::{OutputMeter, TeeOutput};
use crate::transfer::{input, InputSpec};

/// Opens `-o FILE` (`-` or none: standard output) without truncating it, and truncates it
/// only if at least one input is not the output itself: `rpv -o x x` leaves `x` intact (pv
/// empties it first). The open is not restarted after a signal, so a Ctrl-C while waiting
/// for a FIFO's reader ends rpv at once. With `notice`, a FIFO without a reader is said to
/// be waited for while the open waits.
pub(crate) fn open_output(
    path: Option<&Path>,
    inputs: &[InputSpec],
    notice: bool,
) -> Result<Output, Error> {
    let Some(path) = path.filter(|p| p.as_os_str() != "-") else {
        return Ok(Output::Stdout);
    };
    let which = notice.then_some("-o");
    Ok(Output::File(Arc::new(open_file_output(
        path, inputs, which,
    )?)))
}

/// The output of `-M` (`-o FILE`, or standard output). rpv's standard input goes through
/// the command (or is the command's own, with `-M out`) to that output: when it is the same
/// file, the run is refused (status 4) before anything is truncated, as the plain
/// `rpv -o f < f` is.
pub(super) fn monitor_output(o: &Options, display: &DisplayConfig) -> Result<Output, Error> {
    let stdin = InputSpec::operand("-".as_ref());
    let output = open_output(
        o.output.as_deref(),
        std::slice::from_ref(&stdin),
        notices(display),
    )?;
    let clash = match (stdin.info(), sys::fstat(output.fd())) {
        (Ok(input), Ok(out)) => input::is_output(&input, &out),
        _ => false,
    };
    if clash {
        return Err(Error::InputIsOutput { name: stdin.name });
    }
    Ok(output)
}

/// Whether set-up may say on the terminal what it waits for (a FIFO's reader): the
/// progress display is shown there.
pub(super) fn notices(display: &DisplayConfig) -> bool {
    display.enabled && display.stderr_tty && !display.voice.records()
}

/// Opens an output file (`-o`, `--tee`): created if missing, truncated only if some input
/// is not that file. `which` (the option) is named in the notice shown while a FIFO waits
/// for its reader, if given.
fn open_file_output(path: &Path, inputs: &[InputSpec], which: Option<&str>) -> Result<File, Error> {
    let failed = |err| Error::Output {
        path: Some(path.to_path_buf()),
        err,
    };
    let file = match which {
        Some(which) => open_fifo_saying_so(path, which),
        None => open_for_writing(path),
    }
    .map_err(failed)?;
    let out_info = sys::fstat(file.as_fd()).map_err(failed)?;
    if crate::stdio::reaches_closed(path, &out_info) {
        return Err(failed(io::Error::from_raw_os_error(libc::EBADF)));
    }
    // rpv's own input pipe (`--tee /dev/stdin` with a pipe on stdin): what it wrote would
    // come back as input, for ever.
    if out_info.kind == FileKind::Pipe {
        let same_pipe = |i: &&InputSpec| {
            i.info().is_ok_and(|info| {
                info.kind == FileKind::Pipe && (info.dev, info.ino) == (out_info.dev, out_info.ino)
            })
        };
        if let Some(input) = inputs.iter().find(same_pipe) {
            return Err(Error::InputIsOutput {
                name: input.name.clone(),
            });
        }
    }
    if out_info.kind == FileKind::Regular {
        let is_out = |i: &InputSpec| {
            i.info()
                .is_ok_and(|info| input::is_output(&info, &out_info))
        };
        if inputs.is_empty() || !inputs.iter().all(is_out) {
            sys::ftruncate(file.as_fd(), 0).map_err(failed)?;
        }
    }
    Ok(file)
}

/// Opens every `--tee` path the way `-o` is opened (`-` is a second descriptor for standard
/// output, for `-o FILE --tee -`).
pub(super) fn open_tees(
    o: &Options,
    inputs: &[InputSpec],
    notice: bool,
) -> Result<Vec<TeeOutput>, Error> {
    let open = |path: &PathBuf| -> Result<TeeOutput, Error> {
        let shared = path.as_os_str() == "-";
        let file = if shared {
            sys::stdout_fd()
                .try_clone_to_owned()
                .map(File::from)
                .map_err(|err| Error::Output { path: None, err })?
        } else {
            open_file_output(path, inputs, notice.then_some("--tee"))?
        };
        let meter = Arc::new(OutputMeter::for_file(&file));
        Ok(TeeOutput {
            file,
            name: path.to_string_lossy().into_owned(),
            path: path.clone(),
            meter,
            shared,
        })
    };
    o.tees.iter().map(open).collect()
}

/// Like [`open_for_writing`]; but when `path` is a FIFO that no process reads yet (the open
/// would wait for one), a line on the terminal says so (`rpv: waiting for a reader of
/// PATH (--tee)`) until the reader comes, instead of a blank screen.
fn open_fifo_saying_so(path: &Path, which: &str) -> io::Result<File> {
    use rustix::fs::{Mode, OFlags};
    if !sys::stat(path).is_ok_and(|i| i.kind == FileKind::Pipe) {
        return open_for_writing(path);
    }
    // A writer's non-blocking open of a FIFO fails with ENXIO while it has no reader.
    let flags = OFlags::WRONLY | OFlags::NONBLOCK | OFlags::CLOEXEC;
    match rustix::fs::open(path, flags, Mode::empty()) {
        Ok(fd) => {
            let file = File::from(fd);
            sys::set_nonblocking(file.as_fd(), false)?;
            return Ok(file);
        }
        Err(rustix::io::Errno::NXIO) => {}
        Err(_) => return open_for_writing(path),
    }
    let text = format!(
        "waiting for a reader of {} ({which})",
        crate::display::printable(&path.to_string_lossy())
    );
    crate::term::saying_while(&text, || open_for_writing(path))
}

/// `open(path, O_WRONLY|O_CREAT|O_CLOEXEC, 0666)`, retried after a signal unless the user
/// asked rpv to exit (std's `File::open` always retries).
fn open_for_writing(path: &Path) -> io::Result<File> {
    use rustix::fs::{Mode, OFlags};
    loop {
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::CLOEXEC;
        match rustix::fs::open(path, flags, Mode::from_raw_mode(0o666)) {
            Ok(fd) => return Ok(File::from(fd)),
            Err(rustix::io::Errno::INTR) if signals::exit_requested() => {
                return Err(io::Error::from(io::ErrorKind::Interrupted));
            }
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
}
