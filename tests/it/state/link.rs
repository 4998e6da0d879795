//! The link to a Redis store: credentials in every form never shown nor
//! handed on, malformed URLs refused, a dropped connection made again, a
//! server that does not answer (or does not speak TLS) told as such, a
//! slow one leaving the command its run, and a name looked up again when
//! its server is demoted.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::thread;
use std::time::Duration;

use super::{Redis, show_at};
use crate::util::{Outcome, bin, free_port, path_str, retry, retry_sh, scratch, wait_for_file};

#[test]
fn unix_socket_passwords_are_never_printed_nor_handed_on() {
    let redis = Redis::unix_with(&["--requirepass", "sesame-right"]);
    let sock = redis.url.trim_start_matches("unix://").to_string();
    let wrong = format!("unix://{sock}?pass=sesame-wrong");
    for format in ["text", "json"] {
        let out = retry_sh(
            &[
                "--group",
                "g",
                "--state",
                &wrong,
                "--budget",
                "--log-format",
                format,
            ],
            "exit 0",
        )
        .run();
        out.expect_code(0);
        let err = out.stderr_text();
        assert!(err.contains("pass=***"), "{err}");
        assert!(!err.contains("sesame"), "{err}");
    }
    let right = format!("redis+unix://{sock}?pass=sesame-right");
    retry_sh(
        &["--group", "g", "--state", &right, "--budget", "--max", "1"],
        "exit 1",
    )
    .run()
    .expect_code(1);
    let out = retry([
        "--group",
        "g",
        "--state",
        &right,
        "--state-show",
        "--budget",
    ])
    .run();
    out.expect_code(0);
    let text = out.stdout_text();
    assert!(text.contains("budget:  99 of 100"), "{text}");
    assert!(
        text.contains("pass=***") && !text.contains("sesame"),
        "{text}"
    );

    // Given in RETRY_STATE, the password does not reach the command.
    let t = scratch();
    let seen = t.path().join("seen");
    let out = retry_sh(
        &["--group", "g", "--budget", "--state-required"],
        &format!("printf %s \"$RETRY_STATE\" > '{}'", path_str(&seen)),
    )
    .env("RETRY_STATE", &right)
    .run();
    out.expect_code(0);
    assert_eq!(
        std::fs::read_to_string(&seen).expect("seen"),
        format!("redis+unix://{sock}")
    );
}

#[test]
fn a_password_file_lets_nested_runs_share_the_store() {
    let redis = Redis::unix_with(&["--requirepass", "sesame-right"]);
    let t = scratch();
    let file = t.path().join("redis-password");
    std::fs::write(&file, "sesame-right\n").expect("password file");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let seen = t.path().join("seen");
    // The outer run and the one it runs both use the store, and neither the
    // environment nor a command line holds the password.
    let inner = format!(
        "'{}' --budget --state-required --max 1 -- false; env > '{}'",
        path_str(bin()),
        path_str(&seen)
    );
    let out = retry_sh(&["--budget", "--state-required", "--max", "1"], &inner)
        .env("RETRY_GROUP", "nested")
        .env("RETRY_STATE", &redis.url)
        .env("RETRY_STATE_PASSWORD_FILE", &file)
        .run();
    out.expect_code(0);
    assert!(
        !out.stderr_text().contains("shared state"),
        "{}",
        out.stderr_text()
    );
    let env = std::fs::read_to_string(&seen).expect("seen");
    assert!(!env.contains("sesame"), "{env}");
    let shown = retry([
        "--group",
        "nested",
        "--state",
        &redis.url,
        "--state-show",
        "--budget",
    ])
    .env("RETRY_STATE_PASSWORD_FILE", &file)
    .run();
    shown.expect_code(0);
    // The inner run's failure was counted (and the outer run's success).
    assert!(
        shown.stdout_text().contains("budget:  99.1 of 100"),
        "{}",
        shown.stdout_text()
    );
}

