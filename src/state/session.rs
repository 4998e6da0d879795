//! What the retry loop asks of shared state, and how long it may take.
//!
//! Every store call is bounded (the store's own limits, then [`CALL_LIMIT`]),
//! and ends early on a terminating signal or at `--max-time`. A store that
//! fails is reported once and dropped for the rest of the run (fail open),
//! unless `--state-required` asked for exit 125 instead.

use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use super::rules::{Admit, Breaker, Budget, Micros, Op, Pace, Plan, Reply};
use super::{AnyStore, Store, StoreAt};
use crate::event::{Event, Sink};
use crate::human::human;
use crate::signals::Signals;

/// The longest one state operation may take, whatever the store.
/// Redis answers within its own short timeouts; the local store may wait
/// longer in line for a busy lock (see `local::LOCK_CAP`), never past this.
pub const CALL_LIMIT: Duration = Duration::from_secs(35);

/// How long the breaker's last word may take once the run is over.
pub const FINISH_LIMIT: Duration = Duration::from_secs(1);

/// How long a half-open trial without `--max-time` holds its place at least.
pub const TRIAL_LEASE: Duration = Duration::from_secs(60);

/// What an invocation uses of shared state, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Features {
    pub group: String,
    pub at: StoreAt,
    pub required: bool,
    pub pace: Option<Pace>,
    pub budget: Option<Budget>,
    pub breaker: Option<Breaker>,
}

/// Why a state call ends the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    /// The circuit breaker refused the run: why, in words.
    Refused(String),
    Interrupted(Signal),
    /// `--max-time` ran out while the store was being asked.
    Deadline,
    /// The store failed and `--state-required` was given.
    Failed(String),
}

/// The breaker's answer before the first attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gate {
    Run,
    /// Do not run: why, in words.
    Refused(String),
}

/// The answer before a wait.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Next {
    /// Wait this long; `paced` of it is for the group's pace.
    Go { wait: Duration, paced: Duration },
    /// The group's budget allows no retry; the count in tokens.
    BudgetSpent { tokens: f64, max: f64 },
    /// The next pace slot is this far away, past `--max-time`.
    PastDeadline { wait: Duration },
}

/// One invocation's link to its group's shared state.
pub struct Session {
    features: Option<Features>,
    store: Option<AnyStore>,
    trial: bool,
    admitted: bool,
}

