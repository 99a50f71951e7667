//! The watcher's per-window judgement: what each stage did over the window and who held
//! the pipeline back.
//!
//! Owns: each stage's rates, CPU use, activity and time split over the window, figures
//! derived from its neighbours where it cannot count, the bottleneck mark and its
//! smoothing, the share of time each stage was the bottleneck, and the advice for it.
//! Must not: read `/proc` beyond the stage's sockets and files (the sample is taken by
//! `watch.rs`), change the stage list (`stages.rs`), or draw.

use super::{
    connected, text, Stage, Watcher, MACHINE_EVERY_NS, MARK_TAU_NS, MARK_THRESHOLD, OVERCOUNT,
    OVERCOUNT_RATE,
};
use crate::pipeline::advice::{self, Position, Situation};
use crate::pipeline::classify::{self, StageState};
use crate::pipeline::figures::{self, Counted, Side};
use crate::pipeline::member;
use crate::pipeline::model::{Activity, Fill, Part, Split};
use crate::procfs::{self, Proc, ProcFile};

/// A socket's peer not found is looked for again after this long.
const PEER_RETRY_NS: u64 = 1_000_000_000;

/// A socket peer's command is shown in up to this many columns.
const PEER_COMMAND: usize = 40;

/// A process holding the socket `inode`, other than `own`, found through every process's
/// descriptors (those rpv may read).
fn socket_holder(proc: &mut dyn Proc, inode: u64, own: &[u32]) -> Option<u32> {
    let wanted = format!("socket:[{inode}]");
    let mut pids: Vec<u32> = proc.pids().ok()?;
    pids.retain(|pid| !own.contains(pid));
    pids.sort_unstable();
    pids.into_iter().find(|&pid| {
        proc.fds(pid)
            .is_ok_and(|fds| fds.iter().any(|(_, link)| *link == wanted))
    })
}

impl Watcher {
    /// Rates, CPU use and activity of each running stage.
    pub(super) fn update_views(&mut self, now_ns: u64, fills: &[Option<Fill>]) {
        let window = self.window_ns;
        for (i, stage) in self.stages.iter_mut().enumerate() {
            stage.view.fill = fills.get(i).copied().flatten();
            if stage.ended {
                continue;
            }
            stage.history.push_back((now_ns, stage.totals));
            while stage.history.len() > 2 && stage.history[1].0 + window <= now_ns {
                stage.history.pop_front();
            }
            let (t0, first) = stage.history[0];
            let seconds = now_ns.saturating_sub(t0) as f64 / 1e9;
            let rate =
                |a: u64, b: u64| (seconds > 0.0).then(|| a.saturating_sub(b) as f64 / seconds);
            let totals = stage.totals;
            stage.view.time = totals.time.since(&first.time).shares();
            stage.view.cpu = rate(totals.ticks, first.ticks)
                .map(|t| t * 100.0 / procfs::TICKS_PER_SECOND as f64);
            let whole_window = stage.counted_since.is_some_and(|since| since <= t0);
            stage.view.rate_in = rate(totals.bytes_in, first.bytes_in).filter(|_| whole_window);
            stage.view.rate_out = rate(totals.bytes_out, first.bytes_out).filter(|_| whole_window);
            // The member shown: the one that moved the most data, else used the most CPU.
            let current = stage.members.iter().filter(|m| m.last.is_some());
            let busiest = current
                .clone()
                .filter(|m| m.moved > 0 || m.used > 0)
                .max_by_key(|m| (m.moved, m.used))
                .map(|m| m.pid);
            let keep = stage.shown.filter(|p| {
                stage
                    .members
                    .iter()
                    .any(|m| m.pid == *p && m.last.is_some())
            });
            stage.shown = busiest.or(keep).or_else(|| current.map(|m| m.pid).max());
            if let Some(m) = stage.members.iter().find(|m| Some(m.pid) == stage.shown) {
                stage.view.pid = m.pid;
                stage.view.command.clone_from(&m.command);
                let input = if i > 0 { fills[i - 1] } else { None };
                let output = fills.get(i).copied().flatten();
                let activity = if m.last.is_some() {
                    m.activity
                } else {
                    Activity::Ended
                };
                stage.now = classify::resolve(activity, input, output);
                stage.view.activity = classify::state(stage.view.time, stage.now);
            }
        }
    }

