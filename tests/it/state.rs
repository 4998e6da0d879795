//! Shared state across invocations: pace, budget and breaker on the local
//! store and on a real Redis server that each test starts for itself (on a
//! private unix socket or 127.0.0.1 port, persistence off).

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crate::util::{command, path_str, retry, retry_sh, scratch};

/// A redis-server of the test's own; stopped when dropped.
struct Redis {
    child: Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Redis {
    /// On a unix socket in a private directory.
    fn unix() -> Redis {
        let dir = scratch();
        let sock = dir.path().join("redis.sock");
        let s = path_str(&sock);
        let child = server(dir.path(), &["--port", "0", "--unixsocket", &s]);
        let redis = Redis {
            child,
            url: format!("unix://{s}"),
            _dir: dir,
        };
        redis.wait_ready(|| UnixStream::connect(&sock).ok().map(Conn::Unix));
        redis
    }

    /// On 127.0.0.1 with a password.
    fn tcp_with_password(password: &str) -> Redis {
        let dir = scratch();
        let port = free_port();
        let p = port.to_string();
        let child = server(
            dir.path(),
            &[
                "--port",
                &p,
                "--bind",
                "127.0.0.1",
                "--requirepass",
                password,
            ],
        );
        let redis = Redis {
            child,
            url: format!("redis://127.0.0.1:{port}/0"),
            _dir: dir,
        };
        redis.wait_ready(|| {
            std::net::TcpStream::connect(("127.0.0.1", port))
                .ok()
                .map(Conn::Tcp)
        });
        redis
    }

    /// TLS only, on 127.0.0.1, with a certificate from a throwaway CA;
    /// returns the server and the CA file to trust.
    fn tls() -> (Redis, PathBuf) {
        let dir = scratch();
        let d = dir.path();
        let openssl = |args: &[&str]| {
            let ok = Command::new("openssl")
                .args(args)
                .current_dir(d)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .expect("openssl must be installed (scripts/test.sh installs it)")
                .success();
            assert!(ok, "openssl {args:?}");
        };
        openssl(&[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "2",
            "-subj",
            "/CN=retry test CA",
        ]);
        openssl(&[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "srv.key",
            "-out",
            "srv.csr",
            "-subj",
            "/CN=127.0.0.1",
        ]);
        std::fs::write(
            d.join("ext"),
            "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n",
        )
        .expect("ext");
        openssl(&[
            "x509",
            "-req",
            "-in",
            "srv.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "srv.pem",
            "-days",
            "2",
            "-extfile",
            "ext",
        ]);
        let port = free_port();
        let p = port.to_string();
        let f = |n: &str| path_str(&d.join(n));
        let child = server(
            d,
            &[
                "--port",
                "0",
                "--tls-port",
                &p,
                "--bind",
                "127.0.0.1",
                "--tls-cert-file",
                &f("srv.pem"),
                "--tls-key-file",
                &f("srv.key"),
                "--tls-ca-cert-file",
                &f("ca.pem"),
                "--tls-auth-clients",
                "no",
            ],
        );
        let ca = d.join("ca.pem");
        let redis = Redis {
            child,
            url: format!("rediss://127.0.0.1:{port}/0"),
            _dir: dir,
        };
        // Ready once the port accepts connections (a TLS handshake is the client's job).
        let until = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < until, "redis-server (TLS) did not start");
            thread::sleep(Duration::from_millis(20));
        }
        (redis, ca)
    }

    fn wait_ready(&self, connect: impl Fn() -> Option<Conn>) {
        let until = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(mut c) = connect() {
                // Any reply (PONG, or NOAUTH with a password) means it serves.
                let mut buf = [0u8; 64];
                if c.write_all(b"PING\r\n").is_ok() && c.read(&mut buf).is_ok_and(|n| n > 0) {
                    return;
                }
            }
            assert!(Instant::now() < until, "redis-server did not start");
            thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

enum Conn {
    Unix(UnixStream),
    Tcp(std::net::TcpStream),
}

impl Conn {
    fn write_all(&mut self, b: &[u8]) -> std::io::Result<()> {
        match self {
            Conn::Unix(s) => s.write_all(b),
            Conn::Tcp(s) => s.write_all(b),
        }
    }
    fn read(&mut self, b: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Conn::Unix(s) => s.read(b),
            Conn::Tcp(s) => s.read(b),
        }
    }
}

