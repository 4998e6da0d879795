//! The simulations a `--simulate` invocation asks for (one, or one per
//! jitter kind with `--compare`), from its validated options, and the
//! heading and frame that title their report and picture.

use std::time::Duration;

use rand::Rng;

use crate::backoff::{Growth, Jitter};
use crate::event::{Event, Sink};
use crate::human::human;
use crate::policy::SimOptions;
use crate::retry_policy::Policy;
use crate::sim::report::Summary;
use crate::sim::{Fleet, Outcome, Quiet, simulate_fleet};

/// Keeps a lone client's waits, for the report.
#[derive(Default)]
struct Waits(Vec<Duration>);

impl Sink for Waits {
    type Countdown = ();
    fn emit(&mut self, event: &Event<'_>) {
        if let Event::Attempt { next: Some(w), .. } = event {
            self.0.push(w.delay);
        }
    }
    fn countdown(&self, _: Duration, _: u32, _: Option<u32>) {}
}

/// What the simulated clients share, as one group.
pub fn fleet(sim: &SimOptions) -> Fleet {
    Fleet {
        pace: sim.pace,
        budget: sim.budget,
    }
}

/// The jitter kinds `--compare` runs, in the order shown.
pub fn kinds(sim: &SimOptions) -> [Jitter; 5] {
    [
        Jitter::None,
        Jitter::Full,
        Jitter::Equal,
        Jitter::Decorrelated,
        Jitter::Additive {
            max: sim.additive_max,
        },
    ]
}

/// Run every simulation asked for; `rng` makes a fresh generator from the
/// seed, so each jitter kind of `--compare` sees the same random stream.
pub fn runs<R: Rng, F: Fn() -> R>(
    policy: &Policy,
    sim: &SimOptions,
    rng: F,
) -> Vec<(Summary, Outcome)> {
    let (model, fleet) = (sim.model, fleet(sim));
    let jitters = if sim.compare {
        kinds(sim).to_vec()
    } else {
        vec![policy.delay.jitter]
    };
    jitters
        .into_iter()
        .map(|jitter| {
            let mut p = policy.clone();
            p.delay.jitter = jitter;
            let mut waits = Waits::default();
            let outcome = if sim.clients == 1 {
                simulate_fleet(&p, fleet, model, 1, &mut rng(), &mut waits)
            } else {
                simulate_fleet(&p, fleet, model, sim.clients, &mut rng(), &mut Quiet)
            };
            let recorded = (sim.clients == 1).then_some(waits.0);
            let summary = Summary::of(jitter.name(), &outcome, model.recovery(), recorded);
            (summary, outcome)
        })
        .collect()
}

/// What was simulated, in one line.
pub fn heading(policy: &Policy, sim: &SimOptions, seed: u64) -> String {
    let d = &policy.delay;
    let growth = match d.growth {
        Growth::Exponential { multiplier } => format!("exponential x{multiplier}"),
        Growth::Linear => "linear".to_string(),
        Growth::Fixed => "fixed".to_string(),
    };
    let jitter = if sim.compare {
        "each jitter kind".to_string()
    } else {
        match d.jitter {
            Jitter::None => "no jitter".to_string(),
            Jitter::Additive { max } => format!("additive jitter up to {}", human(max)),
            j => format!("{} jitter", j.name()),
        }
    };
    let attempts = match policy.max_attempts {
        Some(m) => format!("up to {m} attempts"),
        None => "attempts without limit".to_string(),
    };
    let deadline = policy
        .max_time
        .map(|m| format!(", --max-time {}", human(m)))
        .unwrap_or_default();
    let start = policy.stagger.map_or_else(
        || "at once".to_string(),
        |s| format!("from starts staggered over {}", human(s)),
    );
    format!(
        "{} client{} failing {start} against {}; {attempts}{deadline}; {growth} backoff from {} to {}; {jitter}{}; seed {seed}",
        sim.clients,
        if sim.clients == 1 { "" } else { "s" },
        sim.model.describe(),
        human(d.base),
        human(d.cap),
        shared(&fleet(sim))
    )
}

/// What the picture shows besides the runs.
pub fn frame<'a>(title: &'a str, policy: &Policy, sim: &SimOptions) -> super::plot::Frame<'a> {
    super::plot::Frame {
        title,
        recovery: sim.model.recovery(),
        stagger: policy.stagger,
    }
}

/// What the clients share, for the heading ("" when nothing).
fn shared(fleet: &Fleet) -> String {
    let mut s = String::new();
    if let Some(p) = fleet.pace {
        let rate = 1e6 / p.interval as f64;
        // Two decimals at most: 20/s, 0.5/s, 3.33/s.
        let rate = format!("{rate:.2}");
        let rate = rate.trim_end_matches('0').trim_end_matches('.');
        s.push_str(&format!("; shared pace {rate}/s, burst {}", p.burst));
    }
    if let Some(b) = fleet.budget {
        s.push_str(&format!(
            "; shared budget {}:{}",
            b.max_milli as f64 / 1000.0,
            b.ratio_milli as f64 / 1000.0
        ));
    }
    s
}
