//! One look at the process table shared by every pipeline followed, within a scan.
//!
//! Owns: [`SharedProc`], the pipeline view's `Proc` for `--top`'s watchers: the scanner's
//! `/proc` (the real one, or a test's table), except that the list of processes, their `stat` and their
//! descriptors 0 and 1 (what the pipeline view's discovery reads of every process, for
//! each pipeline that gains or loses a process) are read once per scan for all of them:
//! several pipelines looking for their stages again in the same scan cost one walk of the
//! process table, not one each. Must not: keep anything from one scan to the next (the
//! [`Sweep`] is emptied when the scanner is done with the pipelines).

use std::cell::RefCell;
use std::collections::HashMap;
use std::io;
use std::rc::Rc;

use crate::procfs::{CpuTimes, FdStat, Fill, Proc, ProcFile, RpvFigures};

/// What the pipelines read of the process table during one scan.
#[derive(Default)]
pub(super) struct Sweep {
    pids: Option<Vec<u32>>,
    stats: HashMap<u32, io::Result<Vec<u8>>>,
    links: HashMap<(u32, u32), io::Result<String>>,
}

impl Sweep {
    /// Forgets everything (the scan is over: the next one reads afresh).
    pub(super) fn clear(&mut self) {
        self.pids = None;
        self.stats.clear();
        self.links.clear();
    }
}

/// The same error again (what `/proc` said the first time).
fn again<T: Clone>(r: &io::Result<T>) -> io::Result<T> {
    match r {
        Ok(v) => Ok(v.clone()),
        Err(e) => Err(match e.raw_os_error() {
            Some(code) => io::Error::from_raw_os_error(code),
            None => io::Error::new(e.kind(), e.to_string()),
        }),
    }
}

/// A watcher's `/proc`, sharing the scan's [`Sweep`].
pub(super) struct SharedProc {
    sys: Box<dyn Proc>,
    sweep: Rc<RefCell<Sweep>>,
}

impl SharedProc {
    /// `sys` read through `sweep`.
    pub(super) fn new(sys: Box<dyn Proc>, sweep: Rc<RefCell<Sweep>>) -> SharedProc {
        SharedProc { sys, sweep }
    }
}

impl Proc for SharedProc {
    fn pids(&mut self) -> io::Result<Vec<u32>> {
        if let Some(pids) = &self.sweep.borrow().pids {
            return Ok(pids.clone());
        }
        let pids = self.sys.pids()?;
        self.sweep.borrow_mut().pids = Some(pids.clone());
        Ok(pids)
    }

    fn read(&mut self, pid: u32, file: ProcFile, keep: bool) -> io::Result<Vec<u8>> {
        if keep || !matches!(file, ProcFile::Stat) {
            return self.sys.read(pid, file, keep);
        }
        if let Some(r) = self.sweep.borrow().stats.get(&pid) {
            return again(r);
        }
        let r = self.sys.read(pid, file, false);
        let out = again(&r);
        self.sweep.borrow_mut().stats.insert(pid, r);
        out
    }

    fn fd_link(&mut self, pid: u32, fd: u32) -> io::Result<String> {
        if fd > 1 {
            return self.sys.fd_link(pid, fd);
        }
        if let Some(r) = self.sweep.borrow().links.get(&(pid, fd)) {
            return again(r);
        }
        let r = self.sys.fd_link(pid, fd);
        let out = again(&r);
        self.sweep.borrow_mut().links.insert((pid, fd), r);
        out
    }

    fn fds(&mut self, pid: u32) -> io::Result<Vec<(u32, String)>> {
        self.sys.fds(pid)
    }

    fn fd_numbers(&mut self, pid: u32) -> io::Result<Vec<u32>> {
        self.sys.fd_numbers(pid)
    }

    fn fd_flags(&mut self, pid: u32, fd: u32) -> Option<u32> {
        self.sys.fd_flags(pid, fd)
    }

    fn fd_file(&mut self, pid: u32, fd: u32) -> Option<(u64, u64)> {
        self.sys.fd_file(pid, fd)
    }

    fn tasks(&mut self, pid: u32) -> io::Result<Vec<u32>> {
        self.sys.tasks(pid)
    }

    fn release(&mut self, pid: u32) {
        self.sys.release(pid);
    }

    fn pipe_fill(&mut self, inode: u64, holder: u32, fd: u32) -> Option<Fill> {
        self.sys.pipe_fill(inode, holder, fd)
    }

    fn retain_pipes(&mut self, keep: &[u64]) {
        self.sys.retain_pipes(keep);
    }

    fn rpv_figures(&mut self, pid: u32) -> Option<RpvFigures> {
        self.sys.rpv_figures(pid)
    }

    fn cpu_times(&mut self) -> Option<CpuTimes> {
        self.sys.cpu_times()
    }

    fn cores(&self) -> usize {
        self.sys.cores()
    }

    fn open_files(&mut self, pid: u32) -> Option<(bool, bool)> {
        self.sys.open_files(pid)
    }

    fn fd_stat(&mut self, pid: u32, fd: u32) -> io::Result<FdStat> {
        self.sys.fd_stat(pid, fd)
    }

    fn fdinfo(&mut self, pid: u32, fd: u32, buf: &mut Vec<u8>) -> io::Result<()> {
        self.sys.fdinfo(pid, fd, buf)
    }

    fn path_stat(&mut self, path: &str) -> io::Result<FdStat> {
        self.sys.path_stat(path)
    }

    fn owner(&mut self, pid: u32) -> Option<u32> {
        self.sys.owner(pid)
    }

    fn device_size(&mut self, rdev: u64) -> u64 {
        self.sys.device_size(rdev)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scan_reads_the_table_once_for_every_pipeline() {
        let sweep = Rc::new(RefCell::new(Sweep::default()));
        let sys = || Box::new(crate::procfs::SysProc::new());
        let mut a = SharedProc::new(sys(), sweep.clone());
        let mut b = SharedProc::new(sys(), sweep.clone());
        let me = std::process::id();
        let pids = a.pids().unwrap();
        assert!(pids.contains(&me));
        let stat = a.read(me, ProcFile::Stat, false).unwrap();
        // The second watcher is served what the first read, not the file again.
        sweep.borrow_mut().stats.insert(me, Ok(b"planted".to_vec()));
        assert_eq!(b.read(me, ProcFile::Stat, false).unwrap(), b"planted");
        assert_eq!(b.pids().unwrap(), pids);
        assert!(b.read(u32::MAX, ProcFile::Stat, false).is_err());
        assert!(sweep.borrow().stats.contains_key(&u32::MAX));
        // After the scan, the files are read again.
        sweep.borrow_mut().clear();
        let again = b.read(me, ProcFile::Stat, false).unwrap();
        assert!(again.starts_with(format!("{me} (").as_bytes()), "{again:?}");
        assert!(stat.starts_with(format!("{me} (").as_bytes()), "{stat:?}");
    }
}
