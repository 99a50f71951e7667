//! The benchmark topologies (a)-(q) and the tools compared in each.

/// Where the data comes from.
#[derive(Clone, Copy, Debug)]
pub enum Src {
    /// `rpv-bench source vmsplice`: zero-copy constant data.
    Vmsplice {
        /// Set O_NONBLOCK on the shared pipe (the neighbour trap).
        nonblock: bool,
        /// 1 MiB requests into a 1 MiB pipe; otherwise the research's `w2`: 256 KiB
        /// requests into a 512 KiB pipe.
        max: bool,
    },
    /// `rpv-bench source write BYTES CHUNK`: plain write() of CHUNK bytes, pipe as found.
    Write(u64),
    /// The cached data file (constant bytes).
    DataFile,
    /// The cached text file (lines of varying length).
    TextFile,
    /// /dev/zero, bounded by the tool's `-S -s SIZE`.
    DevZero,
}

/// Where the data goes.
#[derive(Clone, Copy, Debug)]
pub enum Dst {
    /// `rpv-bench sink splice`: splice to /dev/null.
    Splice {
        /// Set the sink's pipe to this size first (0: leave it as found).
        pipe: usize,
        /// Set O_NONBLOCK on the shared pipe.
        nonblock: bool,
    },
    /// `rpv-bench sink read`: read() 256 KiB at a time.
    Read,
    /// Overwrite the existing output file (no truncation).
    OutFile,
    /// /dev/null, with no sink process (the tool is the whole pipeline).
    Null,
}

/// Where the `--tee` copy of the stream goes ((o)-(q)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TeeTo {
    /// A new file on tmpfs (`/dev/shm`).
    Shm,
    /// A new file in the scratch directory (the disk).
    Disk,
    /// A second sink process reading a pipe that the tool has as descriptor 3, like bash's
    /// `>(sink)`; the sink is the topology's own sink.
    Pipe,
}

/// In a variant's arguments: replaced by the `--tee` target of the topology (a path, or
/// `/dev/fd/3`).
pub const TEE_ARG: &str = "{tee}";

/// Which program a variant runs as the tool under test.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// No tool: source straight into sink (the ceiling).
    Direct,
    /// The tool under test.
    Rpv,
    /// Debian's pv.
    Pv,
    /// Another program from PATH (cat, head).
    Other(&'static str),
    /// `rpv-bench relay`: the fewest syscalls a relay can make (the ceiling for rpv).
    Relay,
    /// Another build of rpv (`RPV_BENCH_BASE`), given the same arguments: a before/after
    /// comparison alternated in one run.
    Base,
    /// A Rust pv clone found on PATH or named by an environment variable.
    Peer(Peer),
}

/// The Rust peers compared when installed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Peer {
    /// The `pv` crate ("pv-rs"; `cargo install pv` installs it as `pv`).
    PvRs,
    /// The `rusty-pv` crate (read/write only, no `-S`, `-C`).
    RustyPv,
}

impl Peer {
    /// Both peers.
    pub const ALL: [Peer; 2] = [Peer::PvRs, Peer::RustyPv];

    /// Row label.
    pub fn label(self) -> &'static str {
        match self {
            Peer::PvRs => "pv-rs",
            Peer::RustyPv => "rusty-pv",
        }
    }
}

/// Labels of the pv-like tools a result of rpv is compared with ("best peer").
pub const PEERS: [&str; 4] = ["pv", "pv -C", "pv-rs", "rusty-pv"];

/// One tool setup compared within a topology.
#[derive(Clone, Debug)]
pub struct Variant {
    /// Row label: "direct", "rpv", "pv", "pv -C", "cat", ...
    pub label: String,
    /// Program to run.
    pub kind: Kind,
    /// Arguments (for rpv: dropped in pretend mode).
    pub args: Vec<String>,
    /// Run this variant with fewer bytes (pv in the O_NONBLOCK trap).
    pub cap: Option<u64>,
    /// A failure is expected and does not fail the bench.
    pub allow_fail: bool,
    /// Send the tool's stderr to /dev/null.
    pub quiet: bool,
    /// A second tool after this one in the same run (`pv | tee FILE`), measured too.
    pub then: Option<Box<Variant>>,
}

