//! The plain POSIX side of [`crate::sys`], for systems other than Linux
//! and for the Linux build with the `portable` feature, which tests it.
//! Where POSIX has no way, the call does without and says so: no
//! subreaper (a daemonised grandchild may outlive retry), no parent-death
//! signal, no group count or stopped state (a group is alive while
//! `killpg(0)` finds a member), no view of the lock table (a stalled holder
//! is found by time alone), no unnamed files (named ones, removed when
//! dropped), no ACL read (mode bits only), no private view of a file (a
//! rewound duplicate), default pipe sizes, no memory handed back.
//!
//! Not ported yet: the spawn and the watchdog start their children with
//! Linux's `clone` (see ARCHITECTURE.md, "Platform calls"); the Linux
//! build with `portable` still takes those two from `linux.rs`.

use std::ffi::{OsStr, c_int};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::libc;
use nix::sys::stat::Mode;
use nix::unistd::Pid;

use super::{LockId, Seen};

/// No subreaper here: what the attempts fork and abandon goes to init.
/// False: not available.
pub fn become_subreaper() -> bool {
    false
}

/// No parent-death signal here: does nothing.
///
/// # Safety
/// Does nothing; safe anywhere.
#[inline(always)]
pub unsafe fn die_with_parent() {}

/// No descriptor tells a child's exit here: None, and the watchdog is
/// left to the reaper.
pub fn exit_watch(_pid: libc::pid_t) -> Option<c_int> {
    None
}

/// Never called: [`exit_watch`] gives no descriptor. Closes `fd`.
pub fn reap_clone_within(_pid: libc::pid_t, fd: c_int, _ms: c_int) {
    // SAFETY: the descriptor was handed over to be closed.
    unsafe { libc::close(fd) };
}

/// No `close_range` here: descriptors are closed one by one.
pub fn close_range_works() -> bool {
    false
}

/// Closes descriptors `first` to `last` one by one.
///
/// # Safety
/// Nothing in the range may be in use.
pub unsafe fn close_range(first: c_int, last: c_int) {
    for fd in first..=last {
        // SAFETY: the caller's promise above; an unused number only fails.
        unsafe { libc::close(fd) };
    }
}

/// Not known here: None, and a group is alive while it has a member,
/// zombies included.
pub fn count_group(_pgid: Pid) -> Option<usize> {
    None
}

/// Not known here: false, so a stalled holder is found by time alone.
pub fn is_stopped(_pid: i32) -> bool {
    false
}

/// No lock table here: nobody seen.
pub fn who_has_lock(_id: LockId) -> Seen {
    Seen::default()
}

/// No `O_PATH` here: a directory is opened for reading, so one retry may
/// search but not list cannot be passed through.
pub const PASS_THROUGH: OFlag = OFlag::O_RDONLY;

/// No unnamed files here: EOPNOTSUPP, and the caller makes a named one.
pub fn open_unnamed(_dir: BorrowedFd<'_>, _mode: Mode) -> nix::Result<OwnedFd> {
    Err(Errno::EOPNOTSUPP)
}

/// Never called: [`open_unnamed`] makes no unnamed file.
pub fn link_unnamed(_file: BorrowedFd<'_>, _dir: BorrowedFd<'_>, _name: &OsStr) -> nix::Result<()> {
    Err(Errno::EOPNOTSUPP)
}

/// Not reported here: None, and the caller sets the umask and puts it back.
pub fn umask_from_status() -> Option<u32> {
    None
}

/// Not read here: no ACL, so the mode bits alone are judged.
pub fn access_acl<'a>(
    _fd: BorrowedFd<'_>,
    _small: &'a mut [u8],
    _large: &'a mut Vec<u8>,
) -> rustix::io::Result<Option<&'a [u8]>> {
    Ok(None)
}

/// No procfs here to tell apart: false.
pub fn is_procfs(_dir: BorrowedFd<'_>) -> bool {
    false
}

/// No way to open a file again by its descriptor here: the caller falls
/// back to a rewound duplicate.
pub fn reopen(_file: &File) -> io::Result<File> {
    Err(io::Error::from(io::ErrorKind::Unsupported))
}

/// Pipe sizes are the system's here: does nothing.
pub fn grow_pipe(_pipe: impl AsFd, _size: c_int) {}

/// Nothing handed back here.
pub fn release_free_heap() {}

/// Nothing handed back here.
pub fn release_free_stack() {}
