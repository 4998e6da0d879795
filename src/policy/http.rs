//! Validation of HTTP mode's flags: `--http URL` and the request it makes.
//!
//! Same rules as the rest of `policy`: every mistake is one line naming the
//! flag and the accepted form, found before anything is sent. Reading a
//! `--data @FILE` is left to the caller: parsing does no I/O.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use reqwest::Method;
use reqwest::Url;
use reqwest::header::{HeaderName, HeaderValue};

use super::{UsageError, invalid, opt_positive_duration};
use crate::classify::{HttpRules, StatusSet};
use crate::cli::HttpArgs;
use crate::redact;

const STATUS_FORM: &str =
    "HTTP statuses, ranges and classes from 100 to 599, such as 200,204, 500-504 or 5xx";

/// The request body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Data {
    Inline(Vec<u8>),
    /// `@FILE`: read once, before the first attempt.
    File(PathBuf),
}

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
    pub data: Option<Data>,
    pub connect_timeout: Option<Duration>,
    pub output: Option<PathBuf>,
    pub idempotency_key: Option<IdempotencyKey>,
}

impl HttpOptions {
    /// The request as log lines and `--dry-run` show it, secrets hidden:
    /// `POST https://host/path -H 'Authorization: ***'`.
    pub fn display_words(&self) -> Vec<OsString> {
        let mut words = vec![
            OsString::from(self.method.as_str()),
            OsString::from(redact::url(&self.url)),
        ];
        for (name, value) in &self.headers {
            words.push("-H".into());
            let value = String::from_utf8_lossy(value.as_bytes());
            words.push(redact::header(name.as_str(), &value).into());
        }
        words
    }
}

/// Methods whose repetition has the same effect as one request (RFC 9110,
/// section 9.2.2). Anything else, POST and PATCH above all, might do its work
/// twice when retried.
fn is_idempotent(m: &Method) -> bool {
    matches!(
        m.as_str(),
        "GET" | "HEAD" | "OPTIONS" | "TRACE" | "PUT" | "DELETE"
    )
}

/// Validate the HTTP flags. `Ok(None)` when `--http` was not given (and no
/// HTTP-only flag either).
pub fn from_args(args: HttpArgs) -> Result<Option<(HttpOptions, HttpRules)>, UsageError> {
    let Some(raw_url) = args.url else {
        let stray = [
            ("--method", args.method.is_some()),
            ("--header", !args.headers.is_empty()),
            ("--data", args.data.is_some()),
            ("--connect-timeout", args.connect_timeout.is_some()),
            ("--output", args.output.is_some()),
            ("--expect", args.expect.is_some()),
            ("--retry-status", args.retry_status.is_some()),
            ("--idempotency-key", args.idempotency_key.is_some()),
            ("--retry-non-idempotent", args.retry_non_idempotent),
        ];
        return match stray.iter().find(|(_, given)| *given) {
            Some((flag, _)) => Err(UsageError(format!(
                "{flag} applies only to HTTP mode: add --http URL"
            ))),
            None => Ok(None),
        };
    };

    let url = Url::parse(raw_url.trim())
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some())
        .ok_or_else(|| {
            invalid(
                "--http",
                &raw_url,
                "an http:// or https:// URL such as https://example.com/health",
            )
        })?;

    let data = args.data.as_deref().map(|d| match d.strip_prefix('@') {
        Some(path) => Data::File(PathBuf::from(path)),
        None => Data::Inline(d.as_bytes().to_vec()),
    });
    if matches!(&data, Some(Data::File(p)) if p.as_os_str().is_empty()) {
        return Err(invalid(
            "--data",
            "@",
            "a string, or @FILE naming a file to send",
        ));
    }

    let method = match args.method.as_deref() {
        // As curl does: a body without a method means POST.
        None if data.is_some() => Method::POST,
        None => Method::GET,
        Some(m) => Method::from_bytes(m.trim().to_ascii_uppercase().as_bytes())
            .ok()
            .filter(|_| !m.trim().is_empty())
            .ok_or_else(|| invalid("--method", m, "an HTTP method such as GET, POST or PUT"))?,
    };

    let mut headers = Vec::with_capacity(args.headers.len());
    for h in &args.headers {
        headers.push(parse_header(h).ok_or_else(|| {
            invalid("--header", h, "'Name: value', such as 'Accept: text/plain'")
        })?);
    }

    let idempotency_key = match args.idempotency_key.as_deref() {
        None => None,
        Some("auto") => Some(IdempotencyKey::Auto),
        Some(k) => Some(IdempotencyKey::Given(
            HeaderValue::from_str(k.trim())
                .ok()
                .filter(|v| !v.is_empty())
                .ok_or_else(|| {
                    invalid(
                        "--idempotency-key",
                        k,
                        "'auto' or a non-empty key of visible ASCII characters",
                    )
                })?,
        )),
    };

    let expect = opt_statuses("--expect", args.expect.as_deref())?;
    let retry_status = opt_statuses("--retry-status", args.retry_status.as_deref())?;
    if let (Some(e), Some(r)) = (&expect, &retry_status)
        && let Some(code) = e.first_overlap(r)
    {
        return Err(UsageError(format!(
            "--expect and --retry-status both name HTTP {code}: each status may be in one list only"
        )));
    }

    let unsafe_method =
        (!is_idempotent(&method) && idempotency_key.is_none() && !args.retry_non_idempotent)
            .then(|| method.as_str().to_string());

    let rules = HttpRules {
        expect: expect.unwrap_or_else(StatusSet::success),
        retry_status: retry_status.unwrap_or_else(StatusSet::retryable),
        unsafe_method,
    };
    let options = HttpOptions {
        url,
        method,
        headers,
        data,
        connect_timeout: opt_positive_duration(
            "--connect-timeout",
            args.connect_timeout.as_deref(),
        )?,
        output: args.output,
        idempotency_key,
    };
    Ok(Some((options, rules)))
}

