//! Pace, budget and breaker across concurrent invocations, on both stores.

use std::path::Path;
use std::thread;
use std::time::Duration;

use super::{
    Redis, Store, budget_count, epoch_secs, events, herd, one_attempt, show, strings, trusted_only,
};
use crate::util::{path_str, retry, retry_sh, scratch};

// ---- budget: no lost update with 200 concurrent invocations ----

pub(super) fn budget_is_exact_under_concurrency(store: Store) {
    let dir = scratch();
    let s = store.arg();
    let args = strings(&[
        "--group", "herd", "--state", &s, "--budget", "1000", "--base", "1ms", "--cap", "2ms",
        "--max", "4",
    ]);
    let logs = herd(200, &args, "exit 1", dir.path());
    let attempts = events(&logs, "attempt").count();
    let warnings: std::collections::BTreeSet<String> = events(&logs, "warning")
        .map(|w| w["message"].to_string())
        .collect();
    assert!(warnings.is_empty(), "{warnings:?}");
    let count = budget_count(&store, "herd", "1000");
    // Every failed attempt took exactly one token: no update was lost.
    assert_eq!(count, 1000.0 - attempts as f64, "{attempts} attempts");
    // The budget refused retries once the count fell to 500 (800 attempts
    // would have left 200); first attempts are never refused.
    assert!((500..800).contains(&attempts), "{attempts} attempts");
    let refused: Vec<_> = events(&logs, "done")
        .filter(|d| d["outcome"] == "refused")
        .collect();
    assert!(!refused.is_empty());
    for d in &refused {
        assert_eq!(d["exit_code"], 1, "the last attempt's code: {d}");
        assert!(
            d["reason"]
                .as_str()
                .unwrap_or("")
                .contains("budget is spent"),
            "{d}"
        );
    }
    assert!(logs.iter().all(|(code, _)| *code == 1));
}

#[test]
fn budget_is_exact_with_200_concurrent_runs_local() {
    budget_is_exact_under_concurrency(Store::local());
}

#[test]
fn budget_is_exact_with_200_concurrent_runs_redis() {
    budget_is_exact_under_concurrency(Store::redis());
}

#[test]
fn a_success_gives_back_ratio_and_first_attempts_are_never_refused() {
    let store = Store::local();
    let s = store.arg();
    let base = [
        "--group", "g", "--state", &s, "--budget", "4:0.5", "--base", "1ms",
    ];
    let mut args = base.to_vec();
    args.extend(["--max", "5"]);
    // 4 tokens: fail (3), retry allowed (3 > 2), fail (2), retry refused.
    let out = retry_sh(&args, "exit 3").run();
    out.expect_code(3);
    assert!(out.stderr_text().contains("giving up after 2 attempts"));
    assert_eq!(budget_count(&store, "g", "4:0.5"), 2.0);
    // A first attempt still runs, and its success gives back half a token.
    retry_sh(&args, "exit 0").run().expect_code(0);
    assert_eq!(budget_count(&store, "g", "4:0.5"), 2.5);
}

// ---- pace ----

pub(super) fn pace_spaces_retries(store: Store) {
    let dir = scratch();
    let s = store.arg();
    let n = 20;
    let args = strings(&[
        "--group",
        "paced",
        "--state",
        &s,
        "--pace",
        "5/s",
        "--pace-burst",
        "2",
        "--base",
        "1ms",
        "--cap",
        "1ms",
        "--max",
        "2",
    ]);
    // The first attempt fails; the retry succeeds.
    let script = "[ \"$RETRY_ATTEMPT\" = 2 ] && exit 0; exit 1";
    let logs = herd(n, &args, script, dir.path());
    let mut starts: Vec<f64> = events(&logs, "attempt_start")
        .filter(|e| e["attempt"] == 2)
        .map(epoch_secs)
        .collect();
    assert_eq!(starts.len(), n, "every run retried once");
    starts.sort_by(f64::total_cmp);
    // Beyond the burst of 2, k retries apart are at least (k - 1) intervals
    // apart. A start may be logged late on a loaded machine, never early:
    // allow half an interval of it (unpaced, all twenty start together).
    let interval = 0.2;
    for i in 0..n {
        for j in i + 2..n {
            let k = (j - i) as f64;
            assert!(
                starts[j] - starts[i] >= (k - 1.0) * interval - interval / 2.0,
                "retries {i} and {j} started {:.3}s apart",
                starts[j] - starts[i]
            );
        }
    }
    // The sleep events say how much of each wait was pacing.
    let paced: f64 = events(&logs, "sleep")
        .map(|e| e["pace_ms"].as_f64().expect("pace_ms"))
        .sum();
    let backoff_ok = events(&logs, "sleep").all(|e| {
        let (d, b, p) = (
            e["delay_ms"].as_f64().unwrap_or(-1.0),
            e["backoff_ms"].as_f64().unwrap_or(-1.0),
            e["pace_ms"].as_f64().unwrap_or(-1.0),
        );
        (d - b - p).abs() < 0.01 && b <= 1.0
    });
    assert!(backoff_ok);
    // 20 retries at 10/s with a burst of 2 wait 0.1+0.2+...+1.8s in all.
    assert!(paced > 10_000.0, "paced {paced}ms in all");
}

