//! **Pure.** Durations, counts and command lines as people read them.
//!
//! The log, the loop's messages, the dry-run and simulation reports and the
//! classification's explanations all show values the same way; this sits
//! below all of them so that none has to import another for a format.

use std::ffi::OsString;
use std::time::Duration;

/// A duration rounded to whole milliseconds, for display.
pub fn round_ms(d: Duration) -> Duration {
    Duration::from_millis(u64::try_from((d.as_micros() + 500) / 1000).unwrap_or(u64::MAX))
}

/// A duration for people: whole milliseconds, `870ms`, `2s 312ms`, `1m 5s`.
pub fn human(d: Duration) -> String {
    humantime::format_duration(round_ms(d)).to_string()
}

/// `3/5`, or `3` without a limit.
pub fn of_max(attempt: u32, max: Option<u32>) -> String {
    match max {
        Some(m) => format!("{attempt}/{m}"),
        None => attempt.to_string(),
    }
}

/// Quote a command line the way a shell would read it back.
pub fn shell_line(command: &[OsString]) -> String {
    let words: Vec<String> = command
        .iter()
        .map(|w| {
            let w = w.to_string_lossy();
            shlex::try_quote(&w).map_or_else(|_| format!("{w:?}"), |q| q.into_owned())
        })
        .collect();
    words.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_quoting() {
        let cmd: Vec<OsString> = ["echo", "a b", "it's"].iter().map(OsString::from).collect();
        assert_eq!(shell_line(&cmd), r#"echo 'a b' "it's""#);
    }

    #[test]
    fn human_durations() {
        assert_eq!(human(Duration::from_micros(312_400)), "312ms");
        assert_eq!(human(Duration::from_millis(2312)), "2s 312ms");
        assert_eq!(human(Duration::from_secs(65)), "1m 5s");
        assert_eq!(human(Duration::ZERO), "0s");
    }
}
