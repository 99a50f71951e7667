//! The display loop: the one loop that drives every mode.
//!
//! Owns: when to update (every `-i`, after `-D`, on SIGCONT, at the end), the rate history
//! of every meter ([`RateTracker`] by meter id: elapsed time without stopped time, rates,
//! frozen figures of meters that ended), handing snapshots and events to the sinks,
//! answering `-R`/`-Q` between updates (the control socket opens 20 ms into the run, so a
//! run that ends at once never pays for it), signals (exit, resize, continue, and on exit
//! waiting for the data threads to count their last call), the stall watchdog
//! (`--stall-timeout`, checked at each update), the end of a run of watches alone once
//! nobody reads its display ([`End::Unread`]), and the exit status of the display side.
//! Must not: move data, or block a data thread in any way; it runs on the
//! main thread and only reads counters.

use std::collections::HashMap;

use crate::control::server::Server;
use crate::control::{Changes, Reply, Request};
use crate::display::DisplaySwitches;
use crate::error::{status, Error};
use crate::meter::{Event, MeterId, MeterState, Phase, Role, Unit};
use crate::signals;
use crate::sink::{DisplayConfig, Reading, Sink, Snapshot};
use crate::source::Source;
use crate::stall;
use crate::stats::{RateTracker, Rates, StallWatch};
use crate::sys;
use crate::term::Term;

/// After an exit signal, how long the display loop waits for the sources to stop (a data
/// thread in a call the kick cannot interrupt, such as a disk write, finishes it first).
const SETTLE_NS: u64 = 1_000_000_000;
/// Time between kicks while it waits (milliseconds).
const SETTLE_KICK_MS: i32 = 10;

/// How long a run lasts before it opens its control socket for `-R`/`-Q`: long enough that
/// a run that ends at once (most small copies) never pays for the socket and its thread,
/// short enough that a client started with the run finds it (clients also wait a moment
/// for the socket of a live process).
const LISTEN_AFTER_NS: u64 = 20_000_000;

/// The rate history of one meter.
struct Track {
    tracker: RateTracker,
    stall: StallWatch,
    /// Stopped time (Ctrl-Z) already counted when the meter's clock started.
    stopped_base: u64,
    /// The figures of the last update: shown unchanged once the meter has ended.
    last: Option<Figures>,
    /// A flow of `--top`: forgotten once its meter is no longer sampled.
    flow: bool,
    /// The meter's final figures have been computed (it ended).
    settled: bool,
}

/// A meter's figures at one update.
#[derive(Debug, Clone, Copy)]
struct Figures {
    elapsed: f64,
    rates: Rates,
    final_update: bool,
    stalled_for: Option<f64>,
}

/// Seconds from `started` to `now` (monotonic ns), without `stopped` ns spent stopped;
/// at most 100,000 hours (what the display can show).
fn elapsed_at(now: u64, started: u64, stopped: u64) -> f64 {
    (now.saturating_sub(started).saturating_sub(stopped) as f64 / 1e9).clamp(0.0, 360_000_000.0)
}

/// [`elapsed_at`] now.
fn elapsed_since(started: u64, stopped: u64) -> f64 {
    elapsed_at(sys::monotonic_ns(), started, stopped)
}

/// The meters of the latest sample and the rate history of each.
#[derive(Default)]
struct Book {
    tracks: HashMap<MeterId, Track>,
    meters: Vec<MeterState>,
}

