//! Tests of the option table and the getopt_long emulation: one or more per flag, then the
//! parsing mechanics and every message.

use super::*;
use std::path::Path;

fn strings(args: &[&str]) -> Vec<OsString> {
    args.iter().map(OsString::from).collect()
}

fn parsed(args: &[&str]) -> Parsed {
    parse_with("rpv", &strings(args), false)
}

/// Parses a command line that must succeed.
fn run(args: &[&str]) -> Options {
    match parsed(args) {
        Parsed::Run(opts) => *opts,
        other => panic!("{args:?} gave {other:?}"),
    }
}

/// Parses a command line that must fail; returns the message.
fn err(args: &[&str]) -> String {
    err_as("rpv", args)
}

fn err_as(argv0: &str, args: &[&str]) -> String {
    match parse_with(argv0, &strings(args), false) {
        Parsed::Error(message) => message,
        other => panic!("{args:?} gave {other:?}"),
    }
}

/// pv 1.11's short-option string; the option table must describe exactly these options.
const SHORT_OPTIONS: &str =
    "hVpteIrab8kTA:fvnqcWD:s:gl0i:w:H:N:u:F:x:L:B:CEZ:SYKOXU:R:Q:P:d:m:o:M:";

const TRY: &str = "Try `rpv --help' for more information.\n";

// ---- the table ----

#[test]
fn table_matches_pv_short_option_string() {
    let mut from_string = Vec::new();
    let mut chars = SHORT_OPTIONS.chars().peekable();
    while let Some(c) = chars.next() {
        from_string.push((c, chars.next_if_eq(&':').is_some()));
    }
    let mut from_table: Vec<(char, bool)> = flags()
        .filter(|f| !long_only(f.short))
        .map(|f| (f.short, f.takes_value))
        .collect();
    from_table.dedup();
    from_string.sort_unstable();
    from_table.sort_unstable();
    assert_eq!(from_string, from_table);
}

#[test]
fn table_long_names_are_unique_and_lowercase() {
    let all: Vec<Flag> = flags().collect();
    for (i, f) in all.iter().enumerate() {
        assert!(f
            .long
            .chars()
            .all(|c| c.is_ascii_lowercase() || c == '-' || c.is_ascii_digit()));
        assert!(all[i + 1..].iter().all(|g| g.long != f.long), "{}", f.long);
    }
}

#[test]
fn every_long_name_selects_its_short_letter() {
    for f in flags().filter(|f| !long_only(f.short)) {
        let long = format!("--{}", f.long);
        let mut args = vec![long.as_str()];
        if f.takes_value {
            args.push(value_for(f.short));
        }
        let short = format!("-{}", f.short);
        let mut short_args = vec![short.as_str()];
        short_args.extend(args.get(1));
        assert_eq!(parsed(&args), parsed(&short_args), "{long}");
    }
}

/// A value every valued option accepts alone on the command line.
fn value_for(short: char) -> &'static str {
    match short {
        'd' => "123",
        'M' => "out",
        _ => "5",
    }
}

// ---- defaults ----

#[test]
fn defaults() {
    let o = run(&[]);
    assert_eq!(o.interval, 1.0);
    assert_eq!(o.average_window, 30);
    assert_eq!(o.display_switches, 0);
    assert_eq!(o.action, Action::Transfer);
    assert_eq!(o.size, SizeArg::Auto);
    assert!(o.files.is_empty());
    let expected = Options {
        interval: 1.0,
        average_window: 30,
        ..Options::default()
    };
    assert_eq!(o, expected);
}

// ---- display switches ----

#[test]
fn test_progress() {
    assert!(!run(&[]).switches.progress);
    assert!(run(&["-p"]).switches.progress);
    assert!(run(&["--progress"]).switches.progress);
    assert!(run(&["--prog"]).switches.progress);
    assert_eq!(run(&["-p"]).display_switches, 1);
}

#[test]
fn test_timer() {
    assert!(run(&["-t"]).switches.timer);
    assert!(run(&["--timer"]).switches.timer);
    assert_eq!(run(&["--timer"]).display_switches, 1);
}

#[test]
fn test_eta() {
    assert!(run(&["-e"]).switches.eta);
    assert!(run(&["--eta"]).switches.eta);
    assert_eq!(run(&["-e"]).display_switches, 1);
}

#[test]
fn test_fineta() {
    assert!(run(&["-I"]).switches.fineta);
    assert!(run(&["--fineta"]).switches.fineta);
    assert!(run(&["--fin"]).switches.fineta);
    assert_eq!(run(&["-I"]).display_switches, 1);
}

#[test]
fn test_rate() {
    assert!(run(&["-r"]).switches.rate);
    assert!(run(&["--rate"]).switches.rate);
    assert!(!run(&["--rate"]).switches.average_rate);
    assert_eq!(run(&["-r"]).display_switches, 1);
}

#[test]
fn test_average_rate() {
    assert!(run(&["-a"]).switches.average_rate);
    assert!(run(&["--average-rate"]).switches.average_rate);
    assert_eq!(run(&["-a"]).display_switches, 1);
}

#[test]
fn test_bytes() {
    assert!(run(&["-b"]).switches.bytes);
    assert!(run(&["--bytes"]).switches.bytes);
    assert!(!run(&["-b"]).bits);
    assert_eq!(run(&["-b"]).display_switches, 1);
}

#[test]
fn test_bits() {
    let o = run(&["-8"]);
    assert!(o.bits && o.switches.bytes);
    assert!(run(&["--bits"]).switches.bytes);
    assert_eq!(o.display_switches, 1);
}

#[test]
fn test_buffer_percent() {
    let o = run(&["-T"]);
    assert!(o.switches.buffer_percent && o.no_splice);
    assert!(run(&["--buffer-percent"]).switches.buffer_percent);
    assert_eq!(o.display_switches, 1);
}

#[test]
fn test_last_written() {
    let o = run(&["-A", "16"]);
    assert_eq!(o.last_written, 16);
    assert!(o.no_splice);
    assert_eq!(o.display_switches, 1);
    assert_eq!(run(&["-A5"]).last_written, 5);
    assert_eq!(run(&["--last-written=7"]).last_written, 7);
    let zero = run(&["-A", "0"]);
    assert_eq!(
        (zero.last_written, zero.display_switches, zero.no_splice),
        (0, 1, true)
    );
    assert_eq!(
        err(&["-A", "1k"]),
        "rpv: -A: 1k: integer argument expected\n"
    );
}

#[test]
fn test_numeric() {
    let o = run(&["-n"]);
    assert!(o.numeric);
    assert_eq!(o.display_switches, 1);
    assert!(run(&["--numeric"]).numeric);
}

