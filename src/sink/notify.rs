//! The systemd sink: when rpv runs in a service (`NOTIFY_SOCKET` set), its progress is the
//! service's status line, so `systemctl status backup.service` shows where a backup stands.
//!
//! Owns: the notification socket ([`Notifier`], made once by the plan from `NOTIFY_SOCKET`:
//! a path, or `@name` for an abstract socket) and the status texts: `STATUS=` with the
//! percentage, amount, rate and ETA at each update, and a final status (done, interrupted,
//! or failed with the last error) at the end. A send that fails (no listener, a full queue:
//! the socket is non-blocking) is dropped: the transfer never waits for systemd. systemd
//! takes the status only from processes its `NotifyAccess=` allows (`all` when rpv is not
//! the service's main process). Must not: send anything but `STATUS=` (rpv is not the
//! service's daemon: no `READY=1`).

use std::ffi::OsStr;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::sync::Arc;

use super::line::is_line;
use super::report::SharedFinals;
use super::{DisplayConfig, Reading, Sink, Snapshot};
use crate::error::status;
use crate::meter::Event;
use crate::units::{self, CountKind};

/// A datagram socket to systemd's notification socket.
#[derive(Debug)]
pub(crate) struct Notifier {
    socket: UnixDatagram,
    address: SocketAddr,
}

impl Notifier {
    /// From `NOTIFY_SOCKET` (read once): `None` if it is unset, empty, of a kind rpv does not
    /// speak (`vsock:`), or no socket can be made.
    pub(crate) fn from_env() -> Option<Notifier> {
        Notifier::new(&std::env::var_os("NOTIFY_SOCKET")?)
    }

    /// A notifier for the address `value`: an absolute path, or `@name` (abstract).
    pub(crate) fn new(value: &OsStr) -> Option<Notifier> {
        let bytes = value.as_bytes();
        let address = match bytes.split_first() {
            Some((b'@', name)) => SocketAddr::from_abstract_name(name).ok()?,
            Some((b'/', _)) => SocketAddr::from_pathname(value).ok()?,
            _ => return None,
        };
        let socket = UnixDatagram::unbound().ok()?;
        socket.set_nonblocking(true).ok()?;
        Some(Notifier { socket, address })
    }

    /// Sends `STATUS=text` (one line); a failure is ignored.
    pub(crate) fn status(&self, text: &str) {
        let message = format!("STATUS={}", text.replace('\n', " "));
        let _ = self.socket.send_to_addr(message.as_bytes(), &self.address);
    }
}

