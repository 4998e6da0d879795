//! What happens when a run ends, besides its exit status.
//!
//! `drive` builds one [`RunSummary`] when a run has ended, however it
//! ended (success, give-up, a permanent failure, the deadline, a refusal by
//! the breaker or the budget, a signal), and hands it to each [`Output`]
//! the flags asked for. The loop never learns which outputs exist; a run
//! that asked for none pays nothing. Each output is a small module of its
//! own, as each export format is in a benchmark tool: `held` (the last
//! attempt's held output, `--hold-output` and `--last-stdout`), `textfile` and `push` (Prometheus metrics,
//! rendered by `metrics`), `ping` (a heartbeat monitor), `trace` (the
//! run's spans over OTLP/HTTP), over the HTTP client of `client`, `report`
//! (`--report` and GitHub Actions step outputs) and `give_up` (the
//! `--on-give-up` hook).
//!
//! The reports over the network (the push, the pings and the spans) share one bound,
//! [`REPORTS`] from the end of the run, [`REPORTS_AFTER_SIGNAL`] when a
//! signal ended it: a supervisor that stops retry (`docker stop` sends TERM
//! and KILL 10 s later) still hears the final ping, and a monitor that
//! hangs never holds the exit longer. [`ReportClock`] carries it to them.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::time::{Duration, Instant, SystemTime};

use crate::attempt::hold::Held;
use crate::attempt::hook::Hook;
use nix::sys::signal::Signal;

use crate::event::{End, Ending};
use crate::log::Logger;
use crate::signals::Signals;

mod client;
mod give_up;
mod held;
pub mod metrics;
pub mod ping;
mod push;
pub mod report;
mod textfile;
pub mod trace;

/// What the end-of-run outputs know of a run: how it ended (the same
/// account the log's `done` line and the exit status come from) and when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunSummary {
    /// Wall-clock time when retry started the run.
    pub started_at: SystemTime,
    /// From the start of the run to its end (the outputs' own time excluded).
    pub duration: Duration,
    pub ending: Ending,
    /// The jitter's seed (`--seed`, or drawn for this run).
    pub seed: u64,
}

/// The environment variables of the reports, which no child gets (the
/// command, the hooks): the heartbeat check and the gateway's job belong to
/// this run (a retry inside either must not report to them too), and they
/// may hold a secret.
pub const REPORTS_ENV: [&str; 4] = [
    "RETRY_PING",
    "RETRY_PING_FILE",
    "RETRY_METRICS_PUSH",
    "RETRY_METRICS_PUSH_PASSWORD_FILE",
];

/// How long the reports over the network may take in all, from the end
/// of the run: well inside the 10 s a supervisor such as `docker stop`
/// gives between TERM and KILL.
pub const REPORTS: Duration = Duration::from_secs(8);
/// The same when a signal ended the run: the command's own exit took part
/// of the supervisor's grace already.
pub const REPORTS_AFTER_SIGNAL: Duration = Duration::from_secs(4);

/// When the reports over the network must be done, shared by the outputs
/// that send them; set once the run has ended (until then, unbounded: the
/// start ping runs under its own limits).
#[derive(Debug, Clone, Default)]
pub struct ReportClock(Rc<Cell<Option<Instant>>>);

impl ReportClock {
    /// Starts the bound for a run that ended as `end`.
    fn start(&self, end: End) {
        let bound = if end == End::Interrupted {
            REPORTS_AFTER_SIGNAL
        } else {
            REPORTS
        };
        self.0.set(Instant::now().checked_add(bound));
    }

    /// The time left (zero once it is over); `None` before the run ended.
    pub fn left(&self) -> Option<Duration> {
        self.0
            .get()
            .map(|until| until.saturating_duration_since(Instant::now()))
    }
}

/// What an output may use while it does its work: the log, the signals (an
/// output that waits gives way to them, as every wait does) and the run's
/// deadline.
pub struct Ctx<'a> {
    pub log: &'a mut Logger,
    pub signals: &'a mut Signals,
    /// `--max-time`'s deadline, if any.
    pub deadline: Option<Instant>,
    /// A terminating signal that arrived while the outputs worked: the
    /// outputs still to come skip their waits.
    pub cut: Option<Signal>,
}

/// An output's work, on the run's single-threaded runtime.
pub type Work<'a> = Pin<Box<dyn Future<Output = ()> + 'a>>;

/// One end-of-run output.
pub trait Output {
    /// Before the first attempt starts.
    fn started<'a>(&'a mut self, _ctx: &'a mut Ctx<'_>) -> Work<'a> {
        Box::pin(async {})
    }

    /// Once, when the run has ended.
    fn finished<'a>(&'a mut self, summary: &'a RunSummary, ctx: &'a mut Ctx<'_>) -> Work<'a>;
}

/// The end-of-run options, validated by `policy`. Empty: no output.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FinishOptions {
    /// `--hold-output`, `--last-stdout`: where the attempts hold their output.
    pub hold: Option<Held>,
    /// `--on-give-up`.
    pub on_give_up: Option<Hook>,
    /// `--metrics-file`, `--metrics-push`.
    pub metrics: Option<metrics::MetricsOptions>,
    /// `--ping`.
    pub ping: Option<ping::PingOptions>,
    /// `--report`, GitHub Actions step outputs.
    pub report: report::ReportOptions,

    /// The trace context and the export of spans.
    pub trace: trace::TraceOptions,
}

