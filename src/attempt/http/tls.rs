//! TLS for HTTP mode: whom to trust, loaded only when a TLS connection is
//! made; TLS failures are explained in words by `human::tls`.
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
use rustls::{DigitallySignedStruct, Error, SignatureScheme};

pub use crate::human::tls::{Advice, explain};

/// Every PEM certificate in `file`, at least one: a CA to trust, given by
/// `what` (the flag or variable, named in the error).
pub fn certificates(
    file: &std::path::Path,
    what: &str,
) -> Result<Vec<CertificateDer<'static>>, String> {
    use rustls::pki_types::pem::PemObject;
    let pem = std::fs::read(file).map_err(|e| {
        format!(
            "cannot read {what} {}: {}; expected a readable file of PEM certificates",
            file.display(),
            crate::human::io_error(&e)
        )
    })?;
    let certs: Vec<_> = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<_, _>>()
        .map_err(|e| {
            format!(
                "invalid {what} {}: {e}; expected a file of PEM certificates",
                file.display()
            )
        })?;
    if certs.is_empty() {
        return Err(format!(
            "invalid {what} {}: no certificate in it; expected a file of PEM certificates (-----BEGIN CERTIFICATE-----)",
            file.display()
        ));
    }
    Ok(certs)
}

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
