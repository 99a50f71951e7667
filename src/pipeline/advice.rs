//! What to try about the stage holding a pipeline back: one line, when the cause is clear
//! (pure).
//!
//! Owns: the table of advice ([`RULES`], tried in order; the first that applies speaks),
//! the table of parallel counterparts of single-threaded compressors ([`PARALLEL`]), and
//! finding which of those tools are installed ([`Tools::from_path`]). Must not: read
//! `/proc` or decide which stage is the bottleneck: the [`Situation`] comes in as an
//! argument.
//!
//! Advice names only tools that are installed: a compressor using a whole core while
//! cores are idle gets its parallel counterpart if one is on `PATH`, and no advice
//! otherwise.

use std::path::Path;

use super::model::{Part, Split};

/// Longest command shown in a line of advice, in columns.
const COMMAND_COLUMNS: usize = 32;
/// Longest command to paste shown in a line of advice, in columns.
const PASTE_COLUMNS: usize = 64;
/// A stage busy this share of the time uses a whole core.
const WHOLE_CORE: f64 = 0.85;
/// A stage spending this share of the time on a timer, the disk or the network is held
/// back by it.
const MOSTLY: f64 = 0.5;

/// Where the stage is in the pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Position {
    /// It reads no pipe of the pipeline: the producer.
    First,
    /// Between two stages.
    Middle,
    /// It writes no pipe of the pipeline: the consumer.
    Last,
    /// The only stage shown.
    Only,
}

/// The stage holding the pipeline back, and the machine around it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Situation<'a> {
    /// Its command line, as shown.
    pub command: &'a str,
    /// Where it is.
    pub position: Position,
    /// Where its time went, as fractions.
    pub time: Split,
    /// Cores the pipeline may use.
    pub cores: usize,
    /// Cores idle on the whole machine over the same time, if known.
    pub idle_cores: Option<f64>,
    /// Stages on or waiting for a CPU at least half the time.
    pub busy_stages: usize,
    /// The stages together waited for a CPU longer than they ran.
    pub short_of_cpu: bool,
    /// The stage is a shell loop (a shell and the children it starts one after another).
    pub looping: bool,
    /// The stage is a launcher (xargs, GNU parallel) and the children it starts.
    pub launcher: bool,
    /// The other end of the socket it waits on, if known (`127.0.0.1:9000`).
    pub peer: Option<&'a str>,
    /// The process shown for it (for a command to paste: `rpv -R PID -L …`).
    pub pid: u32,
    /// The bytes a second it moved over the same time, if known.
    pub rate: Option<f64>,
    /// The busiest process outside the pipeline while it was short of CPU, if any.
    pub thief: Option<&'a Thief>,
    /// The pipeline's process group (for a command to paste: `renice -g`).
    pub group: u32,
}

/// A process outside the pipeline using a CPU while the pipeline waits for one.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Thief {
    /// Its PID.
    pub pid: u32,
    /// Its command line, as shown.
    pub command: String,
    /// The share of a core it used over the last window.
    pub share: f64,
}

/// Programs found on `PATH` among those advice may name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Tools {
    installed: Vec<&'static str>,
}

impl Tools {
    /// The tools of [`PARALLEL`] that are executable files in a directory of `path` (the
    /// value of `PATH`).
    pub(crate) fn from_path(path: Option<&std::ffi::OsStr>) -> Tools {
        use std::os::unix::fs::PermissionsExt;
        let dirs: Vec<std::path::PathBuf> = path
            .map(|p| std::env::split_paths(p).collect())
            .unwrap_or_default();
        let executable = |dir: &Path, name: &str| {
            std::fs::metadata(dir.join(name))
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        };
        let installed = PARALLEL
            .iter()
            .flat_map(|(_, tools)| tools.iter().map(|(tool, _)| *tool))
            .filter(|tool| dirs.iter().any(|d| executable(d, tool)))
            .collect();
        Tools { installed }
    }

    /// These tools, as if they were installed (tests).
    #[cfg(test)]
    pub(crate) fn of(names: &[&'static str]) -> Tools {
        Tools {
            installed: names.to_vec(),
        }
    }

    fn has(&self, name: &str) -> bool {
        self.installed.contains(&name)
    }
}

/// Single-threaded compressors and their parallel counterparts: (program, [(tool to look
/// for on `PATH`, what to suggest)]). A program whose command line already asks for
/// threads (`-T`, `--threads`) is left alone.
pub(crate) const PARALLEL: &[(&str, &[(&str, &str)])] = &[
    ("gzip", &[("pigz", "pigz")]),
    ("bzip2", &[("pbzip2", "pbzip2"), ("lbzip2", "lbzip2")]),
    ("xz", &[("xz", "xz -T0")]),
    ("zstd", &[("zstd", "zstd -T0")]),
    ("lzip", &[("plzip", "plzip")]),
];

/// One entry of the table: its name (for tests and documentation) and the rule.
pub(crate) type Rule = (&'static str, fn(&Situation<'_>, &Tools) -> Option<String>);