#[test]
fn pace_spaces_the_groups_retries_local() {
    pace_spaces_retries(Store::local());
}

#[test]
fn pace_spaces_the_groups_retries_redis() {
    pace_spaces_retries(Store::redis());
}

#[test]
fn a_pace_slot_past_max_time_is_not_taken() {
    let store = Store::local();
    let s = store.arg();
    // One slot per minute: the first retry takes the next free one; the
    // second run's slot lies a minute away, past its --max-time.
    let args = [
        "--group",
        "slow",
        "--state",
        &s,
        "--pace",
        "1/m",
        "--base",
        "1ms",
        "--max",
        "2",
        "--max-time",
        "5s",
    ];
    retry_sh(&args, "exit 4").run().expect_code(4);
    let tat = || {
        let text = std::fs::read_to_string(Path::new(&s).join("slow.json")).expect("state");
        serde_json::from_str::<serde_json::Value>(&text).expect("json")["tat"].clone()
    };
    let before = tat();
    let out = retry_sh(&args, "exit 4").run();
    out.expect_code(4);
    assert!(out.elapsed < Duration::from_secs(4), "{:?}", out.elapsed);
    assert!(
        out.stderr_text()
            .contains("next pace slot is after --max-time"),
        "{}",
        out.stderr_text()
    );
    // The slot was left for someone else.
    assert_eq!(tat(), before);
    let shown = show(&store, "slow", &["--pace", "1/m"]);
    assert!(shown.contains("\npace:    next free slot in 5"), "{shown}");
}

// ---- breaker ----

