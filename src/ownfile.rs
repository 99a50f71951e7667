//! Files rpv writes for itself — the `-P` pid file, the `--metrics-file`, the `-U FILE`
//! store — and the rules that keep them from harming anything rpv was given.
//!
//! Owns:
//! - [`check_kind`]: a path given for one of these must name a regular file or nothing. A
//!   device node, FIFO, socket or directory is refused (status 1) before any byte moves;
//!   what a symlink points to counts (`/dev/stdout` is a link to the descriptor). As root,
//!   replacing `/dev/null` with a regular file would break the whole machine.
//! - [`check_clashes`]: it must not be one of the transfer's own files (an input, the
//!   output, a `--tee` output, the `-U` store, or another file rpv owns), however spelled:
//!   `./f`, `sub/../f` and a missing file are compared by directory entry, an existing one
//!   also by device and inode (a hard link, a symlink to it). Status 4, worded like "input
//!   file is output file".
//! - [`replace`]: the one way to write a new version of such a file, atomically: the text
//!   goes to a temporary file in the same directory, renamed over the path, so a reader never
//!   sees half a file. The temporary is made so that nothing planted at its name is
//!   truncated, followed or waited on: an unnamed `O_TMPFILE` linked to a fresh random name
//!   (a link cannot replace a name, so it is linked beside and renamed over), else a random
//!   name created with `O_CREAT|O_EXCL|O_NOFOLLOW|O_NONBLOCK` and checked with `fstat`. Its
//!   name stays under the 255-byte limit of a name however long the path's is.
//!
//! Decisions:
//! - A symlink at the path is judged by what it points to (a link to a device or to an
//!   input is refused) but replaced, never written through: rpv renames a new file over the
//!   link, so a link planted in a shared directory cannot send a root rpv's writes into
//!   another file, and the file the link pointed to is left as it was.
//! - A regular file that is replaced keeps its owner, group and permission bits (an admin's
//!   0640 file of group prometheus stays so); a new file is created with mode 0644 less the
//!   umask (under umask 077 only its owner can read it: create it once with the mode wanted,
//!   and rpv keeps it). Set-user-ID and similar bits are never copied.
//!
//! Must not: write in place, open a name it did not just create, or follow a symlink when
//! writing.

use std::ffi::{OsStr, OsString};
use std::hash::{BuildHasher, Hash, Hasher};
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

use crate::cli::{Action, MonitorSide, Options};
use crate::error::{status, Error};
use crate::sys;

/// One file rpv writes for itself: the option that named it and its path.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Own<'a> {
    /// `-P`, `--metrics-file` or `-U`.
    pub option: &'static str,
    /// The path as given.
    pub path: &'a Path,
    /// Its name in a clash message: `pid` (`input file is pid file: f`), `metrics`.
    pub what: &'static str,
}

/// The mode of a new file, before the umask.
const NEW_MODE: u32 = 0o644;

/// Refuses a path that exists and is not a regular file (following symlinks): status 1,
/// `OPTION PATH: not a regular file`, or `OPTION PATH: Is a directory`.
pub(crate) fn check_kind(option: &'static str, path: &Path) -> Result<(), Error> {
    match std::fs::metadata(path) {
        Ok(meta) if !meta.is_file() => Err(Error::NotRegular {
            option,
            path: path.to_path_buf(),
            dir: meta.is_dir(),
        }),
        // Nothing there (or a dangling symlink): created. Any other problem is the write's
        // to report.
        _ => Ok(()),
    }
}

