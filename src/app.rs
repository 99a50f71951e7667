//! The run: parse → plan → run → exit status. Glue only.
//!
//! Owns: the order of the steps, the threads of a transfer (one data thread per engine,
//! the display loop on the main thread), the `-M` child process, the two phases of `-U`,
//! and turning errors into messages and exit bits. Must not: decide what a mode shows
//! (sources and sinks do), do set-up I/O (the plan does), or move data (the engine does).

use std::ffi::OsString;
use std::process::{Child, Command, Stdio};
use std::rc::Rc;
use std::sync::Arc;

use crate::cli::{self, MonitorSide, Options, Voice};
use crate::control::client::{self, Client};
use crate::control::{Reply, Request};
use crate::error::{status, Error, Side};
use crate::meter::Role;
use crate::plan::{self, Job, MonitorPlan, Output, TransferPlan};
use crate::session::{End, Session};
use crate::sink::report::Report;
use crate::sink::{self, json, DisplayConfig, Sink};
use crate::source::engine::EngineSource;
use crate::source::pipeline::PipelineSource;
use crate::source::query::QuerySource;
use crate::source::top::{SharedBoard, TopSource};
use crate::source::watch::WatchSource;
use crate::source::Source;
use crate::sys;
use crate::term::{self, Term};
use crate::transfer::{Engine, InputSource, InputSpec, Progress};
use crate::{cleanup, signals};

/// The `-M` command's line, as the clean-up report names it, is cut to this many columns.
const MONITOR_COMMAND: usize = 80;

/// Entry point used by `main`: parses `args` (`argv[0]` first), runs, returns the exit status.
pub fn main_with_args(args: Vec<OsString>) -> i32 {
    let argv0 = args
        .first()
        .map_or_else(|| "rpv".into(), |a| a.to_string_lossy().into_owned());
    let prog = std::path::Path::new(&argv0)
        .file_name()
        .map_or_else(|| "rpv".into(), |s| s.to_string_lossy().into_owned());
    let args = &args[1.min(args.len())..];
    // `--help`, `--version` and `--completions` write on stdout; with `--json`, the run
    // still ends with its `end` object on stderr.
    let special = |text: &str| {
        let status = print_stdout(text);
        Report::new(&prog, cli::voice_of(args)).close(status);
        i32::from(status)
    };
    match cli::parse(&argv0, args) {
        cli::Parsed::Help => special(&cli::help_text(term::size(0, 0).0)),
        cli::Parsed::Version => special(&cli::version_text()),
        cli::Parsed::Completions(shell) => special(&cli::completion_script(shell)),
        cli::Parsed::Error(text) => {
            let report = Report::new(&prog, cli::voice_of(args));
            report.usage(&text, &argv0);
            report.close(status::USAGE);
            status::USAGE.into()
        }
        cli::Parsed::Run(options) => {
            let report = Report::new(&prog, options.voice);
            let status = run(&options, &report);
            // A -M command left by a set-up error after its start ends with rpv too.
            end_command(&report);
            for message in cleanup::remove_all() {
                report.error(&Error::other(0, message));
            }
            report.close(status);
            status.into()
        }
    }
}

fn print_stdout(text: &str) -> u8 {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
    0
}

/// Reports `e` and returns its exit bits (an interrupted set-up step says nothing).
fn fail(report: &Report, e: &Error) -> u8 {
    if signals::exit_requested() {
        return status::SIGNAL;
    }
    report.error(e);
    e.exit_bits()
}

