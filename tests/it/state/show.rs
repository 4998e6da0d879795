//! `--state-show` reads what is stored and creates nothing; the budget keeps
//! its meaning when TOKENS changes; the breaker's trial and the pace's burst
//! behave as documented.

use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use super::{Redis, Store, budget_count, one_attempt, show, show_at};
use crate::util::{path_str, retry_sh, scratch};

#[test]
fn showing_a_group_that_does_not_exist_creates_nothing() {
    let t = scratch();
    let store = t.path().join("state");
    let s = path_str(&store);
    let text = show_at(&s, "ghost", &["--budget", "--breaker"]);
    assert!(
        text.contains("state:   nothing is stored for this group"),
        "{text}"
    );
    assert!(!text.contains("closed"), "{text}");
    assert!(!store.exists(), "--state-show created the store");
    // Nor a lock file in an existing store.
    retry_sh(
        &["--group", "real", "--state", &s, "--budget", "--max", "1"],
        "exit 1",
    )
    .run()
    .expect_code(1);
    let count = || std::fs::read_dir(&store).expect("store").count();
    let before = count();
    show_at(&s, "ghost", &[]);
    assert_eq!(count(), before);
    assert!(!store.join("ghost.lock").exists());
}

#[test]
fn without_flags_show_says_what_is_stored() {
    let store = Store::local();
    let s = store.arg();
    let args = [
        "--group", "g", "--state", &s, "--budget", "1000", "--max", "10", "--base", "1ms",
    ];
    retry_sh(&args, "exit 1").run().expect_code(1);
    // Ten failed attempts: 990 of 1000 left, which the default TOKENS must
    // not rescale to 100 of 100.
    let text = show(&store, "g", &[]);
    assert!(text.contains("budget:  10 tokens spent"), "{text}");
    assert_eq!(budget_count(&store, "g", "1000"), 990.0);
    assert!(
        text.contains("breaker: closed (0 consecutive failed runs)"),
        "{text}"
    );
}

#[test]
fn a_change_of_tokens_keeps_the_budget_s_meaning() {
    let store = Store::local();
    let s = store.arg();
    let run = |tokens: &str, max: &str| {
        retry_sh(
            &[
                "--group", "g", "--state", &s, "--budget", tokens, "--max", max, "--base", "1ms",
            ],
            "exit 1",
        )
        .run()
    };
    // 10 tokens: one failure leaves 9.
    run("10", "1").expect_code(1);
    assert_eq!(budget_count(&store, "g", "10"), 9.0);
    // Raised to 1000: one token spent of a thousand, and retries go on.
    let out = run("1000", "3");
    out.expect_code(1);
    assert!(
        out.stderr_text().contains("giving up after 3 attempts"),
        "{}",
        out.stderr_text()
    );
    assert_eq!(budget_count(&store, "g", "1000"), 996.0);
}

#[test]
fn a_groups_state_stored_by_an_earlier_version_is_read_as_it_was() {
    let store = Store::local();
    let s = store.arg();
    std::fs::create_dir(&s).expect("store");
    std::fs::write(
        Path::new(&s).join("g.json"),
        br#"{"tat":0,"tokens_milli":991000,"failures":0,"open_until":0,"trial_until":0}"#,
    )
    .expect("old file");
    assert!(show(&store, "g", &[]).contains("991 tokens left, as an earlier version"));
    assert_eq!(budget_count(&store, "g", "1000"), 991.0);
    retry_sh(
        &[
            "--group", "g", "--state", &s, "--budget", "1000", "--max", "1",
        ],
        "exit 1",
    )
    .run()
    .expect_code(1);
    assert_eq!(budget_count(&store, "g", "1000"), 990.0);
    let text = std::fs::read_to_string(Path::new(&s).join("g.json")).expect("g.json");
    assert!(
        text.contains("\"spent_milli\":10000") && !text.contains("tokens_milli"),
        "{text}"
    );
}

