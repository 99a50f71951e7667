//! `getopt_long` emulation and the option table (spec 1.2–1.5, 1.7, 1.8).
//!
//! Owns: splitting argv into options and operands exactly as glibc `getopt_long` does for
//! pv's option string (permutation, bundling, attached values, long-name prefixes, `--`,
//! `POSIXLY_CORRECT`), glibc's diagnostics, and turning each option into [`Options`] fields
//! strictly left to right. Must not: open, stat or read anything (`-s @PATH` and
//! `-d @LISTFILE` stay strings).

use super::number::{is_valid_double, is_valid_integer, is_valid_size, parse_interval, parse_size};
use super::{Action, MonitorSide, Options, Parsed, SizeArg};
use crate::transfer::outputs::ErrorMode;

/// One row of the option table: a short letter and a long name for the same option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Flag {
    /// The short letter; also the option's identity (getopt's `val`).
    pub(crate) short: char,
    /// The long name without `--`.
    pub(crate) long: &'static str,
    /// True if the option requires a value.
    pub(crate) takes_value: bool,
}

const fn flag(short: char, long: &'static str) -> Flag {
    Flag {
        short,
        long,
        takes_value: false,
    }
}

const fn valued(short: char, long: &'static str) -> Flag {
    Flag {
        short,
        long,
        takes_value: true,
    }
}

/// Every option of pv 1.11, in the order of spec 1.3 (a test checks it against pv's
/// short-option string). The order matters: it is the order
/// in which glibc lists the possibilities of an ambiguous long-name prefix.
pub(crate) const FLAGS: &[Flag] = &[
    flag('p', "progress"),
    flag('t', "timer"),
    flag('e', "eta"),
    flag('I', "fineta"),
    flag('r', "rate"),
    flag('a', "average-rate"),
    flag('b', "bytes"),
    flag('8', "bits"),
    flag('k', "si"),
    flag('T', "buffer-percent"),
    valued('A', "last-written"),
    valued('F', "format"),
    flag('n', "numeric"),
    flag('q', "quiet"),
    flag('W', "wait"),
    valued('D', "delay-start"),
    valued('s', "size"),
    flag('g', "gauge"),
    flag('l', "line-mode"),
    flag('0', "null"),
    valued('i', "interval"),
    valued('m', "average-rate-window"),
    valued('w', "width"),
    valued('H', "height"),
    valued('N', "name"),
    valued('u', "bar-style"),
    valued('x', "extra-display"),
    flag('v', "stats"),
    flag('f', "force"),
    flag('c', "cursor"),
    valued('o', "output"),
    valued('L', "rate-limit"),
    valued('B', "buffer-size"),
    flag('C', "no-splice"),
    flag('E', "skip-errors"),
    valued('Z', "error-skip-block"),
    flag('S', "stop-at-size"),
    flag('Y', "sync"),
    flag('K', "direct-io"),
    flag('O', "sparse"),
    flag('O', "sparse-output"),
    flag('X', "discard"),
    valued('U', "store-and-forward"),
    valued('d', "watchfd"),
    valued('R', "remote"),
    valued('Q', "query"),
    valued('M', "monitor"),
    valued('P', "pidfile"),
    flag('h', "help"),
    flag('V', "version"),
];

/// Identity of `--tee` (rpv's own options have long names only; their identities are
/// private-use characters, which no short-option bundle can name).
const TEE: char = '\u{E000}';
/// Identity of `--tee-error`.
const TEE_ERROR: char = '\u{E001}';

/// rpv's own options (not in pv): long names only, looked up after pv's table.
pub(crate) const RPV_FLAGS: &[Flag] = &[valued(TEE, "tee"), valued(TEE_ERROR, "tee-error")];

/// Parses `args` (without `argv[0]`); `argv0` is used in glibc-style diagnostics and its
/// basename as `<prog>` in pv's own messages. Honours `POSIXLY_CORRECT` from the environment.
pub fn parse(argv0: &str, args: &[String]) -> Parsed {
    parse_with(argv0, args, std::env::var_os("POSIXLY_CORRECT").is_some())
}

