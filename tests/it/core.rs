//! Command mode end to end: exit statuses, classification lists, the
//! child's environment and output, logs, real-time signals.

use crate::util::{path_str, retry, retry_sh, scratch};

const FAST: [&str; 4] = ["--base", "1ms", "--cap", "5ms"];

pub fn fast(extra: &[&str]) -> Vec<String> {
    FAST.iter().chain(extra).map(|s| s.to_string()).collect()
}

pub fn fast_sh(extra: &[&str], script: &str) -> crate::util::Retry {
    let args = fast(extra);
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    retry_sh(&refs, script)
}

#[test]
fn success_exits_zero_without_log_lines() {
    let out = fast_sh(&[], "exit 0").run();
    out.expect_code(0);
    assert!(out.stderr.is_empty(), "{}", out.stderr_text());
}

#[test]
fn giving_up_exits_with_the_last_attempts_own_code() {
    let dir = scratch();
    let count = dir.path().join("count");
    let script = format!(
        "echo x >> {0}; n=$(wc -l < {0}); exit $((n + 10))",
        path_str(&count)
    );
    let out = fast_sh(&["--max", "3"], &script).run();
    out.expect_code(13);
    let lines = out.stderr_lines();
    assert_eq!(lines.len(), 5, "{lines:?}");
    assert!(lines[0].starts_with("retry: attempt 1/3 failed (exit 11) after "));
    assert!(lines[0].contains("; next in "));
    // stdout is a pipe: said once, at the first retry.
    assert!(lines[1].starts_with("retry: warning: stdout is a pipe: "));
    assert!(lines[3].starts_with("retry: attempt 3/3 failed (exit 13)"));
    assert!(lines[4].starts_with("retry: giving up after 3 attempts in "));
    assert!(lines[4].ends_with("exiting 13"));
}

#[test]
fn success_after_retries_is_reported_once() {
    let dir = scratch();
    let flag = dir.path().join("flag");
    let script = format!("[ -e {0} ] && exit 0; touch {0}; exit 1", path_str(&flag));
    let out = fast_sh(&[], &script).run();
    out.expect_code(0);
    let lines = out.stderr_lines();
    // The failure, the line about stdout (a pipe), the success.
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert!(lines[2].starts_with("retry: succeeded on attempt 2/5 after "));
}

#[test]
fn command_not_found_is_127_and_not_retried() {
    let out = retry(["--", "/nonexistent/definitely-not-here"]).run();
    out.expect_code(127);
    assert_eq!(
        out.stderr_lines()
            .iter()
            .filter(|l| l.contains("attempt"))
            .count(),
        2,
        "one attempt line and the give-up line: {}",
        out.stderr_text()
    );
    assert!(out.stderr_text().contains("command not found"));
}

#[test]
fn not_executable_is_126_and_not_retried() {
    let dir = scratch();
    let file = dir.path().join("script");
    std::fs::write(&file, "#!/bin/sh\nexit 0\n").expect("write");
    let out = retry(["--".to_string(), path_str(&file)]).run();
    out.expect_code(126);
    assert!(out.stderr_text().contains("permission denied"));
}

#[test]
fn exit_127_from_the_command_itself_is_permanent() {
    let dir = scratch();
    let count = dir.path().join("count");
    let out = fast_sh(&[], &format!("echo x >> {}; exit 127", path_str(&count))).run();
    out.expect_code(127);
    assert_eq!(
        std::fs::read_to_string(&count)
            .expect("count")
            .lines()
            .count(),
        1
    );
}

#[test]
fn death_by_signal_is_128_plus_n_and_retried() {
    let dir = scratch();
    let count = dir.path().join("count");
    let script = format!("echo x >> {}; kill -KILL $$", path_str(&count));
    let out = fast_sh(&["--max", "2"], &script).run();
    out.expect_code(137);
    assert_eq!(
        std::fs::read_to_string(&count)
            .expect("count")
            .lines()
            .count(),
        2
    );
    assert!(out.stderr_text().contains("killed by SIGKILL"));
}

