//! `--ping URL` against a heartbeat endpoint on 127.0.0.1 that records
//! every ping: start, success, exit status, the `--ping-log` body, retries
//! of a failed ping, a server that hangs, and the URL (whose path is the
//! secret) masked everywhere.

use std::time::Duration;

use nix::sys::signal::Signal;

use super::{Answer, Recorder};
use crate::util::{free_port, path_str, retry, retry_sh, scratch, wait_for_file, wait_for_port};

const CHECK: &str = "/ping/0f3c9a2e-secret-uuid";

fn ok() -> Recorder {
    Recorder::start(|_, _| Answer::Status(200))
}

/// An endpoint that never answers the start ping (`on_start`), or never
/// answers any other ping (`!on_start`); the rest get a 200.
fn hanging(on_start: bool) -> Recorder {
    Recorder::start(move |seen, _| {
        if seen.path.ends_with("/start") == on_start {
            Answer::Hang
        } else {
            Answer::Status(200)
        }
    })
}

/// `retry --ping URL -- sh -c 'touch MARKER<rest>'`, spawned; with the
/// scratch directory (keep it alive) and the marker's path.
fn touch_then(
    hb: &Recorder,
    rest: &str,
) -> (crate::util::Running, tempfile::TempDir, std::path::PathBuf) {
    let dir = scratch();
    let marker = dir.path().join("touched");
    let running = retry_sh(
        &["--ping", &hb.url(CHECK)],
        &format!("touch {}{rest}", path_str(&marker)),
    )
    .spawn();
    (running, dir, marker)
}

/// `retry OPTIONS -v --ping-log --ping URL -- sh -c SCRIPT ARGS...`, which
/// gives up with exit 1: the run, and the body of its final ping.
#[track_caller]
fn given_up_with_summary(
    hb: &Recorder,
    options: &[&str],
    script: &str,
    sh_args: &[&str],
) -> (crate::util::Outcome, String) {
    let url = hb.url(CHECK);
    let mut args = options.to_vec();
    args.extend(["-v", "--ping-log", "--ping", &url, "--", "sh", "-c", script]);
    args.extend_from_slice(sh_args);
    let out = retry(args).run();
    out.expect_code(1);
    let body =
        String::from_utf8(hb.seen().last().expect("final ping").body.clone()).expect("utf-8");
    (out, body)
}

#[test]
fn a_run_that_recovers_sends_start_and_success_and_nothing_per_attempt() {
    let hb = ok();
    let count = scratch();
    let script = format!(
        "n=$(cat {c} 2>/dev/null || echo 0); echo $((n+1)) > {c}; [ $n -ge 2 ]",
        c = path_str(&count.path().join("n"))
    );
    let out = retry_sh(&["--base", "10ms", "--ping", &hb.url(CHECK)], &script).run();
    out.expect_code(0);
    assert_eq!(
        hb.lines(),
        [format!("GET {CHECK}/start"), format!("GET {CHECK}")]
    );
    // Two failed attempts, recovered: no warning about pings.
    assert!(!out.stderr_text().contains("ping"), "{}", out.stderr_text());
}

#[test]
fn a_run_that_gives_up_sends_its_exit_status() {
    let hb = ok();
    let out = retry_sh(
        &["--max", "3", "--base", "10ms", "--ping", &hb.url(CHECK)],
        "exit 7",
    )
    .run();
    out.expect_code(7);
    assert_eq!(
        hb.lines(),
        [format!("GET {CHECK}/start"), format!("GET {CHECK}/7")]
    );
}

#[test]
fn the_url_may_come_from_retry_ping_and_the_final_ping_carries_the_log() {
    let hb = ok();
    let out = retry_sh(
        &["--max", "3", "--base", "10ms", "--ping-log", "-q"],
        "echo OUT$((1+1)); exit 2",
    )
    .env("RETRY_PING", hb.url(&format!("{CHECK}/")))
    .run();
    out.expect_code(2);
    let seen = hb.seen();
    assert_eq!(seen.len(), 2, "{:?}", hb.lines());
    assert_eq!(seen[0].method, "GET");
    assert!(seen[0].body.is_empty());
    assert_eq!(seen[1].method, "POST");
    assert_eq!(seen[1].path, format!("{CHECK}/2"));
    let body = String::from_utf8(seen[1].body.clone()).expect("utf-8 body");
    for want in [
        "outcome: exhausted\n",
        "exit status: 2\n",
        "attempts: 3\n",
        "last attempt: exit 2\n",
        "duration: ",
        "last lines of the log:\n",
        // Every event is in it, whatever -q says.
        "retry: attempt 1/3 failed (exit 2)",
        "retry: giving up after 3 attempts",
    ] {
        assert!(body.contains(want), "{want:?} missing from:\n{body}");
    }
    // The command's output is its own: it never reaches the monitor.
    assert!(!body.contains("OUT2"), "{body}");
}

