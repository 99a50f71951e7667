//! Spawning a pipeline without a shell, waiting for its processes through
//! pidfds (so one deadline covers them all), and killing it when it runs past
//! that deadline. (The tool's rusage comes from its `measure` wrapper.)

use crate::measure::read_report;
use rustix::event::{PollFd, PollFlags};
use rustix::process::{Pid, PidfdFlags};
use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::os::fd::OwnedFd;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// One process of a pipeline.
#[derive(Clone, Debug)]
pub struct Stage {
    /// Program and arguments.
    pub argv: Vec<OsString>,
    /// For the tool under test (run through `rpv-bench measure`): the file
    /// where its CPU time and peak RSS are reported.
    pub report: Option<PathBuf>,
    /// Send this stage's stderr to /dev/null.
    pub quiet: bool,
    /// This stage gets the write end of the side pipe as descriptor 3.
    pub side_fd: bool,
}

/// A linear pipeline: optional input file, stages joined by pipes, and an
/// optional output file (opened for writing *without* truncation).
#[derive(Clone, Debug, Default)]
pub struct Pipeline {
    /// File connected to the first stage's stdin (else /dev/null).
    pub stdin: Option<PathBuf>,
    /// The processes, left to right.
    pub stages: Vec<Stage>,
    /// File connected to the last stage's stdout (else /dev/null).
    pub stdout: Option<PathBuf>,
    /// A process reading a second pipe, whose write end is descriptor 3 of the stage marked
    /// `side_fd` (bash's `>(side)`).
    pub side: Option<Stage>,
}

/// Wall time of the whole pipeline plus the measured stages' resource use.
#[derive(Clone, Copy, Debug)]
pub struct Measurement {
    /// From just before the first spawn to the last process reaped.
    pub wall: Duration,
    /// User + system CPU time summed over the measured stages.
    pub cpu: Duration,
    /// Largest `ru_maxrss` (KiB) among the measured stages.
    pub maxrss_kib: u64,
}

/// How a run ended.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// Every stage exited with status 0.
    Ok(Measurement),
    /// The deadline passed; the pipeline was killed.
    Timeout,
    /// A stage failed (message says which and how).
    Failed(String),
}

/// A spawned, not yet reaped process.
struct Running {
    child: Child,
    pidfd: OwnedFd,
    index: usize,
}

impl Pipeline {
    /// Runs the pipeline to completion or until `timeout` has passed.
    pub fn run(&self, timeout: Duration) -> Outcome {
        for report in self.stages.iter().filter_map(|s| s.report.as_ref()) {
            let _ = std::fs::remove_file(report);
        }
        let start = Instant::now();
        let mut procs = Vec::new();
        if let Err(e) = self.spawn_all(&mut procs) {
            kill_all(&mut procs);
            reap_all(procs);
            return Outcome::Failed(e);
        }
        self.wait_all(procs, start, start + timeout)
    }

    fn spawn_all(&self, procs: &mut Vec<Running>) -> Result<(), String> {
        let mut input = match &self.stdin {
            Some(p) => Stdio::from(File::open(p).map_err(|e| format!("{}: {e}", p.display()))?),
            None => Stdio::null(),
        };
        // The side process first; the write end of its pipe stays ours until the stage that
        // gets it has been spawned.
        let mut side_w = None;
        if let Some(side) = &self.side {
            let (r, w) = pipe().map_err(|e| format!("pipe: {e}"))?;
            let mut cmd = Command::new(&side.argv[0]);
            cmd.args(&side.argv[1..]).stdin(r).stdout(Stdio::null());
            let child = cmd.spawn().map_err(|e| format!("{}: {e}", name(side)))?;
            let pidfd = rustix::process::pidfd_open(Pid::from_child(&child), PidfdFlags::empty())
                .map_err(|e| format!("pidfd_open (needs Linux >= 5.3): {e}"))?;
            procs.push(Running {
                child,
                pidfd,
                index: self.stages.len(),
            });
            side_w = Some(w);
        }
        for (index, stage) in self.stages.iter().enumerate() {
            let last = index + 1 == self.stages.len();
            let output = if last {
                self.final_output()?
            } else {
                Stdio::piped()
            };
            let mut cmd = Command::new(&stage.argv[0]);
            cmd.args(&stage.argv[1..]).stdin(input).stdout(output);
            if stage.quiet {
                cmd.stderr(Stdio::null());
            }
            if let Some(w) = side_w.as_ref().filter(|_| stage.side_fd) {
                let raw = std::os::fd::AsRawFd::as_raw_fd(w);
                let hook = move || -> std::io::Result<()> {
                    // SAFETY: dup2 is async-signal-safe and changes only the child's table.
                    if unsafe { libc::dup2(raw, 3) } < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                };
                // SAFETY: the hook runs between fork and exec and only calls dup2, which is
                // async-signal-safe.
                unsafe { std::os::unix::process::CommandExt::pre_exec(&mut cmd, hook) };
            }
            let mut child = cmd.spawn().map_err(|e| format!("{}: {e}", name(stage)))?;
            input = child.stdout.take().map_or_else(Stdio::null, Stdio::from);
            let pidfd = rustix::process::pidfd_open(Pid::from_child(&child), PidfdFlags::empty())
                .map_err(|e| format!("pidfd_open (needs Linux >= 5.3): {e}"));
            match pidfd {
                Ok(pidfd) => procs.push(Running {
                    child,
                    pidfd,
                    index,
                }),
                Err(e) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(e);
                }
            }
            // `cmd` drops here, closing the parent's copies of the pipe ends.
        }
        Ok(())
    }

    fn final_output(&self) -> Result<Stdio, String> {
        match &self.stdout {
            Some(p) => OpenOptions::new()
                .write(true)
                .open(p)
                .map(Stdio::from)
                .map_err(|e| format!("{}: {e}", p.display())),
            None => Ok(Stdio::null()),
        }
    }

    fn wait_all(&self, mut procs: Vec<Running>, start: Instant, deadline: Instant) -> Outcome {
        let mut m = Measurement {
            wall: Duration::ZERO,
            cpu: Duration::ZERO,
            maxrss_kib: 0,
        };
        let mut failures: Vec<String> = Vec::new();
        while !procs.is_empty() {
            let Some(ready) = poll_exited(&procs, deadline) else {
                kill_all(&mut procs);
                reap_all(procs);
                return Outcome::Timeout;
            };
            let mut p = procs.swap_remove(ready);
            let status = reap(&mut p.child);
            m.wall = start.elapsed();
            let stage = self.stages.get(p.index).or(self.side.as_ref());
            if let Some(stage) = stage {
                record(stage, status, &mut m, &mut failures);
            }
        }
        if failures.is_empty() {
            Outcome::Ok(m)
        } else {
            Outcome::Failed(failures.join("; "))
        }
    }
}

