//! Supervising a long-running command with `--forever`: backoff for a
//! command that keeps dying, and a clean end on SIGTERM with nothing left
//! behind.

use std::time::Duration;

use nix::sys::signal::Signal;

use crate::util::{gone_within, path_str, retry, retry_sh, scratch, wait_for_line, wait_until};

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

/// Polls until `n` attempts have written their line to `pids`.
#[track_caller]
fn wait_for_runs(pids: &std::path::Path, n: usize) {
    wait_until(Duration::from_secs(20), &format!("{n} attempts"), || {
        std::fs::read_to_string(pids).is_ok_and(|all| all.lines().count() >= n)
    });
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
    // Let it go round a few times.
    wait_for_runs(&pids, 4);
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

#[test]
fn restart_on_success_runs_a_clean_exit_again() {
    let out = retry_sh(
        &["--max", "3", "--restart-on-success", "--base", "10ms"],
        "echo run $RETRY_ATTEMPT",
    )
    .run();
    out.expect_code(0);
    assert_eq!(out.stdout_text(), "run 1\nrun 2\nrun 3\n");
    assert!(
        out.stderr_text()
            .contains("retry: attempt 1/3 succeeded (exit 0) after"),
        "{}",
        out.stderr_text()
    );
    assert!(out.stderr_text().contains("restarting in"));
}

#[test]
fn an_attempt_up_past_reset_after_resets_the_backoff_in_the_log() {
    // Attempt 3 stays up 0.5 s; the others die at once.
    let out = retry_sh(
        &[
            "--max",
            "5",
            "--reset-after",
            "400ms",
            "--base",
            "20ms",
            "--jitter",
            "none",
            "--log-format",
            "json",
        ],
        "if [ $RETRY_ATTEMPT -eq 3 ]; then sleep 0.5; fi; exit 1",
    )
    .run();
    out.expect_code(1);
    let log = out.json();
    let ceilings: Vec<f64> = log
        .iter()
        .filter(|e| e["event"] == "sleep")
        .map(|e| e["ceiling_ms"].as_f64().unwrap())
        .collect();
    assert_eq!(ceilings, vec![20.0, 40.0, 20.0, 40.0]);
    let resets: Vec<&serde_json::Value> = log.iter().filter(|e| e["event"] == "reset").collect();
    assert_eq!(resets.len(), 1, "{log:?}");
    assert_eq!(resets[0]["attempt"], 3);
    assert!(resets[0]["up_ms"].as_f64().unwrap() >= 400.0);
    assert_eq!(resets[0]["reset_after_ms"], 400.0);
}

#[test]
fn sigterm_ends_restarting_supervision_with_no_orphan() {
    let dir = scratch();
    let pids = dir.path().join("pids");
    let script = format!("sleep 30 & echo $$ $! >> {}; sleep 0.1", path_str(&pids));
    let running = retry_sh(
        &[
            "--forever",
            "--restart-on-success",
            "--base",
            "10ms",
            "--cap",
            "10ms",
        ],
        &script,
    )
    .spawn();
    wait_for_runs(&pids, 4);
    running.signal(Signal::SIGTERM);
    let out = running.wait();
    out.expect_code(143);
    let all = std::fs::read_to_string(&pids).unwrap();
    let started: Vec<i32> = all.split_whitespace().map(|p| p.parse().unwrap()).collect();
    assert!(started.len() >= 4, "restarts: {all}");
    for pid in started {
        assert!(
            gone_within(pid, Duration::from_secs(5)),
            "pid {pid} outlived retry"
        );
    }
}

#[test]
fn stagger_waits_at_most_its_spread_before_the_first_attempt() {
    for seed in ["1", "2", "3"] {
        let out = retry([
            "-v",
            "--log-format",
            "json",
            "--seed",
            seed,
            "--stagger",
            "400ms",
            "--",
            "true",
        ])
        .run();
        out.expect_code(0);
        let log = out.json();
        let stagger = log
            .iter()
            .find(|e| e["event"] == "stagger")
            .expect("a stagger event");
        let delay = stagger["delay_ms"].as_f64().unwrap();
        assert!((0.0..=400.0).contains(&delay), "{delay}");
        assert_eq!(stagger["stagger_ms"], 400.0);
        let start = log
            .iter()
            .find(|e| e["event"] == "attempt_start")
            .expect("attempt_start");
        assert!(start["elapsed_ms"].as_f64().unwrap() >= delay);
    }
}

#[test]
fn an_interrupt_ends_the_stagger_before_anything_runs() {
    let dir = scratch();
    let ran = dir.path().join("ran");
    let log = dir.path().join("log");
    let running = retry([
        "-v",
        "--log-format",
        "json",
        "--log-file",
        &path_str(&log),
        "--stagger",
        "1h",
        "--",
        "touch",
        &path_str(&ran),
    ])
    .spawn();
    // The stagger's wait has begun.
    wait_for_line(&log, "\"event\":\"stagger\"", Duration::from_secs(20));
    running.signal(Signal::SIGTERM);
    let out = running.wait();
    out.expect_code(143);
    assert!(out.elapsed < Duration::from_secs(10));
    assert!(!ran.exists(), "the command ran");
    assert!(
        out.stderr_text()
            .contains("while waiting to start attempt 1"),
        "{}",
        out.stderr_text()
    );
}

#[test]
fn stagger_must_be_shorter_than_max_time() {
    let out = retry(["--stagger", "5s", "--max-time", "2s", "--", "true"]).run();
    out.expect_code(2);
    assert!(
        out.stderr_text().contains("--stagger"),
        "{}",
        out.stderr_text()
    );
}

#[test]
fn a_staggered_fleet_is_spread_in_the_simulation() {
    let busiest = |extra: &[&str]| {
        let mut args = vec![
            "--simulate",
            "200",
            "--outage",
            "1ms",
            "--seed",
            "1",
            "--format",
            "json",
        ];
        args.extend_from_slice(extra);
        let out = retry(args).run();
        out.expect_code(0);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json report");
        v["runs"][0]["busiest_100ms"]
            .as_u64()
            .expect("busiest_100ms")
    };
    let together = busiest(&[]);
    let staggered = busiest(&["--stagger", "10s"]);
    // 200 clients over 10 s: about 2 per 100 ms, against all 200 at once.
    assert!(together >= 200, "{together}");
    assert!(staggered <= 20, "{staggered}");
}

#[test]
fn the_dry_run_shows_the_stagger_a_real_run_with_the_seed_waits() {
    let dry = retry(["--dry-run", "--seed", "5", "--stagger", "400ms"]).run();
    dry.expect_code(0);
    let line = dry
        .stdout_text()
        .lines()
        .find(|l| l.starts_with("stagger: "))
        .expect("a stagger line")
        .to_string();
    let real = retry([
        "-v",
        "--log-format",
        "json",
        "--seed",
        "5",
        "--stagger",
        "400ms",
        "--",
        "true",
    ])
    .run();
    let delay = real
        .json()
        .iter()
        .find(|e| e["event"] == "stagger")
        .and_then(|e| e["delay_ms"].as_f64())
        .expect("stagger delay");
    assert!(
        line.contains(&format!("after {}ms", delay.round())),
        "{line} vs {delay}"
    );
}
