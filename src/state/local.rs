//! The local store: one small JSON file per group in a private directory.
//!
//! Each operation takes an exclusive lock on the group's `.lock` file, reads
//! the state, applies the rule, writes a temporary file and renames it over
//! the old one, so a reader never sees half a file and hundreds of concurrent
//! invocations lose no update. A process that holds the lock forever
//! (stopped, stuck) costs a bounded wait, and a signal or the deadline can
//! end the wait at any time.
//! Files are 0600 in a 0700 directory. A file that does not parse is reported
//! once and started afresh.

use std::fs::{DirBuilder, File, OpenOptions, TryLockError};
use std::io::{ErrorKind, Write};
use std::os::unix::fs::{DirBuilderExt, FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, bail};

use super::Store;
use super::rules::{self, GroupState, Micros, Op, Reply};

/// How long the lock may stay with one holder before this store gives up
/// (and the run goes on without shared state): a holder that is stopped or
/// stuck. While the lock keeps changing hands, waiting goes on.
pub const LOCK_STALL: Duration = Duration::from_secs(3);
/// The longest wait for the lock, however busy it is.
pub const LOCK_CAP: Duration = Duration::from_secs(30);
/// How often a waiter looks for the lock changing hands.
const PROGRESS_POLL: Duration = Duration::from_millis(50);

pub struct LocalStore {
    dir: PathBuf,
    warning: Option<String>,
}

impl LocalStore {
    pub fn new(dir: PathBuf) -> LocalStore {
        LocalStore { dir, warning: None }
    }
}

/// Sets the flag when dropped: the caller stopped waiting (gave up, or was
/// cancelled by a signal or the deadline).
struct Abandon(Arc<AtomicBool>);

impl Drop for Abandon {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// One locked read-modify-write: the group's lock is held from here to the
/// end of the function. Returns the reply and a warning about a corrupt file.
fn locked_apply(
    lock: &File,
    dir: &Path,
    group: &str,
    op: Op,
) -> anyhow::Result<(Reply, Option<String>)> {
    // A mark that the lock changed hands, for those waiting in line.
    let _ = lock.write_at(&now().to_le_bytes(), 0);
    let (mut state, warning) = read(dir, group)?;
    let before = state;
    let reply = rules::apply(&mut state, now(), op);
    if state != before || warning.is_some() {
        write(dir, group, &state)?;
    }
    Ok((reply, warning))
}

fn read(dir: &Path, group: &str) -> anyhow::Result<(GroupState, Option<String>)> {
    let path = dir.join(format!("{group}.json"));
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok((GroupState::default(), None)),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    Ok(match serde_json::from_slice(&bytes) {
        Ok(s) => (s, None),
        Err(e) => (
            GroupState::default(),
            Some(format!(
                "state file {} is corrupt ({e}): starting it afresh",
                path.display()
            )),
        ),
    })
}

fn write(dir: &Path, group: &str, state: &GroupState) -> anyhow::Result<()> {
    let path = dir.join(format!("{group}.json"));
    // Only the lock holder writes, so one fixed temporary name is enough.
    let tmp = dir.join(format!("{group}.json.tmp"));
    let data = serde_json::to_vec(state).context("cannot encode the state")?;
    let mut f = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .mode(0o600)
        .open(&tmp)
        .with_context(|| format!("cannot create {}", tmp.display()))?;
    f.write_all(&data)
        .with_context(|| format!("cannot write {}", tmp.display()))?;
    drop(f);
    std::fs::rename(&tmp, &path).with_context(|| format!("cannot replace {}", path.display()))
}

/// Wait for the thread that waits for the lock. Give up when the lock has
/// not changed hands for [`LOCK_STALL`] (its holder is stuck) or after
/// [`LOCK_CAP`] in all.
async fn wait_in_line(
    path: &Path,
    mut rx: tokio::sync::oneshot::Receiver<anyhow::Result<(Reply, Option<String>)>>,
) -> anyhow::Result<(Reply, Option<String>)> {
    let start = tokio::time::Instant::now();
    let mark = || std::fs::read(path).ok();
    let mut last = mark();
    let mut moved = start;
    loop {
        tokio::select! {
            r = &mut rx => {
                return match r {
                    Ok(result) => result.with_context(|| path.display().to_string()),
                    Err(_) => bail!("the thread waiting for {} ended", path.display()),
                };
            }
            () = tokio::time::sleep(PROGRESS_POLL) => {}
        }
        let now = tokio::time::Instant::now();
        let seen = mark();
        if seen != last {
            last = seen;
            moved = now;
        }
        if now - moved >= LOCK_STALL {
            bail!(
                "{} stayed locked by another process for {}s",
                path.display(),
                LOCK_STALL.as_secs()
            );
        }
        if now - start >= LOCK_CAP {
            bail!(
                "{} was too busy: no turn within {}s",
                path.display(),
                LOCK_CAP.as_secs()
            );
        }
    }
}

/// The wall clock in microseconds: the one clock every local invocation shares.
fn now() -> Micros {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

impl Store for LocalStore {
    async fn open(&mut self) -> anyhow::Result<()> {
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)
            .with_context(|| format!("cannot create {}", self.dir.display()))
    }

    /// Uncontended, the lock is taken and the update made at once. Otherwise
    /// a thread of its own waits in the kernel's queue for the lock (fair, no
    /// polling) and makes the update as soon as it holds it, so the lock is
    /// never held across a hand-over between threads; this future waits for
    /// that thread (see [`wait_in_line`]). The thread is never joined: once
    /// the caller has stopped waiting, a lock it still gets is released
    /// untouched, and a thread still blocked cannot keep the process alive
    /// after retry has decided to exit.
    async fn apply(&mut self, group: &str, op: Op) -> anyhow::Result<Reply> {
        let path = self.dir.join(format!("{group}.lock"));
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(&path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        let (reply, warning) = match file.try_lock() {
            Ok(()) => locked_apply(&file, &self.dir, group, op)?,
            Err(TryLockError::Error(e)) => {
                return Err(e).with_context(|| format!("cannot lock {}", path.display()));
            }
            Err(TryLockError::WouldBlock) => {
                let abandoned = Arc::new(AtomicBool::new(false));
                let _guard = Abandon(Arc::clone(&abandoned));
                let (tx, rx) = tokio::sync::oneshot::channel();
                let (dir, group_owned) = (self.dir.clone(), group.to_string());
                std::thread::Builder::new()
                    .name("state-lock".into())
                    .spawn(move || {
                        let result = file.lock().context("cannot lock").and_then(|()| {
                            if abandoned.load(Ordering::SeqCst) {
                                anyhow::bail!("abandoned");
                            }
                            locked_apply(&file, &dir, &group_owned, op)
                        });
                        drop(file);
                        let _ = tx.send(result);
                    })
                    .context("cannot start a thread to wait for the lock")?;
                wait_in_line(&path, rx).await?
            }
        };
        if warning.is_some() {
            self.warning = warning;
        }
        Ok(reply)
    }

    fn take_warning(&mut self) -> Option<String> {
        self.warning.take()
    }
}
