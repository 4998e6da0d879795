//! `--metrics-file`: node_exporter's textfile collector serves it without
//! an error, promtool finds nothing to say, the last success survives a
//! failure, a run ended by SIGTERM still reports, and a directory retry
//! must not write in is refused before anything runs.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::time::Duration;

use nix::sys::signal::Signal;

use super::{Daemon, epoch_now, metrics_dir, promtool, read, sample};
use crate::util::{free_port, path_str, retry, retry_sh, scratch, wait_for_file};

const JOB: &str = "{instance=\"db-1\",job=\"backup\"}";

#[test]
fn node_exporter_serves_the_metrics_file_without_a_scrape_error() {
    let dir = metrics_dir();
    let file = dir.path().join("backup.prom");
    let f = path_str(&file);
    let before = epoch_now();
    // Fails twice, then succeeds: a recovered run.
    let count = scratch();
    let script = format!(
        "n=$(cat {c} 2>/dev/null || echo 0); echo $((n+1)) > {c}; [ $n -ge 2 ]",
        c = path_str(&count.path().join("n"))
    );
    retry_sh(
        &[
            "--base",
            "10ms",
            "--metrics-file",
            &f,
            "--metrics-job",
            "backup",
            "--metrics-label",
            "instance=db-1",
        ],
        &script,
    )
    .run()
    .expect_code(0);
    let meta = std::fs::metadata(&file).expect("metrics file");
    assert_eq!(meta.permissions().mode() & 0o7777, 0o644);
    // Nothing else is left in the directory.
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .expect("list")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(names, ["backup.prom"]);

    let (said, ok) = promtool(&read(&file));
    assert!(ok && said.is_empty(), "promtool: {said}");

    let exporter = Daemon::start(
        "prometheus-node-exporter",
        "prometheus-node-exporter",
        &[
            "--web.listen-address=127.0.0.1:{port}",
            "--collector.disable-defaults",
            "--collector.textfile",
            &format!("--collector.textfile.directory={}", path_str(dir.path())),
        ],
        "/metrics",
    );
    let scrape = exporter.get("/metrics");
    assert_eq!(
        sample(&scrape, "node_textfile_scrape_error", ""),
        Some(0.0),
        "{scrape}"
    );
    assert_eq!(sample(&scrape, "retry_last_run_success", JOB), Some(1.0));
    assert_eq!(sample(&scrape, "retry_last_run_attempts", JOB), Some(3.0));
    assert_eq!(sample(&scrape, "retry_last_run_exit_code", JOB), Some(0.0));
    let outcome = "{instance=\"db-1\",job=\"backup\",outcome=\"success\"}";
    assert_eq!(
        sample(&scrape, "retry_last_run_outcome", outcome),
        Some(1.0)
    );
    let at = sample(&scrape, "retry_last_success_timestamp_seconds", JOB).expect("last success");
    assert!(at >= before - 1.0 && at <= epoch_now() + 1.0, "{at}");
    assert!(
        sample(&scrape, "retry_last_failure_timestamp_seconds", JOB).is_none(),
        "a job that never failed has no failure time"
    );
}

