//! The table against clap's own list of flags, and the refusals it words.

use clap::{CommandFactory, Parser};

use super::*;
use crate::policy::tests::{config, err};
use crate::policy::{Config, Nesting};

#[test]
fn every_flag_clap_knows_has_one_row_under_its_own_name() {
    let command = Cli::command();
    let mut ids = Vec::new();
    for arg in command.get_arguments() {
        let id = arg.get_id().as_str();
        if matches!(id, "help" | "version") {
            continue;
        }
        let rows: Vec<&Flag> = FLAGS.iter().filter(|f| f.id == id).collect();
        assert_eq!(
            rows.len(),
            1,
            "clap's {id} has {} rows in FLAGS",
            rows.len()
        );
        let name = match arg.get_long() {
            Some(long) => format!("--{long}"),
            None => "COMMAND".to_string(),
        };
        assert_eq!(rows[0].name, name, "the row of {id}");
        ids.push(id.to_string());
    }
    for flag in FLAGS {
        assert!(
            ids.iter().any(|id| id == flag.id),
            "{} is no flag of clap's",
            flag.id
        );
    }
}

#[test]
fn refusals_keep_their_words() {
    let url = "http://127.0.0.1:9/";
    for (args, want) in [
        (
            &["--method", "POST", "--", "true"][..],
            "--method applies only to HTTP mode: add --http URL",
        ),
        (
            &["--connect-timeout", "1s", "--", "true"][..],
            "--connect-timeout applies only to HTTP, TCP and gRPC modes: add --http URL, --tcp HOST:PORT or --grpc HOST:PORT",
        ),
        (
            &["--tcp", "db:1", "--insecure"][..],
            "--insecure applies only to HTTP mode, not to --tcp",
        ),
        (
            &["--http", url, "--retry-on", "3"][..],
            "--retry-on applies to exit codes of a COMMAND: with --http use --expect or --retry-status",
        ),
        (
            &["--tcp", "db:1", "--stop-on", "3"][..],
            "--stop-on applies to exit codes of a COMMAND, not to --tcp",
        ),
        (
            &["--http", url, "--hold-output"][..],
            "--hold-output applies to a COMMAND's processes, not to --http",
        ),
        (
            &["--tcp", "db:1", "--idle-timeout", "1s"][..],
            "--idle-timeout applies to a COMMAND's processes, not to --tcp",
        ),
        (
            &["--http", url, "--", "true"][..],
            "--http and COMMAND are mutually exclusive: give one or the other",
        ),
        (
            &["--tcp", "db:1", "--", "true"][..],
            "--tcp and COMMAND are mutually exclusive: give one or the other",
        ),
        (
            &["--tcp", "db:1", "--http", url][..],
            "--tcp and --http are mutually exclusive: give one or the other",
        ),
        (
            &["--outage", "1s", "--", "true"][..],
            "--outage applies only to --simulate N: add --simulate with a number of clients",
        ),
        (
            &["--compare", "--", "true"][..],
            "--compare applies only to --simulate N",
        ),
        (
            &["--simulate", "5", "--outage", "1s", "--tcp", "db:1"][..],
            "--simulate runs nothing real: it cannot be combined with --tcp",
        ),
        (
            &["--simulate", "5", "--outage", "1s", "--dry-run"][..],
            "--simulate runs nothing real: it cannot be combined with --dry-run",
        ),
        (
            &["--simulate", "5", "--outage", "1s", "--on-retry", "true"][..],
            "--simulate runs nothing real: it cannot be combined with --on-retry",
        ),
        (
            &["--simulate", "5", "--outage", "1s", "--timeout", "1s"][..],
            "--simulate runs nothing real: it cannot be combined with --timeout",
        ),
        (
            &["--simulate", "5", "--outage", "1s", "--state-required"][..],
            "--simulate runs nothing real: it cannot be combined with --state-required (the simulated clients share their state in memory)",
        ),
        (
            &["--simulate", "5", "--outage", "1s", "--breaker", "3"][..],
            "--breaker has no effect in --simulate",
        ),
        (
            &["--simulate", "5", "--outage", "1s", "--ping-log"][..],
            "--ping-log reports on a run, and --simulate runs nothing: leave it out",
        ),
        (
            &["--dry-run", "--metrics-file", "m.prom"][..],
            "--metrics-file reports on a run, and --dry-run runs nothing: leave it out",
        ),
        (
            &["--group", "g", "--state-show", "--dry-run"][..],
            "--state-show only prints the group's state: give it no COMMAND, --http, --tcp, --file, --grpc or --dry-run",
        ),
        (
            &["--forever", "--max", "3", "--", "true"][..],
            "--forever and --max are mutually exclusive",
        ),
    ] {
        let e = err(args);
        assert!(e.starts_with(want), "{args:?}: {e}");
    }
}

