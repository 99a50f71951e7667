//! Text that a process or a file chooses, made safe to show on a terminal.
//!
//! Owns: the one escaping rule for names, command lines and messages drawn on the
//! terminal. Must not: be used for machine-readable output (`--json` has its own lossless
//! form): the escaped text is for people to read.
//!
//! Control characters (C0, DEL, C1) would move the cursor, end a row, or start an escape
//! sequence that sets the window title or clears the screen; they are shown as backslash
//! escapes instead: `\n`, `\r`, `\t`, `\e` (ESC), and `\xHH` for the others (C1 code points
//! as `\u{HHHH}`). Everything else, backslashes included, is shown as it is.

use std::borrow::Cow;
use std::fmt::Write as _;

/// `text` with every control character replaced by its escape; borrowed when there is none.
pub(crate) fn printable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\x1b' => out.push_str("\\e"),
            c if (c as u32) < 0x80 && c.is_control() => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if c.is_control() => {
                let _ = write!(out, "\\u{{{:04x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
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
    fn nothing_escaped_contains_a_control_character() {
        let all: String = (0u32..0x200).filter_map(char::from_u32).collect();
        assert!(!printable(&all).chars().any(char::is_control));
    }
}
