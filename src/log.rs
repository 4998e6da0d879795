//! The log: events from the retry loop rendered as text or JSON lines.
//!
//! This is the only module that writes to stderr. Each event becomes exactly
//! one `write_all` of a whole line, so lines from concurrent writers to the
//! same file never interleave mid-line. stdout is never touched: it belongs to
//! the child.

use std::ffi::OsString;
use std::io::Write;
use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;

use crate::classify::{NetFailure, Status, Verdict, round_ms};
use crate::policy::{LogFormat, LogOptions};

/// One planned wait before the next attempt.
#[derive(Debug, Clone, Copy)]
pub struct Wait {
    pub delay: Duration,
    pub ceiling: Duration,
    pub jitter: &'static str,
}

/// How a run ended, as the `done` event reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    Success,
    /// No attempts left.
    Exhausted,
    /// The last failure was permanent.
    Permanent,
    /// `--max-time` left no room for another attempt.
    Deadline,
    /// retry caught a terminating signal.
    Interrupted,
}

impl End {
    fn as_str(self) -> &'static str {
        match self {
            End::Success => "success",
            End::Exhausted => "exhausted",
            End::Permanent => "permanent",
            End::Deadline => "deadline",
            End::Interrupted => "interrupted",
        }
    }
}

/// Something worth a log line.
#[derive(Debug)]
pub enum Event<'a> {
    /// The run begins (text: only with -v).
    Start {
        command: &'a [OsString],
        max: Option<u32>,
        seed: u64,
    },
    /// An attempt begins (only with -v).
    AttemptStart {
        attempt: u32,
        max: Option<u32>,
    },
    /// An attempt ended; `next` is the wait before the following one, if any.
    Attempt {
        attempt: u32,
        max: Option<u32>,
        status: &'a Status,
        verdict: Verdict,
        duration: Duration,
        next: Option<Wait>,
    },
    /// The run is over.
    Done {
        end: End,
        attempts: u32,
        max: Option<u32>,
        exit_code: u8,
        reason: &'a str,
    },
    Warning {
        message: &'a str,
    },
}

/// Renders events and writes them to stderr or the log file.
pub struct Logger {
    format: LogFormat,
    verbosity: i8,
    sink: Box<dyn Write + Send>,
    started: Instant,
}

impl Logger {
    /// Open the log as configured. Fails only when `--log-file` cannot be opened.
    pub fn open(opts: &LogOptions, started: Instant) -> std::io::Result<Logger> {
        let sink: Box<dyn Write + Send> = match &opts.file {
            Some(path) => Box::new(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)?,
            ),
            None => Box::new(std::io::stderr()),
        };
        Ok(Logger {
            format: opts.format,
            verbosity: opts.verbosity,
            sink,
            started,
        })
    }

    /// A logger writing to stderr, for errors before the configuration is known.
    pub fn stderr() -> Logger {
        Logger {
            format: LogFormat::Text,
            verbosity: 0,
            sink: Box::new(std::io::stderr()),
            started: Instant::now(),
        }
    }

    pub fn emit(&mut self, event: &Event<'_>) {
        if !self.wants(event) {
            return;
        }
        let elapsed = self.started.elapsed();
        let mut out = String::new();
        match self.format {
            LogFormat::Text => {
                if let Some(line) = text(event, elapsed) {
                    out = line;
                    out.push('\n');
                }
            }
            LogFormat::Json => {
                for line in json(event, elapsed) {
                    out.push_str(&line);
                    out.push('\n');
                }
            }
        }
        if !out.is_empty() {
            // A log that cannot be written must not change the run's outcome.
            let _ = self.sink.write_all(out.as_bytes());
        }
    }

    /// A plain error line, `retry: MESSAGE`, whatever the format and verbosity.
    pub fn error(&mut self, message: &str) {
        let _ = self
            .sink
            .write_all(format!("retry: {message}\n").as_bytes());
    }

    fn wants(&self, event: &Event<'_>) -> bool {
        let v = self.verbosity;
        match event {
            Event::Start { .. } => v >= 1 || (self.format == LogFormat::Json && v >= 0),
            Event::AttemptStart { .. } => v >= 1,
            Event::Attempt { verdict, .. } => match verdict {
                Verdict::Success => v >= 1 || self.format == LogFormat::Json && v >= 0,
                _ => v >= 0,
            },
            Event::Done { end, attempts, .. } => match end {
                End::Success => {
                    v >= 1 || (v >= 0 && (*attempts > 1 || self.format == LogFormat::Json))
                }
                _ => v >= -1,
            },
            Event::Warning { .. } => v >= 0,
        }
    }
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