fn server(dir: &Path, args: &[&str]) -> Child {
    // scripts/test.sh installs redis-server; its absence is a failure, never a skip.
    Command::new("redis-server")
        .args(args)
        .args(["--save", "", "--appendonly", "no", "--dir"])
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("redis-server must be installed (scripts/test.sh installs it)")
}

/// A 127.0.0.1 port nothing listens on (bound, then released).
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

/// The two stores under test: a fresh directory, or a fresh Redis server.
enum Store {
    Dir(tempfile::TempDir),
    Redis(Redis),
}

impl Store {
    fn local() -> Store {
        Store::Dir(scratch())
    }
    fn redis() -> Store {
        Store::Redis(Redis::unix())
    }
    fn arg(&self) -> String {
        match self {
            Store::Dir(d) => path_str(&d.path().join("state")),
            Store::Redis(r) => r.url.clone(),
        }
    }
}

/// `--state-show` for the group, on stdout.
fn show(store: &Store, group: &str, extra: &[&str]) -> String {
    let s = store.arg();
    let mut args = vec!["--group", group, "--state", &s, "--state-show"];
    args.extend_from_slice(extra);
    let out = retry(args).run();
    out.expect_code(0);
    out.stdout_text()
}

/// The budget count `--state-show` reports.
fn budget_count(store: &Store, group: &str, tokens: &str) -> f64 {
    let text = show(store, group, &["--budget", tokens]);
    let line = text
        .lines()
        .find(|l| l.starts_with("budget:"))
        .unwrap_or_else(|| panic!("no budget line in {text}"));
    line.split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count in {line}"))
}

/// Start `n` retries of `sh -c SCRIPT` at once; each first attempt waits for
/// the returned gate file, so they all reach the store together.
fn herd(n: usize, args: &[String], script: &str, dir: &Path) -> Vec<(i32, Vec<serde_json::Value>)> {
    // One herd at a time: two at once on a small machine measure the
    // scheduler, not the store.
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let gate = dir.join("gate");
    let gated = format!(
        "while [ ! -e '{}' ]; do sleep 0.1; done; {script}",
        path_str(&gate)
    );
    let children: Vec<Child> = (0..n)
        .map(|_| {
            command()
                .args(args)
                .args(["--log-format", "json", "-v", "--", "sh", "-c", &gated])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn retry")
        })
        .collect();
    std::fs::write(&gate, b"").expect("open the gate");
    children
        .into_iter()
        .map(|c| {
            let out = c.wait_with_output().expect("wait");
            let log = String::from_utf8_lossy(&out.stderr)
                .lines()
                .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l}: {e}")))
                .collect();
            (out.status.code().expect("exit code"), log)
        })
        .collect()
}

