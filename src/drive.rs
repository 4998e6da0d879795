//! A run's lifecycle, the same for every mode that runs something (a
//! command, an HTTP probe, a TCP probe): the log, a single-threaded tokio
//! runtime with retry's signal handlers, the end-of-run outputs told of the
//! start, shared state opened, the loop run over the mode's attempts, the
//! breaker told of the end, and one account of how the run ended for the
//! exit status and every output.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Instant;

use crate::attempt::tcp::Endpoint;
use crate::attempt::{self, hook};
use crate::classify;
use crate::event::{End, Ending, Event};
use crate::exit;
use crate::finish;
use crate::finish::trace::{Traced, TracedStep, Tracer};
use crate::log::Logger;
use crate::policy::{Config, Mode};
use crate::rng;
use crate::run;
use crate::signals;
use crate::state;
use crate::trace::span::{RunInfo, Target};

/// What the end-of-run outputs will need (the metrics file's directory),
/// checked before anything runs or is created: the usage error's status.
pub fn check_outputs(config: &Config) -> Result<(), u8> {
    finish::check(&config.finish).map_err(|e| {
        Logger::stderr().error(&e);
        exit::USAGE
    })
}

/// Run the retry loop over the attempts `make` sets up, on a single-threaded
/// runtime with retry's signal handlers installed; `deliver` turns how the
/// loop finished (and the attempt runner, which may hold a result to put in
/// place) into the exit status. The end-of-run outputs hear of the run
/// then, however it ended: also when retry could not start it, or shared
/// state or a signal ended it before the first attempt. Returns the exit
/// status.
pub fn drive<A, F, D>(
    config: &Config,
    log: Log,
    shown: &[std::ffi::OsString],
    seed: u64,
    make: F,
    deliver: D,
) -> u8
where
    A: attempt::Attempt,
    F: FnOnce() -> Result<A, String>,
    D: FnOnce(&Ending, A, &mut Logger) -> u8,
{
    let started_at = std::time::SystemTime::now();
    let started = Instant::now();
    let Log {
        logger: mut log,
        failed,
    } = log;
    let log = &mut log;
    // A log file that could not be opened is retry's own failure before
    // the first attempt: the attempts are not even set up.
    let make = move || match failed {
        Some(why) => Err(why),
        None => make(),
    };
    let mut rng = rng::seeded(seed);
    let rng = &mut rng;
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            log.error(&format!("cannot start: {e}"));
            return exit::INTERNAL;
        }
    };
    let code = runtime.block_on(async {
        let deadline = config.policy.max_time.and_then(|d| started.checked_add(d));
        let tracer = finish::trace::Tracer::new(
            &config.finish.trace,
            trace_info(config, shown, seed),
            started_at,
        );
        let mut outputs = finish::Outputs::new(&config.finish, tracer.as_ref());
        let (mut signals, ending) = match signals::Signals::install() {
            Ok(mut signals) => {
                let ending = run_to_end(
                    config,
                    log,
                    shown,
                    seed,
                    rng,
                    &mut signals,
                    &mut outputs,
                    tracer,
                    deadline,
                    make,
                    deliver,
                )
                .await;
                (signals, ending)
            }
            Err(e) => {
                let why = format!("cannot install signal handlers: {e}");
                log.error(&why);
                (
                    signals::Signals::none(),
                    Ending::before_attempts(End::Permanent, exit::INTERNAL, why),
                )
            }
        };
        let code = ending.exit_code;
        if !outputs.is_empty() {
            let summary = finish::RunSummary {
                started_at,
                duration: started.elapsed(),
                ending,
                seed,
            };
            let mut ctx = finish::Ctx {
                log,
                signals: &mut signals,
                deadline,
                cut: None,
            };
            outputs.finished(&summary, &mut ctx).await;
        }
        code
    });
    // The process exits next, which frees the runtime anyway: shutting it
    // down would only add work to every run, and a DNS lookup that hangs
    // holds a blocking thread that a drop would wait for.
    std::mem::forget(runtime);
    code
}

