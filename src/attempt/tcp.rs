//! TCP probes (`--tcp HOST:PORT`, repeatable): wait until every target
//! accepts a connection, as a compose start-up waits for its database.
//!
//! Each attempt connects to the targets that have not accepted yet, all at
//! once; a target that accepted is not probed again. A name is looked up
//! and each of its addresses tried in turn until one accepts; the lookup
//! and each address's connection are bounded by `--connect-timeout`, the
//! whole attempt by `--timeout` and `--max-time`. The connection is closed
//! as soon as it is made: nothing is sent. Failures are reported as HTTP
//! mode reports a connection that could not be made, so they are judged,
//! logged and turned into exit statuses alike (curl's 6, 7 and 28).
//!
//! A target may also be a unix socket (`unix:/run/app.sock`): connecting
//! is success; a socket not there yet (ENOENT) or not listening
//! (ECONNREFUSED) is retried; a path that is not a socket, or a socket
//! retry may not use, is permanent.

use std::ffi::OsString;
use std::net::SocketAddr;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::sys::signal::Signal;
use tokio::net::{TcpStream, UnixStream};
use tokio::task::JoinSet;

use super::{Attempt, Context, Details};
use crate::classify::{Limit, NetFailure, Status};
use crate::human::io_error;
use crate::signals::{Signals, is_terminating, suspend_self};

/// One `HOST:PORT`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// A name or an address, without the brackets of an IPv6 literal.
    pub host: String,
    pub port: u16,
}

impl Target {
    /// As given: `db:5432`, `[::1]:6379`.
    pub fn shown(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// What a probe connects to: `HOST:PORT`, or a unix socket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    Inet(Target),
    /// `unix:PATH`.
    Unix(PathBuf),
}

impl Endpoint {
    /// As given: `db:5432`, `unix:/run/app.sock`.
    pub fn shown(&self) -> String {
        match self {
            Endpoint::Inet(t) => t.shown(),
            Endpoint::Unix(path) => format!("unix:{}", path.display()),
        }
    }

    /// How the log and the dry run show it: `tcp://db:5432`, `unix:/run/app.sock`.
    fn url(&self) -> String {
        match self {
            Endpoint::Inet(t) => format!("tcp://{}", t.shown()),
            Endpoint::Unix(_) => self.shown(),
        }
    }
}

/// TCP mode's options, as validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TcpOptions {
    pub targets: Vec<Endpoint>,
    /// Bounds the lookup of a name and each connection.
    pub connect_timeout: Duration,
}

impl TcpOptions {
    /// How the log and the dry run show the probe: `tcp://db:5432`.
    pub fn display_words(&self) -> Vec<OsString> {
        self.targets
            .iter()
            .map(|t| OsString::from(t.url()))
            .collect()
    }
}

/// Probes the targets, one attempt at a time.
pub struct TcpAttempt {
    opts: TcpOptions,
    /// Which targets have accepted, by index.
    accepted: Vec<bool>,
    details: Details,
}

impl TcpAttempt {
    pub fn new(opts: TcpOptions) -> TcpAttempt {
        TcpAttempt {
            accepted: vec![false; opts.targets.len()],
            opts,
            details: Details::default(),
        }
    }
}

impl Attempt for TcpAttempt {
    async fn run(&mut self, ctx: &Context, signals: &mut Signals) -> Status {
        self.details = Details::default();
        let limit = ctx.deadline.map_or(Limit::Attempt, |(_, l)| l);
        let wake = ctx.deadline.map(|(at, _)| at);
        let mut probes = JoinSet::new();
        for (i, target) in self.opts.targets.iter().enumerate() {
            if !self.accepted[i] {
                let target = target.clone();
                let within = self.opts.connect_timeout;
                probes.spawn(async move {
                    let result = match &target {
                        Endpoint::Inet(t) => probe(t, within).await.map(|a| a.to_string()),
                        Endpoint::Unix(path) => probe_unix(path, within).await,
                    };
                    (i, result)
                });
            }
        }
        let mut failures: Vec<(usize, Status)> = Vec::new();
        loop {
            tokio::select! {
                joined = probes.join_next() => match joined {
                    None => break,
                    Some(Ok((i, Ok(addr)))) => {
                        self.accepted[i] = true;
                        self.details.notes.push(format!(
                            "{} accepted a connection ({addr})",
                            self.opts.targets[i].url()
                        ));
                    }
                    Some(Ok((i, Err(status)))) => failures.push((i, status)),
                    // A probe that panicked: a bug, reported as a failure.
                    Some(Err(e)) => failures.push((usize::MAX, Status::Net {
                        failure: NetFailure::Other,
                        detail: e.to_string(),
                    })),
                },
                () = crate::bound::until(wake) => {
                    // Dropping the set aborts the probes; a lookup still under
                    // way is left to its thread, which retry does not wait for.
                    let waiting: Vec<String> = self
                        .opts
                        .targets
                        .iter()
                        .zip(&self.accepted)
                        .filter(|(_, ok)| !**ok)
                        .map(|(t, _)| t.shown())
                        .collect();
                    return Status::Net {
                        failure: NetFailure::TimedOut(limit),
                        detail: format!("waiting for {}", waiting.join(", ")),
                    };
                }
                sig = signals.recv() => {
                    if is_terminating(sig) {
                        return Status::Interrupted(sig as i32);
                    }
                    if sig == Signal::SIGTSTP {
                        suspend_self();
                    }
                }
            }
        }
        if failures.is_empty() {
            return Status::Connected;
        }
        // The first target given that failed speaks for the attempt; the
        // others are noted.
        failures.sort_by_key(|(i, _)| *i);
        let mut failures = failures.into_iter().map(|(_, s)| s);
        let first = failures.next().unwrap_or(Status::Connected);
        for other in failures {
            self.details.notes.push(other.to_string());
        }
        first
    }