#[test]
fn a_malformed_store_url_is_a_usage_error() {
    let t = scratch();
    let ran = t.path().join("ran");
    let script = format!("touch '{}'", path_str(&ran));
    for url in [
        "redis://:hunter2@",
        "unix://",
        "redis://127.0.0.1:99999/0",
        "redis://[::1",
    ] {
        let out = retry_sh(&["--group", "g", "--budget", "--state", url], &script).run();
        out.expect_code(2);
        let err = out.stderr_text();
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("for --state: "), "{err}");
        assert!(!err.contains("hunter2"), "{err}");
        let out = retry_sh(&["--group", "g", "--budget"], &script)
            .env("RETRY_STATE", url)
            .run();
        out.expect_code(2);
        assert!(
            out.stderr_text().contains("for RETRY_STATE (--state): "),
            "{}",
            out.stderr_text()
        );
    }
    assert!(!ran.exists(), "the command ran");
}

/// The budget count and breaker line `--state-show` reports.
fn budget_and_breaker(redis: &Redis, group: &str) -> (String, String) {
    let text = show_at(&redis.url, group, &["--budget", "--breaker"]);
    let line = |k: &str| {
        text.lines()
            .find(|l| l.starts_with(k))
            .unwrap_or_else(|| panic!("no {k} in {text}"))
            .to_string()
    };
    (line("budget:"), line("breaker:"))
}

/// `--group GROUP --state URL --budget --breaker`, two attempts `base` apart.
fn two_attempts<'a>(group: &'a str, url: &'a str, base: &'a str) -> [&'a str; 12] {
    [
        "--group",
        group,
        "--state",
        url,
        "--budget",
        "--breaker",
        "--max",
        "2",
        "--base",
        base,
        "--jitter",
        "none",
    ]
}

/// One run of `group` failed (exit 1) without a warning: the store saw it,
/// two budget tokens spent and one failed run on the breaker.
#[track_caller]
fn assert_one_failed_run(redis: &Redis, group: &str, out: &Outcome) {
    out.expect_code(1);
    // No warning about the store (the one about stdout, a pipe, is not).
    assert!(
        !out.stderr_lines()
            .iter()
            .any(|l| l.contains("warning") && !l.contains("stdout is a pipe")),
        "{}",
        out.stderr_text()
    );
    let (budget, breaker) = budget_and_breaker(redis, group);
    assert!(budget.contains("98 of 100"), "{budget}");
    assert!(
        breaker.contains("closed (1 consecutive failed runs"),
        "{breaker}"
    );
}

#[test]
fn a_connection_the_server_dropped_is_made_again() {
    // The server closes connections idle for a second, as proxies and
    // managed Redis services do; the backoff is longer than that.
    let mut redis = Redis::unix_with(&["--timeout", "1"]);
    let out = retry_sh(&two_attempts("idle", &redis.url, "2500ms"), "exit 1").run();
    assert_one_failed_run(&redis, "idle", &out);

    // The server restarts during the backoff. The log goes to a file as
    // well (-v keeps it on stderr too), to see the backoff begin.
    let t = scratch();
    let log = t.path().join("log");
    let log_arg = path_str(&log);
    let mut args = two_attempts("restart", &redis.url, "3s").to_vec();
    args.extend(["-v", "--log-file", &log_arg]);
    let running = retry_sh(&args, "exit 1").spawn();
    // The first outcome is recorded and the wait has begun: restart the
    // server.
    crate::util::wait_for_line(&log, "next in", Duration::from_secs(20));
    redis.restart();
    let out = running.wait();
    assert_one_failed_run(&redis, "restart", &out);
}

/// Keeps a real server busy for `secs` seconds: stopped, it still takes
/// connections (the kernel queues them) and answers nothing, as when busy
/// with a long command. Returns once it is stopped; a thread lets it go on.
fn keep_busy(redis: &Redis, secs: u64) -> thread::JoinHandle<()> {
    use nix::sys::signal::{Signal, kill};
    let pid = redis.child.id() as i32;
    let server = nix::unistd::Pid::from_raw(pid);
    kill(server, Signal::SIGSTOP).expect("stop the server");
    crate::util::wait_until(Duration::from_secs(20), "the server stops", || {
        crate::util::stopped(pid)
    });
    thread::spawn(move || {
        thread::sleep(Duration::from_secs(secs));
        kill(server, Signal::SIGCONT).expect("let the server go on");
    })
}

