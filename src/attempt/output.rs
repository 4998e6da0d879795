//! The output pump: with `--retry-if-output` or `--stop-if-output`, the
//! child's stdout and stderr go through retry, which copies them on to its
//! own stdout and stderr as they come and matches them on the way.
//!
//! Without those flags none of this exists: the child writes to retry's
//! descriptors directly.
//!
//! One thread per stream reads whatever the child wrote (up to [`CHUNK`]
//! bytes at once), writes it on unchanged with a blocking write (from pipe
//! to pipe, tee(2) passes it on without a copy through retry), then feeds
//! it to its [`Scanner`]: bytes are never held back waiting for a newline,
//! and memory stays flat however much the child prints. A blocking write is
//! what the child itself would have done, so a slow reader slows the child
//! down as it would without retry; on its own thread it never holds up the
//! supervisor's timers and signals. When the destination is a terminal the
//! child gets a pseudo-terminal in raw mode (no newline translation), so it
//! still sees a terminal (colours, line buffering) and its bytes arrive as
//! written.
//!
//! When the attempt's main process has ended and its process group has been
//! cleaned up, [`Pump::stop`] tells the threads to read what is left and
//! end: a process that left the group and still holds the pipe open does
//! not hold the run up.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::{Arc, Mutex};
use std::thread;

use nix::errno::Errno;
use nix::fcntl::{FcntlArg, FdFlag, OFlag, fcntl};
use nix::libc;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::{SigSet, SigmaskHow, Signal, pthread_sigmask};
use nix::sys::termios::{SetArg, cfmakeraw, tcgetattr, tcsetattr};
use tokio::sync::oneshot;

use super::scan::{Found, Patterns, Scanner};
use crate::classify::OutputMatch;

/// The most read from the child at once.
pub const CHUNK: usize = 256 * 1024;

/// The pipe's capacity asked for (Linux's default is 64 KiB): a child that
/// writes fast then wakes the pump once per large read, not once per page.
const PIPE_SIZE: i32 = 1024 * 1024;

/// After [`Pump::stop`], read at most this much more from a stream: what
/// was written before the group ended fits many times over; a writer that
/// escaped the group could otherwise keep the pump going for ever.
const AFTER_STOP: usize = 4 * 1024 * 1024;

/// The child's ends of its stdout and stderr.
pub struct ChildEnds {
    pub stdout: OwnedFd,
    pub stderr: OwnedFd,
}

/// The two streams of one attempt under way.
pub struct Pump {
    patterns: Patterns,
    /// Dropped to tell the threads to finish: its read end then polls ready.
    stop: Option<OwnedFd>,
    done: Vec<oneshot::Receiver<()>>,
    found: Arc<Mutex<Found>>,
}

impl Pump {
    /// Set up a pipe (or a pseudo-terminal) for each stream and start
    /// copying. Returns the pump and the ends to give the child.
    pub fn start(patterns: &Patterns) -> io::Result<(Pump, ChildEnds)> {
        let (stop_rx, stop_tx) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
        let stop_rx = Arc::new(stop_rx);
        let found = Arc::new(Mutex::new(Found::default()));
        let mut done = Vec::new();
        let mut ends = Vec::new();
        for dest in [libc::STDOUT_FILENO, libc::STDERR_FILENO] {
            let (ours, theirs) = channel_for(dest)?;
            let (tx, rx) = oneshot::channel();
            let stream = Stream {
                source: ours,
                dest,
                stop: Arc::clone(&stop_rx),
                scanner: Scanner::new(patterns.clone()),
                found: Arc::clone(&found),
            };
            thread::Builder::new()
                .name(format!("output-{dest}"))
                .spawn(move || {
                    stream.run();
                    drop(tx);
                })?;
            done.push(rx);
            ends.push(theirs);
        }
        let stderr = ends.pop().ok_or_else(|| io::Error::other("no stderr"))?;
        let stdout = ends.pop().ok_or_else(|| io::Error::other("no stdout"))?;
        Ok((
            Pump {
                patterns: patterns.clone(),
                stop: Some(stop_tx),
                done,
                found,
            },
            ChildEnds { stdout, stderr },
        ))
    }

    /// The attempt is over: read what is left in the streams and end.
    pub fn stop(&mut self) {
        self.stop = None;
    }

    /// Until both streams have ended (they end at once after [`stop`] unless
    /// the destination blocks writing).
    pub async fn finished(&mut self) {
        for rx in &mut self.done {
            let _ = rx.await;
        }
    }

