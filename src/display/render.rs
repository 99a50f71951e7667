//! Rendering a [`Format`] for one [`Frame`] at a width (spec 2.6–2.8).

use super::{Format, Frame};

/// Renders one display line (without the trailing `\r`/`\n` and without shrink padding,
/// which the terminal writer adds). Pure: same inputs, same output.
pub fn render(format: &Format, frame: &Frame, width: usize) -> String {
    todo!("{format:?}{frame:?}{width}")
}