#[test]
fn test_quiet() {
    let o = run(&["-q"]);
    assert!(o.quiet);
    assert_eq!(o.display_switches, 1);
    assert!(run(&["--quiet"]).quiet);
}

#[test]
fn display_switches_count_occurrences() {
    assert_eq!(run(&["-pterb"]).display_switches, 5);
    assert_eq!(run(&["-p", "-p"]).display_switches, 2);
    assert_eq!(run(&["-pteIrab8TnqA", "1"]).display_switches, 12);
}

#[test]
fn non_display_options_do_not_count() {
    let args = [
        "-f", "-c", "-W", "-D", "1", "-s", "5", "-g", "-l", "-0", "-i", "2", "-m", "5", "-w", "80",
        "-H", "5", "-N", "x", "-u", "block", "-F", "%b", "-x", "window", "-v", "-k",
    ];
    assert_eq!(run(&args).display_switches, 0);
}

// ---- display modifiers ----

#[test]
fn test_si() {
    assert!(!run(&[]).si);
    assert!(run(&["-k"]).si);
    assert!(run(&["--si"]).si);
}

#[test]
fn test_format() {
    assert_eq!(run(&["-F", "%b %t"]).format.as_deref(), Some("%b %t"));
    assert_eq!(run(&["--format=%r"]).format.as_deref(), Some("%r"));
    assert_eq!(run(&["--form", "%p"]).format.as_deref(), Some("%p"));
    assert_eq!(run(&["-F%N"]).format.as_deref(), Some("%N"));
    assert_eq!(run(&["-F", ""]).format.as_deref(), Some(""));
}

#[test]
fn format_and_name_remember_the_previous_value() {
    let o = run(&["-F", "a"]);
    assert_eq!((o.prev_format, o.format.as_deref()), (None, Some("a")));
    let o = run(&["-F", "a", "-F", "b", "-F", "c"]);
    assert_eq!(
        (o.prev_format.as_deref(), o.format.as_deref()),
        (Some("b"), Some("c"))
    );
    let o = run(&["-N", "IN", "-N", "OUT"]);
    assert_eq!(
        (o.prev_name.as_deref(), o.name.as_deref()),
        (Some("IN"), Some("OUT"))
    );
}

#[test]
fn test_wait() {
    assert!(run(&["-W"]).wait);
    assert!(run(&["--wait"]).wait);
}

#[test]
fn test_delay_start() {
    assert_eq!(run(&[]).delay_start, 0.0);
    assert_eq!(run(&["-D", "2.5"]).delay_start, 2.5);
    assert_eq!(run(&["--delay-start", "0,5"]).delay_start, 0.5);
    assert_eq!(run(&["-D", "1000"]).delay_start, 1000.0);
    assert_eq!(
        err(&["-D", "-1"]),
        "rpv: -D: -1: numeric argument expected\n"
    );
    assert_eq!(
        err(&["--delay-start=x"]),
        "rpv: -D: x: numeric argument expected\n"
    );
}

#[test]
fn test_size() {
    assert_eq!(run(&["-s", "100"]).size, SizeArg::Value(100));
    assert_eq!(run(&["-s1M"]).size, SizeArg::Value(1 << 20));
    assert_eq!(run(&["--size=2 K"]).size, SizeArg::Value(2048));
    assert_eq!(run(&["--size", "8G"]).size, SizeArg::Value(8 << 30));
    assert_eq!(
        err(&["-s", "foo"]),
        "rpv: -s: foo: numeric value not understood\n"
    );
    assert_eq!(
        err(&["--size", "1KiB"]),
        "rpv: -s: 1KiB: numeric value not understood\n"
    );
}

#[test]
fn size_zero_means_auto() {
    assert_eq!(run(&["-s", "0"]).size, SizeArg::Auto);
    assert_eq!(run(&["-s", "0.5"]).size, SizeArg::Auto);
    assert_eq!(run(&["-s", "0.0001k"]).size, SizeArg::Auto);
    assert_eq!(run(&["-s", "5", "-s", "0"]).size, SizeArg::Auto);
    // The spec's "e.g. 1.5" contradicts its own conversion table (1.5 -> 1); the table wins.
    assert_eq!(run(&["-s", "1.5"]).size, SizeArg::Value(1));
}

#[test]
fn size_at_path_is_kept_as_path() {
    assert_eq!(
        run(&["-s", "@/etc/passwd"]).size,
        SizeArg::Path("/etc/passwd".into())
    );
    assert_eq!(run(&["-s@dir"]).size, SizeArg::Path("dir".into()));
    assert_eq!(run(&["-s", "@"]).size, SizeArg::Path(PathBuf::new()));
}

#[test]
fn test_gauge() {
    assert!(run(&["-g"]).gauge);
    assert!(run(&["--gauge"]).gauge);
}

#[test]
fn test_line_mode() {
    let o = run(&["-l"]);
    assert!(o.line_mode && !o.null);
    assert!(run(&["--line-mode"]).line_mode);
}

#[test]
fn test_null() {
    let o = run(&["-0"]);
    assert!(o.null && o.line_mode);
    assert!(run(&["--null"]).line_mode);
}

#[test]
fn test_interval() {
    assert_eq!(run(&["-i", "0.5"]).interval, 0.5);
    assert_eq!(run(&["--interval=2"]).interval, 2.0);
    assert_eq!(run(&["-i", "0.01"]).interval, 0.1);
    assert_eq!(run(&["-i", "0"]).interval, 0.1);
    assert_eq!(run(&["-i", "601"]).interval, 600.0);
    assert_eq!(
        err(&["-i", "abc"]),
        "rpv: -i: abc: numeric argument expected\n"
    );
    assert_eq!(
        err(&["--interval", ".5"]),
        "rpv: -i: .5: numeric argument expected\n"
    );
}

#[test]
fn test_average_rate_window() {
    assert_eq!(run(&["-m", "10"]).average_window, 10);
    assert_eq!(run(&["--average-rate-window", "60"]).average_window, 60);
    assert_eq!(run(&["-m", "0"]).average_window, 1);
    assert_eq!(
        err(&["-m", "1.5"]),
        "rpv: -m: 1.5: integer argument expected\n"
    );
}

