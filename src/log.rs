//! The log: events from the retry loop rendered as text or JSON lines.
//!
//! This is the only module that writes to stderr. Each event becomes exactly
//! one `write_all` of a whole line, so lines from concurrent writers to the
//! same file never interleave mid-line. stdout is never touched: it belongs to
//! the child.
//!
//! Three extras depend on where the log is going, decided once when it opens
//! ([`Surroundings`]): colour on the `retry:` prefix and outcome words, GitHub
//! Actions annotations, and a countdown on a terminal during long waits.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant, SystemTime};

use anstyle::{AnsiColor, Style};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};
use serde::Serialize;

use crate::classify::{NetFailure, Status, Verdict, round_ms};
use crate::policy::{LogFormat, LogOptions, When};

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

/// What the log can see of where it runs, read once when it opens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Surroundings {
    pub stderr_is_terminal: bool,
    /// NO_COLOR is set to something other than the empty string.
    pub no_color: bool,
    /// TERM=dumb: no colour, no cursor movement.
    pub dumb_terminal: bool,
    /// GITHUB_ACTIONS=true.
    pub github_actions: bool,
}

impl Surroundings {
    pub fn detect() -> Surroundings {
        let var = |name| std::env::var_os(name);
        Surroundings {
            stderr_is_terminal: std::io::stderr().is_terminal(),
            no_color: var("NO_COLOR").is_some_and(|v| !v.is_empty()),
            dumb_terminal: var("TERM").is_some_and(|v| v == "dumb"),
            github_actions: var("GITHUB_ACTIONS").is_some_and(|v| v == "true"),
        }
    }
}

/// The extras a run gets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Extras {
    pub color: bool,
    pub annotations: bool,
    pub countdown: bool,
}

impl Extras {
    /// Decide the extras from the options and the surroundings. `auto` colours
    /// only a text log on a terminal that is not dumb, without NO_COLOR; an
    /// explicit `--color always` wins over NO_COLOR, as no-color.org asks.
    pub fn decide(opts: &LogOptions, s: &Surroundings) -> Extras {
        let to_stderr = opts.file.is_none();
        let text = opts.format == LogFormat::Text;
        let terminal = to_stderr && s.stderr_is_terminal && !s.dumb_terminal;
        Extras {
            // Never in JSON: escapes would corrupt the strings.
            color: text
                && match opts.color {
                    When::Always => true,
                    When::Never => false,
                    When::Auto => terminal && !s.no_color,
                },
            // A JSON stream on stderr stays pure JSON unless annotations are
            // asked for explicitly.
            annotations: match opts.annotations {
                When::Always => true,
                When::Never => false,
                When::Auto => s.github_actions && (text || !to_stderr),
            },
            // A person is watching: text log on a real terminal, not -q.
            countdown: terminal && text && opts.verbosity >= 0,
        }
    }
}

/// The countdown shown during one wait; dropping it erases it, so that the
/// next line written to the terminal starts on a clean line.
#[must_use = "the countdown disappears when dropped"]
pub struct Countdown(Option<ProgressBar>);

impl Drop for Countdown {
    fn drop(&mut self) {
        if let Some(bar) = self.0.take() {
            bar.finish_and_clear();
        }
    }
}

/// Waits up to this long get no countdown: it would only flicker.
const COUNTDOWN_MIN: Duration = Duration::from_secs(1);

