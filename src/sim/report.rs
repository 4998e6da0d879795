//! What `--simulate` prints: figures from an [`Outcome`], as a text report,
//! a side-by-side table (`--compare`) or JSON.

use std::fmt::Write;
use std::time::Duration;

use serde::Serialize;

use super::{Outcome, chart};
use crate::human::human;

/// The window the busiest-window figures count over.
pub const WINDOW: Duration = Duration::from_millis(100);

/// The figures of one simulated run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// The jitter kind (the run's label in `--compare`).
    pub jitter: String,
    pub clients: u32,
    pub requests: u64,
    pub requests_per_client: f64,
    /// Most requests in any 100 ms window.
    pub busiest_100ms: u64,
    /// The same, counting only requests once the server has recovered.
    pub busiest_100ms_after_recovery: Option<u64>,
    /// Requests while the server was down (the first attempts included).
    pub requests_before_recovery: Option<u64>,
    /// When half the clients had succeeded.
    pub median_success_ms: Option<f64>,
    pub last_success_ms: Option<f64>,
    pub succeeded: u32,
    pub gave_up: u32,
    /// Of those that gave up, how many the group's retry budget refused.
    pub refused_by_budget: u32,
    /// The simulation hit its event limit with clients still retrying.
    pub truncated: bool,
    /// A single client's waits, in order (only with one client).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waits_ms: Option<Vec<f64>>,
}

fn ms(d: Duration) -> f64 {
    // Microsecond resolution, as the JSON log has it.
    (d.as_micros() as f64) / 1000.0
}

/// Most arrivals in any window `[t, t + width)`; `arrivals` must be sorted.
pub fn busiest(arrivals: &[Duration], width: Duration) -> u64 {
    let mut best = 0;
    let mut lo = 0;
    for (hi, t) in arrivals.iter().enumerate() {
        while arrivals[lo] + width <= *t {
            lo += 1;
        }
        best = best.max(hi - lo + 1);
    }
    best as u64
}

impl Summary {
    pub fn of(
        jitter: &str,
        o: &Outcome,
        recovery: Option<Duration>,
        waits: Option<Vec<Duration>>,
    ) -> Summary {
        let requests = o.arrivals.len() as u64;
        let from = recovery.map(|r| o.arrivals.partition_point(|t| *t < r));
        let after = from.map(|from| busiest(&o.arrivals[from..], WINDOW));
        let half = (o.clients as usize).div_ceil(2);
        Summary {
            jitter: jitter.to_string(),
            clients: o.clients,
            requests,
            requests_per_client: requests as f64 / f64::from(o.clients.max(1)),
            busiest_100ms: busiest(&o.arrivals, WINDOW),
            busiest_100ms_after_recovery: after,
            requests_before_recovery: from.map(|n| n as u64),
            median_success_ms: (half > 0)
                .then(|| o.successes.get(half - 1).copied().map(ms))
                .flatten(),
            last_success_ms: o.successes.last().copied().map(ms),
            succeeded: o.successes.len() as u32,
            gave_up: o.gave_up,
            refused_by_budget: o.refused,
            truncated: o.truncated,
            waits_ms: waits.map(|w| w.into_iter().map(ms).collect()),
        }
    }
}

fn opt_ms(v: Option<f64>) -> String {
    v.map_or_else(
        || "-".to_string(),
        |m| human(Duration::from_secs_f64(m / 1000.0)),
    )
}

fn opt_n(v: Option<u64>) -> String {
    v.map_or_else(|| "-".to_string(), |n| n.to_string())
}