fn events<'a>(
    logs: &'a [(i32, Vec<serde_json::Value>)],
    kind: &'a str,
) -> impl Iterator<Item = &'a serde_json::Value> + 'a {
    logs.iter()
        .flat_map(|(_, l)| l.iter())
        .filter(move |e| e["event"] == kind)
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

// ---- budget: no lost update with 200 concurrent invocations ----

fn budget_is_exact_under_concurrency(store: Store) {
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

fn pace_spaces_retries(store: Store) {
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
        .map(|e| {
            let t = humantime::parse_rfc3339(e["time"].as_str().expect("time")).expect("rfc3339");
            t.duration_since(std::time::UNIX_EPOCH)
                .expect("after epoch")
                .as_secs_f64()
        })
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
    let shown = show(&store, "slow", &[]);
    assert!(shown.contains("\npace:    next free slot in 5"), "{shown}");
}

// ---- breaker ----

fn breaker_cycle(store: Store) {
    let dir = scratch();
    let s = store.arg();
    let ran = dir.path().join("ran");
    let r = path_str(&ran);
    let args = [
        "--group",
        "flaky",
        "--state",
        &s,
        "--breaker",
        "3:1500ms",
        "--max",
        "1",
    ];
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
    let args = [
        "--group",
        "g",
        "--state",
        &s,
        "--breaker",
        "1:500ms",
        "--max",
        "1",
    ];
    retry_sh(&args, "exit 1").run().expect_code(1);
    retry_sh(&args, "exit 0").run().expect_code(75);
    thread::sleep(Duration::from_millis(600));
    retry_sh(&args, "exit 2").run().expect_code(2);
    retry_sh(&args, "exit 0").run().expect_code(75);
}

#[test]
fn rediss_urls_speak_tls_and_check_the_certificate() {
    let (redis, ca) = Redis::tls();
    let args = [
        "--group",
        "g",
        "--state",
        &redis.url,
        "--budget",
        "--state-required",
    ];
    // Trusted through SSL_CERT_FILE, as for HTTP mode.
    retry_sh(&args, "exit 0")
        .env("SSL_CERT_FILE", &ca)
        .run()
        .expect_code(0);
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
    // Not trusted: the store cannot be used.
    let out = retry_sh(&args, "exit 0").run();
    out.expect_code(125);
    assert!(
        out.stderr_text().contains("certificate"),
        "{}",
        out.stderr_text()
    );
}

// ---- failing open, failing closed ----

#[test]
fn unreachable_redis_warns_once_and_runs_without_it() {
    let dir = scratch();
    let ran = dir.path().join("ran");
    let url = format!("redis://app:hunter2@127.0.0.1:{}/0", free_port());
    let args = [
        "--group",
        "g",
        "--state",
        &url,
        "--budget",
        "--breaker",
        "--max",
        "2",
        "--base",
        "1ms",
    ];
    let out = retry_sh(&args, &format!("echo x >> '{}'; exit 1", path_str(&ran))).run();
    out.expect_code(1);
    let err = out.stderr_text();
    assert_eq!(
        std::fs::read_to_string(&ran)
            .unwrap_or_default()
            .lines()
            .count(),
        2
    );
    let warnings: Vec<_> = err.lines().filter(|l| l.contains("shared state")).collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(warnings[0].contains("running without it"), "{err}");
    assert!(warnings[0].contains("app:***@127.0.0.1"), "{err}");
    assert!(!err.contains("hunter2"), "{err}");
}

#[test]
fn state_required_exits_125_without_running() {
    let dir = scratch();
    let ran = dir.path().join("ran");
    let url = format!("redis://:hunter2@127.0.0.1:{}/0", free_port());
    let args = [
        "--group",
        "g",
        "--state",
        &url,
        "--budget",
        "--state-required",
    ];
    let out = retry_sh(&args, &format!("touch '{}'", path_str(&ran))).run();
    out.expect_code(125);
    assert!(!ran.exists());
    let err = out.stderr_text();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("--state-required") && !err.contains("hunter2"),
        "{err}"
    );
    // --state-show says so too.
    let out = retry(["--group", "g", "--state", &url, "--state-show"]).run();
    out.expect_code(125);
    assert!(!out.stderr_text().contains("hunter2"));
}

#[test]
fn a_wrong_redis_password_is_reported_but_never_printed() {
    let redis = Redis::tcp_with_password("right-secret");
    let url = redis.url.replace("redis://", "redis://:wrong-secret@");
    let out = retry_sh(
        &[
            "--group",
            "g",
            "--state",
            &url,
            "--budget",
            "--state-required",
        ],
        "exit 0",
    )
    .run();
    out.expect_code(125);
    let err = out.stderr_text();
    assert!(
        !err.contains("wrong-secret") && !err.contains("right-secret"),
        "{err}"
    );
    // With the right one, it works.
    let url = redis.url.replace("redis://", "redis://:right-secret@");
    retry_sh(
        &[
            "--group",
            "g",
            "--state",
            &url,
            "--budget",
            "--state-required",
        ],
        "exit 0",
    )
    .run()
    .expect_code(0);
    let out = retry(["--group", "g", "--state", &url, "--state-show"]).run();
    out.expect_code(0);
    assert!(out.stdout_text().contains(":***@127.0.0.1"));
    assert!(!out.stdout_text().contains("right-secret"));
}

#[test]
fn a_corrupt_state_file_is_reported_and_reset() {
    let store = Store::local();
    let s = store.arg();
    retry_sh(&["--group", "g", "--state", &s, "--budget"], "exit 0")
        .run()
        .expect_code(0);
    let file = PathBuf::from(&s).join("g.json");
    std::fs::write(&file, b"{\"tat\": 12, \"tokens_mil").expect("truncate");
    let out = retry_sh(
        &[
            "--group", "g", "--state", &s, "--budget", "10", "--max", "2", "--base", "1ms",
        ],
        "exit 1",
    )
    .run();
    out.expect_code(1);
    let err = out.stderr_text();
    let reports: Vec<_> = err.lines().filter(|l| l.contains("corrupt")).collect();
    assert_eq!(reports.len(), 1, "{err}");
    assert!(err.contains("giving up after 2 attempts"), "{err}");
    // Started afresh from a full budget: 10 - 2.
    assert_eq!(budget_count(&store, "g", "10"), 8.0);
}

#[test]
fn local_files_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let store = Store::local();
    let s = store.arg();
    retry_sh(&["--group", "g", "--state", &s, "--budget"], "exit 0")
        .run()
        .expect_code(0);
    let mode = |p: &Path| std::fs::metadata(p).expect("stat").permissions().mode() & 0o777;
    assert_eq!(mode(Path::new(&s)), 0o700);
    assert_eq!(mode(&Path::new(&s).join("g.json")), 0o600);
    assert_eq!(mode(&Path::new(&s).join("g.lock")), 0o600);
}

