//! Command mode end to end: exit statuses, usage errors, classification
//! lists, the child's environment, logs and the dry run.

use std::time::Duration;

use crate::util::{path_str, retry, retry_sh, scratch};

const FAST: [&str; 4] = ["--base", "1ms", "--cap", "5ms"];

fn fast(extra: &[&str]) -> Vec<String> {
    FAST.iter().chain(extra).map(|s| s.to_string()).collect()
}

fn fast_sh(extra: &[&str], script: &str) -> crate::util::Retry {
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
    assert_eq!(lines.len(), 4, "{lines:?}");
    assert!(lines[0].starts_with("retry: attempt 1/3 failed (exit 11) after "));
    assert!(lines[0].contains("; next in "));
    assert!(lines[2].starts_with("retry: attempt 3/3 failed (exit 13)"));
    assert!(lines[3].starts_with("retry: giving up after 3 attempts in "));
    assert!(lines[3].ends_with("exiting 13"));
}

#[test]
fn success_after_retries_is_reported_once() {
    let dir = scratch();
    let flag = dir.path().join("flag");
    let script = format!("[ -e {0} ] && exit 0; touch {0}; exit 1", path_str(&flag));
    let out = fast_sh(&[], &script).run();
    out.expect_code(0);
    let lines = out.stderr_lines();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines[1].starts_with("retry: succeeded on attempt 2/5 after "));
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
    assert_eq!(kinds, ["start", "attempt", "sleep", "attempt", "done"]);
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
    let d = &events[4];
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
    // two outcomes, and the end.
    let text = std::fs::read_to_string(&log).expect("log");
    assert_eq!(text.lines().count(), 6, "{text}");
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
    assert!(out.stderr_text().contains("cannot open log file"));
    assert!(!marker.exists());
}

/// Each of these must be refused with one line naming the flag, exit 2, and
/// must not run the command.
#[test]
fn usage_errors_are_one_line_exit_2_and_run_nothing() {
    let cases: &[(&[&str], &str)] = &[
        (&["--max", "0"], "--max"),
        (&["--max", "-3"], "--max"),
        (&["--base", "abc"], "--base"),
        (&["--cap", "1s", "--base", "2s"], "--cap"),
        (&["--multiplier", "0.5"], "--multiplier"),
        (&["--jitter", "sideways"], "--jitter"),
        (&["--backoff", "cubic"], "--backoff"),
        (&["--retry-on", "5-2"], "--retry-on"),
        (&["--retry-on", "300"], "--retry-on"),
        (&["--stop-on", "1-5", "--success-on", "4"], "--success-on"),
        (&["--retry-on", "1", "--stop-on", "1"], "--stop-on"),
        (&["--timeout", "-1"], "--timeout"),
        (&["--max-time", "soon"], "--max-time"),
        (&["--kill-after", "x"], "--kill-after"),
        (&["--stop-signal", "NOPE"], "--stop-signal"),
        (&["--seed", "-1"], "--seed"),
        (&["--forever", "--max", "3"], "--forever"),
        (&["--no-such-flag"], "--no-such-flag"),
    ];
    let dir = scratch();
    let marker = dir.path().join("ran");
    for (args, flag) in cases {
        let out = retry_sh(args, &format!("touch {}", path_str(&marker))).run();
        out.expect_code(2);
        let lines = out.stderr_lines();
        assert_eq!(lines.len(), 1, "{args:?}: {lines:?}");
        assert!(lines[0].starts_with("retry: "), "{args:?}: {lines:?}");
        assert!(
            lines[0].contains(flag),
            "{args:?} should name {flag}: {lines:?}"
        );
        assert!(out.stdout.is_empty());
        assert!(!marker.exists(), "{args:?} ran the command");
    }
}

#[test]
fn missing_command_is_a_usage_error() {
    let out = retry(["--max", "3"]).run();
    out.expect_code(2);
    assert_eq!(out.stderr_lines().len(), 1);
    assert!(out.stderr_text().contains("missing COMMAND"));
}