/// The table of advice, in the order tried.
pub(crate) const RULES: &[Rule] = &[
    ("shell loop", shell_loop),
    ("short of CPU", short_of_cpu),
    ("launcher", launcher),
    ("rate limit", rate_limit),
    ("disk", disk),
    ("network", network),
    ("ssh cipher", ssh_cipher),
    ("parallel compressor", parallel_compressor),
    ("slow producer or consumer", slow_end),
];

/// The advice for `situation`: the first rule of [`RULES`] that applies.
pub(crate) fn advise(situation: &Situation<'_>, tools: &Tools) -> Option<String> {
    RULES.iter().find_map(|(_, rule)| rule(situation, tools))
}

/// The command, cut to [`COMMAND_COLUMNS`] with `…` (the advice is one line of the view).
fn short(command: &str) -> String {
    crate::screen::cut(command, COMMAND_COLUMNS, true)
}

/// The program's name: the first word of the command line.
fn program(command: &str) -> &str {
    command.split(' ').next().unwrap_or("")
}

fn percent(share: f64) -> String {
    format!("{:.0}%", (share * 100.0).round())
}

/// A shell loop holds the pipeline back: whatever it does (sleeps, starts a program for
/// each line, waits for a slow command), it is the slow producer or consumer.
fn shell_loop(s: &Situation<'_>, _: &Tools) -> Option<String> {
    if !s.looping {
        return None;
    }
    let role = match s.position {
        Position::First => "the producer",
        Position::Last => "the consumer",
        Position::Middle | Position::Only => "a stage",
    };
    let cpu = s.time.cpu();
    let (part, share) = s
        .time
        .largest(&[Part::Timer, Part::Disk, Part::Network, Part::Other])
        .unwrap_or((Part::Other, 0.0));
    let what = if cpu >= share {
        format!("on a CPU or waiting for one {} of the time", percent(cpu))
    } else {
        let doing = match part {
            Part::Timer => "sleeping",
            Part::Disk => "waiting for the disk",
            Part::Network => "waiting on the network",
            _ => "waiting",
        };
        format!("{doing} {} of the time", percent(share))
    };
    let tip = if cpu >= MOSTLY {
        ": one program for the whole stream (awk, sed, xargs) starts fewer processes"
    } else {
        ""
    };
    Some(format!(
        "slow {}: the shell loop {} is {role} the others wait for ({what}){tip}",
        match s.position {
            Position::First => "producer",
            Position::Last => "consumer",
            Position::Middle | Position::Only => "stage",
        },
        short(s.command)
    ))
}

/// The launcher's name in its command line: `xargs`, or `parallel` (also as `perl
/// /usr/bin/parallel …`), and the index of that word.
fn launcher_word(command: &str) -> Option<(usize, &str)> {
    command.split(' ').enumerate().take(2).find_map(|(i, w)| {
        let name = w.rsplit('/').next().unwrap_or(w);
        ["xargs", "parallel"].contains(&name).then_some((i, name))
    })
}

/// The value of option `short` (`-n 50`, `-n50`) or `long` (`--max-args=50`) in `command`.
fn option_value<'a>(command: &'a str, short: &str, long: &str) -> Option<&'a str> {
    let mut words = command.split(' ');
    while let Some(word) = words.next() {
        if word == short || word == long {
            return words.next();
        }
        if let Some(v) = word.strip_prefix(long).and_then(|v| v.strip_prefix('=')) {
            return Some(v);
        }
        if let Some(v) = word.strip_prefix(short).filter(|v| !v.is_empty()) {
            return Some(v);
        }
    }
    None
}

/// `command` with `option` put right after its launcher's name.
fn with_option(command: &str, at: usize, option: &str) -> String {
    let mut words: Vec<&str> = command.split(' ').collect();
    words.insert(at + 1, option);
    words.join(" ")
}

