//! Display-width measurement of rendered text.
//!
//! CSI escapes (`ESC [` digits/`;` and one final byte) take no columns; other characters
//! count as their Unicode East-Asian width. Deliberate difference from pv:
//! control characters such as TAB count as 0 columns instead of making the whole line's
//! width "unknown", which in pv made every expanding component vanish.

use unicode_width::UnicodeWidthChar;

use super::escape::plain_ascii;

/// Width of `text` in terminal columns, skipping CSI escape sequences.
pub(crate) fn display_width(text: &str) -> usize {
    if plain_ascii(text) {
        return text.len();
    }
    let mut width = 0;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\x1b' && chars.peek() == Some(&'[') {
            chars.next();
            while chars.next_if(|&p| p.is_ascii_digit() || p == ';').is_some() {}
            // The final byte of the sequence.
            chars.next();
            continue;
        }
        width += c.width().unwrap_or(0);
    }
    width
}

/// The longest start of `text` that is at most `width` columns wide, with every CSI escape
/// of the whole text kept (they take no columns, and a colour reset at the end must stay).
pub(crate) fn cut_to_width(text: &str, width: usize) -> String {
    if plain_ascii(text) {
        return text[..text.len().min(width)].to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut used = 0;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\x1b' && chars.peek() == Some(&'[') {
            out.push(c);
            out.extend(chars.next());
            while let Some(p) = chars.next_if(|&p| p.is_ascii_digit() || p == ';') {
                out.push(p);
            }
            out.extend(chars.next());
            continue;
        }
        let w = c.width().unwrap_or(0);
        if used + w <= width {
            used += w;
            out.push(c);
        } else {
            // Nothing after this character is shown; a wide one that does not fit is not
            // replaced by a narrow one further on.
            used = width + 1;
        }
    }
    out
}

/// Splits `text` into lines of at most `avail` columns, breaking after the last space that
/// fits (the space stays at the end of the line) or, failing that, inside the word.
pub(crate) fn wrap(text: &str, avail: usize) -> Vec<&str> {
    let avail = avail.max(1);
    let mut lines = Vec::new();
    let mut rest = text;
    while display_width(rest) > avail {
        // The end of the longest start of `rest` that fits (at least one character).
        let mut cut = 0;
        let mut used = 0;
        for (i, c) in rest.char_indices() {
            let w = c.width().unwrap_or(0);
            if used + w > avail && cut > 0 {
                break;
            }
            used += w;
            cut = i + c.len_utf8();
        }
        let end = match rest[..cut].rfind(' ') {
            Some(space) if space > 0 => space + 1,
            _ => cut,
        };
        lines.push(&rest[..end]);
        rest = &rest[end..];
    }
    lines.push(rest);
    lines
}

#[cfg(test)]
mod tests {
    use super::{cut_to_width, display_width, wrap};

    #[test]
    fn printable_ascii_is_measured_and_cut_as_any_text() {
        // Printable ASCII takes the short way; a character either side of its range (a
        // control, DEL, a Latin letter, a wide one, an escape) takes the long one, and both
        // agree with it where they meet.
        let table: &[(&str, usize, &str)] = &[
            (" ~abc", 5, " ~abc"),
            ("abcdef", 4, "abcd"),
            ("ab\tcd", 3, "ab\tc"),
            ("a\tb", 2, "a\tb"),
            ("a\x7fb", 2, "a\x7fb"),
            ("aé b", 4, "aé b"),
            ("a日b", 2, "a"),
            ("\x1b[1mab\x1b[0m", 1, "\x1b[1ma\x1b[0m"),
        ];
        for &(text, width, cut) in table {
            assert_eq!(cut_to_width(text, width), cut, "{text:?} cut to {width}");
        }
        assert_eq!(display_width(" ~abc"), 5);
        assert_eq!(display_width("a\tb"), 2);
        assert_eq!(display_width("a\x7fb"), 2);
        assert_eq!(display_width("aé b"), 4);
        assert_eq!(display_width("a日b"), 4);
        assert_eq!(display_width("\x1b[1mab\x1b[0m"), 2);
    }

    #[test]
    fn cutting_keeps_whole_characters_and_every_escape() {
        let table: &[(&str, usize, &str)] = &[
            ("abcdef", 3, "abc"),
            ("abc", 10, "abc"),
            ("日本語", 3, "日"),
            ("日本語", 4, "日本"),
            ("a日b", 2, "a"),
            (
                "\x1b[31mabc\x1b[0mdef\x1b[m",
                4,
                "\x1b[31mabc\x1b[0md\x1b[m",
            ),
            ("abc", 0, ""),
            ("e\u{301}x", 1, "e\u{301}"),
        ];
        for &(text, width, want) in table {
            let got = cut_to_width(text, width);
            assert_eq!(got, want, "{text:?} at {width}");
            assert!(display_width(&got) <= width);
        }
    }

    #[test]
    fn widths() {
        let table: &[(&str, usize)] = &[
            ("", 0),
            ("abc", 3),
            ("日本", 4),
            ("█▏░◀▶", 5),
            ("\x1b[32;1mab\x1b[0m", 2),
            ("\x1b[m", 0),
            ("x\ty", 2),
            ("\x1bx", 1),
            ("e\u{301}", 1),
        ];
        for &(text, want) in table {
            assert_eq!(display_width(text), want, "{text:?}");
        }
    }

    #[test]
    fn wrap_counts_columns_not_characters() {
        assert_eq!(wrap("日本 語", 5), ["日本 ", "語"]);
        assert_eq!(wrap("日本語", 3), ["日", "本", "語"]);
        assert_eq!(wrap("ab", 0), ["a", "b"]);
    }
}