fn run(o: &Options, report: &Report) -> u8 {
    signals::install();
    if let Err(e) = crate::stdio::check_output(o) {
        return fail(report, &e);
    }
    let plan = match plan::plan(o) {
        Ok(plan) => plan,
        Err(e) => return fail(report, &e),
    };
    let display = plan.display;
    match plan.job {
        Job::Transfer(t) => transfers("transfer", vec![t], display, report),
        Job::Store(first, store) => {
            let phase1 = DisplayConfig {
                name: Some("(input)".into()),
                ..display.clone()
            };
            let mut store = Some(store);
            // A stall in the store phase still forwards what was stored, then fails.
            let forward_stored = |end: End, status: u8| match (end, store.take()) {
                (End::Stalled, Some(store)) => match plan::second_phase(o, &display, store) {
                    Ok(second) => {
                        status | transfers("forward", vec![second], display.clone(), report)
                    }
                    Err(e) => status | fail(report, &e),
                },
                _ => status,
            };
            let status = transfers_then("store", vec![first], phase1, report, forward_stored);
            if status != 0 {
                return status;
            }
            let Some(store) = store.take() else {
                return status;
            };
            match plan::second_phase(o, &display, store) {
                Ok(second) => transfers("forward", vec![second], display, report),
                Err(e) => fail(report, &e),
            }
        }
        Job::Monitor(m) => monitor(o, display, m, report),
        Job::Watch(w) => {
            let source = WatchSource::new(w.targets, w.problems, w.size, display.interval_ns);
            let start = json::Start {
                mode: "watch",
                ..json::Start::default()
            };
            session(vec![Box::new(source)], display, start, report).1
        }
        Job::Query(pid) => query(o, display, pid, report),
        Job::Pipeline(pid) => {
            let source = match PipelineSource::watch(pid, o.interval) {
                Ok(source) => source,
                Err(e) => return fail(report, &e),
            };
            let start = json::Start {
                mode: "pipeline",
                ..json::Start::default()
            };
            session(vec![Box::new(source)], display, start, report).1
        }
        Job::Top => top(o, display, report),
        Job::Remote(pid, changes) => match client::remote(pid, changes) {
            Ok(()) => 0,
            Err(e) => fail(report, &e),
        },
    }
}

/// Runs a display loop over `sources`, with the sinks the settings ask for.
fn session<'a>(
    sources: Vec<Box<dyn Source + 'a>>,
    display: DisplayConfig,
    start: json::Start,
    report: &Report,
) -> (End, u8) {
    let mut term = Term::new(report.prog());
    let cursor_rows =
        display.cursor && !display.voice.records() && term.enable_cursor(display.height);
    let sinks = sinks(&display, cursor_rows, start, report, &sources);
    Session::new(sources, sinks, display, term).run()
}

/// The sinks for these settings. `--json` and `--log` replace the display (they carry the
/// messages themselves); otherwise: messages, then the line, numeric output or the
/// multi-line screen (watched descriptors, `--each` unless `cursor_rows`: cursor mode is
/// on), then titles and statistics when asked for; then, whatever the display, the terminal's progress indicator, systemd's
/// status and the metrics file when they are on.
fn sinks<'a>(
    display: &DisplayConfig,
    cursor_rows: bool,
    start: json::Start,
    report: &Report,
    sources: &[Box<dyn Source + 'a>],
) -> Vec<Box<dyn Sink + 'a>> {
    let watching = sources.iter().any(|s| !s.final_update());
    let mut sinks: Vec<Box<dyn Sink>> = Vec::new();
    if display.voice == Voice::Json {
        sinks.push(Box::new(json::Json::new(start, report.ledger())));
    } else if display.voice == Voice::Log {
        sinks.push(Box::new(sink::log::Log::new(report.prog())));
    } else {
        sinks.push(Box::new(sink::messages::Messages));
        if display.top.is_some() {
            // `--top`'s view comes from `top`, with the board it shares with its source.
        } else if display.pipeline {
            sinks.push(Box::new(sink::stages::Stages::default()));
        } else if display.style.numeric {
            sinks.push(Box::new(sink::numeric::Numeric::default()));
        } else if watching || (display.each && !cursor_rows) {
            // (In cursor mode, `-c` on a terminal, each rpv keeps one row: --each shows the
            // total there.)
            sinks.push(Box::new(sink::multi::Multi::default()));
        } else {
            sinks.push(Box::new(sink::line::Line::default()));
        }
    }
    if !watching {
        if display.extra.is_some() {
            sinks.push(Box::new(sink::title::Title::new(report.prog())));
        }
        if display.stats && display.voice != Voice::Json {
            sinks.push(Box::new(sink::stats::Stats));
        }
    }
    if display.term_progress {
        sinks.push(Box::new(sink::term_progress::TermProgress::new(
            report.finals(),
        )));
    }
    if let Some(notifier) = &display.notify {
        sinks.push(Box::new(sink::notify::Notify::new(
            Arc::clone(notifier),
            report.finals(),
        )));
    }
    if let (Some(path), None) = (&display.metrics_file, display.top) {
        sinks.push(Box::new(sink::metrics::Metrics::new(
            path.clone(),
            report.warner(),
            report.finals(),
        )));
    }
    sinks
}