#[test]
fn a_busy_server_is_told_as_such_and_leaves_the_command_its_run() {
    let redis = Redis::unix();
    let t = scratch();
    let ran = t.path().join("ran");
    let script = format!("touch '{}'", path_str(&ran));
    let busy = keep_busy(&redis, 4);
    let out = retry_sh(
        &["--group", "g", "--state", &redis.url, "--budget"],
        &script,
    )
    .run();
    out.expect_code(0);
    let err = out.stderr_text();
    assert!(
        err.contains("connected, but the server did not answer within 2s"),
        "{err}"
    );
    assert!(ran.exists());
    busy.join().expect("busy");

    // With --max-time 2s, the store may take half a second of it: the
    // command runs (before, the wait ate the deadline: 124, no attempt).
    std::fs::remove_file(&ran).expect("rm");
    let busy = keep_busy(&redis, 4);
    let out = retry_sh(
        &[
            "--group",
            "g",
            "--state",
            &redis.url,
            "--budget",
            "--breaker",
            "--max-time",
            "2s",
        ],
        &script,
    )
    .run();
    assert_eq!(out.code(), 0, "{}", out.stderr_text());
    assert!(ran.exists(), "the command did not run");
    // The breaker's last word may take a second more, even past --max-time.
    assert!(out.elapsed < Duration::from_secs(4), "{:?}", out.elapsed);
    assert!(
        out.stderr_text()
            .contains("(1/4 of the time left before --max-time)"),
        "{}",
        out.stderr_text()
    );
    busy.join().expect("busy");
}

#[test]
fn a_server_that_never_answers_or_does_not_speak_tls_is_told_as_such() {
    // Accepts connections and says nothing.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    thread::spawn(move || {
        let mut held = Vec::new();
        for c in listener.incoming() {
            held.push(c);
        }
    });
    let url = format!("redis://127.0.0.1:{port}/0");
    let out = retry_sh(&["--group", "g", "--state", &url, "--budget"], "exit 0").run();
    out.expect_code(0);
    assert!(
        out.stderr_text()
            .contains("connected, but the server did not answer within 2s"),
        "{}",
        out.stderr_text()
    );

    let plain = Redis::tcp_with_password("pw");
    let tls = plain.url.replace("redis://", "rediss://:pw@");
    let out = retry_sh(&["--group", "g", "--state", &tls, "--budget"], "exit 0").run();
    out.expect_code(0);
    assert!(
        out.stderr_text()
            .contains("the server does not speak TLS on this port"),
        "{}",
        out.stderr_text()
    );
    assert!(!out.stderr_text().contains(":pw@"), "{}", out.stderr_text());
}

/// `retry ARGS` started in a private mount namespace where /etc/hosts is
/// `hosts` (a file the test may rewrite: the namespace sees it change) and
/// names not in it fail at once; its stderr goes to `log`. None, a counted
/// skip, where such a namespace cannot be made.
fn spawn_with_hosts(hosts: &Path, log: &Path, args: &[&str]) -> Option<std::process::Child> {
    let resolv = hosts.with_file_name("resolv.conf");
    std::fs::write(
        &resolv,
        "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n",
    )
    .expect("resolv.conf");
    let script = r#"mount --bind "$1" /etc/hosts && mount --bind "$2" /etc/resolv.conf || exit 97
shift 2
exec "$@""#;
    let probe = std::process::Command::new("unshare")
        .args(["--mount", "--", "sh", "-c", script, "sh"])
        .args([hosts, &resolv])
        .arg("true")
        .output()
        .expect("unshare (util-linux)");
    let made = probe.status.success();
    let why = String::from_utf8_lossy(&probe.stderr);
    if !crate::need::met(made, &format!("a private mount namespace: {}", why.trim())) {
        return None;
    }
    let child = std::process::Command::new("unshare")
        .args(["--mount", "--", "sh", "-c", script, "sh"])
        .args([hosts, &resolv])
        .arg(bin())
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(log).expect("log"))
        .spawn()
        .expect("unshare");
    Some(child)
}