/// The report of one run: figures, then the chart.
pub fn text(
    heading: &str,
    s: &Summary,
    o: &Outcome,
    width: usize,
    recovery: Option<Duration>,
) -> String {
    let mut r = String::new();
    let _ = writeln!(r, "{heading}");
    let _ = writeln!(r, "requests:               {}", s.requests);
    let _ = writeln!(r, "requests per client:    {:.2}", s.requests_per_client);
    let _ = writeln!(r, "busiest 100ms window:   {}", s.busiest_100ms);
    if s.busiest_100ms_after_recovery.is_some() {
        let _ = writeln!(
            r,
            "  after recovery:       {}",
            opt_n(s.busiest_100ms_after_recovery)
        );
    }
    let _ = writeln!(r, "median client success:  {}", opt_ms(s.median_success_ms));
    let _ = writeln!(r, "last client success:    {}", opt_ms(s.last_success_ms));
    let _ = writeln!(r, "clients that gave up:   {} of {}", s.gave_up, s.clients);
    if s.refused_by_budget > 0 {
        let _ = writeln!(r, "  refused by the budget: {}", s.refused_by_budget);
    }
    if s.truncated {
        let _ = writeln!(
            r,
            "stopped early: the simulation reached its event limit with clients still retrying"
        );
    }
    let _ = writeln!(r);
    let _ = writeln!(r, "requests per time slice:");
    r.push_str(&chart::render(&o.arrivals, width, 10, recovery));
    r
}

/// `--compare`: one row per jitter kind, then a small chart of each.
pub fn table(
    heading: &str,
    runs: &[(Summary, Outcome)],
    width: usize,
    recovery: Option<Duration>,
) -> String {
    let mut r = String::new();
    let _ = writeln!(r, "{heading}");
    let _ = writeln!(
        r,
        "{:<13} {:>9} {:>10} {:>8} {:>9} {:>13} {:>13} {:>8}",
        "jitter",
        "requests",
        "per client",
        "busiest",
        "after rec",
        "median ok",
        "last ok",
        "gave up"
    );
    for (s, _) in runs {
        let _ = writeln!(
            r,
            "{:<13} {:>9} {:>10.2} {:>8} {:>9} {:>13} {:>13} {:>8}",
            s.jitter,
            s.requests,
            s.requests_per_client,
            s.busiest_100ms,
            opt_n(s.busiest_100ms_after_recovery),
            opt_ms(s.median_success_ms),
            opt_ms(s.last_success_ms),
            s.gave_up
        );
    }
    let _ = writeln!(
        r,
        "(busiest: most requests in any 100ms window; after rec: counting only once the server is back)"
    );
    if runs.iter().any(|(s, _)| s.refused_by_budget > 0) {
        let refused: Vec<String> = runs
            .iter()
            .map(|(s, _)| format!("{} {}", s.jitter, s.refused_by_budget))
            .collect();
        let _ = writeln!(
            r,
            "(gave up because the group's budget was spent: {})",
            refused.join(", ")
        );
    }
    // One time axis for all, so the charts compare at a glance.
    let end = runs
        .iter()
        .filter_map(|(_, o)| o.arrivals.last().copied())
        .max()
        .unwrap_or_default();
    for (s, o) in runs {
        let _ = writeln!(r);
        let _ = writeln!(r, "{} jitter:", s.jitter);
        r.push_str(&chart::render_until(&o.arrivals, end, width, 5, recovery));
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn busiest_window_slides() {
        let a = [ms(0), ms(50), ms(99), ms(100), ms(150), ms(160), ms(199)];
        // [100, 200) holds 100, 150, 160 and 199.
        assert_eq!(busiest(&a, WINDOW), 4);
        assert_eq!(busiest(&[], WINDOW), 0);
        assert_eq!(busiest(&[ms(5); 4], WINDOW), 4);
    }

    #[test]
    fn summary_figures() {
        let o = Outcome {
            clients: 4,
            arrivals: vec![ms(0), ms(0), ms(0), ms(0), ms(1000), ms(1001), ms(1500)],
            successes: vec![ms(1000), ms(1001), ms(1500)],
            gave_up: 1,
            refused: 0,
            truncated: false,
        };
        let s = Summary::of("full", &o, Some(ms(1000)), None);
        assert_eq!(s.requests, 7);
        assert_eq!(s.busiest_100ms, 4);
        assert_eq!(s.busiest_100ms_after_recovery, Some(2));
        assert_eq!(s.requests_before_recovery, Some(4));
        assert_eq!(s.median_success_ms, Some(1001.0));
        assert_eq!(s.last_success_ms, Some(1500.0));
        assert_eq!((s.succeeded, s.gave_up), (3, 1));
    }
}
