//! HTTP attempts: send the `--http` request once and report what came back.
//!
//! One client per run, used by every attempt, but no connection is kept
//! for a later request: a connection the server is closing just then (its
//! keep-alive time out) would fail the request for no fault of the server,
//! and a POST so failed could not be retried. The client's own retries and
//! redirects are off: the retry loop alone decides to try again, and
//! `redirect` decides hop by hop what follows a redirect. An accepted
//! response's body is streamed as it arrives to its [`Sink`]: stdout, or a
//! private temporary file beside `-o FILE` that the caller puts in place
//! once the run has succeeded. Memory stays flat whatever the body's size.
//! The body of a response that is not accepted is discarded unread.
//!
//! An attempt ends at `--timeout`, `--max-time`, or after `--idle-timeout`
//! without a byte received; once part of a body has reached stdout, any
//! such end is final (a reader cannot be given the body twice). With `-o`,
//! a body cut off or timed out is resumed by the next attempt (`resume`).

mod pinned;
mod redirect;
pub(crate) mod reply;
pub mod request;
mod resume;
mod sink;
pub mod tls;

use std::cell::Cell;
use std::time::{Duration, Instant, SystemTime};

use nix::sys::signal::Signal;
use reqwest::header::{HeaderMap, HeaderValue, IF_RANGE, LOCATION, RANGE};
use reqwest::{Client, Method, Response, Url, Version};
use rustls::pki_types::CertificateDer;

pub use request::{
    Body, CONNECT_TIMEOUT, Data, HttpOptions, IDLE_TIMEOUT, IdempotencyKey, MAX_REDIRS,
};
pub use sink::{FileSink, Sink};

use super::{Attempt, Context, Details};
use crate::classify::{Limit, NetFailure, Status, StatusSet};
use crate::human::human;
use crate::ratelimit::Hints;
use crate::signals::{Signals, is_terminating, suspend_self};
use resume::Partial;

/// Everything read and checked before the first request: the final headers
/// (with `-H @FILE`'s and the body's Content-Type), the body, `--cacert`'s
/// certificates, and where the body goes.
pub struct Prepared<'t> {
    pub headers: HeaderMap,
    pub body: Option<Vec<u8>>,
    pub extra_roots: Vec<CertificateDer<'static>>,
    pub sink: Sink<'t>,
}

/// Probes one URL per attempt.
pub struct HttpAttempt<'t> {
    client: Client,
    method: Method,
    url: Url,
    headers: HeaderMap,
    /// `--data` or `--json`, sent again with every attempt.
    body: Option<Vec<u8>>,
    /// Statuses whose body is delivered (`--expect`).
    expect: StatusSet,
    sink: Sink<'t>,
    /// `--idle-timeout`.
    idle: Option<Duration>,
    max_redirs: u32,
    /// `--cacert` was given (the TLS hints take it into account).
    cacert: bool,
    /// `--unix-socket`: every connection goes through it.
    unix_socket: Option<std::path::PathBuf>,
    /// A body an earlier attempt left partly in the `-o` file, which the
    /// server said may be resumed.
    partial: Option<Partial>,
    /// With `-v`: the start of a failed response's body, for the log.
    excerpts: bool,
    notes: Vec<String>,
}

/// How much of a failed response's body `-v` shows, and how long retry
/// waits for it: enough to read the server's complaint, never a whole page.
const EXCERPT_BYTES: usize = 200;
const EXCERPT_WAIT: Duration = Duration::from_millis(500);

/// Why the body could not be delivered.
enum Delivery {
    /// The connection broke before the body's end.
    Cut(reqwest::Error),
    /// Writing it failed.
    Write(std::io::Error),
}

/// What the attempt's timers watch while the exchange runs.
struct Progress {
    /// When a byte last arrived (or the attempt began).
    last: Cell<Instant>,
    /// Part of a body has reached stdout (or a device): the attempt can no
    /// longer be repeated.
    live: Cell<bool>,
    /// A chunk is being written out: the reader, not the server, is slow.
    writing: Cell<bool>,
}

impl Progress {
    fn touch(&self) {
        self.last.set(Instant::now());
    }

    /// The failure for an attempt stopped by `limit`.
    fn stopped(&self, limit: Limit) -> NetFailure {
        if self.live.get() {
            NetFailure::TimedOutAfterOutput(limit)
        } else {
            NetFailure::TimedOut(limit)
        }
    }
}

