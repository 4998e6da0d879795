//! The context retry hands on: to a command and its hooks in the
//! environment, to an HTTP probe's server in headers; invalid incoming
//! values ignored with one warning.

use super::*;
use crate::util::{retry, retry_sh};

/// `retry` running `echo $TRACEPARENT`, given `traceparent`, with tracing
/// on (a receiver) or off.
fn handed(traceparent: &str, export: Option<&Receiver>) -> crate::util::Outcome {
    let mut r = retry_sh(
        &["--max", "1"],
        "echo \"[$TRACEPARENT] [$TRACESTATE]\"; exit 3",
    )
    .env("TRACEPARENT", traceparent)
    .env("TRACESTATE", "a=1");
    if let Some(rx) = export {
        r = r.env("OTEL_EXPORTER_OTLP_ENDPOINT", rx.url());
    }
    r.run()
}

#[test]
fn invalid_incoming_contexts_are_one_warning_and_never_change_the_status() {
    let rx = Receiver::start();
    let upper = PARENT.to_uppercase();
    let cases = [
        ("wrong version", PARENT.replacen("00-", "ff-", 1)),
        (
            "all-zero trace id",
            format!("00-{}-{PARENT_SPAN}-01", "0".repeat(32)),
        ),
        (
            "all-zero span id",
            format!("00-{PARENT_TRACE}-{}-01", "0".repeat(16)),
        ),
        ("too short", PARENT[..54].to_string()),
        ("trailing data", format!("{PARENT}-x")),
        ("upper-case hex", upper),
    ];
    for (what, value) in &cases {
        // Tracing off: the command gets its environment as it was.
        let off = handed(value, None);
        off.expect_code(3);
        let warnings: Vec<String> = off
            .stderr_lines()
            .into_iter()
            .filter(|l| l.contains("warning"))
            .collect();
        assert_eq!(warnings.len(), 1, "{what}: {warnings:?}");
        assert!(
            warnings[0].contains("TRACEPARENT is not a W3C traceparent"),
            "{what}: {warnings:?}"
        );
        // Tracing on: a new trace, and the tracestate of the invalid parent
        // is not passed on.
        let on = handed(value, Some(&rx));
        on.expect_code(3);
        let given = on.stdout_text();
        assert!(
            !given.contains(PARENT_TRACE) && !given.contains(&PARENT_TRACE.to_uppercase()),
            "{what}: {given}"
        );
        assert!(
            given.starts_with("[00-") && given.ends_with("] []\n"),
            "{what}: {given}"
        );
        let lines = on.stderr_lines();
        assert_eq!(
            lines.iter().filter(|l| l.contains("warning")).count(),
            1,
            "{what}: {lines:?}"
        );
    }
}

#[test]
fn each_attempt_and_each_run_has_span_ids_of_its_own_whatever_the_seed() {
    let run = || {
        retry_sh(
            &["--max", "2", "--base", "1ms", "--seed", "1"],
            "echo \"$TRACEPARENT\"; exit 1",
        )
        .env("TRACEPARENT", PARENT)
        .run()
    };
    let (a, b) = (run(), run());
    a.expect_code(1);
    let mut seen: Vec<String> = a
        .stdout_text()
        .lines()
        .chain(b.stdout_text().lines())
        .map(String::from)
        .collect();
    assert_eq!(seen.len(), 4);
    for tp in &seen {
        assert!(
            tp.starts_with(&format!("00-{PARENT_TRACE}-")) && tp.ends_with("-01"),
            "{tp}"
        );
    }
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 4, "span ids repeat: {seen:?}");
}

#[test]
fn trace_context_off_hands_the_environment_on_as_it_was() {
    let out = retry_sh(
        &["--max", "1", "--trace-context", "off"],
        "echo \"$TRACEPARENT\"",
    )
    .env("TRACEPARENT", PARENT)
    .run();
    out.expect_code(0);
    assert_eq!(out.stdout_text(), format!("{PARENT}\n"));
    // No context at all: nothing appears.
    let none = retry_sh(&["--max", "1"], "echo \"[${TRACEPARENT-unset}]\"").run();
    assert_eq!(none.stdout_text(), "[unset]\n");
}

