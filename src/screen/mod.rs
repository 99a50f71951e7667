//! The screen layer: every multi-row view is drawn through it — the rows of `--each` (one
//! per input, one per `--tee` output, the total), of `-d`, the `--pipeline` table, and the
//! `-c` rows' width.
//!
//! A view describes what it shows ([`View`]: tables of [`Column`]s and [`Row`]s, and lines);
//! the layer fits every row to the terminal (never its last column; columns give way by
//! priority, names are cut with an ellipsis, bars share one width), picks the rows that fit
//! the terminal's height (`+N more` for the rest), escapes control characters in text a
//! file or process chose, and makes the bytes that redraw the rows in place ([`Screen`]:
//! through resizes, messages, Ctrl-C and Ctrl-Z). `term::Term` writes those bytes.
//!
//! Owns: fitting ([`fit`]), choosing rows ([`view`]), redrawing ([`redraw`]), names of
//! watched descriptors ([`names`]). Must not: write anything, read the terminal or a clock;
//! everything here is pure and tested with synthetic rows (and a `vt100` terminal).

pub(crate) mod fit;
pub(crate) mod names;
pub(crate) mod redraw;
pub(crate) mod view;

pub(crate) use fit::{cut, Cell, Column, Row, Table};
pub(crate) use redraw::Screen;
pub(crate) use view::{usable_height, usable_width, Block, View};
