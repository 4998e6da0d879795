//! The README's examples for cron, CI and compose do what their text says:
//! each is read from the README and run, with the parts that name the
//! user's own world (their command, their hook, their database host)
//! replaced by local stand-ins.

use std::net::TcpListener;
use std::path::Path;
use std::time::Duration;

use crate::util::{command, path_str, scratch};

fn readme() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README.md")
}

/// The README line that starts with `prefix`, without a trailing comment.
fn line(prefix: &str) -> String {
    let text = readme();
    let found = text
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("README has no line starting {prefix:?}"));
    found
        .split("  #")
        .next()
        .unwrap_or(found)
        .trim()
        .to_string()
}

/// retry's arguments in a README line: the words after `retry` (or a path
/// to it, as a crontab gives), with
/// COMMAND replaced by `sh -c SCRIPT`.
fn arguments(line: &str, script: &str) -> Vec<String> {
    let words = shlex::split(line).expect("the line parses");
    let at = words
        .iter()
        .position(|w| w == "retry" || w.ends_with("/retry"))
        .expect("retry");
    let mut args: Vec<String> = words[at + 1..].to_vec();
    let dashes = args.iter().position(|w| w == "--").expect("a COMMAND");
    args.truncate(dashes + 1);
    args.extend(["sh".into(), "-c".into(), script.into()]);
    args
}

#[test]
fn the_cron_line_mails_nothing_when_the_job_recovers_and_the_failure_when_not() {
    let cron = line("*/30 * * * * /usr/local/bin/retry --hold-output");
    let dir = scratch();
    let mark = path_str(&dir.path().join("failed-once"));
    // Fails noisily once, then succeeds: cron gets nothing to mail.
    let recovers = format!(
        "echo syncing; echo 'mirror busy' >&2; [ -e {mark} ] || {{ touch {mark}; exit 1; }}"
    );
    let out = command()
        .args(arguments(&cron, &recovers))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty() && out.stderr.is_empty(), "{out:?}");
    // A configuration error (78): not retried; the give-up line and the
    // job's own output are what cron mails.
    let broken = "echo syncing; echo 'bad config' >&2; exit 78";
    let out = command().args(arguments(&cron, broken)).output().unwrap();
    assert_eq!(out.status.code(), Some(78));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "syncing\n");
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert!(lines[0].contains("giving up after 1 attempt"), "{err}");
    assert_eq!(lines[1], "bad config");
}

#[test]
fn the_ci_step_runs_its_hook_between_attempts() {
    let step = line("run: retry --max 3 --timeout 15m --on-retry");
    let dir = scratch();
    let mark = path_str(&dir.path().join("failed-once"));
    let mut args = arguments(
        &step,
        &format!("[ -e {mark} ] || {{ touch {mark}; exit 1; }}"),
    );
    // The hook: the README's tears down a compose project; this one says
    // what it was told.
    let hook = args.iter().position(|a| a == "--on-retry").unwrap() + 1;
    args[hook] = "echo \"cleaning up after attempt $RETRY_ATTEMPT (exit $RETRY_EXIT_CODE)\"".into();
    let out = command().args(&args).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cleaning up after attempt 1 (exit 1)"),
        "{err}"
    );
    assert!(err.contains("succeeded on attempt 2/3"), "{err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn the_compose_wait_runs_the_migration_once_the_port_opens() {
    let wait = line("retry --max-time 1m --tcp db:5432 && ./migrate.sh");
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let script = wait
        .replace("db:5432", &format!("127.0.0.1:{port}"))
        .replace("./migrate.sh", "echo migrated");
    let bin_dir = crate::util::bin().parent().unwrap().to_path_buf();
    let path = format!(
        "{}:{}",
        path_str(&bin_dir),
        std::env::var("PATH").unwrap_or_default()
    );
    // The command as the README gives it; its log also goes to a file
    // (through the environment), to see it wait.
    let dir = crate::util::scratch();
    let log = dir.path().join("log");
    let child = std::process::Command::new("sh")
        .args(["-c", &script])
        .env_clear()
        .env("PATH", path)
        .env("RETRY_LOG_FILE", &log)
        .env("RETRY_LOG_FORMAT", "json")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The database comes up once retry has found it down.
    crate::util::wait_for_line(&log, "\"outcome\":\"retryable\"", Duration::from_secs(20));
    let listener = TcpListener::bind(("127.0.0.1", port)).expect("the port is still free");
    let out = child.wait_with_output().unwrap();
    drop(listener);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "migrated\n");
}