/// What the outputs need checked before anything runs (the metrics file's
/// directory); the error is the usage-error line.
pub fn check(options: &FinishOptions) -> Result<(), String> {
    if let Some(path) = options.metrics.as_ref().and_then(|m| m.file.as_deref()) {
        textfile::check(path)?;
    }
    match options.report.file.as_deref() {
        Some(path) => report::check(path),
        None => Ok(()),
    }
}

/// The outputs of one run, in the order they run.
#[derive(Default)]
pub struct Outputs {
    list: Vec<Box<dyn Output>>,
    clock: ReportClock,
}

impl Outputs {
    /// The outputs `options` ask for; `tracer` holds the run's spans when
    /// it keeps a trace.
    pub fn new(options: &FinishOptions, tracer: Option<&Rc<RefCell<trace::Tracer>>>) -> Outputs {
        let mut outputs = Outputs::default();
        // The command's held output first; the give-up hook, which may take
        // its time, last.
        if let Some(held) = &options.hold {
            outputs.push(Box::new(held::HeldOutput::new(held.clone())));
        }
        // The report before the reports over the network and the hook, which
        // may take their time: a KILL that cuts them short leaves it written.
        if !options.report.is_empty() {
            let output = report::ReportOutput::new(options.report.clone());
            outputs.push(Box::new(output));
        }
        if let Some(m) = &options.metrics {
            if let Some(path) = &m.file {
                let mut labels = vec![("job".to_string(), m.job.clone())];
                labels.extend(m.labels.iter().cloned());
                outputs.push(Box::new(textfile::Textfile::new(path.clone(), labels)));
            }
            if let Some(url) = &m.push {
                let push = push::Push::new(url.clone(), m.job.clone(), m.labels.clone());
                outputs.push(Box::new(push.with_clock(outputs.clock.clone())));
            }
        }
        if let Some(p) = &options.ping {
            let ping = ping::Ping::new(p).with_clock(outputs.clock.clone());
            outputs.push(Box::new(ping));
        }
        // Before the give-up hook, which may take its time: the spans share
        // the reports' bound.
        if let (Some(export), Some(tracer)) = (&options.trace.export, tracer) {
            let export = trace::Export::new(export.clone(), tracer.clone(), outputs.clock.clone());
            outputs.push(Box::new(export));
        }
        if let Some(hook) = &options.on_give_up {
            outputs.push(Box::new(give_up::GiveUp::new(hook)));
        }
        outputs
    }

    /// Adds an output at the end of the list.
    pub fn push(&mut self, output: Box<dyn Output>) {
        self.list.push(output);
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Tells every output that the first attempt is about to start.
    pub async fn started(&mut self, ctx: &mut Ctx<'_>) {
        for output in &mut self.list {
            output.started(ctx).await;
        }
    }

    /// Hands the summary to every output, one after the other.
    pub async fn finished(&mut self, summary: &RunSummary, ctx: &mut Ctx<'_>) {
        self.clock.start(summary.ending.end);
        for output in &mut self.list {
            output.finished(summary, ctx).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::End;
    use std::cell::RefCell;
    use std::rc::Rc;

    /// Records what it was told.
    struct Recorder(Rc<RefCell<Vec<String>>>);

    impl Output for Recorder {
        fn started<'a>(&'a mut self, _ctx: &'a mut Ctx<'_>) -> Work<'a> {
            self.0.borrow_mut().push("started".into());
            Box::pin(async {})
        }

        fn finished<'a>(&'a mut self, summary: &'a RunSummary, _ctx: &'a mut Ctx<'_>) -> Work<'a> {
            let seen = self.0.clone();
            Box::pin(async move {
                seen.borrow_mut().push(format!(
                    "finished {} after {} attempts",
                    summary.ending.exit_code, summary.ending.attempts
                ));
            })
        }
    }

    #[test]
    fn every_output_hears_the_start_and_the_one_summary_in_order() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let seen = Rc::new(RefCell::new(Vec::new()));
        let mut outputs = Outputs::new(&FinishOptions::default(), None);
        assert!(outputs.is_empty());
        outputs.push(Box::new(Recorder(seen.clone())));
        outputs.push(Box::new(Recorder(seen.clone())));
        let summary = RunSummary {
            started_at: SystemTime::UNIX_EPOCH,
            duration: Duration::from_secs(1),
            seed: 0,
            ending: Ending {
                end: End::Success,
                attempts: 3,
                exit_code: 0,
                reason: "".into(),
                last_status: None,
                retries_refused: 0,
                waited: std::time::Duration::ZERO,
            },
        };
        runtime.block_on(async {
            let mut log = Logger::stderr();
            let (_tx, rx) = tokio::sync::mpsc::unbounded_channel();
            let mut signals = Signals::from_channel(rx);
            let mut ctx = Ctx {
                log: &mut log,
                signals: &mut signals,
                deadline: None,
                cut: None,
            };
            outputs.started(&mut ctx).await;
            outputs.finished(&summary, &mut ctx).await;
        });
        assert_eq!(
            *seen.borrow(),
            [
                "started",
                "started",
                "finished 0 after 3 attempts",
                "finished 0 after 3 attempts"
            ]
        );
    }
}
