//! The option table: every option rpv knows, defined once.
//!
//! Owns: each option's identity (its short letter, or a private character for an option
//! that has only a long name), its long name and aliases, its value (the name `--help`
//! shows, whether it is required or optional, and what it is, for shell completion), its
//! help text and its help group. The parser (`args`), `--help` (`help`) and the completion
//! scripts (`complete`) all read [`OPTIONS`]; adding an option is adding one row here (and
//! its meaning in `args`). Must not: know how an option is parsed, shown or completed.
//!
//! The wording of the help texts is our own, not pv's. The man page (`doc/rpv.1`) is written
//! by hand; the integration tests (`tests/it/docs.rs`) hold it to `rpv --help`.

use super::SHELL_NAMES;

/// What an option's value is, for shell completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Value {
    /// No value (a switch), or a value nothing can suggest (a number, a format, a name).
    Free,
    /// A file name.
    File,
    /// The ID of any process.
    Pid,
    /// The ID of a running rpv (what `-R` and `-Q` talk to).
    RpvPid,
    /// The ID of a process with a pipe on its standard input or output (a stage of a
    /// pipeline), in numeric order.
    StagePid,
    /// One of these words.
    Words(&'static [&'static str]),
}

/// The `--help` group an option is listed in. Groups are listed in this order, separated
/// by blank lines; only rpv's own options have a heading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Group {
    /// What the display shows.
    Display,
    /// How and when it is shown.
    Modifiers,
    /// How the data is moved.
    Transfer,
    /// Other ways of running (watch, remote control, query, monitor).
    Modes,
    /// Pid file, help and version.
    Other,
    /// rpv's own options, not in pv.
    Own,
}

impl Group {
    /// The heading printed above the group (`""` for none).
    pub(crate) const fn heading(self) -> &'static str {
        match self {
            Group::Own => "rpv's own options (not in pv):",
            _ => "",
        }
    }
}

/// One option: `  -S, --long ARG` (or `      --long ARG` for an option with no short
/// letter) and its description.
#[derive(Debug)]
pub(crate) struct Opt {
    /// The option's identity: its short letter (getopt's `val`), or a private character for
    /// an option that has only a long name (see [`long_only`]).
    pub(crate) short: char,
    /// The long name without `--`.
    pub(crate) long: &'static str,
    /// Other long names of the same option, accepted but not documented
    /// (`--sparse-output`, pv's alias of `--sparse`).
    pub(crate) aliases: &'static [&'static str],
    /// Value name, or `""` for switches; an optional value, attached with `=`, is written
    /// `[=NAME]` (getopt_long's `optional_argument`; long names only).
    pub(crate) arg: &'static str,
    /// What the value is, for completion.
    pub(crate) value: Value,
    /// The description.
    pub(crate) text: &'static str,
    /// The help group.
    pub(crate) group: Group,
}

impl Opt {
    /// The short letter, unless the option has only a long name.
    pub(crate) fn letter(&self) -> Option<char> {
        (!long_only(self.short)).then_some(self.short)
    }

    /// True if the option requires a value.
    pub(crate) fn takes_value(&self) -> bool {
        !self.arg.is_empty() && !self.optional()
    }

    /// True if the option may have a value, attached with `=` (`--pipeline[=PID]`).
    pub(crate) fn optional(&self) -> bool {
        self.arg.starts_with("[=")
    }

    /// The same option, also accepted under the long names `aliases`.
    const fn alias(self, aliases: &'static [&'static str]) -> Opt {
        Opt { aliases, ..self }
    }
}

/// A switch (an option without a value).
const fn switch(group: Group, short: char, long: &'static str, text: &'static str) -> Opt {
    Opt {
        short,
        long,
        aliases: &[],
        arg: "",
        value: Value::Free,
        text,
        group,
    }
}

/// An option that takes a value named `arg` (`[=NAME]`: an optional, attached value).
const fn valued(
    group: Group,
    short: char,
    long: &'static str,
    arg: &'static str,
    value: Value,
    text: &'static str,
) -> Opt {
    Opt {
        short,
        long,
        aliases: &[],
        arg,
        value,
        text,
        group,
    }
}