fn text(event: &Event<'_>, elapsed: Duration) -> Option<String> {
    let line = match event {
        Event::Start { command, max, seed } => format!(
            "retry: running {} ({}, seed {seed})",
            shell_line(command),
            match max {
                Some(1) => "1 attempt".to_string(),
                Some(m) => format!("up to {m} attempts"),
                None => "until it succeeds".to_string(),
            }
        ),
        Event::AttemptStart { attempt, max } => {
            format!("retry: attempt {} starting", of_max(*attempt, *max))
        }
        Event::Attempt {
            attempt,
            max,
            status,
            verdict,
            duration,
            next,
        } => {
            let n = of_max(*attempt, *max);
            let d = human(*duration);
            match (verdict, next) {
                (Verdict::Success, _) => {
                    format!("retry: attempt {n} succeeded ({status}) after {d}")
                }
                (_, Some(w)) if w.jitter == "none" => format!(
                    "retry: attempt {n} failed ({status}) after {d}; next in {} (no jitter)",
                    human(w.delay)
                ),
                (_, Some(w)) => format!(
                    "retry: attempt {n} failed ({status}) after {d}; next in {} ({} jitter, ceiling {})",
                    human(w.delay),
                    w.jitter,
                    human(w.ceiling)
                ),
                (_, None) => format!("retry: attempt {n} failed ({status}) after {d}"),
            }
        }
        Event::Done {
            end,
            attempts,
            max,
            exit_code,
            reason,
        } => {
            let plural = if *attempts == 1 { "" } else { "s" };
            match end {
                End::Success => format!(
                    "retry: succeeded on attempt {} after {}",
                    of_max(*attempts, *max),
                    human(elapsed)
                ),
                End::Interrupted => format!("retry: {reason}; exiting {exit_code}"),
                _ => format!(
                    "retry: giving up after {attempts} attempt{plural} in {}: {reason}; exiting {exit_code}",
                    human(elapsed)
                ),
            }
        }
        Event::Warning { message } => format!("retry: warning: {message}"),
    };
    Some(line)
}

/// One JSON log line. Field names are a documented, stable interface.
#[derive(Serialize, Default)]
struct JsonLine<'a> {
    event: &'a str,
    time: String,
    elapsed_ms: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    command: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    seed: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    attempt: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    outcome: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    exit_code: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    signal: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    http_status: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    retry_after_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    duration_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    delay_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ceiling_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    jitter: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    attempts: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<&'a str>,
}

fn millis(d: Duration) -> f64 {
    // Microsecond resolution is plenty and keeps the numbers short.
    (d.as_micros() as f64) / 1000.0
}

