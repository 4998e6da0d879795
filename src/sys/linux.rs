//! The Linux side of [`crate::sys`]: the child subreaper and the
//! parent-death signal (`prctl`), `clone` with a borrowed stack, pidfd,
//! `close_range`, `/proc` (process groups and states, the lock table, the
//! umask, descriptors), `O_TMPFILE`, the POSIX ACL's extended attribute,
//! procfs's magic number, pipe sizes, and glibc's ways to hand memory back.
//! Each function is the call as retry made it where it is used; the
//! reasons live with the callers.

use std::ffi::{CStr, OsStr, c_int, c_void};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::AtomicI32;

use nix::errno::Errno;
use nix::fcntl::{AT_FDCWD, AtFlags, FcntlArg, OFlag, fcntl, openat};
use nix::libc;
use nix::sys::stat::Mode;
use nix::unistd::{Pid, linkat};

use super::{LockId, Seen};

/// Makes retry the reaper of whatever its children fork and abandon (they
/// are reparented to retry rather than to init): whether it is.
pub fn become_subreaper() -> bool {
    nix::sys::prctl::set_child_subreaper(true).is_ok()
}

/// Asks for SIGKILL when the parent dies. Called in a child between clone
/// and exec: one system call, nothing else.
///
/// # Safety
/// A system call only; safe wherever a system call is.
#[inline(always)]
pub unsafe fn die_with_parent() {
    // SAFETY: a plain system call on constant arguments.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
}

/// Starts `child(arg)` as a new process that borrows retry's memory and
/// runs on `stack_top`, with SIGCHLD as its exit signal; the calling thread
/// is suspended until the child has exec'd or exited (posix_spawn's way
/// inside glibc). The pid, or -1 with errno set. A child that fails writes
/// its errno into the memory it borrows itself: `_failed` is the portable
/// build's.
///
/// # Safety
/// `child` may only make system calls on memory that outlives it; the
/// stack must be its own.
#[inline]
pub unsafe fn clone_vfork(
    child: extern "C" fn(*mut c_void) -> c_int,
    stack_top: *mut c_void,
    arg: *mut c_void,
    _failed: &AtomicI32,
) -> libc::pid_t {
    // SAFETY: the caller's promise above.
    unsafe {
        libc::clone(
            child,
            stack_top,
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            arg,
        )
    }
}

/// Called by a [`clone_vfork`] child that could not exec, just before it
/// exits: nothing to do here, the child has written `errno` into the
/// memory it shares with the parent.
#[inline(always)]
pub fn exec_failed(_errno: c_int) {}

/// A stack for a [`clone_vfork`] child, with a guard page below it: the
/// child only makes system calls, and an overflow faults rather than
/// writing into retry's memory.
pub struct ChildStack {
    base: *mut c_void,
    len: usize,
}

impl ChildStack {
    /// The child's stack size, above the guard page.
    const SIZE: usize = 64 * 1024;

    pub fn new() -> io::Result<ChildStack> {
        let page = 4096;
        let len = Self::SIZE + page;
        // SAFETY: a fresh private anonymous mapping; nothing else refers to it.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the lowest page of the mapping just made.
        unsafe { libc::mprotect(base, page, libc::PROT_NONE) };
        Ok(ChildStack { base, len })
    }

    /// The stack grows down from here.
    pub fn top(&self) -> *mut c_void {
        // SAFETY: one past the end of the mapping, which is page-aligned.
        unsafe { self.base.cast::<u8>().add(self.len).cast() }
    }
}

impl Drop for ChildStack {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, no longer used by any child.
        unsafe { libc::munmap(self.base, self.len) };
    }
}

/// The word the watchdog reads when retry has gone (the attempt's group),
/// written by retry and by an attempt's child before its exec: a static,
/// since both borrow retry's memory here.
#[inline(always)]
pub fn watched_group() -> &'static AtomicI32 {
    static GROUP: AtomicI32 = AtomicI32::new(0);
    &GROUP
}

/// A pipe, both ends close-on-exec: read end, write end.
pub fn cloexec_pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    Ok(nix::unistd::pipe2(OFlag::O_CLOEXEC)?)
}

/// Names the calling thread (in `ps`; 16 bytes at most, the NUL included).
/// A system call only (rustix: no errno written).
#[inline]
pub fn name_self(name: &CStr) {
    let _ = rustix::thread::set_name(name);
}

