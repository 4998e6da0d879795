//! Tracing at run time: the run's span and each attempt's, recorded from
//! the events the loop reports (through [`Traced`], a `Sink` in front of
//! the log), each attempt's context handed on (`attempt::carrier`), and
//! the spans exported over OTLP/HTTP as an end-of-run report ([`Export`]),
//! under the reports' shared bound. With `--forever`, each attempt's span
//! is sent as it ends.
//!
//! Span ids come from the OS's generator, drawn only when a run keeps a
//! trace: never from `--seed`'s, so runs with one seed have ids of their own.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use reqwest::Url;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};

use super::{Ctx, Output, ReportClock, RunSummary, Work, client};
use crate::attempt::carrier::{self, Carrier};
use crate::attempt::{Between, Failed};
use crate::event::{Event, Sink};
use crate::log::Logger;
use crate::signals::Signals;
use crate::trace::context::{Incoming, SpanContext};
use crate::trace::otlp;
use crate::trace::span::{Recorder, RunInfo, Value};

/// Tracing's options, validated by `policy`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TraceOptions {
    /// The context retry was handed.
    pub incoming: Incoming,
    /// `--trace-context on` (the default): attempts get a context of their own.
    pub hand_on: bool,
    pub export: Option<ExportOptions>,
    /// Lines to log as the run starts: values ignored.
    pub warnings: Vec<String>,
}

impl TraceOptions {
    /// Whether the run keeps a trace: it exports one, or hands on a child
    /// of the context it was given.
    pub fn active(&self) -> bool {
        self.export.is_some() || (self.hand_on && self.incoming.parent.is_some())
    }
}

/// Where and how the spans go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportOptions {
    /// The traces URL (`.../v1/traces`).
    pub url: Url,
    /// The URL as logs show it, masked.
    pub shown: String,
    /// `OTEL_EXPORTER_OTLP_HEADERS`: never logged.
    pub headers: Vec<(String, String)>,
    pub service: String,
    pub resource: Vec<(String, String)>,
    /// `OTEL_EXPORTER_OTLP_TIMEOUT`, within the reports' bound.
    pub timeout: Duration,
    /// `http/json` rather than `http/protobuf`.
    pub json: bool,
    /// `OTEL_EXPORTER_OTLP_CERTIFICATE` (or its `TRACES_` form): the
    /// variable and the CA file it names, trusted beside the system's.
    pub certificate: Option<(&'static str, std::path::PathBuf)>,
}

/// The run's trace as it goes, shared by the log's [`Traced`] sink, the
/// step between attempts and the export.
pub struct Tracer {
    recorder: Recorder,
    hand_on: bool,
    tracestate: Option<String>,
    baggage: Option<String>,
    /// `--forever`: each attempt's span is sent as it ends.
    stream: Option<Stream>,
}

/// Sending each attempt's span as it ends.
struct Stream {
    export: ExportOptions,
    client: reqwest::Client,
    /// The first failure's line, for the log (one warning a run).
    failed: Arc<Mutex<Option<String>>>,
    warned: bool,
}

/// Span ids from the OS (getrandom); should it ever fail, the clock and
/// pid mixed, which still differ between runs.
struct OsIds;

impl rand::TryRng for OsIds {
    type Error = std::convert::Infallible;
    fn try_next_u32(&mut self) -> Result<u32, Self::Error> {
        self.try_next_u64().map(|n| n as u32)
    }
    fn try_next_u64(&mut self) -> Result<u64, Self::Error> {
        let mut b = [0; 8];
        self.try_fill_bytes(&mut b)?;
        Ok(u64::from_le_bytes(b))
    }
    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Self::Error> {
        if rand::rngs::SysRng.try_fill_bytes(dst).is_err() {
            let nanos = SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            let mut x = nanos ^ (u128::from(std::process::id()) << 64) ^ (dst.as_ptr() as u128);
            for b in dst {
                x = x
                    .wrapping_mul(0x9E37_79B9_7F4A_7C15_F39C_C060_5CED_C835)
                    .wrapping_add(1);
                *b = (x >> 64) as u8;
            }
        }
        Ok(())
    }
}

