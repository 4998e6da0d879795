//! Rate-limit fields end to end: each server convention schedules the next
//! request, turns the verdict where it should, and is named in the log;
//! malformed values are skipped (said at -v), and a wait beyond the
//! deadline ends the run at once.

use super::*;

/// Epoch seconds `secs` from now, as servers send them.
fn epoch_in(secs: i64) -> String {
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs();
    (now as i64 + secs).to_string()
}

/// The JSON log's events of `kind`.
fn events(r: &Run, kind: &str) -> Vec<serde_json::Value> {
    r.stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["event"] == kind)
        .collect()
}

/// A run against `first` then a 200, with short backoff and the spread
/// `spread` after a server's wait, logged in JSON.
fn then_ok(first: Reply, spread: &str, extra: &[&str]) -> (Run, Server) {
    let s = Server::start(vec![first, reply(200).body("ok")]);
    let mut args = vec![
        "--http",
        &s.url,
        "-b",
        "10ms",
        "-c",
        "10ms",
        "--retry-after-spread",
        spread,
        "--log-format",
        "json",
    ];
    args.extend_from_slice(extra);
    let r = retry(&args);
    (r, s)
}

#[test]
fn github_403_with_no_requests_left_waits_for_the_epoch_reset() {
    let (r, s) = then_ok(
        reply(403)
            .header("x-ratelimit-limit", "60")
            .header("x-ratelimit-remaining", "0")
            .header("x-ratelimit-reset", &epoch_in(2)),
        "100ms",
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(s.hits(), 2);
    // Whole epoch seconds: two from now is more than one second away.
    assert!(r.took >= Duration::from_secs(1), "took {:?}", r.took);
    assert!(r.took < Duration::from_secs(20), "took {:?}", r.took);
    let a = &events(&r, "attempt")[0];
    assert_eq!(a["http_status"], 403);
    assert_eq!(a["outcome"], "retryable");
    assert_eq!(a["hint_source"], "X-RateLimit-Reset");
    assert_eq!(a["hint_reading"], "epoch");
    let sleep = &events(&r, "sleep")[0];
    let (hint, spread) = (sleep["hint_ms"].as_f64(), sleep["spread_ms"].as_f64());
    assert!(hint.is_some_and(|h| h > 900.0 && h <= 2000.0), "{sleep}");
    assert!(spread.is_some_and(|j| j <= 100.0), "{sleep}");
}

#[test]
fn github_403_with_requests_left_is_a_403() {
    let s = Server::start(vec![
        reply(403)
            .header("x-ratelimit-remaining", "12")
            .header("x-ratelimit-reset", &epoch_in(2)),
    ]);
    let r = retry(&["--http", &s.url, "-b", "10ms"]);
    assert_eq!(r.code, 22, "{}", r.stderr);
    assert_eq!(s.hits(), 1);
    assert!(
        r.stderr.contains("HTTP 403 is not retryable"),
        "{}",
        r.stderr
    );
}

#[test]
fn github_429_with_retry_after_takes_retry_after_over_the_reset() {
    let (r, s) = then_ok(
        reply(429)
            .header("retry-after", "1")
            .header("x-ratelimit-remaining", "0")
            .header("x-ratelimit-reset", &epoch_in(300)),
        "0",
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(s.hits(), 2);
    assert!(r.took >= Duration::from_secs(1), "took {:?}", r.took);
    assert!(r.took < Duration::from_secs(60), "took {:?}", r.took);
    let a = &events(&r, "attempt")[0];
    assert_eq!(a["hint_source"], "Retry-After");
    assert_eq!(a["retry_after_ms"], 1000.0);
    // Spread 0: exactly the server's wait.
    assert_eq!(events(&r, "sleep")[0]["spread_ms"], 0.0);
}

#[test]
fn discords_reset_after_with_decimals_comes_first() {
    let (r, s) = then_ok(
        reply(429)
            .header("X-RateLimit-Remaining", "0")
            .header("X-RateLimit-Reset", &format!("{}.250", epoch_in(400)))
            .header("X-RateLimit-Reset-After", "0.750"),
        "50ms",
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(s.hits(), 2);
    assert!(r.took >= Duration::from_millis(750), "took {:?}", r.took);
    let a = &events(&r, "attempt")[0];
    assert_eq!(a["hint_source"], "X-RateLimit-Reset-After");
    assert_eq!(a["hint_value"], "0.750");
    assert_eq!(a["retry_after_ms"], 750.0);
}

#[test]
fn linears_epoch_milliseconds_are_read_as_such() {
    let ms = format!("{}500", epoch_in(1));
    let (r, s) = then_ok(
        reply(429)
            .header("X-RateLimit-Requests-Remaining", "0")
            .header("X-RateLimit-Requests-Reset", &ms),
        "0",
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(s.hits(), 2);
    assert!(r.took < Duration::from_secs(30), "took {:?}", r.took);
    let a = &events(&r, "attempt")[0];
    assert_eq!(a["hint_source"], "X-RateLimit-Requests-Reset");
    assert_eq!(a["hint_reading"], "epoch ms");
    assert!(
        a["retry_after_ms"]
            .as_f64()
            .is_some_and(|w| w > 400.0 && w <= 1500.0),
        "{a}"
    );
}

#[test]
fn openais_durations_take_the_exhausted_quotas_reset() {
    let (r, s) = then_ok(
        reply(429)
            .header("x-ratelimit-remaining-requests", "0")
            .header("x-ratelimit-remaining-tokens", "149000")
            .header("x-ratelimit-reset-requests", "600ms")
            .header("x-ratelimit-reset-tokens", "6m0s"),
        "0",
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(s.hits(), 2);
    assert!(r.took >= Duration::from_millis(600), "took {:?}", r.took);
    assert!(r.took < Duration::from_secs(60), "took {:?}", r.took);
    let a = &events(&r, "attempt")[0];
    assert_eq!(a["hint_source"], "x-ratelimit-reset-requests");
    assert_eq!(a["hint_reading"], "duration");
    assert_eq!(a["retry_after_ms"], 600.0);
}

#[test]
fn ietf_ratelimit_with_several_policies_takes_the_exhausted_one() {
    let (r, s) = then_ok(
        reply(429)
            .header(
                "RateLimit-Policy",
                "\"burst\";q=10;w=1, \"day\";q=1000;w=86400",
            )
            .header("RateLimit", "\"burst\";r=0;t=1, \"day\";r=990;t=80000"),
        "0",
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(s.hits(), 2);
    assert!(r.took >= Duration::from_secs(1), "took {:?}", r.took);
    let a = &events(&r, "attempt")[0];
    assert_eq!(a["hint_source"], "RateLimit");
    assert_eq!(a["hint_value"], "\"burst\";r=0;t=1");
}

#[test]
fn malformed_values_are_skipped_and_said_only_at_verbose() {
    let first = || {
        reply(429)
            .header("Retry-After", "soon")
            .header("RateLimit", "\"p\";r=0;t=1.5")
            .header("X-RateLimit-Reset", "tomorrow")
            .header("x-ratelimit-reset-requests", "6 minutes")
    };
    let s = Server::start(vec![first(), reply(200)]);
    let r = retry(&["--http", &s.url, "-b", "10ms", "-c", "10ms", "-v"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    // No field was usable: the ordinary backoff, not a guess.
    assert!(r.took < Duration::from_secs(5), "took {:?}", r.took);
    for why in [
        "ignored Retry-After: \"soon\" is neither a number of seconds nor an HTTP date",
        "ignored RateLimit: \"\"p\";r=0;t=1.5\" has a t that is not a whole number ≥ 0",
        "ignored X-RateLimit-Reset: \"tomorrow\" is not a number",
        "ignored x-ratelimit-reset-requests: \"6 minutes\" is not a duration",
    ] {
        assert_eq!(r.stderr.matches(why).count(), 1, "{why}\n{}", r.stderr);
    }
    let s = Server::start(vec![first(), reply(200)]);
    let r = retry(&["--http", &s.url, "-b", "10ms", "-c", "10ms"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stderr.contains("ignored"), "{}", r.stderr);
}

#[test]
fn a_reset_in_the_past_is_no_wait_and_leaves_a_403_final() {
    let past = || {
        [
            ("X-RateLimit-Remaining", "0".to_string()),
            ("X-RateLimit-Reset", epoch_in(-100)),
        ]
    };
    let mut first = reply(429);
    for (k, v) in past() {
        first = first.header(k, &v);
    }
    let (r, s) = then_ok(first, "0", &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(s.hits(), 2);
    assert!(r.took < Duration::from_secs(5), "took {:?}", r.took);
    assert_eq!(events(&r, "attempt")[0]["retry_after_ms"], 0.0);
    let mut forbidden = reply(403);
    for (k, v) in past() {
        forbidden = forbidden.header(k, &v);
    }
    let s = Server::start(vec![forbidden]);
    let r = retry(&["--http", &s.url, "-b", "10ms"]);
    assert_eq!(r.code, 22, "{}", r.stderr);
    assert_eq!(s.hits(), 1);
}

#[test]
fn a_reset_beyond_max_time_gives_up_at_once_naming_the_field() {
    let reset = epoch_in(120);
    let s = Server::start(vec![
        reply(429)
            .header("X-RateLimit-Remaining", "0")
            .header("X-RateLimit-Reset", &reset),
    ]);
    let r = retry(&["--http", &s.url, "--max-time", "10s"]);
    assert_eq!(r.code, 22, "{}", r.stderr);
    assert_eq!(s.hits(), 1);
    assert!(r.took < Duration::from_secs(5), "took {:?}", r.took);
    let line = r
        .stderr
        .lines()
        .find(|l| l.contains("giving up"))
        .expect("a give-up line");
    assert!(
        line.contains(&format!(
            "the server's X-RateLimit-Reset {reset}, read as epoch ("
        )) && line.contains("points past --max-time"),
        "{line}"
    );
}

#[test]
fn a_reset_beyond_retry_after_max_is_final_naming_the_field() {
    let reset = epoch_in(3600);
    let s = Server::start(vec![
        reply(403)
            .header("X-RateLimit-Remaining", "0")
            .header("X-RateLimit-Reset", &reset),
    ]);
    let r = retry(&["--http", &s.url, "--retry-after-max", "5m"]);
    assert_eq!(r.code, 22, "{}", r.stderr);
    assert_eq!(s.hits(), 1);
    assert!(
        r.stderr.contains(&format!(
            "(X-RateLimit-Reset {reset}, read as epoch), more than --retry-after-max 5m"
        )),
        "{}",
        r.stderr
    );
}

#[test]
fn stripe_should_retry_decides_either_way() {
    let s = Server::start(vec![reply(500).header("Stripe-Should-Retry", "false")]);
    let r = retry(&["--http", &s.url, "-b", "10ms"]);
    assert_eq!(r.code, 22, "{}", r.stderr);
    assert_eq!(s.hits(), 1);
    assert!(
        r.stderr
            .contains("HTTP 500, and the server said Stripe-Should-Retry: false"),
        "{}",
        r.stderr
    );
    let s = Server::start(vec![
        reply(409).header("Stripe-Should-Retry", "true"),
        reply(200).body("done"),
    ]);
    let r = retry(&["--http", &s.url, "-b", "10ms"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, "done");
    assert_eq!(s.hits(), 2);
}

#[test]
fn the_text_log_says_why_the_wait_was_chosen() {
    let reset = epoch_in(1);
    let s = Server::start(vec![
        reply(429)
            .header("X-RateLimit-Remaining", "0")
            .header("X-RateLimit-Reset", &reset),
        reply(200),
    ]);
    let r = retry(&[
        "--http",
        &s.url,
        "-b",
        "10ms",
        "--retry-after-spread",
        "200ms",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let line = r
        .stderr
        .lines()
        .find(|l| l.contains("failed"))
        .expect("an attempt line");
    assert!(
        line.contains(&format!(": X-RateLimit-Reset (epoch) {reset} + ")),
        "{line}"
    );
    assert!(line.ends_with("full jitter over 200ms"), "{line}");
}

#[test]
fn retry_after_spread_is_refused_outside_http_mode_and_malformed() {
    let r = retry(&["--retry-after-spread", "1s", "true"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("--retry-after-spread"), "{}", r.stderr);
    let r = retry(&[
        "--http",
        "http://127.0.0.1:9/",
        "--retry-after-spread",
        "soon",
    ]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("--retry-after-spread"), "{}", r.stderr);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
}

#[test]
fn the_report_names_what_the_last_response_asked_for() {
    let s = Server::start(vec![
        reply(429)
            .header("x-ratelimit-remaining", "0")
            .header("x-ratelimit-reset", "7"),
    ]);
    let dir = tempfile::tempdir().expect("a scratch directory");
    let report = dir.path().join("r.json");
    let report = report.to_str().expect("a UTF-8 path");
    let r = retry(&["--http", &s.url, "-n", "1", "--report", report]);
    assert_eq!(r.code, 22, "{}", r.stderr);
    let text = std::fs::read_to_string(report).expect("the report");
    let v: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(v["server_hint"], "X-RateLimit-Reset (seconds) 7", "{text}");
    assert_eq!(v["server_hint_ms"], 7000, "{text}");
}

/// GitHub's secondary limit as its API sends it when it names no wait: a
/// 403, requests left in the primary quota, the reason in the body.
fn github_secondary_403() -> Reply {
    reply(403)
        .header("X-GitHub-Request-Id", "C0DE:1234:5678:9ABC:DEF0")
        .header("x-ratelimit-remaining", "4990")
        .body(
            r#"{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"}"#,
        )
}

#[test]
fn githubs_secondary_limit_with_no_fields_asks_for_a_minute() {
    // A minute does not fit in --max-time 10s: the run ends at once and
    // says which rule asked for it.
    let s = Server::start(vec![github_secondary_403()]);
    let r = retry(&["--http", &s.url, "--max-time", "10s"]);
    assert_eq!(r.code, 22, "{}", r.stderr);
    assert_eq!(s.hits(), 1);
    assert!(r.took < Duration::from_secs(5), "took {:?}", r.took);
    assert!(
        r.stderr
            .contains("the server's GitHub's secondary rate limit 60s (")
            && r.stderr.contains("points past --max-time"),
        "{}",
        r.stderr
    );
    // With time for it, the 403 is a rate limit (retryable), and the log
    // names the rule that set the wait.
    let s = Server::start(vec![github_secondary_403()]);
    let r = retry(&["--http", &s.url, "--max", "1", "--log-format", "json"]);
    assert_eq!(r.code, 22, "{}", r.stderr);
    let a = &events(&r, "attempt")[0];
    assert_eq!(a["http_status"], 403);
    assert_eq!(a["outcome"], "retryable", "{a}");
    assert_eq!(a["hint_source"], "GitHub's secondary rate limit");
    assert_eq!(a["hint_reading"], "documented wait");
    assert_eq!(a["retry_after_ms"], 60_000.0, "{a}");
}

#[test]
fn a_github_403_that_names_no_rate_limit_is_final() {
    let s = Server::start(vec![
        reply(403)
            .header("X-GitHub-Request-Id", "C0DE:1234:5678:9ABC:DEF0")
            .header("x-ratelimit-remaining", "4990")
            .body(r#"{"message":"Resource not accessible by personal access token"}"#),
    ]);
    let r = retry(&["--http", &s.url, "-b", "10ms"]);
    assert_eq!(r.code, 22, "{}", r.stderr);
    assert_eq!(s.hits(), 1);
}
