//! How an attempt is stopped: `--timeout`, `--idle-timeout` and `--max-time`,
//! never retried once part of the body has reached stdout; a closed stdout.

use super::*;

/// A server that sends 25 of 100 bytes and stalls, once; then answers in
/// full.
fn stalls_once() -> Server {
    let body = "x".repeat(100);
    Server::start(vec![
        reply(200)
            .body(&body)
            .stall_after(25, Duration::from_secs(8)),
        reply(200).body(&body),
    ])
}

#[test]
fn a_timeout_after_the_body_began_on_stdout_ends_the_run() {
    for stop in [
        &["-t", "1s"][..],
        &["--idle-timeout", "500ms"][..],
        &["--max-time", "1s"][..],
    ] {
        let s = stalls_once();
        let mut args = vec!["--max", "3", "--base", "10ms", "--http", &s.url];
        args.extend_from_slice(stop);
        let r = retry(&args);
        assert_eq!(r.code, 28, "{stop:?}: {}", r.stderr);
        // What the reader got is the start of one body, nothing appended.
        assert_eq!(r.stdout, "x".repeat(25), "{stop:?}");
        assert_eq!(s.hits(), 1, "{stop:?}: {}", r.stderr);
        assert!(
            r.stderr.contains("after part of the body was written out"),
            "{stop:?}: {}",
            r.stderr
        );
        assert!(
            r.took < Duration::from_secs(6),
            "{stop:?}: took {:?}",
            r.took
        );
    }
}

