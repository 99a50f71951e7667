//! Test harness: build `rpv` commands, feed them, collect what they wrote.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

/// The environment that turns on `--term-progress=auto` (the terminal's identity) or the
/// systemd status (`NOTIFY_SOCKET`): removed from every test's rpv, so a test run inside
/// such a terminal or service sees what CI sees.
pub const INTEGRATION_VARS: [&str; 8] = [
    "WT_SESSION",
    "ConEmuANSI",
    "TERM_PROGRAM",
    "TERM_PROGRAM_VERSION",
    "VTE_VERSION",
    "TMUX",
    "STY",
    "NOTIFY_SOCKET",
];

/// Puts the suite ahead of other work on the machine, once, before it starts a process: as
/// root, this test process leaves the session it was started in for one of its own, whose
/// scheduling group (autogroup) it gives nice [`SUITE_NICE`]. CPU time is shared between
/// sessions first, so busy loops and pipelines of other sessions no longer get a share
/// each equal to the suite's (with nproc + 1 busy loops and ten pipelines beside it, the
/// suite had a fourteenth of the CPU, and ran for over an hour); within the suite nothing
/// changes. Not root, or already a session leader: nothing. As it is no longer in the
/// terminal's foreground group, it ends by itself when the process that started it (cargo)
/// has gone, as after a Ctrl-C.
pub fn suite_ahead() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if !rustix::process::geteuid().is_root() {
            return;
        }
        let parent = rustix::process::getppid();
        if rustix::process::setsid().is_err() {
            return;
        }
        std::thread::spawn(move || loop {
            std::thread::sleep(std::time::Duration::from_millis(200));
            if rustix::process::getppid() != parent {
                std::process::exit(101);
            }
        });
        session_ahead(std::process::id());
    });
}

/// The nice value of the suite's scheduling group ([`suite_ahead`]): -10 weighs about nine
/// sessions at nice 0. Not -20 (about 87 of them): the kernel's own workers, at nice 0
/// outside any session's group, carry a pseudo-terminal's data, and beside a group at -20
/// that kept both cores busy the terminal tests failed on a quiet machine (4 runs in 8).
pub const SUITE_NICE: &str = "-10";

/// Gives the session of process `pid` (its scheduling group) the suite's nice value
/// ([`suite_ahead`]): for a daemon the suite starts, such as a tmux server, which leaves the
/// suite's session for one of its own. Refused when not root, or where autogroups are off:
/// the session then runs as it would have.
pub fn session_ahead(pid: u32) {
    let _ = std::fs::write(format!("/proc/{pid}/autogroup"), SUITE_NICE);
}

/// Starts `cmd` in a session of its own, at the scheduling group's nice value `nice` (as
/// root; else as it is), and with every process it starts on CPU `cpu` only when one is
/// given ([`crate::shell::one_cpu`]). A session's scheduling group (autogroup) is made on
/// the CPU it is pinned to.
pub fn own_session(cmd: &mut Command, nice: i32, cpu: Option<usize>) -> &mut Command {
    use std::os::unix::process::CommandExt;
    suite_ahead();
    let mut set = rustix::thread::CpuSet::new();
    if let Some(cpu) = cpu {
        set.set(cpu);
    }
    let value = nice.to_string().into_bytes();
    // SAFETY: between fork and exec the closure makes only async-signal-safe system calls
    // on the child itself (sched_setaffinity, setsid, setpriority, open, write, close),
    // with data prepared before the fork; none allocates or takes a lock.
    unsafe {
        cmd.pre_exec(move || {
            if cpu.is_some() {
                let _ = rustix::thread::sched_setaffinity(None, &set);
            }
            // Its own session: its own process group (which a test ends) and autogroup.
            let _ = rustix::process::setsid();
            // Refused when not root: it then runs at its usual priority.
            let _ = rustix::process::setpriority_process(None, nice);
            if let Ok(fd) = rustix::fs::open(
                c"/proc/self/autogroup",
                rustix::fs::OFlags::WRONLY,
                rustix::fs::Mode::empty(),
            ) {
                let _ = rustix::io::write(&fd, &value);
            }
            Ok(())
        });
    }
    cmd
}

