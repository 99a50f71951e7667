//! Errors: one type for every problem rpv reports, carrying pv's message text and pv's exit
//! bits.
//!
//! Owns: the wording of every error message (`Display`, without the `rpv: ` prefix) and the
//! exit-status bits each one sets ([`Error::exit_bits`]). Must not: print anything; the
//! session's sinks turn errors into lines (`rpv: …`) or NDJSON `message` objects.

use std::fmt;
use std::io;
use std::path::PathBuf;

use crate::sys;

/// Exit-status bits, OR-ed together over a run (pv's bitmask).
pub(crate) mod status {
    /// Problem with -R/-Q/-P/-M or the store-and-forward file.
    pub(crate) const REMOTE_OR_PID: u8 = 1;
    /// An input, the output or a watched descriptor could not be opened or stat'ed.
    pub(crate) const ACCESS: u8 = 2;
    /// An input is the same file as the output.
    pub(crate) const OUROBOROS: u8 = 4;
    /// Failure closing an input or moving to the next one: pv's bit, which rpv never sets
    /// (kept so that no other meaning takes it).
    #[allow(dead_code)]
    pub(crate) const TRANSITION: u8 = 8;
    /// A read or write error.
    pub(crate) const TRANSFER: u8 = 16;
    /// Ended by SIGINT, SIGHUP or SIGTERM.
    pub(crate) const SIGNAL: u8 = 32;
    /// Command-line errors (and, in pv, allocation failures).
    pub(crate) const USAGE: u8 = 64;
    /// `--stall-timeout`: ended because no data moved for that long (beyond pv; the one bit
    /// pv leaves free).
    pub(crate) const STALLED: u8 = 128;
}

/// A side of a transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Side {
    /// Reading the input.
    #[default]
    Input,
    /// Writing the output.
    Output,
}

impl Side {
    /// `input` or `output`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Side::Input => "input",
            Side::Output => "output",
        }
    }
}

/// What the stall watchdog (`--stall-timeout`) found when it ended a transfer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Stall {
    /// The timeout, in seconds.
    pub timeout: f64,
    /// The side rpv waited on, when it can tell.
    pub side: Option<Side>,
    /// The process at the other end of that side's pipe: PID and command line.
    pub peer: Option<(u32, String)>,
    /// The peer is the command `-M` started (rpv waits for its output, or for it to read).
    pub command: bool,
    /// The output rpv waits to write is this `--tee` copy (not the main output).
    pub copy: Option<String>,
}

/// A duration as people write it: `30s`, `5m`, `1h30m`, `0.5s`.
pub(crate) fn duration_text(seconds: f64) -> String {
    let whole = seconds.round();
    if (seconds - whole).abs() > 1e-9 || whole < 60.0 {
        let text = format!("{seconds:.3}");
        let text = text.trim_end_matches('0').trim_end_matches('.');
        return format!("{text}s");
    }
    let whole = whole as u64;
    [
        (whole / 86_400, "d"),
        (whole / 3600 % 24, "h"),
        (whole / 60 % 60, "m"),
        (whole % 60, "s"),
    ]
    .iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, unit)| format!("{n}{unit}"))
    .collect()
}

