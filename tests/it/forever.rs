//! Supervising a long-running command with `--forever`: backoff for a
//! command that keeps dying, and a clean end on SIGTERM with nothing left
//! behind.

use std::time::Duration;

use nix::sys::signal::Signal;

use crate::util::{gone_within, path_str, retry, retry_sh, scratch, wait_for_file};

#[test]
fn a_command_that_dies_at_once_backs_off_until_max_time() {
    let out = retry([
        "--forever",
        "--max-time",
        "1.5s",
        "--base",
        "20ms",
        "--jitter",
        "none",
        "--log-format",
        "json",
        "--",
        "false",
    ])
    .run();
    out.expect_code(1);
    let ceilings: Vec<f64> = out
        .json()
        .iter()
        .filter(|e| e["event"] == "sleep")
        .map(|e| e["ceiling_ms"].as_f64().expect("ceiling_ms"))
        .collect();
    assert!(ceilings.len() >= 4, "{ceilings:?}");
    assert_eq!(&ceilings[..4], &[20.0, 40.0, 80.0, 160.0]);
    // Five doublings from 20 ms already exceed the 1.5 s: far from a busy loop.
    assert!(ceilings.len() <= 7, "{ceilings:?}");
}

#[test]
fn sigterm_ends_supervision_with_no_orphan() {
    let dir = scratch();
    let pids = dir.path().join("pids");
    // Each attempt starts a grandchild and stays up a little, then fails.
    let script = format!(
        "sleep 30 & echo $$ $! >> {}; sleep 0.2; exit 1",
        path_str(&pids)
    );
    let running = retry_sh(&["--forever", "--base", "10ms", "--cap", "10ms"], &script).spawn();
    wait_for_file(&pids, Duration::from_secs(5));
    // Let it go round a few times.
    std::thread::sleep(Duration::from_millis(700));
    running.signal(Signal::SIGTERM);
    let out = running.wait();
    out.expect_code(143);
    let all = std::fs::read_to_string(&pids).unwrap();
    let started: Vec<i32> = all
        .split_whitespace()
        .map(|p| p.parse().expect("pid"))
        .collect();
    assert!(started.len() >= 4, "attempts: {all}");
    for pid in started {
        assert!(
            gone_within(pid, Duration::from_secs(5)),
            "pid {pid} outlived retry"
        );
    }
}
