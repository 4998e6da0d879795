//! Safe file primitives for the files retry writes where other users may be
//! active: the shared-state store, `-o`, `--metrics-file`, `--plot`, held
//! output and the log file.
//!
//! Everything happens relative to an open directory descriptor (`openat`,
//! `renameat`, `linkat`), so a directory path swapped after it was checked
//! cannot redirect a write. Names are opened with `O_NOFOLLOW`: a symbolic
//! link is followed only where [`resolve`] found it safe (a link that only
//! the caller, root or the directory's owner could have made). Temporary
//! files are unnamed (`O_TMPFILE`) where the file system allows, so nothing
//! is left behind whatever kills retry, and otherwise get a unique name
//! created with `O_EXCL`. Every descriptor is close-on-exec.
//!
//! In a directory others can write to (a sticky one, as `/tmp`; see
//! [`trust`], which reads ACLs too), one rule holds for every file retry
//! writes ([`place`]): never into a file, FIFO or device another user owns
//! there; never blocked by a FIFO (opened non-blocking, then judged); and
//! never more of an existing file read than retry itself would have
//! written there.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{AT_FDCWD, AtFlags, OFlag, openat, renameat};
use nix::sys::stat::{FileStat, Mode, SFlag, fchmod, fstat, fstatat, mkdirat};
use nix::unistd::{Gid, Uid, UnlinkatFlags, fchown, unlinkat};

use crate::human::io_error;

mod place;
pub mod trust;
mod walk;

pub use place::{Destination, ResolveError, Target, open_append, open_destination, resolve};

/// Why a directory or file is not used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Untrusted {
    pub path: PathBuf,
    pub why: String,
}

impl fmt::Display for Untrusted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.path.display(), self.why)
    }
}

impl std::error::Error for Untrusted {}

/// What a directory must satisfy before retry writes in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// retry's own directories (the state store): owned by the caller and
    /// writable by nobody else, as ssh asks of `~/.ssh`.
    Private,
    /// A directory the user named for an output: owned by the caller or
    /// root, and writable by nobody else, unless it is sticky (`/tmp`),
    /// where others cannot remove or rename what retry creates and every
    /// name retry creates is new (`O_EXCL`, `O_TMPFILE`).
    Output,
}

/// An open directory, and the path it was opened by (for messages only).
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
    path: PathBuf,
}

fn io_err(e: Errno) -> io::Error {
    io::Error::from_raw_os_error(e as i32)
}

/// A file's type and permission bits as retry handles them: `mode_t` is
/// 32 bits on Linux, 16 on macOS and FreeBSD.
pub fn mode_bits(stat: &FileStat) -> u32 {
    to_u32(stat.st_mode)
}

/// `mode_t` widened (a no-op on Linux, where it is already 32 bits).
#[allow(clippy::useless_conversion)]
fn to_u32(mode: nix::libc::mode_t) -> u32 {
    u32::from(mode)
}

/// Permission bits (and set-id, sticky) as a `Mode`: they fit any `mode_t`.
fn mode_of(bits: u32) -> Mode {
    Mode::from_bits_truncate((bits & 0o7777) as nix::libc::mode_t)
}

fn is_dir(stat: &FileStat) -> bool {
    stat.st_mode & SFlag::S_IFMT.bits() == SFlag::S_IFDIR.bits()
}

fn is_symlink(stat: &FileStat) -> bool {
    stat.st_mode & SFlag::S_IFMT.bits() == SFlag::S_IFLNK.bits()
}

/// Whether `stat` is a regular file's.
pub fn is_regular(stat: &FileStat) -> bool {
    stat.st_mode & SFlag::S_IFMT.bits() == SFlag::S_IFREG.bits()
}

/// At most `limit` bytes of the regular file at `path` (a secret file a
/// flag names): opened without blocking, so a FIFO with no writer, planted
/// or mistaken, is refused at once rather than holding retry, and nothing
/// but a regular file is read.
///
/// In a directory others can write to, a symbolic link made by another
/// user is not followed, at any component, and another user's file is not
/// read (see [`walk::open_secret`]).
pub fn read_regular(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    read_regular_fd(walk::open_secret(path)?, limit)
}

/// Why the secret file at `path` is refused by the rules of
/// [`read_regular`], if it is, in words for a message that names `path`
/// already; a file that is missing or cannot be read is not judged here
/// (it is the error of its reading).
pub fn untrusted_secret(path: &Path) -> Option<String> {
    match walk::open_secret(path) {
        Err(e) if walk::untrusted_of(&e).is_some() => Some(secret_error(&e, path)),
        _ => None,
    }
}

