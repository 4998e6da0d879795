//! From parsed flags to a validated configuration.
//!
//! Every usage error comes from here, before anything runs: one line naming the
//! flag, the rejected value and the accepted form. Nothing below this module
//! knows about clap.

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use crate::attempt::scan::Patterns;
use crate::backoff::{DelayPolicy, Growth, Jitter};
use crate::classify::{CodeSet, Rules};
use crate::cli::{BackoffArg, Cli, JitterArg, LogFormatArg, NestedArg, WhenArg};

mod duration;
mod http;
mod sim;
mod state;
use duration::{Dur, DurError};
pub use http::{Body, Data, HttpOptions, IdempotencyKey, parse_header, parse_statuses};
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

fn invalid(flag: &str, value: &str, expected: &str) -> UsageError {
    UsageError(format!(
        "invalid value '{value}' for {flag}: expected {expected}"
    ))
}

const DUR_FORM: &str = "a duration such as 250ms, 1.5s, 2m, 1h 30m or 0.5 (seconds)";
const DUR_OR_NONE_FORM: &str =
    "a duration such as 250ms, 1.5s, 2m, 1h 30m or 0.5 (seconds); 0 or inf for no limit";
const MAX_FORM: &str = "a whole number of attempts from 1 to 4294967295";
const SEED_FORM: &str = "a whole number from 0 to 9007199254740991 (2^53 - 1)";
const SIGNAL_FORM: &str =
    "a signal name or number, such as TERM, SIGINT, RTMIN+2 or 9 (see 'kill -l')";
const LIST_FORM: &str = "exit codes and ranges from 0 to 255, such as 1,75,100-110";

/// What the invocation asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Mode {
    /// Run COMMAND, retrying.
    Run { command: Vec<OsString> },
    /// Probe a URL over HTTP(S), retrying.
    Http { request: Box<HttpOptions> },
    /// Print the schedule; COMMAND (or the HTTP request), if given, is only shown.
    DryRun { command: Vec<OsString> },
    /// Simulate N clients against a model server and report.
    Simulate { sim: SimOptions },
}

/// The retry loop's policy.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    /// Attempts in total; None with `--forever`.
    pub max_attempts: Option<u32>,
    pub delay: DelayPolicy,
    pub max_time: Option<Duration>,
    pub timeout: Option<Duration>,
    pub reset_after: Option<Duration>,
    /// `--restart-on-success`: a success is followed by another attempt.
    pub restart_on_success: bool,
    /// `--stagger`: the first attempt waits U(0, this).
    pub stagger: Option<Duration>,
    pub seed: Option<u64>,
    pub rules: Rules,
}

impl Default for Policy {
    /// The documented defaults: 5 attempts, exponential x2 from 1s to 30s, full jitter.
    fn default() -> Self {
        Policy {
            max_attempts: Some(5),
            delay: DelayPolicy {
                growth: Growth::Exponential { multiplier: 2.0 },
                jitter: Jitter::Full,
                base: Duration::from_secs(1),
                cap: Duration::from_secs(30),
            },
            max_time: None,
            timeout: None,
            reset_after: None,
            restart_on_success: false,
            stagger: None,
            seed: None,
            rules: Rules::default(),
        }
    }
}

/// How attempts are run as processes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessOptions {
    /// A raw signal number: real-time signals have no `nix::Signal`.
    pub stop_signal: i32,
    pub kill_after: Duration,
    pub foreground: bool,
    pub replay_stdin: bool,
    /// `--retry-if-output`/`--stop-if-output`: None leaves the child's
    /// output alone.
    pub output: Option<Patterns>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
}

/// `auto|always|never` for a feature whose `auto` depends on the surroundings
/// (terminal, environment), which `log` inspects when it opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum When {
    #[default]
    Auto,
    Always,
    Never,
}