#[test]
fn a_failed_run_keeps_the_last_success_and_a_success_keeps_the_last_failure() {
    let dir = metrics_dir();
    let file = dir.path().join("job.prom");
    let f = path_str(&file);
    let args = |extra: &[&str]| {
        let mut a: Vec<String> = ["--base", "10ms", "--metrics-file", f.as_str()]
            .map(String::from)
            .to_vec();
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    retry(args(&["--", "true"])).run().expect_code(0);
    let first = read(&file);
    let success = |t: &str| sample(t, "retry_last_success_timestamp_seconds", "{job=\"true\"}");
    let failure = |t: &str| sample(t, "retry_last_failure_timestamp_seconds", "{job=\"true\"}");
    let s1 = success(&first).expect("a success time");

    std::thread::sleep(Duration::from_millis(20));
    // The job's name comes from --metrics-job here, not the command's.
    retry(args(&[
        "--max",
        "2",
        "--metrics-job",
        "true",
        "--",
        "sh",
        "-c",
        "exit 3",
    ]))
    .run()
    .expect_code(3);
    let second = read(&file);
    assert_eq!(success(&second), Some(s1), "{second}");
    let f1 = failure(&second).expect("a failure time");
    assert!(f1 > s1);
    assert_eq!(
        sample(&second, "retry_last_run_success", "{job=\"true\"}"),
        Some(0.0)
    );
    assert_eq!(
        sample(&second, "retry_last_run_exit_code", "{job=\"true\"}"),
        Some(3.0)
    );
    let exhausted = "{job=\"true\",outcome=\"exhausted\"}";
    assert_eq!(
        sample(&second, "retry_last_run_outcome", exhausted),
        Some(1.0)
    );
    let (said, ok) = promtool(&second);
    assert!(ok && said.is_empty(), "promtool: {said}");

    std::thread::sleep(Duration::from_millis(20));
    retry(args(&["--", "true"])).run().expect_code(0);
    let third = read(&file);
    assert_eq!(failure(&third), Some(f1), "{third}");
    assert!(success(&third).expect("success") > f1);
}

#[test]
fn a_run_ended_by_sigterm_still_writes_its_metrics_with_143() {
    let dir = metrics_dir();
    let file = dir.path().join("t.prom");
    let marker = dir.path().join("started");
    let running = retry_sh(
        &["--metrics-file", &path_str(&file)],
        &format!("touch {}; exec sleep 30", path_str(&marker)),
    )
    .spawn();
    wait_for_file(&marker, Duration::from_secs(20));
    running.signal(Signal::SIGTERM);
    let out = running.wait();
    out.expect_code(143);
    let text = read(&file);
    assert_eq!(
        sample(&text, "retry_last_run_exit_code", "{job=\"sh\"}"),
        Some(143.0)
    );
    let interrupted = "{job=\"sh\",outcome=\"interrupted\"}";
    assert_eq!(
        sample(&text, "retry_last_run_outcome", interrupted),
        Some(1.0),
        "{text}"
    );
    assert!(
        sample(
            &text,
            "retry_last_failure_timestamp_seconds",
            "{job=\"sh\"}"
        )
        .is_some()
    );
}

#[test]
fn the_breaker_refusing_a_run_is_reported_too() {
    let dir = metrics_dir();
    let state = scratch();
    let file = dir.path().join("b.prom");
    let args = |cmd: &'static str| {
        vec![
            "--max".to_string(),
            "1".into(),
            "--group".into(),
            "nightly".into(),
            "--state".into(),
            path_str(state.path()),
            "--breaker".into(),
            "1:1h".into(),
            "--metrics-file".into(),
            path_str(&file),
            "--".into(),
            cmd.into(),
        ]
    };
    retry(args("false")).run().expect_code(1);
    retry(args("true")).run().expect_code(75);
    let text = read(&file);
    // The group names the job when --metrics-job does not.
    let labels = "{job=\"nightly\"}";
    assert_eq!(
        sample(&text, "retry_last_run_attempts", labels),
        Some(0.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, "retry_last_run_exit_code", labels),
        Some(75.0)
    );
    let refused = "{job=\"nightly\",outcome=\"refused\"}";
    assert_eq!(sample(&text, "retry_last_run_outcome", refused), Some(1.0));
}

