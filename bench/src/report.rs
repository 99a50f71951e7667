//! Medians, the results table and the check against the targets.

use crate::pipeline::Outcome;
use crate::runner::{TopologyResult, VariantResult};

const GIB: f64 = (1u64 << 30) as f64;
const MIB: f64 = (1u64 << 20) as f64;

/// Medians over the successful repetitions of one variant.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    /// Median throughput in GiB/s.
    pub gibps: Option<f64>,
    /// Median CPU seconds (user + sys) of the tool(s) per GiB moved.
    pub cpu_per_gib: Option<f64>,
    /// Largest peak RSS of the tool(s) over all repetitions, in MiB.
    pub rss_mib: Option<f64>,
    /// Runs killed at the deadline.
    pub timeouts: usize,
    /// Failure messages (wrong byte count, non-zero exit).
    pub failures: Vec<String>,
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// GiB/s of each repetition of one variant (None: the run failed or timed out).
fn run_rates(r: &VariantResult) -> Vec<Option<f64>> {
    let gib = r.bytes as f64 / GIB;
    let rate = |o: &Outcome| match o {
        Outcome::Ok(m) => Some(gib / m.wall.as_secs_f64().max(1e-9)),
        _ => None,
    };
    r.runs.iter().map(rate).collect()
}

/// One line per variant with the rate of every repetition, for the progress output.
pub fn runs_line(r: &VariantResult) -> String {
    let rates: Vec<String> = run_rates(r)
        .into_iter()
        .map(|g| g.map_or("-".into(), |g| format!("{g:.2}")))
        .collect();
    format!("{}: {}", r.variant.label, rates.join(" "))
}

/// Summarises the repetitions of one variant.
pub fn summarise(r: &VariantResult) -> Summary {
    let gib = r.bytes as f64 / GIB;
    let mut s = Summary::default();
    let (mut rates, mut cpus, mut rss) = (Vec::new(), Vec::new(), Vec::new());
    for o in &r.runs {
        match o {
            Outcome::Ok(m) => {
                rates.push(gib / m.wall.as_secs_f64().max(1e-9));
                cpus.push(m.cpu.as_secs_f64() / gib);
                rss.push(m.maxrss_kib as f64 / 1024.0);
            }
            Outcome::Timeout => s.timeouts += 1,
            Outcome::Failed(msg) => s.failures.push(msg.clone()),
        }
    }
    s.gibps = median(rates);
    if r.variant.kind != crate::topology::Kind::Direct {
        s.cpu_per_gib = median(cpus);
        s.rss_mib = rss.into_iter().reduce(f64::max);
    }
    s
}

/// A topology's results with every variant summarised.
pub struct Table<'a> {
    /// (topology, per-variant summaries in the same order as its variants).
    pub rows: Vec<(&'a TopologyResult, Vec<Summary>)>,
}

