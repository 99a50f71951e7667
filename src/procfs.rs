//! The parsers of `/proc` text, and the two readers that need no `Proc` boundary.
//!
//! Owns: the typed fields of `/proc/PID/stat` ([`Stat`]), `io` ([`Io`]), a thread's
//! `schedstat`, `/proc/stat`'s CPU times, `children`, `cmdline` (as a shell would quote
//! it), fd links (pipe and socket inodes), `syscall` (the descriptor a call blocks on) and
//! `net/{tcp,tcp6,unix}`; [`Stat::of`] and [`Io::of`] for the readers outside the pipeline
//! view (`-d`, the `-c` registry, the `-M` clean-up, `--stall-timeout`, the shell's jobs).
//! Must not: import rpv's modules (but `display::printable`, for command lines) or keep
//! files open: the pipeline view's reader, behind its `Proc` boundary and with its kept
//! descriptors, is `pipeline::procfs::SysProc`.

use std::io;

/// The clock ticks per second of the times in `/proc/PID/stat` (the kernel's `USER_HZ`,
/// which is 100 on every architecture rpv builds for).
pub const TICKS_PER_SECOND: u64 = 100;

/// The flag of field 9 of `/proc/PID/stat` that marks a kernel thread (`PF_KTHREAD` in the
/// kernel's `include/linux/sched.h`; not in the libc crate).
const PF_KTHREAD: u64 = 0x0020_0000;

/// The fields of `/proc/PID/stat` (or `/proc/PID/task/TID/stat`) the view uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stat {
    /// `comm`, the name in parentheses (at most 15 bytes, may contain spaces and `)`).
    pub comm: String,
    /// Field 3: `R` running, `S` sleeping, `D` uninterruptible (disk), `T`/`t` stopped,
    /// `Z` zombie, `X` dead, `I` idle kernel thread.
    pub state: char,
    /// Field 4.
    pub ppid: u32,
    /// Field 5.
    pub pgrp: u32,
    /// Field 6. Reads 0 for every process of a PID namespace whose session leader is
    /// outside it (a container), so it does not tell kernel threads apart.
    pub session: u32,
    /// Field 9 has the kernel's `PF_KTHREAD` flag: a kernel thread (no descriptors, no
    /// pipeline).
    pub kernel_thread: bool,
    /// Fields 14 + 15 (user + system time), in clock ticks.
    pub cpu_ticks: u64,
    /// Fields 16 + 17: the CPU time of its children that it has waited for (with theirs),
    /// in clock ticks.
    pub child_ticks: u64,
    /// Field 20.
    pub threads: u32,
    /// Field 22: start time in clock ticks after boot; with the PID, identifies a process.
    pub start: u64,
}

impl Stat {
    /// Reads and parses `/proc/PID/stat` (for the readers outside the view, which need no
    /// [`Proc`]: `-c`'s registry, the `-M` clean-up, `-d`); `None` if it cannot be read or
    /// parsed (the process is gone).
    pub fn of(pid: u32) -> Option<Stat> {
        Stat::parse(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
    }

    /// Parses the text of a `stat` file; `None` if it is not in the kernel's format.
    pub fn parse(text: &str) -> Option<Stat> {
        let open = text.find('(')?;
        let close = text.rfind(')')?;
        let comm = text.get(open + 1..close)?.to_string();
        // Fields 3 to 22, without allocating (this is read for every stage many times a
        // second); `fields[0]` is field 3 (state), so field N is at index N - 3.
        let mut fields = [""; 20];
        let mut words = text.get(close + 1..)?.split_ascii_whitespace();
        for field in &mut fields {
            *field = words.next()?;
        }
        let number = |n: usize| fields.get(n - 3).and_then(|f| f.parse::<u64>().ok());
        let small = |n: usize| number(n).and_then(|v| u32::try_from(v).ok());
        Some(Stat {
            comm,
            state: fields[0].chars().next()?,
            ppid: small(4)?,
            pgrp: small(5)?,
            session: small(6)?,
            kernel_thread: number(9)? & PF_KTHREAD != 0,
            cpu_ticks: number(14)?.saturating_add(number(15)?),
            child_ticks: number(16)?.saturating_add(number(17)?),
            threads: small(20)?,
            start: number(22)?,
        })
    }
}

/// The byte counters of `/proc/PID/io`: read- and write-family calls only (splice does not
/// count).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Io {
    /// `rchar`: bytes read.
    pub rchar: u64,
    /// `wchar`: bytes written.
    pub wchar: u64,
}