impl Tracer {
    /// The run's tracer, when the options keep a trace.
    pub fn new(
        options: &TraceOptions,
        info: RunInfo,
        started: SystemTime,
    ) -> Option<Rc<RefCell<Tracer>>> {
        if !options.active() {
            return None;
        }
        let incoming = &options.incoming;
        let run = match incoming.parent {
            Some(parent) => parent.child(&mut OsIds),
            None => SpanContext::root(&mut OsIds),
        };
        let forever = info.max_attempts.is_none();
        let stream = match (&options.export, forever) {
            (Some(export), true) => export_client(export).ok().map(|client| Stream {
                export: export.clone(),
                client,
                failed: Arc::default(),
                warned: false,
            }),
            _ => None,
        };
        let recorder = Recorder::new(
            info,
            run,
            incoming.parent.map(|p| p.span_id),
            incoming.tracestate.clone(),
            started,
        );
        Some(Rc::new(RefCell::new(Tracer {
            recorder,
            hand_on: options.hand_on,
            tracestate: incoming.tracestate.clone(),
            baggage: incoming.baggage.clone(),
            stream,
        })))
    }

    /// The run's span.
    pub fn run_context(&self) -> SpanContext {
        self.recorder.run_context()
    }

    fn record(&mut self, event: &Event<'_>) {
        let now = SystemTime::now();
        match event {
            Event::AttemptStart { attempt, .. } => {
                let ctx = self.recorder.run_context().child(&mut OsIds);
                self.recorder.attempt_started(*attempt, ctx, now);
                if self.hand_on {
                    carrier::set(Some(Carrier {
                        traceparent: ctx.traceparent(),
                        tracestate: self.tracestate.clone(),
                        baggage: self.baggage.clone(),
                    }));
                }
            }
            Event::Attempt {
                status,
                verdict,
                next,
                duration,
                ..
            } => {
                self.recorder.attempt_ended(
                    status,
                    *verdict,
                    (now, Some(*duration)),
                    next.as_ref(),
                );
                self.send_attempts();
            }
            Event::Done { ending, .. } => self.recorder.ended(ending, now),
            _ => {}
        }
    }

    /// `--forever`: the attempts that ended go out now, in the background.
    fn send_attempts(&mut self) {
        let Some(stream) = &self.stream else {
            return;
        };
        let spans = self.recorder.take_attempts();
        if spans.is_empty() {
            return;
        }
        let request = request(&stream.client, &stream.export, body(&spans, &stream.export));
        let failed = stream.failed.clone();
        let limit = stream.export.timeout.min(super::REPORTS);
        tokio::spawn(async move {
            if let Err(why) = send(request, limit).await {
                let mut first = failed.lock().unwrap_or_else(|e| e.into_inner());
                first.get_or_insert(why);
            }
        });
    }

    /// A failure of the background sending to log, once a run.
    fn stream_failure(&mut self) -> Option<String> {
        let stream = self.stream.as_mut()?;
        if stream.warned {
            return None;
        }
        let why = stream
            .failed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()?;
        stream.warned = true;
        Some(format!(
            "spans not exported to {}: {why}",
            stream.export.shown
        ))
    }
}

/// The body of an export of `spans`, in the protocol asked for.
fn body(spans: &[crate::trace::span::Span], export: &ExportOptions) -> Vec<u8> {
    let origin = otlp::Origin {
        service: &export.service,
        resource: &export.resource,
    };
    if export.json {
        otlp::encode_json(spans, &origin)
    } else {
        otlp::encode(spans, &origin)
    }
}

/// The export's client, trusting the CA file of
/// `OTEL_EXPORTER_OTLP_CERTIFICATE` beside the system's roots; read when
/// the client is made, so a file that cannot be read is one warning and
/// no export, as an SDK has it.
fn export_client(export: &ExportOptions) -> Result<reqwest::Client, String> {
    let roots = match &export.certificate {
        None => Vec::new(),
        Some((name, file)) => crate::attempt::http::tls::certificates(file, name)?,
    };
    client::build_trusting(roots)
}

/// The POST of one export: protobuf, with `OTEL_EXPORTER_OTLP_HEADERS`.
fn request(
    client: &reqwest::Client,
    export: &ExportOptions,
    body: Vec<u8>,
) -> reqwest::RequestBuilder {
    let mut headers = HeaderMap::new();
    for (name, value) in &export.headers {
        if let (Ok(n), Ok(v)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            headers.append(n, v);
        }
    }
    let content_type = if export.json {
        "application/json"
    } else {
        "application/x-protobuf"
    };
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    client.post(export.url.clone()).headers(headers).body(body)
}