#[test]
fn a_groups_state_stored_in_redis_by_an_earlier_version_is_read_as_it_was() {
    let redis = Redis::unix();
    redis.cmd(None, &["HSET", "retry:{g}:state", "tok", "991000"]);
    let budget = || {
        show_at(&redis.url, "g", &["--budget", "1000"])
            .lines()
            .find(|l| l.starts_with("budget:"))
            .unwrap_or_default()
            .to_string()
    };
    assert!(budget().contains("991 of 1000 tokens"), "{}", budget());
    retry_sh(
        &[
            "--group", "g", "--state", &redis.url, "--budget", "1000", "--max", "1",
        ],
        "exit 1",
    )
    .run()
    .expect_code(1);
    assert!(budget().contains("990 of 1000 tokens"), "{}", budget());
    // Stored in the new form.
    assert_eq!(
        redis.cmd(None, &["HMGET", "retry:{g}:state", "tok", "spent"]),
        "*2\r\n$-1\r\n$5\r\n10000\r\n"
    );
}

#[test]
fn a_budget_ratio_is_truncated_to_three_decimals() {
    let store = Store::local();
    let s = store.arg();
    let args = one_attempt("g", &s, "--budget", "10:0.5466");
    retry_sh(&args, "exit 1").run().expect_code(1);
    retry_sh(&args, "exit 0").run().expect_code(0);
    // 10 - 1 + 0.546, as gRPC reads a ratio of 0.5466.
    assert_eq!(budget_count(&store, "g", "10:0.5466"), 9.546);
}

#[test]
fn show_counts_the_pace_bursts_free_slots() {
    let store = Store::local();
    let s = store.arg();
    let pace = ["--pace", "1/m", "--pace-burst", "3"];
    let mut args = vec!["--group", "g", "--state", &s, "--max", "2", "--base", "1ms"];
    args.extend(pace);
    retry_sh(&args, "[ \"$RETRY_ATTEMPT\" = 2 ]")
        .run()
        .expect_code(0);
    // One slot taken: a retry may still start at once.
    let text = show(&store, "g", &pace);
    assert!(
        text.contains("pace:    a retry may start now (2 of 3 slots free)"),
        "{text}"
    );
    let text = show(&store, "g", &["--pace", "1/m"]);
    assert!(text.contains("pace:    next free slot in 5"), "{text}");
}

#[test]
fn a_killed_trial_gives_way_after_its_own_max_time() {
    let store = Store::local();
    let s = store.arg();
    let t = scratch();
    let started = t.path().join("started");
    let breaker = one_attempt("g", &s, "--breaker", "1:200ms");
    retry_sh(&breaker, "exit 1").run().expect_code(1);
    thread::sleep(Duration::from_millis(300));
    // The trial, with --max-time 1.2s, is killed before it can report.
    let mut trial_args = breaker.to_vec();
    trial_args.extend(["--max-time", "1.2s"]);
    let trial = retry_sh(
        &trial_args,
        &format!("touch '{}'; sleep 30", path_str(&started)),
    )
    .spawn();
    let began = Instant::now();
    let until = began + Duration::from_secs(10);
    while !started.exists() {
        assert!(Instant::now() < until, "the trial never started");
        thread::sleep(Duration::from_millis(10));
    }
    trial.signal(nix::sys::signal::Signal::SIGKILL);
    let _ = trial.wait_status();
    // Others are refused until its --max-time is over, then one is the trial.
    let next = loop {
        let out = retry_sh(&breaker, "exit 0").run();
        if out.code() != 75 {
            break began.elapsed();
        }
        assert!(
            began.elapsed() < Duration::from_secs(10),
            "never let through"
        );
        thread::sleep(Duration::from_millis(50));
    };
    assert!(
        next >= Duration::from_millis(1000) && next < Duration::from_millis(1900),
        "the next trial came {next:?} after the killed one started"
    );
}
