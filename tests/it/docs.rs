//! The documentation people install: `--help`, the man page (`doc/rpv.1`) and the shell
//! completions (`completions/`, `rpv --completions SHELL`) must list the same options.
//!
//! `--help`, the parser and the completions read one option table (`src/cli/flags.rs`);
//! these tests hold the man page and the completions to `rpv --help`, so an option added to
//! the table without its documentation fails here, naming the option and the place it is
//! missing from. Tools that may be missing (groff, mandoc, zsh, fish) skip their check with
//! a message; .ci/run installs them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use crate::util::rpv;

const MAN_PAGE: &str = "doc/rpv.1";

fn project_file(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

fn read_project_file(path: &str) -> String {
    std::fs::read_to_string(project_file(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// stdout of a successful `rpv ARGS`.
fn rpv_stdout(args: &[&str]) -> String {
    let out = rpv(args).stderr(Stdio::piped()).output().expect("run rpv");
    assert!(out.status.success(), "rpv {args:?}: {out:?}");
    String::from_utf8(out.stdout).expect("UTF-8")
}

fn help() -> String {
    rpv_stdout(&["--help"])
}

/// The option part of each help row (`-s, --size SIZE`, `--completions SHELL`), keyed by
/// long name, and the long names that come after the heading of rpv's own options.
fn help_options() -> (BTreeMap<String, String>, Vec<String>) {
    let mut options = BTreeMap::new();
    let mut own = Vec::new();
    let mut in_own = false;
    for line in help().lines() {
        if line.starts_with("rpv's own options") {
            in_own = true;
        } else if line.is_empty() {
            in_own = false;
        }
        if !(line.starts_with("  -") || line.starts_with("      --")) {
            continue;
        }
        let part = line
            .trim_start()
            .split("  ")
            .next()
            .unwrap_or("")
            .trim_end();
        let name = long_name(part);
        if in_own {
            own.push(name.clone());
        }
        options.insert(name, part.to_owned());
    }
    assert!(options.len() > 40, "too few help rows: {options:?}");
    (options, own)
}

/// `size` from `-s, --size SIZE`.
fn long_name(part: &str) -> String {
    let at = part
        .find("--")
        .unwrap_or_else(|| panic!("no long name in {part:?}"));
    part[at + 2..]
        .split([' ', '[', '='])
        .next()
        .unwrap_or("")
        .to_owned()
}

/// Roff text as it reads: font changes dropped, `\-` as `-`.
fn deroff(text: &str) -> String {
    let plain = text
        .replace("\\fB", "")
        .replace("\\fI", "")
        .replace("\\fR", "")
        .replace("\\fP", "")
        .replace("\\-", "-")
        .replace("\\&", "")
        .replace("\\ ", " ");
    assert!(!plain.contains('\\'), "cannot read the roff text {text:?}");
    plain
}

/// The tags of the `.TP`/`.TQ` entries of a man page section (`.SH NAME`), each with the
/// `.SS` subsection it is in.
fn man_tags(man: &str, section: &str) -> Vec<(String, String)> {
    let lines: Vec<&str> = man.lines().collect();
    let start = lines
        .iter()
        .position(|l| {
            l.trim() == format!(".SH {section}") || l.trim() == format!(".SH \"{section}\"")
        })
        .unwrap_or_else(|| panic!("{MAN_PAGE} has no section {section}"));
    let mut tags = Vec::new();
    let mut subsection = String::new();
    for (i, line) in lines.iter().enumerate().skip(start + 1) {
        if line.starts_with(".SH") {
            break;
        }
        if let Some(name) = line.strip_prefix(".SS ") {
            subsection = name.trim_matches('"').to_owned();
        }
        if *line == ".TP" || *line == ".TQ" {
            let tag = lines.get(i + 1).expect("a tag after .TP");
            tags.push((subsection.clone(), deroff(tag)));
        }
    }
    tags
}

/// The man page's option entries: tag keyed by long name, and the long names in the
/// subsection of rpv's own options.
fn man_options() -> (BTreeMap<String, String>, Vec<String>) {
    let man = read_project_file(MAN_PAGE);
    let mut options = BTreeMap::new();
    let mut own = Vec::new();
    for (subsection, tag) in man_tags(&man, "OPTIONS") {
        let name = long_name(&tag);
        if subsection == "rpv's own options" {
            own.push(name.clone());
        }
        assert!(
            options.insert(name.clone(), tag).is_none(),
            "{MAN_PAGE}: two entries for --{name}"
        );
    }
    (options, own)
}

#[test]
fn man_page_has_an_entry_for_every_help_option_and_no_other() {
    let (help, _) = help_options();
    let (man, _) = man_options();
    let mut problems = Vec::new();
    for (name, part) in &help {
        match man.get(name) {
            None => problems.push(format!(
                "--{name} is in `rpv --help` but has no entry in {MAN_PAGE}: add a .TP entry \
                 for `{part}` under OPTIONS"
            )),
            Some(tag) if tag != part => problems.push(format!(
                "--{name}: {MAN_PAGE} shows `{tag}` but `rpv --help` shows `{part}`"
            )),
            Some(_) => {}
        }
    }
    for (name, tag) in &man {
        if !help.contains_key(name) {
            problems.push(format!(
                "{MAN_PAGE} documents `{tag}`, which `rpv --help` does not list (src/cli/flags.rs)"
            ));
        }
    }
    assert!(problems.is_empty(), "\n{}\n", problems.join("\n"));
}

#[test]
fn man_page_and_help_agree_on_rpv_own_options() {
    let (_, help_own) = help_options();
    let (_, man_own) = man_options();
    assert!(help_own.contains(&"completions".to_owned()), "{help_own:?}");
    assert_eq!(
        man_own, help_own,
        "the \"rpv's own options\" subsection of {MAN_PAGE} must list exactly the options \
         under that heading in `rpv --help`, in the same order"
    );
}

#[test]
fn man_page_describes_every_format_sequence() {
    let help = help();
    let list = help
        .split("Supported format sequences:\n\n")
        .nth(1)
        .and_then(|rest| rest.split("\n\n").next())
        .expect("format sequences in --help");
    let man = read_project_file(MAN_PAGE);
    let tags: Vec<String> = man_tags(&man, "FORMAT SEQUENCES")
        .into_iter()
        .map(|(_, tag)| tag)
        .collect();
    let described: Vec<&str> = tags.iter().flat_map(|t| t.split(", ")).collect();
    let listed: Vec<&str> = list.split_whitespace().collect();
    assert!(listed.len() > 25, "{listed:?}");
    for sequence in &listed {
        assert!(
            described.contains(sequence),
            "{sequence} is listed by `rpv --help` but has no entry under FORMAT SEQUENCES in \
             {MAN_PAGE}"
        );
    }
    for sequence in &described {
        assert!(
            listed.contains(sequence),
            "{MAN_PAGE} describes {sequence}, which `rpv --help` does not list"
        );
    }
}

#[test]
fn man_page_has_pv_manual_sections_and_names_this_version() {
    let man = read_project_file(MAN_PAGE);
    let sections: Vec<&str> = man
        .lines()
        .filter_map(|l| l.strip_prefix(".SH "))
        .map(|s| s.trim_matches('"'))
        .collect();
    for wanted in [
        "NAME",
        "SYNOPSIS",
        "DESCRIPTION",
        "OPTIONS",
        "FORMAT SEQUENCES",
        "EXIT STATUS",
        "ENVIRONMENT",
        "EXAMPLES",
        "DIFFERENCES FROM PV",
        "SEE ALSO",
    ] {
        assert!(
            sections.contains(&wanted),
            "{MAN_PAGE} has no {wanted} section"
        );
    }
    let th = man
        .lines()
        .find(|l| l.starts_with(".TH "))
        .expect(".TH line");
    let version = format!("\"rpv {}\"", env!("CARGO_PKG_VERSION"));
    assert!(
        th.contains(&version),
        "{MAN_PAGE}: the .TH line must name {version}: {th}"
    );
    // The exit status values the man page gives are the ones rpv uses.
    let exit = man
        .split(".SH \"EXIT STATUS\"")
        .nth(1)
        .expect("exit status");
    for value in ["1", "2", "4", "8", "16", "32", "64"] {
        assert!(
            exit.contains(&format!(".TP\n.B {value}\n")),
            "status {value}"
        );
    }
}

/// Runs `tool ARGS` and returns its output, or None (after saying so) if it is missing.
fn run_tool(tool: &str, args: &[&str]) -> Option<std::process::Output> {
    match Command::new(tool).args(args).output() {
        Ok(out) => Some(out),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            eprintln!("skipped: {tool} is not installed (.ci/run installs it)");
            None
        }
        Err(e) => panic!("{tool}: {e}"),
    }
}

#[test]
fn man_page_renders_without_warnings() {
    let path = project_file(MAN_PAGE);
    let path = path.to_str().expect("UTF-8 path");
    if let Some(out) = run_tool("groff", &["-ww", "-z", "-man", path]) {
        assert!(out.status.success(), "groff: {out:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            "",
            "groff -ww warnings"
        );
    }
    if let Some(out) = run_tool("mandoc", &["-T", "lint", path]) {
        let report = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "mandoc -T lint:\n{report}");
        assert_eq!(report, "", "mandoc -T lint");
    }
}

// ---- completions ----

const SHELLS: [(&str, &str); 3] = [
    ("bash", "completions/rpv.bash"),
    ("zsh", "completions/_rpv"),
    ("fish", "completions/rpv.fish"),
];

#[test]
fn completion_files_are_what_rpv_generates() {
    for (shell, file) in SHELLS {
        let generated = rpv_stdout(&["--completions", shell]);
        assert!(
            generated == read_project_file(file),
            "{file} is out of date: regenerate it with \
             `cargo run --bin rpv -- --completions {shell} > {file}`"
        );
    }
}

#[test]
fn completion_scripts_offer_every_help_option() {
    let (help, _) = help_options();
    for (shell, _) in SHELLS {
        let script = rpv_stdout(&["--completions", shell]);
        for (name, part) in &help {
            let short = part
                .strip_prefix('-')
                .and_then(|p| p.chars().next())
                .filter(|c| *c != '-');
            // An option whose value is attached (`--pipeline[=PID]`) is offered as
            // `--name=` by bash and fish (see `completion_of_an_attached_value_adds_no_space`).
            let attached = part.contains("[=");
            let (long_form, short_form) = match shell {
                "bash" if attached => (format!(" --{name}= "), None),
                "bash" => (format!(" --{name} "), short.map(|c| format!(" -{c} "))),
                "zsh" => (format!("'*--{name}"), short.map(|c| format!("'*-{c}"))),
                _ if attached => (format!("(__rpv_attached {name} "), None),
                _ => (
                    format!(" -l {name} "),
                    short.map(|c| format!(" -s {c} -l {name} ")),
                ),
            };
            let script = script.replace('"', " ");
            assert!(
                script.contains(&long_form),
                "the {shell} completion does not offer --{name}"
            );
            if let Some(short_form) = short_form {
                assert!(
                    script.contains(&short_form),
                    "the {shell} completion does not offer {}",
                    short_form.trim()
                );
            }
        }
    }
}

#[test]
fn completion_scripts_parse() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (shell, _) in SHELLS {
        let path = dir.path().join(shell);
        std::fs::write(&path, rpv_stdout(&["--completions", shell])).expect("write");
        let path = path.to_str().expect("UTF-8 path");
        if let Some(out) = run_tool(shell, &["-n", path]) {
            assert!(
                out.status.success() && out.stderr.is_empty(),
                "{shell} -n: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

#[test]
fn an_unknown_shell_is_a_usage_error() {
    let out = rpv(&["--completions", "csh"]).output().expect("run rpv");
    assert_eq!(out.status.code(), Some(64));
    assert!(out.stdout.is_empty());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "rpv: --completions: csh: unknown shell (bash, zsh or fish)\n"
    );
}

/// A bash that loads the completion script, completes the last of `words` (the word
/// being typed) with the function `complete -p rpv` names, and prints the candidates.
fn bash_complete(script: &Path, cwd: &Path, words: &[&str]) -> Vec<String> {
    let driver = r#"
source "$1"; shift
COMP_WORDS=("$@")
COMP_CWORD=$(( $# - 1 ))
COMP_LINE="$*"
COMP_POINT=${#COMP_LINE}
spec=$(complete -p rpv) || exit 3
fn=${spec#*-F }
fn=${fn%% *}
"$fn" rpv "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
printf '%s\n' "${COMPREPLY[@]}"
"#;
    let out = Command::new("bash")
        .arg("--norc")
        .arg("-c")
        .arg(driver)
        .arg("bash")
        .arg(script)
        .args(words)
        .current_dir(cwd)
        .output()
        .expect("run bash");
    assert!(
        out.status.success(),
        "bash completion of {words:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

/// A running rpv (waiting on its input) and a running `sleep`, killed on drop.
struct Processes {
    rpv: Child,
    sleep: Child,
    /// A stage whose command line has a newline and a tab in an argument: completion must
    /// still offer only its process ID (its description is one line).
    hostile: Child,
}

impl Processes {
    fn start() -> Processes {
        let rpv = rpv(&["-q"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn rpv");
        // No pipe on its standard input or output: not a stage of a pipeline.
        let sleep = Command::new("sleep")
            .arg("60")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("spawn sleep");
        // Until it has exec'd, the child's command name is still the test's.
        let comm = format!("/proc/{}/comm", rpv.id());
        crate::util::wait_until("rpv to start", crate::util::PATIENCE, || {
            std::fs::read_to_string(&comm).ok().as_deref() == Some("rpv\n")
        });
        let hostile = Command::new("sh")
            .args(["-c", "read line", "sh", "two\nlines\tand a tab"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("spawn sh");
        let cmdline = format!("/proc/{}/cmdline", hostile.id());
        crate::util::wait_until("sh to start", crate::util::PATIENCE, || {
            std::fs::read(&cmdline).is_ok_and(|c| c.windows(4).any(|w| w == b"two\n"))
        });
        Processes {
            rpv,
            sleep,
            hostile,
        }
    }
}

impl Drop for Processes {
    fn drop(&mut self) {
        for child in [&mut self.rpv, &mut self.sleep, &mut self.hostile] {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[test]
fn bash_completes_options_values_files_and_pids() {
    let dir = tempfile::tempdir().expect("tempdir");
    let script = dir.path().join("rpv.bash");
    std::fs::write(&script, rpv_stdout(&["--completions", "bash"])).expect("write");
    std::fs::create_dir(dir.path().join("alps")).expect("mkdir");
    std::fs::write(dir.path().join("alpha.txt"), "x").expect("write");
    std::fs::write(dir.path().join("beta.txt"), "x").expect("write");
    let complete = |words: &[&str]| bash_complete(&script, dir.path(), words);

    assert_eq!(complete(&["rpv", "--siz"]), ["--size"]);
    assert_eq!(complete(&["rpv", "--bar-s"]), ["--bar-style"]);
    // Every long name that begins with --s, from the help.
    let (help, _) = help_options();
    let mut expected: Vec<String> = help
        .keys()
        .filter(|n| n.starts_with('s'))
        .map(|n| format!("--{n}"))
        .collect();
    let mut got = complete(&["rpv", "--s"]);
    expected.sort();
    got.sort();
    assert_eq!(got, expected);

    // Values with a fixed set of words, also after --name= split at "=" and in a bundle.
    assert_eq!(complete(&["rpv", "-M", ""]), ["in", "out", "both"]);
    assert_eq!(complete(&["rpv", "--monitor", "b"]), ["both"]);
    assert_eq!(complete(&["rpv", "--completions", "=", "f"]), ["fish"]);
    assert_eq!(complete(&["rpv", "--comp", ""]), ["bash", "zsh", "fish"]);
    assert_eq!(complete(&["rpv", "-qu", "gr"]), ["granular"]);
    // Free values get no candidates (not file names).
    assert_eq!(complete(&["rpv", "-s", "al"]), Vec::<String>::new());
    // An option whose value is attached in the bundle waits for nothing.
    let mut got = complete(&["rpv", "-s5", "al"]);
    got.sort();
    assert_eq!(got, ["alpha.txt", "alps"]);

    // Files: options that take a file, and operands.
    for words in [
        &["rpv", "-o", "al"][..],
        &["rpv", "--output", "al"],
        &["rpv", "-U", "al"],
        &["rpv", "-P", "al"],
        &["rpv", "-pterb", "al"],
        &["rpv", "-N", "x", "al"],
    ] {
        let mut got = complete(words);
        got.sort();
        assert_eq!(got, ["alpha.txt", "alps"], "{words:?}");
    }

    // After -M SIDE --, a command.
    let commands = complete(&["rpv", "-M", "out", "--", "bas"]);
    assert!(commands.contains(&"bash".to_owned()), "{commands:?}");

    // PIDs: -d any process, -R/-Q running rpv instances.
    let procs = Processes::start();
    let rpv_pid = procs.rpv.id().to_string();
    let sleep_pid = procs.sleep.id().to_string();
    for words in [
        &["rpv", "-R", ""][..],
        &["rpv", "-Q", ""],
        &["rpv", "-qR", ""],
        &["rpv", "--remote", ""],
        &["rpv", "--query", "=", ""],
    ] {
        let pids = complete(words);
        assert!(pids.contains(&rpv_pid), "{words:?}: {pids:?}");
        assert!(!pids.contains(&sleep_pid), "{words:?}: only rpv instances");
        assert!(pids.iter().all(|p| p.parse::<u32>().is_ok()), "{pids:?}");
    }
    let pids = complete(&["rpv", "-d", ""]);
    assert!(
        pids.contains(&sleep_pid) && pids.contains(&rpv_pid),
        "{pids:?}"
    );
    assert!(pids.iter().all(|p| p.parse::<u32>().is_ok()), "{pids:?}");
    let pids = complete(&["rpv", "--watchfd", &sleep_pid]);
    assert!(pids.contains(&sleep_pid), "{pids:?}");
}

/// Writes rpv's fish completion script into `dir`; its path.
fn fish_script(dir: &Path) -> String {
    let script = dir.join("rpv.fish");
    std::fs::write(&script, rpv_stdout(&["--completions", "fish"])).expect("write");
    script.to_str().expect("UTF-8 path").to_owned()
}

/// What fish completes `line` to with `script` loaded (the words, without descriptions);
/// `None` if fish is missing.
fn fish_complete(script: &str, line: &str) -> Option<Vec<String>> {
    let command = format!("source {script}; complete -C '{line}'");
    let out = run_tool("fish", &["--no-config", "-c", &command])?;
    assert!(out.status.success(), "fish: {out:?}");
    Some(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| l.split('\t').next().unwrap_or("").to_owned())
            .collect(),
    )
}

#[test]
fn fish_completes_options_values_and_pids() {
    let dir = tempfile::tempdir().expect("tempdir");
    let script = fish_script(dir.path());
    let complete = |line: &str| fish_complete(&script, line);
    let Some(got) = complete("rpv --siz") else {
        return;
    };
    assert_eq!(got, ["--size"]);
    let mut got = complete("rpv -M ").expect("fish");
    got.sort();
    assert_eq!(got, ["both", "in", "out"]);
    let procs = Processes::start();
    let rpv_pid = procs.rpv.id().to_string();
    let sleep_pid = procs.sleep.id().to_string();
    let pids = complete("rpv -R ").expect("fish");
    assert!(pids.contains(&rpv_pid), "{pids:?}");
    assert!(!pids.contains(&sleep_pid), "{pids:?}");
    let pids = complete("rpv -d ").expect("fish");
    assert!(pids.contains(&sleep_pid), "{pids:?}");
}

#[test]
fn help_fits_80_columns_and_version_names_the_licence() {
    let help = help();
    for line in help.lines() {
        assert!(
            line.chars().count() <= 80,
            "wider than 80 columns: {line:?}"
        );
    }
    let version = rpv_stdout(&["--version"]);
    let mut lines = version.lines();
    assert_eq!(
        lines.next(),
        Some(format!("rpv {}", env!("CARGO_PKG_VERSION")).as_str())
    );
    assert!(version.contains("License: MIT OR Apache-2.0"), "{version}");
}

// ---- the documents stand on their own ----

const COMPATIBILITY: &str = "docs/compatibility.md";

#[test]
fn installed_and_user_docs_cite_nothing_outside_the_project() {
    for file in [MAN_PAGE, COMPATIBILITY, "README.md"] {
        let text = read_project_file(file);
        for (number, line) in text.lines().enumerate() {
            let lower = line.to_lowercase();
            let digit_after = |word: &str| {
                lower.match_indices(word).any(|(at, _)| {
                    lower[at + word.len()..].starts_with(|c: char| c.is_ascii_digit())
                })
            };
            let cites = lower.contains("../")
                || lower.contains("shared/")
                || lower.contains("pv-behaviour")
                || lower.contains("research §")
                || digit_after("spec ")
                || digit_after("issue #");
            assert!(
                !cites,
                "{file}:{}: cites a document users do not have: {line}",
                number + 1
            );
        }
    }
}

#[test]
fn compatibility_doc_lists_every_rpv_own_option() {
    let (_, own) = help_options();
    let doc = read_project_file(COMPATIBILITY);
    let section = doc
        .split("## rpv's own options")
        .nth(1)
        .unwrap_or_else(|| panic!("{COMPATIBILITY} has no \"rpv's own options\" section"));
    for name in &own {
        assert!(
            section.contains(&format!("| `--{name}")),
            "--{name} is one of rpv's own options but has no row in the \"rpv's own options\" \
             table of {COMPATIBILITY}"
        );
    }
}

/// `--pipeline[=PID]` completes as `--pipeline=`, with no space after it, and then offers
/// process IDs after the `=`: with a space, the PID typed next would be a file operand
/// (`rpv --pipeline 561` watches rpv's own pipeline and fails to read a file named 561).
#[test]
fn completion_of_an_attached_value_adds_no_space() {
    let dir = tempfile::tempdir().expect("tempdir");
    let procs = Processes::start();
    let sleep_pid = procs.sleep.id().to_string();

    // bash: the candidate, and the nospace option (compopt recorded by a stand-in).
    let script = dir.path().join("rpv.bash");
    std::fs::write(&script, rpv_stdout(&["--completions", "bash"])).expect("write");
    let driver = r#"
source "$1"; shift
compopt() { printf 'compopt %s\n' "$*"; }
COMP_WORDS=("$@")
COMP_CWORD=$(( $# - 1 ))
_rpv rpv "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
printf '%s\n' "${COMPREPLY[@]}"
"#;
    let bash = |words: &[&str]| -> (Vec<String>, String) {
        let out = Command::new("bash")
            .args(["--norc", "-c", driver, "bash"])
            .arg(&script)
            .args(words)
            .current_dir(dir.path())
            .output()
            .expect("run bash");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let (opts, lines): (Vec<&str>, Vec<&str>) =
            text.lines().partition(|l| l.starts_with("compopt "));
        (
            lines.into_iter().map(str::to_owned).collect(),
            opts.join("\n"),
        )
    };
    let (got, opts) = bash(&["rpv", "--pipel"]);
    assert_eq!(got, ["--pipeline="]);
    assert!(opts.contains("compopt -o nospace"), "{opts:?}");
    // Another option completes as before: with its space.
    let (got, opts) = bash(&["rpv", "--siz"]);
    assert_eq!(got, ["--size"]);
    assert!(!opts.contains("nospace"), "{opts:?}");
    // After the "=" (a word of its own in bash), the IDs of pipeline stages (a pipe on
    // standard input or output: the rpv reading a pipe, not the sleep), in numeric order.
    let rpv_pid = procs.rpv.id().to_string();
    let (pids, opts) = bash(&["rpv", "--pipeline", "=", ""]);
    assert!(pids.contains(&rpv_pid), "{pids:?}");
    assert!(!pids.contains(&sleep_pid), "{pids:?}");
    let numbers: Vec<u32> = pids.iter().map(|p| p.parse().expect("a PID")).collect();
    assert!(numbers.windows(2).all(|w| w[0] < w[1]), "{pids:?}");
    assert!(opts.contains("compopt -o nosort"), "{opts:?}");

    // fish: "--pipeline=" (fish adds no space after "="), then "--pipeline=PID".
    let script = fish_script(dir.path());
    let fish = |line: &str| fish_complete(&script, line);
    if let Some(got) = fish("rpv --pipel") {
        assert_eq!(got, ["--pipeline="]);
        let pids = fish("rpv --pipeline=").expect("fish");
        assert!(pids.contains(&format!("--pipeline={rpv_pid}")), "{pids:?}");
        assert!(
            !pids.contains(&format!("--pipeline={sleep_pid}")),
            "{pids:?}"
        );
        assert!(
            pids.iter().all(|p| p
                .strip_prefix("--pipeline=")
                .is_some_and(|pid| pid.parse::<u32>().is_ok())),
            "{pids:?}"
        );
        // Files are still offered as operands.
        // (fish runs in the package's directory.)
        let operands = fish("rpv ").expect("fish");
        assert!(operands.iter().any(|f| f == "Cargo.toml"), "{operands:?}");
    }

    // zsh, as a person uses it: in a terminal (tmux), Tab after "--pipel", then a key.
    if run_tool("zsh", &["--version"]).is_some() {
        zsh_types_pipeline_equals(dir.path());
    }
}

/// zsh in tmux with rpv's completion loaded: `rpv --pipel`, Tab, `X` reads
/// `rpv --pipeline=X`.
fn zsh_types_pipeline_equals(dir: &Path) {
    std::fs::write(dir.join("_rpv"), rpv_stdout(&["--completions", "zsh"])).expect("write");
    std::fs::write(
        dir.join(".zshrc"),
        format!(
            "fpath=({} $fpath)\nautoload -Uz compinit && compinit -u -d {}/.zcompdump\nPS1='> '\n",
            dir.display(),
            dir.display()
        ),
    )
    .expect("write");
    let tmux = |args: &[&str]| {
        Command::new("tmux")
            .args(["-L", "rpv-zsh-test", "-f", "/dev/null"])
            .args(args)
            .env("TMUX_TMPDIR", dir)
            .env("ZDOTDIR", dir)
            .env_remove("TMUX")
            .stdin(Stdio::null())
            .output()
    };
    let Ok(started) = tmux(&["new-session", "-d", "-x", "100", "-y", "10", "zsh"]) else {
        return;
    };
    assert!(started.status.success(), "{started:?}");
    // (The server's and the pane's sessions as far ahead of other work as the suite's, as
    // in tmux::Tmux::start.)
    if let Ok(out) = tmux(&["display-message", "-p", "#{pid} #{pane_pid}"]) {
        for pid in String::from_utf8_lossy(&out.stdout).split_whitespace() {
            if let Ok(pid) = pid.parse() {
                crate::util::session_ahead(pid);
            }
        }
    }
    let pane = || {
        let out = tmux(&["capture-pane", "-p"]).expect("tmux");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let wait_for = |what: &str| {
        if crate::util::poll(crate::util::PATIENCE, || {
            pane().contains(what).then_some(())
        })
        .is_none()
        {
            let _ = tmux(&["kill-server"]);
            panic!("{what:?} never shown: {}", pane());
        }
    };
    wait_for(">");
    tmux(&["send-keys", "-l", "rpv --pipel"]).expect("tmux");
    tmux(&["send-keys", "Tab"]).expect("tmux");
    wait_for("> rpv --pipeline=");
    tmux(&["send-keys", "-l", "X"]).expect("tmux");
    wait_for("> rpv --pipeline=X");
    let _ = tmux(&["kill-server"]);
}

/// The licence files the crate declares (`MIT OR Apache-2.0`) are at the root.
#[test]
fn the_declared_licences_are_at_the_root() {
    let manifest = read_project_file("Cargo.toml");
    assert!(manifest.contains("license = \"MIT OR Apache-2.0\""));
    let mit = read_project_file("LICENSE-MIT");
    assert!(mit.starts_with("MIT License\n"), "{mit}");
    assert!(mit.contains("Copyright (c) 2026 The rpv developers"));
    assert!(mit.contains("THE SOFTWARE IS PROVIDED \"AS IS\""));
    let apache = read_project_file("LICENSE-APACHE");
    assert!(apache.contains("Apache License") && apache.contains("Version 2.0, January 2004"));
    assert!(apache.contains("END OF TERMS AND CONDITIONS"));
}

/// Every file under /usr/share the man page names is one the package installs (a
/// `[package.metadata.deb]` asset), and the NDJSON description and schema are among them.
#[test]
fn the_man_page_names_installed_files_only() {
    let manifest = read_project_file("Cargo.toml");
    let assets: Vec<(String, String)> = manifest
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.trim().trim_start_matches('[').split('"').collect();
            // ["src", "dest", "mode"] → fields 1 and 3.
            (fields.len() >= 6).then(|| (fields[1].to_string(), fields[3].to_string()))
        })
        .collect();
    let installed = |dest: &str| {
        assets
            .iter()
            .find(|(_, to)| format!("/{to}") == dest)
            .map(|(from, _)| from.clone())
    };
    let man = read_project_file(MAN_PAGE).replace("\\-", "-");
    let mut named: Vec<&str> = man
        .match_indices("/usr/share/")
        .map(|(at, _)| {
            let rest = &man[at..];
            let end = rest
                .find(|c: char| c.is_whitespace() || matches!(c, ')' | ',' | ';'))
                .unwrap_or(rest.len());
            rest[..end].trim_end_matches('.')
        })
        .collect();
    named.sort_unstable();
    named.dedup();
    for doc in [
        "/usr/share/doc/rpv/json.md",
        "/usr/share/doc/rpv/json.schema.json",
    ] {
        assert!(named.contains(&doc), "the man page names {doc}: {named:?}");
    }
    for path in &named {
        let from = installed(path).unwrap_or_else(|| panic!("{path} is not a .deb asset"));
        assert!(project_file(&from).exists(), "{path}: {from} is missing");
    }
    assert_eq!(
        installed("/usr/share/doc/rpv/json.md").as_deref(),
        Some("docs/json.md")
    );
    assert_eq!(
        installed("/usr/share/doc/rpv/json.schema.json").as_deref(),
        Some("docs/json.schema.json")
    );
}

/// `rpv --help`: no line ends in a space or a tab.
#[test]
fn help_lines_do_not_end_in_spaces() {
    for line in help().lines() {
        assert!(!line.ends_with([' ', '\t']), "{line:?}");
    }
}

/// Code comments cite nothing outside the repository: no web addresses, and no section of
/// the behaviour notes kept beside it (`spec 3.12`), which a reader of the repository
/// cannot follow.
#[test]
fn comments_cite_nothing_outside_the_project() {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(&project_file("src"), &mut files);
    let mut found = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            let Some(at) = line.find("//") else { continue };
            let comment = &line[at..];
            let spec = comment
                .match_indices("spec ")
                .any(|(i, _)| comment[i + 5..].starts_with(|c: char| c.is_ascii_digit()));
            if spec || comment.contains("http://") || comment.contains("https://") {
                found.push(format!("{}:{}: {comment}", file.display(), n + 1));
            }
        }
    }
    assert!(found.is_empty(), "{found:#?}");
}

/// Every state the pipeline view shows (the words of `Activity::label` in
/// src/pipeline/classify.rs) is listed in the README, the man page and docs/json.md.
#[test]
fn every_pipeline_state_is_documented() {
    let code = read_project_file("src/pipeline/model.rs");
    let body = code
        .split("fn label(self)")
        .nth(1)
        .and_then(|rest| rest.split("\n    }\n").next())
        .expect("Activity::label");
    let states: Vec<&str> = body
        .lines()
        .filter_map(|l| l.split("=> \"").nth(1)?.split('"').next())
        .collect();
    assert!(states.len() >= 13, "{states:?}");
    for doc in ["README.md", MAN_PAGE, "docs/json.md"] {
        let text = read_project_file(doc);
        for state in &states {
            assert!(
                text.contains(state),
                "{doc} does not list the state {state:?}"
            );
        }
    }
}