impl From<WhenArg> for When {
    fn from(w: WhenArg) -> When {
        match w {
            WhenArg::Auto => When::Auto,
            WhenArg::Always => When::Always,
            WhenArg::Never => When::Never,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogOptions {
    pub format: LogFormat,
    /// -2 (-qq: nothing), -1 (-q: final give-up only), 0 (default), 1+ (-v).
    pub verbosity: i8,
    pub file: Option<PathBuf>,
    /// `--color`.
    pub color: When,
    /// `--ci-annotations`.
    pub annotations: When,
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
}

impl Config {
    pub fn from_cli(cli: Cli, nesting: Nesting) -> Result<Config, UsageError> {
        let defaults = Policy::default();
        let names = Names(&cli.from_env);
        let base = duration(&names, "base", "--base", cli.base.as_deref(), Inf::No)?
            .unwrap_or(defaults.delay.base);
        let cap = match duration(&names, "cap", "--cap", cli.cap.as_deref(), Inf::No)? {
            Some(cap) if cap < base => {
                return Err(UsageError(format!(
                    "{} ({}) is below {} ({}): the cap must be at least the base",
                    names.of("cap", "--cap"),
                    cli.cap.as_deref().unwrap_or_default().trim(),
                    names.of("base", "--base"),
                    cli.base.as_deref().map_or("1s, the default", str::trim),
                )));
            }
            Some(cap) => cap,
            // A base above the default cap asks for longer waits than the
            // default allows: the cap follows it rather than refusing it.
            None => defaults.delay.cap.max(base),
        };
        let backoff = cli.backoff.unwrap_or(BackoffArg::Exponential);
        let jitter_kind = cli.jitter.unwrap_or(JitterArg::Full);
        let multiplier = match cli.multiplier.as_deref() {
            None => 2.0,
            Some(s) => match s.trim().parse::<f64>() {
                Ok(m) if m.is_finite() && m >= 1.0 => m,
                _ => {
                    return Err(invalid(
                        "--multiplier",
                        s,
                        "a number of at least 1, such as 2 or 1.5",
                    ));
                }
            },
        };
        let backoff_name = names.of("backoff", "--backoff");
        let jitter_name = names.of("jitter", "--jitter");
        if jitter_kind == JitterArg::Decorrelated {
            // Decorrelated jitter grows from the previous delay, not from a
            // ceiling: a growth setting would silently do nothing.
            for (given, flag) in [
                (cli.multiplier.is_some(), "--multiplier".to_string()),
                (cli.backoff.is_some(), backoff_name.clone()),
            ] {
                if given {
                    return Err(UsageError(format!(
                        "{flag} has no effect with {jitter_name} decorrelated, which grows each delay from the previous one (up to 3x)"
                    )));
                }
            }
        }
        if cli.multiplier.is_some() && backoff != BackoffArg::Exponential {
            return Err(UsageError(format!(
                "--multiplier has no effect with {backoff_name} {}: it sets the growth of --backoff exponential",
                backoff_arg_name(backoff)
            )));
        }
        let growth = match backoff {
            BackoffArg::Exponential => Growth::Exponential { multiplier },
            BackoffArg::Linear => Growth::Linear,
            BackoffArg::Fixed => Growth::Fixed,
        };
        let jitter_max = duration(
            &names,
            "jitter_max",
            "--jitter-max",
            cli.jitter_max.as_deref(),
            Inf::No,
        )?;
        let jitter = match jitter_kind {
            JitterArg::None => Jitter::None,
            JitterArg::Full => Jitter::Full,
            JitterArg::Equal => Jitter::Equal,
            JitterArg::Decorrelated => Jitter::Decorrelated,
            JitterArg::Additive => Jitter::Additive {
                max: jitter_max.unwrap_or(Duration::from_secs(1)),
            },
        };
        // --compare runs additive jitter too, so --jitter-max has an effect there.
        if jitter_max.is_some() && !matches!(jitter, Jitter::Additive { .. }) && !cli.sim.compare {
            return Err(UsageError(format!(
                "--jitter-max has no effect with {jitter_name} {}: it sets the random part of --jitter additive",
                jitter.name()
            )));
        }

        // 0 and inf mean "no limit" here, as in timeout(1).
        let max_time = duration(
            &names,
            "max_time",
            "--max-time",
            cli.max_time.as_deref(),
            Inf::NoLimit,
        )?
        .filter(|d| !d.is_zero());
        let timeout = duration(
            &names,
            "timeout",
            "--timeout",
            cli.timeout.as_deref(),
            Inf::NoLimit,
        )?
        .filter(|d| !d.is_zero());
        // A command's attempt stopped at --max-time is never retried anyway;
        // over HTTP, the connection timeout is always there to make permanent.
        if cli.no_retry_on_timeout && timeout.is_none() && cli.http.url.is_none() {
            return Err(UsageError(
                "--no-retry-on-timeout has no effect without --timeout: only an attempt stopped by --timeout is ever retried"
                    .to_string(),
            ));
        }
        let reset_after = duration(
            &names,
            "reset_after",
            "--reset-after",
            cli.reset_after.as_deref(),
            Inf::No,
        )?;
        let stateless = !matches!(jitter, Jitter::Decorrelated);
        if reset_after.is_some() && growth == Growth::Fixed && stateless {
            return Err(UsageError(format!(
                "--reset-after has no effect with {backoff_name} fixed and {jitter_name} {}: every delay is already the first one",
                jitter.name()
            )));
        }

        let stagger = duration(
            &names,
            "stagger",
            "--stagger",
            cli.stagger.as_deref(),
            Inf::No,
        )?
        .filter(|d| !d.is_zero());
        if let (Some(spread), Some(limit)) = (stagger, max_time)
            && spread >= limit
        {
            return Err(UsageError(format!(
                "--stagger ({}) must be shorter than {} ({}): the first attempt would never start",
                cli.stagger.as_deref().unwrap_or_default().trim(),
                names.of("max_time", "--max-time"),
                cli.max_time.as_deref().unwrap_or_default().trim(),
            )));
        }

        let max_name = names.of("max", "--max");
        let mut max_attempts = if cli.forever {
            None
        } else {
            match cli.max.as_deref() {
                // "Keep trying for two minutes": the deadline alone ends the run.
                None if max_time.is_some() => None,
                None => defaults.max_attempts,
                Some(s) => Some(match s.trim().parse::<u32>() {
                    Ok(n) if n >= 1 => n,
                    _ => return Err(invalid(&max_name, s, MAX_FORM)),
                }),
            }
        };

        let retry_on = opt_codes("--retry-on", cli.retry_on.as_deref())?;
        let stop_on = opt_codes("--stop-on", cli.stop_on.as_deref())?.unwrap_or_default();
        let success_on = opt_codes("--success-on", cli.success_on.as_deref())?.unwrap_or_default();
        if retry_on.as_ref().is_some_and(|r| r.contains(0)) {
            return Err(UsageError(
                "--retry-on cannot name 0: exit 0 is always success".to_string(),
            ));
        }
        if stop_on.contains(0) {
            return Err(UsageError(
                "--stop-on cannot name 0: exit 0 is always success".to_string(),
            ));
        }
        let empty = CodeSet::default();
        for (a, a_set, b, b_set) in [
            (
                "--retry-on",
                retry_on.as_ref().unwrap_or(&empty),
                "--stop-on",
                &stop_on,
            ),
            (
                "--retry-on",
                retry_on.as_ref().unwrap_or(&empty),
                "--success-on",
                &success_on,
            ),
            ("--stop-on", &stop_on, "--success-on", &success_on),
        ] {
            if let Some(code) = a_set.first_overlap(b_set) {
                return Err(UsageError(format!(
                    "{a} and {b} both name exit code {code}: each code may be in one list only"
                )));
            }
        }

        let seed = match cli.seed.as_deref() {
            None => None,
            Some(s) => match s.trim().parse::<u64>() {
                Ok(n) if n <= crate::rng::MAX_SEED => Some(n),
                _ => return Err(invalid("--seed", s, SEED_FORM)),
            },
        };
        let stop_signal = match cli.stop_signal.as_deref() {
            None => nix::libc::SIGTERM,
            Some(s) => {
                crate::signame::parse(s).ok_or_else(|| invalid("--stop-signal", s, SIGNAL_FORM))?
            }
        };

        let nested_single = cli.nested == Some(NestedArg::Single);
        let nested = nesting.outer_depth >= 1;
        if nested && nested_single {
            max_attempts = Some(1);
        }

        // A simulated fleet is one group with its state in memory: the rules
        // apply, a group name and a store do not.
        let (state, fleet) = if cli.sim.simulate.is_some() {
            let rules = state::rules(&cli.state)?;
            if rules.breaker.is_some() {
                return Err(UsageError(
                    "--breaker has no effect in --simulate: every simulated client starts at once, before any run can fail; use --budget or --pace"
                        .to_string(),
                ));
            }
            let from_env = |id: &str| cli.from_env.iter().any(|(i, _)| i == id);
            for (flag, given) in [
                ("--state", cli.state.state.is_some() && !from_env("state")),
                ("--state-required", cli.state.state_required),
                (
                    "--state-password-file",
                    cli.state.state_password_file.is_some() && !from_env("state_password_file"),
                ),
            ] {
                if given {
                    return Err(UsageError(format!(
                        "--simulate runs nothing real: it cannot be combined with {flag} (the simulated clients share their state in memory)"
                    )));
                }
            }
            let options = StateOptions {
                shared: None,
                show: cli.state.state_show,
            };
            let fleet = crate::sim::Fleet {
                pace: rules.pace,
                budget: rules.budget,
            };
            (options, fleet)
        } else {
            (
                state::from_args(cli.state, &cli.from_env)?,
                crate::sim::Fleet::default(),
            )
        };
        let http = http::from_args(cli.http)?;
        if http.is_some() {
            if !cli.command.is_empty() {
                return Err(UsageError(
                    "--http and COMMAND are mutually exclusive: give one or the other".to_string(),
                ));
            }
            for (flag, given) in [
                ("--retry-on", cli.retry_on.is_some()),
                ("--stop-on", cli.stop_on.is_some()),
                ("--success-on", cli.success_on.is_some()),
            ] {
                if given {
                    return Err(UsageError(format!(
                        "{flag} applies to exit codes of a COMMAND: with --http use --expect or --retry-status"
                    )));
                }
            }
            for (flag, given) in [
                ("--restart-on-success", cli.restart_on_success),
                ("--retry-if-output", !cli.retry_if_output.is_empty()),
                ("--stop-if-output", !cli.stop_if_output.is_empty()),
                ("--stop-signal", cli.stop_signal.is_some()),
                ("--kill-after", cli.kill_after.is_some()),
                ("--foreground", cli.foreground),
                ("--replay-stdin", cli.replay_stdin),
            ] {
                if given {
                    return Err(UsageError(format!(
                        "{flag} applies to a COMMAND's processes, not to --http"
                    )));
                }
            }
        }
        let output = if cli.retry_if_output.is_empty() && cli.stop_if_output.is_empty() {
            None
        } else {
            Some(
                Patterns::new(&cli.retry_if_output, &cli.stop_if_output).map_err(|e| {
                    invalid(
                        e.flag,
                        &e.pattern,
                        &format!("a regular expression (regex crate syntax): {}", e.reason),
                    )
                })?,
            )
        };
        let (http_request, http_rules) = match http {
            Some((request, rules)) => (Some(request), rules),
            None => (None, crate::classify::HttpRules::default()),
        };

        let sim = sim::from_args(cli.sim)?.map(|mut s| {
            s.additive_max = jitter_max.unwrap_or(Duration::from_secs(1));
            s.fleet = fleet;
            s
        });
        if sim.is_some() {
            for (flag, given) in [
                ("COMMAND", !cli.command.is_empty()),
                ("--http", http_request.is_some()),
                ("--dry-run", cli.dry_run),
                ("--state-show", state.show),
                // RETRY_TIMEOUT set for the user's real runs does not
                // stand in the way of a simulation; --timeout given does.
                (
                    "--timeout",
                    cli.timeout.is_some() && !cli.from_env.iter().any(|(id, _)| id == "timeout"),
                ),
                ("--retry-on", cli.retry_on.is_some()),
                ("--stop-on", cli.stop_on.is_some()),
                ("--success-on", cli.success_on.is_some()),
                ("--stop-signal", cli.stop_signal.is_some()),
                ("--kill-after", cli.kill_after.is_some()),
                ("--foreground", cli.foreground),
                ("--replay-stdin", cli.replay_stdin),
            ] {
                if given {
                    return Err(UsageError(format!(
                        "--simulate runs nothing real: it cannot be combined with {flag}"
                    )));
                }
            }
        }
        if state.show && (cli.dry_run || http_request.is_some() || !cli.command.is_empty()) {
            return Err(UsageError(
                "--state-show only prints the group's state: give it no COMMAND, --http or --dry-run"
                    .to_string(),
            ));
        }
        let mode = if let Some(sim) = sim {
            Mode::Simulate { sim }
        } else if cli.dry_run {
            Mode::DryRun {
                command: match &http_request {
                    Some(request) => request.display_words(),
                    None => cli.command,
                },
            }
        } else if let Some(request) = http_request {
            Mode::Http {
                request: Box::new(request),
            }
        } else if cli.command.is_empty() && !state.show {
            return Err(UsageError(
                "missing COMMAND: usage is 'retry [OPTIONS] -- COMMAND [ARG]...', 'retry [OPTIONS] --http URL' or 'retry [OPTIONS] --dry-run'"
                    .to_string(),
            ));
        } else {
            Mode::Run {
                command: cli.command,
            }
        };

        Ok(Config {
            mode,
            policy: Policy {
                max_attempts,
                delay: DelayPolicy {
                    growth,
                    jitter,
                    base,
                    cap,
                },
                max_time,
                timeout,
                reset_after,
                restart_on_success: cli.restart_on_success,
                stagger,
                seed,
                rules: Rules {
                    retry_on,
                    stop_on,
                    success_on,
                    retry_on_timeout: !cli.no_retry_on_timeout,
                    http: http_rules,
                },
            },
            process: ProcessOptions {
                stop_signal,
                kill_after: duration(
                    &names,
                    "kill_after",
                    "--kill-after",
                    cli.kill_after.as_deref(),
                    Inf::No,
                )?
                .unwrap_or(Duration::from_secs(5)),
                foreground: cli.foreground,
                replay_stdin: cli.replay_stdin,
                output,
            },
            log: LogOptions {
                format: match cli.log_format.unwrap_or(LogFormatArg::Text) {
                    LogFormatArg::Text => LogFormat::Text,
                    LogFormatArg::Json => LogFormat::Json,
                },
                verbosity: if cli.quiet > 0 {
                    -(cli.quiet.min(2) as i8)
                } else {
                    cli.verbose.min(3) as i8
                },
                file: cli.log_file,
                color: cli.color.map(When::from).unwrap_or_default(),
                annotations: cli.ci_annotations.map(When::from).unwrap_or_default(),
            },
            nesting,
            warn_nested: nested && !nested_single,
            state,
        })
    }
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
    id: &str,
    flag: &str,
    value: Option<&str>,
    inf: Inf,
) -> Result<Option<Duration>, UsageError> {
    let Some(s) = value else { return Ok(None) };
    let name = names.of(id, flag);
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
            "a finite duration (inf is accepted only by --timeout and --max-time)",
        )),
        Err(DurError::Negative) => Err(UsageError(format!(
            "invalid value '{}' for {name}: a duration cannot be negative; expected {form}",
            s.trim()
        ))),
        Err(DurError::TooLarge) => Err(UsageError(format!(
            "invalid value '{}' for {name}: too large (at most about 584 billion years); expected {form}",
            s.trim()
        ))),
        // A flag given no value took the next word (durations accept a
        // leading hyphen so that negative ones are named, not misparsed).
        Err(DurError::Invalid) if s.trim_start().starts_with('-') => Err(UsageError(format!(
            "{name} needs a value, not '{}': expected {form}",
            s.trim()
        ))),
        Err(DurError::Invalid) => Err(invalid(&name, s, form)),
    }
}

