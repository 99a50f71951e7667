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
    /// Its share of the quiet CPU, for a pipeline started there.
    _cpu: Option<std::sync::RwLockReadGuard<'static, ()>>,
}

/// The first CPU this process may run on, for a test that pins its own work to one CPU.
pub fn one_cpu() -> usize {
    let allowed = rustix::thread::sched_getaffinity(None).expect("sched_getaffinity");
    (0..rustix::thread::CpuSet::MAX_CPU)
        .find(|&cpu| allowed.is_set(cpu))
        .unwrap_or(0)
}

impl Pipeline {
    /// Starts `script`; its output goes nowhere.
    pub fn start(script: &str) -> Pipeline {
        use std::os::unix::process::CommandExt;
        let shell = Command::new("nice")
            .args(["-n", "5", "sh", "-c", script])
            .env("RPV", env!("CARGO_BIN_EXE_rpv"))
            .env_remove("RPV_TEST_PATH")
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn sh");
        Pipeline { shell, _cpu: None }
    }

    /// [`Pipeline::start`] on a quiet CPU of its own ([`crate::util::on_a_quiet_cpu`]):
    /// for a pipeline whose verdict must not depend on what else the machine runs. Its
    /// stages share that one CPU, so it is for pipelines that mostly wait (a rate limit, a
    /// slow peer, sleeps); a test whose pipeline loads it holds it alone first
    /// ([`crate::util::quiet_cpu_alone`]). Until dropped, it holds a share of that CPU.
    pub fn start_quiet(script: &str) -> Pipeline {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", script])
            .env("RPV", env!("CARGO_BIN_EXE_rpv"))
            .env_remove("RPV_TEST_PATH")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let cpu = crate::util::quiet_cpu_shared();
        crate::util::on_a_quiet_cpu(&mut cmd);
        Pipeline {
            shell: cmd.spawn().expect("spawn sh"),
            _cpu: cpu,
        }
    }

    /// A CPU thief that takes one CPU and leaves the others alone: a busy loop on the CPU
    /// of [`Pipeline::start_quiet`], at that priority: what runs there beside it gets about
    /// half of that CPU, and every process of ordinary priority there moves to another. The
    /// test holds that CPU alone first ([`crate::util::quiet_cpu_alone`]).
    pub fn thief() -> Pipeline {
        Pipeline::start_quiet("while :; do :; done")
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
