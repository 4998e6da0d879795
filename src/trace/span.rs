//! A run's spans as plain data: one for the run, one per attempt, named
//! and described by OpenTelemetry's semantic conventions where one fits
//! (`process.*`, `http.*`, `url.full`, `server.*`) and by retry's own
//! `retry.*` attributes otherwise. The waits are the gaps between attempt
//! spans, and an event on the run's span each.
//!
//! Pure: the [`Recorder`] is told what happened and when (wall-clock times
//! passed in) and which span ids to use.

use std::time::{Duration, SystemTime};

use super::context::{SpanContext, SpanId};
use crate::classify::{Status, Verdict};
use crate::event::{End, Ending, Wait};

/// An attribute's value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Str(String),
    Int(i64),
    Double(f64),
    StrList(Vec<String>),
}

pub type Attrs = Vec<(&'static str, Value)>;

/// The most events the run's span keeps, as the SDKs' default span limit.
pub const MAX_EVENTS: usize = 128;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Internal,
    Client,
}

/// A span's status: unset, or an error with its description.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SpanStatus {
    Unset,
    Error(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct SpanEvent {
    pub name: &'static str,
    pub at: SystemTime,
    pub attrs: Attrs,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    pub ctx: SpanContext,
    pub parent: Option<SpanId>,
    /// The `tracestate` the span was started with.
    pub tracestate: Option<String>,
    pub name: String,
    pub kind: Kind,
    pub start: SystemTime,
    pub end: SystemTime,
    pub attrs: Attrs,
    pub events: Vec<SpanEvent>,
    pub status: SpanStatus,
}

/// What is retried, as the attributes name it (secrets already masked).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Command {
        program: String,
        args: Vec<String>,
    },
    Http {
        method: String,
        url: String,
    },
    /// Port 0: a unix socket (`unix:PATH`).
    Tcp {
        targets: Vec<(String, u16)>,
    },
    Grpc {
        host: String,
        port: u16,
        service: String,
    },
    File {
        paths: Vec<String>,
    },
}

impl Target {
    /// The run span's name.
    fn run_name(&self) -> String {
        match self {
            Target::Command { program, .. } => {
                let base = program.rsplit('/').next().unwrap_or(program);
                format!("retry {base}")
            }
            Target::Http { method, .. } => format!("retry {method}"),
            Target::Tcp { .. } => "retry tcp".to_string(),
            Target::Grpc { .. } => "retry grpc".to_string(),
            Target::File { .. } => "retry file".to_string(),
        }
    }

    fn attrs(&self, out: &mut Attrs) {
        match self {
            Target::Command { program, args } => {
                out.push(("process.command", Value::Str(program.clone())));
                let mut all = vec![program.clone()];
                all.extend(args.iter().cloned());
                out.push(("process.command_args", Value::StrList(all)));
            }
            Target::Http { method, url } => {
                out.push(("http.request.method", Value::Str(method.clone())));
                out.push(("url.full", Value::Str(url.clone())));
            }
            Target::Tcp { targets } => {
                if let [(host, port)] = targets.as_slice() {
                    out.push(("server.address", Value::Str(host.clone())));
                    if *port != 0 {
                        out.push(("server.port", Value::Int(i64::from(*port))));
                    }
                } else {
                    let all = targets
                        .iter()
                        .map(|(h, p)| match p {
                            0 => h.clone(),
                            p => format!("{h}:{p}"),
                        })
                        .collect();
                    out.push(("retry.tcp.targets", Value::StrList(all)));
                }
            }
            Target::Grpc {
                host,
                port,
                service,
            } => {
                out.push(("rpc.system", Value::Str("grpc".into())));
                out.push(("rpc.service", Value::Str("grpc.health.v1.Health".into())));
                out.push(("rpc.method", Value::Str("Check".into())));
                out.push(("server.address", Value::Str(host.clone())));
                out.push(("server.port", Value::Int(i64::from(*port))));
                out.push(("retry.grpc.service", Value::Str(service.clone())));
            }
            Target::File { paths } => {
                out.push(("retry.file.paths", Value::StrList(paths.clone())));
            }
        }
    }
}

/// What the run's span says of the run besides its target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunInfo {
    pub target: Target,
    pub seed: u64,
    /// The jitter kind (`full`, `equal`, ...).
    pub jitter: &'static str,
    pub max_attempts: Option<u32>,
}

