//! Process supervision end to end: timeouts that reach the whole process
//! group, signals forwarded and remembered, stdin replay, --foreground.

use std::time::Duration;

use nix::sys::signal::Signal;

use crate::util::{
    alive, gone_within, path_str, read_pid, retry, retry_sh, scratch, wait_for_file,
};

const SETTLE: Duration = Duration::from_secs(5);

#[test]
fn timeout_leaves_no_grandchild_running() {
    let dir = scratch();
    let pids = dir.path().join("pids");
    // A background job and a foreground grandchild, both in the attempt's group.
    let script = format!(
        "sleep 30 & echo $! >> {0}; sh -c 'echo $$ >> {0}; sleep 30'",
        path_str(&pids)
    );
    let out = retry_sh(&["--max", "1", "--timeout", "300ms"], &script).run();
    out.expect_code(124);
    let text = std::fs::read_to_string(&pids).expect("pids");
    let all: Vec<i32> = text
        .lines()
        .map(|l| l.trim().parse().expect("pid"))
        .collect();
    assert_eq!(all.len(), 2);
    for pid in all {
        assert!(
            gone_within(pid, SETTLE),
            "process {pid} outlived the timed-out attempt"
        );
    }
    assert!(out.elapsed < Duration::from_secs(4), "{:?}", out.elapsed);
}

#[test]
fn a_child_that_ignores_term_is_killed_after_kill_after() {
    let dir = scratch();
    let pid_file = dir.path().join("pid");
    let script = format!("trap '' TERM; echo $$ > {}; sleep 30", path_str(&pid_file));
    let out = retry_sh(
        &["--max", "1", "--timeout", "200ms", "--kill-after", "600ms"],
        &script,
    )
    .run();
    out.expect_code(124);
    // 200 ms to the timeout, then 600 ms of ignored TERM before KILL.
    assert!(
        out.elapsed >= Duration::from_millis(750),
        "{:?}",
        out.elapsed
    );
    assert!(out.elapsed < Duration::from_secs(4), "{:?}", out.elapsed);
    assert!(gone_within(read_pid(&pid_file), SETTLE));
}

#[test]
fn stop_signal_is_what_the_group_gets_on_timeout() {
    let script = "trap 'echo got INT; exit 3' INT; sleep 30 & wait";
    let out = retry_sh(
        &["--max", "1", "--timeout", "200ms", "--stop-signal", "INT"],
        script,
    )
    .run();
    out.expect_code(124);
    assert_eq!(out.stdout_text(), "got INT\n");
}

#[test]
fn timed_out_attempts_are_retried_unless_told_otherwise() {
    let out = retry_sh(
        &[
            "--max",
            "2",
            "--timeout",
            "100ms",
            "--base",
            "1ms",
            "--cap",
            "1ms",
        ],
        "echo run; sleep 5",
    )
    .run();
    out.expect_code(124);
    assert_eq!(out.stdout_text(), "run\nrun\n");
    let out = retry_sh(
        &["--max", "2", "--timeout", "100ms", "--no-retry-on-timeout"],
        "echo run; sleep 5",
    )
    .run();
    out.expect_code(124);
    assert_eq!(out.stdout_text(), "run\n");
}

/// Start retry on a script that writes `ready` once its trap is set.
fn start_trapping(extra: &[&str], trap: &str) -> (crate::util::Running, tempfile::TempDir) {
    let dir = scratch();
    let ready = dir.path().join("ready");
    let script = format!(
        "{trap}; echo $$ > {}; while :; do sleep 0.05; done",
        path_str(&ready)
    );
    let mut args = vec!["--base", "1ms", "--cap", "1ms"];
    args.extend_from_slice(extra);
    let running = retry_sh(&args, &script).spawn();
    wait_for_file(&ready, SETTLE);
    (running, dir)
}

#[test]
fn sigterm_is_forwarded_and_ends_the_run_with_143() {
    let (running, dir) = start_trapping(&[], "trap 'echo child got TERM; exit 0' TERM");
    let child = read_pid(&dir.path().join("ready"));
    running.signal(Signal::SIGTERM);
    let out = running.wait();
    out.expect_code(143);
    assert_eq!(
        out.stdout_text(),
        "child got TERM\n",
        "no new attempt may start"
    );
    assert!(
        out.stderr_text()
            .contains("interrupted by SIGTERM during attempt 1/5")
    );
    assert!(gone_within(child, SETTLE));
}

