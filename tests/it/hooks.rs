//! `--on-retry` and `--on-give-up`: shell commands between attempts and at
//! the end, told what happened in their environment, writing to stderr,
//! never changing the run, and supervised as attempts are.

use std::time::Duration;

use nix::sys::signal::Signal;

use crate::util::{gone_within, path_str, read_pid, retry, retry_sh, scratch, wait_for_file};

const SETTLE: Duration = Duration::from_secs(5);

const REPORT: &str =
    "echo \"hook attempt=$RETRY_ATTEMPT code=$RETRY_EXIT_CODE next=$RETRY_NEXT_DELAY_MS\"";

#[test]
fn on_retry_runs_after_each_failure_but_the_last_and_writes_to_stderr() {
    let out = retry_sh(
        &[
            "-q",
            "--max=3",
            "--base",
            "100ms",
            "--jitter",
            "none",
            "--on-retry",
            REPORT,
        ],
        "echo attempt $RETRY_ATTEMPT; exit 4",
    )
    .run();
    out.expect_code(4);
    // The command's stdout is its own.
    assert_eq!(out.stdout_text(), "attempt 1\nattempt 2\nattempt 3\n");
    let lines = out.stderr_lines();
    assert_eq!(
        lines[..2],
        [
            "hook attempt=1 code=4 next=100",
            "hook attempt=2 code=4 next=200"
        ],
        "{lines:?}"
    );
    assert_eq!(lines.len(), 3, "never after the last attempt: {lines:?}");
}

#[test]
fn the_hook_runs_before_the_wait_and_the_wait_counts_from_the_failure() {
    let dir = scratch();
    let log = path_str(&dir.path().join("log"));
    // Each step appends its time in ms. The hook takes 900 ms of the 1 s
    // wait, and stamps its end: a wait counted from the hook's end would
    // put the second attempt 1000 ms or more after that stamp, the right
    // one about 100 ms after it (plus what a loaded machine adds).
    let stamp = format!("echo $1 $(date +%s%3N) >> {log}");
    let out = retry_sh(
        &[
            "-qq",
            "--max=2",
            "--base",
            "1s",
            "--jitter",
            "none",
            "--on-retry",
            &format!("sh -c '{stamp}' - hook; sleep 0.9; sh -c '{stamp}' - hook-done"),
        ],
        &format!("sh -c '{stamp}' - attempt; exit 1"),
    )
    .run();
    out.expect_code(1);
    let text = std::fs::read_to_string(dir.path().join("log")).unwrap();
    let steps: Vec<(String, u64)> = text
        .lines()
        .map(|l| {
            let (what, ms) = l.split_once(' ').unwrap();
            (what.to_string(), ms.parse().unwrap())
        })
        .collect();
    let names: Vec<&str> = steps.iter().map(|(w, _)| w.as_str()).collect();
    assert_eq!(names, ["attempt", "hook", "hook-done", "attempt"], "{text}");
    let gap = steps[3].1 - steps[0].1;
    assert!(
        gap >= 950,
        "the second attempt came {gap} ms after the first: {text}"
    );
    // The regression's bound is 1000 ms; 50 ms less allows for the
    // clock's rounding, and leaves 850 ms for the machine's load.
    let after_hook = steps[3].1 - steps[2].1;
    assert!(
        after_hook < 950,
        "the second attempt came {after_hook} ms after the hook ended: the wait counted from there: {text}"
    );
}

#[test]
fn a_failing_hook_is_logged_and_changes_nothing() {
    let out = retry_sh(
        &[
            "--max=3",
            "--base",
            "10ms",
            "--on-retry",
            "echo oops >&2; exit 9",
        ],
        "[ $RETRY_ATTEMPT = 2 ]",
    )
    .run();
    out.expect_code(0);
    let err = out.stderr_text();
    assert!(err.contains("oops"), "{err}");
    assert!(
        err.contains("warning: the --on-retry command failed with exit 9"),
        "{err}"
    );
    assert!(err.contains("succeeded on attempt 2/3"), "{err}");
}

