//! Shared state across invocations: pacing, retry budget and circuit breaker
//! for a named group, kept in a local directory or in Redis.
//!
//! `rules` is pure (the GCRA schedule, the budget count, the breaker's states);
//! the stores carry out one [`rules::Op`] at a time atomically, each on its own
//! clock; `session` is what the retry loop talks to: it bounds every call,
//! gives way to signals and the deadline, and fails open when the store is
//! unreachable, unless told that the store is required.

use std::future::Future;
use std::path::PathBuf;

pub mod local;
#[cfg(feature = "redis")]
pub mod redis;
pub mod rules;
mod session;

pub use session::{CALL_LIMIT, Features, Gate, Next, Session, Stop, show};

use rules::{Op, Reply};

/// Where the state lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreAt {
    Dir(PathBuf),
    /// A `redis://`, `rediss://` or `unix://` URL.
    Url(String),
}

impl StoreAt {
    /// For messages: the directory, or the URL with any password masked.
    pub fn shown(&self) -> String {
        match self {
            StoreAt::Dir(d) => d.display().to_string(),
            StoreAt::Url(u) => mask_url(u),
        }
    }
}

/// A URL with its password, if any, replaced by `***`.
pub fn mask_url(u: &str) -> String {
    match reqwest::Url::parse(u) {
        Ok(mut url) => {
            if url.password().is_some() {
                let _ = url.set_password(Some("***"));
            }
            url.to_string()
        }
        // Unparsable: keep the scheme only, in case what follows holds a secret.
        Err(_) => match u.split_once("://") {
            Some((scheme, _)) => format!("{scheme}://***"),
            None => "***".to_string(),
        },
    }
}

/// A place that applies an [`Op`] to a group's state atomically. Cancelling
/// the future at an await point leaves the state whole.
pub trait Store {
    /// Make sure the store can be used (create the directory, connect).
    fn open(&mut self) -> impl Future<Output = anyhow::Result<()>>;
    fn apply(&mut self, group: &str, op: Op) -> impl Future<Output = anyhow::Result<Reply>>;
    /// A problem the store recovered from (a corrupt file it reset), to log once.
    fn take_warning(&mut self) -> Option<String> {
        None
    }
}

/// The store an invocation uses.
pub enum AnyStore {
    Local(local::LocalStore),
    #[cfg(feature = "redis")]
    Redis(Box<redis::RedisStore>),
}

impl AnyStore {
    pub fn new(at: &StoreAt) -> anyhow::Result<AnyStore> {
        match at {
            StoreAt::Dir(d) => Ok(AnyStore::Local(local::LocalStore::new(d.clone()))),
            #[cfg(feature = "redis")]
            StoreAt::Url(u) => Ok(AnyStore::Redis(Box::new(redis::RedisStore::new(u)?))),
            #[cfg(not(feature = "redis"))]
            StoreAt::Url(_) => anyhow::bail!("this retry was built without Redis support"),
        }
    }
}

impl Store for AnyStore {
    async fn open(&mut self) -> anyhow::Result<()> {
        match self {
            AnyStore::Local(s) => s.open().await,
            #[cfg(feature = "redis")]
            AnyStore::Redis(s) => s.open().await,
        }
    }

    async fn apply(&mut self, group: &str, op: Op) -> anyhow::Result<Reply> {
        match self {
            AnyStore::Local(s) => s.apply(group, op).await,
            #[cfg(feature = "redis")]
            AnyStore::Redis(s) => s.apply(group, op).await,
        }
    }

    fn take_warning(&mut self) -> Option<String> {
        match self {
            AnyStore::Local(s) => s.take_warning(),
            #[cfg(feature = "redis")]
            AnyStore::Redis(s) => s.take_warning(),
        }
    }
}

/// The default directory: `$XDG_STATE_HOME/retry`, else `~/.local/state/retry`.
pub fn default_dir() -> Option<PathBuf> {
    let absolute = |v: std::ffi::OsString| {
        let p = PathBuf::from(v);
        p.is_absolute().then_some(p)
    };
    std::env::var_os("XDG_STATE_HOME")
        .and_then(absolute)
        .or_else(|| {
            std::env::var_os("HOME")
                .and_then(absolute)
                .map(|h| h.join(".local").join("state"))
        })
        .map(|d| d.join("retry"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_masked() {
        assert_eq!(
            mask_url("redis://user:hunter2@db.example:6379/2"),
            "redis://user:***@db.example:6379/2"
        );
        assert_eq!(
            mask_url("rediss://:hunter2@db.example"),
            "rediss://:***@db.example"
        );
        assert_eq!(mask_url("redis://db.example"), "redis://db.example");
        assert!(!mask_url("redis://u:hunter2@[bad").contains("hunter2"));
        assert_eq!(mask_url("unix:///run/redis.sock"), "unix:///run/redis.sock");
    }
}