impl Variant {
    /// True if this variant (or the tool after it) writes the `--tee` copy.
    pub fn uses_tee(&self) -> bool {
        self.args.iter().any(|a| a == TEE_ARG) || self.then.as_ref().is_some_and(|t| t.uses_tee())
    }
}

/// One benchmark topology.
#[derive(Clone, Debug)]
pub struct Topology {
    /// Letter from the issue, used by `--only`.
    pub id: &'static str,
    /// Short name, also accepted by `--only`.
    pub name: String,
    /// Source of the data.
    pub src: Src,
    /// Destination of the data.
    pub dst: Dst,
    /// How many copies of the tool are chained (0 for direct is implied).
    pub chain: usize,
    /// Bytes moved per run (file sources: the file size).
    pub bytes: u64,
    /// Target rate in bytes/s for the `-L` accuracy runs.
    pub rate: Option<u64>,
    /// Tools compared, in the order of the first repetition.
    pub variants: Vec<Variant>,
    /// Repetitions per `--reps` repetition (more for a small effect measured in noise).
    pub reps_factor: usize,
    /// Where the `--tee` copy goes ((o)-(q)).
    pub tee: Option<TeeTo>,
}

/// Sizes of one benchmark mode.
#[derive(Clone, Copy, Debug)]
pub struct Sizes {
    /// Bytes per pipe→pipe run.
    pub pipe: u64,
    /// Size of the cached data file (and of the output file).
    pub data_file: u64,
    /// Size of the cached text file.
    pub text_file: u64,
    /// Bytes per run of the 1000-byte-write producer.
    pub small_writes: u64,
    /// Bytes for pv in the O_NONBLOCK trap (it sleeps 10 ms per EAGAIN).
    pub nonblock_pv: u64,
    /// Seconds per `-L` run.
    pub rate_secs: u64,
}

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

impl Sizes {
    /// The sizes of `--quick` (CI) or of a full run.
    pub fn new(quick: bool) -> Sizes {
        if quick {
            Sizes {
                pipe: 64 * MIB,
                data_file: 64 * MIB,
                text_file: 32 * MIB,
                small_writes: 32 * MIB,
                nonblock_pv: 16 * MIB,
                rate_secs: 1,
            }
        } else {
            Sizes {
                pipe: 4 * GIB,
                data_file: 2 * GIB,
                text_file: GIB,
                small_writes: 2 * GIB,
                nonblock_pv: 256 * MIB,
                rate_secs: 5,
            }
        }
    }
}

fn variant(label: &str, kind: Kind, args: &[&str]) -> Variant {
    Variant {
        label: label.to_string(),
        kind,
        args: args.iter().map(|s| s.to_string()).collect(),
        cap: None,
        allow_fail: false,
        quiet: false,
        then: None,
    }
}

