//! Where a file the user named for an output goes (`-o`, `--metrics-file`,
//! `--plot`, `--log-file`), and how it is opened there.
//!
//! [`resolve`] follows symbolic links only where they are safe and, in a
//! directory others can write to, refuses a file, FIFO or device another
//! user owns (see [`trust::judge_existing`]). What is not a regular file (a
//! FIFO, `/dev/null`, a terminal) is written directly, opened with
//! `O_NONBLOCK` so that a FIFO nobody reads fails at once instead of
//! hanging retry, and judged again by its open descriptor, so nothing
//! swapped in between the look and the open is written to.

use std::ffi::OsString;
use std::fmt;
use std::fs::File;
use std::io;
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{AtFlags, FcntlArg, OFlag, fcntl, openat, readlinkat};
use nix::sys::stat::{FileStat, Mode, fstat, fstatat};

use super::{Dir, Rule, Untrusted, io_err, is_dir, is_regular, is_symlink, split, trust};
use crate::human::io_error;

/// How far [`resolve`] follows a chain of symbolic links, as the kernel's
/// own limit for one path.
pub(super) const MAX_LINKS: usize = 40;

/// Where a file named by the user really is: its directory (open) and its
/// name there, after following symbolic links that are safe to follow, and
/// what stands there now.
#[derive(Debug)]
pub struct Target {
    pub dir: Dir,
    pub name: OsString,
    /// The existing file's status (never a link's), if there is one.
    pub existing: Option<FileStat>,
    /// Others may write in `dir` (a sticky directory such as `/tmp`).
    pub shared: bool,
    /// `name` is one of the process's own descriptors in /proc
    /// (`/dev/stdout` leads there) for a pipe or socket, which has no path
    /// to follow: opened through the link itself.
    own_descriptor: bool,
}

impl Target {
    /// The full path of the target, for messages.
    pub fn path(&self) -> PathBuf {
        self.dir.path.join(&self.name)
    }

    /// Opens the existing FIFO or device for writing, without waiting: a
    /// FIFO with no reader is an error at once.
    pub fn open_direct(&self) -> io::Result<File> {
        let mut flags = OFlag::O_WRONLY | OFlag::O_NONBLOCK | OFlag::O_NOCTTY | OFlag::O_CLOEXEC;
        if !self.own_descriptor {
            flags |= OFlag::O_NOFOLLOW;
        }
        let fd = match openat(
            self.dir.fd.as_fd(),
            self.name.as_os_str(),
            flags,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(Errno::ENXIO) if self.existing.as_ref().is_some_and(is_fifo) => {
                return Err(io::Error::other(
                    "is a FIFO that nobody reads, and retry does not wait for a reader",
                ));
            }
            Err(e) => return Err(io_err(e)),
        };
        self.checked(File::from(fd), false)
    }

    /// `file`, just opened at the target, judged by its descriptor (what
    /// the name held when it was opened); `O_NONBLOCK` is cleared again, so
    /// writes wait for a slow reader as they would on stdout.
    fn checked(&self, file: File, regular_ok: bool) -> io::Result<File> {
        let stat = fstat(file.as_fd()).map_err(io_err)?;
        if is_regular(&stat) && !regular_ok {
            return Err(io::Error::other("was replaced while retry opened it"));
        }
        let dir = self.dir.stat()?;
        trust::judge_existing(self.shared, &dir, &stat).map_err(io::Error::other)?;
        if regular_ok {
            trust::judge_links(self.shared, &stat).map_err(io::Error::other)?;
        }
        let flags = fcntl(file.as_fd(), FcntlArg::F_GETFL).map_err(io_err)?;
        let flags = OFlag::from_bits_truncate(flags) & !OFlag::O_NONBLOCK;
        fcntl(file.as_fd(), FcntlArg::F_SETFL(flags)).map_err(io_err)?;
        Ok(file)
    }
}

fn is_fifo(stat: &FileStat) -> bool {
    use nix::sys::stat::SFlag;
    stat.st_mode & SFlag::S_IFMT.bits() == SFlag::S_IFIFO.bits()
}

/// Whether `dir` is in /proc, whose descriptor links (`pipe:[1234]`) name
/// no path.
fn in_proc(dir: &Dir) -> bool {
    crate::sys::is_procfs(dir.fd.as_fd())
}

