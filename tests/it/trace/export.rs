//! Spans at a real receiver: the links from an incoming TRACEPARENT to the
//! command's own span, the attributes and timings against retry's log, a
//! receiver that is down or slow, a signal mid-run, the SDK's switches.

use std::time::Duration;

use nix::sys::signal::Signal;
use serde_json::Value;

use super::*;
use crate::util::{retry, retry_sh, scratch};

fn ms_between(later: &Value, earlier: &Value) -> f64 {
    (later.as_u64().unwrap() as f64 - earlier.as_u64().unwrap() as f64) / 1e6
}

#[test]
fn the_incoming_parent_the_run_the_attempts_and_the_commands_own_spans_are_one_tree() {
    let rx = Receiver::start();
    let out = retry_sh(
        &[
            "--max",
            "3",
            "--base",
            "200ms",
            "--log-format",
            "json",
            "--seed",
            "7",
        ],
        &child_script(2, 3),
    )
    .env("TRACEPARENT", PARENT)
    .env("TRACESTATE", "vendor=abc")
    .env("OTEL_EXPORTER_OTLP_ENDPOINT", rx.url())
    .env("OTEL_SERVICE_NAME", "deploy")
    .run();
    out.expect_code(0);
    // Two attempts, the run, and the child's span in each attempt.
    let spans = rx.wait_spans(5);
    let run = named(&spans, "retry sh");
    let attempts = all_named(&spans, "attempt 1")
        .into_iter()
        .chain(all_named(&spans, "attempt 2"))
        .collect::<Vec<_>>();
    let children = all_named(&spans, "child work");
    assert_eq!((attempts.len(), children.len()), (2, 2), "{spans:#?}");
    for s in &spans {
        assert_eq!(s["trace_id"], PARENT_TRACE);
    }
    assert_eq!(run["parent"], PARENT_SPAN);
    assert_eq!(run["trace_state"], "vendor=abc");
    assert_eq!(run["resource"]["service.name"], "deploy");
    assert_eq!(run["path"], "/v1/traces");
    assert_eq!(run["headers"]["content-type"], "application/x-protobuf");
    for (attempt, child) in attempts.iter().zip(&children) {
        assert_eq!(attempt["parent"], run["span_id"]);
        assert_eq!(child["parent"], attempt["span_id"]);
        assert_eq!(
            child["attrs"]["child.attempt"],
            attempt["attrs"]["retry.attempt"].to_string()
        );
    }
    assert_ne!(attempts[0]["span_id"], attempts[1]["span_id"]);

    let (first, second) = (attempts[0], attempts[1]);
    assert_eq!(first["attrs"]["process.exit.code"], 3);
    assert_eq!(first["attrs"]["retry.classification"], "retryable");
    assert_eq!(first["attrs"]["retry.jitter"], "full");
    assert_eq!(first["status"]["code"], 2);
    assert_eq!(first["attrs"]["process.command"], "sh");
    assert_eq!(second["attrs"]["process.exit.code"], 0);
    assert_eq!(second["attrs"]["retry.classification"], "success");
    assert_eq!(second["status"]["code"], 0);
    assert_eq!(run["status"]["code"], 0);
    assert_eq!(run["attrs"]["retry.seed"], 7);
    assert_eq!(run["attrs"]["retry.end"], "success");

    // The wait drawn is the one the log shows, and the gap between the
    // attempt spans is at least that.
    let log = out.json();
    let sleep = log
        .iter()
        .find(|l| l["event"] == "sleep")
        .expect("a sleep line");
    let delay_ms = sleep["delay_ms"].as_f64().unwrap();
    let drawn = first["attrs"]["retry.wait"].as_f64().unwrap() * 1000.0;
    assert!((drawn - delay_ms).abs() < 0.01, "{drawn} vs {delay_ms}");
    assert_eq!(first["attrs"]["retry.wait.ceiling"], 0.2);
    let gap = ms_between(&second["start"], &first["end"]);
    assert!(
        gap >= delay_ms - 1.0 && gap < delay_ms + 1000.0,
        "gap {gap} ms, wait {delay_ms} ms"
    );
    // Each attempt span lasts what the log says the attempt took.
    let logged: Vec<f64> = log
        .iter()
        .filter(|l| l["event"] == "attempt")
        .map(|l| l["duration_ms"].as_f64().unwrap())
        .collect();
    for (span, ms) in attempts.iter().zip(&logged) {
        let lasted = ms_between(&span["end"], &span["start"]);
        assert!((lasted - ms).abs() < 0.01, "span {lasted} ms, log {ms} ms");
    }
    let wait = &run["events"][0];
    assert_eq!(wait["name"], "retry.wait");
    // The attempts lie within the run.
    assert!(first["start"].as_u64() >= run["start"].as_u64());
    assert!(second["end"].as_u64() <= run["end"].as_u64());
}

