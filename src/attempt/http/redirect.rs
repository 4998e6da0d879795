//! Redirects, which retry follows itself (the HTTP client's own following
//! is off) so that it decides, hop by hop, what goes along.
//!
//! 301, 302, 303, 307 and 308 with a `Location` are followed, to http://
//! and https:// only, and never from https:// down to http://: that would
//! send the request, its query and its headers in clear to whoever is on
//! the path. When a hop leaves the origin (scheme, host or port), every
//! header the log would mask as a secret (Authorization, Cookie, X-Api-Key
//! and the like) is dropped, and so is a `Host` given with `-H`. A POST
//! answered by 301 or 302, and anything but HEAD answered by 303, becomes
//! a GET without its body, as curl and browsers do; 307 and 308 repeat the
//! request as it was.

use reqwest::header::{
    AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, COOKIE, HOST, HeaderMap, HeaderValue,
    PROXY_AUTHORIZATION,
};
use reqwest::{Method, Url};

use crate::classify::NetFailure;
use crate::human::escape_controls;
use crate::mask;

/// The statuses whose Location is followed.
pub fn is_followed(code: u16) -> bool {
    matches!(code, 301 | 302 | 303 | 307 | 308)
}

/// Where a redirect leads, and how the request changes on the way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hop {
    pub url: Url,
    pub method: Method,
    /// The body is not sent again (the method became GET).
    pub drop_body: bool,
    /// The hop leaves the origin: secrets stay behind.
    pub leaves_origin: bool,
}

/// The next request after a `code` redirect to `location`, or why it is
/// not followed (the failure and its detail, the URL masked).
pub fn next(
    from: &Url,
    code: u16,
    location: &HeaderValue,
    method: &Method,
) -> Result<Hop, (NetFailure, String)> {
    let shown = || {
        escape_controls(&mask::address(&String::from_utf8_lossy(
            location.as_bytes(),
        )))
        .into_owned()
    };
    let url = std::str::from_utf8(location.as_bytes())
        .ok()
        .and_then(|l| from.join(l.trim()).ok())
        .ok_or_else(|| {
            (
                NetFailure::BadRedirect,
                format!("HTTP {code} with Location: {}", shown()),
            )
        })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err((
            NetFailure::RedirectRefused,
            format!(
                "HTTP {code} to {}: retry follows http:// and https:// only",
                shown()
            ),
        ));
    }
    if from.scheme() == "https" && url.scheme() == "http" {
        return Err((
            NetFailure::RedirectRefused,
            format!(
                "HTTP {code} from https:// down to {}, where the request would travel in clear; \
                 give that URL to --http if it is meant",
                shown()
            ),
        ));
    }
    let to_get = match code {
        303 => method != Method::HEAD,
        301 | 302 => method == Method::POST,
        _ => false,
    };
    let leaves_origin = url.scheme() != from.scheme()
        || url.host_str() != from.host_str()
        || url.port_or_known_default() != from.port_or_known_default();
    Ok(Hop {
        url,
        method: if to_get { Method::GET } else { method.clone() },
        drop_body: to_get,
        leaves_origin,
    })
}

/// Takes out what must not follow a request to another origin: every
/// header the log masks as a secret, the credentials and cookies, and a
/// `Host` given for the first server.
pub fn strip_for_other_origin(headers: &mut HeaderMap) {
    for name in [AUTHORIZATION, PROXY_AUTHORIZATION, COOKIE, HOST] {
        headers.remove(name);
    }
    let secret: Vec<_> = headers
        .keys()
        .filter(|n| mask::is_secret_name(n.as_str()))
        .cloned()
        .collect();
    for name in secret {
        headers.remove(name);
    }
}

