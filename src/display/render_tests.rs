//! Render tests with synthetic frames (spec 2.6–2.10 and the render-level rows of 9).

use super::*;
use crate::display::BarStyle;

/// Renders `format` for `frame` at `width`.
fn line(format: &str, frame: &Frame, width: usize) -> String {
    render(&Format::parse(format), frame, width)
}

/// A frame with `transferred` bytes out of `size` (0 = unknown), percentage set as the rate
/// tracker would for a known size.
fn at(transferred: u64, size: u64) -> Frame<'static> {
    let percentage = if size > 0 {
        100.0 * transferred as f64 / size as f64
    } else {
        0.0
    };
    Frame {
        transferred,
        size,
        percentage,
        ..Frame::default()
    }
}

fn spaces(n: usize) -> String {
    " ".repeat(n)
}

#[test]
fn default_line_with_unknown_size_fills_the_width() {
    let want = format!("0.00  B 0:00:00 [0.00  B/s] [<=>{}]", spaces(47));
    let got = line("%b %t %r %p", &Frame::default(), 80);
    assert_eq!(got, want);
    assert_eq!(display_width(&got), 80);
}

#[test]
fn eta_present_with_unknown_size_leaves_a_trailing_space() {
    let want = format!("0.00  B 0:00:00 [0.00  B/s] [<=>{}] ", spaces(46));
    assert_eq!(line("%b %t %r %p %e", &Frame::default(), 80), want);
}

#[test]
fn known_size_bars_from_the_checklist() {
    // `printf 12345 | pv -p -s N -w 30`. At 100 % the bar is full (deliberate fix, 7.2 #16;
    // pv prints `[======================>] 100%`).
    let table: &[(u64, &str)] = &[
        (5, "[=======================] 100%"),
        (4, "[=======================] 125%"),
        (10, "[==========>            ]  50%"),
        (10000, "[>                      ]   0%"),
    ];
    for &(size, want) in table {
        assert_eq!(line("%p", &at(5, size), 30), want, "-s {size}");
    }
}

#[test]
fn plain_bar_keeps_its_tip_below_100_percent() {
    let mut frame = at(0, 100);
    frame.percentage = 99.99;
    assert_eq!(line("%{bar-plain}", &frame, 10), "========> ");
    frame.percentage = 95.0;
    assert_eq!(line("%{bar-plain}", &frame, 10), "========> ");
    frame.percentage = 100.0;
    assert_eq!(line("%{bar-plain}", &frame, 10), "==========");
    frame.percentage = 10.0;
    assert_eq!(line("%{bar-plain}", &frame, 10), ">         ");
    frame.percentage = 20.0;
    assert_eq!(line("%{bar-plain}", &frame, 10), "=>        ");
}

#[test]
fn bar_styles_at_width_24() {
    let table: &[(BarStyle, f64, &str)] = &[
        (BarStyle::Plain, 37.0, "[=====>           ]  37%"),
        (BarStyle::Block, 37.0, "[██████           ]  37%"),
        (BarStyle::Granular, 37.0, "[██████▎          ]  37%"),
        (BarStyle::Shaded, 37.0, "[██████░░░░░░░░░░░]  37%"),
        (BarStyle::Granular, 3.0, "[▌                ]   3%"),
        (BarStyle::Shaded, 50.0, "[████████▒░░░░░░░░]  50%"),
        (BarStyle::Block, 100.0, "[█████████████████] 100%"),
        (BarStyle::Granular, 100.0, "[█████████████████] 100%"),
    ];
    for &(style, percentage, want) in table {
        let frame = Frame {
            bar_style: style,
            utf8: true,
            ..at(percentage as u64, 100)
        };
        assert_eq!(line("%p", &frame, 24), want, "{style:?} {percentage}");
    }
}

#[test]
fn forced_styles_and_utf8_fallback() {
    let mut frame = Frame {
        utf8: true,
        bar_style: BarStyle::Block,
        ..at(37, 100)
    };
    assert_eq!(line("%{bar-shaded}", &frame, 17), "██████░░░░░░░░░░░");
    assert_eq!(line("%{bar-plain}", &frame, 17), "=====>           ");
    assert_eq!(line("%{bar-granular}", &frame, 17), "██████▎          ");
    assert_eq!(
        line("%{progress-bar-only}", &frame, 17),
        "██████           "
    );
    frame.utf8 = false;
    assert_eq!(line("%{bar-shaded}", &frame, 17), "=====>           ");
    assert_eq!(line("%p", &frame, 24), "[=====>           ]  37%");
}

