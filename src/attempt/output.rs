//! The output pump: the child's stdout and stderr go through retry when
//! something must see them on the way: output patterns
//! (`--retry-if-output`, `--stop-if-output`), held output (`--hold-output`
//! holds both streams, `--last-stdout` stdout: the bytes go to a spool
//! instead of retry's stdout and stderr), or `--idle-timeout` (the time of
//! the last byte is kept).
//!
//! Without those flags none of this exists: the child writes to retry's
//! descriptors directly. A stream nothing needs to see (stderr with
//! `--last-stdout` alone) is the child's own too.
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
//! When retry's stdout and stderr are the same file, pipe or terminal (the
//! usual `2>&1`), the child gets one channel for both, as it would without
//! retry: one reader keeps the one order the child wrote in. Two channels
//! read by two threads would interleave by scheduling, not by the order of
//! the writes. The exception is `--last-stdout`: stdout is held apart from
//! stderr, which streams, so the two get channels of their own.
//!
//! A held stream whose spool stops holding it (`--last-stdout` at the
//! bound, or a full disk) passes through from then on: the spool writes
//! out what it held, and the stream's thread writes on to retry's own
//! descriptor.
//!
//! When the attempt's main process has ended and its process group has been
//! cleaned up, [`Pump::stop`] tells the threads to read what is left and
//! end: a process that left the group and still holds the pipe open does
//! not hold the run up.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::fcntl::{FcntlArg, FdFlag, OFlag, fcntl};
use nix::libc;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::{SigSet, SigmaskHow, Signal, pthread_sigmask};
use nix::sys::termios::{SetArg, cfmakeraw, tcgetattr, tcsetattr};
use tokio::sync::oneshot;

use super::hold::{Appended, HEADER, Holding, Spool, write_all};
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

/// What the pump does with the child's output.
#[derive(Default)]
pub struct Plan {
    /// Match the output against these.
    pub patterns: Option<Patterns>,
    /// Keep these streams in a spool instead of passing them on.
    pub hold: Holding,
    /// Keep the time of the last byte, for `--idle-timeout`.
    pub watch: bool,
}

impl Plan {
    /// Which streams (stdout, stderr) must go through the pump.
    fn needs(&self) -> [bool; 2] {
        let all = self.patterns.is_some() || self.watch;
        [all || self.hold.streams[0], all || self.hold.streams[1]]
    }

    /// Whether the pump has anything to do.
    pub fn is_needed(&self) -> bool {
        self.needs().contains(&true)
    }
}

/// The child's ends of its stdout and stderr; None: retry's own.
pub struct ChildEnds {
    stdout: Option<OwnedFd>,
    stderr: Option<OwnedFd>,
    /// stderr shares stdout's channel (retry's two are one file).
    merged: bool,
}

impl ChildEnds {
    /// The descriptor to give the child as its stdout; None: retry's own.
    pub fn stdout_fd(&self) -> Option<RawFd> {
        self.stdout.as_ref().map(AsRawFd::as_raw_fd)
    }

    /// The descriptor to give the child as its stderr; None: retry's own.
    pub fn stderr_fd(&self) -> Option<RawFd> {
        match self.merged {
            true => self.stdout_fd(),
            false => self.stderr.as_ref().map(AsRawFd::as_raw_fd),
        }
    }
}

/// When the child last wrote anything, for `--idle-timeout`.
#[derive(Debug)]
pub struct Activity {
    start: Instant,
    /// Nanoseconds from `start` to the last read of the child's output.
    last: AtomicU64,
    /// Streams blocked passing bytes on just now: a child whose reader is
    /// slow is talking, not idle.
    busy: AtomicUsize,
}

impl Activity {
    fn new() -> Activity {
        Activity {
            start: Instant::now(),
            last: AtomicU64::new(0),
            busy: AtomicUsize::new(0),
        }
    }

    pub fn touch(&self) {
        let nanos = u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.last.store(nanos, Ordering::Release);
    }

    /// When the child will have been silent for `idle`, unless it writes
    /// before then; None when that is too far away to name.
    pub fn silent_until(&self, idle: Duration) -> Option<Instant> {
        if self.busy.load(Ordering::Acquire) > 0 {
            return Instant::now().checked_add(idle);
        }
        let last = Duration::from_nanos(self.last.load(Ordering::Acquire));
        self.start.checked_add(last)?.checked_add(idle)
    }
}

/// Counts a stream as busy while it lives.
struct Busy<'a>(Option<&'a Activity>);

