//! Shared state across invocations: pacing, retry budget and circuit breaker
//! for a named group, kept in a local directory or in Redis.
//!
//! `rules` is pure (the GCRA schedule, the budget count, the breaker's states);
//! the stores carry out one [`rules::Op`] at a time atomically, each on its own
//! clock; `session` is what the retry loop talks to: it bounds every call,
//! gives way to signals and the deadline, and fails open when the store is
//! unreachable, unless told that the store is required.

use std::future::Future;
use std::path::{Path, PathBuf};

pub mod local;
#[cfg(feature = "redis")]
pub mod redis;
pub mod rules;
mod session;
mod show;

pub use session::{CALL_LIMIT, Features, Gate, Next, STORE_SHARE, Session, Stop};
pub use show::show;

use rules::{GroupState, Micros, Op, Reply};

/// Where the state lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreAt {
    /// The default directory, found when the store is opened (see [`default_dir`]).
    Default,
    Dir(PathBuf),
    /// A `redis://`, `rediss://` or `unix://` URL.
    Url(String),
}

impl StoreAt {
    /// For messages: the directory, or the URL with its credentials masked.
    pub fn shown(&self) -> String {
        match self {
            StoreAt::Default => "the default directory".to_string(),
            StoreAt::Dir(d) => d.display().to_string(),
            StoreAt::Url(u) => crate::mask::url(u),
        }
    }

    /// The default directory found, or why there is none.
    pub fn resolve(&self) -> Result<StoreAt, String> {
        match self {
            StoreAt::Default => default_dir().map(StoreAt::Dir),
            other => Ok(other.clone()),
        }
    }
}

/// A store, or a file in it, refused as unsafe to use (another user's, or
/// writable by others, or a planted link): a failure that trying again
/// would not mend.
#[derive(Debug)]
pub struct NotUsed(pub String);

impl std::fmt::Display for NotUsed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NotUsed {}

/// A place that applies an [`Op`] to a group's state atomically. Cancelling
/// the future at an await point leaves the state whole.
pub trait Store {
    /// Make sure the store can be used for `group` (create the directory,
    /// connect) and can take a change (lock, room to write, a writable
    /// server), so that a store that cannot be used is known before the
    /// command first runs.
    fn open(&mut self, group: &str) -> impl Future<Output = anyhow::Result<()>>;
    fn apply(&mut self, group: &str, op: Op) -> impl Future<Output = anyhow::Result<Reply>>;
    /// What is stored for `group`, and the store's clock; None when nothing
    /// is. Changes and creates nothing.
    fn show(
        &mut self,
        group: &str,
    ) -> impl Future<Output = anyhow::Result<(Micros, Option<GroupState>)>>;
    /// A problem the store recovered from (a corrupt file it reset), to log once.
    fn take_warning(&mut self) -> Option<String> {
        None
    }
    /// The calls that follow must be over by `until` (the session ends
    /// them then): a store that waits out a failover stops trying again in
    /// time to say why it failed.
    fn bound(&mut self, _until: Option<std::time::Instant>) {}
    /// While the store cannot be used: how many runs share the group's
    /// pace, as far as the store can tell (at least 1). The local store
    /// counts those in line for the group's lock; Redis, the slots booked
    /// ahead of the last one it granted.
    fn waiting(&mut self, _group: &str) -> u32 {
        1
    }
    /// After a failure: whether what made the store fail is known to be
    /// gone (a stalled lock holder that let go), so that it is worth
    /// trying again at once.
    fn mended(&mut self, _group: &str) -> bool {
        false
    }
}

/// The store an invocation uses.
pub enum AnyStore {
    Local(local::LocalStore),
    #[cfg(feature = "redis")]
    Redis(Box<redis::RedisStore>),
}

impl AnyStore {
    /// The store at `at` (the default directory already found), with the
    /// Redis password from `password_file` and the trusted CA certificates
    /// from `cacert` if given.
    pub fn new(
        at: &StoreAt,
        password_file: Option<&Path>,
        cacert: Option<&Path>,
    ) -> anyhow::Result<AnyStore> {
        match at.resolve().map_err(anyhow::Error::msg)? {
            StoreAt::Dir(d) => Ok(AnyStore::Local(local::LocalStore::new(d))),
            #[cfg(feature = "redis")]
            StoreAt::Url(u) => Ok(AnyStore::Redis(Box::new(redis::RedisStore::new(
                &u,
                password_file,
                cacert,
            )?))),
            #[cfg(not(feature = "redis"))]
            StoreAt::Url(_) => {
                let _ = (password_file, cacert);
                anyhow::bail!("this retry was built without Redis support")
            }
            StoreAt::Default => anyhow::bail!("no directory for shared state"),
        }
    }
}

