//! A store that cannot be turned against its caller: planted links, a
//! directory or file of another user, stored times beyond what the flags
//! allow. The second user is real (`nobody`, through setpriv).

use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
use std::path::Path;
use std::thread;
use std::time::Duration;

use super::{NOBODY, Redis, as_nobody, root};
use crate::util::{path_str, retry_sh, scratch};

/// Every name in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn links_planted_in_the_store_are_never_followed() {
    let t = scratch();
    let store = t.path().join("state");
    let s = path_str(&store);
    // The store exists (a first run made it).
    retry_sh(&["--group", "first", "--state", &s, "--budget"], "exit 0")
        .run()
        .expect_code(0);
    let victim = t.path().join("victim");
    std::fs::write(&victim, b"precious").expect("victim");
    // Where earlier versions put their temporary file: never opened now.
    symlink(&victim, store.join("a.json.tmp")).expect("link");
    // A lock file that is a link, to a file or to nowhere.
    symlink(&victim, store.join("b.lock")).expect("link");
    let missing = t.path().join("created-through-a-link");
    symlink(&missing, store.join("c.lock")).expect("link");

    let fail_once = ["--budget", "--max", "1"];
    let run = |group: &str| {
        let mut args = vec!["--group", group, "--state", &s];
        args.extend(fail_once);
        retry_sh(&args, "exit 3").run()
    };
    let out = run("a");
    out.expect_code(3);
    assert!(
        !out.stderr_text().contains("warning"),
        "{}",
        out.stderr_text()
    );
    assert!(
        std::fs::symlink_metadata(store.join("a.json"))
            .expect("a.json")
            .file_type()
            .is_file()
    );
    for group in ["b", "c"] {
        let out = run(group);
        // The run goes on without the store, saying why.
        out.expect_code(3);
        let err = out.stderr_text();
        assert!(
            err.contains(&format!("{group}.lock: is a symbolic link: not followed")),
            "{err}"
        );
    }
    assert_eq!(std::fs::read(&victim).expect("victim"), b"precious");
    assert!(
        !missing.exists(),
        "a file was created through a dangling link"
    );
    // Nothing half-written was left behind.
    assert!(
        names(&store)
            .iter()
            .all(|n| !n.ends_with(".tmp") || n == "a.json.tmp"),
        "{:?}",
        names(&store)
    );
}

#[test]
fn a_store_directory_made_by_another_user_is_refused() {
    if !root() {
        return;
    }
    let t = scratch();
    std::fs::set_permissions(t.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    // XDG_STATE_HOME on a directory every user may write, as /tmp.
    let shared = t.path().join("shared");
    std::fs::create_dir(&shared).expect("shared");
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).expect("chmod");
    let victim = t.path().join("victim");
    std::fs::write(&victim, b"precious").expect("victim");
    let far = (259u64 * 365 * 24 * 3600 + 1_700_000_000) * 1_000_000;
    // Another user gets there first: retry/ with links to root's file, and
    // a breaker held open for 259 years.
    let planted = shared.join("retry");
    as_nobody(&format!(
        "mkdir -m 0777 '{d}' && ln -s '{v}' '{d}/g.json.tmp' && ln -s '{v}' '{d}/g.lock' && \
         printf '{{\"open_until\":{far},\"failures\":9}}' > '{d}/g.json' && chmod 0666 '{d}/g.json'",
        d = path_str(&planted),
        v = path_str(&victim),
    ));
    let ran = t.path().join("ran");
    let script = format!("touch '{}'; exit 4", path_str(&ran));
    let args = ["--group", "g", "--budget", "--breaker", "--max", "1"];
    let out = retry_sh(&args, &script)
        .env("XDG_STATE_HOME", &shared)
        .run();
    // One warning, and the run goes on without shared state.
    out.expect_code(4);
    let err = out.stderr_text();
    let warnings: Vec<_> = err.lines().filter(|l| l.contains("warning")).collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(
        warnings[0].contains(&format!("belongs to another user (uid {NOBODY})"))
            && warnings[0].ends_with("not used; running without it"),
        "{err}"
    );
    // The place is named once, not once for the store and once for why.
    assert_eq!(
        warnings[0].matches(path_str(&planted).as_str()).count(),
        1,
        "{err}"
    );
    assert!(ran.exists());
    assert_eq!(std::fs::read(&victim).expect("victim"), b"precious");
    assert_eq!(std::fs::metadata(&victim).expect("victim").uid(), 0);
    // --state-required: 125, and nothing run.
    std::fs::remove_file(&ran).expect("rm");
    let mut required = args.to_vec();
    required.push("--state-required");
    let out = retry_sh(&required, &script)
        .env("XDG_STATE_HOME", &shared)
        .run();
    out.expect_code(125);
    assert!(!ran.exists(), "the command ran");
    // --state-show says why too.
    let out = crate::util::retry(["--group", "g", "--state-show"])
        .env("XDG_STATE_HOME", &shared)
        .run();
    out.expect_code(125);
    assert!(out.stderr_text().contains("belongs to another user"));
    assert_eq!(std::fs::read(&victim).expect("victim"), b"precious");
}