    /// Figures a stage cannot count itself (splice does not show in `/proc/PID/io`; another
    /// user's process) are taken from the other ends of its pipes (see `figures`).
    pub(super) fn derive_figures(&mut self) {
        self.look_for_files();
        let mut counted = self.counted();
        figures::derive(&mut counted);
        for (stage, c) in self.stages.iter_mut().zip(counted) {
            if stage.ended {
                continue;
            }
            let add = |total: Option<u64>, moved: Option<u64>| match (total, moved) {
                (None, None) => None,
                (t, m) => Some(t.unwrap_or(0) + m.unwrap_or(0)),
            };
            stage.shown_bytes = (
                add(stage.shown_bytes.0, c.input.moved),
                add(stage.shown_bytes.1, c.output.moved),
            );
            stage.view.rate_in = c.input.rate;
            stage.view.rate_out = c.output.rate;
            (stage.view.bytes_in, stage.view.bytes_out) = stage.shown_bytes;
            stage.view.amount = if stage.spec.input.is_some() {
                stage.view.bytes_in
            } else {
                stage.view.bytes_out
            };
        }
    }

    /// A side counting far more than the other end of its pipe: reads or writes files
    /// too? Looked at when it does (sort's temporary files come and go), remembered.
    fn look_for_files(&mut self) {
        let n = self.stages.len();
        for i in 0..n {
            let next = i + 1 < n && !self.stages[i + 1].ended;
            let linked =
                next && connected(self.stages[i].spec.output, self.stages[i + 1].spec.input);
            if !linked || self.stages[i].ended {
                continue;
            }
            let far = |own: Option<f64>, other: Option<f64>| {
                own.is_some_and(|o| o > OVERCOUNT_RATE && o > other.unwrap_or(0.0) * OVERCOUNT)
            };
            let writes = far(
                self.stages[i].view.rate_out,
                self.stages[i + 1].view.rate_in,
            );
            let reads = far(
                self.stages[i + 1].view.rate_in,
                self.stages[i].view.rate_out,
            );
            for (k, look) in [
                (i, writes && !self.stages[i].elsewhere.1),
                (i + 1, reads && !self.stages[i + 1].elsewhere.0),
            ] {
                if !look {
                    continue;
                }
                let pids: Vec<u32> = self.stages[k].members.iter().map(|m| m.pid).collect();
                for pid in pids {
                    if let Some((r, w)) = self.proc.open_files(pid) {
                        let e = &mut self.stages[k].elsewhere;
                        *e = (e.0 || r, e.1 || w);
                    }
                }
            }
        }
    }