impl<'a> Busy<'a> {
    fn new(activity: Option<&'a Activity>) -> Busy<'a> {
        if let Some(a) = activity {
            a.busy.fetch_add(1, Ordering::AcqRel);
        }
        Busy(activity)
    }
}

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        if let Some(a) = self.0 {
            a.touch();
            a.busy.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// The streams of one attempt under way.
pub struct Pump {
    patterns: Option<Patterns>,
    /// Dropped to tell the threads to finish: its read end then polls ready.
    stop: Option<OwnedFd>,
    done: Vec<oneshot::Receiver<()>>,
    found: Arc<Mutex<Found>>,
    activity: Option<Arc<Activity>>,
    /// Bytes the stdout channel passed on to retry's stdout.
    passed: Arc<AtomicU64>,
    /// The stdout channel carries stderr too.
    merged: bool,
}

/// Where a stream's bytes go.
enum Dest {
    /// retry's own descriptor of the same number.
    Fd,
    /// The attempt's spool.
    Hold(Arc<Spool>),
}

impl Pump {
    /// Set up a pipe (or a pseudo-terminal) for each stream that needs
    /// one, or one for both when retry's stdout and stderr are one file and
    /// both go the same way, and start copying. Returns the pump and the
    /// ends to give the child.
    pub fn start(plan: Plan) -> io::Result<(Pump, ChildEnds)> {
        let (stop_rx, stop_tx) = crate::sys::cloexec_pipe()?;
        let stop_rx = Arc::new(stop_rx);
        let found = Arc::new(Mutex::new(Found::default()));
        let activity = plan.watch.then(|| Arc::new(Activity::new()));
        let passed = Arc::new(AtomicU64::new(0));
        let needs = plan.needs();
        let held = plan.hold.streams;
        let merged = needs == [true, true]
            && held[0] == held[1]
            && !(held[0] && plan.hold.apart)
            && same_file(libc::STDOUT_FILENO, libc::STDERR_FILENO);
        // Two streams held through channels of their own reach the spool
        // in the order they are read: their pipes keep the default size, so
        // that one runs at most that far ahead of the other, and a stream's
        // last lines stay in the tail of a cut spool.
        let large = held != [true, true] || merged;
        let mut done = Vec::new();
        let mut ends = [None, None];
        for (i, fd) in [libc::STDOUT_FILENO, libc::STDERR_FILENO]
            .into_iter()
            .enumerate()
        {
            if !needs[i] || (merged && i == 1) {
                continue;
            }
            let (ours, theirs) = channel_for(fd, held[i], large)?;
            let (tx, rx) = oneshot::channel();
            let stream = Stream {
                source: ours,
                fd,
                dest: match &plan.hold.spool {
                    Some(spool) if held[i] => Dest::Hold(Arc::clone(spool)),
                    _ => Dest::Fd,
                },
                stop: Arc::clone(&stop_rx),
                scanner: plan.patterns.clone().map(Scanner::new),
                found: Arc::clone(&found),
                activity: activity.clone(),
                passed: (i == 0).then(|| Arc::clone(&passed)),
            };
            thread::Builder::new()
                .name(format!("output-{fd}"))
                .spawn(move || {
                    stream.run();
                    drop(tx);
                })?;
            done.push(rx);
            ends[i] = Some(theirs);
        }
        let [stdout, stderr] = ends;
        Ok((
            Pump {
                patterns: plan.patterns,
                stop: Some(stop_tx),
                done,
                found,
                activity,
                passed,
                merged,
            },
            ChildEnds {
                stdout,
                stderr,
                merged,
            },
        ))
    }

    /// Bytes the stdout channel passed on to retry's stdout, and whether
    /// that channel carries stderr too.
    pub fn stdout_passed(&self) -> (u64, bool) {
        (self.passed.load(Ordering::Acquire), self.merged)
    }

    /// When the child last wrote, when watched.
    pub fn activity(&self) -> Option<&Activity> {
        self.activity.as_deref()
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
        let Some(patterns) = &self.patterns else {
            return OutputMatch::None;
        };
        let found = *self.found.lock().unwrap_or_else(|e| e.into_inner());
        found.to_output(patterns)
    }
}

/// Whether two of retry's descriptors are the same file, pipe or terminal.
pub(super) fn same_file(a: i32, b: i32) -> bool {
    match (
        nix::sys::stat::fstat(dest_fd(a)),
        nix::sys::stat::fstat(dest_fd(b)),
    ) {
        (Ok(x), Ok(y)) => x.st_dev == y.st_dev && x.st_ino == y.st_ino,
        _ => false,
    }
}

/// Our end and the child's end of a new channel for a stream that goes to
/// `dest` (when not `held`): a pseudo-terminal if `dest` is a terminal,
/// else a pipe, `large` or of the default size.
fn channel_for(dest: i32, held: bool, large: bool) -> io::Result<(OwnedFd, OwnedFd)> {
    let (ours, theirs) = match !held && nix::unistd::isatty(dest_fd(dest)).unwrap_or(false) {
        true => match pty_like(dest_fd(dest)) {
            Ok(pair) => pair,
            Err(_) => pipe(true)?,
        },
        _ => pipe(large)?,
    };
    let flags = OFlag::from_bits_truncate(fcntl(&ours, FcntlArg::F_GETFL)?);
    fcntl(&ours, FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK))?;
    Ok((ours, theirs))
}

fn pipe(large: bool) -> io::Result<(OwnedFd, OwnedFd)> {
    let (r, w) = crate::sys::cloexec_pipe()?;
    if large {
        crate::sys::grow_pipe(&r, PIPE_SIZE);
    }
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
    /// retry's own stdout (1) or stderr (2), which the stream stands for.
    fd: i32,
    dest: Dest,
    stop: Arc<OwnedFd>,
    scanner: Option<Scanner>,
    found: Arc<Mutex<Found>>,
    activity: Option<Arc<Activity>>,
    /// Counts the bytes passed on to retry's stdout.
    passed: Option<Arc<AtomicU64>>,
}

/// What one copying step did.
enum Step {
    /// This many bytes went on; they follow the header room in the buffer.
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

