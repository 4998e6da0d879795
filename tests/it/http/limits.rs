//! What bounds an HTTP run: job control, a DNS server that never answers,
//! `--max-time`.

use super::*;

// ---- job control ---------------------------------------------------------------

#[test]
fn ctrl_z_suspends_an_http_run_until_it_is_continued() {
    use nix::sys::signal::Signal;
    let s = Server::start(vec![reply(200).body("late").delay(Duration::from_secs(1))]);
    let running = crate::util::retry(["--http", &s.url]).spawn();
    assert_eq!(s.hits_at_least(1), 1);
    running.signal(Signal::SIGTSTP);
    let pid = running.pid().as_raw();
    let stopped = |pid: i32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|st| {
                st.rsplit(')')
                    .next()
                    .map(|r| r.trim_start().starts_with('T'))
            })
            .unwrap_or(false)
    };
    let until = Instant::now() + Duration::from_secs(5);
    while !stopped(pid) && Instant::now() < until {
        thread::sleep(Duration::from_millis(10));
    }
    assert!(stopped(pid), "retry did not stop on SIGTSTP");
    // Still stopped well after the response is ready.
    thread::sleep(Duration::from_millis(1500));
    assert!(stopped(pid), "retry went on while suspended");
    running.signal(Signal::SIGCONT);
    let out = running.wait();
    out.expect_code(0);
    assert_eq!(out.stdout_text(), "late");
}

// ---- a DNS server that never answers ----------------------------------------

/// Runs `retry ARGS` in a private network and mount namespace whose
/// resolv.conf names 127.0.0.1, where a UDP socket is bound that reads
/// nothing and answers nothing: the resolver waits its full 30 s. Returns
/// the exit status, stderr, and how long retry took after its last log line;
/// None (after saying why) where namespaces cannot be made.
fn with_silent_dns(args: &[&str]) -> Option<(i32, String, Duration)> {
    let dir = tempfile::tempdir().expect("tempdir");
    let resolv = dir.path().join("resolv.conf");
    std::fs::write(
        &resolv,
        "nameserver 127.0.0.1\noptions timeout:30 attempts:1\n",
    )
    .expect("write resolv.conf");
    // The socket is bound before retry starts, and held until it ends.
    let silent = "import socket, subprocess, sys\n\
                  s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n\
                  s.bind(('127.0.0.1', 53))\n\
                  sys.exit(subprocess.call(sys.argv[1:]))\n";
    let script = r#"resolv=$1; py=$2; shift 2
ip link set lo up || exit 97
mount --bind "$resolv" /etc/resolv.conf || exit 98
exec python3 -c "$py" "$@""#;
    let mut child = std::process::Command::new("unshare")
        .args(["--mount", "--net", "--", "sh", "-c", script, "sh"])
        .arg(&resolv)
        .arg(silent)
        .arg(crate::util::bin())
        .args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn unshare (util-linux)");
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    thread::spawn(move || {
        let mut all = String::new();
        let mut last_line_at = Instant::now();
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            last_line_at = Instant::now();
            all.push_str(&line);
            all.push('\n');
        }
        let _ = tx.send((all, last_line_at));
    });
    let status = child.wait().expect("wait");
    let exited = Instant::now();
    let (stderr, last_line_at) = rx.recv_timeout(Duration::from_secs(60)).expect("stderr");
    let code = status.code().unwrap_or(-1);
    if (code == 1 && stderr.contains("unshare")) || code == 97 || code == 98 {
        crate::need::met(
            false,
            &format!("a private network and mount namespace: {stderr}"),
        );
        return None;
    }
    Some((code, stderr, exited.saturating_duration_since(last_line_at)))
}

/// The silent resolver would wait 30 s: retry must leave its lookup
/// behind, end well within that, and exit soon after its last line.
fn assert_lookup_left_behind(label: &str, started: Instant, after: Duration) {
    let took = started.elapsed();
    assert!(took < Duration::from_secs(10), "{label} took {took:?}");
    assert!(
        after < Duration::from_millis(500),
        "{label} exited {after:?} after its last line"
    );
}