#[test]
fn test_width() {
    assert_eq!(run(&["-w", "80"]).width, 80);
    assert_eq!(run(&["--width=120"]).width, 120);
    assert_eq!(run(&["-w", "1000000"]).width, 999_999);
    assert_eq!(run(&["-w", "4294967295"]).width, 999_999);
    // pv truncates to 32 bits (this would be 0: automatic); rpv refuses.
    assert_eq!(
        err(&["-w", "4294967296"]),
        "rpv: -w: 4294967296: integer argument too large (at most 4294967295)\n"
    );
    assert_eq!(
        err(&["-w", "1.5"]),
        "rpv: -w: 1.5: integer argument expected\n"
    );
    assert_eq!(
        err(&["--width", "-3"]),
        "rpv: -w: -3: integer argument expected\n"
    );
}

#[test]
fn test_height() {
    assert_eq!(run(&["-H", "25"]).height, 25);
    assert_eq!(run(&["--height", "5"]).height, 5);
    assert_eq!(run(&["-H", "2000000"]).height, 999_999);
    assert_eq!(err(&["-H", "x"]), "rpv: -H: x: integer argument expected\n");
}

#[test]
fn test_name() {
    assert_eq!(run(&["-N", "foo"]).name.as_deref(), Some("foo"));
    assert_eq!(run(&["--name=bar"]).name.as_deref(), Some("bar"));
    assert_eq!(run(&["-N", "a", "-N", "b"]).name.as_deref(), Some("b"));
}

#[test]
fn test_bar_style() {
    assert_eq!(run(&["-u", "block"]).bar_style.as_deref(), Some("block"));
    assert_eq!(
        run(&["--bar-style", "nonsense"]).bar_style.as_deref(),
        Some("nonsense")
    );
}

#[test]
fn test_extra_display() {
    assert_eq!(
        run(&["-x", "windowtitle"]).extra_display.as_deref(),
        Some("windowtitle")
    );
    assert_eq!(
        run(&["--extra-display=proc:%b"]).extra_display.as_deref(),
        Some("proc:%b")
    );
    for spec in [
        "window",
        "processtitle",
        "proctitle",
        "process",
        "windowtitle,proc",
        "window:%b %{unknown",
        "proc:",
    ] {
        assert_eq!(run(&["-x", spec]).extra_display.as_deref(), Some(spec));
    }
}

#[test]
fn extra_display_targets_are_the_ones_the_title_module_knows() {
    use crate::term::title::ExtraSpec;
    for word in EXTRA_TARGETS {
        assert!(ExtraSpec::parse(word).any(), "{word}");
    }
    // And a word it does not know reaches nothing, so refusing it loses nothing.
    assert!(!ExtraSpec::parse("windowtitel").any());
}

#[test]
fn misspelt_extra_display_targets_are_errors() {
    let table: &[(&str, &str)] = &[
        ("windowtitel", "windowtitel"),
        ("p:%b", "p"),
        ("window,titel", "titel"),
        ("Window", "Window"),
        (":%b", ":%b"),
        ("", ""),
        ("window,", "window,"),
    ];
    for &(spec, named) in table {
        assert_eq!(
            err(&["-x", spec]),
            format!(
                "rpv: -x: {named}: unknown display target (expected windowtitle or processtitle)\n"
            ),
            "-x {spec:?}"
        );
    }
    // Through -R too: the request is never sent.
    assert!(err(&["-R", "123", "-x", "windowtitel"]).starts_with("rpv: -x: windowtitel: "));
}

#[test]
fn values_past_64_bits_are_refused_not_wrapped() {
    // pv wraps these around: `-S -s 18446744073709551617` copies 1 byte.
    for (opt, value) in [
        ("-s", "18446744073709551616"),
        ("-s", "18446744073709551617"),
        ("-s", "16777216T"),
        ("-L", "18446744073709551617"),
        ("-B", "99999999999999999999999999999999999999"),
        ("-Z", "16777216t"),
    ] {
        assert_eq!(
            err(&[opt, value]),
            format!(
                "rpv: {opt}: {value}: numeric value too large (at most 18446744073709551615)\n"
            )
        );
    }
    assert_eq!(
        run(&["-s", "18446744073709551615"]).size,
        SizeArg::Value(u64::MAX)
    );
    assert_eq!(run(&["-L", "16777215T"]).rate_limit, 16_777_215 << 40);
    // -k applies: 18446744073709551.615k fits in SI units only.
    assert_eq!(
        run(&["-k", "-s", "18446744073709551.615k"]).size,
        SizeArg::Value(u64::MAX)
    );
    assert!(err(&["-s", "18446744073709551.615k"]).contains("too large"));
}

#[test]
fn integer_values_past_32_bits_are_refused_not_truncated() {
    for opt in ["-A", "-w", "-H", "-m", "-R", "-Q"] {
        assert_eq!(
            err(&[opt, "4294967297"]),
            format!("rpv: {opt}: 4294967297: integer argument too large (at most 4294967295)\n")
        );
        assert!(err(&[opt, "99999999999999999999999"]).contains("too large"));
    }
    // pv would message PID 1 here.
    assert!(err(&["-R", "4294967297", "-L", "1"]).contains("too large"));
    assert_eq!(run(&["-A", "4294967295"]).last_written, u32::MAX);
}

#[test]
fn buffer_delay_and_window_are_capped() {
    let gib = crate::cli::MAX_BUFFER as u64;
    assert_eq!(gib, 1 << 30);
    assert_eq!(run(&["-B", "1G"]).buffer_size, gib);
    assert_eq!(run(&["-B", "1T"]).buffer_size, gib);
    assert_eq!(run(&["-B", "18446744073709551615"]).buffer_size, gib);
    assert_eq!(run(&["-B", "1023M"]).buffer_size, 1023 << 20);
    let forever = "9".repeat(400);
    assert_eq!(run(&["-D", &forever]).delay_start, 360_000_000.0);
    assert_eq!(run(&["-i", &forever]).interval, 600.0);
    assert_eq!(run(&["-D", "360000001"]).delay_start, 360_000_000.0);
    assert_eq!(run(&["-m", "4294967295"]).average_window, 7 * 24 * 3600);
    assert_eq!(run(&["-m", "604800"]).average_window, 604_800);
}

#[test]
fn test_stats() {
    assert!(run(&["-v"]).stats);
    assert!(run(&["--stats"]).stats);
}

#[test]
fn test_force() {
    assert!(run(&["-f"]).force);
    assert!(run(&["--force"]).force);
    assert!(run(&["--forc"]).force);
}

#[test]
fn test_cursor() {
    assert!(run(&["-c"]).cursor);
    assert!(run(&["--cursor"]).cursor);
}

// ---- transfer modifiers ----

#[test]
fn test_output() {
    assert_eq!(
        run(&["-o", "out.bin"]).output.as_deref(),
        Some(Path::new("out.bin"))
    );
    assert_eq!(run(&["--output=-"]).output.as_deref(), Some(Path::new("-")));
}

