//! What only the platform offers, in one place: every call retry makes that
//! is not plain POSIX sits behind this interface, in retry's own words, so
//! that the rest of the crate is portable Unix and another system is one
//! more implementation of this list. The layer test
//! (`tests/it/architecture.rs`) refuses a Linux-only call anywhere else in
//! `src/`.
//!
//! On Linux, `linux.rs`; elsewhere, or on Linux with the `portable`
//! feature (off by default, for testing), `portable.rs`: plain POSIX, doing
//! without what POSIX has no way to do. The spawn's and the watchdog's
//! `clone` are not ported yet: both builds take them from `linux.rs`.
//!
//! The interface:
//! - processes: become the reaper of every orphaned descendant
//!   ([`become_subreaper`]), have a child die with retry
//!   ([`die_with_parent`]), start a child that borrows retry's memory
//!   ([`clone_vfork`], [`clone_shared`]), wait for a clone child's exit
//!   ([`exit_watch`], [`reap_clone_within`]), close descriptors by range
//!   ([`close_range_works`], [`close_range`]), count a group's live members
//!   ([`count_group`]), see a process stopped ([`is_stopped`]);
//! - files: a descriptor that only passes through ([`PASS_THROUGH`]), an
//!   unnamed temporary file ([`open_unnamed`], [`link_unnamed`]),
//!   the umask without changing it ([`umask_from_status`]), a directory's
//!   access ACL ([`access_acl`]), whether a directory is procfs
//!   ([`is_procfs`]), a second open file description of a file
//!   ([`reopen`]), a larger pipe ([`grow_pipe`]);
//! - locks: who holds a lock file and how many wait for it ([`who_has_lock`]);
//! - memory: hand free heap and stack pages back while waiting
//!   ([`release_free_heap`], [`release_free_stack`]).

#[cfg(target_os = "linux")]
#[cfg_attr(feature = "portable", allow(dead_code))]
mod linux;
#[cfg(any(not(target_os = "linux"), feature = "portable"))]
mod portable;

#[cfg(all(target_os = "linux", not(feature = "portable")))]
pub use linux::{
    PASS_THROUGH, access_acl, become_subreaper, close_range, close_range_works, count_group,
    die_with_parent, exit_watch, grow_pipe, is_procfs, is_stopped, link_unnamed, open_unnamed,
    reap_clone_within, release_free_heap, release_free_stack, reopen, umask_from_status,
    who_has_lock,
};
/// Not ported yet (see `portable.rs`): a child that borrows retry's memory.
#[cfg(target_os = "linux")]
pub use linux::{clone_shared, clone_vfork};
#[cfg(any(not(target_os = "linux"), feature = "portable"))]
pub use portable::{
    PASS_THROUGH, access_acl, become_subreaper, close_range, close_range_works, count_group,
    die_with_parent, exit_watch, grow_pipe, is_procfs, is_stopped, link_unnamed, open_unnamed,
    reap_clone_within, release_free_heap, release_free_stack, reopen, umask_from_status,
    who_has_lock,
};

/// A lock file, as the system's lock table names it: device and inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LockId {
    pub major: u64,
    pub minor: u64,
    pub ino: u64,
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
