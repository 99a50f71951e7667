//! Pipeline insight (beyond pv): every stage of a shell pipeline, what each is doing, which
//! one holds the others back, why, and what to try, read from `/proc` without adding
//! stages.
//!
//! Owns: finding the processes chained by pipes through their standard input and output
//! ([`discover`]; from a shell, each pipeline it runs), sampling them ([`Watcher`]: CPU,
//! state per thread, bytes in and out — a splice user's from its neighbours
//! ([`figures`]) —, the fill of each pipe, where each stage's time goes ([`member`],
//! [`timeshare`]); a shell loop, a shell starting child after child, is one stage whose
//! children's time is its own, its bytes its pipes' ([`member::Kids`]), as is a launcher,
//! xargs or GNU parallel, under its own command line), the bottleneck rule ([`classify`]),
//! what to try ([`advice`]) and the
//! text of the view ([`render`]). Must not: depend on a display loop. [`Watcher::sample`]
//! takes the time and returns a [`View`], and [`Watcher::tick`] samples wait states
//! between two of them; whoever runs the loop calls both and draws the view (the display
//! loop, through `source::pipeline` and `sink::stages`).
//!
//! The view reads only: `/proc/PID/{stat,io,wchan,cmdline}`, the same files of each thread
//! under `task/` and its `schedstat`, `syscall` (the descriptor a sleep is blocked on: a
//! socket is the network) and `io` (a process's own bytes, without its reaped children's), the `fd/0` and `fd/1` links (other descriptors' links and
//! `fdinfo` flags when a stage counts far more than its pipe carries, or sleeps in `poll`
//! on something its pipes do not explain), `net/{tcp,tcp6,unix}` (a socket's peer, for the
//! advice), a loop shell's `children`, `/proc/stat` (idle cores, for the advice), every
//! process's `stat` once a window while the stages are short of CPU (the busiest one
//! outside the pipeline, for the advice: `watch/thief.rs`), and a
//! pipe's fill through a descriptor opened from
//! `/proc/PID/fd/N` and closed at once. rpv stages are asked for their byte count over
//! their control channel (splice does not show in `/proc/PID/io`).

pub(crate) mod advice;
pub(crate) mod classify;
pub(crate) mod control;
pub(crate) mod discover;
pub(crate) mod figures;
pub(crate) mod member;
pub(crate) mod model;
pub(crate) mod render;
pub(crate) mod timeshare;
pub(crate) mod watch;

#[cfg(test)]
mod tests;

pub(crate) use watch::{View, WatchError, Watcher};