#[test]
fn a_run_that_gives_up_is_an_error_with_a_give_up_event() {
    let rx = Receiver::start();
    retry_sh(&["--max", "2", "--base", "10ms"], "exit 4")
        .env(
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            format!("{}/custom", rx.url()),
        )
        .run()
        .expect_code(4);
    let spans = rx.wait_spans(3);
    let run = named(&spans, "retry sh");
    // A new trace: the run is its root.
    assert_eq!(run["parent"], "");
    assert_eq!(run["path"], "/custom");
    assert_eq!(run["status"]["code"], 2);
    assert_eq!(run["attrs"]["retry.end"], "exhausted");
    let events: Vec<&Value> = run["events"].as_array().unwrap().iter().collect();
    assert_eq!(events.last().unwrap()["name"], "retry.give_up");
    assert_eq!(run["resource"]["service.name"], "retry");
}

#[test]
fn headers_reach_the_receiver_and_never_the_log() {
    let rx = Receiver::start();
    let out = retry_sh(&["-v", "--max", "1"], "true")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", rx.url())
        .env(
            "OTEL_EXPORTER_OTLP_HEADERS",
            "authorization=Bearer%20hunter2,x-tenant=t1",
        )
        .run();
    out.expect_code(0);
    let spans = rx.wait_spans(2);
    assert_eq!(spans[0]["headers"]["authorization"], "Bearer hunter2");
    assert_eq!(spans[0]["headers"]["x-tenant"], "t1");
    let log = out.stderr_text();
    assert!(log.contains("exported 2 spans"), "{log}");
    assert!(!log.contains("hunter2"), "{log}");
}

#[test]
fn a_receiver_that_is_down_is_one_warning_and_changes_nothing() {
    let port = crate::util::free_port();
    let out = retry_sh(&["--max", "2", "--base", "10ms"], "exit 3")
        .env(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            format!("http://user:hunter2@127.0.0.1:{port}"),
        )
        .run();
    out.expect_code(3);
    let warnings: Vec<String> = out
        .stderr_lines()
        .into_iter()
        .filter(|l| l.contains("spans not exported"))
        .collect();
    assert_eq!(warnings.len(), 1, "{:?}", out.stderr_lines());
    assert!(
        warnings[0].contains("user:***@127.0.0.1"),
        "{}",
        warnings[0]
    );
    assert!(!out.stderr_text().contains("hunter2"));
}

#[test]
fn a_slow_receiver_is_cut_at_the_reports_bound() {
    let rx = Receiver::with(30.0, 0);
    let out = retry_sh(&["--max", "1"], "exit 0")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", rx.url())
        .run();
    out.expect_code(0);
    // The 8 s the reports share, not the receiver's 30 s.
    assert!(
        out.elapsed >= Duration::from_secs(7) && out.elapsed < Duration::from_secs(20),
        "{:?}",
        out.elapsed
    );
    let text = out.stderr_text();
    assert!(
        text.contains("spans not exported") && text.contains("no answer within 8s"),
        "{text}"
    );
}

#[test]
fn an_attempt_span_is_sent_when_a_signal_ends_the_run() {
    let rx = Receiver::start();
    let dir = scratch();
    let started = dir.path().join("started");
    let running = retry_sh(
        &["--max", "3"],
        &format!(
            "echo \"$TRACEPARENT\" > {}; exec sleep 30",
            path_str(&started)
        ),
    )
    .env("OTEL_EXPORTER_OTLP_ENDPOINT", rx.url())
    .spawn();
    crate::util::wait_for_file(&started, Duration::from_secs(30));
    crate::util::wait_until(Duration::from_secs(10), "the child's TRACEPARENT", || {
        std::fs::read_to_string(&started).is_ok_and(|s| s.ends_with('\n'))
    });
    running.signal(Signal::SIGTERM);
    let out = running.wait();
    out.expect_code(143);
    let spans = rx.wait_spans(2);
    let attempt = named(&spans, "attempt 1");
    let given = std::fs::read_to_string(&started).unwrap();
    assert!(
        given.contains(attempt["span_id"].as_str().unwrap()),
        "{given}"
    );
    assert_eq!(attempt["status"]["code"], 2);
    let run = named(&spans, "retry sh");
    assert_eq!(run["attrs"]["retry.end"], "interrupted");
}

#[test]
fn the_sdk_switched_off_exports_nothing_but_still_hands_on_a_child_context() {
    let rx = Receiver::start();
    for (name, value) in [
        ("OTEL_SDK_DISABLED", "true"),
        ("OTEL_TRACES_EXPORTER", "none"),
    ] {
        let out = retry_sh(&["--max", "1"], "echo \"$TRACEPARENT\"")
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", rx.url())
            .env("TRACEPARENT", PARENT)
            .env(name, value)
            .run();
        out.expect_code(0);
        let given = out.stdout_text();
        assert!(given.starts_with(&format!("00-{PARENT_TRACE}-")), "{given}");
        assert!(!given.contains(PARENT_SPAN), "{given}");
        assert_eq!(out.stderr_text(), "");
    }
    // A probe of the receiver after the runs: it is up, and got nothing.
    retry(["--max", "1", "--http", &format!("{}/alive", rx.url())])
        .run()
        .expect_code(0);
    assert!(rx.spans().is_empty(), "{:?}", rx.spans());
}