    fn details(&mut self) -> Details {
        std::mem::take(&mut self.details)
    }
}

/// Connect to one target: the address that accepted, or why none did.
async fn probe(target: &Target, within: Duration) -> Result<SocketAddr, Status> {
    // Closed at once: nothing is sent.
    connect_first(target, within).await.map(|(_, addr)| addr)
}

/// The first of `target`'s addresses that accepts a connection within
/// `within` each, or why none did (the last address's failure). The TCP and
/// gRPC probes both start here.
pub(super) async fn connect_first(
    target: &Target,
    within: Duration,
) -> Result<(TcpStream, SocketAddr), Status> {
    let shown = target.shown();
    let fail = |failure, detail: String| Status::Net { failure, detail };
    let lookup = tokio::net::lookup_host((target.host.as_str(), target.port));
    let addrs: Vec<SocketAddr> = match tokio::time::timeout(within, lookup).await {
        Err(_) => {
            return Err(fail(
                NetFailure::ConnectTimeout,
                format!("{shown}: the name lookup took longer"),
            ));
        }
        Ok(Err(e)) => return Err(fail(NetFailure::Dns, format!("{shown}: {e}"))),
        Ok(Ok(addrs)) => addrs.collect(),
    };
    let mut last = fail(NetFailure::Dns, format!("{shown}: no address"));
    // A name's address is worth showing; an address's is itself.
    let literal = target.host.parse::<std::net::IpAddr>().is_ok();
    let at = |addr: SocketAddr| {
        if literal {
            shown.clone()
        } else {
            format!("{shown} ({addr})")
        }
    };
    for addr in addrs {
        match tokio::time::timeout(within, TcpStream::connect(addr)).await {
            Ok(Ok(stream)) => return Ok((stream, addr)),
            Ok(Err(e)) => {
                last = fail(
                    NetFailure::Connect,
                    format!("{}: {}", at(addr), io_error(&e)),
                );
            }
            Err(_) => last = fail(NetFailure::ConnectTimeout, at(addr)),
        }
    }
    Err(last)
}

/// What a path that is there but is no socket is, in words. connect(2)
/// says ECONNREFUSED for such a file too: its type tells them apart.
fn not_a_socket(path: &Path) -> Option<&'static str> {
    let kind = std::fs::metadata(path).ok()?.file_type();
    match () {
        () if kind.is_socket() => None,
        () if kind.is_dir() => Some("a directory"),
        () => Some("not a socket"),
    }
}

/// A connection through the unix socket at `path` failed with `status`
/// (HTTP mode's `--unix-socket`): a path that is no socket is permanent.
pub fn through_socket(path: &Path, status: Status) -> Status {
    match status {
        Status::Net {
            failure: NetFailure::Connect,
            ..
        } => match not_a_socket(path) {
            Some(what) => Status::Net {
                failure: NetFailure::NotUsable,
                detail: format!("--unix-socket {}: {what}", path.display()),
            },
            None => status,
        },
        other => other,
    }
}

/// Connect to a unix socket: what accepted, or why it did not.
async fn probe_unix(path: &Path, within: Duration) -> Result<String, Status> {
    let shown = format!("unix:{}", path.display());
    let fail = |failure, detail: String| Status::Net { failure, detail };
    match tokio::time::timeout(within, UnixStream::connect(path)).await {
        // Closed at once: nothing is sent.
        Ok(Ok(stream)) => {
            drop(stream);
            Ok("a unix socket".to_string())
        }
        Ok(Err(e)) => {
            if let Some(what) = not_a_socket(path) {
                return Err(fail(NetFailure::NotUsable, format!("{shown}: {what}")));
            }
            let failure = if e.kind() == std::io::ErrorKind::PermissionDenied {
                NetFailure::NotUsable
            } else {
                NetFailure::Connect
            };
            Err(fail(failure, format!("{shown}: {}", io_error(&e))))
        }
        Err(_) => Err(fail(NetFailure::ConnectTimeout, shown)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_are_shown_as_given() {
        let t = |host: &str, port| Target {
            host: host.into(),
            port,
        };
        assert_eq!(t("db", 5432).shown(), "db:5432");
        assert_eq!(t("::1", 6379).shown(), "[::1]:6379");
        let opts = TcpOptions {
            targets: vec![
                Endpoint::Inet(t("db", 5432)),
                Endpoint::Inet(t("127.0.0.1", 1)),
                Endpoint::Unix("/run/app.sock".into()),
            ],
            connect_timeout: Duration::from_secs(1),
        };
        assert_eq!(
            opts.display_words(),
            [
                OsString::from("tcp://db:5432"),
                OsString::from("tcp://127.0.0.1:1"),
                OsString::from("unix:/run/app.sock")
            ]
        );
    }
}