#[test]
fn a_dns_lookup_that_hangs_does_not_hold_retry_after_a_timeout() {
    let started = Instant::now();
    let Some((code, stderr, after)) = with_silent_dns(&[
        "--http",
        "http://hung.example:9/",
        "--timeout",
        "1s",
        "-n",
        "2",
        "-b",
        "10ms",
    ]) else {
        return;
    };
    assert_eq!(code, 28, "{stderr}");
    assert!(stderr.contains("giving up after 2 attempts"), "{stderr}");
    assert_lookup_left_behind("", started, after);
}

#[test]
fn a_dns_lookup_that_hangs_is_bounded_by_connect_timeout_and_max_time() {
    for limit in [["--connect-timeout", "1s"], ["--max-time", "1s"]] {
        let started = Instant::now();
        let mut args = vec!["--http", "http://hung.example:9/", "-n", "1"];
        args.extend(limit);
        let Some((code, stderr, after)) = with_silent_dns(&args) else {
            return;
        };
        assert_eq!(code, 28, "{limit:?}: {stderr}");
        assert_lookup_left_behind(&format!("{limit:?}"), started, after);
    }
}

/// `--state-show` reads the store within its time limit: a Redis name
/// whose lookup hangs fails there, and the lookup left behind does not
/// hold retry's exit.
#[test]
fn a_dns_lookup_that_hangs_does_not_hold_state_show_past_its_limit() {
    let started = Instant::now();
    let Some((code, stderr, after)) = with_silent_dns(&[
        "--state-show",
        "--group",
        "g",
        "--state",
        "redis://hung.example:6379",
    ]) else {
        return;
    };
    assert_eq!(code, 125, "{stderr}");
    assert!(stderr.contains("cannot connect"), "{stderr}");
    assert_lookup_left_behind("", started, after);
}

#[test]
fn an_attempt_stopped_by_max_time_is_a_deadline_in_the_log() {
    let s = Server::start(vec![reply(200).delay(Duration::from_secs(5))]);
    let r = retry(&[
        "--http",
        &s.url,
        "--max-time",
        "300ms",
        "--log-format",
        "json",
    ]);
    assert_eq!(r.code, 28, "{}", r.stderr);
    let attempt: serde_json::Value = r
        .stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["event"] == "attempt")
        .expect("an attempt event");
    assert_eq!(attempt["outcome"], "deadline", "{}", r.stderr);
    // The run's end too, as in command mode.
    let done: serde_json::Value = r
        .stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["event"] == "done")
        .expect("a done event");
    assert_eq!(done["outcome"], "deadline", "{}", r.stderr);
    assert_eq!(
        done["reason"], "--max-time ran out during the attempt",
        "{}",
        r.stderr
    );
    let s = Server::start(vec![reply(200).delay(Duration::from_secs(5))]);
    let r = retry(&["--http", &s.url, "--max-time", "300ms"]);
    assert_eq!(r.code, 28, "{}", r.stderr);
    assert!(
        r.stderr.contains("--max-time ran out during the attempt"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("is not retried"), "{}", r.stderr);
}

#[test]
fn a_connect_timeout_is_named_without_the_word_deadline() {
    // A listener whose queue is full: the kernel drops further SYNs, so the
    // connect waits until --connect-timeout. "deadline" is --max-time's
    // word in retry's log: a connect timeout must not borrow it.
    let socket =
        socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).expect("socket");
    let any: std::net::SocketAddr = "127.0.0.1:0".parse().expect("addr");
    socket.bind(&any.into()).expect("bind");
    socket.listen(0).expect("listen");
    let addr = socket
        .local_addr()
        .expect("addr")
        .as_socket()
        .expect("inet");
    let mut queued = Vec::new();
    while let Ok(c) = TcpStream::connect_timeout(&addr, Duration::from_millis(300)) {
        queued.push(c);
        assert!(queued.len() < 1000, "the queue never filled");
    }
    let url = format!("http://{addr}/");
    let r = retry(&["--http", &url, "-n", "1", "--connect-timeout", "300ms"]);
    assert_eq!(r.code, 28, "{}", r.stderr);
    assert!(
        r.stderr.contains("connect timed out by --connect-timeout"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("deadline"), "{}", r.stderr);
}