/// Takes out what described a body that is no longer sent.
pub fn strip_body_headers(headers: &mut HeaderMap) {
    headers.remove(CONTENT_TYPE);
    headers.remove(CONTENT_LENGTH);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).expect("url")
    }

    fn hop(from: &str, code: u16, to: &str, method: Method) -> Result<Hop, (NetFailure, String)> {
        next(
            &url(from),
            code,
            &HeaderValue::from_str(to).expect("value"),
            &method,
        )
    }

    #[test]
    fn relative_and_absolute_locations() {
        let h = hop("http://a.test/x/y", 301, "../z?q=1", Method::GET).expect("followed");
        assert_eq!(h.url.as_str(), "http://a.test/z?q=1");
        assert!(!h.leaves_origin && !h.drop_body);
        let h = hop("http://a.test/", 302, "https://a.test/", Method::GET).expect("followed");
        assert!(h.leaves_origin, "another scheme is another origin");
        let h = hop("http://a.test/", 307, "http://a.test:8080/", Method::GET).expect("followed");
        assert!(h.leaves_origin, "another port is another origin");
        let h = hop("http://a.test:80/", 307, "http://a.test/", Method::GET).expect("followed");
        assert!(!h.leaves_origin, "the default port is the same port");
    }

    #[test]
    fn methods_change_as_curl_changes_them() {
        let h = hop("http://a.test/", 302, "/b", Method::POST).expect("followed");
        assert_eq!((h.method, h.drop_body), (Method::GET, true));
        let h = hop("http://a.test/", 303, "/b", Method::PUT).expect("followed");
        assert_eq!((h.method, h.drop_body), (Method::GET, true));
        let h = hop("http://a.test/", 303, "/b", Method::HEAD).expect("followed");
        assert_eq!((h.method, h.drop_body), (Method::HEAD, false));
        let h = hop("http://a.test/", 307, "/b", Method::POST).expect("followed");
        assert_eq!((h.method, h.drop_body), (Method::POST, false));
        let h = hop("http://a.test/", 301, "/b", Method::PUT).expect("followed");
        assert_eq!((h.method, h.drop_body), (Method::PUT, false));
    }

    #[test]
    fn what_is_not_followed() {
        let (f, why) = hop("http://a.test/", 301, "http://[::1", Method::GET).expect_err("invalid");
        assert_eq!(f, NetFailure::BadRedirect);
        assert_eq!(why, "HTTP 301 with Location: http://[::1");
        let (f, why) =
            hop("http://a.test/", 302, "ftp://u:pw@a.test/f", Method::GET).expect_err("ftp");
        assert_eq!(f, NetFailure::RedirectRefused);
        assert!(
            why.contains("ftp://u:***@a.test/f") && !why.contains("pw"),
            "{why}"
        );
        let (f, why) = hop(
            "https://a.test/",
            301,
            "http://a.test/?token=t",
            Method::GET,
        )
        .expect_err("downgrade");
        assert_eq!(f, NetFailure::RedirectRefused);
        assert!(
            why.contains("in clear") && !why.contains("token=t"),
            "{why}"
        );
        let (f, _) =
            hop("http://a.test/", 301, "file:///etc/passwd", Method::GET).expect_err("file");
        assert_eq!(f, NetFailure::RedirectRefused);
        // A password with a raw '/' in a Location that cannot be parsed
        // was shown from that '/' on.
        let (f, why) = hop(
            "http://a.test/",
            301,
            "http://u:AAAA/BBBB@h:x/",
            Method::GET,
        )
        .expect_err("invalid");
        assert_eq!(f, NetFailure::BadRedirect);
        assert_eq!(why, "HTTP 301 with Location: http://***@h:x/");
    }

    #[test]
    fn secrets_stay_behind() {
        let mut h = HeaderMap::new();
        for (k, v) in [
            ("authorization", "Bearer a"),
            ("x-api-key", "k"),
            ("x-api-token", "t"),
            ("cookie", "c=1"),
            ("host", "a.test"),
            ("accept", "text/plain"),
            ("x-request-id", "42"),
        ] {
            h.insert(
                reqwest::header::HeaderName::from_static(k),
                HeaderValue::from_static(v),
            );
        }
        strip_for_other_origin(&mut h);
        let mut left: Vec<&str> = h.keys().map(|k| k.as_str()).collect();
        left.sort_unstable();
        assert_eq!(left, ["accept", "x-request-id"]);
    }
}