/// Sends one export within `limit`: `Err` is the reason, in words, free of
/// the URL and the headers.
async fn send(request: reqwest::RequestBuilder, limit: Duration) -> Result<(), String> {
    match client::exchange(request, limit).await {
        Ok(answer) if (200..300).contains(&answer.status) => Ok(()),
        Ok(answer) => Err(format!(
            "the receiver answered {} {}",
            answer.status,
            crate::human::escape_controls(answer.body_start.lines().next().unwrap_or(""))
        )),
        Err(failure) => Err(failure.to_string()),
    }
}

/// The log, with the run's trace recorded from what the loop reports.
pub struct Traced<'a> {
    pub log: &'a mut Logger,
    pub tracer: Option<Rc<RefCell<Tracer>>>,
}

impl Sink for Traced<'_> {
    type Countdown = <Logger as Sink>::Countdown;

    fn emit(&mut self, event: &Event<'_>) {
        if let Some(tracer) = &self.tracer {
            let mut tracer = tracer.borrow_mut();
            tracer.record(event);
            if let Some(line) = tracer.stream_failure() {
                self.log.emit(&Event::Warning { message: &line });
            }
        }
        self.log.emit(event);
    }

    fn countdown(&self, wait: Duration, next_attempt: u32, max: Option<u32>) -> Self::Countdown {
        self.log.countdown(wait, next_attempt, max)
    }
}

/// The step between attempts (`--on-retry`), with an event on the run's
/// span for each hook it ran.
pub struct TracedStep<B> {
    pub step: B,
    pub tracer: Option<Rc<RefCell<Tracer>>>,
}

impl<B: Between> Between for TracedStep<B> {
    async fn failed(
        &mut self,
        failed: &Failed,
        deadline: Option<Instant>,
        signals: &mut Signals,
    ) -> Option<Result<(), String>> {
        let result = self.step.failed(failed, deadline, signals).await;
        if let (Some(tracer), Some(r)) = (&self.tracer, &result) {
            let mut attrs = vec![
                ("retry.hook", Value::Str("--on-retry".into())),
                ("retry.attempt", Value::Int(i64::from(failed.attempt))),
            ];
            if let Err(why) = r {
                attrs.push(("retry.hook.error", Value::Str(why.clone())));
            }
            tracer
                .borrow_mut()
                .recorder
                .event("retry.hook", SystemTime::now(), attrs);
        }
        result
    }
}

/// The export at the end of the run.
pub struct Export {
    options: ExportOptions,
    tracer: Rc<RefCell<Tracer>>,
    clock: ReportClock,
}

impl Export {
    pub fn new(options: ExportOptions, tracer: Rc<RefCell<Tracer>>, clock: ReportClock) -> Export {
        Export {
            options,
            tracer,
            clock,
        }
    }
}

impl Output for Export {
    fn finished<'a>(&'a mut self, summary: &'a RunSummary, ctx: &'a mut Ctx<'_>) -> Work<'a> {
        Box::pin(async move {
            let spans = {
                let recorder = &mut self.tracer.borrow_mut().recorder;
                let end = summary.started_at + summary.duration;
                recorder.settled(&summary.ending, end);
                recorder.finish(SystemTime::now())
            };
            let shown = self.options.shown.clone();
            let fail = |why: String| format!("spans not exported to {shown}: {why}");
            let left = self.clock.left().unwrap_or(super::REPORTS);
            let limit = self.options.timeout.min(left);
            if limit.is_zero() || ctx.cut.is_some() {
                let why = fail(client::cut_short(ctx));
                ctx.log.emit(&Event::Warning { message: &why });
                return;
            }
            let client = match export_client(&self.options) {
                Ok(c) => c,
                Err(why) => {
                    ctx.log.emit(&Event::Warning {
                        message: &fail(why),
                    });
                    return;
                }
            };
            let body = body(&spans, &self.options);
            let size = body.len();
            let request = request(&client, &self.options, body);
            let line = match client::unless_cut(send(request, limit), ctx).await {
                None => Err(fail(client::cut_short(ctx))),
                Some(Ok(())) => Ok(format!(
                    "exported {} spans ({size} bytes) to {shown}",
                    spans.len()
                )),
                Some(Err(why)) => Err(fail(why)),
            };
            match line {
                Ok(note) => ctx.log.emit(&Event::Note { message: &note }),
                Err(warning) => ctx.log.emit(&Event::Warning { message: &warning }),
            }
        })
    }
}