/// Refuses `own` if it is one of the files of the transfer `o` describes, or one of
/// `others` (the other files rpv owns): status 4, `input file is pid file: NAME`.
pub(crate) fn check_clashes(o: &Options, own: Own<'_>, others: &[Own<'_>]) -> Result<(), Error> {
    // The file's identity, if it exists (what a symlink points to).
    let existing = std::fs::metadata(own.path).ok().map(|m| (m.dev(), m.ino()));
    let same_path = |path: &Path| {
        same_entry(own.path, path)
            || existing
                .is_some_and(|id| std::fs::metadata(path).is_ok_and(|m| (m.dev(), m.ino()) == id))
    };
    let same_fd = |fd: BorrowedFd<'_>| {
        existing.is_some_and(|id| sys::fstat(fd).is_ok_and(|i| (i.dev, i.ino) == id))
    };
    let clash = |role: &str, name: &str| {
        Error::other(
            status::OUROBOROS,
            format!("{role} file is {} file: {name}", own.what),
        )
    };
    for other in others {
        if same_path(other.path) {
            return Err(clash(other.what, &other.path.to_string_lossy()));
        }
    }
    let transfers = match &o.action {
        Action::Transfer | Action::Pipeline(None) | Action::StoreAndForward(_) => true,
        Action::Monitor(side) => {
            let reads_stdin = *side != MonitorSide::Out;
            let stdout = o.output.as_deref().is_none_or(|p| p.as_os_str() == "-");
            if reads_stdin && same_fd(sys::stdin_fd()) {
                return Err(clash("input", "(stdin)"));
            }
            if stdout && same_fd(sys::stdout_fd()) {
                return Err(clash("output", "(stdout)"));
            }
            if let Some(out) = o.output.as_deref().filter(|p| p.as_os_str() != "-") {
                if same_path(out) {
                    return Err(clash("output", &out.to_string_lossy()));
                }
            }
            false
        }
        _ => false,
    };
    if !transfers {
        return Ok(());
    }
    for (role, path) in transfer_files(o) {
        let (fd, stdio) = match role {
            "input" => (sys::stdin_fd(), "(stdin)"),
            _ => (sys::stdout_fd(), "(stdout)"),
        };
        let hit = if path.as_os_str() == "-" {
            same_fd(fd)
        } else {
            same_path(path)
        };
        if hit {
            return Err(clash(role, &stdio_name(path, stdio)));
        }
    }
    Ok(())
}

/// The files of the transfer `o` describes, each with its role: the inputs (`-`, standard
/// input, for none), the output (`-`: standard output), the `-U` store, the tees.
fn transfer_files(o: &Options) -> Vec<(&'static str, &Path)> {
    let mut files: Vec<(&str, &Path)> = if o.files.is_empty() {
        vec![("input", Path::new("-"))]
    } else {
        o.files.iter().map(|f| ("input", Path::new(f))).collect()
    };
    files.push(("output", o.output.as_deref().unwrap_or("-".as_ref())));
    if let Action::StoreAndForward(store) = &o.action {
        // `-U -` has no name: nothing can clash with it.
        if store.as_os_str() != "-" {
            files.push(("-U", store));
        }
    }
    files.extend(o.tees.iter().map(|t| ("--tee", t.as_path())));
    files
}

/// `path` as shown in a message: `stdio` for `-`.
fn stdio_name(path: &Path, stdio: &str) -> String {
    if path.as_os_str() == "-" {
        stdio.to_string()
    } else {
        path.to_string_lossy().into_owned()
    }
}

/// True if `a` and `b` name the same directory entry: the same directory (by device and
/// inode) and the same last component, whether or not the file exists yet.
pub(crate) fn same_entry(a: &Path, b: &Path) -> bool {
    let parent_id = |p: &Path| {
        std::fs::metadata(parent(p))
            .ok()
            .map(|m| (m.dev(), m.ino()))
    };
    a.file_name().is_some()
        && a.file_name() == b.file_name()
        && parent_id(a).is_some_and(|id| parent_id(b) == Some(id))
}

/// The directory `path` is in (`.` for a bare name).
fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// Replaces `path` with a new regular file holding `contents`, atomically (see the module's
/// notes). Fails, changing nothing, if `path` is now something other than a regular file or
/// nothing (a directory: EISDIR; anything else: "not a regular file").
pub(crate) fn replace(path: &Path, contents: &[u8]) -> io::Result<()> {
    replace_identified(path, contents).map(|_| ())
}

/// The file rpv wrote at a path: its device and inode, and the file itself held open, so
/// that its inode number cannot be given to something else put at the path after it is
/// deleted (a filesystem reuses a freed inode number at once).
#[derive(Debug)]
pub(crate) struct Identity {
    _held: OwnedFd,
    dev: u64,
    ino: u64,
}

