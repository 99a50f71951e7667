//! Text that a process or a file chooses, made safe to show on a terminal.
//!
//! Owns: the one escaping rule for names, command lines and messages drawn on the
//! terminal. Must not: be used for machine-readable output (`--json` has its own lossless
//! form): the escaped text is for people to read.
//!
//! Control characters (C0, DEL, C1) would move the cursor, end a row, or start an escape
//! sequence that sets the window title or clears the screen; they are shown as backslash
//! escapes instead: `\n`, `\r`, `\t`, `\e` (ESC), and `\xHH` for the others (C1 code points
//! as `\u{HHHH}`). Unicode format characters (general category Cf: the bidirectional
//! overrides and isolates U+202A-U+202E and U+2066-U+2069, which reorder how the rest of a
//! row reads on a bidi-capable terminal; the zero-width U+200B-U+200F and U+2060-U+2064;
//! U+FEFF; the others of Cf) and the line and paragraph separators U+2028 and U+2029 are
//! shown as `\u{HHHH}` too, and so is a combining mark (a character of no width) with
//! nothing of the name's own before it to combine with: at the start, or after whitespace,
//! where it would change the character before it on the screen. Everything else,
//! backslashes included, is shown as it is.

use std::borrow::Cow;
use std::fmt::Write as _;

use unicode_width::UnicodeWidthChar;

/// `text` with every control character, format character and lone combining mark replaced
/// by its escape (see the module notes); borrowed when there is none.
pub(crate) fn printable(text: &str) -> Cow<'_, str> {
    if !needs_escape(text) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    let mut after_space = true;
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\x1b' => out.push_str("\\e"),
            c if (c as u32) < 0x80 && c.is_control() => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if c.is_control() || hidden(c) || (after_space && combining(c)) => {
                let _ = write!(out, "\\u{{{:04x}}}", c as u32);
            }
            c => out.push(c),
        }
        after_space = c.is_whitespace() || c.is_control();
    }
    Cow::Owned(out)
}

/// Whether [`printable`] changes anything in `text`.
fn needs_escape(text: &str) -> bool {
    if plain_ascii(text) {
        return false;
    }
    let mut after_space = true;
    text.chars().any(|c| {
        let escaped = c.is_control() || hidden(c) || (after_space && combining(c));
        after_space = c.is_whitespace();
        escaped
    })
}

/// Whether `text` is printable ASCII only (a space to `~`): one column per byte, nothing
/// to escape. Most commands and paths are; the checks below are per character.
pub(crate) fn plain_ascii(text: &str) -> bool {
    text.bytes().all(|b| (b' '..=b'~').contains(&b))
}

/// A format character (Unicode general category Cf) or a line or paragraph separator:
/// invisible, or changing how other characters are shown.
pub(crate) fn hidden(c: char) -> bool {
    matches!(
        c as u32,
        0x00AD
            | 0x0600..=0x0605
            | 0x061C
            | 0x06DD
            | 0x070F
            | 0x0890..=0x0891
            | 0x08E2
            | 0x180E
            | 0x200B..=0x200F
            | 0x2028..=0x202E
            | 0x2060..=0x2064
            | 0x2066..=0x206F
            | 0xFEFF
            | 0xFFF9..=0xFFFB
            | 0x110BD
            | 0x110CD
            | 0x13430..=0x1343F
            | 0x1BCA0..=0x1BCA3
            | 0x1D173..=0x1D17A
            | 0xE0001
            | 0xE0020..=0xE007F
    )
}

/// A combining mark or another character of no width that draws onto the one before it.
fn combining(c: char) -> bool {
    !c.is_control() && c.width() == Some(0)
}

#[cfg(test)]
mod tests {
    use super::printable;

    #[test]
    fn plain_text_is_borrowed() {
        assert!(matches!(
            printable("disk 1.img — ü 日本"),
            std::borrow::Cow::Borrowed(_)
        ));
    }

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(printable("a\nb"), "a\\nb");
        assert_eq!(printable("\x1b]0;owned\x07"), "\\e]0;owned\\x07");
        assert_eq!(printable("x\r\ty\x7f"), "x\\r\\ty\\x7f");
        assert_eq!(printable("c1\u{9b}2J"), "c1\\u{009b}2J");
        assert_eq!(printable("back\\slash"), "back\\slash");
    }

    #[test]
    fn format_characters_are_escaped() {
        // A right-to-left override would show "txt.exe" as "exe.txt".
        assert_eq!(printable("a\u{202e}txt.exe"), "a\\u{202e}txt.exe");
        assert_eq!(printable("x\u{200b}y\u{200d}z"), "x\\u{200b}y\\u{200d}z");
        assert_eq!(printable("\u{2066}i\u{2069}"), "\\u{2066}i\\u{2069}");
        assert_eq!(printable("\u{feff}bom"), "\\u{feff}bom");
        assert_eq!(printable("tag\u{e0041}"), "tag\\u{e0041}");
        assert_eq!(printable("l\u{2028}p\u{2029}"), "l\\u{2028}p\\u{2029}");
    }

    #[test]
    fn a_combining_mark_with_nothing_to_combine_with_is_escaped() {
        assert_eq!(printable("\u{301}name"), "\\u{0301}name");
        assert_eq!(printable("a \u{301}b"), "a \\u{0301}b");
        assert_eq!(printable("\t\u{301}"), "\\t\\u{0301}");
        // On a letter of the name itself it is part of it.
        assert_eq!(printable("cafe\u{301}"), "cafe\u{301}");
        assert!(matches!(
            printable("cafe\u{301}"),
            std::borrow::Cow::Borrowed(_)
        ));
    }

    #[test]
    fn nothing_escaped_contains_a_control_or_format_character() {
        let all: String = (0u32..0x30000).filter_map(char::from_u32).collect();
        let shown = printable(&all);
        assert!(!shown.chars().any(|c| c.is_control() || super::hidden(c)));
    }

    #[test]
    fn nothing_escaped_contains_a_control_character() {
        let all: String = (0u32..0x200).filter_map(char::from_u32).collect();
        assert!(!printable(&all).chars().any(char::is_control));
    }
}
