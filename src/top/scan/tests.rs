//! The scanner over synthetic process tables ([`FakeProc`]), the way `pipeline/tests.rs`
//! tests the pipeline view: no real process is looked at.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use super::{Scanner, AWAIT_FILES_S, IDLE_DROP_NS};
use crate::procfs::fake::{FakeProc, FakeTarget};
use crate::procfs::End;
use crate::top::{Flow, FlowView, Kind, Zoom};
use crate::units::Unit;

const RD: u32 = libc::O_RDONLY as u32;
const WR: u32 = libc::O_WRONLY as u32;

/// A scanner over a fake table, its clock and the TCP counts it is told.
struct Rig {
    fake: FakeProc,
    scanner: Scanner,
    now: u64,
    tcp: Rc<RefCell<HashMap<u64, u64>>>,
}

impl Rig {
    fn new() -> Rig {
        Rig::every(1.0)
    }

    /// A rig whose scanner's interval is `interval` seconds.
    fn every(interval: f64) -> Rig {
        let fake = FakeProc::default();
        let tcp: Rc<RefCell<HashMap<u64, u64>>> = Rc::default();
        let (watchers, counts) = (fake.clone(), tcp.clone());
        let mut scanner = Scanner::with_proc(
            Box::new(fake.clone()),
            Box::new(move || Box::new(watchers.clone())),
            Box::new(move |out| {
                out.clone_from(&counts.borrow());
                Ok(true)
            }),
            interval,
        );
        // The scanner leaves out its own process: here the test's, whose PID may be one of
        // the fake table's (a machine that has started many processes reuses small PIDs).
        scanner.own = 0;
        Rig {
            fake,
            scanner,
            now: 1_000_000_000,
            tcp,
        }
    }

    /// One scan a second later; the flows it gives.
    fn scan(&mut self) -> Vec<Flow> {
        self.scan_after(1_000_000_000)
    }

    fn scan_after(&mut self, ns: u64) -> Vec<Flow> {
        self.now += ns;
        self.scanner.scan(self.now);
        let mut out = Vec::new();
        self.scanner.flows(&mut out);
        out.sort_by_key(|f| (f.view.pid, f.view.fd));
        out
    }

    /// 300 idle processes, PIDs 1000 to 1299 (`sleep 3600`).
    fn sleepers(&self) {
        for pid in 1000..1300 {
            self.process(pid, "sleep 3600");
        }
    }

    /// A process of `cmd` with a terminal as its input and output.
    fn process(&self, pid: u32, cmd: &str) {
        self.fake.add(pid, 1, cmd, End::Other, End::Other);
    }

    /// Moves descriptor `fd` of `pid` on by `bytes`, read or written (its counters too).
    fn advance(&self, pid: u32, fd: u32, bytes: u64, writes: bool) {
        self.fake.fd(pid, fd, |f| {
            f.pos += bytes;
            if let FakeTarget::File { size, .. } = &mut f.target {
                if writes {
                    *size = (*size).max(f.pos);
                }
            }
        });
        let (r, w) = if writes { (0, bytes) } else { (bytes, 0) };
        self.fake.work(pid, 1, r, w);
    }
}

fn file(path: &str, ino: u64, size: u64) -> FakeTarget {
    FakeTarget::File {
        path: path.into(),
        ino,
        size,
        allocated: size,
    }
}

/// A short account of a flow for assertions.
fn row(f: &Flow) -> (Kind, u32, Option<i32>, Option<&str>, u64, u64, bool) {
    (
        f.view.kind,
        f.view.pid,
        f.view.fd,
        f.view.file.as_deref(),
        f.amount,
        f.size,
        f.ended,
    )
}

#[test]
fn a_reader_of_a_file_shows_its_position_and_size() {
    let mut rig = Rig::new();
    rig.process(100, "sha256sum big.iso");
    rig.fake.open(100, 3, file("/data/big.iso", 7, 10_000), RD);
    assert!(rig.scan().is_empty(), "nothing moved yet");
    rig.advance(100, 3, 2_500, false);
    let flows = rig.scan();
    assert_eq!(
        flows.iter().map(row).collect::<Vec<_>>(),
        [(
            Kind::File,
            100,
            Some(3),
            Some("/data/big.iso"),
            2_500,
            10_000,
            false
        )]
    );
    assert!(!flows[0].view.writes);
    assert_eq!(flows[0].moved, 2_500);
    // A quiet process is not shown again as moving, but stays listed.
    rig.advance(100, 3, 2_500, false);
    let flows = rig.scan();
    assert_eq!(flows[0].amount, 5_000);
    assert_eq!(flows[0].moved, 5_000);
}

#[test]
fn a_writer_of_a_file_has_no_size_to_end_at() {
    let mut rig = Rig::new();
    rig.process(100, "tar cf out.tar dir");
    rig.fake.open(100, 4, file("/tmp/out.tar", 8, 0), WR);
    rig.scan();
    rig.advance(100, 4, 4_096, true);
    let flows = rig.scan();
    assert_eq!(
        flows.iter().map(row).collect::<Vec<_>>(),
        [(
            Kind::File,
            100,
            Some(4),
            Some("/tmp/out.tar"),
            4_096,
            0,
            false
        )]
    );
    assert!(flows[0].view.writes);
}

#[test]
fn a_device_is_a_device_flow_with_the_devices_size() {
    let mut rig = Rig::new();
    rig.process(100, "dd if=/dev/sdb of=/dev/null");
    rig.fake.open(
        100,
        0,
        FakeTarget::Device {
            path: "/dev/sdb".into(),
            rdev: 0x810,
            size: 1 << 30,
        },
        RD,
    );
    rig.scan();
    rig.advance(100, 0, 1 << 20, false);
    let flows = rig.scan();
    assert_eq!(
        flows.iter().map(row).collect::<Vec<_>>(),
        [(
            Kind::Device,
            100,
            Some(0),
            Some("/dev/sdb"),
            1 << 20,
            1 << 30,
            false
        )]
    );
}

#[test]
fn a_descriptor_opened_again_in_the_midst_of_a_walk_is_named_by_its_new_file() {
    // `dd if=/dev/sdb` opens its input onto its standard input (until then the null
    // device): a walk that read the link before and the `stat` after saw the device under
    // the null device's name, and the flow kept that name to its end.
    let mut rig = Rig::new();
    rig.process(100, "dd if=/dev/sdb of=/dev/null");
    rig.fake
        .open(100, 0, FakeTarget::CharDevice("/dev/null".into()), RD);
    let sdb = FakeTarget::Device {
        path: "/dev/sdb".into(),
        rdev: 0x810,
        size: 1 << 30,
    };
    rig.fake.0.borrow_mut().reopen_after_listing = Some((100, 0, sdb));
    rig.scan();
    let mut flows = Vec::new();
    for _ in 0..4 {
        rig.advance(100, 0, 1 << 20, false);
        flows = rig.scan();
    }
    let rows = flows.iter().map(row).collect::<Vec<_>>();
    assert_eq!(rows.len(), 1, "{rows:?}");
    let (kind, pid, fd, path, ..) = rows[0];
    assert_eq!(
        (kind, pid, fd, path),
        (Kind::Device, 100, Some(0), Some("/dev/sdb")),
        "{rows:?}"
    );
}

#[test]
fn a_socket_user_is_followed_through_its_counts() {
    let mut rig = Rig::new();
    rig.process(100, "curl -O http://x/y");
    rig.fake
        .open(100, 5, FakeTarget::Socket(900), libc::O_RDWR as u32);
    rig.tcp.borrow_mut().insert(900, 1_000);
    rig.scan();
    // Bytes received over TCP show nowhere in its io counters.
    rig.tcp.borrow_mut().insert(900, 51_000);
    rig.scan();
    rig.tcp.borrow_mut().insert(900, 101_000);
    let flows = rig.scan();
    assert_eq!(flows.len(), 1, "{flows:?}");
    assert_eq!(flows[0].view.kind, Kind::Socket);
    assert_eq!(flows[0].view.pid, 100);
    assert_eq!(flows[0].moved, 50_000, "{:?}", flows[0]);
}

