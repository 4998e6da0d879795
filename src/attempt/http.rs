//! HTTP attempts: send the `--http` request once and report what came back.
//!
//! One client per run, reused by every attempt, so a retry can ride the
//! connection the previous attempt left open. reqwest's own retries are off:
//! the retry loop is the only place that decides to try again. An accepted
//! response's body is streamed as it arrives to its [`Sink`]: stdout, or a
//! temporary file beside `-o FILE` that the caller renames into place once
//! the run has succeeded. Memory stays flat whatever the body's size. The
//! body of a response that is not accepted is discarded unread.

pub mod request;
mod tls;

use std::io::{Seek, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use nix::sys::signal::Signal;
use reqwest::header::{HeaderMap, HeaderValue, RETRY_AFTER};
use reqwest::{Client, Method, Response, Url};
use rustls::pki_types::CertificateDer;

pub use request::{Body, CONNECT_TIMEOUT, Data, HttpOptions, IdempotencyKey};

use super::{Attempt, Context, Details};
use crate::classify::{Limit, NetFailure, Status, StatusSet};
use crate::signals::{Signals, is_terminating, suspend_self};

/// Where an accepted response's body goes.
pub enum Sink {
    Stdout,
    /// `-o` naming something that is not a regular file (`/dev/null`, a
    /// FIFO): written directly, as stdout is.
    Direct(std::fs::File),
    /// `-o FILE`: a temporary file in FILE's directory, renamed to FILE on
    /// success and removed otherwise.
    File {
        target: PathBuf,
        temp: tempfile::NamedTempFile,
    },
}

/// Everything read and checked before the first request: the final headers
/// (with `-H @FILE`'s and the body's Content-Type), the body, `--cacert`'s
/// certificates, and where the body goes.
pub struct Prepared {
    pub headers: HeaderMap,
    pub body: Option<Vec<u8>>,
    pub extra_roots: Vec<CertificateDer<'static>>,
    pub sink: Sink,
}

/// Probes one URL per attempt.
pub struct HttpAttempt {
    client: Client,
    method: Method,
    url: Url,
    headers: HeaderMap,
    /// `--data` or `--json`, sent again with every attempt.
    body: Option<Vec<u8>>,
    /// Statuses whose body is delivered (`--expect`).
    expect: StatusSet,
    sink: Sink,
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

impl HttpAttempt {
    /// Build the client and the request every attempt repeats. Fails only
    /// when the HTTP client cannot be set up.
    pub fn new(
        opts: &HttpOptions,
        prepared: Prepared,
        expect: StatusSet,
        excerpts: bool,
    ) -> Result<HttpAttempt, String> {
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
            excerpts,
            notes: Vec::new(),
        })
    }

    /// Where the body went; the caller renames a `-o` file into place.
    pub fn into_sink(self) -> Sink {
        self.sink
    }

    async fn exchange(&mut self) -> Status {
        let mut request = self
            .client
            .request(self.method.clone(), self.url.clone())
            .headers(self.headers.clone());
        if let Some(b) = &self.body {
            // A copy per attempt: small next to a network round trip.
            request = request.body(b.clone());
        }
        let response = match request.send().await {
            Ok(r) => r,
            Err(e) => return failure(&e),
        };
        let code = response.status().as_u16();
        let retry_after = response
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| parse_retry_after(v, SystemTime::now()));
        if !self.expect.contains(code) {
            if self.excerpts {
                let start = excerpt(response).await;
                if !start.is_empty() {
                    self.notes.push(format!("HTTP {code} body begins: {start}"));
                }
            }
            // Dropping the response closes its connection unread: a large
            // error page costs nothing.
            return Status::Http { code, retry_after };
        }
        match self.deliver(response).await {
            Ok(()) => Status::Http { code, retry_after },
            Err((Delivery::Cut(e), delivered)) => Status::Net {
                failure: if delivered {
                    NetFailure::TruncatedOutput
                } else {
                    NetFailure::Truncated
                },
                detail: root(&e),
            },
            Err((Delivery::Write(e), _)) => Status::Net {
                failure: NetFailure::Write,
                detail: match (&self.sink, e.kind()) {
                    (Sink::Stdout, std::io::ErrorKind::BrokenPipe) => {
                        "stdout was closed by its reader".to_string()
                    }
                    (Sink::Stdout, _) => format!("stdout: {e}"),
                    (Sink::Direct(_), _) => format!("--output: {e}"),
                    (Sink::File { target, .. }, _) => format!("{}: {e}", target.display()),
                },
            },
        }
    }

    /// Stream the body to the sink, chunk by chunk. On failure, also says
    /// whether any of it already reached stdout (which cannot be taken back).
    async fn deliver(&mut self, mut response: Response) -> Result<(), (Delivery, bool)> {
        let mut delivered = false;
        if let Sink::File { temp, .. } = &mut self.sink {
            // A previous attempt's partial body must not survive.
            let f = temp.as_file_mut();
            f.set_len(0)
                .and_then(|()| f.rewind())
                .map_err(|e| (Delivery::Write(e), false))?;
        }
        loop {
            let chunk = match response.chunk().await {
                Ok(Some(c)) => c,
                Ok(None) => break,
                Err(e) => return Err((Delivery::Cut(e), delivered)),
            };
            let written = match &mut self.sink {
                Sink::Stdout => std::io::stdout().lock().write_all(&chunk),
                Sink::Direct(f) => f.write_all(&chunk),
                Sink::File { temp, .. } => temp.as_file_mut().write_all(&chunk),
            };
            written.map_err(|e| (Delivery::Write(e), delivered))?;
            delivered |= !matches!(self.sink, Sink::File { .. }) && !chunk.is_empty();
        }
        let flushed = match &mut self.sink {
            Sink::Stdout => std::io::stdout().lock().flush(),
            Sink::Direct(f) => f.flush(),
            Sink::File { temp, .. } => temp.as_file_mut().flush(),
        };
        flushed.map_err(|e| (Delivery::Write(e), delivered))
    }
}