impl<'t> HttpAttempt<'t> {
    /// Build the client and the request every attempt repeats. Fails only
    /// when the HTTP client cannot be set up.
    pub fn new(
        opts: &HttpOptions,
        prepared: Prepared<'t>,
        expect: StatusSet,
        idle: Option<Duration>,
        excerpts: bool,
    ) -> Result<HttpAttempt<'t>, String> {
        let cacert = !prepared.extra_roots.is_empty();
        let client = build_client(opts, prepared.extra_roots)?;
        let mut headers = prepared.headers;
        let key = match &opts.idempotency_key {
            None => None,
            Some(IdempotencyKey::Given(v)) => Some(v.clone()),
            Some(IdempotencyKey::Auto) => {
                // A UUID's text is always a valid header value.
                HeaderValue::from_str(&uuid::Uuid::new_v4().to_string()).ok()
            }
        };
        if let Some(k) = key {
            // One key for the whole run: that is what lets the server
            // recognise a retry of work it already did.
            headers.insert("idempotency-key", k);
        }
        Ok(HttpAttempt {
            client,
            method: opts.method.clone(),
            url: opts.url.clone(),
            headers,
            body: prepared.body,
            expect,
            sink: prepared.sink,
            idle,
            max_redirs: opts.max_redirs,
            cacert,
            unix_socket: opts.unix_socket.clone(),
            partial: None,
            excerpts,
            notes: Vec::new(),
        })
    }

    /// Where the body went; the caller puts a `-o` file in place.
    pub fn into_sink(self) -> Sink<'t> {
        self.sink
    }

    async fn exchange(&mut self, progress: &Progress) -> Status {
        // Only a GET's body is resumed, and only into a file.
        let resumable = self.method == Method::GET && matches!(self.sink, Sink::File(_));
        loop {
            let held = self.sink.held();
            let ranged = self
                .partial
                .clone()
                .filter(|_| resumable && held > 0)
                .map(|p| (held, p));
            if let Some((held, _)) = &ranged {
                self.notes
                    .push(format!("asking for the rest of the body, from byte {held}"));
            }
            let range = ranged.as_ref().map(|(held, p)| (*held, &p.validator));
            let response = match self.follow(range, progress).await {
                Ok(r) => r,
                Err(status) => return status,
            };
            let code = response.status().as_u16();
            let mut hints = hints(code, response.headers(), SystemTime::now());
            // What was not usable, and why, for -v.
            self.notes.extend(hints.ignored.iter().cloned());
            // A continuation is reported as the response it continues.
            let (from, reported) = match &ranged {
                Some((held, p)) if code == 206 => {
                    match resume::mismatch(p, response.headers(), *held) {
                        None => (*held, p.code),
                        Some(why) => {
                            self.notes.push(format!("{why}: starting over"));
                            self.partial = None;
                            continue;
                        }
                    }
                }
                Some(_) if code == 416 => {
                    self.notes
                        .push("the server cannot send that range (416): starting over".into());
                    self.partial = None;
                    continue;
                }
                _ => (0, code),
            };
            if !self.expect.contains(reported) {
                let github = crate::ratelimit::may_be_github_secondary(
                    code,
                    response.headers().contains_key("x-github-request-id"),
                    &hints,
                );
                if self.excerpts || github {
                    let mut response = response;
                    let bytes =
                        reply::first_bytes(&mut response, EXCERPT_BYTES, EXCERPT_WAIT).await;
                    if github {
                        hints = crate::ratelimit::github_secondary(code, hints, &bytes);
                    }
                    let start = excerpt(&bytes);
                    if self.excerpts && !start.is_empty() {
                        self.notes.push(format!("HTTP {code} body begins: {start}"));
                    }
                }
                // Dropping the response closes its connection unread: a large
                // error page costs nothing.
                return Status::Http { code, hints };
            }
            if from == 0 {
                if ranged.is_some() {
                    self.notes.push(format!(
                        "the server sent the whole body (HTTP {code}): starting over"
                    ));
                }
                // A new body: whether it may be resumed if it is cut off.
                self.partial = resumable
                    .then(|| resume::validator(response.headers()))
                    .flatten()
                    .map(|validator| Partial {
                        validator,
                        code,
                        length: resume::declared_length(response.headers()),
                    });
            }
            return match self.deliver(response, from, progress).await {
                Ok(()) => {
                    self.partial = None;
                    // The log shows what the server answered: a continuation's
                    // 206, unless --expect leaves 206 out, where the status it
                    // continues is the one judged, and shown.
                    let code = if code == 206 && !self.expect.contains(206) {
                        self.notes.push(format!(
                            "HTTP 206: the rest of the HTTP {reported} body, from byte {from}"
                        ));
                        reported
                    } else {
                        code
                    };
                    Status::Http { code, hints }
                }
                Err(Delivery::Cut(e)) => Status::Net {
                    failure: if progress.live.get() {
                        NetFailure::TruncatedOutput
                    } else {
                        NetFailure::Truncated
                    },
                    detail: reply::root(&e),
                },
                Err(Delivery::Write(e)) => Status::Net {
                    failure: NetFailure::Write,
                    detail: self.sink.describe_error(&e),
                },
            };
        }
    }

    /// Sends the request (asking for the body from byte N on when `range`
    /// says so) and follows its redirects: the final response, or why there
    /// is none.
    async fn follow(
        &mut self,
        range: Option<(u64, &HeaderValue)>,
        progress: &Progress,
    ) -> Result<Response, Status> {
        let mut url = self.url.clone();
        let mut method = self.method.clone();
        let mut headers = self.headers.clone();
        // This attempt's span, for the server's own.
        super::carrier::add_headers(&mut headers);
        let mut body = self.body.as_ref();
        if let Some((from, validator)) = range {
            headers.insert(RANGE, resume::range_from(from));
            headers.insert(IF_RANGE, validator.clone());
        }
        let mut hops = 0u32;
        loop {
            let mut request = self
                .client
                .request(method.clone(), url.clone())
                .headers(headers.clone());
            if let Some(b) = body {
                // A copy per request: small next to a network round trip.
                request = request.body(b.clone());
            }
            let response = match request.send().await {
                Ok(r) => r,
                Err(e) => {
                    let status = reply::failure(&e, self.cacert);
                    // Through a socket, the URL's host is never connected to.
                    return Err(match &self.unix_socket {
                        Some(path) => super::tcp::through_socket(path, status),
                        None => reply::or_tls_behind_http(status, &url).await,
                    });
                }
            };
            progress.touch();
            if response.version() == Version::HTTP_09 {
                return Err(reply::not_http(response).await);
            }
            let code = response.status().as_u16();
            if self.max_redirs == 0 || !redirect::is_followed(code) {
                return Ok(response);
            }
            let Some(location) = response.headers().get(LOCATION) else {
                return Ok(response);
            };
            let hop = redirect::next(&url, code, location, &method)
                .map_err(|(failure, detail)| Status::Net { failure, detail })?;
            let shown = crate::mask::url(hop.url.as_str());
            hops += 1;
            if hops > self.max_redirs {
                return Err(Status::Net {
                    failure: NetFailure::TooManyRedirects,
                    detail: format!(
                        "more than --max-redirs {} (the last: HTTP {code} to {shown})",
                        self.max_redirs
                    ),
                });
            }
            self.notes
                .push(format!("redirect {hops}: HTTP {code} to {shown}"));
            if hop.leaves_origin {
                redirect::strip_for_other_origin(&mut headers);
            }
            if hop.drop_body {
                body = None;
                redirect::strip_body_headers(&mut headers);
            }
            method = hop.method;
            url = hop.url;
            // The redirect's own body is dropped unread with `response`.
        }
    }

    /// Streams the body to the sink from byte `from` of the whole, chunk by
    /// chunk, marking progress as it goes.
    async fn deliver(
        &mut self,
        mut response: Response,
        from: u64,
        progress: &Progress,
    ) -> Result<(), Delivery> {
        self.sink.start_at(from).map_err(Delivery::Write)?;
        loop {
            let chunk = match response.chunk().await {
                Ok(Some(c)) => c,
                Ok(None) => break,
                Err(e) => return Err(Delivery::Cut(e)),
            };
            progress.touch();
            if chunk.is_empty() {
                continue;
            }
            // Waiting for stdout's reader is not the server's silence.
            progress.writing.set(true);
            let written = self.sink.write(chunk).await;
            progress.writing.set(false);
            progress.touch();
            written.map_err(Delivery::Write)?;
            if self.sink.is_live() {
                progress.live.set(true);
            }
        }
        self.sink.flush().map_err(Delivery::Write)
    }
}

