//! Validation of HTTP mode's flags: `--http URL` and the request it makes.
//!
//! Same rules as the rest of `policy`: every mistake is one line naming the
//! flag and the accepted form, found before anything is sent. Reading the
//! `@FILE`s and checking that `-o` can be written are left to the caller
//! (`mode::http`), which does so before the first request: parsing does no I/O.

use std::path::{Path, PathBuf};

use reqwest::Method;
use reqwest::Url;
use reqwest::header::{HeaderName, HeaderValue};

use super::values::{UsageError, invalid, opt_duration, opt_list, opt_positive_duration, path_arg};
use crate::attempt::http::{Body, CONNECT_TIMEOUT, Data, HttpOptions, IdempotencyKey, MAX_REDIRS};
use crate::classify::{HttpRules, RETRY_AFTER_MAX, StatusSet};
use crate::cli::HttpArgs;

const STATUS_FORM: &str =
    "HTTP statuses, ranges and classes from 100 to 599, such as 200,204, 500-504 or 5xx";

/// Methods whose repetition has the same effect as one request (RFC 9110,
/// section 9.2.2). Anything else, POST and PATCH above all, might do its work
/// twice when retried.
fn is_idempotent(m: &Method) -> bool {
    matches!(
        m.as_str(),
        "GET" | "HEAD" | "OPTIONS" | "TRACE" | "PUT" | "DELETE"
    )
}

/// What in a URL no request line may carry: a space, or a control
/// character (a tab or a line break, which URL parsers drop without a
/// word). The parser would percent-encode a space and send the request,
/// where curl refuses such a URL (exit 3): most likely a mistake, say a
/// word run into the next, so it is refused, not guessed at.
fn unsendable(url: &str) -> Option<&'static str> {
    url.chars().find_map(|c| match c {
        ' ' => Some("a space"),
        c if c.is_whitespace() || c.is_control() => Some("a control character"),
        _ => None,
    })
}

/// Validate the HTTP flags. `Ok(None)` when `--http` was not given.
pub fn from_args(args: &HttpArgs) -> Result<Option<(HttpOptions, HttpRules)>, UsageError> {
    let Some(raw_url) = &args.url else {
        // Its flags without it are refused by `modes`.
        return Ok(None);
    };

    if let Some(what) = unsendable(raw_url.trim()) {
        // The URL is not echoed: it may hold a password.
        return Err(UsageError(format!(
            "invalid value for --http: the URL holds {what}, which curl refuses too; expected a URL with a space written as %20, such as https://example.com/a%20b"
        )));
    }
    let url = Url::parse(raw_url.trim())
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some())
        .ok_or_else(|| {
            invalid(
                "--http",
                &crate::mask::address(raw_url),
                "an http:// or https:// URL such as https://example.com/health",
            )
        })?;

    let pieces = form_pieces(args)?;
    let body = match &args.json {
        Some(j) => Some(Body::Json(data_arg("--json", j, false)?)),
        None if pieces.is_empty() => None,
        None => Some(Body::Form(pieces)),
    };

    let method = match args.method.as_deref() {
        // As curl does: a body without a method means POST.
        None if body.is_some() => Method::POST,
        None => Method::GET,
        Some(m) => Method::from_bytes(m.trim().to_ascii_uppercase().as_bytes())
            .ok()
            .filter(|_| !m.trim().is_empty() && !m.trim().starts_with('-'))
            .ok_or_else(|| invalid("--method", m, "an HTTP method such as GET, POST or PUT"))?,
    };

    let (headers, header_files) = headers(args)?;
    let idempotency_key = idempotency_key(args, &headers)?;

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
        retry_after_max: opt_positive_duration(
            "--retry-after-max",
            args.retry_after_max.as_deref(),
        )?
        .unwrap_or(RETRY_AFTER_MAX),
        retry_after_spread: opt_duration(
            "--retry-after-spread",
            args.retry_after_spread.as_deref(),
        )?,
    };
    let output = args.output.as_deref().filter(|o| o.as_os_str() != "-");
    file_arg("--output", output, "a file name, or - for stdout")?;
    file_arg(
        "--unix-socket",
        args.unix_socket.as_deref(),
        "the path of a unix socket, such as /var/run/docker.sock",
    )?;
    file_arg(
        "--cacert",
        args.cacert.as_deref(),
        "a file of PEM certificates",
    )?;
    let options = HttpOptions {
        url,
        method,
        headers,
        header_files,
        body,
        connect_timeout: opt_positive_duration(
            "--connect-timeout",
            args.connect_timeout.as_deref(),
        )?
        .unwrap_or(CONNECT_TIMEOUT),
        max_redirs: match args.max_redirs.as_deref() {
            None => MAX_REDIRS,
            Some(n) => n.trim().parse::<u32>().map_err(|_| {
                invalid(
                    "--max-redirs",
                    n,
                    "a whole number of redirects to follow, 0 for none",
                )
            })?,
        },
        output: args.output.clone().filter(|o| o.as_os_str() != "-"),
        idempotency_key,
        cacert: args.cacert.clone(),
        insecure: args.insecure,
        unix_socket: args.unix_socket.clone(),
    };
    Ok(Some((options, rules)))
}

