//! Shared state on a Redis Cluster: what the single-server tests check,
//! through `redis+cluster://` with a password on every node; groups spread
//! over the slots, each group's state on the master serving its slot; and
//! runs that go on through a `CLUSTER FAILOVER` and through `kill -9` of
//! the master serving their group.

use std::time::{Duration, Instant};

use super::rules::{breaker_cycle, budget_is_exact_under_concurrency, pace_spaces_retries};
use super::topology::{Cluster, Flavor, LongRun, REDIS};
use super::{Store, show_at};
use crate::util::retry_sh;

#[test]
fn a_cluster_holds_pace_budget_and_breaker_with_groups_spread_over_its_slots() {
    holds_pace_budget_and_breaker(REDIS);
}

/// The single-server checks, and groups spread over the slots, on a
/// cluster of `flavor`'s servers.
pub(super) fn holds_pace_budget_and_breaker(flavor: Flavor) {
    let c = Cluster::with_password(flavor, "cluster-secret");
    let url = c
        .url()
        .replacen("redis+cluster://", "redis+cluster://:cluster-secret@", 1);
    pace_spaces_retries(Store::Url(url.clone()));
    budget_is_exact_under_concurrency(Store::Url(url.clone()));
    breaker_cycle(Store::Url(url.clone()));

    // Forty groups: each one's state is on the master serving its key's
    // slot, and the three masters each hold some.
    let groups: Vec<String> = (0..40).map(|i| format!("spread-{i}")).collect();
    for g in &groups {
        retry_sh(
            &["--group", g, "--state", &url, "--budget", "--max", "1"],
            "exit 1",
        )
        .run()
        .expect_code(1);
    }
    let mut per_master = std::collections::BTreeMap::new();
    for g in &groups {
        let key = format!("retry:{{{g}}}:state");
        let (master, replica) = c.shard_of(&key);
        assert!(c.holds(master.port, &key), "{key} is not on its master");
        *per_master.entry(master.port).or_insert(0) += 1;
        // Replicated, as the failover tests rely on.
        let until = Instant::now() + Duration::from_secs(10);
        while !c.holds(replica.port, &key) {
            assert!(Instant::now() < until, "{key} never reached its replica");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    assert_eq!(per_master.len(), 3, "{per_master:?}");
    let shown = show_at(&url, "spread-7", &["--budget"]);
    assert!(shown.contains("budget:  99 of 100 tokens"), "{shown}");
    assert!(shown.contains("redis+cluster://:***@127.0.0.1:"), "{shown}");
    assert!(!shown.contains("secret"), "{shown}");

    // A wrong password: one warning, masked, and the command runs.
    let wrong = url.replace("cluster-secret", "cluster-wrong");
    let out = retry_sh(&["--group", "g", "--state", &wrong, "--budget"], "exit 0").run();
    out.expect_code(0);
    let err = out.stderr_text();
    assert_eq!(err.matches("running without it").count(), 1, "{err}");
    assert!(!err.contains("wrong") && err.contains(":***@"), "{err}");
}

#[test]
fn a_run_follows_a_cluster_failover_without_missing_a_call() {
    let c = Cluster::new(REDIS);
    let url = c.url();
    let run = LongRun::start(&url, "fo");
    let key = "retry:{fo}:state";
    let (old, _) = c.shard_of(key);
    let new = c.failover(key);
    // Generous: the suite runs beside it, and each look at the count is a
    // process of its own.
    let (warnings, _) = run.finish_after_five_calls(
        Duration::from_secs(30),
        "the run's calls never reached the new master",
    );
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_ne!(old.port, new);
    assert!(c.holds(new, key));
}

#[test]
fn a_run_waits_out_kill_9_of_its_groups_cluster_master_instead_of_falling_open() {
    let mut c = Cluster::new(REDIS);
    let url = c.url();
    let run = LongRun::start(&url, "kill");
    let key = "retry:{kill}:state";
    let new = c.kill_master(key);
    // The replica is promoted a node timeout (1 s) and an election after
    // the kill: within the run's bound on a call, a quarter of its 90 s.
    let (warnings, notes) = run.finish_after_five_calls(
        Duration::from_secs(30),
        "the run never came back to the store",
    );
    assert!(warnings.is_empty(), "{warnings:?}");
    assert!(notes.is_empty(), "{notes:?}");
    assert!(c.holds(new, key));
}
