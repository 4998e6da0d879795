//! Mistakes that parse: the line that reports them names the fix, and what
//! runs is still what was written.

use crate::util::{retry, scratch};

/// The give-up line of a run whose COMMAND was not found (exit 127): the
/// one line -q leaves, holding the hint.
fn not_found(args: &[&str]) -> String {
    let quiet = retry(std::iter::once("-q").chain(args.iter().copied())).run();
    quiet.expect_code(127);
    let lines = quiet.stderr_lines();
    assert_eq!(lines.len(), 1, "{lines:?}");
    lines[0].clone()
}

#[test]
fn a_count_before_the_command_is_hinted_as_max_and_still_runs_as_written() {
    let dir = scratch();
    let marker = dir.path().join("ran");
    let script = format!("touch {}", marker.display());
    let line = not_found(&["5", "sh", "-c", &script]);
    assert!(
        line.contains("command not found: 5") && line.contains("write: retry --max 5 -- sh ..."),
        "{line}"
    );
    assert!(!marker.exists(), "the hint must not change what runs");
}

/// `retry 3 -- curl ...` hinted `retry --max 3 -- -- ...`.
#[test]
fn a_count_then_a_double_dash_is_hinted_with_the_program_not_a_second_dash() {
    let line = not_found(&["3", "--", "curl", "-fsS", "http://127.0.0.1:9/"]);
    assert!(line.contains("write: retry --max 3 -- curl ..."), "{line}");
    assert!(!line.contains("-- --"), "{line}");
}

/// `retry help` ran a program called `help`, and said only that it was
/// not found.
#[test]
fn retry_help_points_at_the_help_flag() {
    let line = not_found(&["help"]);
    assert!(
        line.contains("command not found: help") && line.contains("write: retry --help"),
        "{line}"
    );
}

#[test]
fn a_url_as_command_is_hinted_as_http_with_its_secrets_masked() {
    let line = not_found(&["https://me:hunter2@127.0.0.1:9/health?token=abc"]);
    assert!(line.contains("write: retry --http https://"), "{line}");
    assert!(!line.contains("hunter2") && !line.contains("abc"), "{line}");
}

#[test]
fn a_host_and_port_as_command_is_hinted_as_tcp() {
    let line = not_found(&["db.internal:5432"]);
    assert!(
        line.contains("write: retry --tcp db.internal:5432"),
        "{line}"
    );
}

#[test]
fn a_whole_command_in_one_word_is_hinted_apart_not_reported_as_a_missing_program() {
    let line = not_found(&["curl -fsS -u me:hunter2 http://127.0.0.1:9/"]);
    assert!(
        line.contains("one word with spaces") && line.contains("sh -c 'curl ...'"),
        "{line}"
    );
    assert!(!line.contains("hunter2"), "{line}");
}

#[test]
fn a_command_that_is_only_missing_gets_no_hint() {
    let line = not_found(&["no-such-program-here", "--version"]);
    assert!(
        line.contains("command not found: no-such-program-here"),
        "{line}"
    );
    assert!(
        !line.contains("write:") && !line.contains("one word"),
        "{line}"
    );
}

