//! The Redis store: one hash per group, `retry:{GROUP}:state`, changed only
//! by one Lua script (`redis.lua`) so that every read-modify-write is atomic
//! on the server.
//!
//! The script reads the server's `TIME`, so the pace schedule of a fleet does
//! not depend on its hosts' clocks agreeing. It carries out the same rules as
//! [`super::rules`]; the store tests run both through the same sequences. The
//! key expires a week after its last change. Connecting and each command are
//! bounded by short timeouts. A connection the server dropped (an idle
//! timeout, a restart) is made again once before a call is given up, as
//! Redis clients do; a call that timed out is not repeated, since it may
//! have been carried out. Failures are told in words (no answer, not TLS,
//! an untrusted certificate), and nothing here ever prints the URL.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context as _, anyhow, bail};
use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, ConnectionAddr, IntoConnectionInfo, RedisError};

use super::Store;
use super::rules::{Admit, GroupState, Micros, Op, Plan, Reply, SCHEDULE_AHEAD, TRIAL_LEASE};

/// Connecting, including TLS and AUTH.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// One script call: it takes microseconds on the server, but a busy host may
/// be slow to schedule the server or this process.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a look at why a connection failed may take.
const PROBE_TIMEOUT: Duration = Duration::from_millis(500);
/// How long a group's state outlives its last change.
const TTL_MS: u64 = 7 * 24 * 3600 * 1000;

const SCRIPT: &str = include_str!("redis.lua");

/// Whether `url` is a Redis URL this store can use: checked at start-up so
/// that a typo is a usage error. Returns what is wrong, in words that never
/// repeat the URL.
pub fn check_url(url: &str) -> Result<(), String> {
    // The URL parser's own words first: they say which part is wrong.
    let parsed = reqwest::Url::parse(url).map_err(|e| e.to_string())?;
    let unix = matches!(parsed.scheme(), "unix" | "redis+unix");
    if !unix && parsed.host_str().is_none_or(str::is_empty) {
        return Err("no host".into());
    }
    if unix && (parsed.host_str().is_some_and(|h| !h.is_empty()) || parsed.path().len() < 2) {
        return Err("a unix socket URL names an absolute path: unix:///PATH".into());
    }
    url.into_connection_info()
        .map(drop)
        .map_err(|e| e.to_string())
}

pub struct RedisStore {
    link: Link,
    script: redis::Script,
}

/// The connection to the server, made again when it was dropped.
struct Link {
    client: redis::Client,
    conn: Option<MultiplexedConnection>,
}

/// The Redis password from `--state-password-file`: the file's first line.
fn read_password(path: &Path) -> anyhow::Result<String> {
    let bytes = std::fs::read(path)
        .with_context(|| format!("cannot read the password file {}", path.display()))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| anyhow!("the password file {} is not UTF-8 text", path.display()))?;
    let line = text.lines().next().unwrap_or("");
    if line.is_empty() {
        bail!("the password file {} is empty", path.display());
    }
    Ok(line.to_string())
}

impl RedisStore {
    pub fn new(url: &str, password_file: Option<&Path>) -> anyhow::Result<RedisStore> {
        // The error names what is wrong, never the URL itself.
        let mut info = url
            .into_connection_info()
            .map_err(|e| anyhow!("invalid Redis URL: {e}"))?;
        if let Some(file) = password_file {
            let settings = info
                .redis_settings()
                .clone()
                .set_password(read_password(file)?);
            info = info.set_redis_settings(settings);
        }
        let client = redis::Client::open(info).map_err(|e| anyhow!("invalid Redis URL: {e}"))?;
        Ok(RedisStore {
            link: Link { client, conn: None },
            script: redis::Script::new(SCRIPT),
        })
    }
}

impl Link {
    async fn connection(&mut self) -> anyhow::Result<&mut MultiplexedConnection> {
        if self.conn.is_none() {
            let config = AsyncConnectionConfig::new()
                .set_connection_timeout(Some(CONNECT_TIMEOUT))
                .set_response_timeout(Some(COMMAND_TIMEOUT));
            match self
                .client
                .get_multiplexed_async_connection_with_config(&config)
                .await
            {
                Ok(c) => self.conn = Some(c),
                Err(e) => return Err(self.explain_connect(&e).await),
            }
        }
        self.conn.as_mut().context("no connection")
    }

