//! Local wall-clock text for `%I`, without libc: the caller passes Unix seconds
//! and the UTC offset, and the calendar math happens here (so rendering stays pure).

/// Seconds in a day.
const DAY: i64 = 86_400;

/// `HH:MM:SS`, or `YYYY-MM-DD HH:MM:SS` when `with_date`, for Unix time `secs` shifted by
/// `utc_offset` seconds.
pub fn local_time_text(secs: i64, utc_offset: i32, with_date: bool) -> String {
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
}
