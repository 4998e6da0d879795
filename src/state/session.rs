//! What the retry loop asks of shared state, and how long it may take.
//!
//! Every store call is bounded: by the store's own limits, by
//! [`CALL_LIMIT`], and with `--max-time` by a share of the time left
//! ([`STORE_SHARE`]), so that a store that does not answer leaves the
//! command its run; a terminating signal ends the call at once. A store that
//! fails is reported once and the run goes on without it (fail open),
//! unless `--state-required` asked for exit 125 instead. It is tried again
//! before later waits, at growing intervals, and meanwhile the run paces
//! its own retries at the group's rate, shared among the runs the store
//! last showed sharing it, from its own place in the group's turns.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use rand::TryRng;
use rand::rngs::SysRng;

use super::rules::{
    Admit, Breaker, Budget, GroupState, Micros, Op, Pace, Plan, Reply, TRIAL_LEASE,
};
use super::{AnyStore, Store, StoreAt};
use crate::bound::{Bounded, within};
use crate::event::{Event, Sink};
use crate::human::human;
use crate::signals::Signals;

/// The longest one state operation may take, whatever the store.
/// Redis answers within its own short timeouts; the local store may wait
/// longer in line for a busy lock (see `local::LOCK_CAP`), never past this.
pub const CALL_LIMIT: Duration = Duration::from_secs(35);

/// With `--max-time`, one store call may take at most this share (1/N) of
/// the time left: failing open must leave the command its run.
pub const STORE_SHARE: u32 = 4;

/// How long the breaker's last word may take once the run is over.
pub const FINISH_LIMIT: Duration = Duration::from_secs(1);

/// After a failed call, the first pause before the store is tried again;
/// each further failure doubles it, up to [`RETRY_STORE_MAX`].
const RETRY_STORE_FIRST: Duration = Duration::from_secs(1);
const RETRY_STORE_MAX: Duration = Duration::from_secs(30);

/// What an invocation uses of shared state, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Features {
    pub group: String,
    pub at: StoreAt,
    /// `--state-password-file`: the Redis password, from a file.
    pub password_file: Option<PathBuf>,
    /// `--state-cacert`: the CA certificates a TLS store is checked against.
    pub cacert: Option<PathBuf>,
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
    /// `--max-time` had run out when the store was to be asked.
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

/// A store that failed: when to try it again.
struct Down {
    again_at: Instant,
    pause: Duration,
}

/// One invocation's link to its group's shared state.
pub struct Session {
    features: Option<Features>,
    store: Option<AnyStore>,
    /// Set while the store fails.
    down: Option<Down>,
    /// The one warning about a failing store has been given.
    warned: bool,
    trial: bool,
    admitted: bool,
    /// This run's own pace schedule, kept while the store fails.
    local: GroupState,
    /// When the last slot the store granted this run was.
    last_slot: Option<Instant>,
    epoch: Instant,
}

fn micros(d: Duration) -> Micros {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

fn duration(us: Micros) -> Duration {
    Duration::from_micros(us)
}

/// How long a store call may take, and whether that is a share of the
/// time left before `--max-time`.
#[derive(Debug, Clone, Copy)]
struct Limit {
    time: Duration,
    share: bool,
}

/// How long a store call may take now.
fn call_limit(deadline: Option<Instant>) -> Result<Limit, Stop> {
    let whole = Limit {
        time: CALL_LIMIT,
        share: false,
    };
    match deadline {
        None => Ok(whole),
        Some(d) => {
            let left = d.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Stop::Deadline);
            }
            let share = left / STORE_SHARE;
            Ok(if share < CALL_LIMIT {
                Limit {
                    time: share,
                    share: true,
                }
            } else {
                whole
            })
        }
    }
}

impl Session {
    /// No shared state: every question gets the answer of a lone invocation.
    pub fn none() -> Session {
        Session {
            features: None,
            store: None,
            down: None,
            warned: false,
            trial: false,
            admitted: false,
            local: GroupState::default(),
            last_slot: None,
            epoch: Instant::now(),
        }
    }

