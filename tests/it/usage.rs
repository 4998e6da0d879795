//! Usage errors end to end: one line naming the flag (or variable) and the
//! accepted form, exit 2, nothing run; the environment as configuration.

use crate::core::fast_sh;
use crate::util::{path_str, retry, retry_sh, scratch};

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

/// Flags whose value may rightly start with '-': a pattern, a request body.
const HYPHEN_VALUES_ALLOWED: &[&str] = &[
    "retry-if-output",
    "stop-if-output",
    "data",
    "data-binary",
    "json",
];

/// Every flag that takes a value takes `-1` (and, unless its value is
/// optional, `-x`) as that value: where such a value is wrong, the error is
/// the flag's own (one line naming it, exit 2, nothing run, sent or
/// created), never clap's "unexpected argument". Flags are read from the
/// clap definition, so a new one is covered as soon as it exists.
#[test]
fn a_value_that_starts_with_a_hyphen_is_the_flags_value() {
    use clap::CommandFactory;
    let server = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    server.set_nonblocking(true).expect("nonblocking");
    let url = format!("http://{}/", server.local_addr().expect("addr"));
    let command = retry_tool::cli::Cli::command();
    let mut checked = 0;
    for arg in command.get_arguments() {
        if arg.is_positional() || !arg.get_action().takes_values() {
            continue;
        }
        let long = arg.get_long().expect("every option has a long name");
        let flag = format!("--{long}");
        // The settings that make this flag meaningful, so that its value is
        // what gets judged.
        let heading = arg.get_help_heading().unwrap_or_default();
        let context: Vec<&str> = match heading {
            "HTTP" if long != "http" => vec!["--http", url.as_str()],
            "gRPC" => vec!["--grpc", "127.0.0.1:1"],
            "Simulation" if long == "simulate" => vec!["--outage", "1s"],
            "Simulation" if long == "outage" => vec!["--simulate", "3", "--capacity", "5/s"],
            "Simulation" => vec!["--simulate", "3", "--outage", "1s"],
            _ => vec![],
        };
        let optional = arg.get_num_args().is_some_and(|n| n.min_values() == 0);
        let values: &[&str] = if optional { &["-1"] } else { &["-1", "-x"] };
        for value in values {
            let dir = scratch();
            let mut args: Vec<&str> = context.clone();
            args.extend([flag.as_str(), value]);
            if HYPHEN_VALUES_ALLOWED.contains(&long) {
                // Taken as the value: a dry run shows the schedule.
                args.push("--dry-run");
                if context.is_empty() {
                    args.extend(["--", "true"]);
                }
                let out = crate::util::command()
                    .args(&args)
                    .current_dir(dir.path())
                    .output()
                    .expect("retry runs");
                let stderr = String::from_utf8_lossy(&out.stderr);
                assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
                continue;
            }
            if !["HTTP", "Simulation", "gRPC"].contains(&heading) {
                args.extend(["--", "sh", "-c", "touch ran"]);
            }
            let out = crate::util::command()
                .args(&args)
                .current_dir(dir.path())
                .output()
                .expect("retry runs");
            let stderr = String::from_utf8_lossy(&out.stderr);
            let lines: Vec<&str> = stderr.lines().collect();
            assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
            assert_eq!(lines.len(), 1, "{args:?}: {stderr}");
            assert!(lines[0].starts_with("retry: "), "{args:?}: {stderr}");
            assert!(
                lines[0].contains(&flag),
                "{args:?} should name {flag}: {stderr}"
            );
            assert!(
                lines[0].contains(&format!("'{value}'")),
                "{args:?}: {stderr}"
            );
            assert!(
                !lines[0].contains("unexpected argument"),
                "{args:?}: {stderr}"
            );
            assert!(out.stdout.is_empty(), "{args:?}");
            let left: Vec<_> = std::fs::read_dir(dir.path()).expect("dir").collect();
            assert!(
                left.is_empty(),
                "{args:?} ran or created something: {left:?}"
            );
            checked += 1;
        }
    }
    assert!(
        matches!(server.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "a request was sent"
    );
    assert!(checked > 60, "only {checked} flag values checked");
}

#[test]
fn a_capital_m_duration_is_refused_with_minutes_and_months_as_the_fix() {
    let dir = scratch();
    let marker = dir.path().join("ran");
    let touch = format!("touch {}", path_str(&marker));
    let out = retry_sh(&["--cap", "5M"], &touch).run();
    let line = out.expect_usage_line("--cap");
    assert!(
        line.contains("'5M'") && line.contains("write 5min or 5months"),
        "{line}"
    );
    let out = retry_sh(&[], &touch).env("RETRY_MAX_TIME", "1M").run();
    let line = out.expect_usage_line("RETRY_MAX_TIME (--max-time)");
    assert!(line.contains("write 1min or 1month"), "{line}");
    assert!(!marker.exists(), "a refused duration ran the command");
    // Written out, a month is read as one, and w as weeks.
    let out = retry(["--dry-run", "--base", "1w", "--cap", "1month", "--max", "2"]).run();
    out.expect_code(0);
    assert!(
        out.stdout_text().contains("from 7d to 30d 10h 33m 36s"),
        "{}",
        out.stdout_text()
    );
}

/// `--connect-timeout` with a COMMAND was refused as "applies only to HTTP
/// mode", though TCP mode takes it too.
#[test]
fn connect_timeout_with_a_command_names_both_modes_that_take_it() {
    let dir = scratch();
    let marker = dir.path().join("ran");
    let out = retry_sh(
        &["--connect-timeout", "1s"],
        &format!("touch {}", path_str(&marker)),
    )
    .run();
    out.expect_usage_line(
        "--connect-timeout applies only to HTTP, TCP and gRPC modes: add --http URL, --tcp HOST:PORT or --grpc HOST:PORT",
    );
    assert!(!marker.exists());
}
