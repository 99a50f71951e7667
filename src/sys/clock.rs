//! Clocks and the C library's error texts.
//!
//! Owns: the monotonic clock in nanoseconds (also read by signal handlers), the wall clock
//! with the local UTC offset, and pv's wording of errno values. Must not: format times (the
//! `units` and `display` modules do).

use std::ffi::CStr;
use std::io;

/// The C library's message for an errno value, without Rust's " (os error N)" suffix, as pv
/// prints it (`No such file or directory`).
pub(crate) fn strerror(err: &io::Error) -> String {
    let Some(code) = err.raw_os_error() else {
        return err.to_string();
    };
    let mut buf = [0u8; 256];
    // SAFETY: the XSI strerror_r (what the libc crate binds) writes at most `buf.len()`
    // bytes, NUL included, into our buffer and touches no shared state.
    let rc = unsafe { libc::strerror_r(code, buf.as_mut_ptr().cast(), buf.len()) };
    // An unknown code still gets its text ("Unknown error N") along with EINVAL.
    match CStr::from_bytes_until_nul(&buf) {
        Ok(text) if !text.is_empty() => text.to_string_lossy().into_owned(),
        _ => format!("Unknown error {code} ({rc})"),
    }
}

/// Monotonic clock in nanoseconds. Async-signal-safe (a vDSO call once rustix has found the
/// vDSO, which `set_signal_handler` makes sure of before any handler runs).
pub fn monotonic_ns() -> u64 {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    let secs = u64::try_from(ts.tv_sec).unwrap_or(0);
    let nanos = u64::try_from(ts.tv_nsec).unwrap_or(0);
    secs * 1_000_000_000 + nanos
}

/// Wall clock: (seconds since the epoch, local UTC offset in seconds, from the time zone
/// rules the C library reads: `TZ`, else /etc/localtime).
pub(crate) fn wall_clock() -> (i64, i32) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
    (now, utc_offset(now))
}

/// Wall clock in UTC: (seconds since the epoch, milliseconds), for time stamps.
pub(crate) fn unix_time_ms() -> (i64, u32) {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    (
        i64::try_from(since.as_secs()).unwrap_or(i64::MAX),
        since.subsec_millis(),
    )
}

/// The local UTC offset at `now` (0 if the C library cannot tell).
fn utc_offset(now: i64) -> i32 {
    // time_t is i64 on 64-bit targets (the pattern cannot fail there), i32 on some others.
    #[allow(irrefutable_let_patterns)]
    let Ok(t) = libc::time_t::try_from(now) else {
        return 0;
    };
    let mut tm = libc::tm {
        tm_sec: 0,
        tm_min: 0,
        tm_hour: 0,
        tm_mday: 0,
        tm_mon: 0,
        tm_year: 0,
        tm_wday: 0,
        tm_yday: 0,
        tm_isdst: 0,
        tm_gmtoff: 0,
        tm_zone: std::ptr::null(),
    };
    // SAFETY: localtime_r reads one time_t and fills the `tm` we own; it is the thread-safe
    // variant (no shared static result).
    let filled = unsafe { libc::localtime_r(&t, &mut tm) };
    if filled.is_null() {
        0
    } else {
        i32::try_from(tm.tm_gmtoff).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strerror_is_the_c_library_text_without_rusts_suffix() {
        let e = io::Error::from_raw_os_error(libc::ENOENT);
        assert_eq!(strerror(&e), "No such file or directory");
        let e = io::Error::from_raw_os_error(libc::EPIPE);
        assert_eq!(strerror(&e), "Broken pipe");
        let custom = io::Error::other("plain words");
        assert_eq!(strerror(&custom), "plain words");
    }

    #[cfg(target_env = "gnu")]
    #[test]
    fn strerror_of_an_unknown_code_is_glibcs_text() {
        let e = io::Error::from_raw_os_error(9999);
        assert_eq!(strerror(&e), "Unknown error 9999");
    }

    #[test]
    fn monotonic_clock_moves_forward() {
        let a = monotonic_ns();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = monotonic_ns();
        assert!(b >= a + 2_000_000, "{a} {b}");
    }

    #[test]
    fn wall_clock_agrees_with_std() {
        let std_now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        let (now, offset) = wall_clock();
        assert!((now - std_now).abs() <= 1, "{now} {std_now}");
        assert!(offset.abs() <= 14 * 3600, "{offset}");
    }
}
