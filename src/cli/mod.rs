//! Command-line parsing, getopt_long-compatible.
//!
//! Owns: turning argv into [`Options`] (typed values as given, later flag wins), pv's
//! messages and exit status 64 for bad command lines, and the `--help`/`--version` text and
//! the completion scripts.
//! Must not: open files, stat paths or touch the terminal (`-s @PATH` is kept as a path and
//! resolved by the caller).

use std::ffi::OsString;
use std::path::PathBuf;

use crate::display::DisplaySwitches;

mod args;
mod complete;
mod flags;
mod help;
pub(crate) mod number;

pub(crate) use args::DEFAULT_METRICS_FLOWS;
pub(crate) use args::{parse, voice_of};
pub(crate) use complete::completion_script;
pub(crate) use help::{help_text, version_text};

/// Largest read/write buffer (`-B`, also set by `-R`): 1 GiB. Each read and write moves at
/// most one buffer, and the kernel hands out far less per call on pipes and sockets, so a
/// larger buffer only costs memory. Larger values are capped to this.
pub(crate) const MAX_BUFFER: usize = 1 << 30;

/// The shells `--completions` knows, as they are named on its command line.
pub(crate) const SHELL_NAMES: &[&str] = &["bash", "zsh", "fish"];

/// A shell that rpv writes a completion script for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shell {
    /// GNU bash (needs no bash-completion package).
    Bash,
    /// zsh (`#compdef` file for a directory in `$fpath`).
    Zsh,
    /// fish.
    Fish,
}

impl Shell {
    /// The shell named `name` (exactly as in [`SHELL_NAMES`]).
    pub(crate) fn from_name(name: &str) -> Option<Shell> {
        match name {
            "bash" => Some(Shell::Bash),
            "zsh" => Some(Shell::Zsh),
            "fish" => Some(Shell::Fish),
            _ => None,
        }
    }
}

/// What a failing output does to the run (`--tee-error MODE`; the names are GNU tee's
/// `--output-error` modes). The main output's write errors always end the run, as in pv;
/// these modes decide what a failed `--tee` output does, and whether the main output's
/// reader going away ends the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum TeeErrorMode {
    /// A failed `--tee` output (write error or reader gone) is reported and gets no more
    /// data; the other outputs go on. The default.
    #[default]
    Warn,
    /// As [`TeeErrorMode::Warn`], but a `--tee` output whose reader went away stops quietly
    /// (no message, no status bit), as the main output does.
    WarnNoPipe,
    /// Any output failure ends the run: a `--tee` output's (reported, status 16), or the
    /// main output's reader going away (quietly, status 0, as pv alone does).
    Exit,
    /// A write error on a `--tee` output ends the run; a reader going away (on any output)
    /// only stops that output.
    ExitNoPipe,
}

impl TeeErrorMode {
    /// Every mode by its option value.
    pub(crate) const NAMES: [(&'static str, TeeErrorMode); 4] = [
        ("warn", TeeErrorMode::Warn),
        ("warn-nopipe", TeeErrorMode::WarnNoPipe),
        ("exit", TeeErrorMode::Exit),
        ("exit-nopipe", TeeErrorMode::ExitNoPipe),
    ];

    /// The mode named `name` (exact match).
    pub(crate) fn from_name(name: &str) -> Option<TeeErrorMode> {
        Self::NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|&(_, mode)| mode)
    }

    /// Whether a `--tee` output's failure is reported (message and exit status 16);
    /// `broken_pipe`: its reader went away.
    pub(crate) fn reports(self, broken_pipe: bool) -> bool {
        match self {
            TeeErrorMode::Warn | TeeErrorMode::Exit => true,
            TeeErrorMode::WarnNoPipe | TeeErrorMode::ExitNoPipe => !broken_pipe,
        }
    }

    /// Whether a `--tee` output's failure ends the whole run.
    pub(crate) fn ends_run(self, broken_pipe: bool) -> bool {
        match self {
            TeeErrorMode::Exit => true,
            TeeErrorMode::ExitNoPipe => !broken_pipe,
            TeeErrorMode::Warn | TeeErrorMode::WarnNoPipe => false,
        }
    }