#[test]
fn bouncing_indicator_in_every_style() {
    let mut frame = Frame {
        utf8: true,
        bar_style: BarStyle::Shaded,
        ..Frame::default()
    };
    assert_eq!(line("%p", &frame, 24), format!("[▒▓▒{}]", "░".repeat(19)));
    frame.bar_style = BarStyle::Block;
    assert_eq!(line("%p", &frame, 10), "[◀▶      ]");
    frame.bar_style = BarStyle::Granular;
    frame.percentage = 100.0;
    assert_eq!(line("%p", &frame, 10), "[      ◀▶]");
}

#[test]
fn bouncing_indicator_positions() {
    // Bar area 10 (width 15): position from pv's counter, bouncing back above 100.
    let table: &[(f64, &str)] = &[
        (0.0, "[<=>          ]"),
        (2.0, "[<=>          ]"),
        (10.0, "[ <=>         ]"),
        (50.0, "[     <=>     ]"),
        (100.0, "[          <=>]"),
        (150.0, "[     <=>     ]"),
        (198.0, "[<=>          ]"),
        (250.0, "[     <=>     ]"),
    ];
    for &(counter, want) in table {
        let frame = Frame {
            percentage: counter,
            ..Frame::default()
        };
        assert_eq!(line("%p", &frame, 15), want, "{counter}");
    }
}

#[test]
fn chosen_width_bar_and_bar_only() {
    let frame = at(4, 0);
    assert_eq!(line("%10p|", &frame, 40), "[<=>     ]|");
    assert_eq!(
        line("%{progress-bar-only}", &frame, 40),
        format!("<=>{}", spaces(37))
    );
    assert_eq!(line("%5{bar-plain}|", &frame, 40), "<=>  |");
    assert_eq!(line("%12p|", &at(1, 2), 40), "[=>   ]  50%|");
}

#[test]
fn bars_that_do_not_fit_are_empty() {
    let unknown = Frame::default();
    // The `|` takes one column of the width.
    assert_eq!(line("%p|", &unknown, 7), "[<=> ]|");
    assert_eq!(line("%p|", &unknown, 6), "|");
    assert_eq!(line("%{bar-plain}|", &unknown, 6), "<=>  |");
    assert_eq!(line("%{bar-plain}|", &unknown, 5), "|");
    let known = at(1, 2);
    assert_eq!(line("%p|", &known, 9), "[>]  50%|");
    assert_eq!(line("%p|", &known, 8), "[]  50%|");
    assert_eq!(line("%p|", &known, 7), "|");
    assert_eq!(line("%{bar-plain}|", &known, 2), ">|");
    assert_eq!(line("%{bar-plain}|", &known, 1), "|");
}

#[test]
fn expanding_components_share_the_width() {
    let frame = Frame::default();
    let bar = format!("[<=>{}]", spaces(15));
    assert_eq!(line("%p%p", &frame, 40), format!("{bar}{bar}"));
    // 41 columns: floor(41 / 2) each, one column left unused.
    assert_eq!(line("%p%p", &frame, 41), format!("{bar}{bar}"));
    assert_eq!(
        line("%p%{bar-plain}%L", &frame, 30),
        format!("[<=>     ]<=>{}{}", spaces(7), spaces(10))
    );
}

#[test]
fn wide_characters_count_two_columns() {
    let got = line("日本 %p", &Frame::default(), 20);
    assert_eq!(got, format!("日本 [<=>{}]", spaces(10)));
    assert_eq!(display_width(&got), 20);
}

#[test]
fn tab_in_a_format_does_not_kill_the_bar() {
    // pv prints "x\ty 2.00  B |" (spec 7.2 #14); we treat the TAB as zero columns.
    let got = line("x\ty %b %p|", &at(2, 0), 20);
    assert_eq!(got, "x\ty 2.00  B [<=>   ]|");
    assert_eq!(display_width(&got), 20);
}

#[test]
fn static_content_wider_than_the_terminal_overflows() {
    let frame = Frame {
        transferred: 3,
        rate: 3533.0,
        ..Frame::default()
    };
    assert_eq!(
        line("%b %t %r %p", &frame, 10),
        "3.00  B 0:00:00 [3.45KiB/s] "
    );
}

#[test]
fn segments_overflowing_the_line_buffer_are_skipped() {
    // Width 10: pv's buffer holds 4*10+80 bytes including its NUL.
    let long = "x".repeat(119);
    assert_eq!(line(&long, &Frame::default(), 10), long);
    let too_long = format!("{long}y");
    assert_eq!(line(&format!("a%b{too_long}"), &at(1, 0), 10), "a1.00  B");
    let frame = Frame {
        name: Some("n"),
        ..Frame::default()
    };
    assert_eq!(line(&too_long, &frame, 10), too_long);
}

