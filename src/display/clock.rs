//! Wall-clock text for `%I`, `--log` and `--json`, without libc: the caller passes Unix
//! seconds and the UTC offset, and the calendar math happens here (so rendering stays pure).
//! One calendar for all three: `%I` shows local time, `--log` ISO 8601 local time with its
//! UTC offset, `--json` RFC 3339 UTC with milliseconds.

/// Seconds in a day.
const DAY: i64 = 86_400;

/// `HH:MM:SS`, or `YYYY-MM-DD HH:MM:SS` when `with_date`, for Unix time `secs` shifted by
/// `utc_offset` seconds.
pub(crate) fn local_time_text(secs: i64, utc_offset: i32, with_date: bool) -> String {
    let local = secs.saturating_add(i64::from(utc_offset));
    let of_day = local.rem_euclid(DAY);
    let time = format!(
        "{:02}:{:02}:{:02}",
        of_day / 3600,
        of_day / 60 % 60,
        of_day % 60
    );
    if !with_date {
        return time;
    }
    let (year, month, day) = civil_from_days(local.div_euclid(DAY));
    format!("{year}-{month:02}-{day:02} {time}")
}

/// ISO 8601 / RFC 3339 date and time of Unix time `secs` (+ `millis` ms):
/// `2026-11-24T11:08:05+01:00` in local time at `Some(utc_offset)` seconds, or
/// `2026-11-24T10:08:05.123Z` in UTC for `None`; the milliseconds are shown when given.
pub(crate) fn iso8601(secs: i64, millis: Option<u32>, utc_offset: Option<i32>) -> String {
    let offset = utc_offset.unwrap_or(0);
    let local = secs.saturating_add(i64::from(offset));
    let (year, month, day) = civil_from_days(local.div_euclid(DAY));
    let of_day = local.rem_euclid(DAY);
    let mut text = format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}",
        of_day / 3600,
        of_day / 60 % 60,
        of_day % 60
    );
    if let Some(ms) = millis {
        text.push_str(&format!(".{:03}", ms.min(999)));
    }
    match utc_offset {
        None => text.push('Z'),
        Some(offset) => {
            let sign = if offset < 0 { '-' } else { '+' };
            let minutes = offset.unsigned_abs() / 60;
            text.push_str(&format!("{sign}{:02}:{:02}", minutes / 60, minutes % 60));
        }
    }
    text
}

/// Proleptic Gregorian (year, month, day) of a count of days since 1970-01-01
/// (Howard Hinnant's public-domain `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calendar_dates() {
        let table: &[(i64, (i64, i64, i64))] = &[
            (0, (1970, 1, 1)),
            (-1, (1969, 12, 31)),
            (59, (1970, 3, 1)),
            (11_016, (2000, 2, 29)),
            (11_017, (2000, 3, 1)),
            (19_782, (2024, 2, 29)),
            (20_000, (2024, 10, 4)),
        ];
        for &(days, want) in table {
            assert_eq!(civil_from_days(days), want, "{days}");
        }
    }

    #[test]
    fn local_times() {
        // 2024-10-04 13:45:30 UTC.
        let t = 20_000 * DAY + 13 * 3600 + 45 * 60 + 30;
        assert_eq!(local_time_text(t, 0, false), "13:45:30");
        assert_eq!(local_time_text(t, 7200, false), "15:45:30");
        assert_eq!(local_time_text(t, 0, true), "2024-10-04 13:45:30");
        assert_eq!(local_time_text(t, 11 * 3600, true), "2024-10-05 00:45:30");
        assert_eq!(local_time_text(t, -14 * 3600, true), "2024-10-03 23:45:30");
    }

    #[test]
    fn iso8601_times_carry_their_offset_or_z() {
        // 2024-10-04 13:45:30 UTC.
        let t = 20_000 * DAY + 13 * 3600 + 45 * 60 + 30;
        assert_eq!(iso8601(t, Some(7), None), "2024-10-04T13:45:30.007Z");
        assert_eq!(iso8601(t, None, Some(0)), "2024-10-04T13:45:30+00:00");
        assert_eq!(iso8601(t, None, Some(7200)), "2024-10-04T15:45:30+02:00");
        assert_eq!(iso8601(t, None, Some(-9000)), "2024-10-04T11:15:30-02:30");
        assert_eq!(
            iso8601(t, Some(999), Some(11 * 3600)),
            "2024-10-05T00:45:30.999+11:00"
        );
        assert_eq!(iso8601(-1, Some(0), None), "1969-12-31T23:59:59.000Z");
    }
}