/// An error of [`read_regular`] in words for a message that names `path`
/// already: a refusal that concerns `path` itself is not told its name
/// again (a link at a directory on the way is named).
pub fn secret_error(e: &io::Error, path: &Path) -> String {
    match walk::untrusted_of(e) {
        Some(u) if u.path == path => u.why.clone(),
        Some(u) => u.to_string(),
        None => io_error(e),
    }
}

/// At most `limit` bytes of `f`, if it is a regular file.
fn read_regular_fd(f: File, limit: u64) -> io::Result<Vec<u8>> {
    use std::io::Read;
    let stat = fstat(f.as_fd()).map_err(io_err)?;
    if !is_regular(&stat) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "not a regular file",
        ));
    }
    let mut bytes = Vec::new();
    f.take(limit).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Judges a file retry keeps for itself (a store file) by its status: a
/// regular file of the caller's that nobody else can write.
pub fn judge_private_file(stat: &FileStat) -> Result<(), String> {
    if !is_regular(stat) {
        return Err("is not a regular file".into());
    }
    if stat.st_uid != Uid::effective().as_raw() {
        return Err(format!("belongs to another user (uid {})", stat.st_uid));
    }
    if mode_bits(stat) & 0o022 != 0 {
        return Err(format!(
            "is writable by other users (mode {:04o})",
            mode_bits(stat) & 0o7777
        ));
    }
    Ok(())
}

