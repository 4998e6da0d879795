//! The flags of the retries themselves: the delays (`--base`, `--cap`, `--backoff`,
//! `--jitter` and their settings), the limits (`--max`, `--max-time`,
//! `--timeout`, `--reset-after`, `--stagger`), the exit-code lists and
//! `--seed`.

use std::time::Duration;

use super::values::{
    Inf, LIST_FORM, MAX_FORM, Names, SEED_FORM, UsageError, duration, invalid, opt_list,
    refuse_given,
};
use crate::backoff::{DelayPolicy, Growth, Jitter};
use crate::classify::{CodeSet, Rules};
use crate::cli::{BackoffArg, Cli, JitterArg};
use crate::retry_policy::Policy;

/// The loop's policy as the flags give it, and `--jitter-max` as given
/// (which `--compare` also reads). HTTP mode's statuses are added later.
pub(super) fn policy(cli: &Cli, names: &Names) -> Result<(Policy, Option<Duration>), UsageError> {
    let (delay, jitter_max) = delay(cli, names)?;
    let limits = limits(cli, names, &delay)?;
    let (retry_on, stop_on, success_on) = codes(cli)?;
    let seed = seed(cli)?;
    let policy = Policy {
        max_attempts: limits.max_attempts,
        delay,
        max_time: limits.max_time,
        timeout: limits.timeout,
        idle_timeout: limits.idle_timeout,
        reset_after: limits.reset_after,
        restart_on_success: cli.restart_on_success,
        stagger: limits.stagger,
        seed,
        rules: Rules {
            retry_on,
            stop_on,
            success_on,
            retry_on_timeout: !cli.no_retry_on_timeout,
            http: Default::default(),
        },
    };
    Ok((policy, jitter_max))
}

