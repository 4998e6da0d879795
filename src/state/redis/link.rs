//! The connection to a Redis store's servers, whatever their topology, and
//! how a call follows a failover.
//!
//! - One server: one connection, made again when the server dropped it or
//!   answers `READONLY` (a managed service moved its name to a new primary
//!   and demoted the old one) or `LOADING`. Each new connection resolves
//!   the server's name again, so a name moved to another address is
//!   followed.
//! - Sentinel: the sentinels are asked for the master when connecting
//!   (`SENTINEL GET-MASTER-ADDR-BY-NAME`, one after the other, the one that
//!   answered last first, as go-redis does), the server they name is checked
//!   to be a master (`ROLE`) on the connection the calls then use, and this
//!   is done again after a connection error, `READONLY`, `LOADING` or
//!   `MASTERDOWN`: the call is tried on the master they name, again and
//!   again while the sentinels answer, until the session's bound on the
//!   call is near (a failover takes the sentinels' down-after time and an
//!   election); sentinels that all fail to answer end the call at once.
//!   The redis crate's own Sentinel client does
//!   not follow a failover, and connects to sentinels and masters with
//!   timeouts of its own (one second, half a second for an answer) that a
//!   TLS handshake on a loaded host overruns. A failover the old master does not notice (it stays a master
//!   until the sentinels demote it, seconds later) is announced by the
//!   sentinels as `+switch-master`, with the new master's address: a task
//!   listens for it on one sentinel, as go-redis does, and the next call
//!   goes to that address (sentinels that have not heard of the failover
//!   yet would still name the old master).
//! - Cluster: the redis crate's cluster connection routes the script by its
//!   one key (`retry:{GROUP}:state`, the group as its hash tag), follows
//!   `MOVED` and `ASK`, and finds a promoted replica; its retries are kept
//!   short, and a call that still finds no master for its key (a refused
//!   connection, `CLUSTERDOWN`, `TRYAGAIN`, a `MOVED` to the dead master)
//!   is made again, on a new connection, until the session's bound is near.
//!
//! Between two tries a call pauses 100 ms and a random part of as much
//! again, so that a herd failing together does not ask together.
//!
//! A call that got no answer in time is never repeated: the server may have
//! carried it out. Whatever the topology, the session bounds every call.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{Context as _, anyhow, bail};
use futures_util::StreamExt;
use rand::TryRng;
use rand::rngs::SysRng;
use redis::aio::MultiplexedConnection;
use redis::cluster::{ClusterClient, ClusterClientBuilder};
use redis::cluster_async::ClusterConnection;
use redis::{
    AsyncConnectionConfig, ConnectionAddr, ConnectionInfo, ErrorKind, IntoConnectionInfo,
    RedisConnectionInfo, RedisError, Role, TlsCertificates,
};

use super::address::{Address, Auth, Node};
use super::bounded;
use super::words::{connect_failure, redis_words};

/// Connecting, including TLS and AUTH.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// One script call: it takes microseconds on the server, but a busy host may
/// be slow to schedule the server or this process.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(2);
/// Between two tries of one call while a failover may be under way: at
/// least this, and a random part of as much again.
const ASK_AGAIN: Duration = Duration::from_millis(100);
/// Tries of one call under Sentinel when the call has no bound: the master
/// named, then twice more.
const SENTINEL_TRIES: usize = 3;
/// What is kept of the call's bound for its last try: a call that gives up
/// says why, rather than being cut short by the bound.
const RESERVE: Duration = Duration::from_millis(250);

pub struct Link {
    kind: Kind,
    /// When the calls must be over (the session's bound on each).
    until: Option<Instant>,
    /// Under Sentinel, a sentinel answered the last time they were asked:
    /// a master that cannot be used yet may be being replaced.
    answered: bool,
}

enum Kind {
    Single {
        client: redis::Client,
        conn: Option<MultiplexedConnection>,
    },
    Sentinel {
        /// The sentinels, with their own credentials.
        sentinels: Vec<ConnectionInfo>,
        /// The one that answered last, asked first.
        first: usize,
        /// The name they know the master by.
        master: String,
        conn: Option<MultiplexedConnection>,
        news: Arc<News>,
        /// How to connect to the master they name.
        tls: bool,
        redis: RedisConnectionInfo,
    },
    Cluster {
        client: Box<ClusterClient>,
        conn: Option<ClusterConnection>,
    },
}