/// `--top`: the flows, in the view (or `--json`, `--log`) and the metrics file, until the
/// view quits or a signal ends the run.
fn top(o: &Options, display: DisplayConfig, report: &Report) -> u8 {
    let board = SharedBoard::default();
    let source = TopSource::new(o.interval, Rc::clone(&board));
    let sources: Vec<Box<dyn Source>> = vec![Box::new(source)];
    let start = json::Start {
        mode: "top",
        ..json::Start::default()
    };
    let mut sinks = sinks(&display, false, start, report, &sources);
    if !display.voice.records() {
        let view = sink::top::Top::new(Rc::clone(&board), &display);
        sinks.insert(1, Box::new(view));
    }
    if let (Some(path), Some(settings)) = (&display.metrics_file, display.top) {
        let metrics = sink::top_metrics::TopMetrics::new(path.clone(), settings, board);
        sinks.push(Box::new(metrics));
    }
    let term = Term::new(report.prog());
    signals::leave_stops_to_loop();
    Session::new(sources, sinks, display, term).run().1
}

/// The `start` object of `--json` for these transfers: the inputs of all of them (the two
/// sides of `-M both` number theirs one after the other), by the names they were given.
fn start_of(mode: &'static str, plans: &[TransferPlan]) -> json::Start {
    let Some(first) = plans.first() else {
        return json::Start {
            mode,
            ..json::Start::default()
        };
    };
    let inputs = plans
        .iter()
        .flat_map(|p| &p.settings.inputs)
        .map(|i| {
            let size = i
                .info()
                .ok()
                .filter(|info| info.kind == sys::FileKind::Regular)
                .map(|info| info.size);
            let name = match &i.source {
                InputSource::Path(path) => path.as_os_str().to_owned(),
                _ => i.name.clone().into(),
            };
            (name, size)
        })
        .collect();
    json::Start {
        mode,
        unit: first.meter.unit,
        inputs,
        outputs: (first.settings.tees.iter())
            .map(|t| t.path.clone().into_os_string())
            .collect(),
        size: first.meter.size,
    }
}

/// Runs transfers (one, or the two sides of `-M both`): each engine on a data thread of its
/// own, one display loop here.
fn transfers(
    mode: &'static str,
    plans: Vec<TransferPlan>,
    display: DisplayConfig,
    report: &Report,
) -> u8 {
    transfers_then(mode, plans, display, report, |_, status| status)
}

/// [`transfers`]; when the run is interrupted or stalls, `aborted` runs (with how it ended
/// and the status so far) before rpv exits, and gives the status to exit with.
fn transfers_then(
    mode: &'static str,
    plans: Vec<TransferPlan>,
    mut display: DisplayConfig,
    report: &Report,
    aborted: impl FnOnce(End, u8) -> u8,
) -> u8 {
    let start = start_of(mode, &plans);
    // `--pipeline` inside a transfer: its own pipeline, its own stage counted by the engine.
    let own_bytes = Arc::new(crate::source::pipeline::OwnStage::default());
    let mut pipeline = None;
    if display.pipeline {
        let interval = display.interval_ns as f64 / 1e9;
        match PipelineSource::inline(Arc::clone(&own_bytes), interval) {
            Ok(source) => pipeline = Some(source),
            Err(e) => {
                // Not in a pipeline (or not allowed to see it): the usual display.
                report.error(&e);
                display.pipeline = false;
            }
        }
    }
    if let [plan] = &plans[..] {
        if plan.is_small() && pipeline.is_none() {
            return small_transfer(plans, display, start, report);
        }
    }
    let progresses: Vec<Progress> = plans
        .iter()
        .map(|_| Progress::new(signals::waker()))
        .collect();
    std::thread::scope(|scope| {
        let mut sources: Vec<Box<dyn Source>> = Vec::new();
        let mut first_input = 0;
        for (plan, progress) in plans.into_iter().zip(&progresses) {
            let TransferPlan {
                settings,
                output,
                meter,
            } = plan;
            let settings_reads_stdin = settings
                .inputs
                .iter()
                .any(|i| matches!(i.source, InputSource::Stdin));
            let inputs = settings.inputs.len();
            let engine_output = output.clone();
            // The meter's clock starts before the engine (and its rate limiter): on a
            // loaded machine the engine's thread may run first, and what it moved would
            // then read as ahead of the limit over the meter's time.
            let mut source = EngineSource::new(progress, output, meter);
            scope.spawn(move || {
                progress.set_data_thread(signals::data_thread());
                run_engine(&settings, &engine_output, progress);
            });
            let reads_stdin = settings_reads_stdin;
            source.number_inputs_from(first_input);
            first_input += inputs;
            if reads_stdin {
                source.watch_stdin();
            }
            if sources.is_empty() && pipeline.is_some() {
                source.mirror_to(Arc::clone(&own_bytes));
            }
            sources.push(Box::new(source));
        }
        if let Some(pipeline) = pipeline.take() {
            sources.push(Box::new(pipeline));
        }
        let (end, status) = session(sources, display, start, report);
        if end != End::Finished {
            // Interrupted or stalled: a data thread may sit in a blocking call, so do not
            // wait for it. The -M command does not outlive rpv.
            end_command(report);
            let status = aborted(end, status);
            report.close(status);
            cleanup::exit(status);
        }
        status
    })
}

