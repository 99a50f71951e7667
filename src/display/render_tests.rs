//! Render tests with synthetic frames (every component, and whole lines as pv draws them).

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
fn bars_that_do_not_fit_leave_their_percentage_or_nothing() {
    let unknown = Frame::default();
    // The `|` takes one column of the width.
    assert_eq!(line("%p|", &unknown, 7), "[<=> ]|");
    assert_eq!(line("%p|", &unknown, 6), "|");
    assert_eq!(line("%{bar-plain}|", &unknown, 6), "<=>  |");
    assert_eq!(line("%{bar-plain}|", &unknown, 5), "|");
    let known = at(1, 2);
    assert_eq!(line("%p|", &known, 9), "[>]  50%|");
    assert_eq!(line("%p|", &known, 8), "[]  50%|");
    // pv drops the percentage with the bar; it stays while it fits.
    assert_eq!(line("%p|", &known, 7), " 50%|");
    assert_eq!(line("%p|", &known, 5), " 50%|");
    assert_eq!(line("%p|", &known, 4), "|");
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
    // pv prints "x\ty 2.00  B |"; we treat the TAB as zero columns.
    let got = line("x\ty %b %p|", &at(2, 0), 20);
    assert_eq!(got, "x\ty 2.00  B [<=>   ]|");
    assert_eq!(display_width(&got), 20);
}

#[test]
fn static_content_wider_than_the_terminal_gives_way() {
    // pv overflows: "3.00  B 0:00:00 [3.45KiB/s] ".
    let frame = Frame {
        transferred: 3,
        rate: 3533.0,
        ..Frame::default()
    };
    assert_eq!(line("%b %t %r %p", &frame, 10), "3.00  B ");
    assert_eq!(line("%b %t %r %p", &frame, 20), "3.00  B [3.45KiB/s] ");
    // Nothing but the bouncing bar fits.
    assert_eq!(line("%b %t %r %p", &frame, 6), "[<=> ]");
    assert_eq!(line("%b %t %r %p", &frame, 5), "");
}

#[test]
fn segments_overflowing_the_line_buffer_are_skipped() {
    // Width 10: pv's buffer holds 4*10+80 bytes including its NUL; what it keeps is then
    // cut at the width.
    let long = "x".repeat(119);
    assert_eq!(line(&long, &Frame::default(), 10), "x".repeat(10));
    let too_long = format!("{long}y");
    assert_eq!(line(&format!("a%b{too_long}"), &at(1, 0), 10), "a1.00  B");
    assert_eq!(line(&format!("a%b{too_long}"), &at(1, 0), 8), "a1.00  B");
    assert_eq!(line(&format!("a%b{too_long}"), &at(1, 0), 7), "a");
    assert_eq!(
        line(&format!("a{long}"), &at(1, 0), 200),
        format!("a{long}")
    );
    assert_eq!(
        line(&format!("a{too_long}"), &at(1, 0), 30),
        format!("a{}", "x".repeat(29))
    );
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
    assert_eq!(line("%N", &cut, 251), format!("{}:", "é".repeat(250)));
    // Wider than the line: padding goes first, then the name; literal text is cut.
    assert_eq!(line("[%20N]", &frame, 10), "[foo:]");
    assert_eq!(line("[%N]", &cut, 80), "[]");
    assert_eq!(line("%N", &long, 10), "");
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

/// A frame halfway through 100 bytes at 10 bytes/s average (5 s left), with a wall clock of
/// 2024-10-04 13:45:30 UTC and a UTC offset of +2 h.
fn halfway() -> Frame<'static> {
    Frame {
        avg_rate: 10.0,
        eta: Some(5.0),
        wall_clock: (20_000 * 86_400 + 13 * 3600 + 45 * 60 + 30, 7200),
        ..at(50, 100)
    }
}

