//! Kinds of attempt: what the retry loop runs once per try.
//!
//! The loop knows only the [`Attempt`] trait; each kind reports a
//! [`Status`] that `classify` judges.

use std::future::Future;
use std::time::Instant;

use crate::classify::{Limit, Status};
use crate::signals::Signals;

pub mod http;
pub mod process;

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
}

/// One try of the thing being retried.
pub trait Attempt {
    /// Run one attempt to its end. Signals caught meanwhile are handled here:
    /// passed on to what the attempt started and, when terminating, the
    /// attempt is stopped and reported as `Status::Interrupted`.
    fn run(&mut self, ctx: &Context, signals: &mut Signals) -> impl Future<Output = Status>;
}