/// Renders events and writes them to stderr or the log file.
pub struct Logger {
    format: LogFormat,
    verbosity: i8,
    sink: Box<dyn Write + Send>,
    started: Instant,
    extras: Extras,
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
            extras: Extras::decide(opts, &Surroundings::detect()),
        })
    }

    /// A logger writing to stderr, for errors before the configuration is known.
    pub fn stderr() -> Logger {
        Logger {
            format: LogFormat::Text,
            verbosity: 0,
            sink: Box::new(std::io::stderr()),
            started: Instant::now(),
            extras: Extras::default(),
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
                    out = if self.extras.color {
                        paint(&line, event)
                    } else {
                        line
                    };
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
        if self.extras.annotations
            && let Some(line) = annotation(event, elapsed)
        {
            // The runner reads workflow commands from stderr as well as stdout
            // (both streams go through the same command parser), so they need
            // not touch stdout, which is the child's. They go to the real
            // stderr even with --log-file: the file is not where GitHub looks.
            let _ = std::io::stderr().write_all(line.as_bytes());
        }
    }

    /// Show a countdown to the next attempt while waiting `wait`, on a
    /// terminal only and only for waits over a second. Call it only while no
    /// child runs, and drop the result before the next line is logged.
    pub fn countdown(&self, wait: Duration, next_attempt: u32, max: Option<u32>) -> Countdown {
        if !self.extras.countdown || wait <= COUNTDOWN_MIN {
            return Countdown(None);
        }
        let left = move |state: &ProgressState, w: &mut dyn std::fmt::Write| {
            // Whole seconds, rounded up: "1s" until the wait is over.
            let secs = wait.saturating_sub(state.elapsed()).as_secs_f64().ceil();
            let _ = w.write_str(&human(Duration::from_secs(secs as u64)));
        };
        let Ok(style) = ProgressStyle::with_template("{prefix} attempt {msg} starts in {left}")
        else {
            return Countdown(None);
        };
        let prefix = if self.extras.color {
            paint_word("retry:", PREFIX)
        } else {
            "retry:".to_string()
        };
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr())
            .with_style(style.with_key("left", left))
            .with_prefix(prefix)
            .with_message(of_max(next_attempt, max));
        // A thread redraws it, so the wait itself stays a plain timer.
        bar.enable_steady_tick(Duration::from_millis(250));
        Countdown(Some(bar))
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

const PREFIX: Style = Style::new().bold();
const GOOD: Style = AnsiColor::Green.on_default();
const BAD: Style = AnsiColor::Red.on_default().bold();
const WARN: Style = AnsiColor::Yellow.on_default();

fn paint_word(word: &str, style: Style) -> String {
    format!("{style}{word}{style:#}")
}

/// Colour a text line: its `retry:` prefix and the first outcome word. The
/// words are retry's own; nothing the child printed passes through here.
fn paint(line: &str, event: &Event<'_>) -> String {
    let word = match event {
        Event::Attempt {
            verdict: Verdict::Success,
            ..
        } => Some(("succeeded", GOOD)),
        Event::Attempt { .. } => Some(("failed", WARN)),
        Event::Done {
            end: End::Success, ..
        } => Some(("succeeded", GOOD)),
        Event::Done {
            end: End::Interrupted,
            ..
        } => Some(("interrupted", BAD)),
        Event::Done { .. } => Some(("giving up", BAD)),
        Event::Warning { .. } => Some(("warning:", WARN)),
        _ => None,
    };
    let Some(rest) = line.strip_prefix("retry:") else {
        return line.to_string();
    };
    let mut out = paint_word("retry:", PREFIX);
    match word.and_then(|(w, style)| rest.find(w).map(|at| (at, w, style))) {
        Some((at, w, style)) => {
            out.push_str(&rest[..at]);
            out.push_str(&paint_word(w, style));
            out.push_str(&rest[at + w.len()..]);
        }
        None => out.push_str(rest),
    }
    out
}

/// The GitHub Actions workflow command for an event, if it gets one: a
/// warning per failed attempt, an error on giving up. Its text is the plain
/// text log line.
fn annotation(event: &Event<'_>, elapsed: Duration) -> Option<String> {
    let level = match event {
        Event::Attempt { verdict, .. } if *verdict != Verdict::Success => "warning",
        Event::Done { end, .. } if !matches!(end, End::Success | End::Interrupted) => "error",
        _ => return None,
    };
    let line = text(event, elapsed)?;
    let message = line.strip_prefix("retry: ").unwrap_or(&line);
    let mut out = format!("::{level} title=retry::");
    // Workflow-command data escapes, so a message cannot end the command early.
    for c in message.chars() {
        match c {
            '%' => out.push_str("%25"),
            '\r' => out.push_str("%0D"),
            '\n' => out.push_str("%0A"),
            c => out.push(c),
        }
    }
    let _ = writeln!(out);
    Some(out)
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

    fn opts(
        format: LogFormat,
        verbosity: i8,
        file: bool,
        color: When,
        annotations: When,
    ) -> LogOptions {
        LogOptions {
            format,
            verbosity,
            file: file.then(|| "log.txt".into()),
            color,
            annotations,
        }
    }

    #[test]
    fn extras_follow_the_surroundings() {
        let tty = Surroundings {
            stderr_is_terminal: true,
            ..Surroundings::default()
        };
        let auto = opts(LogFormat::Text, 0, false, When::Auto, When::Auto);
        let e = Extras::decide(&auto, &tty);
        assert!(e.color && e.countdown && !e.annotations);
        // Not a terminal: nothing.
        assert_eq!(
            Extras::decide(&auto, &Surroundings::default()),
            Extras::default()
        );
        // NO_COLOR keeps the countdown, drops colour; --color always beats it.
        let no_color = Surroundings {
            no_color: true,
            ..tty
        };
        let e = Extras::decide(&auto, &no_color);
        assert!(!e.color && e.countdown);
        let always = opts(LogFormat::Text, 0, false, When::Always, When::Auto);
        assert!(Extras::decide(&always, &no_color).color);
        // TERM=dumb: neither colour nor countdown.
        let dumb = Surroundings {
            dumb_terminal: true,
            ..tty
        };
        assert_eq!(Extras::decide(&auto, &dumb), Extras::default());
        // -q, JSON or a log file: no countdown; JSON never colours.
        assert!(
            !Extras::decide(
                &opts(LogFormat::Text, -1, false, When::Auto, When::Auto),
                &tty
            )
            .countdown
        );
        assert!(
            !Extras::decide(
                &opts(LogFormat::Text, 0, true, When::Auto, When::Auto),
                &tty
            )
            .countdown
        );
        let json = opts(LogFormat::Json, 0, false, When::Always, When::Auto);
        let e = Extras::decide(&json, &tty);
        assert!(!e.color && !e.countdown);
    }

    #[test]
    fn annotations_when_asked_or_in_github_actions() {
        let gha = Surroundings {
            github_actions: true,
            ..Surroundings::default()
        };
        let text_auto = opts(LogFormat::Text, 0, false, When::Never, When::Auto);
        assert!(Extras::decide(&text_auto, &gha).annotations);
        assert!(!Extras::decide(&text_auto, &Surroundings::default()).annotations);
        // A JSON stream on stderr stays pure unless asked; to a file it is fine.
        assert!(
            !Extras::decide(
                &opts(LogFormat::Json, 0, false, When::Never, When::Auto),
                &gha
            )
            .annotations
        );
        assert!(
            Extras::decide(
                &opts(LogFormat::Json, 0, true, When::Never, When::Auto),
                &gha
            )
            .annotations
        );
        assert!(
            Extras::decide(
                &opts(LogFormat::Json, 0, false, When::Never, When::Always),
                &gha
            )
            .annotations
        );
        assert!(
            !Extras::decide(
                &opts(LogFormat::Text, 0, false, When::Never, When::Never),
                &gha
            )
            .annotations
        );
    }

    #[test]
    fn annotation_lines_are_escaped_workflow_commands() {
        let status = Status::Exited(1);
        let failed = Event::Attempt {
            attempt: 1,
            max: Some(3),
            status: &status,
            verdict: Verdict::Retryable,
            duration: Duration::from_millis(5),
            next: None,
        };
        assert_eq!(
            annotation(&failed, Duration::ZERO).as_deref(),
            Some("::warning title=retry::attempt 1/3 failed (exit 1) after 5ms\n")
        );
        let done = Event::Done {
            end: End::Permanent,
            attempts: 1,
            max: Some(3),
            exit_code: 2,
            reason: "100% broken\nreally",
        };
        let line = annotation(&done, Duration::ZERO).expect("an error annotation");
        assert!(line.starts_with("::error title=retry::giving up after 1 attempt"));
        assert!(line.contains("100%25 broken%0Areally"));
        assert_eq!(line.matches('\n').count(), 1);
        let ok = Event::Done {
            end: End::Success,
            attempts: 2,
            max: Some(3),
            exit_code: 0,
            reason: "",
        };
        assert_eq!(annotation(&ok, Duration::ZERO), None);
    }

    #[test]
    fn paint_colours_only_the_prefix_and_outcome_word() {
        let w = Event::Warning {
            message: "failed twice",
        };
        let line = text(&w, Duration::ZERO).expect("line");
        // Only the first outcome word: "failed" in the message stays plain.
        assert_eq!(
            paint(&line, &w),
            format!(
                "{} {} failed twice",
                paint_word("retry:", PREFIX),
                paint_word("warning:", WARN)
            )
        );
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