#[test]
fn environment_configures_and_flags_override_it() {
    let count = |out: &crate::util::Outcome| out.stdout_text().lines().count();
    let out = fast_sh(&[], "echo x; exit 1").env("RETRY_MAX", "2").run();
    assert_eq!(count(&out), 2);
    let out = fast_sh(&["--max", "3"], "echo x; exit 1")
        .env("RETRY_MAX", "2")
        .run();
    assert_eq!(count(&out), 3);
    let out = fast_sh(&[], "exit 1").env("RETRY_MAX", "zero").run();
    out.expect_code(2);
    assert!(out.stderr_text().contains("--max"));
}

#[test]
fn dry_run_prints_the_schedule_and_runs_nothing() {
    let dir = scratch();
    let marker = dir.path().join("ran");
    let args = [
        "--dry-run",
        "--max",
        "4",
        "--jitter",
        "none",
        "--base",
        "1s",
        "--seed",
        "7",
        "--",
        "touch",
    ];
    let mut all: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    all.push(path_str(&marker));
    let out = retry(&all).run();
    out.expect_code(0);
    assert!(out.stderr.is_empty());
    assert!(!marker.exists());
    let text = out.stdout_text();
    let rows: Vec<Vec<String>> = text
        .lines()
        .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        .map(|l| {
            l.split("  ")
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect()
        })
        .collect();
    assert_eq!(
        rows,
        vec![
            vec!["1", "2", "1s", "1s", "1s"],
            vec!["2", "3", "2s", "2s", "3s"],
            vec!["3", "4", "4s", "4s", "7s"],
        ],
        "{text}"
    );
    assert!(text.contains("worst case: 7s"), "{text}");
    assert!(text.contains("seed 7"));
}

#[test]
fn dry_run_with_a_seed_is_reproducible() {
    let run = |seed: &str| {
        retry(["--dry-run", "--max", "8", "--seed", seed])
            .run()
            .stdout_text()
    };
    assert_eq!(run("5"), run("5"));
    assert_ne!(run("5"), run("6"));
}

/// `retry --max 2 -- retry INNER... -- sh -c 'count a run; exit 1'`: the
/// outcome and how many times the innermost command ran.
fn nested(inner: &[&str]) -> (crate::util::Outcome, usize) {
    let dir = scratch();
    let count = dir.path().join("count");
    let script = format!("echo x >> {}; exit 1", path_str(&count));
    let bin = path_str(crate::util::bin());
    let mut args = vec!["--max", "2", "--base", "1ms", "--cap", "1ms", "--", &bin];
    args.extend_from_slice(inner);
    args.extend(["--", "sh", "-c", &script]);
    let out = retry(args).run();
    let runs = std::fs::read_to_string(&count)
        .expect("count")
        .lines()
        .count();
    (out, runs)
}

#[test]
fn nested_retry_warns_that_attempts_multiply() {
    let (out, runs) = nested(&["--max", "3", "--base", "1ms", "--cap", "1ms"]);
    out.expect_code(1);
    assert_eq!(runs, 6);
    assert!(
        out.stderr_text()
            .contains("attempts multiply (2 x 3 = 6 runs)"),
        "{}",
        out.stderr_text()
    );
}

#[test]
fn nested_single_runs_the_inner_command_once() {
    let (out, runs) = nested(&["--nested", "single", "--max", "3"]);
    out.expect_code(1);
    assert_eq!(runs, 2);
    assert!(!out.stderr_text().contains("multiply"));
}

#[test]
fn no_sleep_after_the_last_attempt() {
    let out = retry([
        "--max", "2", "--base", "1s", "--jitter", "none", "--", "false",
    ])
    .run();
    out.expect_code(1);
    // One 1 s wait between the two attempts; a wait after the last would make it 2 s.
    assert!(
        out.elapsed >= Duration::from_millis(1000),
        "{:?}",
        out.elapsed
    );
    assert!(
        out.elapsed < Duration::from_millis(1900),
        "{:?}",
        out.elapsed
    );
}