    /// Whether the main output's reader going away ends the run while `--tee` outputs are
    /// still open (otherwise they get the rest of the input).
    pub(crate) fn main_gone_ends_run(self) -> bool {
        self == TeeErrorMode::Exit
    }
}

/// `--term-progress WHEN`: when to show progress in the terminal's own indicator (the
/// `OSC 9;4` sequence: a taskbar or tab progress bar).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum TermProgress {
    /// Only on a terminal known to support it, from one rpv per terminal (the default).
    #[default]
    Auto,
    /// Whatever the terminal (for one rpv detection cannot recognise, such as over ssh).
    Always,
    /// Never.
    Never,
}

impl TermProgress {
    /// Every setting by its option value.
    pub(crate) const NAMES: [(&'static str, TermProgress); 3] = [
        ("auto", TermProgress::Auto),
        ("always", TermProgress::Always),
        ("never", TermProgress::Never),
    ];

    /// The setting named `name` (exact match).
    pub(crate) fn from_name(name: &str) -> Option<TermProgress> {
        Self::NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|&(_, when)| when)
    }
}

/// The operating mode; the last mode-selecting option wins.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) enum Action {
    /// Copy inputs to the output with progress (default).
    #[default]
    Transfer,
    /// `-U FILE`: store and forward through FILE (`-` = temporary file).
    StoreAndForward(PathBuf),
    /// `-d SPEC` (repeatable): watch other processes' descriptors.
    WatchFd(Vec<OsString>),
    /// `-R PID`: remote-control another instance.
    Remote(u32),
    /// `-Q PID`: show another instance's progress.
    Query(u32),
    /// `-M SIDE -- COMMAND ARGS...`: run a command and meter it.
    Monitor(MonitorSide),
    /// `--pipeline=PID` (beyond pv): show every stage of the pipeline PID belongs to;
    /// `None` for `--pipeline` without a PID (the pipeline rpv itself is in).
    Pipeline(Option<u32>),
    /// `--top` (beyond pv): every data flow rpv may see.
    Top,
}

/// `-M` side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MonitorSide {
    /// The command's standard input.
    In,
    /// The command's standard output.
    Out,
    /// Both.
    Both,
}

/// `--size` as given.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) enum SizeArg {
    /// Not given, or given as 0: detect automatically.
    #[default]
    Auto,
    /// A number of bytes (or lines in line mode), already converted (`-k` honoured).
    Value(u64),
    /// `@PATH`: the size of a file, directory tree or block device, resolved later.
    Path(PathBuf),
}

