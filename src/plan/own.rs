//! The files rpv writes for itself: `-P`'s pid file and `--metrics-file`, checked (kind,
//! clashes with each other and with the run's own files), then written before anything
//! else runs.
//!
//! Owns: the order of those checks and the first version of each file. Must not: decide
//! what the metrics say (the metrics sinks render them).

use std::path::Path;

use crate::cli::{Action, Options};
use crate::error::Error;
use crate::ownfile::{self, Own};
use crate::sink;
use crate::sys;

/// Checks `-P` and `--metrics-file` (`-R` writes no metrics file), then writes the pid
/// file and the metrics file's first version.
pub(super) fn write_own_files(o: &Options) -> Result<(), Error> {
    let pidfile = o.pidfile.as_deref().map(|path| Own {
        option: "-P",
        path,
        what: "pid",
    });
    let metrics = o
        .metrics_file
        .as_deref()
        .filter(|_| !matches!(o.action, Action::Remote(_)))
        .map(|path| Own {
            option: "--metrics-file",
            path,
            what: "metrics",
        });
    if let Some(own) = pidfile {
        ownfile::check_kind(own.option, own.path)?;
        ownfile::check_clashes(o, own, metrics.as_slice())?;
    }
    if let Some(own) = metrics {
        ownfile::check_kind(own.option, own.path)?;
        ownfile::check_clashes(o, own, &[])?;
    }
    if let Some(own) = pidfile {
        write_pidfile(own.path)?;
    }
    if let Some(own) = metrics {
        start_metrics(own.path, o)?;
    }
    Ok(())
}

/// `--metrics-file`: the first version of the file (nothing moved yet, not done), which
/// also tells at once whether its directory takes files.
fn start_metrics(path: &Path, o: &Options) -> Result<(), Error> {
    let pid = std::process::id();
    let state = sink::metrics::State {
        pid,
        start_time: None,
        done: false,
        exit: None,
    };
    let text = if o.action == Action::Top {
        let (secs, millis) = sys::unix_time_ms();
        let totals = crate::top::metrics::Totals {
            now: secs as f64 + f64::from(millis) / 1000.0,
            ..Default::default()
        };
        crate::top::metrics::render(&[], 0, false, &totals)
    } else {
        sink::metrics::render(None, o.name.as_deref().unwrap_or(""), state)
    };
    ownfile::replace(path, text.as_bytes()).map_err(|err| Error::OwnFile {
        option: Some("--metrics-file"),
        path: path.to_path_buf(),
        err,
    })
}

/// Writes `"<pid>\n"` to `path` atomically ([`ownfile::replace`]: only a regular file, or
/// nothing, is ever replaced; pv would rename over a device node) and registers it for
/// removal at exit (only if it is still that file then).
fn write_pidfile(path: &Path) -> Result<(), Error> {
    let text = format!("{}\n", std::process::id());
    let ours =
        ownfile::replace_identified(path, text.as_bytes()).map_err(|err| Error::OwnFile {
            option: None,
            path: path.to_path_buf(),
            err,
        })?;
    crate::cleanup::register(path.to_path_buf(), ours);
    Ok(())
}