/// The first bytes of a body (read waiting only briefly for them), masked,
/// on one line.
fn excerpt(bytes: &[u8]) -> String {
    let cut = bytes.len().min(EXCERPT_BYTES);
    // Masked line by line first, then flattened onto one line.
    let masked = crate::mask::text(&String::from_utf8_lossy(&bytes[..cut]));
    let mut text: String = masked
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    text = text.trim().to_string();
    if bytes.len() > EXCERPT_BYTES {
        text.push_str(" ...");
    }
    text
}

impl Attempt for HttpAttempt<'_> {
    fn details(&mut self) -> Details {
        Details {
            notes: std::mem::take(&mut self.notes),
            ..Details::default()
        }
    }

    async fn run(&mut self, ctx: &Context, signals: &mut Signals) -> Status {
        let limit = ctx.deadline.map_or(Limit::Attempt, |(_, l)| l);
        let wake = ctx.deadline.map(|(at, _)| at);
        let idle = self.idle;
        let progress = Progress {
            last: Cell::new(Instant::now()),
            live: Cell::new(false),
            writing: Cell::new(false),
        };
        let exchange = self.exchange(&progress);
        tokio::pin!(exchange);
        // Dropping the exchange (on any return below) closes its
        // connection: nothing of a late response can leak into the next
        // attempt. A DNS lookup still under way is left to its thread,
        // which retry does not wait for.
        loop {
            // While a chunk waits for stdout's reader, the idle timer
            // only looks again later: the server is not the one silent.
            let quiet_from = match progress.writing.get() {
                true => Instant::now(),
                false => progress.last.get(),
            };
            let quiet_until = idle.and_then(|d| quiet_from.checked_add(d));
            tokio::select! {
                status = &mut exchange => return status,
                () = crate::bound::until(wake) => {
                    return Status::Net {
                        failure: progress.stopped(limit),
                        detail: String::new(),
                    };
                }
                () = crate::bound::until(quiet_until) => {
                    // Bytes may have come since this timer was set.
                    if let Some(d) = idle
                        && !progress.writing.get()
                        && progress.last.get().elapsed() >= d
                    {
                        return Status::Net {
                            failure: progress.stopped(Limit::Idle),
                            detail: format!("nothing received for {}", human(d)),
                        };
                    }
                }
                sig = signals.recv() => {
                    if is_terminating(sig) {
                        return Status::Interrupted(sig as i32);
                    }
                    if sig == Signal::SIGTSTP {
                        // Ctrl-Z: stop until `fg` or `bg`, as in command
                        // mode. Time spent stopped is not the server's
                        // silence.
                        suspend_self();
                        progress.touch();
                    }
                }
            }
        }
    }
}