#[test]
fn hup_int_and_quit_are_forwarded_with_their_own_status() {
    for (sig, name, code) in [
        (Signal::SIGHUP, "HUP", 129),
        (Signal::SIGINT, "INT", 130),
        (Signal::SIGQUIT, "QUIT", 131),
    ] {
        let trap = format!("trap 'echo child got {name}; exit 0' {name}");
        let (running, _dir) = start_trapping(&[], &trap);
        running.signal(sig);
        let out = running.wait();
        out.expect_code(code);
        assert_eq!(out.stdout_text(), format!("child got {name}\n"));
    }
}

#[test]
fn usr1_is_forwarded_without_ending_the_run() {
    let (running, dir) = start_trapping(&["--max", "1"], "trap 'echo child got USR1; exit 6' USR1");
    let _ = dir;
    running.signal(Signal::SIGUSR1);
    let out = running.wait();
    // Not an interrupt: the child's own exit code comes back.
    out.expect_code(6);
    assert_eq!(out.stdout_text(), "child got USR1\n");
}

#[test]
fn a_child_that_ignores_a_forwarded_term_is_killed_after_kill_after() {
    let (running, dir) = start_trapping(&["--kill-after", "500ms"], "trap '' TERM");
    let child = read_pid(&dir.path().join("ready"));
    let sent = std::time::Instant::now();
    running.signal(Signal::SIGTERM);
    let out = running.wait();
    out.expect_code(143);
    assert!(sent.elapsed() >= Duration::from_millis(450));
    assert!(gone_within(child, SETTLE));
}

#[test]
fn an_interrupt_cuts_the_backoff_sleep_short() {
    let dir = scratch();
    let log = dir.path().join("log");
    let running = retry_sh(
        &[
            "--base",
            "30s",
            "--jitter",
            "none",
            "--log-format",
            "json",
            "--log-file",
            &path_str(&log),
        ],
        "exit 1",
    )
    .spawn();
    // The first attempt has failed and the sleep has begun.
    crate::util::wait_for_line(&log, crate::util::SLEEP_EVENT, Duration::from_secs(20));
    running.signal(Signal::SIGTERM);
    let out = running.wait();
    out.expect_code(143);
    assert!(out.elapsed < Duration::from_secs(10), "{:?}", out.elapsed);
    assert!(
        out.stderr_text()
            .contains("while waiting to start attempt 2/5"),
        "{}",
        out.stderr_text()
    );
}

#[test]
fn leftover_background_jobs_are_stopped_when_the_attempt_ends() {
    let dir = scratch();
    let pid_file = dir.path().join("bg");
    let script = format!("sleep 30 & echo $! > {}; exit 1", path_str(&pid_file));
    let out = retry_sh(&["--max", "1"], &script).run();
    out.expect_code(1);
    assert!(gone_within(read_pid(&pid_file), SETTLE));
}

#[test]
fn the_child_runs_in_its_own_process_group_unless_foreground() {
    let script = "read -r _ _ _ _ pgrp _ < /proc/$$/stat; read -r _ _ _ _ ppgrp _ < /proc/$PPID/stat; [ $pgrp = $ppgrp ] && echo same || echo own";
    let out = retry_sh(&["--max", "1"], script).run();
    assert_eq!(out.stdout_text(), "own\n");
    let out = retry_sh(&["--max", "1", "--foreground"], script).run();
    assert_eq!(out.stdout_text(), "same\n");
}

#[test]
fn foreground_timeout_still_stops_the_child() {
    let out = retry([
        "--foreground",
        "--max",
        "1",
        "--timeout",
        "200ms",
        "--",
        "sleep",
        "10",
    ])
    .run();
    out.expect_code(124);
    assert!(out.elapsed < Duration::from_secs(4));
}

