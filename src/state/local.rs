//! The local store: one small JSON file per group in a private directory.
//!
//! Each operation takes an exclusive lock on the group's `GROUP.lock`, reads
//! `GROUP.json`, applies the rule, and writes the new state to a temporary
//! file that replaces the old one by rename, so a reader never sees half a
//! file and hundreds of concurrent invocations lose no update.
//!
//! Nothing here trusts the file system: the directory is opened once and
//! everything else is done relative to it (`openat`, `renameat`), never
//! through a symbolic link; temporary files are unnamed or uniquely named
//! (`crate::fsutil`); the lock file is only ever locked (and its time of
//! change marked, for those in line), never written. A directory or file that is not the caller's own, or that others may
//! write, is refused, as ssh refuses loose permissions. Files are 0600 in a
//! 0700 directory. A file that does not parse is reported once and started
//! afresh.
//!
//! A process that holds the lock and does not let it go (stopped, stuck)
//! costs a bounded wait (see `line.rs`); a signal or the deadline can end
//! the wait at any time, and while that holder keeps the lock, later calls
//! give up at once.

use std::ffi::OsString;
use std::fs::{File, TryLockError};
use std::io::Write;
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, anyhow, bail};
use nix::errno::Errno;
use nix::fcntl::OFlag;

use super::rules::{self, GroupState, Micros, Op, Reply};
use super::{NotUsed, Store};
use crate::fsutil::{Dir, Durability, PrivateDirError, Rule, judge_private_file};
use crate::sys::LockId;

mod line;

pub use line::{LOCK_CAP, LOCK_STALL, STOPPED_STALL};
use line::{Line, Stalled, Watch};

/// What the holder of a group's lock does.
#[derive(Debug, Clone, Copy)]
pub enum Work {
    Apply(Op),
    /// Take the lock, read the state and look for room to write: that the
    /// store can be used at all.
    Probe,
}

/// The answer to [`Work`] and a warning about a corrupt file.
type Done = (Option<Reply>, Option<String>);

/// A group's lock as this process sees it.
#[derive(Default)]
struct GroupLock {
    line: Option<Line>,
    id: Option<LockId>,
    /// A holder found stalled, while it may still hold the lock.
    stalled: Option<i32>,
}

pub struct LocalStore {
    path: PathBuf,
    dir: Option<Arc<Dir>>,
    warning: Option<String>,
    locks: Vec<(String, GroupLock)>,
}

impl LocalStore {
    pub fn new(path: PathBuf) -> LocalStore {
        LocalStore {
            path,
            dir: None,
            warning: None,
            locks: Vec::new(),
        }
    }

    /// The directory, opened (and created 0700) on first use and checked.
    fn dir(&mut self) -> anyhow::Result<Arc<Dir>> {
        if let Some(d) = &self.dir {
            return Ok(Arc::clone(d));
        }
        let dir = Dir::create_private(&self.path).map_err(|e| match e {
            PrivateDirError::Untrusted(u) => not_used(format!("{u}")),
            PrivateDirError::Io(e) => anyhow!("cannot create {}: {e}", self.path.display()),
        })?;
        let dir = Arc::new(dir);
        self.dir = Some(Arc::clone(&dir));
        Ok(dir)
    }

    fn group_lock(&mut self, group: &str) -> &mut GroupLock {
        let i = match self.locks.iter().position(|(g, _)| g == group) {
            Some(i) => i,
            None => {
                self.locks.push((group.to_string(), GroupLock::default()));
                self.locks.len() - 1
            }
        };
        &mut self.locks[i].1
    }