#[test]
fn name_alignment() {
    let frame = Frame {
        name: Some("foo"),
        ..at(3, 0)
    };
    assert_eq!(
        line("[%N][%20N][%3N][%{name}]", &frame, 80),
        "[      foo:][                 foo:][foo:][      foo:]"
    );
    assert_eq!(line("[%N]", &at(3, 0), 80), "[]");
    let long = Frame {
        name: Some("verylongname12"),
        ..Frame::default()
    };
    assert_eq!(line("%N", &long, 80), "verylongname12:");
    let huge = "é".repeat(300);
    let cut = Frame {
        name: Some(&huge),
        ..Frame::default()
    };
    assert_eq!(line("%N", &cut, 80), format!("{}:", "é".repeat(250)));
}

#[test]
fn literal_sequences_from_the_checklist() {
    let frame = at(3, 0);
    let table: &[(&str, &str)] = &[
        ("a%", "a%"),
        ("%%", "%"),
        ("x%zx", "x%zx"),
        ("%{foo}", "%{foo}"),
        ("%20", "%20"),
        ("%5x", "%5x"),
        ("%{foo%t", "%{foo0:00:00"),
        ("%{timer", "%{timer"),
        ("%3b", "3.00  B"),
        ("", ""),
    ];
    for &(format, want) in table {
        assert_eq!(line(format, &frame, 80), want, "{format}");
    }
}

#[test]
fn amounts_in_every_unit() {
    let mut frame = at(3, 0);
    frame.rate = 18750.0;
    frame.avg_rate = 1500.0;
    assert_eq!(
        line("%b %r %a", &frame, 80),
        "3.00  B [18.3KiB/s] (1.46KiB/s)"
    );
    frame.bits = true;
    assert_eq!(
        line("%b %r %a", &frame, 80),
        "24.0  b [ 146Kib/s] (11.7Kib/s)"
    );
    frame.kind = CountKind::DecimalBytes;
    frame.transferred = 5000;
    assert_eq!(line("%b %r", &frame, 80), "40.0kb [ 150kb/s]");
    frame.bits = false;
    assert_eq!(line("%b %a", &frame, 80), "5.00kB (1.50kB/s)");
    // Lines ignore -8 and have no unit.
    frame.kind = CountKind::Lines;
    frame.bits = true;
    frame.transferred = 12345;
    frame.rate = 6.39e6;
    assert_eq!(line("%b %r %a", &frame, 80), "12.3k [6.39M/s] (1.50k/s)");
    let zero = Frame {
        kind: CountKind::Lines,
        ..Frame::default()
    };
    assert_eq!(line("%b %r %a", &zero, 80), "0.00  [0.00 /s] (0.00 /s)");
}

#[test]
fn timer() {
    let table: &[(f64, &str)] = &[
        (0.0, "0:00:00"),
        (-3.0, "0:00:00"),
        (3725.9, "1:02:05"),
        (90061.0, "1:01:01:01"),
        (1e12, "4166:16:00:00"),
    ];
    for &(elapsed, want) in table {
        let frame = Frame {
            elapsed,
            ..Frame::default()
        };
        assert_eq!(line("%t", &frame, 80), want, "{elapsed}");
    }
}

/// A frame halfway through 100 bytes at 10 bytes/s average, with a wall clock of
/// 2024-10-04 13:45:30 UTC and a UTC offset of +2 h.
fn halfway() -> Frame<'static> {
    Frame {
        avg_rate: 10.0,
        wall_clock: (20_000 * 86_400 + 13 * 3600 + 45 * 60 + 30, 7200),
        ..at(50, 100)
    }
}

