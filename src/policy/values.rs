//! The values of flags, and usage errors about them: the one-line messages
//! naming the flag (or its environment variable) and the accepted form, the
//! forms themselves, durations, files named by flags. Every concern's
//! validation in `policy/` builds its errors from these.

use std::fmt;
use std::time::Duration;

use super::duration::{self, Dur, DurError};

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
pub(super) fn refuse_given<'f>(
    flags: impl IntoIterator<Item = (&'f str, bool)>,
    message: impl Fn(&str) -> String,
) -> Result<(), UsageError> {
    match flags.into_iter().find(|(_, given)| *given) {
        Some((flag, _)) => Err(UsageError(message(flag))),
        None => Ok(()),
    }
}

pub(super) fn invalid(flag: &str, value: &str, expected: &str) -> UsageError {
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
pub(super) fn looks_like_an_option(value: &str) -> bool {
    value
        .trim_start()
        .strip_prefix('-')
        .is_some_and(|rest| !rest.starts_with(|c: char| c.is_ascii_digit() || c == '.'))
}

pub(super) fn missing_value(flag: &str, value: &str, expected: &str) -> UsageError {
    UsageError(format!(
        "{flag} needs a value, not '{}': expected {expected}",
        crate::human::escape_controls(value.trim())
    ))
}

/// A list flag's value read by `parse`, whose error says what is wrong
/// with it; the message adds the flag and the accepted `form`.
pub(super) fn opt_list<T>(
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
pub(super) fn path_arg(
    flag: &str,
    path: &std::path::Path,
    expected: &str,
) -> Result<(), UsageError> {
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

pub(super) const DUR_FORM: &str = "a duration such as 250ms, 1.5s, 2m, 1h 30m or 0.5 (seconds)";
pub(super) const DUR_OR_NONE_FORM: &str =
    "a duration such as 250ms, 1.5s, 2m, 1h 30m or 0.5 (seconds); 0 or inf for no limit";
pub(super) const MAX_FORM: &str = "a whole number of attempts from 1 to 4294967295";
pub(super) const SEED_FORM: &str = "a whole number from 0 to 9007199254740991 (2^53 - 1)";
pub(super) const SIGNAL_FORM: &str =
    "a signal name or number, such as TERM, SIGINT, RTMIN+2 or 9 (see 'kill -l')";
pub(super) const LIST_FORM: &str = "exit codes and ranges from 0 to 255, such as 1,75,100-110";
pub(super) const SIZE_FORM: &str = "a size in bytes with an optional unit, such as 500K, 64M or 2G (powers of 1024; KB, MB, GB: of 1000), or inf for no limit";

/// Parse a finite duration in any accepted form (see [`duration`]).
pub fn parse_duration(s: &str) -> Option<Duration> {
    match duration::parse(s) {
        Ok(Dur::Finite(d)) => Some(d),
        _ => None,
    }
}

/// Whether `inf` is accepted, and what it means.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Inf {
    /// Rejected: there is no "no limit" for this setting.
    No,
    /// Accepted as no limit: returned as zero, which the caller reads as none.
    NoLimit,
}

/// A duration flag's value, with errors naming the flag or its variable.
pub(super) fn duration(
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

pub(super) fn opt_duration(
    flag: &str,
    value: Option<&str>,
) -> Result<Option<Duration>, UsageError> {
    duration(&Names(&[]), flag, value, Inf::No)
}

pub(super) fn opt_positive_duration(
    flag: &str,
    value: Option<&str>,
) -> Result<Option<Duration>, UsageError> {
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
pub(super) struct Names<'a>(pub(super) &'a [(String, String)]);

impl Names<'_> {
    /// Whether the setting's value came from its environment variable.
    pub(super) fn came_from_env(&self, id: &str) -> bool {
        self.0.iter().any(|(arg, _)| arg == id)
    }

    pub(super) fn of(&self, id: &str, flag: &str) -> String {
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
