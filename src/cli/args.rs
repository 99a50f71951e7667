//! `getopt_long` emulation over the option table (`flags`).
//!
//! Owns: splitting argv into options and operands exactly as glibc `getopt_long` does for
//! pv's option string (permutation, bundling, attached values, long-name prefixes, `--`,
//! `POSIXLY_CORRECT`), glibc's diagnostics, and turning each option into [`Options`] fields
//! strictly left to right. Must not: open, stat or read anything (`-s @PATH` and
//! `-d @LISTFILE` stay strings).
//!
//! The scanner (argv into options and operands, glibc's lookups and diagnostics) is in
//! `args/scan.rs`; this file gives each option its meaning.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

pub(crate) use super::flags::DEFAULT_METRICS_FLOWS;
use super::flags::{
    long_only, Opt, COMPLETIONS, EACH, JSON, LOG, METRICS_FILE, METRICS_FLOWS, METRICS_PID, ONCE,
    OPTIONS, PIPELINE, STALL_TIMEOUT, TEE, TEE_ERROR, TERM_PROGRESS, TOP,
};
use super::number::{
    is_valid_double, is_valid_integer, is_valid_size, parse_duration, parse_interval, parse_size,
};
use super::{Action, MonitorSide, Options, Parsed, Shell, SizeArg, TeeErrorMode, TermProgress};
use crate::display::DisplaySwitches;
use scan::{basename, Scanner};

mod scan;

/// One long name of an option of the table (its own name or an alias), with what the
/// parser needs to know about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Flag {
    /// The option's identity (see [`Opt::short`]).
    pub(crate) short: char,
    /// This long name, without `--`.
    pub(crate) long: &'static str,
    /// True if the option requires a value.
    pub(crate) takes_value: bool,
    /// True if the option may have a value, attached with `=`.
    pub(crate) optional: bool,
}

/// Every long name the parser accepts, in table order, an option's aliases right after its
/// own name (the order glibc lists the possibilities of an ambiguous prefix in).
pub(crate) fn flags() -> impl Iterator<Item = Flag> {
    OPTIONS.iter().flat_map(|opt: &'static Opt| {
        std::iter::once(opt.long)
            .chain(opt.aliases.iter().copied())
            .map(move |long| Flag {
                short: opt.short,
                long,
                takes_value: opt.takes_value(),
                optional: opt.optional(),
            })
    })
}

/// The words `-x` accepts before its `:FORMAT` (the ones `term::title::ExtraSpec` knows).
pub(crate) const EXTRA_TARGETS: [&str; 6] = [
    "windowtitle",
    "window",
    "processtitle",
    "proctitle",
    "process",
    "proc",
];

/// `-D` longer than this (about 11 years, the longest time the display shows) is this.
const MAX_DELAY: f64 = 360_000_000.0;

/// `-m` longer than this (a week) is this: the average window keeps a sample every 5 s, and
/// a window longer than the transfer averages over the whole transfer anyway.
const MAX_AVERAGE_WINDOW: u32 = 7 * 24 * 3600;

/// Parses `args` (without `argv[0]`); `argv0` is used in glibc-style diagnostics and its
/// basename as `<prog>` in pv's own messages. Honours `POSIXLY_CORRECT` from the environment.
/// Arguments are taken as the bytes the kernel passed: file names need not be UTF-8.
pub(crate) fn parse(argv0: &str, args: &[OsString]) -> Parsed {
    parse_with(argv0, args, std::env::var_os("POSIXLY_CORRECT").is_some())
}