/// The identity of `--completions SHELL`, an rpv option with no short letter. Options that
/// have only a long name take identities from the Unicode private use area: no one types
/// those as option letters, and the parser never matches them as short options.
pub(crate) const COMPLETIONS: char = '\u{E000}';
/// The identity of `--json`.
pub(crate) const JSON: char = '\u{E001}';
/// The identity of `--log`.
pub(crate) const LOG: char = '\u{E002}';
/// The identity of `--each`.
pub(crate) const EACH: char = '\u{E003}';
/// The identity of `--pipeline[=PID]`.
pub(crate) const PIPELINE: char = '\u{E004}';
/// The identity of `--tee FILE`.
pub(crate) const TEE: char = '\u{E005}';
/// The identity of `--tee-error MODE`.
pub(crate) const TEE_ERROR: char = '\u{E006}';
/// The identity of `--term-progress WHEN`.
pub(crate) const TERM_PROGRESS: char = '\u{E010}';
/// The identity of `--metrics-file PATH`.
pub(crate) const METRICS_FILE: char = '\u{E011}';
/// The identity of `--stall-timeout DURATION`.
pub(crate) const STALL_TIMEOUT: char = '\u{E012}';
/// The identity of `--top`.
pub(crate) const TOP: char = '\u{E013}';
/// The identity of `--metrics-flows N`.
pub(crate) const METRICS_FLOWS: char = '\u{E014}';
/// The identity of `--metrics-pid`.
pub(crate) const METRICS_PID: char = '\u{E015}';
/// The identity of `--once`.
pub(crate) const ONCE: char = '\u{E020}';

/// `--metrics-flows` when not given: the busiest flows with series of their own.
pub(crate) const DEFAULT_METRICS_FLOWS: usize = 10;

/// True for the identity of an option that has only a long name (see [`COMPLETIONS`]).
pub(crate) fn long_only(identity: char) -> bool {
    ('\u{E000}'..='\u{F8FF}').contains(&identity)
}

use Group::{Display, Modes, Modifiers, Other, Own, Transfer};
use Value::{File, Free, Pid, RpvPid, StagePid, Words};

