//! Validation of the shared-state flags: group name, store, `--pace`,
//! `--budget` and `--breaker`.

use std::path::PathBuf;
use std::time::Duration;

use super::{Names, UsageError, invalid, parse_duration, path_arg};
use crate::cli::StateArgs;
use crate::state::rules::{Breaker, Budget, Pace};
use crate::state::{Features, StoreAt, default_dir};

/// What an invocation does with shared state.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StateOptions {
    /// Set when pace, budget, breaker or `--state-show` is asked for.
    pub shared: Option<Features>,
    /// `--state-show`: print the group's state and run nothing.
    pub show: bool,
}

const GROUP_FORM: &str =
    "1 to 64 letters, digits, '.', '_' or '-', not starting with '.' or '-', such as nightly-sync";
const RATE_FORM: &str = "a count per time unit, such as 20/s, 600/m or 5/10s";
const BUDGET_FORM: &str =
    "TOKENS[:RATIO], such as 100 or 100:0.1 (TOKENS at least 1, RATIO from 0 to TOKENS)";
const BREAKER_FORM: &str = "THRESHOLD[:COOLDOWN], such as 5 or 5:30s (THRESHOLD at least 1)";

/// `--pace` (with `--pace-burst`), `--budget` and `--breaker`, validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Rules {
    pub pace: Option<Pace>,
    pub budget: Option<Budget>,
    pub breaker: Option<Breaker>,
}

/// Validate the rule flags alone, without a group or a store: what
/// `--simulate` needs, its virtual fleet being one group.
pub fn rules(a: &StateArgs) -> Result<Rules, UsageError> {
    let pace = a.pace.as_deref().map(parse_rate).transpose()?;
    let burst = match a.pace_burst.as_deref() {
        None => 1,
        Some(s) => match s.trim().parse::<u32>() {
            Ok(n) if n >= 1 => n,
            _ => return Err(invalid("--pace-burst", s, "a whole number, at least 1")),
        },
    };
    if a.pace_burst.is_some() && pace.is_none() {
        return Err(UsageError(
            "--pace-burst applies only with --pace RATE".to_string(),
        ));
    }
    Ok(Rules {
        pace: pace.map(|interval| Pace { interval, burst }),
        budget: a.budget.as_deref().map(parse_budget).transpose()?,
        breaker: a.breaker.as_deref().map(parse_breaker).transpose()?,
    })
}

pub fn from_args(a: &StateArgs, names: &Names) -> Result<StateOptions, UsageError> {
    let Rules {
        pace,
        budget,
        breaker,
    } = rules(a)?;

    let wanted = [
        ("--pace", pace.is_some()),
        ("--budget", budget.is_some()),
        ("--breaker", breaker.is_some()),
        ("--state-show", a.state_show),
    ];
    let Some((first, _)) = wanted.iter().find(|(_, on)| *on) else {
        // Unused, a group or store given on the command line is still
        // checked: it may be a flag that took the next word as its value.
        if let Some(g) = a.group.as_deref().filter(|_| !names.came_from_env("group"))
            && !valid_group(g)
        {
            return Err(invalid("--group", g, GROUP_FORM));
        }
        if let Some(s) = a.state.as_deref().filter(|_| !names.came_from_env("state")) {
            parse_store(s)?;
        }
        return Ok(StateOptions::default());
    };
    let group = match a.group.as_deref() {
        None => {
            return Err(UsageError(format!(
                "{first} needs --group NAME (or RETRY_GROUP): invocations share state by group"
            )));
        }
        Some(g) if valid_group(g) => g.to_string(),
        Some(g) => return Err(invalid("--group", g, GROUP_FORM)),
    };
    let at = match a.state.as_deref() {
        Some(s) => parse_store(s)?,
        None => StoreAt::Dir(default_dir().ok_or_else(|| {
            UsageError(
                "no directory for shared state: HOME is unset; give --state DIR or set RETRY_STATE"
                    .to_string(),
            )
        })?),
    };
    Ok(StateOptions {
        shared: Some(Features {
            group,
            at,
            required: a.state_required,
            pace,
            budget,
            breaker,
        }),
        show: a.state_show,
    })
}

