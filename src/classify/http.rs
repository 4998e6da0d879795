//! HTTP mode's classification: which responses are accepted, which failures
//! are worth another request, and which are final.
//!
//! Pure, like the rest of `classify`. The attempt reports a status code or the
//! kind of failure; these rules and the request method decide the verdict.

use std::fmt;
use std::time::Duration;

use super::{Limit, RangeSet, Rules, Status, Verdict};
use crate::ratelimit::{Field, Turn};

/// HTTP status codes given as codes, ranges and classes (`429,500-599`, `5xx`).
pub type StatusSet = RangeSet<u16>;

impl StatusSet {
    /// Any 2xx: what `--expect` accepts unless told otherwise.
    pub fn success() -> Self {
        RangeSet::new(vec![(200, 299)])
    }

    /// The statuses that say "try again later" rather than "this request is
    /// wrong": timeout, rate limit, and the server-side failures a retry can
    /// outlast. 501 (Not Implemented) and 505 will not change on retry.
    pub fn retryable() -> Self {
        RangeSet::new(vec![(408, 408), (429, 429), (500, 500), (502, 504)])
    }
}

/// How an HTTP exchange failed when no usable response arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetFailure {
    /// The host name did not resolve.
    Dns,
    /// No connection: refused, unreachable, or a TLS handshake cut off.
    /// The request was never sent.
    Connect,
    /// The connection was not established within `--connect-timeout`.
    ConnectTimeout,
    /// The connection broke after the request may have been sent (reset,
    /// closed before a complete response).
    Lost,
    /// `--timeout`, `--idle-timeout` or `--max-time` ran out before the
    /// body's end.
    TimedOut(Limit),
    /// The same, after part of the body had gone to stdout (or a device),
    /// which cannot be taken back: not retried, whatever the rules.
    TimedOutAfterOutput(Limit),
    /// TLS handshake or certificate failure.
    Tls,
    /// The response body ended before its declared length: the connection
    /// broke mid-transfer.
    Truncated,
    /// The body was cut short after part of it had gone to stdout, which
    /// cannot be taken back: not retried, whatever the rules.
    TruncatedOutput,
    /// The body could not be written where it goes (stdout closed, `-o`
    /// failed): a local failure a retry cannot mend.
    Write,
    /// What came back is not HTTP: garbage, a TLS server behind an http://
    /// URL, conflicting lengths, an impossible status code (curl's "weird
    /// server reply").
    BadReply,
    /// More redirects than `--max-redirs` allows.
    TooManyRedirects,
    /// A redirect retry will not follow: to a scheme other than http(s), or
    /// from https:// down to http://.
    RedirectRefused,
    /// A redirect whose Location is not a URL.
    BadRedirect,
    /// A unix socket that cannot be used whatever its server does: a path
    /// that is not a socket, or one retry may not connect to.
    NotUsable,
    /// Anything else: a request that could not be built, say. Retrying
    /// sends the same thing again.
    Other,
}

impl NetFailure {
    /// Whether the server may have received the request. Only then does
    /// retrying a non-idempotent method risk doing the work twice.
    pub fn request_may_have_arrived(self) -> bool {
        !matches!(
            self,
            NetFailure::Dns | NetFailure::Connect | NetFailure::ConnectTimeout
        )
    }

    /// Whether part of the body already reached stdout (or a device).
    pub fn after_output(self) -> bool {
        matches!(
            self,
            NetFailure::TimedOutAfterOutput(_) | NetFailure::TruncatedOutput
        )
    }
}