#[test]
fn the_summary_is_masked_and_at_most_10_kb() {
    let hb = ok();
    // Many attempts make a long log; the command line carries secrets.
    let (_, body) = given_up_with_summary(
        &hb,
        &["--max", "300", "--base", "1ms", "--cap", "1ms"],
        "exit 1",
        &[
            "--password=hunter2",
            "https://u:pw-in-url@example.com/?token=tok-in-query",
        ],
    );
    assert!(body.len() <= 10_000, "{}", body.len());
    assert!(
        body.contains("retry: giving up after 300 attempts"),
        "{body}"
    );
    for secret in ["hunter2", "pw-in-url", "tok-in-query"] {
        assert!(!body.contains(secret), "{secret} in the body");
    }
}

#[test]
fn a_ping_body_limit_keeps_the_summary_and_the_give_up_line() {
    // healthchecks.io announces what it keeps of a body, and drops the
    // rest: before, the monitor kept the oldest lines, not the give-up.
    let hb = Recorder::start(|seen, _| match seen.path.ends_with("/start") {
        true => Answer::With(200, "Ping-Body-Limit: 600"),
        false => Answer::Status(200),
    });
    let (out, body) = given_up_with_summary(
        &hb,
        &["--max", "50", "--base", "1ms", "--cap", "1ms"],
        "exit 1",
        &[],
    );
    assert!(body.len() <= 600, "{} bytes:\n{body}", body.len());
    assert!(
        body.starts_with("outcome: exhausted\nexit status: 1\n"),
        "{body}"
    );
    assert!(
        body.contains("retry: giving up after 50 attempts"),
        "{body}"
    );
    assert!(!body.contains("attempt 1/50 failed"), "{body}");
    let err = out.stderr_text();
    assert!(err.contains("keeps 600 bytes of a ping's body"), "{err}");
}

#[test]
fn a_refusal_by_the_breaker_sends_75() {
    let hb = ok();
    let state = scratch();
    let args = |cmd: &'static str| {
        vec![
            "--max".to_string(),
            "1".into(),
            "--group".into(),
            "g".into(),
            "--state".into(),
            path_str(state.path()),
            "--breaker".into(),
            "1:1h".into(),
            "--ping".into(),
            hb.url(CHECK),
            "--".into(),
            cmd.into(),
        ]
    };
    retry(args("false")).run().expect_code(1);
    retry(args("true")).run().expect_code(75);
    assert_eq!(
        hb.lines(),
        [
            format!("GET {CHECK}/start"),
            format!("GET {CHECK}/1"),
            format!("GET {CHECK}/start"),
            format!("GET {CHECK}/75"),
        ]
    );
}

#[test]
fn a_run_ended_by_sigterm_pings_143() {
    let hb = ok();
    let (running, _dir, marker) = touch_then(&hb, "; exec sleep 30");
    wait_for_file(&marker, Duration::from_secs(20));
    running.signal(Signal::SIGTERM);
    running.wait().expect_code(143);
    assert_eq!(
        hb.lines(),
        [format!("GET {CHECK}/start"), format!("GET {CHECK}/143")]
    );
}

#[test]
fn secrets_inside_sh_c_and_tools_own_password_options_never_leave_the_host() {
    let hb = ok();
    let script = "curl -u admin:pw-of-curl -H 'Authorization: Bearer tok-in-header' \
                  https://h.invalid/ || mysql -ppw-of-mysql db; exit 1";
    let (out, body) = given_up_with_summary(
        &hb,
        &["--max", "1", "--log-format", "json"],
        script,
        &[
            "sshpass",
            "-p",
            "pw-of-sshpass",
            "redis-cli",
            "-a",
            "pw-of-redis",
            "host=db password=pw-of-libpq",
        ],
    );
    let log = out.stderr_text();
    for secret in [
        "pw-of-curl",
        "tok-in-header",
        "pw-of-mysql",
        "pw-of-sshpass",
        "pw-of-redis",
        "pw-of-libpq",
    ] {
        assert!(!body.contains(secret), "{secret} in the ping: {body}");
        assert!(!log.contains(secret), "{secret} in the log: {log}");
    }
    // The script is still there to read around what was hidden.
    assert!(body.contains("-u 'admin:***'"), "{body}");
}