/// [`parse`] with the `POSIXLY_CORRECT` decision made by the caller: when `posix` is true,
/// option processing stops at the first operand.
pub(crate) fn parse_with(argv0: &str, args: &[OsString], posix: bool) -> Parsed {
    let prog = basename(argv0);
    let mut scanner = Scanner::new(argv0, args, posix);
    let mut state = State::new(prog);
    loop {
        let step = match scanner.next_option() {
            Ok(Some(found)) => state.apply(found.short, found.value),
            Ok(None) => break,
            Err(glibc) => Err(format!(
                "{glibc}Try `{prog} --help' for more information.\n"
            )),
        };
        match step {
            Ok(Flow::Continue) => {}
            Ok(Flow::Help) => return Parsed::Help,
            Ok(Flow::Version) => return Parsed::Version,
            Ok(Flow::Completions(shell)) => return Parsed::Completions(shell),
            Err(message) => return Parsed::Error(message),
        }
    }
    match state.finish(scanner.operands) {
        Ok(options) => Parsed::Run(Box::new(options)),
        Err(message) => Parsed::Error(message),
    }
}

/// The voice a command line asks for (the later of `--json` and `--log`), found as
/// [`parse`] finds options but going on past every error, so that even a usage error is
/// reported the way the user asked: `--json` as an option counts, `--json` as the value of
/// another option (`-N --json`) or after `--` does not.
pub(crate) fn voice_of(args: &[OsString]) -> super::Voice {
    let posix = std::env::var_os("POSIXLY_CORRECT").is_some();
    let mut scanner = Scanner::new("rpv", args, posix);
    let mut voice = super::Voice::Display;
    loop {
        match scanner.next_option() {
            Ok(Some(found)) if found.short == JSON => voice = super::Voice::Json,
            Ok(Some(found)) if found.short == LOG => voice = super::Voice::Log,
            Ok(Some(_)) | Err(_) => {}
            Ok(None) => return voice,
        }
    }
}

/// What to do after an option has been applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    Continue,
    Help,
    Version,
    Completions(Shell),
}

/// The mode chosen so far; the last mode option wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Transfer,
    StoreAndForward,
    WatchFd,
    Remote,
    Query,
    Monitor,
    Pipeline,
    Top,
}