/// `Name: value`; surrounding blanks of the value are not part of it.
fn parse_header(s: &str) -> Option<(HeaderName, HeaderValue)> {
    let (name, value) = s.split_once(':')?;
    let name = HeaderName::from_bytes(name.trim().as_bytes()).ok()?;
    let value = HeaderValue::from_str(value.trim()).ok()?;
    Some((name, value))
}

/// Parse `200,204`, `500-504` and classes like `5xx` into a status set.
pub fn parse_statuses(s: &str) -> Result<StatusSet, String> {
    let mut ranges = Vec::new();
    for part in s.split(',') {
        let part = part.trim();
        let lower = part.to_ascii_lowercase();
        let range = if let Some(class) = lower.strip_suffix("xx") {
            match class.parse::<u16>() {
                Ok(c @ 1..=5) => (c * 100, c * 100 + 99),
                _ => return Err(format!("'{part}' is not a class from 1xx to 5xx")),
            }
        } else if let Some((a, b)) = part.split_once('-') {
            let (lo, hi) = (status(a)?, status(b)?);
            if lo > hi {
                return Err(format!("range {lo}-{hi} runs backwards"));
            }
            (lo, hi)
        } else {
            let c = status(part)?;
            (c, c)
        };
        ranges.push(range);
    }
    Ok(StatusSet::new(ranges))
}

fn status(s: &str) -> Result<u16, String> {
    let t = s.trim();
    match t.parse::<u16>() {
        Ok(c @ 100..=599) => Ok(c),
        _ if t.is_empty() => Err("empty entry".to_string()),
        _ => Err(format!("'{t}' is not a status from 100 to 599")),
    }
}