fn micros(d: Duration) -> Micros {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

fn duration(us: Micros) -> Duration {
    Duration::from_micros(us)
}

impl Session {
    /// No shared state: every question gets the answer of a lone invocation.
    pub fn none() -> Session {
        Session {
            features: None,
            store: None,
            trial: false,
            admitted: false,
        }
    }

    /// Open the store before the first attempt, so that an unreachable one is
    /// reported (or ends the run) before anything runs.
    pub async fn open(
        features: Option<Features>,
        log: &mut impl Sink,
        signals: &mut Signals,
        deadline: Option<Instant>,
    ) -> Result<Session, Stop> {
        let Some(f) = features else {
            return Ok(Session::none());
        };
        let mut session = Session {
            store: None,
            features: None,
            trial: false,
            admitted: false,
        };
        let store = match AnyStore::new(&f.at) {
            Ok(s) => Some(s),
            Err(e) => {
                session.features = Some(f);
                session.failed(log, &e)?;
                return Ok(session);
            }
        };
        session.store = store;
        session.features = Some(f);
        let opened = match session.store.as_mut() {
            Some(store) => bounded(store.open(), signals, deadline).await?,
            None => Ok(()),
        };
        if let Err(e) = opened {
            session.failed(log, &e)?;
        }
        Ok(session)
    }

    /// A store failure: end the run if the store is required, else warn once
    /// and go on without it.
    fn failed(&mut self, log: &mut impl Sink, e: &anyhow::Error) -> Result<(), Stop> {
        self.store = None;
        let Some(f) = &self.features else {
            return Ok(());
        };
        let what = format!("shared state at {}: {}", f.at.shown(), one_line(e));
        if f.required {
            return Err(Stop::Failed(format!("{what} (--state-required)")));
        }
        log.emit(&Event::Warning {
            message: &format!("{what}; running without it"),
        });
        Ok(())
    }

    async fn call(
        &mut self,
        op: Op,
        log: &mut impl Sink,
        signals: &mut Signals,
        deadline: Option<Instant>,
    ) -> Result<Option<Reply>, Stop> {
        let (Some(store), Some(f)) = (self.store.as_mut(), self.features.as_ref()) else {
            return Ok(None);
        };
        let result = bounded(store.apply(&f.group, op), signals, deadline).await?;
        if let Some(w) = store.take_warning() {
            log.emit(&Event::Warning { message: &w });
        }
        match result {
            Ok(reply) => Ok(Some(reply)),
            Err(e) => {
                self.failed(log, &e)?;
                Ok(None)
            }
        }
    }

    /// Before the first attempt: may this invocation run?
    pub async fn admit(
        &mut self,
        log: &mut impl Sink,
        signals: &mut Signals,
        deadline: Option<Instant>,
    ) -> Result<Gate, Stop> {
        let Some(breaker) = self.features.as_ref().and_then(|f| f.breaker) else {
            return Ok(Gate::Run);
        };
        // A trial's place is held until its own --max-time (and a moment to
        // report), or else for the cooldown and at least TRIAL_LEASE.
        let lease = match deadline {
            Some(d) => d.saturating_duration_since(Instant::now()) + Duration::from_secs(1),
            None => duration(breaker.cooldown).max(TRIAL_LEASE),
        };
        let reply = self
            .call(
                Op::Admit {
                    lease: micros(lease),
                },
                log,
                signals,
                deadline,
            )
            .await?;
        Ok(match reply {
            Some(Reply::Admit(Admit::Open { wait })) => Gate::Refused(format!(
                "the circuit breaker is open after repeated failures: COMMAND not run; one trial run is let through in {}",
                human(duration(wait))
            )),
            Some(Reply::Admit(Admit::TrialUnderWay { wait })) => Gate::Refused(format!(
                "the circuit breaker is half-open and another run is its trial: COMMAND not run; next chance in {} at the latest",
                human(duration(wait))
            )),
            Some(Reply::Admit(Admit::Trial)) => {
                self.trial = true;
                self.admitted = true;
                log.emit(&Event::Note {
                    message: "the circuit breaker is half-open: this run is its trial",
                });
                Gate::Run
            }
            _ => {
                self.admitted = true;
                Gate::Run
            }
        })
    }

    /// After each attempt's outcome.
    pub async fn record(
        &mut self,
        success: bool,
        log: &mut impl Sink,
        signals: &mut Signals,
        deadline: Option<Instant>,
    ) -> Result<(), Stop> {
        let Some(budget) = self.features.as_ref().and_then(|f| f.budget) else {
            return Ok(());
        };
        self.call(Op::Record { budget, success }, log, signals, deadline)
            .await
            .map(|_| ())
    }

    /// Before a wait of `delay`: may the retry go, and after how long.
    pub async fn plan(
        &mut self,
        delay: Duration,
        log: &mut impl Sink,
        signals: &mut Signals,
        deadline: Option<Instant>,
    ) -> Result<Next, Stop> {
        let own = Next::Go {
            wait: delay,
            paced: Duration::ZERO,
        };
        let Some(f) = self.features.as_ref() else {
            return Ok(own);
        };
        let (budget, pace) = (f.budget, f.pace);
        if budget.is_none() && pace.is_none() {
            return Ok(own);
        }
        let op = Op::Plan {
            delay: micros(delay),
            deadline_in: deadline.map(|d| micros(d.saturating_duration_since(Instant::now()))),
            budget,
            pace,
        };
        Ok(match self.call(op, log, signals, deadline).await? {
            Some(Reply::Plan(Plan::Go { wait, paced })) => Next::Go {
                wait: duration(wait),
                paced: duration(paced),
            },
            Some(Reply::Plan(Plan::BudgetSpent { tokens_milli })) => Next::BudgetSpent {
                tokens: tokens_milli as f64 / 1000.0,
                max: budget.map_or(0.0, |b| b.max_milli as f64 / 1000.0),
            },
            Some(Reply::Plan(Plan::PastDeadline { wait })) => Next::PastDeadline {
                wait: duration(wait),
            },
            _ => own,
        })
    }

    /// The invocation is over: tell the breaker how it went. An invocation
    /// the breaker refused, or one that ended by a signal, tells it nothing.
    /// It may take [`FINISH_LIMIT`] even past `--max-time`: a run that timed
    /// out is just what the breaker must count.
    pub async fn finish(
        &mut self,
        success: bool,
        log: &mut impl Sink,
        signals: &mut Signals,
    ) -> Result<(), Stop> {
        let Some(breaker) = self.features.as_ref().and_then(|f| f.breaker) else {
            return Ok(());
        };
        if !self.admitted {
            return Ok(());
        }
        let op = Op::Finish {
            breaker,
            success,
            trial: self.trial,
        };
        let limit = Instant::now() + FINISH_LIMIT;
        self.call(op, log, signals, Some(limit)).await.map(|_| ())
    }
}

/// An error and its causes on one line, each cause once: some errors repeat
/// their source's text in their own.
fn one_line(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.contains(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out.replace('\n', " ")
}

/// Run a store call within [`CALL_LIMIT`] and the deadline, giving way to a
/// terminating signal. Hitting the limit is a store failure; hitting the
/// deadline ends the run.
async fn bounded<T>(
    call: impl Future<Output = anyhow::Result<T>>,
    signals: &mut Signals,
    deadline: Option<Instant>,
) -> Result<anyhow::Result<T>, Stop> {
    let limit = Instant::now() + CALL_LIMIT;
    let (until, by_deadline) = match deadline {
        Some(d) if d < limit => (d, true),
        _ => (limit, false),
    };
    tokio::select! {
        // The call first: one that is done at once wins over a deadline that passed.
        biased;
        r = call => Ok(r),
        sig = signals.next_interrupt() => Err(Stop::Interrupted(sig)),
        () = tokio::time::sleep_until(until.into()) => if by_deadline {
            Err(Stop::Deadline)
        } else {
            Ok(Err(anyhow::anyhow!("no answer within {}", human(CALL_LIMIT))))
        },
    }
}

/// `--state-show`: the group's state in words, for stdout.
pub async fn show(features: &Features) -> anyhow::Result<String> {
    let mut store = AnyStore::new(&features.at)?;
    let (now, s) = async {
        store.open().await?;
        match store.apply(&features.group, Op::Show).await? {
            Reply::Show { now, state } => Ok((now, state)),
            other => anyhow::bail!("unexpected answer {other:?}"),
        }
    }
    .await
    .map_err(|e| anyhow::anyhow!("shared state at {}: {}", features.at.shown(), one_line(&e)))?;
    let budget = features.budget.unwrap_or(Budget::DEFAULT);
    let breaker = features.breaker.unwrap_or(Breaker::DEFAULT);
    let pace = if s.tat > now {
        format!("next free slot in {}", human(duration(s.tat - now)))
    } else {
        "no retry scheduled: the next slot is free now".to_string()
    };
    let max = budget.max_milli as f64 / 1000.0;
    let count = s.tokens_for(budget);
    let budget_line = format!(
        "{count} of {max} tokens; retries {} (they need more than {})",
        if count * 2.0 > max {
            "allowed"
        } else {
            "refused"
        },
        max / 2.0
    );
    let breaker_line = if s.open_until == 0 {
        format!(
            "closed ({} consecutive failed runs; opens at {})",
            s.failures, breaker.threshold
        )
    } else if now < s.open_until {
        format!(
            "open ({} consecutive failed runs); half-open in {}",
            s.failures,
            human(duration(s.open_until - now))
        )
    } else if now < s.trial_until {
        format!(
            "half-open, a trial run under way (its lease ends in {})",
            human(duration(s.trial_until - now))
        )
    } else {
        "half-open: the next run is its trial".to_string()
    };
    Ok(format!(
        "group:   {}\nstore:   {}\npace:    {pace}\nbudget:  {budget_line}\nbreaker: {breaker_line}\n",
        features.group,
        features.at.shown()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causes_are_listed_once_on_one_line() {
        let e = anyhow::anyhow!("invalid peer certificate: UnknownIssuer")
            .context("cannot connect: invalid peer certificate: UnknownIssuer");
        assert_eq!(
            one_line(&e),
            "cannot connect: invalid peer certificate: UnknownIssuer"
        );
        let e = anyhow::anyhow!("refused\nby peer").context("cannot connect");
        assert_eq!(one_line(&e), "cannot connect: refused by peer");
    }

    #[test]
    fn without_shared_state_every_answer_is_a_lone_runs() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let mut log = crate::log::Logger::stderr();
        let mut signals = Signals::none();
        let mut s = Session::none();
        rt.block_on(async {
            assert_eq!(s.admit(&mut log, &mut signals, None).await, Ok(Gate::Run));
            assert_eq!(s.record(false, &mut log, &mut signals, None).await, Ok(()));
            let d = Duration::from_millis(7);
            assert_eq!(
                s.plan(d, &mut log, &mut signals, None).await,
                Ok(Next::Go {
                    wait: d,
                    paced: Duration::ZERO
                })
            );
            assert_eq!(s.finish(false, &mut log, &mut signals).await, Ok(()));
        });
    }
}