impl Book {
    /// One reading per meter whose clock has started, updating the rate histories.
    fn readings(&mut self, window: u32, stall_after: f64, final_update: bool) -> Vec<Reading<'_>> {
        self.readings_at(
            sys::monotonic_ns(),
            signals::stopped_ns(),
            window,
            stall_after,
            final_update,
        )
    }

    /// [`Book::readings`] at `now` with `stopped_now` ns stopped so far (pure: no clocks).
    fn readings_at(
        &mut self,
        now: u64,
        stopped_now: u64,
        window: u32,
        stall_after: f64,
        final_update: bool,
    ) -> Vec<Reading<'_>> {
        let mut figures = Vec::with_capacity(self.meters.len());
        for m in &self.meters {
            let Some(started) = m.started_ns else {
                continue;
            };
            let track = self.tracks.entry(m.id).or_insert_with(|| Track {
                tracker: RateTracker::new(window),
                stall: StallWatch::default(),
                stopped_base: stopped_now,
                last: None,
                settled: false,
                flow: m.role == Role::Flow,
            });
            let ended = m.phase == Phase::Ended;
            if ended {
                // A watched descriptor keeps the figures it had when it closed; anything
                // else gets its final figures (whole-life averages) once, then keeps them.
                let frozen = track.settled || m.role == Role::Descriptor;
                if let Some(last) = track.last.filter(|_| frozen) {
                    figures.push((m.id, last));
                    continue;
                }
                track.settled = true;
            }
            let until = m.ended_ns.unwrap_or(now);
            let elapsed = elapsed_at(
                until,
                started,
                stopped_now.saturating_sub(track.stopped_base),
            );
            let final_update = final_update || ended;
            let stall = track.stall.observe(elapsed, m.moved, stall_after);
            if stall.resumed {
                track.tracker.restart_average();
            }
            let mut rates = track.tracker.update(elapsed, m.moved, m.size, final_update);
            if m.size > 0 {
                rates.percentage = (100.0 * m.amount as f64 / m.size as f64).clamp(0.0, 100_000.0);
            }
            let f = Figures {
                elapsed,
                rates,
                final_update,
                stalled_for: stall.stalled_for.filter(|_| !final_update),
            };
            track.last = Some(f);
            figures.push((m.id, f));
        }
        if self.tracks.len() > figures.len() {
            // Flows come and go for as long as `--top` runs: their histories go with them.
            let shown: std::collections::HashSet<MeterId> =
                figures.iter().map(|(id, _)| *id).collect();
            self.tracks.retain(|id, t| !t.flow || shown.contains(id));
        }
        let tracks = &self.tracks;
        figures
            .into_iter()
            .zip(self.meters.iter().filter(|m| m.started_ns.is_some()))
            .map(|((id, f), meter)| Reading {
                meter,
                elapsed: f.elapsed,
                rates: f.rates,
                tracker: &tracks[&id].tracker,
                final_update: f.final_update,
                stalled_for: f.stalled_for,
            })
            .collect()
    }
}

/// The meter `-R -s` and `-Q` are about: a transfer, or the input side of `-M both`.
fn primary(m: &MeterState) -> bool {
    matches!(m.role, Role::Transfer | Role::MonitorIn)
}

/// How the display loop runs: the plan's settings that the session reads and no sink does.
#[derive(Debug, Clone, Default)]
pub(crate) struct SessionConfig {
    /// `-D`, nanoseconds: nothing is shown before.
    pub delay_ns: u64,
    /// `-m`, seconds: the window of the average rate.
    pub average_window: u32,
    /// Answer `-R`/`-Q` (a control socket is opened once the run lasts).
    pub control: bool,
    /// `-w`/`-H` (0 = ask the terminal); `-R` may change them.
    pub fixed: (u32, u32),
    /// `--stall-timeout`, seconds (transfers only).
    pub stall_timeout: Option<f64>,
    /// `-c` (not with `-n`): rpv keeps its own row of the terminal, when the terminal lets
    /// it (asked as the loop starts).
    pub cursor: bool,
}

/// How the loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    /// Every source finished.
    Finished,
    /// SIGINT, SIGHUP or SIGTERM: the sources were asked to stop.
    Interrupted,
    /// `--stall-timeout`: nothing moved for that long; the sources were asked to stop.
    Stalled,
    /// Every source is a watch and nobody reads the display any more (standard error's
    /// reader is gone: `rpv --top --json 2>&1 | head -3`). Status 0, as for a transfer
    /// whose output's reader goes.
    Unread,
}