/// Something that went wrong, with pv's text and exit bits.
#[derive(Debug)]
#[non_exhaustive]
pub(crate) enum Error {
    /// An input could not be opened or stat'ed: `failed to read file: NAME: ERROR`.
    OpenInput {
        /// The input's display name (`(stdin)` for `-`).
        name: String,
        /// Why.
        err: io::Error,
    },
    /// An input is the output file: `input file is output file: NAME`.
    InputIsOutput {
        /// The input's display name.
        name: String,
    },
    /// A read failed: `NAME: read failed: ERROR`.
    Read {
        /// The input's display name.
        name: String,
        /// Why.
        err: io::Error,
    },
    /// A write to the output failed: `write failed: ERROR` (with the output's name in
    /// front when it is not the main output).
    Write {
        /// The output's name, for outputs other than the main one.
        output: Option<String>,
        /// Why.
        err: io::Error,
    },
    /// A write to a `--tee` output failed: `--tee NAME: write failed: ERROR`, and ` (no more
    /// data goes to it)` when the run goes on without it.
    TeeWrite {
        /// The `--tee` path as given.
        name: String,
        /// Why.
        err: io::Error,
        /// The run goes on with the other outputs.
        goes_on: bool,
    },
    /// The output could not be opened (`PATH: ERROR`) or examined (`failed to stat output
    /// file: ERROR`).
    Output {
        /// The path given with `-o`, if it was one.
        path: Option<PathBuf>,
        /// Why.
        err: io::Error,
    },
    /// A file rpv creates or manages itself (the `-P` pid file, the `-U` store, the
    /// `--metrics-file`): `PATH: ERROR`, or `OPTION: PATH: ERROR` when the option is named.
    OwnFile {
        /// The option to name first (`--metrics-file`), if any (`-P` and `-U` say only the
        /// path, as pv does).
        option: Option<&'static str>,
        /// The path as the user gave it.
        path: PathBuf,
        /// Why.
        err: io::Error,
    },
    /// A path given for a file rpv writes itself names something that is not a regular file
    /// (a device, a FIFO, a socket; what a symlink points to counts): `OPTION PATH: not a
    /// regular file`. Replacing it would destroy it (as root, `/dev/null`); writing into it
    /// would lose the data or wait for ever.
    NotRegular {
        /// `-P`, `-U` or `--metrics-file`.
        option: &'static str,
        /// The path as the user gave it.
        path: PathBuf,
        /// It is a directory: `OPTION PATH: Is a directory` (errno EISDIR).
        dir: bool,
    },
    /// `-R`/`-Q`: the target could not be reached: `PID: ERROR`, or `PID: message not
    /// received` without an error.
    Remote {
        /// The target process.
        pid: u32,
        /// The system error, if there was one.
        err: Option<io::Error>,
    },
    /// `-M`: the command could not be started: `COMMAND: ERROR` (exit 127 if not found, else
    /// 126, like a shell).
    Command {
        /// The command as given.
        command: String,
        /// Why.
        err: io::Error,
    },
    /// A problem with the command line found after parsing (for example `-s @PATH` naming a
    /// file that does not exist), with its complete text.
    Usage(String),
    /// `--stall-timeout`: no data moved for that long: `no data moved for 30s (--stall-timeout):
    /// waiting to read input from PID 123 (tar -cf - /srv)`.
    Stalled(Stall),
    /// Any other message, with its exit bits (0 for a warning).
    Other {
        /// Exit bits to set.
        bits: u8,
        /// The message.
        text: String,
        /// The system error number behind it, if there is one.
        errno: Option<i32>,
    },
}

impl Error {
    /// A message with exit bits, for the cases without a variant of their own.
    pub(crate) fn other(bits: u8, text: impl Into<String>) -> Error {
        Error::Other {
            bits,
            text: text.into(),
            errno: None,
        }
    }

    /// A message with exit bits and the system error number behind it (`ENOENT`, `ESRCH`).
    pub(crate) fn other_errno(bits: u8, text: impl Into<String>, errno: Option<i32>) -> Error {
        Error::Other {
            bits,
            text: text.into(),
            errno,
        }
    }

    /// The exit-status bits this error sets (pv's bitmask; `-M`'s 126/127 are whole codes).
    pub(crate) fn exit_bits(&self) -> u8 {
        match self {
            Error::OpenInput { .. } | Error::Output { .. } => status::ACCESS,
            Error::InputIsOutput { .. } => status::OUROBOROS,
            Error::Read { .. } | Error::Write { .. } | Error::TeeWrite { .. } => status::TRANSFER,
            Error::OwnFile { .. } | Error::NotRegular { .. } | Error::Remote { .. } => {
                status::REMOTE_OR_PID
            }
            Error::Command { err, .. } if err.kind() == io::ErrorKind::NotFound => 127,
            Error::Command { .. } => 126,
            Error::Usage(_) => status::USAGE,
            Error::Stalled(_) => status::STALLED,
            Error::Other { bits, .. } => *bits,
        }
    }