/// Starts `run` as a process of its own that borrows retry's memory and
/// runs on `stack_top`, with no exit signal; the caller goes on at once.
/// The pid, or -1 with errno set. Reap it with [`reap_clone_within`].
///
/// # Safety
/// As [`clone_vfork`], and `run` must never write to the memory it borrows.
#[inline]
pub unsafe fn clone_shared(
    run: extern "C" fn(*mut c_void) -> c_int,
    stack_top: *mut c_void,
) -> libc::pid_t {
    // SAFETY: the caller's promise above.
    unsafe { libc::clone(run, stack_top, libc::CLONE_VM, std::ptr::null_mut()) }
}

/// A way to see a [`clone_shared`] child's exit: its pidfd.
pub struct ExitWatch(c_int);

/// A descriptor that becomes readable when child `pid` exits (a pidfd,
/// Linux 5.3); None on older kernels.
pub fn exit_watch(pid: libc::pid_t) -> Option<ExitWatch> {
    // SAFETY: pidfd_open on our own child; a plain system call.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    c_int::try_from(pidfd)
        .ok()
        .filter(|fd| *fd >= 0)
        .map(ExitWatch)
}

/// Waits up to `ms` for child `pid` (a [`clone_shared`] child, without
/// exit signal) to exit, as its [`exit_watch`] descriptor tells, and reaps
/// it if it has; closes the descriptor.
pub fn reap_clone_within(pid: libc::pid_t, watch: ExitWatch, ms: c_int) {
    let pidfd = watch.0;
    let mut pfd = libc::pollfd {
        fd: pidfd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: poll reads and writes the one entry given; waitpid reaps our
    // own child (a clone child without exit signal: __WCLONE).
    unsafe {
        if libc::poll(&mut pfd, 1, ms) > 0 {
            libc::waitpid(pid, std::ptr::null_mut(), libc::__WCLONE | libc::WNOHANG);
        }
        libc::close(pidfd);
    }
}

/// Whether this kernel has `close_range(2)` (Linux 5.9): asked of a range
/// that holds no descriptor.
pub fn close_range_works() -> bool {
    // SAFETY: closes nothing (no descriptor has the largest number).
    unsafe { libc::syscall(libc::SYS_close_range, c_int::MAX, c_int::MAX, 0) == 0 }
}

/// Closes descriptors `first` to `last`, both included.
///
/// # Safety
/// The range must be valid (`first <= last`), so that the call cannot fail
/// and write errno; nothing in it may be in use.
#[inline]
pub unsafe fn close_range(first: c_int, last: c_int) {
    // SAFETY: the caller's promise above.
    unsafe { libc::syscall(libc::SYS_close_range, first, last, 0) };
}

/// How many live (not zombie) processes are in group `pgid`, read from
/// /proc; None where /proc cannot be read.
pub fn count_group(pgid: Pid) -> Option<usize> {
    let mut n = 0;
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // After the parenthesised name: state, ppid, pgrp, ...
        let mut rest = stat.rsplit_once(')').map(|(_, r)| r)?.split_whitespace();
        let state = rest.next();
        let pgrp = rest.nth(1).and_then(|p| p.parse::<i32>().ok());
        if pgrp == Some(pgid.as_raw()) && !matches!(state, Some("Z" | "X")) {
            n += 1;
        }
    }
    Some(n)
}

/// Whether process `pid` is stopped (by a signal, or traced).
pub fn is_stopped(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            // The name in parentheses may hold anything: the state follows its last ')'.
            let after = &s[s.rfind(')')? + 1..];
            after
                .split_whitespace()
                .next()
                .map(|st| st == "T" || st == "t")
        })
        .unwrap_or(false)
}

/// The lock table's name for the file `stat` describes.
pub fn lock_id(stat: &nix::sys::stat::FileStat) -> LockId {
    LockId {
        major: nix::sys::stat::major(stat.st_dev),
        minor: nix::sys::stat::minor(stat.st_dev),
        ino: stat.st_ino,
    }
}

