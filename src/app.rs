//! The run: parse → plan → run → exit status. Glue only.
//!
//! Owns: the order of the steps, the threads of a transfer (one data thread per engine,
//! the display loop on the main thread; at a process limit the last engine copies on the
//! main thread instead), the `-M` child process, the two phases of `-U`,
//! and turning errors into messages and exit bits. Must not: decide what a mode shows
//! (sources and sinks do), do set-up I/O (the plan does), or move data (the engine does).

use std::ffi::OsString;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use crate::cli::{self, MonitorSide, Options};
use crate::control::client::{self, Client};
use crate::control::{Reply, Request};
use crate::error::{status, Error, Side};
use crate::meter::Role;
use crate::plan::{self, Job, MonitorPlan, Output, OutputKind, TransferPlan};
use crate::session::{End, Session, SessionConfig};
use crate::sink::report::Report;
use crate::sink::{self, json, DisplayConfig, Sink};
use crate::source::engine::EngineSource;
use crate::source::pipeline::PipelineSource;
use crate::source::query::QuerySource;
use crate::source::top::TopSource;
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
    let show = Show {
        display: plan.display,
        session: plan.session,
        outputs: plan.outputs,
    };
    match plan.job {
        Job::Transfer(t) => transfers("transfer", vec![t], show, report),
        Job::Store(first, store) => {
            let mut phase1 = show.clone();
            phase1.display.name = Some("(input)".into());
            let mut store = Some(store);
            // A stall in the store phase still forwards what was stored, then fails.
            let forward_stored = |end: End, status: u8| match (end, store.take()) {
                (End::Stalled, Some(store)) => match plan::second_phase(o, &show.display, store) {
                    Ok(second) => status | transfers("forward", vec![second], show.clone(), report),
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
            match plan::second_phase(o, &show.display, store) {
                Ok(second) => transfers("forward", vec![second], show, report),
                Err(e) => fail(report, &e),
            }
        }
        Job::Monitor(m) => monitor(o, show, m, report),
        Job::Watch(w) => {
            let interval = show.display.interval_ns;
            let source = WatchSource::new(w.targets, w.problems, w.size, interval);
            let start = json::Start {
                mode: "watch",
                ..json::Start::default()
            };
            session(vec![Box::new(source)], show, start, report).1
        }
        Job::Query(pid) => query(o, show, pid, report),
        Job::Pipeline(pid) => {
            let source = match PipelineSource::watch(pid, o.interval) {
                Ok(source) => source,
                Err(e) => return fail(report, &e),
            };
            let start = json::Start {
                mode: "pipeline",
                ..json::Start::default()
            };
            session(vec![Box::new(source)], show, start, report).1
        }
        Job::Top => top(o, show, report),
        Job::Remote(pid, changes) => match client::remote(pid, changes) {
            Ok(()) => 0,
            Err(e) => fail(report, &e),
        },
    }
}

/// What a display loop shows and how it runs: the plan's, for each loop of the run.
#[derive(Debug, Clone)]
struct Show {
    display: DisplayConfig,
    session: SessionConfig,
    outputs: Vec<OutputKind>,
}

/// Runs a display loop over `sources`, with a sink for each of the plan's outputs.
fn session<'a>(
    sources: Vec<Box<dyn Source + 'a>>,
    show: Show,
    start: json::Start,
    report: &Report,
) -> (End, u8) {
    let mut term = Term::new(report.prog());
    let cursor_rows = show.session.cursor
        && !show.display.voice.records()
        && term.enable_cursor(show.display.height);
    let sinks = sinks(&show, cursor_rows, start, report);
    Session::new(sources, sinks, (show.display, show.session), term).run()
}