impl Store for AnyStore {
    async fn open(&mut self, group: &str) -> anyhow::Result<()> {
        match self {
            AnyStore::Local(s) => s.open(group).await,
            #[cfg(feature = "redis")]
            AnyStore::Redis(s) => s.open(group).await,
        }
    }

    async fn apply(&mut self, group: &str, op: Op) -> anyhow::Result<Reply> {
        match self {
            AnyStore::Local(s) => s.apply(group, op).await,
            #[cfg(feature = "redis")]
            AnyStore::Redis(s) => s.apply(group, op).await,
        }
    }

    async fn show(&mut self, group: &str) -> anyhow::Result<(Micros, Option<GroupState>)> {
        match self {
            AnyStore::Local(s) => s.show(group).await,
            #[cfg(feature = "redis")]
            AnyStore::Redis(s) => s.show(group).await,
        }
    }

    fn take_warning(&mut self) -> Option<String> {
        match self {
            AnyStore::Local(s) => s.take_warning(),
            #[cfg(feature = "redis")]
            AnyStore::Redis(s) => s.take_warning(),
        }
    }

    fn bound(&mut self, until: Option<std::time::Instant>) {
        match self {
            AnyStore::Local(s) => s.bound(until),
            #[cfg(feature = "redis")]
            AnyStore::Redis(s) => s.bound(until),
        }
    }

    fn waiting(&mut self, group: &str) -> u32 {
        match self {
            AnyStore::Local(s) => s.waiting(group),
            #[cfg(feature = "redis")]
            AnyStore::Redis(s) => s.waiting(group),
        }
    }

    fn mended(&mut self, group: &str) -> bool {
        match self {
            AnyStore::Local(s) => s.mended(group),
            #[cfg(feature = "redis")]
            AnyStore::Redis(s) => s.mended(group),
        }
    }
}

/// The default directory: `$XDG_STATE_HOME/retry`, else
/// `~/.local/state/retry`. With `HOME` unset or empty (a system service,
/// `env -i`, some cron set-ups), the home directory comes from the password
/// database, and must exist: retry does not create a home directory.
pub fn default_dir() -> Result<PathBuf, String> {
    let absolute = |v: std::ffi::OsString| {
        let p = PathBuf::from(v);
        p.is_absolute().then_some(p)
    };
    if let Some(xdg) = std::env::var_os("XDG_STATE_HOME").and_then(absolute) {
        return Ok(xdg.join("retry"));
    }
    let home = match std::env::var_os("HOME").and_then(absolute) {
        Some(h) => h,
        None => {
            let uid = nix::unistd::Uid::effective();
            let home = match nix::unistd::User::from_uid(uid) {
                Ok(Some(u)) => u.dir,
                _ => {
                    return Err(format!(
                        "HOME is unset and the password database has no user {uid}"
                    ));
                }
            };
            if !home.is_absolute() || !home.is_dir() {
                return Err(format!(
                    "HOME is unset and {}, the home directory of user {uid} in the password database, does not exist",
                    home.display()
                ));
            }
            home
        }
    };
    Ok(home.join(".local").join("state").join("retry"))
}

/// What COMMAND receives as `RETRY_STATE`, when it must differ from what
/// retry was given: the URL without its password, so that the password
/// never reaches the command's environment. Nested invocations that need
/// the password find it through `RETRY_STATE_PASSWORD_FILE`, which names a
/// file rather than holding a secret.
pub fn child_state_var() -> Option<String> {
    let v = std::env::var("RETRY_STATE").ok()?;
    crate::mask::url_without_password(&v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_urls_are_shown_masked() {
        assert_eq!(
            StoreAt::Url("redis://user:hunter2@db.example:6379/2".into()).shown(),
            "redis://user:***@db.example:6379/2"
        );
        assert_eq!(
            StoreAt::Url("unix:///run/redis.sock?pass=hunter2".into()).shown(),
            "unix:///run/redis.sock?pass=***"
        );
        assert_eq!(
            StoreAt::Url("unix:///run/redis.sock".into()).shown(),
            "unix:///run/redis.sock"
        );
    }
}