#[test]
fn eta() {
    let mut frame = halfway();
    assert_eq!(line("%e|", &frame, 80), "ETA 0:00:05|");
    // No estimate (a negligible rate, nothing moved yet: sink::tests::the_eta_rule).
    frame.eta = None;
    assert_eq!(line("%e", &frame, 80), "ETA 0:00:00");
    // 50 / 3 = 16.7 s: to the nearest second (pv truncates to 16).
    frame.eta = Some(50.0 / 3.0);
    assert_eq!(line("%e", &frame, 80), "ETA 0:00:17");
    frame.eta = Some(16.4);
    assert_eq!(line("%e", &frame, 80), "ETA 0:00:16");
    // A hair faster than the exact rate (a limiter on time): still the whole 5 s.
    frame.eta = Some(50.0 / 10.001);
    assert_eq!(line("%e", &frame, 80), "ETA 0:00:05");
    frame.eta = Some(50.0 / 9.999);
    assert_eq!(line("%e", &frame, 80), "ETA 0:00:05");
    // The last half second shows 0, not the last whole second.
    frame.eta = Some(0.6);
    assert_eq!(line("%e", &frame, 80), "ETA 0:00:01");
    frame.eta = Some(0.4);
    assert_eq!(line("%e", &frame, 80), "ETA 0:00:00");
    frame.eta = Some(f64::from(12 * 86_400 + 12 * 3600 + 102));
    assert_eq!(line("%e", &frame, 80), "ETA 12:12:01:42");
    frame.eta = Some(86_400.0);
    assert_eq!(line("%e", &frame, 80), "ETA 24:00:00");
    frame.eta = Some(1e300);
    assert_eq!(line("%e", &frame, 80), "ETA 4166:16:00:00");
    frame.eta = Some(5.0);
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
    frame.eta = Some(21_600.0 / 1.000_000_1);
    assert_eq!(line("%I", &frame, 80), "FIN 21:45:30");
    frame.eta = Some(21_601.0);
    assert_eq!(line("%I", &frame, 80), "FIN 2024-10-04 21:45:31");
    frame.eta = Some(51_200.0);
    assert_eq!(line("%I", &frame, 80), "FIN 2024-10-05 05:58:50");
    frame.eta = None;
    assert_eq!(line("%I", &frame, 80), "FIN 15:45:30");
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
    assert_eq!(line("%300A", &short, 300).len(), 256);
    // Wider than the line: it gives way.
    assert_eq!(line("%300A", &short, 80), "");
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

// ---- narrow terminals: never wider than the width, the percentage last to go ----

const MIB: f64 = 1_048_576.0;

/// 150 MiB of 400 MiB after 3 s at 50 MiB/s.
fn midway(name: Option<&str>) -> Frame<'_> {
    Frame {
        transferred: 150 << 20,
        size: 400 << 20,
        percentage: 37.5,
        elapsed: 3.0,
        rate: 50.0 * MIB,
        avg_rate: 50.0 * MIB,
        eta: Some(5.0),
        name,
        ..Frame::default()
    }
}

#[test]
fn narrow_terminals_give_up_the_bar_first_and_the_percentage_last() {
    // The default line for a known size (`%b %t %r %p %e`): the bar shrinks as pv's does,
    // then the percentage stays alone while timer, rate, bytes and ETA give way in turn.
    let frame = midway(None);
    let table: &[(usize, &str)] = &[
        (
            60,
            " 150MiB 0:00:03 [50.0MiB/s] [===>         ]  37% ETA 0:00:05",
        ),
        (47, " 150MiB 0:00:03 [50.0MiB/s] []  37% ETA 0:00:05"),
        // pv shows " 150MiB 0:00:03 [50.0MiB/s]  ETA 0:00:05" here: no percentage.
        (46, " 150MiB 0:00:03 [50.0MiB/s]  37% ETA 0:00:05"),
        (45, " 150MiB 0:00:03 [50.0MiB/s]  37% ETA 0:00:05"),
        (44, " 150MiB 0:00:03 [50.0MiB/s]  37% ETA 0:00:05"),
        (43, " 150MiB [50.0MiB/s]  37% ETA 0:00:05"),
        (36, " 150MiB [50.0MiB/s]  37% ETA 0:00:05"),
        (35, " 150MiB  37% ETA 0:00:05"),
        (24, " 150MiB  37% ETA 0:00:05"),
        (23, " 37% ETA 0:00:05"),
        (20, " 37% ETA 0:00:05"),
        (16, " 37% ETA 0:00:05"),
        (15, " 37%"),
        (4, " 37%"),
        (3, ""),
        (1, ""),
    ];
    for &(width, want) in table {
        assert_eq!(line("%b %t %r %p %e", &frame, width), want, "width {width}");
    }
}

