//! `--metrics-push` against a real Pushgateway: the grouping key, the last
//! success kept across a failed run, and a gateway that is down or hangs
//! costing a warning and at most about two seconds, never the status.

use std::time::Duration;

use super::{Answer, Daemon, Recorder, promtool, sample};
use crate::util::{free_port, retry, retry_sh};

fn gateway() -> Daemon {
    Daemon::start(
        "prometheus-pushgateway",
        "prometheus-pushgateway",
        &["--web.listen-address=127.0.0.1:{port}"],
        "/metrics",
    )
}

#[test]
fn the_gateway_keeps_the_last_success_across_a_failed_run() {
    let gw = gateway();
    let url = format!("http://127.0.0.1:{}", gw.port);
    let push = |code: u8| {
        retry_sh(
            &[
                "--max",
                "2",
                "--base",
                "10ms",
                "--metrics-push",
                &url,
                "--metrics-job",
                "nightly backup",
                "--metrics-label",
                "instance=db/1",
                "-v",
            ],
            &format!("exit {code}"),
        )
        .run()
    };
    let out = push(0);
    out.expect_code(0);
    assert!(
        out.stderr_text().contains("metrics pushed to"),
        "{}",
        out.stderr_text()
    );
    // Values that cannot go in a path as they are (a space, a slash) reach
    // the gateway whole.
    let key = "{instance=\"db/1\",job=\"nightly backup\"}";
    let first = gw.get("/metrics");
    let success =
        sample(&first, "retry_last_success_timestamp_seconds", key).expect("a success time");
    assert_eq!(
        sample(&first, "retry_last_run_success", key),
        Some(1.0),
        "{first}"
    );
    assert!(sample(&first, "retry_last_failure_timestamp_seconds", key).is_none());

    std::thread::sleep(Duration::from_millis(20));
    push(4).expect_code(4);
    let second = gw.get("/metrics");
    assert_eq!(
        sample(&second, "retry_last_success_timestamp_seconds", key),
        Some(success),
        "{second}"
    );
    let failure =
        sample(&second, "retry_last_failure_timestamp_seconds", key).expect("a failure time");
    assert!(failure > success);
    assert_eq!(sample(&second, "retry_last_run_success", key), Some(0.0));
    assert_eq!(sample(&second, "retry_last_run_exit_code", key), Some(4.0));
    assert_eq!(sample(&second, "retry_last_run_attempts", key), Some(2.0));
    // The gateway checked the push; so does promtool, on what it serves.
    let ours: String = second
        .lines()
        .filter(|l| l.contains("retry_"))
        .map(|l| format!("{l}\n"))
        .collect();
    let (said, ok) = promtool(&ours);
    assert!(ok && said.is_empty(), "promtool: {said}");
}

#[test]
fn a_gateway_that_is_down_costs_a_warning_and_never_the_status() {
    // A port nobody listens on: the connection is refused at once.
    let url = format!("http://pusher:s3cret-pw@127.0.0.1:{}", free_port());
    for (code, script) in [(0, "exit 0"), (3, "exit 3")] {
        let out = retry_sh(&["--max", "1", "--metrics-push", &url], script).run();
        out.expect_code(code);
        let err = out.stderr_text();
        let warnings: Vec<_> = err.lines().filter(|l| l.contains("metrics")).collect();
        assert_eq!(warnings.len(), 1, "{err}");
        assert!(
            warnings[0]
                .starts_with("retry: warning: cannot push metrics to http://pusher:***@127.0.0.1"),
            "{err}"
        );
        assert!(!err.contains("s3cret-pw"), "{err}");
        assert!(out.elapsed < Duration::from_secs(3), "{:?}", out.elapsed);
    }
}