impl Dir {
    /// Opens the directory at `path` (symbolic links in the path are the
    /// user's own choice and are followed).
    pub fn open(path: &Path) -> io::Result<Dir> {
        let fd = openat(
            AT_FDCWD,
            path,
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(io_err)?;
        Ok(Dir {
            fd,
            path: path.to_path_buf(),
        })
    }

    /// Opens the directory at `path`, creating it and any missing parents
    /// with mode 0700, and checks it against [`Rule::Private`]. Its last
    /// component must not be a symbolic link.
    pub fn create_private(path: &Path) -> Result<Dir, PrivateDirError> {
        let (parent, name) = split(path).map_err(PrivateDirError::Io)?;
        if let Some(p) = parent.as_deref().filter(|p| !p.as_os_str().is_empty()) {
            let mut builder = std::fs::DirBuilder::new();
            std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
            builder
                .recursive(true)
                .create(p)
                .map_err(PrivateDirError::Io)?;
        }
        let parent =
            Dir::open(parent.as_deref().unwrap_or(Path::new("."))).map_err(PrivateDirError::Io)?;
        match mkdirat(
            parent.fd.as_fd(),
            name.as_os_str(),
            Mode::from_bits_truncate(0o700),
        ) {
            Ok(()) | Err(Errno::EEXIST) => {}
            Err(e) => return Err(PrivateDirError::Io(io_err(e))),
        }
        let fd = match openat(
            parent.fd.as_fd(),
            name.as_os_str(),
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(Errno::ELOOP) | Err(Errno::ENOTDIR) => {
                return Err(PrivateDirError::Untrusted(Untrusted {
                    path: path.to_path_buf(),
                    why: "is not a directory (a symbolic link or a file stands there)".into(),
                }));
            }
            Err(e) => return Err(PrivateDirError::Io(io_err(e))),
        };
        let dir = Dir {
            fd,
            path: path.to_path_buf(),
        };
        dir.check(Rule::Private)
            .map_err(PrivateDirError::Untrusted)?;
        Ok(dir)
    }

    /// The path this directory was opened by.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The directory's own status.
    pub fn stat(&self) -> io::Result<FileStat> {
        fstat(self.fd.as_fd()).map_err(io_err)
    }

    /// Checks the open directory against `rule`.
    pub fn check(&self, rule: Rule) -> Result<(), Untrusted> {
        self.judge(rule).map(drop)
    }

    /// Checks the open directory against `rule`, its access ACL included:
    /// `Ok(true)` when others may write in it (a sticky directory that
    /// [`Rule::Output`] allows), `Ok(false)` when nobody else may.
    pub fn judge(&self, rule: Rule) -> Result<bool, Untrusted> {
        let untrusted = |why: String| Untrusted {
            path: self.path.clone(),
            why,
        };
        let stat = self
            .stat()
            .map_err(|e| untrusted(format!("cannot be examined: {}", io_error(&e))))?;
        let acl = trust::read_acl(self.fd.as_fd()).map_err(untrusted)?;
        trust::judge_dir(&stat, acl.as_deref(), rule).map_err(untrusted)
    }

    /// The status of `name` in this directory, not following a link.
    pub fn stat_at(&self, name: &OsStr) -> io::Result<Option<FileStat>> {
        match fstatat(self.fd.as_fd(), name, AtFlags::AT_SYMLINK_NOFOLLOW) {
            Ok(s) => Ok(Some(s)),
            Err(Errno::ENOENT) => Ok(None),
            Err(e) => Err(io_err(e)),
        }
    }

    /// Opens `name` in this directory without following a symbolic link
    /// (`ELOOP` if one stands there). `flags` adds to `O_NOFOLLOW |
    /// O_CLOEXEC`; `mode` applies when the file is created.
    pub fn open_at(&self, name: &OsStr, flags: OFlag, mode: u32) -> io::Result<File> {
        let fd = openat(
            self.fd.as_fd(),
            name,
            flags | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            mode_of(mode),
        )
        .map_err(io_err)?;
        Ok(File::from(fd))
    }

    /// Reads the whole of `name`, or `None` when it does not exist. A
    /// symbolic link there is an error, never followed.
    pub fn read_at(&self, name: &OsStr) -> io::Result<Option<(Vec<u8>, FileStat)>> {
        use std::io::Read;
        let mut f = match self.open_at(name, OFlag::O_RDONLY | OFlag::O_NONBLOCK, 0) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let stat = fstat(f.as_fd()).map_err(io_err)?;
        if !is_regular(&stat) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "not a regular file",
            ));
        }
        let mut bytes = Vec::new();
        f.read_to_end(&mut bytes)?;
        Ok(Some((bytes, stat)))
    }

    /// The first `limit` bytes of the regular file `name`, or `None` when
    /// nothing is there; a link, a FIFO (never waited on) or a device there
    /// is an error. For a file retry wrote itself and reads back: never
    /// more than it could have written, whatever someone left there.
    pub fn read_at_most(&self, name: &OsStr, limit: u64) -> io::Result<Option<Vec<u8>>> {
        match self.open_at(name, OFlag::O_RDONLY | OFlag::O_NONBLOCK, 0) {
            Ok(f) => read_regular_fd(f, limit).map(Some),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Removes `name` from this directory (a file or a link, never what a
    /// link points to).
    pub fn remove_at(&self, name: &OsStr) -> io::Result<()> {
        unlinkat(self.fd.as_fd(), name, UnlinkatFlags::NoRemoveDir).map_err(io_err)
    }

    /// Renames `from` to `to`, both in this directory, replacing `to`
    /// (whatever it is, a planted link included: the link is replaced, not
    /// followed).
    pub fn rename_at(&self, from: &OsStr, to: &OsStr) -> io::Result<()> {
        renameat(self.fd.as_fd(), from, self.fd.as_fd(), to).map_err(io_err)
    }

    /// A new temporary file in this directory, with permission bits `mode`
    /// (less the umask), that nobody else can have opened. Unnamed where the
    /// file system supports `O_TMPFILE`, so a killed retry leaves nothing;
    /// otherwise `.NAME.XXXXXXXX.tmp`, removed when the value is dropped.
    /// `stem` names the file the temporary one will become (used only for
    /// the fallback's name).
    pub fn temp_file(&self, stem: &OsStr, mode: u32) -> io::Result<TempFile<'_>> {
        let mode_t = mode_of(mode);
        match crate::sys::open_unnamed(self.fd.as_fd(), mode_t) {
            Ok(fd) => {
                return Ok(TempFile {
                    dir: self,
                    file: File::from(fd),
                    name: None,
                });
            }
            // Not supported by this kernel or file system: use a name.
            Err(Errno::EOPNOTSUPP | Errno::EISDIR | Errno::EINVAL | Errno::ENOENT) => {}
            Err(e) => return Err(io_err(e)),
        }
        self.named_temp_file(stem, mode_t)
    }

    /// The fallback of [`Dir::temp_file`]: a new file under a unique name.
    fn named_temp_file(&self, stem: &OsStr, mode: Mode) -> io::Result<TempFile<'_>> {
        loop {
            let name = temp_name(stem);
            match openat(
                self.fd.as_fd(),
                name.as_os_str(),
                OFlag::O_RDWR
                    | OFlag::O_CREAT
                    | OFlag::O_EXCL
                    | OFlag::O_NOFOLLOW
                    | OFlag::O_CLOEXEC,
                mode,
            ) {
                Ok(fd) => {
                    return Ok(TempFile {
                        dir: self,
                        file: File::from(fd),
                        name: Some(name),
                    });
                }
                Err(Errno::EEXIST) => continue,
                Err(e) => return Err(io_err(e)),
            }
        }
    }

    /// A new file with permission bits `mode` (less the umask) that no name
    /// refers to, for scratch data (the `--replay-stdin` spool): unnamed
    /// where the file system allows `O_TMPFILE`, else created under a unique
    /// name (`O_EXCL`) and unlinked at once. Nothing is left whatever kills
    /// retry afterwards, and nobody else can have opened it.
    pub fn scratch_file(&self, mode: u32) -> io::Result<File> {
        self.temp_file(OsStr::new("retry-scratch"), mode)?
            .into_unnamed()
    }

    /// Whether a file could be created here, found by creating a temporary
    /// one and dropping it: with `O_TMPFILE` nothing ever appears in the
    /// directory.
    pub fn probe_writable(&self) -> io::Result<()> {
        self.temp_file(OsStr::new("probe"), 0o600).map(drop)
    }

    /// Whether the file system has room for a write here, judged from its
    /// status without writing anything (no journal work, nothing to clean
    /// up): a read-only mount is `EROFS`; no block left for the caller
    /// (root may use the reserved ones), or no inode left, is `ENOSPC`. A
    /// file system that reports no counts at all is given the benefit of
    /// the doubt. Other failures (quotas, I/O errors) show only on writing.
    pub fn check_room(&self) -> io::Result<()> {
        use nix::sys::statvfs::{FsFlags, fstatvfs};
        let st = fstatvfs(self.fd.as_fd()).map_err(io_err)?;
        if st.flags().contains(FsFlags::ST_RDONLY) {
            return Err(io_err(Errno::EROFS));
        }
        let blocks = if Uid::effective().is_root() {
            st.blocks_free()
        } else {
            st.blocks_available()
        };
        if (st.blocks() > 0 && blocks == 0) || (st.files() > 0 && st.files_available() == 0) {
            return Err(io_err(Errno::ENOSPC));
        }
        Ok(())
    }
}

