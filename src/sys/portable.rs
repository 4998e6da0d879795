//! The plain POSIX side of [`crate::sys`], for systems other than Linux
//! and for the Linux build with the `portable` feature, which tests it.
//! Where POSIX has no way, the call does without and says so: no
//! subreaper (a daemonised grandchild may outlive retry), no parent-death
//! signal, no group count or stopped state (a group is alive while
//! `killpg(0)` finds a member), no view of the lock table (a stalled holder
//! is found by time alone), no unnamed files (named ones, removed when
//! dropped), no ACL read (mode bits only), no private view of a file (a
//! rewound duplicate), default pipe sizes, no memory handed back, no
//! `tee(2)` (output copied by reading), threads not named.
//!
//! Children are started with `fork`: the spawn's child gets a copy of
//! retry's memory rather than borrowing it (slower, and a failed exec is
//! told through a close-on-exec pipe), and so does the watchdog, which
//! reads the attempt's group from a shared anonymous mapping made before
//! it starts.

use std::ffi::{CStr, OsStr, c_int, c_void};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, IntoRawFd, OwnedFd};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::fcntl::{FcntlArg, FdFlag, OFlag, fcntl};
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

/// In a [`clone_vfork`] child: the write end of the pipe its parent reads
/// a failed exec's errno from. Set after the fork, in the child's own copy.
static REPORT: AtomicI32 = AtomicI32::new(-1);

/// Starts `child(arg)` in a forked copy of retry; the calling thread waits
/// until the child has exec'd or exited, as with a vfork: it reads a
/// close-on-exec pipe to its end. A child that could not exec writes its
/// errno there ([`exec_failed`]), and it is stored in `failed`. The pid, or
/// -1 with errno set. No stack is needed: `_stack_top` is unused.
///
/// # Safety
/// `child` may only make async-signal-safe calls (retry may have threads)
/// and must end with `_exit` or an exec.
pub unsafe fn clone_vfork(
    child: extern "C" fn(*mut c_void) -> c_int,
    _stack_top: *mut c_void,
    arg: *mut c_void,
    failed: &AtomicI32,
) -> libc::pid_t {
    let (read, write) = match cloexec_pipe() {
        Ok((read, write)) => (read.into_raw_fd(), write.into_raw_fd()),
        Err(e) => {
            Errno::set_raw(e.raw_os_error().unwrap_or(libc::EMFILE));
            return -1;
        }
    };
    // SAFETY: the child makes async-signal-safe calls only (the caller's
    // promise), and ends in exec or _exit.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: the child's own copies of the pipe's ends.
        unsafe { libc::close(read) };
        REPORT.store(write, Ordering::Relaxed);
        child(arg);
        // SAFETY: `child` does not return; should it, end here.
        unsafe { libc::_exit(127) };
    }
    let forked = Errno::last_raw();
    // SAFETY: the parent's copy of the write end, no longer needed: the
    // read below ends when the child's copy closes (exec or exit).
    unsafe { libc::close(write) };
    if pid > 0 {
        let mut word = [0u8; 4];
        let mut got = 0;
        while got < word.len() {
            // SAFETY: reads into the rest of `word`.
            let n = unsafe { libc::read(read, word[got..].as_mut_ptr().cast(), word.len() - got) };
            match n {
                n if n > 0 => got += n as usize,
                0 => break,
                _ if Errno::last() == Errno::EINTR => {}
                _ => break,
            }
        }
        if got == word.len() {
            failed.store(i32::from_ne_bytes(word), Ordering::Release);
        }
    }
    // SAFETY: our read end, done with.
    unsafe { libc::close(read) };
    if pid < 0 {
        Errno::set_raw(forked);
    }
    pid
}

/// Called by a [`clone_vfork`] child that could not exec, just before it
/// exits: writes `errno` into the pipe its parent reads. One system call.
pub fn exec_failed(errno: c_int) {
    let fd = REPORT.load(Ordering::Relaxed);
    if fd >= 0 {
        let word = errno.to_ne_bytes();
        // SAFETY: writes four bytes from `word`; a pipe takes them at once.
        unsafe { libc::write(fd, word.as_ptr().cast(), word.len()) };
    }
}

/// No stack to make here: a forked child runs on its copy of the caller's.
pub struct ChildStack;

impl ChildStack {
    pub fn new() -> io::Result<ChildStack> {
        Ok(ChildStack)
    }

    /// Unused by [`clone_vfork`] here: null.
    pub fn top(&self) -> *mut c_void {
        std::ptr::null_mut()
    }
}