#[test]
fn the_exit_code_is_empty_when_the_attempt_has_none() {
    let out = retry_sh(
        &[
            "-q",
            "--max=2",
            "--base",
            "10ms",
            "--timeout",
            "200ms",
            "--on-retry",
            REPORT,
        ],
        "exec sleep 30",
    )
    .run();
    out.expect_code(124);
    assert!(
        out.stderr_text().contains("hook attempt=1 code= next="),
        "{}",
        out.stderr_text()
    );
}

#[test]
fn on_give_up_runs_once_when_the_run_gives_up_and_never_after_a_success() {
    let out = retry_sh(
        &["-q", "--max=2", "--base", "10ms", "--on-give-up", REPORT],
        "exit 3",
    )
    .run();
    out.expect_code(3);
    let lines = out.stderr_lines();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines[0].contains("giving up"), "{lines:?}");
    assert_eq!(lines[1], "hook attempt=2 code=3 next=");
    // A permanent failure gives up too; the status is retry's own.
    let out = retry(["-q", "--on-give-up", REPORT, "--", "no-such-command-here"]).run();
    out.expect_code(127);
    assert!(
        out.stderr_text()
            .ends_with("hook attempt=1 code=127 next=\n")
    );
    // A success: nothing.
    let out = retry_sh(&["-q", "--on-give-up", REPORT], "true").run();
    out.expect_code(0);
    assert_eq!(out.stderr_text(), "");
}

#[test]
fn on_give_up_still_runs_when_max_time_ran_out() {
    let out = retry_sh(
        &[
            "-q",
            "--max-time",
            "300ms",
            "--on-give-up",
            "sleep 0.5; echo paged",
        ],
        "exec sleep 30",
    )
    .run();
    out.expect_code(124);
    assert!(
        out.stderr_text().ends_with("paged\n"),
        "{}",
        out.stderr_text()
    );
}

/// Starts a run whose hook (`flag`) records its pid and sleeps; returns
/// once the hook runs, with the hook's pid.
fn start_hook(flag: &str, extra: &[&str]) -> (crate::util::Running, tempfile::TempDir, i32) {
    let dir = scratch();
    let pid_file = dir.path().join("hook");
    let hook = format!("echo $$ > {}; sleep 30", path_str(&pid_file));
    let mut args = vec!["--base", "10ms", flag, hook.as_str()];
    args.extend_from_slice(extra);
    let running = retry_sh(&args, "exit 1").spawn();
    let pid = read_pid(&pid_file);
    (running, dir, pid)
}

#[test]
fn a_signal_stops_the_hook_and_ends_the_run() {
    let (running, dir, hook) = start_hook("--on-retry", &["--max=5"]);
    // The hook leads its own process group, not retry's.
    let pgid = nix::unistd::getpgid(Some(nix::unistd::Pid::from_raw(hook))).unwrap();
    assert_eq!(pgid.as_raw(), hook);
    assert_ne!(pgid, nix::unistd::getpgid(Some(running.pid())).unwrap());
    running.signal(Signal::SIGTERM);
    let out = running.wait();
    out.expect_code(143);
    assert!(gone_within(hook, SETTLE), "the hook outlived retry");
    assert!(
        out.stderr_text().contains("interrupted by SIGTERM"),
        "{}",
        out.stderr_text()
    );
    assert!(out.elapsed < Duration::from_secs(10), "{:?}", out.elapsed);
    drop(dir);
}

#[test]
fn on_give_up_is_not_run_when_a_signal_ends_the_run() {
    let dir = scratch();
    let gave_up = dir.path().join("gave-up");
    let ready = dir.path().join("ready");
    let running = retry_sh(
        &["--on-give-up", &format!("touch {}", path_str(&gave_up))],
        &format!("touch {}; exec sleep 30", path_str(&ready)),
    )
    .spawn();
    wait_for_file(&ready, SETTLE);
    running.signal(Signal::SIGTERM);
    running.wait().expect_code(143);
    assert!(!gave_up.exists(), "the give-up hook ran after a signal");
}

