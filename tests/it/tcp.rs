//! `--tcp HOST:PORT`: waiting for real listeners on 127.0.0.1 and ::1;
//! refused, unresolvable and silent targets, with curl's exit statuses.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use crate::util::{Outcome, free_port, path_str, retry, scratch, wait_for_line};

/// A listener that accepts connections until the test ends, noting each
/// peer's address.
struct Counting {
    addr: SocketAddr,
    peers: Arc<Mutex<Vec<SocketAddr>>>,
}

impl Counting {
    fn start(addr: &str) -> Counting {
        let listener = TcpListener::bind(addr).unwrap();
        let local = listener.local_addr().unwrap();
        let peers = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&peers);
        thread::spawn(move || {
            for conn in listener.incoming() {
                if let Ok(peer) = conn.and_then(|c| c.peer_addr()) {
                    seen.lock().expect("lock").push(peer);
                }
            }
        });
        Counting { addr: local, peers }
    }

    /// How many connections were made before this call.
    fn settled(&self) -> usize {
        crate::util::connections_before_now(self.addr, &self.peers)
    }
}

fn done(out: &Outcome) -> serde_json::Value {
    out.json()
        .into_iter()
        .find(|e| e["event"] == "done")
        .expect("a done event")
}

const FAST: [&str; 4] = ["--base", "50ms", "--log-format", "json"];

fn args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut all = FAST.to_vec();
    all.extend_from_slice(extra);
    all
}

#[test]
fn a_listening_port_succeeds_at_once() {
    let listening = Counting::start("127.0.0.1:0");
    let target = listening.addr.to_string();
    let out = retry(args(&["--tcp", &target])).run();
    out.expect_code(0);
    assert_eq!(done(&out)["attempts"], 1);
    assert!(out.stdout.is_empty());
    // Closed at once, nothing sent: one connection.
    assert_eq!(listening.settled(), 1);
    let start = &out.json()[0];
    assert_eq!(start["command"][0], format!("tcp://{target}"));
}

#[test]
fn a_refused_port_is_retried_and_exits_7() {
    let target = format!("127.0.0.1:{}", free_port());
    let out = retry(args(&["--max=3", "--tcp", &target])).run();
    out.expect_code(7);
    let d = done(&out);
    assert_eq!(d["attempts"], 3);
    let reason = d["reason"].as_str().unwrap();
    assert!(reason.contains("could not connect"), "{reason}");
    assert!(reason.contains(&target), "{reason}");
}

/// `retry --max-time 30s --cap 200ms PROBE...` with `port` opened once
/// retry has failed on it: it succeeds, after two attempts or more.
#[track_caller]
fn opened_later(probe: &[&str], port: u16) {
    let dir = scratch();
    let log = dir.path().join("log");
    let log_arg = path_str(&log);
    let mut all = vec![
        "--max-time",
        "30s",
        "--cap",
        "200ms",
        "--log-file",
        &log_arg,
    ];
    all.extend_from_slice(probe);
    let running = retry(args(&all)).spawn();
    wait_for_line(&log, "\"outcome\":\"retryable\"", Duration::from_secs(20));
    let listener = TcpListener::bind(("127.0.0.1", port)).expect("the port is still free");
    let out = running.wait();
    drop(listener);
    out.expect_code(0);
    let text = std::fs::read_to_string(&log).expect("log");
    let done = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("JSON"))
        .find(|e| e["event"] == "done")
        .expect("a done event");
    assert!(done["attempts"].as_u64().unwrap() >= 2, "{text}");
}

#[test]
fn a_port_that_opens_later_is_waited_for() {
    let port = free_port();
    let target = format!("127.0.0.1:{port}");
    opened_later(&["--tcp", &target], port);
}

#[test]
fn every_target_must_accept_and_one_that_did_is_not_probed_again() {
    let up = Counting::start("127.0.0.1:0");
    let later = free_port();
    opened_later(
        &[
            "--tcp",
            &up.addr.to_string(),
            "--tcp",
            &format!("127.0.0.1:{later}"),
        ],
        later,
    );
    assert_eq!(up.settled(), 1, "the first target was probed again");
}

#[test]
fn an_ipv6_literal_is_probed_on_its_own_address() {
    let Some(listener) = crate::need::listener("[::1]:0") else {
        return;
    };
    let port = listener.local_addr().unwrap().port();
    let out = retry(args(&["--max=1", "--tcp", &format!("[::1]:{port}")])).run();
    out.expect_code(0);
    drop(listener);
    let out = retry(args(&["--max=1", "--tcp", &format!("[::1]:{port}")])).run();
    out.expect_code(7);
    assert!(done(&out)["reason"].as_str().unwrap().contains("[::1]"));
}

