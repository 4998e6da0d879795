//! From parsed flags to a validated configuration.
//!
//! Every usage error comes from here, before anything runs: one line naming the
//! flag, the rejected value and the accepted form. Nothing below this module
//! knows about clap.

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use nix::sys::signal::Signal;

use crate::backoff::{DelayPolicy, Growth, Jitter};
use crate::classify::{CodeSet, Rules};
use crate::cli::{BackoffArg, Cli, JitterArg, LogFormatArg, NestedArg, WhenArg};

mod http;
mod sim;
pub use http::{Data, HttpOptions, IdempotencyKey, parse_statuses};
pub use sim::SimOptions;

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

const DUR_FORM: &str = "a duration such as 250ms, 1.5s, 2m or 1h 30m";
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
            seed: None,
            rules: Rules::default(),
        }
    }
}

/// How attempts are run as processes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessOptions {
    pub stop_signal: Signal,
    pub kill_after: Duration,
    pub foreground: bool,
    pub replay_stdin: bool,
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
}

impl Config {
    pub fn from_cli(cli: Cli, nesting: Nesting) -> Result<Config, UsageError> {
        let defaults = Policy::default();
        let base = opt_duration("--base", cli.base.as_deref())?.unwrap_or(defaults.delay.base);
        let cap = opt_duration("--cap", cli.cap.as_deref())?.unwrap_or(defaults.delay.cap);
        if cap < base {
            return Err(UsageError(format!(
                "--cap ({}) is below --base ({}): the cap must be at least the base",
                cli.cap.as_deref().unwrap_or("30s"),
                cli.base.as_deref().unwrap_or("1s")
            )));
        }
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
        let growth = match cli.backoff.unwrap_or(BackoffArg::Exponential) {
            BackoffArg::Exponential => Growth::Exponential { multiplier },
            BackoffArg::Linear => Growth::Linear,
            BackoffArg::Fixed => Growth::Fixed,
        };
        let jitter_max = opt_duration("--jitter-max", cli.jitter_max.as_deref())?;
        let jitter = match cli.jitter.unwrap_or(JitterArg::Full) {
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
            return Err(UsageError(
                "--jitter-max applies only to --jitter additive".to_string(),
            ));
        }

        let mut max_attempts = if cli.forever {
            None
        } else {
            Some(match cli.max.as_deref() {
                None => defaults.max_attempts.unwrap_or(5),
                Some(s) => match s.trim().parse::<u32>() {
                    Ok(n) if n >= 1 => n,
                    _ => {
                        return Err(invalid(
                            "--max",
                            s,
                            "a whole number of attempts, at least 1",
                        ));
                    }
                },
            })
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
            Some(s) => Some(s.trim().parse::<u64>().map_err(|_| {
                invalid("--seed", s, "a whole number from 0 to 18446744073709551615")
            })?),
        };
        let stop_signal = match cli.stop_signal.as_deref() {
            None => Signal::SIGTERM,
            Some(s) => parse_signal(s).ok_or_else(|| {
                invalid(
                    "--stop-signal",
                    s,
                    "a signal name or number, such as TERM, SIGINT or 9",
                )
            })?,
        };

        let nested_single = cli.nested == Some(NestedArg::Single);
        let nested = nesting.outer_depth >= 1;
        if nested && nested_single {
            max_attempts = Some(1);
        }

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
        let (http_request, http_rules) = match http {
            Some((request, rules)) => (Some(request), rules),
            None => (None, crate::classify::HttpRules::default()),
        };

        let sim = sim::from_args(cli.sim)?.map(|mut s| {
            s.additive_max = jitter_max.unwrap_or(Duration::from_secs(1));
            s
        });
        if sim.is_some() {
            for (flag, given) in [
                ("COMMAND", !cli.command.is_empty()),
                ("--http", http_request.is_some()),
                ("--dry-run", cli.dry_run),
                ("--timeout", cli.timeout.is_some()),
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
        } else if cli.command.is_empty() {
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
                max_time: opt_duration("--max-time", cli.max_time.as_deref())?,
                timeout: opt_positive_duration("--timeout", cli.timeout.as_deref())?,
                reset_after: opt_duration("--reset-after", cli.reset_after.as_deref())?,
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
                kill_after: opt_duration("--kill-after", cli.kill_after.as_deref())?
                    .unwrap_or(Duration::from_secs(5)),
                foreground: cli.foreground,
                replay_stdin: cli.replay_stdin,
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
        })
    }
}

/// Parse a duration: humantime's forms (`250ms`, `1.5s`, `1h 30m`), or a bare
/// number of seconds (`30`, `0.25`), as sleep(1) and timeout(1) accept.
pub fn parse_duration(s: &str) -> Option<Duration> {
    let t = s.trim();
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return humantime::parse_duration(&format!("{t}s")).ok();
    }
    humantime::parse_duration(t).ok()
}

fn opt_duration(flag: &str, value: Option<&str>) -> Result<Option<Duration>, UsageError> {
    value
        .map(|s| parse_duration(s).ok_or_else(|| invalid(flag, s, DUR_FORM)))
        .transpose()
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

/// `TERM`, `SIGTERM`, `term` or `15`.
pub fn parse_signal(s: &str) -> Option<Signal> {
    let t = s.trim();
    if let Ok(n) = t.parse::<i32>() {
        return Signal::try_from(n).ok();
    }
    let upper = t.to_ascii_uppercase();
    let name = if upper.starts_with("SIG") {
        upper
    } else {
        format!("SIG{upper}")
    };
    name.parse().ok()
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
        assert_eq!(c.process.stop_signal, Signal::SIGTERM);
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
    fn signals() {
        assert_eq!(parse_signal("TERM"), Some(Signal::SIGTERM));
        assert_eq!(parse_signal("sigint"), Some(Signal::SIGINT));
        assert_eq!(parse_signal("9"), Some(Signal::SIGKILL));
        assert_eq!(parse_signal("NOPE"), None);
        assert_eq!(parse_signal("0"), None);
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
        assert!(err(&["--timeout", "0s", "--", "true"]).contains("--timeout"));
        assert!(err(&[]).contains("missing COMMAND"));
        assert!(err(&["--jitter-max", "1s", "--", "true"]).contains("--jitter-max"));
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