/// The spans of one run, as it goes.
#[derive(Debug)]
pub struct Recorder {
    info: RunInfo,
    /// The run's span; `parent` is the incoming context's span.
    run: SpanContext,
    parent: Option<SpanId>,
    tracestate: Option<String>,
    started: SystemTime,
    events: Vec<SpanEvent>,
    /// The attempt running, not yet ended.
    open: Option<Span>,
    /// Attempts that ended and were not taken yet.
    done: Vec<Span>,
    ended: Option<(SystemTime, Ending)>,
}

fn secs(d: Duration) -> Value {
    Value::Double(d.as_secs_f64())
}

impl Recorder {
    pub fn new(
        info: RunInfo,
        run: SpanContext,
        parent: Option<SpanId>,
        tracestate: Option<String>,
        started: SystemTime,
    ) -> Recorder {
        Recorder {
            info,
            run,
            parent,
            tracestate,
            started,
            events: Vec::new(),
            open: None,
            done: Vec::new(),
            ended: None,
        }
    }

    pub fn run_context(&self) -> SpanContext {
        self.run
    }

    /// Attempt `number` started at `at` as span `ctx` (a child of the run's).
    pub fn attempt_started(&mut self, number: u32, ctx: SpanContext, at: SystemTime) {
        let mut attrs = vec![("retry.attempt", Value::Int(i64::from(number)))];
        self.info.target.attrs(&mut attrs);
        if let Target::Http { .. } = self.info.target
            && number > 1
        {
            attrs.push((
                "http.request.resend_count",
                Value::Int(i64::from(number - 1)),
            ));
        }
        let kind = match self.info.target {
            Target::Command { .. } => Kind::Internal,
            Target::Http { .. } | Target::Tcp { .. } | Target::Grpc { .. } => Kind::Client,
            Target::File { .. } => Kind::Internal,
        };
        self.open = Some(Span {
            ctx,
            parent: Some(self.run.span_id),
            tracestate: self.tracestate.clone(),
            name: format!("attempt {number}"),
            kind,
            start: at,
            end: at,
            attrs,
            events: Vec::new(),
            status: SpanStatus::Unset,
        });
    }

    /// The attempt running ended at `at`, after running `ran` by the loop's
    /// measure (which the log shows; `at` may be later, by the cleanup of
    /// what the attempt left behind), judged `verdict`; `next` is the wait
    /// before the next one, if there is one.
    pub fn attempt_ended(
        &mut self,
        status: &Status,
        verdict: Verdict,
        (at, ran): (SystemTime, Option<Duration>),
        next: Option<&Wait>,
    ) {
        let Some(mut span) = self.open.take() else {
            return;
        };
        span.end = match ran {
            Some(ran) => span.start + ran,
            None => at.max(span.start),
        };
        let classification = match verdict {
            Verdict::Success => "success",
            Verdict::Retryable => "retryable",
            Verdict::Permanent => "permanent",
        };
        span.attrs
            .push(("retry.classification", Value::Str(classification.into())));
        match status {
            Status::Exited(code) => span
                .attrs
                .push(("process.exit.code", Value::Int(i64::from(*code)))),
            Status::Http { code, .. } => span
                .attrs
                .push(("http.response.status_code", Value::Int(i64::from(*code)))),
            _ => {}
        }
        if verdict != Verdict::Success {
            span.attrs
                .push(("error.type", Value::Str(error_type(status))));
            span.status =
                SpanStatus::Error(crate::human::escape_controls(&status.to_string()).into_owned());
        }
        if let Some(wait) = next {
            span.attrs.push(("retry.wait", secs(wait.delay)));
            span.attrs.push(("retry.wait.ceiling", secs(wait.ceiling)));
            span.attrs
                .push(("retry.jitter", Value::Str(wait.jitter.to_string())));
            let mut attrs = vec![
                ("retry.attempt", Value::Int(span_number(&span))),
                ("retry.wait", secs(wait.delay)),
                ("retry.wait.ceiling", secs(wait.ceiling)),
            ];
            if !wait.paced.is_zero() {
                attrs.push(("retry.wait.paced", secs(wait.paced)));
            }
            self.add_event(SpanEvent {
                name: "retry.wait",
                at: span.end,
                attrs,
            });
        }
        self.done.push(span);
    }

    /// Something between attempts (a hook) happened: an event on the run.
    pub fn event(&mut self, name: &'static str, at: SystemTime, attrs: Attrs) {
        self.add_event(SpanEvent { name, at, attrs });
    }

