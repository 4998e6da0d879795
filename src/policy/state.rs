//! Validation of the shared-state flags: group name, store, `--pace`,
//! `--budget` and `--breaker`.

use std::path::PathBuf;
use std::time::Duration;

use super::values::{Names, UsageError, invalid, parse_duration, path_arg};
use crate::cli::StateArgs;
use crate::state::rules::{Breaker, Budget, Pace};
use crate::state::{Features, StoreAt};

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
const PASSWORD_FILE_FORM: &str = "a file holding the Redis password";
const CACERT_FORM: &str = "a file of PEM certificates";
const RATE_FORM: &str = "a count per time unit, such as 20/s, 600/m or 5/10s";
const BUDGET_FORM: &str =
    "TOKENS[:RATIO], such as 100 or 100:0.1 (TOKENS at least 1, RATIO from 0 to TOKENS)";
const BREAKER_FORM: &str =
    "THRESHOLD[:COOLDOWN], such as 5 or 5:30s (THRESHOLD at least 1, COOLDOWN above 0)";

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

/// `names` says which values came from the environment, so that messages
/// name what the user set.
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
        if a.state_required {
            return Err(UsageError(
                "--state-required applies to shared state: give --pace, --budget or --breaker, with --group NAME"
                    .to_string(),
            ));
        }
        // Unused, a group or store given on the command line is still
        // checked: it may be a flag that took the next word as its value.
        if let Some(g) = a.group.as_deref().filter(|_| !names.came_from_env("group"))
            && !valid_group(g)
        {
            return Err(invalid("--group", g, GROUP_FORM));
        }
        if let Some(s) = a.state.as_deref().filter(|_| !names.came_from_env("state")) {
            parse_store(s, "--state")?;
        }
        if let Some(f) = a
            .state_password_file
            .as_deref()
            .filter(|_| !names.came_from_env("state_password_file"))
        {
            path_arg("--state-password-file", f, PASSWORD_FILE_FORM)?;
        }
        if let Some(f) = a
            .state_cacert
            .as_deref()
            .filter(|_| !names.came_from_env("state_cacert"))
        {
            path_arg("--state-cacert", f, CACERT_FORM)?;
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
        Some(s) => parse_store(s, &names.of("state", "--state"))?,
        // Found when the store is opened: a missing home directory is a
        // store failure, not a usage error.
        None => StoreAt::Default,
    };
    let password_file = password_file(a, names, &at)?;
    let cacert = cacert(a, names, &at)?;
    Ok(StateOptions {
        shared: Some(Features {
            group,
            at,
            password_file,
            cacert,
            required: a.state_required,
            pace,
            budget,
            breaker,
        }),
        show: a.state_show,
    })
}

/// `--state-password-file`: for a Redis store whose URL has no password,
/// judged now (a file another user planted or owns is a mistake to fix,
/// not a store to run without), read when the store is opened.
fn password_file(
    a: &StateArgs,
    names: &Names,
    at: &StoreAt,
) -> Result<Option<PathBuf>, UsageError> {
    Ok(match a.state_password_file.clone() {
        None => None,
        Some(f) => {
            let flag = names.of("state_password_file", "--state-password-file");
            let from_env = names.came_from_env("state_password_file");
            if !from_env {
                path_arg(&flag, &f, PASSWORD_FILE_FORM)?;
            }
            match &at {
                // A URL with a password on the command line wins over a
                // password file from the environment.
                StoreAt::Url(u) if has_password(u) && from_env && !names.came_from_env("state") => {
                    None
                }
                StoreAt::Url(u) if has_password(u) => {
                    return Err(UsageError(format!(
                        "{flag} gives the Redis password, and the store URL has one too: give it in one place"
                    )));
                }
                StoreAt::Url(_) if f.as_os_str().is_empty() => {
                    return Err(invalid(&flag, "", PASSWORD_FILE_FORM));
                }
                // Read when the store is opened, but judged now: a file
                // another user planted or owns is a mistake to fix, not a
                // store to run without.
                StoreAt::Url(_) => match crate::fsutil::untrusted_secret(&f) {
                    Some(why) => {
                        return Err(UsageError(format!(
                            "cannot use {flag} {}: {why}",
                            f.display()
                        )));
                    }
                    None => Some(f),
                },
                // Set for every invocation in the environment, it does not
                // apply to one whose store is a directory.
                _ if from_env => None,
                _ => {
                    return Err(UsageError(format!(
                        "{flag} applies only to a Redis store (--state redis://..., unix://..., redis+sentinel://... or redis+cluster://...)"
                    )));
                }
            }
        }
    })
}