/// A small transfer ([`TransferPlan::is_small`]): the engine on this thread, then the
/// display loop, which finds it finished and shows the end (messages, the final line,
/// `--stats`). No thread, no control socket: the run is over before either would matter.
fn small_transfer(
    plans: Vec<TransferPlan>,
    display: DisplayConfig,
    start: json::Start,
    report: &Report,
) -> u8 {
    let Some(TransferPlan {
        settings,
        output,
        meter,
    }) = plans.into_iter().next()
    else {
        return 0;
    };
    let progress = Progress::new(signals::waker());
    let reads_stdin = settings
        .inputs
        .iter()
        .any(|i| matches!(i.source, InputSource::Stdin));
    // The clock starts before the copy.
    let mut source = EngineSource::new(&progress, output.clone(), meter);
    if reads_stdin {
        source.watch_stdin();
    }
    run_engine(&settings, &output, &progress);
    drop(output);
    session(vec![Box::new(source)], display, start, report).1
}

fn run_engine(settings: &crate::transfer::Settings, output: &Output, progress: &Progress) {
    match Engine::new(settings, output.fd(), progress) {
        Ok(mut engine) => engine.run(),
        Err(err) => {
            progress.emit(crate::meter::Event::Error(Error::Output {
                path: None,
                err,
            }));
            progress.finish();
        }
    }
}