/// Hold the group's lock from this test process, as a stuck invocation would.
fn hold_lock(dir: &str, group: &str) -> std::fs::File {
    std::fs::create_dir_all(dir).expect("state dir");
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(Path::new(dir).join(format!("{group}.lock")))
        .expect("lock file");
    f.lock().expect("lock");
    f
}

#[test]
fn a_stuck_lock_holder_costs_a_bounded_wait_then_the_run_goes_on() {
    let store = Store::local();
    let s = store.arg();
    let _held = hold_lock(&s, "g");
    let out = retry_sh(&["--group", "g", "--state", &s, "--budget"], "exit 0").run();
    out.expect_code(0);
    assert!(
        out.stderr_text().contains("stayed locked"),
        "{}",
        out.stderr_text()
    );
    assert!(
        out.elapsed >= Duration::from_secs(3) && out.elapsed < Duration::from_secs(8),
        "{:?}",
        out.elapsed
    );
}

#[test]
fn a_lock_wait_gives_way_to_max_time_and_to_signals() {
    let store = Store::local();
    let s = store.arg();
    let _held = hold_lock(&s, "g");
    let out = retry_sh(
        &[
            "--group",
            "g",
            "--state",
            &s,
            "--breaker",
            "--max-time",
            "300ms",
        ],
        "exit 0",
    )
    .run();
    assert_eq!(out.code(), 124, "{}", out.stderr_text());
    assert!(
        out.elapsed < Duration::from_millis(1500),
        "{:?}",
        out.elapsed
    );

    let running = retry_sh(&["--group", "g", "--state", &s, "--breaker"], "exit 0").spawn();
    thread::sleep(Duration::from_millis(300));
    running.signal(nix::sys::signal::Signal::SIGTERM);
    let out = running.wait();
    assert_eq!(out.code(), 143, "{}", out.stderr_text());
    assert!(
        out.elapsed < Duration::from_millis(1500),
        "{:?}",
        out.elapsed
    );
}

// ---- usage ----

#[test]
fn features_without_a_group_are_a_usage_error() {
    let out = retry_sh(&["--pace", "5/s"], "touch never").run();
    out.expect_code(2);
    assert_eq!(out.stderr_lines().len(), 1);
    assert!(out.stderr_text().contains("--group"));
    let out = retry_sh(
        &["--group", "g", "--state", "/tmp/x", "--pace", "fast"],
        "true",
    )
    .run();
    out.expect_code(2);
    assert!(out.stderr_text().contains("--pace") && out.stderr_text().contains("20/s"));
    let out = retry([
        "--group",
        "g",
        "--state",
        "/tmp/x",
        "--state-show",
        "--",
        "true",
    ])
    .run();
    out.expect_code(2);
    assert!(
        out.stderr_text().contains("--state-show"),
        "{}",
        out.stderr_text()
    );
    // The group may come from the environment.
    let dir = scratch();
    let out = retry(["--state-show", "--state", &path_str(dir.path())])
        .env("RETRY_GROUP", "from-env")
        .run();
    out.expect_code(0);
    assert!(out.stdout_text().starts_with("group:   from-env\n"));
}

// ---- both stores carry out the same rules ----