/// The options applied so far, plus what the checks of conflicting modes need to remember.
struct State<'a> {
    prog: &'a str,
    opts: Options,
    mode: Mode,
    store_file: PathBuf,
    watch_items: Vec<OsString>,
    remote: Option<u32>,
    /// `--pipeline=PID`.
    pipeline: Option<u32>,
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
            store_file: PathBuf::new(),
            watch_items: Vec::new(),
            remote: None,
            pipeline: None,
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
    fn apply(&mut self, short: char, value: Option<&OsStr>) -> Result<Flow, String> {
        if short == PIPELINE {
            let value = value.map(OsStr::to_string_lossy);
            return self
                .apply_pipeline(value.as_deref())
                .map(|()| Flow::Continue);
        }
        if !self.opts.given_letters.contains(short) {
            self.opts.given_letters.push(short);
        }
        match value {
            Some(value) if short == COMPLETIONS => {
                let value = value.to_string_lossy();
                match Shell::from_name(&value) {
                    Some(shell) => Ok(Flow::Completions(shell)),
                    None => Err(self.fail(&format!(
                        "--completions: {value}: unknown shell (bash, zsh or fish)"
                    ))),
                }
            }
            Some(value) if self.apply_path(short, value)? => Ok(Flow::Continue),
            // Numbers and display text: bytes that are not UTF-8 are shown as U+FFFD (and
            // are never valid numbers).
            Some(value) => self
                .apply_valued(short, &value.to_string_lossy())
                .map(|()| Flow::Continue),
            None => Ok(self.apply_switch(short)),
        }
    }

    /// The options whose value is a path (kept byte for byte); false for the others.
    fn apply_path(&mut self, short: char, value: &OsStr) -> Result<bool, String> {
        let o = &mut self.opts;
        match short {
            'o' => o.output = Some(PathBuf::from(value)),
            'P' => o.pidfile = Some(PathBuf::from(value)),
            TEE => o.tees.push(PathBuf::from(value)),
            METRICS_FILE => o.metrics_file = Some(PathBuf::from(value)),
            'U' => {
                self.store_file = PathBuf::from(value);
                self.store_given = true;
                self.mode = Mode::StoreAndForward;
            }
            's' => match value.as_bytes().strip_prefix(b"@") {
                Some(path) => o.size = SizeArg::Path(PathBuf::from(OsStr::from_bytes(path))),
                None => return Ok(false),
            },
            'd' => {
                self.check_watch_item(&value.to_string_lossy())?;
                self.watch_items.push(value.to_owned());
                self.mode = Mode::WatchFd;
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Counts a display switch.
    fn display_switch(&mut self) {
        self.opts.display_switches = self.opts.display_switches.saturating_add(1);
    }

    fn apply_switch(&mut self, short: char) -> Flow {
        let o = &mut self.opts;
        match short {
            'h' => return Flow::Help,
            'V' => return Flow::Version,
            '8' => (o.bits, o.switches.bytes) = (true, true),
            'T' => (o.switches.buffer_percent, o.no_splice) = (true, true),
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
            // --json and --log each replace the display: the later one wins.
            JSON => o.voice = super::Voice::Json,
            LOG => o.voice = super::Voice::Log,
            EACH => o.each = true,
            METRICS_PID => o.metrics_pid = true,
            ONCE => o.once = true,
            TOP => self.mode = Mode::Top,
            letter => {
                o.switches.set(letter);
            }
        }
        if DisplaySwitches::LETTERS.contains(short) || "8nq".contains(short) {
            self.display_switch();
        }
        Flow::Continue
    }

    fn apply_valued(&mut self, short: char, value: &str) -> Result<(), String> {
        match short {
            TEE_ERROR => self.apply_tee_error(value),
            TERM_PROGRESS => self.apply_term_progress(value),
            STALL_TIMEOUT => self.apply_stall_timeout(value),
            METRICS_FLOWS => self.apply_metrics_flows(value),
            'A' | 'w' | 'H' | 'm' | 'R' | 'Q' => self.apply_integer(short, value),
            'L' | 'B' | 'Z' => self.apply_size(short, value),
            'i' | 'D' => self.apply_double(short, value),
            's' => self.apply_total_size(value),
            'M' => self.apply_monitor(value),
            _ => self.apply_text(short, value),
        }
    }

    fn apply_text(&mut self, short: char, value: &str) -> Result<(), String> {
        if short == 'x' {
            self.check_extra_display(value)?;
        }
        let o = &mut self.opts;
        let value = value.to_owned();
        match short {
            'F' => o.prev_format = o.format.replace(value),
            'N' => o.prev_name = o.name.replace(value),
            'u' => o.bar_style = Some(value),
            'x' => o.extra_display = Some(value),
            _ => {}
        }
        Ok(())
    }

    /// `-x SPEC`: every target word before the first `:` must be one rpv knows (pv ignores
    /// unknown words, so `-x windowtitel` silently shows nothing; rpv says so).
    fn check_extra_display(&self, spec: &str) -> Result<(), String> {
        let words = spec.split_once(':').map_or(spec, |(words, _)| words);
        for word in words.split(',') {
            if !EXTRA_TARGETS.contains(&word) {
                let word = if word.is_empty() { spec } else { word };
                return Err(self.fail(&format!(
                    "-x: {word}: unknown display target (expected windowtitle or processtitle)"
                )));
            }
        }
        Ok(())
    }

    /// `BARE_INTEGER` options. pv truncates the value to 32 bits (its `unsigned int`), so
    /// `-R 4294967297` would mean PID 1; rpv refuses values that do not fit instead.
    fn apply_integer(&mut self, short: char, value: &str) -> Result<(), String> {
        if !is_valid_integer(value) {
            return Err(self.fail(&format!("-{short}: {value}: integer argument expected")));
        }
        let Some(n) = parse_size(value, false).and_then(|n| u32::try_from(n).ok()) else {
            return Err(self.fail(&format!(
                "-{short}: {value}: integer argument too large (at most {})",
                u32::MAX
            )));
        };
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
        if !is_valid_size(value) {
            return Err(self.fail(&format!("-{short}: {value}: numeric value not understood")));
        }
        parse_size(value, self.opts.si).ok_or_else(|| {
            self.fail(&format!(
                "-{short}: {value}: numeric value too large (at most {})",
                u64::MAX
            ))
        })
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

    /// `-s N` (`-s @PATH` is a path: see `apply_path`).
    fn apply_total_size(&mut self, value: &str) -> Result<(), String> {
        self.opts.size = match self.size_value('s', value)? {
            0 => SizeArg::Auto,
            n => SizeArg::Value(n),
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

    /// Syntax of a watchfd item: `PID[:FD]` read like `sscanf("%u:%d")` (trailing
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

    /// `--tee-error MODE`: one of GNU tee's `--output-error` mode names.
    fn apply_tee_error(&mut self, value: &str) -> Result<(), String> {
        let Some(mode) = TeeErrorMode::from_name(value) else {
            let names: Vec<&str> = TeeErrorMode::NAMES.iter().map(|(n, _)| *n).collect();
            return Err(self.fail(&format!(
                "--tee-error: {value}: invalid mode (one of: {})",
                names.join(", ")
            )));
        };
        self.opts.tee_error = mode;
        Ok(())
    }

    /// `--term-progress WHEN`: `auto`, `always` or `never`.
    fn apply_term_progress(&mut self, value: &str) -> Result<(), String> {
        let Some(when) = TermProgress::from_name(value) else {
            return Err(self.fail(&format!(
                "--term-progress: {value}: invalid value (one of: auto, always, never)"
            )));
        };
        self.opts.term_progress = when;
        Ok(())
    }

    /// `--stall-timeout DURATION`: seconds, or numbers with units; 0 turns it off.
    fn apply_stall_timeout(&mut self, value: &str) -> Result<(), String> {
        let Some(seconds) = parse_duration(value) else {
            return Err(self.fail(&format!(
                "--stall-timeout: {value}: invalid duration (seconds, or numbers with a unit: \
                 ms, s, m, h, d; for example 30, 90s, 1.5m, 1h30m)"
            )));
        };
        self.opts.stall_timeout = (seconds > 0.0).then_some(seconds);
        Ok(())
    }

    /// `--metrics-flows N`: a whole number, 0 for totals only.
    fn apply_metrics_flows(&mut self, value: &str) -> Result<(), String> {
        match value.parse::<usize>() {
            Ok(n) if value.bytes().all(|b| b.is_ascii_digit()) && n <= 10_000 => {
                self.opts.metrics_flows = Some(n);
                Ok(())
            }
            _ => Err(self.fail(&format!(
                "--metrics-flows: {value}: invalid number of flows (0 to 10000)"
            ))),
        }
    }

    /// `--pipeline[=PID]`: a PID is a decimal number above 0.
    fn apply_pipeline(&mut self, value: Option<&str>) -> Result<(), String> {
        self.pipeline = match value {
            None => None,
            Some(v) => match v.parse::<u32>() {
                Ok(pid) if pid > 0 && v.bytes().all(|b| b.is_ascii_digit()) => Some(pid),
                _ => return Err(self.fail(&format!("--pipeline: {v}: invalid process ID"))),
            },
        };
        self.mode = Mode::Pipeline;
        Ok(())
    }

    /// `-M SIDE`: the side is matched by prefix, in pv's order.
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

    /// After the last option: implied settings, clamps, mode checks
    /// and the operands.
    fn finish(mut self, operands: Vec<OsString>) -> Result<Options, String> {
        self.clamp();
        self.check_modes(&operands)?;
        if self.mode == Mode::Pipeline && self.pipeline.is_some() {
            self.check_pipeline_watch()?;
        }
        if self.mode == Mode::Top {
            self.check_top(&operands)?;
        }
        if self.mode == Mode::WatchFd {
            for item in &operands {
                self.check_watch_item(&item.to_string_lossy())?;
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
            Mode::Pipeline => Action::Pipeline(self.pipeline),
            Mode::Top => Action::Top,
        };
        Ok(self.opts)
    }

    fn clamp(&mut self) {
        let o = &mut self.opts;
        o.interval = o.interval.clamp(0.1, 600.0);
        o.delay_start = o.delay_start.min(MAX_DELAY);
        o.average_window = o.average_window.clamp(1, MAX_AVERAGE_WINDOW);
        o.buffer_size = o.buffer_size.min(crate::cli::MAX_BUFFER as u64);
        o.width = o.width.min(999_999);
        o.height = o.height.min(999_999);
        if self.skip_block_given && o.skip_errors == 0 {
            o.skip_errors = 1;
        }
    }

    /// The conflicts between modes and options that can be found without I/O, in the table's order.
    fn check_modes(&self, operands: &[OsString]) -> Result<(), String> {
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
        } else if !self.opts.tees.is_empty() && self.mode == Mode::Remote {
            "--tee: cannot be used with -R"
        } else if !self.opts.tees.is_empty() && self.mode == Mode::Query {
            "--tee: cannot be used with -Q"
        } else if !self.opts.tees.is_empty() && self.mode == Mode::Monitor {
            "--tee: cannot be used with -M"
        } else if !self.opts.tees.is_empty()
            && self.mode == Mode::Pipeline
            && self.pipeline.is_some()
        {
            "--tee: cannot be used with --pipeline=PID"
        } else if self.opts.tees.iter().any(|t| t.as_os_str() == "-")
            && self
                .opts
                .output
                .as_deref()
                .is_none_or(|o| o.as_os_str() == "-")
        {
            "--tee -: standard output is already the output"
        } else if self.mode == Mode::Pipeline && self.pipeline.is_some() && !operands.is_empty() {
            "--pipeline: files cannot be specified with a process ID"
        } else if self.mode == Mode::Monitor && operands.is_empty() {
            "-M: a command to run must be specified"
        } else {
            return Ok(());
        };
        Err(self.fail(conflict))
    }

    /// `--pipeline=PID` watches; it has no transfer, no input, no line of its own: only the
    /// interval, the size of the view, forcing or quieting it, the summary (`-v`), SI
    /// units, the rate window, a delay, a pid file, `--json` and `--log` apply. The first
    /// other option given is refused.
    fn check_pipeline_watch(&self) -> Result<(), String> {
        const APPLIES: [char; 12] = ['i', 'w', 'H', 'f', 'q', 'v', 'k', 'm', 'D', 'P', JSON, LOG];
        self.refuse_all_but(&APPLIES, "--pipeline=PID")
    }

    /// Refuses the first option given that is not in `applies`, as not for `mode`.
    fn refuse_all_but(&self, applies: &[char], mode: &str) -> Result<(), String> {
        let Some(refused) = self
            .opts
            .given_letters
            .chars()
            .find(|c| !applies.contains(c))
        else {
            return Ok(());
        };
        let name = match flags().find(|f| f.short == refused) {
            Some(f) if long_only(refused) => format!("--{}", f.long),
            _ => format!("-{refused}"),
        };
        Err(self.fail(&format!("{name}: cannot be used with {mode}")))
    }

    /// `--top` watches the whole machine: no files, no transfer; only the interval, the
    /// size of the view, forcing or quieting it, SI units, the rate window, a pid file,
    /// `--json`, `--log` and the metrics file apply. The first other option given is
    /// refused.
    fn check_top(&self, operands: &[OsString]) -> Result<(), String> {
        const APPLIES: [char; 15] = [
            'i',
            'w',
            'H',
            'f',
            'q',
            'k',
            'm',
            'P',
            JSON,
            LOG,
            TOP,
            METRICS_FILE,
            METRICS_FLOWS,
            METRICS_PID,
            ONCE,
        ];
        if !operands.is_empty() {
            return Err(self.fail("--top: files cannot be specified with --top"));
        }
        self.refuse_all_but(&APPLIES, "--top")
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

#[cfg(test)]
#[path = "args_proptests.rs"]
mod proptests;
