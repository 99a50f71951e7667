//! The `getopt_long` scanner: argv split into options and operands as glibc does it.
//!
//! Owns: short and long name lookup (exact names, unambiguous prefixes, pv's options
//! before rpv's own), bundles, attached and separate values, permutation of operands,
//! `--`, `POSIXLY_CORRECT`, and glibc's diagnostics for unknown, ambiguous and
//! value-less options.
//! Must not: give an option a meaning (that is `State::apply` in `args.rs`).

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;

use super::flags;
use super::Flag;
use crate::cli::flags::long_only;

/// The last path component of `argv0`, as pv's messages show it.
pub(super) fn basename(argv0: &str) -> &str {
    argv0.rsplit('/').next().unwrap_or(argv0)
}

/// Finds the option for a short letter.
pub(super) fn find_short(c: char) -> Option<Flag> {
    flags().find(|f| f.short == c && !long_only(c))
}

/// Why a long name did not select exactly one option.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum LongMatchError {
    /// No option name starts with the text.
    Unknown,
    /// Several different options start with the text; their names in table order.
    Ambiguous(Vec<&'static str>),
}

/// glibc's long-name lookup: an exact name wins; otherwise the name must be a prefix of one
/// option only (aliases of the same option, like `--sparse`/`--sparse-output`, count once).
/// A prefix is looked up among pv's options first and among rpv's own only if no pv option
/// has it, so rpv's additions never change how a pv command line is read (`--c` stays
/// `--cursor`, and `--p` stays ambiguous with pv's own list of possibilities).
pub(super) fn find_long(name: &[u8]) -> Result<Flag, LongMatchError> {
    if let Some(exact) = flags().find(|f| f.long.as_bytes() == name) {
        return Ok(exact);
    }
    match find_prefix(name, false) {
        Err(LongMatchError::Unknown) => find_prefix(name, true),
        found => found,
    }
}

/// The one option whose long name starts with `name`, among pv's options (or among all of
/// them if `all`).
pub(super) fn find_prefix(name: &[u8], all: bool) -> Result<Flag, LongMatchError> {
    let mut first: Option<Flag> = None;
    let mut ambiguous = Vec::new();
    let candidates =
        flags().filter(|f| (all || !long_only(f.short)) && f.long.as_bytes().starts_with(name));
    for candidate in candidates {
        match first {
            None => first = Some(candidate),
            Some(f) if f.short != candidate.short || f.takes_value != candidate.takes_value => {
                if ambiguous.is_empty() {
                    ambiguous.push(f.long);
                }
                ambiguous.push(candidate.long);
            }
            Some(_) => {}
        }
    }
    match first {
        None => Err(LongMatchError::Unknown),
        Some(_) if !ambiguous.is_empty() => Err(LongMatchError::Ambiguous(ambiguous)),
        Some(f) => Ok(f),
    }
}

/// One option as found by the scanner: its short letter and its value, if it takes one.
#[derive(Debug, Clone, Copy)]
pub(super) struct Found<'a> {
    pub(super) short: char,
    pub(super) value: Option<&'a OsStr>,
}

/// Walks argv like glibc `getopt_long`, collecting operands on the side. It works on the
/// arguments' bytes, so operands and option values keep bytes that are not UTF-8.
pub(super) struct Scanner<'a> {
    argv0: &'a str,
    args: &'a [OsString],
    /// Index of the next argument to look at.
    next: usize,
    /// The unread rest of a short-option bundle (`-pterb` after `-p` is `terb`).
    bundle: &'a [u8],
    /// Stop at the first operand (`POSIXLY_CORRECT`).
    posix: bool,
    pub(super) operands: Vec<OsString>,
}

impl<'a> Scanner<'a> {
    pub(super) fn new(argv0: &'a str, args: &'a [OsString], posix: bool) -> Self {
        Scanner {
            argv0,
            args,
            next: 0,
            bundle: b"",
            posix,
            operands: Vec::new(),
        }
    }