/// One display loop over some sources and sinks.
pub(crate) struct Session<'a> {
    sources: Vec<Box<dyn Source + 'a>>,
    sinks: Vec<Box<dyn Sink + 'a>>,
    config: DisplayConfig,
    settings: SessionConfig,
    term: Term,
    book: Book,
    /// `-R -s`: the size of the first meter.
    size_override: Option<u64>,
    control: Option<Server>,
    control_tried: bool,
    /// When the control socket opens (monotonic ns).
    listen_at: u64,
    displayed: bool,
    status: u8,
    /// `--stall-timeout`.
    watchdog: Option<Watchdog>,
}

impl<'a> Session<'a> {
    /// A loop showing `sources` through `sinks` with `config`, run as `settings` say,
    /// writing to `term`.
    pub(crate) fn new(
        sources: Vec<Box<dyn Source + 'a>>,
        sinks: Vec<Box<dyn Sink + 'a>>,
        (config, settings): (DisplayConfig, SessionConfig),
        term: Term,
    ) -> Session<'a> {
        Session {
            sources,
            sinks,
            config,
            settings,
            term,
            book: Book::default(),
            size_override: None,
            control: None,
            control_tried: false,
            listen_at: 0,
            displayed: false,
            status: 0,
            watchdog: None,
        }
    }

    /// Runs the loop until every source has finished or a signal ends it; returns how it
    /// ended and the exit-status bits of the sources and the display.
    pub(crate) fn run(mut self) -> (End, u8) {
        self.watchdog = self
            .settings
            .stall_timeout
            .map(|timeout| Watchdog::new(timeout, sys::monotonic_ns(), signals::stopped_ns()));
        let first = self.settings.delay_ns.max(self.config.interval_ns);
        let start = sys::monotonic_ns();
        let mut next_due = start + first;
        let watch_every = self.watch_period_ns();
        let mut next_watch = start + watch_every;
        self.listen_at = start + LISTEN_AFTER_NS;
        let end = loop {
            let now = sys::monotonic_ns();
            let mut wait_ns = next_due.saturating_sub(now);
            if self.watchdog.is_some() {
                wait_ns = wait_ns.min(next_watch.saturating_sub(now));
            }
            if !self.control_tried && self.settings.control {
                // (A run that never listens must not wake at once, again and again, once
                // the time to listen has passed.)
                wait_ns = wait_ns.min(self.listen_at.saturating_sub(now));
            }
            let periods = (self.sources.iter().map(|s| s.poll_period_ns()))
                .chain(self.sinks.iter().map(|s| s.poll_period_ns()));
            for period in periods.flatten() {
                wait_ns = wait_ns.min(period);
            }
            let timeout_ms = (wait_ns / 1_000_000 + 1).min(i32::MAX as u64) as i32;
            signals::wait(timeout_ms);
            if let Some(continues) = signals::take_stop() {
                // Ctrl-Z: a multi-row view's rows are erased before the stop, so the shell's
                // lines go where they were; after `fg` the rows are drawn again below them.
                // A SIGCONT meanwhile (the erase blocked on a stuck stderr) drops the stop.
                self.term.suspend();
                signals::stop_unless_continued(continues);
            }
            let now = sys::monotonic_ns();
            for source in &mut self.sources {
                source.tick(now);
            }
            self.tick_sinks();
            self.serve_control(&mut next_due);
            self.pass_events();
            if signals::exit_requested() {
                break End::Interrupted;
            }
            if self.unread() {
                break End::Unread;
            }
            self.follow_resize();
            if self.all_finished() {
                break End::Finished;
            }
            let now = sys::monotonic_ns();
            self.listen(now);
            let updated = signals::take_continued() || now >= next_due;
            if updated {
                self.update(false);
                next_due += self.config.interval_ns;
                if next_due < now {
                    next_due = now + self.config.interval_ns;
                }
                if self.unread() {
                    break End::Unread;
                }
            }
            if self.watchdog.is_some() && (updated || now >= next_watch) {
                if !updated {
                    self.sample();
                }
                next_watch = now + watch_every;
                if self.stalled() {
                    break End::Stalled;
                }
            }
        };
        self.end(end)
    }

    /// After an exit signal: asks every source to stop and waits until none has anything in
    /// flight (a data thread's last call counted), at most [`SETTLE_NS`], so the final
    /// figures are what reached the outputs. The kicks repeat: one that lands just before a
    /// blocking call does not interrupt it.
    fn settle(&mut self) {
        let deadline = sys::monotonic_ns() + SETTLE_NS;
        loop {
            for source in &mut self.sources {
                source.stop();
            }
            if self.sources.iter().all(|s| s.stopped()) || sys::monotonic_ns() >= deadline {
                return;
            }
            signals::wait(SETTLE_KICK_MS);
        }
    }

    /// How often the stall watchdog looks at the counters: often enough that it sees the
    /// last movement within half an interval (so it fires at most one interval after the
    /// timeout, as documented), and within a tenth of the timeout; at most every 10 ms.
    fn watch_period_ns(&self) -> u64 {
        let timeout_ns = self.watchdog.as_ref().map_or(0.0, |w| w.timeout() * 1e9) as u64;
        (timeout_ns / 10)
            .min(self.config.interval_ns / 2)
            .max(10_000_000)
    }

    /// Whether the stall watchdog fires: nothing the transfer moves (its meters, both sides
    /// of `-M both`) has moved for the timeout.
    fn stalled(&mut self) -> bool {
        let Some(watchdog) = self.watchdog.as_mut() else {
            return false;
        };
        let moved = self
            .book
            .meters
            .iter()
            .filter(|m| matches!(m.role, Role::Transfer | Role::MonitorIn | Role::MonitorOut))
            .fold(0u64, |sum, m| sum.saturating_add(m.moved));
        watchdog.expired(sys::monotonic_ns(), signals::stopped_ns(), moved)
    }

    /// Nobody reads what a run of watches alone shows ([`End::Unread`]).
    fn unread(&self) -> bool {
        self.term.reader_gone() && self.sources.iter().all(|s| s.watches())
    }

    fn all_finished(&mut self) -> bool {
        self.sources.iter_mut().all(|s| s.finished())
    }

    /// The end of the run: stop answering, last events, the final update, the sinks' end.
    fn end(mut self, end: End) -> (End, u8) {
        let mut stall = None;
        if end == End::Interrupted {
            self.settle();
            self.status |= status::SIGNAL;
            if self.config.stderr_tty {
                self.term.interrupted();
            }
        }
        if end == End::Unread {
            for source in &mut self.sources {
                source.stop();
            }
        }
        if end == End::Stalled {
            // Which side waits, asked before anything is stopped.
            let blocked = self.sources.iter().find_map(|s| s.blocked());
            let timeout = self.watchdog.as_ref().map_or(0.0, Watchdog::timeout);
            stall = Some(stall::report(timeout, blocked));
            for source in &mut self.sources {
                source.stop();
            }
            self.status |= status::STALLED;
        }
        // Stop listening (and remove the socket) before anything that may exit; queriers get
        // the final numbers.
        self.pass_events();
        self.sample();
        if let Some(control) = self.control.take() {
            control.close(&self.state_reply());
        }
        let aborted = self.sources.iter().any(|s| s.aborted());
        let wants_final = self.sources.iter().all(|s| s.final_update());
        let final_update = if end == End::Unread {
            // Nobody would see it.
            None
        } else if end != End::Finished {
            // pv redraws the line as it stands, not as a final summary.
            Some(false)
        } else if !aborted && wants_final && (self.displayed || self.settings.delay_ns < 1_000_000)
        {
            Some(true)
        } else {
            None
        };
        if let Some(final_update) = final_update {
            self.draw(final_update);
            // Resized while the last frame was drawn: it is drawn again at the new size.
            if self.follow_resize() {
                self.draw(final_update);
            }
        }
        let status = self
            .sources
            .iter()
            .fold(self.status, |s, src| s | src.status());
        let (window, stall_after) = (self.settings.average_window, self.stall_after());
        let readings = self
            .book
            .readings(window, stall_after, final_update == Some(true));
        let snapshot = Snapshot {
            readings,
            final_update: final_update == Some(true),
            clock: std::cell::OnceCell::new(),
        };
        let mut closing: Vec<Event> = stall.into_iter().map(Event::Error).collect();
        for source in &mut self.sources {
            source.end(&mut closing);
        }
        closing.push(Event::Finished { status });
        for event in &closing {
            for sink in &mut self.sinks {
                sink.event(event, &self.config, &mut self.term);
            }
        }
        for sink in &mut self.sinks {
            sink.finish(&snapshot, &self.config, &mut self.term);
        }
        (end, status)
    }

    /// Hands the sources' events to the sinks.
    fn pass_events(&mut self) {
        let mut events = Vec::new();
        for source in &mut self.sources {
            source.events(&mut events);
        }
        for event in &events {
            for sink in &mut self.sinks {
                sink.event(event, &self.config, &mut self.term);
            }
        }
        if let Some(text) = signals::take_foreign() {
            let warning = Event::Error(Error::other(0, text));
            for sink in &mut self.sinks {
                sink.event(&warning, &self.config, &mut self.term);
            }
        }
    }

    /// Lets every sink look at its input, and hands what they ask to every source.
    fn tick_sinks(&mut self) {
        let mut requests = Vec::new();
        for sink in &mut self.sinks {
            sink.tick(&self.config, &mut self.term, &mut requests);
        }
        for request in requests {
            for source in &mut self.sources {
                source.request(request);
            }
        }
    }

    /// Samples every source.
    fn sample(&mut self) {
        let now = sys::monotonic_ns();
        self.book.meters.clear();
        for source in &mut self.sources {
            source.sample(now, &mut self.book.meters);
        }
        if let Some(size) = self.size_override {
            if let Some(primary) = self.book.meters.iter_mut().find(|m| primary(m)) {
                primary.size = size;
            }
        }
    }

    /// Opens the control socket once the run has lasted [`LISTEN_AFTER_NS`] (and has not
    /// ended): a run that ends sooner never pays for it.
    fn listen(&mut self, now: u64) {
        if !self.control_tried && self.settings.control && now >= self.listen_at {
            self.control_tried = true;
            self.control = Server::start(signals::waker());
        }
    }

    /// A regular update: sample, then show.
    fn update(&mut self, final_update: bool) {
        self.sample();
        self.draw(final_update);
    }

    /// After SIGWINCH or SIGCONT: measures the terminal again and tells the sinks. True if
    /// there was a resize to follow.
    fn follow_resize(&mut self) -> bool {
        if !signals::take_resized() {
            return false;
        }
        self.config.measure(self.settings.fixed);
        self.term.resized(self.config.height);
        self.reconfigure();
        true
    }

    /// Computes the figures of every meter and hands the snapshot to the sinks (at the
    /// terminal's size now: a resize since the loop last looked is followed first).
    fn draw(&mut self, final_update: bool) {
        self.follow_resize();
        let stall_after = self.stall_after();
        let readings = self
            .book
            .readings(self.settings.average_window, stall_after, final_update);
        if !readings.is_empty() && self.config.visible() {
            self.displayed = true;
        }
        let snapshot = Snapshot {
            readings,
            final_update,
            clock: std::cell::OnceCell::new(),
        };
        for sink in &mut self.sinks {
            sink.update(&snapshot, &self.config, &mut self.term);
        }
    }

    /// Seconds without progress after which a meter is shown as stalled: 2 s, or two
    /// updates if they are further apart.
    fn stall_after(&self) -> f64 {
        (2.0 * self.config.interval_ns as f64 / 1e9).max(2.0)
    }

    /// The first meter's progress, for `-Q`.
    fn state_reply(&self) -> Reply {
        let first = self.book.meters.iter().find(|m| primary(m));
        let Some(first) = first.or(self.book.meters.first()) else {
            return Reply::State {
                elapsed: 0.0,
                transferred: 0,
                size: self.size_override.unwrap_or(0),
                unit: Unit::default(),
            };
        };
        let elapsed = first.started_ns.map_or(0.0, |started| {
            let base = self
                .book
                .tracks
                .get(&first.id)
                .map_or_else(signals::stopped_ns, |t| t.stopped_base);
            elapsed_since(started, signals::stopped_ns().saturating_sub(base))
        });
        Reply::State {
            elapsed,
            transferred: first.amount,
            size: first.size,
            unit: first.unit,
        }
    }

    /// Answers pending `-R`/`-Q` requests.
    fn serve_control(&mut self, next_due: &mut u64) {
        let Some(control) = self.control.take() else {
            return;
        };
        control.serve(|request| match request {
            Request::Set(changes) => {
                self.apply(changes, next_due);
                Reply::Done
            }
            Request::Query => {
                self.sample();
                self.state_reply()
            }
        });
        self.control = Some(control);
    }

    /// Applies the options given to `rpv -R` (only those).
    fn apply(&mut self, c: &Changes, next_due: &mut u64) {
        let config = &mut self.config;
        if let Some(sw) = &c.switches {
            // Name and numeric mode are not display switches a sender can change.
            config.switches = DisplaySwitches {
                name: config.switches.name,
                numeric: config.switches.numeric,
                ..*sw
            };
            if c.format.is_none() {
                // Asking for switches means showing them: a custom -F gives way.
                config.format = None;
            }
        }
        if let Some(format) = &c.format {
            config.format = (!format.is_empty()).then(|| format.clone());
        }
        if let Some(name) = &c.name {
            config.name = (!name.is_empty()).then(|| name.clone());
        }
        if let Some(extra) = &c.extra_display {
            config.extra = (!extra.is_empty()).then(|| extra.clone());
        }
        if let Some(size) = c.size {
            self.size_override = Some(size);
        }
        if let Some(interval) = c.interval {
            config.interval_ns = (interval * 1e9) as u64;
            *next_due = sys::monotonic_ns() + config.interval_ns;
        }
        if let Some(w) = c.width {
            self.settings.fixed.0 = w;
        }
        if let Some(h) = c.height {
            self.settings.fixed.1 = h;
        }
        config.measure(self.settings.fixed);
        if c.rate_limit.is_some() || c.buffer_size.is_some() {
            if let Some(first) = self.sources.first_mut() {
                first.retune(c.rate_limit, c.buffer_size);
            }
        }
        self.reconfigure();
    }

    fn reconfigure(&mut self) {
        for sink in &mut self.sinks {
            sink.reconfigure(&self.config);
        }
    }
}