impl Io {
    /// Reads and parses `/proc/PID/io` (for `-d`); its text not in the kernel's format is
    /// EINVAL.
    pub fn of(pid: u32) -> io::Result<Io> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/io"))?;
        Io::parse(&text).ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))
    }

    /// Parses the text of an `io` file; `None` if either counter is missing.
    pub fn parse(text: &str) -> Option<Io> {
        let mut rchar = None;
        let mut wchar = None;
        for line in text.lines() {
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            let value = value.trim().parse().ok();
            match key {
                "rchar" => rchar = value,
                "wchar" => wchar = value,
                _ => {}
            }
        }
        Some(Io {
            rchar: rchar?,
            wchar: wchar?,
        })
    }
}

/// The two times of `/proc/PID/task/TID/schedstat`, in nanoseconds since the thread
/// started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Schedstat {
    /// Time on a CPU.
    pub run_ns: u64,
    /// Time runnable but waiting for a CPU (the run delay).
    pub delay_ns: u64,
}

impl Schedstat {
    /// Parses the text of a `schedstat` file (`run delay timeslices`); `None` if it is not
    /// in that format.
    pub fn parse(text: &str) -> Option<Schedstat> {
        let mut fields = text.split_ascii_whitespace().map(|f| f.parse::<u64>().ok());
        Some(Schedstat {
            run_ns: fields.next()??,
            delay_ns: fields.next()??,
        })
    }
}

/// The whole machine's CPU time from the first lines of `/proc/stat`, in clock ticks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTimes {
    /// Idle (and waiting for I/O), all CPUs together.
    pub idle: u64,
    /// Everything, all CPUs together.
    pub total: u64,
    /// CPUs online (the `cpuN` lines).
    pub cpus: u32,
}

impl CpuTimes {
    /// Parses the text of `/proc/stat`; `None` if its first line is not the `cpu` total.
    pub fn parse(text: &str) -> Option<CpuTimes> {
        let mut lines = text.lines();
        let first = lines.next()?.strip_prefix("cpu ")?;
        let fields: Vec<u64> = first
            .split_ascii_whitespace()
            .map(|f| f.parse().ok())
            .collect::<Option<_>>()?;
        // user nice system idle iowait irq softirq steal (guest times are in user).
        let total = fields.iter().take(8).sum();
        let idle = fields.get(3)? + fields.get(4).copied().unwrap_or(0);
        let cpus = lines
            .take_while(|l| l.starts_with("cpu"))
            .filter(|l| l.as_bytes().get(3).is_some_and(u8::is_ascii_digit))
            .count() as u32;
        Some(CpuTimes { idle, total, cpus })
    }

    /// Cores idle between `earlier` and `self`, on average.
    pub fn idle_cores_since(&self, earlier: &CpuTimes) -> Option<f64> {
        let total = self.total.checked_sub(earlier.total).filter(|t| *t > 0)?;
        let idle = self.idle.saturating_sub(earlier.idle);
        Some(idle as f64 / total as f64 * f64::from(self.cpus.max(1)))
    }
}

/// The inode of a pipe from an fd link's text (`pipe:[12345]`), `None` for anything else.
pub fn pipe_inode(link: &str) -> Option<u64> {
    link.strip_prefix("pipe:[")?.strip_suffix(']')?.parse().ok()
}

/// The inode of a socket from an fd link's text (`socket:[12345]`).
pub fn socket_inode(link: &str) -> Option<u64> {
    link.strip_prefix("socket:[")?
        .strip_suffix(']')?
        .parse()
        .ok()
}

/// System calls whose first argument is the descriptor they read or write (this
/// architecture's numbers): read, write, pread64, pwrite64, readv, writev, sendfile (its
/// output), sendto, recvfrom, sendmsg, recvmsg, recvmmsg, sendmmsg.
#[cfg(target_arch = "x86_64")]
const FD_CALLS: &[u64] = &[0, 1, 17, 18, 19, 20, 40, 44, 45, 46, 47, 299, 307];
#[cfg(target_arch = "aarch64")]
const FD_CALLS: &[u64] = &[63, 64, 67, 68, 65, 66, 71, 206, 207, 211, 212, 243, 269];
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const FD_CALLS: &[u64] = &[];