#[test]
fn test_rate_limit() {
    assert_eq!(run(&[]).rate_limit, 0);
    assert_eq!(run(&["-L", "1M"]).rate_limit, 1 << 20);
    assert_eq!(run(&["-L1k"]).rate_limit, 1024);
    assert_eq!(run(&["--rate-limit", "100"]).rate_limit, 100);
    assert!(!run(&["-L", "1M"]).no_splice);
    assert_eq!(
        err(&["-L", "fast"]),
        "rpv: -L: fast: numeric value not understood\n"
    );
    assert_eq!(
        err(&["--rate-limit=1e3"]),
        "rpv: -L: 1e3: numeric value not understood\n"
    );
}

#[test]
fn test_buffer_size() {
    let o = run(&["-B", "64k"]);
    assert_eq!(o.buffer_size, 65536);
    assert!(o.no_splice);
    assert_eq!(run(&["--buffer-size=1M"]).buffer_size, 1 << 20);
    assert!(run(&["-B", "0"]).no_splice);
    assert_eq!(
        err(&["-B", "big"]),
        "rpv: -B: big: numeric value not understood\n"
    );
}

#[test]
fn test_no_splice() {
    assert!(!run(&[]).no_splice);
    assert!(run(&["-C"]).no_splice);
    assert!(run(&["--no-splice"]).no_splice);
}

#[test]
fn test_skip_errors() {
    assert_eq!(run(&[]).skip_errors, 0);
    assert_eq!(run(&["-E"]).skip_errors, 1);
    assert_eq!(run(&["-EE"]).skip_errors, 2);
    assert_eq!(run(&["--skip-errors", "-E"]).skip_errors, 2);
}

#[test]
fn test_error_skip_block() {
    let o = run(&["-Z", "4k"]);
    assert_eq!((o.error_skip_block, o.skip_errors), (4096, 1));
    assert_eq!(run(&["-E", "-E", "-Z", "512"]).skip_errors, 2);
    assert_eq!(run(&["--error-skip-block=512", "-E"]).skip_errors, 1);
    assert_eq!(run(&["-Z", "0"]).skip_errors, 1);
    assert_eq!(
        err(&["-Z", "x"]),
        "rpv: -Z: x: numeric value not understood\n"
    );
}

#[test]
fn test_stop_at_size() {
    assert!(run(&["-S"]).stop_at_size);
    assert!(run(&["--stop-at-size"]).stop_at_size);
}

#[test]
fn test_sync() {
    assert!(run(&["-Y"]).sync);
    assert!(run(&["--sync"]).sync);
}

#[test]
fn test_direct_io() {
    assert!(run(&["-K"]).direct_io);
    assert!(run(&["--direct-io"]).direct_io);
}

#[test]
fn test_sparse() {
    let o = run(&["-O"]);
    assert!(o.sparse && o.no_splice);
    assert!(run(&["--sparse"]).sparse);
    assert!(run(&["--sparse-output"]).sparse);
    // Both names are the same option, so a common prefix is not ambiguous.
    assert!(run(&["--spa"]).sparse);
    assert!(run(&["--sparse-o"]).sparse);
}

#[test]
fn test_discard() {
    let o = run(&["-X"]);
    assert!(o.discard && o.no_splice);
    assert!(run(&["--discard"]).discard);
}

#[test]
fn test_pidfile() {
    assert_eq!(
        run(&["-P", "/tmp/p"]).pidfile.as_deref(),
        Some(Path::new("/tmp/p"))
    );
    assert_eq!(
        run(&["--pidfile=x"]).pidfile.as_deref(),
        Some(Path::new("x"))
    );
}

// ---- modes ----

#[test]
fn test_store_and_forward() {
    let o = run(&["-U", "tmp", "a"]);
    assert_eq!(o.action, Action::StoreAndForward("tmp".into()));
    assert_eq!(o.files, ["a"]);
    assert_eq!(
        run(&["--store-and-forward=-"]).action,
        Action::StoreAndForward("-".into())
    );
}

#[test]
fn test_watchfd() {
    let o = run(&["-d", "123"]);
    assert_eq!(o.action, Action::WatchFd(vec!["123".into()]));
    assert!(o.files.is_empty());
    let o = run(&["-d", "1:3", "--watchfd==sshd", "-d@list", "42", "7:1"]);
    let items = ["1:3", "=sshd", "@list", "42", "7:1"]
        .map(OsString::from)
        .to_vec();
    assert_eq!(o.action, Action::WatchFd(items));
    assert!(o.files.is_empty());
    // sscanf("%u:%d") ignores what follows the numbers.
    assert!(matches!(run(&["-d", "123abc"]).action, Action::WatchFd(_)));
    assert!(matches!(run(&["-d", "123:"]).action, Action::WatchFd(_)));
    assert!(matches!(run(&["-d", " 12:x"]).action, Action::WatchFd(_)));
}

#[test]
fn watchfd_item_errors() {
    let expected = "rpv: -d: process ID or pid:fd pair expected\n";
    assert_eq!(err(&["-d", "abc"]), expected);
    assert_eq!(err(&["-d", ""]), expected);
    assert_eq!(err(&["-d", ":3"]), expected);
    assert_eq!(err(&["-d", "0"]), "rpv: -d: invalid process ID\n");
    assert_eq!(err(&["-d", "00:1"]), "rpv: -d: invalid process ID\n");
    assert_eq!(err(&["-d", "-5"]), "rpv: -d: invalid process ID\n");
    assert_eq!(err(&["-d", "="]), "rpv: -d =: missing process name\n");
    assert_eq!(err(&["-d", "@"]), "rpv: -d @: missing filename\n");
    assert_eq!(err(&["-d", "1", "x"]), expected);
}

#[test]
fn test_remote() {
    let o = run(&["-R", "1234", "-L", "1M"]);
    assert_eq!(o.action, Action::Remote(1234));
    assert_eq!(o.rate_limit, 1 << 20);
    assert_eq!(run(&["--remote=5"]).action, Action::Remote(5));
    assert_eq!(err(&["-R", "x"]), "rpv: -R: x: integer argument expected\n");
}

#[test]
fn test_query() {
    assert_eq!(run(&["-Q", "99"]).action, Action::Query(99));
    assert_eq!(run(&["--query", "7"]).action, Action::Query(7));
    assert_eq!(
        err(&["--query=1.0"]),
        "rpv: -Q: 1.0: integer argument expected\n"
    );
}