/// `--state-cacert`'s certificates (PEM), set once when the run's one
/// store is made: every TLS connection to it, sentinels and cluster nodes
/// included, trusts them in place of the system's roots.
static ROOTS: OnceLock<Vec<u8>> = OnceLock::new();

/// The trust `ROOTS` sets, if set.
fn certificates() -> Option<TlsCertificates> {
    ROOTS.get().map(|pem| TlsCertificates {
        client_tls: None,
        root_cert: Some(pem.clone()),
    })
}

/// A client for `info`, trusting `ROOTS` when set.
pub(super) fn client(info: ConnectionInfo) -> redis::RedisResult<redis::Client> {
    match certificates() {
        Some(certs) if matches!(info.addr(), ConnectionAddr::TcpTls { .. }) => {
            redis::Client::build_with_tls(info, certs)
        }
        _ => redis::Client::open(info),
    }
}

fn config() -> AsyncConnectionConfig {
    AsyncConnectionConfig::new()
        .set_connection_timeout(Some(CONNECT_TIMEOUT))
        .set_response_timeout(Some(COMMAND_TIMEOUT))
}

fn tcp(node: &Node, tls: bool) -> ConnectionAddr {
    if tls {
        ConnectionAddr::TcpTls {
            host: node.host.clone(),
            port: node.port,
            insecure: false,
            tls_params: None,
        }
    } else {
        ConnectionAddr::Tcp(node.host.clone(), node.port)
    }
}

/// The credentials as the redis crate takes them; `password`, from a file,
/// replaces the URL's.
fn credentials(auth: &Auth, password: Option<String>) -> RedisConnectionInfo {
    let mut info = RedisConnectionInfo::default();
    if let Some(u) = &auth.user {
        info = info.set_username(u);
    }
    if let Some(p) = password.or_else(|| auth.password.clone()) {
        info = info.set_password(p);
    }
    info
}

/// How to reach each of `nodes`, asking with `settings` (credentials, db).
fn addresses(
    nodes: &[Node],
    tls: bool,
    settings: &RedisConnectionInfo,
) -> anyhow::Result<Vec<ConnectionInfo>> {
    nodes
        .iter()
        .map(|n| {
            tcp(n, tls)
                .into_connection_info()
                .map(|i| i.set_redis_settings(settings.clone()))
        })
        .collect::<Result<_, _>>()
        .map_err(invalid)
}

fn invalid(e: RedisError) -> anyhow::Error {
    anyhow!("invalid Redis URL: {}", redis_words(&e))
}

impl Link {
    /// The link to the servers at `address`; `password`, from a file,
    /// replaces the URL's.
    pub fn new(
        address: Address,
        password: Option<String>,
        roots: Option<Vec<u8>>,
    ) -> anyhow::Result<Link> {
        if let Some(pem) = roots {
            let _ = ROOTS.set(pem);
        }
        let kind = match address {
            Address::Single(url) => {
                let mut info = url.as_str().into_connection_info().map_err(invalid)?;
                if let Some(p) = password {
                    let settings = info.redis_settings().clone().set_password(p);
                    info = info.set_redis_settings(settings);
                }
                Kind::Single {
                    client: client(info).map_err(invalid)?,
                    conn: None,
                }
            }
            Address::Sentinel(s) => {
                let redis = credentials(&s.auth, password).set_db(s.db);
                let theirs = credentials(&s.sentinel_auth, None);
                Kind::Sentinel {
                    sentinels: addresses(&s.sentinels, s.tls, &theirs)?,
                    first: 0,
                    master: s.master,
                    conn: None,
                    news: Arc::new(News::default()),
                    tls: s.tls,
                    redis,
                }
            }
            Address::Cluster(c) => {
                let redis = credentials(&c.auth, password);
                let seeds = addresses(&c.seeds, c.tls, &redis)?;
                let mut builder = ClusterClientBuilder::new(seeds);
                if let Some(certs) = certificates().filter(|_| c.tls) {
                    builder = builder.certs(certs);
                }
                let client = builder
                    .connection_timeout(CONNECT_TIMEOUT)
                    .response_timeout(COMMAND_TIMEOUT)
                    .overall_response_timeout(Some(COMMAND_TIMEOUT))
                    // A failover's CLUSTERDOWN or TRYAGAIN is waited out a
                    // few times, 50 ms to 400 ms apart; longer is the
                    // session's to decide (it fails open).
                    .retries(3)
                    .min_retry_wait(50)
                    .max_retry_wait(400)
                    .retry_wait_formula(100, 2)
                    .build()
                    .map_err(invalid)?;
                Kind::Cluster {
                    client: Box::new(client),
                    conn: None,
                }
            }
        };
        Ok(Link {
            kind,
            until: None,
            answered: false,
        })
    }

