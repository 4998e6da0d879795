//! `retry`: run a command and retry it on failure, with capped exponential
//! backoff and jitter.
//!
//! [`main_entry`] wires the stages together: flags (`cli`) become a validated
//! configuration (`policy`); the retry loop (`run`) drives attempts
//! (`attempt`), judges them (`classify`), waits (`backoff`), logs (`log`) and
//! ends with an exit status (`exit`).

pub mod attempt;
pub mod backoff;
pub mod classify;
pub mod cli;
pub mod event;
pub mod exit;
pub mod finish;
pub mod fsutil;
pub mod human;
pub mod log;
pub mod mask;
pub mod policy;
mod probe;
pub mod retry_policy;
pub mod rng;
pub mod run;
pub mod schedule;
pub mod signals;
pub mod signame;
pub mod sim;
pub mod state;
pub mod stdio;
pub mod wait;

use std::io::Write;
use std::time::Instant;

use clap::{CommandFactory, FromArgMatches};
use rand::TryRng;
use rand::rngs::SysRng;

use attempt::process::ProcessAttempt;
use event::Event;
use log::Logger;
use policy::{Config, Mode, Nesting};

/// Run `retry` with the process's arguments; returns the exit status.
pub fn main_entry() -> u8 {
    // A panic is a bug or a system at its limits (tokio cannot start without
    // a few spare file descriptors): one line, and retry's own status.
    std::panic::set_hook(Box::new(|info| {
        let what = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("unknown failure");
        eprintln!("retry: internal error: {what}");
    }));
    match std::panic::catch_unwind(run_main) {
        Ok(code) => code,
        Err(_) => exit::INTERNAL,
    }
}

fn run_main() -> u8 {
    let started = Instant::now();
    // Before anything changes a disposition: what the parent left ignored
    // stays ignored.
    signals::prepare();
    let cli = match parse_args() {
        Ok(cli) => cli,
        Err(e) => return clap_error(&e),
    };
    let config = match Config::from_cli(cli, nesting_from_env()) {
        Ok(c) => c,
        Err(e) => {
            // One line, whatever a value echoed in it holds.
            Logger::stderr().error(&human::escape_controls(&e.0));
            return exit::USAGE;
        }
    };
    if config.state.show {
        return show_state(&config);
    }
    // What the end-of-run outputs will need (the metrics file's directory)
    // is checked before anything runs or is created.
    if let Err(e) = finish::check(&config.finish) {
        Logger::stderr().error(&e);
        return exit::USAGE;
    }
    let seed = config.policy.seed.unwrap_or_else(os_seed);
    let mut rng = rng::seeded(seed);

    let command = match &config.mode {
        Mode::DryRun { command } => {
            let sched = schedule::schedule(&config.policy, &mut rng);
            let report = schedule::render(&config.policy, seed, command, &sched);
            let mut out = std::io::stdout().lock();
            return match out.write_all(report.as_bytes()).and_then(|()| out.flush()) {
                Ok(()) => exit::SUCCESS,
                Err(_) => exit::INTERNAL,
            };
        }
        Mode::Simulate { sim } => {
            return sim::cmd::main(&config, sim, seed, || rng::seeded(seed));
        }
        Mode::Run { command } => {
            for var in finish::REPORTS_ENV {
                if std::env::var_os(var).is_some() {
                    // SAFETY: no other thread exists yet (the runtime and
                    // the log start later), so nothing reads the
                    // environment meanwhile.
                    unsafe { std::env::remove_var(var) };
                }
            }
            command.clone()
        }
        Mode::Http { request } => return probe::main(&config, request, started, seed, &mut rng),
        Mode::Tcp { probe } => return tcp_main(&config, probe, started, seed, &mut rng),
    };

    let (mut log, log_failed) = open_log(&config, started);
    let depth = config.nesting.outer_depth.saturating_add(1);
    let process = config.process.clone();
    // Only the log sees this copy: secrets in the arguments become ***.
    let shown: Vec<std::ffi::OsString> = mask::command_line(&command)
        .into_iter()
        .map(Into::into)
        .collect();
    drive(
        &config,
        &mut log,
        &shown,
        seed,
        &mut rng,
        || match log_failed {
            Some(why) => Err(why),
            None => Ok(ProcessAttempt::new(command, process, depth)),
        },
        |finish, _, _| finish.exit_code,
    )
}

