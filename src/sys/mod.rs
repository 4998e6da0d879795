//! What only the platform offers, in one place: every call retry makes that
//! is not plain POSIX sits behind this interface, in retry's own words, so
//! that the rest of the crate is portable Unix and another system is one
//! more implementation of this list. The layer test
//! (`tests/it/architecture.rs`) refuses a Linux-only call anywhere else in
//! `src/`.
//!
//! On Linux, `linux.rs`; elsewhere, or on Linux with the `portable`
//! feature (off by default, for testing), `portable.rs`: plain POSIX, doing
//! without what POSIX has no way to do.
//!
//! The interface:
//! - processes: become the reaper of every orphaned descendant
//!   ([`become_subreaper`]), have a child die with retry
//!   ([`die_with_parent`]), start a child and wait for its exec
//!   ([`clone_vfork`], on a [`ChildStack`], a failure told by
//!   [`exec_failed`]), start the watchdog ([`clone_shared`]) and the word
//!   it reads ([`watched_group`]), wait for the watchdog's exit
//!   ([`exit_watch`], [`reap_clone_within`]), close descriptors by range
//!   ([`close_range_works`], [`close_range`]), count a group's live members
//!   ([`count_group`]), see a process stopped ([`is_stopped`]), name the
//!   calling thread ([`name_self`]);
//! - files: a close-on-exec pipe ([`cloexec_pipe`]), a descriptor that
//!   only passes through ([`PASS_THROUGH`]), an
//!   unnamed temporary file ([`open_unnamed`], [`link_unnamed`]),
//!   the umask without changing it ([`umask_from_status`]), a directory's
//!   access ACL ([`access_acl`]), whether a directory is procfs
//!   ([`is_procfs`]), a second open file description of a file
//!   ([`reopen`]), a larger pipe ([`grow_pipe`]), a pipe's bytes copied
//!   without taking them ([`tee`]);
//! - locks: a lock file's name in the lock table ([`LockId::of`]), who
//!   holds it and how many wait for it ([`who_has_lock`]);
//! - memory: hand free heap and stack pages back while waiting
//!   ([`release_free_heap`], [`release_free_stack`]).

#[cfg(target_os = "linux")]
#[cfg_attr(feature = "portable", allow(dead_code))]
mod linux;
#[cfg(any(not(target_os = "linux"), feature = "portable"))]
mod portable;

#[cfg(all(target_os = "linux", not(feature = "portable")))]
pub use linux::{
    ChildStack, ExitWatch, PASS_THROUGH, access_acl, become_subreaper, cloexec_pipe, clone_shared,
    clone_vfork, close_range, close_range_works, count_group, die_with_parent, exec_failed,
    exit_watch, grow_pipe, is_procfs, is_stopped, link_unnamed, lock_id, name_self, open_unnamed,
    reap_clone_within, release_free_heap, release_free_stack, reopen, tee, umask_from_status,
    watched_group, who_has_lock,
};
#[cfg(any(not(target_os = "linux"), feature = "portable"))]
pub use portable::{
    ChildStack, ExitWatch, PASS_THROUGH, access_acl, become_subreaper, cloexec_pipe, clone_shared,
    clone_vfork, close_range, close_range_works, count_group, die_with_parent, exec_failed,
    exit_watch, grow_pipe, is_procfs, is_stopped, link_unnamed, lock_id, name_self, open_unnamed,
    reap_clone_within, release_free_heap, release_free_stack, reopen, tee, umask_from_status,
    watched_group, who_has_lock,
};

/// A lock file, as the system's lock table names it: device and inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LockId {
    pub major: u64,
    pub minor: u64,
    pub ino: u64,
}

impl LockId {
    /// The lock table's name for the file `stat` describes.
    pub fn of(stat: &nix::sys::stat::FileStat) -> LockId {
        lock_id(stat)
    }
}

/// What the system's lock table says of one lock file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Seen {
    /// The process holding it, when the lock is held and the holder is
    /// visible from here.
    pub holder: Option<i32>,
    /// How many wait for it (each process of retry has one thread in line).
    pub waiting: u32,
}