/// [`parse`] with the `POSIXLY_CORRECT` decision made by the caller: when `posix` is true,
/// option processing stops at the first operand.
pub(crate) fn parse_with(argv0: &str, args: &[String], posix: bool) -> Parsed {
    let prog = basename(argv0);
    let mut scanner = Scanner::new(argv0, args, posix);
    let mut state = State::new(prog);
    loop {
        let step = match scanner.next_option() {
            Ok(Some((short, value))) => state.apply(short, value),
            Ok(None) => break,
            Err(glibc) => Err(format!(
                "{glibc}Try `{prog} --help' for more information.\n"
            )),
        };
        match step {
            Ok(Flow::Continue) => {}
            Ok(Flow::Help) => return Parsed::Help,
            Ok(Flow::Version) => return Parsed::Version,
            Err(message) => return Parsed::Error(message),
        }
    }
    match state.finish(scanner.operands) {
        Ok(options) => Parsed::Run(Box::new(options)),
        Err(message) => Parsed::Error(message),
    }
}

/// The last path component of `argv0`, as pv's messages show it.
fn basename(argv0: &str) -> &str {
    argv0.rsplit('/').next().unwrap_or(argv0)
}

/// Finds the option for a short letter.
fn find_short(c: char) -> Option<&'static Flag> {
    FLAGS.iter().find(|f| f.short == c)
}

/// Why a long name did not select exactly one option.
#[derive(Debug, PartialEq, Eq)]
enum LongMatchError {
    /// No option name starts with the text.
    Unknown,
    /// Several different options start with the text; their names in table order.
    Ambiguous(Vec<&'static str>),
}

/// glibc's long-name lookup: an exact name wins; otherwise the name must be a prefix of one
/// option only (aliases of the same option, like `--sparse`/`--sparse-output`, count once).
fn find_long(name: &str) -> Result<&'static Flag, LongMatchError> {
    let table = || FLAGS.iter().chain(RPV_FLAGS);
    if let Some(exact) = table().find(|f| f.long == name) {
        return Ok(exact);
    }
    let mut first: Option<&'static Flag> = None;
    let mut ambiguous = Vec::new();
    for candidate in table().filter(|f| f.long.starts_with(name)) {
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
type Found<'a> = (char, Option<&'a str>);

/// Walks argv like glibc `getopt_long`, collecting operands on the side.
struct Scanner<'a> {
    argv0: &'a str,
    args: &'a [String],
    /// Index of the next argument to look at.
    next: usize,
    /// The unread rest of a short-option bundle (`-pterb` after `-p` is `terb`).
    bundle: &'a str,
    /// Stop at the first operand (`POSIXLY_CORRECT`).
    posix: bool,
    operands: Vec<String>,
}

impl<'a> Scanner<'a> {
    fn new(argv0: &'a str, args: &'a [String], posix: bool) -> Self {
        Scanner {
            argv0,
            args,
            next: 0,
            bundle: "",
            posix,
            operands: Vec::new(),
        }
    }

    /// The next option, `Ok(None)` when options are exhausted, or glibc's diagnostic
    /// (one line, without pv's "Try" line).
    fn next_option(&mut self) -> Result<Option<Found<'a>>, String> {
        if !self.bundle.is_empty() {
            return self.short().map(Some);
        }
        while let Some(arg) = self.args.get(self.next) {
            self.next += 1;
            if arg == "--" {
                self.rest_are_operands();
                return Ok(None);
            }
            if let Some(body) = arg.strip_prefix("--") {
                return self.long(body).map(Some);
            }
            if let Some(bundle) = arg.strip_prefix('-').filter(|b| !b.is_empty()) {
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
    fn take_argument(&mut self) -> Option<&'a str> {
        let value = self.args.get(self.next)?;
        self.next += 1;
        Some(value)
    }

    /// Reads one letter of the current bundle (and its value, if it takes one).
    fn short(&mut self) -> Result<Found<'a>, String> {
        let mut chars = self.bundle.chars();
        let c = chars.next().unwrap_or('-');
        self.bundle = chars.as_str();
        let Some(flag) = find_short(c) else {
            return Err(format!("{}: invalid option -- '{c}'\n", self.argv0));
        };
        if !flag.takes_value {
            return Ok((c, None));
        }
        if !self.bundle.is_empty() {
            return Ok((c, Some(std::mem::take(&mut self.bundle))));
        }
        match self.take_argument() {
            Some(value) => Ok((c, Some(value))),
            None => Err(format!(
                "{}: option requires an argument -- '{c}'\n",
                self.argv0
            )),
        }
    }