#[test]
fn test_monitor() {
    let o = run(&["-M", "out", "--", "ls", "-l"]);
    assert_eq!(o.action, Action::Monitor(MonitorSide::Out));
    assert_eq!(o.files, ["ls", "-l"]);
    assert!(!o.line_mode);
    let o = run(&["--monitor=both", "cat"]);
    assert_eq!(o.action, Action::Monitor(MonitorSide::Both));
    assert_eq!(o.files, ["cat"]);
}

#[test]
fn monitor_sides_match_by_prefix() {
    let table = [
        ("0", MonitorSide::In),
        ("in", MonitorSide::In),
        ("inx", MonitorSide::In),
        ("stdin", MonitorSide::In),
        ("1", MonitorSide::Out),
        ("out", MonitorSide::Out),
        ("outfoo", MonitorSide::Out),
        ("stdout", MonitorSide::Out),
        ("2", MonitorSide::Both),
        ("2abc", MonitorSide::Both),
        ("both", MonitorSide::Both),
    ];
    for (side, want) in table {
        assert_eq!(
            run(&["-M", side, "cmd"]).action,
            Action::Monitor(want),
            "{side}"
        );
    }
    for bad in ["", "std", "i", "ou", "bo", "IN", "3", "x"] {
        let expected = format!("rpv: -M: {bad}: invalid side specification\n");
        assert_eq!(err(&["-M", bad, "cmd"]), expected);
    }
}

#[test]
fn monitor_without_operands_still_parses_options() {
    // Without `--` the command's options are rpv's (GNU permutation).
    let o = run(&["-M", "out", "ls", "-l"]);
    assert_eq!(o.files, ["ls"]);
    assert!(o.line_mode);
}

#[test]
fn last_mode_wins() {
    assert_eq!(run(&["-d", "1", "-R", "2"]).action, Action::Remote(2));
    assert_eq!(
        run(&["-R", "2", "-U", "f"]).action,
        Action::StoreAndForward("f".into())
    );
    assert_eq!(
        run(&["-U", "f", "-d", "3"]).action,
        Action::WatchFd(vec!["3".into()])
    );
    assert_eq!(run(&["-Q", "2", "-Q", "3"]).action, Action::Query(3));
}

#[test]
fn remote_after_watchfd_skips_the_watchfd_checks() {
    assert_eq!(run(&["-d", "1", "-l", "-R", "2"]).action, Action::Remote(2));
}

// ---- help and version ----

#[test]
fn test_help() {
    assert_eq!(parsed(&["-h"]), Parsed::Help);
    assert_eq!(parsed(&["--help"]), Parsed::Help);
    assert_eq!(parsed(&["--hel"]), Parsed::Help);
    assert_eq!(parsed(&["-h", "--bogus"]), Parsed::Help);
    assert_eq!(parsed(&["-ph"]), Parsed::Help);
    assert_eq!(parsed(&["-hz"]), Parsed::Help);
    assert_eq!(parsed(&["file", "-h"]), Parsed::Help);
    assert_eq!(
        err(&["--bogus", "-h"]),
        format!("rpv: unrecognized option '--bogus'\n{TRY}")
    );
    assert_eq!(
        err(&["-s", "x", "-h"]),
        "rpv: -s: x: numeric value not understood\n"
    );
}

#[test]
fn test_version() {
    assert_eq!(parsed(&["-V"]), Parsed::Version);
    assert_eq!(parsed(&["--version"]), Parsed::Version);
    assert_eq!(parsed(&["--vers"]), Parsed::Version);
    assert_eq!(parsed(&["-V", "-h"]), Parsed::Version);
    assert_eq!(parsed(&["-h", "-V"]), Parsed::Help);
}

// ---- mechanics ----

#[test]
fn bundling() {
    let o = run(&["-pterb"]);
    assert!(
        o.switches.progress
            && o.switches.timer
            && o.switches.eta
            && o.switches.rate
            && o.switches.bytes
    );
    let o = run(&["-qSs5"]);
    assert!(o.quiet && o.stop_at_size);
    assert_eq!(o.size, SizeArg::Value(5));
    let o = run(&["-XfnbSs", "8G"]);
    assert!(o.discard && o.force && o.numeric && o.switches.bytes && o.stop_at_size);
    assert_eq!(o.size, SizeArg::Value(8 << 30));
}

#[test]
fn attached_and_separate_values() {
    assert_eq!(run(&["-s5"]).size, SizeArg::Value(5));
    assert_eq!(run(&["-s", "5"]).size, SizeArg::Value(5));
    assert_eq!(run(&["--size=5"]).size, SizeArg::Value(5));
    assert_eq!(run(&["--size", "5"]).size, SizeArg::Value(5));
    // A separate value is taken whole, even if it looks like an option.
    assert_eq!(run(&["-N", "-p"]).name.as_deref(), Some("-p"));
    assert_eq!(run(&["--name", "--force"]).name.as_deref(), Some("--force"));
    assert_eq!(run(&["-N", "--"]).name.as_deref(), Some("--"));
    assert_eq!(run(&["--name=a=b"]).name.as_deref(), Some("a=b"));
    assert_eq!(run(&["--name="]).name.as_deref(), Some(""));
}

#[test]
fn permutation() {
    let o = run(&["a", "-q", "b", "-s", "5", "c"]);
    assert!(o.quiet);
    assert_eq!(o.files, ["a", "b", "c"]);
    assert_eq!(o.size, SizeArg::Value(5));
}

#[test]
fn single_dash_is_an_operand() {
    let o = run(&["-", "-q", "-"]);
    assert_eq!(o.files, ["-", "-"]);
    assert!(o.quiet);
}

#[test]
fn double_dash_ends_options() {
    let o = run(&["a", "--", "-q", "--size", "--"]);
    assert!(!o.quiet);
    assert_eq!(o.files, ["a", "-q", "--size", "--"]);
}

#[test]
fn posixly_correct_stops_at_first_operand() {
    let args = strings(&["-p", "a", "-q", "--", "b"]);
    let Parsed::Run(o) = parse_with("rpv", &args, true) else {
        panic!("POSIX parse failed");
    };
    assert!(o.switches.progress && !o.quiet);
    assert_eq!(o.files, ["a", "-q", "--", "b"]);
}

#[test]
fn long_prefixes() {
    assert!(run(&["--prog"]).switches.progress);
    assert_eq!(run(&["--form", "%b"]).format.as_deref(), Some("%b"));
    assert_eq!(run(&["--siz=3"]).size, SizeArg::Value(3));
    assert_eq!(run(&["--average-rate-w", "9"]).average_window, 9);
    assert_eq!(
        run(&["--wat", "9"]).action,
        Action::WatchFd(vec!["9".into()])
    );
    // An exact name wins over longer names it prefixes.
    assert!(run(&["--rate"]).switches.rate);
    assert!(run(&["--average-rate"]).switches.average_rate);
    assert!(run(&["--si"]).si);
}