#[test]
fn examples_come_before_the_contributors_set_up_and_the_first_has_a_deadline() {
    let text = readme();
    let at = |heading: &str| {
        text.find(&format!("\n{heading}\n"))
            .unwrap_or_else(|| panic!("README has no {heading}"))
    };
    assert!(at("## Examples") < at("## Set up"));
    let first = text
        .lines()
        .find(|l| l.starts_with("retry "))
        .expect("a first example");
    assert!(first.contains("--max-time"), "{first}");
}

/// What the README says the default policy waits in all: about 7.5 s (a
/// random time below 1, 2, 4 and 8 s), where `curl --retry 5` waits 31 s.
#[test]
fn the_default_policy_waits_about_seven_and_a_half_seconds_in_all() {
    let totals: Vec<f64> = (1..=100)
        .map(|seed| {
            let out = command()
                .args(["--dry-run", "--seed", &seed.to_string()])
                .output()
                .expect("retry runs");
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            let last = text
                .lines()
                .rfind(|l| l.trim_start().starts_with('4'))
                .expect("four retries");
            // Rows end with the total wait (`7s 123ms`, `980ms`).
            let total = &last[44..];
            let mut secs = 0.0;
            for part in total.split_whitespace() {
                secs += match part.strip_suffix("ms") {
                    Some(ms) => ms.parse::<f64>().expect("ms") / 1000.0,
                    None => part.trim_end_matches('s').parse::<f64>().expect("s"),
                };
            }
            secs
        })
        .collect();
    let mean = totals.iter().sum::<f64>() / totals.len() as f64;
    assert!((6.5..8.5).contains(&mean), "mean {mean}");
    assert!(totals.iter().all(|t| *t <= 15.0), "{totals:?}");
    assert!(readme().contains("about 7.5 s in all"));
}

#[test]
fn the_download_and_the_pipeline_get_one_attempts_output_when_a_transfer_is_cut() {
    let dir = scratch();
    let bin_dir = crate::util::bin().parent().unwrap().to_path_buf();
    let path = format!(
        "{}:{}",
        path_str(&bin_dir),
        std::env::var("PATH").unwrap_or_default()
    );
    let csv: Vec<u8> = (0..20_000)
        .flat_map(|i| format!("{i},row {i}\n").into_bytes())
        .collect();
    let json = br#"{"items": [1, 2, 3, 4]}"#.to_vec();
    for (prefix, url, body, cut) in [
        (
            "retry --last-stdout --max-time 2m -- curl",
            "https://example.com/report.csv",
            csv.clone(),
            100_000,
        ),
        (
            "retry --last-stdout --max-time 1m -- curl",
            "https://example.com/api/items",
            json,
            9,
        ),
    ] {
        let readme = readme();
        let example = readme
            .lines()
            .find(|l| l.starts_with(prefix) && l.contains(url))
            .unwrap_or_else(|| panic!("README has no line {prefix:?} for {url}"));
        let local = crate::last_stdout::cut_once_server(body, cut);
        let out = std::process::Command::new("sh")
            .args(["-c", &example.replace(url, &local)])
            .current_dir(dir.path())
            .env_clear()
            .env("PATH", &path)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{example}: {out:?}");
        if url.ends_with(".csv") {
            let got = std::fs::read(dir.path().join("report.csv")).unwrap();
            assert!(got == csv, "report.csv is the whole body, once");
        } else {
            assert_eq!(String::from_utf8_lossy(&out.stdout), "4\n");
        }
    }
}