/// Adds one reaped stage's exit status and resource report to the run.
fn record(stage: &Stage, status: ExitStatus, m: &mut Measurement, failures: &mut Vec<String>) {
    // The tool's own failure is the likely cause: list it first.
    match describe_failure(stage, status) {
        Some(f) if stage.report.is_some() => failures.insert(0, f),
        Some(f) => failures.push(f),
        None => {}
    }
    match stage.report.as_deref().map(read_report) {
        Some(Some((cpu, rss))) => {
            m.cpu += cpu;
            m.maxrss_kib = m.maxrss_kib.max(rss);
        }
        Some(None) if failures.is_empty() => {
            failures.push(format!("`{}`: no rusage report", name(stage)));
        }
        _ => {}
    }
}

/// Short command line of a stage for messages: program base names, and
/// the tool itself rather than its `measure` wrapper.
fn name(stage: &Stage) -> String {
    let skip = if stage.report.is_some() { 3 } else { 0 };
    let base = |a: &std::ffi::OsStr| {
        let p = std::path::Path::new(a);
        p.file_name().unwrap_or(a).to_string_lossy().into_owned()
    };
    let mut words = stage.argv.iter().skip(skip);
    let prog = words.next().map(|a| base(a)).unwrap_or_default();
    std::iter::once(prog)
        .chain(words.map(|a| a.to_string_lossy().into_owned()))
        .collect::<Vec<_>>()
        .join(" ")
}

fn describe_failure(stage: &Stage, status: ExitStatus) -> Option<String> {
    match (status.code(), status.signal()) {
        (Some(0), _) => None,
        (Some(code), _) => Some(format!("`{}` exited {code}", name(stage))),
        (None, Some(signal)) => Some(format!("`{}` killed by signal {signal}", name(stage))),
        (None, None) => Some(format!("`{}` ended oddly: {status}", name(stage))),
    }
}

/// A pipe (read end, write end), both close-on-exec.
fn pipe() -> std::io::Result<(std::os::fd::OwnedFd, std::os::fd::OwnedFd)> {
    Ok(rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?)
}

/// Index of a process that has exited, or None once the deadline passed.
fn poll_exited(procs: &[Running], deadline: Instant) -> Option<usize> {
    let mut fds: Vec<_> = procs
        .iter()
        .map(|p| PollFd::new(&p.pidfd, PollFlags::IN))
        .collect();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let timeout = rustix::time::Timespec {
            tv_sec: left.as_secs().min(i64::MAX as u64) as i64,
            tv_nsec: i64::from(left.subsec_nanos()),
        };
        match rustix::event::poll(&mut fds, Some(&timeout)) {
            Ok(n) if n > 0 => return fds.iter().position(|f| !f.revents().is_empty()),
            Ok(_) => return None,
            Err(_) if left.is_zero() => return None,
            Err(_) => {}
        }
    }
}

/// Waits for `child` (it has exited or was killed); retries on EINTR.
fn reap(child: &mut Child) -> ExitStatus {
    loop {
        match child.wait() {
            Ok(status) => return status,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            // Not reapable (cannot happen for our own unreaped child): count it as killed.
            Err(_) => return ExitStatus::from_raw(libc::SIGKILL),
        }
    }
}

/// SIGKILLs every process still listed (all are unreaped, so pids are ours).
fn kill_all(procs: &mut [Running]) {
    for p in procs {
        let _ = p.child.kill();
    }
}

fn reap_all(procs: Vec<Running>) {
    for mut p in procs {
        reap(&mut p.child);
    }
}