#[test]
fn a_silent_target_times_out_by_connect_timeout_with_28() {
    // A listener whose queue is full: the kernel drops further SYNs, so a
    // connect waits until it gives up.
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    socket
        .bind(&"127.0.0.1:0".parse::<SocketAddr>().unwrap().into())
        .unwrap();
    socket.listen(0).unwrap();
    let addr = socket.local_addr().unwrap().as_socket().unwrap();
    let mut queued = Vec::new();
    loop {
        match TcpStream::connect_timeout(&addr, Duration::from_millis(300)) {
            Ok(c) => queued.push(c),
            Err(_) => break,
        }
        assert!(queued.len() < 1000, "the queue never filled");
    }
    let out = retry(args(&[
        "--max=2",
        "--connect-timeout",
        "300ms",
        "--tcp",
        &addr.to_string(),
    ]))
    .run();
    out.expect_code(28);
    let d = done(&out);
    assert_eq!(d["attempts"], 2);
    assert!(
        d["reason"].as_str().unwrap().contains("connect timed out"),
        "{d}"
    );
    let attempt = out
        .json()
        .into_iter()
        .find(|e| e["event"] == "attempt")
        .unwrap();
    assert_eq!(attempt["outcome"], "timeout");
    // --timeout bounds the attempt as a whole, --max-time the run.
    let out = retry(args(&[
        "--max=1",
        "--max-time",
        "400ms",
        "--tcp",
        &addr.to_string(),
    ]))
    .run();
    out.expect_code(28);
    assert!(out.elapsed < Duration::from_secs(5), "{:?}", out.elapsed);
    drop(queued);
}

/// Runs `retry ARGS` in a private mount namespace where /etc/hosts is
/// `hosts` and the DNS server (127.0.0.1, where nothing answers on port 53)
/// fails at once. None, after saying why, where that cannot be made.
fn with_hosts(hosts: &str, args: &[&str]) -> Option<Outcome> {
    let dir = scratch();
    let hosts_file = dir.path().join("hosts");
    let resolv = dir.path().join("resolv.conf");
    std::fs::write(&hosts_file, hosts).unwrap();
    std::fs::write(
        &resolv,
        "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n",
    )
    .unwrap();
    let script = r#"hosts=$1; resolv=$2; shift 2
mount --bind "$hosts" /etc/hosts || exit 97
mount --bind "$resolv" /etc/resolv.conf || exit 98
exec "$@""#;
    let mut all = vec!["--mount", "--", "sh", "-c", script, "sh"];
    let hosts_arg = crate::util::path_str(&hosts_file);
    let resolv_arg = crate::util::path_str(&resolv);
    let bin = crate::util::path_str(crate::util::bin());
    all.extend([hosts_arg.as_str(), resolv_arg.as_str(), bin.as_str()]);
    all.extend_from_slice(args);
    let out = std::process::Command::new("unshare")
        .args(&all)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .output()
        .expect("unshare (util-linux)");
    let code = out.status.code().unwrap_or(-1);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    if (code == 1 && stderr.contains("unshare")) || code == 97 || code == 98 {
        crate::need::met(false, &format!("a private mount namespace: {stderr}"));
        return None;
    }
    Some(Outcome::from_output(out))
}

#[test]
fn a_name_with_several_addresses_is_tried_on_each() {
    // db.test has two addresses; only one listens, first the one, then the
    // other. Whatever order the resolver gives them in, one of the two runs
    // must get past a refusal to succeed.
    let hosts = "127.0.0.1 db.test\n127.0.0.2 db.test\n";
    for listening in ["127.0.0.1", "127.0.0.2"] {
        let Some(listener) = crate::need::listener(&format!("{listening}:0")) else {
            return;
        };
        drop(listener);
        // Not a port the kernel chose for 127.0.0.2: the same number may be
        // another test's server on 127.0.0.1, which would answer first.
        let port = free_port();
        let counting = Counting::start(&format!("{listening}:{port}"));
        let target = format!("db.test:{port}");
        let Some(out) = with_hosts(hosts, &args(&["--max=1", "--tcp", &target])) else {
            return;
        };
        out.expect_code(0);
        assert_eq!(counting.settled(), 1, "{listening}");
    }
    // No address accepts: the name and the address tried last are named.
    let free = free_port();
    let Some(out) = with_hosts(
        hosts,
        &args(&["--max=1", "--tcp", &format!("db.test:{free}")]),
    ) else {
        return;
    };
    out.expect_code(7);
    let reason = done(&out)["reason"].as_str().unwrap().to_string();
    assert!(
        reason.contains(&format!("db.test:{free} (127.0.0.")),
        "{reason}"
    );
}

