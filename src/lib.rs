//! rpv: a pv-compatible pipe viewer.
//!
//! See ARCHITECTURE.md for the code map and the rules that must stay true.
#![deny(missing_docs)]
#![deny(unsafe_code)]

pub mod app;
pub mod cleanup;
pub mod cli;
pub mod display;
pub mod modes;
pub mod pipeline;
pub mod shared;
pub mod signals;
pub mod stats;
pub mod sys;
pub mod term;
pub mod transfer;
pub mod units;
pub mod view;
