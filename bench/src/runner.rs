//! Turning a (topology, variant) pair into a pipeline, preparing the data
//! files, and running the repetitions with the tools interleaved.

use crate::helpers::FILL;
use crate::pipeline::{Outcome, Pipeline, Stage};
use crate::topology::{Dst, Kind, Peer, Src, TeeTo, Topology, Variant, TEE_ARG};
use std::ffi::OsString;
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How to run the tool under test.
#[derive(Clone, Debug)]
pub struct RpvSpec {
    /// Path of the binary.
    pub path: PathBuf,
    /// Extra arguments appended to every invocation (`RPV_BENCH_RPV_ARGS`).
    pub extra: Vec<String>,
    /// The binary is a stand-in such as `cat`: rpv's flags are dropped.
    pub pretend: bool,
}

/// Everything a run needs to know about its environment.
pub struct Ctx {
    /// This executable (runs the helper sources and sinks).
    pub exe: PathBuf,
    /// The tool under test.
    pub rpv: RpvSpec,
    /// Debian pv, if installed.
    pub pv: Option<PathBuf>,
    /// Another build of rpv to compare with (`RPV_BENCH_BASE`), if given.
    pub base: Option<PathBuf>,
    /// The Rust peers that were found.
    pub peers: Vec<(Peer, PathBuf)>,
    /// Scratch directory holding the data files.
    pub dir: PathBuf,
    /// Per-run deadline.
    pub timeout: Duration,
}

/// The result of every repetition of one variant.
pub struct VariantResult {
    /// The variant that ran.
    pub variant: Variant,
    /// Bytes moved per run.
    pub bytes: u64,
    /// One outcome per repetition (empty when skipped).
    pub runs: Vec<Outcome>,
    /// Why the variant was skipped, if it was.
    pub skipped: Option<String>,
}

/// The results of one topology.
pub struct TopologyResult {
    /// The topology that ran.
    pub topology: Topology,
    /// One entry per variant, in the topology's order.
    pub variants: Vec<VariantResult>,
}

impl Ctx {
    fn data_file(&self) -> PathBuf {
        self.dir.join("data.bin")
    }
    fn text_file(&self) -> PathBuf {
        self.dir.join("text.txt")
    }
    fn out_file(&self) -> PathBuf {
        self.dir.join("out.bin")
    }
    /// The `--tee` target of (o)-(q): a file path, or descriptor 3 of the tool.
    fn tee_target(&self, to: TeeTo) -> PathBuf {
        match to {
            TeeTo::Shm => format!("/dev/shm/rpv-bench.{}.tee", std::process::id()).into(),
            TeeTo::Disk => self.dir.join("tee.bin"),
            TeeTo::Pipe => "/dev/fd/3".into(),
        }
    }

    /// Creates (and caches) the files the selected topologies need.
    pub fn prepare(&self, topologies: &[Topology], data: u64, text: u64) -> std::io::Result<()> {
        let needs = |f: fn(&Topology) -> bool| topologies.iter().any(f);
        if needs(|t| matches!(t.src, Src::DataFile)) {
            write_file(&self.data_file(), data, &[FILL; 1 << 20])?;
            cache(&self.data_file())?;
        }
        if needs(|t| matches!(t.dst, Dst::OutFile)) {
            write_file(&self.out_file(), data, &[FILL; 1 << 20])?;
            cache(&self.out_file())?;
        }
        if needs(|t| matches!(t.src, Src::TextFile)) {
            write_file(&self.text_file(), text, &text_block())?;
            cache(&self.text_file())?;
        }
        Ok(())
    }

    /// Why `v` cannot run here, if it cannot.
    fn skip_reason(&self, t: &Topology, v: &Variant) -> Option<String> {
        match v.kind {
            Kind::Pv if self.pv.is_none() => Some("pv not installed".into()),
            Kind::Base if self.base.is_none() => Some("no RPV_BENCH_BASE".into()),
            Kind::Peer(p) if self.peer(p).is_none() => Some(format!("{} not found", p.label())),
            Kind::Rpv if self.rpv.pretend && matches!(t.src, Src::DevZero) => {
                Some("pretend rpv cannot stop at -s".into())
            }
            Kind::Rpv if self.rpv.pretend && v.uses_tee() => {
                Some("pretend rpv cannot --tee".into())
            }
            _ if t.tee == Some(TeeTo::Shm) && !Path::new("/dev/shm").is_dir() => {
                Some("no /dev/shm".into())
            }
            _ => None,
        }
    }

    /// The path of a Rust peer, if it was found.
    pub fn peer(&self, peer: Peer) -> Option<&PathBuf> {
        self.peers
            .iter()
            .find(|(p, _)| *p == peer)
            .map(|(_, path)| path)
    }