#[test]
fn a_ping_answered_with_500_is_tried_again() {
    // The first answer to each ping is a 500.
    let hb = Recorder::start(|_, n| Answer::Status(if n % 2 == 0 { 500 } else { 200 }));
    let out = retry(["--ping", &hb.url(CHECK), "--", "true"]).run();
    out.expect_code(0);
    assert_eq!(
        hb.lines(),
        [
            format!("GET {CHECK}/start"),
            format!("GET {CHECK}/start"),
            format!("GET {CHECK}"),
            format!("GET {CHECK}"),
        ]
    );
    assert!(
        !out.stderr_text().contains("warning"),
        "{}",
        out.stderr_text()
    );
}

#[test]
fn a_ping_refused_for_good_is_not_tried_again() {
    let hb = Recorder::start(|_, _| Answer::Status(404));
    let out = retry(["--ping", &hb.url(CHECK), "--", "true"]).run();
    out.expect_code(0);
    assert_eq!(hb.seen().len(), 2, "{:?}", hb.lines());
    let err = out.stderr_text();
    assert_eq!(err.lines().count(), 2, "one warning per failed ping: {err}");
    assert!(err.contains("HTTP 404"), "{err}");
}

#[test]
fn a_monitor_that_hangs_is_bounded_and_never_changes_the_status() {
    // The start ping is answered; the final one never is.
    let hb = hanging(false);
    let out = retry_sh(&["--max", "1", "--ping", &hb.url(CHECK)], "exit 5").run();
    out.expect_code(5);
    // Tries of 3 s with pauses, within the reports' 8 s.
    assert!(
        out.elapsed >= Duration::from_secs(7) && out.elapsed < Duration::from_secs(12),
        "{:?}",
        out.elapsed
    );
    let finals = hb.lines().iter().filter(|l| l.ends_with("/5")).count();
    assert!((2..=3).contains(&finals), "{:?}", hb.lines());
    let err = out.stderr_text();
    let warnings: Vec<_> = err.lines().filter(|l| l.contains("warning")).collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(
        warnings[0].contains("the exit status 5 ping to http://127.0.0.1:")
            && warnings[0].contains("/*** failed: no answer within "),
        "{err}"
    );
}

#[test]
fn a_monitor_and_a_gateway_that_hang_hold_the_exit_8_s_at_most() {
    // Nothing is ever answered: the start ping, the push, the final ping.
    let hb = Recorder::start(|_, _| Answer::Hang);
    let gateway = hb.url("/gw");
    let out = retry([
        "--ping",
        &hb.url(CHECK),
        "--metrics-push",
        &gateway,
        "--",
        "true",
    ])
    .run();
    out.expect_code(0);
    // A second for the start ping, then 8 s for all the reports (one after
    // the other, they took 20 s).
    assert!(out.elapsed < Duration::from_secs(12), "{:?}", out.elapsed);
    let lines = hb.lines();
    assert!(lines.contains(&format!("GET {CHECK}")), "{lines:?}");
    let err = out.stderr_text();
    assert!(
        err.contains("start ping") && err.contains("no answer before the final ping was due"),
        "{err}"
    );
}

#[test]
fn after_sigterm_the_final_ping_goes_within_a_docker_stop_s_grace() {
    // The start ping and the push hang; the final ping is answered. A
    // supervisor sends TERM and, 10 s later, KILL.
    let hb = Recorder::start(|seen, _| {
        if seen.path.ends_with("/start") || seen.path.starts_with("/gw") {
            Answer::Hang
        } else {
            Answer::Status(200)
        }
    });
    let dir = scratch();
    let marker = dir.path().join("touched");
    let running = retry_sh(
        &["--ping", &hb.url(CHECK), "--metrics-push", &hb.url("/gw")],
        &format!("touch {}; exec sleep 30", path_str(&marker)),
    )
    .spawn();
    wait_for_file(&marker, Duration::from_secs(20));
    let term = std::time::Instant::now();
    running.signal(Signal::SIGTERM);
    let out = running.wait();
    let took = term.elapsed();
    out.expect_code(143);
    // It lingered 18 s, and a 10 s grace killed it before the final ping.
    assert!(took < Duration::from_secs(6), "{took:?}");
    assert!(
        hb.lines().contains(&format!("GET {CHECK}/143")),
        "{:?}",
        hb.lines()
    );
    let err = out.stderr_text();
    assert!(
        !err.contains("exit status 143 ping to") || !err.contains("failed"),
        "{err}"
    );
}