/// Copies up to `len` bytes from pipe `from` to pipe `to` without taking
/// them from `from` (`tee(2)`). The count, or -1 with errno set.
#[inline]
pub fn tee(from: BorrowedFd<'_>, to: BorrowedFd<'_>, len: usize) -> isize {
    // SAFETY: tee(2) on two descriptors the caller holds open.
    unsafe { libc::tee(from.as_raw_fd(), to.as_raw_fd(), len, libc::SPLICE_F_MORE) }
}

/// Reads `/proc/locks` for `id`. Matched on the device and inode; where no
/// entry has the device (a file on overlayfs is locked on the layer below),
/// on the inode alone.
pub fn who_has_lock(id: LockId) -> Seen {
    std::fs::read_to_string("/proc/locks")
        .map(|text| parse_locks(&text, id))
        .unwrap_or_default()
}

fn parse_locks(text: &str, id: LockId) -> Seen {
    let want_dev = format!("{:02x}:{:02x}", id.major, id.minor);
    let mut exact = Seen::default();
    let mut by_ino = Seen::default();
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let Some(at) = words.iter().position(|w| w.matches(':').count() == 2) else {
            continue;
        };
        let Some((dev, ino)) = words[at].rsplit_once(':') else {
            continue;
        };
        if ino.parse::<u64>().ok() != Some(id.ino) {
            continue;
        }
        let pid = at
            .checked_sub(1)
            .and_then(|i| words[i].parse::<i32>().ok())
            .filter(|p| *p > 0);
        let blocked = words.get(1) == Some(&"->");
        for s in [&mut by_ino]
            .into_iter()
            .chain((dev == want_dev).then_some(&mut exact))
        {
            if blocked {
                s.waiting += 1;
            } else if s.holder.is_none() {
                s.holder = pid;
            }
        }
    }
    if exact.holder.is_some() || exact.waiting > 0 {
        exact
    } else {
        by_ino
    }
}

/// The open flag for a descriptor used only to pass through a directory
/// or to name a file (`O_PATH`): it needs no read permission.
pub const PASS_THROUGH: OFlag = OFlag::O_PATH;

/// An unnamed new file in directory `dir` (`O_TMPFILE`), read-write and
/// close-on-exec, with permission bits `mode` (less the umask). Fails
/// (EOPNOTSUPP, EISDIR, EINVAL, ENOENT) where the kernel or file system
/// has no such files.
pub fn open_unnamed(dir: BorrowedFd<'_>, mode: Mode) -> nix::Result<OwnedFd> {
    openat(
        dir,
        ".",
        OFlag::O_TMPFILE | OFlag::O_RDWR | OFlag::O_CLOEXEC,
        mode,
    )
}

/// Links the unnamed file `file` ([`open_unnamed`]) under `name` in `dir`:
/// through /proc (no privilege needed), or by descriptor where /proc is
/// not mounted (needs CAP_DAC_READ_SEARCH).
pub fn link_unnamed(file: BorrowedFd<'_>, dir: BorrowedFd<'_>, name: &OsStr) -> nix::Result<()> {
    let proc = format!("/proc/self/fd/{}", file.as_raw_fd());
    match linkat(
        AT_FDCWD,
        proc.as_str(),
        dir,
        name,
        AtFlags::AT_SYMLINK_FOLLOW,
    ) {
        Ok(()) => Ok(()),
        Err(Errno::ENOENT) if !Path::new("/proc/self/fd").exists() => {
            linkat(file, "", dir, name, AtFlags::AT_EMPTY_PATH)
        }
        Err(e) => Err(e),
    }
}

/// The process's umask as /proc/self/status reports it (Linux 4.7 and
/// later), without changing it; None where that is not mounted.
pub fn umask_from_status() -> Option<u32> {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| umask_in_status(&s))
}

/// The `Umask:` line of a /proc/PID/status text (Linux 4.7 and later).
fn umask_in_status(status: &str) -> Option<u32> {
    let mask = status.lines().find_map(|l| l.strip_prefix("Umask:"))?;
    u32::from_str_radix(mask.trim(), 8).ok().map(|m| m & 0o777)
}

/// The largest extended attribute Linux stores (`XATTR_SIZE_MAX`).
const XATTR_MAX: usize = 65_536;