    /// The calls that follow must be over by `until`.
    pub fn bound(&mut self, until: Option<Instant>) {
        self.until = until;
    }

    /// How many times a call may be tried at least; under Sentinel and
    /// Cluster, with a bound, as many more times as fit in it.
    fn tries(&self) -> usize {
        match self.kind {
            Kind::Sentinel { .. } => SENTINEL_TRIES,
            Kind::Single { .. } | Kind::Cluster { .. } => 2,
        }
    }

    /// Whether a failover may be waited out within the bound.
    fn waits(&self) -> bool {
        self.until.is_some() && !matches!(self.kind, Kind::Single { .. })
    }

    /// Drops the connection: the next call makes a new one (and, under
    /// Sentinel, asks the sentinels again).
    fn forget(&mut self) {
        match &mut self.kind {
            Kind::Single { conn, .. } | Kind::Sentinel { conn, .. } => *conn = None,
            Kind::Cluster { conn, .. } => *conn = None,
        }
    }

    /// Connects unless connected.
    async fn connect(&mut self) -> anyhow::Result<()> {
        match &mut self.kind {
            Kind::Single { client, conn } => {
                if conn.is_none() {
                    let info = client.get_connection_info();
                    match bounded::multiplexed(info, &config(), CONNECT_TIMEOUT).await {
                        Ok(c) => *conn = Some(c),
                        Err(e) => {
                            let addr = client.get_connection_info().addr();
                            return Err(connect_failure(&e, addr, CONNECT_TIMEOUT).await);
                        }
                    }
                }
            }
            Kind::Sentinel {
                sentinels,
                first,
                master,
                conn,
                news,
                tls,
                redis,
            } => {
                if !news.listening.swap(true, Ordering::Relaxed) {
                    listen(sentinels.clone(), master.clone(), Arc::clone(news));
                }
                // A new master announced since the last call: go there.
                if let Some(node) = news.take() {
                    *conn = match master_at(&node, *tls, redis).await {
                        Ok((c, Role::Primary { .. })) => Some(c),
                        _ => None,
                    };
                }
                if conn.is_none() {
                    let (found, answered) =
                        find_master(sentinels, first, master, *tls, redis).await;
                    self.answered = answered;
                    *conn = Some(found?);
                }
            }
            Kind::Cluster { client, conn } => {
                if conn.is_none() {
                    let c = client.get_async_connection().await.map_err(|e| {
                        if e.is_timeout() {
                            anyhow!(
                                "cannot connect to the cluster: no answer within {}s",
                                CONNECT_TIMEOUT.as_secs()
                            )
                        } else {
                            anyhow!("cannot connect to the cluster: {}", redis_words(&e))
                        }
                    })?;
                    *conn = Some(c);
                }
            }
        }
        Ok(())
    }

    /// One script call on the current connection.
    async fn run(&mut self, call: &redis::ScriptInvocation<'_>) -> Result<Vec<i64>, RedisError> {
        match &mut self.kind {
            Kind::Single { conn: Some(c), .. } | Kind::Sentinel { conn: Some(c), .. } => {
                call.invoke_async(c).await
            }
            Kind::Cluster { conn: Some(c), .. } => call.invoke_async(c).await,
            _ => Err(RedisError::from((ErrorKind::Io, "not connected"))),
        }
    }