/// TCP mode: the loop over connection attempts.
fn tcp_main(
    config: &Config,
    probe: &attempt::tcp::TcpOptions,
    started: Instant,
    seed: u64,
    rng: &mut rng::JitterRng,
) -> u8 {
    let (mut log, log_failed) = open_log(config, started);
    let shown = probe.display_words();
    let probe = probe.clone();
    drive(
        config,
        &mut log,
        &shown,
        seed,
        rng,
        || match log_failed {
            Some(why) => Err(why),
            None => Ok(attempt::tcp::TcpAttempt::new(probe)),
        },
        |finish, _, _| finish.exit_code,
    )
}

/// Run the retry loop over the attempts `make` sets up, on a single-threaded
/// runtime with retry's signal handlers installed; `deliver` turns how the
/// loop finished (and the attempt runner, which may hold a result to put in
/// place) into the exit status. The end-of-run outputs hear of the run
/// then, however it ended: also when retry could not start it, or shared
/// state or a signal ended it before the first attempt. Returns the exit
/// status.
fn drive<A, F, D>(
    config: &Config,
    log: &mut Logger,
    shown: &[std::ffi::OsString],
    seed: u64,
    rng: &mut rng::JitterRng,
    make: F,
    deliver: D,
) -> u8
where
    A: attempt::Attempt,
    F: FnOnce() -> Result<A, String>,
    D: FnOnce(&run::Finish, A, &mut Logger) -> u8,
{
    let started_at = std::time::SystemTime::now();
    let started = Instant::now();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            log.error(&format!("cannot start: {e}"));
            return exit::INTERNAL;
        }
    };
    let code = runtime.block_on(async {
        let deadline = config.policy.max_time.and_then(|d| started.checked_add(d));
        let mut outputs = finish::Outputs::new(&config.finish);
        let (mut signals, ended) = match signals::Signals::install() {
            Ok(mut signals) => {
                let ended = run_to_end(
                    config,
                    log,
                    shown,
                    seed,
                    rng,
                    &mut signals,
                    &mut outputs,
                    deadline,
                    make,
                    deliver,
                )
                .await;
                (signals, ended)
            }
            Err(e) => {
                log.error(&format!("cannot install signal handlers: {e}"));
                (
                    signals::Signals::none(),
                    Ended::early(exit::INTERNAL, event::End::Permanent),
                )
            }
        };
        if !outputs.is_empty() {
            let summary = finish::RunSummary {
                started_at,
                duration: started.elapsed(),
                attempts: ended.attempts,
                exit_code: ended.code,
                end: ended.end,
                last_status: ended.last_status,
                retries_refused: ended.retries_refused,
            };
            let mut ctx = finish::Ctx {
                log,
                signals: &mut signals,
                deadline,
                cut: None,
            };
            outputs.finished(&summary, &mut ctx).await;
        }
        ended.code
    });
    // The process exits next, which frees the runtime anyway: shutting it
    // down would only add work to every run, and a DNS lookup that hangs
    // holds a blocking thread that a drop would wait for.
    std::mem::forget(runtime);
    code
}

/// How a run ended, for its exit status and the end-of-run outputs.
struct Ended {
    code: u8,
    attempts: u32,
    end: event::End,
    last_status: Option<classify::Status>,
    retries_refused: u32,
}

impl Ended {
    /// Ended before the first attempt.
    fn early(code: u8, end: event::End) -> Ended {
        Ended {
            code,
            attempts: 0,
            end,
            last_status: None,
            retries_refused: 0,
        }
    }
}