fn opt_duration(flag: &str, value: Option<&str>) -> Result<Option<Duration>, UsageError> {
    duration(&Names(&[]), "", flag, value, Inf::No)
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
    fn of(&self, id: &str, flag: &str) -> String {
        self.0
            .iter()
            .find(|(arg, _)| arg == id)
            .map_or_else(|| flag.to_string(), |(_, var)| format!("{var} ({flag})"))
    }
}

fn backoff_arg_name(b: BackoffArg) -> &'static str {
    match b {
        BackoffArg::Exponential => "exponential",
        BackoffArg::Linear => "linear",
        BackoffArg::Fixed => "fixed",
    }
}

/// The accepted form of a flag's value, by clap argument id, for messages
/// about a value that is missing altogether.
pub fn accepted_form(id: &str) -> Option<&'static str> {
    Some(match id {
        "base" | "cap" | "jitter_max" | "reset_after" | "kill_after" | "stagger" => DUR_FORM,
        "max_time" | "timeout" => DUR_OR_NONE_FORM,
        "max" => MAX_FORM,
        "multiplier" => "a number of at least 1, such as 2 or 1.5",
        "seed" => SEED_FORM,
        "stop_signal" => SIGNAL_FORM,
        "retry_on" | "stop_on" | "success_on" => LIST_FORM,
        "retry_if_output" | "stop_if_output" => "a regular expression (regex crate syntax)",
        _ => return None,
    })
}

