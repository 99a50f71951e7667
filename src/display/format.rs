//! Format-string parsing.
//!
//! Owns: turning `-F` text (or the switch-derived default) into [`Segment`]s once, before the
//! first update. Parsing never fails: anything unknown or malformed becomes literal text,
//! exactly as pv prints it. Unlike pv, a trailing `%` or an unterminated `%{name` at the end
//! never reads past the string: it is emitted as the literal text, with no
//! NUL byte.

use super::BarStyle;

/// pv's parser limit: further text is dropped silently.
const MAX_SEGMENTS: usize = 100;
/// Chosen sizes are clamped to this (a negative `%-5t` wraps to a huge value first).
const MAX_CHOSEN_SIZE: u64 = 65_535;

/// One parsed piece of a format string.
///
/// `width`/`count` fields hold the number written between `%` and the sequence name
/// (the "chosen size"); `None` when it was absent or zero.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Segment {
    /// Literal text, copied as is.
    Literal(String),
    /// `%p`, `%{progress}`: bar with `[`/`]` and amount text, in the `-u` style. Expands to
    /// fill the line unless `width` is given.
    Progress {
        /// Exact width in columns, if chosen.
        width: Option<usize>,
    },
    /// `%{progress-bar-only}` (`style: None`, the `-u` style) or `%{bar-STYLE}`: the bar
    /// alone. Expands unless `width` is given.
    BarOnly {
        /// Forced style; `None` means the `-u` default.
        style: Option<BarStyle>,
        /// Exact width in columns, if chosen.
        width: Option<usize>,
    },
    /// `%{progress-amount-only}`: the percentage (or gauge maximum) text alone.
    ProgressAmount,
    /// `%t`, `%{timer}`: elapsed time.
    Timer,
    /// `%e`, `%{eta}`: estimated time left.
    Eta,
    /// `%I`, `%{fineta}`: estimated local time of completion.
    FinEta,
    /// `%r`, `%{rate}`: current rate.
    Rate,
    /// `%a`, `%{average-rate}`: windowed average rate.
    AverageRate,
    /// `%b`, `%{bytes}`, `%{transferred}`: amount transferred.
    Bytes,
    /// `%{ratio}`: monitor-mode in:out ratio.
    Ratio,
    /// `%T`, `%{buffer-percent}`: transfer buffer fill.
    BufferPercent,
    /// `%{bottleneck}` (beyond pv): which side this stage waits on.
    Bottleneck,
    /// `%nA`, `%n{last-written}`: the last `count` bytes written (at most 256; 0 = nothing).
    LastWritten {
        /// Number of bytes shown.
        count: usize,
    },
    /// `%nL`, `%n{previous-line}`: the last complete line written. Expands unless `width` is
    /// given.
    PreviousLine {
        /// Exact width in columns, if chosen.
        width: Option<usize>,
    },
    /// `%N`, `%{name}`: the `-N` name, right-aligned in `width` (default 9) plus `:`.
    Name {
        /// Alignment width, if chosen.
        width: Option<usize>,
    },
    /// `%{sgr:LIST}`: a colour/attribute escape with these SGR codes (may be empty).
    Sgr {
        /// Codes, in order.
        codes: Vec<u8>,
    },
}

impl Segment {
    /// True for components that share the leftover line width when no size was chosen.
    pub(crate) fn is_dynamic(&self) -> bool {
        matches!(
            self,
            Segment::Progress { width: None }
                | Segment::BarOnly { width: None, .. }
                | Segment::PreviousLine { width: None }
        )
    }
}

/// A parsed format: the segments, in order (at most 100, like pv).
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Format {
    /// The segments.
    pub segments: Vec<Segment>,
}

impl Format {
    /// Parses a format string; never fails (unknown sequences become literal text).
    pub(crate) fn parse(text: &str) -> Format {
        let mut segments = Vec::new();
        let mut rest = text;
        while !rest.is_empty() && segments.len() < MAX_SEGMENTS {
            if let Some(after) = rest.strip_prefix('%') {
                let (segment, used) = parse_sequence(after);
                segments.push(segment);
                rest = &after[used..];
            } else {
                let end = rest.find('%').unwrap_or(rest.len());
                segments.push(Segment::Literal(rest[..end].to_string()));
                rest = &rest[end..];
            }
        }
        Format { segments }
    }
}

