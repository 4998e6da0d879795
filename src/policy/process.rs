//! The flags of how a COMMAND's attempts run as processes: `--stop-signal`,
//! `--kill-after`, `--foreground`, `--replay-stdin` (and its
//! `--replay-stdin-max`), the output patterns (`--retry-if-output`,
//! `--stop-if-output`), `--idle-timeout` and `--hold-output`; and the hooks
//! (`--on-retry`, `--on-give-up`), which run as processes in every mode.

use std::time::Duration;

use super::size::{self, Size, SizeError};
use super::{Inf, Names, SIGNAL_FORM, SIZE_FORM, UsageError, duration, invalid};
use crate::attempt::hold::Held;
use crate::attempt::hook::Hook;
use crate::attempt::process::ProcessOptions;
use crate::attempt::scan::Patterns;
use crate::attempt::stdin::REPLAY_DEFAULT_MAX;
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

/// The process options, given the stop signal, patterns and idle limit
/// already checked (the idle limit is the policy's: HTTP mode has it too).
pub(super) fn options(
    cli: &Cli,
    names: &Names,
    stop_signal: i32,
    output: Option<Patterns>,
    idle_timeout: Option<Duration>,
) -> Result<ProcessOptions, UsageError> {
    Ok(ProcessOptions {
        stop_signal,
        kill_after: duration(names, "--kill-after", cli.kill_after.as_deref(), Inf::No)?
            .unwrap_or(Duration::from_secs(5)),
        foreground: cli.foreground,
        replay_stdin: cli.replay_stdin,
        replay_max: replay_max(cli, names)?,
        output,
        idle_timeout,
        hold: cli.hold_output.then(Held::default),
    })
}

/// `--on-retry` and `--on-give-up`, stopped as `process`'s attempts are.
pub(super) fn hooks(
    cli: &Cli,
    process: &ProcessOptions,
) -> Result<(Option<Hook>, Option<Hook>), UsageError> {
    let hook = |flag: &'static str, value: Option<&String>| {
        let Some(command) = value else {
            return Ok(None);
        };
        // sh would take a leading '-' for one of its own options.
        if command.trim().is_empty() || command.trim_start().starts_with('-') {
            return Err(invalid(
                flag,
                command,
                "a shell command for /bin/sh -c, such as 'make clean' (not starting with '-')",
            ));
        }
        Ok(Some(Hook {
            flag,
            command: command.clone(),
            stop_signal: process.stop_signal,
            kill_after: process.kill_after,
        }))
    };
    Ok((
        hook("--on-retry", cli.on_retry.as_ref())?,
        hook("--on-give-up", cli.on_give_up.as_ref())?,
    ))
}

/// `--replay-stdin-max`: the most stdin `--replay-stdin` reads before it
/// gives up; None for no limit. The flag without `--replay-stdin` would do
/// nothing and is refused; the variable, set for a whole session, is not.
fn replay_max(cli: &Cli, names: &Names) -> Result<Option<u64>, UsageError> {
    let id = "replay_stdin_max";
    let Some(s) = cli.replay_stdin_max.as_deref() else {
        return Ok(Some(REPLAY_DEFAULT_MAX));
    };
    let name = names.of(id, "--replay-stdin-max");
    let max = match size::parse(s) {
        Ok(Size::Bytes(n)) => Some(n),
        Ok(Size::Unlimited) => None,
        Err(SizeError::Zero) => {
            return Err(invalid(
                &name,
                s,
                &format!("a size above zero: {SIZE_FORM}"),
            ));
        }
        Err(SizeError::TooLarge) => {
            return Err(invalid(
                &name,
                s,
                "a size of at most 16 EiB, such as 64M, or inf for no limit",
            ));
        }
        Err(SizeError::Invalid) => return Err(invalid(&name, s, SIZE_FORM)),
    };
    if !cli.replay_stdin && !names.came_from_env(id) {
        return Err(UsageError(
            "--replay-stdin-max has no effect without --replay-stdin".to_string(),
        ));
    }
    Ok(max)
}