    /// Reads a `--name[=value]` option; `body` is the text after `--`.
    fn long(&mut self, body: &'a str) -> Result<Found<'a>, String> {
        let (name, inline) = match body.split_once('=') {
            Some((name, value)) => (name, Some(value)),
            None => (body, None),
        };
        let argv0 = self.argv0;
        let flag = find_long(name).map_err(|e| match e {
            LongMatchError::Unknown => format!("{argv0}: unrecognized option '--{body}'\n"),
            LongMatchError::Ambiguous(names) => {
                let list: String = names.iter().map(|n| format!(" '--{n}'")).collect();
                format!("{argv0}: option '--{body}' is ambiguous; possibilities:{list}\n")
            }
        })?;
        let long = flag.long;
        match (flag.takes_value, inline) {
            (false, None) => Ok((flag.short, None)),
            (false, Some(_)) => Err(format!(
                "{argv0}: option '--{long}' doesn't allow an argument\n"
            )),
            (true, Some(value)) => Ok((flag.short, Some(value))),
            (true, None) => match self.take_argument() {
                Some(value) => Ok((flag.short, Some(value))),
                None => Err(format!("{argv0}: option '--{long}' requires an argument\n")),
            },
        }
    }
}

/// What to do after an option has been applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    Continue,
    Help,
    Version,
}

/// The mode chosen so far; the last mode option wins (spec 1.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Transfer,
    StoreAndForward,
    WatchFd,
    Remote,
    Query,
    Monitor,
}

/// The options applied so far, plus what the mode checks of spec 1.8 need to remember.
struct State<'a> {
    prog: &'a str,
    opts: Options,
    mode: Mode,
    store_file: String,
    watch_items: Vec<String>,
    remote: Option<u32>,
    query: Option<u32>,
    side: MonitorSide,
    store_given: bool,
    monitor_given: bool,
    skip_block_given: bool,
}

impl<'a> State<'a> {
    fn new(prog: &'a str) -> Self {
        let opts = Options {
            interval: 1.0,
            average_window: 30,
            ..Options::default()
        };
        State {
            prog,
            opts,
            mode: Mode::Transfer,
            store_file: String::new(),
            watch_items: Vec::new(),
            remote: None,
            query: None,
            side: MonitorSide::Out,
            store_given: false,
            monitor_given: false,
            skip_block_given: false,
        }
    }

    /// A pv diagnostic: `"<prog>: <text>\n"`.
    fn fail(&self, text: &str) -> String {
        format!("{}: {text}\n", self.prog)
    }

    /// Applies one option. `value` is `Some` exactly for options that take a value.
    fn apply(&mut self, short: char, value: Option<&str>) -> Result<Flow, String> {
        if !self.opts.given_letters.contains(short) {
            self.opts.given_letters.push(short);
        }
        match value {
            Some(value) => self.apply_valued(short, value).map(|()| Flow::Continue),
            None => Ok(self.apply_switch(short)),
        }
    }

    /// Counts a display switch (spec 1.4).
    fn display_switch(&mut self) {
        self.opts.display_switches = self.opts.display_switches.saturating_add(1);
    }

