//! `--report FILE` and GitHub Actions step outputs, read by jq as a
//! pipeline would: a success after retries, giving up at `--max` and at
//! `--max-time`, a permanent failure, SIGTERM, an HTTP status, a TCP probe,
//! the step outputs' lines, and the usage errors that stop a run first.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use nix::sys::signal::Signal;

use super::{Answer, Recorder, read};
use crate::util::{free_port, path_str, retry, retry_sh, scratch, wait_for_file};

/// `jq -r FILTER FILE`'s output, trimmed.
fn jq(filter: &str, file: &Path) -> String {
    let out = std::process::Command::new("jq")
        .args(["-r", filter])
        .arg(file)
        .output()
        .expect("jq runs (the Debian package jq; scripts/test.sh installs it)");
    assert!(
        out.status.success(),
        "jq {filter} {}: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The fields a pipeline branches on: outcome, limit, attempts, exit_code,
/// http_status and signal, space separated (null for an absent one).
fn summary(file: &Path) -> String {
    jq(
        r#"[.outcome, .limit, .attempts, .exit_code, .http_status, .signal] | map(tostring) | join(" ")"#,
        file,
    )
}

#[test]
fn a_success_after_retries_reports_attempts_waits_seed_and_the_logs_run_id() {
    let dir = scratch();
    let report = dir.path().join("report.json");
    let log = dir.path().join("log.jsonl");
    let count = dir.path().join("n");
    let script = format!(
        "n=$(cat {c} 2>/dev/null || echo 0); echo $((n+1)) > {c}; [ $n -ge 2 ]",
        c = path_str(&count)
    );
    let args = [
        "--base",
        "50ms",
        "--jitter",
        "none",
        "--seed",
        "1234",
        "--report",
        &path_str(&report),
        "--log-format",
        "json",
        "--log-file",
        &path_str(&log),
    ];
    retry_sh(&args, &script).run().expect_code(0);
    assert_eq!(summary(&report), "success null 3 0 null null");
    assert_eq!(jq(".version, .seed, .reason", &report), "1\n1234");
    // Two waits of 50 ms and 100 ms, no jitter: at least 150 ms waited,
    // and the whole run at least that long.
    let waited: u64 = jq(".waited_ms", &report).parse().expect("a number");
    let elapsed: u64 = jq(".elapsed_ms", &report).parse().expect("a number");
    assert!(waited >= 150 && elapsed >= waited, "{waited} {elapsed}");
    // The run id is the log's.
    let first = read(&log);
    let run = first.lines().next().expect("a log line");
    let run: serde_json::Value = serde_json::from_str(run).expect("JSON");
    assert_eq!(jq(".run", &report), run["run"].as_str().expect("run"));
    assert!(
        humantime::parse_rfc3339(&jq(".started_at", &report)).is_ok(),
        "{}",
        read(&report)
    );
    // Nothing else is left beside it.
    let mut names: Vec<_> = std::fs::read_dir(dir.path())
        .expect("list")
        .map(|e| e.expect("entry").file_name())
        .collect();
    names.sort();
    assert_eq!(names, ["log.jsonl", "n", "report.json"]);
}

#[test]
fn giving_up_names_the_limit_max_or_max_time() {
    let dir = scratch();
    let report = dir.path().join("r.json");
    let r = path_str(&report);
    retry(["-n", "2", "-b", "10ms", "--report", &r, "--", "false"])
        .run()
        .expect_code(1);
    assert_eq!(summary(&report), "gave-up max 2 1 null null");
    retry(["--max-time", "300ms", "--report", &r, "--", "sleep", "5"])
        .run()
        .expect_code(124);
    assert_eq!(summary(&report), "gave-up max-time 1 124 null null");
    assert!(jq(".reason", &report).contains("--max-time"));
}

#[test]
fn a_permanent_failure_and_a_signal_death_are_told_apart() {
    let dir = scratch();
    let report = dir.path().join("r.json");
    let r = path_str(&report);
    retry(["--report", &r, "--", "no-such-command-here"])
        .run()
        .expect_code(127);
    assert_eq!(summary(&report), "permanent null 1 127 null null");
    retry_sh(&["-n", "1", "--report", &r], "kill -KILL $$")
        .run()
        .expect_code(137);
    assert_eq!(summary(&report), "gave-up max 1 137 null SIGKILL");
}

#[test]
fn a_run_ended_by_sigterm_still_writes_its_report() {
    let dir = scratch();
    let report = dir.path().join("r.json");
    let started = dir.path().join("started");
    let running = retry_sh(
        &["--report", &path_str(&report)],
        &format!("touch {}; exec sleep 30", path_str(&started)),
    )
    .spawn();
    wait_for_file(&started, Duration::from_secs(20));
    running.signal(Signal::SIGTERM);
    running.wait().expect_code(143);
    assert_eq!(summary(&report), "interrupted null 1 143 null SIGTERM");
}

#[test]
fn an_http_run_reports_the_last_status() {
    let server = Recorder::start(|_, n| Answer::Status(if n == 0 { 503 } else { 404 }));
    let dir = scratch();
    let report = dir.path().join("r.json");
    retry([
        "--http",
        &server.url("/health"),
        "-b",
        "10ms",
        "--report",
        &path_str(&report),
    ])
    .run()
    .expect_code(22);
    assert_eq!(summary(&report), "permanent null 2 22 404 null");
}

#[test]
fn a_tcp_probe_that_gives_up_reports_curls_status() {
    let dir = scratch();
    let report = dir.path().join("r.json");
    let target = format!("127.0.0.1:{}", free_port());
    retry([
        "--tcp",
        &target,
        "-n",
        "2",
        "-b",
        "10ms",
        "--report",
        &path_str(&report),
    ])
    .run()
    .expect_code(7);
    assert_eq!(summary(&report), "gave-up max 2 7 null null");
}

#[test]
fn in_github_actions_the_step_outputs_are_appended() {
    let dir = scratch();
    let outputs = dir.path().join("github_output");
    std::fs::write(&outputs, "earlier=1\n").expect("write");
    let o = path_str(&outputs);
    retry(["-n", "2", "-b", "10ms", "--seed", "9", "--", "false"])
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_OUTPUT", &o)
        .run()
        .expect_code(1);
    let text = read(&outputs);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 16, "{text}");
    assert_eq!(lines[0], "earlier=1");
    for want in [
        "version=1",
        "outcome=gave-up",
        "limit=max",
        "attempts=2",
        "exit_code=1",
        "http_status=",
        "signal=",
        "seed=9",
        "server_hint=",
        "reason=no attempts left (last: exit 1)",
    ] {
        assert!(lines.contains(&want), "{want} in {text}");
    }
    // Outside GitHub Actions, or with --github-output never: nothing.
    for (actions, flag) in [("", None), ("true", Some("never"))] {
        let mut args = vec![];
        if let Some(when) = flag {
            args.extend(["--github-output", when]);
        }
        args.extend(["--", "true"]);
        retry(args)
            .env("GITHUB_ACTIONS", actions)
            .env("GITHUB_OUTPUT", &o)
            .run()
            .expect_code(0);
        assert_eq!(read(&outputs), text, "GITHUB_ACTIONS={actions} {flag:?}");
    }
    // always: whenever GITHUB_OUTPUT is set (other runners read it too).
    retry(["--github-output", "always", "--", "true"])
        .env("GITHUB_OUTPUT", &o)
        .run()
        .expect_code(0);
    let after = read(&outputs);
    assert_eq!(after.lines().count(), 16 + 15, "{after}");
    assert!(after[text.len()..].contains("outcome=success\n"), "{after}");
}

#[test]
fn a_report_retry_may_not_write_is_a_usage_error_before_anything_runs() {
    let dir = scratch();
    let ran = dir.path().join("ran");
    let loose = dir.path().join("loose");
    std::fs::create_dir(&loose).expect("mkdir");
    std::fs::set_permissions(&loose, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    for (target, why) in [
        (loose.join("r.json"), "is writable by every user"),
        (
            dir.path().join("missing/r.json"),
            "no such file or directory",
        ),
    ] {
        let out = retry_sh(
            &["--report", &path_str(&target)],
            &format!("touch {}", path_str(&ran)),
        )
        .run();
        out.expect_code(2);
        let err = out.stderr_text();
        assert!(err.contains("--report") && err.contains(why), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(!ran.exists(), "nothing runs");
    }
    assert_eq!(std::fs::read_dir(&loose).expect("list").count(), 0);
    for mode in [
        &["--dry-run"][..],
        &["--simulate", "10", "--outage", "1s"][..],
    ] {
        let mut args = mode.to_vec();
        args.extend(["--report", "r.json"]);
        let out = retry(args).run();
        out.expect_code(2);
        assert!(
            out.stderr_text().contains("--report reports on a run"),
            "{}",
            out.stderr_text()
        );
    }
}

#[test]
fn another_users_file_in_a_sticky_directory_is_refused() {
    let shared = crate::util::Sticky::new();
    let file = shared.join("r.json");
    std::fs::write(&file, "theirs\n").expect("write");
    if !crate::need::root("only root can give a file away") {
        return;
    }
    nix::unistd::chown(&file, Some(nix::unistd::Uid::from_raw(65534)), None).expect("chown");
    let out = retry(["--report", &path_str(&file), "--", "true"]).run();
    out.expect_code(2);
    assert!(
        out.stderr_text().contains("--report"),
        "{}",
        out.stderr_text()
    );
    assert_eq!(read(&file), "theirs\n");
}
