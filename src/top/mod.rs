//! `--top` (beyond pv): every data flow on the machine that rpv may see, found by what
//! moves, not by a list of program names.
//!
//! Owns: what a flow is ([`FlowView`], its [`Kind`]), finding and following flows in
//! `/proc` ([`scan::Scanner`]: a pipeline moving data, a process reading or writing a
//! regular file or block device, an rpv or pv instance, a process moving bytes through
//! sockets), and the Prometheus text of the flows (`metrics`). Must not: draw, print, or
//! depend on a display loop; `source::top` turns the flows into meters and `sink::top`
//! shows them.
//!
//! Cheap by construction: at each scan every process costs one read of `/proc/PID/io`
//! (an unreadable one is remembered, not retried); descriptors, `fdinfo` and command lines
//! are read only for processes whose counters moved (or that are new), and pipeline
//! details only for pipelines found moving.

#[allow(unreachable_pub)]
pub(crate) mod browse;
#[allow(unreachable_pub)]
pub(crate) mod metrics;
pub mod scan;
#[allow(unreachable_pub)]
pub(crate) mod view;

/// The settings of `--top` beyond the display's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TopConfig {
    /// `--metrics-flows`: the busiest flows with series of their own in the metrics file.
    pub metrics_flows: usize,
    /// `--metrics-pid`: a `pid` label on each flow's series.
    pub metrics_pid: bool,
}

/// What kind of flow a row is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// Stages joined by pipes, moving data.
    Pipeline,
    /// A process reading or writing a regular file.
    File,
    /// A process reading or writing a block device.
    Device,
    /// An rpv transfer (its own figures, asked over its control channel).
    Rpv,
    /// A pv instance.
    Pv,
    /// A process moving bytes through sockets.
    Socket,
}

impl Kind {
    /// Every kind, in the order totals are listed.
    pub const ALL: [Kind; 6] = [
        Kind::Pipeline,
        Kind::File,
        Kind::Device,
        Kind::Rpv,
        Kind::Pv,
        Kind::Socket,
    ];

    /// The kind's name in the view, `--json` and the metrics' `kind` label.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Pipeline => "pipeline",
            Kind::File => "file",
            Kind::Device => "device",
            Kind::Rpv => "rpv",
            Kind::Pv => "pv",
            Kind::Socket => "socket",
        }
    }
}

/// The stage that holds a pipeline back, as the pipeline view decides it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bottleneck {
    /// Its command line.
    pub command: String,
    /// Why: what it spends its time on (`running`, `wait output`, ...).
    pub why: String,
}

/// Which view Enter opens for a flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Zoom {
    /// `--pipeline=PID`.
    Pipeline(u32),
    /// `-d PID` or `-d PID:FD`.
    Watch(u32, Option<i32>),
}

/// What a flow is, beyond its figures (which ride in the meter).
#[derive(Debug, Clone, PartialEq)]
pub struct FlowView {
    /// Its kind.
    pub kind: Kind,
    /// The process (of a pipeline, its first stage).
    pub pid: u32,
    /// Its command line (of a pipeline, the stages' joined by ` | `).
    pub command: String,
    /// The file or device, for file and device flows (and pv reading a file); of a copy,
    /// the file read.
    pub file: Option<String>,
    /// The exact bytes of `file`, when they are not UTF-8 (`--json`'s `file_base64`).
    pub file_bytes: Option<Vec<u8>>,
    /// Of a copy (a process reading one file and writing another), the file written.
    pub to: Option<String>,
    /// The exact bytes of `to`, when they are not UTF-8.
    pub to_bytes: Option<Vec<u8>>,
    /// The descriptor, for file and device flows.
    pub fd: Option<i32>,
    /// The process writes (rather than reads) the file.
    pub writes: bool,
    /// The process copies inside the kernel (`copy_file_range`, `sendfile`, `splice`):
    /// its progress is the written file's growth, not its counters.
    pub in_kernel: bool,
    /// It copies inside the kernel and its progress cannot be seen now: neither side
    /// moves nor grows while it works (into a file made to its size first, a device).
    pub unseen: bool,
    /// A pipeline's bottleneck, once one is known.
    pub bottleneck: Option<Bottleneck>,
    /// The view Enter opens.
    pub zoom: Zoom,
}

impl FlowView {
    /// The name of the flow in one line: its command, and the file it reads or writes
    /// (in words: a `<` or `>` would read like a redirection the user did not type), or
    /// the two files it copies between; a copy made inside the kernel says so.
    pub fn name(&self) -> String {
        let kernel = match (self.in_kernel, self.unseen) {
            (_, true) => " (in kernel, progress not visible)",
            (true, false) => " (in kernel)",
            (false, false) => "",
        };
        match (&self.file, &self.to) {
            (Some(from), Some(to)) => format!("{}: {from} -> {to}{kernel}", self.command),
            (Some(file), None) if self.writes => {
                format!("{}: writes {file}{kernel}", self.command)
            }
            (Some(file), None) => format!("{}: reads {file}", self.command),
            (None, _) => self.command.clone(),
        }
    }
}

/// One flow at one scan: what it is and its figures.
#[derive(Debug, Clone)]
pub struct Flow {
    /// Stable for the flow's life (the display keeps its rate history by it).
    pub id: u64,
    /// What it is.
    pub view: FlowView,
    /// Bytes so far (a file's position; a process's count).
    pub amount: u64,
    /// Forward progress since the flow was first seen (rates are computed from it).
    pub moved: u64,
    /// Total size in bytes, 0 = unknown (a file being written, a socket).
    pub size: u64,
    /// What the amount and size count: bytes, or lines for an rpv counting lines (`-l`).
    pub(crate) unit: crate::units::Unit,
    /// Monotonic ns when it was first seen.
    pub since_ns: u64,
    /// The flow has ended (its process exited or closed the file, or it has not moved
    /// for [`scan::IDLE_DROP_NS`]): this is its last appearance.
    pub ended: bool,
}

/// Processes whose flows rpv may not read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Hidden {
    /// How many (at the last scan).
    pub count: usize,
    /// Of those, how many belong to other users.
    pub other_users: usize,
    /// rpv runs as root (nothing is another user's to hide, so the reason is another).
    pub root: bool,
}

impl Hidden {
    /// The line the view shows about them, if any.
    pub fn line(&self) -> Option<String> {
        if self.count == 0 {
            return None;
        }
        let what = if self.count == 1 {
            "1 process".to_string()
        } else {
            format!("{} processes", self.count)
        };
        let why = if self.root {
            "permission denied (/proc refused even root)"
        } else if self.other_users == self.count {
            "other users' (their I/O counters are theirs to read); run as root to see them"
        } else {
            "permission denied (other users', or ones that changed their identity); run \
             as root to see them"
        };
        Some(format!("{what} not readable: {why}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_processes_are_counted_with_the_reason() {
        assert_eq!(Hidden::default().line(), None);
        let h = Hidden {
            count: 3,
            other_users: 3,
            root: false,
        };
        assert_eq!(
            h.line().unwrap(),
            "3 processes not readable: other users' (their I/O counters are theirs to \
             read); run as root to see them"
        );
        let h = Hidden {
            count: 1,
            other_users: 0,
            root: true,
        };
        assert!(h
            .line()
            .unwrap()
            .starts_with("1 process not readable: permission denied"));
    }
}
