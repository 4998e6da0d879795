//! The watchdog: if retry dies, even by `kill -9`, the process group of the
//! attempt running at that moment is killed, background jobs included. (The
//! parent-death signal reaches only the attempt's main process.)
//!
//! One per run, started before the first attempt: a process made with
//! `clone(CLONE_VM)`, without exec and without a copy of retry's memory,
//! running on a stack of its own in a new process group of its own (so that
//! a signal to retry's job does not reach it). It makes system calls only:
//! it closes every descriptor but the read end of a pipe whose only write
//! end retry holds (close-on-exec, so no attempt inherits it), and blocks
//! reading it. The read returns end-of-file only when retry has gone,
//! however it went: then the watchdog kills the group published in
//! [`group`] and exits. Each attempt's child writes its own pid there
//! (the group it leads) before its exec, and retry writes zero once the
//! group is empty: a normal exit finds zero, and kills nothing. At a
//! normal exit retry closes the pipe itself and reaps the watchdog, so no
//! process outlives a run that ended well.
//!
//! The watchdog shares retry's memory while retry runs, so it must never
//! write to it: it has every signal blocked (no handler of retry's can run
//! in it), and its system calls go through rustix, which returns errors
//! rather than writing errno (glibc would write it into retry's thread).
//! Its exit signal is none, so retry's reaping never sees it; once retry
//! has gone, the kernel hands it to the reaper with an ordinary SIGCHLD.
//!
//! Elsewhere than Linux (`crate::sys`), the watchdog is a forked copy of
//! retry doing the same, and [`group`] lives in a shared mapping made
//! before the fork, which retry, the watchdog and the attempts' children
//! all see; retry may reap it while it runs, should it die early.

use std::ffi::{c_int, c_void};
use std::io;
use std::os::fd::IntoRawFd;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use nix::libc;
use rustix::fd::BorrowedFd;
use rustix::process::{Pid, Signal};

/// The process group of the attempt running now; zero when none is.
#[inline]
pub fn group() -> &'static AtomicI32 {
    crate::sys::watched_group()
}

static STARTED: AtomicBool = AtomicBool::new(false);

/// The watchdog's pid and the write end of its pipe, once started: what
/// [`stop`] needs to end it.
static CHILD: AtomicI32 = AtomicI32::new(0);
static WRITE: AtomicI32 = AtomicI32::new(-1);

/// How long [`stop`] waits for the watchdog to go: it goes at once unless
/// someone stopped it, and retry's exit must not wait on that.
const STOP_WAIT_MS: c_int = 100;

/// The watchdog's stack: it makes a few system calls in one frame. In the
/// zero-initialised data, so it costs a page only once touched.
const STACK_SIZE: usize = 16 * 1024;

#[repr(C, align(16))]
struct Stack([u8; STACK_SIZE]);

static mut STACK: Stack = Stack([0; STACK_SIZE]);

/// The watchdog's name in `ps` (the 16-byte limit included).
const NAME: &std::ffi::CStr = c"retry-watchdog";

/// What the watchdog is given: the read end of its pipe, and whether the
/// kernel has `close_range` (probed by the parent, so that the watchdog's
/// own call cannot fail).
#[derive(Clone, Copy)]
#[repr(C)]
struct Brief {
    read: c_int,
    close_range: bool,
}

static mut BRIEF: Brief = Brief {
    read: -1,
    close_range: false,
};

