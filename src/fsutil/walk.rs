//! Walking a path one component at a time, as the kernel would, but with
//! the rule of `fs.protected_symlinks` applied to every component, not
//! only the last: a symbolic link that stands in a directory others can
//! write to is followed only if the caller or that directory's owner made
//! it. Another user's link planted as `/tmp/shared/dir` would otherwise
//! lead `-o /tmp/shared/dir/out` (or a secret file read from there) into a
//! directory of their choosing. Each step is an `openat` with
//! `O_NOFOLLOW` on the directory the last step opened, so nothing swapped
//! in between is followed.
//!
//! Also here: reading a secret file (`--state-password-file`, `--ping-file`,
//! `--metrics-push-password-file`) under the rule retry applies to the
//! files it writes: in a directory others can write to, no link made by
//! another user, and no file of another user (as ssh refuses a key file
//! another user owns).

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{AT_FDCWD, AtFlags, OFlag, openat, readlinkat};
use nix::sys::stat::{FileStat, Mode, fstat, fstatat};
use nix::unistd::Uid;

use super::place::MAX_LINKS;
use super::{Dir, ResolveError, Untrusted, io_err, is_symlink, split, trust};

/// One step of a path.
enum Step {
    Root,
    Parent,
    Name(OsString),
}

/// The steps of `path`, last first (popped from the end).
fn steps_reversed(path: &Path) -> Vec<Step> {
    let mut steps: Vec<Step> = path
        .components()
        .filter_map(|c| match c {
            Component::RootDir => Some(Step::Root),
            Component::ParentDir => Some(Step::Parent),
            Component::Normal(n) => Some(Step::Name(n.to_os_string())),
            Component::CurDir | Component::Prefix(_) => None,
        })
        .collect();
    steps.reverse();
    steps
}

/// Whether someone besides the caller and the directory's owner may write
/// in the directory open at `fd`: its mode and, where it can be read, its
/// access ACL.
pub fn others_write(fd: BorrowedFd<'_>) -> io::Result<bool> {
    let stat = fstat(fd).map_err(io_err)?;
    // A directory opened only to pass through (`O_PATH`) has no readable
    // ACL: its mode bits are what is judged.
    let acl = trust::read_acl(fd).ok().flatten();
    let me = Uid::effective().as_raw();
    Ok(trust::other_writers(&stat, acl.as_deref(), me, trust::group_is_callers_own).is_some())
}

/// Opens the directory `name` in `at` without following a link there; one
/// that cannot be read is opened to pass through only.
fn open_step(at: BorrowedFd<'_>, name: &OsStr) -> Result<OwnedFd, Errno> {
    let flags = OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    match openat(at, name, flags | OFlag::O_RDONLY, Mode::empty()) {
        Err(Errno::EACCES) => openat(at, name, flags | crate::sys::PASS_THROUGH, Mode::empty()),
        r => r,
    }
}

/// The error for a link another user planted where others can write.
fn planted(path: PathBuf, link: &FileStat) -> Untrusted {
    Untrusted {
        path,
        why: format!(
            "is a symbolic link made by another user (uid {}) in a directory others can write to",
            link.st_uid
        ),
    }
}

/// Opens the directory at `path`, following a symbolic link at any
/// component only where it is safe (see the module's comment).
pub fn open_dir(path: &Path) -> Result<Dir, ResolveError> {
    walk(path, false)
}

/// [`open_dir`]; with `pass_through`, a last directory the caller may
/// search but not list (mode 0711) is opened to pass through only, which
/// is enough to open a file in it by name.
fn walk(path: &Path, pass_through: bool) -> Result<Dir, ResolveError> {
    let fail = |p: &Path, e: Errno| ResolveError::Io(p.to_path_buf(), io_err(e));
    let mut cur: OwnedFd = openat(
        AT_FDCWD,
        ".",
        crate::sys::PASS_THROUGH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| fail(Path::new("."), e))?;
    let mut walked = PathBuf::new();
    let mut pending = steps_reversed(path);
    let mut links = 0;
    while let Some(step) = pending.pop() {
        match step {
            Step::Root => {
                walked = PathBuf::from("/");
                cur = openat(
                    AT_FDCWD,
                    "/",
                    crate::sys::PASS_THROUGH | OFlag::O_CLOEXEC,
                    Mode::empty(),
                )
                .map_err(|e| fail(&walked, e))?;
            }
            Step::Parent => {
                walked.push("..");
                cur = open_step(cur.as_fd(), OsStr::new("..")).map_err(|e| fail(&walked, e))?;
            }
            Step::Name(name) => {
                let here = walked.join(&name);
                let stat = fstatat(cur.as_fd(), name.as_os_str(), AtFlags::AT_SYMLINK_NOFOLLOW)
                    .map_err(|e| fail(&here, e))?;
                if is_symlink(&stat) {
                    links += 1;
                    if links > MAX_LINKS {
                        return Err(fail(&here, Errno::ELOOP));
                    }
                    let shared = others_write(cur.as_fd())
                        .map_err(|e| ResolveError::Io(walked.clone(), e))?;
                    let dir = fstat(cur.as_fd()).map_err(|e| fail(&walked, e))?;
                    if !trust::link_is_safe(shared, &dir, &stat) {
                        return Err(ResolveError::Untrusted(planted(here, &stat)));
                    }
                    let to =
                        readlinkat(cur.as_fd(), name.as_os_str()).map_err(|e| fail(&here, e))?;
                    pending.extend(steps_reversed(Path::new(&to)));
                    walked = here;
                    continue;
                }
                cur = open_step(cur.as_fd(), &name).map_err(|e| fail(&here, e))?;
                walked = here;
            }
        }
    }
    // The last directory is opened to be read: a directory that may only
    // be passed through fails here, as an open of the whole path would,
    // unless passing through is enough.
    let fd = match openat(
        cur.as_fd(),
        ".",
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(Errno::EACCES) if pass_through => cur,
        Err(e) => return Err(fail(path, e)),
    };
    Ok(Dir {
        fd,
        path: path.to_path_buf(),
    })
}