/// [`replace`], returning the identity of the file now at `path` (opened under its
/// temporary name, which only rpv knows, before the rename): what [`remove_if_ours`]
/// checks at exit.
pub(crate) fn replace_identified(path: &Path, contents: &[u8]) -> io::Result<Identity> {
    let Some(name) = path.file_name() else {
        let errno = if path.as_os_str().is_empty() {
            libc::ENOENT
        } else {
            libc::EISDIR
        };
        return Err(io::Error::from_raw_os_error(errno));
    };
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let dir = rustix::fs::open(parent(path), flags, Mode::empty())?;
    // What is there now, following a symlink: only a regular file (or nothing) is replaced.
    match rustix::fs::statat(&dir, name, AtFlags::empty()) {
        Ok(st) => match FileType::from_raw_mode(st.st_mode) {
            FileType::RegularFile => {}
            FileType::Directory => return Err(io::Error::from_raw_os_error(libc::EISDIR)),
            _ => return Err(not_regular()),
        },
        Err(rustix::io::Errno::NOENT) => {}
        Err(e) => return Err(e.into()),
    }
    // The owner and mode to keep: the entry's own, if it is a regular file (a symlink is
    // replaced by a new file).
    let keep = rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW)
        .ok()
        .filter(|st| FileType::from_raw_mode(st.st_mode) == FileType::RegularFile)
        .map(|st| (st.st_uid, st.st_gid, st.st_mode & 0o777));
    let temp = write_temp(dir.as_fd(), name, contents, keep)?;
    let identity = hold(dir.as_fd(), &temp);
    let renamed =
        identity.and_then(|id| rustix::fs::renameat(&dir, &temp, &dir, name).map(|()| id));
    renamed.map_err(|e| {
        let _ = rustix::fs::unlinkat(&dir, &temp, AtFlags::empty());
        e.into()
    })
}

/// Opens `name` in `dir` (rpv's own new file under its temporary name) to hold it, with its
/// device and inode.
fn hold(dir: BorrowedFd<'_>, name: &OsStr) -> rustix::io::Result<Identity> {
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let file = rustix::fs::openat(dir, name, flags, Mode::empty())?;
    let st = rustix::fs::fstat(&file)?;
    Ok(Identity {
        _held: file,
        dev: st.st_dev,
        ino: st.st_ino,
    })
}

/// Removes `path` if it is still the file rpv wrote there (`ours`, the same device and
/// inode, not followed through a symlink); true if it was removed. Whatever another process
/// put at the path since (a symlink, another file) stays: rpv removes only its own. (Linux
/// has no unlink-if-this-inode: a swap between the look and the unlink, at exit, would
/// still lose the swapped-in entry; the look narrows that to a moment.)
pub(crate) fn remove_if_ours(path: &Path, ours: &Identity) -> io::Result<bool> {
    let Some(name) = path.file_name() else {
        return Ok(false);
    };
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let dir = rustix::fs::open(parent(path), flags, Mode::empty())?;
    let st = rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW)?;
    if (st.st_dev, st.st_ino) != (ours.dev, ours.ino) {
        return Ok(false);
    }
    rustix::fs::unlinkat(&dir, name, AtFlags::empty())?;
    Ok(true)
}

/// The error for a path that is neither a regular file nor missing.
fn not_regular() -> io::Error {
    io::Error::other("not a regular file")
}

/// A new file in `dir` holding `contents`, under a fresh name beside `name`; returns that
/// name. `keep`: the owner, group and mode to give it.
fn write_temp(
    dir: BorrowedFd<'_>,
    name: &OsStr,
    contents: &[u8],
    keep: Option<(u32, u32, u32)>,
) -> io::Result<OsString> {
    // An unnamed file first: nothing can be planted at a name it does not have yet.
    let unnamed = OFlags::WRONLY | OFlags::TMPFILE | OFlags::CLOEXEC;
    if let Ok(file) = rustix::fs::openat(dir, ".", unnamed, Mode::from_raw_mode(NEW_MODE)) {
        fill(&file, contents, keep)?;
        if let Some(temp) = link_unnamed(dir, &file, name)? {
            return Ok(temp);
        }
    }
    write_named(dir, name, contents, keep)
}

