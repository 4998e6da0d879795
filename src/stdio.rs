//! The standard descriptors retry was given: which were closed at start,
//! and whether the reader of its stdout has gone.
//!
//! A descriptor the parent left closed is opened on /dev/null at start, so
//! that no file retry opens takes its number (and lands on the child's fd 1,
//! say), and recorded here: each child gets it closed again, as it would
//! have been without retry in between, and HTTP mode tells a closed stdout
//! (the body cannot be delivered: exit 23, as curl) from one sent to
//! /dev/null on purpose. In command mode a closed stdout is a reader gone
//! from the start: a failure is not retried.

use std::sync::atomic::{AtomicU8, Ordering};

use nix::libc;

/// Bit N set: descriptor N (0, 1 or 2) was closed when retry started.
static CLOSED: AtomicU8 = AtomicU8::new(0);

/// Open each closed standard descriptor on /dev/null, and record which
/// were closed. Call once, before anything opens a file: the binary calls
/// it from its `.init_array` entry, before the Rust runtime starts.
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
    for pfd in fds {
        if pfd.revents & libc::POLLNVAL != 0 {
            // SAFETY: a plain open(2); the lowest free number is the closed one.
            unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) };
            record_closed(pfd.fd);
        }
    }
}

/// Records that standard descriptor `fd` (0, 1 or 2) was closed at start.
pub fn record_closed(fd: i32) {
    if (0..3).contains(&fd) {
        CLOSED.fetch_or(1 << fd, Ordering::Relaxed);
    }
}

/// Whether standard descriptor `fd` was closed at start.
pub fn was_closed(fd: i32) -> bool {
    (0..3).contains(&fd) && CLOSED.load(Ordering::Relaxed) & (1 << fd) != 0
}

/// Which of stdin, stdout and stderr were closed when retry started.
pub fn closed_at_start() -> [bool; 3] {
    [0, 1, 2].map(was_closed)
}

/// Whether nothing reads retry's stdout: it was closed at start (`>&-`:
/// there never was a reader), or it is a pipe (or socket) whose reader has
/// gone, where a write would fail with EPIPE. poll reports POLLERR for the
/// write end of a pipe without readers; a terminal, a file or /dev/null
/// never say so.
pub fn stdout_reader_gone() -> bool {
    if was_closed(1) {
        return true;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_only_standard_descriptors() {
        record_closed(7);
        assert!(!was_closed(7));
        assert!(!was_closed(2));
        record_closed(2);
        assert!(was_closed(2));
        assert_eq!(closed_at_start(), [false, false, true]);
    }
}
