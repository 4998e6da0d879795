//! The flags of how a COMMAND's attempts run as processes: `--stop-signal`,
//! `--kill-after`, `--foreground`, `--replay-stdin` (and its
//! `--replay-stdin-max`), the output patterns (`--retry-if-output`,
//! `--stop-if-output`), `--idle-timeout`, and held output (`--hold-output`,
//! `--last-stdout`, `--hold-max`); and the hooks (`--on-retry`,
//! `--on-give-up`), which run as processes in every mode.

use std::time::Duration;

use super::size::{self, Size, SizeError};
use super::values::{Inf, Names, SIGNAL_FORM, SIZE_FORM, UsageError, duration, invalid};
use crate::attempt::hold::{HOLD_DEFAULT_MAX, HOLD_MIN_MAX, Held, HoldOptions};
use crate::attempt::hook::Hook;
use crate::attempt::process::ProcessOptions;
use crate::attempt::scan::Patterns;
use crate::attempt::stdin::REPLAY_DEFAULT_MAX;
use crate::classify::CodeSet;
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
/// already checked (the idle limit is the policy's: HTTP mode has it too),
/// and the exit codes that count as success.
pub(super) fn options(
    cli: &Cli,
    names: &Names,
    stop_signal: i32,
    output: Option<Patterns>,
    idle_timeout: Option<Duration>,
    success_on: &CodeSet,
) -> Result<ProcessOptions, UsageError> {
    let hold_max = hold_max(cli, names)?;
    if cli.last_stdout && cli.restart_on_success {
        return Err(UsageError(
            "--last-stdout keeps the stdout of the attempt retry exits with, and --restart-on-success never lets a success end the run: give one or the other".to_string(),
        ));
    }
    let hold = (cli.hold_output || cli.last_stdout).then(|| {
        Held::new(HoldOptions {
            output: cli.hold_output,
            last_stdout: cli.last_stdout,
            max: hold_max,
            success_on: success_on.clone(),
        })
    });
    Ok(ProcessOptions {
        stop_signal,
        kill_after: duration(names, "--kill-after", cli.kill_after.as_deref(), Inf::No)?
            .unwrap_or(Duration::from_secs(5)),
        foreground: cli.foreground,
        replay_stdin: cli.replay_stdin,
        replay_max: replay_max(cli, names)?,
        output,
        idle_timeout,
        hold,
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

/// `--hold-max`: the most a held attempt's file takes. The flag without
/// `--hold-output` or `--last-stdout` would do nothing and is refused; the
/// variable, set for a whole session, is not.
fn hold_max(cli: &Cli, names: &Names) -> Result<u64, UsageError> {
    let id = "hold_max";
    let Some(s) = cli.hold_max.as_deref() else {
        return Ok(HOLD_DEFAULT_MAX);
    };
    let name = names.of(id, "--hold-max");
    let form = "a size of at least 1M, such as 16M or 1G (powers of 1024; KB, MB, GB: of 1000)";
    let max = match size::parse(s) {
        Ok(Size::Bytes(n)) if n >= HOLD_MIN_MAX => n,
        Ok(Size::Bytes(_)) | Err(SizeError::Zero) => return Err(invalid(&name, s, form)),
        Ok(Size::Unlimited) => {
            return Err(invalid(
                &name,
                s,
                &format!("{form}; held output always has a bound"),
            ));
        }
        Err(SizeError::TooLarge | SizeError::Invalid) => return Err(invalid(&name, s, form)),
    };
    if !cli.hold_output && !cli.last_stdout && !names.came_from_env(id) {
        return Err(UsageError(
            "--hold-max has no effect without --hold-output or --last-stdout".to_string(),
        ));
    }
    Ok(max)
}
