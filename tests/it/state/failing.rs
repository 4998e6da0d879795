//! Failing open and failing closed: stores that cannot be reached, a stuck
//! lock, a corrupt file, and usage errors.

use std::path::{Path, PathBuf};
use std::thread;
use std::time::Duration;

use super::{Redis, Store, budget_count, free_port};
use crate::util::{path_str, retry, retry_sh, scratch};

// ---- failing open, failing closed ----

#[test]
fn unreachable_redis_warns_once_and_runs_without_it() {
    let dir = scratch();
    let ran = dir.path().join("ran");
    let url = format!("redis://app:hunter2@127.0.0.1:{}/0", free_port());
    let args = [
        "--group",
        "g",
        "--state",
        &url,
        "--budget",
        "--breaker",
        "--max",
        "2",
        "--base",
        "1ms",
    ];
    let out = retry_sh(&args, &format!("echo x >> '{}'; exit 1", path_str(&ran))).run();
    out.expect_code(1);
    let err = out.stderr_text();
    assert_eq!(
        std::fs::read_to_string(&ran)
            .unwrap_or_default()
            .lines()
            .count(),
        2
    );
    let warnings: Vec<_> = err.lines().filter(|l| l.contains("shared state")).collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(warnings[0].contains("running without it"), "{err}");
    assert!(warnings[0].contains("app:***@127.0.0.1"), "{err}");
    assert!(!err.contains("hunter2"), "{err}");
}

#[test]
fn state_required_exits_125_without_running() {
    let dir = scratch();
    let ran = dir.path().join("ran");
    let url = format!("redis://:hunter2@127.0.0.1:{}/0", free_port());
    let args = [
        "--group",
        "g",
        "--state",
        &url,
        "--budget",
        "--state-required",
    ];
    let out = retry_sh(&args, &format!("touch '{}'", path_str(&ran))).run();
    out.expect_code(125);
    assert!(!ran.exists());
    let err = out.stderr_text();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("--state-required") && !err.contains("hunter2"),
        "{err}"
    );
    // --state-show says so too.
    let out = retry(["--group", "g", "--state", &url, "--state-show"]).run();
    out.expect_code(125);
    assert!(!out.stderr_text().contains("hunter2"));
}

#[test]
fn a_wrong_redis_password_is_reported_but_never_printed() {
    let redis = Redis::tcp_with_password("right-secret");
    let url = redis.url.replace("redis://", "redis://:wrong-secret@");
    let out = retry_sh(
        &[
            "--group",
            "g",
            "--state",
            &url,
            "--budget",
            "--state-required",
        ],
        "exit 0",
    )
    .run();
    out.expect_code(125);
    let err = out.stderr_text();
    assert!(
        !err.contains("wrong-secret") && !err.contains("right-secret"),
        "{err}"
    );
    // With the right one, it works.
    let url = redis.url.replace("redis://", "redis://:right-secret@");
    retry_sh(
        &[
            "--group",
            "g",
            "--state",
            &url,
            "--budget",
            "--state-required",
        ],
        "exit 0",
    )
    .run()
    .expect_code(0);
    let out = retry(["--group", "g", "--state", &url, "--state-show"]).run();
    out.expect_code(0);
    assert!(out.stdout_text().contains(":***@127.0.0.1"));
    assert!(!out.stdout_text().contains("right-secret"));
}

#[test]
fn a_corrupt_state_file_is_reported_and_reset() {
    let store = Store::local();
    let s = store.arg();
    retry_sh(&["--group", "g", "--state", &s, "--budget"], "exit 0")
        .run()
        .expect_code(0);
    let file = PathBuf::from(&s).join("g.json");
    std::fs::write(&file, b"{\"tat\": 12, \"tokens_mil").expect("truncate");
    let out = retry_sh(
        &[
            "--group", "g", "--state", &s, "--budget", "10", "--max", "2", "--base", "1ms",
        ],
        "exit 1",
    )
    .run();
    out.expect_code(1);
    let err = out.stderr_text();
    let reports: Vec<_> = err.lines().filter(|l| l.contains("corrupt")).collect();
    assert_eq!(reports.len(), 1, "{err}");
    assert!(err.contains("giving up after 2 attempts"), "{err}");
    // Started afresh from a full budget: 10 - 2.
    assert_eq!(budget_count(&store, "g", "10"), 8.0);
}