/// An amount as text: `1.23GiB`, `512 B`, `12.0k lines`.
fn amount(value: f64, kind: CountKind) -> String {
    let text = match kind {
        CountKind::Lines => format!("{} lines", units::describe_amount(value, kind, "").trim()),
        _ => units::describe_amount(value, kind, "B"),
    };
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A rate as text: `120MiB/s`, `12.0k lines/s`.
fn rate(value: f64, kind: CountKind) -> String {
    format!("{}/s", amount(value, kind))
}

/// `NAME: ` for a named transfer.
fn lead(config: &DisplayConfig, r: &Reading<'_>) -> String {
    config
        .label(r.meter)
        .map(|name| format!("{name}: "))
        .unwrap_or_default()
}

/// The amount so far, and the size when known: `1.20GiB of 2.93GiB`.
fn so_far(r: &Reading<'_>, kind: CountKind) -> String {
    let m = r.meter;
    if m.size > 0 {
        format!(
            "{} of {}",
            amount(m.amount as f64, kind),
            amount(m.size as f64, kind)
        )
    } else {
        amount(m.amount as f64, kind)
    }
}

/// The status during the run: `backup: 42% 1.23GiB of 2.93GiB, 120MiB/s, ETA 0:00:14`
/// (size known), `1.23GiB, 120MiB/s` (unknown), `…, stalled for 0:00:12`.
pub(crate) fn progress_text(config: &DisplayConfig, r: &Reading<'_>) -> String {
    let m = r.meter;
    let kind = config.style.kind(m.unit);
    let mut out = lead(config, r);
    if m.size > 0 {
        out.push_str(&format!(
            "{:.0}% ",
            r.rates.percentage.clamp(0.0, 100.0).floor()
        ));
    }
    out.push_str(&so_far(r, kind));
    if let Some(stalled) = r.stalled_for {
        out.push_str(&format!(", stalled for {}", units::format_elapsed(stalled)));
        return out;
    }
    out.push_str(&format!(", {}", rate(r.rates.rate, kind)));
    if let Some(left) = r.eta() {
        out.push_str(&format!(", ETA {}", units::format_eta(left.round() as u64)));
    }
    out
}

/// The status at the end: `done, 2.93GiB in 0:00:25 (117MiB/s)`, `interrupted after …`, or
/// `failed (status 16): write failed: No space left on device; 1.20GiB of 2.93GiB in
/// 0:00:10`.
#[cfg(test)]
fn final_text(
    config: &DisplayConfig,
    r: Option<&Reading<'_>>,
    exit: u8,
    error: Option<&str>,
) -> String {
    Ending::of(config, r).text(exit, error)
}

/// What the final status says, but the exit status and the error: the name, and the amount,
/// time and average rate of the run.
#[derive(Debug, Clone)]
struct Ending {
    lead: String,
    figures: Option<(String, String, String)>,
}

impl Ending {
    fn of(config: &DisplayConfig, r: Option<&Reading<'_>>) -> Ending {
        let figures = r.map(|r| {
            let kind = config.style.kind(r.meter.unit);
            let time = units::format_elapsed(r.elapsed);
            (so_far(r, kind), time, rate(r.rates.avg_rate, kind))
        });
        let lead = r.map(|r| lead(config, r)).unwrap_or_default();
        Ending { lead, figures }
    }

    fn text(self, exit: u8, error: Option<&str>) -> String {
        let Ending {
            lead: mut out,
            figures,
        } = self;
        match (exit, figures) {
            (0, Some((moved, time, avg))) => {
                out.push_str(&format!("done, {moved} in {time} ({avg})"))
            }
            (0, None) => out.push_str("done"),
            (status::SIGNAL, Some((moved, time, _))) => {
                out.push_str(&format!("interrupted after {moved} in {time}"));
            }
            (status::SIGNAL, None) => out.push_str("interrupted"),
            (exit, figures) => {
                out.push_str(&format!("failed (status {exit})"));
                if let Some(error) = error {
                    out.push_str(&format!(": {error}"));
                }
                if let Some((moved, time, _)) = figures {
                    out.push_str(&format!("; {moved} in {time}"));
                }
            }
        }
        out
    }
}

/// The reading the status is about: the transfer (or the first meter).
fn main_reading<'s>(snapshot: &'s Snapshot<'_>) -> Option<&'s Reading<'s>> {
    snapshot
        .readings
        .iter()
        .find(|r| is_line(r.meter.role))
        .or(snapshot.readings.first())
}

/// Progress as the systemd service's status.
#[derive(Debug)]
pub(crate) struct Notify {
    notifier: Arc<Notifier>,
    /// The last error reported (for the final status).
    error: Option<String>,
    /// Where the final status goes, once rpv knows its exit status.
    finals: SharedFinals,
}

impl Notify {
    /// A sink sending through `notifier`; the final status, with the status rpv exits
    /// with, is left in `finals`.
    pub(crate) fn new(notifier: Arc<Notifier>, finals: SharedFinals) -> Notify {
        Notify {
            notifier,
            error: None,
            finals,
        }
    }
}

impl Sink for Notify {
    fn event(&mut self, event: &Event, _config: &DisplayConfig, _term: &mut crate::term::Term) {
        match event {
            Event::Error(e) | Event::InputFailed { error: e, .. } if e.exit_bits() != 0 => {
                self.error = Some(e.to_string());
            }
            _ => {}
        }
    }

    fn update(
        &mut self,
        snapshot: &Snapshot<'_>,
        config: &DisplayConfig,
        _term: &mut crate::term::Term,
    ) {
        if snapshot.final_update {
            return;
        }
        if let Some(r) = main_reading(snapshot) {
            self.notifier.status(&progress_text(config, r));
        }
    }

