//! **Pure.** Resuming an `-o` download that was cut off or timed out: the
//! next attempt asks for the rest (`Range: bytes=N-`) on condition that it
//! is still the same representation (`If-Range` with a strong validator).
//!
//! A server that cannot promise that (no `Accept-Ranges: bytes`, only a
//! weak ETag, a Last-Modified too close to its Date to be strong) gets a
//! plain request, and the download starts over. So does one that answers
//! the range with a whole 200 (its representation changed, or it ignores
//! ranges), or with a range that does not start where the file ends.

use reqwest::header::{
    ACCEPT_RANGES, CONTENT_RANGE, DATE, ETAG, HeaderMap, HeaderValue, LAST_MODIFIED,
};

/// A body an earlier attempt left partly written, and how to ask for the
/// rest of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Partial {
    /// What `If-Range` carries: a strong ETag, or a strong Last-Modified.
    pub validator: HeaderValue,
    /// The status of the response the body belongs to: what the attempt
    /// reports when the rest arrives (a 206 is only its continuation).
    pub code: u16,
}

/// The validator a response offers for resuming its body, if it offers a
/// strong one and says it serves byte ranges (RFC 9110, 13.1.5 and 8.8).
pub fn validator(headers: &HeaderMap) -> Option<HeaderValue> {
    let ranges = headers
        .get_all(ACCEPT_RANGES)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|unit| unit.trim().eq_ignore_ascii_case("bytes"));
    if !ranges {
        return None;
    }
    if let Some(etag) = headers.get(ETAG) {
        // A weak tag may not be used in If-Range; and with a tag at hand, a
        // date may not be used either.
        let strong = etag.as_bytes().first() == Some(&b'"');
        return strong.then(|| etag.clone());
    }
    let modified = headers.get(LAST_MODIFIED)?;
    let date = headers.get(DATE)?;
    let at = |v: &HeaderValue| httpdate::parse_http_date(v.to_str().ok()?).ok();
    let (modified_at, sent_at) = (at(modified)?, at(date)?);
    // Strong only if the server sent it at least a second after the last
    // change: within the same second, another change could share the date.
    let strong = sent_at
        .duration_since(modified_at)
        .is_ok_and(|d| d.as_secs() >= 1);
    strong.then(|| modified.clone())
}

/// `Range: bytes=N-`: everything from byte N on.
pub fn range_from(n: u64) -> HeaderValue {
    // ASCII letters and digits: always a valid value, the fallback is never
    // taken.
    HeaderValue::from_str(&format!("bytes={n}-"))
        .unwrap_or_else(|_| HeaderValue::from_static("bytes=0-"))
}

/// Whether a 206's `Content-Range` (`bytes 100-199/200`) starts at byte `n`.
pub fn continues_at(headers: &HeaderMap, n: u64) -> bool {
    let Some(range) = headers.get(CONTENT_RANGE).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let Some(spec) = range.trim().strip_prefix("bytes ") else {
        return false;
    };
    let Some((span, _total)) = spec.split_once('/') else {
        return false;
    };
    let Some((first, last)) = span.split_once('-') else {
        return false;
    };
    match (first.trim().parse::<u64>(), last.trim().parse::<u64>()) {
        (Ok(first), Ok(last)) => first == n && last >= first,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                reqwest::header::HeaderName::from_bytes(k.as_bytes()).expect("name"),
                HeaderValue::from_str(v).expect("value"),
            );
        }
        h
    }

    #[test]
    fn a_strong_etag_with_byte_ranges_is_a_validator() {
        let h = headers(&[("accept-ranges", "bytes"), ("etag", "\"v1\"")]);
        assert_eq!(validator(&h), Some(HeaderValue::from_static("\"v1\"")));
        let h = headers(&[("accept-ranges", "none, Bytes"), ("etag", "\"v1\"")]);
        assert!(validator(&h).is_some());
    }

    #[test]
    fn no_resume_without_ranges_or_with_a_weak_validator() {
        assert_eq!(validator(&headers(&[("etag", "\"v1\"")])), None);
        let h = headers(&[("accept-ranges", "none"), ("etag", "\"v1\"")]);
        assert_eq!(validator(&h), None);
        let h = headers(&[("accept-ranges", "bytes"), ("etag", "W/\"v1\"")]);
        assert_eq!(validator(&h), None);
        // A weak tag rules out the date too.
        let h = headers(&[
            ("accept-ranges", "bytes"),
            ("etag", "W/\"v1\""),
            ("last-modified", "Sun, 06 Nov 1994 08:49:37 GMT"),
            ("date", "Mon, 07 Nov 1994 08:49:37 GMT"),
        ]);
        assert_eq!(validator(&h), None);
        assert_eq!(validator(&headers(&[("accept-ranges", "bytes")])), None);
    }

    #[test]
    fn last_modified_is_strong_only_a_second_before_the_date() {
        let lm = "Sun, 06 Nov 1994 08:49:37 GMT";
        let strong = headers(&[
            ("accept-ranges", "bytes"),
            ("last-modified", lm),
            ("date", "Sun, 06 Nov 1994 08:49:38 GMT"),
        ]);
        assert_eq!(validator(&strong), Some(HeaderValue::from_static(lm)));
        let same_second = headers(&[
            ("accept-ranges", "bytes"),
            ("last-modified", lm),
            ("date", lm),
        ]);
        assert_eq!(validator(&same_second), None);
        let no_date = headers(&[("accept-ranges", "bytes"), ("last-modified", lm)]);
        assert_eq!(validator(&no_date), None);
    }

    #[test]
    fn ranges_and_content_ranges() {
        assert_eq!(range_from(0), "bytes=0-");
        assert_eq!(range_from(12_345), "bytes=12345-");
        let h = headers(&[("content-range", "bytes 100-199/200")]);
        assert!(continues_at(&h, 100));
        assert!(!continues_at(&h, 0));
        let unknown_total = headers(&[("content-range", "bytes 100-199/*")]);
        assert!(continues_at(&unknown_total, 100));
        for bad in [
            "bytes */200",
            "items 100-199/200",
            "bytes 100-/200",
            "bytes 100-99/200",
        ] {
            assert!(
                !continues_at(&headers(&[("content-range", bad)]), 100),
                "{bad}"
            );
        }
        assert!(!continues_at(&HeaderMap::new(), 0));
    }
}
