//! The control channel's text protocol (pure): requests and replies to and from their wire
//! text.

use super::{Changes, Reply, Request};
use crate::display::DisplaySwitches;
use crate::units::Unit;

pub(crate) fn escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
    out
}

fn unescape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

/// The wire text of a request, ending with `end\n`.
pub(crate) fn encode_request(request: &Request) -> String {
    let mut out = String::new();
    match request {
        Request::Query => out.push_str("query\n"),
        Request::Set(c) => {
            out.push_str("set\n");
            if let Some(sw) = &c.switches {
                let letters = sw.letters();
                out.push_str(&format!(
                    "switches={letters}\nlast_written={}\n",
                    sw.last_written
                ));
            }
            let numbers = [
                ("rate_limit", c.rate_limit),
                ("buffer_size", c.buffer_size),
                ("size", c.size),
                ("width", c.width.map(u64::from)),
                ("height", c.height.map(u64::from)),
            ];
            for (key, value) in numbers {
                if let Some(v) = value {
                    out.push_str(&format!("{key}={v}\n"));
                }
            }
            if let Some(i) = c.interval {
                out.push_str(&format!("interval={i}\n"));
            }
            let texts = [
                ("name", &c.name),
                ("format", &c.format),
                ("extra_display", &c.extra_display),
            ];
            for (key, value) in texts {
                if let Some(v) = value {
                    out.push_str(&format!("{key}={}\n", escape(v)));
                }
            }
        }
    }
    out.push_str("end\n");
    out
}

/// Parses a request from its lines (without `end`).
pub(crate) fn decode_request(lines: &[String]) -> Result<Request, String> {
    let Some((kind, fields)) = lines.split_first() else {
        return Err("empty request".into());
    };
    match kind.as_str() {
        "query" => return Ok(Request::Query),
        "set" => {}
        other => return Err(format!("unknown request: {other}")),
    }
    let mut c = Changes::default();
    for field in fields {
        let Some((key, value)) = field.split_once('=') else {
            return Err(format!("bad field: {field}"));
        };
        let number = || {
            value
                .parse::<u64>()
                .map_err(|_| format!("bad number: {field}"))
        };
        let small = || {
            value
                .parse::<u32>()
                .map_err(|_| format!("bad number: {field}"))
        };
        match key {
            "switches" => {
                let last = c.switches.map_or(0, |s| s.last_written);
                c.switches = Some(DisplaySwitches {
                    last_written: last,
                    ..DisplaySwitches::from_letters(value)
                });
            }
            "last_written" => {
                c.switches
                    .get_or_insert_with(DisplaySwitches::default)
                    .last_written = small()?;
            }
            "rate_limit" => c.rate_limit = Some(number()?),
            "buffer_size" => c.buffer_size = Some(number()?),
            "size" => c.size = Some(number()?),
            "width" => c.width = Some(small()?),
            "height" => c.height = Some(small()?),
            "interval" => {
                let i: f64 = value.parse().map_err(|_| format!("bad number: {field}"))?;
                if !i.is_finite() {
                    return Err(format!("bad number: {field}"));
                }
                c.interval = Some(i.clamp(0.1, 600.0));
            }
            "name" => c.name = Some(unescape(value)),
            "format" => c.format = Some(unescape(value)),
            "extra_display" => c.extra_display = Some(unescape(value)),
            _ => {}
        }
    }
    Ok(Request::Set(c))
}

/// The wire text of a reply.
pub(crate) fn encode_reply(reply: &Reply) -> String {
    match reply {
        Reply::Done => "ok\n".into(),
        Reply::State {
            elapsed,
            transferred,
            size,
            unit,
            transfer,
        } => {
            let unit = match unit {
                Unit::Bytes => "bytes",
                Unit::Lines => "lines",
            };
            let transfer = u8::from(*transfer);
            format!(
                "state elapsed={elapsed:.6} transferred={transferred} size={size} unit={unit} \
                 transfer={transfer}\n"
            )
        }
    }
}

