//! Display-width measurement of rendered text (spec 2.6, "Display width measurement").
//!
//! CSI escapes (`ESC [` digits/`;` and one final byte) take no columns; other characters
//! count as their Unicode East-Asian width. Deliberate difference from pv (spec 7.2 #14):
//! control characters such as TAB count as 0 columns instead of making the whole line's
//! width "unknown", which in pv made every expanding component vanish.

use unicode_width::UnicodeWidthChar;

/// Width of `text` in terminal columns, skipping CSI escape sequences.
pub fn display_width(text: &str) -> usize {
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

#[cfg(test)]
mod tests {
    use super::display_width;

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
}
