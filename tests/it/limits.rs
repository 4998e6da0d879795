//! What bounds a run: `--max`, `--max-time`, `--timeout`, no sleep after the
//! last attempt, and retries nested in retries.

use std::time::Duration;

use crate::util::{path_str, retry, retry_sh, scratch};

/// `retry --max 2 -- retry INNER... -- sh -c 'count a run; exit 1'`: the
/// outcome and how many times the innermost command ran.
fn nested(inner: &[&str]) -> (crate::util::Outcome, usize) {
    let dir = scratch();
    let count = dir.path().join("count");
    let script = format!("echo x >> {}; exit 1", path_str(&count));
    let bin = path_str(crate::util::bin());
    let mut args = vec!["--max", "2", "--base", "1ms", "--cap", "1ms", "--", &bin];
    args.extend_from_slice(inner);
    args.extend(["--", "sh", "-c", &script]);
    let out = retry(args).run();
    let runs = std::fs::read_to_string(&count)
        .expect("count")
        .lines()
        .count();
    (out, runs)
}

#[test]
fn nested_retry_warns_that_attempts_multiply() {
    let (out, runs) = nested(&["--max", "3", "--base", "1ms", "--cap", "1ms"]);
    out.expect_code(1);
    assert_eq!(runs, 6);
    assert!(
        out.stderr_text()
            .contains("attempts multiply (2 x 3 = 6 runs)"),
        "{}",
        out.stderr_text()
    );
}

#[test]
fn nested_single_runs_the_inner_command_once() {
    let (out, runs) = nested(&["--nested", "single", "--max", "3"]);
    out.expect_code(1);
    assert_eq!(runs, 2);
    assert!(!out.stderr_text().contains("multiply"));
}

#[test]
fn no_sleep_after_the_last_attempt() {
    let out = retry([
        "--max", "2", "--base", "1s", "--jitter", "none", "--", "false",
    ])
    .run();
    out.expect_code(1);
    // One 1 s wait between the two attempts; a wait after the last would make it 2 s.
    assert!(
        out.elapsed >= Duration::from_millis(1000),
        "{:?}",
        out.elapsed
    );
    assert!(
        out.elapsed < Duration::from_millis(1900),
        "{:?}",
        out.elapsed
    );
}

/// `--base 10s --jitter none --max-time 6s`: the first wait (10s) would pass
/// the deadline and is drawn again to end 6s/60 before it (the deadline is
/// shorter than the range); the next (20s) would pass it with too little time
/// left (less than 6s/12), and the run gives up there.
fn long_backoff_short_deadline() -> Vec<&'static str> {
    vec![
        "--max",
        "5",
        "--base",
        "10s",
        "--jitter",
        "none",
        "--max-time",
        "6s",
    ]
}

#[test]
fn max_time_draws_a_long_wait_again_and_never_sleeps_past_it() {
    let mut args = long_backoff_short_deadline();
    args.extend(["--log-format", "json", "--", "false"]);
    let out = retry(args).run();
    out.expect_code(1);
    // The second attempt starts at 5.9s; nothing runs to the deadline.
    assert!(
        out.elapsed >= Duration::from_millis(5800),
        "{:?}",
        out.elapsed
    );
    assert!(out.elapsed < Duration::from_secs(6), "{:?}", out.elapsed);
    let events = out.json();
    let done = events.iter().find(|e| e["event"] == "done").expect("done");
    assert_eq!(done["attempts"], 2, "{done}");
    let reason = done["reason"].as_str().expect("reason");
    assert!(reason.contains("would start after --max-time"), "{reason}");
}

/// A socket on 127.0.0.1 that is bound but not listening: connecting to
/// `HOST:PORT` is refused until `listen()`.
fn bound_not_listening() -> (socket2::Socket, String) {
    let socket =
        socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).expect("socket");
    socket
        .bind(
            &"127.0.0.1:0"
                .parse::<std::net::SocketAddr>()
                .expect("addr")
                .into(),
        )
        .expect("bind");
    let target = socket
        .local_addr()
        .expect("addr")
        .as_socket()
        .expect("inet")
        .to_string();
    (socket, target)
}

#[test]
fn a_backoff_longer_than_max_time_still_reaches_a_port_that_opens_before_the_deadline() {
    let (socket, target) = bound_not_listening();
    let dir = scratch();
    let failed = dir.path().join("failed");
    let hook = format!("touch {}", path_str(&failed));
    let mut args = long_backoff_short_deadline();
    args.extend([
        "--on-retry",
        &hook,
        "--log-format",
        "json",
        "--tcp",
        &target,
    ]);
    let running = retry(args).spawn();
    // Once the first attempt has been refused, the port opens, long before
    // the 10s backoff would end but before the deadline.
    crate::util::wait_for_file(&failed, Duration::from_secs(2));
    socket.listen(8).expect("listen");
    let out = running.wait();
    out.expect_code(0);
    let events = out.json();
    let done = events.iter().find(|e| e["event"] == "done").expect("done");
    assert_eq!(done["attempts"], 2, "{done}");
    assert!(out.elapsed < Duration::from_secs(6), "{:?}", out.elapsed);
}

