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
//!
//! Writing to a reader: [`write_all`] writes every byte to a descriptor
//! whatever its flags, and [`may_stall`] tells a destination whose reader
//! may stop reading (a pipe, a FIFO, a socket, a terminal) from a file,
//! which takes what is written without waiting for anyone. What goes to
//! the former is written on a thread of its own, so that the run's deadline
//! and signals still end it on time.

use std::io;
use std::os::fd::BorrowedFd;
use std::sync::atomic::{AtomicU8, Ordering};

use nix::errno::Errno;
use nix::libc;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::stat::{SFlag, fstat};

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

/// Write all of `bytes` to `fd`, also when someone else set it
/// non-blocking; an error when the destination is gone. It blocks while
/// the reader takes nothing: call it where that cannot hold the run (a
/// thread of its own), or where [`may_stall`] says it cannot happen.
pub fn write_all(fd: BorrowedFd<'_>, mut bytes: &[u8]) -> io::Result<()> {
    while !bytes.is_empty() {
        match nix::unistd::write(fd, bytes) {
            Ok(0) => return Err(io::Error::from(io::ErrorKind::WriteZero)),
            Ok(n) => bytes = &bytes[n..],
            Err(Errno::EINTR) => {}
            // A destination someone else set non-blocking: wait for room.
            Err(Errno::EAGAIN) => {
                let mut fds = [PollFd::new(fd, PollFlags::POLLOUT)];
                let _ = poll(&mut fds, PollTimeout::NONE);
            }
            Err(e) => return Err(io::Error::from_raw_os_error(e as i32)),
        }
    }
    Ok(())
}

/// Whether a write to `fd` may wait for a reader that stops reading: a
/// pipe, FIFO, socket, terminal or other device may; a regular file or a
/// disk takes the bytes at once.
pub fn may_stall(fd: BorrowedFd<'_>) -> bool {
    !fstat(fd).is_ok_and(|st| {
        let kind = SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT;
        kind == SFlag::S_IFREG || kind == SFlag::S_IFBLK
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn a_pipe_may_stall_and_a_file_does_not() {
        let (r, w) = nix::unistd::pipe().expect("pipe");
        assert!(may_stall(w.as_fd()));
        let file = tempfile::tempfile().expect("file");
        assert!(!may_stall(file.as_fd()));
        write_all(w.as_fd(), b"abc").expect("write");
        let mut got = [0u8; 3];
        nix::unistd::read(r.as_fd(), &mut got).expect("read");
        assert_eq!(&got, b"abc");
        drop(r);
        let e = write_all(w.as_fd(), b"x").expect_err("no reader");
        assert_eq!(e.raw_os_error(), Some(libc::EPIPE));
    }

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
