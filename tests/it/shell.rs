//! The shell-pipeline harness: a shell pipeline in its own process group, its processes
//! found by name or command line, stopped when dropped. Used by `screens` (and meant for
//! `pipeline`, whose copy of it predates this file).

use std::process::{Child, Command, Stdio};

use crate::util::wait_for;

/// How long a stage may take to start (a loaded 2-core machine included).
const START_SECS: f64 = crate::util::PATIENCE;

/// A shell pipeline (`sh -c SCRIPT`, niced, with `$RPV` set) in its own process group.
pub struct Pipeline {
    pub shell: Child,
}

/// The first CPU this process may run on, for a test that pins its own work to one CPU.
pub fn one_cpu() -> usize {
    let allowed = rustix::thread::sched_getaffinity(None).expect("sched_getaffinity");
    (0..rustix::thread::CpuSet::MAX_CPU)
        .find(|&cpu| allowed.is_set(cpu))
        .unwrap_or(0)
}

/// What every pipeline's shell gets: `$RPV`, no test hooks, and nowhere for its output.
fn shell_command(cmd: &mut Command) -> &mut Command {
    cmd.env("RPV", env!("CARGO_BIN_EXE_rpv"))
        .env_remove("RPV_TEST_PATH")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
}

impl Pipeline {
    /// Starts `script`; its output goes nowhere.
    pub fn start(script: &str) -> Pipeline {
        use std::os::unix::process::CommandExt;
        crate::util::suite_ahead();
        let shell = shell_command(Command::new("nice").args(["-n", "5", "sh", "-c", script]))
            .process_group(0)
            .spawn()
            .expect("spawn sh");
        Pipeline { shell }
    }

    /// A CPU thief that takes one CPU ([`one_cpu`]) and leaves the others alone: a busy
    /// loop pinned there, in a session of its own whose scheduling group has nice -20 (ahead
    /// of the suite's: [`crate::util::suite_ahead`]), and itself at nice -20.
    pub fn thief() -> Pipeline {
        Pipeline::start_in_session("while :; do :; done", -20, Some(one_cpu()))
    }

    /// [`Pipeline::start`] on the thief's CPU, in a session of its own of ordinary priority
    /// (nice 0): beside a [`Pipeline::thief`], it waits for that CPU most of the time,
    /// whatever else the machine runs.
    pub fn start_behind(script: &str) -> Pipeline {
        Pipeline::start_in_session(script, 0, Some(one_cpu()))
    }

    /// [`Pipeline::start`] on the thief's CPU, in a session of the thief's weight (its
    /// scheduling group and itself at nice -20): beside a [`Pipeline::thief`] the two share
    /// that CPU about equally, whatever else the machine runs (a loaded CPU the test makes).
    pub fn start_beside(script: &str) -> Pipeline {
        Pipeline::start_in_session(script, -20, Some(one_cpu()))
    }

    /// [`Pipeline::start`] in a session of its own whose scheduling group, and itself, have
    /// nice -20: for a light pipeline (one waiting on a slow peer) whose stages must not
    /// wait for a CPU, whatever else the machine runs. A pipeline left in the suite's group
    /// at nice 5, beside other sessions' busy loops and pipelines, had its sender wait for
    /// a CPU half the time, and the doctor rightly called the machine short of CPU. It
    /// takes only the little CPU it asks for.
    pub fn start_ahead(script: &str) -> Pipeline {
        Pipeline::start_in_session(script, -20, None)
    }

    fn start_in_session(script: &str, nice: i32, cpu: Option<usize>) -> Pipeline {
        let mut cmd = Command::new("sh");
        shell_command(cmd.args(["-c", script]));
        crate::util::own_session(&mut cmd, nice, cpu);
        Pipeline {
            shell: cmd.spawn().expect("spawn sh"),
        }
    }

    /// The PID of the pipeline's process running `comm` (waits for it to start).
    #[track_caller]
    pub fn find(&self, comm: &str) -> u32 {
        wait_for(&format!("{comm} to start"), START_SECS, || {
            descendants(self.shell.id())
                .into_iter()
                .find(|&p| self::comm(p).as_deref() == Some(comm))
        })
    }

    /// The PID of the pipeline's process whose command line is `cmdline` (arguments joined
    /// by spaces; waits for it to start).
    #[track_caller]
    pub fn find_command(&self, cmdline: &str) -> u32 {
        wait_for(&format!("{cmdline} to start"), START_SECS, || {
            descendants(self.shell.id()).into_iter().find(|&p| {
                std::fs::read(format!("/proc/{p}/cmdline")).is_ok_and(|c| {
                    c.split(|&b| b == 0)
                        .filter(|a| !a.is_empty())
                        .eq(cmdline.split(' ').map(str::as_bytes))
                })
            })
        })
    }

    /// Ends every process of the group and reaps the shell.
    pub fn stop(&mut self) {
        let group = format!("-{}", self.shell.id());
        let _ = Command::new("kill")
            .args(["-TERM", "--", &group])
            .stderr(Stdio::null())
            .status();
        let _ = self.shell.wait();
    }
}

impl Drop for Pipeline {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The command name of process `pid`.
pub fn comm(pid: u32) -> Option<String> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    Some(text.trim_end().to_string())
}

/// The parent of process `pid`.
pub fn parent(pid: u32) -> Option<u32> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &text[text.rfind(')')? + 2..];
    after.split(' ').nth(1)?.parse().ok()
}

/// Every process below `root`.
pub fn descendants(root: u32) -> Vec<u32> {
    let mut found = vec![root];
    let mut all: Vec<u32> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    all.sort_unstable();
    let mut grew = true;
    while grew {
        grew = false;
        for &pid in &all {
            if !found.contains(&pid) && parent(pid).is_some_and(|p| found.contains(&p)) {
                found.push(pid);
                grew = true;
            }
        }
    }
    found.retain(|&p| p != root);
    found
}