/// `-M SIDE -- COMMAND ARGS`: runs the command with pipes on the metered sides. The exit
/// status is rpv's own if its transfer had a problem, otherwise the command's (128 + N if
/// signal N killed it). A command that cannot be started: status 127 (not found) or 126.
fn monitor(o: &Options, display: DisplayConfig, m: MonitorPlan, report: &Report) -> u8 {
    let pipe = |wanted: bool| -> Result<Option<_>, Error> {
        if !wanted {
            return Ok(None);
        }
        sys::pipe().map(Some).map_err(|e| {
            Error::other(
                status::REMOTE_OR_PID,
                format!("pipe: {}", sys::strerror(&e)),
            )
        })
    };
    let both = m.side == MonitorSide::Both;
    let (in_pipe, out_pipe) = match (
        pipe(m.side != MonitorSide::Out),
        pipe(m.side != MonitorSide::In),
    ) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => return fail(report, &e),
    };
    let mut cmd = Command::new(&m.command);
    cmd.args(&m.args);
    let (in_read, in_write) = in_pipe.unzip();
    let (out_read, out_write) = out_pipe.unzip();
    if let Some(read) = in_read {
        cmd.stdin(Stdio::from(read));
    }
    match (out_write, &m.output) {
        (Some(write), _) => {
            cmd.stdout(Stdio::from(write));
        }
        (None, Output::File(file)) => match file.try_clone() {
            Ok(f) => {
                cmd.stdout(Stdio::from(f));
            }
            Err(e) => {
                let e = Error::other(status::REMOTE_OR_PID, sys::strerror(&e));
                return fail(report, &e);
            }
        },
        (None, _) => {}
    }
    let child = match cmd.spawn() {
        Ok(child) => child,
        Err(err) => {
            let command = m.command.to_string_lossy().into_owned();
            return fail(report, &Error::Command { command, err });
        }
    };
    // Shown as the pipeline view shows a command line: arguments quoted where a shell
    // would need it, control characters escaped.
    let argv: Vec<u8> = std::iter::once(&m.command)
        .chain(&m.args)
        .flat_map(|a| a.as_encoded_bytes().iter().copied().chain([0]))
        .collect();
    let command = crate::screen::cut(
        &crate::procfs::command_text(&argv).unwrap_or_default(),
        MONITOR_COMMAND,
        false,
    );
    cleanup::register_command(child.id(), command.clone());
    // The command holds its ends now; ours must close so EOF and EPIPE work.
    drop(cmd);
    let mut plans = Vec::new();
    if let Some(to_command) = in_write {
        let role = if both {
            Role::MonitorIn
        } else {
            Role::Transfer
        };
        let output = Output::Pipe(Arc::new(to_command));
        match plan::monitor_side(o, &display, InputSpec::operand("-".as_ref()), output, role) {
            Ok(mut p) => {
                p.meter.command = Some((child.id(), command.clone(), Side::Output));
                plans.push(p);
            }
            Err(e) => return fail(report, &e),
        }
    }
    if let Some(from_command) = out_read {
        let role = if both {
            Role::MonitorOut
        } else {
            Role::Transfer
        };
        let input = InputSpec::new(InputSource::Fd(from_command), "(pipe)".into());
        match plan::monitor_side(o, &display, input, m.output.clone(), role) {
            Ok(mut p) => {
                p.meter.command = Some((child.id(), command.clone(), Side::Input));
                plans.push(p);
            }
            Err(e) => return fail(report, &e),
        }
    }
    let own = transfers("monitor", plans, display, report);
    finish_command(report, child, own)
}

/// Ends the `-M` command if it still runs, and says so.
fn end_command(report: &Report) {
    if let Some(text) = cleanup::end_command() {
        report.error(&Error::other(0, text));
    }
}

/// Waits for the command; the exit status is rpv's own if non-zero, else the command's. An
/// exit signal ends the wait (and the command, which must not outlive rpv).
fn finish_command(report: &Report, mut child: Child, own: u8) -> u8 {
    let exited = loop {
        match child.try_wait() {
            Ok(Some(exit)) => break Ok(exit),
            Ok(None) => {}
            Err(e) => break Err(e),
        }
        if signals::exit_requested() {
            end_command(report);
            let _ = child.wait();
            return own | status::SIGNAL;
        }
        signals::wait(20);
    };
    cleanup::forget_command();
    let command_code = match exited {
        Ok(exit) => {
            use std::os::unix::process::ExitStatusExt;
            match (exit.code(), exit.signal()) {
                (Some(code), _) => (code & 0xff) as u8,
                (None, Some(signal)) => (128 + signal).min(255) as u8,
                (None, None) => 1,
            }
        }
        Err(e) => fail(
            report,
            &Error::other(status::REMOTE_OR_PID, sys::strerror(&e)),
        ),
    };
    if own != 0 {
        own
    } else {
        command_code
    }
}

/// `-Q PID`: shows another rpv's progress until it ends.
fn query(o: &Options, display: DisplayConfig, pid: u32, report: &Report) -> u8 {
    if let Err(e) = client::check_target(pid) {
        return fail(report, &e);
    }
    let not_received = Error::Remote { pid, err: None };
    let Some(mut client) = Client::connect_waiting(pid, crate::control::CONNECT_WAIT) else {
        return fail(report, &client::not_reached(pid));
    };
    let Some(Reply::State {
        elapsed,
        transferred,
        size,
        unit,
    }) = client.ask(&Request::Query)
    else {
        return fail(report, &not_received);
    };
    let source = QuerySource::new(client, (elapsed, transferred, size), unit, o.wait);
    let start = json::Start {
        mode: "query",
        unit,
        size,
        ..json::Start::default()
    };
    session(vec![Box::new(source)], display, start, report).1
}