        // The bytes read go after room for a held record's header, so that
        // holding them costs one write.
        let mut buf = vec![0u8; HEADER + CHUNK];
        // Pipe to pipe, tee(2) passes the bytes on without copying them
        // through retry; they are then read once, for matching.
        let mut tee = match self.dest {
            Dest::Fd => is_pipe(self.source.as_fd()) && is_pipe(dest_fd(self.fd)),
            Dest::Hold(..) => false,
        };
        let mut after_stop: Option<usize> = None;
        let mut published = Found::default();
        loop {
            match self.copy_once(&mut buf, &mut tee) {
                Step::Copied(n) => {
                    if let Some(a) = &self.activity {
                        a.touch();
                    }
                    if let Some(scanner) = self.scanner.as_mut() {
                        scanner.feed(&buf[HEADER..HEADER + n]);
                    }
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
            let now = self
                .scanner
                .as_ref()
                .map(Scanner::finding)
                .unwrap_or_default();
            if now != published {
                published = now;
                self.publish(now);
            }
        }
        if let Some(scanner) = self.scanner.as_mut() {
            let last = scanner.finish();
            self.publish(last);
        }
    }

    /// Pass on what the source holds (up to a buffer's worth), leaving a
    /// copy of it in `buf[HEADER..]`.
    fn copy_once(&mut self, buf: &mut [u8], tee: &mut bool) -> Step {
        let step = self.copy_to_dest(buf, tee);
        if let (Step::Copied(n), Dest::Fd, Some(passed)) = (&step, &self.dest, &self.passed) {
            passed.fetch_add(*n as u64, Ordering::AcqRel);
        }
        step
    }

    fn copy_to_dest(&mut self, buf: &mut [u8], tee: &mut bool) -> Step {
        let fd = self.fd;
        if let Dest::Hold(spool) = &self.dest {
            return match self.read(&mut buf[HEADER..]) {
                Ok(n) => {
                    if spool.append(fd as u8, &mut buf[..HEADER + n]) == Appended::Passed {
                        // Held no more: what comes next passes through.
                        self.dest = Dest::Fd;
                    }
                    Step::Copied(n)
                }
                Err(step) => step,
            };
        }
        let dest = dest_fd(fd);
        while *tee {
            // tee(2) may wait for input whatever the descriptor's flags say:
            // it must never wait there, or a stop would go unnoticed.
            if !readable_now(self.source.as_fd()) {
                return Step::Empty;
            }
            let n = crate::sys::tee(self.source.as_fd(), dest, CHUNK);
            match usize::try_from(n) {
                // No data, and no writer left.
                Ok(0) => return Step::End,
                Ok(n) => {
                    return if read_exactly(self.source.as_fd(), &mut buf[HEADER..HEADER + n]) {
                        Step::Copied(n)
                    } else {
                        Step::End
                    };
                }
                Err(_) => match Errno::last() {
                    Errno::EINTR => {}
                    // The source has data, so the destination is full.
                    Errno::EAGAIN => {
                        let _busy = Busy::new(self.activity.as_deref());
                        wait_writable(dest);
                    }
                    Errno::EINVAL | Errno::ENOSYS => *tee = false,
                    // EPIPE: whoever read our output is gone.
                    _ => return Step::End,
                },
            }
        }
        match self.read(&mut buf[HEADER..]) {
            Ok(n) => {
                let _busy = Busy::new(self.activity.as_deref());
                // When whoever read our output is gone, closing our end
                // makes the child's next write fail as it would have.
                if write_all(fd, &buf[HEADER..HEADER + n]).is_ok() {
                    Step::Copied(n)
                } else {
                    Step::End
                }
            }
            Err(step) => step,
        }
    }

    /// Read what the source holds now: the number of bytes, or the step
    /// when there are none.
    fn read(&self, buf: &mut [u8]) -> Result<usize, Step> {
        loop {
            match nix::unistd::read(&self.source, buf) {
                // EOF; EIO is a pseudo-terminal's "no writer left".
                Ok(0) | Err(Errno::EIO) => return Err(Step::End),
                Ok(n) => return Ok(n),
                Err(Errno::EINTR) => {}
                Err(Errno::EAGAIN) => return Err(Step::Empty),
                Err(_) => return Err(Step::End),
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