/// Parses one sequence; `after` is the text following its `%`. Returns the segment and how
/// many bytes of `after` it used.
fn parse_sequence(after: &str) -> (Segment, usize) {
    let (number, number_len) = parse_number(after);
    let body = &after[number_len..];
    let name_len = if let Some(inner) = body.strip_prefix('{') {
        match inner.find(['}', '%']) {
            Some(at) if inner[at..].starts_with('}') => at + 2,
            // Unterminated: stop before the `%`, which starts the next sequence.
            Some(at) => at + 1,
            None => body.len(),
        }
    } else {
        body.chars().next().map_or(0, char::len_utf8)
    };
    let name = &body[..name_len];
    let used = number_len + name_len;
    let segment = match name {
        "%" => Segment::Literal("%".to_string()),
        _ => {
            lookup(name, number).unwrap_or_else(|| Segment::Literal(format!("%{}", &after[..used])))
        }
    };
    (segment, used)
}

/// The optional chosen size after `%`, with C `strtoul` semantics (leading white space and a
/// sign accepted). Returns the size (`None` if absent or zero) and the bytes consumed; a number
/// that would run to the end of the text is not consumed (a trailing `%20` is literal).
fn parse_number(text: &str) -> (Option<usize>, usize) {
    let bytes = text.as_bytes();
    let mut at = bytes
        .iter()
        .take_while(|b| matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r'))
        .count();
    let negative = bytes.get(at) == Some(&b'-');
    if matches!(bytes.get(at), Some(b'-' | b'+')) {
        at += 1;
    }
    let digits = bytes[at..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count();
    if digits == 0 || at + digits == bytes.len() {
        return (None, 0);
    }
    let value = bytes[at..at + digits].iter().fold(0u64, |acc, &d| {
        acc.saturating_mul(10).saturating_add(u64::from(d - b'0'))
    });
    // strtoul negates in unsigned arithmetic: any non-zero negative value is huge.
    let value = if negative && value != 0 {
        MAX_CHOSEN_SIZE
    } else {
        value.min(MAX_CHOSEN_SIZE)
    };
    let size = usize::try_from(value).ok().filter(|&v| v > 0);
    (size, at + digits)
}

/// The component for a sequence name (`p` or `{progress}`), if it is one.
fn lookup(name: &str, number: Option<usize>) -> Option<Segment> {
    let width = number;
    let segment = match name {
        "p" | "{progress}" => Segment::Progress { width },
        "{progress-bar-only}" => Segment::BarOnly { style: None, width },
        "{bar-plain}" => Segment::BarOnly {
            style: Some(BarStyle::Plain),
            width,
        },
        "{bar-block}" => Segment::BarOnly {
            style: Some(BarStyle::Block),
            width,
        },
        "{bar-granular}" => Segment::BarOnly {
            style: Some(BarStyle::Granular),
            width,
        },
        "{bar-shaded}" => Segment::BarOnly {
            style: Some(BarStyle::Shaded),
            width,
        },
        "{progress-amount-only}" => Segment::ProgressAmount,
        "t" | "{timer}" => Segment::Timer,
        "e" | "{eta}" => Segment::Eta,
        "I" | "{fineta}" => Segment::FinEta,
        "r" | "{rate}" => Segment::Rate,
        "a" | "{average-rate}" => Segment::AverageRate,
        "b" | "{bytes}" | "{transferred}" => Segment::Bytes,
        "{ratio}" => Segment::Ratio,
        "T" | "{buffer-percent}" => Segment::BufferPercent,
        "{bottleneck}" => Segment::Bottleneck,
        "A" | "{last-written}" => Segment::LastWritten {
            count: number.unwrap_or(0).min(256),
        },
        "L" | "{previous-line}" => Segment::PreviousLine { width },
        "N" | "{name}" => Segment::Name { width },
        _ => {
            let list = name.strip_prefix("{sgr:")?.strip_suffix('}')?;
            Segment::Sgr {
                codes: parse_sgr_list(list),
            }
        }
    };
    Some(segment)
}

/// `%{sgr:LIST}` items, split on `,` or `;`; unknown items are ignored.
fn parse_sgr_list(list: &str) -> Vec<u8> {
    list.split([',', ';']).filter_map(sgr_code).collect()
}

/// One SGR item: a number 0–254 or a keyword.
fn sgr_code(item: &str) -> Option<u8> {
    if !item.is_empty() && item.bytes().all(|b| b.is_ascii_digit()) {
        return item.parse::<u8>().ok().filter(|&code| code <= 254);
    }
    let code = match item {
        "reset" | "none" => 0,
        "bold" => 1,
        "dim" => 2,
        "italic" => 3,
        "underscore" | "underline" => 4,
        "blink" => 5,
        "reverse" => 7,
        "no-bold" | "no-dim" => 22,
        "no-italic" => 23,
        "no-underscore" | "no-underline" => 24,
        "no-blink" => 25,
        "no-reverse" => 27,
        "fg-default" => 39,
        "bg-default" => 49,
        _ => {
            if let Some(colour) = item.strip_prefix("bg-") {
                40 + colour_index(colour)?
            } else {
                30 + colour_index(item.strip_prefix("fg-").unwrap_or(item))?
            }
        }
    };
    Some(code)
}

/// ANSI colour number of a colour name.
fn colour_index(name: &str) -> Option<u8> {
    let index = match name {
        "black" => 0,
        "red" => 1,
        "green" => 2,
        "yellow" | "brown" => 3,
        "blue" => 4,
        "magenta" => 5,
        "cyan" => 6,
        "white" => 7,
        _ => return None,
    };
    Some(index)
}

/// Which display switches are on, for the default format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct DisplaySwitches {
    /// `-p`
    pub progress: bool,
    /// `-t`
    pub timer: bool,
    /// `-e`
    pub eta: bool,
    /// `-I`
    pub fineta: bool,
    /// `-r`
    pub rate: bool,
    /// `-a`
    pub average_rate: bool,
    /// `-b` (or `-8`)
    pub bytes: bool,
    /// `-T`
    pub buffer_percent: bool,
    /// `-A N`; 0 = off
    pub last_written: u32,
    /// a `-N` name is set
    pub name: bool,
    /// `-n`
    pub numeric: bool,
}

impl DisplaySwitches {
    /// The letters of the eight display switches (`-p -t -e -I -r -a -b -T`): the one
    /// mapping between the letters and the fields, used by the command line, `-R` and the
    /// control protocol's wire text.
    pub(crate) const LETTERS: &'static str = "pteIrabT";

    /// The field of switch `letter`, if it is one of [`Self::LETTERS`].
    fn field(&mut self, letter: char) -> Option<&mut bool> {
        Some(match letter {
            'p' => &mut self.progress,
            't' => &mut self.timer,
            'e' => &mut self.eta,
            'I' => &mut self.fineta,
            'r' => &mut self.rate,
            'a' => &mut self.average_rate,
            'b' => &mut self.bytes,
            'T' => &mut self.buffer_percent,
            _ => return None,
        })
    }

    /// Turns on switch `letter`; false (and no change) if it is not a switch letter.
    pub(crate) fn set(&mut self, letter: char) -> bool {
        self.field(letter).map(|on| *on = true).is_some()
    }

    /// The letters of the switches that are on, in [`Self::LETTERS`] order.
    pub(crate) fn letters(&self) -> String {
        let mut copy = *self;
        Self::LETTERS
            .chars()
            .filter(|&l| copy.field(l).is_some_and(|on| *on))
            .collect()
    }

    /// The switches named in `text` on, all others off; other characters are ignored.
    pub(crate) fn from_letters(text: &str) -> DisplaySwitches {
        let mut switches = DisplaySwitches::default();
        for letter in text.chars() {
            switches.set(letter);
        }
        switches
    }
}

/// Builds pv's switch-derived format string; `size_known` decides `%e`/`%I`.
pub(crate) fn default_format(switches: &DisplaySwitches, size_known: bool) -> String {
    let s = switches;
    let mut items: Vec<String> = Vec::new();
    let mut add = |on: bool, item: &str| {
        if on {
            items.push(item.to_string());
        }
    };
    if s.numeric {
        add(s.timer, "%t");
        add(s.bytes, "%b");
        add(s.rate, "%r");
        add(!s.bytes && !s.rate, "%{progress-amount-only}");
    } else {
        add(s.name, "%N");
        add(s.bytes, "%b");
        add(s.buffer_percent, "%T");
        add(s.timer, "%t");
        add(s.rate, "%r");
        add(s.average_rate, "%a");
        add(s.progress, "%p");
        add(s.eta && size_known, "%e");
        add(s.fineta && size_known, "%I");
        if s.last_written > 0 {
            items.push(format!("%{}A", s.last_written));
        }
    }
    items.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_switch_letter_turns_on_one_field_and_reads_back() {
        for letter in DisplaySwitches::LETTERS.chars() {
            let one = DisplaySwitches::from_letters(&letter.to_string());
            assert_eq!(one.letters(), letter.to_string());
            assert_ne!(one, DisplaySwitches::default(), "-{letter}");
        }
        let all = DisplaySwitches::from_letters(DisplaySwitches::LETTERS);
        assert!(all.progress && all.timer && all.eta && all.fineta);
        assert!(all.rate && all.average_rate && all.bytes && all.buffer_percent);
        assert!(!all.name && !all.numeric && all.last_written == 0);
        // Other characters are ignored, and the order is the table's.
        assert_eq!(DisplaySwitches::from_letters("Tx8p-b").letters(), "pbT");
        let mut s = DisplaySwitches::default();
        assert!(!s.set('n'));
        assert_eq!(s, DisplaySwitches::default());
    }

    fn lit(text: &str) -> Segment {
        Segment::Literal(text.to_string())
    }

    fn parse(text: &str) -> Vec<Segment> {
        Format::parse(text).segments
    }

    #[test]
    fn short_and_long_names() {
        use Segment::*;
        let table: &[(&str, Segment)] = &[
            ("%p", Progress { width: None }),
            ("%{progress}", Progress { width: None }),
            (
                "%{progress-bar-only}",
                BarOnly {
                    style: None,
                    width: None,
                },
            ),
            (
                "%{bar-plain}",
                BarOnly {
                    style: Some(BarStyle::Plain),
                    width: None,
                },
            ),
            (
                "%{bar-block}",
                BarOnly {
                    style: Some(BarStyle::Block),
                    width: None,
                },
            ),
            (
                "%{bar-granular}",
                BarOnly {
                    style: Some(BarStyle::Granular),
                    width: None,
                },
            ),
            (
                "%{bar-shaded}",
                BarOnly {
                    style: Some(BarStyle::Shaded),
                    width: None,
                },
            ),
            ("%{progress-amount-only}", ProgressAmount),
            ("%t", Timer),
            ("%{timer}", Timer),
            ("%e", Eta),
            ("%{eta}", Eta),
            ("%I", FinEta),
            ("%{fineta}", FinEta),
            ("%r", Rate),
            ("%{rate}", Rate),
            ("%a", AverageRate),
            ("%{average-rate}", AverageRate),
            ("%b", Bytes),
            ("%{bytes}", Bytes),
            ("%{transferred}", Bytes),
            ("%{ratio}", Ratio),
            ("%T", BufferPercent),
            ("%{buffer-percent}", BufferPercent),
            ("%A", LastWritten { count: 0 }),
            ("%16A", LastWritten { count: 16 }),
            ("%999A", LastWritten { count: 256 }),
            ("%8{last-written}", LastWritten { count: 8 }),
            ("%L", PreviousLine { width: None }),
            ("%5L", PreviousLine { width: Some(5) }),
            ("%{previous-line}", PreviousLine { width: None }),
            ("%N", Name { width: None }),
            ("%20N", Name { width: Some(20) }),
            ("%{name}", Name { width: None }),
            ("%10p", Progress { width: Some(10) }),
            ("%0p", Progress { width: None }),
            ("%3b", Bytes),
        ];
        for (text, want) in table {
            assert_eq!(parse(text), vec![want.clone()], "{text}");
        }
    }

    #[test]
    fn malformed_and_unknown_sequences_are_literal() {
        let table: &[(&str, &[&str])] = &[
            ("a%", &["a", "%"]),
            ("%", &["%"]),
            ("%%", &["%"]),
            ("x%zx", &["x", "%z", "x"]),
            ("%{foo}", &["%{foo}"]),
            ("%20", &["%2", "0"]),
            ("%5x", &["%5x"]),
            ("%{timer", &["%{timer"]),
            ("%{", &["%{"]),
            ("%5{ti", &["%5{ti"]),
            ("%{Timer}", &["%{Timer}"]),
            ("%{sgr}", &["%{sgr}"]),
            ("% t", &["% ", "t"]),
            ("%-", &["%-"]),
            ("%é!", &["%é", "!"]),
        ];
        for (text, want) in table {
            let want: Vec<Segment> = want.iter().map(|t| lit(t)).collect();
            assert_eq!(parse(text), want, "{text}");
        }
    }

    #[test]
    fn unterminated_brace_stops_at_next_percent() {
        assert_eq!(parse("%{foo%t"), vec![lit("%{foo"), Segment::Timer]);
        assert_eq!(parse("%{foo%"), vec![lit("%{foo"), lit("%")]);
    }

    #[test]
    fn numbers_follow_strtoul() {
        let table: &[(&str, Option<usize>)] = &[
            ("%7N", Some(7)),
            ("% 5N", Some(5)),
            ("%+5N", Some(5)),
            ("%\t5N", Some(5)),
            ("%-5N", Some(65535)),
            ("%-0N", None),
            ("%99999999999999999999999N", Some(65535)),
            ("%70000N", Some(65535)),
        ];
        for (text, width) in table {
            assert_eq!(parse(text), vec![Segment::Name { width: *width }], "{text}");
        }
    }

    #[test]
    fn literal_runs_between_sequences() {
        assert_eq!(
            parse("[%b] 日本 %t"),
            vec![lit("["), Segment::Bytes, lit("] 日本 "), Segment::Timer]
        );
    }

    #[test]
    fn at_most_100_segments() {
        let text = "%b-".repeat(60);
        let segments = parse(&text);
        assert_eq!(segments.len(), 100);
        assert_eq!(segments[99], lit("-"));
    }

    #[test]
    fn sgr_lists() {
        let table: &[(&str, &[u8])] = &[
            ("%{sgr:green,bold}", &[32, 1]),
            ("%{sgr:reset}", &[0]),
            ("%{sgr:none;red}", &[0, 31]),
            (
                "%{sgr:fg-blue,bg-brown,bg-default,fg-default}",
                &[34, 43, 49, 39],
            ),
            ("%{sgr:1;254;255;9999;x;;}", &[1, 254]),
            ("%{sgr:colour,...}", &[]),
            ("%{sgr:}", &[]),
            (
                "%{sgr:dim,italic,underline,underscore,blink,reverse}",
                &[2, 3, 4, 4, 5, 7],
            ),
            (
                "%{sgr:no-bold,no-dim,no-italic,no-underline,no-underscore,no-blink,no-reverse}",
                &[22, 22, 23, 24, 24, 25, 27],
            ),
            (
                "%{sgr:black,red,yellow,magenta,cyan,white,fg-black,bg-white}",
                &[30, 31, 33, 35, 36, 37, 30, 47],
            ),
        ];
        for (text, codes) in table {
            assert_eq!(
                parse(text),
                vec![Segment::Sgr {
                    codes: codes.to_vec()
                }],
                "{text}"
            );
        }
        // The colour after `%{sgr:…}` starts a literal, and bad braces are literal.
        assert_eq!(parse("%{sgr:red"), vec![lit("%{sgr:red")]);
    }

    #[test]
    fn dynamic_components() {
        let dynamic: Vec<bool> = parse("%p%5p%{bar-block}%3{bar-block}%L%4L%b%N%A")
            .iter()
            .map(Segment::is_dynamic)
            .collect();
        assert_eq!(
            dynamic,
            [true, false, true, false, true, false, false, false, false]
        );
    }

    #[test]
    fn default_formats() {
        let pterb = DisplaySwitches {
            progress: true,
            timer: true,
            eta: true,
            rate: true,
            bytes: true,
            ..DisplaySwitches::default()
        };
        assert_eq!(default_format(&pterb, true), "%b %t %r %p %e");
        assert_eq!(default_format(&pterb, false), "%b %t %r %p");
        let all = DisplaySwitches {
            fineta: true,
            average_rate: true,
            buffer_percent: true,
            last_written: 16,
            name: true,
            ..pterb
        };
        assert_eq!(
            default_format(&all, true),
            "%N %b %T %t %r %a %p %e %I %16A"
        );
        assert_eq!(default_format(&all, false), "%N %b %T %t %r %a %p %16A");
        assert_eq!(default_format(&DisplaySwitches::default(), true), "");
    }

    #[test]
    fn numeric_default_formats() {
        let n = DisplaySwitches {
            numeric: true,
            ..DisplaySwitches::default()
        };
        let with = |f: fn(&mut DisplaySwitches)| {
            let mut s = n;
            f(&mut s);
            default_format(&s, true)
        };
        assert_eq!(with(|_| {}), "%{progress-amount-only}");
        assert_eq!(with(|s| s.timer = true), "%t %{progress-amount-only}");
        assert_eq!(with(|s| s.bytes = true), "%b");
        assert_eq!(with(|s| s.rate = true), "%r");
        assert_eq!(
            with(|s| {
                s.timer = true;
                s.bytes = true;
                s.rate = true;
            }),
            "%t %b %r"
        );
        assert_eq!(with(|s| s.average_rate = true), "%{progress-amount-only}");
        assert_eq!(
            with(|s| {
                s.eta = true;
                s.progress = true;
                s.fineta = true;
                s.buffer_percent = true;
                s.last_written = 4;
                s.name = true;
            }),
            "%{progress-amount-only}"
        );
    }
}