/// `--state-cacert`: for a store spoken to over TLS only. From the
/// environment, it is left out where it does not apply.
fn cacert(a: &StateArgs, names: &Names, at: &StoreAt) -> Result<Option<PathBuf>, UsageError> {
    let Some(f) = a.state_cacert.clone() else {
        return Ok(None);
    };
    let flag = names.of("state_cacert", "--state-cacert");
    let from_env = names.came_from_env("state_cacert");
    if !from_env {
        path_arg(&flag, &f, CACERT_FORM)?;
    }
    let tls =
        matches!(at, StoreAt::Url(u) if u.starts_with("rediss://") || u.starts_with("rediss+"));
    match (tls, from_env) {
        (true, _) if f.as_os_str().is_empty() => Err(invalid(&flag, "", CACERT_FORM)),
        (true, _) => Ok(Some(f)),
        (false, true) => Ok(None),
        (false, false) => Err(UsageError(format!(
            "{flag} applies only to a Redis store spoken to over TLS (--state rediss://..., rediss+sentinel://... or rediss+cluster://...)"
        ))),
    }
}

fn valid_group(g: &str) -> bool {
    (1..=64).contains(&g.len())
        && !g.starts_with(['.', '-'])
        && g.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

const STORE_FORM: &str = "a directory, or a URL such as redis://[USER:PASSWORD@]HOST[:PORT][/DB], rediss://..., unix:///PATH.sock[?db=N], redis+sentinel://HOST[:PORT][,HOST[:PORT]...]/MASTER[/DB] or redis+cluster://HOST[:PORT][,HOST[:PORT]...]";

/// The URL schemes of Redis stores: one server, Sentinel, Cluster.
const STORE_SCHEMES: [&str; 8] = [
    "redis://",
    "rediss://",
    "unix://",
    "redis+unix://",
    "redis+sentinel://",
    "rediss+sentinel://",
    "redis+cluster://",
    "rediss+cluster://",
];

/// `--state DIR|URL`. A URL is checked here, whole, so that a typo is a
/// usage error rather than a fleet that runs uncoordinated for good. The
/// URL is shown masked in messages; `name` is the flag or variable it came
/// from.
fn parse_store(s: &str, name: &str) -> Result<StoreAt, UsageError> {
    if s.contains("://") {
        let shown = crate::mask::address(s);
        let ok = STORE_SCHEMES.iter().any(|p| s.starts_with(p));
        if !ok {
            return Err(invalid(name, &shown, STORE_FORM));
        }
        if cfg!(not(feature = "redis")) {
            return Err(UsageError(format!(
                "{name}: this retry was built without Redis support; give a directory"
            )));
        }
        #[cfg(feature = "redis")]
        if let Err(why) = crate::state::redis::check_url(s) {
            return Err(UsageError(format!(
                "invalid value '{shown}' for {name}: {why}{}; expected {STORE_FORM}",
                raw_in_user_info(s)
            )));
        }
        return Ok(StoreAt::Url(s.to_string()));
    }
    if s.trim().is_empty() {
        return Err(invalid(name, s, STORE_FORM));
    }
    path_arg(name, std::path::Path::new(s), STORE_FORM)?;
    Ok(StoreAt::Dir(PathBuf::from(s)))
}

/// A word on a `/`, `?` or `#` standing before the URL's last `@`, which
/// ends the user info early (`redis://u:pa/ss@h`): the likely cause of the
/// error, when the password was not percent-encoded.
fn raw_in_user_info(s: &str) -> &'static str {
    let rest = s.split_once("://").map_or("", |(_, rest)| rest);
    match rest.rfind('@') {
        Some(at) if rest[..at].contains(['/', '?', '#']) => {
            " (a '/', '?' or '#' in a password is written %2F, %3F or %23)"
        }
        _ => "",
    }
}

