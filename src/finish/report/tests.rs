//! The report's fields for every way a run ends, its two renderings, and
//! the file's writing.

use super::*;
use crate::classify::Limit;
use crate::event::Ending;
use std::time::{Duration, UNIX_EPOCH};

fn summary(end: End, exit_code: u8, last: Option<Status>) -> RunSummary {
    RunSummary {
        started_at: UNIX_EPOCH + Duration::from_millis(1_700_000_000_250),
        duration: Duration::from_micros(2_500_900),
        ending: Ending {
            attempts: u32::from(last.is_some()) * 3,
            last_status: last,
            waited: Duration::from_millis(1_750),
            ..Ending::before_attempts(end, exit_code, "no attempts left (last: exit 1)")
        },
        seed: 42,
    }
}

#[test]
fn a_run_that_used_up_its_attempts_gave_up_at_max() {
    let r = report(
        &summary(End::Exhausted, 1, Some(Status::Exited(1))),
        "abcd1234",
    );
    assert_eq!(
        (r.version, r.outcome, r.limit, r.attempts, r.exit_code),
        (1, "gave-up", Some("max"), 3, 1)
    );
    assert_eq!((r.elapsed_ms, r.waited_ms, r.seed), (2_500, 1_750, 42));
    assert_eq!(r.started_at, "2023-11-14T22:13:20.250Z");
    assert_eq!((r.http_status, r.signal.as_deref()), (None, None));
    assert_eq!(r.run, "abcd1234");
}

#[test]
fn each_ending_has_its_outcome_and_limit() {
    let timed_out = Status::TimedOut {
        limit: Limit::Deadline,
        after: Duration::ZERO,
    };
    let cases = [
        (End::Success, 0, "success", None),
        (End::Deadline, 124, "gave-up", Some("max-time")),
        (End::Permanent, 127, "permanent", None),
        (End::Refused, 75, "refused", None),
        (End::Interrupted, 143, "interrupted", None),
    ];
    for (end, code, outcome, limit) in cases {
        let r = report(&summary(end, code, Some(timed_out.clone())), "r");
        assert_eq!((r.outcome, r.limit), (outcome, limit), "{end:?}");
    }
}

#[test]
fn the_signal_is_retrys_own_or_the_one_that_killed_the_last_attempt() {
    // A signal before the first attempt leaves no status: the exit status says.
    let r = report(&summary(End::Interrupted, 143, None), "r");
    assert_eq!(r.signal.as_deref(), Some("SIGTERM"));
    let r = report(
        &summary(End::Exhausted, 137, Some(Status::Signaled(9))),
        "r",
    );
    assert_eq!(r.signal.as_deref(), Some("SIGKILL"));
}

#[test]
fn an_http_status_is_the_last_responses() {
    let last = Status::Http {
        code: 503,
        hints: crate::ratelimit::Hints::NONE,
    };
    let r = report(&summary(End::Exhausted, 22, Some(last)), "r");
    assert_eq!(r.http_status, Some(503));
}

#[test]
fn the_json_has_every_field_even_when_empty() {
    let text = to_json(&report(&summary(End::Success, 0, None), "r"));
    let v: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    for key in [
        "version",
        "run",
        "outcome",
        "limit",
        "attempts",
        "exit_code",
        "http_status",
        "signal",
        "reason",
        "started_at",
        "elapsed_ms",
        "waited_ms",
        "seed",
        "server_hint",
        "server_hint_ms",
    ] {
        assert!(v.get(key).is_some(), "{key} missing from {text}");
    }
    assert!(v["limit"].is_null());
    assert!(text.ends_with("}\n"));
}

#[test]
fn a_long_reason_is_cut_on_a_character_boundary() {
    let mut s = summary(End::Permanent, 1, Some(Status::Exited(1)));
    s.ending.reason = "é".repeat(2 * REASON_MAX).into();
    let r = report(&s, "r");
    assert!(r.reason.len() <= REASON_MAX, "{}", r.reason.len());
    assert!(r.reason.ends_with("..."));
}

#[test]
fn step_outputs_keep_each_value_on_its_line() {
    let mut s = summary(End::Permanent, 1, Some(Status::Exited(1)));
    s.ending.reason = "two\nlines\r".into();
    let text = to_step_outputs(&report(&s, "r"));
    assert!(text.contains("\nreason=two\\nlines\\r\n"), "{text}");
    assert!(text.contains("\nlimit=\n"), "{text}");
    assert!(
        text.starts_with("version=1\nrun=r\noutcome=permanent\n"),
        "{text}"
    );
    assert_eq!(text.lines().count(), 15);
    assert!(text.lines().all(|l| l.contains('=')));
}

#[test]
fn the_file_is_replaced_whole_and_keeps_its_mode() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("report.json");
    check(&path).expect("a place to write");
    std::fs::write(&path, "old").expect("write");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let text = to_json(&report(&summary(End::Success, 0, None), "r"));
    write_file(&path, &text).expect("written");
    assert_eq!(std::fs::read_to_string(&path).expect("read"), text);
    let mode = std::fs::metadata(&path).expect("stat").permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    assert_eq!(std::fs::read_dir(dir.path()).expect("list").count(), 1);
}

#[test]
fn step_outputs_are_appended() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("out");
    std::fs::write(&path, "mine=1\n").expect("write");
    append(&path, "a=1\n").expect("appended");
    append(&path, "b=2\n").expect("appended");
    assert_eq!(
        std::fs::read_to_string(&path).expect("read"),
        "mine=1\na=1\nb=2\n"
    );
}

#[test]
fn a_secret_in_the_reason_is_masked() {
    let mut s = summary(End::Permanent, 7, Some(Status::Exited(7)));
    s.ending.reason = "cannot reach https://deploy:hunter2@example.com/?token=abc".into();
    let r = report(&s, "r");
    assert!(
        !r.reason.contains("hunter2") && !r.reason.contains("abc"),
        "{}",
        r.reason
    );
    assert!(r.reason.contains("example.com"), "{}", r.reason);
}