/// Start the watchdog, once per process; later calls do nothing. Failing
/// to start it (no process slot to spare) is not fatal: the attempt's main
/// process still dies with retry.
pub fn start() -> io::Result<()> {
    if STARTED.swap(true, Ordering::AcqRel) {
        return Ok(());
    }
    // Made before the watchdog starts, so that it sees the same word.
    clear();
    let (read, write) = crate::sys::cloexec_pipe()?;
    let (read, write) = (read.into_raw_fd(), write.into_raw_fd());
    // SAFETY: BRIEF is written only here, once, before the watchdog that
    // reads it exists.
    unsafe {
        BRIEF = Brief {
            read,
            close_range: crate::sys::close_range_works(),
        };
    }
    // SAFETY: `watch` makes system calls only, on its own static stack,
    // reading the static brief; no exit signal, no other flag but
    // CLONE_VM: it is a process of its own that borrows retry's memory.
    let pid = super::spawn::clone_blocked(|| unsafe {
        let top = (&raw mut STACK)
            .cast::<u8>()
            .add(STACK_SIZE)
            .cast::<c_void>();
        crate::sys::clone_shared(watch, top)
    });
    // SAFETY: our copy of the read end is the watchdog's business now.
    unsafe { libc::close(read) };
    let pid = match pid {
        Ok(pid) => pid,
        Err(err) => {
            // SAFETY: the write end is ours and unused.
            unsafe { libc::close(write) };
            return Err(err);
        }
    };
    // `write` stays open, never written, until retry's last moment.
    CHILD.store(pid, Ordering::Release);
    WRITE.store(write, Ordering::Release);
    Ok(())
}

/// End the watchdog at a normal exit, and reap it, so that it is not left
/// for the init process to reap (one that never does would collect a
/// zombie per run). Called when the attempts are done; [`group`] is zero
/// by then, so it kills nothing. A watchdog that does not go within
/// [`STOP_WAIT_MS`] (stopped by someone) is left to end on its own.
pub fn stop() {
    let pid = CHILD.swap(0, Ordering::AcqRel);
    let write = WRITE.swap(-1, Ordering::AcqRel);
    if pid <= 0 || write < 0 {
        return;
    }
    clear();
    let watch = crate::sys::exit_watch(pid);
    // SAFETY: the write end is ours; closing it is the watchdog's signal.
    unsafe { libc::close(write) };
    // No exit watch (Linux before 5.3): leave it to the reaper.
    if let Some(exited) = watch {
        crate::sys::reap_clone_within(pid, exited, STOP_WAIT_MS);
    }
}

/// The watchdog, from clone to exit. System calls only (see the module doc).
extern "C" fn watch(_: *mut c_void) -> c_int {
    // SAFETY: written once before the clone, read-only from then on.
    let brief = unsafe { BRIEF };
    // Out of retry's job, so that a signal to the job (`kill -9 -PGID`)
    // leaves the watchdog to do its work.
    let _ = rustix::process::setpgid(None, None);
    crate::sys::name_self(NAME);
    close_all_but(brief);
    // SAFETY: the read end stays open for the watchdog's whole life.
    let fd = unsafe { BorrowedFd::borrow_raw(brief.read) };
    let mut byte = [0u8; 1];
    loop {
        match rustix::io::read(fd, &mut byte) {
            // End of file: retry has gone.
            Ok(0) => break,
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            // Cannot happen on a pipe held open; never kill on a guess.
            Err(_) => return 0,
        }
    }
    let group = group().load(Ordering::Acquire);
    if let Some(pgid) = Pid::from_raw(group).filter(|_| group > 1) {
        let _ = rustix::process::kill_process_group(pgid, Signal::KILL);
    }
    0
}

/// Close every descriptor but the pipe's read end: retry's copies (its log,
/// a store's lock, the write end of the pipe itself) must not live on in
/// the watchdog.
fn close_all_but(brief: Brief) {
    let keep = brief.read;
    if brief.close_range {
        // SAFETY: both ranges are valid (keep > 2: 0 to 2 are always open),
        // so neither call can fail and write errno.
        unsafe {
            crate::sys::close_range(0, keep - 1);
            crate::sys::close_range(keep + 1, c_int::MAX);
        }
    } else {
        // Older kernels: the numbers retry itself could have reached.
        for fd in (0..1024).filter(|&fd| fd != keep) {
            // SAFETY: closing the watchdog's own copy; an unused number
            // only fails, without writing errno (rustix's raw call), and
            // without the debug assertion `close` makes on a failure.
            let _ = unsafe { rustix::io::try_close(fd) };
        }
    }
}

/// The attempt's group is empty (or its start failed): nothing to kill.
pub fn clear() {
    group().store(0, Ordering::Release);
}