#[test]
fn hooks_see_the_context_of_the_attempt_they_follow() {
    let out = retry_sh(
        &[
            "--max",
            "2",
            "--base",
            "1ms",
            "--on-retry",
            "echo \"hook $TRACEPARENT\" >&2",
            "--on-give-up",
            "echo \"give-up $TRACEPARENT\" >&2",
        ],
        "echo \"attempt $TRACEPARENT\" >&2; exit 1",
    )
    .env("TRACEPARENT", PARENT)
    .run();
    out.expect_code(1);
    let lines = out.stderr_lines();
    let tp = |prefix: &str| -> Vec<String> {
        lines
            .iter()
            .filter_map(|l| l.strip_prefix(prefix).map(String::from))
            .collect()
    };
    let (attempts, hook, give_up) = (tp("attempt "), tp("hook "), tp("give-up "));
    assert_eq!(attempts.len(), 2, "{lines:?}");
    assert_eq!(hook, [attempts[0].clone()]);
    assert_eq!(give_up, [attempts[1].clone()]);
}

#[test]
fn a_probe_sends_each_attempts_context_in_headers() {
    let rx = Receiver::with(0.0, 1);
    let out = retry([
        "--max",
        "2",
        "--base",
        "1ms",
        "--http",
        &format!("{}/probe", rx.url()),
    ])
    .env("TRACEPARENT", PARENT)
    .env("TRACESTATE", "vendor=abc")
    .env("BAGGAGE", "user=alice")
    .env("OTEL_EXPORTER_OTLP_ENDPOINT", rx.url())
    .run();
    out.expect_code(0);
    let spans = rx.wait_spans(3);
    let probes = rx.probes();
    assert_eq!(probes.len(), 2);
    for (n, probe) in probes.iter().enumerate() {
        let attempt = named(&spans, &format!("attempt {}", n + 1));
        let headers = &probe["headers"];
        assert_eq!(
            headers["traceparent"],
            format!(
                "00-{PARENT_TRACE}-{}-01",
                attempt["span_id"].as_str().unwrap()
            )
        );
        assert_eq!(headers["tracestate"], "vendor=abc");
        assert_eq!(headers["baggage"], "user=alice");
        assert_eq!(attempt["attrs"]["http.request.method"], "GET");
        assert_eq!(attempt["kind"], 3);
    }
    let first = named(&spans, "attempt 1");
    assert_eq!(first["attrs"]["http.response.status_code"], 503);
    assert!(first["attrs"].get("http.request.resend_count").is_none());
    let second = named(&spans, "attempt 2");
    assert_eq!(second["attrs"]["http.request.resend_count"], 1);
    assert_eq!(second["attrs"]["url.full"], format!("{}/probe", rx.url()));
}

#[test]
fn the_dry_run_shows_the_trace_it_would_keep_and_sends_nothing() {
    let rx = Receiver::start();
    let out = retry([
        "--dry-run",
        "--max",
        "2",
        "--otlp-endpoint",
        &format!("http://u:hunter2@127.0.0.1:{}", rx.port),
        "--",
        "true",
    ])
    .env("TRACEPARENT", PARENT)
    .run();
    out.expect_code(0);
    let text = out.stdout_text();
    let line = text
        .lines()
        .find(|l| l.starts_with("trace: "))
        .expect("a trace line");
    assert!(
        line.contains(&format!(
            "a child of trace {PARENT_TRACE} span {PARENT_SPAN}"
        )),
        "{line}"
    );
    assert!(
        line.contains(&format!(
            "spans exported to http://u:***@127.0.0.1:{}/v1/traces",
            rx.port
        )),
        "{line}"
    );
    assert!(!text.contains("hunter2"));
    // Without tracing, the report is as it always was.
    let plain = retry(["--dry-run", "--max", "2", "--", "true"]).run();
    assert!(!plain.stdout_text().contains("trace"));
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert!(rx.spans().is_empty());
}

#[test]
fn simulate_refuses_the_tracing_flags_in_one_line() {
    for flag in [
        ["--otlp-endpoint", "http://127.0.0.1:4318"],
        ["--trace-context", "off"],
    ] {
        let mut args = vec!["--simulate", "10", "--outage", "5s"];
        args.extend(flag);
        let out = retry(args).run();
        out.expect_code(2);
        out.expect_usage_line(&format!(
            "{} reports on a run, and --simulate runs nothing",
            flag[0]
        ));
    }
    // A variable set for the whole session is no reason to refuse.
    retry(["--simulate", "10", "--outage", "5s"])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
        .env("TRACEPARENT", PARENT)
        .run()
        .expect_code(0);
}