/// The descriptor a thread is blocked reading or writing, from its `syscall` file
/// (`0 0x3 0x7f… …`: the call's number and arguments); `None` for other calls, a thread
/// running (`running`) or a file in another format.
pub fn blocked_fd(syscall: &str) -> Option<u32> {
    let mut words = syscall.split_ascii_whitespace();
    let number: u64 = words.next()?.parse().ok()?;
    if !FD_CALLS.contains(&number) {
        return None;
    }
    let fd = u64::from_str_radix(words.next()?.strip_prefix("0x")?, 16).ok()?;
    u32::try_from(fd).ok()
}

/// The remote end of the TCP socket with this inode, from the text of `net/tcp` (`v6`
/// false) or `net/tcp6`: `127.0.0.1:9000`, `[::1]:22`.
pub fn tcp_peer(table: &str, inode: u64, v6: bool) -> Option<String> {
    for line in table.lines().skip(1) {
        let fields: Vec<&str> = line.split_ascii_whitespace().collect();
        if fields.get(9).and_then(|f| f.parse::<u64>().ok()) != Some(inode) {
            continue;
        }
        let (addr, port) = fields.get(2)?.split_once(':')?;
        let port = u16::from_str_radix(port, 16).ok()?;
        // Each 32-bit word of the address is in the machine's byte order.
        let mut bytes = Vec::with_capacity(16);
        for word in addr.as_bytes().chunks(8) {
            let word = u32::from_str_radix(std::str::from_utf8(word).ok()?, 16).ok()?;
            bytes.extend_from_slice(&word.to_ne_bytes());
        }
        return Some(if v6 {
            let octets: [u8; 16] = bytes.try_into().ok()?;
            let ip = std::net::Ipv6Addr::from(octets);
            match ip.to_ipv4_mapped() {
                Some(v4) => format!("{v4}:{port}"),
                None => format!("[{ip}]:{port}"),
            }
        } else {
            let octets: [u8; 4] = bytes.try_into().ok()?;
            format!("{}:{port}", std::net::Ipv4Addr::from(octets))
        });
    }
    None
}

/// The path a Unix socket with this inode is bound to, from the text of `net/unix`
/// (`@name` for an abstract one); `None` if it has none.
pub fn unix_path(table: &str, inode: u64) -> Option<String> {
    table.lines().skip(1).find_map(|line| {
        let mut words = line.split_ascii_whitespace();
        let found = words.nth(6)?.parse::<u64>().ok()? == inode;
        let path = words.next()?;
        found.then(|| path.to_string())
    })
}

/// The PIDs in a `children` file (`"12 34 "`).
pub fn parse_pids(text: &str) -> Vec<u32> {
    text.split_ascii_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// A command line for display: the NUL-separated arguments of `/proc/PID/cmdline` joined
/// by spaces, the program by its file name only (`/usr/bin/gzip -9` is `gzip -9`), control
/// characters escaped as everywhere rpv shows a name ([`crate::display::printable`]);
/// `None` if it is empty (a zombie, a kernel thread).
pub fn command_text(cmdline: &[u8]) -> Option<String> {
    let trimmed = cmdline.strip_suffix(&[0]).unwrap_or(cmdline);
    if trimmed.is_empty() {
        return None;
    }
    let program_end = trimmed
        .iter()
        .position(|&b| b == 0)
        .unwrap_or(trimmed.len());
    let name_start = trimmed[..program_end]
        .iter()
        .rposition(|&b| b == b'/')
        .map_or(0, |slash| slash + 1);
    let name_start = if name_start == program_end {
        0
    } else {
        name_start
    };
    let args: Vec<String> = trimmed[name_start..]
        .split(|&b| b == 0)
        .enumerate()
        .map(|(i, arg)| {
            let arg = String::from_utf8_lossy(arg);
            if i == 0 {
                arg.into_owned()
            } else {
                shell_quoted(&arg)
            }
        })
        .collect();
    Some(crate::display::printable(&args.join(" ")).into_owned())
}

/// An argument as a shell would need it typed: as it is when it is plain, else in single
/// quotes (`tr -s ' ' '\n'`, not `tr -s   \n`), a quote inside written `'\''`.
fn shell_quoted(arg: &str) -> String {
    let plain = !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_alphanumeric() || "-_./:=,+@%^".contains(c));
    if plain {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}
