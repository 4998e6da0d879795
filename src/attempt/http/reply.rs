//! What went wrong with an exchange, as a `Status` with its detail in
//! words: the HTTP client's error classified by its cause, and a reply
//! that is not HTTP at all recognised for what it is.
//!
//! The client accepts HTTP/0.9 replies (a body with no status line) only
//! so that retry gets to see the bytes of a reply that is not HTTP: nothing
//! is ever delivered from one. A reply that begins with a TLS record is a
//! TLS server behind an http:// URL, and says so. So is a server that hangs
//! up on a plain request without a byte, as OpenSSL's do, when a TLS hello
//! sent to it on a second connection gets a TLS record back.

use std::sync::Arc;
use std::time::Duration;

use reqwest::{Response, Url};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::tls;
use crate::classify::{Limit, NetFailure, Status};
use crate::human::escape_controls;

/// How much of a reply that is not HTTP is read to say what it is, and how
/// long retry waits for it.
const SNIFF_BYTES: usize = 32;
const SNIFF_WAIT: Duration = Duration::from_millis(500);

/// Classify a failed exchange by what went wrong. `cacert`: the user gave
/// `--cacert` (a hint must not tell them to).
pub fn failure(e: &reqwest::Error, cacert: bool) -> Status {
    if let Some(t) = tls_error(e) {
        return Status::Net {
            failure: NetFailure::Tls,
            detail: tls::explain(t, tls::Advice::for_http(cacert)),
        };
    }
    if let Some(why) = malformed(e) {
        return Status::Net {
            failure: NetFailure::BadReply,
            detail: why,
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
    // A connect timeout's root is the timer's own "deadline has elapsed":
    // nothing to add, and "deadline" is --max-time's word in the log.
    let detail = match kind {
        NetFailure::ConnectTimeout => String::new(),
        _ => root(e),
    };
    Status::Net {
        failure: kind,
        detail,
    }
}

/// What hyper found malformed in a reply, in words.
fn malformed(e: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut cur = Some(e);
    while let Some(err) = cur {
        if let Some(h) = err.downcast_ref::<hyper::Error>()
            && h.is_parse()
        {
            let text = h.to_string();
            return Some(if h.is_parse_status() {
                "its status code is not a number from 100 to 999".to_string()
            } else if text.contains("too large") {
                "its header is too large".to_string()
            } else if text.contains("content-length") {
                "its Content-Length is invalid, or given twice with different values".to_string()
            } else if text.contains("transfer-encoding") {
                "its Transfer-Encoding is invalid".to_string()
            } else if text.contains("header") {
                "a header line is malformed".to_string()
            } else {
                text
            });
        }
        cur = cause(err);
    }
    None
}

/// A reply without an HTTP status line (taken for HTTP/0.9 by the
/// client): a TLS server behind an http:// URL, or something else that
/// does not speak HTTP. Reads its first bytes, briefly, to say which.
pub async fn not_http(mut response: Response) -> Status {
    let bytes = first_bytes(&mut response, SNIFF_BYTES, SNIFF_WAIT).await;
    Status::Net {
        failure: NetFailure::BadReply,
        detail: describe(&bytes),
    }
}

/// `status`, or what it turns out to be: a TLS server behind an http://
/// URL that closed or reset the connection without a reply (OpenSSL-based
/// servers, such as `openssl s_server` and Python's `ssl` module, answer a
/// plain request so, where others send a TLS alert). Such a loss is checked
/// once: a TLS hello on a fresh connection, and whether a TLS record comes
/// back within a short wait. Through a proxy the server is not reached
/// directly, and nothing is checked.
pub async fn or_tls_behind_http(status: Status, url: &Url) -> Status {
    let lost = matches!(
        status,
        Status::Net {
            failure: NetFailure::Lost,
            ..
        }
    );
    if !lost || url.scheme() != "http" || proxied() {
        return status;
    }
    let (Some(host), Some(port)) = (url.host_str(), url.port_or_known_default()) else {
        return status;
    };
    let reply = tokio::time::timeout(SNIFF_WAIT, tls_reply(host, port)).await;
    if reply.is_ok_and(|bytes| is_tls_record(&bytes)) {
        return Status::Net {
            failure: NetFailure::BadReply,
            detail: TLS_HERE.to_string(),
        };
    }
    status
}

/// Whether a proxy from the environment could stand between retry and the
/// server (the client takes its proxies from there).
fn proxied() -> bool {
    ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|v| !v.is_empty()))
}

