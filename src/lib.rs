//! rpv: a pv-compatible pipe viewer.
//!
//! See ARCHITECTURE.md for the code map and the rules that must stay true.
#![deny(missing_docs)]
#![deny(unsafe_code)]

pub mod app;
pub mod cleanup;
pub mod cli;
pub mod control;
pub mod display;
pub mod error;
pub mod meter;
pub mod pipeline;
pub mod plan;
pub mod screen;
pub mod session;
pub mod signals;
pub mod sink;
pub mod source;
pub mod stall;
pub mod stats;
pub mod stdio;
pub mod sys;
pub mod term;
pub mod top;
pub mod transfer;
pub mod units;
