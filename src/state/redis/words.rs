//! Why a Redis server could not be used, in words: a TLS failure named as
//! such, a server error without the crate's decorations, and a look at a
//! server that did not answer (did it accept the connection? does it speak
//! plain-text Redis where TLS was asked for?).

use std::time::Duration;

use anyhow::anyhow;
use redis::{ConnectionAddr, RedisError};

use crate::human::tls::{Advice, explain};

/// How long a look at why a connection failed may take.
const PROBE_TIMEOUT: Duration = Duration::from_millis(500);

/// Why connecting to the server at `addr` failed, within `timeout`: a
/// timeout is looked into with [`probe`].
pub async fn connect_failure(
    e: &RedisError,
    addr: &ConnectionAddr,
    timeout: Duration,
) -> anyhow::Error {
    let tls = matches!(addr, ConnectionAddr::TcpTls { .. });
    if let Some(words) = tls_words(e) {
        return anyhow!("cannot connect: {words}");
    }
    if !e.is_timeout() {
        return anyhow!("cannot connect: {}", redis_words(e));
    }
    let secs = timeout.as_secs();
    match probe(addr).await {
        Probe::Refused(why) => anyhow!("cannot connect: {why}"),
        Probe::Silent => anyhow!("cannot connect: no connection within {secs}s"),
        Probe::PlainRedis if tls => anyhow!(
            "cannot connect: the server does not speak TLS on this port (it answers plain-text Redis: is it redis://?)"
        ),
        Probe::PlainRedis | Probe::Connected => {
            anyhow!("connected, but the server did not answer within {secs}s (busy, or not Redis?)")
        }
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
pub fn tls_words(e: &RedisError) -> Option<String> {
    type Shared = std::sync::Arc<dyn std::error::Error + Send + Sync>;
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = source {
        // The crate keeps an I/O error behind an Arc, whose own source
        // skips the TLS error inside: look through both.
        let err = match err.downcast_ref::<Shared>() {
            Some(shared) => &**shared as &(dyn std::error::Error + 'static),
            None => err,
        };
        let found = err.downcast_ref::<rustls::Error>().or_else(|| {
            err.downcast_ref::<std::io::Error>()
                .and_then(|io| io.get_ref())
                .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        });
        if let Some(t) = found {
            return Some(rustls_words(t));
        }
        source = err.source();
    }
    None
}

/// A TLS failure in HTTP mode's words: the store trusts the system's
/// roots, which SSL_CERT_FILE replaces (or `--state-cacert`'s).
fn rustls_words(t: &rustls::Error) -> String {
    match t {
        rustls::Error::InappropriateMessage { .. } => {
            "the server does not speak TLS on this port (is it redis://?)".to_string()
        }
        other => explain(other, Advice::SystemOnly)
            .replace("http://", "redis://")
            .replace(
                "(SSL_CERT_FILE adds trust anchors)",
                "(--state-cacert FILE trusts a CA)",
            ),
    }
}

/// A Redis error on one line, without the crate's debugging decorations.
pub fn redis_words(e: &RedisError) -> String {
    if let Some(words) = tls_words(e) {
        return words;
    }
    if let Some(code) = e.code()
        && let Some(detail) = e.detail()
    {
        return format!("{code} {detail}");
    }
    e.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::{CertificateError, Error};

    /// As the crate hands a failed handshake over.
    fn words(e: Error) -> String {
        tls_words(&RedisError::from(std::io::Error::other(e))).expect("a TLS failure")
    }

    #[test]
    fn certificate_failures_read_as_words_not_the_librarys_names() {
        let unknown = words(Error::InvalidCertificate(CertificateError::UnknownIssuer));
        assert_eq!(
            unknown,
            "the server's certificate is not trusted: it is not signed by a known authority (--state-cacert FILE trusts a CA)"
        );
        let ca = words(Error::InvalidCertificate(CertificateError::Other(
            rustls::OtherError(std::sync::Arc::new(webpki::Error::CaUsedAsEndEntity)),
        )));
        assert_eq!(
            ca,
            "the server's certificate is not trusted: it is a CA certificate, used as a server's own"
        );
        for w in [&unknown, &ca] {
            assert!(!w.contains("Other") && !w.contains("UnknownIssuer"), "{w}");
        }
        let plain = words(Error::InvalidMessage(
            rustls::InvalidMessage::InvalidContentType,
        ));
        assert!(plain.contains("is it redis://?"), "{plain}");
    }
}
