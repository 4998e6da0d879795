//! Waiting in line for a group's lock, and watching who holds it.
//!
//! A contended lock is waited for by a thread of its own, blocked in the
//! kernel's queue (fair, no polling), which does the caller's work as soon
//! as it holds the lock, so the lock is never held across a hand-over
//! between threads. One such thread at most per group and process: a later
//! call hands its work to the thread already in line. The thread is never
//! joined, so one still blocked cannot keep retry alive after it decided to
//! exit.
//!
//! While it waits, the caller watches the lock without writing anything, at
//! a cost that does not grow with the line: every holder marks the lock
//! file's modification time when it takes the lock ([`taken`]), so a look
//! at the lock file and the state file (two `fstatat`, every [`POLL`], or
//! every [`POLL_MOVING`] after a look that saw a move) shows that the lock
//! moves. Only when neither has changed for [`LOOK_AFTER`] does the caller
//! read `/proc/locks` (one line per process in line: a look there costs as
//! much as the line is long) to learn who holds the lock, and then at most
//! every [`LOOK_AGAIN`] while nothing moves; meanwhile it watches that
//! holder's `/proc/PID/stat`. A holder that is stopped, or that keeps the
//! lock while nothing changes, is stalled, and the call gives up.

use std::fs::File;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anyhow::{anyhow, bail};

use super::{Done, Work};
use crate::fsutil::Dir;
use crate::sys::{LockId, is_stopped, who_has_lock};

/// How long the lock may stay with one holder while the group's state
/// does not change before the holder counts as stalled. While the lock
/// keeps changing hands, waiting goes on.
pub const LOCK_STALL: Duration = Duration::from_secs(3);
/// How long a holder may stay stopped (SIGSTOP, Ctrl-Z) before it counts as
/// stalled.
pub const STOPPED_STALL: Duration = Duration::from_millis(250);
/// The longest wait for the lock, however busy it is.
pub const LOCK_CAP: Duration = Duration::from_secs(30);
/// How often a waiter looks at the lock (the two cheap looks) while it
/// does not seem to move...
const POLL: Duration = Duration::from_millis(50);
/// ...and after a look that saw it move: in a long line, the lock moves all
/// the time, and every wake-up costs the waiter CPU time.
const POLL_MOVING: Duration = Duration::from_millis(200);
/// How long the lock may seem not to move before a waiter asks
/// `/proc/locks` who holds it.
const LOOK_AFTER: Duration = Duration::from_millis(100);
/// While the lock still seems not to move, how often `/proc/locks` is read
/// again (a holder that does not mark the lock, from an earlier version of
/// retry or another program, shows its moves only there).
const LOOK_AGAIN: Duration = Duration::from_millis(500);

/// The work a caller waits for, and where its answer goes.
struct Job {
    work: Work,
    tx: tokio::sync::oneshot::Sender<anyhow::Result<Done>>,
}

#[derive(Default)]
struct Slot {
    job: Option<Job>,
    /// The thread has held the lock and let it go: it takes no more work.
    closed: bool,
}

/// A thread in line for one group's lock.
pub struct Line {
    slot: Arc<Mutex<Slot>>,
    pub id: LockId,
}

/// Takes the caller's work back when it stops waiting (it gave up, or a
/// signal or the deadline cancelled it), so that the thread does not do it
/// later for no one. Work the thread already took is done, as if the
/// caller had waited.
struct Withdraw<'a>(&'a Line);

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        self.0.lock().job = None;
    }
}

