//! The local store: one small JSON file per group in a private directory.
//!
//! Each operation takes an exclusive lock on the group's `.lock` file, reads
//! the state, applies the rule, writes a temporary file and renames it over
//! the old one, so a reader never sees half a file and hundreds of concurrent
//! invocations lose no update. The lock is polled with `try_lock` between
//! short async sleeps: a process that holds it forever (stopped, stuck) costs
//! a bounded wait, and a signal or the deadline can end the wait at any time.
//! Files are 0600 in a 0700 directory. A file that does not parse is reported
//! once and started afresh.

use std::fs::{DirBuilder, File, OpenOptions, TryLockError};
use std::io::{ErrorKind, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, bail};

use super::Store;
use super::rules::{self, GroupState, Micros, Op, Reply};

/// The longest this store waits for another process's lock before it gives
/// up (and the run goes on without shared state).
pub const LOCK_WAIT: Duration = Duration::from_secs(2);

pub struct LocalStore {
    dir: PathBuf,
    warning: Option<String>,
}

impl LocalStore {
    pub fn new(dir: PathBuf) -> LocalStore {
        LocalStore { dir, warning: None }
    }

    /// Take the group's lock, polling so that waiting stays cancellable.
    async fn lock(&self, group: &str) -> anyhow::Result<File> {
        let path = self.dir.join(format!("{group}.lock"));
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(&path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        let start = Instant::now();
        let mut pause = Duration::from_micros(50);
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(file),
                Err(TryLockError::WouldBlock) => {}
                Err(TryLockError::Error(e)) => {
                    return Err(e).with_context(|| format!("cannot lock {}", path.display()));
                }
            }
            if start.elapsed() >= LOCK_WAIT {
                bail!(
                    "{} stayed locked by another process for {}s",
                    path.display(),
                    LOCK_WAIT.as_secs()
                );
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(4));
        }
    }

    fn read(&mut self, group: &str) -> anyhow::Result<GroupState> {
        let path = self.dir.join(format!("{group}.json"));
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(GroupState::default()),
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
        };
        match serde_json::from_slice(&bytes) {
            Ok(s) => Ok(s),
            Err(e) => {
                self.warning = Some(format!(
                    "state file {} is corrupt ({e}): starting it afresh",
                    path.display()
                ));
                Ok(GroupState::default())
            }
        }
    }

    fn write(&self, group: &str, state: &GroupState) -> anyhow::Result<()> {
        let path = self.dir.join(format!("{group}.json"));
        // Only the lock holder writes, so one fixed temporary name is enough.
        let tmp = self.dir.join(format!("{group}.json.tmp"));
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

    async fn apply(&mut self, group: &str, op: Op) -> anyhow::Result<Reply> {
        let _lock = self.lock(group).await?;
        let mut state = self.read(group)?;
        let before = state;
        let reply = rules::apply(&mut state, now(), op);
        if state != before || self.warning.is_some() {
            self.write(group, &state)?;
        }
        Ok(reply)
    }

    fn take_warning(&mut self) -> Option<String> {
        self.warning.take()
    }
}