    /// Open the store and try it before the first attempt, so that a store
    /// that cannot be used is reported (or ends the run) before anything
    /// runs.
    pub async fn open(
        features: Option<Features>,
        log: &mut impl Sink,
        signals: &mut Signals,
        deadline: Option<Instant>,
    ) -> Result<Session, Stop> {
        let mut session = Session::none();
        let Some(mut f) = features else {
            return Ok(session);
        };
        let store = f.at.resolve().map_err(anyhow::Error::msg).and_then(|at| {
            f.at = at;
            AnyStore::new(&f.at, f.password_file.as_deref(), f.cacert.as_deref())
        });
        session.features = Some(f);
        match store {
            Ok(s) => session.store = Some(s),
            Err(e) => {
                // Nothing to try again: the run goes on without a store.
                session.failed(log, &e)?;
                return Ok(session);
            }
        }
        let limit = call_limit(deadline)?;
        let (Some(store), Some(f)) = (session.store.as_mut(), session.features.as_ref()) else {
            return Ok(session);
        };
        store.bound(Instant::now().checked_add(limit.time));
        let opened = bounded(store.open(&f.group), signals, limit).await?;
        if let Some(w) = store.take_warning() {
            log.emit(&Event::Warning { message: &w });
        }
        if let Err(e) = opened {
            session.failed(log, &e)?;
        }
        Ok(session)
    }

    /// A store failure: end the run if the store is required, else warn
    /// (once a run) and go on without it until it is tried again.
    fn failed(&mut self, log: &mut impl Sink, e: &anyhow::Error) -> Result<(), Stop> {
        let Some(f) = &self.features else {
            return Ok(());
        };
        let what = located(&f.at.shown(), e);
        if f.required {
            self.store = None;
            return Err(Stop::Failed(format!("{what} (--state-required)")));
        }
        // A store refused as unsafe is not tried again: nothing would change.
        if e.chain()
            .any(|c| c.downcast_ref::<super::NotUsed>().is_some())
        {
            self.store = None;
        }
        let pause = self
            .down
            .as_ref()
            .map_or(RETRY_STORE_FIRST, |d| (d.pause * 2).min(RETRY_STORE_MAX));
        self.down = Some(Down {
            again_at: Instant::now() + pause,
            pause,
        });
        if self.warned {
            log.emit(&Event::Note {
                message: &format!("{what}; still running without it"),
            });
        } else {
            self.warned = true;
            let later = if self.store.is_some() {
                " for now (it is tried again before later retries)"
            } else {
                ""
            };
            log.emit(&Event::Warning {
                message: &format!("{what}; running without it{later}"),
            });
        }
        Ok(())
    }

    /// One call to the store, unless it failed and is not due to be tried
    /// again (`force` tries it anyway). None when there is no answer.
    async fn call(
        &mut self,
        op: Op,
        log: &mut impl Sink,
        signals: &mut Signals,
        limit: Limit,
        force: bool,
    ) -> Result<Option<Reply>, Stop> {
        let (Some(store), Some(f)) = (self.store.as_mut(), self.features.as_ref()) else {
            return Ok(None);
        };
        if !force
            && self
                .down
                .as_ref()
                .is_some_and(|d| Instant::now() < d.again_at)
            && !store.mended(&f.group)
        {
            return Ok(None);
        }
        store.bound(Instant::now().checked_add(limit.time));
        let result = bounded(store.apply(&f.group, op), signals, limit).await?;
        if let Some(w) = store.take_warning() {
            log.emit(&Event::Warning { message: &w });
        }
        match result {
            Ok(reply) => {
                if self.down.take().is_some() {
                    log.emit(&Event::Note {
                        message: &format!("shared state at {}: in use again", f.at.shown()),
                    });
                }
                Ok(Some(reply))
            }
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
        // A trial's place is held until its own --max-time, or else for the
        // cooldown and at least TRIAL_LEASE: a trial killed before it could
        // report gives way to another then.
        let lease = match deadline {
            Some(d) => micros(d.saturating_duration_since(Instant::now())).max(1),
            None => breaker.cooldown.max(TRIAL_LEASE),
        };
        let limit = call_limit(deadline)?;
        let reply = self
            .call(Op::Admit { lease, breaker }, log, signals, limit, false)
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
            // Closed, or no answer: a store that fails lets the run through,
            // and hears how it ended if it is back by then.
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
        let limit = call_limit(deadline)?;
        self.call(Op::Record { budget, success }, log, signals, limit, false)
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
        let deadline_in = deadline.map(|d| micros(d.saturating_duration_since(Instant::now())));
        let op = Op::Plan {
            delay: micros(delay),
            deadline_in,
            budget,
            pace,
        };
        let limit = call_limit(deadline)?;
        Ok(match self.call(op, log, signals, limit, false).await? {
            Some(Reply::Plan(plan)) => {
                if let Plan::Go { wait, .. } = plan {
                    self.last_slot = Some(Instant::now() + duration(wait));
                }
                next(plan, budget)
            }
            Some(_) => own,
            None => match pace {
                Some(p) => next(self.pace_alone(p, delay, deadline_in), None),
                None => own,
            },
        })
    }

    /// While the store fails: this run's own retries paced at the group's
    /// rate, shared among the runs the store last showed sharing it (each
    /// of them paces itself the same way). The first comes no earlier than
    /// one share after the last slot the store granted this run, and a
    /// random part of another share later: the runs that fail together do
    /// not retry together, and when the store is back, those still pacing
    /// alone overlap less with those it already serves (whose schedule,
    /// the store's, knows nothing of theirs).
    fn pace_alone(&mut self, p: Pace, delay: Duration, deadline_in: Option<Micros>) -> Plan {
        let sharing = match (self.store.as_mut(), self.features.as_ref()) {
            (Some(store), Some(f)) => store.waiting(&f.group).max(1),
            _ => 1,
        };
        let mine = Pace {
            interval: p.interval.saturating_mul(u64::from(sharing)),
            burst: p.burst.div_ceil(sharing).max(1),
        };
        if let Some(slot) = self.last_slot.take() {
            let last = micros(slot.saturating_duration_since(self.epoch));
            let turn = first_turn(last, mine.interval, SysRng.try_next_u64().unwrap_or(0));
            self.local.tat = self.local.tat.max(turn);
        }
        let now = micros(self.epoch.elapsed());
        self.local
            .plan(now, micros(delay), deadline_in, None, Some(mine))
    }

    /// The invocation is over: tell the breaker how it went. An invocation
    /// the breaker refused, or one that ended by a signal, tells it nothing.
    /// It may take [`FINISH_LIMIT`] even past `--max-time`: a run that timed
    /// out is just what the breaker must count. A store that failed earlier
    /// is tried once more for it.
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
        let limit = Limit {
            time: FINISH_LIMIT,
            share: false,
        };
        self.call(op, log, signals, limit, true).await.map(|_| ())
    }
}

