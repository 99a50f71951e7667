//! rpv-bench: throughput, CPU and memory benchmark of rpv against Debian pv,
//! `pv -C`, cat and the direct source→sink ceiling.
//!
//! Usage: `rpv-bench [--quick] [--reps N] [--only NAME[,NAME...]] [--list]`.
//! See BENCHMARKS.md for the topologies and the targets. `rpv-bench doctor` measures the
//! pipeline view instead: how often it names the right stage, and what watching costs.
//!
//! Environment:
//! * `RPV_BENCH_RPV`: tool under test (default: `rpv` next to this binary).
//!   If its file name is `cat` (or `RPV_BENCH_PRETEND=1`), rpv's flags are
//!   dropped so that the harness can be exercised before rpv works.
//! * `RPV_BENCH_RPV_ARGS`: extra whitespace-separated arguments for rpv.
//! * `RPV_BENCH_PV`: pv binary (default `/usr/bin/pv`).
//! * `RPV_BENCH_BASE`: another rpv build, run as the row "rpv base" with rpv's arguments.
//! * `RPV_BENCH_PV_RS`, `RPV_BENCH_RUSTY_PV`: the Rust peers (default: found on PATH).
//! * `RPV_BENCH_TMPDIR`: where the data files go (default: `$TMPDIR` or /tmp).

mod doctor;
mod helpers;
mod measure;
mod pipeline;
mod report;
mod runner;
mod sysinfo;
mod top;
mod topology;

use runner::{Ctx, RpvSpec};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};
use topology::{Peer, Sizes, Topology};

/// Parsed command line of the benchmark itself.
struct Options {
    quick: bool,
    reps: usize,
    only: Vec<String>,
    list: bool,
}

const USAGE: &str = "usage: rpv-bench [--quick] [--reps N] [--only NAME[,NAME...]] [--list]";

fn parse_options(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        quick: false,
        reps: 0,
        only: Vec::new(),
        list: false,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--quick" => o.quick = true,
            "--list" => o.list = true,
            "--reps" => {
                let n = it.next().ok_or("--reps needs a number")?;
                o.reps = n.parse().ok().filter(|n| *n > 0).ok_or("bad --reps")?;
            }
            "--only" => {
                let names = it.next().ok_or("--only needs a name")?;
                o.only.extend(names.split(',').map(str::to_string));
            }
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other}\n{USAGE}")),
        }
    }
    if o.reps == 0 {
        o.reps = if o.quick { 1 } else { 5 };
    }
    Ok(o)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some(role @ ("source" | "sink" | "relay")) => {
            return ExitCode::from(helpers::main(role, &args[1..]) as u8)
        }
        Some("measure") => return ExitCode::from(measure::main(&args[1..]) as u8),
        Some("doctor") => {
            let exe = std::env::current_exe().unwrap_or_default();
            let rpv = doctor::rpv_path(&exe);
            return ExitCode::from(doctor::main(&args[1..], &rpv) as u8);
        }
        Some("top") => {
            let exe = std::env::current_exe().unwrap_or_default();
            let rpv = doctor::rpv_path(&exe);
            return ExitCode::from(top::main(&args[1..], &rpv) as u8);
        }
        _ => {}
    }
    match parse_options(&args).and_then(bench) {
        Ok(code) => code,
        Err(msg) => {
            eprintln!("rpv-bench: {msg}");
            ExitCode::from(2)
        }
    }
}

fn rpv_spec(exe: &std::path::Path) -> RpvSpec {
    let path = std::env::var_os("RPV_BENCH_RPV")
        .map(PathBuf::from)
        .unwrap_or_else(|| exe.with_file_name("rpv"));
    let extra = std::env::var("RPV_BENCH_RPV_ARGS").unwrap_or_default();
    let pretend = path.file_name().is_some_and(|n| n == "cat")
        || std::env::var_os("RPV_BENCH_PRETEND").is_some_and(|v| v == "1");
    RpvSpec {
        path,
        extra: extra.split_whitespace().map(str::to_string).collect(),
        pretend,
    }
}

fn find_pv() -> Option<PathBuf> {
    let pv = std::env::var_os("RPV_BENCH_PV")
        .map_or_else(|| PathBuf::from("/usr/bin/pv"), PathBuf::from);
    pv.is_file().then_some(pv)
}