#[test]
fn ambiguous_prefixes() {
    assert_eq!(
        err(&["--s"]),
        format!(
            "rpv: option '--s' is ambiguous; possibilities: '--si' '--size' '--stats' '--skip-errors' \
             '--stop-at-size' '--sync' '--sparse' '--sparse-output' '--store-and-forward'\n{TRY}"
        )
    );
    assert_eq!(
        err(&["--ave=3"]),
        format!(
            "rpv: option '--ave=3' is ambiguous; possibilities: '--average-rate' \
             '--average-rate-window'\n{TRY}"
        )
    );
    assert_eq!(
        err(&["--b"]),
        format!(
            "rpv: option '--b' is ambiguous; possibilities: '--bytes' '--bits' \
             '--buffer-percent' '--bar-style' '--buffer-size'\n{TRY}"
        )
    );
}

#[test]
fn later_option_wins() {
    assert_eq!(run(&["-s", "1", "-s", "2"]).size, SizeArg::Value(2));
    assert_eq!(run(&["-L", "1", "--rate-limit", "2"]).rate_limit, 2);
    assert_eq!(run(&["-i", "2", "-i", "3"]).interval, 3.0);
    assert_eq!(run(&["-w", "10", "-w", "0"]).width, 0);
    assert_eq!(
        run(&["-o", "a", "-o", "b"]).output.as_deref(),
        Some(Path::new("b"))
    );
    assert_eq!(run(&["-s", "@f", "-s", "3"]).size, SizeArg::Value(3));
}

#[test]
fn si_affects_only_later_values() {
    assert_eq!(run(&["-k", "-s", "1.5k"]).size, SizeArg::Value(1500));
    assert_eq!(run(&["-s", "1k", "-k"]).size, SizeArg::Value(1024));
    let o = run(&["-L", "1k", "--si", "-B", "1k", "-Z", "2k"]);
    assert_eq!(
        (o.rate_limit, o.buffer_size, o.error_skip_block),
        (1024, 1000, 2000)
    );
    assert!(o.si);
}

// ---- getopt diagnostics ----

#[test]
fn unrecognized_long_option() {
    assert_eq!(
        err(&["--bogus"]),
        format!("rpv: unrecognized option '--bogus'\n{TRY}")
    );
    assert_eq!(
        err(&["--bogus=1"]),
        format!("rpv: unrecognized option '--bogus=1'\n{TRY}")
    );
    assert_eq!(
        err(&["--no-progress"]),
        format!("rpv: unrecognized option '--no-progress'\n{TRY}")
    );
    assert_eq!(
        err(&["---p"]),
        format!("rpv: unrecognized option '---p'\n{TRY}")
    );
}

#[test]
fn invalid_short_option() {
    assert_eq!(err(&["-z"]), format!("rpv: invalid option -- 'z'\n{TRY}"));
    assert_eq!(err(&["-pz"]), format!("rpv: invalid option -- 'z'\n{TRY}"));
    assert_eq!(err(&["-!"]), format!("rpv: invalid option -- '!'\n{TRY}"));
    assert_eq!(err(&["-p-"]), format!("rpv: invalid option -- '-'\n{TRY}"));
}

#[test]
fn missing_values() {
    assert_eq!(
        err(&["-x"]),
        format!("rpv: option requires an argument -- 'x'\n{TRY}")
    );
    assert_eq!(
        err(&["-qs"]),
        format!("rpv: option requires an argument -- 's'\n{TRY}")
    );
    assert_eq!(
        err(&["--size"]),
        format!("rpv: option '--size' requires an argument\n{TRY}")
    );
    assert_eq!(
        err(&["--siz"]),
        format!("rpv: option '--size' requires an argument\n{TRY}")
    );
}

#[test]
fn value_given_to_a_switch() {
    assert_eq!(
        err(&["--force=yes"]),
        format!("rpv: option '--force' doesn't allow an argument\n{TRY}")
    );
    assert_eq!(
        err(&["--forc="]),
        format!("rpv: option '--force' doesn't allow an argument\n{TRY}")
    );
}

#[test]
fn glibc_messages_use_full_argv0_and_pv_messages_the_basename() {
    let try_line = "Try `rpv --help' for more information.\n";
    assert_eq!(
        err_as("./target/rpv", &["--bogus"]),
        format!("./target/rpv: unrecognized option '--bogus'\n{try_line}")
    );
    assert_eq!(
        err_as("/usr/bin/rpv", &["-s", "foo"]),
        "rpv: -s: foo: numeric value not understood\n"
    );
    assert_eq!(
        err_as("/opt/pv", &["-z"]),
        "/opt/pv: invalid option -- 'z'\nTry `pv --help' for more information.\n"
    );
}

#[test]
fn errors_are_reported_in_order() {
    assert_eq!(
        err(&["-s", "x", "--bogus"]),
        "rpv: -s: x: numeric value not understood\n"
    );
    assert_eq!(
        err(&["--bogus", "-s", "x"]),
        format!("rpv: unrecognized option '--bogus'\n{TRY}")
    );
}

// ---- mode checks ----

#[test]
fn watchfd_rejects_transfer_modifiers() {
    let expected =
        "rpv: cannot use line mode or transfer modifier options when watching file descriptors\n";
    for extra in [
        &["-l"][..],
        &["-0"],
        &["-S"],
        &["-E"],
        &["-Z", "1"],
        &["-B", "1"],
        &["-L", "1"],
    ] {
        let mut args = vec!["-d", "1"];
        args.extend_from_slice(extra);
        assert_eq!(err(&args), expected, "{extra:?}");
    }
    // Zero values of -B and -L are "not given"; -K -Y -X -O are accepted silently.
    assert!(matches!(
        run(&["-d", "1", "-B", "0", "-L", "0", "-KYXO"]).action,
        Action::WatchFd(_)
    ));
}

#[test]
fn watchfd_rejects_other_modes_and_cursor() {
    assert_eq!(
        err(&["-d", "1", "-c"]),
        "rpv: cannot use cursor positioning when watching file descriptors\n"
    );
    assert_eq!(
        err(&["-R", "5", "-d", "1"]),
        "rpv: cannot use remote control when watching file descriptors\n"
    );
    assert_eq!(
        err(&["-Q", "5", "-d", "1"]),
        "rpv: cannot use remote query when watching file descriptors\n"
    );
    assert_eq!(
        err(&["-d", "1", "-o", "f"]),
        "rpv: -o: cannot transfer files when watching file descriptors\n"
    );
}

