//! The flags' validation as a whole: defaults, every message, the order
//! in which mistakes are found.

use std::time::Duration;

use clap::Parser;

use super::retries::parse_codes;
use super::*;
use crate::backoff::{Growth, Jitter};

/// The whole validation of `retry ARGS` (no environment).
pub(super) fn config(args: &[&str]) -> Result<Config, UsageError> {
    let mut argv = vec!["retry"];
    argv.extend_from_slice(args);
    Config::from_cli(Cli::parse_from(argv), Nesting::default())
}

/// The usage error `retry ARGS` is.
pub(super) fn err(args: &[&str]) -> String {
    config(args).expect_err("should be a usage error").0
}

#[test]
fn defaults_follow_the_contract() {
    let c = config(&["--", "true"]).expect("valid");
    assert_eq!(c.policy.max_attempts, Some(5));
    assert_eq!(c.policy.delay.base, Duration::from_secs(1));
    assert_eq!(c.policy.delay.cap, Duration::from_secs(30));
    assert_eq!(
        c.policy.delay.growth,
        Growth::Exponential { multiplier: 2.0 }
    );
    assert_eq!(c.policy.delay.jitter, Jitter::Full);
    assert_eq!(c.process.stop_signal, nix::libc::SIGTERM);
    assert_eq!(c.process.kill_after, Duration::from_secs(5));
    assert!(c.policy.rules.retry_on_timeout);
}

#[test]
fn durations() {
    assert_eq!(parse_duration("250ms"), Some(Duration::from_millis(250)));
    assert_eq!(parse_duration("1.5s"), Some(Duration::from_millis(1500)));
    assert_eq!(parse_duration("0.25"), Some(Duration::from_millis(250)));
    assert_eq!(parse_duration("30"), Some(Duration::from_secs(30)));
    assert_eq!(parse_duration("2m"), Some(Duration::from_secs(120)));
    assert_eq!(parse_duration("1h 30m"), Some(Duration::from_secs(5400)));
    assert_eq!(parse_duration("abc"), None);
    assert_eq!(parse_duration(""), None);
    assert_eq!(parse_duration("-1s"), None);
    assert_eq!(parse_duration("1.5parsecs"), None);
}

#[test]
fn code_lists() {
    let s = parse_codes("1,75,100-110").expect("valid");
    assert!(s.contains(1) && s.contains(75) && s.contains(105) && !s.contains(2));
    assert!(parse_codes("5-2").is_err());
    assert!(parse_codes("256").is_err());
    assert!(parse_codes("1,,2").is_err());
    assert!(parse_codes("x").is_err());
}

#[test]
fn usage_errors_name_the_flag() {
    assert!(err(&["--max", "0", "--", "true"]).contains("--max"));
    assert!(err(&["--base", "abc", "--", "true"]).contains("--base"));
    assert!(err(&["--base", "2s", "--cap", "1s", "--", "true"]).contains("--cap"));
    assert!(err(&["--multiplier", "0.5", "--", "true"]).contains("--multiplier"));
    assert!(err(&["--retry-on", "5-2", "--", "true"]).contains("--retry-on"));
    let overlap = err(&["--retry-on", "1-5", "--stop-on", "3", "--", "true"]);
    assert!(
        overlap.contains("--retry-on") && overlap.contains("--stop-on") && overlap.contains('3')
    );
    assert!(err(&[]).contains("missing COMMAND"));
    assert!(err(&["--jitter-max", "1s", "--", "true"]).contains("--jitter-max"));
}

#[test]
fn max_time_alone_lifts_the_attempt_limit() {
    let c = config(&["--max-time", "2m", "--", "true"]).expect("valid");
    assert_eq!(c.policy.max_attempts, None);
    assert_eq!(c.policy.max_time, Some(Duration::from_secs(120)));
    let c = config(&["--max-time", "2m", "--max", "3", "--", "true"]).expect("valid");
    assert_eq!(c.policy.max_attempts, Some(3));
    // No deadline after all: the default limit stays.
    let c = config(&["--max-time", "0", "--", "true"]).expect("valid");
    assert_eq!(c.policy.max_attempts, Some(5));
    assert_eq!(c.policy.max_time, None);
}

#[test]
fn a_long_base_raises_the_default_cap_only() {
    let c = config(&["--base", "1m", "--", "true"]).expect("valid");
    assert_eq!(c.policy.delay.cap, Duration::from_secs(60));
    let c = config(&["--base", "10s", "--", "true"]).expect("valid");
    assert_eq!(c.policy.delay.cap, Duration::from_secs(30));
    let e = err(&["--base", "1m", "--cap", "40s", "--", "true"]);
    assert!(e.contains("--cap (40s) is below --base (1m)"), "{e}");
    let e = err(&["--cap", "500ms", "--", "true"]);
    assert!(
        e.contains("--cap (500ms) is below --base (1s, the default)"),
        "{e}"
    );
}