#[test]
fn a_process_with_no_socket_is_never_a_socket_flow() {
    // A test binary writing to the null device through its io counters (D8).
    let mut rig = Rig::new();
    rig.process(100, "it-3de5b8502a1a644f");
    rig.fake
        .open(100, 3, FakeTarget::CharDevice("/dev/null".into()), WR);
    rig.scan();
    for _ in 0..3 {
        rig.fake.work(100, 1, 0, 1 << 40);
        let flows = rig.scan();
        assert!(flows.is_empty(), "{flows:?}");
    }
}

#[test]
fn a_flow_that_stops_moving_ends_after_the_idle_time() {
    let mut rig = Rig::new();
    rig.process(100, "cat log");
    rig.fake
        .open(100, 3, file("/var/log/log", 9, 1_000_000), RD);
    rig.scan();
    rig.advance(100, 3, 1_000, false);
    let flows = rig.scan();
    assert_eq!(flows.len(), 1);
    let id = flows[0].id;
    assert!(!rig.scan_after(IDLE_DROP_NS / 2)[0].ended);
    let last = rig.scan_after(IDLE_DROP_NS / 2);
    assert_eq!(last.len(), 1, "{last:?}");
    assert!(last[0].ended && last[0].id == id, "{last:?}");
    assert!(rig.scan().is_empty(), "an ended flow appears once");
}

#[test]
fn a_process_that_exits_ends_its_flows_and_a_new_one_under_its_pid_is_new() {
    let mut rig = Rig::new();
    rig.process(100, "gzip -d a.gz");
    rig.fake.open(100, 3, file("/a.gz", 10, 50_000), RD);
    rig.scan();
    rig.advance(100, 3, 10_000, false);
    let first = rig.scan()[0].id;
    rig.fake.remove(100);
    let flows = rig.scan();
    assert_eq!(
        flows.iter().map(|f| (f.id, f.ended)).collect::<Vec<_>>(),
        [(first, true)]
    );
    // Churn: another program gets the PID and reads another file.
    rig.process(100, "cat b");
    rig.fake.with(100, |p| p.start += 1);
    rig.fake.open(100, 3, file("/b", 11, 9_000), RD);
    rig.scan();
    rig.advance(100, 3, 3_000, false);
    let flows = rig.scan();
    assert_eq!(flows.len(), 1, "{flows:?}");
    assert_ne!(flows[0].id, first);
    assert_eq!(flows[0].view.file.as_deref(), Some("/b"));
    assert_eq!(flows[0].view.command, "cat b");
    assert_eq!(flows[0].moved, 3_000);
}

#[test]
fn hidden_processes_are_counted_not_shown() {
    let mut rig = Rig::new();
    rig.process(100, "secret");
    rig.process(101, "mine");
    rig.fake.with(100, |p| {
        p.hidden = true;
        p.uid = 1234;
    });
    rig.scan();
    let hidden = rig.scanner.hidden();
    assert_eq!((hidden.count, hidden.other_users), (1, 1), "{hidden:?}");
    rig.fake.work(100, 1, 1 << 20, 0);
    assert!(rig.scan().is_empty());
}

#[test]
fn an_rpv_found_in_the_midst_of_its_exec_is_decided_when_it_has_a_command_line() {
    let mut rig = Rig::new();
    // Its new name, no arguments yet: neither a flow nor taken for a watching rpv.
    rig.fake.add(100, 1, "rpv", End::Other, End::Other);
    rig.fake.with(100, |p| p.cmdline = String::new());
    rig.fake.open(100, 3, file("/tmp/in", 12, 1_000_000), RD);
    rig.scan();
    // Then its arguments: it watches (`--top`): none of its reads are flows.
    rig.fake.with(100, |p| p.cmdline = "rpv --top".into());
    for _ in 0..3 {
        rig.advance(100, 3, 1_000, false);
        let flows = rig.scan_after(3_000_000_000);
        assert!(flows.is_empty(), "{flows:?}");
    }
}

#[test]
fn a_pipeline_is_one_flow_through_the_pipeline_view() {
    let mut rig = Rig::new();
    rig.fake.add(100, 1, "bash", End::Other, End::Other);
    rig.fake.add(101, 100, "yes", End::Other, End::Pipe(77));
    rig.fake.add(102, 100, "gzip", End::Pipe(77), End::Other);
    rig.fake.fill(77, 0, 65_536);
    rig.scan();
    for _ in 0..3 {
        rig.fake.work(101, 50, 0, 1 << 20);
        rig.fake.work(102, 50, 1 << 20, 1 << 18);
        rig.scan();
    }
    let flows = rig.scan();
    let kinds: Vec<(Kind, u32)> = flows.iter().map(|f| (f.view.kind, f.view.pid)).collect();
    assert_eq!(kinds, [(Kind::Pipeline, 101)], "{flows:?}");
    assert_eq!(flows[0].view.command, "yes | gzip");
}

#[test]
fn a_pipeline_short_of_cpu_costs_no_look_at_every_other_process() {
    // `yes | gzip` waiting for a CPU on a machine of 300 other processes: the pipeline view
    // would look at every process's CPU time once a window to name the busiest; --top shows
    // no advice (its zoom opens the pipeline view for that), so it reads none of theirs.
    let mut rig = Rig::new();
    rig.fake.add(100, 1, "bash", End::Other, End::Other);
    rig.fake.add(101, 100, "yes", End::Other, End::Pipe(77));
    rig.fake.add(102, 100, "gzip", End::Pipe(77), End::Other);
    rig.sleepers();
    rig.fake
        .add(2000, 1, "python3 spin.py", End::Other, End::Other);
    rig.fake.fill(77, 65_536, 65_536);
    rig.scan();
    let mut flows = Vec::new();
    let mut reads = Vec::new();
    for _ in 0..6 {
        rig.fake.work(101, 5, 0, 1 << 20);
        rig.fake.starve(101, 150_000_000);
        rig.fake.state(102, 'R', "0");
        rig.fake.work(102, 40, 1 << 20, 1 << 18);
        rig.fake.starve(102, 550_000_000);
        rig.fake.work(2000, 90, 0, 0);
        let before = rig.fake.reads().0;
        flows = rig.scan();
        reads.push(rig.fake.reads().0 - before);
    }
    let kinds: Vec<Kind> = flows.iter().map(|f| f.view.kind).collect();
    assert_eq!(kinds, [Kind::Pipeline], "{flows:?}");
    // After the scan that found the pipeline (the discovery looks at every process once),
    // the stages' own figures only: a few reads a scan, not 300 processes' a window.
    assert!(
        reads[1..].iter().all(|&n| n < 50),
        "stat reads per scan: {reads:?}"
    );
}

#[test]
fn a_moving_process_has_its_command_read_at_its_walks_only() {
    // A reader moving at every scan (-i 0.5) is walked every 2 s; its command line is read
    // then, not at every scan. A wrapper that execs its program (same PID, new command)
    // shows the new command within 2 s.
    let mut rig = Rig::new();
    rig.process(100, "hashwrap /data/big.iso");
    rig.fake.open(100, 3, file("/data/big.iso", 7, 1 << 30), RD);
    rig.advance(100, 3, 1_000, false);
    rig.scan();
    let before = rig.fake.0.borrow().cmdline_reads;
    for _ in 0..8 {
        rig.advance(100, 3, 1_000, false);
        rig.scan_after(500_000_000);
    }
    let reads = rig.fake.0.borrow().cmdline_reads - before;
    assert!(reads <= 3, "command lines read in 8 scans of 4 s: {reads}");
    rig.fake.with(100, |p| {
        p.cmdline = "sha256sum /data/big.iso".into();
        p.comm = "sha256sum".into();
    });
    let mut seen = Vec::new();
    for _ in 0..5 {
        rig.advance(100, 3, 1_000, false);
        let flows = rig.scan_after(500_000_000);
        seen.push(flows[0].view.command.clone());
    }
    assert_eq!(seen.last().unwrap(), "sha256sum /data/big.iso", "{seen:?}");
    // An interpreter: its script and its command from one read a walk, once walked.
    rig.process(200, "python3 /p/reader.py");
    rig.fake
        .open(200, 3, file("/data/other.iso", 8, 1 << 30), RD);
    rig.advance(200, 3, 1_000, false);
    rig.scan_after(500_000_000);
    let before = rig.fake.0.borrow().cmdline_reads;
    let mut flows = Vec::new();
    for _ in 0..8 {
        rig.advance(200, 3, 1_000, false);
        flows = rig.scan_after(500_000_000);
    }
    let reads = rig.fake.0.borrow().cmdline_reads - before;
    assert!(
        reads <= 3,
        "an interpreter's command lines in 8 scans of 4 s: {reads}"
    );
    let row = flows.iter().find(|f| f.view.pid == 200).expect("its flow");
    assert_eq!(row.view.command, "python3 /p/reader.py");
}