/// The same sequence of operations on the pure rules, the local store and
/// Redis gives the same answers (pace waits compared to the millisecond:
/// each store reads its own clock).
#[test]
fn both_stores_apply_the_pure_rules() {
    use retry_tool::state::rules::{
        Admit, Breaker, Budget, GroupState, Op, Pace, Plan, Reply, apply,
    };
    use retry_tool::state::{AnyStore, Store as _, StoreAt};

    const S: u64 = 1_000_000;
    const M: u64 = 60 * S;
    let budget = Budget {
        max_milli: 4_000,
        ratio_milli: 500,
    };
    let breaker = Breaker {
        threshold: 2,
        cooldown: 3_600 * S,
    };
    let pace = Pace {
        interval: 3_600 * S,
        burst: 2,
    };
    let plan = |deadline_in| Op::Plan {
        delay: 0,
        deadline_in,
        budget: Some(budget),
        pace: Some(pace),
    };
    let finish = |success, trial| Op::Finish {
        breaker,
        success,
        trial,
    };
    let record = |success| Op::Record { budget, success };
    let ops = [
        plan(None),
        plan(None),
        plan(Some(10 * S)),
        plan(None),
        record(false),
        record(false),
        plan(None),
        record(true),
        plan(None),
        Op::Admit { lease: 60 * S },
        finish(false, false),
        finish(false, false),
        Op::Admit { lease: 60 * S },
        finish(true, false),
        Op::Admit { lease: 60 * S },
        finish(false, false),
        finish(false, false),
        finish(false, false),
        Op::Admit { lease: 60 * S },
    ];
    // Durations are what differ between clocks, and time passes between the
    // calls (under load, seconds): compare them to the minute.
    let coarse = |r: Reply| match r {
        Reply::Plan(Plan::Go { wait, paced }) => Reply::Plan(Plan::Go {
            wait: (wait + M / 2) / M,
            paced: (paced + M / 2) / M,
        }),
        Reply::Plan(Plan::PastDeadline { wait }) => Reply::Plan(Plan::PastDeadline {
            wait: (wait + M / 2) / M,
        }),
        Reply::Admit(Admit::Open { wait }) => Reply::Admit(Admit::Open {
            wait: (wait + M / 2) / M,
        }),
        other => other,
    };
    let mut model = GroupState::default();
    let now = 1_700_000_000 * S;
    let want: Vec<Reply> = ops
        .iter()
        .map(|op| coarse(apply(&mut model, now, *op)))
        .collect();
    assert_eq!(
        want[..4],
        [
            Reply::Plan(Plan::Go { wait: 0, paced: 0 }),
            Reply::Plan(Plan::Go { wait: 0, paced: 0 }),
            Reply::Plan(Plan::PastDeadline { wait: 60 }),
            Reply::Plan(Plan::Go {
                wait: 60,
                paced: 60
            }),
        ]
    );

    let dir = scratch();
    let redis = Redis::unix();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    for at in [
        StoreAt::Dir(dir.path().join("state")),
        StoreAt::Url(redis.url.clone()),
    ] {
        let mut store = AnyStore::new(&at).expect("store");
        rt.block_on(store.open()).expect("open");
        let got: Vec<Reply> = ops
            .iter()
            .map(|op| coarse(rt.block_on(store.apply("same", *op)).expect("apply")))
            .collect();
        assert_eq!(got, want, "{at:?}");
        let Reply::Show { state, .. } = rt.block_on(store.apply("same", Op::Show)).expect("show")
        else {
            panic!("show");
        };
        assert_eq!(
            (state.tokens_milli, state.failures),
            (model.tokens_milli, model.failures),
            "{at:?}"
        );
    }
    // One key per group, named for the group, expiring a week after its last change.
    let sock = redis.url.trim_start_matches("unix://");
    let mut c = Conn::Unix(UnixStream::connect(sock).expect("connect"));
    c.write_all(b"PTTL retry:{same}:state\r\n").expect("send");
    let mut buf = [0u8; 64];
    let n = c.read(&mut buf).expect("reply");
    let reply = String::from_utf8_lossy(&buf[..n]);
    let ttl: u64 = reply
        .trim()
        .trim_start_matches(':')
        .parse()
        .unwrap_or_else(|_| panic!("PTTL reply {reply:?}"));
    let week = 7 * 24 * 3600 * 1000;
    assert!(ttl > week - 60_000 && ttl <= week, "{ttl}");
}
