//! The process title that `ps`, `top` and `/proc/PID/cmdline` show, written over the
//! process's own argument strings, and over its environment strings once those have been
//! copied elsewhere (what long-lived daemons do to fit a title longer than the command line).
//!
//! Owns: the argument and environment areas (from `/proc/self/stat`), the copy of the
//! environment, and the writes into those areas. Must not: write outside
//! `[arg_start, arg_end)`, or outside `[arg_start, env_end)` once the environment has moved.
//!
//! How the kernel reads the title: `/proc/PID/cmdline` is the argument area; if its last
//! byte is no longer NUL and the environment area starts right after it, the kernel reads on
//! into the environment area up to the first NUL. So a title longer than the arguments is
//! written across the boundary and ends with a NUL.

use std::ffi::{c_char, CStr, CString};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;

extern "C" {
    /// The C library's environment array (POSIX `environ`), read by `getenv` and by std's
    /// `env::var`.
    static mut environ: *mut *mut c_char;
}

/// The areas of the initial stack the kernel shows as this process's command line and
/// environment (fields 48 to 51 of `/proc/self/stat`), and the thread count (field 20).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Areas {
    arg_start: usize,
    arg_end: usize,
    env_start: usize,
    env_end: usize,
    threads: usize,
}

/// Parses the fields of `/proc/PID/stat` that [`Areas`] holds.
fn parse_stat(stat: &str) -> Option<Areas> {
    let fields = crate::procfs::stat_fields(stat)?;
    let field = |n: usize| -> Option<usize> { fields.get(n - 3)?.parse().ok() };
    let areas = Areas {
        threads: field(20)?,
        arg_start: field(48)?,
        arg_end: field(49)?,
        env_start: field(50)?,
        env_end: field(51)?,
    };
    let sane = |start: usize, end: usize| start != 0 && end > start && end - start < (64 << 20);
    (sane(areas.arg_start, areas.arg_end) && areas.arg_end - areas.arg_start > 1).then_some(areas)
}

fn read_areas() -> Option<Areas> {
    let text = crate::procfs::read(std::process::id(), crate::procfs::ProcFile::Stat).ok()?;
    parse_stat(std::str::from_utf8(&text).ok()?)
}

/// The areas, read once (they never move).
fn areas() -> Option<Areas> {
    static AREAS: OnceLock<Option<Areas>> = OnceLock::new();
    *AREAS.get_or_init(read_areas)
}

/// Set once the environment strings have been copied and `environ` points at the copies:
/// from then on the environment area is ours to write.
static ENV_MOVED: AtomicBool = AtomicBool::new(false);
/// Bytes of the area that may hold title text (and so need clearing before a shorter one).
static DIRTY: AtomicUsize = AtomicUsize::new(0);

/// Makes room for a process title longer than the command line: copies the environment
/// strings to the heap and points `environ` at the copies, so the environment area can hold
/// the rest of the title while `getenv` and `std::env::var` keep working.
///
/// Only does it while this is the only thread of the process (checked in `/proc/self/stat`:
/// no other thread can be reading the environment meanwhile), and only if the kernel would
/// show a title that runs on into the environment area (it starts right after the
/// arguments). Call it first thing in `main`. Returns whether the environment area is free;
/// if not, titles are cut to the command line's length. Calling it again does nothing.
pub fn prepare_process_title() -> bool {
    if ENV_MOVED.load(Ordering::Acquire) {
        return true;
    }
    let Some(now) = read_areas() else {
        return false;
    };
    if now.threads != 1 || now.env_start != now.arg_end || now.env_end <= now.env_start {
        return false;
    }
    move_environment(now.env_start, now.env_end);
    ENV_MOVED.store(true, Ordering::Release);
    true
}

