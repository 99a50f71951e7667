//! Rendering a [`Format`] for one [`Frame`] at a width.
//!
//! Owns the layout (static parts first, then expanding components sharing what is left) and
//! one render function per component. Must not: read clocks or counters, or write anything;
//! the `\r`/`\n` and the padding of a line that got shorter are added by the terminal writer.
//!
//! Deliberate differences from pv 1.11 (for docs/compatibility.md):
//! * A bar at 100 % is completely full, with no `>` tip in its last cell;
//!   the tip still shows below 100 % and at 0 % (see `bar.rs`).
//! * Control characters (e.g. a TAB) in a format count as zero columns instead of making
//!   every expanding component vanish (see `width.rs`).
//! * Numeric mode with `-l -8` does not multiply line counts and line rates by 8: bits
//!   only apply to bytes.
//! * Sub-unit rates are not shown with `m`/`u` prefixes (see `units.rs`).
//! * A trailing `%` or unterminated `%{name` is plain literal text, never a NUL byte
//!   (see `format.rs`).

use super::bar::{render_amount_only, render_bar};
use super::clock::local_time_text;
use super::width::{cut_to_width, display_width};
use super::{BufferFill, Format, Frame, Segment};
use crate::units::{describe_amount, format_elapsed, format_eta, format_g, CountKind};

/// Times (elapsed, ETA) are clamped to this many seconds.
const MAX_SECONDS: f64 = 360_000_000.0;
/// `%I` shows the date as well when the finish is further away than this (6 hours).
const FINETA_DATE_AFTER: u64 = 21_600;
/// `%A` shows at most this many bytes.
const MAX_LAST_WRITTEN: usize = 256;
/// `%L` shows at most this many bytes.
const MAX_PREVIOUS_LINE: usize = 1024;
/// `%N`: default alignment width, and the maximum for width and name length.
const NAME_WIDTH: usize = 9;
/// See [`NAME_WIDTH`].
const NAME_MAX: usize = 500;
/// pv closes an SGR escape after this many codes and opens another.
const SGR_CODES_PER_ESCAPE: usize = 16;

/// Renders one display line (without the trailing `\r`/`\n` and without shrink padding,
/// which the terminal writer adds). Pure: same inputs, same output.
///
/// Outside numeric mode the line never gets wider than `width` (pv lets it overflow, so a
/// narrow terminal wraps and scrolls at every update), and the percentage is the last thing
/// to go (pv drops the bar and its percentage together once the bar no longer fits). When
/// the line does not fit, or a known percentage would vanish, these give way one after the
/// other until it fits (see `FIT_ORDER`):
/// 1. the bars: `%p` shows its percentage alone (a bouncing bar for an unknown size stays,
///    as wide as what is left), the other bars go;
/// 2. `%A` and `%L`, then `%T`, `%I`, `%a`;
/// 3. the alignment padding of `%N`;
/// 4. `%t`, `%{ratio}`, `%r`, `%b`;
/// 5. the name (`%N`), then `%e`;
/// 6. the percentage (`%p`, `%{progress-amount-only}`);
/// 7. then whatever is left (literal text, a long name) is cut at the width.
///
/// Of several components of one kind, the last gives way first. A component that gives way
/// takes one neighbouring blank separator with it.
pub(crate) fn render(format: &Format, frame: &Frame, width: usize) -> String {
    let segments = &format.segments;
    let mut levels = vec![Level::Full; segments.len()];
    let mut rule = 0;
    loop {
        let (line, lost_percentage) = layout(format, frame, width, &levels);
        if frame.numeric || (display_width(&line) <= width && !lost_percentage) {
            return line;
        }
        // One more segment gives way: the last one the current rule still applies to.
        loop {
            let Some(&(applies, level)) = FIT_ORDER.get(rule) else {
                return cut_to_width(&line, width);
            };
            let next = (0..segments.len())
                .rev()
                .find(|&i| applies(&segments[i]) && levels[i] < level);
            if let Some(i) = next {
                levels[i] = level;
                if level == Level::Dropped {
                    drop_separator(segments, &mut levels, i);
                }
                break;
            }
            rule += 1;
        }
    }
}

/// How much of a segment is shown while a line is fitted to the width.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Level {
    /// As the format asks.
    Full,
    /// Shorter: `%p` as its percentage alone, `%N` without alignment padding.
    Short,
    /// Not shown.
    Dropped,
}

/// What gives way, in order, when a line does not fit (see [`render`]): segments a rule
/// applies to go down to its level.
type FitRule = (fn(&Segment) -> bool, Level);