impl<'a> Table<'a> {
    /// Summarises every result.
    pub fn new(results: &'a [TopologyResult]) -> Table<'a> {
        let rows = results
            .iter()
            .map(|t| (t, t.variants.iter().map(summarise).collect()))
            .collect();
        Table { rows }
    }

    /// The summary of `label` in the topology called `name`.
    pub fn get(&self, name: &str, label: &str) -> Option<&Summary> {
        let (t, sums) = self.rows.iter().find(|(t, _)| t.topology.name == name)?;
        let i = t.variants.iter().position(|v| v.variant.label == label)?;
        sums.get(i)
    }

    fn rate(&self, name: &str, label: &str) -> Option<f64> {
        self.get(name, label)?.gibps
    }

    /// Prints the results table to stdout.
    pub fn print(&self) {
        println!(
            "{:<18} {:<10} {:>9} {:>7} {:>7} {:>9} {:>10} {:>8}  notes",
            "topology", "tool", "GiB/s", "vs pv", "vs peer", "vs direct", "CPU s/GiB", "RSS MiB"
        );
        for (t, sums) in &self.rows {
            let name = format!("({}) {}", t.topology.id, t.topology.name);
            for (v, s) in t.variants.iter().zip(sums) {
                let note = self.note(t, v, s);
                let pv = ratio(s.gibps, self.rate(&t.topology.name, "pv"));
                let peer = ratio(s.gibps, self.best_peer(&t.topology.name));
                let direct = ratio(s.gibps, self.rate(&t.topology.name, "direct"));
                println!(
                    "{:<18} {:<10} {:>9} {:>7} {:>7} {:>9} {:>10} {:>8}  {}",
                    name,
                    v.variant.label,
                    fmt(s.gibps, rate_digits(s.gibps)),
                    fmt(pv, 2),
                    fmt(peer, 2),
                    fmt(direct, 2),
                    fmt(s.cpu_per_gib, 3),
                    fmt(s.rss_mib, 1),
                    note
                );
            }
        }
    }

    fn note(&self, t: &TopologyResult, v: &VariantResult, s: &Summary) -> String {
        let mut notes = Vec::new();
        if let Some(why) = &v.skipped {
            notes.push(format!("skipped: {why}"));
        }
        if v.bytes != t.topology.bytes {
            notes.push(format!("{} MiB only", v.bytes >> 20));
        }
        if s.timeouts > 0 {
            notes.push(format!("{} timeout", s.timeouts));
        }
        if !s.failures.is_empty() {
            let expected = if v.variant.allow_fail || v.runs.is_empty() {
                " (expected)"
            } else {
                ""
            };
            notes.push(format!("{} failed{expected}", s.failures.len()));
        }
        if let (Some(target), Some(g)) = (t.topology.rate, s.gibps) {
            let got = g * GIB;
            notes.push(format!(
                "{:.1} MiB/s = {:.2}% of -L",
                got / MIB,
                100.0 * got / target as f64
            ));
        }
        notes.join("; ")
    }

    /// Every failure that should fail the bench, with its context.
    pub fn fatal_failures(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (t, sums) in &self.rows {
            for (v, s) in t.variants.iter().zip(sums) {
                if !v.variant.allow_fail {
                    let head = format!(
                        "({}) {} / {}",
                        t.topology.id, t.topology.name, v.variant.label
                    );
                    out.extend(s.failures.iter().map(|f| format!("{head}: {f}")));
                }
            }
        }
        out
    }
}

fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    Some(a? / b.filter(|b| *b > 0.0)?)
}

fn rate_digits(v: Option<f64>) -> usize {
    if v.is_some_and(|v| v < 0.1) {
        4
    } else {
        2
    }
}

fn fmt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "-".to_string(), |v| format!("{v:.digits$}"))
}

/// A bound a measured value must respect.
#[derive(Clone, Copy)]
enum Limit {
    AtLeast(f64),
    AtMost(f64),
    /// Printed for reading, not checked (beyond the setups).
    Info,
}

/// One target of the issue and how the run compares to it.
struct Target {
    what: &'static str,
    value: Option<f64>,
    limit: Limit,
}

impl Target {
    fn pass(&self, v: f64) -> bool {
        match self.limit {
            Limit::AtLeast(min) => v >= min,
            Limit::AtMost(max) => v <= max,
            Limit::Info => true,
        }
    }

    fn bound(&self) -> String {
        match self.limit {
            Limit::AtLeast(min) => format!(">= {min}"),
            Limit::AtMost(max) => format!("<= {max}"),
            Limit::Info => String::new(),
        }
    }
}

