//! Shared state on a Sentinel-managed master: what the single-server tests
//! check, through `redis+sentinel://` with passwords on the servers and on
//! the sentinels; and runs that go on through a `SENTINEL FAILOVER` and
//! wait out `kill -9` of the master.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use super::rules::{breaker_cycle, budget_is_exact_under_concurrency, pace_spaces_retries};
use super::topology::{LongRun, MASTER, REDIS, Sentinels, spent};
use super::{Store, needs_the_store, show_at};
use crate::util::{retry, retry_sh, scratch};

/// The sentinels' URL with both passwords in it.
fn with_secrets(s: &Sentinels, password: &str, sentinel_password: &str) -> String {
    format!(
        "{}?sentinel_password={sentinel_password}",
        s.url().replacen(
            "redis+sentinel://",
            &format!("redis+sentinel://:{password}@"),
            1
        )
    )
}

#[test]
fn a_sentinel_managed_master_holds_pace_budget_and_breaker() {
    let s = Sentinels::with_passwords(REDIS, "master-secret", "sentinel-secret");
    let url = with_secrets(&s, "master-secret", "sentinel-secret");
    pace_spaces_retries(Store::Url(url.clone()));
    budget_is_exact_under_concurrency(Store::Url(url.clone()));
    breaker_cycle(Store::Url(url.clone()));

    // The state is on the master, under the group's key.
    let master = s.master();
    assert!(
        s.server(master, &["EXISTS", "retry:{flaky}:state"])
            .starts_with('1'),
        "the breaker's state is not on the master"
    );

    // --state-show names the store with both passwords masked.
    let shown = show_at(&url, "flaky", &["--breaker"]);
    assert!(shown.contains("breaker: closed"), "{shown}");
    assert!(
        shown.contains("redis+sentinel://:***@127.0.0.1:")
            && shown.contains(&format!("/{MASTER}?sentinel_password=***")),
        "{shown}"
    );
    assert!(!shown.contains("secret"), "{shown}");

    // A wrong master password, or a wrong sentinel password: one warning,
    // masked, and the command runs.
    for wrong in [
        with_secrets(&s, "master-wrong", "sentinel-secret"),
        with_secrets(&s, "master-secret", "sentinel-wrong"),
    ] {
        let out = retry_sh(&["--group", "g", "--state", &wrong, "--budget"], "exit 0").run();
        out.expect_code(0);
        let err = out.stderr_text();
        assert_eq!(err.matches("running without it").count(), 1, "{err}");
        assert!(
            err.contains(":***@") && !err.contains("wrong") && !err.contains("secret"),
            "{err}"
        );
    }

    // The master's password from a file, the sentinels' in the URL; the
    // command's RETRY_STATE holds neither.
    let t = scratch();
    let file = t.path().join("password");
    std::fs::write(&file, "master-secret\n").expect("password file");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let seen = t.path().join("seen");
    let out = retry_sh(
        &["--group", "g", "--budget", "--state-required"],
        &format!("printf %s \"$RETRY_STATE\" > '{}'", seen.display()),
    )
    .env(
        "RETRY_STATE",
        format!("{}?sentinel_password=sentinel-secret", s.url()),
    )
    .env("RETRY_STATE_PASSWORD_FILE", &file)
    .run();
    out.expect_code(0);
    assert_eq!(std::fs::read_to_string(&seen).expect("seen"), s.url());
}

#[test]
fn a_run_follows_a_sentinel_failover_without_missing_a_call() {
    let s = Sentinels::new(REDIS);
    let url = s.url();
    let run = LongRun::start(&url, "fo");
    let old = s.master();
    let new = s.failover();
    // The old master is demoted by the sentinels seconds later; meanwhile
    // it still takes writes. The run learns of the new master from the
    // sentinels' announcement: its calls reach the new master.
    // (It is demoted 8 s or more after the failover: a run that waited for
    // that would be seen here.)
    let (warnings, _) = run.finish_after_five_calls(
        Duration::from_secs(5),
        "the run's calls never reached the new master",
    );
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_ne!(old, new);
    assert!(s.server(new, &["ROLE"]).starts_with("master"));
}

#[test]
fn a_run_waits_out_kill_9_of_the_sentinel_master_instead_of_falling_open() {
    let mut s = Sentinels::new(REDIS);
    let url = s.url();
    let run = LongRun::start(&url, "kill");
    let failures_before = spent(&url, "kill");
    let new = s.kill_master();
    // The sentinels take a second to see the master down, then elect and
    // promote the replica: the run's bound on a call (a quarter of its 90 s)
    // has room for that, so it keeps asking them and never goes without.
    let (warnings, notes) = run.finish_after_five_calls(
        Duration::from_secs(30),
        "the run never came back to the store",
    );
    assert!(warnings.is_empty(), "{warnings:?}");
    assert!(notes.is_empty(), "{notes:?}");
    assert!(failures_before >= 1.0);
    assert!(s.server(new, &["ROLE"]).starts_with("master"));
}

#[test]
fn a_herd_through_kill_9_of_the_sentinel_master_mostly_waits_for_the_new_one() {
    let mut s = Sentinels::new(REDIS);
    let url = s.url();
    let runs: Vec<LongRun> = (0..8).map(|_| LongRun::start(&url, "herd")).collect();
    s.kill_master();
    let mut fell_open = 0;
    for run in runs {
        let (warnings, _) = run.finish_after_five_calls(
            Duration::from_secs(30),
            "the herd never came back to the store",
        );
        fell_open += usize::from(!warnings.is_empty());
    }
    // At most one in five goes without the store.
    assert!(fell_open <= 1, "{fell_open} of 8 runs fell open");
}

#[test]
fn a_required_store_in_the_middle_of_a_sentinel_failover_exits_125() {
    let mut s = Sentinels::new(REDIS);
    let url = s.url();
    let t = scratch();
    let ran = t.path().join("ran");
    let old = s.master();
    s.servers
        .iter_mut()
        .find(|n| n.port == old)
        .expect("the master")
        .kill();
    // The sentinels take a second to see the master down, then elect and
    // promote: this run's bound on a call (a quarter of its 2 s) ends
    // before that.
    let mut args = needs_the_store(&url).to_vec();
    args.extend(["--max-time", "2s"]);
    let out = retry_sh(&args, &format!("touch '{}'", ran.display())).run();
    out.expect_code(125);
    assert!(!ran.exists(), "the command ran");
    let err = out.stderr_text();
    assert!(
        err.contains("(--state-required)") && err.contains(MASTER),
        "{err}"
    );
    // Once the replica is promoted, the same run goes through.
    s.wait_for_master(s.other(old), Duration::from_secs(30));
    let out = retry(needs_the_store(&url).into_iter().chain(["--", "true"])).run();
    out.expect_code(0);
}