/// A program named `name` on PATH.
fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// The Rust peers: from their environment variables, else from PATH. `cargo install pv`
/// installs pv-rs as `pv`; a `pv` on PATH counts as pv-rs when it says it is a 0.x version
/// (Debian's pv is 1.x).
fn find_peers() -> Vec<(Peer, PathBuf)> {
    let pv_rs = || {
        on_path("pv-rs")
            .or_else(|| on_path("pv").filter(|p| sysinfo::version(p).starts_with("pv 0.")))
    };
    Peer::ALL
        .into_iter()
        .filter_map(|peer| {
            let (var, found) = match peer {
                Peer::PvRs => ("RPV_BENCH_PV_RS", pv_rs()),
                Peer::RustyPv => ("RPV_BENCH_RUSTY_PV", on_path("rusty-pv")),
            };
            let path = std::env::var_os(var).map(PathBuf::from).or(found)?;
            path.is_file().then_some((peer, path))
        })
        .collect()
}

fn select(all: Vec<Topology>, only: &[String]) -> Result<Vec<Topology>, String> {
    if only.is_empty() {
        return Ok(all);
    }
    let picked: Vec<_> = all
        .into_iter()
        .filter(|t| only.iter().any(|o| *o == t.id || *o == t.name))
        .collect();
    if picked.is_empty() {
        return Err(format!(
            "--only {} matches no topology (see --list)",
            only.join(",")
        ));
    }
    Ok(picked)
}

fn scratch_dir() -> Result<PathBuf, String> {
    let base = std::env::var_os("RPV_BENCH_TMPDIR").map_or_else(std::env::temp_dir, PathBuf::from);
    let dir = base.join(format!("rpv-bench.{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(dir)
}

fn bench(o: Options) -> Result<ExitCode, String> {
    let sizes = Sizes::new(o.quick);
    let topologies = select(topology::all(&sizes), &o.only)?;
    if o.list {
        topologies
            .iter()
            .for_each(|t| println!("{} {}", t.id, t.name));
        return Ok(ExitCode::SUCCESS);
    }
    let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    let ctx = Ctx {
        rpv: rpv_spec(&exe),
        pv: find_pv(),
        base: std::env::var_os("RPV_BENCH_BASE").map(PathBuf::from),
        peers: find_peers(),
        exe,
        dir: scratch_dir()?,
        timeout: Duration::from_secs(if o.quick { 10 } else { 60 }),
    };
    if !ctx.rpv.path.is_file() {
        let _ = std::fs::remove_dir_all(&ctx.dir);
        return Err(format!(
            "tool under test {} not found: run `cargo build --release` or set RPV_BENCH_RPV",
            ctx.rpv.path.display()
        ));
    }
    let result = run_all(&ctx, &topologies, &sizes, &o);
    let _ = std::fs::remove_dir_all(&ctx.dir);
    result
}

fn run_all(
    ctx: &Ctx,
    topologies: &[Topology],
    sizes: &Sizes,
    o: &Options,
) -> Result<ExitCode, String> {
    sysinfo::print_header(ctx, o.quick, o.reps);
    ctx.prepare(topologies, sizes.data_file, sizes.text_file)
        .map_err(|e| format!("preparing data files in {}: {e}", ctx.dir.display()))?;
    let start = Instant::now();
    let mut results = Vec::new();
    for t in topologies {
        eprintln!("rpv-bench: ({}) {} ...", t.id, t.name);
        let t0 = Instant::now();
        let result = ctx.run_topology(t, o.reps);
        for v in &result.variants {
            eprintln!("rpv-bench:     {}", report::runs_line(v));
        }
        results.push(result);
        eprintln!(
            "rpv-bench: ({}) {} took {:.1} s; load {}",
            t.id,
            t.name,
            t0.elapsed().as_secs_f64(),
            sysinfo::load()
        );
    }
    eprintln!("rpv-bench: total {:.1} s", start.elapsed().as_secs_f64());
    let table = report::Table::new(&results);
    println!();
    table.print();
    table.print_targets(o.quick, ctx.rpv.pretend);
    let fatal = table.fatal_failures();
    if fatal.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!("\nrpv-bench: {} failed run(s):", fatal.len());
    fatal.iter().for_each(|f| eprintln!("  {f}"));
    Ok(ExitCode::FAILURE)
}
