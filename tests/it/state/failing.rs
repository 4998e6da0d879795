//! Failing open and failing closed: stores that cannot be reached, a stuck
//! lock, a corrupt file, and usage errors.

use std::path::{Path, PathBuf};
use std::thread;
use std::time::Duration;

use super::{Redis, Store, budget_count, epoch_secs};
use crate::util::{FILL_TMPFS, Outcome, free_port, path_str, retry, retry_sh, scratch};

/// `retry --group g --state STATE --budget --state-required -- sh -c SCRIPT`:
/// a run that may not go ahead without the store.
fn required(state: &str, script: &str) -> Outcome {
    retry_sh(
        &[
            "--group",
            "g",
            "--state",
            state,
            "--budget",
            "--state-required",
        ],
        script,
    )
    .run()
}

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
    let out = required(&url, &format!("touch '{}'", path_str(&ran)));
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
    let out = required(&url, "exit 0");
    out.expect_code(125);
    let err = out.stderr_text();
    assert!(
        !err.contains("wrong-secret") && !err.contains("right-secret"),
        "{err}"
    );
    // With the right one, it works.
    let url = redis.url.replace("redis://", "redis://:right-secret@");
    required(&url, "exit 0").expect_code(0);
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

/// Whether process `pid` is blocked waiting for a lock: /proc/locks lists
/// each blocked request as a `->` line with the waiter's pid.
fn waits_for_a_lock(pid: i32) -> bool {
    std::fs::read_to_string("/proc/locks").is_ok_and(|locks| {
        locks.lines().any(|l| {
            let mut fields = l.split_whitespace().skip(1);
            fields.next() == Some("->") && fields.nth(3) == Some(&pid.to_string())
        })
    })
}