/// The bytes still free for this process on the file system of `file`
/// (root's reserve counted for root), if it says.
#[allow(clippy::unnecessary_cast)] // 32-bit block counts on macOS
pub fn room_of(file: &File) -> Option<u64> {
    let st = nix::sys::statvfs::fstatvfs(file.as_fd()).ok()?;
    let blocks = if Uid::effective().is_root() {
        st.blocks_free()
    } else {
        st.blocks_available()
    };
    Some((blocks as u64).saturating_mul(st.fragment_size() as u64))
}

/// A new unnamed scratch file, mode 0600, in `$TMPDIR` (or `/tmp` when it
/// is unset or empty). The directory must pass [`Rule::Output`] like any
/// place retry writes: a `$TMPDIR` another user could write in is refused,
/// not silently replaced, so the user learns their setting is unsafe.
pub fn scratch_in_tmpdir() -> Result<File, String> {
    let path = std::env::var_os("TMPDIR")
        .filter(|d| !d.is_empty())
        .map_or_else(|| PathBuf::from("/tmp"), PathBuf::from);
    let dir = Dir::open(&path).map_err(|e| format!("{}: {}", path.display(), io_error(&e)))?;
    dir.check(Rule::Output).map_err(|u| {
        format!("the temporary directory {u}; set TMPDIR to a directory of your own")
    })?;
    dir.scratch_file(0o600).map_err(|e| {
        format!(
            "cannot create a temporary file in {}: {}",
            path.display(),
            io_error(&e)
        )
    })
}

impl AsFd for Dir {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// Failure to set up a private directory.
#[derive(Debug)]
pub enum PrivateDirError {
    Io(io::Error),
    Untrusted(Untrusted),
}

impl fmt::Display for PrivateDirError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PrivateDirError::Io(e) => write!(f, "{e}"),
            PrivateDirError::Untrusted(u) => write!(f, "{u}"),
        }
    }
}

impl std::error::Error for PrivateDirError {}