pub(super) fn breaker_cycle(store: Store) {
    let dir = scratch();
    let s = store.arg();
    let ran = dir.path().join("ran");
    let r = path_str(&ran);
    let args = one_attempt("flaky", &s, "--breaker", "3:1500ms");
    for _ in 0..3 {
        retry_sh(&args, "exit 1").run().expect_code(1);
    }
    // Open: refused with 75, COMMAND not run, and the log says when it may close.
    let out = retry_sh(&args, &format!("echo x >> '{r}'")).run();
    out.expect_code(75);
    assert!(!ran.exists(), "the command ran while the circuit was open");
    let err = out.stderr_text();
    assert!(
        err.contains("circuit breaker is open") && err.contains("let through in"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(show(&store, "flaky", &[]).contains("breaker: open (3 consecutive failed runs)"));

    // After the cooldown, 20 start at once: exactly one trial runs.
    thread::sleep(Duration::from_millis(1600));
    let owned = strings(&args);
    let logs = herd(
        20,
        &owned,
        &format!("echo x >> '{r}'; sleep 0.3"),
        dir.path(),
    );
    let runs = std::fs::read_to_string(&ran).unwrap_or_default();
    assert_eq!(runs.lines().count(), 1, "trial runs: {runs:?}");
    let mut codes: Vec<i32> = logs.iter().map(|(c, _)| *c).collect();
    codes.sort();
    let mut want = vec![75; 19];
    want.insert(0, 0);
    assert_eq!(codes, want);
    // Its success closed the circuit.
    assert!(show(&store, "flaky", &[]).contains("breaker: closed (0 consecutive"));
    retry_sh(&args, "exit 0").run().expect_code(0);
}

#[test]
fn breaker_opens_refuses_and_lets_one_trial_through_local() {
    breaker_cycle(Store::local());
}

#[test]
fn breaker_opens_refuses_and_lets_one_trial_through_redis() {
    breaker_cycle(Store::redis());
}

#[test]
fn a_failed_trial_reopens_the_circuit() {
    let store = Store::redis();
    let s = store.arg();
    let args = one_attempt("g", &s, "--breaker", "1:500ms");
    retry_sh(&args, "exit 1").run().expect_code(1);
    retry_sh(&args, "exit 0").run().expect_code(75);
    thread::sleep(Duration::from_millis(600));
    retry_sh(&args, "exit 2").run().expect_code(2);
    retry_sh(&args, "exit 0").run().expect_code(75);
}

#[test]
fn rediss_urls_speak_tls_and_check_the_certificate() {
    let (redis, ca) = Redis::tls();
    // Trusted through SSL_CERT_FILE, as for HTTP mode; not trusted, the
    // store cannot be used.
    trusted_only(&redis.url, &ca);
    let out = retry([
        "--group",
        "g",
        "--state",
        &redis.url,
        "--state-show",
        "--budget",
        "10",
    ])
    .env("SSL_CERT_FILE", &ca)
    .run();
    out.expect_code(0);
    assert!(
        out.stdout_text().contains("budget:  10 of 10 tokens"),
        "{}",
        out.stdout_text()
    );
}

#[test]
fn rediss_certificate_errors_read_as_words_and_state_cacert_trusts_a_self_signed_one() {
    // Untrusted: the words HTTP mode uses, not `UnknownIssuer`.
    let (redis, _ca) = Redis::tls();
    let out = retry_sh(&super::needs_the_store(&redis.url), "exit 0").run();
    out.expect_code(125);
    let err = out.stderr_text();
    assert!(
        err.contains("not signed by a known authority (--state-cacert FILE trusts a CA)"),
        "{err}"
    );
    assert!(!err.contains("UnknownIssuer"), "{err}");
    // The CA's own certificate as the server's, trusted as it is: named as
    // such, not `Other(OtherError(CaUsedAsEndEntity))`.
    let pki = crate::pki::Pki::new();
    let d = pki.dir.path();
    let port = crate::util::free_port();
    let (port_s, cert, key) = (
        port.to_string(),
        path_str(&d.join("ca.pem")),
        path_str(&d.join("ca.key")),
    );
    let args = [
        "--port",
        "0",
        "--tls-port",
        &port_s,
        "--bind",
        "127.0.0.1",
        "--tls-cert-file",
        &cert,
        "--tls-key-file",
        &key,
        "--tls-auth-clients",
        "no",
    ];
    let mut child = super::server(d, &args);
    crate::util::wait_for_port(port, Duration::from_secs(10), "redis-server (TLS)");
    let url = format!("rediss://127.0.0.1:{port}/0");
    let out = retry_sh(&super::needs_the_store(&url), "exit 0")
        .env("SSL_CERT_FILE", d.join("ca.pem"))
        .run();
    let _ = child.kill();
    let _ = child.wait();
    out.expect_code(125);
    let err = out.stderr_text();
    assert!(
        err.contains("it is a CA certificate, used as a server's own"),
        "{err}"
    );
    assert!(!err.contains("CaUsedAsEndEntity"), "{err}");
    // A self-signed certificate that says it is no CA, trusted as it is.
    pki.openssl(&[
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-keyout",
        "own.key",
        "-out",
        "own.pem",
        "-days",
        "2",
        "-subj",
        "/CN=127.0.0.1",
        "-addext",
        "basicConstraints=critical,CA:FALSE",
        "-addext",
        "subjectAltName=IP:127.0.0.1",
    ]);
    let port = crate::util::free_port();
    let (port_s, cert, key) = (
        port.to_string(),
        path_str(&d.join("own.pem")),
        path_str(&d.join("own.key")),
    );
    let args = [
        "--port",
        "0",
        "--tls-port",
        &port_s,
        "--bind",
        "127.0.0.1",
        "--tls-cert-file",
        &cert,
        "--tls-key-file",
        &key,
        "--tls-auth-clients",
        "no",
    ];
    let mut child = super::server(d, &args);
    crate::util::wait_for_port(port, Duration::from_secs(10), "redis-server (TLS)");
    let url = format!("rediss://127.0.0.1:{port}/0");
    let out = retry_sh(&super::needs_the_store(&url), "exit 0")
        .env("SSL_CERT_FILE", d.join("own.pem"))
        .run();
    out.expect_code(0);
    // Or through --state-cacert, as --cacert does for HTTP mode.
    let own = path_str(&d.join("own.pem"));
    let mut args = super::needs_the_store(&url).to_vec();
    args.extend(["--state-cacert", &own]);
    let out = retry_sh(&args, "exit 0").run();
    out.expect_code(0);
    // A file without a certificate makes the store unusable; a store
    // without TLS takes none.
    let mut args = super::needs_the_store(&url).to_vec();
    let key = path_str(&d.join("own.key"));
    args.extend(["--state-cacert", &key]);
    let out = retry_sh(&args, "exit 0").run();
    out.expect_code(125);
    assert!(
        out.stderr_text().contains("invalid --state-cacert"),
        "{}",
        out.stderr_text()
    );
    let plain = format!("redis://127.0.0.1:{port}/0");
    let mut args = super::needs_the_store(&plain).to_vec();
    args.extend(["--state-cacert", &own]);
    retry_sh(&args, "exit 0")
        .run()
        .expect_usage_line("--state-cacert applies only to a Redis store spoken to over TLS");
    let _ = child.kill();
    let _ = child.wait();
}