/// Points `environ` at a new array whose entries that pointed into `[start, end)` point at
/// heap copies instead (leaked: the environment lives as long as the process). The caller
/// makes sure no other thread exists.
fn move_environment(start: usize, end: usize) {
    let environ_ptr = &raw mut environ;
    // SAFETY: reads the `environ` pointer; no other thread exists to change it meanwhile.
    let old = unsafe { environ_ptr.read() };
    let mut entries: Vec<*mut c_char> = Vec::new();
    let mut at = old;
    while !at.is_null() {
        // SAFETY: `environ` is a NULL-terminated array of pointers and `at` has not passed
        // its terminator yet.
        let entry = unsafe { at.read() };
        if entry.is_null() {
            break;
        }
        let addr = entry as usize;
        if (start..end).contains(&addr) {
            // SAFETY: an environment entry is a NUL-terminated string; this one lies in the
            // environment area, which nothing has written to yet.
            let text = unsafe { CStr::from_ptr(entry) };
            entries.push(CString::from(text).into_raw());
        } else {
            entries.push(entry);
        }
        // SAFETY: the terminator has not been reached, so the next element is in the array.
        at = unsafe { at.add(1) };
    }
    entries.push(std::ptr::null_mut());
    let copy = Box::leak(entries.into_boxed_slice());
    // SAFETY: replaces `environ` with a valid NULL-terminated array that is never freed; no
    // other thread exists to read the old value meanwhile. The C library allocates a new
    // array on its next `setenv` and never frees one it did not allocate.
    unsafe { environ_ptr.write(copy.as_mut_ptr()) };
}

/// Sets the process title shown by `ps`/`top` (`/proc/PID/cmdline`) by overwriting the
/// original argv strings in place (and, after [`prepare_process_title`], the environment
/// strings after them), NUL-terminated and cut to the space there is. Returns false if the
/// areas are unknown (no `/proc`). `main` collects argv before any title is set, so nothing
/// reads the old strings later. Only the display thread calls this.
pub fn set_process_title(text: &[u8]) -> bool {
    let Some(a) = areas() else {
        return false;
    };
    let end = if ENV_MOVED.load(Ordering::Acquire) {
        a.env_end
    } else {
        a.arg_end
    };
    let space = end - a.arg_start;
    let len = text.iter().position(|&b| b == 0).unwrap_or(text.len());
    let len = len.min(space - 1);
    // Clear what an earlier title left (at least the original arguments), up to `space`.
    let dirty = DIRTY
        .swap(len + 1, Ordering::Relaxed)
        .max(a.arg_end - a.arg_start)
        .min(space);
    let area = a.arg_start as *mut u8;
    // SAFETY: [arg_start, arg_start + len) is inside this process's own argument area, or
    // (once the environment has moved) the argument and environment areas, which are
    // contiguous; both are writable memory on the initial stack that stays mapped for the
    // life of the process, and nothing holds a reference into them (argv was copied by
    // `main`, the environment by `prepare_process_title`). `text` cannot overlap them.
    unsafe { std::ptr::copy_nonoverlapping(text.as_ptr(), area, len) };
    if dirty > len {
        // SAFETY: [arg_start + len, arg_start + dirty) is inside the same area (dirty ≤
        // space), as above.
        unsafe { std::ptr::write_bytes(area.wrapping_add(len), 0, dirty - len) };
    } else {
        // SAFETY: arg_start + len < arg_start + space: the terminating NUL is inside the
        // area, as above.
        unsafe { area.wrapping_add(len).write(0) };
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "4242 (a b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 \
        3 0 12345 1000000 200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 \
        4096 8192 16384 140000000 140000100 140000100 140000900 0";

    #[test]
    fn stat_fields_name_the_areas_even_with_parens_in_the_command_name() {
        let a = parse_stat(STAT).unwrap();
        assert_eq!(
            a,
            Areas {
                threads: 3,
                arg_start: 140000000,
                arg_end: 140000100,
                env_start: 140000100,
                env_end: 140000900,
            }
        );
        assert_eq!(parse_stat("1 (x) S 1 2"), None, "too few fields");
        let no_args = STAT.replace("140000000 140000100 140000100", "0 0 0");
        assert_eq!(parse_stat(&no_args), None, "no argument area");
    }

    #[test]
    fn this_process_has_areas_and_is_not_prepared_while_threads_run() {
        let a = read_areas().unwrap();
        assert!(a.arg_start < a.arg_end && a.arg_end <= a.env_start);
        // The test harness runs tests on threads: moving the environment is refused.
        let _other = std::thread::spawn(|| std::thread::sleep(std::time::Duration::from_secs(1)));
        assert!(!prepare_process_title());
        assert!(!ENV_MOVED.load(Ordering::Acquire));
    }
}
