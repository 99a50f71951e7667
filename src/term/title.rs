//! Extra display (`-x SPEC`): the progress in the terminal window title and in
//! the process title.
//!
//! Owns: parsing SPEC, and turning a rendered line into a title (control characters
//! removed). The window-title bytes are written by [`super::Term`]; the process title is set
//! through `sys::set_process_title`.

use crate::sys;

/// Where the extra display goes, and its own format.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct ExtraSpec {
    /// `window`/`windowtitle`: the xterm title (`OSC 2`).
    pub window: bool,
    /// `process`/`proc`/`processtitle`/`proctitle`: the process title (`ps`).
    pub process: bool,
    /// The format after the first `:`, if any.
    pub format: Option<String>,
}

impl ExtraSpec {
    /// Parses `-x SPEC`: comma-separated words, then optionally `:FORMAT`. Unknown words are
    /// ignored (like pv).
    pub(crate) fn parse(spec: &str) -> ExtraSpec {
        let (words, format) = match spec.split_once(':') {
            Some((w, f)) => (w, Some(f.to_string())),
            None => (spec, None),
        };
        let mut out = ExtraSpec {
            format,
            ..ExtraSpec::default()
        };
        for word in words.split(',') {
            match word {
                "window" | "windowtitle" => out.window = true,
                "process" | "proc" | "processtitle" | "proctitle" => out.process = true,
                _ => {}
            }
        }
        out
    }

    /// True if there is anywhere to show it.
    #[cfg(test)]
    pub(crate) fn any(&self) -> bool {
        self.window || self.process
    }
}

/// `text` without control characters (an ESC or BEL would end the title sequence early).
pub(crate) fn clean(text: &str) -> String {
    text.chars().filter(|c| !c.is_control()).collect()
}

/// The window-title sequence for `text`: `ESC ] 2 ; text ESC \`.
pub(crate) fn window_sequence(text: &str) -> String {
    format!("\x1b]2;{}\x1b\\", clean(text))
}

/// Makes room for a process title longer than the command line (the environment strings
/// are copied elsewhere so their area can hold the rest). Call it at the start of `main`,
/// before any thread exists; later, or with threads, it does nothing and titles are cut to
/// the command line's length.
pub fn prepare_process_title() {
    sys::prepare_process_title();
}

/// Sets the process title to `rpv -- text` (like pv's `pv -- text`), with `prog` the
/// program name. Overwrites the argv area (what `ps -f`, `top -c` and `/proc/PID/cmdline`
/// show) and leaves the command name (`comm`, used by `pgrep`/`killall`) alone; only if the
/// argv area is unknown (no `/proc`) does it fall back to the 15-byte thread name.
pub(crate) fn set_process_title(prog: &str, text: &str) {
    let title = format!("{prog} -- {}", clean(text));
    if !sys::set_process_title(title.as_bytes()) {
        sys::set_thread_name(title.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_words_and_format() {
        let s = ExtraSpec::parse("window");
        assert!(s.window && !s.process && s.format.is_none());
        let s = ExtraSpec::parse("proc,windowtitle:%b %t");
        assert!(s.window && s.process);
        assert_eq!(s.format.as_deref(), Some("%b %t"));
        let s = ExtraSpec::parse("processtitle,bogus:a:b");
        assert!(!s.window && s.process);
        assert_eq!(
            s.format.as_deref(),
            Some("a:b"),
            "everything after the first colon"
        );
        assert!(!ExtraSpec::parse("nothing").any());
        assert!(ExtraSpec::parse("process").any());
        assert_eq!(ExtraSpec::parse(":%b").format.as_deref(), Some("%b"));
    }

    #[test]
    fn titles_carry_no_control_characters() {
        assert_eq!(
            window_sequence("3.00  B|0:00:00"),
            "\x1b]2;3.00  B|0:00:00\x1b\\"
        );
        assert_eq!(window_sequence("a\x1b]0;x\x07b\r"), "\x1b]2;a]0;xb\x1b\\");
    }
}