#[test]
fn a_file_read_within_its_size_is_not_looked_at_every_scan() {
    // A reader moving at every scan (-i 0.5) of a file that does not grow: its size is
    // read again every 2 s, not at every scan; a file that grows past what was known is
    // seen at once, when the position passes the old size.
    let mut rig = Rig::new();
    rig.process(100, "sha256sum /data/big.iso");
    rig.fake.open(100, 3, file("/data/big.iso", 7, 1 << 30), RD);
    rig.advance(100, 3, 1_000, false);
    rig.scan();
    rig.advance(100, 3, 1_000, false);
    rig.scan();
    let before = rig.fake.0.borrow().fd_stats;
    let mut flows = Vec::new();
    for _ in 0..8 {
        rig.advance(100, 3, 1 << 20, false);
        flows = rig.scan_after(500_000_000);
    }
    let stats = rig.fake.0.borrow().fd_stats - before;
    assert!(stats <= 3, "stats in 8 scans of 4 s: {stats}");
    assert_eq!(flows[0].amount, 2_000 + (8 << 20));
    assert_eq!(flows[0].size, 1 << 30);
    // Appended to beyond its known size, and read past it: the new size at once.
    rig.fake.fd(100, 3, |f| {
        if let FakeTarget::File { size, .. } = &mut f.target {
            *size = 2 << 30;
        }
    });
    rig.fake.fd(100, 3, |f| f.pos = (1 << 30) + 4096);
    rig.fake.work(100, 1, 1 << 30, 0);
    let flows = rig.scan_after(500_000_000);
    // (Counted: a position past the size known would be a seek. A file seen to grow has
    // no total.)
    assert_eq!(flows[0].amount, (1 << 30) + 4096, "{flows:?}");
    assert_eq!(flows[0].size, 0, "{flows:?}");
}

#[test]
fn a_quiet_process_is_looked_at_every_4_s_whatever_the_interval() {
    // At -i 0.5, 300 idle processes: each read once in 8 scans (4 s), not once in 3; one
    // that starts to read a file is found within 4 s.
    let mut rig = Rig::every(0.5);
    rig.sleepers();
    rig.fake
        .open(1150, 3, file("/data/big.iso", 7, 1 << 30), RD);
    for _ in 0..8 {
        rig.scan_after(500_000_000);
    }
    let before = rig.fake.reads().1;
    for _ in 0..8 {
        rig.scan_after(500_000_000);
    }
    assert_eq!(rig.fake.reads().1 - before, 300, "io reads in 4 s");
    rig.advance(1150, 3, 1 << 20, false);
    let mut found = None;
    for scan in 1..=8 {
        rig.advance(1150, 3, 1 << 20, false);
        if rig
            .scan_after(500_000_000)
            .iter()
            .any(|f| f.view.pid == 1150)
        {
            found = Some(scan);
            break;
        }
    }
    assert!(found.is_some(), "not found within 8 scans (4 s)");
}

#[test]
fn a_steady_mover_is_walked_every_4_s_and_its_new_file_found_within_them() {
    let mut rig = Rig::new();
    rig.process(100, "cat /data/a.iso /data/b.iso");
    rig.fake.open(100, 3, file("/data/a.iso", 7, 1 << 30), RD);
    let mut walks = Vec::new();
    for _ in 0..12 {
        rig.advance(100, 3, 1 << 20, false);
        rig.scan();
        walks.push(rig.scanner.cost().walked);
    }
    // Walked at its first scan, 2 s later (the same descriptors: steady), then every 4 s.
    let walked: Vec<usize> = (walks.iter().enumerate())
        .filter(|(_, &n)| n > 0)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(walked, [0, 2, 6, 10], "{walks:?}");
    // It moves on to its next file: found at its next walk, within 4 s.
    rig.fake.close(100, 3);
    rig.fake.open(100, 3, file("/data/b.iso", 8, 1 << 30), RD);
    let mut found = None;
    for scan in 1..=4 {
        rig.advance(100, 3, 1 << 20, false);
        let flows = rig.scan();
        if flows
            .iter()
            .any(|f| f.view.file.as_deref() == Some("/data/b.iso"))
        {
            found = Some(scan);
            break;
        }
    }
    assert!(found.is_some(), "b.iso not found within 4 s");
    // Its descriptors changed: walked every 2 s again.
    let mut walks = Vec::new();
    for _ in 0..3 {
        rig.advance(100, 3, 1 << 20, false);
        rig.scan();
        walks.push(rig.scanner.cost().walked);
    }
    assert!(walks.iter().sum::<usize>() >= 1, "{walks:?}");
}

#[test]
fn a_steady_mover_has_its_descriptors_read_in_full_one_walk_in_four() {
    // A reader with 40 descriptors moving at every scan (-i 0.5): walked every 4 s once
    // steady, but only one walk in four reads where each descriptor leads (a `readlink`
    // each); the others list their numbers. A descriptor with a new number is still found
    // at the next walk, and a new program at once.
    let mut rig = Rig::every(0.5);
    rig.process(100, "reader /data/big.iso");
    rig.fake.open(100, 3, file("/data/big.iso", 7, 1 << 40), RD);
    for fd in 4..44 {
        rig.fake
            .open(100, fd, FakeTarget::CharDevice("/dev/null".into()), RD);
    }
    let scan = |rig: &mut Rig| {
        rig.advance(100, 3, 1 << 20, false);
        let links = rig.fake.0.borrow().link_reads;
        let flows = rig.scan_after(500_000_000);
        let cost = rig.scanner.cost();
        (
            cost.walked,
            cost.light,
            rig.fake.0.borrow().link_reads - links,
            flows,
        )
    };
    // The first walk, and the one that finds it steady 2 s later.
    for _ in 0..5 {
        scan(&mut rig);
    }
    let mut walks = Vec::new();
    for _ in 0..32 {
        let (walked, light, links, _) = scan(&mut rig);
        if walked > 0 {
            walks.push((light, links));
        }
    }
    // Every 4 s: 4 walks in 16 s, one of them in full (41 links and stdin's, stdout's).
    assert_eq!(walks.len(), 4, "{walks:?}");
    let full: Vec<_> = walks.iter().filter(|(light, _)| *light == 0).collect();
    assert_eq!(full.len(), 1, "{walks:?}");
    assert!(full[0].1 >= 41, "{walks:?}");
    assert!(
        (walks.iter().filter(|(light, _)| *light == 1)).all(|(_, links)| *links == 0),
        "{walks:?}"
    );
    // A new descriptor: found at the next walk (a light one sees a new number).
    rig.fake
        .open(100, 44, file("/data/second.iso", 8, 1 << 40), RD);
    let mut found = None;
    for n in 1..=9 {
        rig.advance(100, 44, 1 << 20, false);
        let (.., flows) = scan(&mut rig);
        if flows
            .iter()
            .any(|f| f.view.file.as_deref() == Some("/data/second.iso"))
        {
            found = Some(n);
            break;
        }
    }
    assert!(found.is_some(), "the new file not found within 4.5 s");
    // Steady again, then it runs another program (`exec`): shown within 4.5 s.
    for _ in 0..8 {
        scan(&mut rig);
    }
    rig.fake.with(100, |p| {
        p.cmdline = "sha256sum /data/big.iso".into();
        p.comm = "sha256sum".into();
    });
    let mut seen = Vec::new();
    for _ in 0..9 {
        let (.., flows) = scan(&mut rig);
        seen.push(flows[0].view.command.clone());
    }
    assert_eq!(seen.last().unwrap(), "sha256sum /data/big.iso", "{seen:?}");
}