/// The raw access ACL of the open file `fd` (`system.posix_acl_access`, in
/// the kernel's format, `include/uapi/linux/posix_acl_xattr.h`), read into
/// `small`, or into `large` when it does not fit: `Ok(None)` when it has
/// none (or its file system keeps none).
pub fn access_acl<'a>(
    fd: BorrowedFd<'_>,
    small: &'a mut [u8],
    large: &'a mut Vec<u8>,
) -> rustix::io::Result<Option<&'a [u8]>> {
    use rustix::io::Errno;
    const NAME: &str = "system.posix_acl_access";
    let read = match rustix::fs::fgetxattr(fd, NAME, &mut small[..]) {
        Ok(len) => Ok(&small[..len]),
        Err(Errno::RANGE) => {
            large.resize(XATTR_MAX, 0);
            rustix::fs::fgetxattr(fd, NAME, &mut large[..]).map(|len| &large[..len])
        }
        Err(e) => Err(e),
    };
    match read {
        Ok(bytes) => Ok(Some(bytes)),
        Err(Errno::NODATA | Errno::OPNOTSUPP) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Whether the open directory `dir` is in procfs, whose descriptor links
/// (`pipe:[1234]`) name no path.
pub fn is_procfs(dir: BorrowedFd<'_>) -> bool {
    use nix::sys::statfs::{PROC_SUPER_MAGIC, fstatfs};
    fstatfs(dir).is_ok_and(|s| s.filesystem_type() == PROC_SUPER_MAGIC)
}

/// `file` opened again, read-only, through /proc: a new open file
/// description, with an offset of its own. Fails where /proc is not
/// mounted.
pub fn reopen(file: &File) -> io::Result<File> {
    File::open(format!("/proc/self/fd/{}", file.as_raw_fd()))
}

/// Asks for a pipe of `size` bytes. Best effort: beyond
/// /proc/sys/fs/pipe-max-size the default stays.
pub fn grow_pipe(pipe: impl AsFd, size: c_int) {
    let _ = fcntl(pipe.as_fd(), FcntlArg::F_SETPIPE_SZ(size));
}

/// Hands the heap's whole free pages back to the system (glibc's
/// `malloc_trim`); nothing elsewhere.
#[cfg(target_env = "gnu")]
pub fn release_free_heap() {
    // SAFETY: malloc_trim only hands whole free pages of the heap back to
    // the system; nothing in use moves.
    unsafe { libc::malloc_trim(0) };
}

#[cfg(not(target_env = "gnu"))]
pub fn release_free_heap() {}

/// The pages of this thread's stack that lie below the frames in use (flag
/// parsing and the set-up ran deeper than a wait does) are dropped: they
/// hold nothing live, and are faulted in again, zeroed, if the stack grows
/// there. A margin below this frame is kept for the system call's own and
/// anything else that runs below it. glibc only (`pthread_getattr_np`).
#[cfg(target_env = "gnu")]
pub fn release_free_stack() {
    const MARGIN: usize = 16 * 1024;
    let marker = 0u8;
    let sp = std::ptr::from_ref(std::hint::black_box(&marker)) as usize;
    // SAFETY: pthread_getattr_np fills `attr` for the calling thread (for
    // the main thread, the region up to the mapping below it), and it is
    // destroyed after; madvise(MADV_DONTNEED) is given only whole pages of
    // that region lying more than MARGIN below the current frame, where no
    // frame lives.
    unsafe {
        let page = match usize::try_from(libc::sysconf(libc::_SC_PAGESIZE)) {
            Ok(p) if p.is_power_of_two() => p,
            _ => return,
        };
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
            return;
        }
        let mut low: *mut libc::c_void = std::ptr::null_mut();
        let mut size: libc::size_t = 0;
        let got = libc::pthread_attr_getstack(&attr, &mut low, &mut size);
        libc::pthread_attr_destroy(&mut attr);
        let low = (low as usize).saturating_add(page - 1) & !(page - 1);
        let end = sp.saturating_sub(MARGIN) & !(page - 1);
        if got != 0 || low == 0 || end <= low || sp >= low.saturating_add(size) {
            return;
        }
        // Only the part the stack has grown into is mapped: for the rest
        // the call reports ENOMEM, having dropped what was there.
        let _ = libc::madvise(low as *mut libc::c_void, end - low, libc::MADV_DONTNEED);
    }
}

#[cfg(not(target_env = "gnu"))]
pub fn release_free_stack() {}

#[cfg(test)]
mod tests;
