//! The progress bar of `%p`, `%{progress-bar-only}` and `%{bar-STYLE}`, and the amount text
//! of `%{progress-amount-only}`.
//!
//! Deliberate difference from pv: a bar at 100 % (or more) is completely full.
//! pv shows `[====…=>]` at exactly 100 %; we keep the `>` tip below 100 % (and at 0 %) only.

use super::width::display_width;
use super::{BarStyle, Frame};
use crate::units::{describe_amount, CountKind};

/// How a style draws: background cell, fillers from lightest to full, tip, indicator.
struct Look {
    /// Empty cell.
    background: char,
    /// Partial-to-full cells (index 1.. of pv's filler list); the last is a full cell.
    fillers: &'static [char],
    /// Cell after the filled part (plain style only).
    tip: Option<char>,
    /// The bouncing indicator for unknown sizes.
    indicator: &'static str,
}

/// The look of `style`; non-plain styles need a UTF-8 locale and fall back to plain.
fn look(style: BarStyle, utf8: bool) -> Look {
    let style = if utf8 { style } else { BarStyle::Plain };
    match style {
        BarStyle::Plain => Look {
            background: ' ',
            fillers: &['='],
            tip: Some('>'),
            indicator: "<=>",
        },
        BarStyle::Block => Look {
            background: ' ',
            fillers: &['█'],
            tip: None,
            indicator: "◀▶",
        },
        BarStyle::Granular => Look {
            background: ' ',
            fillers: &['▏', '▎', '▍', '▌', '▋', '▊', '▉', '█'],
            tip: None,
            indicator: "◀▶",
        },
        BarStyle::Shaded => Look {
            background: '░',
            fillers: &['▒', '▓', '█'],
            tip: None,
            indicator: "▒▓▒",
        },
    }
}

/// A bar exactly `width` columns wide (or empty if it cannot fit). `framed` adds `[`/`]` and
/// the amount text (`%p`); otherwise the whole width is bar (`%{progress-bar-only}`).
pub(super) fn render_bar(frame: &Frame, width: usize, style: BarStyle, framed: bool) -> String {
    let look = look(style, frame.utf8);
    let Some((amount, fill)) = amount_and_fill(frame) else {
        return render_bouncing(&look, frame.percentage, width, framed);
    };
    if !framed {
        return fill_cells(&look, width, fill);
    }
    let Some(area) = width.checked_sub(display_width(&amount) + 2) else {
        return String::new();
    };
    format!("[{}]{amount}", fill_cells(&look, area, fill))
}

/// Non-numeric `%{progress-amount-only}`: the amount text without its leading character
/// (`" 42%"`, `" 184KiB/s"`); empty for an unknown size without `-g`.
pub(super) fn render_amount_only(frame: &Frame) -> String {
    amount_and_fill(frame)
        .map(|(amount, _)| amount.chars().skip(1).collect())
        .unwrap_or_default()
}

/// The text after the bar and the fill percentage, for a known size (percentage) or `-g`
/// (gauge: current rate against the maximum); `None` when the indicator bounces instead.
fn amount_and_fill(frame: &Frame) -> Option<(String, f64)> {
    if frame.size > 0 {
        // pv prints the integer part, unclamped (`" 125%"`).
        let percent = frame.percentage as i64;
        return Some((format!(" {percent:3}%"), frame.percentage));
    }
    if !frame.gauge {
        return None;
    }
    let (scale, suffix) = match (frame.kind, frame.bits) {
        (CountKind::Lines, _) => (1.0, "/s"),
        (_, true) => (8.0, "b/s"),
        (_, false) => (1.0, "B/s"),
    };
    let amount = format!(
        "/{}",
        describe_amount(frame.max_rate * scale, frame.kind, suffix)
    );
    let fill = if frame.max_rate > 0.0 {
        100.0 * frame.rate / frame.max_rate
    } else {
        0.0
    };
    Some((amount, fill))
}

/// `area` cells filled to `percent`.
fn fill_cells(look: &Look, area: usize, percent: f64) -> String {
    let percent = if percent.is_finite() {
        percent.max(0.0)
    } else {
        0.0
    };
    let exact = area as f64 * percent / 100.0;
    let mut filled = exact as usize;
    let full = look.fillers.last().copied().unwrap_or('=');
    let mut bar = String::with_capacity(area * 3);
    let mut cells;
    if look.fillers.len() == 1 {
        if look.tip.is_some() && filled > 0 && filled < area {
            filled -= 1;
        }
        cells = filled.min(area);
        bar.extend(cells_of(full, cells));
        if let Some(tip) = look.tip.filter(|_| cells < area) {
            bar.push(tip);
            cells += 1;
        }
    } else {
        cells = filled.min(area);
        bar.extend(cells_of(full, cells));
        if cells < area {
            let levels = look.fillers.len() as f64;
            let index = (levels * (exact - filled as f64)) as usize;
            bar.push(match index {
                0 => look.background,
                _ => look.fillers[(index - 1).min(look.fillers.len() - 1)],
            });
            cells += 1;
        }
    }
    bar.extend(cells_of(look.background, area - cells));
    bar
}

/// The bouncing indicator for an unknown size; `counter` is pv's percentage
/// counter (0, 2, …, 198).
fn render_bouncing(look: &Look, counter: f64, width: usize, framed: bool) -> String {
    let indicator_width = display_width(look.indicator);
    // pv needs one spare cell when framed, none for the bar alone.
    let (sides, minimum) = if framed { (2, 3) } else { (0, 2) };
    if width < indicator_width + minimum {
        return String::new();
    }
    let area = width - indicator_width - sides;
    let mut position = if counter.is_finite() { counter } else { 0.0 };
    if position > 200.0 {
        position %= 200.0;
    }
    if position > 100.0 {
        position = 200.0 - position;
    }
    let left = ((area as f64 * position.max(0.0) / 100.0) as usize).min(area);
    let bar: String = cells_of(look.background, left)
        .chain(look.indicator.chars())
        .chain(cells_of(look.background, area - left))
        .collect();
    if framed {
        format!("[{bar}]")
    } else {
        bar
    }
}

/// `count` copies of `cell` (`repeat_n` needs a newer Rust than our MSRV).
fn cells_of(cell: char, count: usize) -> impl Iterator<Item = char> {
    std::iter::repeat_n(cell, count)
}
