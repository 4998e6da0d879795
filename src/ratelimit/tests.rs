use super::*;

/// 2025-11-28 15:20:00 UTC, in epoch seconds.
const NOW: u64 = 1_764_343_200;

fn at(secs: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
}

fn s(n: u64) -> Duration {
    Duration::from_secs(n)
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// The hints of a response with `code` and `fields`, arrived at NOW.
fn hints(code: u16, fields: &[(&str, &str)]) -> Hints {
    let pairs: Vec<(&str, &[u8])> = fields.iter().map(|(n, v)| (*n, v.as_bytes())).collect();
    read(code, &pairs, at(NOW))
}

/// The floor's wait, field and reading.
fn floor_of(code: u16, fields: &[(&str, &str)]) -> Option<(Duration, Field, Reading)> {
    hints(code, fields)
        .floor
        .map(|f| (f.wait, f.field, f.reading))
}

/// The reasons given for what was ignored.
fn ignored(fields: &[(&str, &str)]) -> Vec<String> {
    hints(429, fields).ignored
}

#[test]
fn nothing_says_nothing() {
    assert_eq!(hints(429, &[]), Hints::NONE);
    assert_eq!(hints(429, &[("Content-Type", "text/plain")]), Hints::NONE);
}

#[test]
fn retry_after_in_seconds_and_as_a_date_measured_on_the_servers_clock() {
    assert_eq!(
        floor_of(429, &[("retry-after", "120")]),
        Some((s(120), Field::RetryAfter, Reading::Seconds))
    );
    // The Date says the server's clock is 10s behind ours: the date is 30s
    // after the server's now, so the wait is 30s, not 20s.
    let date = httpdate::fmt_http_date(at(NOW - 10));
    let asked = httpdate::fmt_http_date(at(NOW + 20));
    assert_eq!(
        floor_of(503, &[("Date", &date), ("Retry-After", &asked)]),
        Some((s(30), Field::RetryAfter, Reading::HttpDate))
    );
    // Without a Date, the local clock.
    assert_eq!(
        floor_of(503, &[("Retry-After", &asked)]),
        Some((s(20), Field::RetryAfter, Reading::HttpDate))
    );
    // A date in the past: no wait.
    let past = httpdate::fmt_http_date(at(NOW - 100));
    assert_eq!(
        floor_of(503, &[("Retry-After", &past)]),
        Some((Duration::ZERO, Field::RetryAfter, Reading::HttpDate))
    );
    // Huge: a very long time, which --retry-after-max then refuses.
    assert_eq!(
        floor_of(429, &[("Retry-After", "99999999999999999999999")]),
        Some((s(u64::MAX), Field::RetryAfter, Reading::Seconds))
    );
}

#[test]
fn malformed_retry_after_is_ignored_with_a_reason_and_the_next_field_used() {
    for bad in [
        "-1",
        "1.5",
        "soon",
        "1s",
        "0x10",
        "Sun, 32 Nov 1994 08:49:37 GMT",
    ] {
        let h = hints(429, &[("Retry-After", bad), ("RateLimit-Reset", "7")]);
        assert_eq!(
            h.floor.map(|f| f.field),
            Some(Field::RateLimitReset),
            "{bad}"
        );
        assert_eq!(
            h.ignored,
            [format!(
                "ignored Retry-After: \"{bad}\" is neither a number of seconds nor an HTTP date"
            )]
        );
    }
}

#[test]
fn retry_after_comes_before_every_other_field() {
    assert_eq!(
        floor_of(
            429,
            &[
                ("X-RateLimit-Reset", &(NOW + 600).to_string()),
                ("RateLimit", "\"p\";r=0;t=300"),
                ("Retry-After", "5"),
            ]
        ),
        Some((s(5), Field::RetryAfter, Reading::Seconds))
    );
    // Then RateLimit, before the X- family.
    assert_eq!(
        floor_of(
            429,
            &[
                ("X-RateLimit-Reset", &(NOW + 600).to_string()),
                ("RateLimit", "\"p\";r=0;t=300"),
            ]
        ),
        Some((s(300), Field::RateLimit, Reading::Seconds))
    );
}

#[test]
fn ietf_ratelimit_takes_the_longest_exhausted_policy() {
    let h = hints(
        429,
        &[(
            "RateLimit",
            "\"burst\";r=0;t=2, \"hour\";r=0;t=1800, \"day\";r=4000;t=80000",
        )],
    );
    let f = h.floor.expect("a floor");
    assert_eq!((f.wait, f.field), (s(1800), Field::RateLimit));
    assert_eq!(f.describe(), "RateLimit (seconds) \"hour\";r=0;t=1800");
    // Split over two lines, it is one list.
    assert_eq!(
        floor_of(
            429,
            &[("RateLimit", "\"a\";r=5;t=9"), ("ratelimit", "b;r=0;t=60")]
        ),
        Some((s(60), Field::RateLimit, Reading::Seconds))
    );
    // The policy field alone says nothing about now.
    assert_eq!(
        floor_of(429, &[("RateLimit-Policy", "\"p\";q=100;w=60")]),
        None
    );
}

#[test]
fn ietf_ratelimit_without_an_exhausted_policy_or_malformed_is_ignored() {
    // Quota left: nothing to wait for, and nothing wrong to say.
    assert_eq!(hints(429, &[("RateLimit", "\"p\";r=3;t=30")]), Hints::NONE);
    for (bad, why) in [
        ("\"p\";r=0;t=-5", "has a t that is not a whole number ≥ 0"),
        ("\"p\";r=0;t=1.5", "has a t that is not a whole number ≥ 0"),
        (
            "\"p\";r=0;t=\"30\"",
            "has a t that is not a whole number ≥ 0",
        ),
        ("(\"p\");r=0;t=3", "holds an inner list, not a policy"),
        (
            "1;r=0;t=3",
            "names a policy with neither a string nor a token",
        ),
    ] {
        assert_eq!(
            ignored(&[("RateLimit", bad)]),
            [format!("ignored RateLimit: \"{bad}\" {why}")]
        );
    }
    for bad in [
        "\"p\";r=0;t=30,",
        "\"p\" r=0",
        "p;;t=3",
        "\"p\";r=0;t=99999999999999999",
    ] {
        let why = &ignored(&[("RateLimit", bad)])[0];
        assert!(why.contains("is not a structured list"), "{why}");
    }
}

#[test]
fn the_earlier_drafts_ratelimit_reset_is_seconds() {
    assert_eq!(
        floor_of(
            429,
            &[("RateLimit-Remaining", "0"), ("RateLimit-Reset", "42")]
        ),
        Some((s(42), Field::RateLimitReset, Reading::Seconds))
    );
    // A quota with requests left did not refuse this one.
    assert_eq!(
        floor_of(
            429,
            &[("RateLimit-Remaining", "3"), ("RateLimit-Reset", "42")]
        ),
        None
    );
    assert_eq!(
        ignored(&[("RateLimit-Reset", "42s")]),
        ["ignored RateLimit-Reset: \"42s\" is not a number of seconds"]
    );
}

#[test]
fn x_ratelimit_reset_is_read_by_magnitude() {
    let reset = |v: &str| {
        floor_of(
            403,
            &[("x-ratelimit-remaining", "0"), ("x-ratelimit-reset", v)],
        )
    };
    // GitHub, X: epoch seconds.
    assert_eq!(
        reset(&(NOW + 31).to_string()),
        Some((s(31), Field::XReset, Reading::EpochSeconds))
    );
    // Reddit: seconds to wait.
    assert_eq!(reset("31"), Some((s(31), Field::XReset, Reading::Seconds)));
    // Epoch milliseconds.
    assert_eq!(
        reset(&((NOW + 31) * 1000 + 500).to_string()),
        Some((ms(31_500), Field::XReset, Reading::EpochMillis))
    );
    // Discord: epoch seconds with decimals.
    assert_eq!(
        reset(&format!("{}.250", NOW + 1)),
        Some((ms(1250), Field::XReset, Reading::EpochSeconds))
    );
    // The boundaries, against T = NOW: below T/2 seconds, below 100 T epoch.
    assert_eq!(
        reset(&(NOW / 2 - 1).to_string()).map(|f| f.2),
        Some(Reading::Seconds)
    );
    assert_eq!(
        reset(&(NOW / 2).to_string()).map(|f| f.2),
        Some(Reading::EpochSeconds)
    );
    assert_eq!(
        reset(&(NOW * 100 - 1).to_string()).map(|f| f.2),
        Some(Reading::EpochSeconds)
    );
    assert_eq!(
        reset(&(NOW * 100).to_string()).map(|f| f.2),
        Some(Reading::EpochMillis)
    );
}

#[test]
fn regression_an_epoch_is_never_read_as_a_delay() {
    // The mistake of reading GitHub's epoch as seconds to wait: 56 years.
    let f = floor_of(
        403,
        &[
            ("X-RateLimit-Remaining", "0"),
            ("X-RateLimit-Reset", "1764345600"),
        ],
    );
    assert_eq!(f, Some((s(2400), Field::XReset, Reading::EpochSeconds)));
}

#[test]
fn an_epoch_is_measured_against_the_servers_date() {
    // The server's clock is an hour ahead of ours: its reset 60s after its
    // Date is a 60s wait.
    let date = httpdate::fmt_http_date(at(NOW + 3600));
    let f = floor_of(
        429,
        &[
            ("Date", &date),
            ("X-RateLimit-Remaining", "0"),
            ("X-RateLimit-Reset", &(NOW + 3660).to_string()),
        ],
    );
    assert_eq!(f, Some((s(60), Field::XReset, Reading::EpochSeconds)));
    // A Date more than a day off is not believed, and said so.
    let wild = httpdate::fmt_http_date(at(NOW + 2 * 86_400));
    let h = hints(
        429,
        &[
            ("Date", &wild),
            ("X-RateLimit-Reset", &(NOW + 60).to_string()),
        ],
    );
    assert_eq!(h.floor.map(|f| f.wait), Some(s(60)));
    assert_eq!(
        h.ignored,
        [format!(
            "ignored Date: \"{wild}\" is more than a day from the local clock: the local clock is used"
        )]
    );
    assert_eq!(
        ignored(&[("Date", "yesterday")]),
        ["ignored Date: \"yesterday\" is not an HTTP date: the local clock is used"]
    );
}

#[test]
fn a_reset_in_the_past_is_no_wait_and_no_rate_limit() {
    let h = hints(
        403,
        &[
            ("X-RateLimit-Remaining", "0"),
            ("X-RateLimit-Reset", &(NOW - 5).to_string()),
        ],
    );
    assert_eq!(h.floor.map(|f| f.wait), Some(Duration::ZERO));
    assert_eq!(h.turn, None);
}

#[test]
fn a_403_with_an_exhausted_quota_and_a_reset_to_come_is_a_rate_limit() {
    let reset = (NOW + 60).to_string();
    let turn = |fields: &[(&str, &str)]| hints(403, fields).turn;
    assert_eq!(
        turn(&[
            ("X-RateLimit-Remaining", "0"),
            ("X-RateLimit-Reset", &reset)
        ]),
        Some(Turn::RateLimited)
    );
    // GitHub's secondary limit: a 403 with Retry-After.
    assert_eq!(turn(&[("Retry-After", "60")]), Some(Turn::RateLimited));
    assert_eq!(
        turn(&[("RateLimit", "p;r=0;t=60")]),
        Some(Turn::RateLimited)
    );
    // Requests left, or no count at all: a 403 stays a 403.
    assert_eq!(
        turn(&[
            ("X-RateLimit-Remaining", "12"),
            ("X-RateLimit-Reset", &reset)
        ]),
        None
    );
    assert_eq!(turn(&[("X-RateLimit-Reset", &reset)]), None);
    // Only a 403 is turned.
    assert_eq!(
        hints(
            401,
            &[
                ("X-RateLimit-Remaining", "0"),
                ("X-RateLimit-Reset", &reset)
            ]
        )
        .turn,
        None
    );
}

#[test]
fn a_remaining_count_with_requests_left_keeps_its_reset_out() {
    let reset = (NOW + 60).to_string();
    assert_eq!(
        floor_of(
            429,
            &[
                ("X-RateLimit-Remaining", "7"),
                ("X-RateLimit-Reset", &reset)
            ]
        ),
        None
    );
    assert_eq!(
        ignored(&[
            ("X-RateLimit-Remaining", "none"),
            ("X-RateLimit-Reset", &reset)
        ]),
        ["ignored X-RateLimit-Remaining: \"none\" is not a count: its resets are not used"]
    );
}

#[test]
fn discords_reset_after_comes_before_its_reset() {
    let h = hints(
        429,
        &[
            ("X-RateLimit-Remaining", "0"),
            ("X-RateLimit-Reset", &format!("{}.500", NOW + 9)),
            ("X-RateLimit-Reset-After", "1.234"),
        ],
    );
    let f = h.floor.expect("a floor");
    assert_eq!(
        (f.wait, f.field, f.reading),
        (ms(1234), Field::XResetAfter, Reading::Seconds)
    );
    assert_eq!(f.describe(), "X-RateLimit-Reset-After (seconds) 1.234");
    // Malformed, the reset is used instead.
    for bad in ["1.", ".5", "-1", "1e3", "1,5", "one"] {
        let h = hints(
            429,
            &[
                ("X-RateLimit-Reset", &format!("{}.500", NOW + 9)),
                ("X-RateLimit-Reset-After", bad),
            ],
        );
        assert_eq!(h.floor.map(|f| f.wait), Some(ms(9500)), "{bad}");
        assert_eq!(
            h.ignored,
            [format!(
                "ignored X-RateLimit-Reset-After: \"{bad}\" is not a number of seconds"
            )]
        );
    }
}

#[test]
fn malformed_x_ratelimit_reset_is_ignored() {
    for bad in [
        "",
        "abc",
        "-5",
        "1.2.3",
        "17643456e2",
        "1764345600 ",
        "0x69",
    ] {
        let h = hints(429, &[("X-RateLimit-Reset", bad)]);
        // Surrounding blanks are not part of a value: "1764345600 " is fine.
        if bad == "1764345600 " {
            assert!(h.floor.is_some());
            continue;
        }
        assert_eq!(h.floor, None, "{bad:?}");
        assert_eq!(
            h.ignored,
            [format!(
                "ignored X-RateLimit-Reset: \"{bad}\" is not a number (epoch seconds, epoch milliseconds or seconds)"
            )]
        );
    }
}

#[test]
fn huge_values_are_a_very_long_wait_not_an_overflow() {
    let f = floor_of(429, &[("X-RateLimit-Reset", &"9".repeat(60))]);
    assert_eq!(f.map(|f| f.2), Some(Reading::EpochMillis));
    assert!(f.is_some_and(|f| f.0 > s(10 * 365 * 86_400)));
    let f = floor_of(429, &[("X-RateLimit-Reset-After", &"9".repeat(60))]);
    assert_eq!(f.map(|f| f.0), Some(Duration::MAX));
    let f = floor_of(
        429,
        &[(
            "x-ratelimit-reset-requests",
            &format!("{}h", "9".repeat(40)),
        )],
    );
    assert_eq!(f.map(|f| f.0), Some(Duration::MAX));
    assert_eq!(
        decimal("0.0000000000000000000000001", 1),
        Some(Duration::from_nanos(1))
    );
    assert_eq!(decimal("0.000000000", 1_000_000_000), Some(Duration::ZERO));
}

#[test]
fn linears_requests_reset_in_epoch_milliseconds() {
    let h = hints(
        400,
        &[
            ("X-RateLimit-Requests-Remaining", "0"),
            (
                "X-RateLimit-Requests-Reset",
                &((NOW + 42) * 1000).to_string(),
            ),
        ],
    );
    let f = h.floor.expect("a floor");
    assert_eq!(
        (f.wait, f.field, f.reading),
        (s(42), Field::XRequestsReset, Reading::EpochMillis)
    );
    assert_eq!(
        ignored(&[("X-RateLimit-Requests-Reset", "soon")]),
        [
            "ignored X-RateLimit-Requests-Reset: \"soon\" is not a number (epoch seconds, epoch milliseconds or seconds)"
        ]
    );
}

#[test]
fn openais_durations() {
    for (v, want) in [
        ("1s", s(1)),
        ("6m0s", s(360)),
        ("20ms", ms(20)),
        ("1h2m3.5s", ms(3_723_500)),
        ("0s", Duration::ZERO),
        ("1.5ms", Duration::from_micros(1500)),
        ("7us", Duration::from_micros(7)),
        ("7µs", Duration::from_micros(7)),
        ("3ns", Duration::from_nanos(3)),
    ] {
        assert_eq!(go_duration(v), Some(want), "{v}");
    }
    for bad in [
        "", "1", "s", "1x", "1m1h", "1s1s", "1.s", "-1s", "1 s", "1us1µs", "1S", "1d",
    ] {
        assert_eq!(go_duration(bad), None, "{bad:?}");
    }
    // The exhausted quota's reset is the one used.
    let f = floor_of(
        429,
        &[
            ("x-ratelimit-remaining-requests", "0"),
            ("x-ratelimit-remaining-tokens", "9000"),
            ("x-ratelimit-reset-requests", "1s"),
            ("x-ratelimit-reset-tokens", "6m0s"),
        ],
    );
    assert_eq!(f, Some((s(1), Field::XResetRequests, Reading::Duration)));
    let f = floor_of(
        429,
        &[
            ("x-ratelimit-remaining-tokens", "0"),
            ("x-ratelimit-reset-requests", "1s"),
            ("x-ratelimit-reset-tokens", "6m0s"),
        ],
    );
    assert_eq!(f, Some((s(360), Field::XResetTokens, Reading::Duration)));
    // No count: the longer of the two.
    let f = floor_of(
        429,
        &[
            ("x-ratelimit-reset-requests", "20ms"),
            ("x-ratelimit-reset-tokens", "2s"),
        ],
    );
    assert_eq!(f, Some((s(2), Field::XResetTokens, Reading::Duration)));
    assert_eq!(
        ignored(&[("x-ratelimit-reset-tokens", "6 minutes")]),
        [
            "ignored x-ratelimit-reset-tokens: \"6 minutes\" is not a duration (such as 1s, 6m0s, 20ms)"
        ]
    );
}

#[test]
fn stripe_should_retry_turns_the_verdict_either_way() {
    assert_eq!(
        hints(500, &[("Stripe-Should-Retry", "false")]).turn,
        Some(Turn::ShouldRetry(false))
    );
    assert_eq!(
        hints(409, &[("stripe-should-retry", "true")]).turn,
        Some(Turn::ShouldRetry(true))
    );
    // It outweighs the 403 rule: the server said so outright.
    assert_eq!(
        hints(
            403,
            &[("Retry-After", "3"), ("Stripe-Should-Retry", "false")]
        )
        .turn,
        Some(Turn::ShouldRetry(false))
    );
    for bad in ["True", "1", "yes", ""] {
        let h = hints(500, &[("Stripe-Should-Retry", bad)]);
        assert_eq!(h.turn, None);
        assert_eq!(
            h.ignored,
            [format!(
                "ignored Stripe-Should-Retry: \"{bad}\" is neither true nor false"
            )]
        );
    }
}

#[test]
fn a_field_sent_twice_differently_is_ignored_and_values_are_shown_safely() {
    assert_eq!(
        ignored(&[("Retry-After", "5"), ("Retry-After", "50")]),
        ["ignored Retry-After: \"5\" is sent more than once, with different values"]
    );
    assert_eq!(
        floor_of(429, &[("Retry-After", "5"), ("retry-after", "5")]).map(|f| f.0),
        Some(s(5))
    );
    // Not text: ignored, shown without its bytes driving a terminal.
    let pairs: Vec<(&str, &[u8])> = vec![("Retry-After", b"5\x1b[2J")];
    let h = read(429, &pairs, at(NOW));
    assert_eq!(h.floor, None);
    assert_eq!(
        h.ignored,
        ["ignored Retry-After: \"5\\x1b[2J\" is not plain ASCII text"]
    );
    let long = "x".repeat(200);
    let why = &ignored(&[("Retry-After", &long)])[0];
    assert!(
        why.contains(&format!("\"{}…\"", "x".repeat(VALUE_MAX))),
        "{why}"
    );
}

#[test]
fn retry_after_takes_the_obsolete_date_forms_too() {
    // 1994-11-06 08:49:37 UTC, RFC 9110's own example date.
    let date = 784_111_777;
    for v in [
        "Sun, 06 Nov 1994 08:49:37 GMT",
        "Sunday, 06-Nov-94 08:49:37 GMT",
        "Sun Nov  6 08:49:37 1994",
    ] {
        let pairs: Vec<(&str, &[u8])> = vec![("Retry-After", v.as_bytes())];
        let f = read(503, &pairs, at(date - 30)).floor.expect("a floor");
        assert_eq!((f.wait, f.reading), (s(30), Reading::HttpDate), "{v}");
    }
}

#[test]
fn without_a_count_only_a_429_takes_a_reset() {
    let reset = (NOW + 60).to_string();
    // A 503 from an API that sends its window's reset on every response:
    // nothing says that quota was spent.
    assert_eq!(floor_of(503, &[("X-RateLimit-Reset", &reset)]), None);
    assert_eq!(floor_of(200, &[("x-ratelimit-reset-requests", "1s")]), None);
    assert_eq!(
        floor_of(429, &[("X-RateLimit-Reset", &reset)]).map(|f| f.0),
        Some(s(60))
    );
    // A count of 0 says so whatever the status.
    assert_eq!(
        floor_of(
            503,
            &[
                ("X-RateLimit-Remaining", "0"),
                ("X-RateLimit-Reset", &reset)
            ]
        )
        .map(|f| f.0),
        Some(s(60))
    );
}

#[test]
fn reddits_decimal_counts_and_seconds() {
    let spent = [
        ("x-ratelimit-remaining", "0.0"),
        ("x-ratelimit-reset", "330"),
    ];
    assert_eq!(
        floor_of(429, &spent),
        Some((s(330), Field::XReset, Reading::Seconds))
    );
    assert_eq!(hints(403, &spent).turn, Some(Turn::RateLimited));
    let left = [
        ("x-ratelimit-remaining", "598.0"),
        ("x-ratelimit-reset", "330"),
    ];
    assert_eq!(floor_of(429, &left), None);
}

#[test]
fn a_date_that_agrees_with_the_local_clock_gives_way_to_its_finer_reading() {
    // Dates have whole seconds: 0.9s into the second, the Date still says
    // its start. The local clock, which agrees, measures the reset.
    let now = at(NOW) + ms(900);
    let date = httpdate::fmt_http_date(at(NOW));
    let reset = (NOW + 1).to_string();
    let pairs: Vec<(&str, &[u8])> = vec![
        ("Date", date.as_bytes()),
        ("X-RateLimit-Remaining", b"0"),
        ("X-RateLimit-Reset", reset.as_bytes()),
    ];
    assert_eq!(read(429, &pairs, now).floor.map(|f| f.wait), Some(ms(100)));
    // Two seconds off is a skewed clock: the Date measures.
    let date = httpdate::fmt_http_date(at(NOW - 2));
    let pairs: Vec<(&str, &[u8])> = vec![
        ("Date", date.as_bytes()),
        ("X-RateLimit-Remaining", b"0"),
        ("X-RateLimit-Reset", reset.as_bytes()),
    ];
    assert_eq!(read(429, &pairs, now).floor.map(|f| f.wait), Some(s(3)));
}

#[test]
fn githubs_secondary_limit_without_fields_waits_a_minute_and_turns_a_403() {
    const BODY: &[u8] = br#"{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again.","documentation_url":"https://docs.github.com/"}"#;
    let none = hints(403, &[("x-ratelimit-remaining", "4990")]);
    // Only GitHub's 403 and 429 without a wait in their fields are looked at.
    assert!(may_be_github_secondary(403, true, &none));
    assert!(may_be_github_secondary(429, true, &none));
    assert!(!may_be_github_secondary(403, false, &none));
    assert!(!may_be_github_secondary(500, true, &none));
    let fielded = hints(429, &[("Retry-After", "5")]);
    assert!(!may_be_github_secondary(429, true, &fielded));

    let h = github_secondary(403, none.clone(), BODY);
    let floor = h.floor.expect("a floor");
    assert_eq!(
        (floor.wait, floor.field, floor.reading),
        (s(60), Field::GitHubSecondary, Reading::Documented)
    );
    assert_eq!(floor.cite(), "GitHub's secondary rate limit 60s");
    assert_eq!(h.turn, Some(Turn::RateLimited));
    // A 429 is a rate limit already: only the wait is added.
    assert_eq!(github_secondary(429, none.clone(), BODY).turn, None);
    // Any case; anywhere in the first bytes.
    assert!(
        github_secondary(403, none.clone(), b"<p>SECONDARY RATE LIMIT</p>")
            .floor
            .is_some()
    );
    // A 403 that names no such limit (a token without the scope) stays a 403.
    let scope = br#"{"message":"Resource not accessible by personal access token"}"#;
    assert_eq!(github_secondary(403, none.clone(), scope), none);
    // A wait a field set is never replaced.
    assert_eq!(github_secondary(429, fielded.clone(), BODY), fielded);
}