/// Everything the command line said, typed, after pv's clamps but before any I/O.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Options {
    /// The display switches given, `-p -t -e -I -r -a -b -T` (`-8` sets `bytes`); only
    /// those eight fields are set here (`-A`, `-N` and `-n` are the fields below).
    pub switches: DisplaySwitches,
    /// `-8`
    pub bits: bool,
    /// `-k` was given (anywhere)
    pub si: bool,
    /// `-A N` (0 = off)
    pub last_written: u32,
    /// `-F FORMAT` (the last one given)
    pub format: Option<String>,
    /// The `-F` value given before the last one, if `-F` was given more than once; used by
    /// the input side of `-M both`.
    pub prev_format: Option<String>,
    /// `-n`
    pub numeric: bool,
    /// `-q`
    pub quiet: bool,
    /// `-W`
    pub wait: bool,
    /// `-D SEC` (0 = none)
    pub delay_start: f64,
    /// `-s`
    pub size: SizeArg,
    /// `-g`
    pub gauge: bool,
    /// `-l` (also set by `-0`)
    pub line_mode: bool,
    /// `-0`
    pub null: bool,
    /// `-i SEC`, clamped to [0.1, 600]; default 1
    pub interval: f64,
    /// `-m SEC`, at least 1; default 30
    pub average_window: u32,
    /// `-w` (0 = detect), at most 999999
    pub width: u32,
    /// `-H` (0 = detect), at most 999999
    pub height: u32,
    /// `-N` (the last one given)
    pub name: Option<String>,
    /// The `-N` value given before the last one, if `-N` was given more than once; used by
    /// the input side of `-M both`.
    pub prev_name: Option<String>,
    /// `-u`
    pub bar_style: Option<String>,
    /// `-x`
    pub extra_display: Option<String>,
    /// `-v`
    pub stats: bool,
    /// `-f`
    pub force: bool,
    /// `-c`
    pub cursor: bool,
    /// `-o FILE`
    pub output: Option<PathBuf>,
    /// `-L` (0 = none)
    pub rate_limit: u64,
    /// `-B` (0 = automatic)
    pub buffer_size: u64,
    /// `-C` (also implied by `-T -A -B -O -X`)
    pub no_splice: bool,
    /// `-E` count (`-Z` without `-E` counts as one)
    pub skip_errors: u8,
    /// `-Z BYTES` (0 = adaptive)
    pub error_skip_block: u64,
    /// `-S`
    pub stop_at_size: bool,
    /// `-Y`
    pub sync: bool,
    /// `-K`
    pub direct_io: bool,
    /// `-O`
    pub sparse: bool,
    /// `-X`
    pub discard: bool,
    /// `-P FILE`
    pub pidfile: Option<PathBuf>,
    /// `--json`, `--log` or neither: how rpv speaks on standard error.
    pub voice: Voice,
    /// `--each`: a row per input, and a total.
    pub each: bool,
    /// `--tee FILE` (repeatable): extra outputs, in order.
    pub tees: Vec<PathBuf>,
    /// `--tee-error MODE`: what a failing output does.
    pub tee_error: TeeErrorMode,
    /// `--term-progress WHEN`.
    pub term_progress: TermProgress,
    /// `--metrics-file PATH`: Prometheus text format, rewritten at each update.
    pub metrics_file: Option<PathBuf>,
    /// `--stall-timeout DURATION`, seconds: end the transfer when nothing moved for that
    /// long (`None`, or `0` given, = never).
    pub stall_timeout: Option<f64>,
    /// `--metrics-flows N`: with `--top --metrics-file`, the busiest flows that get
    /// series of their own.
    /// `None`: ten.
    pub metrics_flows: Option<usize>,
    /// `--metrics-pid`: with `--top --metrics-file`, a `pid` label on each flow's series.
    pub metrics_pid: bool,
    /// `--once`: with `--top`, one frame, then the end.
    pub once: bool,
    /// The mode; last mode option wins.
    pub action: Action,
    /// Number of display switches given; 0 turns on `-p -t -e -r -b`.
    pub display_switches: u32,
    /// The short letters of the options given, in first-seen order (`-R` sends only these:
    /// see [`Options::given`]).
    pub given_letters: String,
    /// Operands: input files (`-` = stdin); empty = stdin. For `-M`, the command and its args.
    pub files: Vec<OsString>,
}

impl Options {
    /// True if the option with this short letter appeared on the command line (long forms
    /// count under their letter). `-L 0` is given; an absent `-L` is not.
    pub(crate) fn given(&self, short: char) -> bool {
        self.given_letters.contains(short)
    }
}

/// How rpv speaks on standard error: its usual display and `rpv: …` messages, NDJSON
/// (`--json`) or time-stamped lines (`--log`). The later of `--json` and `--log` wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Voice {
    /// The display, and messages as `rpv: …` lines.
    #[default]
    Display,
    /// `--json`: every line is a JSON object.
    Json,
    /// `--log`: every line starts with a time stamp.
    Log,
}

impl Voice {
    /// `--json` or `--log`: every line on standard error is a record, with no display.
    pub(crate) fn records(self) -> bool {
        self != Voice::Display
    }
}

/// The result of parsing a command line.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Parsed {
    /// `-h`/`--help` was reached: print [`help_text`] to stdout, exit 0.
    Help,
    /// `-V`/`--version` was reached: print [`version_text`] to stdout, exit 0.
    Version,
    /// `--completions SHELL` was reached: print [`completion_script`] to stdout, exit 0.
    Completions(Shell),
    /// Run with these options.
    Run(Box<Options>),
    /// A bad command line: print `message` (complete, with newlines) to stderr, exit 64.
    Error(String),
}
