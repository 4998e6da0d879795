//! From parsed flags to a validated configuration.
//!
//! Every usage error comes from here, before anything runs: one line naming the
//! flag, the rejected value and the accepted form. Nothing below this module
//! knows about clap.

use std::ffi::OsString;
use std::fmt;
use std::time::Duration;

use crate::attempt::hook::Hook;
use crate::attempt::http::HttpOptions;
use crate::attempt::process::ProcessOptions;
use crate::attempt::tcp::TcpOptions;
use crate::cli::{Cli, NestedArg};
use crate::finish::FinishOptions;
use crate::log::LogOptions;
use crate::retry_policy::Policy;

mod duration;
mod http;
mod log;
mod modes;
mod monitor;
mod process;
mod retries;
mod sim;
mod size;
mod state;
mod tcp;
mod trace;
use duration::{Dur, DurError};
pub use http::{parse_header, parse_statuses};
pub use sim::SimOptions;
pub use state::StateOptions;

/// A usage error: printed as one line, exit status 2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// Refuse the first of `flags` that was given, saying why with `message`.
fn refuse_given<'f>(
    flags: impl IntoIterator<Item = (&'f str, bool)>,
    message: impl Fn(&str) -> String,
) -> Result<(), UsageError> {
    match flags.into_iter().find(|(_, given)| *given) {
        Some((flag, _)) => Err(UsageError(message(flag))),
        None => Ok(()),
    }
}

fn invalid(flag: &str, value: &str, expected: &str) -> UsageError {
    if looks_like_an_option(value) {
        return missing_value(flag, value, expected);
    }
    UsageError(format!(
        "invalid value '{}' for {flag}: expected {expected}",
        crate::human::escape_controls(value)
    ))
}

/// Every flag's value may start with '-', so that `--max -1` is refused as
/// a value rather than misread as an option. A value that looks like an
/// option (`-v`, `--http`, `--`) is then most likely the next word taken by
/// a flag given no value: say so.
fn looks_like_an_option(value: &str) -> bool {
    value
        .trim_start()
        .strip_prefix('-')
        .is_some_and(|rest| !rest.starts_with(|c: char| c.is_ascii_digit() || c == '.'))
}

fn missing_value(flag: &str, value: &str, expected: &str) -> UsageError {
    UsageError(format!(
        "{flag} needs a value, not '{}': expected {expected}",
        crate::human::escape_controls(value.trim())
    ))
}

/// A list flag's value read by `parse`, whose error says what is wrong
/// with it; the message adds the flag and the accepted `form`.
fn opt_list<T>(
    flag: &str,
    value: Option<&str>,
    form: &str,
    parse: impl Fn(&str) -> Result<T, String>,
) -> Result<Option<T>, UsageError> {
    value
        .map(|s| {
            if looks_like_an_option(s) {
                return Err(missing_value(flag, s, form));
            }
            parse(s).map_err(|why| {
                UsageError(format!(
                    "invalid value '{s}' for {flag}: {why}; expected {form}"
                ))
            })
        })
        .transpose()
}

/// A file named by a flag: a name that starts with '-' would be taken for
/// a forgotten value (the next option) as often as not, so it is refused,
/// with the way to give it anyway.
fn path_arg(flag: &str, path: &std::path::Path, expected: &str) -> Result<(), UsageError> {
    let shown = path.to_string_lossy();
    if looks_like_an_option(&shown) {
        return Err(missing_value(flag, &shown, expected));
    }
    if shown.starts_with('-') {
        return Err(invalid(
            flag,
            &shown,
            &format!("{expected}; write ./{shown} for a name that starts with '-'"),
        ));
    }
    Ok(())
}

const DUR_FORM: &str = "a duration such as 250ms, 1.5s, 2m, 1h 30m or 0.5 (seconds)";
const DUR_OR_NONE_FORM: &str =
    "a duration such as 250ms, 1.5s, 2m, 1h 30m or 0.5 (seconds); 0 or inf for no limit";
const MAX_FORM: &str = "a whole number of attempts from 1 to 4294967295";
const SEED_FORM: &str = "a whole number from 0 to 9007199254740991 (2^53 - 1)";
const SIGNAL_FORM: &str =
    "a signal name or number, such as TERM, SIGINT, RTMIN+2 or 9 (see 'kill -l')";
const LIST_FORM: &str = "exit codes and ranges from 0 to 255, such as 1,75,100-110";
const SIZE_FORM: &str = "a size in bytes with an optional unit, such as 500K, 64M or 2G (powers of 1024; KB, MB, GB: of 1000), or inf for no limit";

