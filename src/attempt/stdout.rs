//! retry's stdout as a command's attempts leave it.
//!
//! Without `--last-stdout`, what a failed attempt wrote stays in a file or
//! a pipe, and the next attempt's output follows it: [`left_on_stdout`]
//! tells how much (from a file's offset, which the child shares, or the
//! output pump's count) or that it cannot tell (a pipe the child writes to
//! directly), for the line retry logs when it retries. A terminal is read
//! by a person, and a stdout that is also stderr (`2>&1`) is a log, which
//! keeps every attempt's lines by design: neither gets the line. With
//! `--last-stdout`, [`release`] writes a success's held stdout out as soon
//! as the attempt ends, within `--max-time` and giving way to a signal,
//! whatever its reader does.

use std::sync::Arc;
use std::time::Instant;

use nix::fcntl::{FcntlArg, OFlag, fcntl};
use nix::libc;
use nix::sys::stat::{SFlag, fstat};
use nix::unistd::{Whence, isatty, lseek};

use super::hold::Spool;
use super::output::{Pump, same_file};
use crate::bound::{Bounded, within};
use crate::classify::{Limit, Status};
use crate::human::io_error;
use crate::signals::Signals;

/// What an attempt left on retry's stdout, where it stays.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Left {
    /// Nothing that stays: nothing written, or held, or a terminal,
    /// /dev/null, a closed stdout.
    #[default]
    Nothing,
    /// This many bytes.
    Bytes(u64),
    /// Whatever it wrote, if anything: retry cannot tell (a pipe or
    /// socket the child writes to directly, named here).
    Unknown(&'static str),
}

impl Left {
    /// The line to log when attempt `n`, which left this, is retried.
    pub fn line(self, n: u32) -> Option<String> {
        let next = n.saturating_add(1);
        let hint = "--last-stdout keeps only the last attempt's";
        match self {
            Left::Nothing => None,
            Left::Bytes(bytes) => Some(format!(
                "attempt {n} left {} on stdout, and attempt {next}'s output will follow them ({hint})",
                crate::human::human_size_about(bytes)
            )),
            Left::Unknown(what) => Some(format!(
                "stdout is {what}: what attempt {n} wrote to it, if anything, stays there, and the next attempts' output follows ({hint})"
            )),
        }
    }
}

fn kind(fd: i32) -> Option<SFlag> {
    // SAFETY: fds 0 to 2 stay open for retry's life.
    let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
    fstat(fd)
        .ok()
        .map(|st| SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT)
}

/// Where retry's stdout stands when it is a file (or a disk): what a child
/// writes there moves the offset they share. Opened for appending (`>>`),
/// the offset stays where it was (0 for a file just opened) until the first
/// write moves it to the end: the next write lands at the end of the file,
/// so that is where it stands, or a file's old contents would count as the
/// attempt's.
pub fn stdout_offset() -> Option<u64> {
    if !matches!(
        kind(libc::STDOUT_FILENO),
        Some(SFlag::S_IFREG | SFlag::S_IFBLK)
    ) {
        return None;
    }
    // SAFETY: as above.
    let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(libc::STDOUT_FILENO) };
    let at = lseek(fd, 0, Whence::SeekCur)
        .ok()
        .and_then(|o| u64::try_from(o).ok())?;
    let appending = fcntl(fd, FcntlArg::F_GETFL)
        .is_ok_and(|f| OFlag::from_bits_truncate(f).contains(OFlag::O_APPEND));
    if !appending {
        return Some(at);
    }
    let end = fstat(fd).ok().and_then(|st| u64::try_from(st.st_size).ok());
    Some(end.map_or(at, |end| end.max(at)))
}

/// What the attempt just ended left on retry's stdout: `before` is
/// [`stdout_offset`] before it started, `pump` the output pump when it
/// carried stdout on.
pub fn left_on_stdout(before: Option<u64>, pump: Option<&Pump>) -> Left {
    // SAFETY: as above.
    let stdout = unsafe { std::os::fd::BorrowedFd::borrow_raw(libc::STDOUT_FILENO) };
    if isatty(stdout).unwrap_or(false) || same_file(libc::STDOUT_FILENO, libc::STDERR_FILENO) {
        return Left::Nothing;
    }
    let wrote = |bytes: u64| match bytes {
        0 => Left::Nothing,
        n => Left::Bytes(n),
    };
    if let (Some(before), Some(after)) = (before, stdout_offset()) {
        return wrote(after.saturating_sub(before));
    }
    if let Some(pump) = pump {
        return wrote(pump.stdout_passed().0);
    }
    match kind(libc::STDOUT_FILENO) {
        Some(SFlag::S_IFCHR) if is_dev_null() => Left::Nothing,
        Some(SFlag::S_IFIFO) => Left::Unknown("a pipe"),
        Some(SFlag::S_IFSOCK) => Left::Unknown("a socket"),
        _ => Left::Unknown("a device"),
    }
}

/// Whether retry's stdout is /dev/null.
fn is_dev_null() -> bool {
    // SAFETY: as above.
    let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(libc::STDOUT_FILENO) };
    match (fstat(fd), nix::sys::stat::stat("/dev/null")) {
        (Ok(a), Ok(b)) => a.st_rdev == b.st_rdev,
        _ => false,
    }
}

/// `--last-stdout`: the attempt succeeded, so its held stdout is the run's
/// and goes out now, on a thread of its own, within `--max-time` (`until`)
/// and giving way to a terminating signal. `status` stays, unless the
/// bytes could not be written (a full disk, a broken device): then it
/// becomes that failure, final, so that a run never succeeds with part of
/// its output. A reader that has gone wanted no more. A reader that takes
/// nothing until the deadline or a signal is left to the thread, and the
/// spool with it (`Spool::abandon`): the run ends at once, as the deadline
/// or the signal ends it, with a warning saying so.
pub async fn release(
    spool: &Arc<Spool>,
    status: Status,
    until: Option<Instant>,
    signals: &mut Signals,
) -> (Status, Option<String>) {
    let started = Instant::now();
    let held = Arc::clone(spool);
    let task = tokio::task::spawn_blocking(move || held.release_stdout());
    let done = match within(task, until, signals).await {
        Bounded::Done(done) => done,
        stopped => {
            spool.abandon();
            let (status, when) = match stopped {
                Bounded::Interrupted(sig) => (
                    Status::Interrupted(sig as i32),
                    crate::classify::signal_name(sig as i32),
                ),
                _ => (
                    Status::TimedOut {
                        limit: Limit::Deadline,
                        after: started.elapsed(),
                    },
                    "--max-time".to_string(),
                ),
            };
            let warning = format!(
                "the command succeeded, but stdout's reader had not taken all of its output by {when}: the rest is abandoned"
            );
            return (status, Some(warning));
        }
    };
    let status = match done.map(|out| out.failed) {
        Ok(None) => status,
        Ok(Some((_, e))) if e.raw_os_error() == Some(libc::EPIPE) => status,
        Ok(Some((0, e))) => Status::Undelivered(format!(
            "the held stdout could not be read back: {}",
            io_error(&e)
        )),
        Ok(Some((_, e))) => Status::Undelivered(format!(
            "its stdout could not be written out: {}",
            io_error(&e)
        )),
        Err(e) => Status::Undelivered(format!("its stdout could not be written out: {e}")),
    };
    (status, None)
}
