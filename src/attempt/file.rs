//! File probes (`--file PATH`, repeatable): wait until every path exists,
//! as a container waits for the token another one writes.
//!
//! Each attempt looks at the paths not yet there (stat, following links);
//! a path found ready is not looked at again. Not there yet, empty with
//! `--non-empty`, or not a directory with `--directory`: retried. A path
//! retry may not look at (a directory on the way it cannot search) is
//! permanent: waiting does not grant the permission.
//!
//! Each look runs on a thread of its own: a stat on a mount whose server
//! is gone blocks in the kernel, and only the attempt's bound (`--timeout`,
//! `--max-time`) and signals may end retry's wait for it. A look still
//! under way when an attempt ends is waited for again by the next one, never
//! started twice, so a mount that stays silent costs one thread.

use std::ffi::OsString;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use tokio::sync::oneshot;

use super::{Attempt, Context, Details};
use crate::bound::{Bounded, within};
use crate::classify::{Limit, NetFailure, PathState, Status};
use crate::human::io_error;
use crate::signals::Signals;

/// What a path must be to count as ready.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Wanted {
    /// `--non-empty`: a file of at least one byte (or a directory).
    pub non_empty: bool,
    /// `--directory`: a directory.
    pub directory: bool,
}

/// File mode's options, as validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileOptions {
    pub paths: Vec<PathBuf>,
    pub wanted: Wanted,
}

impl FileOptions {
    /// How the log and the dry run show the probe: `file:/run/token`.
    pub fn display_words(&self) -> Vec<OsString> {
        self.paths
            .iter()
            .map(|p| OsString::from(format!("file:{}", p.display())))
            .collect()
    }
}

/// Looks at the paths, one attempt at a time.
pub struct FileAttempt {
    opts: FileOptions,
    /// Which paths were found ready, by index.
    ready: Vec<bool>,
    /// Looks under way, by index.
    looking: Vec<Option<Look>>,
    /// Whether a look that did not return was warned of.
    warned: bool,
    details: Details,
}

/// What one stat says, once it returns.
type Look = oneshot::Receiver<std::io::Result<std::fs::Metadata>>;

/// A stat of `path` on a thread of its own; with no thread to be had, here
/// and now.
fn start_look(path: &Path) -> Look {
    let (tx, rx) = oneshot::channel();
    let owned = path.to_path_buf();
    let spawned = std::thread::Builder::new()
        .name("look".into())
        .spawn(move || {
            let _ = tx.send(std::fs::metadata(owned));
        });
    if spawned.is_ok() {
        return rx;
    }
    let (tx, rx) = oneshot::channel();
    let _ = tx.send(std::fs::metadata(path));
    rx
}

impl FileAttempt {
    pub fn new(opts: FileOptions) -> FileAttempt {
        FileAttempt {
            ready: vec![false; opts.paths.len()],
            looking: opts.paths.iter().map(|_| None).collect(),
            warned: false,
            opts,
            details: Details::default(),
        }
    }
}

impl Attempt for FileAttempt {
    async fn run(&mut self, ctx: &Context, signals: &mut Signals) -> Status {
        self.details = Details::default();
        for (i, path) in self.opts.paths.iter().enumerate() {
            if !self.ready[i] && self.looking[i].is_none() {
                self.looking[i] = Some(start_look(path));
            }
        }
        let mut first: Option<Status> = None;
        for (i, path) in self.opts.paths.iter().enumerate() {
            let Some(pending) = self.looking[i].as_mut() else {
                continue;
            };
            let meta = match within(pending, ctx.deadline.map(|(at, _)| at), signals).await {
                Bounded::Done(meta) => {
                    self.looking[i] = None;
                    meta.unwrap_or_else(|_| Err(std::io::Error::other("the look was lost")))
                }
                Bounded::TimedOut => {
                    // A warning the first time: the attempt's failure line
                    // does not say which path hangs, nor why it may.
                    let said = format!(
                        "{}: the look has not returned (a mount whose server does not answer?)",
                        path.display()
                    );
                    if std::mem::replace(&mut self.warned, true) {
                        self.details.notes.push(said);
                    } else {
                        self.details.warnings.push(said);
                    }
                    // Timed out as a network probe is: a silent mount is
                    // a server that does not answer.
                    return Status::Net {
                        failure: NetFailure::TimedOut(
                            ctx.deadline.map_or(Limit::Attempt, |(_, l)| l),
                        ),
                        detail: format!("{}: no answer", path.display()),
                    };
                }
                Bounded::Interrupted(sig) => return Status::Interrupted(sig as i32),
            };
            let status = look(path, self.opts.wanted, meta);
            match status {
                Status::Path {
                    state: PathState::Ready,
                    ..
                } => {
                    self.ready[i] = true;
                    self.details.notes.push(status.to_string());
                }
                // The first path given that is not ready speaks for the
                // attempt; the others are noted.
                other if first.is_none() => first = Some(other),
                other => self.details.notes.push(other.to_string()),
            }
        }
        first.unwrap_or(Status::Path {
            state: PathState::Ready,
            detail: "every path is there".to_string(),
        })
    }

    fn details(&mut self) -> Details {
        std::mem::take(&mut self.details)
    }
}

/// What one stat of `path` says about it. Pure: the stat is passed in.
fn look(path: &Path, wanted: Wanted, meta: std::io::Result<std::fs::Metadata>) -> Status {
    let shown = path.display();
    let (state, detail) = match meta {
        Err(e) if e.kind() == ErrorKind::PermissionDenied => (
            PathState::Denied,
            format!("{shown}: {} (waiting does not grant it)", io_error(&e)),
        ),
        Err(e) => (PathState::NotYet, format!("{shown}: {}", io_error(&e))),
        Ok(m) if wanted.directory && !m.is_dir() => {
            (PathState::NotYet, format!("{shown} is not a directory yet"))
        }
        Ok(m) if wanted.non_empty && m.is_file() && m.len() == 0 => {
            (PathState::NotYet, format!("{shown} is empty"))
        }
        Ok(m) if m.is_dir() => (PathState::Ready, format!("{shown} is a directory")),
        Ok(m) => (
            PathState::Ready,
            format!("{shown} is there ({})", crate::human::human_size(m.len())),
        ),
    };
    Status::Path { state, detail }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(s: Status) -> PathState {
        match s {
            Status::Path { state, .. } => state,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_path_is_ready_as_asked() {
        let dir = tempfile::tempdir().expect("tempdir");
        let empty = dir.path().join("empty");
        std::fs::write(&empty, b"").expect("write");
        let full = dir.path().join("token");
        std::fs::write(&full, b"x").expect("write");
        let missing = dir.path().join("missing");
        let at = |p: &std::path::Path, w| state(look(p, w, std::fs::metadata(p)));
        let any = Wanted::default();
        let non_empty = Wanted {
            non_empty: true,
            ..any
        };
        let directory = Wanted {
            directory: true,
            ..any
        };
        assert_eq!(at(&missing, any), PathState::NotYet);
        assert_eq!(at(&empty, any), PathState::Ready);
        assert_eq!(at(&empty, non_empty), PathState::NotYet);
        assert_eq!(at(&full, non_empty), PathState::Ready);
        assert_eq!(at(&full, directory), PathState::NotYet);
        assert_eq!(at(dir.path(), directory), PathState::Ready);
        assert_eq!(at(dir.path(), non_empty), PathState::Ready);
        let denied = std::io::Error::from(ErrorKind::PermissionDenied);
        assert_eq!(state(look(&full, any, Err(denied))), PathState::Denied);
    }
}
