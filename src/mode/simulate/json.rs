//! `--simulate --format json`: the report as an object, with everything
//! that produced it (the server model and every policy parameter, in
//! numbers) beside the figures of each run, so a stored result can be tied
//! to its cause. Pure.

use std::time::Duration;

use serde::Serialize;

use crate::backoff::{Growth, Jitter};
use crate::policy::SimOptions;
use crate::retry_policy::Policy;
use crate::sim::Model;
use crate::sim::report::Summary;

/// The JSON report (every field is documented with `--simulate` in the
/// user guide; keep them in step).
#[derive(Serialize)]
pub struct Report<'a> {
    clients: u32,
    model: String,
    seed: u64,
    server: Server,
    policy: PolicyJson,
    /// Requests after which a run stops, with clients still retrying.
    request_limit: u64,
    runs: &'a [Summary],
}

/// The server model, in numbers.
#[derive(Serialize)]
struct Server {
    /// "outage", "capacity" or "occ".
    kind: &'static str,
    /// When the server recovers: the outage's end (null: never down).
    outage_ms: Option<f64>,
    /// The capacity's rate and bucket depth (null: not a capacity model).
    capacity_per_s: Option<f64>,
    capacity_burst: Option<f64>,
    /// The fixed window's limit and length (absent: not a window model).
    #[serde(skip_serializing_if = "Option::is_none")]
    window_limit: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    window_ms: Option<f64>,
}

/// Every parameter of the policy the clients follow, in numbers.
#[derive(Serialize)]
struct PolicyJson {
    /// Null: no limit.
    max_attempts: Option<u32>,
    max_time_ms: Option<f64>,
    backoff: &'static str,
    /// Null unless the backoff is exponential.
    multiplier: Option<f64>,
    base_ms: f64,
    cap_ms: f64,
    /// `--retry-after-spread` (absent: the backoff delay).
    #[serde(skip_serializing_if = "Option::is_none")]
    retry_after_spread_ms: Option<f64>,
    /// Null with --compare (each run names its own).
    jitter: Option<&'static str>,
    /// The random part of additive jitter (null when no run uses it).
    jitter_max_ms: Option<f64>,
    reset_after_ms: Option<f64>,
    stagger_ms: Option<f64>,
    pace: Option<PaceJson>,
    budget: Option<BudgetJson>,
}

#[derive(Serialize)]
struct PaceJson {
    per_s: f64,
    burst: u32,
}

#[derive(Serialize)]
struct BudgetJson {
    tokens: f64,
    ratio: f64,
}

fn ms(d: Duration) -> f64 {
    // Microsecond resolution, as everywhere in the report.
    (d.as_micros() as f64) / 1000.0
}

impl<'a> Report<'a> {
    pub fn of(
        policy: &Policy,
        sim: &SimOptions,
        model: &Model,
        seed: u64,
        runs: &'a [Summary],
    ) -> Report<'a> {
        Report {
            clients: sim.clients,
            model: model.describe(),
            seed,
            server: Server::of(model),
            policy: PolicyJson::of(policy, sim),
            request_limit: crate::sim::request_limit(sim.clients),
            runs,
        }
    }
}

impl Server {
    fn of(model: &Model) -> Server {
        let (kind, capacity) = match *model {
            Model::AlwaysFail => ("always-fail", None),
            Model::Outage { .. } => ("outage", None),
            Model::Capacity { rate, .. } => ("capacity", Some((rate, model.burst()))),
            Model::Occ => ("occ", None),
            Model::Window { .. } => ("fixed-window", None),
        };
        let window = match *model {
            Model::Window { limit, every } => Some((limit, ms(every))),
            _ => None,
        };
        Server {
            kind,
            outage_ms: model.recovery().map(ms),
            capacity_per_s: capacity.map(|c| c.0),
            capacity_burst: capacity.map(|c| c.1),
            window_limit: window.map(|w| w.0),
            window_ms: window.map(|w| w.1),
        }
    }
}

impl PolicyJson {
    fn of(policy: &Policy, sim: &SimOptions) -> PolicyJson {
        let d = &policy.delay;
        let (backoff, multiplier) = match d.growth {
            Growth::Exponential { multiplier } => ("exponential", Some(multiplier)),
            Growth::Linear => ("linear", None),
            Growth::Fixed => ("fixed", None),
        };
        let jitter_max = match d.jitter {
            Jitter::Additive { max } => Some(max),
            _ if sim.compare => Some(sim.additive_max),
            _ => None,
        };
        PolicyJson {
            max_attempts: policy.max_attempts,
            max_time_ms: policy.max_time.map(ms),
            backoff,
            multiplier,
            base_ms: ms(d.base),
            cap_ms: ms(d.cap),
            jitter: (!sim.compare).then(|| d.jitter.name()),
            jitter_max_ms: jitter_max.map(ms),
            reset_after_ms: policy.reset_after.map(ms),
            stagger_ms: policy.stagger.map(ms),
            retry_after_spread_ms: policy.rules.http.retry_after_spread.map(ms),
            pace: sim.pace.map(|p| PaceJson {
                per_s: 1e6 / p.interval as f64,
                burst: p.burst,
            }),
            budget: sim.budget.map(|b| BudgetJson {
                tokens: b.max_milli as f64 / 1000.0,
                ratio: b.ratio_milli as f64 / 1000.0,
            }),
        }
    }
}