#[test]
fn stop_on_names_a_signal_as_128_plus_n() {
    let out = fast_sh(&["--stop-on", "137"], "kill -KILL $$").run();
    out.expect_code(137);
    assert!(out.stderr_text().contains("giving up after 1 attempt"));
}

#[test]
fn retry_on_makes_other_codes_permanent() {
    let out = fast_sh(&["--retry-on", "75,100-110"], "exit 1").run();
    out.expect_code(1);
    assert!(out.stderr_text().contains("exit 1 is not in --retry-on"));
    let out = fast_sh(&["--retry-on", "75,100-110", "--max", "3"], "exit 105").run();
    out.expect_code(105);
    assert!(out.stderr_text().contains("giving up after 3 attempts"));
}

#[test]
fn stop_on_and_success_on() {
    let out = fast_sh(&["--stop-on", "3"], "exit 3").run();
    out.expect_code(3);
    assert!(out.stderr_text().contains("exit 3 is in --stop-on"));
    let out = fast_sh(&["--success-on", "42"], "exit 42").run();
    out.expect_code(0);
    assert!(out.stderr.is_empty());
}

#[test]
fn the_child_sees_its_attempt_in_the_environment() {
    let out = fast_sh(
        &["--max", "3"],
        r#"echo "$RETRY_ATTEMPT $RETRY_MAX_ATTEMPTS [$RETRY_PREVIOUS_EXIT] $RETRY_DEPTH"; exit $((RETRY_ATTEMPT + 4))"#,
    )
    .run();
    out.expect_code(7);
    assert_eq!(out.stdout_text(), "1 3 [] 1\n2 3 [5] 1\n3 3 [6] 1\n");
    let out = fast_sh(&["--forever"], r#"echo "[$RETRY_MAX_ATTEMPTS]"; exit 0"#).run();
    assert_eq!(out.stdout_text(), "[]\n");
}

#[test]
fn child_output_passes_through_byte_for_byte() {
    // NUL, invalid UTF-8, no trailing newline, on both streams.
    let out = fast_sh(
        &["-qq", "--max", "2"],
        r"printf 'a\000b\377c'; printf 'x\000y\376' >&2; exit 1",
    )
    .run();
    out.expect_code(1);
    assert_eq!(out.stdout, b"a\0b\xffca\0b\xffc");
    assert_eq!(out.stderr, b"x\0y\xfex\0y\xfe");
}

#[test]
fn quiet_levels() {
    let out = fast_sh(&["-q", "--max", "3"], "exit 4").run();
    out.expect_code(4);
    let lines = out.stderr_lines();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].starts_with("retry: giving up after 3 attempts"));
    let out = fast_sh(&["-qq", "--max", "3"], "exit 4").run();
    out.expect_code(4);
    assert!(out.stderr.is_empty());
}

#[test]
fn verbose_shows_the_command_and_attempt_starts() {
    let out = fast_sh(&["-v", "--max", "2", "--seed", "9"], "exit 0").run();
    out.expect_code(0);
    let text = out.stderr_text();
    assert!(
        text.contains("retry: running sh -c 'exit 0' (up to 2 attempts, seed 9)"),
        "{text}"
    );
    assert!(text.contains("retry: attempt 1/2 starting"));
    assert!(text.contains("retry: attempt 1/2 succeeded"));
}