#[test]
fn replay_stdin_gives_every_attempt_the_same_bytes() {
    let out = retry_sh(
        &[
            "--replay-stdin",
            "--max",
            "3",
            "--base",
            "1ms",
            "--cap",
            "1ms",
        ],
        "cat; exit 1",
    )
    .stdin(b"line one\nline two\n\0\xff".to_vec())
    .run();
    out.expect_code(1);
    assert_eq!(out.stdout, b"line one\nline two\n\0\xff".repeat(3));
}

#[test]
fn without_replay_the_first_attempt_consumes_stdin() {
    let out = retry_sh(
        &["--max", "2", "--base", "1ms", "--cap", "1ms"],
        "cat; exit 1",
    )
    .stdin(b"once\n".to_vec())
    .run();
    assert_eq!(out.stdout_text(), "once\n");
}

#[test]
fn replay_of_a_large_input_keeps_memory_flat() {
    let size = 100 * 1024 * 1024;
    let input = vec![b'z'; size];
    // The child reports the input size and retry's peak memory (its parent's).
    let script = "wc -c; grep VmHWM /proc/$PPID/status; exit 1";
    let out = retry_sh(
        &[
            "--replay-stdin",
            "--max",
            "2",
            "--base",
            "1ms",
            "--cap",
            "1ms",
        ],
        script,
    )
    .stdin(input)
    .run();
    out.expect_code(1);
    let text = out.stdout_text();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert_eq!(lines[0].trim(), size.to_string());
    assert_eq!(lines[2].trim(), size.to_string());
    let hwm_kib: u64 = lines[3]
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .expect("VmHWM");
    // The memory buffer is 8 MiB; anything near the 100 MiB input means it was held.
    assert!(hwm_kib < 32 * 1024, "retry peaked at {hwm_kib} KiB");
}

#[test]
fn no_orphan_when_the_child_ignores_everything_but_kill() {
    let dir = scratch();
    let pids = dir.path().join("pids");
    let script = format!(
        "trap '' TERM INT HUP; (trap '' TERM; sleep 30) & echo $! >> {0}; echo $$ >> {0}; wait",
        path_str(&pids)
    );
    let out = retry_sh(
        &["--max", "1", "--timeout", "200ms", "--kill-after", "200ms"],
        &script,
    )
    .run();
    out.expect_code(124);
    for line in std::fs::read_to_string(&pids).expect("pids").lines() {
        let pid: i32 = line.trim().parse().expect("pid");
        assert!(gone_within(pid, SETTLE), "{pid} survived");
    }
    let _ = alive;
}

/// The process state letter from /proc (R, S, T for stopped, ...).
fn state(pid: i32) -> String {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat.rsplit(')')
        .next()
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or("?")
        .to_string()
}

#[track_caller]
fn wait_for_state(pid: i32, want: &str) {
    let until = std::time::Instant::now() + SETTLE;
    while state(pid) != want {
        assert!(
            std::time::Instant::now() < until,
            "pid {pid} is {} not {want}",
            state(pid)
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn ctrl_z_suspends_the_child_with_retry_and_fg_resumes_both() {
    // The child forks nothing once it is ready: a shell that vforks is held
    // unstoppable (state D) while its child, stopped before its exec, holds
    // it, and a loop of `sleep` would give the stop that moment to land in.
    let dir = scratch();
    let ready = dir.path().join("ready");
    let script = format!(
        "trap 'exit 5' TERM; sleep 1000 & echo $$ > {}; wait",
        path_str(&ready)
    );
    let running = retry_sh(&["--max", "1"], &script).spawn();
    wait_for_file(&ready, SETTLE);
    let child = read_pid(&ready);
    let retry_pid = running.pid().as_raw();
    running.signal(Signal::SIGTSTP);
    wait_for_state(retry_pid, "T");
    wait_for_state(child, "T");
    running.signal(Signal::SIGCONT);
    // Resumed: the child waits again (sleeping, not stopped).
    let until = std::time::Instant::now() + SETTLE;
    while state(child) == "T" {
        assert!(std::time::Instant::now() < until, "child still stopped");
        std::thread::sleep(Duration::from_millis(10));
    }
    running.signal(Signal::SIGTERM);
    running.wait().expect_code(143);
}
