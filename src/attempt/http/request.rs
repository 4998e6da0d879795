//! The request HTTP mode makes, as `policy` validated it from the flags:
//! URL, method, headers, body, timeouts, the idempotency key, trust.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use reqwest::header::{HeaderName, HeaderValue};
use reqwest::{Method, Url};

use crate::mask;

/// One piece of the request body: `-d STR|@FILE`, `--data-binary
/// STR|@FILE` or `--json STR|@FILE`. Files are read once, before the first
/// attempt (`@-`: stdin).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Data {
    Inline(Vec<u8>),
    /// `-d @FILE`: carriage returns and newlines are removed, as curl does,
    /// so a form kept in a file may end with a newline.
    Text(PathBuf),
    /// `--data-binary @FILE` and `--json @FILE`: sent byte for byte.
    File(PathBuf),
}

/// What the body is, which decides its default Content-Type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    /// `-d` and `--data-binary`, repeatable: the pieces joined with `&` in
    /// command-line order, sent as a form.
    Form(Vec<Data>),
    /// `--json`: sent as JSON, asking for JSON back.
    Json(Data),
}

/// `--connect-timeout`'s default: long enough for a slow handshake across
/// the world, short enough that a black-holed address cannot hang a run.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// `--idle-timeout`'s default in HTTP mode: a server that sends nothing for
/// this long (while connecting, before its answer or mid-body) is given up
/// on for this attempt; a slow transfer that keeps moving is never cut.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// `--max-redirs`' default: enough for any sane chain of redirects.
pub const MAX_REDIRS: u32 = 10;

/// The `Idempotency-Key` sent with every attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdempotencyKey {
    Given(HeaderValue),
    /// A random UUID v4, drawn once per run.
    Auto,
}

/// The validated request of HTTP mode.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpOptions {
    pub url: Url,
    pub method: Method,
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// `-H @FILE`: files of header lines, read before the first request.
    pub header_files: Vec<PathBuf>,
    pub body: Option<Body>,
    pub connect_timeout: Duration,
    /// `--max-redirs`: redirects followed in one attempt (0: none).
    pub max_redirs: u32,
    /// `-o FILE`; None (or `-o -`) is stdout.
    pub output: Option<PathBuf>,
    pub idempotency_key: Option<IdempotencyKey>,
    /// `--cacert FILE`: extra trust anchors.
    pub cacert: Option<PathBuf>,
    /// `--insecure`: no certificate verification.
    pub insecure: bool,
    /// `--unix-socket PATH`: connect through this socket, not to the host.
    pub unix_socket: Option<PathBuf>,
}

impl HttpOptions {
    /// The request as log lines and `--dry-run` show it, secrets hidden:
    /// `POST https://host/path -H 'Authorization: ***'`.
    pub fn display_words(&self) -> Vec<OsString> {
        let mut words = vec![
            OsString::from(self.method.as_str()),
            OsString::from(mask::url(self.url.as_str())),
        ];
        for (name, value) in &self.headers {
            words.push("-H".into());
            let value = String::from_utf8_lossy(value.as_bytes());
            words.push(mask::header(name.as_str(), &value).into());
        }
        if let Some(path) = &self.unix_socket {
            words.push("--unix-socket".into());
            words.push(path.into());
        }
        for file in &self.header_files {
            words.push("-H".into());
            let mut w = OsString::from("@");
            w.push(file);
            words.push(w);
        }
        words
    }
}