    fn apply_switch(&mut self, short: char) -> Flow {
        let o = &mut self.opts;
        match short {
            'h' => return Flow::Help,
            'V' => return Flow::Version,
            'p' => o.progress = true,
            't' => o.timer = true,
            'e' => o.eta = true,
            'I' => o.fineta = true,
            'r' => o.rate = true,
            'a' => o.average_rate = true,
            'b' => o.bytes = true,
            '8' => (o.bits, o.bytes) = (true, true),
            'T' => (o.buffer_percent, o.no_splice) = (true, true),
            'n' => o.numeric = true,
            'q' => o.quiet = true,
            'k' => o.si = true,
            'W' => o.wait = true,
            'g' => o.gauge = true,
            'l' => o.line_mode = true,
            '0' => (o.null, o.line_mode) = (true, true),
            'v' => o.stats = true,
            'f' => o.force = true,
            'c' => o.cursor = true,
            'C' => o.no_splice = true,
            'E' => o.skip_errors = o.skip_errors.saturating_add(1),
            'S' => o.stop_at_size = true,
            'Y' => o.sync = true,
            'K' => o.direct_io = true,
            'O' => (o.sparse, o.no_splice) = (true, true),
            'X' => (o.discard, o.no_splice) = (true, true),
            _ => {}
        }
        if "pteIrab8Tnq".contains(short) {
            self.display_switch();
        }
        Flow::Continue
    }

    fn apply_valued(&mut self, short: char, value: &str) -> Result<(), String> {
        match short {
            'A' | 'w' | 'H' | 'm' | 'R' | 'Q' => self.apply_integer(short, value),
            'L' | 'B' | 'Z' => self.apply_size(short, value),
            'i' | 'D' => self.apply_double(short, value),
            's' => self.apply_total_size(value),
            'd' => self.apply_watch_item(value),
            'M' => self.apply_monitor(value),
            TEE_ERROR => self.apply_tee_error(value),
            _ => {
                self.apply_text(short, value);
                Ok(())
            }
        }
    }

    fn apply_text(&mut self, short: char, value: &str) {
        let o = &mut self.opts;
        let value = value.to_owned();
        match short {
            'F' => o.prev_format = o.format.replace(value),
            'N' => o.prev_name = o.name.replace(value),
            'u' => o.bar_style = Some(value),
            'x' => o.extra_display = Some(value),
            'o' => o.output = Some(value),
            'P' => o.pidfile = Some(value),
            TEE => o.tees.push(value),
            'U' => {
                self.store_file = value;
                self.store_given = true;
                self.mode = Mode::StoreAndForward;
            }
            _ => {}
        }
    }

    /// `BARE_INTEGER` options; the value is truncated to 32 bits as pv's `unsigned int` is.
    fn apply_integer(&mut self, short: char, value: &str) -> Result<(), String> {
        if !is_valid_integer(value) {
            return Err(self.fail(&format!("-{short}: {value}: integer argument expected")));
        }
        #[allow(clippy::cast_possible_truncation)] // C's conversion to `unsigned int`
        let n = parse_size(value, false) as u32;
        let o = &mut self.opts;
        match short {
            'A' => {
                (o.last_written, o.no_splice) = (n, true);
                self.display_switch();
            }
            'w' => o.width = n,
            'H' => o.height = n,
            'm' => o.average_window = n,
            'R' => (self.remote, self.mode) = (Some(n), Mode::Remote),
            _ => (self.query, self.mode) = (Some(n), Mode::Query),
        }
        Ok(())
    }

    /// Validates an `ANY_WITH_SUFFIX` value and converts it with the `-k` setting so far.
    fn size_value(&self, short: char, value: &str) -> Result<u64, String> {
        if is_valid_size(value) {
            Ok(parse_size(value, self.opts.si))
        } else {
            Err(self.fail(&format!("-{short}: {value}: numeric value not understood")))
        }
    }

