use super::*;
use crate::trace::context::{SAMPLED, SpanId, TraceId};
use std::borrow::Cow;

const T0: Duration = Duration::from_secs(1_700_000_000);

fn at(ms: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + T0 + Duration::from_millis(ms)
}

fn ctx(span: u8) -> SpanContext {
    SpanContext {
        trace_id: TraceId([7; 16]),
        span_id: SpanId([span; 8]),
        flags: SAMPLED,
    }
}

fn recorder(target: Target) -> Recorder {
    let info = RunInfo {
        target,
        seed: 42,
        jitter: "full",
        max_attempts: Some(3),
    };
    Recorder::new(
        info,
        ctx(1),
        Some(SpanId([9; 8])),
        Some("a=1".into()),
        at(0),
    )
}

fn attr<'a>(span: &'a Span, key: &str) -> Option<&'a Value> {
    span.attrs.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
}

fn wait(ms: u64) -> Wait {
    Wait {
        delay: Duration::from_millis(ms),
        ceiling: Duration::from_secs(1),
        after: Duration::ZERO,
        jitter: "full",
        paced: Duration::ZERO,
    }
}

#[test]
fn a_run_that_gave_up_has_a_failed_span_per_attempt_and_the_waits_between() {
    let mut r = recorder(Target::Command {
        program: "/usr/bin/curl".into(),
        args: vec!["-u".into(), "***".into()],
    });
    r.attempt_started(1, ctx(2), at(10));
    // The loop's measure wins over the time the event came (after the
    // leftovers were stopped).
    r.attempt_ended(
        &Status::Exited(7),
        Verdict::Retryable,
        (at(23), Some(Duration::from_millis(10))),
        Some(&wait(500)),
    );
    r.attempt_started(2, ctx(3), at(520));
    r.attempt_ended(
        &Status::Exited(7),
        Verdict::Retryable,
        (at(530), None),
        None,
    );
    let ending = Ending {
        end: End::Exhausted,
        attempts: 2,
        exit_code: 7,
        reason: Cow::Borrowed("no attempts left"),
        last_status: Some(Status::Exited(7)),
        retries_refused: 0,
        waited: Duration::ZERO,
    };
    r.ended(&ending, at(531));
    let spans = r.finish(at(600));
    assert_eq!(spans.len(), 3);
    let (first, second, run) = (&spans[0], &spans[1], &spans[2]);
    // Parent links: incoming → run → attempts.
    assert_eq!(run.parent, Some(SpanId([9; 8])));
    assert_eq!(first.parent, Some(run.ctx.span_id));
    assert_eq!(second.parent, Some(run.ctx.span_id));
    assert_eq!(run.name, "retry curl");
    assert_eq!(first.name, "attempt 1");
    assert_eq!((first.start, first.end), (at(10), at(20)));
    // The wait is the gap between the attempts.
    assert_eq!(
        second.start.duration_since(first.end).unwrap(),
        Duration::from_millis(500)
    );
    assert_eq!(attr(first, "process.exit.code"), Some(&Value::Int(7)));
    assert_eq!(
        attr(first, "retry.classification"),
        Some(&Value::Str("retryable".into()))
    );
    assert_eq!(attr(first, "retry.wait"), Some(&Value::Double(0.5)));
    assert_eq!(attr(first, "retry.wait.ceiling"), Some(&Value::Double(1.0)));
    assert_eq!(attr(second, "retry.wait"), None);
    assert_eq!(attr(first, "error.type"), Some(&Value::Str("7".into())));
    assert!(matches!(first.status, SpanStatus::Error(_)));
    assert_eq!(
        attr(first, "process.command_args"),
        Some(&Value::StrList(vec![
            "/usr/bin/curl".into(),
            "-u".into(),
            "***".into()
        ]))
    );
    // The run: error, ended when the run did, one wait and the give-up.
    assert_eq!(run.status, SpanStatus::Error("no attempts left".into()));
    assert_eq!(run.end, at(531));
    assert_eq!(
        attr(run, "retry.end"),
        Some(&Value::Str("exhausted".into()))
    );
    assert_eq!(attr(run, "retry.seed"), Some(&Value::Int(42)));
    let names: Vec<_> = run.events.iter().map(|e| e.name).collect();
    assert_eq!(names, ["retry.wait", "retry.give_up"]);
    assert_eq!(run.events[0].at, at(20));
    assert_eq!(run.tracestate.as_deref(), Some("a=1"));
}