/// Whether nothing has moved for the timeout.
#[derive(Debug)]
struct Watchdog {
    timeout: f64,
    watch: StallWatch,
    /// When the watch started (monotonic ns) and the stopped time then.
    started: (u64, u64),
}

impl Watchdog {
    /// A watchdog of `timeout` seconds, from `now` (monotonic ns; `stopped_now`: the ns
    /// spent stopped so far).
    fn new(timeout: f64, now: u64, stopped_now: u64) -> Watchdog {
        Watchdog {
            timeout,
            watch: StallWatch::default(),
            started: (now, stopped_now),
        }
    }

    /// The timeout in seconds.
    fn timeout(&self) -> f64 {
        self.timeout
    }

    /// Records `moved` (everything the transfer has moved so far) at `now`; true once nothing
    /// moved for the timeout, not counting time stopped.
    fn expired(&mut self, now: u64, stopped_now: u64, moved: u64) -> bool {
        let stopped = stopped_now.saturating_sub(self.started.1);
        let running = now.saturating_sub(self.started.0).saturating_sub(stopped);
        let seconds = running as f64 / 1e9;
        self.watch
            .observe(seconds, moved, self.timeout)
            .stalled_for
            .is_some()
    }
}

#[cfg(test)]
#[path = "session_tests.rs"]
mod tests;