fn valid_group(g: &str) -> bool {
    (1..=64).contains(&g.len())
        && !g.starts_with(['.', '-'])
        && g.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

fn parse_store(s: &str) -> Result<StoreAt, UsageError> {
    if s.contains("://") {
        let ok = ["redis://", "rediss://", "unix://", "redis+unix://"]
            .iter()
            .any(|p| s.starts_with(p));
        if !ok {
            return Err(invalid(
                "--state",
                &crate::state::mask_url(s),
                "a directory, or a redis://, rediss:// or unix:// URL",
            ));
        }
        if cfg!(not(feature = "redis")) {
            return Err(UsageError(
                "--state: this retry was built without Redis support; give a directory".into(),
            ));
        }
        return Ok(StoreAt::Url(s.to_string()));
    }
    if s.trim().is_empty() {
        return Err(invalid("--state", s, "a directory or a Redis URL"));
    }
    path_arg(
        "--state",
        std::path::Path::new(s),
        "a directory, or a redis://, rediss:// or unix:// URL",
    )?;
    Ok(StoreAt::Dir(PathBuf::from(s)))
}

/// `20/s`, `600/m`, `1/h`, `5/10s`: the interval between slots, in microseconds.
fn parse_rate(s: &str) -> Result<u64, UsageError> {
    let bad = || invalid("--pace", s, RATE_FORM);
    let (count, per) = s.trim().split_once('/').ok_or_else(bad)?;
    let count: f64 = count.trim().parse().map_err(|_| bad())?;
    if !count.is_finite() || count <= 0.0 {
        return Err(bad());
    }
    let per = per.trim();
    let per = if per.bytes().all(|b| b.is_ascii_alphabetic()) {
        parse_duration(&format!("1{per}"))
    } else {
        parse_duration(per)
    }
    .ok_or_else(bad)?;
    let interval = per.as_secs_f64() * 1e6 / count;
    if !(1.0..=1e15).contains(&interval) {
        return Err(invalid(
            "--pace",
            s,
            "a rate between one per 30 years and a million per second",
        ));
    }
    Ok(interval.round() as u64)
}

fn parse_budget(s: &str) -> Result<Budget, UsageError> {
    let bad = || invalid("--budget", s, BUDGET_FORM);
    let (tokens, ratio) = match s.trim().split_once(':') {
        Some((t, r)) => (t, Some(r)),
        None => (s.trim(), None),
    };
    let tokens: u32 = tokens.trim().parse().map_err(|_| bad())?;
    if tokens == 0 || tokens > 1_000_000 {
        return Err(bad());
    }
    let ratio: f64 = match ratio {
        None => 0.1,
        Some(r) => r.trim().parse().map_err(|_| bad())?,
    };
    if !ratio.is_finite() || ratio < 0.0 || ratio > f64::from(tokens) {
        return Err(bad());
    }
    Ok(Budget {
        max_milli: i64::from(tokens) * 1000,
        ratio_milli: (ratio * 1000.0).round() as i64,
    })
}

fn parse_breaker(s: &str) -> Result<Breaker, UsageError> {
    let bad = || invalid("--breaker", s, BREAKER_FORM);
    let (threshold, cooldown) = match s.trim().split_once(':') {
        Some((t, c)) => (t, Some(c)),
        None => (s.trim(), None),
    };
    let threshold: u32 = threshold.trim().parse().map_err(|_| bad())?;
    if threshold == 0 {
        return Err(bad());
    }
    let cooldown = match cooldown {
        None => Duration::from_secs(30),
        Some(c) => parse_duration(c).ok_or_else(bad)?,
    };
    Ok(Breaker {
        threshold,
        cooldown: u64::try_from(cooldown.as_micros()).map_err(|_| bad())?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Cli;
    use clap::Parser;

    fn opts(args: &[&str]) -> Result<StateOptions, UsageError> {
        let mut argv = vec!["retry"];
        argv.extend_from_slice(args);
        argv.extend_from_slice(&["--", "true"]);
        from_args(&Cli::parse_from(argv).state, &Names(&[]))
    }

    fn err(args: &[&str]) -> String {
        opts(args).expect_err("should be a usage error").0
    }

    fn shared(args: &[&str]) -> Features {
        opts(args).expect("valid").shared.expect("shared state")
    }

    #[test]
    fn rates() {
        assert_eq!(parse_rate("20/s"), Ok(50_000));
        assert_eq!(parse_rate("600/m"), Ok(100_000));
        assert_eq!(parse_rate("1/h"), Ok(3_600_000_000));
        assert_eq!(parse_rate("5/10s"), Ok(2_000_000));
        assert_eq!(parse_rate("2.5/s"), Ok(400_000));
        for bad in ["20", "0/s", "-1/s", "x/s", "20/parsec", "10000000/s", "/s"] {
            assert!(parse_rate(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn budgets() {
        assert_eq!(parse_budget("100:0.1"), Ok(Budget::DEFAULT));
        assert_eq!(parse_budget("100"), Ok(Budget::DEFAULT));
        assert_eq!(
            parse_budget("10:1.5"),
            Ok(Budget {
                max_milli: 10_000,
                ratio_milli: 1_500
            })
        );
        for bad in ["0", "x", "10:-1", "10:x", "10:11", ""] {
            assert!(parse_budget(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn breakers() {
        assert_eq!(parse_breaker("5:30s"), Ok(Breaker::DEFAULT));
        assert_eq!(parse_breaker("5"), Ok(Breaker::DEFAULT));
        assert_eq!(parse_breaker("2:500ms").map(|b| b.cooldown), Ok(500_000));
        for bad in ["0", "x", "3:soon", ":30s"] {
            assert!(parse_breaker(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn flags_without_values_take_the_documented_defaults() {
        let f = shared(&["--group", "g", "--budget", "--breaker", "--state", "/tmp/x"]);
        assert_eq!(f.budget, Some(Budget::DEFAULT));
        assert_eq!(f.breaker, Some(Breaker::DEFAULT));
        assert_eq!(f.pace, None);
        assert_eq!(f.at, StoreAt::Dir(PathBuf::from("/tmp/x")));
    }

    #[test]
    fn features_need_a_group() {
        assert!(err(&["--pace", "1/s"]).contains("--pace needs --group"));
        assert!(err(&["--breaker", "3"]).contains("--group"));
        assert!(err(&["--state-show"]).contains("--state-show needs --group"));
        // Group and store alone change nothing and are fine (often set in the environment).
        assert_eq!(opts(&["--group", "g"]), Ok(StateOptions::default()));
    }

    #[test]
    fn bad_values_name_the_flag() {
        assert!(err(&["--group", "../etc", "--budget"]).contains("--group"));
        assert!(err(&["--group", ".hidden", "--budget"]).contains("--group"));
        assert!(err(&["--group", "g", "--pace", "fast"]).contains("--pace"));
        assert!(
            err(&["--group", "g", "--pace", "1/s", "--pace-burst", "0"]).contains("--pace-burst")
        );
        assert!(err(&["--group", "g", "--pace-burst", "2", "--budget"]).contains("--pace-burst"));
        let e = err(&["--group", "g", "--budget", "--state", "http://u:hunter2@x"]);
        assert!(e.contains("--state") && !e.contains("hunter2"), "{e}");
    }

    #[test]
    fn stores() {
        let f = shared(&[
            "--group",
            "g",
            "--budget",
            "--state",
            "redis://127.0.0.1:1/0",
        ]);
        assert_eq!(f.at, StoreAt::Url("redis://127.0.0.1:1/0".into()));
        let f = shared(&["--group", "g", "--pace", "3/s", "--pace-burst", "4"]);
        assert_eq!(
            f.pace,
            Some(Pace {
                interval: 333_333,
                burst: 4
            })
        );
    }
}
