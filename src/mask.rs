//! Hiding secrets before anything reaches a log line.
//!
//! Pure: strings in, strings out. Requests carry credentials in headers
//! (Authorization, cookies, API keys), in URLs (`user:password@`,
//! `?token=...`, signed URLs' `X-Amz-Signature`), and command lines carry
//! them as arguments (`-u user:pass`, `--password=X`, `-H 'Authorization:
//! ...'`). Logs end up in CI output and shared files, so every URL, header
//! and command line shown to people goes through here first. A hidden value
//! becomes `***`, so a reader still sees where it was.
//!
//! The rules err on the side of hiding: a harmless value hidden costs
//! little; a credential shown cannot be taken back.

mod command;

pub use command::{argument, command_line, is_assignment};

/// What a hidden value is shown as.
pub const MASK: &str = "***";

/// Words that, inside a name, say it holds a secret.
const SECRET_WORDS: [&str; 11] = [
    "auth",
    "cookie",
    "token",
    "key",
    "secret",
    "password",
    "passwd",
    "signature",
    "credential",
    "session",
    "jwt",
];

/// Short query parameter names that hold secrets although they contain none
/// of [`SECRET_WORDS`]: signed URLs' `sig`, OAuth's `code`, and the like.
const SECRET_PARAMS: [&str; 5] = ["sig", "code", "pass", "pwd", "otp"];

/// Whether a header or query parameter with this name likely holds a secret.
pub fn is_secret_name(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    SECRET_WORDS.iter().any(|w| n.contains(w)) || SECRET_PARAMS.contains(&n.as_str())
}

/// A header as it may be logged: `Name: value`, or `Name: ***`.
pub fn header(name: &str, value: &str) -> String {
    if is_secret_name(name) {
        format!("{name}: {MASK}")
    } else {
        format!("{name}: {value}")
    }
}

/// A URL cut at the places the masking functions work on. Cut by hand,
/// not parsed: what is shown must be the text as written.
struct Parts<'a> {
    /// `scheme://`.
    head: &'a str,
    /// What stands before the authority's last `@`.
    userinfo: Option<&'a str>,
    /// The rest of the authority.
    host: &'a str,
    /// Up to the first `?` (everything left when there is none).
    path: &'a str,
    /// Between that `?` and the next `#`.
    query: Option<&'a str>,
    /// From that `#` on, when there is a query.
    fragment: &'a str,
}

/// `u`'s [`Parts`], or None when it has no `scheme://`.
fn parts(u: &str) -> Option<Parts<'_>> {
    let after = u.find("://")? + 3;
    let rest = &u[after..];
    let (authority, path_etc) = rest.split_at(rest.find(['/', '?', '#']).unwrap_or(rest.len()));
    let (userinfo, host) = match authority.rsplit_once('@') {
        Some((userinfo, host)) => (Some(userinfo), host),
        None => (None, authority),
    };
    let (path, query, fragment) = match path_etc.split_once('?') {
        Some((path, query_etc)) => {
            let (query, fragment) =
                query_etc.split_at(query_etc.find('#').unwrap_or(query_etc.len()));
            (path, Some(query), fragment)
        }
        None => (path_etc, None, ""),
    };
    Some(Parts {
        head: &u[..after],
        userinfo,
        host,
        path,
        query,
        fragment,
    })
}

/// A URL as it may be logged: the password and the values of secret-looking
/// query parameters replaced by `***`. Everything else is kept as written.
pub fn url(u: &str) -> String {
    let Some(p) = parts(u) else {
        return u.to_string();
    };
    let mut out = String::with_capacity(u.len());
    out.push_str(p.head);
    if let Some(userinfo) = p.userinfo {
        match userinfo.split_once(':') {
            Some((user, _)) => {
                out.push_str(user);
                out.push(':');
                out.push_str(MASK);
            }
            None => out.push_str(userinfo),
        }
        out.push('@');
    }
    out.push_str(p.host);
    out.push_str(p.path);
    if let Some(query) = p.query {
        out.push('?');
        out.push_str(&form(query));
        out.push_str(p.fragment);
    }
    out
}