/// Parse `1,75,100-110` into a code set; every code within 0..=255.
pub fn parse_codes(s: &str) -> Result<CodeSet, String> {
    let mut ranges = Vec::new();
    for part in s.split(',') {
        let part = part.trim();
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (code(a)?, code(b)?),
            None => {
                let c = code(part)?;
                (c, c)
            }
        };
        if lo > hi {
            return Err(format!("range {lo}-{hi} runs backwards"));
        }
        ranges.push((lo, hi));
    }
    Ok(CodeSet::new(ranges))
}

fn code(s: &str) -> Result<i32, String> {
    match s.trim().parse::<u8>() {
        Ok(c) => Ok(i32::from(c)),
        Err(_) if s.trim().is_empty() => Err("empty entry".to_string()),
        Err(_) => Err(format!("'{}' is not a code from 0 to 255", s.trim())),
    }
}

fn opt_codes(flag: &str, value: Option<&str>) -> Result<Option<CodeSet>, UsageError> {
    value
        .map(|s| {
            parse_codes(s).map_err(|why| {
                UsageError(format!(
                    "invalid value '{s}' for {flag}: {why}; expected {LIST_FORM}"
                ))
            })
        })
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn config(args: &[&str]) -> Result<Config, UsageError> {
        let mut argv = vec!["retry"];
        argv.extend_from_slice(args);
        Config::from_cli(Cli::parse_from(argv), Nesting::default())
    }

    fn err(args: &[&str]) -> String {
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
            overlap.contains("--retry-on")
                && overlap.contains("--stop-on")
                && overlap.contains('3')
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
}