    fn apply_size(&mut self, short: char, value: &str) -> Result<(), String> {
        let n = self.size_value(short, value)?;
        let o = &mut self.opts;
        match short {
            'L' => o.rate_limit = n,
            'B' => (o.buffer_size, o.no_splice) = (n, true),
            _ => {
                o.error_skip_block = n;
                self.skip_block_given = true;
            }
        }
        Ok(())
    }

    fn apply_total_size(&mut self, value: &str) -> Result<(), String> {
        self.opts.size = match value.strip_prefix('@') {
            Some(path) => SizeArg::Path(path.to_owned()),
            None => match self.size_value('s', value)? {
                0 => SizeArg::Auto,
                n => SizeArg::Value(n),
            },
        };
        Ok(())
    }

    fn apply_double(&mut self, short: char, value: &str) -> Result<(), String> {
        if !is_valid_double(value) {
            return Err(self.fail(&format!("-{short}: {value}: numeric argument expected")));
        }
        let seconds = parse_interval(value);
        if short == 'i' {
            self.opts.interval = seconds;
        } else {
            self.opts.delay_start = seconds;
        }
        Ok(())
    }

    fn apply_watch_item(&mut self, value: &str) -> Result<(), String> {
        self.check_watch_item(value)?;
        self.watch_items.push(value.to_owned());
        self.mode = Mode::WatchFd;
        Ok(())
    }