/// Whether a store URL carries the password of the servers that keep the
/// data (`:PASSWORD@`, or `pass=` in a unix socket's query); a sentinel's
/// own password is another matter.
fn has_password(u: &str) -> bool {
    #[cfg(feature = "redis")]
    return crate::state::redis::Address::parse(u).is_ok_and(|a| a.has_password());
    #[cfg(not(feature = "redis"))]
    return crate::mask::url_without_password(u).is_some();
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
    let ratio_milli = match ratio {
        None => 100,
        Some(r) => thousandths(r.trim()).ok_or_else(bad)?,
    };
    if ratio_milli > i64::from(tokens) * 1000 {
        return Err(bad());
    }
    Ok(Budget {
        max_milli: i64::from(tokens) * 1000,
        ratio_milli,
    })
}

/// A non-negative number in thousandths, further decimals truncated as
/// gRPC's retry throttling reads its token ratio (0.5466 counts as 0.546).
/// Plain decimals are read exactly; a form with an exponent goes through a
/// float, nudged so that 2.9e-1 is not read as 0.289.
fn thousandths(s: &str) -> Option<i64> {
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    let digits = |p: &str| p.bytes().all(|b| b.is_ascii_digit());
    if (!int.is_empty() || !frac.is_empty()) && digits(int) && digits(frac) && int.len() <= 12 {
        let whole: i64 = if int.is_empty() { 0 } else { int.parse().ok()? };
        let mut milli = 0;
        for (i, b) in frac
            .bytes()
            .chain(std::iter::repeat(b'0'))
            .take(3)
            .enumerate()
        {
            milli += i64::from(b - b'0') * [100, 10, 1][i];
        }
        return whole.checked_mul(1000)?.checked_add(milli);
    }
    let v: f64 = s.parse().ok()?;
    if !(0.0..=1e12).contains(&v) {
        return None;
    }
    Some((v * 1000.0 + 1e-6).floor() as i64)
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
        // An open circuit that refuses nothing is no breaker.
        Some(c) => parse_duration(c).filter(|d| !d.is_zero()).ok_or_else(bad)?,
    };
    Ok(Breaker {
        threshold,
        // Counted in microseconds: a positive cooldown never rounds to zero.
        cooldown: u64::try_from(cooldown.as_nanos().div_ceil(1000)).map_err(|_| bad())?,
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

    /// `--group g --budget --state URL --state-password-file FILE`.
    fn with_password_file<'a>(url: &'a str, file: &'a str) -> [&'a str; 7] {
        [
            "--group",
            "g",
            "--budget",
            "--state",
            url,
            "--state-password-file",
            file,
        ]
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
    fn budget_ratios_keep_three_decimals_truncated() {
        let ratio = |s: &str| parse_budget(s).map(|b| b.ratio_milli);
        assert_eq!(ratio("100:0.5466"), Ok(546));
        assert_eq!(ratio("100:0.29"), Ok(290));
        assert_eq!(ratio("100:.1"), Ok(100));
        assert_eq!(ratio("100:2"), Ok(2_000));
        assert_eq!(ratio("100:0.0009"), Ok(0));
        assert_eq!(ratio("100:2.9e-1"), Ok(290));
        assert_eq!(ratio("100:5.466e-1"), Ok(546));
        assert_eq!(ratio("10:10.0009"), Ok(10_000));
        for bad in ["10:10.001", "10:.", "10:1.2.3", "10:inf", "10:NaN"] {
            assert!(parse_budget(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn malformed_store_urls_are_usage_errors_naming_the_source() {
        for url in [
            "redis://:hunter2@",
            "unix://",
            "redis://127.0.0.1:99999/0",
            "redis://[::1",
            "unix:///run/r.sock?pass=hunter2&db=x",
        ] {
            let e = err(&["--group", "g", "--budget", "--state", url]);
            assert!(e.contains("--state") && e.contains("expected"), "{e}");
            assert!(!e.contains("hunter2"), "{e}");
            let e = from_args(
                &Cli::parse_from([
                    "retry", "--group", "g", "--budget", "--state", url, "--", "true",
                ])
                .state,
                &Names(&[("state".into(), "RETRY_STATE".into())]),
            )
            .expect_err(url)
            .0;
            assert!(e.contains("RETRY_STATE (--state)"), "{e}");
        }
    }

    #[test]
    fn state_cacert_is_for_a_store_spoken_to_over_tls() {
        let args = |url: &'static str| {
            [
                "--group",
                "g",
                "--budget",
                "--state",
                url,
                "--state-cacert",
                "/ca.pem",
            ]
        };
        for url in [
            "rediss://h",
            "rediss+sentinel://s1/m",
            "rediss+cluster://n1,n2",
        ] {
            assert_eq!(
                shared(&args(url)).cacert,
                Some(PathBuf::from("/ca.pem")),
                "{url}"
            );
        }
        for url in ["redis://h", "unix:///run/redis.sock", "/var/lib/x"] {
            let e = err(&args(url));
            assert!(
                e.contains("--state-cacert applies only to a Redis store spoken to over TLS"),
                "{e}"
            );
        }
    }

    /// The password file `--state` `url` is given with when
    /// `RETRY_STATE_PASSWORD_FILE` in the environment named it.
    fn password_file_from_env(url: &str) -> Option<PathBuf> {
        let mut argv = vec!["retry"];
        argv.extend(with_password_file(url, "/f"));
        argv.extend(["--", "true"]);
        let mut cli = Cli::parse_from(argv);
        cli.from_env = vec![(
            "state_password_file".into(),
            "RETRY_STATE_PASSWORD_FILE".into(),
        )];
        let f = from_args(&cli.state, &Names(&cli.from_env));
        f.expect("valid")
            .shared
            .expect("shared state")
            .password_file
    }

    #[test]
    fn a_password_file_is_for_a_redis_url_without_a_password() {
        let f = shared(&with_password_file(
            "unix:///run/r.sock",
            "/run/secrets/redis",
        ));
        assert_eq!(f.password_file, Some(PathBuf::from("/run/secrets/redis")));
        let e = err(&with_password_file("redis://:pw@db", "/f"));
        assert!(e.contains("one place") && !e.contains("pw@"), "{e}");
        let e = err(&with_password_file("/var/lib/x", "/f"));
        assert!(e.contains("--state-password-file applies only"), "{e}");
        // From the environment, it is left aside where it does not apply.
        assert_eq!(password_file_from_env("/var/lib/x"), None);
        // So is it when the URL given on the command line has a password.
        assert_eq!(password_file_from_env("redis://:pw@db"), None);
    }

    #[test]
    fn breakers() {
        assert_eq!(parse_breaker("5:30s"), Ok(Breaker::DEFAULT));
        assert_eq!(parse_breaker("5"), Ok(Breaker::DEFAULT));
        assert_eq!(parse_breaker("2:500ms").map(|b| b.cooldown), Ok(500_000));
        assert_eq!(parse_breaker("2:1ns").map(|b| b.cooldown), Ok(1));
        // An open circuit that refuses nothing is no breaker.
        for bad in ["0", "x", "3:soon", ":30s", "3:0s", "3:0", "3:0ms"] {
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

    #[test]
    fn sentinel_and_cluster_urls_are_stores_checked_whole() {
        let url = "redis+sentinel://s1,s2:26380/mymaster?sentinel_password=hunter2";
        let f = shared(&["--group", "g", "--budget", "--state", url]);
        assert_eq!(f.at, StoreAt::Url(url.into()));
        // The sentinels' own password is not the one a file gives.
        let f = shared(&with_password_file(url, "/f"));
        assert_eq!(f.password_file, Some(PathBuf::from("/f")));
        let e = err(&with_password_file("redis+cluster://:hunter2@n1,n2", "/f"));
        assert!(e.contains("one place") && !e.contains("hunter2"), "{e}");
        for bad in [
            "redis+sentinel://:hunter2@s1:26379",
            "rediss+cluster://:hunter2@n1/3",
            "redis+sentinel://:hunter2@s1/m?password=x",
        ] {
            let e = err(&["--group", "g", "--budget", "--state", bad]);
            assert!(e.contains("--state") && e.contains("expected"), "{e}");
            assert!(!e.contains("hunter2"), "{e}");
        }
    }
}