/// Headers as given on the command line, name and value.
type Headers = Vec<(HeaderName, HeaderValue)>;

/// `--header`s: the headers given, and the @FILEs to read them from.
fn headers(args: &HttpArgs) -> Result<(Headers, Vec<PathBuf>), UsageError> {
    let mut headers = Vec::with_capacity(args.headers.len());
    let mut header_files = Vec::new();
    for h in &args.headers {
        if let Some(path) = h.strip_prefix('@') {
            if path.is_empty() {
                return Err(invalid(
                    "--header",
                    h,
                    "'Name: value', or @FILE naming a file of such lines",
                ));
            }
            header_files.push(PathBuf::from(path));
            continue;
        }
        headers.push(parse_header(h).ok_or_else(|| {
            invalid(
                "--header",
                h,
                "'Name: value' such as 'Accept: text/plain', or @FILE",
            )
        })?);
    }
    Ok((headers, header_files))
}

/// `--idempotency-key`, given once (not also as a header).
fn idempotency_key(
    args: &HttpArgs,
    headers: &[(HeaderName, HeaderValue)],
) -> Result<Option<IdempotencyKey>, UsageError> {
    if args.idempotency_key.is_some()
        && headers
            .iter()
            .any(|(name, _)| name.as_str() == "idempotency-key")
    {
        return Err(UsageError(
            "--idempotency-key and -H 'Idempotency-Key: ...' both set the key: give it once, with --idempotency-key KEY".to_string(),
        ));
    }
    Ok(match args.idempotency_key.as_deref() {
        None => None,
        Some("auto") => Some(IdempotencyKey::Auto),
        Some(k) => Some(IdempotencyKey::Given(
            HeaderValue::from_str(k.trim())
                .ok()
                .filter(|v| !v.is_empty() && !k.trim().starts_with('-'))
                .ok_or_else(|| {
                    invalid(
                        "--idempotency-key",
                        k,
                        "'auto' or a non-empty key of visible ASCII characters, not starting with '-'",
                    )
                })?,
        )),
    })
}

/// A file flag's value, if given: not empty, and not taken for an option.
fn file_arg(flag: &str, path: Option<&Path>, expected: &str) -> Result<(), UsageError> {
    match path {
        Some(p) if p.as_os_str().is_empty() => Err(invalid(flag, "", expected)),
        Some(p) => path_arg(flag, p, expected),
        None => Ok(()),
    }
}

/// `STR` or `@FILE` as `-d`, `--data-binary` and `--json` take them; `-d`
/// (`text`) removes CR and LF from a file's contents.
fn data_arg(flag: &str, d: &str, text: bool) -> Result<Data, UsageError> {
    match d.strip_prefix('@') {
        Some("") => Err(invalid(
            flag,
            d,
            "a string, or @FILE naming a file to send (@- for stdin)",
        )),
        Some(path) if text => Ok(Data::Text(PathBuf::from(path))),
        Some(path) => Ok(Data::File(PathBuf::from(path))),
        None => Ok(Data::Inline(d.as_bytes().to_vec())),
    }
}

/// The `-d` and `--data-binary` pieces, in command-line order when the
/// parser recorded it (otherwise every `-d` first).
fn form_pieces(args: &HttpArgs) -> Result<Vec<Data>, UsageError> {
    let given = args.data.len() + args.data_binary.len();
    let order: Vec<bool> = if args.data_order.len() == given {
        args.data_order.clone()
    } else {
        std::iter::repeat_n(false, args.data.len())
            .chain(std::iter::repeat_n(true, args.data_binary.len()))
            .collect()
    };
    let (mut text, mut binary) = (args.data.iter(), args.data_binary.iter());
    let mut pieces = Vec::with_capacity(given);
    for is_binary in order {
        let piece = if is_binary {
            binary.next().map(|d| data_arg("--data-binary", d, false))
        } else {
            text.next().map(|d| data_arg("--data", d, true))
        };
        if let Some(p) = piece {
            pieces.push(p?);
        }
    }
    Ok(pieces)
}