#[test]
fn narrow_terminals_with_a_name_and_an_unknown_size() {
    let frame = midway(Some("raw"));
    let table: &[(usize, &str)] = &[
        (
            61,
            "      raw:  150MiB 0:00:03 [50.0MiB/s] [>  ]  37% ETA 0:00:05",
        ),
        // The name's alignment padding goes after the average rate, before the timer.
        (50, "raw:  150MiB 0:00:03 [50.0MiB/s]  37% ETA 0:00:05"),
        (41, "raw:  150MiB [50.0MiB/s]  37% ETA 0:00:05"),
        (29, "raw:  150MiB  37% ETA 0:00:05"),
        (21, "raw:  37% ETA 0:00:05"),
        (20, " 37% ETA 0:00:05"),
        (15, " 37%"),
    ];
    for &(width, want) in table {
        assert_eq!(
            line("%N %b %t %r %p %e", &frame, width),
            want,
            "width {width}"
        );
    }
    // Unknown size: no percentage; the bouncing bar takes what is left, or goes.
    let unknown = Frame {
        size: 0,
        percentage: 0.0,
        ..midway(None)
    };
    let table: &[(usize, &str)] = &[
        (40, " 150MiB 0:00:03 [50.0MiB/s] [<=>       ]"),
        // Too narrow for the indicator (pv's rule): it goes, the rest fits as it is.
        (34, " 150MiB 0:00:03 [50.0MiB/s] [<=> ]"),
        (33, " 150MiB 0:00:03 [50.0MiB/s] "),
        (32, " 150MiB 0:00:03 [50.0MiB/s] "),
        (28, " 150MiB 0:00:03 [50.0MiB/s] "),
        (27, " 150MiB [50.0MiB/s] [<=>  ]"),
        (20, " 150MiB [50.0MiB/s] "),
        (19, " 150MiB [<=>      ]"),
        (13, " 150MiB "),
        (8, " 150MiB "),
        (6, "[<=> ]"),
        (5, ""),
    ];
    for &(width, want) in table {
        assert_eq!(line("%b %t %r %p", &unknown, width), want, "width {width}");
    }
}

#[test]
fn no_line_is_ever_wider_than_the_terminal() {
    let formats = [
        "%b %t %r %p %e",
        "%N %b %t %r %p %e",
        "%N %b %T %t %r %a %p %e %I %16A",
        "%p%p%{bar-plain}%L",
        "%20p %10{bar-block} %30L|%{progress-amount-only}",
        "[%20N] %{sgr:bold,red}%b%{sgr:reset} %{ratio} %p",
        "日本語のテキスト %b %p 日本語",
        "a very long literal text that is wider than most narrow terminals %p",
        "x\ty %b %p|",
    ];
    let huge = "é".repeat(300);
    let frames = [
        midway(None),
        midway(Some("raw")),
        midway(Some("日本語の名前")),
        midway(Some(&huge)),
        Frame {
            size: 0,
            percentage: 42.0,
            ..midway(None)
        },
        Frame {
            gauge: true,
            size: 0,
            max_rate: 80.0 * MIB,
            ..midway(None)
        },
        Frame {
            colour: true,
            utf8: true,
            bar_style: BarStyle::Granular,
            last_written: b"some bytes\x01\xff",
            previous_line: "a previous line of text, quite long".as_bytes(),
            ratio: Some((3, 1)),
            ..midway(Some("name"))
        },
        Frame {
            percentage: 100_000.0,
            transferred: u64::MAX,
            ..midway(None)
        },
    ];
    for format in formats {
        for frame in &frames {
            let mut had_percentage = true;
            for width in (1..=120).rev() {
                let got = line(format, frame, width);
                assert!(
                    display_width(&got) <= width,
                    "{format:?} at {width}: {got:?} is {} wide",
                    display_width(&got)
                );
                // Once the percentage is there, it stays while it has room (a narrower line
                // may have lost it: then it does not come back).
                let shown = got.contains('%');
                // Room for the percentage once every literal is shown.
                let literals: usize = Format::parse(format)
                    .segments
                    .iter()
                    .map(|s| match s {
                        Segment::Literal(text) => display_width(text),
                        _ => 0,
                    })
                    .sum();
                let room = format!(" {:3}%", frame.percentage as i64).len() + literals;
                if frame.size > 0 && format.contains("%p") && width >= room {
                    assert!(
                        shown || !had_percentage,
                        "{format:?} at {width}: percentage lost: {got:?}"
                    );
                }
                had_percentage = shown;
            }
        }
    }
}

#[test]
fn the_default_line_keeps_the_percentage_down_to_4_columns() {
    for name in [None, Some("raw"), Some("a-rather-long-name")] {
        for percentage in [0.0, 37.5, 99.9, 100.0, 250.0] {
            let frame = Frame {
                percentage,
                ..midway(name)
            };
            let want = format!("{:3}%", percentage as i64);
            for width in 4..=200 {
                let got = line("%N %b %t %r %p %e", &frame, width);
                assert!(
                    got.contains(&want),
                    "{name:?} {percentage} at {width}: {got:?}"
                );
                assert!(display_width(&got) <= width);
            }
            assert_eq!(line("%N %b %t %r %p %e", &frame, 3), "");
        }
    }
}

#[test]
fn numeric_lines_are_never_cut() {
    let frame = Frame {
        numeric: true,
        ..midway(Some("a name that is long"))
    };
    let got = line("%t %b %r %N", &frame, 10);
    assert_eq!(got, "3.0000 157286400 52428800.0000 a name that is long:");
}
