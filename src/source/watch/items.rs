//! What to watch: `-d` values and operands, `@LISTFILE` contents and `=NAME` lookups
//!. Parsing is pure; only [`expand`] reads list files and runs
//! `pgrep` (through a caller-supplied function, so it is testable).

/// One item as written on the command line or in a list file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Spec {
    /// `PID`: every regular file and block device the process has open.
    Pid(u32),
    /// `PID:FD`: one descriptor.
    PidFd(u32, i32),
    /// `=NAME`: every process `pgrep NAME` finds.
    Name(String),
    /// `@LISTFILE`: more items, one per line.
    List(String),
}

/// Why an item could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SpecError {
    /// No number where a process ID belongs.
    Expected,
    /// The process ID is 0, negative or out of range.
    InvalidPid(String),
    /// `=` alone.
    MissingName,
    /// `@` alone.
    MissingFile,
}

/// A resolved target: a process, and optionally one of its descriptors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Target {
    /// Process ID (positive).
    pub pid: u32,
    /// `None` = the whole process.
    pub fd: Option<i32>,
}

/// Reads a decimal number the way `scanf` does after its optional sign: digits, saturating.
fn digits(text: &str) -> (&str, &str) {
    let rest = text.trim_start_matches(|c: char| c.is_ascii_digit());
    (&text[..text.len() - rest.len()], rest)
}

fn skip_space(text: &str) -> &str {
    text.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c'])
}

/// Parses one item: `PID[:FD]` like `sscanf("%u:%d")` (trailing text ignored,
/// `123:` and `123:x` mean the whole process), `=NAME`, `@LISTFILE`.
pub(crate) fn parse_spec(item: &str) -> Result<Spec, SpecError> {
    if let Some(name) = item.strip_prefix('=') {
        return if name.is_empty() {
            Err(SpecError::MissingName)
        } else {
            Ok(Spec::Name(name.to_string()))
        };
    }
    if let Some(file) = item.strip_prefix('@') {
        return if file.is_empty() {
            Err(SpecError::MissingFile)
        } else {
            Ok(Spec::List(file.to_string()))
        };
    }
    let text = skip_space(item);
    let (negative, text) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let (pid_digits, rest) = digits(text);
    if pid_digits.is_empty() {
        return Err(SpecError::Expected);
    }
    let pid = pid_digits
        .parse::<u32>()
        .ok()
        .filter(|&p| !negative && p > 0 && p <= i32::MAX as u32);
    let Some(pid) = pid else {
        let shown = if negative {
            format!("-{pid_digits}")
        } else {
            pid_digits.to_string()
        };
        return Err(SpecError::InvalidPid(shown));
    };
    let Some(after) = rest.strip_prefix(':') else {
        return Ok(Spec::Pid(pid));
    };
    let after = skip_space(after);
    let (fd_negative, after) = match after.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, after.strip_prefix('+').unwrap_or(after)),
    };
    let (fd_digits, _) = digits(after);
    if fd_digits.is_empty() {
        return Ok(Spec::Pid(pid));
    }
    let magnitude = fd_digits.parse::<i64>().unwrap_or(i64::MAX);
    let fd = if fd_negative { -magnitude } else { magnitude };
    let fd = fd.clamp(i32::MIN as i64, i32::MAX as i64) as i32;
    Ok(Spec::PidFd(pid, fd))
}

/// Parses the contents of a list file: each line up to its first CR or LF,
/// leading blanks skipped, blank and `#` lines ignored. `@` lines are refused with a
/// message (pv refuses them silently). Errors are complete messages without `prog: `.
pub(crate) fn parse_list(text: &str, file: &str) -> Result<Vec<Spec>, String> {
    let mut specs = Vec::new();
    for (index, raw) in text.split('\n').enumerate() {
        let line_no = index + 1;
        let line = raw.split('\r').next().unwrap_or("");
        let line = line.trim_start_matches([' ', '\t']);
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if line.starts_with('@') {
            return Err(format!(
                "-d @: {file}:{line_no}: list files may not contain @ lines"
            ));
        }
        match parse_spec(line) {
            Ok(spec) => specs.push(spec),
            Err(SpecError::InvalidPid(n)) => {
                return Err(format!("-d: {file}:{line_no}: {n}: invalid process ID"))
            }
            Err(SpecError::MissingName) => {
                return Err(format!("-d =: {file}:{line_no}: missing process name"))
            }
            Err(SpecError::Expected | SpecError::MissingFile) => {
                return Err(format!(
                    "-d: {file}:{line_no}: process ID or pid:fd pair expected"
                ))
            }
        }
    }
    Ok(specs)
}

/// PIDs in `pgrep` output: every line that starts with a positive number.
pub(crate) fn parse_pgrep(output: &str) -> Vec<u32> {
    output
        .lines()
        .filter_map(|line| {
            let (d, _) = digits(line);
            d.parse::<u32>()
                .ok()
                .filter(|&p| p > 0 && p <= i32::MAX as u32)
        })
        .collect()
}

/// The outcome of [`expand`].
#[derive(Debug, Default)]
pub(crate) struct Expanded {
    /// Targets in command-line order, exact duplicates removed.
    pub targets: Vec<Target>,
    /// Non-fatal problems (an `=NAME` without a match): each is a message, status bit 2.
    pub problems: Vec<String>,
}