#[test]
fn the_same_stall_with_output_to_a_file_is_retried() {
    let s = stalls_once();
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("body");
    let r = retry(&[
        "--max",
        "3",
        "--base",
        "10ms",
        "--idle-timeout",
        "500ms",
        "--http",
        &s.url,
        "-o",
        file.to_str().expect("utf-8"),
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(s.hits(), 2);
    assert_eq!(std::fs::read(&file).expect("body"), vec![b'x'; 100]);
    assert!(
        r.stderr.contains("timed out by --idle-timeout"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_server_that_never_answers_is_given_up_on_after_the_idle_timeout() {
    let s = Server::start(vec![reply(200).delay(Duration::from_secs(20))]);
    let r = retry(&[
        "--http",
        &s.url,
        "--idle-timeout",
        "300ms",
        "-n",
        "2",
        "-b",
        "10ms",
        "--max-time",
        "30s",
    ]);
    assert_eq!(r.code, 28, "{}", r.stderr);
    assert_eq!(s.hits_at_least(2), 2, "{}", r.stderr);
    assert!(r.took < Duration::from_secs(10), "took {:?}", r.took);
    assert!(
        r.stderr
            .contains("timed out by --idle-timeout: nothing received for 300ms"),
        "{}",
        r.stderr
    );
    // The environment variable sets it too.
    let s = Server::start(vec![reply(200).delay(Duration::from_secs(20))]);
    let r = retry_env(
        &["--http", &s.url, "-n", "1"],
        &[("RETRY_IDLE_TIMEOUT", "300ms")],
    );
    assert_eq!(r.code, 28, "{}", r.stderr);
    assert!(r.took < Duration::from_secs(10), "took {:?}", r.took);
}

#[test]
fn a_slow_download_that_keeps_moving_is_not_cut() {
    // 30 pieces, 100 ms apart: three seconds in all, three times the idle
    // timeout, never quiet for more than a tenth of it (a loaded machine
    // may stretch a gap, not tenfold).
    let body = "0123456789".repeat(30);
    let s = Server::start(vec![
        reply(200).body(&body).drip(10, Duration::from_millis(100)),
    ]);
    let r = retry(&["--http", &s.url, "--idle-timeout", "1s", "-n", "1"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, body);
    assert!(r.took >= Duration::from_secs(2), "took {:?}", r.took);
}

#[test]
fn an_idle_timeout_of_zero_is_none() {
    let s = Server::start(vec![
        reply(200).body("late").delay(Duration::from_millis(1500)),
    ]);
    let r = retry(&["--http", &s.url, "--idle-timeout", "0", "-n", "1"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, "late");
}

#[test]
fn idle_timeout_is_accepted_with_a_command() {
    // Its meaning for a command's output is its own; here, only that the
    // flag is one for both modes.
    let r = retry(&["--idle-timeout", "5s", "-n", "1", "--", "true"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
}

#[test]
fn a_closed_stdout_exits_23_as_curl_does() {
    let s = Server::start(vec![reply(200).body("lost?")]);
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg("exec \"$0\" --max 2 -b 10ms --http \"$1\" >&-")
        .arg(crate::util::bin())
        .arg(&s.url)
        .env_clear()
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run retry through sh");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(23), "{stderr}");
    assert!(stderr.contains("stdout is closed"), "{stderr}");
    // A local failure: not retried.
    assert_eq!(s.hits(), 1);
    // Sent to /dev/null on purpose, the body is delivered there.
    let s = Server::start(vec![reply(200).body("gone")]);
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg("exec \"$0\" --http \"$1\" >/dev/null")
        .arg(crate::util::bin())
        .arg(&s.url)
        .env_clear()
        .output()
        .expect("run retry through sh");
    assert_eq!(out.status.code(), Some(0));
}

/// `retry ARGS` with its stdout a pipe into `sleep 60`, which never reads.
fn into_a_stopped_reader(args: &[&str]) -> crate::util::Running {
    crate::util::retry(args).spawn_into_sleep()
}

/// Five times what a pipe holds: the write blocks once the reader stops.
const BIG: usize = 5 * 1024 * 1024;

#[test]
fn max_time_ends_a_body_write_that_its_reader_stopped_taking() {
    let s = Server::start(vec![reply(200).generated(BIG)]);
    let out = into_a_stopped_reader(&["--max-time", "2s", "--http", &s.url]).wait();
    // Before, the write held the run until the reader went (exit 23).
    assert!(
        out.elapsed < Duration::from_secs(8),
        "took {:?}",
        out.elapsed
    );
    out.expect_code(28);
    let err = out.stderr_text();
    assert!(
        err.contains("stopped at --max-time after part of the body was written out"),
        "{err}"
    );
}

#[test]
fn sigterm_ends_a_body_write_that_its_reader_stopped_taking() {
    let s = Server::start(vec![reply(200).generated(BIG)]);
    let run = into_a_stopped_reader(&["--http", &s.url]);
    std::thread::sleep(Duration::from_millis(1500));
    let sent = Instant::now();
    run.signal(nix::sys::signal::Signal::SIGTERM);
    let out = run.wait();
    assert!(
        sent.elapsed() < Duration::from_secs(6),
        "took {:?}",
        sent.elapsed()
    );
    out.expect_code(143);
}

#[test]
fn max_time_ends_a_body_write_to_a_fifo_whose_reader_stopped() {
    let s = Server::start(vec![reply(200).generated(BIG)]);
    let dir = crate::util::scratch();
    let fifo = dir.path().join("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).expect("mkfifo");
    // A reader that opens the FIFO and never reads it: this test.
    let reader = nix::fcntl::open(
        &fifo,
        nix::fcntl::OFlag::O_RDONLY | nix::fcntl::OFlag::O_NONBLOCK,
        nix::sys::stat::Mode::empty(),
    )
    .expect("open the FIFO for reading");
    let fifo = fifo.to_str().expect("utf-8");
    // Bounded by the harness: before, this write waited for the reader.
    let out = crate::util::retry(["--max-time", "2s", "--http", &s.url, "-o", fifo])
        .spawn()
        .wait();
    assert!(
        out.elapsed < Duration::from_secs(8),
        "took {:?}",
        out.elapsed
    );
    out.expect_code(28);
    let err = out.stderr_text();
    assert!(
        err.contains("after part of the body was written out"),
        "{err}"
    );
    drop(reader);
}

#[test]
fn a_reader_that_pauses_is_not_the_servers_silence() {
    // The reader takes nothing for 2 s, four times --idle-timeout, while
    // the server has long sent everything: the body arrives whole.
    let body = content(1024 * 1024);
    let s = Server::start(vec![reply(200).resource(&body, None, false)]);
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg("set -o pipefail; \"$0\" --idle-timeout 500ms -n 1 --http \"$1\" | { sleep 2; cat; }")
        .arg(crate::util::bin())
        .arg(&s.url)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run retry through sh");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(out.stdout == *body, "the body arrived altered: {stderr}");
}