#[test]
fn json_log_lines_parse_and_carry_the_documented_fields() {
    let out = fast_sh(
        &["--log-format", "json", "--max", "2", "--seed", "3"],
        "exit 9",
    )
    .run();
    out.expect_code(9);
    let events = out.json();
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().expect("event"))
        .collect();
    // The warning: stdout is a pipe, which keeps what attempt 1 wrote.
    assert_eq!(
        kinds,
        ["start", "attempt", "sleep", "warning", "attempt", "done"]
    );
    for e in &events {
        assert!(e["time"].is_string() && e["elapsed_ms"].is_number(), "{e}");
    }
    assert_eq!(events[0]["seed"], 3);
    assert_eq!(events[0]["command"][0], "sh");
    let a = &events[1];
    assert_eq!(
        (a["attempt"].as_u64(), a["max"].as_u64()),
        (Some(1), Some(2))
    );
    assert_eq!(a["outcome"], "retryable");
    assert_eq!(a["exit_code"], 9);
    assert!(a["duration_ms"].is_number());
    let s = &events[2];
    assert_eq!(s["attempt"], 2);
    assert!(s["delay_ms"].as_f64().expect("delay") <= s["ceiling_ms"].as_f64().expect("ceiling"));
    assert_eq!(s["jitter"], "full");
    let d = &events[5];
    assert_eq!(d["outcome"], "exhausted");
    assert_eq!(d["exit_code"], 9);
    assert_eq!(d["attempts"], 2);
    assert!(d["reason"].is_string());
}

#[test]
fn json_outcomes_for_timeout_and_permanent() {
    let out = retry([
        "--log-format",
        "json",
        "--max",
        "1",
        "--timeout",
        "100ms",
        "--",
        "sleep",
        "5",
    ])
    .run();
    out.expect_code(124);
    let events = out.json();
    assert_eq!(events[1]["outcome"], "timeout");
    let out = retry(["--log-format", "json", "--", "/nonexistent/x"]).run();
    out.expect_code(127);
    assert_eq!(out.json()[1]["outcome"], "permanent");
    assert_eq!(out.json()[2]["outcome"], "permanent");
}

#[test]
fn a_seed_reproduces_the_delays_of_a_real_run() {
    let delays = |seed: &str| -> Vec<f64> {
        let out = retry([
            "--log-format",
            "json",
            "--max",
            "4",
            "--base",
            "1ms",
            "--cap",
            "20ms",
            "--jitter",
            "decorrelated",
            "--seed",
            seed,
            "--",
            "false",
        ])
        .run();
        out.json()
            .iter()
            .filter(|e| e["event"] == "sleep")
            .map(|e| e["delay_ms"].as_f64().expect("delay"))
            .collect()
    };
    assert_eq!(delays("11"), delays("11"));
    assert_ne!(delays("11"), delays("12"));
}

#[test]
fn log_file_keeps_the_full_record_and_stderr_only_the_give_up_line() {
    let dir = scratch();
    let log = dir.path().join("retry.log");
    let out = fast_sh(
        &["--max", "2", "--log-file", &path_str(&log)],
        "echo hi; exit 1",
    )
    .run();
    out.expect_code(1);
    assert_eq!(out.stdout_text(), "hi\nhi\n");
    let stderr = out.stderr_lines();
    assert_eq!(stderr.len(), 1, "{stderr:?}");
    assert!(
        stderr[0].starts_with("retry: giving up after 2 attempts"),
        "{stderr:?}"
    );
    // The file has every event, -v's included: start, two attempt starts,
    // two outcomes, the line about what stays in stdout (a pipe), and the
    // end.
    let text = std::fs::read_to_string(&log).expect("log");
    assert_eq!(text.lines().count(), 7, "{text}");
    assert!(text.contains("retry: running sh -c"), "{text}");
    assert!(text.contains("attempt 2/2 starting"), "{text}");
    assert!(text.contains("giving up after 2 attempts"), "{text}");
}

#[test]
fn log_file_keeps_the_full_record_even_when_quiet() {
    let dir = scratch();
    let log = dir.path().join("retry.jsonl");
    let out = fast_sh(
        &[
            "-qq",
            "--log-format",
            "json",
            "--max",
            "2",
            "--log-file",
            &path_str(&log),
        ],
        "exit 1",
    )
    .run();
    out.expect_code(1);
    assert!(out.stderr.is_empty(), "{}", out.stderr_text());
    let text = std::fs::read_to_string(&log).expect("log");
    let events: Vec<String> = text
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("only JSON lines");
            v["event"].as_str().expect("event").to_string()
        })
        .collect();
    assert_eq!(
        events,
        [
            "start",
            "attempt_start",
            "attempt",
            "sleep",
            "warning",
            "attempt_start",
            "attempt",
            "done"
        ]
    );
}

