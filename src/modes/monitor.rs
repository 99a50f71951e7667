//! `-M SIDE -- COMMAND [ARGS...]` (spec 4.4): run a command and meter its standard input,
//! its standard output, or both.
//!
//! Owns: the pipes and the child process, which transfer each side runs, and the exit
//! status. Each side is an ordinary transfer with its own display (`app::transfer_to`); with
//! `both` the output side runs on a second thread (pv forks a second pv), and the two sides
//! share their counts through two atomics for `%{ratio}`.
//!
//! Exit status (a deliberate difference from pv, which ignores the command): rpv's own
//! status if its transfer had a problem (non-zero, e.g. 32 when interrupted, 16 on a write
//! error); otherwise the command's exit status (128 + N if a signal N killed it). A command
//! that cannot be started is reported as `rpv: COMMAND: error` with status 127 (not found)
//! or 126 (any other reason), like a shell.

use std::os::fd::{AsFd, OwnedFd};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use crate::app;
use crate::cli::{Action, MonitorSide, Options};
use crate::shared::status;
use crate::sys;
use crate::transfer::input;
use crate::view::Setup;

/// Runs this mode; returns the exit status.
pub fn run(o: &Options, prog: &str) -> u8 {
    let Action::Monitor(side) = o.action else {
        return status::USAGE;
    };
    let Some((command, args)) = o.files.split_first() else {
        eprintln!("{prog}: -M: a command to run must be specified");
        return status::USAGE;
    };
    let pipes = |wanted: bool| -> Result<Option<(OwnedFd, OwnedFd)>, u8> {
        if !wanted {
            return Ok(None);
        }
        sys::pipe().map(Some).map_err(|e| {
            eprintln!("{prog}: pipe: {}", sys::strerror(&e));
            status::REMOTE_OR_PID
        })
    };
    let metered_in = side != MonitorSide::Out;
    let metered_out = side != MonitorSide::In;
    let (in_pipe, out_pipe) = match (pipes(metered_in), pipes(metered_out)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(code), _) | (_, Err(code)) => return code,
    };
    // The output: the out side writes it; with `-M in` the command writes it directly.
    // (An empty operand is never the output, so `-o` is truncated as for a normal run.)
    let output = match app::output_for(o, prog, &[String::new()]) {
        Ok(out) => out,
        Err(code) => return code,
    };
    let mut cmd = Command::new(command);
    cmd.args(args);
    let (in_read, in_write) = in_pipe.unzip();
    let (out_read, out_write) = out_pipe.unzip();
    if let Some(read) = in_read {
        cmd.stdin(Stdio::from(read));
    }
    match out_write {
        Some(write) => {
            cmd.stdout(Stdio::from(write));
        }
        None => {
            if let app::Output::File(file) = &output {
                match file.try_clone() {
                    Ok(f) => {
                        cmd.stdout(Stdio::from(f));
                    }
                    Err(e) => {
                        eprintln!("{prog}: {}", sys::strerror(&e));
                        return status::REMOTE_OR_PID;
                    }
                }
            }
        }
    }
    let child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) => {
            eprintln!("{prog}: {command}: {}", sys::strerror(&e));
            return if e.kind() == std::io::ErrorKind::NotFound {
                127
            } else {
                126
            };
        }
    };
    // The command holds its ends now; ours must close so EOF and EPIPE work.
    drop(cmd);
    let own = match (in_write, out_read) {
        (Some(to_command), None) => in_side(o, prog, to_command, Setup::default()),
        (None, Some(from_command)) => out_side(o, prog, from_command, &output, Setup::default()),
        (Some(to_command), Some(from_command)) => both(o, prog, to_command, from_command, &output),
        (None, None) => 0,
    };
    finish(prog, child, own)
}

/// Meters rpv's stdin into the command; closes the pipe when done so the command sees EOF.
fn in_side(o: &Options, prog: &str, to_command: OwnedFd, setup: Setup) -> u8 {
    let code = app::transfer_to(o, prog, vec!["-".into()], to_command.as_fd(), setup);
    drop(to_command);
    code
}

/// Meters the command's stdout into rpv's output.
fn out_side(
    o: &Options,
    prog: &str,
    from_command: OwnedFd,
    output: &app::Output,
    setup: Setup,
) -> u8 {
    let setup = Setup {
        // The pipe's size is unknown; only `-s` or an output block device give one.
        size_from: Some(Vec::new()),
        ..setup
    };
    let operand = input::hand_over(from_command);
    app::transfer_to(o, prog, vec![operand], output.fd(), setup)
}

/// Both sides: the input side here, the output side on a second thread.
fn both(
    o: &Options,
    prog: &str,
    to_command: OwnedFd,
    from_command: OwnedFd,
    output: &app::Output,
) -> u8 {
    // `-N`/`-F` given twice: the earlier one is the input side's (spec 4.4).
    let in_options = Options {
        name: o.prev_name.clone().or_else(|| o.name.clone()),
        format: o.prev_format.clone().or_else(|| o.format.clone()),
        ..o.clone()
    };
    let in_count = Arc::new(AtomicU64::new(0));
    let out_count = Arc::new(AtomicU64::new(0));
    let in_setup = Setup {
        ratio: Some((Arc::clone(&in_count), Arc::clone(&out_count))),
        ..Setup::default()
    };
    let out_setup = Setup {
        // The input side answers -R/-Q for the process.
        no_control: true,
        ratio: Some((out_count, in_count)),
        ratio_suffix: o.format.is_none(),
        ..Setup::default()
    };
    std::thread::scope(|scope| {
        let out = scope.spawn(|| out_side(o, prog, from_command, output, out_setup));
        let in_code = in_side(&in_options, prog, to_command, in_setup);
        in_code | out.join().unwrap_or(status::TRANSFER)
    })
}

/// Waits for the command; the exit status is rpv's own if non-zero, else the command's.
fn finish(prog: &str, mut child: Child, own: u8) -> u8 {
    let command_code = match child.wait() {
        Ok(exit) => {
            use std::os::unix::process::ExitStatusExt;
            match (exit.code(), exit.signal()) {
                (Some(code), _) => (code & 0xff) as u8,
                (None, Some(signal)) => (128 + signal).min(255) as u8,
                (None, None) => 1,
            }
        }
        Err(e) => {
            eprintln!("{prog}: {}", sys::strerror(&e));
            status::REMOTE_OR_PID
        }
    };
    if own != 0 {
        own
    } else {
        command_code
    }
}