    /// Why connecting failed, in words: a timeout is looked into (did the
    /// server accept the connection? does it answer in plain text where
    /// TLS was asked for?).
    async fn explain_connect(&self, e: &RedisError) -> anyhow::Error {
        let tls = matches!(
            self.client.get_connection_info().addr(),
            ConnectionAddr::TcpTls { .. }
        );
        if let Some(words) = tls_words(e) {
            return anyhow!("cannot connect: {words}");
        }
        if !e.is_timeout() {
            return anyhow!("cannot connect: {}", redis_words(e));
        }
        let secs = CONNECT_TIMEOUT.as_secs();
        match probe(self.client.get_connection_info().addr()).await {
            Probe::Refused(why) => anyhow!("cannot connect: {why}"),
            Probe::Silent => {
                anyhow!("cannot connect: no connection within {secs}s")
            }
            Probe::PlainRedis if tls => anyhow!(
                "cannot connect: the server does not speak TLS on this port (it answers plain-text Redis: is it redis://?)"
            ),
            Probe::PlainRedis | Probe::Connected => {
                anyhow!(
                    "connected, but the server did not answer within {secs}s (busy, or not Redis?)"
                )
            }
        }
    }

    /// One script call on the current connection, made once more on a new
    /// connection when the server had dropped the old one before the call
    /// reached it.
    async fn invoke(&mut self, call: &redis::ScriptInvocation<'_>) -> anyhow::Result<Vec<i64>> {
        for again in [false, true] {
            let conn = self.connection().await?;
            match call.invoke_async::<Vec<i64>>(conn).await {
                Ok(v) => return Ok(v),
                Err(e) if !again && e.is_connection_dropped() && !e.is_timeout() => {
                    self.conn = None;
                }
                Err(e) => {
                    if e.is_io_error() {
                        self.conn = None;
                    }
                    if e.is_timeout() {
                        bail!(
                            "connected, but no answer within {}s",
                            COMMAND_TIMEOUT.as_secs()
                        );
                    }
                    return Err(anyhow!("{}", redis_words(&e))).context("the state script failed");
                }
            }
        }
        bail!("the connection was dropped twice")
    }
}

/// What a raw connection to the server's address shows.
enum Probe {
    /// Not even a connection: why.
    Refused(String),
    /// No connection within the probe's time.
    Silent,
    /// Connected; no answer to a plain-text PING.
    Connected,
    /// Connected, and a plain-text PING was answered as Redis answers.
    PlainRedis,
}

/// Connect to `addr` without TLS and say PING, within [`PROBE_TIMEOUT`].
async fn probe(addr: &ConnectionAddr) -> Probe {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    async fn ping<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin>(mut s: S) -> Probe {
        let mut buf = [0u8; 1];
        let answered = async {
            s.write_all(b"PING\r\n").await?;
            s.read_exact(&mut buf).await
        };
        match tokio::time::timeout(PROBE_TIMEOUT, answered).await {
            Ok(Ok(_)) if matches!(buf[0], b'+' | b'-') => Probe::PlainRedis,
            _ => Probe::Connected,
        }
    }
    let connect = async {
        match addr {
            ConnectionAddr::Tcp(host, port) | ConnectionAddr::TcpTls { host, port, .. } => {
                tokio::net::TcpStream::connect((host.as_str(), *port))
                    .await
                    .map(|s| Box::pin(ping(s)) as std::pin::Pin<Box<dyn Future<Output = Probe>>>)
            }
            ConnectionAddr::Unix(path) => tokio::net::UnixStream::connect(path)
                .await
                .map(|s| Box::pin(ping(s)) as std::pin::Pin<Box<dyn Future<Output = Probe>>>),
            _ => Err(std::io::Error::other("an address this store does not use")),
        }
    };
    match tokio::time::timeout(PROBE_TIMEOUT, connect).await {
        Err(_) => Probe::Silent,
        Ok(Err(e)) => Probe::Refused(e.to_string()),
        Ok(Ok(pinged)) => pinged.await,
    }
}

/// A TLS failure in words, if `e` is one.
fn tls_words(e: &RedisError) -> Option<String> {
    use rustls::Error as T;
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = source {
        let found = err.downcast_ref::<T>().or_else(|| {
            err.downcast_ref::<std::io::Error>()
                .and_then(|io| io.get_ref())
                .and_then(|inner| inner.downcast_ref::<T>())
        });
        if let Some(t) = found {
            return Some(match t {
                T::InvalidMessage(_)
                | T::InappropriateMessage { .. }
                | T::InappropriateHandshakeMessage { .. } => {
                    "the server does not speak TLS on this port (is it redis://?)".to_string()
                }
                T::InvalidCertificate(why) => {
                    format!("the server's certificate is not trusted ({why:?})")
                }
                T::AlertReceived(alert) => {
                    format!("the server ended the TLS handshake ({alert:?} alert)")
                }
                other => format!("TLS handshake failed: {other}"),
            });
        }
        source = err.source();
    }
    None
}

/// A Redis error on one line, without the crate's debugging decorations.
fn redis_words(e: &RedisError) -> String {
    if let Some(code) = e.code()
        && let Some(detail) = e.detail()
    {
        return format!("{code} {detail}");
    }
    e.to_string()
}