    /// The run's events are kept up to [`MAX_EVENTS`] (a `--forever` run
    /// must not grow without end); the give-up is added beyond it.
    fn add_event(&mut self, event: SpanEvent) {
        if self.events.len() < MAX_EVENTS {
            self.events.push(event);
        }
    }

    /// The run ended at `at` (the loop's last word; the first heard wins).
    pub fn ended(&mut self, ending: &Ending, at: SystemTime) {
        if self.ended.is_none() {
            self.ended = Some((at, ending.clone()));
        }
    }

    /// How the run ended, as the exit status has it: after the loop, a
    /// result that could not be put in place may turn a success into a
    /// failure, and a run may end before the loop starts. The time the loop
    /// ended stays, when it did.
    pub fn settled(&mut self, ending: &Ending, at: SystemTime) {
        let at = self.ended.as_ref().map_or(at, |(t, _)| *t);
        self.ended = Some((at, ending.clone()));
    }

    /// The attempts that ended since the last call.
    pub fn take_attempts(&mut self) -> Vec<Span> {
        std::mem::take(&mut self.done)
    }

    /// Every span not taken yet: the attempts, the one still open (cut
    /// short at `now`), and the run's, once it ended (or at `now`).
    pub fn finish(&mut self, now: SystemTime) -> Vec<Span> {
        let mut spans = self.take_attempts();
        if let Some(mut open) = self.open.take() {
            open.end = now.max(open.start);
            open.status = SpanStatus::Error("cut short".into());
            spans.push(open);
        }
        spans.push(self.run_span(now));
        spans
    }

    fn run_span(&mut self, now: SystemTime) -> Span {
        let mut attrs: Attrs = Vec::new();
        self.info.target.attrs(&mut attrs);
        attrs.push((
            "retry.seed",
            Value::Int(i64::try_from(self.info.seed).unwrap_or(i64::MAX)),
        ));
        attrs.push(("retry.jitter", Value::Str(self.info.jitter.to_string())));
        if let Some(max) = self.info.max_attempts {
            attrs.push(("retry.max_attempts", Value::Int(i64::from(max))));
        }
        let mut status = SpanStatus::Unset;
        let end = match &self.ended {
            Some((at, ending)) => {
                attrs.push(("retry.attempts", Value::Int(i64::from(ending.attempts))));
                attrs.push(("retry.end", Value::Str(ending.end.as_str().into())));
                attrs.push(("retry.exit_code", Value::Int(i64::from(ending.exit_code))));
                if ending.end != End::Success {
                    let reason = crate::human::escape_controls(&ending.reason).into_owned();
                    self.events.push(SpanEvent {
                        name: "retry.give_up",
                        at: *at,
                        attrs: vec![
                            ("retry.end", Value::Str(ending.end.as_str().into())),
                            ("retry.reason", Value::Str(reason.clone())),
                        ],
                    });
                    status = SpanStatus::Error(reason);
                }
                *at
            }
            None => now,
        };
        Span {
            ctx: self.run,
            parent: self.parent,
            tracestate: self.tracestate.clone(),
            name: self.info.target.run_name(),
            kind: Kind::Internal,
            start: self.started,
            end: end.max(self.started),
            attrs,
            events: std::mem::take(&mut self.events),
            status,
        }
    }
}

fn span_number(span: &Span) -> i64 {
    match span.attrs.first() {
        Some(("retry.attempt", Value::Int(n))) => *n,
        _ => 0,
    }
}

/// `error.type`: the exit code, the HTTP status, or the kind of failure.
fn error_type(status: &Status) -> String {
    match status {
        Status::Exited(code) => code.to_string(),
        Status::Http { code, .. } => code.to_string(),
        Status::Signaled(sig) | Status::Interrupted(sig) => crate::classify::signal_name(*sig),
        Status::TimedOut { .. } => "timeout".into(),
        Status::NotFound(_) => "not_found".into(),
        Status::NotExecutable(_) => "not_executable".into(),
        Status::CannotStart(_) => "cannot_start".into(),
        Status::Net { .. } => "network".into(),
        Status::Connected => "connected".into(),
        Status::Undelivered(_) => "undelivered".into(),
        Status::Path { .. } => "path".into(),
        Status::Grpc { answer, .. } => answer.to_string(),
    }
}

#[cfg(test)]
#[path = "span/tests.rs"]
mod tests;