#[test]
fn a_process_quiet_for_half_a_minute_is_looked_at_every_8_s() {
    // At -i 0.5, 300 idle processes: after 5 scans each is read once in 8 scans (4 s);
    // after about 30 s more, once in 16 (8 s). One that starts to read a file then is found
    // within 8 s, with every byte it read.
    let mut rig = Rig::every(0.5);
    rig.sleepers();
    rig.fake
        .open(1150, 3, file("/data/big.iso", 7, 1 << 30), RD);
    let reads_in_8_s = |rig: &mut Rig| {
        let before = rig.fake.reads().1;
        for _ in 0..16 {
            rig.scan_after(500_000_000);
        }
        rig.fake.reads().1 - before
    };
    for _ in 0..8 {
        rig.scan_after(500_000_000);
    }
    assert_eq!(
        reads_in_8_s(&mut rig),
        600,
        "io reads in 8 s, quiet for 4 s"
    );
    for _ in 0..3 {
        reads_in_8_s(&mut rig);
    }
    assert_eq!(
        reads_in_8_s(&mut rig),
        300,
        "io reads in 8 s, quiet for 36 s"
    );
    let mut found = None;
    for scan in 1..=16 {
        rig.advance(1150, 3, 1 << 20, false);
        let flows = rig.scan_after(500_000_000);
        if let Some(f) = flows.iter().find(|f| f.view.pid == 1150) {
            found = Some((scan, f.amount));
            break;
        }
    }
    let (scan, amount) = found.expect("not found within 16 scans (8 s)");
    assert_eq!(amount, scan << 20, "every byte read since it started");
}

#[test]
fn proc_is_listed_again_only_when_a_process_has_started() {
    // 300 idle processes and a reader: while the last PID given out stands still, no
    // process has started, and the scan looks at the processes it knows without listing
    // /proc (most of what a scan of an idle machine costs).
    let mut rig = Rig::new();
    rig.fake.0.borrow_mut().last_pid = Some(5000);
    rig.sleepers();
    rig.process(100, "sha256sum big.iso");
    rig.fake.open(100, 3, file("/data/big.iso", 7, 100_000), RD);
    rig.scan();
    assert_eq!(rig.fake.scans(), 1);
    for _ in 0..5 {
        rig.advance(100, 3, 1_000, false);
        let flows = rig.scan();
        assert_eq!(flows.len(), 1, "{flows:?}");
        assert!(!rig.scanner.cost().listed);
    }
    assert_eq!(rig.fake.scans(), 1, "listed again with no process started");
    // A process starts: the PID given out moves, and it is found at the next scan.
    rig.process(5001, "cat /data/other.iso");
    rig.fake
        .open(5001, 3, file("/data/other.iso", 8, 100_000), RD);
    rig.fake.0.borrow_mut().last_pid = Some(5001);
    rig.scan();
    assert!(rig.scanner.cost().listed);
    rig.advance(5001, 3, 4_000, false);
    rig.advance(100, 3, 1_000, false);
    let flows = rig.scan();
    assert_eq!(
        flows
            .iter()
            .map(|f| (f.view.pid, f.amount))
            .collect::<Vec<_>>(),
        [(100, 6_000), (5001, 4_000)]
    );
    assert_eq!(rig.fake.scans(), 2);
    // One ends: its flow ends, and it is not looked for again (no read of a gone process's
    // files at every scan until the next listing).
    rig.fake.remove(100);
    let flows = rig.scan();
    assert!(
        flows.iter().any(|f| f.view.pid == 100 && f.ended),
        "{flows:?}"
    );
    rig.scan();
    let before = rig.fake.reads().1;
    for _ in 0..4 {
        rig.scan();
    }
    let io_reads = rig.fake.reads().1 - before;
    // (The 300 idle ones are read every fourth scan: 300 in four scans; the cat's 3, until
    // it has been quiet for five scans.)
    assert_eq!(io_reads, 303, "io reads in four scans");
    assert_eq!(rig.fake.scans(), 2);
    // Without the last PID (a /proc that does not tell it), every scan lists.
    rig.fake.0.borrow_mut().last_pid = None;
    rig.scan();
    rig.scan();
    assert_eq!(rig.fake.scans(), 4);
}

#[test]
fn the_tcp_table_is_read_only_when_tcp_segments_moved() {
    // The segments counted at each read (None: the table cannot be read), and the dumps.
    let segments = Rc::new(RefCell::new(vec![
        Some(5),
        Some(5),
        Some(7),
        Some(7),
        None,
        None,
    ]));
    let dumps = Rc::new(RefCell::new(0));
    let (s, d) = (segments.clone(), dumps.clone());
    let mut tcp = super::gated(
        move || s.borrow_mut().remove(0),
        move |out| {
            *d.borrow_mut() += 1;
            out.insert(1, 100);
            Ok(())
        },
    );
    let mut read = Vec::new();
    for _ in 0..6 {
        let mut out = HashMap::new();
        read.push(tcp(&mut out).unwrap());
        assert_eq!(out.is_empty(), !read[read.len() - 1]);
    }
    assert_eq!(read, [true, false, true, false, true, true]);
    assert_eq!(*dumps.borrow(), 4);
}

#[test]
fn flow_names_say_the_direction_in_words() {
    let mut view = FlowView {
        kind: Kind::File,
        pid: 1,
        command: "dd of=x".into(),
        file: Some("/d/x".into()),
        file_bytes: None,
        to: None,
        to_bytes: None,
        fd: Some(1),
        writes: true,
        in_kernel: false,
        unseen: false,
        bottleneck: None,
        zoom: Zoom::Watch(1, Some(1)),
    };
    assert_eq!(view.name(), "dd of=x: writes /d/x");
    view.writes = false;
    assert_eq!(view.name(), "dd of=x: reads /d/x");
    view.to = Some("/d/y".into());
    assert_eq!(view.name(), "dd of=x: /d/x -> /d/y");
    view.in_kernel = true;
    assert_eq!(view.name(), "dd of=x: /d/x -> /d/y (in kernel)");
    view.file = None;
    assert_eq!(view.name(), "dd of=x");
}

#[test]
fn a_closed_file_ends_its_flow_and_a_pipe_is_not_a_file() {
    let mut rig = Rig::new();
    rig.process(100, "sort -o out in");
    rig.fake.open(100, 3, file("/in", 13, 8_000), RD);
    rig.fake.open(100, 4, FakeTarget::Pipe(55), WR);
    rig.scan();
    rig.advance(100, 3, 8_000, false);
    let flows = rig.scan();
    assert_eq!(
        flows.iter().map(|f| f.view.fd).collect::<Vec<_>>(),
        [Some(3)]
    );
    rig.fake.close(100, 3);
    rig.fake.work(100, 1, 0, 10);
    let flows = rig.scan_after(3_000_000_000);
    assert_eq!(
        flows
            .iter()
            .map(|f| (f.view.fd, f.ended))
            .collect::<Vec<_>>(),
        [(Some(3), true)]
    );
}

const GIB: u64 = 1 << 30;

/// `cp` copying `/d/big` (4 GiB) to `/d/copy` with `copy_file_range` in 2 GiB calls: its
/// counters and the source's position move only when a call returns.
fn cp(rig: &Rig, pid: u32) {
    rig.fake.open(pid, 3, file("/d/big", 20, 4 * GIB), RD);
    rig.fake.open(pid, 4, file("/d/copy", 21, 0), WR);
}