/// direct, rpv, rpv base, pv, pv -C, pv-rs, rusty-pv, cat: each tool gets `-q` plus
/// `flags` (rows whose tool is not installed are skipped).
fn standard(flags: &[&str], direct: bool, cat: bool) -> Vec<Variant> {
    let with = |pre: &[&'static str]| -> Vec<&str> { pre.iter().chain(flags).copied().collect() };
    let mut v = Vec::new();
    if direct {
        v.push(variant("direct", Kind::Direct, &[]));
    }
    v.push(variant("rpv", Kind::Rpv, &with(&["-q"])));
    v.push(variant("rpv base", Kind::Base, &with(&["-q"])));
    v.push(variant("pv", Kind::Pv, &with(&["-q"])));
    v.push(variant("pv -C", Kind::Pv, &with(&["-q", "-C"])));
    for peer in Peer::ALL {
        v.push(variant(peer.label(), Kind::Peer(peer), &with(&["-q"])));
    }
    if cat {
        v.push(variant("cat", Kind::Other("cat"), &[]));
    }
    v
}

fn topo(id: &'static str, name: &str, src: Src, dst: Dst, bytes: u64) -> Topology {
    let variants = standard(&[], true, true);
    Topology {
        id,
        name: name.into(),
        src,
        dst,
        chain: 1,
        bytes,
        rate: None,
        variants,
        reps_factor: 1,
        tee: None,
    }
}

/// The sink enlarges its pipe to 512 KiB, as the research's `G=1 r2` sink did.
const GROW: Dst = Dst::Splice {
    pipe: 512 << 10,
    nonblock: false,
};
/// The sink leaves its pipe at the default 64 KiB, as most consumers do.
const AS_FOUND: Dst = Dst::Splice {
    pipe: 0,
    nonblock: false,
};
const VMS: Src = Src::Vmsplice {
    nonblock: false,
    max: false,
};

/// Every topology of the issue, (a) to (l), the extra (m), (n), and the fan-out (o)-(q).
pub fn all(s: &Sizes) -> Vec<Topology> {
    let mut v = vec![
        topo("a", "pipe-pipe", VMS, GROW, s.pipe),
        topo("b", "pipe-pipe-64k", VMS, AS_FOUND, s.pipe),
        topo("c", "file-pipe", Src::DataFile, AS_FOUND, s.data_file),
        topo("d", "pipe-file", VMS, Dst::OutFile, s.data_file),
        topo("e", "file-file", Src::DataFile, Dst::OutFile, s.data_file),
        Topology {
            chain: 2,
            ..topo("f", "chain", VMS, GROW, s.pipe)
        },
        Topology {
            chain: 2,
            ..topo(
                "g",
                "small-writes",
                Src::Write(1000),
                Dst::Read,
                s.small_writes,
            )
        },
        nonblock(s),
        lines(s),
        zero(s),
    ];
    v[4].variants.retain(|x| x.kind != Kind::Direct);
    // The bare splice loop (no display, no counters, no checks) where rpv splices into a
    // pipe: what any relay gets on this machine and kernel.
    for t in v.iter_mut().filter(|t| matches!(t.id, "a" | "c" | "f")) {
        t.variants.push(variant("relay", Kind::Relay, &["splice"]));
    }
    v.extend([MIB, 100 * MIB, GIB].map(|r| rate(s, r)));
    v.push(display(s));
    // Beyond the research's setups: every neighbour already at the unprivileged maximum
    // (1 MiB pipes, 1 MiB requests), where pv's splice is as good as a relay can be.
    let max = Dst::Splice {
        pipe: 1 << 20,
        nonblock: false,
    };
    let src = Src::Vmsplice {
        nonblock: false,
        max: true,
    };
    let relay = variant("relay", Kind::Relay, &["splice"]);
    for mut t in [
        topo("m", "file-pipe-1m", Src::DataFile, max, s.data_file),
        topo("n", "pipe-pipe-1m", src, max, s.pipe),
    ] {
        t.variants.push(relay.clone());
        v.push(t);
    }
    v.push(tee_file("o", "tee-shm", TeeTo::Shm, s));
    v.push(tee_file("p", "tee-disk", TeeTo::Disk, s));
    v.push(tee_pipe(s));
    v
}

/// `source | T | sink` where T also writes a new file: `rpv --tee FILE`, GNU `tee FILE`,
/// and `pv | tee FILE` (a pipe viewer in front of the tee it would need).
fn tee_file(id: &'static str, name: &str, to: TeeTo, s: &Sizes) -> Topology {
    let mut t = topo(id, name, VMS, GROW, s.data_file);
    t.tee = Some(to);
    let tee = variant("tee", Kind::Other("tee"), &[TEE_ARG]);
    t.variants = vec![
        variant("rpv", Kind::Rpv, &["-q", "--tee", TEE_ARG]),
        tee.clone(),
        Variant {
            then: Some(Box::new(tee)),
            ..variant("pv | tee", Kind::Pv, &["-q"])
        },
    ];
    t
}

/// `source | T | sink` where T also feeds a second sink through a pipe (`>(sink)`), against
/// plain `rpv` without the second sink; GNU tee for reference, and the bare relay with and
/// without the tee(2) (what the kernel allows a fan-out to cost on this machine).
fn tee_pipe(s: &Sizes) -> Topology {
    let mut t = topo("q", "tee-pipe", VMS, GROW, s.pipe);
    t.tee = Some(TeeTo::Pipe);
    t.variants = vec![
        variant("rpv", Kind::Rpv, &["-q"]),
        variant("rpv --tee", Kind::Rpv, &["-q", "--tee", TEE_ARG]),
        variant("tee", Kind::Other("tee"), &[TEE_ARG]),
        variant("relay", Kind::Relay, &["splice"]),
        variant("relay --tee", Kind::Relay, &["tee", TEE_ARG]),
    ];
    t
}

fn nonblock(s: &Sizes) -> Topology {
    let src = Src::Vmsplice {
        nonblock: true,
        max: false,
    };
    let dst = Dst::Splice {
        pipe: 512 << 10,
        nonblock: true,
    };
    let mut t = topo("h", "nonblock", src, dst, s.pipe);
    for v in &mut t.variants {
        match v.label.as_str() {
            "pv" | "pv -C" => v.cap = Some(s.nonblock_pv),
            // read/write without a poll: EAGAIN ends them
            "cat" | "rusty-pv" => v.allow_fail = true,
            _ => {}
        }
    }
    t
}

fn lines(s: &Sizes) -> Topology {
    let mut t = topo("i", "lines", Src::TextFile, GROW, s.text_file);
    t.variants = standard(&["-l"], false, false);
    t.variants.retain(|v| v.label != "pv -C");
    t
}

fn zero(s: &Sizes) -> Topology {
    let size = s.pipe.to_string();
    let mut t = topo("j", "zero", Src::DevZero, GROW, s.pipe);
    t.variants = standard(&["-S", "-s", &size], false, false);
    t.variants.retain(|v| v.kind != Kind::Peer(Peer::RustyPv));
    t.variants
        .push(variant("head -c", Kind::Other("head"), &["-c", &size]));
    t
}

fn rate(s: &Sizes, rate: u64) -> Topology {
    let arg = match rate {
        r if r >= GIB => format!("{}G", r / GIB),
        r => format!("{}M", r / MIB),
    };
    let name = format!("rate-{arg}");
    let mut t = topo("k", &name, VMS, GROW, rate * s.rate_secs);
    t.rate = Some(rate);
    t.variants = standard(&["-L", &arg], false, false);
    t.variants
        .retain(|v| matches!(v.label.as_str(), "rpv" | "pv"));
    t
}

fn display(s: &Sizes) -> Topology {
    // rpv alone, and the bottleneck: `rpv < cached file > /dev/null`. In a three-process
    // pipeline the run-to-run swings (±30 % on 2 vCPUs) are fifteen times the 2 % to be
    // measured; here they are 1-2 %, and any cost of the display shows in full.
    let mut t = topo("l", "display", Src::DataFile, Dst::Null, s.data_file);
    let mut shown = variant("rpv -f", Kind::Rpv, &["-f", "-i", "0.1"]);
    shown.quiet = true;
    t.variants = vec![variant("rpv", Kind::Rpv, &["-q"]), shown];
    // A 2 % effect against run-to-run swings of ±30 %: four times the repetitions, and the
    // target compares the two within each repetition (report.rs).
    t.reps_factor = 4;
    t
}
