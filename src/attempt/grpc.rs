//! gRPC health probes (`--grpc HOST:PORT`): the standard
//! `grpc.health.v1.Health/Check`, through tonic and tonic-health, once per
//! attempt, as grpc-health-probe makes it.
//!
//! The connection is retry's own (the name looked up and each address tried
//! as in TCP mode, then TLS with HTTP mode's configuration when asked), so
//! its failures are HTTP mode's, in the same words and with the same exit
//! statuses; tonic speaks HTTP/2 over it. SERVING is success; NOT_SERVING
//! (or UNKNOWN) is retried; the call's own gRPC status is judged in
//! `classify`. An unknown service (NOT_FOUND) is retried for
//! [`NOT_FOUND_GRACE`] from the first attempt, as a server may register its
//! services after it starts listening, and is permanent after.

use std::ffi::OsString;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hyper_util::rt::TokioIo;
use nix::sys::signal::Signal;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncRead, AsyncWrite};
use tonic::transport::Endpoint;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};

use super::http::tls;
use super::tcp::Target;
use super::{Attempt, Context, Details};
use crate::classify::{GrpcAnswer, Limit, NetFailure, Status};
use crate::human::io_error;
use crate::signals::{Signals, is_terminating, suspend_self};

/// How long an unknown service (NOT_FOUND) is retried, from the first
/// attempt: a server may listen before it has registered every service.
pub const NOT_FOUND_GRACE: Duration = Duration::from_secs(10);

/// How long a call may take when no `--timeout` or `--max-time` bounds the
/// attempt: sent to the server as the call's deadline, as gRPC clients do,
/// so that a server that accepts and never answers is not waited for
/// forever.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// gRPC mode's options, as validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrpcOptions {
    pub target: Target,
    /// `--grpc-service`: empty asks about the server as a whole.
    pub service: String,
    /// `--grpc-tls`.
    pub tls: bool,
    /// `--grpc-authority`: the :authority and the TLS server name, for an
    /// address that is an IP.
    pub authority: Option<String>,
    pub cacert: Option<std::path::PathBuf>,
    pub insecure: bool,
    pub connect_timeout: Duration,
}

impl GrpcOptions {
    /// How the log and the dry run show the probe:
    /// `grpc://db:50051 --grpc-service app.Api`.
    pub fn display_words(&self) -> Vec<OsString> {
        let scheme = if self.tls { "grpcs" } else { "grpc" };
        let mut words = vec![OsString::from(format!(
            "{scheme}://{}",
            self.target.shown()
        ))];
        if !self.service.is_empty() {
            words.push("--grpc-service".into());
            words.push(self.service.clone().into());
        }
        words
    }

    /// The name the server is asked as: the override, else HOST.
    fn authority(&self) -> String {
        match &self.authority {
            Some(name) => name.clone(),
            None => self.target.shown(),
        }
    }
}

/// Any stream tonic may speak HTTP/2 over: plain TCP or TLS over it.
trait Io: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> Io for T {}

/// Checks the server's health, one call per attempt.
pub struct GrpcAttempt {
    opts: GrpcOptions,
    tls: Option<Arc<rustls::ClientConfig>>,
    cacert: bool,
    /// When the first attempt started: the grace of an unknown service.
    first: Option<Instant>,
    details: Details,
}

impl GrpcAttempt {
    /// Fails only when TLS cannot be set up.
    pub fn new(
        opts: GrpcOptions,
        extra_roots: Vec<CertificateDer<'static>>,
    ) -> Result<GrpcAttempt, String> {
        let cacert = !extra_roots.is_empty();
        let tls = if opts.tls {
            let mut config = tls::client_config(extra_roots, opts.insecure).map_err(|e| {
                format!(
                    "cannot set up TLS: {}",
                    tls::explain(&e, tls::Advice::for_http(cacert))
                )
            })?;
            config.alpn_protocols = vec![b"h2".to_vec()];
            Some(Arc::new(config))
        } else {
            None
        };
        Ok(GrpcAttempt {
            opts,
            tls,
            cacert,
            first: None,
            details: Details::default(),
        })
    }

