//! Render tests with synthetic frames (spec 2.6–2.10, 9).