/// The written file of `cp` grows to `bytes`.
fn grow(rig: &Rig, pid: u32, bytes: u64) {
    rig.fake.fd(pid, 4, |f| {
        if let FakeTarget::File {
            size, allocated, ..
        } = &mut f.target
        {
            *size = bytes;
            *allocated = bytes;
        }
    });
}

#[test]
fn a_copy_inside_the_kernel_is_followed_by_the_written_files_growth_to_its_end() {
    let mut rig = Rig::new();
    rig.process(100, "cp /d/big /d/copy");
    cp(&rig, 100);
    rig.scan();
    let mut seen = Vec::new();
    for step in 1..=3 {
        grow(&rig, 100, (step * 600) << 20);
        let flows = rig.scan_after(500_000_000);
        assert_eq!(flows.len(), 1, "at step {step}: {flows:?}");
        let f = &flows[0];
        assert_eq!(f.view.file.as_deref(), Some("/d/big"));
        assert_eq!(f.view.to.as_deref(), Some("/d/copy"));
        assert!(f.view.in_kernel, "{f:?}");
        assert_eq!(
            f.view.name(),
            "cp /d/big /d/copy: /d/big -> /d/copy (in kernel)"
        );
        assert_eq!(
            (f.amount, f.size, f.ended),
            ((step * 600) << 20, 4 * GIB, false)
        );
        seen.push(f.id);
    }
    // The first call returns: its counters and the source's position jump by 2 GiB. The
    // figures never go back.
    grow(&rig, 100, 2 * GIB + (100 << 20));
    rig.fake.fd(100, 3, |f| f.pos = 2 * GIB);
    rig.fake.work(100, 1, 2 * GIB, 2 * GIB);
    rig.fake.fd(100, 4, |f| f.pos = 2 * GIB);
    let f = &rig.scan_after(500_000_000)[0];
    assert!(f.amount >= 2 * GIB + (100 << 20), "{f:?}");
    // It ends between two scans: the last figures are what the copy holds.
    grow(&rig, 100, 4 * GIB);
    let done = FakeTarget::File {
        path: "/d/copy".into(),
        ino: 21,
        size: 4 * GIB,
        allocated: 4 * GIB,
    };
    rig.fake.remove(100);
    rig.fake.0.borrow_mut().disk.insert("/d/copy".into(), done);
    let flows = rig.scan_after(500_000_000);
    assert_eq!(flows.len(), 1, "{flows:?}");
    let f = &flows[0];
    assert_eq!(
        (f.amount, f.size, f.ended),
        (4 * GIB, 4 * GIB, true),
        "{f:?}"
    );
    assert_eq!(f.moved, 4 * GIB);
    assert!(seen.iter().all(|&id| id == f.id));
}

#[test]
fn a_copy_whose_output_goes_to_a_log_file_is_still_a_copy() {
    // `cp /d/big /d/copy > /d/log 2>&1`: the shell opened the log for it, on its standard
    // output and error, to write (not to append). Only the file it opened itself is its
    // copy's (it showed as "writes /d/copy", no source, no percentage).
    let mut rig = Rig::new();
    rig.process(100, "cp /d/big /d/copy");
    rig.fake.open(100, 1, file("/d/log", 22, 0), WR);
    rig.fake.open(100, 2, file("/d/log", 22, 0), WR);
    cp(&rig, 100);
    rig.scan();
    grow(&rig, 100, 600 << 20);
    let flows = rig.scan_after(500_000_000);
    assert_eq!(flows.len(), 1, "{flows:?}");
    let f = &flows[0];
    assert_eq!(
        (f.view.file.as_deref(), f.view.to.as_deref()),
        (Some("/d/big"), Some("/d/copy")),
        "{f:?}"
    );
    assert!(f.view.in_kernel, "{f:?}");
    assert_eq!((f.amount, f.size), (600 << 20, 4 * GIB), "{f:?}");
}

/// Process `pid` (`command`) with `/d/big` (4 GiB) open for reading on descriptor 3 and
/// `/d/copy`, made to its full size first, open for writing on 4.
fn copy_of_big(rig: &mut Rig, pid: u32, command: &str) {
    rig.process(pid, command);
    rig.fake.open(pid, 3, file("/d/big", 20, 4 * GIB), RD);
    rig.fake.open(pid, 4, file("/d/copy", 21, 4 * GIB), WR);
}

#[test]
fn a_copy_call_that_returns_shows_though_no_counter_moved() {
    // `copy_file_range` into a file made to its full size first: the kernel counts none of
    // it in the process's I/O counters, and the file does not grow; only the descriptors'
    // positions move, as each 2 GiB call returns.
    let mut rig = Rig::new();
    copy_of_big(&mut rig, 100, "copier /d/big /d/copy");
    rig.fake.work(100, 1, 4096, 0);
    rig.scan();
    rig.fake.kernel_work(100, 90);
    rig.scan();
    rig.fake.fd(100, 3, |f| f.pos = 2 * GIB);
    rig.fake.fd(100, 4, |f| f.pos = 2 * GIB);
    rig.fake.kernel_work(100, 90);
    let flows = rig.scan();
    assert_eq!(flows.len(), 1, "{flows:?}");
    assert_eq!(
        (flows[0].amount, flows[0].size),
        (2 * GIB, 4 * GIB),
        "{flows:?}"
    );
    assert!(!flows[0].view.unseen, "{flows:?}");
}

#[test]
fn a_copy_whose_progress_cannot_be_seen_says_so() {
    // A copy inside the kernel into a file made to its full size first: the written file
    // does not grow, and nothing moves until the call returns; its process works in the
    // kernel (system time) all along.
    let mut rig = Rig::new();
    copy_of_big(&mut rig, 100, "copier /d/big /d/copy");
    // Beside it, the same files held by a process that does nothing.
    copy_of_big(&mut rig, 200, "idle /d/big /d/copy");
    rig.fake.state(200, 'S', "do_select");
    rig.scan();
    let mut shown = Vec::new();
    for _ in 0..3 {
        rig.fake.kernel_work(100, 90);
        shown = rig.scan();
    }
    assert_eq!(shown.len(), 1, "{shown:?}");
    let f = &shown[0];
    assert_eq!(f.view.pid, 100);
    assert!(f.view.unseen && f.view.in_kernel, "{f:?}");
    assert_eq!(
        f.view.name(),
        "copier /d/big /d/copy: /d/big -> /d/copy (in kernel, progress not visible)"
    );
    assert_eq!((f.amount, f.size, f.ended), (0, 4 * GIB, false));
    // Its call returns: it moved, and its progress shows again.
    rig.fake.fd(100, 3, |f| f.pos = 2 * GIB);
    rig.fake.fd(100, 4, |f| f.pos = 2 * GIB);
    rig.fake.work(100, 1, 2 * GIB, 2 * GIB);
    rig.fake.kernel_work(100, 90);
    let f = &rig.scan()[0];
    assert!(!f.view.unseen, "{f:?}");
    assert_eq!(f.amount, 2 * GIB);
    // Computing in user space (its user time grows more than its system time): not
    // working inside the kernel.
    rig.fake.work(100, 90, 0, 0);
    rig.fake.kernel_work(100, 10);
    let flows = rig.scan();
    assert!(flows.iter().all(|f| !f.view.unseen), "{flows:?}");
    // It waits for nothing in the kernel any more (asleep): not working, not unseen.
    rig.fake.state(100, 'S', "do_select");
    let flows = rig.scan();
    assert!(flows.iter().all(|f| !f.view.unseen), "{flows:?}");
}

#[test]
fn a_copy_started_by_a_shells_child_is_found_at_the_next_scan() {
    cp_found_behind(&[], 0);
}