/// What the invocation asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Mode {
    /// Run COMMAND, retrying.
    Run { command: Vec<OsString> },
    /// Probe a URL over HTTP(S), retrying.
    Http { request: Box<HttpOptions> },
    /// Wait until every TCP target accepts a connection.
    Tcp { probe: TcpOptions },
    /// Print the schedule; COMMAND (or the HTTP request), if given, is only shown.
    DryRun { command: Vec<OsString> },
    /// Simulate N clients against a model server and report.
    Simulate { sim: SimOptions },
    /// Print the group's shared state; run nothing.
    StateShow,
}

/// Where this invocation sits inside other `retry` processes, read from the
/// environment by the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Nesting {
    /// RETRY_DEPTH as inherited: 0 when not run by another retry.
    pub outer_depth: u32,
    /// RETRY_MAX_ATTEMPTS as inherited, when known.
    pub outer_max: Option<u32>,
}

/// Everything an invocation needs, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub mode: Mode,
    pub policy: Policy,
    pub process: ProcessOptions,
    pub log: LogOptions,
    pub nesting: Nesting,
    /// Inside another retry, with the default `--nested multiply`: warn once.
    pub warn_nested: bool,
    /// Pace, budget and breaker shared by a group of invocations.
    pub state: StateOptions,
    /// What happens when the run ends, besides its exit status.
    pub finish: FinishOptions,
    /// `--on-retry`: run between a failed attempt and the wait.
    pub on_retry: Option<Hook>,
}

impl Config {
    /// Validate the flags concern by concern, in a fixed order: the first
    /// mistake found is the one reported.
    pub fn from_cli(mut cli: Cli, nesting: Nesting) -> Result<Config, UsageError> {
        let names = Names(&cli.from_env);
        let (mut policy, jitter_max) = retries::policy(&cli, &names)?;
        let stop_signal = process::stop_signal(&cli)?;
        let nested_single = cli.nested == Some(NestedArg::Single);
        let nested = nesting.outer_depth >= 1;
        if nested && nested_single {
            policy.max_attempts = Some(1);
        }
        let (state, fleet) = if cli.sim.simulate.is_some() {
            let rules = state::rules(&cli.state)?;
            let show = cli.state.state_show;
            (StateOptions { shared: None, show }, rules)
        } else {
            (
                state::from_args(&cli.state, &names)?,
                state::Rules::default(),
            )
        };
        let tcp = tcp::from_args(&cli)?;
        // --connect-timeout is TCP mode's too.
        let http = if tcp.is_some() {
            None
        } else {
            http::from_args(&cli.http)?
        };
        let output = process::output(&cli)?;
        let request = http.map(|(request, rules)| {
            policy.rules.http = rules;
            request
        });
        if cli.sim.simulate.is_some() {
            // The simulated clients spread after a server's wait as HTTP
            // mode's do.
            policy.rules.http.retry_after_spread = opt_duration(
                "--retry-after-spread",
                cli.http.retry_after_spread.as_deref(),
            )?;
        }
        let sim = sim::from_args(&cli.sim)?.map(|s| SimOptions {
            additive_max: jitter_max.unwrap_or(Duration::from_secs(1)),
            pace: fleet.pace,
            budget: fleet.budget,
            ..s
        });
        let process = process::options(
            &cli,
            &names,
            stop_signal,
            output,
            policy.idle_timeout,
            &policy.rules.success_on,
        )?;
        let (on_retry, on_give_up) = process::hooks(&cli, &process)?;
        // Each value is valid alone: which mode takes which flag.
        modes::check(&cli, &names)?;
        let command = std::mem::take(&mut cli.command);
        let mode = mode(
            command,
            cli.dry_run,
            Probe { request, tcp },
            sim,
            state.show,
        )?;
        let finish = FinishOptions {
            hold: process.hold.clone(),
            on_give_up,
            trace: trace::options(&cli, &mode, &|name| std::env::var(name).ok())?,
            ..monitor::options(&cli, &names, &mode)?
        };
        Ok(Config {
            mode,
            policy,
            process,
            log: log::options(&cli, &names)?,
            nesting,
            warn_nested: nested && !nested_single,
            state,
            finish,
            on_retry,
        })
    }
}

/// The probe modes' validated options, when one was asked for.
struct Probe {
    request: Option<HttpOptions>,
    tcp: Option<TcpOptions>,
}

/// Which of the modes the invocation asks for, once each is valid alone and
/// `modes` has refused any two of them together.
fn mode(
    command: Vec<OsString>,
    dry_run: bool,
    probe: Probe,
    sim: Option<SimOptions>,
    state_show: bool,
) -> Result<Mode, UsageError> {
    let Probe { request, tcp } = probe;
    Ok(if state_show {
        Mode::StateShow
    } else if let Some(sim) = sim {
        Mode::Simulate { sim }
    } else if dry_run {
        Mode::DryRun {
            command: match (&request, &tcp) {
                (Some(request), _) => request.display_words(),
                (None, Some(tcp)) => tcp.display_words(),
                (None, None) => command,
            },
        }
    } else if let Some(request) = request {
        Mode::Http {
            request: Box::new(request),
        }
    } else if let Some(probe) = tcp {
        Mode::Tcp { probe }
    } else if command.is_empty() {
        return Err(UsageError(
            "missing COMMAND: usage is 'retry [OPTIONS] -- COMMAND [ARG]...', 'retry [OPTIONS] --http URL', 'retry [OPTIONS] --tcp HOST:PORT' or 'retry [OPTIONS] --dry-run'"
                .to_string(),
        ));
    } else {
        Mode::Run { command }
    })
}