#[test]
fn eta() {
    let mut frame = halfway();
    assert_eq!(line("%e|", &frame, 80), "ETA 0:00:05|");
    frame.avg_rate = 0.0001;
    assert_eq!(line("%e", &frame, 80), "ETA 0:00:00");
    // 50 / 3 = 16.7 s: to the nearest second (pv truncates to 16).
    frame.avg_rate = 3.0;
    assert_eq!(line("%e", &frame, 80), "ETA 0:00:17");
    frame.avg_rate = 50.0 / 16.4;
    assert_eq!(line("%e", &frame, 80), "ETA 0:00:16");
    // A hair faster than the exact rate (a limiter on time): still the whole 5 s.
    frame.avg_rate = 10.001;
    assert_eq!(line("%e", &frame, 80), "ETA 0:00:05");
    frame.avg_rate = 9.999;
    assert_eq!(line("%e", &frame, 80), "ETA 0:00:05");
    // The last half second shows 0, not the last whole second.
    frame.avg_rate = 50.0 / 0.6;
    assert_eq!(line("%e", &frame, 80), "ETA 0:00:01");
    frame.avg_rate = 50.0 / 0.4;
    assert_eq!(line("%e", &frame, 80), "ETA 0:00:00");
    frame.avg_rate = 0.0009;
    assert_eq!(line("%e", &frame, 80), "ETA 0:00:00");
    frame.avg_rate = 1.0;
    frame.size = 50 + 12 * 86_400 + 12 * 3600 + 102;
    assert_eq!(line("%e", &frame, 80), "ETA 12:12:01:42");
    frame.size = 50 + 86_400;
    assert_eq!(line("%e", &frame, 80), "ETA 24:00:00");
    frame.size = 100;
    frame.avg_rate = 10.0;
    frame.transferred = 150;
    assert_eq!(line("%e", &frame, 80), "ETA 0:00:00");
    frame.transferred = 0;
    assert_eq!(line("%e", &frame, 80), "ETA 0:00:00");
    frame.transferred = 50;
    frame.initial_offset = 50;
    assert_eq!(line("%e", &frame, 80), "ETA 0:00:00");
    frame.initial_offset = 0;
    frame.final_update = true;
    assert_eq!(line("%e|", &frame, 80), format!("{}|", spaces(11)));
    assert_eq!(line("%e|", &at(5, 0), 80), "|");
}

#[test]
fn finish_time() {
    let mut frame = halfway();
    assert_eq!(line("%I", &frame, 80), "FIN 15:45:35");
    frame.final_update = true;
    assert_eq!(line("%I", &frame, 80), "FIN 15:45:35");
    // 21599.998 s: rounded to 21600, still without the date (more than 6 hours shows it).
    frame.avg_rate = 50.0 / 21_600.0 * 1.000_000_1;
    assert_eq!(line("%I", &frame, 80), "FIN 21:45:30");
    frame.avg_rate = 1.0;
    frame.size = 50 + 21_601;
    assert_eq!(line("%I", &frame, 80), "FIN 2024-10-04 21:45:31");
    frame.size = 50 + 51_200;
    assert_eq!(line("%I", &frame, 80), "FIN 2024-10-05 05:58:50");
    assert_eq!(line("%I|", &at(5, 0), 80), "|");
}

#[test]
fn gauge_mode() {
    let mut frame = Frame {
        gauge: true,
        rate: 92.0 * 1024.0,
        max_rate: 184.0 * 1024.0,
        ..at(3, 0)
    };
    assert_eq!(line("%p", &frame, 30), "[========>         ]/ 184KiB/s");
    assert_eq!(line("%{progress-amount-only}", &frame, 30), " 184KiB/s");
    frame.bits = true;
    assert_eq!(line("%{progress-amount-only}", &frame, 30), "1.44Mib/s");
    frame.bits = false;
    frame.max_rate = 0.0;
    assert_eq!(
        line("%p", &frame, 30),
        format!("[>{}]/0.00  B/s", spaces(17))
    );
    // A known size wins over -g.
    frame.size = 6;
    frame.percentage = 50.0;
    assert_eq!(line("%{progress-amount-only}", &frame, 30), " 50%");
}

#[test]
fn progress_amount_only() {
    assert_eq!(line("%{progress-amount-only}", &at(42, 100), 80), " 42%");
    assert_eq!(line("[%{progress-amount-only}]", &at(42, 0), 80), "[]");
    assert_eq!(line("%{progress-amount-only}", &at(1234, 100), 80), "1234%");
}

#[test]
fn buffer_percent() {
    let table: &[(BufferFill, &str)] = &[
        (BufferFill::None, ""),
        (BufferFill::Splice, "{----}"),
        (BufferFill::Fraction(0.0), "{  0%}"),
        (BufferFill::Fraction(0.42), "{ 42%}"),
        (BufferFill::Fraction(1.0), "{100%}"),
    ];
    for &(buffer, want) in table {
        let frame = Frame {
            buffer,
            ..Frame::default()
        };
        assert_eq!(line("%T", &frame, 80), want, "{buffer:?}");
    }
}