/// The order in which components give way to keep a line within the width.
const FIT_ORDER: &[FitRule] = &[
    (|s| matches!(s, Segment::Progress { .. }), Level::Short),
    (|s| matches!(s, Segment::BarOnly { .. }), Level::Dropped),
    (
        |s| {
            matches!(
                s,
                Segment::LastWritten { .. } | Segment::PreviousLine { .. }
            )
        },
        Level::Dropped,
    ),
    (
        |s| matches!(s, Segment::BufferPercent | Segment::Bottleneck),
        Level::Dropped,
    ),
    (|s| matches!(s, Segment::FinEta), Level::Dropped),
    (|s| matches!(s, Segment::AverageRate), Level::Dropped),
    (|s| matches!(s, Segment::Name { .. }), Level::Short),
    (|s| matches!(s, Segment::Timer), Level::Dropped),
    (|s| matches!(s, Segment::Ratio), Level::Dropped),
    (|s| matches!(s, Segment::Rate), Level::Dropped),
    (|s| matches!(s, Segment::Bytes), Level::Dropped),
    (|s| matches!(s, Segment::Name { .. }), Level::Dropped),
    (|s| matches!(s, Segment::Eta), Level::Dropped),
    (
        |s| matches!(s, Segment::Progress { .. } | Segment::ProgressAmount),
        Level::Dropped,
    ),
];

/// Drops the blank literal that separates segment `i` from its neighbours: the one after
/// it, or, for the last component, the one before it.
fn drop_separator(segments: &[Segment], levels: &mut [Level], i: usize) {
    let blank = |j: usize| {
        matches!(&segments[j], Segment::Literal(t) if t.trim().is_empty())
            && levels[j] != Level::Dropped
    };
    let after = (i + 1..segments.len()).find(|&j| !matches!(segments[j], Segment::Sgr { .. }));
    let before = (0..i)
        .rev()
        .find(|&j| !matches!(segments[j], Segment::Sgr { .. }));
    if let Some(j) = after.filter(|&j| blank(j)) {
        levels[j] = Level::Dropped;
    } else if let Some(j) = before.filter(|&j| blank(j)) {
        levels[j] = Level::Dropped;
    }
}

/// pv's layout of the segments not dropped: static parts first, then the expanding ones
/// sharing what is left. Also says whether a known percentage could not be shown.
fn layout(format: &Format, frame: &Frame, width: usize, levels: &[Level]) -> (String, bool) {
    // First pass: everything with a known width.
    let mut pieces: Vec<Option<String>> = Vec::with_capacity(format.segments.len());
    let mut used = 0;
    let mut expanding = 0;
    for (segment, &level) in format.segments.iter().zip(levels) {
        let short = level == Level::Short && has_short_form(segment, frame);
        if level == Level::Dropped {
            pieces.push(Some(String::new()));
        } else if short {
            let text = render_short(segment, frame);
            used += display_width(&text);
            pieces.push(Some(text));
        } else if segment.is_dynamic() {
            expanding += 1;
            pieces.push(None);
        } else {
            let text = render_segment(segment, frame, 0);
            used += display_width(&text);
            pieces.push(Some(text));
        }
    }
    let share = width.saturating_sub(used) / expanding.max(1);

    // pv assembles the line in a buffer of this size (minus its NUL) and skips any
    // segment that would not fit.
    let capacity = 4 * width + 80 + frame.name.map_or(0, str::len) - 1;
    let mut line = String::new();
    let mut colour_active = false;
    let mut lost_percentage = false;
    for (segment, piece) in format.segments.iter().zip(pieces) {
        let text = piece.unwrap_or_else(|| {
            let text = render_segment(segment, frame, share);
            if !text.is_empty() || !matches!(segment, Segment::Progress { .. }) {
                return text;
            }
            // The bar cannot fit: its percentage alone, if that can.
            let amount = render_amount_only(frame);
            if display_width(&amount) <= share {
                amount
            } else {
                lost_percentage |= !amount.is_empty();
                String::new()
            }
        });
        if line.len() + text.len() > capacity {
            continue;
        }
        if let Segment::Sgr { codes } = segment {
            if let Some(&last) = codes.last().filter(|_| frame.colour) {
                colour_active = last != 0;
            }
        }
        line.push_str(&text);
    }
    if colour_active {
        line.push_str("\x1b[m");
    }
    (line, lost_percentage)
}

/// True if `segment` has a shorter form for [`Level::Short`] (a `%p` without a percentage,
/// the bouncing bar of an unknown size, has none: it stays as wide as what is left).
fn has_short_form(segment: &Segment, frame: &Frame) -> bool {
    match segment {
        Segment::Progress { .. } => !render_amount_only(frame).is_empty(),
        _ => true,
    }
}

