//! The text log: one `retry: ...` line per event, and the colouring of
//! retry's own words in it.

use std::time::Duration;

use anstyle::{AnsiColor, Style};

use crate::classify::{Status, Verdict};
use crate::event::{End, Ending, Event, Wait};
use crate::human::{human, of_max, shell_line};

/// What the group's pace added to a wait, if anything.
/// The server's Retry-After, which the wait starts from, when it asked
/// for one: the ceiling then counts it too.
fn floor(after: Duration, then: &str) -> String {
    if after.is_zero() {
        String::new()
    } else {
        format!("Retry-After {}{then}", human(after))
    }
}

fn paced(d: Duration) -> String {
    if d.is_zero() {
        String::new()
    } else {
        format!("; {} of it for the group's pace", human(d))
    }
}

/// A wait after one the server asked for: `next in 32s: X-RateLimit-Reset
/// (epoch) 1764345600 + 1s 200ms full jitter over 2s`.
fn hinted(status: &Status, w: &Wait) -> String {
    let Some(floor) = status.floor() else {
        return String::new();
    };
    let spread = w.delay.saturating_sub(w.paced).saturating_sub(floor.wait);
    let how = if w.jitter == "none" {
        "(no jitter)".to_string()
    } else {
        // The ceiling counts the server's floor; the spread is what is
        // above it.
        let window = w.ceiling.saturating_sub(w.after);
        format!("{} jitter over {}", w.jitter, human(window))
    };
    format!(
        "next in {}: {} + {} {how}{}",
        human(w.delay),
        floor.describe(),
        human(spread),
        paced(w.paced)
    )
}

/// The text line for an event (without the newline); `elapsed` is the time
/// since retry started.
pub fn line(event: &Event<'_>, elapsed: Duration) -> String {
    match event {
        Event::Start {
            command,
            max,
            max_time,
            seed,
        } => {
            let limit = match (max, max_time) {
                (Some(1), _) => "1 attempt".to_string(),
                (Some(m), None) => format!("up to {m} attempts"),
                (Some(m), Some(t)) => format!("up to {m} attempts within {}", human(*t)),
                (None, Some(t)) => format!("until it succeeds, for up to {}", human(*t)),
                (None, None) => "until it succeeds".to_string(),
            };
            format!(
                "retry: running {} ({limit}, seed {seed})",
                shell_line(command)
            )
        }
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
                (Verdict::Success, Some(w)) => format!(
                    "retry: attempt {n} succeeded ({status}) after {d}; restarting in {}",
                    human(w.delay)
                ),
                (Verdict::Success, None) => {
                    format!("retry: attempt {n} succeeded ({status}) after {d}")
                }
                (_, Some(w)) if status.floor().is_some() => {
                    format!(
                        "retry: attempt {n} failed ({status}) after {d}; {}",
                        hinted(status, w)
                    )
                }
                (_, Some(w)) if w.jitter == "none" => format!(
                    "retry: attempt {n} failed ({status}) after {d}; next in {} ({}no jitter{})",
                    human(w.delay),
                    floor(w.after, ", "),
                    paced(w.paced)
                ),
                (_, Some(w)) => format!(
                    "retry: attempt {n} failed ({status}) after {d}; next in {} ({}{} jitter, ceiling {}{})",
                    human(w.delay),
                    floor(w.after, " + "),
                    w.jitter,
                    human(w.ceiling),
                    paced(w.paced)
                ),
                (_, None) => format!("retry: attempt {n} failed ({status}) after {d}"),
            }
        }
        Event::Done { ending, max } => {
            let Ending {
                end,
                attempts,
                exit_code,
                reason,
                ..
            } = ending;
            let plural = if *attempts == 1 { "" } else { "s" };
            match end {
                End::Success => format!(
                    "retry: succeeded on attempt {} after {}",
                    of_max(*attempts, *max),
                    human(elapsed)
                ),
                End::Interrupted => format!("retry: {reason}; exiting {exit_code}"),
                End::Refused if *attempts == 0 => format!("retry: {reason}; exiting {exit_code}"),
                _ => format!(
                    "retry: giving up after {attempts} attempt{plural} in {}: {reason}; exiting {exit_code}",
                    human(elapsed)
                ),
            }
        }
        Event::Reset { attempt, up, after } => format!(
            "retry: attempt {attempt} had been up {} (--reset-after {}): backoff reset to its first step",
            human(*up),
            human(*after)
        ),
        Event::Stagger { delay, spread } => format!(
            "retry: staggered start: attempt 1 in {} (--stagger {})",
            human(*delay),
            human(*spread)
        ),
        Event::Warning { message } => format!("retry: warning: {message}"),
        Event::Note { message } | Event::Error { message } => format!("retry: {message}"),
    }
}

pub const PREFIX: Style = Style::new().bold();
const GOOD: Style = AnsiColor::Green.on_default();
const BAD: Style = AnsiColor::Red.on_default().bold();
const WARN: Style = AnsiColor::Yellow.on_default();