#[test]
fn a_success_is_no_error_and_http_attempts_count_their_resends() {
    let mut r = recorder(Target::Http {
        method: "GET".into(),
        url: "https://u:***@example.com/".into(),
    });
    r.attempt_started(1, ctx(2), at(0));
    r.attempt_ended(
        &Status::Http {
            code: 503,
            hints: crate::ratelimit::Hints::NONE,
        },
        Verdict::Retryable,
        (at(5), None),
        Some(&wait(10)),
    );
    r.attempt_started(2, ctx(3), at(15));
    r.attempt_ended(
        &Status::Http {
            code: 200,
            hints: crate::ratelimit::Hints::NONE,
        },
        Verdict::Success,
        (at(20), None),
        None,
    );
    r.ended(
        &Ending {
            end: End::Success,
            attempts: 2,
            exit_code: 0,
            reason: Cow::Borrowed(""),
            last_status: None,
            retries_refused: 0,
            waited: Duration::ZERO,
        },
        at(21),
    );
    let spans = r.finish(at(30));
    assert_eq!(spans[0].kind, Kind::Client);
    assert_eq!(attr(&spans[0], "http.request.resend_count"), None);
    assert_eq!(
        attr(&spans[1], "http.request.resend_count"),
        Some(&Value::Int(1))
    );
    assert_eq!(
        attr(&spans[1], "http.response.status_code"),
        Some(&Value::Int(200))
    );
    assert_eq!(spans[1].status, SpanStatus::Unset);
    assert_eq!(spans[2].status, SpanStatus::Unset);
    assert_eq!(spans[2].name, "retry GET");
    assert_eq!(
        attr(&spans[2], "url.full"),
        Some(&Value::Str("https://u:***@example.com/".into()))
    );
}

#[test]
fn an_attempt_cut_short_by_the_end_is_still_reported() {
    let mut r = recorder(Target::Tcp {
        targets: vec![("db".into(), 5432)],
    });
    r.attempt_started(1, ctx(2), at(0));
    let spans = r.finish(at(40));
    assert_eq!(spans.len(), 2);
    assert_eq!(spans[0].end, at(40));
    assert_eq!(spans[0].status, SpanStatus::Error("cut short".into()));
    assert_eq!(attr(&spans[0], "server.port"), Some(&Value::Int(5432)));
    // A run that never said how it ended ends now, without an error.
    assert_eq!(spans[1].end, at(40));
}

#[test]
fn attempts_taken_as_they_end_are_not_sent_again() {
    let mut r = recorder(Target::Tcp {
        targets: vec![("a".into(), 1), ("b".into(), 2)],
    });
    r.attempt_started(1, ctx(2), at(0));
    r.attempt_ended(&Status::Connected, Verdict::Success, (at(1), None), None);
    assert_eq!(r.take_attempts().len(), 1);
    assert!(r.take_attempts().is_empty());
    let spans = r.finish(at(2));
    assert_eq!(spans.len(), 1);
    assert_eq!(
        attr(&spans[0], "retry.tcp.targets"),
        Some(&Value::StrList(vec!["a:1".into(), "b:2".into()]))
    );
}

#[test]
fn the_runs_events_are_bounded_but_the_give_up_is_kept() {
    let mut r = recorder(Target::Tcp {
        targets: vec![("db".into(), 5432)],
    });
    for n in 1..=300 {
        r.attempt_started(n, ctx(2), at(u64::from(n) * 10));
        r.attempt_ended(
            &Status::Connected,
            Verdict::Retryable,
            (at(u64::from(n) * 10 + 1), None),
            Some(&wait(5)),
        );
        assert_eq!(r.take_attempts().len(), 1);
    }
    r.ended(
        &Ending {
            end: End::Interrupted,
            attempts: 300,
            exit_code: 143,
            reason: Cow::Borrowed("interrupted by TERM"),
            last_status: None,
            retries_refused: 0,
            waited: Duration::ZERO,
        },
        at(5000),
    );
    let spans = r.finish(at(6000));
    let run = spans.last().unwrap();
    assert_eq!(run.events.len(), MAX_EVENTS + 1);
    assert_eq!(run.events.last().unwrap().name, "retry.give_up");
}

#[test]
fn the_exit_status_has_the_last_word_on_how_the_run_ended() {
    let mut r = recorder(Target::Command {
        program: "sh".into(),
        args: vec![],
    });
    let ending = |end, exit_code| Ending {
        end,
        attempts: 1,
        exit_code,
        reason: Cow::Borrowed("cannot put the result in place"),
        last_status: None,
        retries_refused: 0,
        waited: Duration::ZERO,
    };
    r.ended(&ending(End::Success, 0), at(10));
    r.settled(&ending(End::Permanent, 23), at(20));
    let run = r.finish(at(30)).pop().unwrap();
    assert_eq!(run.end, at(10));
    assert_eq!(attr(&run, "retry.exit_code"), Some(&Value::Int(23)));
    assert!(matches!(run.status, SpanStatus::Error(_)));
    // A run that ended before the loop began.
    let mut early = recorder(Target::Command {
        program: "sh".into(),
        args: vec![],
    });
    early.settled(&ending(End::Refused, 125), at(5));
    let run = early.finish(at(30)).pop().unwrap();
    assert_eq!(run.end, at(5));
    assert_eq!(attr(&run, "retry.end"), Some(&Value::Str("refused".into())));
}