/// One sink per output the plan chose, in its order. `cursor_rows`: `-c` keeps rpv's own
/// row of the terminal.
fn sinks<'a>(
    show: &Show,
    cursor_rows: bool,
    start: json::Start,
    report: &Report,
) -> Vec<Box<dyn Sink + 'a>> {
    let mut start = Some(start);
    let mut sinks: Vec<Box<dyn Sink + 'a>> = Vec::new();
    for output in &show.outputs {
        let sink: Box<dyn Sink + 'a> =
            match output {
                OutputKind::Messages => Box::new(sink::messages::Messages),
                OutputKind::Line => Box::new(sink::line::Line::default()),
                OutputKind::Numeric => Box::new(sink::numeric::Numeric::default()),
                OutputKind::Multi => Box::new(sink::multi::Multi::default()),
                // In cursor mode (`-c` on a terminal) each rpv keeps one row: --each shows the
                // total there.
                OutputKind::Each if cursor_rows => Box::new(sink::line::Line::default()),
                OutputKind::Each => Box::new(sink::multi::Multi::default()),
                OutputKind::Stages => Box::new(sink::stages::Stages::default()),
                OutputKind::TopView(once) => Box::new(sink::top::Top::new(&show.display, *once)),
                OutputKind::Json => match start.take() {
                    Some(start) => Box::new(json::Json::new(start, report.ledger())),
                    None => continue,
                },
                OutputKind::Log => Box::new(sink::log::Log::new(report.prog())),
                OutputKind::Title => Box::new(sink::title::Title::new(report.prog())),
                OutputKind::Stats => Box::new(sink::stats::Stats),
                OutputKind::TermProgress => {
                    Box::new(sink::term_progress::TermProgress::new(report.finals()))
                }
                OutputKind::Notify(notifier) => Box::new(sink::notify::Notify::new(
                    Arc::clone(notifier),
                    report.finals(),
                )),
                OutputKind::Metrics(path) => Box::new(sink::metrics::Metrics::new(
                    path.clone(),
                    report.warner(),
                    report.finals(),
                )),
                OutputKind::TopMetrics(path, settings) => Box::new(
                    sink::top_metrics::TopMetrics::new(path.clone(), *settings, report.warner()),
                ),
            };
        sinks.push(sink);
    }
    sinks
}