    /// One script call, tried again where the answer says the data has
    /// moved (a failover) or the connection had been dropped before the
    /// call reached the server.
    pub async fn invoke(&mut self, call: &redis::ScriptInvocation<'_>) -> anyhow::Result<Vec<i64>> {
        let tries = self.tries();
        let sentinel = matches!(self.kind, Kind::Sentinel { .. });
        let mut n = 0;
        loop {
            n += 1;
            let more = n < tries;
            let pause = pause(SysRng.try_next_u64().unwrap_or(0));
            if let Err(e) = self.connect().await {
                // Connecting is where a failover shows under Sentinel (the
                // old master refuses, or the sentinels name none yet), and
                // under Cluster once the call found its master gone.
                // Sentinels that do not answer, or a cluster no node of
                // which does, are not failing over: the call ends.
                let again = if self.waits() {
                    (if sentinel { self.answered } else { n > 1 }) && self.room(pause)
                } else {
                    sentinel && more
                };
                if again {
                    tokio::time::sleep(pause).await;
                    continue;
                }
                return Err(e);
            }
            let e = match self.run(call).await {
                Ok(v) => return Ok(v),
                Err(e) => e,
            };
            let moved = moved(&e);
            let dropped = (e.is_connection_dropped()
                || e.is_connection_refusal()
                || e.kind() == ErrorKind::ClusterConnectionNotFound)
                && !e.is_timeout();
            if e.is_io_error() || moved || dropped {
                self.forget();
            }
            if e.is_timeout() {
                bail!(
                    "connected, but no answer within {}s",
                    COMMAND_TIMEOUT.as_secs()
                );
            }
            if (moved || dropped) && (more || (self.waits() && self.room(pause))) {
                if n > 1 {
                    tokio::time::sleep(pause).await;
                }
                continue;
            }
            return Err(anyhow!("{}", redis_words(&e))).context("the state script failed");
        }
    }

    /// Whether another try, after `pause`, fits in the bound.
    fn room(&self, pause: Duration) -> bool {
        self.until
            .is_some_and(|until| room(Instant::now(), pause, until))
    }
}

/// The pause before the next try of a call, from `random`: [`ASK_AGAIN`]
/// and a random part of as much again.
fn pause(random: u64) -> Duration {
    let spread = u64::try_from(ASK_AGAIN.as_micros()).unwrap_or(u64::MAX);
    ASK_AGAIN + Duration::from_micros(random % spread.max(1))
}

/// Whether a try that starts `pause` after `now` leaves [`RESERVE`] of the
/// bound, `until`.
fn room(now: Instant, pause: Duration, until: Instant) -> bool {
    now.checked_add(pause + RESERVE)
        .is_some_and(|start| start < until)
}

/// A connection to the server at `node` with the master's settings, and
/// the role that server says it has.
async fn master_at(
    node: &Node,
    tls: bool,
    redis: &RedisConnectionInfo,
) -> anyhow::Result<(MultiplexedConnection, Role)> {
    let info = tcp(node, tls)
        .into_connection_info()
        .map(|i| i.set_redis_settings(redis.clone()))
        .map_err(|e| anyhow!("{}", redis_words(&e)))?;
    let mut conn = match bounded::multiplexed(&info, &config(), CONNECT_TIMEOUT).await {
        Ok(c) => c,
        Err(e) => return Err(connect_failure(&e, info.addr(), CONNECT_TIMEOUT).await),
    };
    let role: Role = redis::cmd("ROLE")
        .query_async(&mut conn)
        .await
        .map_err(|e| anyhow!("{}", redis_words(&e)))?;
    Ok((conn, role))
}

/// Asks the sentinels in turn, from `first`, for the master they know as
/// `name`, until one names a server that is a master: a connection to it.
/// `first` becomes the sentinel that named it. Otherwise, what the last
/// sentinel asked said (or why it could not be asked). And whether any
/// sentinel answered.
async fn find_master(
    sentinels: &[ConnectionInfo],
    first: &mut usize,
    name: &str,
    tls: bool,
    redis: &RedisConnectionInfo,
) -> (anyhow::Result<MultiplexedConnection>, bool) {
    let mut why = anyhow!("no sentinel to ask");
    let mut answered = false;
    for k in 0..sentinels.len() {
        let i = (*first + k) % sentinels.len();
        let info = &sentinels[i];
        let named = async {
            let mut conn = match bounded::multiplexed(info, &config(), CONNECT_TIMEOUT).await {
                Ok(c) => c,
                Err(e) => return Err(connect_failure(&e, info.addr(), CONNECT_TIMEOUT).await),
            };
            redis::cmd("SENTINEL")
                .arg("GET-MASTER-ADDR-BY-NAME")
                .arg(name)
                .query_async::<Option<(String, u16)>>(&mut conn)
                .await
                .map_err(|e| anyhow!("{}", redis_words(&e)))
        };
        let at = sentinel_shown(info);
        let named = named.await;
        // A sentinel that names no master will not name one later.
        answered |= matches!(named, Ok(Some(_)));
        let node = match named {
            Ok(Some((host, port))) => Node { host, port },
            Ok(None) => {
                why = anyhow!("the sentinel at {at} knows no master named {name:?}");
                continue;
            }
            Err(e) => {
                why = e.context(format!("asking the sentinel at {at} for master {name:?}"));
                continue;
            }
        };
        let shown = format!("{}:{}", node.host, node.port);
        match master_at(&node, tls, redis).await {
            Ok((conn, Role::Primary { .. })) => {
                *first = i;
                return (Ok(conn), true);
            }
            Ok(_) => {
                why = anyhow!(
                    "the sentinels name {shown} as master {name:?}, and it is not a master (yet)"
                );
            }
            Err(e) => why = e.context(format!("master {name:?} at {shown}")),
        }
    }
    (Err(why), answered)
}