#[test]
fn remote_and_query_together() {
    let expected = "rpv: cannot use remote control and remote query together\n";
    assert_eq!(err(&["-R", "1", "-Q", "2"]), expected);
    assert_eq!(err(&["-Q", "1", "-R", "2"]), expected);
}

#[test]
fn monitor_conflicts() {
    assert_eq!(
        err(&["-R", "1", "-M", "out", "cmd"]),
        "rpv: -R: monitor mode cannot be specified with this option\n"
    );
    assert_eq!(
        err(&["-M", "out", "-Q", "1"]),
        "rpv: -Q: monitor mode cannot be specified with this option\n"
    );
    let expected = "rpv: monitor mode cannot be used with store-and-forward\n";
    assert_eq!(err(&["-U", "f", "-M", "in", "cmd"]), expected);
    assert_eq!(err(&["-M", "in", "-U", "f", "cmd"]), expected);
    assert_eq!(
        err(&["-M", "in"]),
        "rpv: -M: a command to run must be specified\n"
    );
    assert_eq!(
        err(&["-M", "in", "--"]),
        "rpv: -M: a command to run must be specified\n"
    );
}

#[test]
fn remote_and_query_take_no_files() {
    assert_eq!(
        err(&["-R", "1", "f"]),
        "rpv: -R: files cannot be specified with this option\n"
    );
    assert_eq!(
        err(&["f", "-Q", "1"]),
        "rpv: -Q: files cannot be specified with this option\n"
    );
}

#[test]
fn pipeline_option() {
    assert_eq!(run(&["--pipeline=42"]).action, Action::Pipeline(Some(42)));
    assert_eq!(run(&["--pipeline"]).action, Action::Pipeline(None));
    // An optional value must be attached: the next word is an operand.
    let o = run(&["--pipeline", "in.bin"]);
    assert_eq!(o.action, Action::Pipeline(None));
    assert_eq!(o.files, ["in.bin"]);
    // Unique prefixes of rpv's own names work; pv's own prefixes keep their meaning.
    assert_eq!(run(&["--pip=7"]).action, Action::Pipeline(Some(7)));
    assert_eq!(run(&["--pi", "x"]).pidfile.as_deref(), Some(Path::new("x")));
    // A later mode option wins, as for pv's modes; an earlier one is refused, as every
    // option that does not apply to watching a pipeline is.
    assert_eq!(run(&["--pipeline=5", "-Q", "6"]).action, Action::Query(6));
    assert_eq!(
        err(&["-Q", "6", "--pipeline=5"]),
        "rpv: -Q: cannot be used with --pipeline=PID\n"
    );
    // It is not a short-option letter, and -R does not send it.
    assert!(!run(&["--pipeline=5"]).given_letters.contains(PIPELINE));
    for bad in ["", "0", "x", "-3", "+3", "12a", "99999999999"] {
        assert_eq!(
            err(&[&format!("--pipeline={bad}")]),
            format!("rpv: --pipeline: {bad}: invalid process ID\n")
        );
    }
    assert_eq!(
        err(&["--pipeline=5", "file"]),
        "rpv: --pipeline: files cannot be specified with a process ID\n"
    );
    // What applies to watching a pipeline.
    let o = run(&[
        "--pipeline=5",
        "-i",
        "0.5",
        "-w",
        "90",
        "-H",
        "20",
        "-f",
        "-q",
        "-v",
        "-k",
        "-m",
        "10",
        "-D",
        "1",
        "-P",
        "pid",
        "--json",
        "--log",
    ]);
    assert_eq!(o.action, Action::Pipeline(Some(5)));
    // Everything else is refused, naming the first such option (issue 18 item 6).
    for (args, name) in [
        (&["-L", "1M"][..], "-L"),
        (&["--rate-limit", "1M"], "-L"),
        (&["-S"], "-S"),
        (&["-o", "out"], "-o"),
        (&["-l"], "-l"),
        (&["-0"], "-0"),
        (&["-U", "store"], "-U"),
        (&["-R", "7"], "-R"),
        (&["-n"], "-n"),
        (&["-F", "%b"], "-F"),
        (&["--each"], "--each"),
        (&["-N", "x"], "-N"),
        (&["-s", "1G"], "-s"),
        (&["-p"], "-p"),
        (&["-c"], "-c"),
        (&["-x", "windowtitle"], "-x"),
        (&["-B", "1M"], "-B"),
        (&["-E"], "-E"),
        (&["--tee-error", "exit"], "--tee-error"),
        (&["-q", "-d", "7"], "-d"),
    ] {
        let mut line = args.to_vec();
        line.push("--pipeline=5");
        assert_eq!(
            err(&line),
            format!("rpv: {name}: cannot be used with --pipeline=PID\n"),
            "{args:?}"
        );
    }
    // Inside a transfer (no PID) every option applies.
    assert_eq!(run(&["--pipeline", "-L", "1M", "-n"]).rate_limit, 1 << 20);
    assert_eq!(
        err(&["--pipelines"]),
        "rpv: unrecognized option '--pipelines'\n".to_string()
            + "Try `rpv --help' for more information.\n"
    );
}

#[test]
fn tee_is_repeatable_and_takes_its_error_mode() {
    let o = run(&[
        "--tee",
        "a",
        "--tee=b",
        "-q",
        "--tee-e",
        "exit-nopipe",
        "in",
    ]);
    assert_eq!(o.tees, [Path::new("a"), Path::new("b")]);
    assert_eq!(o.files, ["in"]);
    assert_eq!(o.tee_error, TeeErrorMode::ExitNoPipe);
    let o = run(&[]);
    assert!(o.tees.is_empty());
    assert_eq!(o.tee_error, TeeErrorMode::Warn);
    for (name, mode) in TeeErrorMode::NAMES {
        assert_eq!(run(&["--tee-error", name]).tee_error, mode);
    }
    assert_eq!(
        run(&["--tee-error=exit", "--tee-error=warn"]).tee_error,
        TeeErrorMode::Warn
    );
    // Long names only: the private identities are not short options.
    assert!(matches!(parsed(&["-\u{E005}", "x"]), Parsed::Error(_)));
    // A pv prefix keeps its meaning: --t is pv's --timer alone.
    assert!(run(&["--t"]).switches.timer);
}