/// An address as a message that refuses it may echo it, masked as [`url`]
/// masks; but when an `@` stands after the first `/`, `?` or `#`,
/// everything from the scheme to the last `@` is hidden. A URL that cannot
/// be parsed cannot be trusted to end its user info at the first of those
/// (a raw password may hold them, as a third of `openssl rand -base64`
/// outputs do), so whatever stands before the host may be a password.
/// Text without `://` comes back as it is.
pub fn address(u: &str) -> String {
    let Some(after) = u.find("://").map(|i| i + 3) else {
        return u.to_string();
    };
    let rest = &u[after..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest.rfind('@') {
        Some(at) if at > authority_end => {
            url(&format!("{}{MASK}@{}", &u[..after], &rest[at + 1..]))
        }
        _ => url(u),
    }
}

/// A URL without its credentials, for handing on where a masked value would
/// be wrong (a `***` password is still a password): the password of
/// `user:password@` removed (the user kept), and secret-looking query
/// parameters (`pass=`, `password=`, `token=`...) dropped. None when there
/// is nothing to remove.
pub fn url_without_password(u: &str) -> Option<String> {
    let p = parts(u)?;
    let mut removed = false;
    let mut out = String::with_capacity(u.len());
    out.push_str(p.head);
    match p.userinfo.map(|u| u.split_once(':').ok_or(u)) {
        Some(Ok((user, _password))) => {
            removed = true;
            if !user.is_empty() {
                out.push_str(user);
                out.push('@');
            }
        }
        Some(Err(user)) => {
            out.push_str(user);
            out.push('@');
        }
        None => {}
    }
    out.push_str(p.host);
    out.push_str(p.path);
    if let Some(query) = p.query {
        let kept: Vec<&str> = query
            .split('&')
            .filter(|pair| match pair.split_once('=') {
                Some((k, v)) if !v.is_empty() && is_secret_name(&percent_decoded(k)) => {
                    removed = true;
                    false
                }
                _ => true,
            })
            .collect();
        if !kept.is_empty() && kept != [""] {
            out.push('?');
            out.push_str(&kept.join("&"));
        }
        out.push_str(p.fragment);
    }
    removed.then_some(out)
}

/// `a=1&token=x` with the values of secret-looking names hidden.
fn form(query: &str) -> String {
    query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((k, v)) if !v.is_empty() && is_secret_name(&percent_decoded(k)) => {
                format!("{k}={MASK}")
            }
            _ => pair.to_string(),
        })
        .collect::<Vec<_>>()
        .join("&")
}