    /// The next option, `Ok(None)` when options are exhausted, or glibc's diagnostic
    /// (one line, without pv's "Try" line).
    pub(super) fn next_option(&mut self) -> Result<Option<Found<'a>>, String> {
        if !self.bundle.is_empty() {
            return self.short().map(Some);
        }
        while let Some(arg) = self.args.get(self.next) {
            self.next += 1;
            let bytes = arg.as_bytes();
            if bytes == b"--" {
                self.rest_are_operands();
                return Ok(None);
            }
            if let Some(body) = bytes.strip_prefix(b"--") {
                return self.long(body).map(Some);
            }
            if let Some(bundle) = bytes.strip_prefix(b"-").filter(|b| !b.is_empty()) {
                self.bundle = bundle;
                return self.short().map(Some);
            }
            if self.posix {
                self.next -= 1;
                self.rest_are_operands();
                return Ok(None);
            }
            self.operands.push(arg.clone());
        }
        Ok(None)
    }

    fn rest_are_operands(&mut self) {
        self.operands.extend_from_slice(&self.args[self.next..]);
        self.next = self.args.len();
    }

    /// Takes the next argument whole, as the value of the current option.
    fn take_argument(&mut self) -> Option<&'a OsStr> {
        let value = self.args.get(self.next)?;
        self.next += 1;
        Some(value)
    }

    /// Reads one letter of the current bundle (and its value, if it takes one). A byte that
    /// does not start a UTF-8 character is reported as it is.
    fn short(&mut self) -> Result<Found<'a>, String> {
        let len = utf8_len(self.bundle);
        let (letter, rest) = self.bundle.split_at(len);
        self.bundle = rest;
        let c = std::str::from_utf8(letter)
            .ok()
            .and_then(|s| s.chars().next())
            .unwrap_or(char::REPLACEMENT_CHARACTER);
        let Some(flag) = find_short(c).filter(|_| c != char::REPLACEMENT_CHARACTER) else {
            let shown = String::from_utf8_lossy(letter);
            return Err(format!("{}: invalid option -- '{shown}'\n", self.argv0));
        };
        if !flag.takes_value {
            return Ok(Found {
                short: c,
                value: None,
            });
        }
        if !self.bundle.is_empty() {
            let value = OsStr::from_bytes(std::mem::take(&mut self.bundle));
            return Ok(Found {
                short: c,
                value: Some(value),
            });
        }
        match self.take_argument() {
            Some(value) => Ok(Found {
                short: c,
                value: Some(value),
            }),
            None => Err(format!(
                "{}: option requires an argument -- '{c}'\n",
                self.argv0
            )),
        }
    }

    /// Reads a `--name[=value]` option; `body` is the text after `--`.
    fn long(&mut self, body: &'a [u8]) -> Result<Found<'a>, String> {
        let (name, inline) = match body.iter().position(|&b| b == b'=') {
            Some(at) => (&body[..at], Some(OsStr::from_bytes(&body[at + 1..]))),
            None => (body, None),
        };
        let argv0 = self.argv0;
        let shown = String::from_utf8_lossy(body);
        let flag = find_long(name).map_err(|e| match e {
            LongMatchError::Unknown => format!("{argv0}: unrecognized option '--{shown}'\n"),
            LongMatchError::Ambiguous(names) => {
                let list: String = names.iter().map(|n| format!(" '--{n}'")).collect();
                format!("{argv0}: option '--{shown}' is ambiguous; possibilities:{list}\n")
            }
        })?;
        let long = flag.long;
        let found = |value| Found {
            short: flag.short,
            value,
        };
        match (flag.takes_value, inline) {
            (false, None) => Ok(found(None)),
            (false, Some(value)) if flag.optional => Ok(found(Some(value))),
            (false, Some(_)) => Err(format!(
                "{argv0}: option '--{long}' doesn't allow an argument\n"
            )),
            (true, Some(value)) => Ok(found(Some(value))),
            (true, None) => match self.take_argument() {
                Some(value) => Ok(found(Some(value))),
                None => Err(format!("{argv0}: option '--{long}' requires an argument\n")),
            },
        }
    }
}

/// Length of the UTF-8 character `bytes` starts with (1 for a byte that starts none).
pub(super) fn utf8_len(bytes: &[u8]) -> usize {
    let want = match bytes.first() {
        Some(b) if *b >= 0xf0 => 4,
        Some(b) if *b >= 0xe0 => 3,
        Some(b) if *b >= 0xc0 => 2,
        _ => 1,
    };
    if bytes.len() >= want && std::str::from_utf8(&bytes[..want]).is_ok() {
        want
    } else {
        1
    }
}