#[test]
fn a_second_signal_cuts_the_reporting_short() {
    let hb = hanging(false);
    let (running, _dir, marker) = touch_then(&hb, "; exec sleep 30");
    wait_for_file(&marker, Duration::from_secs(20));
    running.signal(Signal::SIGINT);
    // The final ping is under way (and hangs): a second signal ends it.
    hb.wait_until("no final ping", |lines| {
        lines.iter().any(|l| l.ends_with("/130"))
    });
    let second = std::time::Instant::now();
    running.signal(Signal::SIGINT);
    let out = running.wait();
    out.expect_code(130);
    // Uncut, the hanging ping would hold retry for 10 s more.
    assert!(
        second.elapsed() < Duration::from_secs(4),
        "{:?}",
        second.elapsed()
    );
    assert!(
        out.stderr_text().contains("cut short by SIGINT"),
        "{}",
        out.stderr_text()
    );
}

#[test]
fn the_ping_url_never_reaches_a_log() {
    let hb = Recorder::start(|_, _| Answer::Status(503));
    let dir = scratch();
    let log = dir.path().join("log.jsonl");
    let url = hb.url("/ping/user:pw@x/0f3c9a2e-secret-uuid?key=k");
    let out = retry([
        "-v",
        "--log-file",
        &path_str(&log),
        "--log-format",
        "json",
        "--ping",
        &url,
        "--",
        "true",
    ])
    .run();
    out.expect_code(0);
    let file = std::fs::read_to_string(&log).expect("log file");
    for text in [out.stderr_text(), file] {
        assert!(!text.contains("secret-uuid"), "{text}");
        assert!(!text.contains("key=k"), "{text}");
        assert!(text.contains("127.0.0.1"), "the host is shown: {text}");
    }
    // A bad URL is refused without being shown.
    let out = retry(["--ping", "hc-ping.com/0f3c9a2e-secret-uuid", "--", "true"]).run();
    out.expect_code(2);
    assert!(
        !out.stderr_text().contains("secret"),
        "{}",
        out.stderr_text()
    );
}

#[test]
fn the_command_does_not_inherit_retry_ping() {
    let hb = ok();
    let out = retry_sh(&["-q"], "echo \"${RETRY_PING-unset} $RETRY_DEPTH\"")
        .env("RETRY_PING", hb.url(CHECK))
        .run();
    out.expect_code(0);
    assert_eq!(out.stdout_text(), "unset 1\n");
    assert_eq!(hb.seen().len(), 2, "{:?}", hb.lines());
    // Nor the other reports' settings, which may hold a password.
    let out = retry_sh(
        &["-q"],
        "echo \"${RETRY_PING_FILE-unset} ${RETRY_METRICS_PUSH-unset} ${RETRY_METRICS_PUSH_PASSWORD_FILE-unset}\"",
    )
    .env("RETRY_METRICS_PUSH", hb.url("/gw").replace("http://", "http://u:pw@"))
    .run();
    out.expect_code(0);
    assert_eq!(out.stdout_text(), "unset unset unset\n");
}

#[test]
fn the_ping_url_from_a_file_or_the_environment_never_shows_in_ps() {
    let hb = ok();
    let dir = scratch();
    let file = dir.path().join("backup.ping");
    std::fs::write(&file, format!("{}\n", hb.url(CHECK))).expect("write");
    let marker = dir.path().join("started");
    let script = format!("touch '{}'; sleep 0.5", marker.display());
    let running = retry_sh(&["--ping-file", &path_str(&file)], &script).spawn();
    wait_for_file(&marker, Duration::from_secs(20));
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", running.pid())).expect("cmdline");
    assert!(!String::from_utf8_lossy(&cmdline).contains("secret-uuid"));
    running.wait().expect_code(0);
    assert_eq!(
        hb.lines(),
        [format!("GET {CHECK}/start"), format!("GET {CHECK}")]
    );
    // RETRY_PING_FILE, and --ping on the command line winning over it.
    retry(["--", "true"])
        .env("RETRY_PING_FILE", &file)
        .run()
        .expect_code(0);
    assert_eq!(hb.seen().len(), 4);
    retry(["--ping", &hb.url("/other"), "--", "true"])
        .env("RETRY_PING_FILE", &file)
        .run()
        .expect_code(0);
    assert_eq!(hb.lines().last().map(String::as_str), Some("GET /other"));
}

