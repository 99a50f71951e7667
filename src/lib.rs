//! rpv: a pv-compatible pipe viewer.
//!
//! See ARCHITECTURE.md for the code map and the rules that must stay true.
#![deny(missing_docs)]
#![deny(unsafe_code)]
#![warn(unreachable_pub)]

pub mod app;
mod cleanup;
mod cli;
mod control;
mod display;
mod error;
mod meter;
mod ownfile;
mod pipeline;
mod plan;
mod procfs;
mod prometheus;
#[cfg(test)]
mod proptest_cases;
mod screen;
mod session;
mod signals;
mod sink;
mod source;
mod stall;
mod stats;
pub mod stdio;
pub mod sys;
mod term;
pub mod top;
mod transfer;
mod units;

pub use term::title::prepare_process_title;