/// Every option: pv 1.11's in pv's order (a test checks them against pv's short-option
/// string), then rpv's own, which have long names only. The order matters twice: it is the
/// order of `--help`, and the order in which glibc lists the possibilities of an ambiguous
/// long-name prefix.
pub(crate) const OPTIONS: &[Opt] = &[
    // Display
    switch(Display, 'p', "progress", "show a progress bar"),
    switch(
        Display,
        't',
        "timer",
        "show how long the transfer has been running",
    ),
    switch(
        Display,
        'e',
        "eta",
        "show the estimated time left until completion",
    ),
    switch(
        Display,
        'I',
        "fineta",
        "show the estimated local time of completion",
    ),
    switch(Display, 'r', "rate", "show the current transfer rate"),
    switch(
        Display,
        'a',
        "average-rate",
        "show the average transfer rate",
    ),
    switch(Display, 'b', "bytes", "show the amount transferred so far"),
    switch(
        Display,
        '8',
        "bits",
        "count and show bits rather than bytes",
    ),
    switch(
        Display,
        'k',
        "si",
        "use powers of 1000 rather than 1024 for units, and for size and rate values given \
         after this option",
    ),
    switch(
        Display,
        'T',
        "buffer-percent",
        "show how full the transfer buffer is",
    ),
    valued(
        Display,
        'A',
        "last-written",
        "NUM",
        Free,
        "show the last NUM bytes written",
    ),
    valued(
        Display,
        'F',
        "format",
        "FORMAT",
        Free,
        "lay out the display with FORMAT (see below) instead of the switches above",
    ),
    switch(
        Display,
        'n',
        "numeric",
        "print plain numbers, one line per update, instead of a display",
    ),
    switch(Display, 'q', "quiet", "show nothing at all"),
    // Modifiers
    switch(
        Modifiers,
        'W',
        "wait",
        "show nothing until the first data has been transferred",
    ),
    valued(
        Modifiers,
        'D',
        "delay-start",
        "SEC",
        Free,
        "show nothing until SEC seconds have passed",
    ),
    valued(
        Modifiers,
        's',
        "size",
        "SIZE",
        Free,
        "take SIZE as the total amount to transfer; @PATH means the size of PATH",
    ),
    switch(
        Modifiers,
        'g',
        "gauge",
        "if the total size is unknown, show the rate as a share of the highest rate seen",
    ),
    switch(Modifiers, 'l', "line-mode", "count lines rather than bytes"),
    switch(
        Modifiers,
        '0',
        "null",
        "lines end with a zero byte (implies -l)",
    ),
    valued(
        Modifiers,
        'i',
        "interval",
        "SEC",
        Free,
        "redraw every SEC seconds (default 1)",
    ),
    valued(
        Modifiers,
        'm',
        "average-rate-window",
        "SEC",
        Free,
        "average the rate over the last SEC seconds (default 30)",
    ),
    valued(
        Modifiers,
        'w',
        "width",
        "WIDTH",
        Free,
        "assume the terminal is WIDTH columns wide",
    ),
    valued(
        Modifiers,
        'H',
        "height",
        "HEIGHT",
        Free,
        "assume the terminal is HEIGHT rows tall",
    ),
    valued(
        Modifiers,
        'N',
        "name",
        "NAME",
        Free,
        "label the display with NAME",
    ),
    valued(
        Modifiers,
        'u',
        "bar-style",
        "STYLE",
        Words(&["plain", "block", "granular", "shaded"]),
        "draw progress bars as plain, block, granular or shaded",
    ),
    valued(
        Modifiers,
        'x',
        "extra-display",
        "WHERE[:FORMAT]",
        Words(&["windowtitle", "processtitle", "windowtitle,processtitle"]),
        "also show progress in the window title, the process title or both (WHERE is \
         windowtitle, processtitle or both with a comma), laid out with FORMAT if given",
    ),
    switch(Modifiers, 'v', "stats", "print rate statistics at the end"),
    switch(
        Modifiers,
        'f',
        "force",
        "show progress even if standard error is not a terminal",
    ),
    switch(
        Modifiers,
        'c',
        "cursor",
        "position the cursor so that several instances can share one terminal",
    ),
    // Transfer
    valued(
        Transfer,
        'o',
        "output",
        "FILE",
        File,
        "write the data to FILE rather than standard output",
    ),
    valued(
        Transfer,
        'L',
        "rate-limit",
        "RATE",
        Free,
        "transfer at most RATE bytes per second",
    ),
    valued(
        Transfer,
        'B',
        "buffer-size",
        "BYTES",
        Free,
        "use a transfer buffer of BYTES bytes",
    ),
    switch(
        Transfer,
        'C',
        "no-splice",
        "always copy with read and write, never with splice",
    ),
    switch(
        Transfer,
        'E',
        "skip-errors",
        "carry on past read errors; give twice to report them briefly",
    ),
    valued(
        Transfer,
        'Z',
        "error-skip-block",
        "BYTES",
        Free,
        "when skipping a read error, skip BYTES bytes at a time",
    ),
    switch(
        Transfer,
        'S',
        "stop-at-size",
        "stop once the amount given with --size has been transferred",
    ),
    switch(
        Transfer,
        'Y',
        "sync",
        "flush the output to disk after each write",
    ),
    switch(
        Transfer,
        'K',
        "direct-io",
        "bypass the kernel's page cache (O_DIRECT)",
    ),
    switch(
        Transfer,
        'O',
        "sparse",
        "seek over runs of zero bytes in the output instead of writing them",
    )
    .alias(&["sparse-output"]),
    switch(Transfer, 'X', "discard", "read the input but write nothing"),
    valued(
        Transfer,
        'U',
        "store-and-forward",
        "FILE",
        File,
        "read all input into FILE before writing any output; - means a temporary file",
    ),
    // Modes
    valued(
        Modes,
        'd',
        "watchfd",
        "PID[:FD]|=NAME|@LISTFILE",
        Pid,
        "show how far process PID (or every process called NAME, or every item listed in \
         LISTFILE) has got through its open files, or just descriptor FD",
    ),
    valued(
        Modes,
        'R',
        "remote",
        "PID",
        RpvPid,
        "send these settings to the instance running as process PID",
    ),
    valued(
        Modes,
        'Q',
        "query",
        "PID",
        RpvPid,
        "show the progress of the instance running as process PID",
    ),
    valued(
        Modes,
        'M',
        "monitor",
        "in|out|both",
        Words(&["in", "out", "both"]),
        "run the command given after the options (and after --) and meter its standard \
         input, its standard output or both",
    ),
    // Other
    valued(
        Other,
        'P',
        "pidfile",
        "FILE",
        File,
        "write the process ID to FILE",
    ),
    switch(Other, 'h', "help", "show this help and exit"),
    switch(Other, 'V', "version", "show version information and exit"),
    // Own
    switch(
        Own,
        EACH,
        "each",
        "show a row for each input (its own amount, bar and percentage) and a total",
    ),
    switch(
        Own,
        JSON,
        "json",
        "write progress as JSON objects, one per line, instead of the display",
    ),
    switch(
        Own,
        LOG,
        "log",
        "write plain, timestamped lines for a log file instead of the display",
    ),
    valued(
        Own,
        PIPELINE,
        "pipeline",
        "[=PID]",
        StagePid,
        "show every stage of the pipeline (PID's, or the one rpv copies in) and \
         name the stage that holds it back",
    ),
    valued(
        Own,
        TEE,
        "tee",
        "FILE",
        File,
        "copy the stream to FILE as well (repeatable; a file, FIFO, device or /dev/fd/N)",
    ),
    valued(
        Own,
        TEE_ERROR,
        "tee-error",
        "MODE",
        Words(&["warn", "warn-nopipe", "exit", "exit-nopipe"]),
        "what a failing output does: warn (default), warn-nopipe, exit, exit-nopipe",
    ),
    valued(
        Own,
        TERM_PROGRESS,
        "term-progress",
        "WHEN",
        Words(&["auto", "always", "never"]),
        "show progress in the terminal's taskbar or tab indicator (OSC 9;4): auto (default: \
         on terminals known to support it), always, never",
    ),
    valued(
        Own,
        METRICS_FILE,
        "metrics-file",
        "FILE",
        File,
        "keep FILE up to date with the progress in Prometheus text format (for \
         node_exporter's textfile collector)",
    ),
    valued(
        Own,
        STALL_TIMEOUT,
        "stall-timeout",
        "DURATION",
        Free,
        "end the transfer (status 128) when no data has moved for DURATION (30, 90s, 5m, \
         1h30m), saying which side it waited on",
    ),
    switch(
        Own,
        TOP,
        "top",
        "show every data flow rpv may see (pipelines, files and devices being read or \
         written, rpv and pv, sockets), busiest first; keys: arrows, Enter, Esc, s, p, /, q",
    ),
    valued(
        Own,
        METRICS_FLOWS,
        "metrics-flows",
        "N",
        Free,
        "with --top --metrics-file: the N busiest flows get series of their own (default \
         10); the others count in totals",
    ),
    switch(
        Own,
        METRICS_PID,
        "metrics-pid",
        "with --top --metrics-file: label each flow's series with its PID",
    ),
    switch(
        Own,
        ONCE,
        "once",
        "with --top: print one frame (with --json, one object per flow and an end) one \
         interval after the first look, and exit",
    ),
    valued(
        Own,
        COMPLETIONS,
        "completions",
        "SHELL",
        Words(SHELL_NAMES),
        "print the command-line completion script for SHELL (bash, zsh or fish) and exit",
    ),
];
