//! Property tests of the `-R`/`-Q` wire protocol (pure functions; kept apart from the
//! module so they move with it): decoding anything never panics, a refused request always
//! says why, and what the client encodes the server decodes to the same thing.

use proptest::prelude::*;

use super::*;
use crate::display::DisplaySwitches;
use crate::units::Unit;

fn switches() -> impl Strategy<Value = DisplaySwitches> {
    (any::<[bool; 8]>(), any::<u32>()).prop_map(|(b, last_written)| DisplaySwitches {
        progress: b[0],
        timer: b[1],
        eta: b[2],
        fineta: b[3],
        rate: b[4],
        average_rate: b[5],
        bytes: b[6],
        buffer_percent: b[7],
        last_written,
        ..DisplaySwitches::default()
    })
}

fn changes() -> impl Strategy<Value = Changes> {
    use prop::option::of;
    (
        of(switches()),
        (of(any::<u64>()), of(any::<u64>()), of(any::<u64>())),
        of(0.1..=600.0f64),
        (of(any::<u32>()), of(any::<u32>())),
        (
            of(any::<String>()),
            of(any::<String>()),
            of(any::<String>()),
        ),
    )
        .prop_map(
            |(switches, (rate_limit, buffer_size, size), interval, (width, height), texts)| {
                Changes {
                    switches,
                    rate_limit,
                    buffer_size,
                    size,
                    interval,
                    width,
                    height,
                    name: texts.0,
                    format: texts.1,
                    extra_display: texts.2,
                }
            },
        )
}

/// Request lines a client (or anyone able to connect) might send: mostly well-formed
/// fields with odd values, some garbage.
fn request_lines() -> impl Strategy<Value = Vec<String>> {
    let key = prop::sample::select(vec![
        "switches",
        "last_written",
        "rate_limit",
        "buffer_size",
        "size",
        "width",
        "height",
        "interval",
        "name",
        "format",
        "extra_display",
        "unknown",
        "",
    ]);
    let value = prop_oneof![
        any::<String>(),
        "-?[0-9]{0,30}(\\.[0-9]{0,10})?(e[+-]?[0-9]{1,4})?",
        prop::sample::select(vec!["NaN", "inf", "-inf", "1e309", "18446744073709551616"])
            .prop_map(str::to_owned),
    ];
    let field = prop_oneof![
        4 => (key, value).prop_map(|(k, v)| format!("{k}={v}")),
        1 => any::<String>(),
    ];
    let kind = prop_oneof![
        Just("set".to_string()),
        Just("query".to_string()),
        any::<String>()
    ];
    (kind, prop::collection::vec(field, 0..12)).prop_map(|(kind, mut fields)| {
        fields.insert(0, kind);
        fields
    })
}

proptest! {
    #![proptest_config(crate::proptest_cases::config(2000))]

    #[test]
    fn any_request_decodes_or_is_refused_with_a_reason(lines in request_lines(), cut in 0..3usize) {
        let lines = &lines[..lines.len().saturating_sub(cut).max(usize::from(cut == 0))];
        match decode_request(lines) {
            Ok(Request::Set(c)) => {
                if let Some(i) = c.interval {
                    prop_assert!((0.1..=600.0).contains(&i));
                }
            }
            Ok(Request::Query) => {}
            Err(reason) => prop_assert!(!reason.is_empty()),
        }
    }

    #[test]
    fn requests_survive_the_wire(c in changes(), query in any::<bool>()) {
        let request = if query { Request::Query } else { Request::Set(c) };
        let text = encode_request(&request);
        let lines: Vec<String> = text.lines().map(String::from).collect();
        prop_assert_eq!(lines.last().map(String::as_str), Some("end"));
        let decoded = decode_request(&lines[..lines.len() - 1]);
        prop_assert_eq!(decoded, Ok(request));
    }

    #[test]
    fn any_reply_line_decodes_or_is_refused(line in prop_oneof![
        any::<String>(),
        "state( (elapsed|transferred|size|unit|transfer)=-?[0-9a-z.e+]{0,25}){0,5} ?",
    ]) {
        if let Some(Reply::State { elapsed, .. }) = decode_reply(&line) {
            prop_assert!(elapsed.is_finite());
        }
    }

    #[test]
    fn replies_survive_the_wire(
        elapsed in prop_oneof![0.0..1e9f64, Just(0.0)],
        transferred in any::<u64>(),
        size in any::<u64>(),
        lines in any::<bool>(),
        transfer in any::<bool>(),
    ) {
        prop_assert_eq!(decode_reply(&encode_reply(&Reply::Done)), Some(Reply::Done));
        let unit = if lines { Unit::Lines } else { Unit::Bytes };
        let reply = Reply::State { elapsed, transferred, size, unit, transfer };
        match decode_reply(&encode_reply(&reply)) {
            Some(Reply::State { elapsed: e, transferred: t, size: s, unit: u, transfer: x }) => {
                prop_assert!((e - elapsed).abs() <= 1e-6 * elapsed.max(1.0), "{e} {elapsed}");
                prop_assert_eq!((t, s, u, x), (transferred, size, unit, transfer));
            }
            other => prop_assert!(false, "{other:?}"),
        }
    }
}