#[test]
fn a_single_address_is_resolved_again_when_its_server_is_demoted() {
    // A managed service fails over by demoting the old primary and moving
    // its name to the new one: a READONLY answer makes the run connect
    // again, looking the name up again. Here the name first leaves (the
    // lookup fails: the store fails open), then comes back with the server
    // promoted again (the store is in use again).
    use super::topology::{REDIS, cli, fails_until, long_run_args, settle};
    let redis = Redis::tcp_with_password("pw");
    let port: u16 = redis
        .url
        .rsplit(':')
        .next()
        .and_then(|p| p.trim_end_matches("/0").parse().ok())
        .expect("port");
    let t = scratch();
    let hosts = t.path().join("hosts");
    let with_name = "127.0.0.1 localhost\n127.0.0.1 primary.redis.test\n";
    std::fs::write(&hosts, with_name).expect("hosts");
    let (done, started, log) = (
        t.path().join("done"),
        t.path().join("started"),
        t.path().join("log"),
    );
    let url = format!("redis://:pw@primary.redis.test:{port}/0");
    let script = fails_until(&done, &started);
    let mut args = long_run_args("moved", &url, "60s").to_vec();
    args.extend(["--", "sh", "-c", &script]);
    let Some(mut child) = spawn_with_hosts(&hosts, &log, &args) else {
        return;
    };
    wait_for_file(&started, Duration::from_secs(20));
    let ask = |words: &[&str]| cli(REDIS, port, Some("pw"), words);
    let clients = || {
        ask(&["INFO", "clients"])
            .lines()
            .find_map(|l| l.strip_prefix("connected_clients:"))
            .and_then(|n| n.trim().parse::<u32>().ok())
            .unwrap_or(0)
    };
    settle("the run's connection", Duration::from_secs(10), || {
        clients() >= 2
    });
    // The name leaves and the server is demoted: the run's connection is
    // dropped after its first READONLY, and not made again.
    std::fs::write(&hosts, "127.0.0.1 localhost\n").expect("hosts");
    assert!(ask(&["REPLICAOF", "127.0.0.1", &free_port().to_string()]).starts_with("OK"));
    settle(
        "the demoted server left alone",
        Duration::from_secs(10),
        || clients() == 1,
    );
    // The name comes back, to a primary: the run finds it again.
    std::fs::write(&hosts, with_name).expect("hosts");
    assert!(ask(&["REPLICAOF", "NO", "ONE"]).starts_with("OK"));
    settle(
        "the run back on the server",
        Duration::from_secs(20),
        || clients() >= 2,
    );
    std::fs::write(&done, b"").expect("done");
    let status = crate::util::exit_within(&mut child, Duration::from_secs(20));
    let text = std::fs::read_to_string(&log).expect("log");
    assert_eq!(status.code(), Some(0), "{text}");
    let log: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l}: {e}")))
        .collect();
    let warnings = super::topology::messages(&log, "warning");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("redis://:***@primary.redis.test:"),
        "{warnings:?}"
    );
    let notes = super::topology::messages(&log, "note");
    assert!(
        notes.iter().any(|n| n.ends_with("in use again")),
        "{notes:?}"
    );
}

/// A password file that is a FIFO nobody writes is not waited on: the store
/// is given up at once, with a warning, and the command runs.
#[test]
fn a_password_file_that_is_a_fifo_is_not_waited_on() {
    let t = scratch();
    let fifo = t.path().join("pw");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).expect("mkfifo");
    let started = std::time::Instant::now();
    let out = retry([
        "--group",
        "g",
        "--state",
        "redis://127.0.0.1:9/",
        "--state-password-file",
        path_str(&fifo).as_str(),
        "--budget",
        "--max",
        "1",
        "--",
        "true",
    ])
    .run();
    out.expect_code(0);
    assert!(
        out.stderr_text()
            .contains("not a regular file; running without it"),
        "{}",
        out.stderr_text()
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
}