/// Parse a finite duration in any accepted form (see [`duration`]).
pub fn parse_duration(s: &str) -> Option<Duration> {
    match duration::parse(s) {
        Ok(Dur::Finite(d)) => Some(d),
        _ => None,
    }
}

/// Whether `inf` is accepted, and what it means.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Inf {
    /// Rejected: there is no "no limit" for this setting.
    No,
    /// Accepted as no limit: returned as zero, which the caller reads as none.
    NoLimit,
}

/// A duration flag's value, with errors naming the flag or its variable.
fn duration(
    names: &Names,
    flag: &str,
    value: Option<&str>,
    inf: Inf,
) -> Result<Option<Duration>, UsageError> {
    let Some(s) = value else { return Ok(None) };
    // The flag's clap id: its long name with '_' for '-'.
    let id = flag.trim_start_matches('-').replace('-', "_");
    let name = names.of(&id, flag);
    let form = match inf {
        Inf::No => DUR_FORM,
        Inf::NoLimit => DUR_OR_NONE_FORM,
    };
    match duration::parse(s) {
        Ok(Dur::Finite(d)) => Ok(Some(d)),
        Ok(Dur::Infinite) if inf == Inf::NoLimit => Ok(Some(Duration::ZERO)),
        Ok(Dur::Infinite) => Err(invalid(
            &name,
            s,
            "a finite duration (inf is accepted only by --timeout, --idle-timeout and --max-time)",
        )),
        Err(DurError::Negative) => Err(UsageError(format!(
            "invalid value '{}' for {name}: a duration cannot be negative; expected {form}",
            s.trim()
        ))),
        Err(DurError::TooLarge) => Err(UsageError(format!(
            "invalid value '{}' for {name}: too large (at most about 584 billion years); expected {form}",
            s.trim()
        ))),
        Err(DurError::MinutesOrMonths) => Err(UsageError(format!(
            "invalid value '{}' for {name}: M could mean minutes or months; write {} or {}",
            s.trim(),
            duration::with_m_as(s, "min"),
            duration::with_m_as(s, "month")
        ))),
        // A flag given no value took the next word.
        Err(DurError::Invalid) if s.trim_start().starts_with('-') => {
            Err(missing_value(&name, s, form))
        }
        Err(DurError::Invalid) => Err(invalid(&name, s, form)),
    }
}

fn opt_duration(flag: &str, value: Option<&str>) -> Result<Option<Duration>, UsageError> {
    duration(&Names(&[]), flag, value, Inf::No)
}

fn opt_positive_duration(flag: &str, value: Option<&str>) -> Result<Option<Duration>, UsageError> {
    match opt_duration(flag, value)? {
        Some(d) if d.is_zero() => Err(invalid(
            flag,
            value.unwrap_or("0"),
            "a duration above zero, such as 30s",
        )),
        other => Ok(other),
    }
}

/// How to name a setting in a message: by its environment variable when
/// that is where the value came from, else by its flag.
struct Names<'a>(&'a [(String, String)]);

impl Names<'_> {
    /// Whether the setting's value came from its environment variable.
    fn came_from_env(&self, id: &str) -> bool {
        self.0.iter().any(|(arg, _)| arg == id)
    }

    fn of(&self, id: &str, flag: &str) -> String {
        self.0
            .iter()
            .find(|(arg, _)| arg == id)
            .map_or_else(|| flag.to_string(), |(_, var)| format!("{var} ({flag})"))
    }
}

/// The accepted form of a flag's value, by clap argument id, for messages
/// about a value that is missing altogether.
pub fn accepted_form(id: &str) -> Option<&'static str> {
    Some(match id {
        "base" | "cap" | "jitter_max" | "reset_after" | "kill_after" | "stagger" => DUR_FORM,
        "max_time" | "timeout" | "idle_timeout" => DUR_OR_NONE_FORM,
        "max" => MAX_FORM,
        "multiplier" => "a number of at least 1, such as 2 or 1.5",
        "seed" => SEED_FORM,
        "stop_signal" => SIGNAL_FORM,
        "replay_stdin_max" => SIZE_FORM,
        "retry_on" | "stop_on" | "success_on" => LIST_FORM,
        "retry_if_output" | "stop_if_output" => "a regular expression (regex crate syntax)",
        _ => return None,
    })
}

#[cfg(test)]
mod tests;
