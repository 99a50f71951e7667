//! Spawning a pipeline without a shell, reaping it with `wait4` for rusage,
//! and killing it when it runs past its deadline.

use crate::measure::read_report;
use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io;
use std::path::PathBuf;
use std::process::{Command, Stdio};
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
    pid: libc::pid_t,
    pidfd: File,
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
            kill_all(&procs);
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
            let pid = child.id() as libc::pid_t;
            procs.push(Running {
                pid,
                pidfd: pidfd_open(pid)?,
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
                // SAFETY: dup2 is async-signal-safe and changes only the child's table.
                unsafe {
                    std::os::unix::process::CommandExt::pre_exec(&mut cmd, move || {
                        if libc::dup2(raw, 3) < 0 {
                            return Err(io::Error::last_os_error());
                        }
                        Ok(())
                    });
                }
            }
            let mut child = cmd.spawn().map_err(|e| format!("{}: {e}", name(stage)))?;
            input = child.stdout.take().map_or_else(Stdio::null, Stdio::from);
            let pid = child.id() as libc::pid_t;
            procs.push(Running {
                pid,
                pidfd: pidfd_open(pid)?,
                index,
            });
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
                kill_all(&procs);
                reap_all(procs);
                return Outcome::Timeout;
            };
            let p = procs.swap_remove(ready);
            let (status, _) = reap(p.pid);
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
fn record(stage: &Stage, status: libc::c_int, m: &mut Measurement, failures: &mut Vec<String>) {
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

fn describe_failure(stage: &Stage, status: libc::c_int) -> Option<String> {
    if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
        None
    } else if libc::WIFEXITED(status) {
        Some(format!(
            "`{}` exited {}",
            name(stage),
            libc::WEXITSTATUS(status)
        ))
    } else {
        Some(format!(
            "`{}` killed by signal {}",
            name(stage),
            libc::WTERMSIG(status)
        ))
    }
}

/// A pipe (read end, write end), both close-on-exec.
fn pipe() -> io::Result<(std::os::fd::OwnedFd, std::os::fd::OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills two descriptors that nothing else owns.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fresh descriptors, owned from here on.
    Ok(unsafe {
        use std::os::fd::FromRawFd;
        (
            std::os::fd::OwnedFd::from_raw_fd(fds[0]),
            std::os::fd::OwnedFd::from_raw_fd(fds[1]),
        )
    })
}

fn pidfd_open(pid: libc::pid_t) -> Result<File, String> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return Err(format!(
            "pidfd_open (needs Linux >= 5.3): {}",
            io::Error::last_os_error()
        ));
    }
    // SAFETY: fd is a fresh descriptor that nothing else owns.
    Ok(unsafe { std::os::fd::FromRawFd::from_raw_fd(fd as libc::c_int) })
}

/// Index of a process that has exited, or None once the deadline passed.
fn poll_exited(procs: &[Running], deadline: Instant) -> Option<usize> {
    use std::os::fd::AsRawFd;
    let mut fds: Vec<_> = procs
        .iter()
        .map(|p| libc::pollfd {
            fd: p.pidfd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let ms = left.as_millis().min(i32::MAX as u128) as libc::c_int;
        // SAFETY: fds is a valid array of pollfd.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
        if n > 0 {
            return fds.iter().position(|f| f.revents != 0);
        }
        if n == 0 || left.is_zero() {
            return None;
        }
    }
}

fn reap(pid: libc::pid_t) -> (libc::c_int, libc::rusage) {
    let mut status = 0;
    // SAFETY: rusage is plain old data; wait4 fills it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: valid out-pointers; pid is our unreaped child.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == pid || io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return (status, usage);
        }
    }
}

/// SIGKILLs every process still listed (all are unreaped, so pids are ours).
fn kill_all(procs: &[Running]) {
    for p in procs {
        // SAFETY: sending a signal to our own unreaped child.
        unsafe { libc::kill(p.pid, libc::SIGKILL) };
    }
}

fn reap_all(procs: Vec<Running>) {
    for p in procs {
        reap(p.pid);
    }
}