#[test]
fn a_directory_retry_must_not_write_in_is_refused_before_anything_runs() {
    let dir = scratch();
    let ran = dir.path().join("ran");
    let log = dir.path().join("log.txt");
    let loose = dir.path().join("loose");
    std::fs::create_dir(&loose).expect("mkdir");
    std::fs::set_permissions(&loose, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    for (target, why) in [
        (loose.join("m.prom"), "is writable by every user"),
        (
            dir.path().join("missing/m.prom"),
            "no such file or directory",
        ),
    ] {
        let out = retry_sh(
            &[
                "--metrics-file",
                &path_str(&target),
                "--log-file",
                &path_str(&log),
            ],
            &format!("touch {}", path_str(&ran)),
        )
        .run();
        out.expect_code(2);
        let err = out.stderr_text();
        assert!(err.contains("--metrics-file") && err.contains(why), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            !ran.exists() && !log.exists(),
            "nothing runs, nothing is created"
        );
    }
    assert_eq!(std::fs::read_dir(&loose).expect("list").count(), 0);
}

#[test]
fn a_directory_the_user_cannot_write_is_a_usage_error() {
    // root writes anywhere: as root, run as nobody against a directory of
    // root's; as anyone else, against a directory of one's own with no
    // write permission.
    let (bin_dir, copy) = crate::util::bin_for_anyone();
    let closed = bin_dir.path().join("textfiles");
    std::fs::create_dir(&closed).expect("mkdir");
    let root = nix::unistd::Uid::effective().is_root();
    let mode = if root { 0o755 } else { 0o555 };
    std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(mode)).expect("chmod");
    let mut cmd = std::process::Command::new(&copy);
    if root {
        cmd = std::process::Command::new("setpriv");
        cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(&copy);
    }
    let out = cmd
        .args(["--metrics-file", &path_str(&closed.join("m.prom"))])
        .args(["--", "true"])
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .output()
        .expect("retry runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("permission denied"), "{err}");
    assert!(!err.contains("os error"), "{err}");
}

#[test]
fn a_link_planted_by_another_user_is_refused_and_its_target_untouched() {
    // A sticky directory anyone may write in, as /tmp; a link in it made by
    // someone else, pointing at a file of the caller's.
    let dir = scratch();
    let shared = dir.path().join("shared");
    std::fs::create_dir(&shared).expect("mkdir");
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).expect("chmod");
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "precious\n").expect("write");
    let link = shared.join("m.prom");
    std::os::unix::fs::symlink(&victim, &link).expect("symlink");
    if !crate::need::root("only root can give a link away") {
        return;
    }
    nix::unistd::fchownat(
        nix::fcntl::AT_FDCWD,
        &link,
        Some(nix::unistd::Uid::from_raw(65534)),
        None,
        nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
    )
    .expect("lchown");
    let out = retry(["--metrics-file", &path_str(&link), "--", "true"]).run();
    out.expect_code(2);
    assert!(
        out.stderr_text().contains("symbolic link"),
        "{}",
        out.stderr_text()
    );
    assert_eq!(read(&victim), "precious\n");
}

#[test]
fn an_existing_file_is_replaced_whole_and_made_readable() {
    let dir = metrics_dir();
    let file = dir.path().join("m.prom");
    std::fs::write(&file, "garbage that is not metrics\n").expect("write");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    retry(["--metrics-file", &path_str(&file), "--", "true"])
        .env("RETRY_GROUP", "")
        .run()
        .expect_code(0);
    let meta = std::fs::metadata(&file).expect("stat");
    assert_eq!(meta.mode() & 0o7777, 0o644);
    let text = read(&file);
    assert!(
        text.starts_with("# HELP retry_last_run_start_timestamp_seconds "),
        "{text}"
    );
    assert!(!text.contains("garbage"));
}

#[test]
fn a_run_the_state_store_stops_before_it_begins_is_reported_too() {
    let dir = metrics_dir();
    let file = dir.path().join("s.prom");
    let hb = super::Recorder::start(|_, _| super::Answer::Status(200));
    // A Redis store nobody listens on, required: 125 before the first attempt.
    let url = format!("redis://127.0.0.1:{}/0", free_port());
    let args = [
        "--group",
        "g",
        "--state",
        &url,
        "--budget",
        "--state-required",
        "--metrics-file",
        &path_str(&file),
        "--ping",
        &hb.url("/check"),
    ];
    retry_sh(&args, "true").run().expect_code(125);
    let text = read(&file);
    assert_eq!(
        sample(&text, "retry_last_run_exit_code", "{job=\"g\"}"),
        Some(125.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, "retry_last_run_attempts", "{job=\"g\"}"),
        Some(0.0)
    );
    assert_eq!(
        hb.lines().last().map(String::as_str),
        Some("GET /check/125")
    );
}

#[test]
fn a_log_file_that_cannot_be_opened_is_reported_too() {
    let dir = metrics_dir();
    let file = dir.path().join("l.prom");
    let marker = dir.path().join("ran");
    let hb = super::Recorder::start(|_, _| super::Answer::Status(200));
    // The log file's directory does not exist: retry's own failure, 125,
    // before the first attempt.
    let log = dir.path().join("missing").join("run.log");
    let args = [
        "--log-file",
        &path_str(&log),
        "--metrics-file",
        &path_str(&file),
        "--ping",
        &hb.url("/check"),
    ];
    let out = retry_sh(&args, &format!("touch {}", path_str(&marker))).run();
    out.expect_code(125);
    assert!(
        out.stderr_text().contains("cannot open --log-file"),
        "{}",
        out.stderr_text()
    );
    assert!(!marker.exists(), "the command ran");
    let text = read(&file);
    assert_eq!(
        sample(&text, "retry_last_run_exit_code", "{job=\"sh\"}"),
        Some(125.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, "retry_last_run_attempts", "{job=\"sh\"}"),
        Some(0.0)
    );
    assert_eq!(hb.lines(), ["GET /check/125"]);
}