    /// A short name of the kind of error, for machine-readable output.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Error::OpenInput { .. } => "open_input",
            Error::InputIsOutput { .. } => "input_is_output",
            Error::Read { .. } => "read",
            Error::Write { .. } | Error::TeeWrite { .. } => "write",
            Error::Output { .. } => "output",
            Error::OwnFile { .. } | Error::NotRegular { .. } => "file",
            Error::Remote { .. } => "remote",
            Error::Command { .. } => "command",
            Error::Usage(_) => "usage",
            Error::Stalled(_) => "stalled",
            Error::Other { bits: 0, .. } => "warning",
            Error::Other { .. } => "error",
        }
    }

    /// The system error number behind this error, if there is one.
    pub(crate) fn errno(&self) -> Option<i32> {
        match self {
            Error::OpenInput { err, .. }
            | Error::Read { err, .. }
            | Error::Write { err, .. }
            | Error::TeeWrite { err, .. }
            | Error::Output { err, .. }
            | Error::OwnFile { err, .. }
            | Error::Command { err, .. } => err.raw_os_error(),
            Error::Remote { err, .. } => err.as_ref().and_then(io::Error::raw_os_error),
            Error::NotRegular { dir: true, .. } => Some(libc::EISDIR),
            Error::Other { errno, .. } => *errno,
            _ => None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let e = sys::strerror;
        match self {
            Error::OpenInput { name, err } => write!(f, "failed to read file: {name}: {}", e(err)),
            Error::InputIsOutput { name } => write!(f, "input file is output file: {name}"),
            Error::Read { name, err } => write!(f, "{name}: read failed: {}", e(err)),
            Error::Write { output: None, err } => write!(f, "write failed: {}", e(err)),
            Error::Write {
                output: Some(name),
                err,
            } => write!(f, "{name}: write failed: {}", e(err)),
            Error::TeeWrite { name, err, goes_on } => {
                let rest = if *goes_on {
                    " (no more data goes to it)"
                } else {
                    ""
                };
                write!(f, "--tee {name}: write failed: {}{rest}", e(err))
            }
            Error::Output { path: Some(p), err } => write!(f, "{}: {}", p.display(), e(err)),
            Error::Output { path: None, err } => {
                write!(f, "failed to stat output file: {}", e(err))
            }
            Error::OwnFile {
                option: None,
                path,
                err,
            } => write!(f, "{}: {}", path.display(), e(err)),
            Error::OwnFile {
                option: Some(option),
                path,
                err,
            } => write!(f, "{option}: {}: {}", path.display(), e(err)),
            Error::NotRegular {
                option,
                path,
                dir: false,
            } => write!(f, "{option} {}: not a regular file", path.display()),
            Error::NotRegular {
                option,
                path,
                dir: true,
            } => write!(
                f,
                "{option} {}: {}",
                path.display(),
                e(&io::Error::from_raw_os_error(libc::EISDIR))
            ),
            Error::Remote {
                pid,
                err: Some(err),
            } => write!(f, "{pid}: {}", e(err)),
            Error::Remote { pid, err: None } => write!(f, "{pid}: message not received"),
            Error::Command { command, err } => write!(f, "{command}: {}", e(err)),
            Error::Stalled(stall) => {
                let time = duration_text(stall.timeout);
                write!(f, "no data moved for {time} (--stall-timeout)")?;
                match (stall.side, &stall.peer, stall.command) {
                    (Some(Side::Input), Some((pid, command)), true) => {
                        return write!(f, ": waiting for output of PID {pid} ({command})");
                    }
                    (Some(Side::Output), Some((pid, command)), true) => {
                        return write!(f, ": waiting for PID {pid} ({command}) to read its input");
                    }
                    _ => {}
                }
                let (waiting, towards) = match (stall.side, &stall.copy) {
                    (Some(Side::Output), Some(copy)) => {
                        write!(f, ": waiting to write the --tee copy {copy}")?;
                        ("", "to")
                    }
                    (Some(Side::Input), _) => (": waiting to read input", "from"),
                    (Some(Side::Output), None) => (": waiting to write output", "to"),
                    (None, _) => return Ok(()),
                };
                write!(f, "{waiting}")?;
                match &stall.peer {
                    Some((pid, command)) => write!(f, " {towards} PID {pid} ({command})"),
                    None => Ok(()),
                }
            }
            Error::Usage(text) | Error::Other { text, .. } => f.write_str(text),
        }
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    fn io(errno: i32) -> io::Error {
        io::Error::from_raw_os_error(errno)
    }

    #[test]
    fn messages_are_pvs_and_bits_follow_the_kind() {
        let cases: Vec<(Error, &str, u8)> = vec![
            (
                Error::NotRegular {
                    option: "--metrics-file",
                    path: "/dev/null".into(),
                    dir: false,
                },
                "--metrics-file /dev/null: not a regular file",
                status::REMOTE_OR_PID,
            ),
            (
                Error::NotRegular {
                    option: "-P",
                    path: "d".into(),
                    dir: true,
                },
                "-P d: Is a directory",
                status::REMOTE_OR_PID,
            ),
            (
                Error::OwnFile {
                    option: Some("--metrics-file"),
                    path: "/x/m".into(),
                    err: io(libc::ENOENT),
                },
                "--metrics-file: /x/m: No such file or directory",
                status::REMOTE_OR_PID,
            ),
            (
                Error::OpenInput {
                    name: "x".into(),
                    err: io(libc::ENOENT),
                },
                "failed to read file: x: No such file or directory",
                status::ACCESS,
            ),
            (
                Error::InputIsOutput { name: "f".into() },
                "input file is output file: f",
                status::OUROBOROS,
            ),
            (
                Error::Read {
                    name: "d".into(),
                    err: io(libc::EISDIR),
                },
                "d: read failed: Is a directory",
                status::TRANSFER,
            ),
            (
                Error::Write {
                    output: None,
                    err: io(libc::ENOSPC),
                },
                "write failed: No space left on device",
                status::TRANSFER,
            ),
            (
                Error::Output {
                    path: None,
                    err: io(libc::EBADF),
                },
                "failed to stat output file: Bad file descriptor",
                status::ACCESS,
            ),
            (
                Error::Remote { pid: 7, err: None },
                "7: message not received",
                status::REMOTE_OR_PID,
            ),
            (
                Error::Command {
                    command: "nope".into(),
                    err: io(libc::ENOENT),
                },
                "nope: No such file or directory",
                127,
            ),
            (
                Error::TeeWrite {
                    name: "copy".into(),
                    err: io(libc::ENOSPC),
                    goes_on: true,
                },
                "--tee copy: write failed: No space left on device (no more data goes to it)",
                status::TRANSFER,
            ),
            (Error::other(0, "a warning"), "a warning", 0),
            (
                Error::Stalled(Stall {
                    timeout: 30.0,
                    side: Some(Side::Input),
                    peer: Some((123, "tar -cf - /srv".into())),
                    command: false,
                    copy: None,
                }),
                "no data moved for 30s (--stall-timeout): waiting to read input from PID 123 \
                 (tar -cf - /srv)",
                status::STALLED,
            ),
            (
                Error::Stalled(Stall {
                    timeout: 5400.0,
                    side: Some(Side::Output),
                    peer: None,
                    command: false,
                    copy: None,
                }),
                "no data moved for 1h30m (--stall-timeout): waiting to write output",
                status::STALLED,
            ),
            (
                Error::Stalled(Stall {
                    timeout: 0.5,
                    side: None,
                    peer: None,
                    command: false,
                    copy: None,
                }),
                "no data moved for 0.5s (--stall-timeout)",
                status::STALLED,
            ),
            (
                Error::Stalled(Stall {
                    timeout: 2.0,
                    side: Some(Side::Input),
                    peer: Some((77, "sh -c make".into())),
                    command: true,
                    copy: None,
                }),
                "no data moved for 2s (--stall-timeout): waiting for output of PID 77 \
                 (sh -c make)",
                status::STALLED,
            ),
            (
                Error::Stalled(Stall {
                    timeout: 2.0,
                    side: Some(Side::Output),
                    peer: Some((78, "gzip".into())),
                    command: true,
                    copy: None,
                }),
                "no data moved for 2s (--stall-timeout): waiting for PID 78 (gzip) to read its \
                 input",
                status::STALLED,
            ),
            (
                Error::Stalled(Stall {
                    timeout: 2.0,
                    side: Some(Side::Output),
                    peer: Some((79, "sleep 20".into())),
                    command: false,
                    copy: Some("copy.fifo".into()),
                }),
                "no data moved for 2s (--stall-timeout): waiting to write the --tee copy \
                 copy.fifo to PID 79 (sleep 20)",
                status::STALLED,
            ),
            (
                Error::Stalled(Stall {
                    timeout: 2.0,
                    side: Some(Side::Output),
                    peer: None,
                    command: false,
                    copy: Some("copy.fifo".into()),
                }),
                "no data moved for 2s (--stall-timeout): waiting to write the --tee copy \
                 copy.fifo",
                status::STALLED,
            ),
        ];
        for (error, text, bits) in cases {
            assert_eq!(error.to_string(), text);
            assert_eq!(error.exit_bits(), bits, "{text}");
        }
    }

    #[test]
    fn durations_read_as_typed() {
        for (seconds, text) in [
            (30.0, "30s"),
            (0.5, "0.5s"),
            (59.9, "59.9s"),
            (60.0, "1m"),
            (90.0, "1m30s"),
            (300.0, "5m"),
            (3600.0, "1h"),
            (5400.0, "1h30m"),
            (86_400.0 + 61.0, "1d1m1s"),
            (0.25, "0.25s"),
        ] {
            assert_eq!(duration_text(seconds), text, "{seconds}");
        }
    }
}