#[test]
fn forever_sends_each_attempt_as_it_ends_and_the_run_when_it_stops() {
    let rx = Receiver::start();
    let running = retry_sh(&["--forever", "--base", "50ms", "--cap", "50ms"], "exit 1")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", rx.url())
        .spawn();
    // Attempt spans arrive while the run goes on.
    let early = rx.wait_spans(2);
    assert!(
        early
            .iter()
            .all(|s| s["span"].as_str().unwrap().starts_with("attempt ")),
        "{early:#?}"
    );
    running.signal(Signal::SIGTERM);
    running.wait().expect_code(143);
    crate::util::wait_until(Duration::from_secs(30), "the run's span", || {
        rx.spans().iter().any(|s| s["span"] == "retry sh")
    });
    let spans = rx.spans();
    let run = named(&spans, "retry sh");
    assert_eq!(run["attrs"]["retry.end"], "interrupted");
    for s in spans.iter().filter(|s| s["span"] != "retry sh") {
        assert_eq!(s["parent"], run["span_id"]);
        assert_eq!(s["trace_id"], run["trace_id"]);
    }
}

#[test]
fn http_json_carries_the_same_spans() {
    let rx = Receiver::start();
    retry_sh(&["--max", "2", "--base", "10ms"], "exit 5")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", rx.url())
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
        .env("TRACEPARENT", PARENT)
        .run()
        .expect_code(5);
    let spans = rx.wait_spans(3);
    let run = named(&spans, "retry sh");
    assert_eq!(run["headers"]["content-type"], "application/json");
    assert_eq!(run["parent"], PARENT_SPAN);
    assert_eq!(run["trace_id"], PARENT_TRACE);
    let first = named(&spans, "attempt 1");
    assert_eq!(first["parent"], run["span_id"]);
    assert_eq!(first["attrs"]["process.exit.code"], 5);
    assert_eq!(first["attrs"]["retry.wait.ceiling"], 0.01);
    assert_eq!(first["status"]["code"], 2);
    assert!(first["end"].as_u64() > first["start"].as_u64());
}

#[test]
fn a_tcp_probe_names_its_server() {
    let rx = Receiver::start();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a listener");
    let port = listener.local_addr().unwrap().port();
    retry(["--max", "1", "--tcp", &format!("127.0.0.1:{port}")])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", rx.url())
        .run()
        .expect_code(0);
    let spans = rx.wait_spans(2);
    let run = named(&spans, "retry tcp");
    let attempt = named(&spans, "attempt 1");
    for span in [run, attempt] {
        assert_eq!(span["attrs"]["server.address"], "127.0.0.1");
        assert_eq!(span["attrs"]["server.port"], port);
    }
    assert_eq!(attempt["kind"], 3);
    assert_eq!(attempt["attrs"]["retry.classification"], "success");
}

#[test]
fn a_receiver_with_a_private_ca_is_trusted_through_otel_exporter_otlp_certificate() {
    let pki = crate::pki::Pki::new();
    let d = pki.dir.path();
    let rx = Receiver::tls(&d.join("server.pem"), &d.join("server.key"));
    let endpoint = format!("https://127.0.0.1:{}", rx.port);
    let run = |certificate: Option<(&str, std::path::PathBuf)>| {
        let mut cmd =
            retry_sh(&["--max", "1"], "exit 0").env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint);
        if let Some((name, file)) = certificate {
            cmd = cmd.env(name, file);
        }
        let out = cmd.run();
        // Whatever becomes of the export, the command's status is the run's.
        out.expect_code(0);
        out.stderr_text()
    };
    // Not trusted by default: one warning, nothing exported.
    let err = run(None);
    assert!(err.contains("spans not exported"), "{err}");
    assert!(rx.spans().is_empty());
    // Trusted through the variable (and its TRACES_ form).
    run(Some(("OTEL_EXPORTER_OTLP_CERTIFICATE", d.join("ca.pem"))));
    assert_eq!(rx.wait_spans(2).len(), 2);
    run(Some((
        "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE",
        d.join("ca.pem"),
    )));
    assert_eq!(rx.wait_spans(4).len(), 4);
    // A file that cannot be read: one warning naming the variable and the
    // file, no export, the same status.
    let missing = d.join("missing.pem");
    let err = run(Some(("OTEL_EXPORTER_OTLP_CERTIFICATE", missing.clone())));
    let warnings: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("spans not exported"))
        .collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(
        warnings[0].contains(&format!(
            "cannot read OTEL_EXPORTER_OTLP_CERTIFICATE {}",
            missing.display()
        )),
        "{err}"
    );
    assert_eq!(rx.spans().len(), 4);
}
