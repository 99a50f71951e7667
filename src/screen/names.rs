//! Names of watched descriptors (`-d`): `FD:PATH`, the path shortened to fit (pure).

use crate::display::printable;

/// Shortens `path` to at most `max` characters: the first ⌊max/4⌋ characters, `...`, and
/// the last `max − ⌊max/4⌋ − 3` characters (pv's rule, counted in characters so UTF-8 is
/// never split). `max` below 4 is treated as 4.
pub(crate) fn shorten(path: &str, max: usize) -> String {
    let max = max.max(4);
    let count = path.chars().count();
    if count <= max {
        return path.to_string();
    }
    let head = max / 4;
    let tail = max - head - 3;
    let mut out: String = path.chars().take(head).collect();
    out.push_str("...");
    out.extend(path.chars().skip(count - tail));
    out
}

/// The `%N` name of a descriptor: `"%4d:%s"`, or `"%8d:%4d:%s"` when several processes are
/// watched; the path shortened to width/2 − 6 (− 9 with PIDs) characters; `label` (for
/// pipes and sockets) is appended after shortening so it always shows. Control characters
/// in the path are shown escaped (before shortening, so the escapes count).
pub(crate) fn name(
    pid: u32,
    fd: i32,
    path: &str,
    label: &str,
    with_pid: bool,
    width: usize,
) -> String {
    let max = (width / 2).saturating_sub(if with_pid { 15 } else { 6 });
    let path = shorten(&printable(path), max);
    if with_pid {
        format!("{pid:8}:{fd:4}:{path}{label}")
    } else {
        format!("{fd:4}:{path}{label}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shortening() {
        assert_eq!(shorten("short", 34), "short");
        let long = "/very/long/directory/name/with/many/parts/file.bin";
        let s = shorten(long, 34);
        assert_eq!(s.chars().count(), 34);
        assert_eq!(s, "/very/lo...ith/many/parts/file.bin");
        assert_eq!(shorten("abcdefghij", 8), "ab...hij");
        assert_eq!(shorten("abcdefghij", 0), "a...");
        assert_eq!(shorten("ééééééééééé", 8), "éé...ééé");
    }

    #[test]
    fn names() {
        assert_eq!(name(42, 3, "big.txt", "", false, 80), "   3:big.txt");
        assert_eq!(
            name(42, 3, "big.txt", "", true, 80),
            "      42:   3:big.txt"
        );
        assert_eq!(
            name(42, 0, "pipe:[99]", " (process reads)", false, 80),
            "   0:pipe:[99] (process reads)"
        );
        // 80 columns: 34 characters of path, 25 with PIDs.
        let long = "x".repeat(50);
        assert_eq!(name(1, 3, &long, "", false, 80).len(), 5 + 34);
        assert_eq!(name(1, 3, &long, "", true, 80).len(), 14 + 25);
    }

    #[test]
    fn control_characters_in_paths_are_escaped() {
        assert_eq!(name(1, 3, "a\nb", "", false, 80), "   3:a\\nb");
    }
}