#[test]
fn a_gateway_that_never_answers_costs_about_two_seconds() {
    let hang = Recorder::start(|_, _| Answer::Hang);
    let running = retry([
        "--log-format",
        "json",
        "--metrics-push",
        &hang.url(""),
        "--",
        "true",
    ])
    .spawn();
    hang.wait_until("the push", |seen| !seen.is_empty());
    let pushed = std::time::Instant::now();
    let out = running.wait();
    out.expect_code(0);
    // The exchange is limited to 2 s from its start, a little before the
    // request came in (a second try would show as a second request below).
    // Ending under 2.8 s after the request leaves 0.8 s for the load, and
    // tells "about two seconds" from a limit of 3 s or more.
    assert!(out.elapsed >= Duration::from_secs(2), "{:?}", out.elapsed);
    let waited = pushed.elapsed();
    assert!(
        waited >= Duration::from_millis(1500) && waited < Duration::from_millis(2800),
        "{waited:?} after the push came in"
    );
    let warning = out
        .json()
        .into_iter()
        .find(|e| e["event"] == "warning")
        .expect("a warning event");
    assert!(
        warning["message"]
            .as_str()
            .is_some_and(|m| m.contains("no answer within 2s")),
        "{warning}"
    );
    assert_eq!(hang.lines(), ["POST /metrics/job/true"]);
}

#[test]
fn a_gateway_that_refuses_the_push_says_why_in_one_line() {
    let refuse = Recorder::start(|_, _| Answer::Status(400));
    let out = retry(["--metrics-push", &refuse.url("/prefix/"), "--", "true"]).run();
    out.expect_code(0);
    let err = out.stderr_text();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("HTTP 400: OK"), "{err}");
    let seen = refuse.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].path, "/prefix/metrics/job/true");
    let body = String::from_utf8_lossy(&seen[0].body);
    assert!(body.contains("\nretry_last_run_success 1\n"), "{body}");
    assert!(
        !body.contains("job="),
        "no grouping label in the body: {body}"
    );
}

#[test]
fn a_gateway_or_monitor_that_is_down_is_named_in_plain_words() {
    // Ports nobody listens on: both connections are refused at once.
    let push = format!("http://127.0.0.1:{}", free_port());
    let ping = format!("http://127.0.0.1:{}/check", free_port());
    let out = retry(["--metrics-push", &push, "--ping", &ping, "--", "true"]).run();
    out.expect_code(0);
    let err = out.stderr_text();
    let warnings: Vec<_> = err.lines().filter(|l| l.contains("warning")).collect();
    // The push, the start ping and the success ping.
    assert_eq!(warnings.len(), 3, "{err}");
    for w in warnings {
        assert!(w.contains("could not connect: connection refused"), "{err}");
        assert!(!w.contains("os error"), "{err}");
    }
}

#[test]
fn the_gateway_password_may_come_from_a_file_and_never_shows_in_ps() {
    let gw = Recorder::start(|_, _| Answer::Status(200));
    let dir = crate::util::scratch();
    let file = dir.path().join("pushgateway.pw");
    std::fs::write(&file, "s3cret pw\nnot this line\n").expect("write");
    let marker = dir.path().join("started");
    let running = crate::util::retry_sh(
        &[
            "--metrics-push",
            &gw.url("").replace("http://", "http://backup@"),
            "--metrics-push-password-file",
            file.to_str().expect("utf-8"),
        ],
        &format!("touch '{}'; sleep 0.5", marker.display()),
    )
    .spawn();
    crate::util::wait_for_file(&marker, Duration::from_secs(20));
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", running.pid())).expect("cmdline");
    assert!(!String::from_utf8_lossy(&cmdline).contains("s3cret"));
    running.wait().expect_code(0);
    let seen = gw.seen();
    assert_eq!(seen.len(), 1, "{:?}", gw.lines());
    // Basic authentication: base64("backup:s3cret pw").
    assert_eq!(
        seen[0].authorization.as_deref(),
        Some("Basic YmFja3VwOnMzY3JldCBwdw==")
    );
    // The whole URL in the environment works as well.
    let url = gw.url("").replace("http://", "http://backup:envpw@");
    retry(["--", "true"])
        .env("RETRY_METRICS_PUSH", &url)
        .run()
        .expect_code(0);
    assert_eq!(
        gw.seen()[1].authorization.as_deref(),
        Some("Basic YmFja3VwOmVudnB3")
    );
}