#[test]
fn a_stuck_lock_holder_costs_a_bounded_wait_then_the_run_goes_on() {
    let store = Store::local();
    let s = store.arg();
    let _held = hold_lock(&s, "g");
    let out = retry_sh(&["--group", "g", "--state", &s, "--budget"], "exit 0").run();
    out.expect_code(0);
    // No lock table to read in the portable build (docs/platforms.md):
    // the holder is not named there.
    let holder = if cfg!(feature = "portable") {
        "g.lock is held by another process, which has kept it for 3s".to_string()
    } else {
        format!(
            "g.lock is held by process {}, which has kept it for 3s",
            std::process::id()
        )
    };
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
    // The breaker's last word may take a second more, even past --max-time.
    assert!(out.elapsed < Duration::from_secs(5), "{:?}", out.elapsed);

    let running = retry_sh(&["--group", "g", "--state", &s, "--breaker"], "exit 0").spawn();
    let pid = running.pid().as_raw();
    crate::util::wait_until(Duration::from_secs(20), "retry waits for the lock", || {
        waits_for_a_lock(pid)
    });
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

/// Runs `retry ARGS -- sh -c 'touch OUT/ran'` in a private mount namespace,
/// with its store on a small tmpfs of its own that `setup` (a shell
/// snippet, `$M` the mount point) prepares. Returns the exit code, stderr,
/// whether the command ran and what the store directory holds afterwards;
/// None (a skip) where a private mount namespace with a tmpfs cannot be made.
fn on_tmpfs(setup: &str, args: &[&str]) -> Option<(i32, String, bool, Vec<String>)> {
    let quoted: Vec<String> = args.iter().map(|a| format!("'{a}'")).collect();
    let script = format!(
        "mkdir -m 0700 \"$M/state\"
         {setup}
         set +e
         \"$R\" --group g --state \"$M/state\" {args} -- sh -c \"touch '$O/ran'\" 2> \"$O/stderr\"
         echo $? > \"$O/code\"
         ls -A \"$M/state\" > \"$O/listing\"",
        args = quoted.join(" "),
    );
    let (_t, out) = crate::util::in_private_tmpfs("size=64k", &script)?;
    let read = |n: &str| std::fs::read_to_string(out.join(n)).unwrap_or_default();
    Some((
        read("code").trim().parse().expect("code"),
        read("stderr"),
        out.join("ran").exists(),
        read("listing").lines().map(String::from).collect(),
    ))
}

/// Makes the tmpfs read-only.
const READ_ONLY: &str = "mount -o remount,ro \"$M\"";

#[test]
fn state_required_exits_125_before_the_command_runs() {
    for (why, setup) in [("full", FILL_TMPFS), ("read-only", READ_ONLY)] {
        // Without a tmpfs (a counted skip), the held lock below still runs.
        let Some((code, err, ran, _)) = on_tmpfs(setup, &["--budget", "--state-required"]) else {
            break;
        };
        assert_eq!(code, 125, "{why}: {err}");
        assert!(!ran, "{why}: the command ran");
        assert!(err.contains("--state-required"), "{why}: {err}");
    }
    // A lock that stays held, likewise: it needs no privilege.
    let store = Store::local();
    let s = store.arg();
    let _held = hold_lock(&s, "g");
    let t = scratch();
    let ran = t.path().join("ran");
    let out = required(&s, &format!("touch '{}'", path_str(&ran)));
    out.expect_code(125);
    assert!(!ran.exists(), "the command ran");
}

#[test]
fn a_full_disk_leaves_no_temporary_file_behind() {
    let Some((code, err, ran, listing)) = on_tmpfs(FILL_TMPFS, &["--budget", "--max", "1"]) else {
        return;
    };
    assert_eq!(code, 0, "{err}");
    assert!(ran);
    assert!(err.contains("running without it"), "{err}");
    assert!(err.contains("No space left on device"), "{err}");
    assert_eq!(listing, ["g.lock"], "{err}");
}

#[test]
fn without_home_the_home_directory_comes_from_the_password_database() {
    // util::command() starts retry with HOME unset.
    let uid = nix::unistd::Uid::effective();
    let home = nix::unistd::User::from_uid(uid)
        .expect("passwd")
        .expect("the caller in the password database")
        .dir;
    let group = format!("retry-test-home-{}", std::process::id());
    let dir = home.join(".local/state/retry");
    let out = retry_sh(&["--group", &group, "--budget", "--max", "1"], "exit 6").run();
    out.expect_code(6);
    assert!(
        !out.stderr_text().contains("warning"),
        "{}",
        out.stderr_text()
    );
    let file = dir.join(format!("{group}.json"));
    let stored = file.exists();
    let _ = std::fs::remove_file(&file);
    let _ = std::fs::remove_file(dir.join(format!("{group}.lock")));
    assert!(stored, "nothing stored in {}", dir.display());

    // A user whose home does not exist (nobody's is /nonexistent): the
    // store fails open like any other.
    if !super::root() {
        return;
    }
    let id = super::NOBODY.to_string();
    let run = |extra: &[&str]| {
        let mut cmd = std::process::Command::new("setpriv");
        cmd.args(["--reuid", &id, "--regid", &id, "--clear-groups"])
            .arg(crate::util::bin())
            .args(["--group", "g", "--budget"])
            .args(extra)
            .args(["--", "sh", "-c", "exit 7"])
            .env_clear()
            .env("PATH", "/usr/bin:/bin");
        cmd.output().expect("setpriv")
    };
    let out = run(&[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(7), "{err}");
    assert!(
        err.contains("HOME is unset and /nonexistent") && err.contains("running without it"),
        "{err}"
    );
    let out = run(&["--state-required"]);
    assert_eq!(out.status.code(), Some(125));
}

#[test]
fn a_stopped_lock_holder_leaves_the_fleet_paced_and_the_store_is_tried_again() {
    use super::{events, herd, strings};
    let store = Store::local();
    let s = store.arg();
    // The store exists; a process takes the group's lock and is stopped.
    retry_sh(&["--group", "g", "--state", &s, "--pace", "1/s"], "exit 0")
        .run()
        .expect_code(0);
    // -o: flock alone holds the lock, not the command it runs.
    let mut holder = std::process::Command::new("flock")
        .arg("-o")
        .arg(Path::new(&s).join("g.lock"))
        .args(["sleep", "60"])
        .spawn()
        .expect("flock (util-linux, installed by scripts/test.sh)");
    let pid = nix::unistd::Pid::from_raw(holder.id() as i32);
    let until = std::time::Instant::now() + Duration::from_secs(10);
    while !std::fs::read_to_string("/proc/locks")
        .unwrap_or_default()
        .lines()
        .any(|l| l.split_whitespace().nth(4) == Some(&holder.id().to_string()))
    {
        assert!(
            std::time::Instant::now() < until,
            "flock never took the lock"
        );
        thread::sleep(Duration::from_millis(20));
    }
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGSTOP).expect("stop");
    // Let the holder go after a while (later than a store wait of 3s after
    // the first attempts): the runs go back to the store.
    let release = thread::spawn(move || {
        thread::sleep(Duration::from_millis(5000));
        let _ = holder.kill();
        let _ = holder.wait();
    });
    let dir = scratch();
    let (n, rate) = (20, 100.0);
    let args = strings(&[
        "--group", "g", "--state", &s, "--pace", "100/s", "--max", "30", "--base", "1ms", "--cap",
        "1ms",
    ]);
    // The first attempts take a second, so that the whole fleet has started
    // (and met the stopped holder) before the retries are counted.
    let logs = herd(
        n,
        &args,
        "[ \"$RETRY_ATTEMPT\" = 1 ] && sleep 1; exit 1",
        dir.path(),
    );
    release.join().expect("release");
    let mut starts: Vec<f64> = events(&logs, "attempt_start")
        .filter(|e| e["attempt"].as_u64() > Some(1))
        .map(epoch_secs)
        .collect();
    assert_eq!(starts.len(), n * 29);
    starts.sort_by(f64::total_cmp);
    let span = starts[starts.len() - 1] - starts[0];
    let got = (starts.len() - 1) as f64 / span;
    eprintln!(
        "{n} runs, holder stopped: {} retries in {span:.2}s = {got:.0}/s (pace {rate}/s)",
        starts.len()
    );
    let mut buckets = vec![0; (span / 0.25) as usize + 1];
    for t in &starts {
        buckets[((t - starts[0]) / 0.25) as usize] += 1;
    }
    eprintln!("per 250ms: {buckets:?}");
    // Nor a burst when the holder goes and the runs go back to the store
    // (a quarter second at the rate is 25 retries).
    assert!(
        buckets.iter().all(|b| *b < 80),
        "retries per 250ms: {buckets:?}"
    );
    assert!(got < rate * 1.5, "{got:.0} retries/s with --pace {rate}/s");
    // Each run warned once, and went back to the store once it was free.
    for (_, log) in &logs {
        let warnings = log.iter().filter(|e| e["event"] == "warning").count();
        assert_eq!(warnings, 1, "{log:?}");
    }
    let back = events(&logs, "note")
        .filter(|e| {
            e["message"]
                .as_str()
                .is_some_and(|m| m.contains("in use again"))
        })
        .count();
    assert!(
        back > 0,
        "no run went back to the store: {:?}",
        logs[0]
            .1
            .iter()
            .filter(|e| e["event"] == "note" || e["event"] == "warning")
            .collect::<Vec<_>>()
    );
}
