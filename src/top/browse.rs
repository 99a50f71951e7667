//! What the `--top` view's keys change (pure): the selection, the order and its freeze,
//! and the `/` filter, and which rows an update shows with them.
//!
//! The selection follows its flow by identity (the meter's id) as the rows re-sort; when
//! its flow leaves (it ended, or the filter hides it), the row that took its place is
//! selected. Frozen (`p`), the rows keep the order they had, flows that appear since
//! joining at the end; `s` sorts once by the next key (and the order stays frozen). The
//! filter keeps the rows whose kind, PID, command or file contain its text (ignoring
//! case); it applies as it is typed, Enter keeps it, Esc clears it.
//! Must not: draw, read the terminal or start anything (the sink does what an
//! [`Action`] asks).

use super::view::{move_selection, Key, Line, Sort};

/// What the sink does after a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Nothing changed.
    Nothing,
    /// The rows or the title changed: draw again.
    Redraw,
    /// Open the selected flow's own view.
    Open,
    /// Back from the opened view (Esc).
    Back,
    /// End the run.
    Quit,
}

/// The view's state between updates.
#[derive(Debug, Clone, Default)]
pub struct Browse {
    /// The selected flow's id.
    pub selected: Option<u64>,
    /// Where the selection was (a row index), for when its flow leaves.
    at: usize,
    /// The order.
    pub sort: Sort,
    /// The order is frozen.
    pub frozen: bool,
    /// The rows' ids in the order last shown (what a frozen order keeps).
    order: Vec<u64>,
    /// The filter's text (empty: every flow).
    pub filter: String,
    /// A filter is being typed.
    pub typing: bool,
}

impl Browse {
    /// The rows of `lines` to show, in order, the selection kept on its flow (`select`:
    /// keys are taken, so a row is always selected).
    pub fn arrange(&mut self, lines: &[Line], select: bool) -> Vec<Line> {
        let needle = self.filter.to_lowercase();
        let mut shown: Vec<Line> = lines
            .iter()
            .filter(|l| needle.is_empty() || l.text().to_lowercase().contains(&needle))
            .cloned()
            .collect();
        self.sort.apply(&mut shown);
        if self.frozen {
            // Stable: flows not in the frozen order keep their sorted order, after the rest.
            let rank = |id: u64| self.order.iter().position(|&o| o == id);
            shown.sort_by_key(|l| rank(l.id).unwrap_or(usize::MAX));
        }
        self.order = shown.iter().map(|l| l.id).collect();
        if select {
            let stays = self
                .selected
                .and_then(|id| shown.iter().position(|l| l.id == id));
            let at = stays.unwrap_or(self.at.min(shown.len().saturating_sub(1)));
            self.selected = shown.get(at).map(|l| l.id);
            self.at = at;
        }
        shown
    }

    /// What `key` does to the rows `shown` (as last arranged); `zoomed`: a flow's own
    /// view is open.
    pub fn press(&mut self, key: Key, shown: &[Line], zoomed: bool) -> Action {
        if self.typing {
            return self.type_key(key);
        }
        match key {
            Key::Quit => Action::Quit,
            Key::Escape if zoomed => Action::Back,
            _ if zoomed => Action::Nothing,
            Key::Escape if !self.filter.is_empty() => {
                self.filter.clear();
                Action::Redraw
            }
            Key::Up | Key::Down | Key::First | Key::Last => {
                self.selected = move_selection(shown, self.selected, key);
                if let Some(at) = shown.iter().position(|l| Some(l.id) == self.selected) {
                    self.at = at;
                }
                Action::Redraw
            }
            Key::Sort => {
                self.sort = self.sort.next();
                self.order.clear();
                Action::Redraw
            }
            Key::Freeze => {
                self.frozen = !self.frozen;
                Action::Redraw
            }
            Key::Filter => {
                self.typing = true;
                Action::Redraw
            }
            Key::Enter => Action::Open,
            Key::Escape | Key::Erase | Key::Char(_) => Action::Nothing,
        }
    }

    /// A key while the filter is typed.
    fn type_key(&mut self, key: Key) -> Action {
        match key {
            Key::Char(c) => self.filter.push(c),
            Key::Erase => {
                self.filter.pop();
            }
            Key::Enter => self.typing = false,
            Key::Escape => {
                self.typing = false;
                self.filter.clear();
            }
            _ => return Action::Nothing,
        }
        Action::Redraw
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Kind, Zoom};
    use super::*;
    use crate::top::view::next_key;

    fn line(id: u64, rate: f64, command: &str) -> Line {
        Line {
            id,
            kind: Kind::File,
            pid: 100 + id as u32,
            command: command.into(),
            file: Some(format!("/data/f{id}")),
            to: None,
            writes: false,
            in_kernel: false,
            unseen: false,
            unit: crate::units::Unit::Bytes,
            amount: (rate * 1000.0) as u64,
            rate,
            percent: None,
            eta: None,
            stalled_for: None,
            ended: false,
            bottleneck: None,
            zoom: Zoom::Watch(1, None),
        }
    }