#[test]
fn max_time_gives_up_rather_than_sleep_past_it() {
    let out = retry([
        "--max",
        "5",
        "--base",
        "10s",
        "--jitter",
        "none",
        "--max-time",
        "3s",
        "--",
        "false",
    ])
    .run();
    out.expect_code(1);
    assert!(out.elapsed < Duration::from_secs(2), "{:?}", out.elapsed);
    assert!(
        out.stderr_text().contains("would start after --max-time"),
        "{}",
        out.stderr_text()
    );
}

#[test]
fn max_time_stops_a_running_attempt_with_124() {
    let out = retry(["--max-time", "500ms", "--", "sleep", "10"]).run();
    out.expect_code(124);
    assert!(
        out.elapsed >= Duration::from_millis(450),
        "{:?}",
        out.elapsed
    );
    assert!(out.elapsed < Duration::from_secs(4), "{:?}", out.elapsed);
    assert!(out.stderr_text().contains("stopped at --max-time"));
}

/// Usage errors: exit 2, one line naming `names` (each), nothing run and
/// nothing created, not even the `--log-file`.
fn expect_usage_error(args: &[&str], env: &[(&str, &str)], names: &[&str]) {
    let dir = scratch();
    let marker = dir.path().join("ran");
    let log = dir.path().join("log.jsonl");
    let log_s = path_str(&log);
    let mut all = vec!["--log-file", log_s.as_str()];
    all.extend_from_slice(args);
    let mut cmd = retry_sh(&all, &format!("touch {}", path_str(&marker)));
    for (k, v) in env {
        cmd = cmd.env(k, v);
    }
    let out = cmd.run();
    out.expect_code(2);
    let lines = out.stderr_lines();
    assert_eq!(lines.len(), 1, "{args:?} {env:?}: {lines:?}");
    assert!(lines[0].starts_with("retry: "), "{lines:?}");
    for name in names {
        assert!(
            lines[0].contains(name),
            "{args:?} {env:?} should name {name:?}: {lines:?}"
        );
    }
    assert!(out.stdout.is_empty());
    assert!(!marker.exists(), "{args:?} {env:?} ran the command");
    assert!(!log.exists(), "{args:?} {env:?} created the log file");
}

#[test]
fn bad_values_name_their_flag_or_variable_and_the_accepted_form() {
    let form = "a duration such as 250ms";
    expect_usage_error(
        &["--base", "-1s"],
        &[],
        &["--base", "'-1s'", "negative", form],
    );
    expect_usage_error(&["--max-time", "-5"], &[], &["--max-time", "negative"]);
    expect_usage_error(&["-t", "--"], &[], &["--timeout needs a value", "0 or inf"]);
    expect_usage_error(
        &["--max"],
        &[],
        &["--max", "a whole number of attempts from 1"],
    );
    expect_usage_error(
        &["--max", "99999999999"],
        &[],
        &["--max", "from 1 to 4294967295"],
    );
    expect_usage_error(&["--base", "inf"], &[], &["--base", "finite"]);
    expect_usage_error(&["--base", "1e30"], &[], &["--base", "too large"]);
    expect_usage_error(
        &["--seed", "9007199254740992"],
        &[],
        &["--seed", "9007199254740991"],
    );
    expect_usage_error(
        &["--stop-signal", "RTMIN+99"],
        &[],
        &["--stop-signal", "kill -l"],
    );
    expect_usage_error(
        &["--base", "1m", "--cap", "40s"],
        &[],
        &["--cap (40s) is below --base (1m)"],
    );
    expect_usage_error(
        &[],
        &[("RETRY_MAX", "abc")],
        &["RETRY_MAX", "'abc'", "from 1 to"],
    );
    expect_usage_error(&[], &[("RETRY_BASE", "-2")], &["RETRY_BASE", "negative"]);
    expect_usage_error(&[], &[("RETRY_TIMEOUT", "soon")], &["RETRY_TIMEOUT", form]);
    expect_usage_error(
        &[],
        &[("RETRY_JITTER", "bogus")],
        &[
            "RETRY_JITTER",
            "'bogus'",
            "none, full, equal, decorrelated, additive",
        ],
    );
    expect_usage_error(
        &[],
        &[("RETRY_BACKOFF", "cubic")],
        &["RETRY_BACKOFF", "exponential"],
    );
    // A bad flag value is still blamed on the flag when the variable is fine.
    expect_usage_error(
        &["--jitter", "bogus"],
        &[("RETRY_JITTER", "full")],
        &["--jitter", "'bogus'"],
    );
}