fn opt_statuses(flag: &str, value: Option<&str>) -> Result<Option<StatusSet>, UsageError> {
    value
        .map(|s| {
            parse_statuses(s).map_err(|why| {
                UsageError(format!(
                    "invalid value '{s}' for {flag}: {why}; expected {STATUS_FORM}"
                ))
            })
        })
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Cli;
    use clap::Parser;

    fn parse(args: &[&str]) -> Result<Option<(HttpOptions, HttpRules)>, UsageError> {
        let mut argv = vec!["retry"];
        argv.extend_from_slice(args);
        from_args(Cli::parse_from(argv).http)
    }

    fn ok(args: &[&str]) -> (HttpOptions, HttpRules) {
        parse(args).expect("valid").expect("http mode")
    }

    fn err(args: &[&str]) -> String {
        parse(args).expect_err("should be a usage error").0
    }

    #[test]
    fn status_lists() {
        let s = parse_statuses("429, 5xx").expect("valid");
        assert!(s.contains(429) && s.contains(500) && s.contains(599));
        assert!(!s.contains(428) && !s.contains(600));
        let s = parse_statuses("200-204,404").expect("valid");
        assert!(s.contains(203) && s.contains(404) && !s.contains(205));
        assert!(parse_statuses("2XX").expect("valid").contains(250));
        for bad in [
            "", "6xx", "0xx", "99", "600", "504-500", "abc", "5xx,,", "x5x",
        ] {
            assert!(parse_statuses(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn defaults() {
        let (o, r) = ok(&["--http", "http://127.0.0.1:8/x"]);
        assert_eq!(o.method, Method::GET);
        assert_eq!(r, HttpRules::default());
        assert_eq!(parse(&["--", "true"]).expect("valid"), None);
    }

    #[test]
    fn data_means_post_and_post_is_unsafe() {
        let (o, r) = ok(&["--http", "http://h/", "-d", "x=1"]);
        assert_eq!(o.method, Method::POST);
        assert_eq!(o.data, Some(Data::Inline(b"x=1".to_vec())));
        assert_eq!(r.unsafe_method.as_deref(), Some("POST"));
        let (o, _) = ok(&["--http", "http://h/", "-d", "@body.json", "-X", "put"]);
        assert_eq!(o.method, Method::PUT);
        assert_eq!(o.data, Some(Data::File("body.json".into())));
        let (_, r) = ok(&[
            "--http",
            "http://h/",
            "-X",
            "PATCH",
            "--idempotency-key",
            "auto",
        ]);
        assert_eq!(r.unsafe_method.as_deref(), None);
        let (_, r) = ok(&[
            "--http",
            "http://h/",
            "-X",
            "POST",
            "--retry-non-idempotent",
        ]);
        assert_eq!(r.unsafe_method.as_deref(), None);
        let (_, r) = ok(&["--http", "http://h/", "-X", "DELETE"]);
        assert_eq!(r.unsafe_method.as_deref(), None);
    }

    #[test]
    fn headers_and_display() {
        let (o, _) = ok(&[
            "--http",
            "https://u:pw@h/x?token=t",
            "-H",
            "Authorization: Bearer abc",
            "-H",
            "Accept:text/plain",
        ]);
        assert_eq!(o.headers.len(), 2);
        assert_eq!(o.headers[1].1, "text/plain");
        let shown: Vec<String> = o
            .display_words()
            .iter()
            .map(|w| w.to_string_lossy().into_owned())
            .collect();
        let line = shown.join(" ");
        assert!(!line.contains("abc") && !line.contains("pw") && !line.contains("=t"));
        assert!(line.contains("authorization: ***") && line.contains("accept: text/plain"));
    }

    #[test]
    fn usage_errors_name_the_flag() {
        assert!(err(&["--http", "ftp://h/"]).contains("--http"));
        assert!(err(&["--http", "not a url"]).contains("--http"));
        assert!(err(&["--http", "http://h/", "-H", "no colon"]).contains("--header"));
        assert!(err(&["--http", "http://h/", "-X", "BAD METHOD"]).contains("--method"));
        assert!(err(&["--http", "http://h/", "--expect", "2xy"]).contains("--expect"));
        assert!(err(&["--http", "http://h/", "--retry-status", "700"]).contains("--retry-status"));
        let both = err(&[
            "--http",
            "http://h/",
            "--expect",
            "2xx",
            "--retry-status",
            "204",
        ]);
        assert!(
            both.contains("--expect") && both.contains("--retry-status") && both.contains("204")
        );
        assert!(
            err(&["--http", "http://h/", "--connect-timeout", "0"]).contains("--connect-timeout")
        );
        assert!(
            err(&["--http", "http://h/", "--idempotency-key", ""]).contains("--idempotency-key")
        );
        assert!(err(&["--http", "http://h/", "-d", "@"]).contains("--data"));
        assert!(err(&["-X", "POST", "--", "true"]).contains("--method"));
        assert!(err(&["--expect", "200", "--", "true"]).contains("--http"));
    }
}