#[test]
fn tee_messages() {
    assert_eq!(
        err(&["--tee-error", "fatal"]),
        "rpv: --tee-error: fatal: invalid mode (one of: warn, warn-nopipe, exit, exit-nopipe)\n"
    );
    assert_eq!(
        err(&["--tee"]),
        format!("rpv: option '--tee' requires an argument\n{TRY}")
    );
    assert_eq!(
        err(&["--te", "x"]),
        format!(
            "rpv: option '--te' is ambiguous; possibilities: '--tee' '--tee-error' \
             '--term-progress'\n{TRY}"
        )
    );
    for (args, message) in [
        (
            &["--tee", "x", "-d", "1"][..],
            "--tee: cannot transfer files when watching file descriptors",
        ),
        (
            &["--tee", "x", "-R", "1"][..],
            "--tee: cannot be used with -R",
        ),
        (
            &["--tee", "x", "-Q", "1"][..],
            "--tee: cannot be used with -Q",
        ),
        (
            &["--tee", "x", "-M", "out", "cmd"][..],
            "--tee: cannot be used with -M",
        ),
        (
            &["--tee", "-"][..],
            "--tee -: standard output is already the output",
        ),
        (
            &["--tee", "-", "-o", "-"][..],
            "--tee -: standard output is already the output",
        ),
    ] {
        assert_eq!(err(args), format!("rpv: {message}\n"), "{args:?}");
    }
    assert_eq!(run(&["--tee", "-", "-o", "f"]).tees, [Path::new("-")]);
}

#[test]
fn integration_options() {
    let o = run(&[]);
    assert_eq!(o.term_progress, TermProgress::Auto);
    assert_eq!(o.metrics_file, None);
    assert_eq!(o.stall_timeout, None);
    for (name, when) in TermProgress::NAMES {
        assert_eq!(run(&["--term-progress", name]).term_progress, when);
    }
    assert_eq!(
        run(&["--term-progress=never", "--term-progress=always"]).term_progress,
        TermProgress::Always,
        "the later one wins"
    );
    let o = run(&[
        "--metrics-file",
        "/var/lib/x/rpv.prom",
        "--stall-timeout=1h30m",
        "in",
    ]);
    assert_eq!(
        o.metrics_file.as_deref(),
        Some(Path::new("/var/lib/x/rpv.prom"))
    );
    assert_eq!(o.stall_timeout, Some(5400.0));
    assert_eq!(o.files, ["in"]);
    assert_eq!(run(&["--stall-timeout", "0.5"]).stall_timeout, Some(0.5));
    assert_eq!(
        run(&["--stall-timeout", "5m", "--stall-timeout", "0"]).stall_timeout,
        None,
        "0 turns an earlier timeout off"
    );
    // Unique prefixes of rpv's own names work; pv's prefixes keep their meaning.
    assert_eq!(run(&["--stall", "3"]).stall_timeout, Some(3.0));
    assert!(run(&["--m", "out", "cmd"]).action == Action::Monitor(MonitorSide::Out));
}

#[test]
fn integration_messages() {
    assert_eq!(
        err(&["--term-progress", "yes"]),
        "rpv: --term-progress: yes: invalid value (one of: auto, always, never)\n"
    );
    for bad in ["", "5x", "-1", "1h30", "soon"] {
        assert_eq!(
            err(&["--stall-timeout", bad]),
            format!(
                "rpv: --stall-timeout: {bad}: invalid duration (seconds, or numbers with a \
                 unit: ms, s, m, h, d; for example 30, 90s, 1.5m, 1h30m)\n"
            ),
            "{bad:?}"
        );
    }
    assert_eq!(
        err(&["--metrics-file"]),
        format!("rpv: option '--metrics-file' requires an argument\n{TRY}")
    );
}

#[test]
fn the_voice_is_found_past_usage_errors() {
    use crate::cli::{voice_of, Voice};
    let voice = |args: &[&str]| voice_of(&strings(args));
    assert_eq!(voice(&["--json", "-A1e3", "x"]), Voice::Json);
    assert_eq!(voice(&["-A1e3", "--bogus", "--json"]), Voice::Json);
    assert_eq!(
        voice(&["--js", "-Q"]),
        Voice::Json,
        "a prefix, and a value missing"
    );
    assert_eq!(voice(&["-p%q", "--json"]), Voice::Json);
    assert_eq!(voice(&["-pZ", "--json"]), Voice::Display, "the value of -Z");
    assert_eq!(voice(&["--json", "--log", "--nope"]), Voice::Log);
    assert_eq!(voice(&["--log", "-ä", "--json"]), Voice::Json);
    assert_eq!(voice(&["-N", "--json", "x"]), Voice::Display, "a value");
    assert_eq!(voice(&["--", "--json"]), Voice::Display, "an operand");
    assert_eq!(voice(&["-M", "out", "--", "cmd", "--json"]), Voice::Display);
    assert_eq!(voice(&[]), Voice::Display);
    // Where the command line parses, the voice is the options'.
    assert_eq!(run(&["--log", "--json", "-q"]).voice, Voice::Json);
    assert_eq!(run(&["--json", "--log"]).voice, Voice::Log);
}

// ---- --top ----

#[test]
fn top_and_its_metrics_options() {
    let o = run(&["--top", "-i", "2", "--json"]);
    assert_eq!(o.action, Action::Top);
    assert_eq!(o.metrics_flows, None, "the default, ten, is the plan's");
    let o = run(&[
        "--top",
        "--metrics-file",
        "x.prom",
        "--metrics-flows",
        "3",
        "--metrics-pid",
    ]);
    assert_eq!(o.metrics_flows, Some(3));
    assert!(o.metrics_pid);
    assert!(!o.once);
    let o = run(&["--top", "--once", "--json", "-i", "0.2"]);
    assert!(o.once && o.voice == crate::cli::Voice::Json);
    assert_eq!(
        run(&["--metrics-flows", "0", "--top"]).metrics_flows,
        Some(0)
    );
    assert_eq!(
        err(&["--top", "--metrics-flows", "-1"]),
        "rpv: --metrics-flows: -1: invalid number of flows (0 to 10000)\n"
    );
    assert_eq!(
        err(&["--top", "--metrics-flows", "10001"]),
        "rpv: --metrics-flows: 10001: invalid number of flows (0 to 10000)\n"
    );
    assert_eq!(
        err(&["--top", "-L", "1M"]),
        "rpv: -L: cannot be used with --top\n"
    );
    assert_eq!(
        err(&["--top", "--tee", "x"]),
        "rpv: --tee: cannot be used with --top\n"
    );
    assert_eq!(
        err(&["--top", "file"]),
        "rpv: --top: files cannot be specified with --top\n"
    );
    // The last mode wins, as with the other modes.
    assert_eq!(
        run(&["--top", "-d", "1"]).action,
        Action::WatchFd(vec!["1".into()])
    );
}
