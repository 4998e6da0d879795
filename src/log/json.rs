//! The JSON log: one object per line, tagged by `event`.
//!
//! Field names are a documented, stable interface. Every line also carries
//! `time` (RFC 3339, UTC), `elapsed_ms` since retry started, `run` (this
//! invocation's id) and `pid`, so runs sharing a file can be told apart.

use std::time::{Duration, SystemTime};

use serde::Serialize;

use crate::classify::{NetFailure, Status, Verdict, signal_name};
use crate::event::{Event, Wait};

/// Who wrote a line: the same for every line of one invocation.
#[derive(Debug, Clone)]
pub struct Origin {
    pub run: String,
    pub pid: u32,
}

#[derive(Serialize)]
struct Line<'a> {
    #[serde(flatten)]
    body: Body<'a>,
    time: String,
    elapsed_ms: f64,
    run: &'a str,
    pid: u32,
}

#[derive(Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
enum Body<'a> {
    Start {
        command: Vec<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        max: Option<u32>,
        #[serde(skip_serializing_if = "Option::is_none")]
        max_time_ms: Option<f64>,
        seed: u64,
    },
    AttemptStart {
        attempt: u32,
        #[serde(skip_serializing_if = "Option::is_none")]
        max: Option<u32>,
    },
    Attempt {
        attempt: u32,
        #[serde(skip_serializing_if = "Option::is_none")]
        max: Option<u32>,
        outcome: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        exit_code: Option<i32>,
        #[serde(skip_serializing_if = "Option::is_none")]
        signal: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        http_status: Option<u16>,
        #[serde(skip_serializing_if = "Option::is_none")]
        retry_after_ms: Option<f64>,
        /// The field the wait the server asked for came from, how it was
        /// read, and its value.
        #[serde(skip_serializing_if = "Option::is_none")]
        hint_source: Option<&'static str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        hint_reading: Option<&'static str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        hint_value: Option<&'a str>,
        /// Rate-limit fields present but not used, each with why.
        #[serde(skip_serializing_if = "<[String]>::is_empty")]
        hints_ignored: &'a [String],
        duration_ms: f64,
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    Sleep {
        attempt: u32,
        #[serde(skip_serializing_if = "Option::is_none")]
        max: Option<u32>,
        delay_ms: f64,
        /// The part of the delay that is the retry's own backoff.
        backoff_ms: f64,
        /// The part spent waiting for the group's pace slot.
        pace_ms: f64,
        ceiling_ms: f64,
        jitter: &'static str,
        /// After a wait the server asked for: that wait, and the jitter's
        /// spread on top of it (`backoff_ms` is their sum).
        #[serde(skip_serializing_if = "Option::is_none")]
        hint_ms: Option<f64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        spread_ms: Option<f64>,
    },
    Reset {
        attempt: u32,
        up_ms: f64,
        reset_after_ms: f64,
    },
    Stagger {
        delay_ms: f64,
        stagger_ms: f64,
    },
    Done {
        outcome: &'static str,
        attempts: u32,
        #[serde(skip_serializing_if = "Option::is_none")]
        max: Option<u32>,
        exit_code: u8,
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<&'a str>,
    },
    Warning {
        message: &'a str,
    },
    Note {
        message: &'a str,
    },
    Error {
        message: &'a str,
    },
}

fn millis(d: Duration) -> f64 {
    // Microsecond resolution is plenty and keeps the numbers short.
    (d.as_micros() as f64) / 1000.0
}

/// The outcome word of an attempt; the same words in command and HTTP mode.
pub fn outcome(status: &Status, verdict: Verdict) -> &'static str {
    if status.stopped_by_deadline() {
        return "deadline";
    }
    match (status, verdict) {
        (
            Status::TimedOut { .. }
            | Status::Net {
                failure:
                    NetFailure::TimedOut(_)
                    | NetFailure::TimedOutAfterOutput(_)
                    | NetFailure::ConnectTimeout,
                ..
            },
            _,
        ) => "timeout",
        (Status::Interrupted(_), _) => "interrupted",
        (_, Verdict::Success) => "success",
        (_, Verdict::Retryable) => "retryable",
        (_, Verdict::Permanent) => "permanent",
    }
}

