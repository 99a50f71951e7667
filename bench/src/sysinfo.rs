//! The header of a benchmark report: machine, kernel, tools, date.

use crate::runner::Ctx;
use std::time::{SystemTime, UNIX_EPOCH};

/// The CPU time `pid` has used so far: the sum of its threads' time on a CPU, in
/// nanoseconds (`/proc/PID/task/TID/schedstat`), else its user and system time from
/// `/proc/PID/stat` (clock ticks of 10 ms: 0.025 % of a core over 40 s, too coarse for a
/// goal of 0.3 %). The threads are those alive now: a thread that ended is not counted.
pub fn cpu_time(pid: u32) -> Option<std::time::Duration> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut ns = 0u64;
    for task in tasks.flatten() {
        let text = std::fs::read_to_string(task.path().join("schedstat")).ok();
        let Some(run) = text.as_deref().and_then(|t| t.split_whitespace().next()) else {
            return ticks(pid);
        };
        ns += run.parse::<u64>().ok()?;
    }
    Some(std::time::Duration::from_nanos(ns))
}

/// The user and system time of `pid` so far, from `/proc/PID/stat` (clock ticks of 10 ms).
fn ticks(pid: u32) -> Option<std::time::Duration> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = text.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(std::time::Duration::from_millis(ticks * 10))
}

/// Prints kernel, CPU, date, tool versions and settings that affect results.
pub fn print_header(ctx: &Ctx, quick: bool, reps: usize) {
    let mode = if quick { "quick" } else { "full" };
    println!(
        "rpv-bench ({mode} mode, {reps} repetition(s), timeout {} s)",
        ctx.timeout.as_secs()
    );
    println!("date:    {}", utc_now());
    println!("kernel:  {}", kernel());
    println!("cpu:     {} x {}", cpu_model(), cpus());
    println!(
        "thp:     {}",
        first_line("/sys/kernel/mm/transparent_hugepage/enabled")
    );
    println!("pipemax: {}", first_line("/proc/sys/fs/pipe-max-size"));
    let pretend = if ctx.rpv.pretend {
        "  (PRETEND: rpv flags dropped)"
    } else {
        ""
    };
    println!("rpv:     {}{pretend}", ctx.rpv.path.display());
    match &ctx.pv {
        Some(pv) => println!("pv:      {} ({})", pv.display(), version(pv)),
        None => println!("pv:      not installed: pv rows are skipped (apt-get install pv)"),
    }
    if let Some(base) = &ctx.base {
        println!("base:    {} (row \"rpv base\")", base.display());
    }
    for peer in crate::topology::Peer::ALL {
        match ctx.peer(peer) {
            Some(p) => println!(
                "{:<8} {} ({})",
                format!("{}:", peer.label()),
                p.display(),
                version(p)
            ),
            None => println!(
                "{:<8} not found: rows skipped (cargo install {}; or set RPV_BENCH_{})",
                format!("{}:", peer.label()),
                match peer {
                    crate::topology::Peer::PvRs => "pv",
                    crate::topology::Peer::RustyPv => "rusty-pv",
                },
                peer.label().to_uppercase().replace('-', "_"),
            ),
        }
    }
    println!("load:    {}", load());
    println!("scratch: {} ({})", ctx.dir.display(), fs_type(&ctx.dir));
}

fn first_line(path: &str) -> String {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|s| s.lines().next().map(str::to_string))
        .unwrap_or_else(|| "?".into())
}

/// What `uname -srvm` shows, from the same kernel fields under /proc/sys/kernel (the
/// machine: the architecture this bench was built for).
fn kernel() -> String {
    let field = |name: &str| first_line(&format!("/proc/sys/kernel/{name}"));
    format!(
        "{} {} {} {}",
        field("ostype"),
        field("osrelease"),
        field("version"),
        std::env::consts::ARCH
    )
}

fn cpu_model() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let line = info.lines().find(|l| l.starts_with("model name"));
    line.and_then(|l| l.split_once(':'))
        .map_or("?".into(), |(_, v)| v.trim().to_string())
}

fn cpus() -> usize {
    std::thread::available_parallelism().map_or(0, |n| n.get())
}

/// The load averages (1, 5, 15 minutes) and the running/total tasks, from /proc/loadavg.
pub fn load() -> String {
    first_line("/proc/loadavg")
}

/// The first line of `PROG --version`.
pub fn version(pv: &std::path::Path) -> String {
    let out = std::process::Command::new(pv).arg("--version").output();
    out.ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .map(str::to_string)
        })
        .unwrap_or_else(|| "version unknown".into())
}

fn fs_type(dir: &std::path::Path) -> String {
    let Ok(s) = rustix::fs::statfs(dir) else {
        return "?".into();
    };
    // f_type is signed on some targets; the magic numbers are 32-bit.
    match s.f_type as u32 {
        0xEF53 => "ext4".into(),
        0x0102_1994 => "tmpfs".into(),
        0x5846_5342 => "xfs".into(),
        0x9123_683E => "btrfs".into(),
        0x794C_7630 => "overlayfs".into(),
        m => format!("fs magic {m:#x}"),
    }
}

/// The current UTC time as `YYYY-MM-DD HH:MM:SS UTC`.
fn utc_now() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to (year, month, day) (H. Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::civil_from_days;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_723), (2024, 1, 1));
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
    }
}