// ---- a directory others can write to (as /tmp) -----------------------------

#[test]
fn a_metrics_file_another_user_made_in_a_sticky_directory_cannot_fake_the_times() {
    use crate::util::{NOBODY, Sticky, as_nobody, plays_a_second_user};
    if !plays_a_second_user() {
        return;
    }
    let tmp = Sticky::new();
    let file = tmp.join("x.prom");
    // Theirs, writable by them: a success time in the future would hide
    // every failure from an alert on it.
    as_nobody(&format!(
        "echo 'retry_last_success_timestamp_seconds{{job=\"x\"}} 9999999999' > '{0}' && chmod 666 '{0}'",
        file.display()
    ));
    let ran = tmp.join("ran");
    let out = retry_sh(
        &["--metrics-file", &path_str(&file), "--metrics-job", "x"],
        &format!("touch '{}'", ran.display()),
    )
    .run();
    let line = out.expect_usage_line("--metrics-file");
    assert!(
        line.contains(&format!("is another user's file (uid {NOBODY})")),
        "{line}"
    );
    assert!(!ran.exists(), "the command ran");
    assert_eq!(std::fs::metadata(&file).expect("stat").uid(), NOBODY);
}

#[test]
fn a_huge_file_at_the_metrics_path_is_not_read_whole() {
    // /tmp as systemd mounts it, a tmpfs anyone may write to (1 MiB here,
    // in a mount namespace of the test's own), where someone left 3 GB of
    // nothing (sparse, so they fit) at the metrics file's name.
    let mount_point = scratch();
    let script = r#"M=$1; mount -t tmpfs -o size=1m,mode=1777 tmpfs "$M" || exit 97
truncate -s 3G "$M/x.prom" || exit 98
/usr/bin/time -f "peak %M" "$0" --metrics-file "$M/x.prom" -- true || exit
wc -c < "$M/x.prom""#;
    let out = std::process::Command::new("unshare")
        .args(["--mount", "--", "sh", "-c", script])
        .arg(crate::util::bin())
        .arg(mount_point.path())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .output()
        .expect("unshare (util-linux)");
    let err = String::from_utf8_lossy(&out.stderr);
    let code = out.status.code().unwrap_or(-1);
    if code == 97 || (code == 1 && err.contains("unshare")) {
        eprintln!("SKIPPED: cannot mount a tmpfs in a private mount namespace here: {err}");
        return;
    }
    assert_eq!(code, 0, "{err}");
    let peak_kib: u64 = err
        .lines()
        .find_map(|l| l.strip_prefix("peak "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no peak RSS in {err}"));
    // Read whole, it cost 3 GB of memory and minutes.
    assert!(peak_kib < 200 * 1024, "peak RSS {peak_kib} KiB");
    // Replaced by the file retry writes.
    let size: u64 = String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("size");
    assert!((1000..10_000).contains(&size), "{size} bytes");
}

#[test]
fn a_directory_writable_through_an_acl_is_refused() {
    let dir = metrics_dir();
    let open = dir.path().join("open");
    std::fs::create_dir(&open).expect("mkdir");
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    // The mode still reads 0775 with the caller's own group: the ACL's
    // mask stands in the group bits.
    let granted = std::process::Command::new("setfacl")
        .args(["-m", "u:65534:rwx"])
        .arg(&open)
        .status()
        .expect("setfacl (Debian's acl, installed by scripts/test.sh)");
    assert!(granted.success());
    let ran = dir.path().join("ran");
    let touch = format!("touch '{}'", ran.display());
    let file = path_str(&open.join("m.prom"));
    let line = retry_sh(&["--metrics-file", &file], &touch)
        .run()
        .expect_usage_line("--metrics-file");
    assert!(
        line.contains("is writable by user 65534 through an ACL"),
        "{line}"
    );
    // The state store's directory, with --state-required: 125, nothing run.
    let store = path_str(&open);
    let out = retry_sh(
        &[
            "--group",
            "g",
            "--budget",
            "--state",
            &store,
            "--state-required",
        ],
        &touch,
    )
    .run();
    out.expect_code(125);
    assert!(
        out.stderr_text().contains("through an ACL"),
        "{}",
        out.stderr_text()
    );
    assert!(!ran.exists(), "the command ran");
}