    fn tool_argv(&self, t: &Topology, v: &Variant) -> Vec<OsString> {
        let mut argv: Vec<OsString> = match &v.kind {
            Kind::Direct => return Vec::new(),
            Kind::Rpv => vec![self.rpv.path.clone().into()],
            Kind::Base => vec![self.base.clone().unwrap_or_default().into()],
            Kind::Peer(p) => vec![self.peer(*p).cloned().unwrap_or_default().into()],
            Kind::Pv => vec![self.pv.clone().unwrap_or_default().into()],
            Kind::Other(prog) => vec![prog.into()],
            Kind::Relay => vec![self.exe.clone().into(), "relay".into()],
        };
        let rpv = matches!(v.kind, Kind::Rpv | Kind::Base);
        if rpv && self.rpv.pretend {
            argv.extend(self.rpv.extra.iter().map(Into::into));
            return argv;
        }
        let tee = t.tee.map(|to| self.tee_target(to));
        argv.extend(v.args.iter().map(|a| match &tee {
            Some(path) if a == TEE_ARG => path.clone().into_os_string(),
            _ => a.into(),
        }));
        if rpv {
            argv.extend(self.rpv.extra.iter().map(Into::into));
        }
        argv
    }

    fn helper(&self, words: &[String]) -> Stage {
        let mut argv: Vec<OsString> = vec![self.exe.clone().into()];
        argv.extend(words.iter().map(Into::into));
        Stage {
            argv,
            report: None,
            quiet: false,
            side_fd: false,
        }
    }

    fn source(&self, src: Src, bytes: u64) -> Option<Stage> {
        let b = bytes.to_string();
        let words: Vec<String> = match src {
            Src::Vmsplice { nonblock, max } => {
                let mut w = vec!["vmsplice".to_string(), b];
                max.then(|| w.extend(["--chunk=1048576".into(), "--pipe=1048576".into()]));
                nonblock.then(|| w.push("--nonblock".into()));
                w
            }
            Src::Write(chunk) => vec!["write".into(), b, chunk.to_string()],
            _ => return None,
        };
        Some(self.helper(&[vec!["source".to_string()], words].concat()))
    }

    fn sink(&self, dst: Dst, bytes: u64) -> Option<Stage> {
        let mut words = vec!["sink".to_string()];
        match dst {
            Dst::Splice { pipe, nonblock } => {
                words.extend(["splice".into(), bytes.to_string()]);
                (pipe > 0).then(|| words.push(format!("--pipe={pipe}")));
                nonblock.then(|| words.push("--nonblock".into()));
            }
            Dst::Read => words.extend(["read".into(), bytes.to_string()]),
            Dst::OutFile | Dst::Null => return None,
        }
        Some(self.helper(&words))
    }

    /// Tool stage number `i`, run through `rpv-bench measure`.
    fn measured(&self, i: usize, tool: &[OsString], quiet: bool) -> Stage {
        let report = self.dir.join(format!("rusage.{i}"));
        let mut argv: Vec<OsString> = vec![self.exe.clone().into(), "measure".into()];
        argv.push(report.clone().into());
        argv.extend(tool.iter().cloned());
        Stage {
            argv,
            report: Some(report),
            quiet,
            side_fd: false,
        }
    }

    /// The pipeline of variant `v` in topology `t`, moving `bytes` bytes.
    fn pipeline(&self, t: &Topology, v: &Variant, bytes: u64) -> Pipeline {
        let mut p = Pipeline {
            stdin: match t.src {
                Src::DataFile => Some(self.data_file()),
                Src::TextFile => Some(self.text_file()),
                Src::DevZero => Some("/dev/zero".into()),
                _ => None,
            },
            stdout: matches!(t.dst, Dst::OutFile).then(|| self.out_file()),
            stages: Vec::new(),
            side: None,
        };
        p.stages.extend(self.source(t.src, bytes));
        if v.kind != Kind::Direct {
            let quiet = v.quiet || v.allow_fail;
            let tool = self.tool_argv(t, v);
            let mut tools: Vec<_> = (0..t.chain)
                .map(|i| self.measured(i, &tool, quiet))
                .collect();
            if let Some(then) = &v.then {
                tools.push(self.measured(t.chain, &self.tool_argv(t, then), quiet));
            }
            if t.tee == Some(TeeTo::Pipe) && v.uses_tee() {
                // The side sink reads what the tool writes to /dev/fd/3.
                p.side = self.sink(t.dst, bytes);
                let at = if v.args.iter().any(|a| a == TEE_ARG) {
                    0
                } else {
                    t.chain
                };
                tools[at].side_fd = true;
            }
            p.stages.extend(tools);
        }
        p.stages.extend(self.sink(t.dst, bytes));
        if v.allow_fail {
            p.stages.iter_mut().for_each(|s| s.quiet = true);
        }
        p
    }

