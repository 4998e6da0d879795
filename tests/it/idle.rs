//! `--idle-timeout` in command mode: an attempt silent on stdout and
//! stderr for DUR is stopped exactly as `--timeout` stops one; a command
//! that keeps talking never is.

use std::io::Read;
use std::process::Stdio;
use std::time::Duration;

use crate::util::{command, gone_within, path_str, read_pid, retry_sh, scratch};

const SETTLE: Duration = Duration::from_secs(5);

#[test]
fn a_silent_attempt_is_stopped_retried_and_ends_with_124() {
    let dir = scratch();
    let pids = dir.path().join("pids");
    // It says one thing, then nothing; a background job shares its group.
    let script = format!(
        "echo started; sleep 30 & echo $! >> {0}; echo $$ >> {0}; sleep 30",
        path_str(&pids)
    );
    let out = retry_sh(
        &[
            "--max=2",
            "--base",
            "10ms",
            "--idle-timeout",
            "500ms",
            "--log-format",
            "json",
        ],
        &script,
    )
    .run();
    out.expect_code(124);
    assert_eq!(out.stdout_text(), "started\nstarted\n");
    let attempts: Vec<_> = out
        .json()
        .into_iter()
        .filter(|e| e["event"] == "attempt")
        .collect();
    assert_eq!(attempts.len(), 2);
    for a in &attempts {
        assert_eq!(a["outcome"], "timeout", "{a}");
        assert!(a["reason"].as_str().unwrap().contains("idle"), "{a}");
    }
    for pid in std::fs::read_to_string(&pids).unwrap().lines() {
        let pid: i32 = pid.trim().parse().unwrap();
        assert!(
            gone_within(pid, SETTLE),
            "process {pid} outlived its attempt"
        );
    }
    assert!(out.elapsed < Duration::from_secs(6), "{:?}", out.elapsed);
    let text = retry_sh(&["--max=1", "--idle-timeout", "300ms"], "sleep 30").run();
    text.expect_code(124);
    assert!(
        text.stderr_text()
            .contains("idle: no output for --idle-timeout"),
        "{}",
        text.stderr_text()
    );
}

#[test]
fn a_command_that_keeps_talking_is_never_stopped() {
    // Two seconds of a line every 100 ms, with a 500 ms idle limit; on
    // stderr as much as on stdout.
    let script =
        "i=0; while [ $i -lt 20 ]; do echo tick $i >&$((1 + i % 2)); sleep 0.1; i=$((i+1)); done";
    let out = retry_sh(&["--max=1", "--idle-timeout", "500ms"], script).run();
    out.expect_code(0);
    assert_eq!(out.stdout_text().lines().count(), 10);
    assert!(out.elapsed >= Duration::from_secs(2), "{:?}", out.elapsed);
}

#[test]
fn a_child_that_ignores_the_stop_signal_is_killed_after_kill_after() {
    let dir = scratch();
    let pid_file = dir.path().join("pid");
    let script = format!("trap '' TERM; echo $$ > {}; sleep 30", path_str(&pid_file));
    let out = retry_sh(
        &[
            "--max=1",
            "--idle-timeout",
            "300ms",
            "--kill-after",
            "600ms",
        ],
        &script,
    )
    .run();
    out.expect_code(124);
    assert!(
        out.elapsed >= Duration::from_millis(850),
        "{:?}",
        out.elapsed
    );
    assert!(out.elapsed < Duration::from_secs(5), "{:?}", out.elapsed);
    assert!(gone_within(read_pid(&pid_file), SETTLE));
}

#[test]
fn no_retry_on_timeout_makes_an_idle_attempt_permanent() {
    let out = retry_sh(
        &[
            "--max=3",
            "--idle-timeout",
            "200ms",
            "--no-retry-on-timeout",
        ],
        "sleep 30",
    )
    .run();
    out.expect_code(124);
    assert!(
        out.stderr_text().contains("giving up after 1 attempt"),
        "{}",
        out.stderr_text()
    );
}

#[test]
fn a_reader_that_is_slow_does_not_make_the_command_idle() {
    // The command writes 8 MiB at once and exits; nobody reads retry's
    // stdout for 1.5 s, three idle limits: the command is blocked writing,
    // not silent.
    let mut child = command()
        .args([
            "--max=1",
            "--idle-timeout",
            "500ms",
            "--",
            "head",
            "-c",
            "8388608",
            "/dev/zero",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let mut stdout = child.stdout.take().unwrap();
    let mut all = Vec::new();
    stdout.read_to_end(&mut all).unwrap();
    let status = crate::util::exit_within(&mut child, Duration::from_secs(20));
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_eq!(status.code(), Some(0), "{err}");
    assert_eq!(all.len(), 8 << 20);
}

#[test]
fn idle_timeout_comes_from_the_environment_too() {
    let out = retry_sh(&["--max=1"], "sleep 30")
        .env("RETRY_IDLE_TIMEOUT", "300ms")
        .run();
    out.expect_code(124);
    let out = retry_sh(&["--max=1"], "true")
        .env("RETRY_IDLE_TIMEOUT", "soon")
        .run();
    out.expect_code(2);
    assert!(
        out.stderr_text()
            .contains("RETRY_IDLE_TIMEOUT (--idle-timeout)"),
        "{}",
        out.stderr_text()
    );
}