#[test]
fn unwritable_log_file_is_125_and_runs_nothing() {
    let dir = scratch();
    let marker = dir.path().join("ran");
    let out = retry_sh(
        &["--log-file", "/nonexistent/dir/retry.log"],
        &format!("touch {}", path_str(&marker)),
    )
    .run();
    out.expect_code(125);
    assert!(out.stderr_text().contains("cannot open --log-file"));
    assert!(!marker.exists());
}

#[test]
fn a_log_file_fifo_nobody_reads_is_125_at_once_instead_of_a_hang() {
    let dir = scratch();
    let fifo = dir.path().join("log");
    let marker = dir.path().join("ran");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).expect("mkfifo");
    let started = std::time::Instant::now();
    let out = retry_sh(
        &["--max-time", "2s", "--log-file", &path_str(&fifo)],
        &format!("touch {}", path_str(&marker)),
    )
    .run();
    out.expect_code(125);
    assert!(
        out.stderr_text().contains("cannot open --log-file")
            && out.stderr_text().contains("nobody reads"),
        "{}",
        out.stderr_text()
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    assert!(!marker.exists());
}

#[test]
fn a_log_file_another_user_made_in_a_sticky_directory_stays_unwritten() {
    use crate::util::{NOBODY, Sticky, as_nobody, plays_a_second_user};
    if !plays_a_second_user() {
        return;
    }
    let tmp = Sticky::new();
    let log = tmp.join("job.log");
    as_nobody(&format!("touch '{0}' && chmod 666 '{0}'", log.display()));
    let marker = tmp.join("ran");
    let out = retry_sh(
        &["--log-file", &path_str(&log)],
        &format!("touch {}", path_str(&marker)),
    )
    .run();
    out.expect_code(125);
    assert!(
        out.stderr_text()
            .contains(&format!("is another user's file (uid {NOBODY})")),
        "{}",
        out.stderr_text()
    );
    assert!(!marker.exists());
    assert_eq!(std::fs::metadata(&log).expect("stat").len(), 0);
}

#[test]
fn stop_signal_rtmin_plus_2_reaches_the_child_on_timeout() {
    // perl (always on Debian) can catch a real-time signal by number; the
    // handler records it. Any other signal would kill perl with no record.
    let signal = nix::libc::SIGRTMIN() + 2;
    let dir = scratch();
    let got = dir.path().join("got");
    let ready = dir.path().join("ready");
    let script = r#"use POSIX;
        my ($n, $got, $ready) = @ARGV;
        sigaction($n, POSIX::SigAction->new(sub {
            open(my $f, ">", $got) or die; print $f "signal $n\n"; close $f; POSIX::_exit(0);
        })) or die "sigaction: $!";
        open(my $r, ">", $ready) or die; close $r;
        sleep 1 while 1;"#;
    let out = retry([
        "--timeout".to_string(),
        "3s".to_string(),
        "--max".to_string(),
        "1".to_string(),
        "--stop-signal".to_string(),
        "rtmin+2".to_string(),
        "--".to_string(),
        "perl".to_string(),
        "-e".to_string(),
        script.to_string(),
        signal.to_string(),
        path_str(&got),
        path_str(&ready),
    ])
    .run();
    out.expect_code(124);
    assert!(ready.exists(), "perl never started: {}", out.stderr_text());
    assert_eq!(
        std::fs::read_to_string(&got).expect("the handler ran"),
        format!("signal {signal}\n")
    );
}

#[test]
fn a_child_killed_by_a_real_time_signal_is_named_and_exits_128_plus_n() {
    let n = nix::libc::SIGRTMAX() - 1;
    let out = retry_sh(&["--max", "1"], &format!("kill -{n} $$")).run();
    out.expect_code(128 + n);
    let text = out.stderr_text();
    assert!(text.contains("killed by SIGRTMAX-1"), "{text}");
}
