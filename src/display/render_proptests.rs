//! Property tests of `-F` formats: any format text parses, and rendering any parsed format
//! for any frame at any width never panics and (outside numeric mode) never makes a line
//! wider than the width.

use proptest::prelude::*;

use super::*;
use crate::display::BarStyle;
use crate::units::CountKind;

/// Pieces of format text: every sequence, with and without chosen sizes, broken ones,
/// colours, wide and control characters.
const PIECES: &[&str] = &[
    "%p",
    "%t",
    "%e",
    "%I",
    "%r",
    "%a",
    "%b",
    "%T",
    "%A",
    "%16A",
    "%300A",
    "%L",
    "%20L",
    "%N",
    "%20N",
    "%{progress}",
    "%{progress-bar-only}",
    "%{progress-amount-only}",
    "%{bar-plain}",
    "%{bar-block}",
    "%{bar-granular}",
    "%{bar-shaded}",
    "%{ratio}",
    "%{sgr:bold,red}",
    "%{sgr:reset}",
    "%{sgr:}",
    "%{sgr:1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18}",
    "%12p",
    "%99999p",
    "%-5t",
    "%0b",
    "%{",
    "%{name",
    "%",
    "%%",
    "%z",
    " ",
    "  ",
    "[",
    "]",
    "|",
    ":",
    "\t",
    "\r",
    "\u{1b}",
    "日本",
    "é",
    "e\u{301}",
    "a fairly long piece of literal text",
];

fn format_text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::collection::vec(prop::sample::select(PIECES), 0..14).prop_map(|p| p.concat()),
        1 => any::<String>(),
    ]
}

/// Any float, the awkward ones often.
fn float() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<f64>(),
        Just(0.0),
        Just(-1.0),
        Just(f64::NAN),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        Just(1e300),
        0.0..1e12f64,
    ]
}

fn count() -> impl Strategy<Value = u64> {
    prop_oneof![any::<u64>(), Just(0), Just(u64::MAX), 0..1_000_000_000u64]
}

/// Owned data a frame borrows.
#[derive(Debug, Clone)]
struct FrameData {
    numbers: (f64, u64, u64, f64, f64, f64, f64, f64),
    flags: (bool, bool, bool, bool, bool, bool, u8, u8),
    name: Option<String>,
    last_written: Vec<u8>,
    previous_line: Vec<u8>,
    ratio: Option<(u64, u64)>,
    wall_clock: (i64, i32),
}

fn frame_data() -> impl Strategy<Value = FrameData> {
    (
        (
            float(),
            count(),
            count(),
            float(),
            float(),
            float(),
            float(),
            float(),
        ),
        any::<(bool, bool, bool, bool, bool, bool, u8, u8)>(),
        prop::option::of(prop_oneof![any::<String>(), "[a-z]{0,600}"]),
        prop::collection::vec(any::<u8>(), 0..300),
        prop::collection::vec(any::<u8>(), 0..1100),
        prop::option::of((count(), count())),
        (any::<i64>(), any::<i32>()),
    )
        .prop_map(
            |(numbers, flags, name, last_written, previous_line, ratio, wall_clock)| FrameData {
                numbers,
                flags,
                name,
                last_written,
                previous_line,
                ratio,
                wall_clock,
            },
        )
}

impl FrameData {
    fn frame(&self) -> Frame<'_> {
        let (elapsed, transferred, size, eta, rate, avg_rate, percentage, max_rate) = self.numbers;
        let (final_update, numeric, bits, gauge, utf8, colour, kind, style) = self.flags;
        Frame {
            elapsed,
            transferred,
            size,
            eta: (size % 3 != 0).then_some(eta),
            rate,
            avg_rate,
            percentage,
            max_rate,
            final_update,
            numeric,
            kind: [
                CountKind::BinaryBytes,
                CountKind::DecimalBytes,
                CountKind::Lines,
            ][kind as usize % 3],
            bits,
            gauge,
            name: self.name.as_deref(),
            bar_style: [
                BarStyle::Plain,
                BarStyle::Block,
                BarStyle::Granular,
                BarStyle::Shaded,
            ][style as usize % 4],
            utf8,
            colour,
            buffer: match kind % 3 {
                0 => BufferFill::None,
                1 => BufferFill::Splice,
                _ => BufferFill::Fraction(percentage / 100.0),
            },
            last_written: &self.last_written,
            previous_line: &self.previous_line,
            ratio: self.ratio,
            wall_clock: self.wall_clock,
            stalled: (style % 2 == 1).then_some(elapsed.abs()),
            waiting: [
                None,
                Some(crate::display::Waiting::Input),
                Some(crate::display::Waiting::Output),
                Some(crate::display::Waiting::Busy),
            ][kind as usize % 4],
        }
    }
}

proptest! {
    #![proptest_config(crate::proptest_cases::config(1500))]

    #[test]
    fn any_format_renders_within_the_width(
        text in format_text(),
        data in frame_data(),
        width in prop_oneof![0..130usize, Just(65_535usize)],
    ) {
        let format = Format::parse(&text);
        let frame = data.frame();
        let line = render(&format, &frame, width);
        if !frame.numeric {
            prop_assert!(
                display_width(&line) <= width,
                "{text:?} at {width}: {line:?} is {} wide",
                display_width(&line)
            );
        }
    }

    #[test]
    fn a_known_percentage_outlives_every_other_field(
        data in frame_data(),
        width in 0..130usize,
        name in any::<bool>(),
    ) {
        // The default line of `-pterb` (and `-N`) for a known size, outside numeric mode.
        let mut frame = data.frame();
        frame.numeric = false;
        frame.gauge = false;
        frame.size = frame.size.max(1);
        frame.percentage = if frame.percentage.is_finite() {
            frame.percentage.clamp(0.0, 100_000.0)
        } else {
            0.0
        };
        let format = Format::parse(if name { "%N %b %t %r %p %e" } else { "%b %t %r %p %e" });
        let line = render(&format, &frame, width);
        let percent = format!("{:3}%", frame.percentage as i64);
        if width > percent.len() {
            prop_assert!(line.contains(&percent), "at {width}: {line:?}");
        }
    }
}