/// The earliest slot of a run that paces alone, whose last slot from the
/// store was at `last` and whose share of the rate is one slot every
/// `share`: its next turn, and a part of another share (from `random`)
/// later.
fn first_turn(last: Micros, share: Micros, random: u64) -> Micros {
    last.saturating_add(share)
        .saturating_add(random % share.max(1))
}

/// A plan in the loop's terms.
fn next(plan: Plan, budget: Option<Budget>) -> Next {
    match plan {
        Plan::Go { wait, paced } => Next::Go {
            wait: duration(wait),
            paced: duration(paced),
        },
        Plan::BudgetSpent { tokens_milli } => Next::BudgetSpent {
            tokens: tokens_milli as f64 / 1000.0,
            max: budget.map_or(0.0, |b| b.max_milli as f64 / 1000.0),
        },
        Plan::PastDeadline { wait } => Next::PastDeadline {
            wait: duration(wait),
        },
    }
}

/// A store failure in words, saying where the store is unless the error
/// itself starts by naming that place.
pub(super) fn located(at: &str, e: &anyhow::Error) -> String {
    let why = one_line(e);
    if why.starts_with(at) {
        format!("shared state: {why}")
    } else {
        format!("shared state at {at}: {why}")
    }
}

/// An error and its causes on one line, each cause once: some errors repeat
/// their source's text in their own.
pub(super) fn one_line(e: &anyhow::Error) -> String {
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

/// Run a store call within `limit`, giving way to a terminating signal.
/// Hitting the limit is a store failure.
async fn bounded<T>(
    call: impl Future<Output = anyhow::Result<T>>,
    signals: &mut Signals,
    limit: Limit,
) -> Result<anyhow::Result<T>, Stop> {
    // The call first (`within` is biased): one that is done at once wins
    // over a limit of zero.
    match within(call, Instant::now().checked_add(limit.time), signals).await {
        Bounded::Done(r) => Ok(r),
        Bounded::Interrupted(sig) => Err(Stop::Interrupted(sig)),
        Bounded::TimedOut => Ok(Err(anyhow::anyhow!(
            "no answer within {}{}",
            human(limit.time),
            if limit.share {
                format!(" (1/{STORE_SHARE} of the time left before --max-time)")
            } else {
                String::new()
            }
        ))),
    }
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
    fn a_run_pacing_alone_comes_back_within_its_next_two_turns() {
        let (last, share) = (10_000_000, 4_000_000);
        for random in [0, 1, 3_999_999, 4_000_000, u64::MAX] {
            let turn = first_turn(last, share, random);
            assert!((last + share..last + 2 * share).contains(&turn), "{turn}");
        }
        assert_eq!(first_turn(last, share, 1_000_000), last + share + 1_000_000);
        assert_eq!(first_turn(u64::MAX, share, 7), u64::MAX);
        assert_eq!(first_turn(0, 0, 7), 0);
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