/// The way without O_TMPFILE (or when the unnamed file cannot be linked): a random name
/// that cannot exist yet (O_EXCL; O_NOFOLLOW and O_NONBLOCK besides, checked with fstat),
/// filled, and removed again if that fails.
fn write_named(
    dir: BorrowedFd<'_>,
    name: &OsStr,
    contents: &[u8],
    keep: Option<(u32, u32, u32)>,
) -> io::Result<OsString> {
    let flags = OFlags::WRONLY
        | OFlags::CREATE
        | OFlags::EXCL
        | OFlags::NOFOLLOW
        | OFlags::NONBLOCK
        | OFlags::CLOEXEC;
    for _ in 0..100 {
        let temp = temp_name(name);
        match rustix::fs::openat(dir, &temp, flags, Mode::from_raw_mode(NEW_MODE)) {
            Ok(file) => {
                let written = check_regular(&file).and_then(|()| fill(&file, contents, keep));
                if let Err(e) = written {
                    let _ = rustix::fs::unlinkat(dir, &temp, AtFlags::empty());
                    return Err(e);
                }
                return Ok(temp);
            }
            Err(rustix::io::Errno::EXIST) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Err(io::Error::from_raw_os_error(libc::EEXIST))
}

/// Gives the unnamed file `file` a fresh name in `dir`; None if this system cannot link it
/// (then a named temporary is made instead).
fn link_unnamed(dir: BorrowedFd<'_>, file: &OwnedFd, name: &OsStr) -> io::Result<Option<OsString>> {
    use std::os::fd::AsRawFd;
    let proc_path = crate::procfs::own_fd_path(file.as_raw_fd());
    for _ in 0..100 {
        let temp = temp_name(name);
        // AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH; the /proc link works for anyone.
        let linked = rustix::fs::linkat(file, "", dir, &temp, AtFlags::EMPTY_PATH).or_else(|e| {
            if e == rustix::io::Errno::EXIST {
                return Err(e);
            }
            rustix::fs::linkat(
                rustix::fs::CWD,
                proc_path.as_path(),
                dir,
                &temp,
                AtFlags::SYMLINK_FOLLOW,
            )
        });
        match linked {
            Ok(()) => return Ok(Some(temp)),
            // Something is at that name already: it is left alone; another name.
            Err(rustix::io::Errno::EXIST) => {}
            Err(_) => return Ok(None),
        }
    }
    Err(io::Error::from_raw_os_error(libc::EEXIST))
}

/// Refuses an open file that is not a regular file.
fn check_regular(file: &OwnedFd) -> io::Result<()> {
    if sys::fstat(file.as_fd())?.kind == sys::FileKind::Regular {
        Ok(())
    } else {
        Err(not_regular())
    }
}

/// Writes `contents` to `file` and gives it the owner and mode in `keep`.
fn fill(file: &OwnedFd, contents: &[u8], keep: Option<(u32, u32, u32)>) -> io::Result<()> {
    let mut rest = contents;
    while !rest.is_empty() {
        match sys::write(file.as_fd(), rest) {
            Ok(0) => return Err(io::Error::from_raw_os_error(libc::ENOSPC)),
            Ok(n) => rest = &rest[n..],
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
            Err(e) => return Err(e),
        }
    }
    if let Some((uid, gid, mode)) = keep {
        let (euid, egid) = (rustix::process::geteuid(), rustix::process::getegid());
        if uid != euid.as_raw() || gid != egid.as_raw() {
            // Only root may give a file away; anyone else keeps the mode at least.
            let _ = rustix::fs::fchown(
                file,
                Some(rustix::fs::Uid::from_raw(uid)),
                Some(rustix::fs::Gid::from_raw(gid)),
            );
        }
        rustix::fs::fchmod(file, Mode::from_raw_mode(mode))?;
    }
    Ok(())
}

/// A fresh temporary name beside `name`: `.NAME.RANDOM.tmp` (hidden, and not `*.prom`, so a
/// collector never reads it), with NAME cut so that the whole stays within 255 bytes.
pub(crate) fn temp_name(name: &OsStr) -> OsString {
    const NAME_MAX: usize = 255;
    const EXTRA: usize = ".".len() + ".".len() + 16 + ".tmp".len();
    let base = name.as_bytes();
    let base = &base[..base.len().min(NAME_MAX - EXTRA)];
    let mut out = Vec::with_capacity(NAME_MAX);
    out.push(b'.');
    out.extend_from_slice(base);
    out.extend_from_slice(format!(".{:016x}.tmp", random()).as_bytes());
    OsString::from_vec(out)
}

/// 64 unpredictable bits (std's hasher keys are random per process; the clock and a counter
/// make each call differ).
fn random() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    COUNT.fetch_add(1, Ordering::Relaxed).hash(&mut h);
    sys::monotonic_ns().hash(&mut h);
    std::process::id().hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};

    fn names(dir: &Path) -> Vec<OsString> {
        let mut v: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn replaces_the_file_whole_and_leaves_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rpv.prom");
        replace(&path, b"first\n").unwrap();
        replace(&path, b"second\n").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"second\n");
        assert_eq!(names(dir.path()), ["rpv.prom"], "no temporary file left");
        let missing = dir.path().join("no/such/dir/rpv.prom");
        assert!(replace(&missing, b"x").is_err());
        assert_eq!(
            replace(Path::new(""), b"x").unwrap_err().raw_os_error(),
            Some(libc::ENOENT)
        );
    }

    #[test]
    fn temporary_names_are_hidden_fresh_and_short_enough() {
        let t = temp_name(OsStr::new("rpv.prom"));
        let t = t.to_str().unwrap();
        assert!(t.starts_with(".rpv.prom.") && t.ends_with(".tmp"), "{t}");
        assert_ne!(temp_name(OsStr::new("a")), temp_name(OsStr::new("a")));
        let long = "x".repeat(255);
        assert_eq!(temp_name(OsStr::new(&long)).len(), 255);
        // A 250-byte name (legal) can be replaced.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m".repeat(250));
        replace(&path, b"x\n").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"x\n");
    }

    #[test]
    fn only_a_regular_file_or_nothing_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let e = replace(&fifo, b"x").unwrap_err();
        assert_eq!(e.to_string(), "not a regular file");
        assert!(std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo());
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&fifo, &link).unwrap();
        assert!(
            replace(&link, b"x").is_err(),
            "a link to a FIFO is judged by the FIFO"
        );
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        assert_eq!(
            replace(&sub, b"x").unwrap_err().raw_os_error(),
            Some(libc::EISDIR)
        );
        // A link to a regular file: the link is replaced, the file it named is untouched.
        let target = dir.path().join("target");
        std::fs::write(&target, b"keep").unwrap();
        let link2 = dir.path().join("link2");
        std::os::unix::fs::symlink(&target, &link2).unwrap();
        replace(&link2, b"new").unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"keep");
        assert!(std::fs::symlink_metadata(&link2).unwrap().is_file());
        assert_eq!(std::fs::read(&link2).unwrap(), b"new");
    }

    #[test]
    fn the_named_way_makes_a_new_file_and_keeps_the_mode() {
        let dir = tempfile::tempdir().unwrap();
        let fd =
            rustix::fs::open(dir.path(), OFlags::PATH | OFlags::DIRECTORY, Mode::empty()).unwrap();
        let temp = write_named(
            fd.as_fd(),
            OsStr::new("m.prom"),
            b"text\n",
            Some((
                rustix::process::geteuid().as_raw(),
                rustix::process::getegid().as_raw(),
                0o600,
            )),
        )
        .unwrap();
        let path = dir.path().join(&temp);
        assert_eq!(std::fs::read(&path).unwrap(), b"text\n");
        let meta = std::fs::metadata(&path).unwrap();
        assert_eq!(meta.permissions().mode() & 0o7777, 0o600);
        assert!(temp.to_str().unwrap().starts_with(".m.prom."));
    }

    #[test]
    fn a_replaced_file_keeps_its_mode() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m");
        std::fs::write(&path, b"old").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        replace(&path, b"new").unwrap();
        let meta = std::fs::metadata(&path).unwrap();
        assert_eq!(meta.permissions().mode() & 0o7777, 0o640);
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
    }
}