/// `drive`'s run, from the attempt runner's set-up to the exit status.
#[allow(clippy::too_many_arguments)]
async fn run_to_end<A, F, D>(
    config: &Config,
    log: &mut Logger,
    shown: &[std::ffi::OsString],
    seed: u64,
    rng: &mut rng::JitterRng,
    signals: &mut signals::Signals,
    outputs: &mut finish::Outputs,
    deadline: Option<Instant>,
    make: F,
    deliver: D,
) -> Ended
where
    A: attempt::Attempt,
    F: FnOnce() -> Result<A, String>,
    D: FnOnce(&run::Finish, A, &mut Logger) -> u8,
{
    if config.warn_nested {
        warn_nested(log, config);
    }
    let mut attempt = match make() {
        Ok(a) => a,
        Err(e) => {
            log.error(&e);
            return Ended::early(exit::INTERNAL, event::End::Permanent);
        }
    };
    if !outputs.is_empty() {
        let mut ctx = finish::Ctx {
            log,
            signals,
            deadline,
            cut: None,
        };
        outputs.started(&mut ctx).await;
        // A signal that came while an output prepared (the start ping's
        // answer is awaited a moment) starts no attempt.
        if let Some(sig) = signals.interrupted() {
            let exit_code = exit::from_signal(sig as i32);
            let reason = format!(
                "interrupted by {} before the first attempt",
                classify::signal_name(sig as i32)
            );
            log.emit(&Event::Done {
                end: event::End::Interrupted,
                attempts: 0,
                max: config.policy.max_attempts,
                exit_code,
                reason: &reason,
            });
            return Ended::early(exit_code, event::End::Interrupted);
        }
    }
    log.emit(&Event::Start {
        command: shown,
        max: config.policy.max_attempts,
        max_time: config.policy.max_time,
        seed,
    });
    let shared = config.state.shared.clone();
    let mut state = match state::Session::open(shared, log, signals, deadline).await {
        Ok(s) => s,
        Err(stop) => {
            let end = stop_end(&stop);
            return Ended::early(state_stopped(stop, log), end);
        }
    };
    let mut between = config.on_retry.as_ref().map(attempt::hook::Runner::new);
    let finish = run::run(
        &config.policy,
        &mut attempt,
        &mut between,
        &run::TokioClock,
        rng,
        signals,
        log,
        &mut state,
    )
    .await;
    // The breaker hears how the run ended, unless a signal ended it. A
    // store too slow to hear it in time leaves the run's status as it is.
    let mut stopped = None;
    if finish.end != event::End::Interrupted {
        let ok = finish.exit_code == exit::SUCCESS;
        match state.finish(ok, log, signals).await {
            Ok(()) | Err(state::Stop::Deadline) => {}
            Err(stop) => stopped = Some(state_stopped(stop, log)),
        }
    }
    let code = match stopped {
        Some(code) => code,
        None => deliver(&finish, attempt, log),
    };
    // A success the result could not be put in place for is a failure.
    let end = match finish.end {
        event::End::Success if code != exit::SUCCESS => event::End::Permanent,
        end => end,
    };
    Ended {
        code,
        attempts: finish.attempts,
        end,
        last_status: (finish.attempts > 0).then_some(finish.status),
        // Only the budget refuses once attempts have run (the breaker
        // refuses before the first), and its refusal ends the run.
        retries_refused: u32::from(finish.end == event::End::Refused && finish.attempts > 0),
    }
}

/// How a run that shared state stopped before its first attempt ended.
fn stop_end(stop: &state::Stop) -> event::End {
    match stop {
        state::Stop::Interrupted(_) => event::End::Interrupted,
        state::Stop::Deadline => event::End::Deadline,
        state::Stop::Refused(_) => event::End::Refused,
        state::Stop::Failed(_) => event::End::Permanent,
    }
}

/// Shared state ended the run before it began, or after it ended.
fn state_stopped(stop: state::Stop, log: &mut Logger) -> u8 {
    match stop {
        state::Stop::Interrupted(sig) => exit::from_signal(sig as i32),
        state::Stop::Refused(why) | state::Stop::Failed(why) => {
            log.error(&why);
            exit::INTERNAL
        }
        state::Stop::Deadline => {
            log.error("--max-time ran out while asking the shared state store");
            exit::TIMED_OUT
        }
    }
}