#[test]
fn flags_that_would_do_nothing_are_usage_errors() {
    let cases: &[(&[&str], &[&str])] = &[
        (
            &["--backoff", "linear", "--multiplier", "3"],
            &["--multiplier", "--backoff linear"],
        ),
        (
            &["--backoff", "fixed", "-m", "1.5"],
            &["--multiplier", "--backoff fixed"],
        ),
        (&["--jitter-max", "2s"], &["--jitter-max", "--jitter full"]),
        (
            &["-j", "decorrelated", "-m", "3"],
            &["--multiplier", "--jitter decorrelated"],
        ),
        (
            &["-j", "decorrelated", "--backoff", "linear"],
            &["--backoff", "--jitter decorrelated"],
        ),
        (
            &["--no-retry-on-timeout"],
            &["--no-retry-on-timeout", "without --timeout"],
        ),
        (
            &["--backoff", "fixed", "--reset-after", "1m"],
            &["--reset-after", "--backoff fixed"],
        ),
    ];
    expect_usage_error(
        &["--no-retry-on-timeout", "--max-time", "1m"],
        &[],
        &["--no-retry-on-timeout", "without --timeout"],
    );
    for (args, names) in cases {
        expect_usage_error(args, &[], names);
    }
    expect_usage_error(
        &["-j", "decorrelated"],
        &[("RETRY_BACKOFF", "fixed")],
        &["RETRY_BACKOFF", "--jitter decorrelated"],
    );
}

/// `sh -c` that appends a line to `count` and fails; how many lines it wrote.
fn counting_failure(dir: &std::path::Path) -> (String, std::path::PathBuf) {
    let count = dir.join("count");
    (format!("echo x >> {}; exit 1", path_str(&count)), count)
}

fn lines_in(path: &std::path::Path) -> usize {
    std::fs::read_to_string(path).map_or(0, |s| s.lines().count())
}

#[test]
fn max_time_alone_keeps_retrying_past_five_attempts() {
    let dir = scratch();
    let (script, count) = counting_failure(dir.path());
    let out = retry_sh(
        &["--max-time", "2s", "--base", "10ms", "--cap", "50ms"],
        &script,
    )
    .run();
    assert!(lines_in(&count) > 5, "only {} attempts", lines_in(&count));
    assert!(
        out.elapsed >= Duration::from_millis(1500),
        "{:?}",
        out.elapsed
    );
    assert!(out.elapsed < Duration::from_secs(10), "{:?}", out.elapsed);
    // The deadline ends the run: between attempts (the last code, 1) or,
    // less often, during one (124).
    let text = out.stderr_text();
    match out.code() {
        1 => assert!(text.contains("would start after --max-time"), "{text}"),
        124 => assert!(
            text.contains("--max-time ran out during the attempt"),
            "{text}"
        ),
        other => panic!("exit {other}: {text}"),
    }
    assert!(!text.contains("giving up after 5 attempts"), "{text}");

    // The same deadline from the environment; an explicit limit still holds.
    let (script, count) = counting_failure(&dir.path().join("x"));
    std::fs::create_dir(dir.path().join("x")).expect("mkdir");
    let out = retry_sh(&["--base", "1ms", "--cap", "1ms"], &script)
        .env("RETRY_MAX_TIME", "5m")
        .env("RETRY_MAX", "3")
        .run();
    out.expect_code(1);
    assert_eq!(lines_in(&count), 3);
}

#[test]
fn zero_and_inf_mean_no_limit_for_timeout_and_max_time() {
    let out = retry([
        "--timeout",
        "0",
        "--max-time",
        "inf",
        "--max",
        "1",
        "--",
        "sleep",
        "0.3",
    ])
    .run();
    out.expect_code(0);
    let out = retry(["--max", "1", "--", "sleep", "0.3"])
        .env("RETRY_TIMEOUT", "infinity")
        .env("RETRY_MAX_TIME", "0s")
        .run();
    out.expect_code(0);
}