impl Table<'_> {
    fn vs(&self, name: &str, a: &str, b: &str) -> Option<f64> {
        ratio(self.rate(name, a), self.rate(name, b))
    }

    /// Median over repetitions of a/b within the same repetition (the two ran back to back,
    /// so a swing that hits both cancels out).
    fn paired(&self, name: &str, a: &str, b: &str) -> Option<f64> {
        let (t, _) = self.rows.iter().find(|(t, _)| t.topology.name == name)?;
        let runs = |label| {
            let v = t.variants.iter().find(|v| v.variant.label == label)?;
            Some(run_rates(v))
        };
        let (ra, rb) = (runs(a)?, runs(b)?);
        let pairs = ra.iter().zip(&rb).filter_map(|(x, y)| ratio(*x, *y));
        median(pairs.collect())
    }

    /// The best median of the pv-like tools in topology `name`: pv, pv -C and the Rust
    /// peers (whichever ran).
    pub fn best_peer(&self, name: &str) -> Option<f64> {
        let rates = crate::topology::PEERS.map(|l| self.rate(name, l));
        rates.into_iter().flatten().reduce(f64::max)
    }

    fn best_baseline(&self, name: &str) -> Option<f64> {
        let rates = self
            .best_peer(name)
            .into_iter()
            .chain(self.rate(name, "cat"));
        rates.reduce(f64::max)
    }

    /// The median over topologies of rpv's median over the base build's ("rpv base").
    fn vs_base(&self) -> Option<f64> {
        let ratios = self
            .rows
            .iter()
            .filter_map(|(t, _)| self.vs(&t.topology.name, "rpv", "rpv base"));
        median(ratios.collect())
    }

    fn rpv_peak_rss(&self) -> Option<f64> {
        let rpv = |v: &VariantResult| v.variant.kind == crate::topology::Kind::Rpv;
        let all = self
            .rows
            .iter()
            .flat_map(|(t, sums)| t.variants.iter().zip(sums));
        all.filter(|(v, _)| rpv(v))
            .filter_map(|(_, s)| s.rss_mib)
            .reduce(f64::max)
    }

    fn worst_rate_error(&self) -> Option<f64> {
        let rows = self.rows.iter().filter(|(t, _)| t.topology.rate.is_some());
        let errs = rows.filter_map(|(t, _)| {
            let got = self.rate(&t.topology.name, "rpv")? * GIB;
            Some((got / t.topology.rate? as f64 - 1.0).abs())
        });
        errs.reduce(f64::max)
    }

    fn targets(&self) -> Vec<Target> {
        let cpu = |l| self.get("pipe-pipe", l).and_then(|s| s.cpu_per_gib);
        let vs_pv = |name| self.vs(name, "rpv", "pv");
        let at_least = |what, value, min| Target {
            what,
            value,
            limit: Limit::AtLeast(min),
        };
        let at_most = |what, value, max| Target {
            what,
            value,
            limit: Limit::AtMost(max),
        };
        let info = |what, value| Target {
            what,
            value,
            limit: Limit::Info,
        };
        let rpv = |name| self.rate(name, "rpv");
        let small = ratio(rpv("small-writes"), self.best_baseline("small-writes"));
        let vs_peer = |name| ratio(rpv(name), self.best_peer(name));
        let vs_direct = |name| self.vs(name, "rpv", "direct");
        vec![
            at_least("(c) file->pipe: rpv/best peer", vs_peer("file-pipe"), 1.1),
            at_least(
                "(m) file->1 MiB pipe: rpv/best peer",
                vs_peer("file-pipe-1m"),
                1.1,
            ),
            at_least("(a) pipe->pipe: rpv/best peer", vs_peer("pipe-pipe"), 1.1),
            at_least(
                "(n) pipe->1 MiB pipes: rpv/best peer",
                vs_peer("pipe-pipe-1m"),
                1.1,
            ),
            at_least("(f) chain: rpv|rpv/direct", vs_direct("chain"), 0.8),
            at_least("(f) chain: rpv|rpv/best peer", vs_peer("chain"), 1.1),
            at_least("(d) pipe->file: rpv/best peer", vs_peer("pipe-file"), 1.0),
            at_least("(e) file->file: rpv/best peer", vs_peer("file-file"), 1.0),
            at_least("(i) -l: rpv/best peer", vs_peer("lines"), 1.0),
            at_least("(j) /dev/zero -S -s: rpv/best peer", vs_peer("zero"), 1.0),
            at_least("(h) O_NONBLOCK: rpv/best peer", vs_peer("nonblock"), 1.0),
            at_least("(a) pipe->pipe: rpv/pv", vs_pv("pipe-pipe"), 1.3),
            at_least(
                "(a) pipe->pipe: rpv/direct",
                self.vs("pipe-pipe", "rpv", "direct"),
                0.8,
            ),
            at_least("(b) 64 KiB sink pipe: rpv/pv", vs_pv("pipe-pipe-64k"), 3.0),
            at_least("(c) cached file->pipe: rpv/pv", vs_pv("file-pipe"), 3.0),
            at_least("(d) pipe->file: rpv/pv", vs_pv("pipe-file"), 1.1),
            at_least("(e) file->file: rpv/pv", vs_pv("file-file"), 1.1),
            at_least("(f) chain: rpv|rpv / pv|pv", vs_pv("chain"), 2.0),
            at_least("(g) 1000-byte writes: rpv / best(peers,cat)", small, 1.0),
            at_least(
                "(h) O_NONBLOCK: rpv(h)/rpv(a)",
                ratio(rpv("nonblock"), rpv("pipe-pipe")),
                0.8,
            ),
            at_least("(i) -l: rpv/pv", vs_pv("lines"), 3.0),
            at_least("(j) /dev/zero -S -s: rpv/pv", vs_pv("zero"), 2.0),
            at_most("(a) CPU s/GiB: rpv/pv", ratio(cpu("rpv"), cpu("pv")), 0.7),
            at_most("peak RSS of rpv (MiB)", self.rpv_peak_rss(), 8.0),
            at_most(
                "(k) -L: worst |achieved/target - 1|",
                self.worst_rate_error(),
                0.01,
            ),
            at_most(
                "(l) display cost: 1 - (rpv -f)/rpv, paired",
                self.paired("display", "rpv -f", "rpv").map(|r| 1.0 - r),
                0.02,
            ),
            at_least(
                "(n) pipe->pipe, 1 MiB neighbours: rpv/direct",
                self.vs("pipe-pipe-1m", "rpv", "direct"),
                0.8,
            ),
            info(
                "(n) pipe->pipe, 1 MiB neighbours: rpv/pv",
                vs_pv("pipe-pipe-1m"),
            ),
            info(
                "(m) file->pipe, 1 MiB sink pipe: rpv/pv",
                vs_pv("file-pipe-1m"),
            ),
            info(
                "rpv/(rpv base), median of the topologies' ratios",
                self.vs_base(),
            ),
            info(
                "(a) pipe->pipe: rpv/relay",
                self.vs("pipe-pipe", "rpv", "relay"),
            ),
            info(
                "(a) pipe->pipe: relay/direct",
                self.vs("pipe-pipe", "relay", "direct"),
            ),
            info(
                "(n) 1 MiB pipes: rpv/relay",
                self.vs("pipe-pipe-1m", "rpv", "relay"),
            ),
            info(
                "(n) 1 MiB pipes: relay/direct",
                self.vs("pipe-pipe-1m", "relay", "direct"),
            ),
            info(
                "(f) chain: rpv|rpv / relay|relay",
                self.vs("chain", "rpv", "relay"),
            ),
            info(
                "(f) chain: relay|relay / direct",
                self.vs("chain", "relay", "direct"),
            ),
            info(
                "(c) file->pipe: rpv/relay",
                self.vs("file-pipe", "rpv", "relay"),
            ),
            info(
                "(m) file->1 MiB pipe: rpv/relay",
                self.vs("file-pipe-1m", "rpv", "relay"),
            ),
            at_least(
                "(o) --tee file on tmpfs: rpv/tee",
                self.vs("tee-shm", "rpv", "tee"),
                2.0,
            ),
            info(
                "(o) --tee file on tmpfs: rpv/(pv | tee)",
                self.vs("tee-shm", "rpv", "pv | tee"),
            ),
            at_least(
                "(p) --tee file on disk: rpv/tee",
                self.vs("tee-disk", "rpv", "tee"),
                2.0,
            ),
            info(
                "(p) --tee file on disk: rpv/(pv | tee)",
                self.vs("tee-disk", "rpv", "pv | tee"),
            ),
            at_least(
                "(q) --tee to a pipe: (rpv --tee)/rpv",
                self.vs("tee-pipe", "rpv --tee", "rpv"),
                0.7,
            ),
            info(
                "(q) --tee to a pipe: (rpv --tee)/rpv, paired",
                self.paired("tee-pipe", "rpv --tee", "rpv"),
            ),
            info(
                "(q) --tee to a pipe: (rpv --tee)/tee",
                self.vs("tee-pipe", "rpv --tee", "tee"),
            ),
            info(
                "(q) bare relay: (relay --tee)/relay",
                self.vs("tee-pipe", "relay --tee", "relay"),
            ),
            info(
                "(q) bare relay: (rpv --tee)/(relay --tee)",
                self.vs("tee-pipe", "rpv --tee", "relay --tee"),
            ),
        ]
    }

    /// Prints each target of the issue with the measured value.
    pub fn print_targets(&self, quick: bool, pretend: bool) {
        println!();
        let caveat = match (pretend, quick) {
            (true, _) => " (PRETEND: a stand-in ran as rpv, verdicts are meaningless)",
            (false, true) => " (quick mode: sizes too small, indicative only)",
            (false, false) => "",
        };
        println!("load at the end: {}", crate::sysinfo::load());
        println!("targets{caveat}:");
        for t in self.targets() {
            let verdict = match t.value {
                None => "n/a ",
                Some(_) if matches!(t.limit, Limit::Info) => "info",
                Some(v) if t.pass(v) => "pass",
                Some(_) => "FAIL",
            };
            let what = format!("{} {}", t.what, t.bound());
            println!("  {verdict}  {what:<54} {}", fmt(t.value, 3));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{median, ratio};

    #[test]
    fn medians_and_ratios() {
        assert_eq!(median(vec![1.0]), Some(1.0));
        assert_eq!(median(vec![]), None);
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(ratio(Some(3.0), Some(1.5)), Some(2.0));
        assert_eq!(ratio(Some(3.0), Some(0.0)), None);
        assert_eq!(ratio(None, Some(1.0)), None);
    }
}