/// `taskset -c 1 nice -n 5 cp /d/big /d/copy` on a loaded machine, seen at each program
/// of the chain: the shell's child, then `taskset`, then `nice`, each with nothing to
/// follow, then cp. Each `exec` moves the counters once (the loader's reads); the copy is
/// found at the scan after its own, not 2 s later (a run beside busy loops showed cp's
/// first row 4.6 s after its copy had begun).
#[test]
fn a_copy_behind_a_chain_of_wrappers_is_found_at_the_next_scan() {
    cp_found_behind(
        &[
            "taskset -c 1 nice -n 5 cp /d/big /d/copy",
            "nice -n 5 cp /d/big /d/copy",
        ],
        0,
    );
}

/// A copy whose program was starved of CPU (a loaded machine): the loader's reads move its
/// counters, and the walk that follows finds nothing yet; only 1.5 s later does cp open
/// its files and copy inside the kernel, its counters still. It is found at the next scan
/// (a loaded run showed cp's first row 2.7 s after its copy began), behind a chain of
/// wrappers that used the walks at once of the process before cp ran.
#[test]
fn a_copy_opened_after_its_programs_last_read_is_found_at_the_next_scan() {
    cp_found_behind(
        &[
            "env taskset -c 1 nice -n 15 cp /d/big /d/copy",
            "taskset -c 1 nice -n 15 cp /d/big /d/copy",
            "nice -n 15 cp /d/big /d/copy",
            "nice -n 15 cp /d/big /d/copy",
        ],
        3,
    );
}

/// A copier starved between its two opens (a loaded machine, or `cp` over a file, which it
/// empties inside its second open): the walk after its last read found the file it reads
/// open, not yet the one it writes, and its counters stand still while it copies inside
/// the kernel. The copy is found at the scan after its second open, and shows from the
/// scan after that, with what the written file gained since (what it held when first seen
/// is not counted). A loaded run of a copier at nice 19 showed no row of it in 19 s; `cp`
/// over a 2 GiB file at nice 15 showed its first row 3 s into its copy, at the walks'
/// 2 s.
#[test]
fn a_copy_walked_between_its_two_opens_is_found_at_the_next_scan() {
    let mut rig = Rig::new();
    rig.process(100, "python3 copier.py");
    rig.scan();
    rig.fake.work(100, 1, 832, 0);
    rig.fake.open(100, 3, file("/d/big", 20, 4 * GIB), RD);
    rig.scan_after(500_000_000);
    rig.scan_after(500_000_000);
    rig.fake.open(100, 4, file("/d/copy", 21, 0), WR);
    let mut copies = Vec::new();
    for scan in 1..=5 {
        rig.fake.kernel_work(100, 10);
        grow(&rig, 100, scan << 26);
        let flows = rig.scan_after(500_000_000);
        if flows
            .iter()
            .any(|f| f.view.to.as_deref() == Some("/d/copy"))
        {
            copies.push(scan);
        }
    }
    assert_eq!(copies, [2, 3, 4, 5]);
}

/// What [`AWAIT_FILES_S`] costs: a process that moved once and then sleeps with nothing to
/// follow (a shell waiting for its child) has its descriptors' numbers listed for at most
/// that long after its last move, not at every scan of its life.
#[test]
fn a_sleeping_process_with_nothing_to_follow_is_not_listed_for_long() {
    let mut rig = Rig::new();
    rig.process(100, "bash");
    rig.scan();
    rig.fake.work(100, 1, 832, 0);
    rig.scan_after(500_000_000);
    let listings = |rig: &Rig| rig.fake.0.borrow().number_listings;
    let window = (AWAIT_FILES_S / 0.5) as usize;
    for _ in 0..window {
        rig.scan_after(500_000_000);
    }
    let during = listings(&rig);
    assert!((1..=window).contains(&during), "{during}");
    for _ in 0..40 {
        rig.scan_after(500_000_000);
    }
    assert_eq!(listings(&rig), during);
}

/// The shell's child before its exec (a terminal and nothing else), then each of
/// `wrappers` (an `exec` each), then cp: the loader's reads move its counters once at each
/// `exec`, then only the copy grows. The copy is found at the scan after cp's, or, when cp
/// opens its files `starved` scans after its loader's last read, at the scan after that.
fn cp_found_behind(wrappers: &[&str], starved: usize) {
    let mut rig = Rig::new();
    rig.process(100, "bash");
    rig.scan();
    for wrapper in wrappers {
        let comm = wrapper.split(' ').next().unwrap();
        rig.fake.with(100, |p| {
            p.comm = comm.into();
            p.cmdline = (*wrapper).into();
        });
        rig.fake.work(100, 1, 832, 0);
        rig.scan_after(500_000_000);
    }
    rig.fake.with(100, |p| {
        p.comm = "cp".into();
        p.cmdline = "cp /d/big /d/copy".into();
    });
    if starved == 0 {
        cp(&rig, 100);
    }
    rig.fake.work(100, 1, 832, 0);
    rig.scan_after(500_000_000);
    if starved > 0 {
        for _ in 0..starved {
            rig.scan_after(500_000_000);
        }
        cp(&rig, 100);
        rig.fake.kernel_work(100, 10);
        rig.scan_after(500_000_000);
        rig.fake.kernel_work(100, 10);
    }
    grow(&rig, 100, 300 << 20);
    let flows = rig.scan_after(500_000_000);
    assert_eq!(flows.len(), 1, "{flows:?}");
    assert_eq!(flows[0].amount, 300 << 20);
    assert_eq!(flows[0].view.command, "cp /d/big /d/copy");
}

#[test]
fn dd_reading_one_file_and_writing_another_is_one_flow_with_both_names() {
    let mut rig = Rig::new();
    rig.process(100, "dd if=/d/big.bin of=/d/dd.out");
    rig.fake.open(100, 0, file("/d/big.bin", 30, 1_000_000), RD);
    rig.fake.open(100, 1, file("/d/dd.out", 31, 0), WR);
    rig.scan();
    rig.advance(100, 0, 250_000, false);
    rig.advance(100, 1, 250_000, true);
    let flows = rig.scan();
    assert_eq!(flows.len(), 1, "{flows:?}");
    let f = &flows[0];
    assert_eq!(
        f.view.name(),
        "dd if=/d/big.bin of=/d/dd.out: /d/big.bin -> /d/dd.out"
    );
    assert_eq!((f.amount, f.size, f.moved), (250_000, 1_000_000, 250_000));
    assert!(!f.view.in_kernel);
}

/// dd seen between its opens: its output still on descriptor 3, which it then moves to 1
/// (`dup2`, `close`). The next scan finds it there: one copy with both names at once, not
/// the read side alone until dd's next walk.
#[test]
fn a_descriptor_closed_makes_its_process_walked_again_at_once() {
    let mut rig = Rig::every(0.3);
    rig.process(100, "dd if=/d/big.bin of=/d/dd.out");
    rig.fake.open(100, 0, file("/d/big.bin", 30, 1_000_000), RD);
    rig.fake.open(100, 3, file("/d/dd.out", 31, 0), WR);
    rig.scan_after(300_000_000);
    rig.fake.close(100, 3);
    rig.fake.open(100, 1, file("/d/dd.out", 31, 0), WR);
    for _ in 0..3 {
        rig.advance(100, 0, 4096, false);
        rig.advance(100, 1, 4096, true);
        let flows = rig.scan_after(300_000_000);
        let shown: Vec<_> = (flows.iter())
            .filter(|f| !f.ended)
            .map(|f| (f.view.fd, f.view.file.as_deref(), f.view.to.as_deref()))
            .collect();
        assert_eq!(
            shown,
            [(Some(1), Some("/d/big.bin"), Some("/d/dd.out"))],
            "{flows:?}"
        );
    }
}