fn build_client(
    opts: &HttpOptions,
    extra_roots: Vec<CertificateDer<'static>>,
) -> Result<Client, String> {
    // The TLS set-up costs nothing until a TLS connection is made (the
    // roots are read then), so an http:// URL may be redirected to https://.
    let cacert = !extra_roots.is_empty();
    let tls = tls::client_config(extra_roots, opts.insecure).map_err(|e| {
        format!(
            "cannot set up TLS: {}",
            tls::explain(&e, tls::Advice::for_http(cacert))
        )
    })?;
    let builder = match &opts.unix_socket {
        // As curl's --unix-socket: the URL still names the host and path.
        Some(path) => Client::builder().unix_socket(path.clone()),
        None => Client::builder(),
    };
    builder
        .retry(reqwest::retry::never())
        .user_agent(concat!("retry/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(opts.connect_timeout)
        // Every request, attempt or redirect hop, on a new connection: see
        // the module's comment.
        .pool_max_idle_per_host(0)
        .tls_backend_preconfigured(tls)
        // The URL we came from is nobody else's business.
        .referer(false)
        // Followed by `follow`, which decides what goes along.
        .redirect(reqwest::redirect::Policy::none())
        // Only so that a reply that is not HTTP reaches `reply::not_http`
        // with its bytes: such a reply is never accepted.
        .http09_responses()
        .build()
        .map_err(|e| format!("cannot set up HTTP: {}", reply::root(&e)))
}

/// What the response's rate-limit fields say (see `ratelimit`).
fn hints(code: u16, headers: &HeaderMap, now: SystemTime) -> Hints {
    let fields: Vec<(&str, &[u8])> = headers
        .iter()
        .map(|(name, value)| (name.as_str(), value.as_bytes()))
        .collect();
    crate::ratelimit::read(code, &fields, now)
}