#[test]
fn a_name_that_does_not_resolve_is_retried_and_exits_6() {
    let Some(out) = with_hosts(
        "127.0.0.1 localhost\n",
        &args(&["--max=2", "--tcp", "nowhere.test:5432"]),
    ) else {
        return;
    };
    out.expect_code(6);
    let d = done(&out);
    assert_eq!(d["attempts"], 2);
    assert!(d["reason"].as_str().unwrap().contains("DNS failure"), "{d}");
}

#[test]
fn dry_run_shows_the_targets() {
    let out = retry([
        "--dry-run",
        "--max=2",
        "--seed=1",
        "--tcp",
        "db:5432",
        "--tcp",
        "[::1]:6379",
    ])
    .run();
    out.expect_code(0);
    assert!(
        out.stdout_text()
            .contains("command: tcp://db:5432 'tcp://[::1]:6379'"),
        "{}",
        out.stdout_text()
    );
}

#[test]
fn shared_state_applies_to_tcp_mode() {
    let store = scratch();
    let target = format!("127.0.0.1:{}", free_port());
    let state = crate::util::path_str(store.path());
    let args = [
        "--max=1",
        "--group",
        "db",
        "--state",
        &state,
        "--breaker",
        "2:1m",
        "--tcp",
        &target,
    ];
    for _ in 0..2 {
        retry(["-q"].iter().chain(&args)).run().expect_code(7);
    }
    // Two failed runs opened the breaker: the third is refused unprobed.
    let out = retry(args).run();
    out.expect_code(75);
}

#[test]
fn bad_targets_and_mixed_modes_are_usage_errors() {
    for bad in ["db", "db:0", "db:99999", "::1:6379", "[db]:1", "db:x"] {
        let out = retry(["--tcp", bad]).run();
        out.expect_code(2);
        let err = out.stderr_text();
        assert!(err.contains("--tcp") && err.contains(bad), "{err}");
        assert!(err.contains("HOST:PORT"), "{err}");
    }
    for (extra, names) in [
        (&["--", "true"][..], "COMMAND"),
        (&["--http", "http://127.0.0.1:9/"], "--http"),
        (&["--expect", "200"], "--expect"),
        (&["--retry-on", "1"], "--retry-on"),
        (
            &["--timeout", "1s", "--stop-signal", "INT"],
            "--stop-signal",
        ),
        (&["--idle-timeout", "1s"], "--idle-timeout"),
        (&["--simulate", "3", "--outage", "1s"], "--tcp"),
    ] {
        let mut all = vec!["--tcp", "127.0.0.1:9"];
        all.extend_from_slice(extra);
        let out = retry(&all).run();
        out.expect_code(2);
        assert!(
            out.stderr_text().contains(names),
            "{extra:?}: {}",
            out.stderr_text()
        );
    }
    // Every flag that means something only to HTTP mode is refused by name.
    for http_only in [
        &["--method", "GET"][..],
        &["--header", "a: b"],
        &["--data", "x"],
        &["--data-binary", "x"],
        &["--max-redirs", "3"],
        &["--json", "{}"],
        &["--retry-after-max", "1s"],
        &["--cacert", "./ca.pem"],
        &["--insecure"],
        &["--output", "./out"],
        &["--expect", "200"],
        &["--retry-status", "5xx"],
        &["--idempotency-key", "auto"],
        &["--retry-non-idempotent"],
    ] {
        let mut all = vec!["--tcp", "127.0.0.1:9"];
        all.extend_from_slice(http_only);
        let out = retry(&all).run();
        out.expect_code(2);
        let want = format!("{} applies only to HTTP mode, not to --tcp", http_only[0]);
        assert!(out.stderr_text().contains(&want), "{}", out.stderr_text());
    }
    // --connect-timeout is TCP mode's as much as HTTP mode's.
    let out = retry(["--tcp", "127.0.0.1:9", "--connect-timeout", "0"]).run();
    out.expect_code(2);
    assert!(out.stderr_text().contains("--connect-timeout"));
}