/// The word the watchdog reads when retry has gone (the attempt's group),
/// written by retry and by an attempt's child before its exec: in a shared
/// anonymous mapping, so that the forked watchdog and children see retry's
/// writes and theirs. Made at the first call (the watchdog's start calls it
/// before forking); where the mapping cannot be made, a word of retry's
/// own, which the watchdog never sees change: it then kills nothing.
pub fn watched_group() -> &'static AtomicI32 {
    static FALLBACK: AtomicI32 = AtomicI32::new(0);
    static SHARED: OnceLock<Option<&'static AtomicI32>> = OnceLock::new();
    SHARED
        .get_or_init(|| {
            // SAFETY: a fresh shared anonymous mapping of one page, never
            // unmapped: zeroed, aligned, alive for the process's life.
            let page = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    4096,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED | libc::MAP_ANON,
                    -1,
                    0,
                )
            };
            // SAFETY: the mapping holds a zeroed i32 at its start, and
            // AtomicI32 has i32's layout.
            (page != libc::MAP_FAILED).then(|| unsafe { &*page.cast::<AtomicI32>() })
        })
        .unwrap_or(&FALLBACK)
}

/// A pipe, both ends close-on-exec: read end, write end. Where `pipe2`
/// is missing (macOS) the flag is set after: a child forked by another
/// thread in between could inherit an end.
pub fn cloexec_pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let (read, write) = nix::unistd::pipe()?;
    for fd in [&read, &write] {
        fcntl(fd, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC))?;
    }
    Ok((read, write))
}

/// Threads are not named here: does nothing.
pub fn name_self(_name: &CStr) {}

/// Starts `run` in a forked copy of retry, which ends when `run` returns;
/// the caller goes on at once. The pid, or -1 with errno set. Reap it
/// with [`reap_clone_within`]. `_stack_top` is unused.
///
/// # Safety
/// `run` may only make async-signal-safe calls (retry may have threads).
pub unsafe fn clone_shared(
    run: extern "C" fn(*mut c_void) -> c_int,
    _stack_top: *mut c_void,
) -> libc::pid_t {
    // SAFETY: the caller's promise above.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        let code = run(std::ptr::null_mut());
        // SAFETY: ends the copy without running anything of retry's.
        unsafe { libc::_exit(code) };
    }
    pid
}

/// A way to see a [`clone_shared`] child's exit: asking `waitpid`.
pub struct ExitWatch;

/// Nothing to open here: `waitpid` is asked.
pub fn exit_watch(_pid: libc::pid_t) -> Option<ExitWatch> {
    Some(ExitWatch)
}

/// Waits up to `ms` for child `pid` (a [`clone_shared`] child) to exit,
/// asking `waitpid` after pauses that double from 25 µs to 1 ms (it
/// usually goes within a few dozen microseconds), and reaps it if it has.
pub fn reap_clone_within(pid: libc::pid_t, _watch: ExitWatch, ms: c_int) {
    let until = Instant::now() + Duration::from_millis(u64::try_from(ms).unwrap_or(0));
    let mut pause = Duration::from_micros(25);
    loop {
        // SAFETY: reaps our own child, writing nothing.
        let got = unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG) };
        // Reaped, or not ours any more (retry's reaper took it).
        let gone = got > 0 || (got < 0 && Errno::last() != Errno::EINTR);
        if gone || Instant::now() >= until {
            return;
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(1));
    }
}

/// Descriptors are closed one by one here ([`close_range`]): always works.
pub fn close_range_works() -> bool {
    true
}

/// The descriptors retry itself could have reached: below the soft limit
/// on open files, but no more than 1024 (what the limit is on most
/// systems, and where Linux's watchdog stops without `close_range` too).
/// Closing up to a raised limit (a million) would cost a system call each.
fn open_max() -> c_int {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit fills `limit`; a system call only.
    let got = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
    if got != 0 {
        return 1024;
    }
    c_int::try_from(limit.rlim_cur.min(1024)).unwrap_or(1024)
}

/// Closes descriptors `first` to `last` (both included, and below
/// [`open_max`]) one by one, with `close(2)` (it may write errno:
/// callers here are forked copies, whose errno is their own).
///
/// # Safety
/// Nothing in the range may be in use.
pub unsafe fn close_range(first: c_int, last: c_int) {
    for fd in first..=last.min(open_max() - 1) {
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

/// The file `stat` describes, by device and inode (there is no lock
/// table here to match it against).
#[allow(clippy::unnecessary_cast)] // dev_t and ino_t differ between systems
pub fn lock_id(stat: &nix::sys::stat::FileStat) -> LockId {
    LockId {
        major: stat.st_dev as u64,
        minor: 0,
        ino: stat.st_ino as u64,
    }
}

/// No `tee(2)` here: -1 with ENOSYS, and the caller copies by reading.
pub fn tee(_from: BorrowedFd<'_>, _to: BorrowedFd<'_>, _len: usize) -> isize {
    Errno::set_raw(libc::ENOSYS);
    -1
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