/// Whether the server at `host:port` answers a TLS hello as a TLS server
/// (gRPC mode's check of a plaintext call that failed).
pub async fn speaks_tls(host: &str, port: u16) -> bool {
    tokio::time::timeout(SNIFF_WAIT, tls_reply(host, port))
        .await
        .is_ok_and(|bytes| is_tls_record(&bytes))
}

/// The first bytes a server at `host:port` answers a TLS hello with.
async fn tls_reply(host: &str, port: u16) -> Vec<u8> {
    let Some(hello) = client_hello(host) else {
        return Vec::new();
    };
    let Ok(mut tcp) = tokio::net::TcpStream::connect((host.trim_matches(['[', ']']), port)).await
    else {
        return Vec::new();
    };
    let mut bytes = vec![0u8; 8];
    if tcp.write_all(&hello).await.is_err() {
        return Vec::new();
    }
    let n = tcp.read(&mut bytes).await.unwrap_or(0);
    bytes.truncate(n);
    bytes
}

/// A TLS ClientHello for `host`, as rustls writes one.
fn client_hello(host: &str) -> Option<Vec<u8>> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .ok()?
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth();
    let name =
        rustls::pki_types::ServerName::try_from(host.trim_matches(['[', ']']).to_string()).ok()?;
    let mut conn = rustls::ClientConnection::new(Arc::new(config), name).ok()?;
    let mut hello = Vec::new();
    conn.write_tls(&mut hello).ok()?;
    Some(hello)
}

/// Whether `bytes` begin a TLS record: handshake (22) or alert (21), then
/// version 3.x.
fn is_tls_record(bytes: &[u8]) -> bool {
    matches!(bytes, [21 | 22, 3, ..])
}

const TLS_HERE: &str = "the server speaks TLS here: use https://";

/// A body's first `max` bytes (or a little more: chunks come whole), or
/// what came of them before it ended or `wait` ran out.
pub(super) async fn first_bytes(response: &mut Response, max: usize, wait: Duration) -> Vec<u8> {
    let mut bytes = Vec::new();
    let read = async {
        while bytes.len() < max {
            match response.chunk().await {
                Ok(Some(c)) => bytes.extend_from_slice(&c),
                _ => break,
            }
        }
    };
    let _ = tokio::time::timeout(wait, read).await;
    bytes
}

/// What the first bytes of a reply that is not HTTP look like.
pub fn describe(bytes: &[u8]) -> String {
    if is_tls_record(bytes) {
        return TLS_HERE.to_string();
    }
    let start = &bytes[..bytes.len().min(SNIFF_BYTES)];
    let text = crate::mask::text(&String::from_utf8_lossy(start));
    format!("it begins with '{}'", escape_controls(text.trim_end()))
}

/// The next error down the chain. `io::Error::source()` skips the error it
/// wraps (and rustls and hyper nest io::Errors two deep), so look inside.
pub(crate) fn cause<'a>(
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
pub(crate) fn tls_error<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a rustls::Error> {
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
pub fn root(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = e;
    while let Some(next) = cause(cur) {
        cur = next;
    }
    match cur.downcast_ref::<std::io::Error>() {
        Some(io) => crate::human::io_error(io),
        None => cur.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_reply_that_is_not_http_looks_like() {
        // A TLS alert, as a TLS server answers a plain-text request.
        assert_eq!(
            describe(&[21, 3, 3, 0, 2, 2, 50]),
            "the server speaks TLS here: use https://"
        );
        assert_eq!(
            describe(&[22, 3, 1, 0, 200]),
            "the server speaks TLS here: use https://"
        );
        assert_eq!(describe(b"hello there\r\n"), "it begins with 'hello there'");
        assert_eq!(
            describe(b"SSH-2.0-OpenSSH_9.2p1 Debian\r\n"),
            "it begins with 'SSH-2.0-OpenSSH_9.2p1 Debian'"
        );
        assert_eq!(describe(b"a\x1b[2Jb"), "it begins with 'a\\x1b[2Jb'");
        let long = describe(&[b'x'; 100]);
        assert_eq!(
            long,
            format!("it begins with '{}'", "x".repeat(SNIFF_BYTES))
        );
    }
}
