//! Command-line parsing, getopt_long-compatible (spec 1.1–1.5, 1.7, 1.8, 1.10).
//!
//! Owns: turning argv into [`Options`] (typed values as given, later flag wins), pv's
//! messages and exit status 64 for bad command lines, and the `--help`/`--version` text.
//! Must not: open files, stat paths or touch the terminal (`-s @PATH` is kept as a path and
//! resolved by the caller).

mod args;
mod help;
pub mod number;

pub use args::parse;
pub use help::{help_text, version_text};

/// The operating mode; the last mode-selecting option wins (spec 1.1).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Action {
    /// Copy inputs to the output with progress (default).
    #[default]
    Transfer,
    /// `-U FILE`: store and forward through FILE (`-` = temporary file).
    StoreAndForward(String),
    /// `-d SPEC` (repeatable): watch other processes' descriptors.
    WatchFd(Vec<String>),
    /// `-R PID`: remote-control another instance.
    Remote(u32),
    /// `-Q PID`: show another instance's progress.
    Query(u32),
    /// `-M SIDE -- COMMAND ARGS...`: run a command and meter it.
    Monitor(MonitorSide),
}

/// `-M` side (spec 1.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MonitorSide {
    /// The command's standard input.
    In,
    /// The command's standard output.
    Out,
    /// Both.
    Both,
}

/// `--size` as given.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum SizeArg {
    /// Not given, or given as 0: detect automatically.
    #[default]
    Auto,
    /// A number of bytes (or lines in line mode), already converted (`-k` honoured).
    Value(u64),
    /// `@PATH`: the size of a file, directory tree or block device, resolved later.
    Path(String),
}

/// Everything the command line said, typed, after pv's clamps (spec 1.7) but before any I/O.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Options {
    /// `-p`
    pub progress: bool,
    /// `-t`
    pub timer: bool,
    /// `-e`
    pub eta: bool,
    /// `-I`
    pub fineta: bool,
    /// `-r`
    pub rate: bool,
    /// `-a`
    pub average_rate: bool,
    /// `-b` (also set by `-8`)
    pub bytes: bool,
    /// `-8`
    pub bits: bool,
    /// `-k` was given (anywhere)
    pub si: bool,
    /// `-T`
    pub buffer_percent: bool,
    /// `-A N` (0 = off)
    pub last_written: u32,
    /// `-F FORMAT` (the last one given)
    pub format: Option<String>,
    /// The `-F` value given before the last one, if `-F` was given more than once; used by
    /// the input side of `-M both` (spec 4.4).
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
    /// the input side of `-M both` (spec 4.4).
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
    pub output: Option<String>,
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
    pub pidfile: Option<String>,
    /// `--tee FILE` (repeatable, rpv only): extra outputs, in order.
    pub tees: Vec<String>,
    /// `--tee-error MODE` (rpv only): what a failing output does.
    pub tee_error: crate::transfer::outputs::ErrorMode,
    /// The mode; last mode option wins.
    pub action: Action,
    /// Number of display switches given (spec 1.4); 0 turns on `-p -t -e -r -b`.
    pub display_switches: u32,
    /// The short letters of the options given, in first-seen order (`-R` sends only these:
    /// see [`Options::given`]).
    pub given_letters: String,
    /// Operands: input files (`-` = stdin); empty = stdin. For `-M`, the command and its args.
    pub files: Vec<String>,
}

impl Options {
    /// True if the option with this short letter appeared on the command line (long forms
    /// count under their letter). `-L 0` is given; an absent `-L` is not.
    pub fn given(&self, short: char) -> bool {
        self.given_letters.contains(short)
    }
}

/// The result of parsing a command line.
#[derive(Debug, Clone, PartialEq)]
pub enum Parsed {
    /// `-h`/`--help` was reached: print [`help_text`] to stdout, exit 0.
    Help,
    /// `-V`/`--version` was reached: print [`version_text`] to stdout, exit 0.
    Version,
    /// Run with these options.
    Run(Box<Options>),
    /// A bad command line: print `message` (complete, with newlines) to stderr, exit 64.
    Error(String),
}