    /// What the output matched so far (all of it, after [`finished`]).
    pub fn matched(&self) -> OutputMatch {
        let found = *self.found.lock().unwrap_or_else(|e| e.into_inner());
        found.to_output(&self.patterns)
    }
}

/// Our end and the child's end of a new channel for a stream that goes to
/// `dest`: a pseudo-terminal if `dest` is a terminal, else a pipe.
fn channel_for(dest: i32) -> io::Result<(OwnedFd, OwnedFd)> {
    let (ours, theirs) = match nix::unistd::isatty(dest_fd(dest)) {
        Ok(true) => match pty_like(dest_fd(dest)) {
            Ok(pair) => pair,
            Err(_) => pipe()?,
        },
        _ => pipe()?,
    };
    let flags = OFlag::from_bits_truncate(fcntl(&ours, FcntlArg::F_GETFL)?);
    fcntl(&ours, FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK))?;
    Ok((ours, theirs))
}

fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let (r, w) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
    // Best effort: beyond /proc/sys/fs/pipe-max-size the default stays.
    let _ = fcntl(&r, FcntlArg::F_SETPIPE_SZ(PIPE_SIZE));
    Ok((r, w))
}

/// A pseudo-terminal with `dest`'s window size, in raw mode so that bytes
/// pass unchanged: (master, slave).
fn pty_like(dest: BorrowedFd<'_>) -> io::Result<(OwnedFd, OwnedFd)> {
    let mut size: libc::winsize = unsafe { std::mem::zeroed() };
    // SAFETY: TIOCGWINSZ writes one winsize into `size`.
    let got = unsafe { libc::ioctl(dest.as_raw_fd(), libc::TIOCGWINSZ, &mut size) } == 0;
    let pty = nix::pty::openpty(got.then_some(&size), None)?;
    let mut modes = tcgetattr(&pty.slave)?;
    cfmakeraw(&mut modes);
    tcsetattr(&pty.slave, SetArg::TCSANOW, &modes)?;
    for fd in [&pty.master, &pty.slave] {
        fcntl(fd, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC))?;
    }
    Ok((pty.master, pty.slave))
}

/// One stream's copying thread.
struct Stream {
    source: OwnedFd,
    dest: i32,
    stop: Arc<OwnedFd>,
    scanner: Scanner,
    found: Arc<Mutex<Found>>,
}

/// What one copying step did.
enum Step {
    /// This many bytes went on; they are at the start of the buffer.
    Copied(usize),
    /// Nothing to read just now.
    Empty,
    /// The stream ended, or its destination went away.
    End,
}

impl Stream {
    fn run(mut self) {
        // Writing to a terminal whose foreground is the attempt's must not
        // stop retry (`stty tostop`): with TTOU blocked, the write goes through.
        let mut ttou = SigSet::empty();
        ttou.add(Signal::SIGTTOU);
        let _ = pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&ttou), None);

        let mut buf = vec![0u8; CHUNK];
        // Pipe to pipe, tee(2) passes the bytes on without copying them
        // through retry; they are then read once, for matching.
        let mut tee = is_pipe(self.source.as_fd()) && is_pipe(dest_fd(self.dest));
        let mut after_stop: Option<usize> = None;
        let mut published = Found::default();
        loop {
            match self.copy_once(&mut buf, &mut tee) {
                Step::Copied(n) => {
                    self.scanner.feed(&buf[..n]);
                    if let Some(read) = after_stop.as_mut() {
                        *read += n;
                        if *read > AFTER_STOP {
                            break;
                        }
                    }
                }
                Step::Empty if after_stop.is_some() => break,
                Step::Empty => {
                    if self.wait_readable() {
                        after_stop = Some(0);
                    }
                }
                Step::End => break,
            }
            let now = self.scanner.finding();
            if now != published {
                published = now;
                self.publish(now);
            }
        }
        let last = self.scanner.finish();
        self.publish(last);
    }

    /// Pass on what the source holds (up to a buffer's worth), leaving a
    /// copy of it in `buf`.
    fn copy_once(&self, buf: &mut [u8], tee: &mut bool) -> Step {
        let dest = dest_fd(self.dest);
        while *tee {
            // tee(2) may wait for input whatever the descriptor's flags say:
            // it must never wait there, or a stop would go unnoticed.
            if !readable_now(self.source.as_fd()) {
                return Step::Empty;
            }
            // SAFETY: tee(2) on two descriptors we hold open.
            let n = unsafe {
                libc::tee(
                    self.source.as_raw_fd(),
                    self.dest,
                    buf.len(),
                    libc::SPLICE_F_MORE,
                )
            };
            match usize::try_from(n) {
                // No data, and no writer left.
                Ok(0) => return Step::End,
                Ok(n) => {
                    return if read_exactly(self.source.as_fd(), &mut buf[..n]) {
                        Step::Copied(n)
                    } else {
                        Step::End
                    };
                }
                Err(_) => match Errno::last() {
                    Errno::EINTR => {}
                    // The source has data, so the destination is full.
                    Errno::EAGAIN => wait_writable(dest),
                    Errno::EINVAL | Errno::ENOSYS => *tee = false,
                    // EPIPE: whoever read our output is gone.
                    _ => return Step::End,
                },
            }
        }
        loop {
            match nix::unistd::read(&self.source, buf) {
                // EOF; EIO is a pseudo-terminal's "no writer left".
                Ok(0) | Err(Errno::EIO) => return Step::End,
                Ok(n) => {
                    // When whoever read our output is gone, closing our end
                    // makes the child's next write fail as it would have.
                    return if write_all(self.dest, &buf[..n]) {
                        Step::Copied(n)
                    } else {
                        Step::End
                    };
                }
                Err(Errno::EINTR) => {}
                Err(Errno::EAGAIN) => return Step::Empty,
                Err(_) => return Step::End,
            }
        }
    }

    /// Sleep until the source has data or the pump is stopped; true when stopped.
    fn wait_readable(&self) -> bool {
        let mut fds = [
            PollFd::new(self.source.as_fd(), PollFlags::POLLIN),
            PollFd::new(self.stop.as_fd(), PollFlags::POLLIN),
        ];
        match poll(&mut fds, PollTimeout::NONE) {
            Ok(_) => fds[1].revents().is_some_and(|r| !r.is_empty()),
            Err(_) => false,
        }
    }

    fn publish(&self, found: Found) {
        let mut shared = self.found.lock().unwrap_or_else(|e| e.into_inner());
        *shared = shared.merge(found);
    }
}

