//! **Pure.** Resuming an `-o` download that was cut off or timed out: the
//! next attempt asks for the rest (`Range: bytes=N-`) on condition that it
//! is still the same representation (`If-Range` with a strong validator).
//!
//! A server that cannot promise that (no `Accept-Ranges: bytes`, only a
//! weak ETag, a Last-Modified too close to its Date to be strong) gets a
//! plain request, and the download starts over. So does one that answers
//! the range with a whole 200 (its representation changed, or it ignores
//! ranges), or with a range that does not start where the file ends.
//!
//! A 206 is also checked against the response whose body it continues
//! ([`mismatch`]): a server or proxy that ignores `If-Range` would send the
//! rest of a newer version, and appending it would make a file that is
//! neither. Its validator (the same ETag, or the same Last-Modified) and
//! its complete length must be the first response's, or the download
//! starts over.

use reqwest::header::{
    ACCEPT_RANGES, CONTENT_LENGTH, CONTENT_RANGE, DATE, ETAG, HeaderMap, HeaderValue, LAST_MODIFIED,
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
    /// The whole body's length, when that response declared it.
    pub length: Option<u64>,
}

/// The length a whole response declares (`Content-Length`).
pub fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
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

/// A 206's `Content-Range` (`bytes 100-199/200`): the first and last byte
/// sent, and the complete length (`None` for `*`, unknown).
fn content_range(headers: &HeaderMap) -> Option<(u64, u64, Option<u64>)> {
    let range = headers.get(CONTENT_RANGE)?.to_str().ok()?;
    let (span, total) = range.trim().strip_prefix("bytes ")?.split_once('/')?;
    let (first, last) = span.split_once('-')?;
    let (first, last) = (first.trim().parse().ok()?, last.trim().parse().ok()?);
    let total = match total.trim() {
        "*" => None,
        t => Some(t.parse().ok()?),
    };
    (last >= first).then_some((first, last, total))
}

/// Why a 206 answer to a request for the rest of `partial`'s body from
/// byte `held` is not that rest, or `None` when it is: it must start at
/// `held`, carry the same validator as the response it continues, and
/// declare the same complete length.
pub fn mismatch(partial: &Partial, headers: &HeaderMap, held: u64) -> Option<&'static str> {
    let Some((first, _, total)) = content_range(headers) else {
        return Some("the server's partial answer has no usable Content-Range");
    };
    if first != held {
        return Some("the server sent another range than asked for");
    }
    let header = if partial.validator.as_bytes().first() == Some(&b'"') {
        ETAG
    } else {
        LAST_MODIFIED
    };
    if headers.get(&header) != Some(&partial.validator) {
        return Some("the server sent part of another version (its validator changed)");
    }
    if let (Some(before), Some(now)) = (partial.length, total)
        && before != now
    {
        return Some("the server sent part of another version (its length changed)");
    }
    None
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

    fn partial(validator: &'static str, length: Option<u64>) -> Partial {
        Partial {
            validator: HeaderValue::from_static(validator),
            code: 200,
            length,
        }
    }

    #[test]
    fn ranges_and_content_ranges() {
        assert_eq!(range_from(0), "bytes=0-");
        assert_eq!(range_from(12_345), "bytes=12345-");
        let p = partial("\"v1\"", Some(200));
        let h = headers(&[("content-range", "bytes 100-199/200"), ("etag", "\"v1\"")]);
        assert_eq!(mismatch(&p, &h, 100), None);
        assert!(mismatch(&p, &h, 0).is_some());
        let unknown_total = headers(&[("content-range", "bytes 100-199/*"), ("etag", "\"v1\"")]);
        assert_eq!(mismatch(&p, &unknown_total, 100), None);
        for bad in [
            "bytes */200",
            "items 100-199/200",
            "bytes 100-/200",
            "bytes 100-99/200",
            "bytes 100-199/many",
        ] {
            let h = headers(&[("content-range", bad), ("etag", "\"v1\"")]);
            assert!(mismatch(&p, &h, 100).is_some(), "{bad}");
        }
        assert!(mismatch(&p, &HeaderMap::new(), 0).is_some());
    }

    #[test]
    fn a_partial_answer_from_another_version_is_no_continuation() {
        // The server ignored If-Range: v2's second half.
        let p = partial("\"v1\"", Some(2000));
        let v2 = headers(&[
            ("content-range", "bytes 1000-1999/2000"),
            ("etag", "\"v2\""),
        ]);
        assert!(mismatch(&p, &v2, 1000).unwrap().contains("validator"));
        // No tag at all cannot show it is the same.
        let none = headers(&[("content-range", "bytes 1000-1999/2000")]);
        assert!(mismatch(&p, &none, 1000).is_some());
        // The same tag, another complete length.
        let longer = headers(&[
            ("content-range", "bytes 1000-2999/3000"),
            ("etag", "\"v1\""),
        ]);
        assert!(mismatch(&p, &longer, 1000).unwrap().contains("length"));
        // A date validator is compared with the 206's Last-Modified.
        let lm = "Sun, 06 Nov 1994 08:49:37 GMT";
        let p = partial(lm, None);
        let same = headers(&[("content-range", "bytes 5-9/10"), ("last-modified", lm)]);
        assert_eq!(mismatch(&p, &same, 5), None);
        let newer = headers(&[
            ("content-range", "bytes 5-9/10"),
            ("last-modified", "Mon, 07 Nov 1994 08:49:37 GMT"),
        ]);
        assert!(mismatch(&p, &newer, 5).is_some());
        assert_eq!(
            declared_length(&headers(&[("content-length", " 2000")])),
            Some(2000)
        );
        assert_eq!(declared_length(&HeaderMap::new()), None);
    }
}
