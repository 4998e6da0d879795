//! Kinds of attempt: what the retry loop runs once per try.
//!
//! The loop knows only the [`Attempt`] trait; each kind reports a
//! [`Status`] that `classify` judges.

use std::future::Future;
use std::time::{Duration, Instant};

use crate::classify::{Limit, OutputMatch, Status};
use crate::signals::Signals;

pub mod carrier;
mod children;
pub mod file;
pub mod grpc;
pub mod hold;
pub mod hook;
pub mod http;
pub mod output;
pub mod process;
pub mod scan;
mod spawn;
pub mod stdin;
mod stdout;
pub mod tcp;
mod terminal;
mod watchdog;

/// What the loop tells an attempt about the try it is making.
#[derive(Debug, Clone, Copy)]
pub struct Context {
    /// 1-based attempt number.
    pub number: u32,
    /// Attempts in total, None with `--forever`.
    pub max: Option<u32>,
    /// The previous attempt's exit status as retry would report it.
    pub previous_exit: Option<u8>,
    /// When the attempt must be stopped, and which limit that is.
    pub deadline: Option<(Instant, Limit)>,
    /// `--max-time`'s deadline alone: what an attempt still does after its
    /// command ended (writing out a success's held stdout) ends there.
    pub max_time: Option<Instant>,
}

/// One try of the thing being retried.
pub trait Attempt {
    /// Run one attempt to its end. Signals caught meanwhile are handled here:
    /// passed on to what the attempt started and, when terminating, the
    /// attempt is stopped and reported as `Status::Interrupted`.
    fn run(&mut self, ctx: &Context, signals: &mut Signals) -> impl Future<Output = Status>;

    /// Get ready before the first attempt (`--replay-stdin` reads stdin
    /// here), giving way to `deadline` and to a terminating signal like
    /// every other wait. Nothing has run yet when this fails.
    fn prepare(
        &mut self,
        _deadline: Option<Instant>,
        _signals: &mut Signals,
    ) -> impl Future<Output = Result<(), Unready>> {
        std::future::ready(Ok(()))
    }

    /// What the last attempt reported besides its status, taken once.
    fn details(&mut self) -> Details {
        Details::default()
    }

    /// The loop retries the failed attempt that just ended: a line to log
    /// about what that means for what it left behind (its stdout, which
    /// the next attempt's will follow).
    fn retrying(&mut self) -> Option<String> {
        None
    }
}

/// A failed attempt that will be retried, as the step between attempts
/// sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Failed {
    /// Its number.
    pub attempt: u32,
    /// Its exit code, when its process exited with one.
    pub exit_code: Option<i32>,
    /// The wait planned before the next attempt.
    pub next: Duration,
}

/// What the loop does after a failed attempt, before waiting for the next
/// one (`--on-retry`). Never after the last attempt.
pub trait Between {
    /// Do it, within `deadline` and giving way to signals as an attempt
    /// does. None when there was nothing to do; `Err` is a line to log.
    fn failed(
        &mut self,
        failed: &Failed,
        deadline: Option<Instant>,
        signals: &mut Signals,
    ) -> impl Future<Output = Option<Result<(), String>>>;
}

/// Nothing between attempts.
impl Between for () {
    async fn failed(
        &mut self,
        _: &Failed,
        _: Option<Instant>,
        _: &mut Signals,
    ) -> Option<Result<(), String>> {
        None
    }
}

/// A step that is there or not.
impl<B: Between> Between for Option<B> {
    async fn failed(
        &mut self,
        failed: &Failed,
        deadline: Option<Instant>,
        signals: &mut Signals,
    ) -> Option<Result<(), String>> {
        match self {
            Some(b) => b.failed(failed, deadline, signals).await,
            None => None,
        }
    }
}

/// Why the attempts could not get ready: the run ends before the first.
/// Each carries the reason for the log's last line.
#[derive(Debug)]
pub enum Unready {
    /// `--max-time` ran out (exit 124).
    Deadline(String),
    /// A terminating signal came (exit 128+N).
    Interrupted(nix::sys::signal::Signal, String),
    /// retry's own failure (exit 125).
    Failed(String),
}

/// What an attempt reports besides its status.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Details {
    /// How long the attempt's own work took, when the loop's measurement
    /// would include more (cleanup of leftover processes after it).
    pub duration: Option<Duration>,
    /// Lines for the verbose log.
    pub notes: Vec<String>,
    /// Warnings for the log: something went wrong that does not change the
    /// attempt's status.
    pub warnings: Vec<String>,
    /// What the output matched, with `--retry-if-output`/`--stop-if-output`.
    pub output: OutputMatch,
    /// retry's own stdout is a pipe whose reader has gone: whatever another
    /// attempt printed would go nowhere.
    pub reader_gone: bool,
    /// What the command line most likely meant, when the attempt shows a
    /// mistake that parsed (`retry 5 curl …`): added to the reason when the
    /// run ends on this attempt.
    pub hint: Option<String>,
}
