//! The flags of how a COMMAND's attempts run as processes: `--stop-signal`,
//! `--kill-after`, `--foreground`, `--replay-stdin` and the output patterns
//! (`--retry-if-output`, `--stop-if-output`).

use std::time::Duration;

use super::{Inf, Names, SIGNAL_FORM, UsageError, duration, invalid};
use crate::attempt::process::ProcessOptions;
use crate::attempt::scan::Patterns;
use crate::cli::Cli;

/// `--stop-signal`, TERM when not given.
pub(super) fn stop_signal(cli: &Cli) -> Result<i32, UsageError> {
    Ok(match cli.stop_signal.as_deref() {
        None => nix::libc::SIGTERM,
        Some(s) => {
            crate::signame::parse(s).ok_or_else(|| invalid("--stop-signal", s, SIGNAL_FORM))?
        }
    })
}

/// The output patterns, compiled; None leaves the child's output alone.
pub(super) fn output(cli: &Cli) -> Result<Option<Patterns>, UsageError> {
    if cli.retry_if_output.is_empty() && cli.stop_if_output.is_empty() {
        return Ok(None);
    }
    Patterns::new(&cli.retry_if_output, &cli.stop_if_output)
        .map(Some)
        .map_err(|e| {
            invalid(
                e.flag,
                &e.pattern,
                &format!("a regular expression (regex crate syntax): {}", e.reason),
            )
        })
}

/// The process options, given the stop signal and patterns already checked.
pub(super) fn options(
    cli: &Cli,
    names: &Names,
    stop_signal: i32,
    output: Option<Patterns>,
) -> Result<ProcessOptions, UsageError> {
    Ok(ProcessOptions {
        stop_signal,
        kill_after: duration(
            names,
            "kill_after",
            "--kill-after",
            cli.kill_after.as_deref(),
            Inf::No,
        )?
        .unwrap_or(Duration::from_secs(5)),
        foreground: cli.foreground,
        replay_stdin: cli.replay_stdin,
        output,
    })
}

/// The process flags given on the command line, by name: none of them has
/// any effect where no process runs (`--http`, `--simulate`).
pub(super) fn given(cli: &Cli) -> [(&'static str, bool); 4] {
    [
        ("--stop-signal", cli.stop_signal.is_some()),
        ("--kill-after", cli.kill_after.is_some()),
        ("--foreground", cli.foreground),
        ("--replay-stdin", cli.replay_stdin),
    ]
}