/// A launcher (xargs, GNU parallel) holds the pipeline back: its children's work is its
/// own. Children waiting for the disk: the disk is the limit. Children busy while cores
/// are idle: more of them at once (`-P N`, `-j N`); with no core idle: fewer, longer ones
/// (a larger `-n`). Never called a shell loop.
fn launcher(s: &Situation<'_>, _: &Tools) -> Option<String> {
    if !s.launcher {
        return None;
    }
    let (at, name) = launcher_word(s.command).unwrap_or((0, "xargs"));
    let command = short(s.command);
    let cpu = s.time.cpu();
    let disk = s.time.get(Part::Disk);
    if disk >= MOSTLY || (disk > cpu && disk >= 0.3) {
        return Some(format!(
            "the disk is the limit: the children of {command} wait for it {} of the time",
            percent(disk)
        ));
    }
    let busy = format!("on a CPU or waiting for one {} of the time", percent(cpu));
    if cpu < MOSTLY {
        let (part, share) = s
            .time
            .largest(&[Part::Timer, Part::Network, Part::Other])
            .unwrap_or((Part::Other, 0.0));
        let doing = match part {
            Part::Timer => "sleeping",
            Part::Network => "waiting on the network",
            _ => "waiting",
        };
        return Some(format!(
            "slow stage: {command} and the commands it starts are the stage the others wait \
             for ({doing} {} of the time)",
            percent(share)
        ));
    }
    let (flag, long) = if name == "xargs" {
        ("-P", "--max-procs")
    } else {
        ("-j", "--jobs")
    };
    let idle = s.idle_cores.map_or(0, |i| i.round() as usize);
    if idle >= 1 && option_value(s.command, flag, long).is_none() {
        let n = (idle + 1).min(s.cores.max(1)).max(2);
        return Some(format!(
            "run {n} commands at once on the idle cores: {} (it is {busy}; {idle} of {} \
             cores idle)",
            crate::screen::cut(
                &with_option(s.command, at, &format!("{flag} {n}")),
                PASTE_COLUMNS,
                true
            ),
            s.cores
        ));
    }
    let batch = option_value(s.command, "-n", "--max-args").and_then(|n| n.parse::<u64>().ok());
    match batch.filter(|_| name == "xargs") {
        Some(n) if n < 1000 => Some(format!(
            "a larger -n starts fewer processes: {command} is {busy}, starting a command for \
             every {n} lines"
        )),
        _ => Some(format!(
            "slow stage: {command} and the commands it starts are {busy}"
        )),
    }
}

/// The stage holding the pipeline back waits for a CPU longer than it runs, and more
/// than on anything else of its own (a rate limit's timer, the disk), while the stages
/// together wait for a CPU longer than they run: the machine is busy.
fn short_of_cpu(s: &Situation<'_>, _: &Tools) -> Option<String> {
    let starved = s.time.get(Part::Starved);
    let busy = s.time.get(Part::Busy);
    let other = s
        .time
        .largest(&[
            Part::Timer,
            Part::Disk,
            Part::Network,
            Part::Stopped,
            Part::Other,
        ])
        .map_or(0.0, |(_, v)| v);
    if !s.short_of_cpu || starved < 0.2 || starved <= busy || starved < other || at_its_limit(s) {
        return None;
    }
    let cores = match s.cores {
        1 => "1 core".to_string(),
        n => format!("{n} cores"),
    };
    let stages = match s.busy_stages {
        0 => String::new(),
        1 => format!(" (1 busy stage on {cores}, with the other programs running)"),
        n => format!(" ({n} busy stages on {cores}, with the other programs running)"),
    };
    // The busiest other program, named with what to do about it.
    let thief = s.thief.map_or(String::new(), |t| {
        let group = if s.group > 1 {
            format!(
                ", or as root renice -n -5 -g {} raises the pipeline's",
                s.group
            )
        } else {
            String::new()
        };
        format!(
            "; the busiest other program is {} (PID {}, {} of a core): renice -n 10 {} \
             lowers its priority{group}",
            short(&t.command),
            t.pid,
            percent(t.share),
            t.pid
        )
    });
    Some(format!(
        "the machine is short of CPU: {} waits for a CPU {} of the time and runs {}{stages}\
         {thief}",
        short(s.command),
        percent(starved),
        percent(busy)
    ))
}

/// The value of a rate-limit option in an rpv or pv command line (`-L 4M`, `-L4M`,
/// `--rate-limit 4M`, `--rate-limit=4M`).
fn rate_limit_value(command: &str) -> Option<&str> {
    let mut words = command.split(' ');
    while let Some(word) = words.next() {
        if word == "-L" || word == "--rate-limit" {
            return words.next();
        }
        if let Some(value) = word.strip_prefix("--rate-limit=") {
            return Some(value);
        }
        // In a bundle of short options (`-qL4M`), -L takes the rest of the word.
        if let Some(bundle) = word.strip_prefix('-').filter(|b| !b.starts_with('-')) {
            if let Some(at) = bundle.find('L') {
                let value = &bundle[at + 1..];
                return if value.is_empty() {
                    words.next()
                } else {
                    Some(value)
                };
            }
        }
    }
    None
}