    fn finish(
        &mut self,
        snapshot: &Snapshot<'_>,
        config: &DisplayConfig,
        _term: &mut crate::term::Term,
    ) {
        let ending = Ending::of(config, main_reading(snapshot));
        let (notifier, error) = (Arc::clone(&self.notifier), self.error.clone());
        // The status rpv exits with (a `-M` command's) is known only once it has ended.
        self.finals.borrow_mut().set(
            "notify",
            Box::new(move |status| notifier.status(&ending.text(status, error.as_deref()))),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meter::{MeterState, Role, Unit};
    use crate::stats::{RateTracker, Rates};

    fn reading<'a>(
        meter: &'a MeterState,
        tracker: &'a RateTracker,
        rates: Rates,
        stalled_for: Option<f64>,
    ) -> Reading<'a> {
        Reading {
            meter,
            elapsed: 25.0,
            rates,
            tracker,
            final_update: false,
            stalled_for,
        }
    }

    fn meter(amount: u64, size: u64, unit: Unit) -> MeterState {
        MeterState {
            role: Role::Transfer,
            unit,
            amount,
            moved: amount,
            size,
            ..MeterState::default()
        }
    }

    #[test]
    fn progress_texts() {
        let tracker = RateTracker::new(30);
        let gib = 1u64 << 30;
        let m = meter(gib + gib / 4, 3 * gib, Unit::Bytes);
        let rates = Rates {
            rate: 120.0 * 1048576.0,
            avg_rate: 128.0 * 1048576.0,
            percentage: 41.7,
            max_rate: 0.0,
        };
        let config = DisplayConfig {
            name: Some("backup".into()),
            ..DisplayConfig::default()
        };
        assert_eq!(
            progress_text(&config, &reading(&m, &tracker, rates, None)),
            "backup: 41% 1.25GiB of 3.00GiB, 120MiB/s, ETA 0:00:14"
        );
        let unnamed = DisplayConfig::default();
        assert_eq!(
            progress_text(&unnamed, &reading(&m, &tracker, rates, Some(12.4))),
            "41% 1.25GiB of 3.00GiB, stalled for 0:00:12"
        );
        let m = meter(512, 0, Unit::Bytes);
        let slow = Rates {
            rate: 100.0,
            ..rates
        };
        assert_eq!(
            progress_text(&unnamed, &reading(&m, &tracker, slow, None)),
            "512 B, 100 B/s"
        );
        let m = meter(12_000, 0, Unit::Lines);
        assert_eq!(
            progress_text(&unnamed, &reading(&m, &tracker, slow, None)),
            "12.0k lines, 100 lines/s"
        );
    }

    #[test]
    fn final_texts() {
        let tracker = RateTracker::new(30);
        let m = meter(3 << 30, 3 << 30, Unit::Bytes);
        let rates = Rates {
            rate: 0.0,
            avg_rate: 120.0 * 1048576.0,
            percentage: 100.0,
            max_rate: 0.0,
        };
        let r = reading(&m, &tracker, rates, None);
        let config = DisplayConfig::default();
        assert_eq!(
            final_text(&config, Some(&r), 0, None),
            "done, 3.00GiB of 3.00GiB in 0:00:25 (120MiB/s)"
        );
        assert_eq!(
            final_text(&config, Some(&r), status::SIGNAL, None),
            "interrupted after 3.00GiB of 3.00GiB in 0:00:25"
        );
        assert_eq!(
            final_text(
                &config,
                Some(&r),
                16,
                Some("write failed: No space left on device")
            ),
            "failed (status 16): write failed: No space left on device; 3.00GiB of 3.00GiB \
             in 0:00:25"
        );
        assert_eq!(final_text(&config, None, 1, None), "failed (status 1)");
    }

    #[test]
    fn addresses() {
        assert!(Notifier::new("/run/systemd/notify".as_ref()).is_some());
        assert!(Notifier::new("@/org/freedesktop/systemd1/notify/1".as_ref()).is_some());
        assert!(Notifier::new("".as_ref()).is_none());
        assert!(Notifier::new("vsock:2:1234".as_ref()).is_none());
        assert!(Notifier::new("relative/path".as_ref()).is_none());
    }
}