    /// Syntax of a watchfd item (spec 4.1): `PID[:FD]` read like `sscanf("%u:%d")` (trailing
    /// text ignored), `=NAME` or `@LISTFILE`. The list file itself is read later.
    fn check_watch_item(&self, item: &str) -> Result<(), String> {
        if let Some(name) = item.strip_prefix('=') {
            if name.is_empty() {
                return Err(self.fail("-d =: missing process name"));
            }
            return Ok(());
        }
        if let Some(file) = item.strip_prefix('@') {
            if file.is_empty() {
                return Err(self.fail("-d @: missing filename"));
            }
            return Ok(());
        }
        let unsigned = item.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
        let (negative, unsigned) = match unsigned.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, unsigned.strip_prefix('+').unwrap_or(unsigned)),
        };
        let after = unsigned.trim_start_matches(|c: char| c.is_ascii_digit());
        let digits = &unsigned[..unsigned.len() - after.len()];
        if digits.is_empty() {
            Err(self.fail("-d: process ID or pid:fd pair expected"))
        } else if negative || digits.bytes().all(|d| d == b'0') {
            Err(self.fail("-d: invalid process ID"))
        } else {
            Ok(())
        }
    }

    /// `-M SIDE`: the side is matched by prefix, in pv's order (spec 1.3).
    fn apply_monitor(&mut self, value: &str) -> Result<(), String> {
        const SIDES: [(&str, MonitorSide); 8] = [
            ("0", MonitorSide::In),
            ("in", MonitorSide::In),
            ("stdin", MonitorSide::In),
            ("1", MonitorSide::Out),
            ("out", MonitorSide::Out),
            ("stdout", MonitorSide::Out),
            ("2", MonitorSide::Both),
            ("both", MonitorSide::Both),
        ];
        let Some(&(_, side)) = SIDES.iter().find(|(p, _)| value.starts_with(p)) else {
            return Err(self.fail(&format!("-M: {value}: invalid side specification")));
        };
        (self.side, self.mode, self.monitor_given) = (side, Mode::Monitor, true);
        Ok(())
    }

    /// `--tee-error MODE`: one of GNU tee's `--output-error` mode names.
    fn apply_tee_error(&mut self, value: &str) -> Result<(), String> {
        let Some(mode) = ErrorMode::from_name(value) else {
            let names: Vec<&str> = ErrorMode::NAMES.iter().map(|(n, _)| *n).collect();
            return Err(self.fail(&format!(
                "--tee-error: {value}: invalid mode (one of: {})",
                names.join(", ")
            )));
        };
        self.opts.tee_error = mode;
        Ok(())
    }

    /// After the last option: implied settings, clamps (spec 1.7), mode checks (spec 1.8)
    /// and the operands.
    fn finish(mut self, operands: Vec<String>) -> Result<Options, String> {
        self.clamp();
        self.check_modes(&operands)?;
        if self.mode == Mode::WatchFd {
            for item in &operands {
                self.check_watch_item(item)?;
            }
            self.watch_items.extend(operands);
        } else {
            self.opts.files = operands;
        }
        self.opts.action = match self.mode {
            Mode::Transfer => Action::Transfer,
            Mode::StoreAndForward => Action::StoreAndForward(self.store_file),
            Mode::WatchFd => Action::WatchFd(self.watch_items),
            Mode::Remote => Action::Remote(self.remote.unwrap_or(0)),
            Mode::Query => Action::Query(self.query.unwrap_or(0)),
            Mode::Monitor => Action::Monitor(self.side),
        };
        Ok(self.opts)
    }

    fn clamp(&mut self) {
        let o = &mut self.opts;
        o.interval = o.interval.clamp(0.1, 600.0);
        o.average_window = o.average_window.max(1);
        o.width = o.width.min(999_999);
        o.height = o.height.min(999_999);
        if self.skip_block_given && o.skip_errors == 0 {
            o.skip_errors = 1;
        }
    }

    /// The conflicts of spec 1.8 that can be found without I/O, in the table's order.
    fn check_modes(&self, operands: &[String]) -> Result<(), String> {
        if self.mode == Mode::WatchFd {
            self.check_watchfd()?;
        }
        let conflict = if self.remote.is_some() && self.query.is_some() {
            "cannot use remote control and remote query together"
        } else if self.monitor_given && self.remote.is_some() {
            "-R: monitor mode cannot be specified with this option"
        } else if self.monitor_given && self.query.is_some() {
            "-Q: monitor mode cannot be specified with this option"
        } else if self.monitor_given && self.store_given {
            "monitor mode cannot be used with store-and-forward"
        } else if self.mode == Mode::Remote && !operands.is_empty() {
            "-R: files cannot be specified with this option"
        } else if self.mode == Mode::Query && !operands.is_empty() {
            "-Q: files cannot be specified with this option"
        } else if self.mode == Mode::Monitor && operands.is_empty() {
            "-M: a command to run must be specified"
        } else if !self.opts.tees.is_empty() && self.mode == Mode::Remote {
            "--tee: cannot be used with -R"
        } else if !self.opts.tees.is_empty() && self.mode == Mode::Query {
            "--tee: cannot be used with -Q"
        } else if !self.opts.tees.is_empty() && self.mode == Mode::Monitor {
            "--tee: cannot be used with -M"
        } else if self.opts.tees.iter().any(|t| t == "-")
            && self.opts.output.as_deref().is_none_or(|o| o == "-")
        {
            "--tee -: standard output is already the output"
        } else {
            return Ok(());
        };
        Err(self.fail(conflict))
    }

    fn check_watchfd(&self) -> Result<(), String> {
        let o = &self.opts;
        let modifiers = o.line_mode
            || o.null
            || o.stop_at_size
            || o.skip_errors > 0
            || o.buffer_size > 0
            || o.rate_limit > 0;
        let conflict = if modifiers {
            "cannot use line mode or transfer modifier options when watching file descriptors"
        } else if o.cursor {
            "cannot use cursor positioning when watching file descriptors"
        } else if self.remote.is_some() {
            "cannot use remote control when watching file descriptors"
        } else if self.query.is_some() {
            "cannot use remote query when watching file descriptors"
        } else if o.output.is_some() {
            "-o: cannot transfer files when watching file descriptors"
        } else if !o.tees.is_empty() {
            "--tee: cannot transfer files when watching file descriptors"
        } else {
            return Ok(());
        };
        Err(self.fail(conflict))
    }
}

#[cfg(test)]
#[path = "args_tests.rs"]
mod tests;