/// A sentinel's address, for messages.
fn sentinel_shown(info: &ConnectionInfo) -> String {
    match info.addr() {
        ConnectionAddr::Tcp(host, port) | ConnectionAddr::TcpTls { host, port, .. } => {
            format!("{host}:{port}")
        }
        other => format!("{other:?}"),
    }
}

/// What the task listening to the sentinels has heard.
#[derive(Default)]
struct News {
    /// The address of a new master, announced since the last call.
    master: Mutex<Option<Node>>,
    /// The task listens.
    listening: AtomicBool,
}

impl News {
    fn take(&self) -> Option<Node> {
        self.master
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }
}

/// Listens on the first sentinel that takes the subscription for
/// `+switch-master` announcements of `master`, and notes the new master's
/// address in `news`. When that sentinel goes away, the next call starts
/// another listener. The task ends with the runtime.
fn listen(sentinels: Vec<ConnectionInfo>, master: String, news: Arc<News>) {
    tokio::spawn(async move {
        for info in sentinels {
            // Bounded: a message past the bound ends the subscription (the
            // stream fails), and the next call starts another listener.
            let subscribed = tokio::time::timeout(CONNECT_TIMEOUT, async {
                let mut pubsub = bounded::pubsub(&info, CONNECT_TIMEOUT).await?;
                pubsub.subscribe("+switch-master").await?;
                Ok::<_, RedisError>(pubsub)
            })
            .await;
            let Ok(Ok(pubsub)) = subscribed else {
                continue;
            };
            let mut messages = pubsub.into_on_message();
            while let Some(m) = messages.next().await {
                // "NAME OLD-IP OLD-PORT NEW-IP NEW-PORT"
                let payload: String = m.get_payload().unwrap_or_default();
                let words: Vec<&str> = payload.split(' ').collect();
                if let [name, _, _, host, port] = words[..]
                    && name == master
                    && let Ok(port) = port.parse()
                {
                    let node = Node {
                        host: host.to_string(),
                        port,
                    };
                    *news.master.lock().unwrap_or_else(PoisonError::into_inner) = Some(node);
                }
            }
            break;
        }
        news.listening.store(false, Ordering::Relaxed);
    });
}

/// Whether the server said the data is not (or no longer, or not yet)
/// served there: a demoted master, one still loading its data, one cut off
/// from its replicas; in a cluster, a slot with no master for now, or a
/// `MOVED` the crate's own retries did not follow to a live master (during
/// a failover, nodes point for a while at the dead one).
fn moved(e: &RedisError) -> bool {
    matches!(
        e.code(),
        Some("READONLY" | "LOADING" | "MASTERDOWN" | "CLUSTERDOWN" | "TRYAGAIN" | "MOVED" | "ASK")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pause_is_100_to_200_ms() {
        assert_eq!(pause(0), Duration::from_millis(100));
        assert_eq!(pause(50_000), Duration::from_millis(150));
        assert_eq!(pause(100_000), Duration::from_millis(100));
        for random in [1, 99_999, 12_345_678, u64::MAX] {
            let p = pause(random);
            assert!(p >= ASK_AGAIN && p < 2 * ASK_AGAIN, "{p:?}");
        }
    }

    #[test]
    fn a_call_is_tried_again_only_while_the_bound_keeps_its_reserve() {
        let now = Instant::now();
        let p = Duration::from_millis(150);
        let ms = Duration::from_millis;
        assert!(room(now, p, now + ms(401)));
        assert!(!room(now, p, now + ms(400)));
        assert!(!room(now, p, now));
        assert!(!room(now + ms(10), p, now));
        assert!(room(now, p, now + Duration::from_secs(35)));
    }
}