#[test]
fn last_written_bytes() {
    let data = b"095\n096\n097\n098\n099\n100\n";
    let frame = Frame {
        last_written: data,
        ..Frame::default()
    };
    assert_eq!(line("%16A", &frame, 80), "097.098.099.100.");
    assert_eq!(line("[%A]", &frame, 80), "[]");
    let short = Frame {
        last_written: b"ab\x01",
        ..Frame::default()
    };
    assert_eq!(line("%6A", &short, 80), "...ab.");
    assert_eq!(line("%300A", &short, 80).len(), 256);
}

#[test]
fn previous_line() {
    let frame = Frame {
        previous_line: b"hello\tworld\xc3\xa9",
        ..Frame::default()
    };
    assert_eq!(line("%8L|", &frame, 80), "hello wo|");
    assert_eq!(line("%L|", &frame, 17), "hello world     |");
    assert_eq!(line("%L|", &Frame::default(), 5), "    |");
    assert_eq!(line("%L", &Frame::default(), 2000).len(), 1024);
}

#[test]
fn monitor_ratio() {
    let table: &[(Option<(u64, u64)>, &str)] = &[
        (None, "-:-"),
        (Some((0, 5)), "-:-"),
        (Some((5, 0)), "-:-"),
        (Some((5, 5)), "1:1"),
        (Some((1000, 2966)), "2.966:1"),
        (Some((10, 32)), "3.2:1"),
        (Some((3, 1)), "1:3"),
        (Some((1, 123456)), "1.235e+05:1"),
    ];
    for &(ratio, want) in table {
        let frame = Frame {
            ratio,
            ..Frame::default()
        };
        assert_eq!(line("%{ratio}", &frame, 80), want, "{ratio:?}");
    }
}

#[test]
fn sgr_example_from_the_checklist() {
    let format = "%{sgr:green,bold}%b%{sgr:reset} %{sgr:red}%p";
    let frame = Frame {
        colour: true,
        ..at(3, 0)
    };
    assert_eq!(
        line(format, &frame, 40),
        format!("\x1b[32;1m3.00  B\x1b[0m \x1b[31m[<=>{}]\x1b[m", spaces(27))
    );
    let plain = at(3, 0);
    assert_eq!(
        line(format, &plain, 40),
        format!("3.00  B [<=>{}]", spaces(27))
    );
}

#[test]
fn sgr_reset_rules_and_long_lists() {
    let colour = Frame {
        colour: true,
        ..Frame::default()
    };
    assert_eq!(line("%{sgr:red}x%{sgr:0}", &colour, 80), "\x1b[31mx\x1b[0m");
    assert_eq!(line("%{sgr:red,0}x", &colour, 80), "\x1b[31;0mx");
    assert_eq!(line("%{sgr:0,red}x", &colour, 80), "\x1b[0;31mx\x1b[m");
    assert_eq!(line("%{sgr:red}x%{sgr:}", &colour, 80), "\x1b[31mx\x1b[m");
    assert_eq!(line("%{sgr:colour,...}x", &colour, 80), "x");
    let list: Vec<String> = (1..=18).map(|c| c.to_string()).collect();
    let format = format!("%{{sgr:{}}}", list.join(","));
    assert_eq!(
        line(&format, &colour, 80),
        format!("\x1b[{}m\x1b[17;18m\x1b[m", list[..16].join(";"))
    );
}

#[test]
fn numeric_mode_outputs() {
    let mut frame = Frame {
        numeric: true,
        elapsed: 0.27094,
        transferred: 20480,
        rate: 75372.92924,
        avg_rate: 1234.5,
        percentage: 20.48,
        ..at(20480, 100_000)
    };
    frame.percentage = 20.48;
    assert_eq!(
        line("%t %b %r %a %{progress-amount-only}", &frame, 80),
        "0.2709 20480 75372.9292 1234.5000 20"
    );
    frame.bits = true;
    assert_eq!(line("%b %r", &frame, 80), "163840 602983.4339");
    // Deliberate: -l -8 does not multiply lines (pv prints 98760 here).
    frame.kind = CountKind::Lines;
    frame.transferred = 12345;
    assert_eq!(line("%b %r", &frame, 80), "12345 75372.9292");
    // Unknown size: pv's counter as is; other components render as in normal mode.
    let unknown = Frame {
        numeric: true,
        percentage: 198.0,
        ..at(3, 0)
    };
    assert_eq!(line("%{progress-amount-only} %N", &unknown, 80), "198 ");
    assert_eq!(line("%10p", &unknown, 80), "[<=>     ]");
    assert_eq!(
        line("{\"t\":%t,\"b\":%b}", &unknown, 80),
        "{\"t\":0.0000,\"b\":3}"
    );
}
