//! Hiding secrets before anything reaches a log line.
//!
//! Pure. Requests carry credentials in headers (Authorization, cookies, API
//! keys) and sometimes in the URL (user:password@, ?token=...). Logs end up
//! in CI output and shared files, so every header and URL shown to people
//! goes through here first.

/// What a hidden value is shown as.
pub const MASK: &str = "***";

/// Whether a header or query parameter with this name likely holds a
/// secret. Errs on the side of hiding: a hidden value that was harmless costs
/// little; a shown credential cannot be taken back.
pub fn is_secret_name(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    matches!(
        n.as_str(),
        "authorization" | "proxy-authorization" | "cookie" | "set-cookie"
    ) || [
        "token", "key", "secret", "password", "passwd", "auth", "session",
    ]
    .iter()
    .any(|word| n.contains(word))
}

/// A header as it may be logged: `Name: value`, or `Name: ***`.
pub fn header(name: &str, value: &str) -> String {
    if is_secret_name(name) {
        format!("{name}: {MASK}")
    } else {
        format!("{name}: {value}")
    }
}

/// A URL as it may be logged: the password and the values of secret-looking
/// query parameters replaced by `***`.
pub fn url(u: &reqwest::Url) -> String {
    let mut shown = u.clone();
    if shown.password().is_some() {
        // Only fails for URLs that cannot have credentials at all.
        let _ = shown.set_password(Some(MASK));
    }
    if shown.query().is_some() {
        let pairs: Vec<(String, String)> = u
            .query_pairs()
            .map(|(k, v)| {
                let v = if is_secret_name(&k) {
                    MASK.to_string()
                } else {
                    v.into_owned()
                };
                (k.into_owned(), v)
            })
            .collect();
        if pairs.iter().any(|(k, _)| is_secret_name(k)) {
            shown.query_pairs_mut().clear().extend_pairs(pairs);
        }
    }
    shown.to_string()
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
            "X-Api-Key",
            "X-Auth-Token",
            "Client-Secret",
            "Idempotency-Key",
        ] {
            assert_eq!(header(name, "hunter2"), format!("{name}: ***"), "{name}");
        }
        assert_eq!(header("Accept", "text/plain"), "Accept: text/plain");
        assert_eq!(header("Content-Type", "a/b"), "Content-Type: a/b");
    }

    #[test]
    fn urls_lose_their_secrets() {
        let u = reqwest::Url::parse("https://me:hunter2@example.com/a?x=1&token=abc&api_key=def")
            .expect("url");
        let shown = url(&u);
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(!shown.contains("abc") && !shown.contains("def"), "{shown}");
        assert!(shown.contains("x=1"), "{shown}");
        assert!(shown.contains("me:"), "{shown}");
        let plain = reqwest::Url::parse("http://127.0.0.1:8080/health?verbose=1").expect("url");
        assert_eq!(url(&plain), "http://127.0.0.1:8080/health?verbose=1");
    }
}