/// The refusal by the rules above that an I/O error is, if it is one (not
/// a file that is missing or cannot be read).
pub fn untrusted_of(e: &io::Error) -> Option<&Untrusted> {
    e.get_ref()?.downcast_ref::<Untrusted>()
}

fn untrusted(u: Untrusted) -> io::Error {
    io::Error::other(u)
}

/// Opens the secret file at `path` for reading, without waiting on a FIFO,
/// under the rules of the module's comment; a refusal is an error for
/// which [`untrusted_of`] gives the refusal.
pub fn open_secret(path: &Path) -> io::Result<File> {
    let mut path = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        let (parent, name) = split(&path)?;
        let dir_path = parent
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or_else(|| PathBuf::from("."));
        let dir = walk(&dir_path, true).map_err(|e| match e {
            ResolveError::Io(_, e) => e,
            ResolveError::Untrusted(u) => untrusted(u),
        })?;
        let shared = others_write(dir.fd.as_fd())?;
        let dir_stat = dir.stat()?;
        if let Some(link) = dir.stat_at(&name)?
            && is_symlink(&link)
        {
            if !trust::link_is_safe(shared, &dir_stat, &link) {
                return Err(untrusted(planted(path, &link)));
            }
            let to = readlinkat(dir.fd.as_fd(), name.as_os_str()).map_err(io_err)?;
            path = dir_path.join(to);
            continue;
        }
        let file = dir.open_at(&name, OFlag::O_RDONLY | OFlag::O_NONBLOCK, 0)?;
        let stat = fstat(file.as_fd()).map_err(io_err)?;
        let me = Uid::effective().as_raw();
        if shared && stat.st_uid != me && stat.st_uid != dir_stat.st_uid {
            return Err(untrusted(Untrusted {
                path,
                why: format!(
                    "is another user's {} (uid {}) in a directory others can write to: no secret is read from it",
                    trust::kind(&stat),
                    stat.st_uid
                ),
            }));
        }
        return Ok(file);
    }
    Err(io_err(Errno::ELOOP))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::{MetadataExt, symlink};

    use super::*;

    /// The caller's own links, relative or absolute, with `..` after them,
    /// lead where the kernel's walk would; a loop ends.
    #[test]
    fn own_links_are_followed_as_the_kernel_follows_them() {
        let t = tempfile::tempdir().expect("tempdir");
        let b = t.path().join("a/b");
        std::fs::create_dir_all(&b).expect("mkdir");
        symlink("a", t.path().join("rel")).expect("link");
        symlink(t.path().join("a"), t.path().join("abs")).expect("link");
        symlink("loop", t.path().join("loop")).expect("link");
        let want = std::fs::metadata(&b).expect("stat").ino();
        for via in ["rel/b", "abs/b", "abs/../a/./b", "rel/b/../b"] {
            let dir = open_dir(&t.path().join(via)).expect(via);
            assert_eq!(dir.stat().expect("stat").st_ino, want, "{via}");
        }
        let looped = open_dir(&t.path().join("loop/x")).expect_err("a loop");
        assert!(
            matches!(&looped, ResolveError::Io(_, e) if e.raw_os_error() == Some(Errno::ELOOP as i32)),
            "{looped}"
        );
        let file = t.path().join("a/f");
        std::fs::write(&file, "x").expect("file");
        assert!(open_dir(&file).is_err(), "a file is no directory");
    }
}