#[test]
fn http_mode_pings_and_names_its_job_http() {
    let hb = ok();
    let dir = super::metrics_dir();
    let file = dir.path().join("probe.prom");
    let out = retry([
        "--http",
        &hb.url("/health"),
        "--ping",
        &hb.url(CHECK),
        "--metrics-file",
        &path_str(&file),
    ])
    .run();
    out.expect_code(0);
    assert_eq!(
        hb.lines(),
        [
            format!("GET {CHECK}/start"),
            "GET /health".to_string(),
            format!("GET {CHECK}"),
        ]
    );
    let text = super::read(&file);
    assert_eq!(
        super::sample(&text, "retry_last_run_success", "{job=\"http\"}"),
        Some(1.0),
        "{text}"
    );
}

#[test]
fn a_start_ping_that_hangs_holds_the_command_a_second_at_most() {
    let hb = hanging(true);
    let (running, _dir, marker) = touch_then(&hb, "");
    hb.wait_until("the start ping", |seen| !seen.is_empty());
    let pinged = std::time::Instant::now();
    wait_for_file(&marker, Duration::from_secs(30));
    // Held for a second, the command starts about a second after the start
    // ping came in. Holding it until the ping's first try times out would
    // take 3 s, all three tries 10 s: 2.5 s leaves 1.5 s for the load.
    let held = pinged.elapsed();
    assert!(held < Duration::from_millis(2500), "held for {held:?}");
    let out = running.wait();
    out.expect_code(0);
    // The final ping comes after the start ping's tries, once no more of
    // them fit before it is due; the start ping is then abandoned.
    let start = format!("GET {CHECK}/start");
    let done = format!("GET {CHECK}");
    let lines = hb.lines();
    let (last, before) = lines.split_last().expect("pings");
    assert_eq!(*last, done, "{lines:?}");
    assert!(
        !before.is_empty() && before.iter().all(|l| *l == start),
        "{lines:?}"
    );
    let err = out.stderr_text();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("the start ping to http://127.0.0.1:")
            && err.contains("no answer before the final ping was due"),
        "{err}"
    );
}

#[test]
fn sigterm_while_the_start_ping_is_awaited_runs_nothing_and_pings_143() {
    let hb = hanging(true);
    let (running, _dir, marker) = touch_then(&hb, "");
    hb.wait_until("no start ping", |lines| !lines.is_empty());
    running.signal(Signal::SIGTERM);
    let out = running.wait();
    out.expect_code(143);
    assert!(!marker.exists(), "the command ran after SIGTERM");
    assert_eq!(
        hb.lines().last().map(String::as_str),
        Some(format!("GET {CHECK}/143").as_str())
    );
}

#[test]
fn pings_over_tls_trust_the_system_roots_or_ssl_cert_file() {
    // A CA and a certificate it signed for 127.0.0.1, served by openssl's
    // own test server (scripts/test.sh installs openssl).
    let pki = crate::pki::Pki::new();
    let port = free_port();
    let mut server = std::process::Command::new("openssl")
        .args([
            "s_server",
            "-quiet",
            "-www",
            "-cert",
            "server.pem",
            "-key",
            "server.key",
        ])
        .args(["-accept", &format!("127.0.0.1:{port}")])
        .current_dir(pki.dir.path())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("openssl s_server runs");
    wait_for_port(port, Duration::from_secs(20), "s_server");
    let url = format!("https://127.0.0.1:{port}/0f3c9a2e-secret-uuid");

    let untrusted = retry(["--ping", &url, "--", "true"]).run();
    untrusted.expect_code(0);
    let err = untrusted.stderr_text();
    assert_eq!(err.lines().count(), 2, "{err}");
    assert!(
        err.lines().all(|l| l.contains("is not trusted")
            && l.contains("SSL_CERT_FILE")
            && !l.contains("--cacert")),
        "{err}"
    );
    assert!(!err.contains("secret-uuid"), "{err}");

    let trusted = retry(["-v", "--ping", &url, "--", "true"])
        .env("SSL_CERT_FILE", pki.path("ca.pem"))
        .run();
    let _ = server.kill();
    let _ = server.wait();
    trusted.expect_code(0);
    let err = trusted.stderr_text();
    assert!(!err.contains("warning"), "{err}");
    assert!(
        err.contains(&format!("pinged https://127.0.0.1:{port}/*** (success)")),
        "{err}"
    );
}