/// `--top`: the flows, in the view (or `--json`, `--log`) and the metrics file, until the
/// view quits or a signal ends the run.
fn top(o: &Options, show: Show, report: &Report) -> u8 {
    let source = TopSource::new(o.interval, o.once);
    let sources: Vec<Box<dyn Source>> = vec![Box::new(source)];
    let start = json::Start {
        mode: "top",
        ..json::Start::default()
    };
    signals::leave_stops_to_loop();
    session(sources, show, start, report).1
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
fn transfers(mode: &'static str, plans: Vec<TransferPlan>, show: Show, report: &Report) -> u8 {
    transfers_then(mode, plans, show, report, |_, status| status)
}

/// [`transfers`]; when the run is interrupted or stalls, `aborted` runs (with how it ended
/// and the status so far) before rpv exits, and gives the status to exit with.
fn transfers_then(
    mode: &'static str,
    plans: Vec<TransferPlan>,
    mut show: Show,
    report: &Report,
    aborted: impl FnOnce(End, u8) -> u8,
) -> u8 {
    let start = start_of(mode, &plans);
    // `--pipeline` inside a transfer: its own pipeline, its own stage counted by the engine.
    let own_bytes = Arc::new(crate::source::pipeline::OwnStage::default());
    let mut pipeline = inline_pipeline(&plans, &mut show, &own_bytes, report);
    if let [plan] = &plans[..] {
        if plan.is_small() && pipeline.is_none() {
            return small_transfer(plans, show, start, report);
        }
    }
    let progresses: Vec<Progress> = plans
        .iter()
        .map(|_| Progress::new(signals::waker()))
        .collect();
    std::thread::scope(|scope| {
        let mut sources: Vec<Box<dyn Source>> = Vec::new();
        let mut first_input = 0;
        let count = plans.len();
        let shown = show.display.visible() || show.display.voice != crate::cli::Voice::Display;
        let mut start_failed = false;
        for (index, (plan, progress)) in plans.into_iter().zip(&progresses).enumerate() {
            let TransferPlan {
                settings,
                output,
                meter,
                ..
            } = plan;
            let reads_stdin = reads_stdin(&settings);
            let inputs = settings.inputs.len();
            let engine_output = output.clone();
            // The clock starts before the copy (which may run on this thread).
            let mut source = EngineSource::new(progress, output, meter);
            source.number_inputs_from(first_input);
            first_input += inputs;
            if reads_stdin {
                source.watch_stdin();
            }
            if sources.is_empty() && pipeline.is_some() {
                source.mirror_to(Arc::clone(&own_bytes));
            }
            sources.push(Box::new(source));
            if start_failed {
                // An earlier side could not start: this one does not either.
                progress.finish();
            } else if let Err(e) = start_engine(scope, settings, engine_output, progress) {
                start_failed = !copy_here(e, index + 1 == count, shown, progress);
            }
        }
        if let Some(pipeline) = pipeline.take() {
            sources.push(Box::new(pipeline));
        }
        let (end, status) = session(sources, show, start, report);
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

/// `--pipeline` inside a transfer: the source of the pipeline it sits in, its own stage
/// counted in `own_bytes`. Not in a pipeline (or not allowed to see it): said, and the
/// usual display instead.
fn inline_pipeline(
    plans: &[TransferPlan],
    show: &mut Show,
    own_bytes: &Arc<crate::source::pipeline::OwnStage>,
    report: &Report,
) -> Option<PipelineSource> {
    if !plans.first().is_some_and(|p| p.own_pipeline) {
        return None;
    }
    let interval = show.display.interval_ns as f64 / 1e9;
    match PipelineSource::inline(Arc::clone(own_bytes), interval) {
        Ok(source) => Some(source),
        Err(e) => {
            // Not in a pipeline (or not allowed to see it): the usual display.
            report.error(&e);
            for view in &mut show.outputs {
                if matches!(view, OutputKind::Stages) {
                    *view = plan::line_view(&show.display);
                }
            }
            None
        }
    }
}

/// A small transfer ([`TransferPlan::is_small`]): the engine on this thread, then the
/// display loop, which finds it finished and shows the end (messages, the final line,
/// `--stats`). No thread, no control socket: the run is over before either would matter.
fn small_transfer(plans: Vec<TransferPlan>, show: Show, start: json::Start, report: &Report) -> u8 {
    let Some(TransferPlan {
        settings,
        output,
        meter,
        ..
    }) = plans.into_iter().next()
    else {
        return 0;
    };
    let progress = Progress::new(signals::waker());
    // The clock starts before the copy.
    let mut source = EngineSource::new(&progress, output.clone(), meter);
    if reads_stdin(&settings) {
        source.watch_stdin();
    }
    run_engine(&settings, &output, &progress);
    drop(output);
    session(vec![Box::new(source)], show, start, report).1
}

/// Whether a transfer reads rpv's standard input (its source then watches it).
fn reads_stdin(settings: &crate::transfer::Settings) -> bool {
    (settings.inputs.iter()).any(|i| matches!(i.source, InputSource::Stdin))
}

/// Starts a data thread running the engine on `settings` and `output` (see
/// [`transfers_then`]). When no thread can be made (a process limit: `ulimit -u`, a
/// cgroup's `pids.max`), the error is returned with the work, which never left this thread.
fn start_engine<'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    settings: crate::transfer::Settings,
    output: Output,
    progress: &'scope Progress,
) -> Result<(), NotStarted> {
    // The work is handed over once the thread exists, so a failed start keeps it.
    let (hand, take) = std::sync::mpsc::channel();
    let started = std::thread::Builder::new().spawn_scoped(scope, move || {
        progress.set_data_thread(signals::data_thread());
        if let Ok((settings, output)) = take.recv() {
            run_engine(&settings, &output, progress);
        }
    });
    match started {
        Ok(_) => {
            let _ = hand.send((settings, output));
            Ok(())
        }
        Err(e) => Err(Box::new((e, settings, output))),
    }
}

/// A data thread that could not be started: why, and its work (settings, output).
type NotStarted = Box<(std::io::Error, crate::transfer::Settings, Output)>;

/// No data thread could be started ([`start_engine`]'s error). The last engine of the run
/// (a plain transfer's only one, the output side of `-M both`) copies on this thread, as pv
/// does, with a warning where a display is `shown`: it shows the end only. An earlier one
/// cannot (`-M both`'s
/// input side would wait for ever for the output side to read the command's output): the
/// run fails in rpv's voice, status 1, and with `--json` an `end`. Returns whether the
/// copy ran.
fn copy_here(failed: NotStarted, last: bool, shown: bool, progress: &Progress) -> bool {
    let (err, settings, output) = *failed;
    let why = sys::strerror(&err);
    if !last {
        let text = format!("cannot start a thread for the copy: {why}");
        progress.emit(crate::meter::Event::Error(Error::other(
            status::REMOTE_OR_PID,
            text,
        )));
        progress.finish();
        return false;
    }
    // Said once per run (`-U` has two phases).
    static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if shown && !SAID.swap(true, std::sync::atomic::Ordering::Relaxed) {
        let text = format!("cannot start a thread ({why}): copying without a progress display");
        progress.emit(crate::meter::Event::Error(Error::other(0, text)));
    }
    run_engine(&settings, &output, progress);
    true
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
fn monitor(o: &Options, show: Show, m: MonitorPlan, report: &Report) -> u8 {
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
    let (in_pipe, out_pipe) = match (
        pipe(m.side != MonitorSide::Out),
        pipe(m.side != MonitorSide::In),
    ) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => return fail(report, &e),
    };
    let (in_read, in_write) = in_pipe.unzip();
    let (out_read, out_write) = out_pipe.unzip();
    let (child, command) = match spawn_command(&m, in_read, out_write) {
        Ok(spawned) => spawned,
        Err(e) => return fail(report, &e),
    };
    // The command holds its ends now (ours closed with its `Command`), so EOF and EPIPE
    // work.
    let ends = (in_write, out_read);
    let plans = match monitor_sides(o, &show, &m, (child.id(), &command), ends) {
        Ok(plans) => plans,
        Err(e) => return fail(report, &e),
    };
    let own = transfers("monitor", plans, show, report);
    finish_command(report, child, own)
}

/// Starts the `-M` command with `stdin` and `stdout` as its ends of the pipes (its
/// standard output is rpv's `-o` file when only its input is metered), and registers it
/// for the clean-up; returns it and its command line as shown.
fn spawn_command(
    m: &MonitorPlan,
    stdin: Option<std::os::fd::OwnedFd>,
    stdout: Option<std::os::fd::OwnedFd>,
) -> Result<(Child, String), Error> {
    let mut cmd = Command::new(&m.command);
    cmd.args(&m.args);
    if let Some(read) = stdin {
        cmd.stdin(Stdio::from(read));
    }
    match (stdout, &m.output) {
        (Some(write), _) => {
            cmd.stdout(Stdio::from(write));
        }
        (None, Output::File(file)) => {
            let f = file
                .try_clone()
                .map_err(|e| Error::other(status::REMOTE_OR_PID, sys::strerror(&e)))?;
            cmd.stdout(Stdio::from(f));
        }
        (None, _) => {}
    }
    let child = cmd.spawn().map_err(|err| Error::Command {
        command: m.command.to_string_lossy().into_owned(),
        err,
    })?;
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
    Ok((child, command))
}

/// The transfers of `-M`'s metered sides: rpv's input into the command (`to_command`),
/// the command's output to rpv's output (`from_command`); both with `-M both`.
fn monitor_sides(
    o: &Options,
    show: &Show,
    m: &MonitorPlan,
    (pid, command): (u32, &str),
    (to_command, from_command): (Option<std::os::fd::OwnedFd>, Option<std::os::fd::OwnedFd>),
) -> Result<Vec<TransferPlan>, Error> {
    let both = m.side == MonitorSide::Both;
    let mut plans = Vec::new();
    if let Some(to_command) = to_command {
        let role = if both {
            Role::MonitorIn
        } else {
            Role::Transfer
        };
        let output = Output::Pipe(Arc::new(to_command));
        let stdin = InputSpec::operand("-".as_ref());
        let mut p = plan::monitor_side(o, &show.display, stdin, output, role)?;
        p.meter.command = Some((pid, command.to_string(), Side::Output));
        plans.push(p);
    }
    if let Some(from_command) = from_command {
        let role = if both {
            Role::MonitorOut
        } else {
            Role::Transfer
        };
        let input = InputSpec::new(InputSource::Fd(from_command), "(pipe)".into());
        let mut p = plan::monitor_side(o, &show.display, input, m.output.clone(), role)?;
        p.meter.command = Some((pid, command.to_string(), Side::Input));
        plans.push(p);
    }
    Ok(plans)
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
fn query(o: &Options, show: Show, pid: u32, report: &Report) -> u8 {
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
    session(vec![Box::new(source)], show, start, report).1
}