#[test]
fn a_tiny_timeout_rounds_up_and_still_limits() {
    // 1e-12 s is below a nanosecond: it must become 1 ns, not zero (no limit).
    let out = retry(["--timeout", "1e-12", "--max", "1", "--", "sleep", "5"]).run();
    out.expect_code(124);
    assert!(out.elapsed < Duration::from_secs(4), "{:?}", out.elapsed);
}

/// The ceilings `--dry-run --jitter none` shows for these flags.
fn ceilings(args: &[&str]) -> Vec<String> {
    let mut all = vec!["--dry-run", "--jitter", "none"];
    all.extend_from_slice(args);
    let out = retry(&all).run();
    out.expect_code(0);
    out.stdout_text()
        .lines()
        .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        .filter_map(|l| {
            l.split("  ")
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .nth(2)
                .map(String::from)
        })
        .collect()
}

#[test]
fn durations_in_every_form_sleep_and_timeout_accept() {
    for (base, want) in [
        ("2", "2s"),
        ("0.25", "250ms"),
        (".5", "500ms"),
        ("5.", "5s"),
        ("1e-3", "1ms"),
        ("2.5e1", "25s"),
        ("2.5E-1s", "250ms"),
        ("0.0125m", "750ms"),
        (".01h", "36s"),
        ("0.000011574d", "1s"),
        ("0.12345678901234567890123", "123ms"),
        ("250ms", "250ms"),
        ("1m 30s", "1m 30s"),
    ] {
        assert_eq!(
            ceilings(&["--max", "2", "--cap", "1h", "--base", base]),
            vec![want.to_string()],
            "--base {base}"
        );
    }
}

#[test]
fn a_base_above_the_default_cap_raises_it() {
    assert_eq!(
        ceilings(&["--max", "3", "--base", "1m"]),
        vec!["1m".to_string(), "1m".to_string()]
    );
    assert_eq!(
        ceilings(&["--max", "3", "--base", "20s"]),
        vec!["20s".to_string(), "30s".to_string()]
    );
}

#[test]
fn decorrelated_dry_run_says_growth_settings_do_not_apply() {
    let out = retry(["--dry-run", "--jitter", "decorrelated", "--seed", "1"]).run();
    out.expect_code(0);
    let text = out.stdout_text();
    assert!(text.contains("growth settings do not apply"), "{text}");
    assert!(!text.contains("exponential"), "{text}");
}

/// A seed means the same schedule in every version and on every platform.
/// These are the delays (rounded to ms by the table) of the pinned stream.
#[test]
fn seeded_dry_runs_are_pinned() {
    let delays = |args: &[&str]| -> Vec<String> {
        let mut all = vec!["--dry-run", "--max", "4"];
        all.extend_from_slice(args);
        let out = retry(&all).run();
        out.expect_code(0);
        out.stdout_text()
            .lines()
            .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
            .filter_map(|l| {
                l.split("  ")
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .nth(3)
                    .map(String::from)
            })
            .collect()
    };
    assert_eq!(delays(&["--seed", "42"]), ["372ms", "1s 714ms", "3s 925ms"]);
    assert_eq!(
        delays(&["--seed", "42", "-j", "decorrelated"]),
        ["1s 745ms", "4s 629ms", "13s 646ms"]
    );
    assert_eq!(
        delays(&["--seed", "42", "-j", "additive"]),
        ["1s 372ms", "2s 857ms", "4s 981ms"]
    );
    assert_eq!(
        delays(&["-j", "equal", "--seed", "9007199254740991"]),
        ["731ms", "1s 932ms", "3s 73ms"]
    );
}

#[test]
fn os_drawn_seeds_survive_a_json_reader() {
    for _ in 0..8 {
        let out = retry(["--log-format", "json", "--", "true"]).run();
        out.expect_code(0);
        let start = &out.json()[0];
        let seed = start["seed"].as_u64().expect("seed is a whole number");
        assert!(seed < 1 << 53, "{seed}");
        // What a double-based reader sees is the seed itself.
        assert_eq!(seed as f64 as u64, seed);
    }
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