/// A checksum program going on to its next file opens it on the same descriptor number:
/// the first file's flow ends (it does not take the next one's position), and the next
/// file is followed from that scan, not from the program's next walk, up to 4 s away.
#[test]
fn another_file_on_the_same_descriptor_is_another_flow_at_once() {
    let mut rig = Rig::new();
    rig.process(100, "sha256sum /d/a.iso /d/b.iso");
    rig.fake.open(100, 3, file("/d/a.iso", 40, 1_000_000), RD);
    rig.scan();
    rig.advance(100, 3, 1_000_000, false);
    rig.scan();
    rig.fake.close(100, 3);
    rig.fake.open(100, 3, file("/d/b.iso", 41, 1_000_000), RD);
    rig.advance(100, 3, 200_000, false);
    let flows = rig.scan_after(500_000_000);
    let a: Vec<_> = (flows.iter())
        .filter(|f| f.view.file.as_deref() == Some("/d/a.iso"))
        .map(|f| (f.amount, f.ended))
        .collect();
    assert_eq!(a, [(1_000_000, true)], "{flows:?}");
    rig.advance(100, 3, 300_000, false);
    let flows = rig.scan_after(500_000_000);
    let b: Vec<_> = (flows.iter())
        .filter(|f| f.view.file.as_deref() == Some("/d/b.iso"))
        .map(|f| (f.amount, f.size, f.ended))
        .collect();
    assert_eq!(b, [(500_000, 1_000_000, false)], "{flows:?}");
}

#[test]
fn a_reader_that_appends_to_a_log_is_not_a_copy() {
    let mut rig = Rig::new();
    rig.process(100, "indexer");
    rig.fake.open(100, 3, file("/d/data", 40, 1_000_000), RD);
    rig.fake.open(
        100,
        4,
        file("/var/log/indexer.log", 41, 0),
        WR | libc::O_APPEND as u32,
    );
    rig.scan();
    rig.advance(100, 3, 10_000, false);
    rig.advance(100, 4, 100, true);
    let flows = rig.scan();
    let names: Vec<String> = flows.iter().map(|f| f.view.name()).collect();
    assert_eq!(
        names,
        [
            "indexer: reads /d/data",
            "indexer: writes /var/log/indexer.log"
        ]
    );
}

#[test]
fn one_open_file_through_two_descriptors_is_one_flow_counted_once() {
    // `sh -c loop > dup.log 2>&1`: descriptors 1 and 2 share one open file description.
    let mut rig = Rig::new();
    rig.process(100, "sh -c loop");
    let log = file("/d/dup.log", 50, 0);
    rig.fake.open(100, 1, log.clone(), WR);
    rig.fake.open(100, 2, log, WR);
    rig.scan();
    for _ in 0..2 {
        // One position and one file, seen through both descriptors.
        for fd in [1, 2] {
            rig.fake.fd(100, fd, |f| {
                f.pos += 200_000;
                if let FakeTarget::File { size, .. } = &mut f.target {
                    *size += 200_000;
                }
            });
        }
        rig.fake.work(100, 1, 0, 200_000);
    }
    let flows = rig.scan();
    assert_eq!(flows.len(), 1, "{flows:?}");
    assert_eq!(flows[0].view.name(), "sh -c loop: writes /d/dup.log");
    assert_eq!(flows[0].amount, 400_000);
    assert_eq!(flows[0].moved, 400_000);
}

#[test]
fn a_shell_reading_its_own_script_is_not_a_flow_nor_a_copy() {
    let mut rig = Rig::new();
    rig.process(100, "bash ./check-script");
    rig.fake.open(
        100,
        255,
        file("/home/u/check-script", 60, 2_000),
        RD | libc::O_CLOEXEC as u32,
    );
    rig.fake.open(100, 1, file("/home/u/check.log", 61, 0), WR);
    rig.scan();
    rig.advance(100, 255, 500, false);
    rig.advance(100, 1, 300, true);
    let flows = rig.scan();
    let names: Vec<String> = flows.iter().map(|f| f.view.name()).collect();
    assert_eq!(names, ["bash ./check-script: writes /home/u/check.log"]);
    // A python program reading a file its script names is a flow, its script is not.
    rig.process(200, "python3 -u reader.py /d/big");
    rig.fake.open(200, 3, file("/d/big", 62, 1_000_000), RD);
    rig.fake
        .open(200, 4, file("/home/u/reader.py", 63, 900), RD);
    rig.scan();
    rig.advance(200, 3, 1_000, false);
    rig.advance(200, 4, 900, false);
    let flows = rig.scan();
    let names: Vec<String> = flows
        .iter()
        .filter(|f| f.view.pid == 200)
        .map(|f| f.view.name())
        .collect();
    assert_eq!(names, ["python3 -u reader.py /d/big: reads /d/big"]);
}

#[test]
fn a_script_run_through_its_shebang_line_is_not_a_flow() {
    // pyenv's python3 runs `pyenv-version-name -f` through its `#!/usr/bin/env bash`: the
    // process is named after the script (`pyenv-version-n`), not bash, and reads its script
    // (descriptor 255) with its errors to a log. Seen on a real machine as a file flow at
    // 32 %, `pyenv-version-name -> stderr`.
    let mut rig = Rig::new();
    rig.process(100, "bash /p/libexec/pyenv-version-name -f");
    rig.fake.with(100, |p| p.comm = "pyenv-version-n".into());
    rig.fake.open(
        100,
        255,
        file("/p/libexec/pyenv-version-name", 60, 1_862),
        RD,
    );
    rig.fake.open(100, 2, file("/data/job.log", 61, 0), WR);
    rig.scan();
    let mut seen = Vec::new();
    for _ in 0..3 {
        rig.advance(100, 255, 300, false);
        seen.extend(rig.scan());
    }
    assert!(
        seen.is_empty(),
        "{:?}",
        seen.iter().map(row).collect::<Vec<_>>()
    );
}

#[test]
fn a_chain_of_wrapper_scripts_is_not_a_flow() {
    // pyenv's python3: bash runs one script of the chain, then execs the next (still
    // bash), which it keeps open on descriptor 255 like the first; found between two
    // walks, the new script is not a flow either.
    let mut rig = Rig::new();
    rig.process(100, "bash /p/libexec/pyenv exec python3");
    rig.fake
        .open(100, 255, file("/p/libexec/pyenv", 60, 4_000), RD);
    rig.scan();
    rig.advance(100, 255, 1_000, false);
    assert!(rig.scan().is_empty());
    rig.fake.with(100, |p| {
        p.cmdline = "bash /p/libexec/pyenv-exec python3".into()
    });
    rig.fake.close(100, 255);
    rig.fake
        .open(100, 255, file("/p/libexec/pyenv-exec", 61, 1_300), RD);
    rig.advance(100, 255, 1_282, false);
    let mut seen = Vec::new();
    for _ in 0..4 {
        seen.extend(rig.scan_after(1_500_000_000));
        rig.advance(100, 255, 1, false);
    }
    assert!(
        seen.is_empty(),
        "{:?}",
        seen.iter().map(row).collect::<Vec<_>>()
    );
}

#[test]
fn a_pipeline_stages_reads_of_files_it_does_not_name_are_the_pipelines() {
    // tar c dir | gzip: tar's files one after another are the pipeline's bytes.
    let mut rig = Rig::new();
    rig.fake.add(100, 1, "bash", End::Other, End::Other);
    rig.fake
        .add(101, 100, "tar c dir", End::Other, End::Pipe(80));
    rig.fake.add(102, 100, "gzip", End::Pipe(80), End::Other);
    rig.fake.fill(80, 0, 65_536);
    rig.fake
        .open(101, 3, file("/home/u/dir/a.bin", 70, 5_000_000), RD);
    rig.scan();
    let mut kinds = Vec::new();
    for _ in 0..4 {
        rig.advance(101, 3, 1_000_000, false);
        rig.fake.work(101, 10, 0, 1_000_000);
        rig.fake.work(102, 10, 1_000_000, 300_000);
        kinds = rig.scan().iter().map(|f| f.view.kind).collect::<Vec<_>>();
    }
    assert_eq!(kinds, [Kind::Pipeline]);
}

