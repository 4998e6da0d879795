//! The standard descriptors retry was given: which were closed at start,
//! and whether the reader of its stdout has gone.
//!
//! A descriptor the parent left closed is opened on /dev/null at start, so
//! that no file retry opens takes its number (and lands on the child's fd 1,
//! say); each child gets it closed again, as it would have been without
//! retry in between.

use std::sync::atomic::{AtomicU8, Ordering};

use nix::libc;

/// Bit N set: descriptor N (0, 1 or 2) was closed when retry started.
static CLOSED_AT_START: AtomicU8 = AtomicU8::new(0);

/// Open each closed standard descriptor on /dev/null, and remember which
/// were closed. Call once, first thing in `main`.
pub fn protect_closed() {
    let mut fds = [0, 1, 2].map(|fd| libc::pollfd {
        fd,
        events: 0,
        revents: 0,
    });
    // SAFETY: poll reads and writes only the three entries given.
    if unsafe { libc::poll(fds.as_mut_ptr(), 3, 0) } < 0 {
        return;
    }
    let mut closed = 0u8;
    for (n, pfd) in fds.iter().enumerate() {
        if pfd.revents & libc::POLLNVAL != 0 {
            closed |= 1 << n;
            // SAFETY: a plain open(2); the lowest free number is the closed one.
            unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) };
        }
    }
    CLOSED_AT_START.store(closed, Ordering::Relaxed);
}

/// Which of stdin, stdout and stderr were closed when retry started.
pub fn closed_at_start() -> [bool; 3] {
    let bits = CLOSED_AT_START.load(Ordering::Relaxed);
    [0, 1, 2].map(|n| bits & (1 << n) != 0)
}

/// Whether retry's stdout is a pipe (or socket) whose reader has gone: a
/// write would fail with EPIPE. poll reports POLLERR for the write end of a
/// pipe without readers; a terminal, a file or /dev/null never say so.
pub fn stdout_reader_gone() -> bool {
    if closed_at_start()[1] {
        return false;
    }
    let mut pfd = libc::pollfd {
        fd: 1,
        events: 0,
        revents: 0,
    };
    // SAFETY: poll reads and writes only the one entry given.
    let n = unsafe { libc::poll(&mut pfd, 1, 0) };
    n > 0 && pfd.revents & libc::POLLERR != 0
}
