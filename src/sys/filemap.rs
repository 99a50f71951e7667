//! Read-only shared mappings of file ranges, for counting separators (`-l`, `-0`), and the
//! SIGBUS recovery that keeps a truncation of the file from killing rpv.
//!
//! Owns: the table of live mappings the SIGBUS handler consults ([`MAP_SLOTS`] of them, one
//! slot per live [`FileMap`]), the handler itself, and the page arithmetic it uses. Must not:
//! decide when to map (the `-l` paths do) or hand out mutable access.

use std::io;
use std::os::fd::BorrowedFd;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;

/// How many [`FileMap`]s may be live at once; [`FileMap::new`] fails with EBUSY beyond that.
pub(crate) const MAP_SLOTS: usize = 8;

/// A read-only shared mapping of part of a file (`mmap(2)`), unmapped on drop.
///
/// If another process truncates the file while it is mapped, touching the lost pages would
/// raise SIGBUS (as for any mmap reader); the handler installed by [`FileMap::new`] puts zero
/// pages there instead and [`FileMap::take_fault`] reports it. If another process rewrites
/// the range, the bytes seen may be old or new ones (see the `# Safety` of `new`).
pub(crate) struct FileMap {
    base: *mut std::ffi::c_void,
    map_len: usize,
    skip: usize,
    len: usize,
    slot: usize,
}

/// One live mapping: `[start, end)`, and whether a page of it was replaced.
struct Slot {
    start: AtomicUsize,
    end: AtomicUsize,
    fault: AtomicBool,
}

/// The address ranges of the live mappings, read by the SIGBUS handler.
///
/// A slot is free while `end` is 0, reserved while `end` is [`RESERVED`] (no address matches
/// it, since `start` is still 0), and live once `start` and then `end` are published.
struct Registry {
    slots: [Slot; MAP_SLOTS],
}

const RESERVED: usize = 1;

impl Registry {
    const fn new() -> Registry {
        Registry {
            slots: [const {
                Slot {
                    start: AtomicUsize::new(0),
                    end: AtomicUsize::new(0),
                    fault: AtomicBool::new(false),
                }
            }; MAP_SLOTS],
        }
    }