#[test]
fn idle_timeout_is_30s_in_http_mode_and_none_for_a_command() {
    let idle = |args: &[&str]| config(args).expect("valid").policy.idle_timeout;
    assert_eq!(
        idle(&["--http", "http://h/"]),
        Some(Duration::from_secs(30))
    );
    assert_eq!(idle(&["--", "true"]), None);
    assert_eq!(
        idle(&["--http", "http://h/", "--idle-timeout", "2s"]),
        Some(Duration::from_secs(2))
    );
    for none in ["0", "inf"] {
        assert_eq!(idle(&["--http", "http://h/", "--idle-timeout", none]), None);
    }
    assert_eq!(
        idle(&["--idle-timeout", "5m", "--", "true"]),
        Some(Duration::from_secs(300))
    );
    assert!(err(&["--idle-timeout", "-1", "--", "true"]).contains("--idle-timeout"));
    let sim = err(&["--idle-timeout", "5s", "--simulate", "10", "--outage", "1s"]);
    assert!(sim.contains("--idle-timeout"), "{sim}");
}

#[test]
fn zero_and_inf_mean_no_limit_for_timeouts_only() {
    for v in ["0", "0s", "inf", "infinity"] {
        let c = config(&["--timeout", v, "--max-time", v, "--", "true"]).expect(v);
        assert_eq!((c.policy.timeout, c.policy.max_time), (None, None), "{v}");
    }
    for flag in [
        "--base",
        "--cap",
        "--jitter-max",
        "--reset-after",
        "--kill-after",
    ] {
        let e = err(&[flag, "inf", "--jitter", "additive", "--", "true"]);
        assert!(
            e.starts_with(&format!("invalid value 'inf' for {flag}")),
            "{e}"
        );
    }
}

#[test]
fn negative_durations_name_their_flag() {
    let e = err(&["--base", "-1s", "--", "true"]);
    assert!(
        e.contains("'-1s' for --base") && e.contains("negative"),
        "{e}"
    );
    let e = err(&["--timeout", "--", "true"]);
    assert!(e.starts_with("--timeout needs a value, not '--'"), "{e}");
}

#[test]
fn values_from_the_environment_are_named_by_their_variable() {
    let mut cli = Cli::parse_from(["retry", "--max", "abc", "--", "true"]);
    cli.from_env = vec![("max".into(), "RETRY_MAX".into())];
    let e = Config::from_cli(cli, Nesting::default())
        .expect_err("invalid")
        .0;
    assert!(e.contains("for RETRY_MAX (--max):"), "{e}");
    let mut cli = Cli::parse_from([
        "retry",
        "--backoff",
        "fixed",
        "-j",
        "decorrelated",
        "--",
        "true",
    ]);
    cli.from_env = vec![("backoff".into(), "RETRY_BACKOFF".into())];
    let e = Config::from_cli(cli, Nesting::default())
        .expect_err("invalid")
        .0;
    assert!(
        e.starts_with("RETRY_BACKOFF (--backoff) has no effect with --jitter decorrelated"),
        "{e}"
    );
}

#[test]
fn flags_that_would_do_nothing_are_refused() {
    for (args, first, second) in [
        (
            &["--backoff", "linear", "-m", "3"][..],
            "--multiplier",
            "--backoff linear",
        ),
        (
            &["--backoff", "fixed", "-m", "3"][..],
            "--multiplier",
            "--backoff fixed",
        ),
        (&["--jitter-max", "2s"][..], "--jitter-max", "--jitter full"),
        (
            &["-j", "equal", "--jitter-max", "2s"][..],
            "--jitter-max",
            "--jitter equal",
        ),
        (
            &["-j", "decorrelated", "-m", "3"][..],
            "--multiplier",
            "--jitter decorrelated",
        ),
        (
            &["-j", "decorrelated", "--backoff", "exponential"][..],
            "--backoff",
            "--jitter decorrelated",
        ),
        (
            &["--no-retry-on-timeout"][..],
            "--no-retry-on-timeout",
            "--timeout",
        ),
        (
            &["--no-retry-on-timeout", "--timeout", "0"][..],
            "--no-retry-on-timeout",
            "--timeout",
        ),
        (
            &["--no-retry-on-timeout", "--max-time", "1m"][..],
            "--no-retry-on-timeout",
            "--timeout",
        ),
        (
            &["--backoff", "fixed", "--reset-after", "1m"][..],
            "--reset-after",
            "--backoff fixed",
        ),
    ] {
        let mut all = args.to_vec();
        all.extend(["--", "true"]);
        let e = err(&all);
        assert!(e.starts_with(first) && e.contains(second), "{args:?}: {e}");
    }
    // The same flags where they do act.
    for args in [
        &["-m", "3"][..],
        &["-j", "additive", "--jitter-max", "2s"][..],
        &["--no-retry-on-timeout", "--timeout", "1m"][..],
        &["-j", "decorrelated", "--reset-after", "1m"][..],
        &["--backoff", "linear", "--reset-after", "1m"][..],
    ] {
        let mut all = args.to_vec();
        all.extend(["--", "true"]);
        config(&all).unwrap_or_else(|e| panic!("{args:?}: {e}"));
    }
    // Over HTTP the connection timeout can always expire.
    config(&["--no-retry-on-timeout", "--http", "http://127.0.0.1:9/"]).expect("valid");
}