/// Microseconds as the script's signed arguments; -1 stands for "none".
fn arg(v: Option<u64>) -> i64 {
    v.map_or(-1, |v| i64::try_from(v).unwrap_or(i64::MAX))
}

fn unsigned(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

impl Store for RedisStore {
    /// Connect, and make one harmless write (refused by a read-only
    /// replica), so that a store that cannot be used is known before the
    /// command first runs.
    async fn open(&mut self, group: &str) -> anyhow::Result<()> {
        let key = format!("retry:{{{group}}}:state");
        let mut call = self.script.key(&key);
        call.arg("probe").arg(TTL_MS);
        self.link.invoke(&call).await.map(drop)
    }

    async fn apply(&mut self, group: &str, op: Op) -> anyhow::Result<Reply> {
        let key = format!("retry:{{{group}}}:state");
        let mut call = self.script.key(&key);
        let flag = |b: bool| if b { "1" } else { "0" };
        match op {
            Op::Admit { lease, breaker } => call
                .arg("admit")
                .arg(TTL_MS)
                .arg(arg(Some(lease)))
                .arg(arg(Some(breaker.cooldown)))
                .arg(TRIAL_LEASE),
            Op::Record { budget, success } => call
                .arg("record")
                .arg(TTL_MS)
                .arg(budget.max_milli)
                .arg(budget.ratio_milli)
                .arg(flag(success)),
            Op::Plan {
                delay,
                deadline_in,
                budget,
                pace,
            } => call
                .arg("plan")
                .arg(TTL_MS)
                .arg(arg(Some(delay)))
                .arg(arg(deadline_in))
                .arg(budget.map_or(-1, |b| b.max_milli))
                .arg(arg(pace.map(|p| p.interval)))
                .arg(pace.map_or(1, |p| p.burst))
                .arg(SCHEDULE_AHEAD),
            Op::Finish {
                breaker,
                success,
                trial,
            } => call
                .arg("finish")
                .arg(TTL_MS)
                .arg(breaker.threshold)
                .arg(arg(Some(breaker.cooldown)))
                .arg(flag(success))
                .arg(flag(trial))
                .arg(TRIAL_LEASE),
        };
        let v = self.link.invoke(&call).await?;
        let at = |i: usize| v.get(i).copied().unwrap_or(0);
        Ok(match op {
            Op::Admit { .. } => Reply::Admit(match at(0) {
                0 => Admit::Closed,
                1 => Admit::Trial,
                2 => Admit::Open {
                    wait: unsigned(at(1)),
                },
                3 => Admit::TrialUnderWay {
                    wait: unsigned(at(1)),
                },
                other => bail!("unexpected reply {other} from the state script"),
            }),
            Op::Plan { .. } => Reply::Plan(match at(0) {
                0 => Plan::Go {
                    wait: unsigned(at(1)),
                    paced: unsigned(at(2)),
                },
                1 => Plan::BudgetSpent {
                    tokens_milli: at(1),
                },
                2 => Plan::PastDeadline {
                    wait: unsigned(at(1)),
                },
                other => bail!("unexpected reply {other} from the state script"),
            }),
            Op::Record { .. } | Op::Finish { .. } => Reply::Done,
        })
    }

    async fn show(&mut self, group: &str) -> anyhow::Result<(Micros, Option<GroupState>)> {
        let key = format!("retry:{{{group}}}:state");
        let mut call = self.script.key(&key);
        call.arg("show").arg(TTL_MS);
        let v = self.link.invoke(&call).await?;
        let at = |i: usize| v.get(i).copied().unwrap_or(0);
        let state = (at(0) == 1).then(|| GroupState {
            tat: unsigned(at(2)),
            spent_milli: at(3),
            tokens_milli: (at(4) >= 0).then_some(at(4)),
            failures: u32::try_from(at(5)).unwrap_or(u32::MAX),
            open_until: unsigned(at(6)),
            trial_until: unsigned(at(7)),
        });
        Ok((unsigned(at(1)), state))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_urls_are_told_apart() {
        for bad in [
            "redis://:pw@",
            "unix://",
            "redis://127.0.0.1:99999/0",
            "redis://[::1",
            "redis://db/notanumber",
            "unix:///run/r.sock?db=x",
            "unix://host/run/r.sock",
        ] {
            let why = check_url(bad).expect_err(bad);
            assert!(!why.contains("pw"), "{why}");
        }
        for good in [
            "redis://127.0.0.1",
            "redis://:pw@127.0.0.1:6380/2",
            "rediss://db.example",
            "unix:///run/redis.sock",
            "redis+unix:///run/redis.sock?db=2&pass=x",
            "redis://[::1]:6379",
        ] {
            assert_eq!(check_url(good), Ok(()), "{good}");
        }
    }
}