/// Enough percent-decoding for parameter names (`X%2DAmz%2DSignature`).
fn percent_decoded(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%'
            && i + 2 < b.len()
            && let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2]))
        {
            out.push((h * 16 + l) as u8);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Every URL inside a word (`--url=https://u:p@h/?sig=x`, `x=https://...`)
/// masked. URLs end at whitespace or a quote.
fn urls_within(word: &str) -> String {
    let mut out = String::with_capacity(word.len());
    let mut rest = word;
    while let Some(sep) = rest.find("://") {
        // The scheme: the letters, digits, `+`, `-`, `.` just before `://`.
        let start = rest[..sep]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
            .map_or(0, |i| i + 1);
        let end = rest[sep..]
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>'))
            .map_or(rest.len(), |i| sep + i);
        out.push_str(&rest[..start]);
        out.push_str(&url(&rest[start..end]));
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// A header-shaped word (`Authorization: Bearer x`, `X-Api-Key:abc`) with a
/// secret-looking name, masked; `None` when the word is not one.
fn header_word(word: &str) -> Option<String> {
    let (name, _) = word.split_once(':')?;
    let token = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    (token && is_secret_name(name)).then(|| format!("{name}: {MASK}"))
}

/// Free text (the start of an error page, say) as it may be logged: URLs,
/// `name=value` pairs, `Name: value` header lines and JSON `"name": "value"`
/// members with secret-looking names have their values hidden.
pub fn text(s: &str) -> String {
    s.split_inclusive('\n')
        .map(|line| {
            let (body, end) = match line.strip_suffix('\n') {
                Some(b) => (b, "\n"),
                None => (line, ""),
            };
            if let Some(h) = header_word(body.trim()) {
                return format!("{h}{end}");
            }
            let words: Vec<String> = body
                .split(' ')
                .map(|w| {
                    if w.contains("://") {
                        urls_within(w)
                    } else if w.contains('=') {
                        // A closing quote or bracket around the pair (as a
                        // logged command line quotes a word) is not part of
                        // the value, and stays.
                        let pair = w.trim_end_matches(['\'', '"', ')', ']', '}', ',', ';']);
                        format!("{}{}", form(pair), &w[pair.len()..])
                    } else {
                        w.to_string()
                    }
                })
                .collect();
            format!("{}{end}", json_members(&words.join(" ")))
        })
        .collect()
}

/// `"name": "value"` with the value hidden when the name looks secret.
fn json_members(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    // Each member name is a quoted string followed by a colon.
    while let Some(open) = rest.find('"') {
        let Some(close) = rest[open + 1..].find('"').map(|i| open + 1 + i) else {
            break;
        };
        let name = &rest[open + 1..close];
        let after = &rest[close + 1..];
        let value_at = after
            .trim_start()
            .strip_prefix(':')
            .map(str::trim_start)
            .filter(|v| v.starts_with('"'));
        out.push_str(&rest[..=close]);
        match value_at {
            Some(v) if is_secret_name(name) => {
                let Some(end) = v[1..].find('"') else {
                    out.push_str(after);
                    return out;
                };
                let skipped = after.len() - v.len();
                out.push_str(&after[..skipped]);
                out.push('"');
                out.push_str(MASK);
                out.push('"');
                rest = &v[end + 2..];
            }
            _ => rest = after,
        }
    }
    out.push_str(rest);
    out
}

/// A URL whose path is itself the secret, as a heartbeat monitor's
/// (`https://hc-ping.com/UUID`): only the scheme and host are shown, the
/// rest becomes `/***`, and user info `***@`.
pub fn url_host_only(u: &str) -> String {
    let Some(p) = parts(u) else {
        return MASK.to_string();
    };
    let user = p.userinfo.map_or(String::new(), |_| format!("{MASK}@"));
    let hidden = match (p.path, p.query) {
        ("" | "/", None) => p.path,
        _ => "/***",
    };
    format!("{}{user}{}{hidden}", p.head, p.host)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_headers_are_masked() {
        for name in [
            "Authorization",
            "proxy-authorization",
            "Cookie",
            "Set-Cookie",
            "X-Api-Key",
            "X-Auth-Token",
            "Client-Secret",
            "Idempotency-Key",
            "X-Signature",
            "X-Hub-Signature-256",
            "X-Amz-Security-Token",
            "X-Goog-Credential",
        ] {
            assert_eq!(header(name, "hunter2"), format!("{name}: ***"), "{name}");
        }
        assert_eq!(header("Accept", "text/plain"), "Accept: text/plain");
        assert_eq!(header("Content-Type", "a/b"), "Content-Type: a/b");
        assert_eq!(header("User-Agent", "x"), "User-Agent: x");
    }

    #[test]
    fn urls_lose_their_secrets() {
        let shown = url("https://me:hunter2@example.com/a?x=1&token=abc&api_key=def");
        assert_eq!(
            shown,
            "https://me:***@example.com/a?x=1&token=***&api_key=***"
        );
        assert_eq!(
            url("http://127.0.0.1:8080/health?verbose=1"),
            "http://127.0.0.1:8080/health?verbose=1"
        );
        assert_eq!(url("https://me@h/"), "https://me@h/");
    }

    #[test]
    fn every_form_of_redis_credential_is_masked() {
        for (given, shown) in [
            ("redis://app:hunter2@db:6379/2", "redis://app:***@db:6379/2"),
            ("rediss://:hunter2@db", "rediss://:***@db"),
            ("redis://:hunter2@", "redis://:***@"),
            (
                "unix:///run/redis.sock?db=1&pass=hunter2",
                "unix:///run/redis.sock?db=1&pass=***",
            ),
            (
                "redis+unix:///run/r.sock?user=app&pass=hunter2&db=2",
                "redis+unix:///run/r.sock?user=app&pass=***&db=2",
            ),
            ("redis://db/0?password=hunter2", "redis://db/0?password=***"),
            ("unix:///run/redis.sock", "unix:///run/redis.sock"),
        ] {
            assert_eq!(url(given), shown);
        }
    }

    /// A raw `/`, `?` or `#` in a store's password (`redis://u:pa/ss@h`)
    /// ended the user info early, and the usage error showed the password.
    #[test]
    fn an_address_that_cannot_be_parsed_hides_all_before_its_last_at() {
        for scheme in [
            "redis",
            "rediss",
            "redis+sentinel",
            "rediss+sentinel",
            "redis+cluster",
            "rediss+cluster",
            "http",
            "https",
        ] {
            for (given, shown) in [
                ("u:pa/ss@h:6379/0", "***@h:6379/0"),
                (":a?b#c@h", "***@h"),
                ("u:p#w@d@h/m", "***@h/m"),
                ("h:1/0?password=x", "h:1/0?password=***"),
                ("h/m", "h/m"),
                // An address whose user info ends where a URL's does keeps
                // its user.
                ("app:pw@h/0", "app:***@h/0"),
            ] {
                assert_eq!(
                    address(&format!("{scheme}://{given}")),
                    format!("{scheme}://{shown}"),
                    "{scheme}://{given}"
                );
            }
        }
        assert_eq!(address("no url: a@b"), "no url: a@b");
    }

    #[test]
    fn credentials_are_removed_for_handing_on() {
        for (given, kept) in [
            (
                "redis://app:hunter2@db:6379/2",
                Some("redis://app@db:6379/2"),
            ),
            ("rediss://:hunter2@db", Some("rediss://db")),
            (
                "unix:///run/redis.sock?db=1&pass=hunter2",
                Some("unix:///run/redis.sock?db=1"),
            ),
            (
                "redis+unix:///r.sock?pass=hunter2",
                Some("redis+unix:///r.sock"),
            ),
            (
                "redis://db/0?password=hunter2#insecure",
                Some("redis://db/0#insecure"),
            ),
            ("redis://app@db/0", None),
            ("unix:///run/redis.sock?db=1", None),
            ("/var/lib/retry", None),
        ] {
            assert_eq!(url_without_password(given).as_deref(), kept, "{given}");
        }
    }

    #[test]
    fn signed_urls_lose_their_signatures() {
        let s3 = "https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256\
                  &X-Amz-Credential=AKIA%2F20261122&X-Amz-Date=20261122T000000Z\
                  &X-Amz-Expires=300&X-Amz-Security-Token=tok&X-Amz-Signature=abcdef#frag";
        let shown = url(s3);
        for secret in ["AKIA", "=tok", "abcdef"] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
        assert!(
            shown.contains("X-Amz-Algorithm=AWS4-HMAC-SHA256"),
            "{shown}"
        );
        assert!(shown.contains("X-Amz-Expires=300"), "{shown}");
        assert!(shown.ends_with("#frag"), "{shown}");
        let azure = url("https://a.blob.core.windows.net/c/b?sv=2024&sig=SiGnAtUrE&se=x");
        assert_eq!(
            azure,
            "https://a.blob.core.windows.net/c/b?sv=2024&sig=***&se=x"
        );
        for p in [
            "access_token",
            "apikey",
            "client_secret",
            "password",
            "pass",
            "jwt",
            "code",
            "signature",
            "X%2DAmz%2DSignature",
        ] {
            let shown = url(&format!("https://h/?{p}=s3cr3t&page=2"));
            assert_eq!(shown, format!("https://h/?{p}=***&page=2"), "{p}");
        }
    }

    #[test]
    fn free_text() {
        assert_eq!(
            text("{\"error\": \"expired\", \"access_token\": \"abc\", \"n\": 1}"),
            "{\"error\": \"expired\", \"access_token\": \"***\", \"n\": 1}"
        );
        assert_eq!(
            text("retry later: see https://h/s?sig=x\nAuthorization: Bearer y\n"),
            "retry later: see https://h/s?sig=***\nAuthorization: ***\n"
        );
        assert_eq!(text("a=1&password=p q"), "a=1&password=*** q");
        assert_eq!(text("Service Unavailable"), "Service Unavailable");
        // A quoted word of a logged command line keeps its closing quote,
        // and masking it again changes nothing.
        assert_eq!(text("sh '--password=hunter2'"), "sh '--password=***'");
        assert_eq!(text("sh '--password=***'"), "sh '--password=***'");
        assert_eq!(text("(token=abc)"), "(token=***)");
        assert_eq!(text("\"unterminated"), "\"unterminated");
        assert_eq!(text("{\"token\": \"open"), "{\"token\": \"open");
    }

    #[test]
    fn urls_inside_words() {
        assert_eq!(
            urls_within("see 'https://a:b@h/p?token=x' and http://h/?key=v&q=1"),
            "see 'https://a:***@h/p?token=***' and http://h/?key=***&q=1"
        );
    }

    #[test]
    fn a_url_whose_path_is_the_secret_shows_only_its_host() {
        assert_eq!(
            url_host_only("https://hc-ping.com/0e5b7f2a-uuid/start?rid=1"),
            "https://hc-ping.com/***"
        );
        assert_eq!(
            url_host_only("http://user:pw@127.0.0.1:8000/ping/key/slug"),
            "http://***@127.0.0.1:8000/***"
        );
        assert_eq!(url_host_only("https://h:1/"), "https://h:1/");
        assert_eq!(url_host_only("https://h"), "https://h");
        assert_eq!(url_host_only("no scheme/secret"), "***");
    }
}