pub fn paint_word(word: &str, style: Style) -> String {
    format!("{style}{word}{style:#}")
}

/// Colour a text line: its `retry:` prefix and the first outcome word. The
/// words are retry's own; nothing the child printed passes through here.
pub fn paint(line: &str, event: &Event<'_>) -> String {
    let word = match event {
        Event::Attempt {
            verdict: Verdict::Success,
            ..
        } => Some(("succeeded", GOOD)),
        Event::Attempt { .. } => Some(("failed", WARN)),
        Event::Done { ending, .. } => match ending.end {
            End::Success => Some(("succeeded", GOOD)),
            End::Interrupted => Some(("interrupted", BAD)),
            _ => Some(("giving up", BAD)),
        },
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::Status;
    use crate::event::Wait;

    #[test]
    fn failed_attempt_line() {
        let status = Status::Exited(1);
        let e = crate::event::sample_failed_attempt(&status);
        assert_eq!(
            line(&e, Duration::ZERO),
            "retry: attempt 2/5 failed (exit 1) after 312ms; next in 870ms (full jitter, ceiling 2s)"
        );
    }

    /// After a Retry-After, the line showed a wait longer than its own
    /// "ceiling" (`next in 2s 855ms (full jitter, ceiling 1s)`).
    #[test]
    fn a_wait_after_a_retry_after_is_within_its_ceiling_and_names_the_floor() {
        let status = Status::Exited(1);
        let wait = |jitter| Wait {
            delay: Duration::from_millis(2855),
            ceiling: Duration::from_secs(3),
            after: Duration::from_secs(2),
            jitter,
            paced: Duration::ZERO,
        };
        let e = |w| Event::Attempt {
            attempt: 1,
            max: Some(2),
            status: &status,
            verdict: Verdict::Retryable,
            duration: Duration::from_millis(5),
            next: Some(w),
        };
        assert_eq!(
            line(&e(wait("full")), Duration::ZERO),
            "retry: attempt 1/2 failed (exit 1) after 5ms; next in 2s 855ms (Retry-After 2s + full jitter, ceiling 3s)"
        );
        assert_eq!(
            line(&e(wait("none")), Duration::ZERO),
            "retry: attempt 1/2 failed (exit 1) after 5ms; next in 2s 855ms (Retry-After 2s, no jitter)"
        );
    }

    #[test]
    fn a_wait_after_the_servers_says_which_field_and_the_jitter_on_top() {
        let status = Status::Http {
            code: 403,
            hints: crate::ratelimit::Hints::floor(
                Duration::from_millis(300),
                crate::ratelimit::Field::XReset,
                crate::ratelimit::Reading::EpochSeconds,
                "1764345600".into(),
            ),
        };
        let e = crate::event::sample_failed_attempt(&status);
        assert_eq!(
            line(&e, Duration::ZERO),
            "retry: attempt 2/5 failed (HTTP 403, X-RateLimit-Reset 300ms) after 312ms; \
             next in 870ms: X-RateLimit-Reset (epoch) 1764345600 + 570ms full jitter over 2s"
        );
    }

    #[test]
    fn paced_wait_and_refusals() {
        let status = Status::Exited(1);
        let e = Event::Attempt {
            attempt: 1,
            max: Some(3),
            status: &status,
            verdict: Verdict::Retryable,
            duration: Duration::from_millis(5),
            next: Some(Wait {
                delay: Duration::from_millis(1200),
                ceiling: Duration::from_secs(1),
                after: Duration::ZERO,
                jitter: "full",
                paced: Duration::from_millis(700),
            }),
        };
        assert_eq!(
            line(&e, Duration::ZERO),
            "retry: attempt 1/3 failed (exit 1) after 5ms; next in 1s 200ms (full jitter, ceiling 1s; 700ms of it for the group's pace)"
        );
        let refused = |attempts| Ending {
            attempts,
            ..Ending::before_attempts(End::Refused, 75, "the circuit breaker is open")
        };
        let done = |attempts| {
            let ending = refused(attempts);
            line(
                &Event::Done {
                    ending: &ending,
                    max: Some(3),
                },
                Duration::ZERO,
            )
        };
        assert_eq!(done(0), "retry: the circuit breaker is open; exiting 75");
        assert!(done(2).starts_with("retry: giving up after 2 attempts"));
    }

    #[test]
    fn paint_colours_only_the_prefix_and_outcome_word() {
        let w = Event::Warning {
            message: "failed twice",
        };
        let l = line(&w, Duration::ZERO);
        // Only the first outcome word: "failed" in the message stays plain.
        assert_eq!(
            paint(&l, &w),
            format!(
                "{} {} failed twice",
                paint_word("retry:", PREFIX),
                paint_word("warning:", WARN)
            )
        );
    }
}