/// Resolves `path` for writing a file there: opens its directory (which
/// must satisfy `rule`) and follows a symbolic link at the last component
/// to its target, as curl writes through one, when the link is safe to
/// follow (see [`trust::link_is_safe`]); an unsafe link is an error, and so
/// is another user's file, FIFO or device in a directory others can write
/// to (see [`trust::judge_existing`]). A dangling safe link resolves to the
/// file it names.
pub fn resolve(path: &Path, rule: Rule) -> Result<Target, ResolveError> {
    let mut path = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        // `DIR/` and `DIR/.` name a directory (for the shell, curl and the
        // kernel alike), though `components` would drop the ending and
        // leave `DIR` itself to be written as a file.
        let bytes = path.as_os_str().as_bytes();
        if bytes.ends_with(b"/") || bytes.ends_with(b"/.") {
            return Err(ResolveError::Io(
                path,
                io::Error::new(
                    io::ErrorKind::IsADirectory,
                    "ends in '/', so names a directory",
                ),
            ));
        }
        let (parent, name) = split(&path).map_err(|e| ResolveError::Io(path.clone(), e))?;
        let dir_path = parent
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or_else(|| PathBuf::from("."));
        // Every component of the directory is walked under the same rule as
        // the last: another user's link anywhere in a shared directory is
        // not followed.
        let dir = super::walk::open_dir(&dir_path)?;
        let shared = dir.judge(rule).map_err(ResolveError::Untrusted)?;
        let existing = dir
            .stat_at(&name)
            .map_err(|e| ResolveError::Io(path.clone(), e))?;
        let dir_stat = || {
            dir.stat()
                .map_err(|e| ResolveError::Io(dir_path.clone(), e))
        };
        match existing {
            Some(link) if is_symlink(&link) => {
                if !trust::link_is_safe(shared, &dir_stat()?, &link) {
                    return Err(ResolveError::Untrusted(Untrusted {
                        path,
                        why: format!(
                            "is a symbolic link made by another user (uid {}) in a directory others can write to",
                            link.st_uid
                        ),
                    }));
                }
                let to = readlinkat(dir.fd.as_fd(), name.as_os_str())
                    .map_err(|e| ResolveError::Io(path.clone(), io_err(e)))?;
                if !to.as_bytes().starts_with(b"/")
                    && in_proc(&dir)
                    && let Ok(object) = fstatat(dir.fd.as_fd(), name.as_os_str(), AtFlags::empty())
                    && !is_regular(&object)
                    && !is_dir(&object)
                {
                    return Ok(Target {
                        dir,
                        name,
                        existing: Some(object),
                        shared,
                        own_descriptor: true,
                    });
                }
                path = dir_path.join(to);
            }
            Some(stat) if is_dir(&stat) => {
                return Err(ResolveError::Io(
                    path,
                    io::Error::new(io::ErrorKind::IsADirectory, "is a directory"),
                ));
            }
            existing => {
                if let Some(stat) = &existing {
                    trust::judge_existing(shared, &dir_stat()?, stat)
                        .map_err(|why| ResolveError::Untrusted(Untrusted { path, why }))?;
                }
                return Ok(Target {
                    dir,
                    name,
                    existing,
                    shared,
                    own_descriptor: false,
                });
            }
        }
    }
    Err(ResolveError::Io(
        path,
        io::Error::from_raw_os_error(Errno::ELOOP as i32),
    ))
}

/// Failure to resolve a path for writing.
#[derive(Debug)]
pub enum ResolveError {
    Io(PathBuf, io::Error),
    Untrusted(Untrusted),
}

impl fmt::Display for ResolveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResolveError::Io(p, e) => write!(f, "{}: {}", p.display(), io_error(e)),
            ResolveError::Untrusted(u) => write!(f, "{u}"),
        }
    }
}

impl std::error::Error for ResolveError {}

impl ResolveError {
    /// The error in words for a message that names `given` already: other
    /// paths (a link's target, the directory) are named, `given` is not
    /// repeated.
    pub fn about(&self, given: &Path) -> String {
        match self {
            ResolveError::Io(p, e) if p == given => io_error(e),
            ResolveError::Untrusted(u) if u.path == given => u.why.clone(),
            e => e.to_string(),
        }
    }
}

/// Where an output goes.
#[derive(Debug)]
pub enum Destination {
    /// A regular file, or none yet: written beside it and renamed into
    /// place, whole.
    Replace(Box<Target>),
    /// A FIFO with a reader, or a device: written directly.
    Direct(File),
}

/// Resolves `path` as [`resolve`] does and opens what is not a regular file
/// (see [`Target::open_direct`]).
pub fn open_destination(path: &Path, rule: Rule) -> Result<Destination, ResolveError> {
    let target = resolve(path, rule)?;
    match &target.existing {
        Some(stat) if !is_regular(stat) => target
            .open_direct()
            .map(Destination::Direct)
            .map_err(|e| ResolveError::Io(target.path(), e)),
        _ => Ok(Destination::Replace(Box::new(target))),
    }
}

/// Opens `path` for appending (a log file), creating it with 0666 less the
/// umask: resolved as [`resolve`] does, then opened without following any
/// further link and without waiting on a FIFO, and judged again by the
/// open descriptor, so nothing planted between the two steps is written to.
pub fn open_append(path: &Path, rule: Rule) -> Result<File, ResolveError> {
    let target = resolve(path, rule)?;
    let failed = |e| ResolveError::Io(target.path(), e);
    if target.existing.as_ref().is_some_and(|s| !is_regular(s)) {
        return target.open_direct().map_err(failed);
    }
    let flags = OFlag::O_WRONLY | OFlag::O_APPEND | OFlag::O_CREAT | OFlag::O_NONBLOCK;
    let file = match target
        .dir
        .open_at(&target.name, flags | OFlag::O_NOCTTY, 0o666)
    {
        Ok(f) => f,
        // A FIFO with no reader appeared in between.
        Err(e) if e.raw_os_error() == Some(Errno::ENXIO as i32) => {
            return Err(failed(io::Error::other(
                "is a FIFO that nobody reads, and retry does not wait for a reader",
            )));
        }
        Err(e) => return Err(failed(e)),
    };
    target.checked(file, true).map_err(failed)
}