impl Line {
    /// Starts a thread that waits for `file`'s lock, then does the work in
    /// its slot, if any, before letting the lock go. `apply` is what the
    /// holder of the lock does.
    pub fn start(
        file: File,
        id: LockId,
        dir: Arc<Dir>,
        group: String,
        apply: fn(&Dir, &str, Work) -> anyhow::Result<Done>,
    ) -> anyhow::Result<Line> {
        let slot = Arc::new(Mutex::new(Slot::default()));
        let theirs = Arc::clone(&slot);
        std::thread::Builder::new()
            .name("state-lock".into())
            .spawn(move || {
                let locked = file.lock();
                if locked.is_ok() {
                    taken(&file);
                }
                let job = {
                    let mut s = theirs.lock().unwrap_or_else(PoisonError::into_inner);
                    s.closed = true;
                    s.job.take()
                };
                if let Some(job) = job {
                    let done = match locked {
                        Ok(()) => apply(&dir, &group, job.work),
                        Err(e) => Err(anyhow!("cannot lock: {e}")),
                    };
                    let _ = job.tx.send(done);
                }
                drop(file);
            })
            .map_err(|e| anyhow!("cannot start a thread to wait for the lock: {e}"))?;
        Ok(Line { slot, id })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Slot> {
        self.slot.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the thread still waits (and takes work).
    pub fn open(&self) -> bool {
        !self.lock().closed
    }

    /// Hands `work` to the thread and waits for it to be done, watching the
    /// lock: see [`Watch`]. None when the thread no longer takes work.
    pub async fn wait(&self, work: Work, watch: Watch<'_>) -> Option<anyhow::Result<Done>> {
        let (tx, mut rx) = tokio::sync::oneshot::channel();
        {
            let mut s = self.lock();
            if s.closed {
                return None;
            }
            s.job = Some(Job { work, tx });
        }
        let _withdraw = Withdraw(self);
        let start = tokio::time::Instant::now();
        let me = std::process::id() as i32;
        let mut mark = watch.mark();
        let mut moved = start;
        // The holder as `/proc/locks` last showed it, and when it was read.
        let mut holder: Option<i32> = None;
        let mut looked: Option<tokio::time::Instant> = None;
        let mut stopped_since = None;
        let mut poll = POLL;
        loop {
            tokio::select! {
                r = &mut rx => {
                    return Some(match r {
                        Ok(done) => done,
                        Err(_) => Err(anyhow!("the thread waiting for {} ended", watch.lock_path)),
                    });
                }
                () = tokio::time::sleep(poll) => {}
            }
            let now = tokio::time::Instant::now();
            let m = watch.mark();
            poll = POLL;
            if m != mark {
                // The lock moved: whoever held it before does not matter.
                mark = m;
                moved = now;
                holder = None;
                looked = None;
                stopped_since = None;
                poll = POLL_MOVING;
            } else if now - moved >= LOOK_AFTER && looked.is_none_or(|t| now - t >= LOOK_AGAIN) {
                let seen = who_has_lock(self.id).holder;
                if holder.is_some() && seen != holder {
                    moved = now;
                    stopped_since = None;
                }
                holder = seen;
                looked = Some(now);
            }
            if let Some(pid) = holder.filter(|p| *p != me) {
                if is_stopped(pid) {
                    let since = *stopped_since.get_or_insert(now);
                    if now - since >= STOPPED_STALL {
                        return Some(Err(stalled(watch.lock_path, Some(pid), true)));
                    }
                } else {
                    stopped_since = None;
                }
            }
            if now - moved >= LOCK_STALL {
                return Some(Err(stalled(watch.lock_path, holder, false)));
            }
            if now - start >= LOCK_CAP {
                return Some(Err(anyhow!(
                    "{} was too busy: no turn within {}s",
                    watch.lock_path,
                    LOCK_CAP.as_secs()
                )));
            }
        }
    }
}

/// The error of a stalled holder; [`Stalled`] tells the store which one.
fn stalled(lock_path: &str, holder: Option<i32>, stopped: bool) -> anyhow::Error {
    let who = match holder {
        Some(pid) => format!("process {pid}"),
        None => "another process".to_string(),
    };
    let how = if stopped {
        "which is stopped".to_string()
    } else {
        format!("which has kept it for {}s", LOCK_STALL.as_secs())
    };
    anyhow::Error::new(Stalled {
        holder,
        message: format!("{lock_path} is held by {who}, {how}"),
    })
}

/// A holder found stalled: while it still holds the lock, later calls give
/// up at once instead of waiting again.
#[derive(Debug, Clone)]
pub struct Stalled {
    pub holder: Option<i32>,
    message: String,
}

impl std::fmt::Display for Stalled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Stalled {}

/// Where a waiter looks to see the lock move: the lock file, whose
/// modification time each holder marks, and the group's state file, which
/// changes whenever a holder changes the state.
#[derive(Clone, Copy)]
pub struct Watch<'a> {
    pub dir: &'a Dir,
    pub lock_name: &'a std::ffi::OsStr,
    pub state_name: &'a std::ffi::OsStr,
    pub lock_path: &'a str,
}

/// A file's identity and times of change, as far as they show a move.
type FileMark = Option<(u64, i64, i64, i64, i64)>;

impl Watch<'_> {
    /// The cheap look: two `fstatat`, whatever the length of the line.
    fn mark(&self) -> (FileMark, FileMark) {
        let of = |name| {
            self.dir.stat_at(name).ok().flatten().map(|s| {
                (
                    s.st_ino,
                    s.st_mtime,
                    s.st_mtime_nsec,
                    s.st_ctime,
                    s.st_ctime_nsec,
                )
            })
        };
        (of(self.lock_name), of(self.state_name))
    }
}

/// Marks the lock `file` as just taken (its modification time, now), for
/// those in line to see the lock move without reading `/proc/locks`. The
/// file's content is never written; a failure (a read-only file system)
/// only costs those in line a look at `/proc/locks`.
pub fn taken(file: &File) {
    use nix::sys::time::TimeSpec;
    let _ = nix::sys::stat::futimens(file, &TimeSpec::UTIME_OMIT, &TimeSpec::UTIME_NOW);
}

/// Gives up at once when the holder found stalled before still holds the lock.
pub fn still_stalled(id: LockId, stalled: Option<i32>) -> anyhow::Result<()> {
    if let Some(pid) = stalled
        && who_has_lock(id).holder == Some(pid)
    {
        bail!("the lock is still held by process {pid}, found stalled before");
    }
    Ok(())
}