/// The delays: growth, jitter, base and cap, refusing settings that would
/// have no effect; with `--jitter-max` as given.
fn delay(cli: &Cli, names: &Names) -> Result<(DelayPolicy, Option<Duration>), UsageError> {
    let defaults = Policy::default();
    let base =
        duration(names, "--base", cli.base.as_deref(), Inf::No)?.unwrap_or(defaults.delay.base);
    let cap = match duration(names, "--cap", cli.cap.as_deref(), Inf::No)? {
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
        refuse_given(
            [
                ("--multiplier", cli.multiplier.is_some()),
                (backoff_name.as_str(), cli.backoff.is_some()),
            ],
            |flag| {
                format!(
                    "{flag} has no effect with {jitter_name} decorrelated, which grows each delay from the previous one (up to 3x)"
                )
            },
        )?;
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
    let jitter_max = duration(names, "--jitter-max", cli.jitter_max.as_deref(), Inf::No)?;
    let jitter = match jitter_kind {
        JitterArg::None => Jitter::None,
        JitterArg::Full => Jitter::Full,
        JitterArg::Equal => Jitter::Equal,
        JitterArg::Decorrelated => Jitter::Decorrelated,
        JitterArg::Additive => Jitter::Additive {
            max: jitter_max.unwrap_or(Duration::from_secs(1)),
        },
    };
    // --compare runs every jitter kind: a kind given on the command line
    // would do nothing (RETRY_JITTER, meant for real runs, is let be).
    if cli.sim.compare && cli.jitter.is_some() && !cli.from_env.iter().any(|(id, _)| id == "jitter")
    {
        return Err(UsageError(format!(
            "{jitter_name} has no effect with --compare, which runs every jitter kind: drop one or the other"
        )));
    }
    if jitter_max.is_some_and(|m| m > cap) {
        return Err(UsageError(format!(
            "{} ({}) is above {} ({}): the random part cannot be longer than the longest wait",
            names.of("jitter_max", "--jitter-max"),
            cli.jitter_max.as_deref().unwrap_or_default().trim(),
            names.of("cap", "--cap"),
            cli.cap.as_deref().map_or_else(
                || format!("{}, the default", humantime::format_duration(cap)),
                |c| c.trim().to_string()
            )
        )));
    }
    // --compare runs additive jitter too, so --jitter-max has an effect there.
    if jitter_max.is_some() && !matches!(jitter, Jitter::Additive { .. }) && !cli.sim.compare {
        return Err(UsageError(format!(
            "--jitter-max has no effect with {jitter_name} {}: it sets the random part of --jitter additive",
            jitter.name()
        )));
    }
    let delay = DelayPolicy {
        growth,
        jitter,
        base,
        cap,
    };
    Ok((delay, jitter_max))
}

/// How long and how often: everything that bounds the run and its attempts.
struct Limits {
    max_attempts: Option<u32>,
    max_time: Option<Duration>,
    timeout: Option<Duration>,
    idle_timeout: Option<Duration>,
    reset_after: Option<Duration>,
    stagger: Option<Duration>,
}

fn limits(cli: &Cli, names: &Names, delay: &DelayPolicy) -> Result<Limits, UsageError> {
    let defaults = Policy::default();
    let (growth, jitter) = (delay.growth, delay.jitter);
    let backoff_name = names.of("backoff", "--backoff");
    let jitter_name = names.of("jitter", "--jitter");
    // 0 and inf mean "no limit" here, as in timeout(1).
    let max_time = duration(names, "--max-time", cli.max_time.as_deref(), Inf::NoLimit)?
        .filter(|d| !d.is_zero());
    let timeout = duration(names, "--timeout", cli.timeout.as_deref(), Inf::NoLimit)?
        .filter(|d| !d.is_zero());
    // Given 0 or inf: none. Not given: HTTP mode's default, so one server
    // that accepts and never answers cannot take the whole run; a COMMAND
    // may well be silent for long, and has none.
    let idle_timeout = match duration(
        names,
        "--idle-timeout",
        cli.idle_timeout.as_deref(),
        Inf::NoLimit,
    )? {
        Some(d) if d.is_zero() => None,
        Some(d) => Some(d),
        None if cli.http.url.is_some() => Some(crate::attempt::http::IDLE_TIMEOUT),
        None => None,
    };
    // A command's attempt stopped at --max-time is never retried anyway;
    // over HTTP, the connection timeout is always there to make permanent.
    if cli.no_retry_on_timeout
        && timeout.is_none()
        && cli.idle_timeout.is_none()
        && cli.http.url.is_none()
        && cli.tcp.is_empty()
    {
        return Err(UsageError(
            "--no-retry-on-timeout has no effect without --timeout or --idle-timeout: only an attempt stopped by one of them is ever retried"
                .to_string(),
        ));
    }
    let reset_after = duration(names, "--reset-after", cli.reset_after.as_deref(), Inf::No)?;
    let stateless = !matches!(jitter, Jitter::Decorrelated);
    if reset_after.is_some() && growth == Growth::Fixed && stateless {
        return Err(UsageError(format!(
            "--reset-after has no effect with {backoff_name} fixed and {jitter_name} {}: every delay is already the first one",
            jitter.name()
        )));
    }

    let stagger =
        duration(names, "--stagger", cli.stagger.as_deref(), Inf::No)?.filter(|d| !d.is_zero());
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
    let max_attempts = if cli.forever {
        // Only a --max on the command line contradicts --forever; RETRY_MAX
        // from the environment yields to it.
        if cli.max.is_some() && !names.came_from_env("max") {
            return Err(UsageError(
                "--forever and --max are mutually exclusive: --forever has no attempt limit; give one or the other"
                    .to_string(),
            ));
        }
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
    Ok(Limits {
        max_attempts,
        max_time,
        timeout,
        idle_timeout,
        reset_after,
        stagger,
    })
}

/// `--retry-on`, `--stop-on` and `--success-on`: each code in one list at most.
fn codes(cli: &Cli) -> Result<(Option<CodeSet>, CodeSet, CodeSet), UsageError> {
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
    Ok((retry_on, stop_on, success_on))
}

fn seed(cli: &Cli) -> Result<Option<u64>, UsageError> {
    let seed = match cli.seed.as_deref() {
        None => None,
        Some(s) => match s.trim().parse::<u64>() {
            Ok(n) if n <= crate::rng::MAX_SEED => Some(n),
            _ => return Err(invalid("--seed", s, SEED_FORM)),
        },
    };
    Ok(seed)
}

fn backoff_arg_name(b: BackoffArg) -> &'static str {
    match b {
        BackoffArg::Exponential => "exponential",
        BackoffArg::Linear => "linear",
        BackoffArg::Fixed => "fixed",
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
    opt_list(flag, value, LIST_FORM, parse_codes)
}