impl fmt::Display for NetFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NetFailure::Dns => "DNS failure",
            NetFailure::Connect => "could not connect",
            NetFailure::ConnectTimeout => "connect timed out by --connect-timeout",
            NetFailure::Lost => "connection lost",
            NetFailure::TimedOut(Limit::Attempt) => "timed out by --timeout",
            NetFailure::TimedOut(Limit::Deadline) => "stopped at --max-time",
            NetFailure::TimedOut(Limit::Idle) => "timed out by --idle-timeout",
            NetFailure::TimedOutAfterOutput(Limit::Attempt) => {
                "timed out by --timeout after part of the body was written out"
            }
            NetFailure::TimedOutAfterOutput(Limit::Deadline) => {
                "stopped at --max-time after part of the body was written out"
            }
            NetFailure::TimedOutAfterOutput(Limit::Idle) => {
                "timed out by --idle-timeout after part of the body was written out"
            }
            NetFailure::Tls => "TLS error",
            NetFailure::Truncated => "body cut short",
            NetFailure::TruncatedOutput => "body cut short after part of it was written out",
            NetFailure::Write => "could not write the body",
            NetFailure::BadReply => "the reply is not HTTP",
            NetFailure::TooManyRedirects => "too many redirects",
            NetFailure::RedirectRefused => "redirect not followed",
            NetFailure::BadRedirect => "the redirect's Location is not a valid URL",
            NetFailure::NotUsable => "cannot use the socket",
            NetFailure::Other => "request failed",
        })
    }
}

/// HTTP mode's classification rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpRules {
    /// Accepted statuses (`--expect`).
    pub expect: StatusSet,
    /// Retryable statuses (`--retry-status`, or the default set).
    pub retry_status: StatusSet,
    /// Set to the method's name when it is not idempotent and neither
    /// `--idempotency-key` nor `--retry-non-idempotent` was given: failures
    /// after the request may have arrived are then not retried.
    pub unsafe_method: Option<String>,
    /// The longest Retry-After that is waited for (`--retry-after-max`);
    /// a server asking for more ends the run at once.
    pub retry_after_max: Duration,
    /// `--retry-after-spread`: the window the jitter spreads a wait over
    /// after the server's floor; None: the retry's own backoff delay.
    pub retry_after_spread: Option<Duration>,
}

/// `--retry-after-max`'s default: ten minutes.
pub const RETRY_AFTER_MAX: Duration = Duration::from_secs(600);

impl Default for HttpRules {
    fn default() -> Self {
        HttpRules {
            expect: StatusSet::success(),
            retry_status: StatusSet::retryable(),
            unsafe_method: None,
            retry_after_max: RETRY_AFTER_MAX,
            retry_after_spread: None,
        }
    }
}

/// Whether the server asked for a longer wait than `--retry-after-max`.
fn asks_too_long(status: &Status, rules: &Rules) -> Option<Duration> {
    status
        .retry_after()
        .filter(|after| *after > rules.http.retry_after_max)
}

/// Whether the response's fields make its status retryable, or final,
/// whatever the status lists say (None: they say nothing).
fn turned(status: &Status) -> Option<bool> {
    match status {
        Status::Http { hints, .. } => match hints.turn? {
            Turn::RateLimited => Some(true),
            Turn::ShouldRetry(yes) => Some(yes),
        },
        _ => None,
    }
}

/// Whether a failed response is retryable before the wait it asks for is
/// weighed: its fields' word, else `--retry-status`.
fn retryable_status(status: &Status, code: u16, rules: &Rules) -> bool {
    turned(status).unwrap_or_else(|| rules.http.retry_status.contains(code))
}

/// The verdict before the method is taken into account.
fn raw(status: &Status, rules: &Rules) -> Verdict {
    match *status {
        Status::Http { code, .. } if rules.http.expect.contains(code) => Verdict::Success,
        Status::Http { code, .. } if retryable_status(status, code, rules) => {
            if asks_too_long(status, rules).is_some() {
                Verdict::Permanent
            } else {
                Verdict::Retryable
            }
        }
        Status::Http { .. } => Verdict::Permanent,
        Status::Net { failure, .. } => match failure {
            NetFailure::Dns | NetFailure::Connect | NetFailure::Lost | NetFailure::Truncated => {
                Verdict::Retryable
            }
            NetFailure::ConnectTimeout
            | NetFailure::TimedOut(Limit::Attempt)
            | NetFailure::TimedOut(Limit::Idle) => {
                if rules.retry_on_timeout {
                    Verdict::Retryable
                } else {
                    Verdict::Permanent
                }
            }
            // Past the overall deadline there is no time left to retry in.
            NetFailure::TimedOut(Limit::Deadline) => Verdict::Permanent,
            // What a reader already got cannot be taken back; a local
            // failure, a server that does not speak HTTP, and a redirect
            // retry will not follow do not change on a retry.
            NetFailure::TimedOutAfterOutput(_)
            | NetFailure::TruncatedOutput
            | NetFailure::Write
            | NetFailure::Tls
            | NetFailure::BadReply
            | NetFailure::TooManyRedirects
            | NetFailure::RedirectRefused
            | NetFailure::BadRedirect
            | NetFailure::NotUsable
            | NetFailure::Other => Verdict::Permanent,
        },
        _ => Verdict::Permanent,
    }
}