#[test]
fn seeds_stay_exact_as_json_numbers() {
    let c = config(&["--seed", "9007199254740991", "--", "true"]).expect("valid");
    assert_eq!(c.policy.seed, Some(crate::rng::MAX_SEED));
    let e = err(&["--seed", "9007199254740992", "--", "true"]);
    assert!(e.contains("from 0 to 9007199254740991"), "{e}");
    assert!(err(&["--seed", "-1", "--", "true"]).contains("--seed"));
}

#[test]
fn out_of_range_counts_say_the_range() {
    let e = err(&["--max", "99999999999", "--", "true"]);
    assert!(e.contains("from 1 to 4294967295"), "{e}");
}

#[test]
fn stop_signals_by_any_name() {
    let c = config(&["--stop-signal", "sigusr1", "--", "true"]).expect("valid");
    assert_eq!(c.process.stop_signal, nix::libc::SIGUSR1);
    assert!(err(&["--stop-signal", "NOPE", "--", "true"]).contains("--stop-signal"));
}

#[test]
fn dry_run_needs_no_command() {
    let c = config(&["--dry-run"]).expect("valid");
    assert!(matches!(c.mode, Mode::DryRun { .. }));
}

#[test]
fn nested_single_runs_once() {
    let cli = Cli::parse_from(["retry", "--nested", "single", "--", "true"]);
    let nesting = Nesting {
        outer_depth: 1,
        outer_max: Some(5),
    };
    let c = Config::from_cli(cli, nesting).expect("valid");
    assert_eq!(c.policy.max_attempts, Some(1));
    assert!(!c.warn_nested);
    let cli = Cli::parse_from(["retry", "--", "true"]);
    assert!(Config::from_cli(cli, nesting).expect("valid").warn_nested);
}

#[test]
fn values_that_start_with_a_hyphen_are_judged_as_values() {
    assert_eq!(
        err(&["--max", "-1", "--", "true"]),
        "invalid value '-1' for --max: expected a whole number of attempts from 1 to 4294967295"
    );
    // The next option taken as a value: the flag was given none.
    let e = err(&["--group", "--budget", "--", "true"]);
    assert!(
        e.starts_with("--group needs a value, not '--budget'"),
        "{e}"
    );
    let e = err(&["--retry-on", "-v", "--", "true"]);
    assert!(e.starts_with("--retry-on needs a value, not '-v'"), "{e}");
    // Names that start with '-' are written ./-name.
    let e = err(&["--log-file", "-1", "--", "true"]);
    assert!(
        e.contains("for --log-file") && e.contains("write ./-1"),
        "{e}"
    );
    assert!(config(&["--log-file", "./-1", "--", "true"]).is_ok());
    let e = err(&["--state", "-s", "--", "true"]);
    assert!(e.starts_with("--state needs a value, not '-s'"), "{e}");
    // Group names cannot start with '-', and an unused one is still checked.
    assert!(err(&["--group", "-nightly", "--", "true"]).contains("--group"));
    assert!(config(&["--group", "nightly-sync", "--", "true"]).is_ok());
    // A pattern or a body may start with '-'.
    assert!(config(&["--retry-if-output", "-1", "--", "true"]).is_ok());
}

#[test]
fn state_required_without_shared_state_is_refused_not_ignored() {
    for args in [
        &["--state-required", "--", "true"][..],
        &["--group", "g", "--state-required", "--", "true"],
    ] {
        let e = err(args);
        assert!(
            e.contains("--state-required applies to shared state"),
            "{args:?}: {e}"
        );
    }
    assert!(config(&["--group", "g", "--budget", "--state-required", "--", "true"]).is_ok());
}