#[test]
fn a_process_that_closed_its_socket_is_no_socket_flow_whatever_it_writes() {
    // A test binary that used a Unix socket, then writes to the null device (D8).
    let mut rig = Rig::new();
    rig.process(100, "it-3de5b8502a1a644f");
    rig.fake
        .open(100, 3, FakeTarget::Socket(901), libc::O_RDWR as u32);
    rig.fake
        .open(100, 4, FakeTarget::CharDevice("/dev/null".into()), WR);
    rig.scan();
    rig.fake.work(100, 1, 0, 1 << 30);
    let flows = rig.scan();
    assert!(
        flows.is_empty(),
        "the null device's bytes are no socket's: {flows:?}"
    );
    rig.fake.close(100, 4);
    rig.fake.work(100, 1, 0, 1 << 20);
    let flows = rig.scan_after(3_000_000_000);
    assert_eq!(flows.len(), 1, "{flows:?}");
    assert_eq!(
        (flows[0].view.kind, flows[0].moved),
        (Kind::Socket, 1 << 20)
    );
    // It closes its socket and writes terabytes to the null device.
    rig.fake.close(100, 3);
    rig.fake
        .open(100, 4, FakeTarget::CharDevice("/dev/null".into()), WR);
    for _ in 0..3 {
        rig.fake.work(100, 1, 0, 1 << 40);
        let flows = rig.scan_after(3_000_000_000);
        assert!(
            flows.iter().all(|f| f.ended && f.moved == 1 << 20),
            "{flows:?}"
        );
    }
}

#[test]
fn a_socket_user_writing_to_the_null_device_on_its_standard_output_is_no_flow() {
    // A process holding a socket whose standard output is the null device (CI, stop 38):
    // its counters are the null device's bytes, not its socket's.
    let mut rig = Rig::new();
    rig.process(100, "python3 -c writes");
    rig.fake
        .open(100, 1, FakeTarget::CharDevice("/dev/null".into()), WR);
    rig.fake
        .open(100, 3, FakeTarget::Socket(901), libc::O_RDWR as u32);
    rig.scan();
    for _ in 0..3 {
        rig.fake.work(100, 1, 0, 1 << 34);
        let flows = rig.scan_after(1_000_000_000);
        assert!(flows.is_empty(), "{flows:?}");
    }
    // One whose standard streams are a terminal (the rig's processes') is a socket flow of
    // its counters' bytes.
    // (Followed from its first move, counted from its second.)
    rig.process(200, "socat - UNIX-CONNECT:s");
    rig.fake
        .open(200, 3, FakeTarget::Socket(902), libc::O_RDWR as u32);
    rig.scan();
    rig.fake.work(200, 1, 0, 1 << 10);
    rig.scan_after(1_000_000_000);
    rig.fake.work(200, 1, 0, 1 << 20);
    let flows = rig.scan_after(1_000_000_000);
    assert_eq!(flows.len(), 1, "{flows:?}");
    assert_eq!(
        (flows[0].view.kind, flows[0].moved),
        (Kind::Socket, 1 << 20)
    );
}

#[test]
fn only_one_process_and_its_descendants_are_looked_at() {
    let mut rig = Rig::new();
    rig.process(100, "sh backup.sh");
    rig.fake
        .add(101, 100, "tar cf /b/out.tar /srv", End::Other, End::Other);
    rig.fake
        .add(102, 101, "gzip -d x.gz", End::Other, End::Other);
    rig.process(200, "cat /d/other");
    for (pid, path, ino) in [
        (101, "/srv/a", 90),
        (102, "/x.gz", 91),
        (200, "/d/other", 92),
    ] {
        rig.fake.open(pid, 3, file(path, ino, 1_000_000), RD);
    }
    rig.scanner.only(Some(100));
    rig.scan();
    let reads = rig.fake.reads().1;
    for pid in [101, 102, 200] {
        rig.advance(pid, 3, 1_000, false);
    }
    let flows = rig.scan();
    let pids: Vec<u32> = flows.iter().map(|f| f.view.pid).collect();
    assert_eq!(pids, [101, 102], "{flows:?}");
    // Three processes' counters read per scan, not the fourth's.
    assert_eq!(rig.fake.reads().1 - reads, 3);
    assert!(!rig.scanner.root_gone());
    rig.fake.remove(100);
    rig.scan();
    assert!(rig.scanner.root_gone());
}

#[test]
fn an_rpv_counting_lines_is_shown_in_lines_and_a_watching_one_not_at_all() {
    let mut rig = Rig::new();
    rig.process(100, "rpv -q -l -L 20000 lines.txt");
    rig.fake
        .open(100, 3, file("/d/lines.txt", 95, 9_000_000), RD);
    rig.fake.with(100, |p| {
        p.rpv = Some(0);
        p.rpv_as.lines = true;
        p.rpv_as.size = 2_000_000;
    });
    rig.process(200, "rpv -d 4242");
    rig.fake.open(200, 3, file("/d/watched", 96, 9_000_000), RD);
    rig.fake.with(200, |p| {
        p.rpv = Some(0);
        p.rpv_as.transfer = false;
    });
    rig.scan();
    for step in 1..=2 {
        rig.fake.with(100, |p| p.rpv = Some(step * 20_000));
        rig.advance(100, 3, 90_000, false);
        rig.advance(200, 3, 90_000, false);
        let flows = rig.scan();
        assert_eq!(flows.len(), 1, "{flows:?}");
        let f = &flows[0];
        assert_eq!((f.view.kind, f.view.pid), (Kind::Rpv, 100));
        assert_eq!(
            (f.amount, f.size, f.unit),
            (step * 20_000, 2_000_000, Unit::Lines)
        );
    }
}

#[test]
fn a_scan_stops_between_two_processes_when_the_run_ends() {
    let mut rig = Rig::new();
    for pid in 100..1100 {
        rig.process(pid, "sleep 3600");
    }
    let asked = Rc::new(std::cell::Cell::new(0u32));
    let count = asked.clone();
    // The signal comes after the tenth process.
    rig.scanner.stop_when(Box::new(move || {
        count.set(count.get() + 1);
        count.get() > 10
    }));
    let before = rig.fake.reads().1;
    rig.scan();
    let read = rig.fake.reads().1 - before;
    assert!(read <= 10, "{read} io files read after the signal");
    assert!(asked.get() <= 12, "asked {} times", asked.get());
}

#[test]
fn a_connection_a_known_server_accepts_after_a_walk_of_every_process_is_followed_at_once() {
    // A server listening on TCP socket 800 (fd 3). Another process's connection moves
    // (socket 999: outside the processes watched), which walks every process's descriptors
    // once; then the server accepts a connection (fd 4). Its receives show in no io counter,
    // and the next walk of every process is 30 s away: it is found by a walk of the
    // processes that hold TCP sockets, from its first bytes.
    let mut rig = Rig::new();
    rig.sleepers();
    rig.process(100, "python3 sock.py serve port");
    rig.fake
        .open(100, 3, FakeTarget::Socket(800), libc::O_RDWR as u32);
    rig.tcp.borrow_mut().insert(800, 0);
    rig.scan();
    rig.tcp.borrow_mut().insert(999, 1_000);
    rig.scan();
    assert!(rig.scanner.cost.walked > 300, "{:?}", rig.scanner.cost);
    rig.fake
        .open(100, 4, FakeTarget::Socket(801), libc::O_RDWR as u32);
    rig.tcp.borrow_mut().insert(801, 10_000);
    rig.scan();
    // Only the processes that hold TCP sockets were walked, not the 300 sleepers.
    assert!(rig.scanner.cost.walked < 10, "{:?}", rig.scanner.cost);
    rig.tcp.borrow_mut().insert(801, 30_000);
    let flows = rig.scan();
    let server: Vec<_> = (flows.iter())
        .filter(|f| f.view.pid == 100 && f.view.kind == Kind::Socket)
        .collect();
    assert_eq!(server.len(), 1, "{flows:?}");
    // (A socket flow counts from its first scan: the 10,000 bytes before it are not in.)
    assert_eq!(server[0].amount, 20_000, "{flows:?}");
}