    /// Reserves a free slot, or None if all are in use.
    fn reserve(&self) -> Option<usize> {
        self.slots.iter().position(|s| {
            s.end
                .compare_exchange(0, RESERVED, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        })
    }

    /// Makes a reserved slot cover `[start, end)`.
    fn publish(&self, slot: usize, start: usize, end: usize) {
        let s = &self.slots[slot];
        s.fault.store(false, Ordering::Relaxed);
        s.start.store(start, Ordering::Release);
        s.end.store(end, Ordering::Release);
    }

    /// Frees a slot (reserved or live).
    fn release(&self, slot: usize) {
        let s = &self.slots[slot];
        s.start.store(0, Ordering::Release);
        s.end.store(0, Ordering::Release);
    }

    /// The live slot whose range holds `addr`. Async-signal-safe: atomic loads only.
    fn find(&self, addr: usize) -> Option<&Slot> {
        self.slots.iter().find(|s| {
            let end = s.end.load(Ordering::Acquire);
            let start = s.start.load(Ordering::Acquire);
            start != 0 && start <= addr && addr < end
        })
    }
}

static LIVE: Registry = Registry::new();
/// The page size, stored before the handler is installed (the handler must not ask rustix,
/// which may read auxv lazily).
static PAGE: AtomicUsize = AtomicUsize::new(0);
/// The SIGBUS action before ours, restored for faults that are not ours.
static PREVIOUS: OnceLock<libc::sigaction> = OnceLock::new();
static HANDLER: std::sync::Once = std::sync::Once::new();

/// The start of the page of size `page` (a power of two) holding `addr`.
fn page_start(addr: usize, page: usize) -> usize {
    addr & !(page - 1)
}

/// SIGBUS inside a live mapping means the file shrank under it: put a zero page where the
/// lost page was, note it, and let the load run again. Any other SIGBUS goes to the action
/// that was there before ours (returning re-raises the fault).
extern "C" fn on_sigbus(_: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler.
    let info = unsafe { &*info };
    // SAFETY: for SIGBUS the union member si_addr (the faulting address) is the one set.
    let addr = unsafe { info.si_addr() } as usize;
    let page = PAGE.load(Ordering::Relaxed);
    if let Some(slot) = LIVE.find(addr).filter(|_| page != 0) {
        let at = page_start(addr, page);
        use rustix::mm::{MapFlags, ProtFlags};
        // SAFETY: [at, at + page) is a whole page inside a live FileMap's mapping (mappings
        // are page-aligned and page-rounded), which only that FileMap reads; replacing it
        // with a private zero page changes no other memory. mmap is a plain system call,
        // safe in a signal handler.
        let zero = unsafe {
            rustix::mm::mmap_anonymous(
                at as *mut libc::c_void,
                page,
                ProtFlags::READ,
                MapFlags::FIXED | MapFlags::PRIVATE,
            )
        };
        if zero.is_ok() {
            slot.fault.store(true, Ordering::Relaxed);
            return;
        }
    }
    restore_previous_action();
}

/// Puts back the SIGBUS action that was there before ours (the default if none was saved).
fn restore_previous_action() {
    match PREVIOUS.get() {
        // SAFETY: reinstalls an action the kernel gave us; sigaction is async-signal-safe.
        Some(previous) => unsafe {
            libc::sigaction(libc::SIGBUS, previous, std::ptr::null_mut());
        },
        // SAFETY: installing the default action; signal is async-signal-safe.
        None => unsafe {
            libc::signal(libc::SIGBUS, libc::SIG_DFL);
        },
    }
}

/// Installs [`on_sigbus`] once, keeping the previous action for faults that are not ours.
fn install_handler() {
    HANDLER.call_once(|| {
        PAGE.store(rustix::param::page_size(), Ordering::Relaxed);
        // SAFETY: `sigaction` is plain data (integers, a signal set, function pointers) for
        // which all-zero is a valid value: no handler, no flags, an empty mask.
        let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
        action.sa_sigaction = on_sigbus as *const () as usize;
        action.sa_flags = libc::SA_SIGINFO;
        // SAFETY: the zeroed `sigaction` is a valid empty action to read the old one into.
        let mut previous: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: installs a handler that only does async-signal-safe work (atomics, mmap,
        // sigaction), with an empty mask, and reads the old action into `previous`.
        let rc = unsafe { libc::sigaction(libc::SIGBUS, &action, &mut previous) };
        if rc == 0 {
            let _ = PREVIOUS.set(previous);
        }
    });
}

impl FileMap {
    /// Maps `[offset, offset + len)` of `fd` (len > 0, inside the file as `fstat` sees it)
    /// read-only, pre-faulted with `MAP_POPULATE`. A truncation of the file while it is
    /// mapped does not kill the process: see [`FileMap::take_fault`]. Fails with EBUSY when
    /// [`MAP_SLOTS`] maps are live.
    ///
    /// # Safety
    ///
    /// The mapping is shared with the file: while the `FileMap` lives, a write to the mapped
    /// range by anyone (this process through another descriptor, or another process) changes
    /// the bytes behind the shared `&[u8]` that [`FileMap::bytes`] returns, which Rust's
    /// rules do not allow. Nothing in rpv writes to its inputs; the caller must make sure it
    /// does not write to this file while the map lives, and must use the bytes so that a
    /// concurrent change by another process only gives a wrong result (each byte read once,
    /// no assumption that two reads agree), never undefined behaviour in its own logic.
    /// (Truncation is the case the SIGBUS handler covers.)
    pub(crate) unsafe fn new(fd: BorrowedFd<'_>, offset: u64, len: usize) -> io::Result<FileMap> {
        use rustix::mm::{Advice, MapFlags, ProtFlags};
        if len == 0 || i64::try_from(offset).is_err() {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        install_handler();
        let page = rustix::param::page_size() as u64;
        let start = offset - offset % page;
        let skip = (offset - start) as usize;
        let map_len = skip + len;
        let slot = LIVE
            .reserve()
            .ok_or_else(|| io::Error::from_raw_os_error(libc::EBUSY))?;
        // SAFETY: a fresh read-only mapping at an address the kernel picks (no overlap with
        // any other memory); unmapped only in Drop, after the slot is released.
        let mapped = unsafe {
            rustix::mm::mmap(
                std::ptr::null_mut(),
                map_len,
                ProtFlags::READ,
                MapFlags::SHARED | MapFlags::POPULATE,
                fd,
                start,
            )
        };
        let base = match mapped {
            Ok(base) => base,
            Err(e) => {
                LIVE.release(slot);
                return Err(e.into());
            }
        };
        // SAFETY: advice on exactly the mapping made above; failure changes nothing.
        let _ = unsafe { rustix::mm::madvise(base, map_len, Advice::Sequential) };
        LIVE.publish(slot, base as usize, base as usize + map_len);
        Ok(FileMap {
            base,
            map_len,
            skip,
            len,
            slot,
        })
    }

    /// The mapped bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        // SAFETY: [base + skip, base + skip + len) is inside the live mapping, which stays
        // mapped (only pages may be swapped for zero pages) until `self` is dropped; what
        // concurrent writers mean is the contract of `new`.
        unsafe {
            std::slice::from_raw_parts(self.base.cast::<u8>().wrapping_add(self.skip), self.len)
        }
    }

    /// True (once) if pages of this map vanished since the last call (the file was
    /// truncated): what was read from it since then may contain zeros in place of data and
    /// must be counted again by other means.
    pub(crate) fn take_fault(&self) -> bool {
        LIVE.slots[self.slot].fault.swap(false, Ordering::Relaxed)
    }
}

impl Drop for FileMap {
    fn drop(&mut self) {
        LIVE.release(self.slot);
        // SAFETY: unmaps exactly the mapping made in `new`; no slice of it outlives `self`
        // (`bytes` borrows `self`), and the handler no longer matches its addresses.
        let _ = unsafe { rustix::mm::munmap(self.base, self.map_len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsFd;

    /// A test file of `pages` pages of newlines.
    fn newlines(pages: usize) -> std::fs::File {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&vec![b'\n'; pages * rustix::param::page_size()])
            .unwrap();
        file
    }

    fn map(file: &std::fs::File, offset: u64, len: usize) -> io::Result<FileMap> {
        // SAFETY: nothing writes to the test files while they are mapped, except the
        // truncations under test.
        unsafe { FileMap::new(file.as_fd(), offset, len) }
    }

    #[test]
    fn a_file_truncated_under_its_mapping_reads_as_zeros_instead_of_killing_us() {
        let page = rustix::param::page_size();
        let file = newlines(3);
        let map = map(&file, 0, 3 * page).unwrap();
        assert_eq!(map.bytes()[page + 5], b'\n');
        assert!(!map.take_fault());
        file.set_len(0).unwrap();
        let count = map.bytes().iter().filter(|&&b| b == b'\n').count();
        assert_eq!(count, 0, "the lost pages read as zeros");
        assert!(map.take_fault(), "the fault is reported");
        assert!(!map.take_fault(), "once");
    }

    #[test]
    fn dropping_one_map_keeps_the_recovery_for_another() {
        // The slot table used to be a single slot that any drop cleared: a truncation under
        // the map still live then killed the process with SIGBUS.
        let page = rustix::param::page_size();
        let (a, b) = (newlines(2), newlines(2));
        let map_a = map(&a, 0, 2 * page).unwrap();
        let map_b = map(&b, page as u64 + 3, page - 3).unwrap();
        assert_eq!(map_b.bytes().len(), page - 3);
        drop(map_a);
        b.set_len(0).unwrap();
        assert!(map_b.bytes().iter().all(|&b| b == 0));
        assert!(map_b.take_fault());
    }

    #[test]
    fn a_fault_is_reported_by_the_map_that_had_it() {
        let page = rustix::param::page_size();
        let (a, b) = (newlines(1), newlines(1));
        let (map_a, map_b) = (map(&a, 0, page).unwrap(), map(&b, 0, page).unwrap());
        a.set_len(0).unwrap();
        assert_eq!(map_a.bytes()[0], 0);
        assert_eq!(map_b.bytes()[0], b'\n');
        assert!(!map_b.take_fault());
        assert!(map_a.take_fault());
    }

    #[test]
    fn bad_ranges_are_refused() {
        let file = newlines(1);
        assert_eq!(
            map(&file, 0, 0).err().unwrap().raw_os_error(),
            Some(libc::EINVAL)
        );
        let huge = u64::MAX - 10;
        assert_eq!(
            map(&file, huge, 1).err().unwrap().raw_os_error(),
            Some(libc::EINVAL)
        );
    }

    #[test]
    fn the_registry_holds_map_slots_live_ranges_and_frees_them() {
        let reg = Registry::new();
        let slots: Vec<usize> = (0..MAP_SLOTS).map(|_| reg.reserve().unwrap()).collect();
        assert_eq!(reg.reserve(), None, "full");
        assert!(reg.find(0).is_none(), "reserved slots match no address");
        reg.publish(slots[2], 0x10000, 0x18000);
        reg.publish(slots[5], 0x40000, 0x41000);
        assert!(std::ptr::eq(
            reg.find(0x17fff).unwrap(),
            &reg.slots[slots[2]]
        ));
        assert!(std::ptr::eq(
            reg.find(0x40000).unwrap(),
            &reg.slots[slots[5]]
        ));
        assert!(reg.find(0x18000).is_none() && reg.find(0xffff).is_none());
        reg.release(slots[2]);
        assert!(reg.find(0x10000).is_none());
        assert_eq!(reg.reserve(), Some(slots[2]), "a freed slot is reused");
    }

    #[test]
    fn the_fault_page_is_rounded_with_the_real_page_size() {
        // With 16 KiB pages, an address 0x1234 bytes into the second 4 KiB quarter of a page
        // belongs to the page at 0x...4000, not to a 4 KiB page at 0x...5000 (the old code
        // rounded to 4 KiB, and the MAP_FIXED of a misaligned page failed on such kernels).
        let page16 = 16 << 10;
        assert_eq!(page_start(0x7f00_0000_5234, page16), 0x7f00_0000_4000);
        assert_eq!(page_start(0x7f00_0000_4000, page16), 0x7f00_0000_4000);
        assert_eq!(page_start(0x7f00_0000_7fff, page16), 0x7f00_0000_4000);
        assert_eq!(page_start(0x7f00_0000_5234, 64 << 10), 0x7f00_0000_0000);
        assert_eq!(page_start(0x7f00_0000_5234, 4 << 10), 0x7f00_0000_5000);
        let real = rustix::param::page_size();
        install_handler();
        assert_eq!(
            PAGE.load(Ordering::Relaxed),
            real,
            "the handler uses the real size"
        );
    }
}
