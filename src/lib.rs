//! rpv: a pv-compatible pipe viewer.
//!
//! See ARCHITECTURE.md for the code map and the rules that must stay true.
#![deny(missing_docs)]

pub mod cli;
pub mod display;
pub mod stats;
pub mod units;