/// A command for the rpv binary with a neutral environment (C locale, no test hooks).
pub fn rpv(args: &[&str]) -> Command {
    suite_ahead();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rpv"));
    cmd.args(args);
    cmd.env("LANG", "C")
        .env("LC_ALL", "C")
        .env_remove("NO_COLOR")
        .env("TERM", "xterm");
    for var in [
        "RPV_TEST_PATH",
        "RPV_TEST_FAIL_AT",
        "RPV_TEST_FAIL_TEE_AT",
        "RPV_TEST_TEE_PIPE",
        "RPV_TEST_TRACE",
        "RPV_TEST_ADAPT",
        "RPV_TEST_PACE",
        "RPV_TEST_READ_ERRORS",
        "RPV_TEST_CONTROL_UNCHECKED",
        "POSIXLY_CORRECT",
    ] {
        cmd.env_remove(var);
    }
    for var in INTEGRATION_VARS {
        cmd.env_remove(var);
    }
    cmd
}

/// [`rpv`] for a test whose bound needs rpv to get the CPU on time, when [`rpv_on_time`]
/// cannot have the real-time policy. As root, the calling test thread is raised to nice -10
/// first, so rpv and whatever else the test starts from then on inherit it: the other tests
/// of the suite cannot hold them back by more than a scheduler tick. (libtest gives every
/// test a thread of its own.) Against work in other sessions it does nothing where each
/// session is a scheduling group of its own (autogroup, the default on most distributions).
/// Otherwise it is [`rpv`]. What rpv does is the same; only how soon it gets a CPU changes.
pub fn rpv_urgent(args: &[&str]) -> Command {
    if rustix::process::geteuid().is_root() {
        let _ = rustix::process::setpriority_process(None, -10);
    }
    rpv(args)
}

/// [`rpv`] for a test that times rpv's output against the clock (a rate within 2 % at
/// 5 s): as root, the calling test thread (which reads and timestamps the output) and rpv,
/// which inherits it, run under the real-time round-robin policy at its lowest priority, so
/// no busy loop, build or test of ordinary priority beside them can hold either back: the
/// test makes the quiet CPU it needs instead of hoping for one. Both spend the run asleep
/// (rpv in its rate limit, the test in `read`), so they take little of the CPU they are
/// given first. Otherwise (not root, or the policy refused) it is [`rpv_urgent`].
pub fn rpv_on_time(args: &[&str]) -> Command {
    if on_time() {
        return rpv(args);
    }
    rpv_urgent(args)
}

/// Puts the calling test thread, and so every process and thread it starts from then on,
/// under the real-time round-robin policy at its lowest priority (see [`rpv_on_time`]), for
/// a test that times a pipeline of its own against the clock. Nice values cannot do this on
/// a machine where every session is a scheduling group of its own (autogroup): a group of
/// busy loops started elsewhere gets its share whatever the nice value inside ours. False
/// when not root or the policy was refused (the test then runs as it is, and says nothing).
pub fn on_time() -> bool {
    if !rustix::process::geteuid().is_root() {
        return false;
    }
    let param = libc::sched_param { sched_priority: 1 };
    // SAFETY: sched_setscheduler reads `param` during the call only; pid 0 is the calling
    // thread.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_RR, &param) == 0 }
}

/// Deterministic pseudo-random bytes (xorshift), so failures are reproducible.
pub fn data(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.truncate(len);
    out
}

/// Text with newlines, for line mode.
pub fn text(lines: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..lines {
        writeln!(out, "line {i} {}", "x".repeat(i % 97)).unwrap();
    }
    out
}

/// Runs `cmd` with `input` on a stdin pipe and captures stdout and stderr.
pub fn run_with_input(mut cmd: Command, input: &[u8]) -> Output {
    cmd.stdout(Stdio::piped());
    run_with_input_keep_stdout(cmd, input)
}

/// Like [`run_with_input`], but stdout stays as the caller set it.
pub fn run_with_input_keep_stdout(mut cmd: Command, input: &[u8]) -> Output {
    cmd.stdin(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn rpv");
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().expect("wait rpv");
    writer.join().unwrap();
    out
}

/// Spawns `cmd` with stdout and stderr on pipes; a thread drains stdout and returns how
/// many bytes it read.
pub fn spawn_draining(mut cmd: Command) -> (Child, std::thread::JoinHandle<u64>) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn rpv");
    let mut stdout = child.stdout.take().unwrap();
    let reader =
        std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()).unwrap());
    (child, reader)
}

/// Everything `child` wrote to its piped stderr (call after it exited).
pub fn stderr_of(child: &mut Child) -> String {
    let mut text = String::new();
    child
        .stderr
        .take()
        .expect("stderr piped")
        .read_to_string(&mut text)
        .unwrap();
    text
}

/// A temporary directory that lives as long as the value.
pub struct Dir {
    pub dir: tempfile::TempDir,
}