/// `drive`'s run, from the attempt runner's set-up to how it ended.
#[allow(clippy::too_many_arguments)]
async fn run_to_end<A, F, D>(
    config: &Config,
    log: &mut Logger,
    shown: &[std::ffi::OsString],
    seed: u64,
    rng: &mut rng::JitterRng,
    signals: &mut signals::Signals,
    outputs: &mut finish::Outputs,
    tracer: Option<Rc<RefCell<Tracer>>>,
    deadline: Option<Instant>,
    make: F,
    deliver: D,
) -> Ending
where
    A: attempt::Attempt,
    F: FnOnce() -> Result<A, String>,
    D: FnOnce(&Ending, A, &mut Logger) -> u8,
{
    if config.warn_nested {
        warn_nested(log, config);
    }
    for warning in &config.finish.trace.warnings {
        log.emit(&Event::Warning { message: warning });
    }
    if let Some(tracer) = &tracer {
        // How to find the run in a trace viewer.
        let run = tracer.borrow().run_context();
        let note = format!(
            "trace {}, run span {}",
            run.trace_id.hex(),
            run.span_id.hex()
        );
        log.emit(&Event::Note { message: &note });
    }
    let mut attempt = match make() {
        Ok(a) => a,
        Err(e) => {
            log.error(&e);
            return Ending::before_attempts(End::Permanent, exit::INTERNAL, e);
        }
    };
    if !outputs.is_empty() {
        let mut ctx = finish::Ctx {
            log,
            signals,
            deadline,
            cut: None,
        };
        outputs.started(&mut ctx).await;
        // A signal that came while an output prepared (the start ping's
        // answer is awaited a moment) starts no attempt.
        if let Some(sig) = signals.interrupted() {
            let ending = Ending::before_attempts(
                End::Interrupted,
                exit::from_signal(sig as i32),
                format!(
                    "interrupted by {} before the first attempt",
                    classify::signal_name(sig as i32)
                ),
            );
            log.emit(&Event::Done {
                ending: &ending,
                max: config.policy.max_attempts,
            });
            return ending;
        }
    }
    log.emit(&Event::Start {
        command: shown,
        max: config.policy.max_attempts,
        max_time: config.policy.max_time,
        seed,
    });
    let shared = config.state.shared.clone();
    let mut state = match state::Session::open(shared, log, signals, deadline).await {
        Ok(s) => s,
        Err(stop) => return state_stopped(stop, log),
    };
    let mut between = TracedStep {
        step: config.on_retry.as_ref().map(hook::Runner::new),
        tracer: tracer.clone(),
    };
    let mut traced = Traced {
        log: &mut *log,
        tracer,
    };
    let mut ending = run::run(
        &config.policy,
        &mut attempt,
        &mut between,
        &run::TokioClock,
        rng,
        signals,
        &mut traced,
        &mut state,
    )
    .await;
    // The breaker hears how the run ended, unless a signal ended it. A
    // store too slow to hear it in time leaves the run's status as it is.
    let mut stopped = None;
    if ending.end != End::Interrupted {
        let ok = ending.exit_code == exit::SUCCESS;
        match state.finish(ok, log, signals).await {
            Ok(()) | Err(state::Stop::Deadline) => {}
            Err(stop) => stopped = Some(state_stopped(stop, log).exit_code),
        }
    }
    ending.exit_code = match stopped {
        Some(code) => code,
        None => deliver(&ending, attempt, log),
    };
    // A success the result could not be put in place for is a failure.
    if ending.end == End::Success && ending.exit_code != exit::SUCCESS {
        ending.end = End::Permanent;
    }
    ending
}

/// Shared state ended the run before it began, or after it ended: how, for
/// the exit status (the reason is logged here).
fn state_stopped(stop: state::Stop, log: &mut Logger) -> Ending {
    let (end, code, why) = match stop {
        state::Stop::Interrupted(sig) => {
            let code = exit::from_signal(sig as i32);
            return Ending::before_attempts(End::Interrupted, code, "interrupted");
        }
        state::Stop::Refused(why) => (End::Refused, exit::INTERNAL, why),
        state::Stop::Failed(why) => (End::Permanent, exit::INTERNAL, why),
        state::Stop::Deadline => (
            End::Deadline,
            exit::TIMED_OUT,
            "--max-time ran out while asking the shared state store".to_string(),
        ),
    };
    log.error(&why);
    Ending::before_attempts(end, code, why)
}

/// The run's log as configured. When `--log-file` cannot be opened: a log
/// on stderr alone and why, which `drive` reports as retry's own failure
/// before the first attempt (exit 125), so that the metrics and the
/// heartbeat monitor hear of it too.
pub struct Log {
    pub logger: Logger,
    failed: Option<String>,
}

/// Open the log `config` asks for.
pub fn open_log(config: &Config, started: Instant) -> Log {
    match Logger::open(&config.log, started) {
        Ok(logger) => Log {
            logger,
            failed: None,
        },
        Err(why) => Log {
            logger: Logger::stderr(),
            failed: Some(why),
        },
    }
}

fn warn_nested(log: &mut Logger, config: &Config) {
    let inner = config.policy.max_attempts;
    let msg = match (config.nesting.outer_max, inner) {
        (Some(outer), Some(inner)) => format!(
            "running inside another retry (depth {}): attempts multiply ({outer} x {inner} = {} runs); --nested single runs the command once",
            config.nesting.outer_depth,
            u64::from(outer) * u64::from(inner)
        ),
        _ => format!(
            "running inside another retry (depth {}): attempts multiply; --nested single runs the command once",
            config.nesting.outer_depth
        ),
    };
    log.emit(&Event::Warning { message: &msg });
}

/// What the run's span says of the run: what is retried (as the log shows
/// it, secrets masked), the seed, the jitter kind, the attempts allowed.
fn trace_info(config: &Config, shown: &[std::ffi::OsString], seed: u64) -> RunInfo {
    let target = match &config.mode {
        Mode::Http { request } => Target::Http {
            method: request.method.to_string(),
            url: crate::mask::url(request.url.as_str()),
        },
        Mode::Tcp { probe } => Target::Tcp {
            targets: probe
                .targets
                .iter()
                .map(|t| match t {
                    Endpoint::Inet(t) => (t.host.clone(), t.port),
                    Endpoint::Unix(path) => (format!("unix:{}", path.display()), 0),
                })
                .collect(),
        },
        Mode::Grpc { probe } => Target::Grpc {
            host: probe.target.host.clone(),
            port: probe.target.port,
            service: probe.service.clone(),
        },
        Mode::File { probe } => Target::File {
            paths: probe
                .paths
                .iter()
                .map(|p| p.display().to_string())
                .collect(),
        },
        _ => {
            let mut words = shown.iter().map(|w| w.to_string_lossy().into_owned());
            Target::Command {
                program: words.next().unwrap_or_default(),
                args: words.collect(),
            }
        }
    };
    RunInfo {
        target,
        seed,
        jitter: config.policy.delay.jitter.name(),
        max_attempts: config.policy.max_attempts,
    }
}