/// A segment at [`Level::Short`].
fn render_short(segment: &Segment, frame: &Frame) -> String {
    match segment {
        Segment::Progress { .. } => render_amount_only(frame),
        Segment::Name { .. } => render_name(frame, Some(0)),
        _ => String::new(),
    }
}

/// One segment's text; `share` is the width given to an expanding component without a
/// chosen size.
fn render_segment(segment: &Segment, frame: &Frame, share: usize) -> String {
    match segment {
        Segment::Literal(text) => text.clone(),
        Segment::Progress { width } => {
            render_bar(frame, width.unwrap_or(share), frame.bar_style, true)
        }
        Segment::BarOnly { style, width } => render_bar(
            frame,
            width.unwrap_or(share),
            style.unwrap_or(frame.bar_style),
            false,
        ),
        Segment::ProgressAmount => render_progress_amount(frame),
        Segment::Timer => render_timer(frame),
        Segment::Eta => render_eta(frame),
        Segment::FinEta => render_fineta(frame),
        Segment::Rate => render_rate(frame, frame.rate, '[', ']'),
        Segment::AverageRate => render_rate(frame, frame.avg_rate, '(', ')'),
        Segment::Bytes => render_bytes(frame),
        Segment::Ratio => render_ratio(frame),
        Segment::BufferPercent => render_buffer_percent(frame),
        Segment::Bottleneck => render_bottleneck(frame),
        Segment::LastWritten { count } => render_last_written(frame, *count),
        Segment::PreviousLine { width } => render_previous_line(frame, width.unwrap_or(share)),
        Segment::Name { width } => render_name(frame, *width),
        Segment::Sgr { codes } => render_sgr(frame, codes),
    }
}

/// Multiplier for `-8`: 8 for bytes, 1 for lines (and without `-8`).
fn bits_scale(frame: &Frame) -> f64 {
    if frame.bits && frame.kind != CountKind::Lines {
        8.0
    } else {
        1.0
    }
}

/// Unit suffix of `%b` (`per_second` false) or of rates.
fn unit_suffix(frame: &Frame, per_second: bool) -> &'static str {
    match (frame.kind, frame.bits, per_second) {
        (CountKind::Lines, _, false) => "",
        (CountKind::Lines, _, true) => "/s",
        (_, true, false) => "b",
        (_, true, true) => "b/s",
        (_, false, false) => "B",
        (_, false, true) => "B/s",
    }
}

/// `%b`: describe-amount, or an integer in numeric mode.
fn render_bytes(frame: &Frame) -> String {
    if frame.numeric {
        let scale = if bits_scale(frame) > 1.0 { 8 } else { 1 };
        return frame.transferred.saturating_mul(scale).to_string();
    }
    let value = frame.transferred as f64 * bits_scale(frame);
    describe_amount(value, frame.kind, unit_suffix(frame, false))
}

/// `%t`.
fn render_timer(frame: &Frame) -> String {
    let secs = if frame.elapsed.is_finite() {
        frame.elapsed.clamp(0.0, MAX_SECONDS)
    } else {
        0.0
    };
    if frame.numeric {
        format!("{secs:.4}")
    } else {
        format_elapsed(secs)
    }
}

/// `%r` and `%a`: `value` inside `open`/`close`, or `%.4f` numerically.
fn render_rate(frame: &Frame, value: f64, open: char, close: char) -> String {
    let value = value * bits_scale(frame);
    if frame.numeric {
        return format!("{value:.4}");
    }
    let amount = describe_amount(value, frame.kind, unit_suffix(frame, true));
    format!("{open}{amount}{close}")
}

/// Seconds left: the frame's estimate to the nearest second, 0 when there is none. pv
/// truncates, so its ETA (and `%I`) reads up to a second short, and "ETA 0:00:00" stays for
/// the whole last second.
fn eta_seconds(frame: &Frame) -> u64 {
    frame
        .eta
        .map_or(0, |secs| secs.round().clamp(0.0, MAX_SECONDS) as u64)
}

/// `%e`: empty for an unknown size, all spaces at the final update; during a
/// stall (nothing moved for a while) `stalled H:MM:SS` instead of a made-up time.
fn render_eta(frame: &Frame) -> String {
    if frame.size == 0 {
        return String::new();
    }
    let text = match frame.stalled {
        Some(secs) if !frame.numeric => format!("stalled {}", format_elapsed(secs)),
        _ => format!("ETA {}", format_eta(eta_seconds(frame))),
    };
    if frame.final_update {
        " ".repeat(text.chars().count())
    } else {
        text
    }
}