/// `--state-show`: the group's state on stdout.
fn show_state(config: &Config) -> u8 {
    let Some(features) = &config.state.shared else {
        return exit::USAGE;
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            Logger::stderr().error(&format!("cannot start: {e}"));
            return exit::INTERNAL;
        }
    };
    let shown = runtime.block_on(async {
        tokio::time::timeout(state::CALL_LIMIT, state::show(features))
            .await
            .unwrap_or_else(|_| Err(anyhow::anyhow!("the state store did not answer in time")))
    });
    match shown {
        Ok(text) => {
            let mut out = std::io::stdout().lock();
            match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
                Ok(()) => exit::SUCCESS,
                Err(_) => exit::INTERNAL,
            }
        }
        Err(e) => {
            Logger::stderr().error(&format!("{e:#}"));
            exit::INTERNAL
        }
    }
}

/// The log as configured. When `--log-file` cannot be opened: a log on
/// stderr alone and the error, which `drive` then reports as retry's own
/// failure before the first attempt (exit 125), so that the metrics and the
/// heartbeat monitor hear of it too.
fn open_log(config: &Config, started: Instant) -> (Logger, Option<String>) {
    match Logger::open(&config.log, started) {
        Ok(log) => (log, None),
        Err(why) => (Logger::stderr(), Some(why)),
    }
}

/// The clap command, with an empty configuration variable (say `RETRY_MAX=`)
/// counting as unset, as shell scripts that pass through optional settings
/// expect, rather than as an invalid value.
fn command_without_empty_env() -> clap::Command {
    cli::Cli::command().mut_args(|arg| {
        let empty = arg
            .get_env()
            .and_then(std::env::var_os)
            .is_some_and(|v| v.is_empty());
        if empty { arg.env(None) } else { arg }
    })
}

/// Parse the command line and the environment. The result records which
/// settings came from environment variables, so messages can name them.
fn parse_args() -> Result<cli::Cli, clap::Error> {
    use clap::parser::ValueSource;
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let mut command = command_without_empty_env();
    let matches = match command.try_get_matches_from_mut(&args) {
        Ok(m) => m,
        Err(e) => return Err(blame_env(e, &args)),
    };
    // Only a --max on the command line contradicts --forever; RETRY_MAX from
    // the environment yields to it (policy ignores the limit with --forever).
    if matches.get_flag("forever") && matches.value_source("max") == Some(ValueSource::CommandLine)
    {
        return Err(command.error(
            clap::error::ErrorKind::ArgumentConflict,
            "the argument '--forever' cannot be used with '--max <N>'",
        ));
    }
    let mut cli = cli::Cli::from_arg_matches(&matches)?;
    // `-d` and `--data-binary` pieces are joined in command-line order.
    let mut pieces: Vec<(usize, bool)> = ["data", "data_binary"]
        .into_iter()
        .enumerate()
        .flat_map(|(i, id)| {
            matches
                .indices_of(id)
                .into_iter()
                .flatten()
                .map(move |at| (at, i == 1))
        })
        .collect();
    pieces.sort_unstable();
    cli.http.data_order = pieces.into_iter().map(|(_, binary)| binary).collect();
    cli.from_env = command
        .get_arguments()
        .filter_map(|arg| {
            let var = arg.get_env()?;
            let id = arg.get_id().as_str();
            (matches.value_source(id) == Some(ValueSource::EnvVariable))
                .then(|| (id.to_string(), var.to_string_lossy().into_owned()))
        })
        .collect();
    Ok(cli)
}

/// The argument a clap error is about, from its `--long <VALUE>` rendering.
fn error_arg(command: &clap::Command, e: &clap::Error) -> Option<clap::Arg> {
    use clap::error::{ContextKind, ContextValue};
    let Some(ContextValue::String(shown)) = e.get(ContextKind::InvalidArg) else {
        return None;
    };
    let flag = shown.split([' ', '=']).next()?;
    command
        .get_arguments()
        .find(|a| {
            a.get_long().is_some_and(|l| flag == format!("--{l}"))
                || a.get_short().is_some_and(|c| flag == format!("-{c}"))
        })
        .cloned()
}