/// A unique fallback name for a temporary file beside `stem`.
fn temp_name(stem: &OsStr) -> OsString {
    let mut name = OsString::from(".");
    // Keep the name well under NAME_MAX whatever the stem.
    let bytes = stem.as_bytes();
    name.push(OsStr::from_bytes(&bytes[..bytes.len().min(200)]));
    let id = uuid::Uuid::new_v4().simple().to_string();
    name.push(format!(".{}.tmp", &id[..12]));
    name
}

/// Whether to flush a file to disk before it takes its final name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// fsync first: the new content survives a crash of the machine, not
    /// only of retry (outputs written once per run).
    Sync,
    /// No fsync: frequent small writes whose loss in a crash is harmless.
    Fast,
}

/// A temporary file that becomes a named one only by [`TempFile::persist`].
#[derive(Debug)]
pub struct TempFile<'d> {
    dir: &'d Dir,
    file: File,
    /// The fallback's name; `None` for an unnamed (`O_TMPFILE`) file.
    name: Option<OsString>,
}

impl TempFile<'_> {
    pub fn file(&self) -> &File {
        &self.file
    }

    pub fn file_mut(&mut self) -> &mut File {
        &mut self.file
    }

    /// Gives the file `mode` (exactly, the umask does not apply) and, where
    /// retry may, `uid` and `gid`: for a file that replaces one whose mode
    /// and owner must stay. An owner retry cannot set is left as it is.
    pub fn set_mode_and_owner(
        &self,
        mode: u32,
        uid: Option<u32>,
        gid: Option<u32>,
    ) -> io::Result<()> {
        // The owner first: a change of owner may clear set-id bits.
        if uid.is_some() || gid.is_some() {
            match fchown(
                self.file.as_fd(),
                uid.map(Uid::from_raw),
                gid.map(Gid::from_raw),
            ) {
                Ok(()) | Err(Errno::EPERM) => {}
                Err(e) => return Err(io_err(e)),
            }
        }
        fchmod(self.file.as_fd(), mode_of(mode)).map_err(io_err)
    }

    /// The file with no name left: the fallback's name is removed (an
    /// unnamed file never had one).
    pub fn into_unnamed(mut self) -> io::Result<File> {
        if let Some(name) = self.name.take() {
            self.dir.remove_at(&name)?;
        }
        self.file.try_clone()
    }

    /// Gives the file its final `name` in the directory, replacing whatever
    /// stands there (a planted link is replaced, never followed).
    pub fn persist(mut self, name: &OsStr, durability: Durability) -> io::Result<()> {
        if durability == Durability::Sync {
            self.file.sync_all()?;
        }
        let named = match self.name.take() {
            Some(n) => n,
            None => {
                // linkat cannot replace a name: link under a unique name,
                // then rename that over the target.
                let tmp = temp_name(name);
                self.link_unnamed(&tmp)?;
                tmp
            }
        };
        if let Err(e) = self.dir.rename_at(&named, name) {
            let _ = self.dir.remove_at(&named);
            return Err(e);
        }
        Ok(())
    }

    /// Links the unnamed file under `name` (see [`crate::sys::link_unnamed`]).
    fn link_unnamed(&self, name: &OsStr) -> io::Result<()> {
        crate::sys::link_unnamed(self.file.as_fd(), self.dir.fd.as_fd(), name).map_err(io_err)
    }
}

impl Drop for TempFile<'_> {
    fn drop(&mut self) {
        if let Some(name) = &self.name {
            let _ = self.dir.remove_at(name);
        }
    }
}

/// Splits `path` into its directory (`None` for a bare name: the current
/// directory) and last component, which must be a real name.
fn split(path: &Path) -> io::Result<(Option<PathBuf>, OsString)> {
    match path.components().next_back() {
        Some(Component::Normal(name)) => {
            Ok((path.parent().map(Path::to_path_buf), name.to_os_string()))
        }
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "does not name a file",
        )),
    }
}

/// The process's umask, the bits a new file's mode loses: as the system
/// reports it, or where it does not by setting it and putting it back at
/// once (the only way the system call offers).
pub fn umask() -> u32 {
    if let Some(mask) = crate::sys::umask_from_status() {
        return mask;
    }
    let old = nix::sys::stat::umask(Mode::from_bits_truncate(0o022));
    nix::sys::stat::umask(old);
    to_u32(old.bits()) & 0o777
}

/// The mode a new file gets: 0666 less the umask, as a shell's `>` gives.
pub fn new_file_mode() -> u32 {
    0o666 & !umask()
}

#[cfg(test)]
mod tests;