    /// Does `work` under the group's lock. Uncontended, at once; otherwise
    /// through the thread in line (see `line.rs`).
    async fn locked(&mut self, group: &str, work: Work) -> anyhow::Result<Done> {
        let dir = self.dir()?;
        let lock_name = OsString::from(format!("{group}.lock"));
        let state_name = OsString::from(format!("{group}.json"));
        let lock_path = dir.path().join(&lock_name).display().to_string();
        let watch = Watch {
            dir: &dir,
            lock_name: &lock_name,
            state_name: &state_name,
            lock_path: &lock_path,
        };
        // A thread of this process already in line takes the work.
        let gl = self.group_lock(group);
        if let Some(line) = gl.line.as_ref().filter(|l| l.open()) {
            line::still_stalled(line.id, gl.stalled).with_context(|| lock_path.clone())?;
            if let Some(done) = line.wait(work, watch).await {
                return self.waited(group, done);
            }
        }
        let file = open_lock(&dir, &lock_name).with_context(|| lock_path.clone())?;
        match file.try_lock() {
            Ok(()) => {
                line::taken(&file);
                return apply(&dir, group, work);
            }
            Err(TryLockError::Error(e)) => {
                return Err(e).with_context(|| format!("cannot lock {lock_path}"));
            }
            Err(TryLockError::WouldBlock) => {}
        }
        let stat = nix::sys::stat::fstat(file.as_fd())
            .map_err(|e| anyhow!("cannot examine {lock_path}: {e}"))?;
        let id = LockId::of(&stat);
        let line = Line::start(file, id, Arc::clone(&dir), group.to_string(), apply)?;
        let gl = self.group_lock(group);
        gl.id = Some(id);
        let line = &*gl.line.insert(line);
        line::still_stalled(id, gl.stalled).with_context(|| lock_path.clone())?;
        match line.wait(work, watch).await {
            Some(done) => self.waited(group, done),
            // The lock was let go the moment the thread took it: once more.
            None => {
                let file = open_lock(&dir, &lock_name).with_context(|| lock_path.clone())?;
                file.lock()
                    .with_context(|| format!("cannot lock {lock_path}"))?;
                line::taken(&file);
                apply(&dir, group, work)
            }
        }
    }

    /// Remembers a stalled holder, or forgets one that is gone.
    fn waited(&mut self, group: &str, done: anyhow::Result<Done>) -> anyhow::Result<Done> {
        let gl = self.group_lock(group);
        match &done {
            Ok(_) => gl.stalled = None,
            Err(e) => {
                if let Some(s) = e.downcast_ref::<Stalled>() {
                    gl.stalled = s.holder;
                }
            }
        }
        done
    }
}

/// Opens (or creates, 0600) a group's lock file, never through a link, and
/// checks that it is the caller's own.
fn open_lock(dir: &Dir, name: &OsString) -> anyhow::Result<File> {
    let file = dir
        .open_at(name, OFlag::O_RDONLY | OFlag::O_CREAT, 0o600)
        .map_err(|e| refused(e, "cannot open it"))?;
    let stat = nix::sys::stat::fstat(file.as_fd()).map_err(|e| anyhow!("cannot examine: {e}"))?;
    judge_private_file(&stat).map_err(not_used)?;
    Ok(file)
}

/// An error opening a store file, a planted link named as such.
fn refused(e: std::io::Error, what: &str) -> anyhow::Error {
    if e.raw_os_error() == Some(Errno::ELOOP as i32) {
        anyhow::Error::new(NotUsed("is a symbolic link: not followed".into()))
    } else {
        anyhow!("{what}: {e}")
    }
}

/// A directory or file refused as unsafe: see [`NotUsed`].
fn not_used(why: String) -> anyhow::Error {
    anyhow::Error::new(NotUsed(format!("{why}: not used")))
}

/// What the holder of the group's lock does: one read-modify-write, or the probe.
fn apply(dir: &Dir, group: &str, work: Work) -> anyhow::Result<Done> {
    let name = OsString::from(format!("{group}.json"));
    let (mut state, warning) = read(dir, &name)?;
    let reply = match work {
        // A corrupt file, reported, is started afresh at once, so that it
        // is reported once.
        Work::Probe if warning.is_some() => {
            write(dir, &name, &state)?;
            None
        }
        // Room to write, judged without writing: a full disk or a
        // read-only file system is known before the command runs.
        Work::Probe => {
            dir.check_room()
                .with_context(|| format!("cannot write in {}", dir.path().display()))?;
            None
        }
        Work::Apply(op) => {
            let before = state;
            let reply = rules::apply(&mut state, now(), op);
            if state != before || warning.is_some() {
                write(dir, &name, &state)?;
            }
            Some(reply)
        }
    };
    Ok((reply, warning))
}