/// The first bytes of a body, masked, on one line, waiting only briefly
/// for them.
async fn excerpt(mut response: Response) -> String {
    let mut bytes = Vec::new();
    let read = async {
        while bytes.len() < EXCERPT_BYTES {
            match response.chunk().await {
                Ok(Some(c)) => bytes.extend_from_slice(&c),
                _ => break,
            }
        }
    };
    let _ = tokio::time::timeout(EXCERPT_WAIT, read).await;
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

impl Attempt for HttpAttempt {
    fn details(&mut self) -> Details {
        Details {
            notes: std::mem::take(&mut self.notes),
            ..Details::default()
        }
    }

    async fn run(&mut self, ctx: &Context, signals: &mut Signals) -> Status {
        let limit = ctx.deadline.map_or(Limit::Attempt, |(_, l)| l);
        let wake = ctx.deadline.map(|(at, _)| at);
        let exchange = self.exchange();
        tokio::pin!(exchange);
        loop {
            tokio::select! {
                status = &mut exchange => return status,
                () = sleep_until(wake) => {
                    // Dropping the exchange closes its connection: nothing of
                    // a late response can leak into the next attempt. A DNS
                    // lookup still under way is left to its thread, which
                    // retry does not wait for.
                    return Status::Net {
                        failure: NetFailure::TimedOut(limit),
                        detail: String::new(),
                    };
                }
                sig = signals.recv() => {
                    if is_terminating(sig) {
                        return Status::Interrupted(sig as i32);
                    }
                    if sig == Signal::SIGTSTP {
                        // Ctrl-Z: stop until `fg` or `bg`, as in command mode.
                        suspend_self();
                    }
                }
            }
        }
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

fn build_client(
    opts: &HttpOptions,
    extra_roots: Vec<CertificateDer<'static>>,
) -> Result<Client, String> {
    // The TLS set-up costs nothing until a TLS connection is made (the
    // roots are read then), so an http:// URL may be redirected to https://.
    let tls = tls::client_config(extra_roots, opts.insecure)
        .map_err(|e| format!("cannot set up TLS: {}", tls::explain(&e)))?;
    Client::builder()
        .retry(reqwest::retry::never())
        .user_agent(concat!("retry/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(opts.connect_timeout)
        .tls_backend_preconfigured(tls)
        // The URL we came from is nobody else's business; reqwest already
        // drops Authorization, Cookie and Proxy-Authorization when a redirect
        // leaves the origin.
        .referer(false)
        .redirect(reqwest::redirect::Policy::limited(10))
        .build()
        .map_err(|e| format!("cannot set up HTTP: {}", root(&e)))
}

/// Classify a failed exchange by what went wrong.
fn failure(e: &reqwest::Error) -> Status {
    if let Some(t) = tls_error(e) {
        return Status::Net {
            failure: NetFailure::Tls,
            detail: tls::explain(t),
        };
    }
    let kind = if e.is_dns() {
        NetFailure::Dns
    } else if e.is_connect() && e.is_timeout() {
        NetFailure::ConnectTimeout
    } else if e.is_connect() {
        NetFailure::Connect
    } else if e.is_timeout() {
        NetFailure::TimedOut(Limit::Attempt)
    } else if e.is_request() || e.is_body() {
        NetFailure::Lost
    } else {
        NetFailure::Other
    };
    Status::Net {
        failure: kind,
        detail: root(e),
    }
}

/// The next error down the chain. `io::Error::source()` skips the error it
/// wraps (and rustls and hyper nest io::Errors two deep), so look inside.
fn cause<'a>(
    err: &'a (dyn std::error::Error + 'static),
) -> Option<&'a (dyn std::error::Error + 'static)> {
    if let Some(io) = err.downcast_ref::<std::io::Error>()
        && let Some(inner) = io.get_ref()
    {
        return Some(inner);
    }
    err.source()
}

/// The TLS error anywhere in the chain, if there is one.
fn tls_error<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a rustls::Error> {
    let mut cur = Some(e);
    while let Some(err) = cur {
        if let Some(t) = err.downcast_ref::<rustls::Error>() {
            return Some(t);
        }
        cur = cause(err);
    }
    None
}

/// The innermost cause: the most specific wording, and free of the URL
/// (which reqwest's outer message repeats, query string and all).
fn root(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = e;
    while let Some(next) = cause(cur) {
        cur = next;
    }
    cur.to_string()
}

/// Retry-After as a wait from `now`: delta-seconds (`120`) or an HTTP-date
/// (`Wed, 21 Oct 2026 07:28:00 GMT`; a date already past means no wait).
/// Anything else is ignored, as if the header were absent.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let v = value.trim();
    if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
        // More digits than u64 holds is still "a very long time".
        return Some(Duration::from_secs(v.parse::<u64>().unwrap_or(u64::MAX)));
    }
    let at = httpdate::parse_http_date(v).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn retry_after_seconds() {
        let now = at(1_000);
        assert_eq!(parse_retry_after("1", now), Some(Duration::from_secs(1)));
        assert_eq!(
            parse_retry_after(" 120 ", now),
            Some(Duration::from_secs(120))
        );
        assert_eq!(parse_retry_after("0", now), Some(Duration::ZERO));
        assert_eq!(
            parse_retry_after("99999999999999999999999", now),
            Some(Duration::from_secs(u64::MAX))
        );
        for bad in ["", "-1", "1.5", "soon", "1s"] {
            assert_eq!(parse_retry_after(bad, now), None, "{bad:?}");
        }
    }

    #[test]
    fn retry_after_dates() {
        // 1994-11-06 08:49:37 UTC, the RFC's own example date.
        let date = 784_111_777;
        let now = at(date - 30);
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now),
            Some(Duration::from_secs(30))
        );
        // The obsolete forms are accepted too.
        assert_eq!(
            parse_retry_after("Sunday, 06-Nov-94 08:49:37 GMT", now),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            parse_retry_after("Sun Nov  6 08:49:37 1994", now),
            Some(Duration::from_secs(30))
        );
        // A date in the past: no wait at all.
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", at(date + 5)),
            Some(Duration::ZERO)
        );
        assert_eq!(
            parse_retry_after("Sun, 32 Nov 1994 08:49:37 GMT", now),
            None
        );
    }
}