/// An invalid value that clap rejected (say `RETRY_JITTER=bogus`) may come
/// from the environment: then the message names the variable, since the
/// command line shows nothing wrong. Found by parsing again without it.
fn blame_env(e: clap::Error, args: &[std::ffi::OsString]) -> clap::Error {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if !matches!(
        e.kind(),
        ErrorKind::InvalidValue | ErrorKind::ValueValidation
    ) {
        return e;
    }
    let mut command = command_without_empty_env();
    let Some(arg) = error_arg(&command, &e) else {
        return e;
    };
    let Some(var) = arg.get_env().map(|v| v.to_string_lossy().into_owned()) else {
        return e;
    };
    let id = arg.get_id().clone();
    let without = command_without_empty_env().mut_arg(&id, |a| a.env(None));
    let still_bad = match without.try_get_matches_from(args) {
        Ok(_) => false,
        Err(again) => error_arg(&command, &again).is_some_and(|a| *a.get_id() == id),
    };
    if still_bad {
        return e;
    }
    let value = std::env::var_os(&var)
        .map(|v| v.to_string_lossy().into_owned())
        .unwrap_or_default();
    let accepted = match e.get(ContextKind::ValidValue) {
        Some(ContextValue::Strings(values)) if !values.is_empty() => {
            format!("accepted: {}", values.join(", "))
        }
        _ => "see --help".to_string(),
    };
    command.error(
        ErrorKind::InvalidValue,
        format!(
            "invalid value '{value}' for {var} (--{}); {accepted}",
            arg.get_long().unwrap_or(id.as_str())
        ),
    )
}

/// Help and version go to stdout with status 0; anything else is one line
/// on stderr with status 2.
fn clap_error(e: &clap::Error) -> u8 {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = e.print();
            exit::SUCCESS
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            exit::USAGE
        }
        _ => {
            let rendered = e.render().to_string();
            let first = rendered.lines().next().unwrap_or("invalid arguments");
            let first = first.strip_prefix("error: ").unwrap_or(first);
            let hint = if first.contains("possible values")
                || first.contains("[possible")
                || first.contains("accepted:")
            {
                String::new()
            } else {
                accepted_hint(e)
            };
            Logger::stderr().error(&format!("{first}{hint} (see 'retry --help')"));
            exit::USAGE
        }
    }
}

/// clap lists the accepted values on a later line; keep them on the one
/// line. A missing value gets the accepted form of its flag.
fn accepted_hint(e: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue};
    match e.get(ContextKind::ValidValue) {
        Some(ContextValue::Strings(values)) if !values.is_empty() => {
            format!("; accepted: {}", values.join(", "))
        }
        _ if e.kind() != clap::error::ErrorKind::InvalidValue => String::new(),
        _ => error_arg(&cli::Cli::command(), e)
            .and_then(|arg| policy::accepted_form(arg.get_id().as_str()))
            .map(|form| format!("; expected {form}"))
            .unwrap_or_default(),
    }
}

fn nesting_from_env() -> Nesting {
    let read = |name| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.trim().parse::<u32>().ok())
    };
    Nesting {
        outer_depth: read("RETRY_DEPTH").unwrap_or(0),
        outer_max: read("RETRY_MAX_ATTEMPTS"),
    }
}

fn warn_nested(log: &mut Logger, config: &Config) {
    let inner = config.policy.max_attempts;
    let msg = match (config.nesting.outer_max, inner) {
        (Some(outer), Some(inner)) => format!(
            "running inside another retry (depth {}): attempts multiply ({outer} x {inner} = {} runs); --nested single runs the command once",
            config.nesting.outer_depth,
            u64::from(outer) * u64::from(inner)
        ),
        _ => format!(
            "running inside another retry (depth {}): attempts multiply; --nested single runs the command once",
            config.nesting.outer_depth
        ),
    };
    log.emit(&Event::Warning { message: &msg });
}

/// A seed from the OS, never from the clock: processes started in the same
/// instant must not share a schedule. Kept below 2^53 so that the seed in a
/// JSON log reads back exactly anywhere; 53 bits are plenty to keep a fleet's
/// schedules apart.
fn os_seed() -> u64 {
    rng::mask_seed(SysRng.try_next_u64().unwrap_or_else(|_| {
        // No OS entropy at all: fall back to per-process addresses, which ASLR
        // still varies between processes.
        let local = 0u8;
        (&local as *const u8 as u64) ^ u64::from(std::process::id()).rotate_left(32)
    }))
}