    /// Each stage's figures as counted by itself, for `figures::derive`: a side that is not
    /// its pipe's traffic unknown.
    fn counted(&self) -> Vec<Counted> {
        self.stages
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let linked = self
                    .stages
                    .get(i + 1)
                    .is_some_and(|next| connected(s.spec.output, next.spec.input));
                // A loop's or a launcher's writes are its children's too, which may go to
                // files (`xargs gzip`, `while …; do curl -o …`): what went through its
                // output pipe is what the next stage read from it.
                let kids = s.members.iter().any(|m| m.kids.is_some());
                // A stage whose shell holds its input pipe (a subshell, a loop not yet seen
                // to be one) counts its reads by the child at work: a python3 per line
                // reads its modules. Its input pipe's figure is its neighbour's until it
                // is a loop (its shell's own reads).
                let shared = !s.spec.containers.is_empty() && !s.looping;
                let fed = i > 0 && connected(self.stages[i - 1].spec.output, s.spec.input);
                let reads_elsewhere = s.elsewhere.0 || shared && fed;
                // Only a side with a reader has another figure to take: a last stage's
                // writes (a file, a socket) are its output, whatever else it wrote once.
                let writes_elsewhere = linked && (s.elsewhere.1 || kids);
                Counted {
                    // A side that counts files too is not its pipe's figure: unknown, so
                    // the other end's is taken (or none).
                    input: Side {
                        rate: s.view.rate_in.filter(|_| !reads_elsewhere),
                        moved: s.moved.map(|m| m.0).filter(|_| !reads_elsewhere),
                    },
                    output: Side {
                        rate: s.view.rate_out.filter(|_| !writes_elsewhere),
                        moved: s.moved.map(|m| m.1).filter(|_| !writes_elsewhere),
                    },
                    live: !s.ended,
                    linked,
                }
            })
            .collect()
    }

    /// Decides this sample's bottleneck, adds `dt` to its share, and marks the row of the
    /// stage that has been the bottleneck most over the last few seconds (unless its row
    /// says it waits for a neighbour: a pipeline whose bottleneck has just moved).
    pub(super) fn mark_bottleneck(&mut self, dt: u64) {
        let states: Vec<StageState> = (0..self.stages.len())
            .map(|i| {
                let s = &self.stages[i];
                let (upstream, downstream) = self.neighbours(i);
                let own = self
                    .own
                    .is_some_and(|me| s.members.iter().any(|m| m.pid == me));
                let limited = s.view.time.is_some_and(|t| t.get(Part::Timer) >= 0.5);
                StageState {
                    activity: if s.ended || own && !limited {
                        Activity::Ended
                    } else {
                        s.now
                    },
                    time: s.view.time,
                    upstream,
                    downstream,
                }
            })
            .collect();
        let now = classify::bottleneck(&states);
        if dt > 0 && !self.finished() {
            self.observed_ns += dt;
            let keep = (-(dt as f64) / MARK_TAU_NS).exp();
            for (i, stage) in self.stages.iter_mut().enumerate() {
                let hit = Some(i) == now;
                stage.score = stage.score * keep + if hit { 1.0 - keep } else { 0.0 };
                if hit {
                    stage.bottleneck_ns += dt;
                    stage.credit_now(dt);
                }
            }
        }
        let top = self
            .stages
            .iter()
            .enumerate()
            .filter(|(i, s)| {
                !s.ended && s.score >= MARK_THRESHOLD && !waits_for_neighbour(s, &states[*i])
            })
            .max_by(|a, b| a.1.score.total_cmp(&b.1.score))
            .map(|(i, _)| i);
        for (i, stage) in self.stages.iter_mut().enumerate() {
            stage.view.bottleneck = Some(i) == top;
        }
    }

    /// The machine's idle cores over the window, the "short of CPU" flag, and the advice
    /// about the marked stage.
    pub(super) fn review(&mut self, now_ns: u64) {
        // `/proc/stat` is long (every interrupt's count): read at most twice a second, the
        // window being a second at least.
        let due = self
            .machine
            .back()
            .is_none_or(|(t, _)| now_ns >= t + MACHINE_EVERY_NS);
        if let Some(times) = due.then(|| self.proc.cpu_times()).flatten() {
            self.machine_first.get_or_insert(times);
            self.machine.push_back((now_ns, times));
            while self.machine.len() > 2 && self.machine[1].0 + self.window_ns <= now_ns {
                self.machine.pop_front();
            }
        }
        let idle = match (self.machine.front(), self.machine.back()) {
            (Some((_, first)), Some((_, last))) => last.idle_cores_since(first),
            _ => None,
        };
        let times: Vec<Option<Split>> = self
            .stages
            .iter()
            .map(|s| s.view.time.filter(|_| !s.ended))
            .collect();
        self.short_of_cpu = short_of_cpu(&times);
        self.find_thief(now_ns);
        let marked = self.stages.iter().position(|s| s.view.bottleneck);
        if let Some(i) = marked {
            self.find_peer(i, now_ns);
        }
        self.advice = marked.and_then(|i| {
            let view = &self.stages[i].view;
            self.advise(i, &times, idle, view.rate_out.or(view.rate_in))
        });
    }

    /// The other end of the socket stage `i` waits on, when it waits on one (once found,
    /// not looked for again for that socket; not found, looked for again after
    /// [`PEER_RETRY_NS`]: a socket seen while it connects has no peer yet).
    fn find_peer(&mut self, i: usize, now_ns: u64) {
        let stage = &self.stages[i];
        if stage.view.time.is_none_or(|t| t.get(Part::Network) < 0.2) {
            return;
        }
        let Some((pid, inode)) = stage
            .members
            .iter()
            .find_map(|m| m.socket.map(|s| (m.pid, s)))
        else {
            return;
        };
        if let Some((of, at)) = stage.peer_of {
            let found = stage.peer.is_some();
            if of == inode && (found || now_ns < at + PEER_RETRY_NS) {
                return;
            }
        }
        let own: Vec<u32> = stage.members.iter().map(|m| m.pid).collect();
        // (The socket tables are read to their end: `ProcFile::is_table`.)
        let mut table = |file: ProcFile| {
            self.proc
                .read(pid, file, false)
                .map(|t| text(&t))
                .unwrap_or_default()
        };
        let unix = table(ProcFile::NetUnix);
        let peer = procfs::tcp_peer(&table(ProcFile::NetTcp), inode, false)
            .or_else(|| procfs::tcp_peer(&table(ProcFile::NetTcp6), inode, true))
            .or_else(|| self.unix_peer(inode, &own, &unix));
        let stage = &mut self.stages[i];
        if stage.peer_of.is_some_and(|(of, _)| of != inode) {
            stage.peer = None;
        }
        stage.peer_of = Some((inode, now_ns));
        if peer.is_some() {
            stage.peer = peer.map(|p| crate::display::printable(&p).into_owned());
        }
    }

    /// The other end of the Unix socket `inode`, from `net/unix`'s text `unix`: the process
    /// holding it (not one of `own`, the stage's processes) with its PID, and the path of
    /// the connection when it has one.
    fn unix_peer(&mut self, inode: u64, own: &[u32], unix: &str) -> Option<String> {
        let Some(peer) = crate::sys::unix_peer(inode).ok().flatten() else {
            return procfs::unix_path(unix, inode).map(|path| format!("Unix socket {path}"));
        };
        let path = procfs::unix_path(unix, peer).or_else(|| procfs::unix_path(unix, inode));
        let holder = socket_holder(self.proc.as_mut(), peer, own).map(|pid| {
            let comm = self.proc.stat(pid).map(|s| s.comm).unwrap_or_default();
            let command = member::command_of(self.proc.as_mut(), pid, &comm);
            format!(
                "{}, PID {pid}",
                crate::screen::cut(&command, PEER_COMMAND, true)
            )
        });
        match (holder, path) {
            (Some(holder), Some(path)) => Some(format!("{holder}, Unix socket {path}")),
            (Some(holder), None) => Some(holder),
            (None, path) => path.map(|path| format!("Unix socket {path}")),
        }
    }

    /// Whether stage `i` has a stage of the pipeline before it and after it, on its pipes.
    fn neighbours(&self, i: usize) -> (bool, bool) {
        let stage = &self.stages[i];
        let before = i > 0 && connected(self.stages[i - 1].spec.output, stage.spec.input);
        let after = self
            .stages
            .get(i + 1)
            .is_some_and(|next| connected(stage.spec.output, next.spec.input));
        (before, after)
    }

    /// The advice about stage `i`, with every stage's time split as `times` and its rate
    /// `rate` (bytes a second) over the same time.
    pub(super) fn advise(
        &self,
        i: usize,
        times: &[Option<Split>],
        idle: Option<f64>,
        rate: Option<f64>,
    ) -> Option<String> {
        let stage = &self.stages[i];
        let time = times.get(i).copied().flatten()?;
        let (before, after) = self.neighbours(i);
        let position = match (before, after) {
            (false, true) => Position::First,
            (true, false) => Position::Last,
            (true, true) => Position::Middle,
            (false, false) => Position::Only,
        };
        let situation = Situation {
            command: stage.credited_name(),
            position,
            time,
            cores: self.proc.cores(),
            idle_cores: idle,
            busy_stages: times.iter().flatten().filter(|t| t.cpu() >= 0.5).count(),
            short_of_cpu: short_of_cpu(times),
            looping: stage.looping,
            launcher: stage.members.iter().any(member::Member::launcher),
            peer: stage.peer.as_deref(),
            pid: stage.view.pid,
            rate,
            thief: self.others.thief.as_ref(),
            group: self.group,
        };
        advice::advise(&situation, &self.tools)
    }
}

/// True if the stage's row says it waits for a neighbour (or a child): its input when a
/// stage writes it, its output when a stage reads it.
fn waits_for_neighbour(stage: &Stage, state: &StageState) -> bool {
    match stage.view.activity {
        Activity::WaitInput => state.upstream,
        Activity::WaitOutput => state.downstream,
        Activity::WaitChild => true,
        _ => false,
    }
}

/// True if the stages together waited for a CPU longer than they ran (and long enough to
/// matter: a fifth of a core).
fn short_of_cpu(times: &[Option<Split>]) -> bool {
    let (busy, starved) = times.iter().flatten().fold((0.0, 0.0), |(b, s), t| {
        (b + t.get(Part::Busy), s + t.get(Part::Starved))
    });
    starved > busy && starved >= 0.2
}