/// `retry --max-time 10s --seed 52 --tcp HOST:PORT` gave up 5.2s in, with
/// 4.8s left, against a port that opened at 7s: the cap (30s) made "too
/// little time left" most of a short deadline. Its attempts now reach 9.7s.
#[test]
fn a_ten_second_deadline_reaches_a_port_that_opens_at_eight_seconds() {
    let (socket, target) = bound_not_listening();
    let running = retry(["-qq", "--max-time", "10s", "--seed", "52", "--tcp", &target]).spawn();
    std::thread::sleep(Duration::from_secs(8));
    socket.listen(8).expect("listen");
    let out = running.wait();
    out.expect_code(0);
    assert!(out.elapsed < Duration::from_secs(10), "{:?}", out.elapsed);
}

/// `retry --max-time 5s --seed 4 -- false` gave up 2.8s in; its last
/// attempt now starts 4.8s in, and the run ends there, before the deadline.
#[test]
fn a_five_second_deadline_is_used_to_its_end() {
    let out = retry([
        "--max-time",
        "5s",
        "--seed",
        "4",
        "--log-format",
        "json",
        "--",
        "false",
    ])
    .run();
    out.expect_code(1);
    assert!(
        out.elapsed >= Duration::from_millis(4_400),
        "{:?}",
        out.elapsed
    );
    let events = out.json();
    let done = events.iter().find(|e| e["event"] == "done").expect("done");
    let reason = done["reason"].as_str().expect("reason");
    assert!(reason.contains("would start after --max-time"), "{reason}");
}

#[test]
fn max_time_stops_a_running_attempt_with_124() {
    let out = retry(["--max-time", "500ms", "--", "sleep", "10"]).run();
    out.expect_code(124);
    assert!(
        out.elapsed >= Duration::from_millis(450),
        "{:?}",
        out.elapsed
    );
    assert!(out.elapsed < Duration::from_secs(4), "{:?}", out.elapsed);
    assert!(out.stderr_text().contains("stopped at --max-time"));
}

/// `sh -c` that appends a line to `count` and fails; how many lines it wrote.
fn counting_failure(dir: &std::path::Path) -> (String, std::path::PathBuf) {
    let count = dir.join("count");
    (format!("echo x >> {}; exit 1", path_str(&count)), count)
}

fn lines_in(path: &std::path::Path) -> usize {
    std::fs::read_to_string(path).map_or(0, |s| s.lines().count())
}

#[test]
fn max_time_alone_keeps_retrying_past_five_attempts() {
    let dir = scratch();
    let (script, count) = counting_failure(dir.path());
    let out = retry_sh(
        &["--max-time", "2s", "--base", "10ms", "--cap", "50ms"],
        &script,
    )
    .run();
    assert!(lines_in(&count) > 5, "only {} attempts", lines_in(&count));
    assert!(
        out.elapsed >= Duration::from_millis(1500),
        "{:?}",
        out.elapsed
    );
    assert!(out.elapsed < Duration::from_secs(10), "{:?}", out.elapsed);
    // The deadline ends the run: between attempts (the last code, 1) or,
    // less often, during one (124).
    let text = out.stderr_text();
    match out.code() {
        1 => assert!(text.contains("would start after --max-time"), "{text}"),
        124 => assert!(
            text.contains("--max-time ran out during the attempt"),
            "{text}"
        ),
        other => panic!("exit {other}: {text}"),
    }
    assert!(!text.contains("giving up after 5 attempts"), "{text}");

    // The same deadline from the environment; an explicit limit still holds.
    let (script, count) = counting_failure(&dir.path().join("x"));
    std::fs::create_dir(dir.path().join("x")).expect("mkdir");
    let out = retry_sh(&["--base", "1ms", "--cap", "1ms"], &script)
        .env("RETRY_MAX_TIME", "5m")
        .env("RETRY_MAX", "3")
        .run();
    out.expect_code(1);
    assert_eq!(lines_in(&count), 3);
}

#[test]
fn zero_and_inf_mean_no_limit_for_timeout_and_max_time() {
    let out = retry([
        "--timeout",
        "0",
        "--max-time",
        "inf",
        "--max",
        "1",
        "--",
        "sleep",
        "0.3",
    ])
    .run();
    out.expect_code(0);
    let out = retry(["--max", "1", "--", "sleep", "0.3"])
        .env("RETRY_TIMEOUT", "infinity")
        .env("RETRY_MAX_TIME", "0s")
        .run();
    out.expect_code(0);
}

#[test]
fn a_tiny_timeout_rounds_up_and_still_limits() {
    // 1e-12 s is below a nanosecond: it must become 1 ns, not zero (no limit).
    let out = retry(["--timeout", "1e-12", "--max", "1", "--", "sleep", "5"]).run();
    out.expect_code(124);
    assert!(out.elapsed < Duration::from_secs(4), "{:?}", out.elapsed);
}