impl Dir {
    pub fn new() -> Dir {
        suite_ahead();
        Dir {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn file(&self, name: &str, contents: &[u8]) -> PathBuf {
        let p = self.path(name);
        std::fs::write(&p, contents).unwrap();
        p
    }
}

pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Asserts equal byte strings with a readable message (lengths and first difference).
#[track_caller]
pub fn assert_same(actual: &[u8], expected: &[u8], what: &str) {
    if actual != expected {
        let first = actual
            .iter()
            .zip(expected)
            .position(|(a, b)| a != b)
            .unwrap_or(actual.len().min(expected.len()));
        panic!(
            "{what}: {} bytes out, {} expected, first difference at byte {first}",
            actual.len(),
            expected.len()
        );
    }
}

/// stderr as text.
pub fn err(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The integration tests run 16 at a time (`RUST_TEST_THREADS` in `.cargo/config.toml`,
/// unless the environment sets it): most of them wait on processes, not on the CPU. Three kinds of
/// test take turns through the functions below:
/// - a test that keeps the cores busy for seconds (gigabytes through pipes, a hundred runs
///   of rpv, strace) runs alone among the tests that take a turn ([`cores_busy`]), except
///   for one busy-loop test;
/// - a test that runs busy pipelines or busy loops beside the pipeline it watches (the
///   doctor's) runs one at a time and never beside a timing test ([`busy_loops`]); it may
///   run beside a [`cores_busy`] test, as when the suite ran two tests at once, unless it
///   loads every core itself ([`busy_loops_alone`]);
/// - a test whose bound needs the CPU on time (a rate within 2 %, an exit within a second
///   of a signal) runs beside neither of those ([`cores_free`]), but beside its like.
///
/// A test waiting for its turn gets it as soon as it fits beside the tests that hold one,
/// whatever waited before it: the timing tests join the ones running, and a busy-loop test
/// a busy one. Turns taken in the order asked (as the standard library's locks give them)
/// made the timing tests run in four rounds between the others, each as long as its
/// longest test, and the suite wait on those rounds. Every turn ends (no test waits for
/// another's turn while it holds one), so no test waits for ever.
static TURNS: std::sync::Mutex<Turns> = std::sync::Mutex::new(Turns {
    free: 0,
    busy: false,
    loops: false,
    loops_alone: false,
});
/// Woken when a turn ends.
static TURN_ENDED: std::sync::Condvar = std::sync::Condvar::new();

/// Who holds a turn now.
struct Turns {
    /// Timing tests ([`cores_free`]).
    free: usize,
    /// A [`cores_busy`] test.
    busy: bool,
    /// A busy-loop test ([`busy_loops`] or [`busy_loops_alone`]).
    loops: bool,
    /// The busy-loop test is a [`busy_loops_alone`] one.
    loops_alone: bool,
}

/// The kinds of turn.
#[derive(Clone, Copy)]
enum Kind {
    CoresBusy,
    BusyLoops { alone: bool },
    CoresFree,
}

impl Turns {
    /// Whether a test of `kind` fits beside the tests that hold a turn now.
    fn fits(&self, kind: Kind) -> bool {
        match kind {
            Kind::CoresFree => !self.busy && !self.loops,
            Kind::CoresBusy => self.free == 0 && !self.busy && !self.loops_alone,
            Kind::BusyLoops { alone } => self.free == 0 && !self.loops && !(alone && self.busy),
        }
    }

    fn take(&mut self, kind: Kind) {
        match kind {
            Kind::CoresFree => self.free += 1,
            Kind::CoresBusy => self.busy = true,
            Kind::BusyLoops { alone } => {
                self.loops = true;
                self.loops_alone = alone;
            }
        }
    }

    fn give_back(&mut self, kind: Kind) {
        match kind {
            Kind::CoresFree => self.free -= 1,
            Kind::CoresBusy => self.busy = false,
            Kind::BusyLoops { .. } => {
                self.loops = false;
                self.loops_alone = false;
            }
        }
    }
}

/// A test's turn (see [`TURNS`]), held until dropped.
pub struct Turn(Kind);

impl Turn {
    fn wait_for(kind: Kind) -> Turn {
        let turns = TURNS.lock().unwrap_or_else(|e| e.into_inner());
        let mut turns = TURN_ENDED
            .wait_while(turns, |turns| !turns.fits(kind))
            .unwrap_or_else(|e| e.into_inner());
        turns.take(kind);
        Turn(kind)
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        TURNS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .give_back(self.0);
        TURN_ENDED.notify_all();
    }
}

/// The turn of a test that keeps the cores busy for seconds (see [`TURNS`]).
pub fn cores_busy() -> Turn {
    Turn::wait_for(Kind::CoresBusy)
}

/// The turn of a test whose bounds need the CPU on time (see [`TURNS`]).
pub fn cores_free() -> Turn {
    Turn::wait_for(Kind::CoresFree)
}

/// The turn of a test that runs busy pipelines or busy loops (see [`TURNS`]).
pub fn busy_loops() -> Turn {
    Turn::wait_for(Kind::BusyLoops { alone: false })
}

/// [`busy_loops`] for a test that loads every core itself (a busy loop per core beside
/// its pipeline) and needs what is left of them for its pipeline: never beside a
/// [`cores_busy`] test either (beside one, its pipeline's first stage waited for a CPU more
/// than the stage it meant to find ran).
pub fn busy_loops_alone() -> Turn {
    Turn::wait_for(Kind::BusyLoops { alone: true })
}

/// How long a wait for another process to get somewhere (start, show a line, end) may
/// take: on a machine busy with other work a process can wait seconds for a CPU (beside
/// three busy loops and ten `gzip` pipelines, each in a session of its own, the suite's
/// processes get a fourteenth of the CPU), so a deadline is for a process that will
/// never get there, not for one that is slow. Nothing waits this long when things work.
pub const PATIENCE: f64 = 60.0;

/// How often the waits below look again.
const POLL: std::time::Duration = std::time::Duration::from_millis(10);

/// Polls `ready` until it gives a value, or `secs` seconds have passed (then `None`). The
/// one place the integration tests sleep while they wait for something: every wait is on a
/// condition, with a deadline.
pub fn poll<T>(secs: f64, mut ready: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs_f64(secs);
    loop {
        if let Some(value) = ready() {
            return Some(value);
        }
        if std::time::Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(POLL);
    }
}

/// Lets `time` pass, as part of what a test does: a slow producer or reader, a stop of a
/// given length, a window a rate is measured over. Never a wait for something to happen
/// (that is [`wait_until`]); the other place the integration tests sleep.
pub fn pause(time: std::time::Duration) {
    std::thread::sleep(time);
}

/// Polls `ready` until it gives a value; fails the test, naming `what`, after `secs` s.
#[track_caller]
pub fn wait_for<T>(what: &str, secs: f64, ready: impl FnMut() -> Option<T>) -> T {
    match poll(secs, ready) {
        Some(value) => value,
        None => panic!("waited {secs} s for {what}"),
    }
}

/// Polls `ready` until it gives a value; fails the test after `secs` s with `what` and the
/// last thing `ready` saw (its `Err`: a frame, a file's text), for a failure that shows why.
#[track_caller]
pub fn wait_showing<T>(what: &str, secs: f64, mut ready: impl FnMut() -> Result<T, String>) -> T {
    let mut last = String::new();
    let found = poll(secs, || match ready() {
        Ok(value) => Some(value),
        Err(seen) => {
            last = seen;
            None
        }
    });
    match found {
        Some(value) => value,
        None => panic!("waited {secs} s for {what}; last seen:\n{last}"),
    }
}

/// Polls `done` until it holds; fails the test, naming `what`, after `secs` s.
#[track_caller]
pub fn wait_until(what: &str, secs: f64, mut done: impl FnMut() -> bool) {
    wait_for(what, secs, || done().then_some(()));
}

/// The exit status of `child` once it has ended, or `None` if it still runs after `secs`.
pub fn exit_within(child: &mut Child, secs: f64) -> Option<std::process::ExitStatus> {
    poll(secs, || child.try_wait().unwrap())
}

/// Waits for `child` at most `secs` seconds; kills it and fails the test if it hangs.
#[track_caller]
pub fn wait_within(
    child: &mut std::process::Child,
    secs: f64,
    what: &str,
) -> std::process::ExitStatus {
    match exit_within(child, secs) {
        Some(status) => status,
        None => {
            let _ = child.kill();
            panic!("{what}: rpv still running after {secs} s");
        }
    }
}

/// The state letter of process `pid` (`R`, `S`, `T`, …) from `/proc/PID/stat`; `?` once it
/// is gone.
pub fn process_state(pid: u32) -> char {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat.rsplit(") ")
        .next()
        .and_then(|s| s.chars().next())
        .unwrap_or('?')
}

/// A signal mask line of `/proc/PID/status` (`SigCgt`, `SigPnd`, `ShdPnd`, …).
fn signal_mask(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .unwrap_or(0)
}

/// Process `pid` has a handler for `signal` (its handlers are in place).
pub fn catches(pid: u32, signal: libc::c_int) -> bool {
    signal_mask(pid, "SigCgt") & (1 << (signal - 1)) != 0
}

/// `signal` is pending for process `pid` (sent, not yet delivered).
pub fn pending(pid: u32, signal: libc::c_int) -> bool {
    let bit = 1 << (signal - 1);
    (signal_mask(pid, "SigPnd") | signal_mask(pid, "ShdPnd")) & bit != 0
}

/// A child's stdout drained by a thread that counts the bytes as they come.
pub struct Counted {
    bytes: std::sync::Arc<std::sync::atomic::AtomicU64>,
    reader: std::thread::JoinHandle<u64>,
}

impl Counted {
    /// Bytes read so far.
    pub fn bytes(&self) -> u64 {
        self.bytes.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Waits for the end of the output; every byte read.
    pub fn join(self) -> u64 {
        self.reader.join().unwrap()
    }
}

/// Spawns `cmd` with stdout and stderr on pipes; a thread drains stdout, counting as it
/// goes (so a test can wait for the data to flow).
pub fn spawn_counting(mut cmd: Command) -> (Child, Counted) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn rpv");
    let mut stdout = child.stdout.take().unwrap();
    let bytes = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let count = std::sync::Arc::clone(&bytes);
    let reader = std::thread::spawn(move || {
        let mut buf = vec![0u8; 1 << 16];
        loop {
            match stdout.read(&mut buf) {
                Ok(0) | Err(_) => return count.load(std::sync::atomic::Ordering::Relaxed),
                Ok(n) => {
                    count.fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
                }
            }
        }
    });
    (child, Counted { bytes, reader })
}

/// Bytes waiting in the pipe `fd` (FIONREAD), and the pipe's capacity.
pub fn pipe_fill(fd: std::os::fd::BorrowedFd<'_>) -> (usize, usize) {
    let queued = rustix::io::ioctl_fionread(fd).unwrap_or(0) as usize;
    let capacity = rustix::pipe::fcntl_getpipe_size(fd).unwrap_or(65536);
    (queued, capacity)
}

/// The byte counts every transfer path is checked at: empty, one byte, around a page,
/// around the default pipe size, just past 1 MiB, and past 16 MiB plus a bit.
pub const SIZES: [usize; 9] = [
    0,
    1,
    4095,
    4096,
    4097,
    65535,
    65537,
    (1 << 20) + 1,
    (17 << 20) + 5,
];

/// The inputs at every size of [`SIZES`], `data(SIZES[i], seed + i)`, made once per test
/// process and shared: a debug build takes about 0.15 s to make the 17 MiB one, and the
/// matrices of `integrity` and `tee` used to make it again for every path and fallback.
pub fn sized_data(seed: u64) -> std::sync::Arc<Vec<Vec<u8>>> {
    type Made = std::collections::HashMap<u64, std::sync::Arc<Vec<Vec<u8>>>>;
    static MADE: std::sync::Mutex<Option<Made>> = std::sync::Mutex::new(None);
    let mut made = MADE.lock().unwrap_or_else(|e| e.into_inner());
    let made = made.get_or_insert_with(Made::new);
    std::sync::Arc::clone(made.entry(seed).or_insert_with(|| {
        let inputs = SIZES.iter().zip(seed..).map(|(&size, s)| data(size, s));
        std::sync::Arc::new(inputs.collect())
    }))
}

/// A running child whose stderr a thread collects as it comes, so a test can wait for what
/// it shows.
pub struct Watched {
    pub child: Child,
    stderr: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Watched {
    /// Spawns `cmd` with stderr on a pipe that a thread collects (stdin and stdout as `cmd`
    /// has them).
    pub fn spawn(mut cmd: Command) -> Watched {
        let mut child = cmd.stderr(Stdio::piped()).spawn().expect("spawn");
        let mut pipe = child.stderr.take().unwrap();
        let stderr = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = std::sync::Arc::clone(&stderr);
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = pipe.read(&mut buf) {
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        Watched {
            child,
            stderr,
            reader: Some(reader),
        }
    }

    /// What it wrote to stderr so far.
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().unwrap()).into_owned()
    }

    /// Waits until its stderr so far satisfies `ready`; fails naming `what` after `secs`.
    #[track_caller]
    pub fn wait_for(&self, what: &str, secs: f64, ready: impl Fn(&str) -> bool) {
        if poll(secs, || ready(&self.stderr()).then_some(())).is_none() {
            panic!("waited {secs} s for {what}: {:?}", self.stderr());
        }
    }

    /// Waits for it to end (at most `secs`, else it is killed and the test fails); its exit
    /// status and all it wrote to stderr.
    #[track_caller]
    pub fn finish(mut self, secs: f64, what: &str) -> (std::process::ExitStatus, String) {
        let status = wait_within(&mut self.child, secs, what);
        if let Some(reader) = self.reader.take() {
            reader.join().unwrap();
        }
        (status, self.stderr())
    }
}