/// retry's own stdout or stderr.
fn dest_fd(fd: i32) -> BorrowedFd<'static> {
    // SAFETY: fds 1 and 2 stay open for the life of the process (std
    // reopens them on /dev/null at start if they were closed).
    unsafe { BorrowedFd::borrow_raw(fd) }
}

fn is_pipe(fd: BorrowedFd<'_>) -> bool {
    nix::sys::stat::fstat(fd).is_ok_and(|st| {
        nix::sys::stat::SFlag::from_bits_truncate(st.st_mode) & nix::sys::stat::SFlag::S_IFMT
            == nix::sys::stat::SFlag::S_IFIFO
    })
}

/// Whether `fd` has data (or its end) to read right now.
fn readable_now(fd: BorrowedFd<'_>) -> bool {
    let mut fds = [PollFd::new(fd, PollFlags::POLLIN)];
    poll(&mut fds, PollTimeout::ZERO).is_ok_and(|n| n > 0)
}

/// Block until `fd` has room to write.
fn wait_writable(fd: BorrowedFd<'_>) {
    let mut fds = [PollFd::new(fd, PollFlags::POLLOUT)];
    let _ = poll(&mut fds, PollTimeout::NONE);
}

/// Read exactly `buf.len()` bytes that are known to be there.
fn read_exactly(fd: BorrowedFd<'_>, mut buf: &mut [u8]) -> bool {
    while !buf.is_empty() {
        match nix::unistd::read(fd, buf) {
            Ok(0) => return false,
            Ok(n) => buf = &mut buf[n..],
            Err(Errno::EINTR) => {}
            Err(Errno::EAGAIN) => {
                let mut fds = [PollFd::new(fd, PollFlags::POLLIN)];
                let _ = poll(&mut fds, PollTimeout::NONE);
            }
            Err(_) => return false,
        }
    }
    true
}

/// Write all of `bytes` to `fd`; false when the destination is gone.
fn write_all(fd: i32, mut bytes: &[u8]) -> bool {
    let fd = dest_fd(fd);
    while !bytes.is_empty() {
        match nix::unistd::write(fd, bytes) {
            Ok(0) => return false,
            Ok(n) => bytes = &bytes[n..],
            Err(Errno::EINTR) => {}
            // A destination someone else set non-blocking: wait for room.
            Err(Errno::EAGAIN) => {
                let mut fds = [PollFd::new(fd, PollFlags::POLLOUT)];
                let _ = poll(&mut fds, PollTimeout::NONE);
            }
            Err(_) => return false,
        }
    }
    true
}