    /// One connection and one call (bounded by `limit`, if any): the
    /// status it ends with.
    async fn check(&self, limit: Option<Duration>) -> Status {
        let io = match self.connect().await {
            Ok(io) => io,
            Err(status) => return status,
        };
        // tonic asks its connector for the stream: this one hands over the
        // connection just made, once.
        let slot = Arc::new(Mutex::new(Some(io)));
        let connector = tower::service_fn(move |_| {
            let io = slot
                .lock()
                .ok()
                .and_then(|mut s| s.take())
                .map(TokioIo::new);
            async move { io.ok_or_else(|| std::io::Error::other("the connection was used")) }
        });
        let uri = format!("http://{}", self.opts.authority());
        let endpoint = match Endpoint::from_shared(uri) {
            Ok(e) => e,
            Err(e) => {
                return Status::Net {
                    failure: NetFailure::Other,
                    detail: e.to_string(),
                };
            }
        };
        let channel = match endpoint.connect_with_connector(connector).await {
            Ok(c) => c,
            Err(e) => {
                return Status::Net {
                    failure: NetFailure::Connect,
                    detail: format!("{}: {}", self.opts.target.shown(), root(&e)),
                };
            }
        };
        let mut request = tonic::Request::new(HealthCheckRequest {
            service: self.opts.service.clone(),
        });
        // The attempt's trace context, as HTTP mode sends it.
        let mut headers = reqwest::header::HeaderMap::new();
        super::carrier::add_headers(&mut headers);
        *request.metadata_mut() = tonic::metadata::MetadataMap::from_headers(headers);
        if let Some(limit) = limit {
            request.set_timeout(limit);
        }
        match HealthClient::new(channel).check(request).await {
            Ok(reply) => {
                let answer = match reply.into_inner().status() {
                    ServingStatus::Serving => GrpcAnswer::Serving,
                    other => GrpcAnswer::NotServing(other.as_str_name().to_string()),
                };
                Status::Grpc {
                    answer,
                    detail: String::new(),
                }
            }
            // The call's own deadline (`limit`), passed here: as the server
            // would have said it.
            Err(s) if limit.is_some() && root(&s) == "Timeout expired" => Status::Grpc {
                answer: GrpcAnswer::Code(DEADLINE_EXCEEDED),
                detail: format!(
                    "no answer in {} (without --timeout, a call is given that long)",
                    crate::human::human(CALL_TIMEOUT)
                ),
            },
            // Not the server's answer: the connection failed under the call.
            Err(s) if std::error::Error::source(&s).is_some() => {
                let target = &self.opts.target;
                if self.tls.is_none()
                    && super::http::reply::speaks_tls(&target.host, target.port).await
                {
                    return Status::Net {
                        failure: NetFailure::BadReply,
                        detail: "the server speaks TLS here: add --grpc-tls".to_string(),
                    };
                }
                Status::Net {
                    failure: NetFailure::Lost,
                    detail: format!("{}: {}", target.shown(), root(&s)),
                }
            }
            Err(s) => Status::Grpc {
                answer: GrpcAnswer::Code(s.code() as i32),
                detail: s.message().to_string(),
            },
        }
    }

    /// Connect to the target (each address in turn), then TLS if asked.
    async fn connect(&self) -> Result<Box<dyn Io>, Status> {
        let within = self.opts.connect_timeout;
        let target = &self.opts.target;
        let shown = target.shown();
        let fail = |failure, detail: String| Status::Net { failure, detail };
        let (stream, _) = super::tcp::connect_first(target, within).await?;
        let Some(config) = &self.tls else {
            return Ok(Box::new(stream));
        };
        let name = self.opts.authority.as_deref().unwrap_or(&target.host);
        let server = ServerName::try_from(name.to_string()).map_err(|_| {
            fail(
                NetFailure::Other,
                format!("{name} is not a name TLS can check: give --grpc-authority NAME"),
            )
        })?;
        let handshake =
            tokio_rustls::TlsConnector::from(Arc::clone(config)).connect(server, stream);
        match tokio::time::timeout(within, handshake).await {
            Ok(Ok(tls)) => Ok(Box::new(tls)),
            Ok(Err(e)) => Err(
                match e.get_ref().and_then(|e| e.downcast_ref::<rustls::Error>()) {
                    Some(t) => fail(
                        NetFailure::Tls,
                        tls::explain(t, tls::Advice::for_http(self.cacert))
                            .replace("(is it http://?)", "(leave out --grpc-tls)"),
                    ),
                    None => fail(
                        NetFailure::Tls,
                        format!(
                            "{shown}: {} (is it a plaintext server? leave out --grpc-tls)",
                            io_error(&e)
                        ),
                    ),
                },
            ),
            Err(_) => Err(fail(
                NetFailure::ConnectTimeout,
                format!("{shown}: TLS handshake"),
            )),
        }
    }
}

impl Attempt for GrpcAttempt {
    async fn run(&mut self, ctx: &Context, signals: &mut Signals) -> Status {
        self.details = Details::default();
        let first = *self.first.get_or_insert_with(Instant::now);
        let limit = ctx.deadline.map_or(Limit::Attempt, |(_, l)| l);
        let wake = ctx.deadline.map(|(at, _)| at);
        // The attempt's own deadline bounds the call when there is one.
        let call = ctx.deadline.is_none().then_some(CALL_TIMEOUT);
        let check = self.check(call);
        tokio::pin!(check);
        let status = loop {
            tokio::select! {
                status = &mut check => break status,
                () = crate::bound::until(wake) => {
                    return Status::Net {
                        failure: NetFailure::TimedOut(limit),
                        detail: self.opts.target.shown(),
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
        };
        match status {
            Status::Grpc {
                answer: GrpcAnswer::Code(NOT_FOUND),
                detail,
            } if first.elapsed() >= NOT_FOUND_GRACE => Status::Grpc {
                answer: GrpcAnswer::UnknownService(self.opts.service.clone()),
                detail,
            },
            other => other,
        }
    }

    fn details(&mut self) -> Details {
        std::mem::take(&mut self.details)
    }
}

/// gRPC's NOT_FOUND: the health service does not know the service named.
const NOT_FOUND: i32 = 5;
/// gRPC's DEADLINE_EXCEEDED: the call took longer than its deadline.
const DEADLINE_EXCEEDED: i32 = 4;

/// The innermost cause of a transport error, in words.
fn root(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    match cur.downcast_ref::<std::io::Error>() {
        Some(io) => io_error(io),
        None => cur.to_string(),
    }
}