/// Bytes a second of a rate-limit value (`10M`, `1.5g`, `512k`, `4096`: multiples of 1024).
fn limit_bytes(value: &str) -> Option<f64> {
    let digits = value
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(value.len());
    let number: f64 = value[..digits].parse().ok()?;
    let scale = match value[digits..].to_ascii_uppercase().as_str() {
        "" => 1.0,
        "K" => 1024.0,
        "M" => 1024.0 * 1024.0,
        "G" => 1024.0 * 1024.0 * 1024.0,
        "T" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    Some(number * scale)
}

/// An rpv or pv moving data at its rate limit (9/10 of it at least): the limit is what
/// holds it back, however long it waits for a CPU between two bursts.
fn at_its_limit(s: &Situation<'_>) -> bool {
    let limit = ["rpv", "pv"]
        .contains(&program(s.command))
        .then(|| rate_limit_value(s.command))
        .flatten()
        .and_then(limit_bytes);
    matches!((limit, s.rate), (Some(limit), Some(rate)) if limit > 0.0 && rate >= 0.9 * limit)
}

/// A stage sleeping on a timer most of the time, or an rpv or pv at its rate limit: an rpv
/// or pv rate limit names its value.
fn rate_limit(s: &Situation<'_>, _: &Tools) -> Option<String> {
    let timer = s.time.get(Part::Timer);
    if timer < MOSTLY && !at_its_limit(s) {
        return None;
    }
    let name = program(s.command);
    let limit = ["rpv", "pv"]
        .contains(&name)
        .then(|| rate_limit_value(s.command))
        .flatten();
    Some(match limit {
        Some(value) => format!(
            "raise its rate limit to go faster: {name} -R {} -L {} ({} is held back by -L \
             {value})",
            s.pid,
            doubled(value).unwrap_or_else(|| "RATE".to_string()),
            short(s.command)
        ),
        None => format!(
            "{} sleeps on a timer {} of the time: it paces itself (a rate limit or a pause)",
            short(s.command),
            percent(timer)
        ),
    })
}

/// Twice a rate-limit value (`4M` is `8M`, `2.5m` is `5m`), keeping its unit.
fn doubled(value: &str) -> Option<String> {
    let digits = value
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(value.len());
    let number: f64 = value[..digits].parse().ok()?;
    let twice = number * 2.0;
    let text = if twice.fract() == 0.0 {
        format!("{twice:.0}")
    } else {
        format!("{twice}")
    };
    Some(format!("{text}{}", &value[digits..]))
}

fn disk(s: &Situation<'_>, _: &Tools) -> Option<String> {
    let disk = s.time.get(Part::Disk);
    (disk >= MOSTLY).then(|| {
        format!(
            "{} waits for the disk {} of the time: the disk is the limit",
            short(s.command),
            percent(disk)
        )
    })
}

/// The host an ssh command line connects to: its first word that is neither an option
/// nor an option's value (`ssh -p 2222 -i key nas cat` is `nas`).
pub(crate) fn ssh_host(command: &str) -> Option<&str> {
    // Options of ssh that take a value.
    const VALUED: &str = "BbcDEeFIiJLlmOoPpQRSWw";
    let mut words = command.split(' ').skip(1).filter(|w| !w.is_empty());
    while let Some(word) = words.next() {
        let Some(flags) = word.strip_prefix('-') else {
            return Some(word);
        };
        if word == "--" {
            return words.next();
        }
        // In a bundle (`-vp 22`, `-p22`), the first flag that takes a value takes the rest
        // of the word, or the next word.
        if let Some(at) = flags.find(|c| VALUED.contains(c)) {
            if at + 1 == flags.len() {
                words.next();
            }
        }
    }
    None
}

fn network(s: &Situation<'_>, _: &Tools) -> Option<String> {
    let network = s.time.get(Part::Network);
    if network < MOSTLY {
        return None;
    }
    let command = short(s.command);
    let share = percent(network);
    Some(match (program(s.command), s.peer) {
        ("ssh", peer) => {
            let host = ssh_host(s.command).or(peer).unwrap_or("the remote host");
            format!(
                "the network or the remote end (ssh {host}) is the limit: {command} waits \
                 on its connection {share} of the time"
            )
        }
        (_, Some(peer)) => format!(
            "the network or the peer ({peer}) is the limit: {command} waits on its socket \
             {share} of the time"
        ),
        (_, None) => {
            format!("the network is the limit: {command} waits on the network {share} of the time")
        }
    })
}

/// ssh using a CPU most of the time: the encryption (or compression) is the limit.
fn ssh_cipher(s: &Situation<'_>, _: &Tools) -> Option<String> {
    if program(s.command) != "ssh" || s.time.cpu() < MOSTLY {
        return None;
    }
    let host = ssh_host(s.command).unwrap_or("HOST");
    let words: Vec<&str> = s.command.split(' ').collect();
    let compressing = words.iter().any(|w| {
        (w.starts_with('-') && !w.starts_with("--") && w.contains('C') && w.len() <= 4)
            || w.eq_ignore_ascii_case("Compression=yes")
    });
    let tip = if compressing {
        format!("compression off (ssh -o Compression=no {host}), or a faster cipher (-c aes128-gcm@openssh.com)")
    } else {
        format!("a faster cipher (ssh -c aes128-gcm@openssh.com {host}), and no compression")
    };
    Some(format!(
        "try {tip}: {} is on a CPU or waiting for one {} of the time (encryption)",
        short(s.command),
        percent(s.time.cpu())
    ))
}

/// True if the command line asks for threads (`-T N`, `-TN`, `--threads=N`, `-p N` of
/// pigz-like tools is not looked for: they are not in [`PARALLEL`]'s first column).
fn asks_for_threads(command: &str) -> bool {
    command
        .split(' ')
        .skip(1)
        .any(|w| w.starts_with("--threads") || (w.starts_with("-T") && !w.starts_with("--")))
}

/// A single-threaded compressor using a whole core while cores are idle.
fn parallel_compressor(s: &Situation<'_>, tools: &Tools) -> Option<String> {
    let name = program(s.command);
    let (_, counterparts) = PARALLEL.iter().find(|(single, _)| *single == name)?;
    if s.time.get(Part::Busy) < WHOLE_CORE || asks_for_threads(s.command) {
        return None;
    }
    let idle = s.idle_cores?.round() as usize;
    if idle == 0 {
        return None;
    }
    let suggestion = counterparts
        .iter()
        .find(|(tool, _)| tools.has(tool))
        .map(|(_, how)| *how)?;
    // Its core and the idle ones, as a command to paste.
    let threads = (idle + 1).min(s.cores.max(1));
    let paste = match suggestion {
        "pigz" => format!("pigz -p {threads}"),
        "pbzip2" => format!("pbzip2 -p{threads}"),
        "lbzip2" | "plzip" => format!("{suggestion} -n {threads}"),
        other => other.to_string(),
    };
    let cores = if idle == 1 {
        format!("1 of {} cores is idle", s.cores)
    } else {
        format!("{idle} of {} cores are idle", s.cores)
    };
    Some(format!(
        "try {paste}: {} uses a whole core while {cores}",
        short(s.command)
    ))
}

/// The first or the last stage is the slowest: the others wait for it.
fn slow_end(s: &Situation<'_>, _: &Tools) -> Option<String> {
    let role = match s.position {
        Position::First => "producer",
        Position::Last => "consumer",
        Position::Middle | Position::Only => return None,
    };
    let busy = s.time.get(Part::Busy) + s.time.get(Part::Starved);
    let input = s.time.get(Part::Input);
    let output = s.time.get(Part::Output);
    let what = if busy >= MOSTLY {
        // As the row shows it: on a CPU, and waiting for one.
        let starved = s.time.get(Part::Starved);
        if percent(starved) == "0%" {
            format!("busy {} of the time", percent(busy))
        } else {
            format!(
                "busy {}, waiting for a CPU {} of the time",
                percent(s.time.get(Part::Busy)),
                percent(starved)
            )
        }
    } else if s.position == Position::First && input >= MOSTLY {
        format!("waiting for its own input {} of the time", percent(input))
    } else if s.position == Position::Last && output >= MOSTLY {
        format!(
            "waiting to write its output {} of the time",
            percent(output)
        )
    } else {
        format!("on its own {} of the time", percent(s.time.own()))
    };
    Some(format!(
        "the {role} is the slowest stage: {} ({what}); the others wait for it",
        short(s.command)
    ))
}

#[cfg(test)]
#[path = "advice_tests.rs"]
mod tests;