#[test]
fn a_loose_store_directory_or_another_users_file_in_it_is_refused() {
    let t = scratch();
    let store = t.path().join("state");
    let s = path_str(&store);
    let args = ["--group", "g", "--state", &s, "--budget", "--max", "1"];
    retry_sh(&args, "exit 5").run().expect_code(5);
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let out = retry_sh(&args, "exit 5").run();
    out.expect_code(5);
    assert!(
        out.stderr_text()
            .contains("is writable by every user (mode 0777)"),
        "{}",
        out.stderr_text()
    );
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    let file = store.join("g.json");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o622)).expect("chmod");
    let out = retry_sh(&args, "exit 5").run();
    assert!(
        out.stderr_text()
            .contains("g.json is writable by other users"),
        "{}",
        out.stderr_text()
    );
    if !root() {
        return;
    }
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    std::os::unix::fs::chown(&file, Some(NOBODY), Some(NOBODY)).expect("chown");
    let out = retry_sh(&args, "exit 5").run();
    out.expect_code(5);
    assert!(
        out.stderr_text()
            .contains(&format!("g.json belongs to another user (uid {NOBODY})")),
        "{}",
        out.stderr_text()
    );
    assert_eq!(std::fs::metadata(&file).expect("g.json").uid(), NOBODY);
}

#[test]
fn stored_times_beyond_what_the_flags_allow_are_bounded() {
    // Anyone who can write to the Redis server can write the group's
    // state: a breaker open for 259 years, a pace schedule as far ahead.
    let redis = Redis::unix();
    let far = ((259u64 * 365 * 24 * 3600 + 1_700_000_000) * 1_000_000).to_string();
    redis.cmd(
        None,
        &[
            "HSET",
            "retry:{g}:state",
            "open",
            &far,
            "fail",
            "9",
            "tat",
            &far,
        ],
    );
    let breaker = [
        "--group",
        "g",
        "--state",
        &redis.url,
        "--breaker",
        "3:1s",
        "--max",
        "1",
    ];
    let out = retry_sh(&breaker, "exit 0").run();
    out.expect_code(75);
    assert!(
        out.stderr_text().contains("let through in 1s"),
        "{}",
        out.stderr_text()
    );
    thread::sleep(Duration::from_millis(1100));
    retry_sh(&breaker, "exit 0").run().expect_code(0);
    // 10,000 slots at 10000/s is one second: the retry waits that long at
    // most, where it would have waited 259 years.
    let paced = [
        "--group",
        "g",
        "--state",
        &redis.url,
        "--pace",
        "10000/s",
        "--max",
        "2",
        "--base",
        "1ms",
        "--max-time",
        "20s",
    ];
    let out = retry_sh(&paced, "[ \"$RETRY_ATTEMPT\" = 2 ]").run();
    out.expect_code(0);
    assert!(
        out.elapsed > Duration::from_millis(900) && out.elapsed < Duration::from_secs(10),
        "{:?}: {}",
        out.elapsed,
        out.stderr_text()
    );

    // The local store bounds its own stored times the same way: a circuit
    // opened with a cooldown of an hour, now run with one of 1s.
    let t = scratch();
    let s = path_str(&t.path().join("state"));
    let hour = [
        "--group",
        "h",
        "--state",
        &s,
        "--breaker",
        "1:1h",
        "--max",
        "1",
    ];
    retry_sh(&hour, "exit 1").run().expect_code(1);
    assert!(show_breaker(&s, "1:1h").contains("half-open in 59m"));
    let second = [
        "--group",
        "h",
        "--state",
        &s,
        "--breaker",
        "1:1s",
        "--max",
        "1",
    ];
    let out = retry_sh(&second, "exit 0").run();
    out.expect_code(75);
    assert!(
        out.stderr_text().contains("let through in 1s"),
        "{}",
        out.stderr_text()
    );
}

fn show_breaker(s: &str, breaker: &str) -> String {
    let out = crate::util::retry([
        "--group",
        "h",
        "--state",
        s,
        "--state-show",
        "--breaker",
        breaker,
    ])
    .run();
    out.expect_code(0);
    out.stdout_text()
}