fn bodies<'a>(event: &'a Event<'a>) -> Vec<Body<'a>> {
    match event {
        Event::Start {
            command,
            max,
            max_time,
            seed,
        } => vec![Body::Start {
            command: command
                .iter()
                .map(|w| w.to_string_lossy().into_owned())
                .collect(),
            max: *max,
            max_time_ms: max_time.map(millis),
            seed: *seed,
        }],
        Event::AttemptStart { attempt, max } => vec![Body::AttemptStart {
            attempt: *attempt,
            max: *max,
        }],
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
                Status::Signaled(s) | Status::Interrupted(s) => (None, Some(signal_name(*s))),
                _ => (None, None),
            };
            let mut out = vec![Body::Attempt {
                attempt: *attempt,
                max: *max,
                outcome: outcome(status, *verdict),
                exit_code,
                signal,
                http_status: match status {
                    Status::Http { code, .. } => Some(*code),
                    _ => None,
                },
                retry_after_ms: status.retry_after().map(millis),
                hint_source: status.floor().map(|f| f.field.name()),
                hint_reading: status.floor().map(|f| f.reading.name()),
                hint_value: status.floor().map(|f| f.value.as_str()),
                hints_ignored: match status {
                    Status::Http { hints, .. } => &hints.ignored,
                    _ => &[],
                },
                duration_ms: millis(*duration),
                reason: (*verdict != Verdict::Success).then(|| status.to_string()),
            }];
            // The ceiling counts the server's Retry-After floor, as the
            // attempt event's retry_after_ms gives it.
            if let Some(Wait {
                delay,
                ceiling,
                jitter,
                paced,
                ..
            }) = next
            {
                let own = delay.saturating_sub(*paced);
                let hint = status.retry_after();
                out.push(Body::Sleep {
                    attempt: attempt.saturating_add(1),
                    max: *max,
                    delay_ms: millis(*delay),
                    backoff_ms: millis(own),
                    pace_ms: millis(*paced),
                    ceiling_ms: millis(*ceiling),
                    jitter,
                    hint_ms: hint.map(millis),
                    spread_ms: hint.map(|h| millis(own.saturating_sub(h))),
                });
            }
            out
        }
        Event::Done { ending, max } => vec![Body::Done {
            outcome: ending.end.as_str(),
            attempts: ending.attempts,
            max: *max,
            exit_code: ending.exit_code,
            reason: (!ending.reason.is_empty()).then_some(&*ending.reason),
        }],
        Event::Reset { attempt, up, after } => vec![Body::Reset {
            attempt: *attempt,
            up_ms: millis(*up),
            reset_after_ms: millis(*after),
        }],
        Event::Stagger { delay, spread } => vec![Body::Stagger {
            delay_ms: millis(*delay),
            stagger_ms: millis(*spread),
        }],
        Event::Warning { message } => vec![Body::Warning { message }],
        Event::Note { message } => vec![Body::Note { message }],
        Event::Error { message } => vec![Body::Error { message }],
    }
}