/// The group's state file: its state, or None when there is none. A file
/// that does not parse is reported; the caller decides what to do.
fn read_file(dir: &Dir, name: &OsString) -> anyhow::Result<Option<Result<GroupState, String>>> {
    let path = dir.path().join(name);
    let (bytes, stat) = match dir.read_at(name) {
        Ok(Some(found)) => found,
        Ok(None) => return Ok(None),
        Err(e) => {
            return Err(refused(e, "cannot read it")).with_context(|| path.display().to_string());
        }
    };
    judge_private_file(&stat).map_err(|why| not_used(format!("{} {why}", path.display())))?;
    Ok(Some(serde_json::from_slice(&bytes).map_err(|e| {
        format!("state file {} is corrupt ({e})", path.display())
    })))
}

fn read(dir: &Dir, name: &OsString) -> anyhow::Result<(GroupState, Option<String>)> {
    Ok(match read_file(dir, name)? {
        None => (GroupState::default(), None),
        Some(Ok(s)) => (s, None),
        Some(Err(why)) => (
            GroupState::default(),
            Some(format!("{why}: starting it afresh")),
        ),
    })
}

fn write(dir: &Dir, name: &OsString, state: &GroupState) -> anyhow::Result<()> {
    let path = dir.path().join(name);
    let data = serde_json::to_vec(state).context("cannot encode the state")?;
    let mut tmp = dir
        .temp_file(name, 0o600)
        .with_context(|| format!("cannot write {}", path.display()))?;
    tmp.file_mut()
        .write_all(&data)
        .with_context(|| format!("cannot write {}", path.display()))?;
    // No fsync: a group's state lost in a crash of the machine is harmless.
    tmp.persist(name, Durability::Fast)
        .with_context(|| format!("cannot replace {}", path.display()))
}

/// The wall clock in microseconds: the one clock every local invocation shares.
fn now() -> Micros {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

impl Store for LocalStore {
    async fn open(&mut self, group: &str) -> anyhow::Result<()> {
        let (_, warning) = self.locked(group, Work::Probe).await?;
        if warning.is_some() {
            self.warning = warning;
        }
        Ok(())
    }

    async fn apply(&mut self, group: &str, op: Op) -> anyhow::Result<Reply> {
        let (reply, warning) = self.locked(group, Work::Apply(op)).await?;
        if warning.is_some() {
            self.warning = warning;
        }
        reply.context("no answer")
    }

    /// Read only, without the lock (the file is replaced whole, by rename)
    /// and without creating anything.
    async fn show(&mut self, group: &str) -> anyhow::Result<(Micros, Option<GroupState>)> {
        let dir = match Dir::open(&self.path) {
            Ok(d) => d,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((now(), None)),
            Err(e) => bail!("cannot open {}: {e}", self.path.display()),
        };
        dir.check(Rule::Private)
            .map_err(|u| anyhow!("{u}: not used"))?;
        let name = OsString::from(format!("{group}.json"));
        match read_file(&dir, &name)? {
            None => Ok((now(), None)),
            Some(Ok(state)) => Ok((now(), Some(state))),
            Some(Err(why)) => bail!("{why}"),
        }
    }

    fn take_warning(&mut self) -> Option<String> {
        self.warning.take()
    }

    fn waiting(&mut self, group: &str) -> u32 {
        self.group_lock(group)
            .id
            .map_or(1, |id| crate::sys::who_has_lock(id).waiting.max(1))
    }

    fn mended(&mut self, group: &str) -> bool {
        let gl = self.group_lock(group);
        match (gl.id, gl.stalled) {
            (Some(id), Some(pid)) => crate::sys::who_has_lock(id).holder != Some(pid),
            _ => false,
        }
    }
}
