//! TLS: trust, `--cacert`, SSL_CERT_FILE, `--insecure`.

use super::*;
use crate::pki::Pki;

// ---- TLS: trust, --cacert, SSL_CERT_FILE, --insecure ------------------------

impl Pki {
    /// An HTTPS server presenting `NAME.pem` with `NAME.key`.
    fn serve(&self, name: &str) -> TlsServer {
        TlsServer::start(
            &self.path(&format!("{name}.pem")),
            &self.path(&format!("{name}.key")),
        )
    }

    /// An HTTPS server presenting `server.pem` that answers every request
    /// with `status` (`301 Moved`...) and `location`.
    fn redirecting(&self, status: &str, location: &str) -> TlsServer {
        let answer = format!(
            "HTTP/1.1 {status}\r\nLocation: {location}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        );
        TlsServer::answering(
            &self.path("server.pem"),
            &self.path("server.key"),
            answer.into_bytes(),
        )
    }

    /// `retry --http URL --cacert CA MORE...`, CA being a file in the directory.
    fn fetch(&self, url: &str, ca: &str, more: &[&str]) -> Run {
        let ca = self.path(ca);
        let mut args = vec!["--http", url, "--cacert", &ca];
        args.extend_from_slice(more);
        retry(&args)
    }
}

/// One attempt only: `-n 1`.
const ONCE: &[&str] = &["-n", "1"];

/// The probe succeeded and printed the server's "secure".
#[track_caller]
fn assert_secure(r: &Run) {
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, "secure");
}

/// The probe failed the TLS handshake (exit 35) and stderr says `says`.
#[track_caller]
fn assert_tls_failed(r: &Run, says: &str) {
    assert_eq!(r.code, 35, "{}", r.stderr);
    assert!(r.stderr.contains(says), "{}", r.stderr);
}

/// An HTTPS server on 127.0.0.1 presenting `cert` (PEM chain) and `key`,
/// answering every request with 200 "secure". Counts connections.
struct TlsServer {
    port: u16,
    raw: RawServer,
}

impl TlsServer {
    fn start(cert: &str, key: &str) -> TlsServer {
        Self::answering(
            cert,
            key,
            b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\nsecure".to_vec(),
        )
    }

    /// A server that sends `answer` to every request.
    fn answering(cert: &str, key: &str, answer: Vec<u8>) -> TlsServer {
        let answer = Arc::new(answer);
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
            .expect("cert file")
            .collect::<Result<_, _>>()
            .expect("certs");
        let key = PrivateKeyDer::from_pem_file(key).expect("key");
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = Arc::new(
            rustls::ServerConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .expect("versions")
                .with_no_client_auth()
                .with_single_cert(certs, key)
                .expect("server config"),
        );
        let raw = RawServer::start(move |tcp| {
            let config = Arc::clone(&config);
            let answer = Arc::clone(&answer);
            thread::spawn(move || {
                let Ok(conn) = rustls::ServerConnection::new(config) else {
                    return;
                };
                let mut tls = rustls::StreamOwned::new(conn, tcp);
                let mut got = Vec::new();
                let mut buf = [0u8; 1024];
                while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                    match tls.read(&mut buf) {
                        Ok(0) => return,
                        Err(_) => {
                            // Plain text, say: send the alert rustls
                            // queued, as TLS servers do.
                            let _ = tls.conn.write_tls(&mut tls.sock);
                            return;
                        }
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                    }
                }
                let _ = tls.write_all(&answer);
                tls.conn.send_close_notify();
                let _ = tls.flush();
            });
        });
        TlsServer {
            port: raw.addr.port(),
            raw,
        }
    }

    fn url(&self, host: &str) -> String {
        format!("https://{host}:{}/", self.port)
    }

    fn connections(&self) -> usize {
        self.raw.connections()
    }
}

#[test]
fn a_certificate_from_an_unknown_authority_is_not_trusted() {
    let pki = Pki::new();
    let s = pki.serve("server");
    let r = retry(&["--http", &s.url("127.0.0.1"), "-b", "10ms"]);
    assert_tls_failed(&r, "the server's certificate is not trusted");
    assert_eq!(s.connections(), 1, "{}", r.stderr);
    assert!(r.stderr.contains("--cacert"), "{}", r.stderr);
    assert!(!r.stderr.contains("UnknownIssuer"), "{}", r.stderr);
}