/// `--simulate` models a client that stops at its first success: a
/// success followed by another attempt is not simulated, so the flag is
/// refused rather than ignored.
#[test]
fn simulate_refuses_restart_on_success_which_it_does_not_model() {
    let e = err(&["--simulate", "10", "--outage", "2s", "--restart-on-success"]);
    assert!(
        e.starts_with("--restart-on-success has no effect in --simulate"),
        "{e}"
    );
    config(&["--restart-on-success", "--", "true"]).expect("a command takes it");
    config(&["--dry-run", "--restart-on-success"]).expect("a dry run shows its waits");
}

/// The dry run and `--state-show` run nothing: the flags that act only
/// while a run is under way are refused with them, as the reports are.
#[test]
fn what_acts_on_a_run_is_refused_where_nothing_runs() {
    for (args, flag) in [
        (&["--on-retry", "echo hi"][..], "--on-retry"),
        (&["--on-give-up", "echo hi"][..], "--on-give-up"),
        (&["--hold-output"][..], "--hold-output"),
        (&["--idle-timeout", "5s"][..], "--idle-timeout"),
    ] {
        let mut dry = vec!["--dry-run"];
        dry.extend_from_slice(args);
        let e = err(&dry);
        assert_eq!(
            e,
            format!("{flag} acts on a run, and --dry-run runs nothing: leave it out")
        );
        let mut show = vec!["--group", "g", "--state-show"];
        show.extend_from_slice(args);
        let e = err(&show);
        assert_eq!(
            e,
            format!("{flag} acts on a run, and --state-show runs nothing: leave it out")
        );
        // The same flags where a command runs.
        let mut real = args.to_vec();
        real.extend(["--", "true"]);
        config(&real).unwrap_or_else(|e| panic!("{real:?}: {e}"));
    }
    // What only shapes or describes a run is previewed as given.
    config(&[
        "--dry-run",
        "--timeout",
        "5s",
        "--stop-signal",
        "INT",
        "--",
        "make",
    ])
    .expect("valid");
}

/// A variable set for every run of a session does not stand in the way of
/// a mode that does not take it; the same flag on the command line does.
#[test]
fn values_from_the_environment_are_never_refused() {
    let mut cli = Cli::parse_from(["retry", "--simulate", "10", "--outage", "1s"]);
    cli.timeout = Some("5s".into());
    cli.from_env = vec![("timeout".into(), "RETRY_TIMEOUT".into())];
    Config::from_cli(cli, Nesting::default()).expect("RETRY_TIMEOUT is not refused");
    let e = err(&["--simulate", "10", "--outage", "1s", "--timeout", "5s"]);
    assert!(e.contains("--timeout"), "{e}");
}

/// "add --http URL" is advice only where --http may be added: with
/// `--state-show` or `--simulate` it would be refused in its turn.
#[test]
fn http_flags_are_not_told_to_add_http_where_it_would_be_refused() {
    let e = err(&["--group", "g", "--state-show", "--method", "POST"]);
    assert_eq!(
        e,
        "--method acts on a run, and --state-show runs nothing: leave it out"
    );
    let e = err(&[
        "--simulate",
        "5",
        "--outage",
        "1s",
        "--connect-timeout",
        "1s",
    ]);
    assert_eq!(
        e,
        "--simulate runs nothing real: it cannot be combined with --connect-timeout"
    );
    for e in [e, err(&["--group", "g", "--state-show", "--insecure"])] {
        assert!(!e.contains("add --http"), "{e}");
    }
}
