//! The stores themselves: TLS to Redis, failing open or closed, private
//! files, locks that give way, usage errors, and both stores carrying out
//! the same pure rules.

use super::*;

#[test]
fn rediss_urls_speak_tls_and_check_the_certificate() {
    let (redis, ca) = Redis::tls();
    let args = [
        "--group",
        "g",
        "--state",
        &redis.url,
        "--budget",
        "--state-required",
    ];
    // Trusted through SSL_CERT_FILE, as for HTTP mode.
    retry_sh(&args, "exit 0")
        .env("SSL_CERT_FILE", &ca)
        .run()
        .expect_code(0);
    let out = retry([
        "--group",
        "g",
        "--state",
        &redis.url,
        "--state-show",
        "--budget",
        "10",
    ])
    .env("SSL_CERT_FILE", &ca)
    .run();
    out.expect_code(0);
    assert!(
        out.stdout_text().contains("budget:  10 of 10 tokens"),
        "{}",
        out.stdout_text()
    );
    // Not trusted: the store cannot be used.
    let out = retry_sh(&args, "exit 0").run();
    out.expect_code(125);
    assert!(
        out.stderr_text().contains("certificate"),
        "{}",
        out.stderr_text()
    );
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
    retry_sh(&["--group", "g", "--state", &s, "--budget"], "exit 0")
        .run()
        .expect_code(0);
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
    assert!(
        out.stderr_text().contains("stayed locked"),
        "{}",
        out.stderr_text()
    );
    assert!(
        out.elapsed >= Duration::from_secs(3) && out.elapsed < Duration::from_secs(8),
        "{:?}",
        out.elapsed
    );
}

#[test]
fn a_lock_wait_gives_way_to_max_time_and_to_signals() {
    let store = Store::local();
    let s = store.arg();
    let _held = hold_lock(&s, "g");
    let out = retry_sh(
        &[
            "--group",
            "g",
            "--state",
            &s,
            "--breaker",
            "--max-time",
            "300ms",
        ],
        "exit 0",
    )
    .run();
    assert_eq!(out.code(), 124, "{}", out.stderr_text());
    assert!(
        out.elapsed < Duration::from_millis(1500),
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

// ---- both stores carry out the same rules ----

/// The same sequence of operations on the pure rules, the local store and
/// Redis gives the same answers (pace waits compared to the millisecond:
/// each store reads its own clock).
#[test]
fn both_stores_apply_the_pure_rules() {
    use retry_tool::state::rules::{
        Admit, Breaker, Budget, GroupState, Op, Pace, Plan, Reply, apply,
    };
    use retry_tool::state::{AnyStore, Store as _, StoreAt};

    const S: u64 = 1_000_000;
    const M: u64 = 60 * S;
    let budget = Budget {
        max_milli: 4_000,
        ratio_milli: 500,
    };
    let breaker = Breaker {
        threshold: 2,
        cooldown: 3_600 * S,
    };
    let pace = Pace {
        interval: 3_600 * S,
        burst: 2,
    };
    let plan = |deadline_in| Op::Plan {
        delay: 0,
        deadline_in,
        budget: Some(budget),
        pace: Some(pace),
    };
    let finish = |success, trial| Op::Finish {
        breaker,
        success,
        trial,
    };
    let record = |success| Op::Record { budget, success };
    let ops = [
        plan(None),
        plan(None),
        plan(Some(10 * S)),
        plan(None),
        record(false),
        record(false),
        plan(None),
        record(true),
        plan(None),
        Op::Admit { lease: 60 * S },
        finish(false, false),
        finish(false, false),
        Op::Admit { lease: 60 * S },
        finish(true, false),
        Op::Admit { lease: 60 * S },
        finish(false, false),
        finish(false, false),
        finish(false, false),
        Op::Admit { lease: 60 * S },
    ];
    // Durations are what differ between clocks, and time passes between the
    // calls (under load, seconds): compare them to the minute.
    let coarse = |r: Reply| match r {
        Reply::Plan(Plan::Go { wait, paced }) => Reply::Plan(Plan::Go {
            wait: (wait + M / 2) / M,
            paced: (paced + M / 2) / M,
        }),
        Reply::Plan(Plan::PastDeadline { wait }) => Reply::Plan(Plan::PastDeadline {
            wait: (wait + M / 2) / M,
        }),
        Reply::Admit(Admit::Open { wait }) => Reply::Admit(Admit::Open {
            wait: (wait + M / 2) / M,
        }),
        other => other,
    };
    let mut model = GroupState::default();
    let now = 1_700_000_000 * S;
    let want: Vec<Reply> = ops
        .iter()
        .map(|op| coarse(apply(&mut model, now, *op)))
        .collect();
    assert_eq!(
        want[..4],
        [
            Reply::Plan(Plan::Go { wait: 0, paced: 0 }),
            Reply::Plan(Plan::Go { wait: 0, paced: 0 }),
            Reply::Plan(Plan::PastDeadline { wait: 60 }),
            Reply::Plan(Plan::Go {
                wait: 60,
                paced: 60
            }),
        ]
    );

    let dir = scratch();
    let redis = Redis::unix();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    for at in [
        StoreAt::Dir(dir.path().join("state")),
        StoreAt::Url(redis.url.clone()),
    ] {
        let mut store = AnyStore::new(&at).expect("store");
        rt.block_on(store.open()).expect("open");
        let got: Vec<Reply> = ops
            .iter()
            .map(|op| coarse(rt.block_on(store.apply("same", *op)).expect("apply")))
            .collect();
        assert_eq!(got, want, "{at:?}");
        let Reply::Show { state, .. } = rt.block_on(store.apply("same", Op::Show)).expect("show")
        else {
            panic!("show");
        };
        assert_eq!(
            (state.tokens_milli, state.failures),
            (model.tokens_milli, model.failures),
            "{at:?}"
        );
    }
    // One key per group, named for the group, expiring a week after its last change.
    let sock = redis.url.trim_start_matches("unix://");
    let mut c = Conn::Unix(UnixStream::connect(sock).expect("connect"));
    c.write_all(b"PTTL retry:{same}:state\r\n").expect("send");
    let mut buf = [0u8; 64];
    let n = c.read(&mut buf).expect("reply");
    let reply = String::from_utf8_lossy(&buf[..n]);
    let ttl: u64 = reply
        .trim()
        .trim_start_matches(':')
        .parse()
        .unwrap_or_else(|_| panic!("PTTL reply {reply:?}"));
    let week = 7 * 24 * 3600 * 1000;
    assert!(ttl > week - 60_000 && ttl <= week, "{ttl}");
}