fn json(event: &Event<'_>, elapsed: Duration) -> Vec<String> {
    let base = |name| JsonLine {
        event: name,
        time: humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
        elapsed_ms: millis(elapsed),
        ..JsonLine::default()
    };
    let mut lines = Vec::with_capacity(2);
    match event {
        Event::Start { command, max, seed } => lines.push(JsonLine {
            command: Some(
                command
                    .iter()
                    .map(|w| w.to_string_lossy().into_owned())
                    .collect(),
            ),
            max: *max,
            seed: Some(*seed),
            ..base("start")
        }),
        Event::AttemptStart { attempt, max } => lines.push(JsonLine {
            attempt: Some(*attempt),
            max: *max,
            ..base("attempt_start")
        }),
        Event::Attempt {
            attempt,
            max,
            status,
            verdict,
            duration,
            next,
        } => {
            let (exit_code, signal) = match status {
                Status::Exited(c) => (Some(*c), None),
                Status::Signaled(s) | Status::Interrupted(s) => {
                    (None, Some(crate::classify::signal_name(*s)))
                }
                _ => (None, None),
            };
            let outcome = match (status, verdict) {
                (Status::TimedOut { .. }, _) => "timeout",
                (
                    Status::Net {
                        failure: NetFailure::TimedOut(_) | NetFailure::ConnectTimeout,
                        ..
                    },
                    _,
                ) => "timeout",
                (Status::Interrupted(_), _) => "interrupted",
                (_, Verdict::Success) => "success",
                (_, Verdict::Retryable) => "retryable",
                (_, Verdict::Permanent) => "permanent",
            };
            let reason = match verdict {
                Verdict::Success => None,
                _ => Some(status.to_string()),
            };
            lines.push(JsonLine {
                attempt: Some(*attempt),
                max: *max,
                outcome: Some(outcome),
                exit_code,
                signal,
                http_status: match status {
                    Status::Http { code, .. } => Some(*code),
                    _ => None,
                },
                retry_after_ms: status.retry_after().map(millis),
                duration_ms: Some(millis(*duration)),
                reason,
                ..base("attempt")
            });
            if let Some(w) = next {
                lines.push(JsonLine {
                    attempt: Some(attempt + 1),
                    max: *max,
                    delay_ms: Some(millis(w.delay)),
                    ceiling_ms: Some(millis(w.ceiling)),
                    jitter: Some(w.jitter),
                    ..base("sleep")
                });
            }
        }
        Event::Done {
            end,
            attempts,
            max,
            exit_code,
            reason,
        } => lines.push(JsonLine {
            outcome: Some(end.as_str()),
            attempts: Some(*attempts),
            max: *max,
            exit_code: Some(i32::from(*exit_code)),
            reason: (!reason.is_empty()).then(|| reason.to_string()),
            ..base("done")
        }),
        Event::Warning { message } => lines.push(JsonLine {
            message: Some(message),
            ..base("warning")
        }),
    }
    lines
        .iter()
        .filter_map(|l| serde_json::to_string(l).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_attempt_line_matches_the_contract() {
        let status = Status::Exited(1);
        let e = Event::Attempt {
            attempt: 2,
            max: Some(5),
            status: &status,
            verdict: Verdict::Retryable,
            duration: Duration::from_micros(312_400),
            next: Some(Wait {
                delay: Duration::from_millis(870),
                ceiling: Duration::from_secs(2),
                jitter: "full",
            }),
        };
        assert_eq!(
            text(&e, Duration::ZERO).as_deref(),
            Some(
                "retry: attempt 2/5 failed (exit 1) after 312ms; next in 870ms (full jitter, ceiling 2s)"
            )
        );
        let lines = json(&e, Duration::from_millis(1));
        assert_eq!(lines.len(), 2);
        let a: serde_json::Value = serde_json::from_str(&lines[0]).expect("json");
        assert_eq!(a["event"], "attempt");
        assert_eq!(a["outcome"], "retryable");
        assert_eq!(a["exit_code"], 1);
        assert_eq!(a["duration_ms"], 312.4);
        let s: serde_json::Value = serde_json::from_str(&lines[1]).expect("json");
        assert_eq!(s["event"], "sleep");
        assert_eq!(s["attempt"], 3);
        assert_eq!(s["delay_ms"], 870.0);
        assert_eq!(s["ceiling_ms"], 2000.0);
    }

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
