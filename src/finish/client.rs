//! The HTTP client of the end-of-run outputs (the metrics push and the
//! heartbeat pings): HTTP mode's TLS set-up (the system's roots, or
//! `SSL_CERT_FILE`/`SSL_CERT_DIR`, read only when a TLS connection is made),
//! reqwest's own retries off, and a limit on every exchange, which also
//! gives way to a further terminating signal. Redirects are followed as
//! HTTP mode follows them: to http:// and https:// only, never from
//! https:// down to http://, where a ping's secret path, the metrics and
//! `--ping-log`'s summary would travel in clear.

use std::time::Duration;

use reqwest::{Client, RequestBuilder, Url};

use super::Ctx;
use crate::attempt::http::reply::{root, tls_error};
use crate::attempt::http::tls;

/// How much of an answer's body is read: enough for the server's one-line
/// complaint (the Pushgateway's "pushed metrics are invalid").
const BODY_START: usize = 300;

/// A client for retry's own short requests.
pub fn build() -> Result<Client, String> {
    build_trusting(Vec::new())
}

/// The same, trusting `extra_roots` beside the system's.
pub fn build_trusting(
    extra_roots: Vec<rustls::pki_types::CertificateDer<'static>>,
) -> Result<Client, String> {
    let tls = tls::client_config(extra_roots, false)
        .map_err(|e| format!("cannot set up TLS: {}", explain_tls(&e)))?;
    Client::builder()
        .retry(reqwest::retry::never())
        .user_agent(concat!("retry/", env!("CARGO_PKG_VERSION")))
        .tls_backend_preconfigured(tls)
        .referer(false)
        .redirect(reqwest::redirect::Policy::custom(|attempt| {
            match refusal(attempt.previous(), attempt.url()) {
                Some(why) => attempt.error(why),
                None => attempt.follow(),
            }
        }))
        .build()
        .map_err(|e| format!("cannot set up HTTP: {}", root(&e)))
}

/// Redirects followed in one exchange.
const MAX_REDIRECTS: usize = 5;

/// Why a redirect to `next`, after the requests to `previous`, is not
/// followed; `None` when it is. Never names a URL (a ping's path is a
/// secret).
fn refusal(previous: &[Url], next: &Url) -> Option<&'static str> {
    if previous.len() > MAX_REDIRECTS {
        return Some("too many redirects");
    }
    if !matches!(next.scheme(), "http" | "https") {
        return Some("redirected to a scheme other than http:// or https://: not followed");
    }
    let from_https = previous.last().is_some_and(|u| u.scheme() == "https");
    if from_https && next.scheme() == "http" {
        return Some(
            "redirected from https:// down to http://, where it would travel in clear: not followed",
        );
    }
    None
}

/// What came back.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    /// The start of the body, as text.
    pub body_start: String,
    /// The `Ping-Body-Limit` header's value, if one came (a heartbeat
    /// monitor's limit on what it keeps of a ping's body).
    pub body_limit: Option<String>,
}

/// Why no answer came back.
#[derive(Debug)]
pub enum Failure {
    /// The exchange took longer than its limit.
    TimedOut(Duration),
    /// It failed; in words, without the URL.
    Failed(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::TimedOut(limit) => {
                // A limit cut to the reports' bound, to a tenth of a second.
                let tenths = (limit.as_millis() + 50) / 100;
                let shown = Duration::from_millis(u64::try_from(tenths * 100).unwrap_or(u64::MAX));
                write!(f, "no answer within {}", crate::human::human(shown))
            }
            Failure::Failed(why) => f.write_str(why),
        }
    }
}

/// Sends `request` and reads the start of the answer, within `limit`.
pub async fn exchange(request: RequestBuilder, limit: Duration) -> Result<Answer, Failure> {
    let work = async {
        let mut response = request
            .send()
            .await
            .map_err(|e| describe(&e.without_url()))?;
        let status = response.status().as_u16();
        let body_limit = response
            .headers()
            .get("ping-body-limit")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let mut body = Vec::new();
        while body.len() < BODY_START {
            match response.chunk().await {
                Ok(Some(chunk)) => body.extend_from_slice(&chunk),
                // The status is what counts; a body cut short changes nothing.
                Ok(None) | Err(_) => break,
            }
        }
        body.truncate(BODY_START);
        Ok(Answer {
            status,
            body_start: String::from_utf8_lossy(&body).into_owned(),
            body_limit,
        })
    };
    match tokio::time::timeout(limit, work).await {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(why)) => Err(Failure::Failed(why)),
        Err(_) => Err(Failure::TimedOut(limit)),
    }
}

/// `work`, unless a terminating signal arrives first (a second Ctrl-C, a
/// supervisor's second TERM): then `None`, and the rest of the reporting
/// is skipped as well (`Ctx::cut`). Reporting never holds retry against
/// its caller's will.
pub async fn unless_cut<T>(work: impl Future<Output = T>, ctx: &mut Ctx<'_>) -> Option<T> {
    if ctx.cut.is_some() {
        return None;
    }
    tokio::select! {
        r = work => Some(r),
        sig = ctx.signals.next_terminating() => {
            ctx.cut = Some(sig);
            None
        }
    }
}

/// Why a piece of reporting did not happen, after [`unless_cut`].
pub fn cut_short(ctx: &Ctx<'_>) -> String {
    match ctx.cut {
        Some(sig) => format!("cut short by {}", crate::classify::signal_name(sig as i32)),
        None => "cut short".to_string(),
    }
}

/// A failed request in words, free of the URL (which may hold a secret).
fn describe(e: &reqwest::Error) -> String {
    if let Some(t) = tls_error(e) {
        return explain_tls(t);
    }
    let why = root(e);
    if e.is_connect() {
        format!("could not connect: {why}")
    } else {
        why
    }
}

/// A TLS failure in HTTP mode's words, without `--cacert`, which is HTTP
/// mode's alone: the system's trust (`SSL_CERT_FILE`) is what applies here.
fn explain_tls(e: &rustls::Error) -> String {
    tls::explain(e, tls::Advice::SystemOnly)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn urls(list: &[&str]) -> Vec<Url> {
        list.iter().map(|u| Url::parse(u).unwrap()).collect()
    }

    #[test]
    fn redirects_are_followed_as_http_mode_follows_them() {
        let next = |u: &str| Url::parse(u).unwrap();
        let https = urls(&["https://hc-ping.com/secret"]);
        assert_eq!(refusal(&https, &next("https://other.example/x")), None);
        assert!(
            refusal(&https, &next("http://hc-ping.com/secret"))
                .unwrap()
                .contains("in clear")
        );
        // From http:// anywhere, and up to https://.
        let http = urls(&["http://pg:9091/metrics"]);
        assert_eq!(refusal(&http, &next("http://pg2:9091/metrics")), None);
        assert_eq!(refusal(&http, &next("https://pg:9091/metrics")), None);
        // Down from any https:// hop of the chain.
        let up = urls(&["http://a/x", "https://a/x"]);
        assert!(refusal(&up, &next("http://a/y")).is_some());
        assert!(refusal(&http, &next("ftp://a/x")).is_some());
        let long = urls(&["http://a/1"; 6]);
        assert_eq!(
            refusal(&long, &next("http://a/7")),
            Some("too many redirects")
        );
        let message = refusal(&https, &next("http://hc-ping.com/secret")).unwrap();
        assert!(!message.contains("secret"));
    }
}