/// Parses a reply line. Fields it does not know are skipped, so an rpv that adds one can
/// still be queried; a reply without a unit (from an rpv older than that field) counts
/// bytes, and one with a unit it does not know is refused; one that does not say whether
/// its rpv runs a transfer is a transfer's (older rpvs answered only then with figures of
/// their own).
pub(crate) fn decode_reply(line: &str) -> Option<Reply> {
    let line = line.trim_end();
    if line == "ok" {
        return Some(Reply::Done);
    }
    let fields = line.strip_prefix("state ")?;
    let (mut elapsed, mut transferred, mut size, mut unit) = (None, None, None, Some(Unit::Bytes));
    let mut transfer = true;
    for field in fields.split(' ') {
        match field.split_once('=')? {
            ("elapsed", v) => elapsed = v.parse::<f64>().ok().filter(|e| e.is_finite()),
            ("transferred", v) => transferred = v.parse().ok(),
            ("size", v) => size = v.parse().ok(),
            ("unit", "bytes") => unit = Some(Unit::Bytes),
            ("unit", "lines") => unit = Some(Unit::Lines),
            ("unit", _) => unit = None,
            ("transfer", v) => transfer = v != "0",
            _ => {}
        }
    }
    Some(Reply::State {
        elapsed: elapsed?,
        transferred: transferred?,
        size: size?,
        unit: unit?,
        transfer,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_round_trip() {
        let c = Changes {
            switches: Some(DisplaySwitches {
                progress: true,
                bytes: true,
                last_written: 7,
                ..DisplaySwitches::default()
            }),
            rate_limit: Some(0),
            buffer_size: Some(4096),
            size: Some(123),
            interval: Some(0.5),
            width: Some(60),
            height: Some(10),
            name: Some("a\\b\nc=d".into()),
            format: Some(String::new()),
            extra_display: None,
        };
        let text = encode_request(&Request::Set(c.clone()));
        let lines: Vec<String> = text.lines().map(String::from).collect();
        assert_eq!(lines.last().map(String::as_str), Some("end"));
        let decoded = decode_request(&lines[..lines.len() - 1]).unwrap();
        assert_eq!(decoded, Request::Set(c));
        assert_eq!(
            decode_request(&["query".to_string()]).unwrap(),
            Request::Query
        );
        assert!(decode_request(&["set".into(), "rate_limit=x".into()]).is_err());
        assert!(decode_request(&["bogus".into()]).is_err());
    }

    #[test]
    fn empty_set_changes_nothing() {
        let text = encode_request(&Request::Set(Changes::default()));
        assert_eq!(text, "set\nend\n");
    }

    #[test]
    fn replies_round_trip() {
        let r = Reply::State {
            elapsed: 1.25,
            transferred: 99,
            size: 0,
            unit: Unit::Lines,
            transfer: false,
        };
        assert_eq!(decode_reply(&encode_reply(&r)), Some(r));
        assert_eq!(decode_reply("ok\n"), Some(Reply::Done));
        assert_eq!(decode_reply("state elapsed=inf transferred=1 size=2"), None);
        assert_eq!(decode_reply("garbage"), None);
    }

    #[test]
    fn a_reply_names_its_unit_and_one_without_counts_bytes() {
        let state = |unit| Reply::State {
            elapsed: 1.0,
            transferred: 7,
            size: 9,
            unit,
            transfer: true,
        };
        assert_eq!(
            encode_reply(&state(Unit::Lines)),
            "state elapsed=1.000000 transferred=7 size=9 unit=lines transfer=1\n"
        );
        // A watch says it is one; an rpv from before that field ran a transfer.
        let watch = "state elapsed=1 transferred=0 size=0 unit=bytes transfer=0";
        assert!(matches!(
            decode_reply(watch),
            Some(Reply::State {
                transfer: false,
                ..
            })
        ));
        // An rpv from before the unit was sent.
        let old = "state elapsed=1.000000 transferred=7 size=9\n";
        assert_eq!(decode_reply(old), Some(state(Unit::Bytes)));
        let lines = "state elapsed=1 transferred=7 size=9 unit=lines";
        assert_eq!(decode_reply(lines), Some(state(Unit::Lines)));
        // A unit this rpv cannot show is refused, not shown as bytes.
        assert_eq!(
            decode_reply("state elapsed=1 transferred=7 size=9 unit=furlongs"),
            None
        );
    }
}

#[cfg(test)]
#[path = "protocol_proptests.rs"]
mod proptests;