/// The JSON lines for an event, each ending in a newline (an attempt that
/// is followed by a wait gives two: `attempt` and `sleep`).
pub fn lines(event: &Event<'_>, elapsed: Duration, origin: &Origin) -> String {
    let time = humantime::format_rfc3339_millis(SystemTime::now()).to_string();
    let mut out = String::new();
    for body in bodies(event) {
        let line = Line {
            body,
            time: time.clone(),
            elapsed_ms: millis(elapsed),
            run: &origin.run,
            pid: origin.pid,
        };
        if let Ok(s) = serde_json::to_string(&line) {
            out.push_str(&s);
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::Limit;

    fn parse(s: &str) -> Vec<serde_json::Value> {
        s.lines()
            .map(|l| serde_json::from_str(l).expect("json"))
            .collect()
    }

    fn origin() -> Origin {
        Origin {
            run: "abcd1234".into(),
            pid: 42,
        }
    }

    #[test]
    fn attempt_and_sleep_lines() {
        let status = Status::Exited(1);
        let e = crate::event::sample_failed_attempt(&status);
        let v = parse(&lines(&e, Duration::from_millis(1), &origin()));
        assert_eq!(v.len(), 2);
        assert_eq!(v[0]["event"], "attempt");
        assert_eq!(v[0]["outcome"], "retryable");
        assert_eq!(v[0]["exit_code"], 1);
        assert_eq!(v[0]["duration_ms"], 312.4);
        assert_eq!(v[1]["event"], "sleep");
        assert_eq!(v[1]["attempt"], 3);
        assert_eq!(v[1]["delay_ms"], 870.0);
        assert_eq!(v[1]["ceiling_ms"], 2000.0);
        assert_eq!(
            (v[1]["backoff_ms"].as_f64(), v[1]["pace_ms"].as_f64()),
            (Some(870.0), Some(0.0))
        );
        for line in &v {
            assert_eq!(line["run"], "abcd1234");
            assert_eq!(line["pid"], 42);
            let time = line["time"].as_str().expect("time");
            assert!(humantime::parse_rfc3339(time).is_ok(), "{time}");
        }
    }

    #[test]
    fn a_servers_wait_is_named_and_split_from_the_spread() {
        let mut hints = crate::ratelimit::Hints::floor(
            Duration::from_millis(300),
            crate::ratelimit::Field::XResetAfter,
            crate::ratelimit::Reading::Seconds,
            "0.3".into(),
        );
        hints.ignored = vec!["ignored Retry-After: \"soon\" is neither".into()];
        let status = Status::Http { code: 429, hints };
        let e = crate::event::sample_failed_attempt(&status);
        let v = parse(&lines(&e, Duration::from_millis(1), &origin()));
        assert_eq!(v[0]["retry_after_ms"], 300.0);
        assert_eq!(v[0]["hint_source"], "X-RateLimit-Reset-After");
        assert_eq!(v[0]["hint_reading"], "seconds");
        assert_eq!(v[0]["hint_value"], "0.3");
        assert_eq!(
            v[0]["hints_ignored"][0],
            "ignored Retry-After: \"soon\" is neither"
        );
        assert_eq!(v[1]["hint_ms"], 300.0);
        assert_eq!(v[1]["spread_ms"], 570.0);
        // Without one, none of these fields.
        let plain = Status::Exited(1);
        let e = crate::event::sample_failed_attempt(&plain);
        let v = parse(&lines(&e, Duration::from_millis(1), &origin()));
        for key in ["hint_source", "hints_ignored"] {
            assert!(v[0].get(key).is_none(), "{key}");
        }
        assert!(v[1].get("spread_ms").is_none());
    }

    #[test]
    fn deadline_is_one_word_in_both_modes() {
        let cmd = Status::TimedOut {
            limit: Limit::Deadline,
            after: Duration::from_secs(1),
        };
        let http = Status::Net {
            failure: NetFailure::TimedOut(Limit::Deadline),
            detail: String::new(),
        };
        assert_eq!(outcome(&cmd, Verdict::Permanent), "deadline");
        assert_eq!(outcome(&http, Verdict::Permanent), "deadline");
        let per_attempt = Status::TimedOut {
            limit: Limit::Attempt,
            after: Duration::from_secs(1),
        };
        assert_eq!(outcome(&per_attempt, Verdict::Retryable), "timeout");
    }

    #[test]
    fn errors_are_json_too() {
        let v = parse(&lines(
            &Event::Error { message: "boom" },
            Duration::ZERO,
            &origin(),
        ));
        assert_eq!(v[0]["event"], "error");
        assert_eq!(v[0]["message"], "boom");
    }
}
