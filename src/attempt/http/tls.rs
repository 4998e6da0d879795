//! TLS for HTTP mode: whom to trust, loaded only when a TLS connection is
//! made, and TLS failures explained in words.
//!
//! The system's root certificates take milliseconds to read, which a plain
//! http:// probe would pay on every run for nothing. So the verifier is
//! built on the first certificate it has to check: an http:// URL that is
//! never redirected to https:// never reads them, and one that is gets them
//! then. The roots are the platform's (on Linux: the system bundle, or
//! `SSL_CERT_FILE` / `SSL_CERT_DIR` when set), plus `--cacert`'s.

use std::sync::{Arc, OnceLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, Error, SignatureScheme};

/// The client's TLS set-up: ring, TLS 1.2 and 1.3, HTTP/2 or 1.1 by ALPN,
/// and either the lazily built verifier or, with `--insecure`, none.
pub fn client_config(
    extra_roots: Vec<CertificateDer<'static>>,
    insecure: bool,
) -> Result<rustls::ClientConfig, Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = Arc::new(Lazy {
        provider: Arc::clone(&provider),
        insecure,
        extra_roots,
        built: OnceLock::new(),
    });
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

/// The platform verifier, built on first use (never, with `--insecure`).
#[derive(Debug)]
struct Lazy {
    provider: Arc<CryptoProvider>,
    /// `--insecure`: any certificate is accepted. The handshake signature
    /// is still checked, so the session is at least with whoever holds the
    /// key of the certificate presented.
    insecure: bool,
    extra_roots: Vec<CertificateDer<'static>>,
    built: OnceLock<Result<rustls_platform_verifier::Verifier, Error>>,
}

impl Lazy {
    fn get(&self) -> Result<&rustls_platform_verifier::Verifier, Error> {
        self.built
            .get_or_init(|| {
                rustls_platform_verifier::Verifier::new_with_extra_roots(
                    self.extra_roots.iter().cloned(),
                    Arc::clone(&self.provider),
                )
            })
            .as_ref()
            .map_err(Clone::clone)
    }
}

impl ServerCertVerifier for Lazy {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        if self.insecure {
            return Ok(ServerCertVerified::assertion());
        }
        // The very certificate the user named in --cacert: trusted as it
        // is, as curl trusts it, with its dates and names still checked.
        if self
            .extra_roots
            .iter()
            .any(|c| c.as_ref() == end_entity.as_ref())
        {
            super::pinned::verify(end_entity, server_name, now)?;
            return Ok(ServerCertVerified::assertion());
        }
        self.get()?
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
    }

    // Handshake signatures need no roots: checking them does not load any.
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

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