#[test]
fn a_hook_is_bounded_by_max_time() {
    let dir = scratch();
    let pid_file = dir.path().join("hook");
    let hook = format!("echo $$ > {}; exec sleep 30", path_str(&pid_file));
    let out = retry_sh(
        &["--max-time", "1s", "--base", "10ms", "--on-retry", &hook],
        "exit 1",
    )
    .run();
    out.expect_code(1);
    let err = out.stderr_text();
    assert!(
        err.contains("--max-time ran out during the --on-retry command"),
        "{err}"
    );
    assert!(out.elapsed < Duration::from_secs(5), "{:?}", out.elapsed);
    assert!(gone_within(read_pid(&pid_file), SETTLE));
}

#[test]
fn a_hook_that_ignores_the_stop_signal_is_killed_after_kill_after() {
    let dir = scratch();
    let pid_file = dir.path().join("hook");
    let hook = format!("trap '' TERM; echo $$ > {}; sleep 30", path_str(&pid_file));
    let out = retry_sh(
        &[
            "--max-time",
            "500ms",
            "-k",
            "500ms",
            "--base",
            "10ms",
            "--on-retry",
            &hook,
        ],
        "exit 1",
    )
    .run();
    out.expect_code(1);
    assert!(
        out.elapsed >= Duration::from_millis(900),
        "KILL came early: {:?}",
        out.elapsed
    );
    assert!(out.elapsed < Duration::from_secs(5), "{:?}", out.elapsed);
    assert!(gone_within(read_pid(&pid_file), SETTLE));
}

#[test]
fn hooks_run_in_http_mode_too() {
    let out = retry([
        "-q",
        "--max=2",
        "--base",
        "10ms",
        "--http",
        "http://127.0.0.1:9/",
        "--on-retry",
        REPORT,
        "--on-give-up",
        "echo gave up $RETRY_EXIT_CODE",
    ])
    .run();
    out.expect_code(7);
    let err = out.stderr_text();
    assert!(err.contains("hook attempt=1 code= next="), "{err}");
    assert!(err.ends_with("gave up 7\n"), "{err}");
}

#[test]
fn an_empty_hook_is_a_usage_error() {
    for flag in ["--on-retry", "--on-give-up"] {
        let out = retry([flag, " ", "--", "true"]).run();
        out.expect_code(2);
        assert!(out.stderr_text().contains(flag), "{}", out.stderr_text());
    }
}

/// The reports' settings belong to the run, in every mode: a hook of a TCP
/// (or HTTP) probe gets them no more than a COMMAND does (a retry inside
/// it would report to them too, and they may name a secret).
#[test]
fn a_probe_modes_hooks_do_not_inherit_the_reports_settings() {
    let dir = scratch();
    let password = dir.path().join("gateway.pw");
    std::fs::write(&password, "hunter2\n").expect("write");
    let closed = format!("127.0.0.1:{}", crate::util::free_port());
    let show = "echo \"hook sees ${RETRY_METRICS_PUSH_PASSWORD_FILE-unset}\"";
    let out = retry([
        "-q",
        "--max=2",
        "--base=10ms",
        "--tcp",
        &closed,
        "--on-retry",
        show,
        "--on-give-up",
        show,
    ])
    .env("RETRY_METRICS_PUSH_PASSWORD_FILE", &password)
    .run();
    out.expect_code(7);
    let lines = out.stderr_lines();
    let seen: Vec<&String> = lines
        .iter()
        .filter(|l| l.starts_with("hook sees"))
        .collect();
    assert_eq!(seen, ["hook sees unset", "hook sees unset"], "{lines:?}");
}