    /// One run of `v`, with the output-file check when there is one.
    fn run_once(&self, t: &Topology, v: &Variant, bytes: u64) -> Outcome {
        let out = matches!(t.dst, Dst::OutFile).then(|| self.out_file());
        if let Some(path) = &out {
            if let Err(e) = poison_tail(path, bytes) {
                return Outcome::Failed(format!("{}: {e}", path.display()));
            }
        }
        // A --tee file is new in every run (every tool creates it), and checked after.
        let tee_file = t
            .tee
            .filter(|to| *to != TeeTo::Pipe && v.uses_tee())
            .map(|to| self.tee_target(to));
        if let Some(path) = &tee_file {
            let _ = std::fs::remove_file(path);
        }
        let outcome = self.pipeline(t, v, bytes).run(self.timeout);
        let checked = [&out, &tee_file].into_iter().flatten();
        let outcome = checked.fold(outcome, |outcome, path| match outcome {
            Outcome::Ok(m) => match check_tail(path, bytes) {
                Ok(()) => Outcome::Ok(m),
                Err(e) => Outcome::Failed(format!("{}: {e}", path.display())),
            },
            o => o,
        });
        if let Some(path) = &tee_file {
            let _ = std::fs::remove_file(path);
        }
        outcome
    }

    /// Runs `reps` repetitions of topology `t`, rotating the tool order
    /// by one position per repetition.
    pub fn run_topology(&self, t: &Topology, reps: usize) -> TopologyResult {
        let mut results: Vec<VariantResult> = t
            .variants
            .iter()
            .map(|v| VariantResult {
                variant: v.clone(),
                bytes: v.cap.map_or(t.bytes, |c| c.min(t.bytes)),
                runs: Vec::new(),
                skipped: self.skip_reason(t, v),
            })
            .collect();
        let n = results.len();
        // One untimed run first (not for the timed -L runs): the first run after the data
        // files were written, or after a pause, is often several times slower (cold guest
        // memory on the VM).
        let first = results.iter().find(|r| r.skipped.is_none());
        if let Some(r) = first.filter(|_| t.rate.is_none()) {
            let _ = self.run_once(t, &r.variant, r.bytes);
        }
        for rep in 0..reps * t.reps_factor.max(1) {
            for i in (0..n).map(|k| (k + rep) % n) {
                let r = &mut results[i];
                if r.skipped.is_none() {
                    let mut v = r.variant.clone();
                    // cat standing in for rpv aborts on EAGAIN, as cat does.
                    let trap = matches!(t.src, Src::Vmsplice { nonblock: true, .. });
                    v.allow_fail |= v.kind == Kind::Rpv && self.rpv.pretend && trap;
                    r.runs.push(self.run_once(t, &v, r.bytes));
                }
            }
        }
        TopologyResult {
            topology: t.clone(),
            variants: results,
        }
    }
}

fn write_file(path: &Path, size: u64, block: &[u8]) -> std::io::Result<()> {
    let mut f = File::create(path)?;
    let mut left = size;
    while left > 0 {
        let n = left.min(block.len() as u64) as usize;
        f.write_all(&block[..n])?;
        left -= n as u64;
    }
    f.sync_all()
}

/// Reads a file once so that it sits in the page cache.
fn cache(path: &Path) -> std::io::Result<()> {
    let mut f = File::open(path)?;
    let mut buf = vec![0u8; 1 << 20];
    while f.read(&mut buf)? > 0 {}
    Ok(())
}

/// About 1 MiB of text lines of varying length (1 to 199 bytes).
fn text_block() -> Vec<u8> {
    let mut out = Vec::with_capacity(1 << 20);
    let mut n = 0u64;
    while out.len() < (1 << 20) - 256 {
        let len = (n * 37 % 199) as usize;
        let line = format!("{n:08} ");
        out.extend(line.bytes().chain(std::iter::repeat(b'x')).take(len));
        out.push(b'\n');
        n += 1;
    }
    out
}

/// Writes a byte the data never contains at the end of the output, so that
/// a short write is detected afterwards.
fn poison_tail(path: &Path, bytes: u64) -> std::io::Result<()> {
    let f = std::fs::OpenOptions::new().write(true).open(path)?;
    f.write_all_at(&[!FILL], bytes - 1)
}

fn check_tail(path: &Path, bytes: u64) -> Result<(), String> {
    let f = File::open(path).map_err(|e| e.to_string())?;
    let len = f.metadata().map_err(|e| e.to_string())?.len();
    let mut last = [0u8];
    f.read_exact_at(&mut last, bytes - 1)
        .map_err(|e| e.to_string())?;
    if len != bytes || last[0] != FILL {
        return Err(format!(
            "output file is incomplete (size {len}, expected {bytes})"
        ));
    }
    Ok(())
}