    fn ids(lines: &[Line]) -> Vec<u64> {
        lines.iter().map(|l| l.id).collect()
    }

    /// Presses each key of `typed` (bytes from the terminal) as the sink does.
    fn press_all(b: &mut Browse, typed: &[u8], shown: &[Line]) {
        let mut i = 0;
        while i < typed.len() {
            let (key, used) = next_key(&typed[i..], b.typing);
            if let Some(key) = key {
                b.press(key, shown, false);
            }
            i += used;
        }
    }

    #[test]
    fn the_selection_stays_on_its_flow_as_rows_resort() {
        let mut b = Browse::default();
        let lines = vec![line(1, 3.0, "a"), line(2, 2.0, "b"), line(3, 1.0, "c")];
        let shown = b.arrange(&lines, true);
        assert_eq!(b.selected, Some(1));
        b.press(Key::Down, &shown, false);
        assert_eq!(b.selected, Some(2), "the second row");
        // Flow 2 becomes the busiest: first row, still selected.
        let lines = vec![line(1, 3.0, "a"), line(2, 9.0, "b"), line(3, 1.0, "c")];
        let shown = b.arrange(&lines, true);
        assert_eq!(ids(&shown), [2, 1, 3]);
        assert_eq!(b.selected, Some(2), "by identity, not by row");
        // Its flow leaves: the row that took its place.
        let lines = vec![line(1, 3.0, "a"), line(3, 1.0, "c")];
        b.arrange(&lines, true);
        assert_eq!(b.selected, Some(1));
    }

    #[test]
    fn frozen_the_order_stays_and_new_flows_join_at_the_end() {
        let mut b = Browse::default();
        let lines = vec![line(1, 3.0, "a"), line(2, 2.0, "b")];
        let shown = b.arrange(&lines, true);
        assert_eq!(b.press(Key::Freeze, &shown, false), Action::Redraw);
        assert!(b.frozen);
        let lines = vec![line(1, 1.0, "a"), line(2, 5.0, "b"), line(3, 9.0, "c")];
        assert_eq!(ids(&b.arrange(&lines, true)), [1, 2, 3], "frozen");
        b.press(Key::Sort, &shown, false);
        assert_eq!(
            ids(&b.arrange(&lines, true)),
            [3, 2, 1],
            "s sorts once: bytes"
        );
        let lines = vec![line(1, 1.0, "a"), line(2, 5.0, "b"), line(3, 0.5, "c")];
        assert_eq!(ids(&b.arrange(&lines, true)), [3, 2, 1], "and stays frozen");
        b.press(Key::Freeze, &shown, false);
        b.sort = Sort::Rate;
        assert_eq!(ids(&b.arrange(&lines, true)), [2, 1, 3], "thawed");
    }

    #[test]
    fn slash_filters_as_typed_enter_keeps_it_esc_clears_it() {
        let mut b = Browse::default();
        let lines = vec![
            line(1, 3.0, "gzip -9"),
            line(2, 2.0, "dd if=x"),
            line(3, 1.0, "GZIP -1"),
        ];
        let shown = b.arrange(&lines, true);
        // `g`, `p`, `q` are letters of the filter, not commands, once `/` was typed.
        press_all(&mut b, b"/gzq\x7fip", &shown);
        assert!(b.typing);
        assert_eq!(b.filter, "gzip");
        assert_eq!(ids(&b.arrange(&lines, true)), [1, 3], "as typed, any case");
        press_all(&mut b, b"\r", &shown);
        assert!(!b.typing);
        let shown = b.arrange(&lines, true);
        assert_eq!(ids(&shown), [1, 3], "kept");
        // By file and by PID too.
        b.filter = "/data/f2".into();
        assert_eq!(ids(&b.arrange(&lines, true)), [2]);
        b.filter = "103".into();
        assert_eq!(ids(&b.arrange(&lines, true)), [3]);
        assert_eq!(b.selected, Some(3), "the selection on a row shown");
        assert_eq!(b.press(Key::Escape, &shown, false), Action::Redraw);
        assert_eq!(b.filter, "");
        assert_eq!(ids(&b.arrange(&lines, true)), [1, 2, 3]);
        // Esc while typing: cleared too; q quits again.
        press_all(&mut b, b"/dd\x1b", &shown);
        assert_eq!((b.typing, b.filter.as_str()), (false, ""));
        assert_eq!(b.press(Key::Quit, &shown, false), Action::Quit);
    }

    #[test]
    fn with_a_flow_open_only_esc_and_q_count() {
        let mut b = Browse::default();
        let lines = vec![line(1, 3.0, "a"), line(2, 2.0, "b")];
        let shown = b.arrange(&lines, true);
        assert_eq!(b.press(Key::Enter, &shown, false), Action::Open);
        assert_eq!(b.press(Key::Down, &shown, true), Action::Nothing);
        assert_eq!(b.press(Key::Filter, &shown, true), Action::Nothing);
        assert_eq!(b.press(Key::Escape, &shown, true), Action::Back);
        assert_eq!(b.press(Key::Quit, &shown, true), Action::Quit);
    }
}