#[test]
fn cacert_adds_a_trust_anchor() {
    let pki = Pki::new();
    let s = pki.serve("server");
    assert_secure(&pki.fetch(&s.url("127.0.0.1"), "ca.pem", &[]));

    // The certificate names 127.0.0.1, not localhost.
    let r = pki.fetch(&s.url("localhost"), "ca.pem", &[]);
    assert_tls_failed(&r, "name does not match");

    // A file that holds no certificate: a usage error, nothing sent.
    let before = s.connections();
    let r = pki.fetch(&s.url("127.0.0.1"), "ext.cnf", &[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("--cacert"), "{}", r.stderr);
    assert_eq!(s.connections(), before);
}

#[test]
fn ssl_cert_file_and_dir_are_honoured() {
    let pki = Pki::new();
    let s = pki.serve("server");
    let ca = pki.path("ca.pem");
    assert_secure(&retry_env(
        &["--http", &s.url("127.0.0.1")],
        &[("SSL_CERT_FILE", &ca)],
    ));

    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::copy(&ca, dir.path().join("test-ca.pem")).expect("copy");
    let certs = dir.path().to_str().expect("utf-8");
    assert_secure(&retry_env(
        &["--http", &s.url("127.0.0.1")],
        &[("SSL_CERT_DIR", certs)],
    ));
}

#[test]
fn a_ca_certificate_used_as_the_servers_own_is_explained() {
    // Trusted as a root (SSL_CERT_FILE), not named in --cacert: chain
    // building refuses a CA as a server's own certificate.
    let pki = Pki::new();
    let s = pki.serve("ca");
    let ca = pki.path("ca.pem");
    let r = retry_env(
        &["--http", &s.url("127.0.0.1"), "-n", "1"],
        &[("SSL_CERT_FILE", &ca)],
    );
    assert_tls_failed(&r, "it is a CA certificate");
    assert!(
        r.stderr
            .contains("--cacert FILE holding this very certificate"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("OtherError"), "{}", r.stderr);
}

#[test]
fn a_self_signed_certificate_named_in_cacert_is_trusted() {
    // What `openssl req -x509` makes: CA:TRUE, no alternative names, used
    // directly by the server. curl --cacert accepts it.
    let pki = Pki::new();
    pki.self_signed("self", "localhost");
    let s = pki.serve("self");
    assert_secure(&pki.fetch(&s.url("localhost"), "self.pem", ONCE));

    // Its name is still checked...
    let r = pki.fetch(&s.url("127.0.0.1"), "self.pem", ONCE);
    assert_tls_failed(&r, "asked for 127.0.0.1, the certificate is for localhost");

    // ...and so are its dates.
    pki.expired("old", "localhost");
    let s = pki.serve("old");
    let r = pki.fetch(&s.url("localhost"), "old.pem", ONCE);
    assert_tls_failed(&r, "the server's certificate expired");
}

#[test]
fn a_servers_own_leaf_certificate_named_in_cacert_is_trusted() {
    let pki = Pki::new();
    let s = pki.serve("server");
    assert_secure(&pki.fetch(&s.url("127.0.0.1"), "server.pem", ONCE));
}

#[test]
fn with_cacert_given_the_hint_does_not_say_to_add_it() {
    let pki = Pki::new();
    pki.self_signed("other", "localhost");
    let s = pki.serve("server");
    let r = pki.fetch(&s.url("127.0.0.1"), "other.pem", ONCE);
    assert_tls_failed(&r, "not trusted");
    assert!(r.stderr.contains("is in --cacert"), "{}", r.stderr);
    assert!(!r.stderr.contains("adds a trust anchor"), "{}", r.stderr);
}

#[test]
fn insecure_skips_verification_and_says_so() {
    let pki = Pki::new();
    let s = pki.serve("server");
    let r = retry(&["--http", &s.url("localhost"), "--insecure"]);
    assert_secure(&r);
    assert!(
        r.stderr
            .contains("--insecure: the server's certificate is not verified"),
        "{}",
        r.stderr
    );
    // With --log-file, stderr carries only a give-up line; the warning
    // reaches it all the same, and the file too.
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("log");
    let r = retry(&[
        "--http",
        &s.url("localhost"),
        "--insecure",
        "--log-file",
        log.to_str().expect("utf-8"),
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("--insecure"), "{}", r.stderr);
    let logged = std::fs::read_to_string(&log).expect("log file");
    assert!(logged.contains("--insecure"), "{logged}");
}

#[test]
fn a_redirect_from_http_to_https_is_followed() {
    let pki = Pki::new();
    let tls = pki.serve("server");
    let plain = Server::start(vec![reply(301).header("Location", &tls.url("127.0.0.1"))]);
    assert_secure(&pki.fetch(&plain.url, "ca.pem", &[]));
    assert_eq!((plain.hits(), tls.connections()), (1, 1));
}

#[test]
fn an_http_probe_never_reads_the_root_certificates() {
    // Roots that cannot be loaded: an https:// URL fails on them, an
    // http:// one never gets that far, because nothing reads them.
    let s = Server::start(vec![reply(200).body("plain")]);
    let nowhere = [
        ("SSL_CERT_FILE", "/nonexistent/ca.pem"),
        ("SSL_CERT_DIR", "/nonexistent"),
    ];
    let r = retry_env(&["--http", &s.url], &nowhere);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, "plain");

    let pki = Pki::new();
    let tls = pki.serve("server");
    let r = retry_env(&["--http", &tls.url("127.0.0.1"), "-b", "10ms"], &nowhere);
    assert_tls_failed(&r, "TLS");
}

#[test]
fn a_redirect_from_https_down_to_http_is_refused() {
    let pki = Pki::new();
    let plain = Server::start(vec![reply(200).body("in clear")]);
    let s = pki.redirecting("301 Moved", &format!("{}/?token=t0k", plain.url));
    let r = pki.fetch(&s.url("127.0.0.1"), "ca.pem", &["-b", "10ms"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("from https:// down to http://"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("in clear"), "{}", r.stderr);
    assert!(!r.stderr.contains("t0k"), "{}", r.stderr);
    assert_eq!((plain.hits(), s.connections()), (0, 1));
}

#[test]
fn pings_and_pushes_refuse_a_redirect_from_https_down_to_http() {
    let pki = Pki::new();
    let plain = Server::start(vec![reply(200)]);
    let s = pki.redirecting("307 Moved", &format!("{}/ping/s3cret-uuid", plain.url));
    let ping = format!("https://127.0.0.1:{}/ping/s3cret-uuid", s.port);
    let gateway = format!("https://u:pushpw@127.0.0.1:{}", s.port);
    let ca = pki.path("ca.pem");
    let r = retry_env(
        &[
            "--ping",
            &ping,
            "--ping-log",
            "--metrics-push",
            &gateway,
            "--",
            "true",
        ],
        &[("SSL_CERT_FILE", ca.as_str())],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    // The start ping, the push and the final ping: each refused, in words
    // that show no secret.
    let refusals = r
        .stderr
        .lines()
        .filter(|l| l.contains("from https:// down to http://"))
        .count();
    assert_eq!(refusals, 3, "{}", r.stderr);
    assert!(
        !r.stderr.contains("s3cret") && !r.stderr.contains("pushpw"),
        "{}",
        r.stderr
    );
    assert_eq!(plain.hits(), 0);
}

#[test]
fn a_tls_server_behind_an_http_url_exits_8_and_says_so() {
    let pki = Pki::new();
    let s = pki.serve("server");
    let url = format!("http://127.0.0.1:{}/", s.port);
    expect_tls_named(&url);
    assert_eq!(s.connections(), 1);
}

/// A TLS server run by another program, killed when dropped: it prints the
/// address it listens on, `... 127.0.0.1:PORT`, as its first line naming one.
struct ForeignTls {
    child: std::process::Child,
    port: u16,
}

impl ForeignTls {
    fn start(program: &str, args: &[&str]) -> ForeignTls {
        let mut child = std::process::Command::new(program)
            .args(args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{program} (scripts/test.sh installs it): {e}"));
        let out = child.stdout.take().expect("stdout");
        let port = BufReader::new(out)
            .lines()
            .map_while(Result::ok)
            .find_map(|l| {
                l.rsplit_once("127.0.0.1:")
                    .and_then(|(_, p)| p.trim().parse().ok())
            })
            .unwrap_or_else(|| panic!("{program} never said where it listens"));
        ForeignTls { child, port }
    }
}

impl Drop for ForeignTls {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn openssl_and_python_tls_servers_behind_an_http_url_get_the_https_hint_not_7() {
    // Both hang up on plain text without a byte (no TLS alert), which was
    // retried as a lost connection and ended with exit 7.
    let pki = Pki::new();
    let (cert, key) = (pki.path("server.pem"), pki.path("server.key"));
    let openssl = ForeignTls::start(
        "openssl",
        &[
            "s_server",
            "-accept",
            "127.0.0.1:0",
            "-cert",
            &cert,
            "-key",
            &key,
            "-www",
        ],
    );
    let script = "import http.server, ssl, sys\n\
        s = http.server.HTTPServer(('127.0.0.1', 0), http.server.SimpleHTTPRequestHandler)\n\
        c = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)\n\
        c.load_cert_chain(sys.argv[1], sys.argv[2])\n\
        s.socket = c.wrap_socket(s.socket, server_side=True)\n\
        print('listening on 127.0.0.1:%d' % s.server_address[1], flush=True)\n\
        s.serve_forever()\n";
    let python = ForeignTls::start("python3", &["-c", script, &cert, &key]);
    for port in [openssl.port, python.port] {
        expect_tls_named(&format!("http://127.0.0.1:{port}/"));
    }
}

#[test]
fn a_plain_server_that_hangs_up_is_still_a_lost_connection() {
    // Closing without a reply is no sign of TLS by itself: the check finds
    // none, and the attempt is retried as before.
    let s = Server::start(vec![raw(&[])]);
    let r = retry(&["--http", &s.url, "-b", "10ms", "-n", "2"]);
    assert_eq!(r.code, 7, "{}", r.stderr);
    assert!(r.stderr.contains("connection lost"), "{}", r.stderr);
    assert!(!r.stderr.contains("TLS"), "{}", r.stderr);
}