#[test]
fn other_tools_flag_names_and_near_typos_get_did_you_mean() {
    for (args, want) in [
        (&["--retries", "3"][..], "did you mean --max"),
        (&["--times", "3"][..], "did you mean --max"),
        (&["--attempts", "3"][..], "did you mean --max"),
        (&["--delay", "5"][..], "did you mean --base"),
        (&["--sleep", "5"][..], "did you mean --base"),
        (&["--interval", "5"][..], "did you mean --base"),
        (&["--bse", "1s"][..], "did you mean --base?"),
        (&["--max-tim", "1m"][..], "did you mean --max-time?"),
    ] {
        let mut all = args.to_vec();
        all.extend(["--", "true"]);
        let line = retry(&all).run().expect_usage_line(want);
        assert!(line.contains(args[0]), "{line}");
    }
    // clap's guesses that point the wrong way are not offered: `--limit`
    // got `--multiplier`, `--exponential` `--expect`, curl's `--form`
    // `--format`.
    for (args, want) in [
        (&["--limit", "3"][..], "did you mean --max"),
        (&["--exponential"][..], "did you mean --backoff exponential"),
    ] {
        let mut all = args.to_vec();
        all.extend(["--", "true"]);
        let line = retry(&all).run().expect_usage_line(want);
        assert!(
            !line.contains("--multiplier") && !line.contains("--expect"),
            "{line}"
        );
    }
    let line = retry(["--form", "a=b", "--http", "http://127.0.0.1:9/"])
        .run()
        .expect_usage_line("--form");
    assert!(!line.contains("did you mean"), "{line}");
    // A flag nothing resembles gets no guess.
    let line = retry(["--zzzz", "--", "true"])
        .run()
        .expect_usage_line("--zzzz");
    assert!(!line.contains("did you mean"), "{line}");
}

/// A whole command line in one word, or a URL, given as COMMAND is no
/// program's name: every line of the log shows it masked, the first
/// (`start`, whose command is shown whole) as much as the give-up line.
#[test]
fn a_command_line_given_as_one_word_leaves_no_secret_in_any_log_line() {
    for args in [
        &["PGPASSWORD=hunter2 psql -h 127.0.0.1"][..],
        &["curl -fsS -u me:hunter2 http://127.0.0.1:9/"][..],
        &["https://me:hunter2@127.0.0.1:9/?token=hunter2"][..],
        &["3", "API_TOKEN=hunter2", "./deploy"][..],
    ] {
        let mut all = vec!["--log-format", "json", "--max", "1"];
        all.extend_from_slice(args);
        let out = retry(&all).run();
        out.expect_code(127);
        let log = out.stderr_text();
        assert!(log.contains("\"event\":\"start\""), "{log}");
        assert!(!log.contains("hunter2"), "{args:?}: {log}");
    }
}

/// `retry -- PGPASSWORD=hunter2 pg_isready` (an assignment only a shell
/// reads) showed the password in the text log, `--log-file`, the JSON log
/// and GitHub's annotations; now each masks it, and the give-up line
/// points at `env` without repeating it.
#[test]
fn an_assignment_given_as_command_leaves_no_secret_in_any_output_and_points_at_env() {
    let dir = scratch();
    let file = dir.path().join("log");
    let command = ["PGPASSWORD=hunter2", "pg_isready", "-h", "127.0.0.1"];
    let with = |extra: &[&str]| {
        let mut all = vec!["-v", "--max", "1"];
        all.extend_from_slice(extra);
        all.push("--");
        all.extend_from_slice(&command);
        all.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let log_file = file.to_str().expect("utf-8 path");
    let text = retry(with(&["--log-file", log_file]))
        .env("GITHUB_ACTIONS", "true")
        .run();
    text.expect_code(127);
    let json = retry(with(&["--log-format", "json"])).run();
    json.expect_code(127);
    let written = std::fs::read_to_string(&file).expect("the log file");
    let stderr = text.stderr_text();
    assert!(stderr.contains("::error title=retry::"), "{stderr}");
    for (what, log) in [
        ("text and annotations", &stderr),
        ("--log-file", &written),
        ("json", &json.stderr_text()),
    ] {
        assert!(!log.contains("hunter2"), "{what}: {log}");
        assert!(log.contains("PGPASSWORD=***"), "{what}: {log}");
        assert!(
            log.contains("write: retry -- env PGPASSWORD=*** pg_isready ..."),
            "{what}: {log}"
        );
    }
    // The dry run's report shows the command masked too.
    let mut dry = vec!["--dry-run", "--max", "2", "--"];
    dry.extend_from_slice(&command);
    let report = retry(&dry).run();
    report.expect_code(0);
    let text = report.stdout_text();
    assert!(
        text.contains("command: 'PGPASSWORD=***' pg_isready -h 127.0.0.1"),
        "{text}"
    );
}