/// Whether a retryable failure is held back because repeating the request
/// could repeat its effect.
fn held_back(status: &Status, rules: &Rules) -> bool {
    rules.http.unsafe_method.is_some()
        && match status {
            // A 429 says the request was not processed (RFC 6585): sending
            // it again cannot do the work twice.
            Status::Http { code: 429, .. } => false,
            Status::Http { .. } => true,
            Status::Net { failure, .. } => failure.request_may_have_arrived(),
            _ => false,
        }
}

/// Classify an HTTP attempt.
pub fn classify(status: &Status, rules: &Rules) -> Verdict {
    match raw(status, rules) {
        Verdict::Retryable if held_back(status, rules) => Verdict::Permanent,
        v => v,
    }
}

/// Why an HTTP failure is permanent, for the give-up line.
pub fn explain(status: &Status, rules: &Rules) -> String {
    if raw(status, rules) == Verdict::Retryable
        && let Some(method) = &rules.http.unsafe_method
    {
        return format!(
            "{status} would be retried, but {method} is not idempotent: \
             not retried without --idempotency-key or --retry-non-idempotent"
        );
    }
    let code = match status {
        Status::Http { code, .. } => *code,
        _ => 0,
    };
    if let Some(after) = asks_too_long(status, rules)
        && retryable_status(status, code, rules)
    {
        let max = crate::human::human(rules.http.retry_after_max);
        let field = status
            .floor()
            .filter(|f| f.field != Field::RetryAfter)
            .map(|f| f.cite());
        if after > crate::human::ABSURD_WAIT {
            // Nobody means a wait of centuries: saying how many confuses.
            let asked = match field {
                Some(cite) => format!("{cite}, over a year"),
                None => "a Retry-After of over a year".into(),
            };
            return format!("the server asked to wait more than --retry-after-max {max} ({asked})");
        }
        return format!(
            "the server asked to wait {} ({}), more than --retry-after-max {max}",
            crate::human::human(after),
            field.as_deref().unwrap_or("Retry-After"),
        );
    }
    if turned(status) == Some(false) {
        return format!("{status}, and the server said Stripe-Should-Retry: false");
    }
    match status {
        Status::Http { code, .. } if rules.http.expect != StatusSet::success() => {
            format!("HTTP {code} is not in --expect and not retryable")
        }
        Status::Http {
            code: code @ 300..=399,
            ..
        } => format!(
            "HTTP {code} is a redirect that was not followed (it has no Location, or --max-redirs is 0)"
        ),
        Status::Http { code, .. } => format!("HTTP {code} is not retryable"),
        Status::Net {
            failure:
                NetFailure::ConnectTimeout
                | NetFailure::TimedOut(Limit::Attempt)
                | NetFailure::TimedOut(Limit::Idle),
            ..
        } => format!("{status}, and --no-retry-on-timeout is set"),
        // The status says it all, and why it stays so.
        Status::Net {
            failure:
                NetFailure::Write
                | NetFailure::BadReply
                | NetFailure::TooManyRedirects
                | NetFailure::RedirectRefused
                | NetFailure::BadRedirect
                | NetFailure::NotUsable,
            ..
        } => status.to_string(),
        Status::Net { failure, .. } if failure.after_output() => format!(
            "{status}: what was written to stdout (or a device) cannot be taken back, so it is not retried \
             (with -o FILE it would be)"
        ),
        _ => format!("{status} is not retried"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http(code: u16) -> Status {
        Status::Http {
            code,
            hints: crate::ratelimit::Hints::NONE,
        }
    }

    fn net(failure: NetFailure) -> Status {
        Status::Net {
            failure,
            detail: String::new(),
        }
    }

    #[test]
    fn default_statuses() {
        let r = Rules::default();
        for code in [200, 201, 204, 299] {
            assert_eq!(classify(&http(code), &r), Verdict::Success, "{code}");
        }
        for code in [408, 429, 500, 502, 503, 504] {
            assert_eq!(classify(&http(code), &r), Verdict::Retryable, "{code}");
        }
        for code in [301, 400, 401, 403, 404, 422, 501, 505] {
            assert_eq!(classify(&http(code), &r), Verdict::Permanent, "{code}");
        }
    }

    #[test]
    fn default_failures() {
        let r = Rules::default();
        for f in [
            NetFailure::Dns,
            NetFailure::Connect,
            NetFailure::ConnectTimeout,
            NetFailure::Lost,
            NetFailure::Truncated,
            NetFailure::TimedOut(Limit::Attempt),
        ] {
            assert_eq!(classify(&net(f), &r), Verdict::Retryable, "{f}");
        }
        for f in [
            NetFailure::Tls,
            NetFailure::Other,
            NetFailure::Write,
            NetFailure::TimedOut(Limit::Deadline),
        ] {
            assert_eq!(classify(&net(f), &r), Verdict::Permanent, "{f}");
        }
        let no_timeouts = Rules {
            retry_on_timeout: false,
            ..Rules::default()
        };
        let t = net(NetFailure::TimedOut(Limit::Attempt));
        assert_eq!(classify(&t, &no_timeouts), Verdict::Permanent);
        assert!(explain(&t, &no_timeouts).contains("--no-retry-on-timeout"));
    }

    #[test]
    fn expect_and_retry_status_replace_the_defaults() {
        let r = Rules {
            http: HttpRules {
                expect: StatusSet::new(vec![(204, 204)]),
                retry_status: StatusSet::new(vec![(404, 404), (500, 599)]),
                unsafe_method: None,
                retry_after_max: RETRY_AFTER_MAX,
                retry_after_spread: None,
            },
            ..Rules::default()
        };
        assert_eq!(classify(&http(204), &r), Verdict::Success);
        assert_eq!(classify(&http(200), &r), Verdict::Permanent);
        assert_eq!(classify(&http(404), &r), Verdict::Retryable);
        assert_eq!(classify(&http(501), &r), Verdict::Retryable);
        assert_eq!(classify(&http(429), &r), Verdict::Permanent);
        assert!(explain(&http(200), &r).contains("--expect"));
    }

    #[test]
    fn non_idempotent_methods_retry_only_what_never_arrived() {
        let r = Rules {
            http: HttpRules {
                unsafe_method: Some("POST".into()),
                ..HttpRules::default()
            },
            ..Rules::default()
        };
        assert_eq!(classify(&http(503), &r), Verdict::Permanent);
        // A 429 was not processed (RFC 6585): safe to send again.
        assert_eq!(classify(&http(429), &r), Verdict::Retryable);
        assert_eq!(
            classify(&net(NetFailure::Lost), &r),
            Verdict::Permanent,
            "a reset after sending may have done the work"
        );
        assert_eq!(
            classify(&net(NetFailure::TimedOut(Limit::Attempt)), &r),
            Verdict::Permanent
        );
        // The request never left: repeating it cannot repeat its effect.
        assert_eq!(classify(&net(NetFailure::Connect), &r), Verdict::Retryable);
        assert_eq!(classify(&net(NetFailure::Dns), &r), Verdict::Retryable);
        assert_eq!(
            classify(&net(NetFailure::ConnectTimeout), &r),
            Verdict::Retryable
        );
        assert_eq!(classify(&http(200), &r), Verdict::Success);
        let why = explain(&http(503), &r);
        assert!(why.contains("POST is not idempotent"), "{why}");
        assert!(why.contains("--idempotency-key"), "{why}");
        // A status that is permanent anyway is explained as such.
        assert_eq!(explain(&http(404), &r), "HTTP 404 is not retryable");
        assert!(explain(&http(301), &Rules::default()).contains("Location"));
    }

    #[test]
    fn retry_after_beyond_the_maximum_is_final() {
        let r = Rules::default();
        let asks = |secs| Status::Http {
            code: 503,
            hints: crate::ratelimit::Hints::retry_after(std::time::Duration::from_secs(secs)),
        };
        assert_eq!(classify(&asks(600), &r), Verdict::Retryable);
        assert_eq!(classify(&asks(601), &r), Verdict::Permanent);
        assert_eq!(
            explain(&asks(93_600), &r),
            "the server asked to wait 1d 2h (Retry-After), more than --retry-after-max 10m"
        );
        // An absurd wait is not spelled out in days.
        assert_eq!(
            explain(&asks(u64::MAX), &r),
            "the server asked to wait more than --retry-after-max 10m (a Retry-After of over a year)"
        );
        assert_eq!(
            asks(u64::MAX).to_string(),
            "HTTP 503, Retry-After over a year"
        );
        // A status that is not retried anyway is explained as before.
        let not_found = Status::Http {
            code: 404,
            hints: crate::ratelimit::Hints::retry_after(std::time::Duration::from_secs(9_999)),
        };
        assert_eq!(explain(&not_found, &r), "HTTP 404 is not retryable");
        // A cut-off body of a POST may have done its work.
        let post = Rules {
            http: HttpRules {
                unsafe_method: Some("POST".into()),
                ..HttpRules::default()
            },
            ..Rules::default()
        };
        assert_eq!(
            classify(&net(NetFailure::Truncated), &post),
            Verdict::Permanent
        );
    }

    fn turned_by(code: u16, turn: Turn) -> Status {
        Status::Http {
            code,
            hints: crate::ratelimit::Hints {
                turn: Some(turn),
                ..crate::ratelimit::Hints::retry_after(std::time::Duration::from_secs(5))
            },
        }
    }

    #[test]
    fn the_fields_turn_a_verdict_but_never_an_accepted_status() {
        let r = Rules::default();
        assert_eq!(
            classify(&turned_by(403, Turn::RateLimited), &r),
            Verdict::Retryable
        );
        assert_eq!(
            classify(&turned_by(400, Turn::ShouldRetry(true)), &r),
            Verdict::Retryable
        );
        let no = turned_by(503, Turn::ShouldRetry(false));
        assert_eq!(classify(&no, &r), Verdict::Permanent);
        assert_eq!(
            explain(&no, &r),
            "HTTP 503, Retry-After 5s, and the server said Stripe-Should-Retry: false"
        );
        assert_eq!(
            classify(&turned_by(200, Turn::ShouldRetry(false)), &r),
            Verdict::Success
        );
        // A retryable 403 still asks no longer than --retry-after-max.
        let mut far = turned_by(403, Turn::RateLimited);
        if let Status::Http { hints, .. } = &mut far
            && let Some(f) = &mut hints.floor
        {
            f.wait = std::time::Duration::from_secs(3600);
            f.field = crate::ratelimit::Field::XReset;
            f.reading = crate::ratelimit::Reading::EpochSeconds;
            f.value = "1764345600".into();
        }
        assert_eq!(classify(&far, &r), Verdict::Permanent);
        assert_eq!(
            explain(&far, &r),
            "the server asked to wait 1h (X-RateLimit-Reset 1764345600, read as epoch), more than --retry-after-max 10m"
        );
        // A non-idempotent method is still held back: the fields do not
        // say the request did nothing.
        let post = Rules {
            http: HttpRules {
                unsafe_method: Some("POST".into()),
                ..HttpRules::default()
            },
            ..Rules::default()
        };
        assert_eq!(
            classify(&turned_by(500, Turn::ShouldRetry(true)), &post),
            Verdict::Permanent
        );
    }

    #[test]
    fn wording() {
        let s = Status::Http {
            code: 429,
            hints: crate::ratelimit::Hints::retry_after(std::time::Duration::from_millis(1500)),
        };
        assert_eq!(s.to_string(), "HTTP 429, Retry-After 1s 500ms");
        assert_eq!(http(503).to_string(), "HTTP 503");
        let n = Status::Net {
            failure: NetFailure::Connect,
            detail: "connection refused".into(),
        };
        assert_eq!(n.to_string(), "could not connect: connection refused");
    }
}
