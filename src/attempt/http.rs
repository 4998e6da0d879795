//! HTTP attempts: send the `--http` request once and report what came back.
//!
//! One client per run, reused by every attempt, so a retry can ride the
//! connection the previous attempt left open. reqwest's own retries are off:
//! the retry loop is the only place that decides to try again. The response
//! body is read in full before the attempt counts as done, so a connection
//! that breaks mid-body is a failed attempt and never half a body on stdout;
//! the caller delivers the last body once the run is known to have succeeded.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use reqwest::header::{HeaderMap, HeaderValue, RETRY_AFTER};
use reqwest::{Client, Method, Url};

use super::{Attempt, Context};
use crate::classify::{Limit, NetFailure, Status};
use crate::policy::{HttpOptions, IdempotencyKey};
use crate::signals::{Signals, is_terminating};

/// Probes one URL per attempt.
pub struct HttpAttempt {
    client: Client,
    method: Method,
    url: Url,
    headers: HeaderMap,
    /// `--data`, sent again with every attempt.
    body: Option<Vec<u8>>,
    last_body: Option<Vec<u8>>,
}

impl HttpAttempt {
    /// Build the client and the request every attempt repeats. `body` is the
    /// `--data` already read. Fails only when the HTTP client cannot be set up.
    pub fn new(opts: &HttpOptions, body: Option<Vec<u8>>) -> Result<HttpAttempt, String> {
        let client = build_client(opts).map_err(|e| format!("cannot set up HTTP: {}", root(&e)))?;
        let mut headers = HeaderMap::with_capacity(opts.headers.len() + 1);
        for (name, value) in &opts.headers {
            headers.append(name.clone(), value.clone());
        }
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
            body,
            last_body: None,
        })
    }

    /// The body of the last response, taken out.
    pub fn take_body(&mut self) -> Option<Vec<u8>> {
        self.last_body.take()
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
        match response.bytes().await {
            Ok(body) => {
                self.last_body = Some(body.to_vec());
                Status::Http { code, retry_after }
            }
            Err(e) => failure(&e),
        }
    }
}

impl Attempt for HttpAttempt {
    async fn run(&mut self, ctx: &Context, signals: &mut Signals) -> Status {
        self.last_body = None;
        let limit = ctx.deadline.map_or(Limit::Attempt, |(_, l)| l);
        let wake = ctx.deadline.map(|(at, _)| at);
        let exchange = self.exchange();
        tokio::pin!(exchange);
        loop {
            tokio::select! {
                status = &mut exchange => return status,
                () = sleep_until(wake) => {
                    // Dropping the exchange closes its connection: nothing of
                    // a late response can leak into the next attempt.
                    return Status::Net {
                        failure: NetFailure::TimedOut(limit),
                        detail: String::new(),
                    };
                }
                sig = signals.recv() => {
                    if is_terminating(sig) {
                        return Status::Interrupted(sig as i32);
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

fn build_client(opts: &HttpOptions) -> reqwest::Result<Client> {
    let mut builder = Client::builder()
        .retry(reqwest::retry::never())
        .user_agent(concat!("retry/", env!("CARGO_PKG_VERSION")));
    if let Some(t) = opts.connect_timeout {
        builder = builder.connect_timeout(t);
    }
    if opts.url.scheme() == "https" {
        // reqwest is built without a provider of its own; it takes the
        // process default, and verifies against the system's roots.
        // Installing fails only if one is installed already, which is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
    } else {
        // Loading the system's root certificates costs milliseconds that a
        // plain http:// probe would pay on every run for nothing. Give
        // reqwest a TLS set-up with no trusted roots instead: nothing can be
        // verified with it, so a redirect to https:// fails as a TLS error
        // rather than ever being trusted blindly; the redirect policy below
        // stops such a redirect first and reports the 3xx.
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map(|b| {
                b.with_root_certificates(rustls::RootCertStore::empty())
                    .with_no_client_auth()
            });
        if let Ok(tls) = tls {
            builder =
                builder
                    .tls_backend_preconfigured(tls)
                    .redirect(reqwest::redirect::Policy::custom(|attempt| {
                        if attempt.url().scheme() == "https" {
                            attempt.stop()
                        } else if attempt.previous().len() >= 10 {
                            attempt.error("more than 10 redirects")
                        } else {
                            attempt.follow()
                        }
                    }));
        }
    }
    builder.build()
}

/// Classify a failed exchange by what went wrong.
fn failure(e: &reqwest::Error) -> Status {
    let kind = if is_tls(e) {
        NetFailure::Tls
    } else if e.is_dns() {
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

/// Whether a TLS error is anywhere in the chain.
fn is_tls(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur = Some(e);
    while let Some(err) = cur {
        if err.is::<rustls::Error>() {
            return true;
        }
        cur = cause(err);
    }
    false
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
