//! **Pure.** TLS failures in words, for HTTP mode, the reports and the
//! shared-state store alike: what a certificate check found, never the
//! library's names for it, with the advice about trust the caller allows.

use rustls::pki_types::ServerName;
use rustls::{CertificateError, Error};

/// What a TLS failure's words may advise about trust.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Advice {
    /// HTTP mode without `--cacert`: adding one is the fix.
    AddCacert,
    /// HTTP mode with `--cacert`: the advice is about what it holds.
    CacertGiven,
    /// The end-of-run reports, which take no `--cacert`: the system's
    /// trust (`SSL_CERT_FILE`) is what applies.
    SystemOnly,
}

impl Advice {
    /// HTTP mode's advice: `cacert` says whether `--cacert` was given.
    pub fn for_http(cacert: bool) -> Advice {
        if cacert {
            Advice::CacertGiven
        } else {
            Advice::AddCacert
        }
    }
}

/// A TLS failure in words, for the log, with the advice `advice` allows.
pub fn explain(e: &Error, advice: Advice) -> String {
    use CertificateError as C;
    let unknown = match advice {
        Advice::CacertGiven => {
            "the server's certificate is not trusted: neither it nor a certificate that signed it is in --cacert or the system's roots"
        }
        Advice::AddCacert => {
            "the server's certificate is not trusted: it is not signed by a known authority (--cacert FILE adds a trust anchor)"
        }
        Advice::SystemOnly => {
            "the server's certificate is not trusted: it is not signed by a known authority (SSL_CERT_FILE adds trust anchors)"
        }
    };
    let ca_as_own = match advice {
        Advice::CacertGiven => {
            "the server's certificate is not trusted: it is a CA certificate used as a server's own, and --cacert does not hold this very certificate"
        }
        Advice::AddCacert => {
            "the server's certificate is not trusted: it is a CA certificate, used as a server's own (--cacert FILE holding this very certificate trusts it)"
        }
        Advice::SystemOnly => {
            "the server's certificate is not trusted: it is a CA certificate, used as a server's own"
        }
    };
    match e {
        Error::InvalidCertificate(c) => match c {
            C::UnknownIssuer => unknown.to_string(),
            C::Expired | C::ExpiredContext { .. } => "the server's certificate expired".to_string(),
            C::NotValidYet | C::NotValidYetContext { .. } => {
                "the server's certificate is not valid yet (check the clock)".to_string()
            }
            C::NotValidForName => "the certificate's name does not match the host".to_string(),
            C::NotValidForNameContext {
                expected,
                presented,
            } => format!(
                "the certificate's name does not match: asked for {}, the certificate is for {}",
                server_name(expected),
                if presented.is_empty() {
                    "no name at all".to_string()
                } else {
                    presented.join(", ")
                }
            ),
            C::Revoked => "the server's certificate was revoked".to_string(),
            C::BadSignature
            | C::UnsupportedSignatureAlgorithmContext { .. }
            | C::UnsupportedSignatureAlgorithmForPublicKeyContext { .. } => {
                "the server's certificate has a signature that cannot be verified".to_string()
            }
            C::InvalidPurpose | C::InvalidPurposeContext { .. } => {
                "the server's certificate is not meant for TLS servers".to_string()
            }
            C::BadEncoding => "the server's certificate is malformed".to_string(),
            C::Other(other) => {
                let why = other.to_string();
                if why.contains("CaUsedAsEndEntity") {
                    ca_as_own.to_string()
                } else if why.contains("Eku") || why.contains("purpose") {
                    "the server's certificate is not meant for TLS servers".to_string()
                } else {
                    format!("the server's certificate is not trusted ({why})")
                }
            }
            _ => "the server's certificate is not trusted".to_string(),
        },
        Error::AlertReceived(alert) => {
            format!("the server ended the TLS handshake ({alert:?} alert)")
        }
        Error::InvalidMessage(_) | Error::InappropriateHandshakeMessage { .. } => {
            "the server does not speak TLS on this port (is it http://?)".to_string()
        }
        Error::NoCertificatesPresented => "the server presented no certificate".to_string(),
        Error::General(why) => format!("TLS set-up failed: {why}"),
        other => format!("TLS handshake failed: {other}"),
    }
}

fn server_name(n: &ServerName<'_>) -> String {
    match n {
        ServerName::DnsName(d) => d.as_ref().to_string(),
        ServerName::IpAddress(ip) => std::net::IpAddr::from(*ip).to_string(),
        _ => "the host".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_read_as_words() {
        let cert = |c| explain(&Error::InvalidCertificate(c), Advice::AddCacert);
        assert!(cert(CertificateError::UnknownIssuer).contains("not trusted"));
        assert!(cert(CertificateError::UnknownIssuer).contains("--cacert FILE adds"));
        // Given --cacert already, the words do not tell to add one.
        let given = explain(
            &Error::InvalidCertificate(CertificateError::UnknownIssuer),
            Advice::CacertGiven,
        );
        assert!(!given.contains("adds"), "{given}");
        // Where --cacert is not taken, it is never advised.
        for c in [
            CertificateError::UnknownIssuer,
            CertificateError::Other(rustls::OtherError(std::sync::Arc::new(
                webpki::Error::CaUsedAsEndEntity,
            ))),
        ] {
            let words = explain(&Error::InvalidCertificate(c), Advice::SystemOnly);
            assert!(!words.contains("--cacert"), "{words}");
        }
        assert_eq!(
            cert(CertificateError::Expired),
            "the server's certificate expired"
        );
        assert!(cert(CertificateError::NotValidForName).contains("name does not match"));
        let named = cert(CertificateError::NotValidForNameContext {
            expected: ServerName::try_from("example.com").expect("name"),
            presented: vec!["other.example".into()],
        });
        assert!(
            named.contains("example.com") && named.contains("other.example"),
            "{named}"
        );
        for e in [
            Error::InvalidCertificate(CertificateError::Revoked),
            Error::NoCertificatesPresented,
            Error::General("x".into()),
        ] {
            let words = explain(&e, Advice::AddCacert);
            assert!(!words.contains("Error"), "{words}");
        }
    }
}