/// Resolves the items: reads list files (`read_list(path)` → contents or error text) and
/// looks names up (`pgrep(name)` → PIDs). An `Err` is a command-line error (status 64).
pub(crate) fn expand(
    items: &[String],
    read_list: &mut dyn FnMut(&str) -> Result<String, String>,
    pgrep: &mut dyn FnMut(&str) -> Vec<u32>,
) -> Result<Expanded, String> {
    let mut specs = Vec::new();
    for item in items {
        match parse_spec(item) {
            Ok(Spec::List(file)) => {
                let text = read_list(&file).map_err(|e| format!("-d @: {file}: {e}"))?;
                specs.extend(parse_list(&text, &file)?);
            }
            Ok(spec) => specs.push(spec),
            Err(SpecError::InvalidPid(_)) => return Err("-d: invalid process ID".into()),
            Err(SpecError::MissingName) => return Err("-d =: missing process name".into()),
            Err(SpecError::MissingFile) => return Err("-d @: missing filename".into()),
            Err(SpecError::Expected) => return Err("-d: process ID or pid:fd pair expected".into()),
        }
    }
    let mut out = Expanded::default();
    let push = |out: &mut Expanded, target: Target| {
        if !out.targets.contains(&target) {
            out.targets.push(target);
        }
    };
    for spec in specs {
        match spec {
            Spec::Pid(pid) => push(&mut out, Target { pid, fd: None }),
            Spec::PidFd(pid, fd) => push(&mut out, Target { pid, fd: Some(fd) }),
            Spec::Name(name) => {
                let pids = pgrep(&name);
                if pids.is_empty() {
                    out.problems
                        .push(format!("-d ={name}: no matching process found"));
                }
                for pid in pids {
                    push(&mut out, Target { pid, fd: None });
                }
            }
            Spec::List(_) => {}
        }
    }
    Ok(out)
}

/// Runs `pgrep NAME` (stdin from /dev/null, its stderr passed through) and returns the
/// PIDs found, without this process itself. No pgrep → no PIDs.
pub(crate) fn run_pgrep(name: &str) -> Vec<u32> {
    use std::process::{Command, Stdio};
    let own = std::process::id();
    Command::new("pgrep")
        .arg(name)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .map(|out| parse_pgrep(&String::from_utf8_lossy(&out.stdout)))
        .unwrap_or_default()
        .into_iter()
        .filter(|&pid| pid != own)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_like_sscanf() {
        assert_eq!(parse_spec("123"), Ok(Spec::Pid(123)));
        assert_eq!(parse_spec("123abc"), Ok(Spec::Pid(123)));
        assert_eq!(parse_spec("123:"), Ok(Spec::Pid(123)));
        assert_eq!(parse_spec("123:x"), Ok(Spec::Pid(123)));
        assert_eq!(parse_spec("123:4"), Ok(Spec::PidFd(123, 4)));
        assert_eq!(parse_spec(" 123:4junk"), Ok(Spec::PidFd(123, 4)));
        assert_eq!(parse_spec("123:-1"), Ok(Spec::PidFd(123, -1)));
        assert_eq!(parse_spec("=foo"), Ok(Spec::Name("foo".into())));
        assert_eq!(parse_spec("@list"), Ok(Spec::List("list".into())));
        assert_eq!(parse_spec("="), Err(SpecError::MissingName));
        assert_eq!(parse_spec("@"), Err(SpecError::MissingFile));
        assert_eq!(parse_spec("x"), Err(SpecError::Expected));
        assert_eq!(parse_spec(""), Err(SpecError::Expected));
        assert_eq!(parse_spec("0"), Err(SpecError::InvalidPid("0".into())));
        assert_eq!(parse_spec("-5"), Err(SpecError::InvalidPid("-5".into())));
        assert_eq!(
            parse_spec("99999999999"),
            Err(SpecError::InvalidPid("99999999999".into()))
        );
    }

    #[test]
    fn list_files() {
        let text = "# comment\n\n  12\n\t13:4\r\n=sh\n14:5\rignored\n   \n";
        assert_eq!(
            parse_list(text, "f"),
            Ok(vec![
                Spec::Pid(12),
                Spec::PidFd(13, 4),
                Spec::Name("sh".into()),
                Spec::PidFd(14, 5)
            ])
        );
        assert_eq!(
            parse_list("1\n@other\n", "f"),
            Err("-d @: f:2: list files may not contain @ lines".into())
        );
        assert_eq!(
            parse_list("1\n\nbad\n", "f"),
            Err("-d: f:3: process ID or pid:fd pair expected".into())
        );
        assert_eq!(
            parse_list("0:3\n", "f"),
            Err("-d: f:1: 0: invalid process ID".into())
        );
        assert_eq!(parse_list("", "f"), Ok(vec![]));
    }

    #[test]
    fn pgrep_output() {
        assert_eq!(parse_pgrep("12\n345\nfoo\n0\n67 x\n"), vec![12, 345, 67]);
        assert_eq!(parse_pgrep(""), Vec::<u32>::new());
    }

    #[test]
    fn expansion_in_order_without_duplicates() {
        let items: Vec<String> = ["5", "@l", "=x", "=none", "5", "6:2"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let mut read = |f: &str| {
            assert_eq!(f, "l");
            Ok("7:1\n5\n".to_string())
        };
        let mut pgrep = |n: &str| if n == "x" { vec![8, 9] } else { vec![] };
        let e = expand(&items, &mut read, &mut pgrep).unwrap();
        let t = |pid, fd| Target { pid, fd };
        assert_eq!(
            e.targets,
            vec![
                t(5, None),
                t(7, Some(1)),
                t(8, None),
                t(9, None),
                t(6, Some(2))
            ]
        );
        assert_eq!(e.problems, vec!["-d =none: no matching process found"]);
        let mut bad = |_: &str| Err("No such file or directory".to_string());
        assert_eq!(
            expand(&["@nope".to_string()], &mut bad, &mut pgrep).unwrap_err(),
            "-d @: nope: No such file or directory"
        );
    }
}