/// `%I`: local finish time, with the date when more than 6 hours away.
fn render_fineta(frame: &Frame) -> String {
    if frame.size == 0 {
        return String::new();
    }
    if frame.stalled.is_some() && !frame.numeric {
        return "FIN --:--:--".to_string();
    }
    let eta = eta_seconds(frame);
    let (now, utc_offset) = frame.wall_clock;
    let then = now.saturating_add(i64::try_from(eta).unwrap_or(i64::MAX));
    let text = local_time_text(then, utc_offset, eta > FINETA_DATE_AFTER);
    format!("FIN {text}")
}

/// `%{progress-amount-only}`.
fn render_progress_amount(frame: &Frame) -> String {
    if frame.numeric {
        format!("{:.0}", frame.percentage)
    } else {
        render_amount_only(frame)
    }
}

/// `%T`.
fn render_buffer_percent(frame: &Frame) -> String {
    match frame.buffer {
        BufferFill::None => String::new(),
        BufferFill::Splice => "{----}".to_string(),
        BufferFill::Fraction(fraction) => format!("{{{:3.0}%}}", fraction * 100.0),
    }
}

/// `%{bottleneck}`: the side this stage waits on, padded to one width so the line does not
/// jump; blank when it is not known (not a pipe, or the final update).
fn render_bottleneck(frame: &Frame) -> String {
    const WIDTH: usize = 16;
    match frame.waiting {
        Some(w) if !frame.final_update => format!("{:<WIDTH$}", w.label()),
        _ => " ".repeat(WIDTH),
    }
}

/// Printable ASCII, as pv's `isprint` in any locale for single bytes we show.
fn is_printable(byte: u8) -> bool {
    (32..=126).contains(&byte)
}

/// `%nA`: the last `count` bytes written, unprintable or not yet seen as `.`.
fn render_last_written(frame: &Frame, count: usize) -> String {
    let count = count.min(MAX_LAST_WRITTEN);
    let data = frame.last_written;
    let seen = &data[data.len().saturating_sub(count)..];
    let missing = count - seen.len();
    std::iter::repeat_n('.', missing)
        .chain(
            seen.iter()
                .map(|&b| if is_printable(b) { char::from(b) } else { '.' }),
        )
        .collect()
}

/// `%nL`: the previous line in exactly `width` columns, unprintable bytes and
/// unused positions as spaces.
fn render_previous_line(frame: &Frame, width: usize) -> String {
    let width = width.min(MAX_PREVIOUS_LINE);
    let shown = frame.previous_line.iter().take(width);
    let mut text: String = shown
        .map(|&b| if is_printable(b) { char::from(b) } else { ' ' })
        .collect();
    let pad = width - text.len();
    text.extend(std::iter::repeat_n(' ', pad));
    text
}

/// `%N`: `printf("%*.500s:", width, name)`. Like C's printf, the alignment
/// counts bytes, not columns; the name is cut (at a character boundary) after 500 bytes.
fn render_name(frame: &Frame, width: Option<usize>) -> String {
    let Some(name) = frame.name else {
        return String::new();
    };
    let mut end = name.len().min(NAME_MAX);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    let name = &name[..end];
    // Numeric output is read by programs (JSON-like `-n -F` lines): escape the name so a
    // quote, backslash or control character cannot break the line's syntax.
    let escaped;
    let name = if frame.numeric {
        escaped = escape_name(name);
        escaped.as_str()
    } else {
        name
    };
    let width = width.unwrap_or(NAME_WIDTH).min(NAME_MAX);
    let pad = width.saturating_sub(name.len());
    format!("{}{name}:", " ".repeat(pad))
}

/// JSON string escaping: `"` and `\` get a backslash, control characters become `\n`,
/// `\t`, `\r` or `\u00XX`.
fn escape_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// `%{ratio}`: `-:-`, `1:1`, `R:1` (the other side is larger) or `1:R`.
fn render_ratio(frame: &Frame) -> String {
    match frame.ratio {
        Some((this, other)) if this > 0 && other > 0 => {
            let (this, other) = (this as f64, other as f64);
            if this == other {
                "1:1".to_string()
            } else if other > this {
                format!("{}:1", format_g(other / this, 4, false))
            } else {
                format!("1:{}", format_g(this / other, 4, false))
            }
        }
        _ => "-:-".to_string(),
    }
}

/// `%{sgr:LIST}`: `ESC [ codes m`, a new escape every 16 codes; nothing
/// without colour support.
fn render_sgr(frame: &Frame, codes: &[u8]) -> String {
    if !frame.colour {
        return String::new();
    }
    codes
        .chunks(SGR_CODES_PER_ESCAPE)
        .map(|chunk| {
            let list: Vec<String> = chunk.iter().map(u8::to_string).collect();
            format!("\x1b[{}m", list.join(";"))
        })
        .collect()
}

#[cfg(test)]
#[path = "render_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "render_proptests.rs"]
mod proptests;