/// `Name: value`; surrounding blanks of the value are not part of it.
pub fn parse_header(s: &str) -> Option<(HeaderName, HeaderValue)> {
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
    opt_list(flag, value, STATUS_FORM, parse_statuses)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::cli::Cli;
    use clap::Parser;

    fn parse(args: &[&str]) -> Result<Option<(HttpOptions, HttpRules)>, UsageError> {
        let mut argv = vec!["retry"];
        argv.extend_from_slice(args);
        from_args(&Cli::parse_from(argv).http)
    }

    fn ok(args: &[&str]) -> (HttpOptions, HttpRules) {
        parse(args).expect("valid").expect("http mode")
    }

    /// The usage error of the whole validation: HTTP mode's values, and
    /// (through the table of modes) its flags given without `--http`.
    fn err(args: &[&str]) -> String {
        let mut argv = vec!["retry"];
        argv.extend_from_slice(args);
        crate::policy::Config::from_cli(Cli::parse_from(argv), Default::default())
            .expect_err("should be a usage error")
            .0
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
        assert_eq!(o.connect_timeout, Duration::from_secs(10));
        assert_eq!(o.max_redirs, 10);
        let (o, _) = ok(&["--http", "http://h/", "--max-redirs", "0"]);
        assert_eq!(o.max_redirs, 0);
        assert_eq!(r, HttpRules::default());
        assert_eq!(r.retry_after_max, Duration::from_secs(600));
        let (o, _) = ok(&["--http", "http://h/", "-o", "-"]);
        assert_eq!(o.output, None);
        assert_eq!(parse(&["--", "true"]).expect("valid"), None);
    }

    #[test]
    fn data_means_post_and_post_is_unsafe() {
        let (o, r) = ok(&["--http", "http://h/", "-d", "x=1"]);
        assert_eq!(o.method, Method::POST);
        assert_eq!(
            o.body,
            Some(Body::Form(vec![Data::Inline(b"x=1".to_vec())]))
        );
        assert_eq!(r.unsafe_method.as_deref(), Some("POST"));
        let (o, _) = ok(&["--http", "http://h/", "-d", "@body.json", "-X", "put"]);
        assert_eq!(o.method, Method::PUT);
        assert_eq!(
            o.body,
            Some(Body::Form(vec![Data::Text("body.json".into())]))
        );
        let (o, r) = ok(&["--http", "http://h/", "-d", "a=1", "-d", "@b"]);
        assert_eq!(
            o.body,
            Some(Body::Form(vec![
                Data::Inline(b"a=1".to_vec()),
                Data::Text("b".into())
            ]))
        );
        let (o, _) = ok(&["--http", "http://h/", "--data-binary", "@b", "-d", "@c"]);
        assert_eq!(
            o.body,
            Some(Body::Form(vec![
                Data::Text("c".into()),
                Data::File("b".into())
            ])),
            "without the parser's record, every -d comes first"
        );
        assert_eq!(r.unsafe_method.as_deref(), Some("POST"));
        let (o, _) = ok(&["--http", "http://h/", "--json", "{}"]);
        assert_eq!(o.method, Method::POST);
        assert_eq!(o.body, Some(Body::Json(Data::Inline(b"{}".to_vec()))));
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
        // A space inside: curl refuses it; it was percent-encoded and sent.
        for url in [
            "http://h/a b",
            "http://u:pw@h/?q=a b",
            "http://h/a\tb",
            "http://h/a\nb",
        ] {
            let e = err(&["--http", url]);
            assert!(e.contains("--http") && e.contains("%20"), "{e}");
            assert!(!e.contains("pw"), "{e}");
        }
        assert!(err(&["--http", "http://h/a b"]).contains("a space"));
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
        assert!(err(&["--http", "http://h/", "--json", "@"]).contains("--json"));
        assert!(err(&["--http", "http://h/", "-H", "@"]).contains("--header"));
        assert!(
            err(&["--http", "http://h/", "--retry-after-max", "0"]).contains("--retry-after-max")
        );
        assert!(err(&["--insecure", "--", "true"]).contains("--http"));
        assert!(err(&["-X", "POST", "--", "true"]).contains("--method"));
        assert!(err(&["--http", "http://h/", "--max-redirs", "-1"]).contains("--max-redirs"));
        assert!(err(&["--max-redirs", "3", "--", "true"]).contains("--http"));
        let both = err(&[
            "--http",
            "http://h/",
            "-H",
            "idempotency-key: a",
            "--idempotency-key",
            "b",
        ]);
        assert!(
            both.contains("--idempotency-key") && both.contains("Idempotency-Key"),
            "{both}"
        );
        assert!(err(&["--expect", "200", "--", "true"]).contains("--http"));
    }
}