#[test]
fn local_files_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let store = Store::local();
    let s = store.arg();
    // A failure changes the budget, so the group's file is written.
    retry_sh(
        &["--group", "g", "--state", &s, "--budget", "--max", "1"],
        "exit 1",
    )
    .run()
    .expect_code(1);
    let mode = |p: &Path| std::fs::metadata(p).expect("stat").permissions().mode() & 0o777;
    assert_eq!(mode(Path::new(&s)), 0o700);
    assert_eq!(mode(&Path::new(&s).join("g.json")), 0o600);
    assert_eq!(mode(&Path::new(&s).join("g.lock")), 0o600);
}

/// Hold the group's lock from this test process, as a stuck invocation would.
fn hold_lock(dir: &str, group: &str) -> std::fs::File {
    std::fs::create_dir_all(dir).expect("state dir");
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(Path::new(dir).join(format!("{group}.lock")))
        .expect("lock file");
    f.lock().expect("lock");
    f
}

#[test]
fn a_stuck_lock_holder_costs_a_bounded_wait_then_the_run_goes_on() {
    let store = Store::local();
    let s = store.arg();
    let _held = hold_lock(&s, "g");
    let out = retry_sh(&["--group", "g", "--state", &s, "--budget"], "exit 0").run();
    out.expect_code(0);
    let holder = format!(
        "g.lock is held by process {}, which has kept it for 3s",
        std::process::id()
    );
    assert!(out.stderr_text().contains(&holder), "{}", out.stderr_text());
    assert!(
        out.elapsed >= Duration::from_secs(3) && out.elapsed < Duration::from_secs(8),
        "{:?}",
        out.elapsed
    );
}

#[test]
fn a_lock_wait_leaves_the_command_its_run_and_gives_way_to_signals() {
    let store = Store::local();
    let s = store.arg();
    let dir = scratch();
    let ran = dir.path().join("ran");
    let _held = hold_lock(&s, "g");
    // The store may take a quarter of the time left: the command still runs,
    // well before --max-time.
    let out = retry_sh(
        &[
            "--group",
            "g",
            "--state",
            &s,
            "--breaker",
            "--budget",
            "--max-time",
            "3s",
        ],
        &format!("touch '{}'", path_str(&ran)),
    )
    .run();
    assert_eq!(out.code(), 0, "{}", out.stderr_text());
    assert!(ran.exists(), "the command did not run");
    let err = out.stderr_text();
    assert!(
        err.contains("(1/4 of the time left before --max-time); running without it"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        out.elapsed < Duration::from_millis(2500),
        "{:?}",
        out.elapsed
    );

    let running = retry_sh(&["--group", "g", "--state", &s, "--breaker"], "exit 0").spawn();
    thread::sleep(Duration::from_millis(300));
    running.signal(nix::sys::signal::Signal::SIGTERM);
    let out = running.wait();
    assert_eq!(out.code(), 143, "{}", out.stderr_text());
    assert!(
        out.elapsed < Duration::from_millis(1500),
        "{:?}",
        out.elapsed
    );
}

// ---- usage ----

#[test]
fn features_without_a_group_are_a_usage_error() {
    let out = retry_sh(&["--pace", "5/s"], "touch never").run();
    out.expect_code(2);
    assert_eq!(out.stderr_lines().len(), 1);
    assert!(out.stderr_text().contains("--group"));
    let out = retry_sh(
        &["--group", "g", "--state", "/tmp/x", "--pace", "fast"],
        "true",
    )
    .run();
    out.expect_code(2);
    assert!(out.stderr_text().contains("--pace") && out.stderr_text().contains("20/s"));
    let out = retry([
        "--group",
        "g",
        "--state",
        "/tmp/x",
        "--state-show",
        "--",
        "true",
    ])
    .run();
    out.expect_code(2);
    assert!(
        out.stderr_text().contains("--state-show"),
        "{}",
        out.stderr_text()
    );
    // The group may come from the environment.
    let dir = scratch();
    let out = retry(["--state-show", "--state", &path_str(dir.path())])
        .env("RETRY_GROUP", "from-env")
        .run();
    out.expect_code(0);
    assert!(out.stdout_text().starts_with("group:   from-env\n"));
}
