//! `--help` and `--version` text.

/// The `--help` text (spec 1.10), wrapped for a terminal `width` columns wide (0 = unknown).
pub fn help_text(width: usize) -> String {
    todo!("{width}")
}

/// The `--version` text (spec 1.10): line 1 is `rpv <version>`.
pub fn version_text() -> String {
    todo!()
}
