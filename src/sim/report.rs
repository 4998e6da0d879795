//! What `--simulate` prints: figures from an [`Outcome`], as a text report,
//! a side-by-side table (`--compare`) or JSON.

use std::fmt::Write;
use std::time::Duration;

use serde::Serialize;

use super::{Outcome, chart, tally};
use crate::human::human;

/// The window the busiest-window figures count over.
pub const WINDOW: Duration = Duration::from_nanos(tally::WINDOW_NS);

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
    /// The simulation hit its request limit with clients still retrying.
    pub truncated: bool,
    /// Clients neither through nor given up when it stopped (0 unless
    /// truncated).
    pub still_retrying: u32,
    /// A single client's waits, in order (only with one client).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waits_ms: Option<Vec<f64>>,
    /// A rate limiter's model (`--fixed-window`): the most requests in any
    /// 100 ms between one of its resets and the next, and the requests it
    /// refused per request it served.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub busiest_100ms_after_reset: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rejected_per_served: Option<f64>,
}

fn ms(d: Duration) -> f64 {
    // Microsecond resolution, as the JSON log has it.
    (d.as_micros() as f64) / 1000.0
}

impl Summary {
    pub fn of(
        jitter: &str,
        o: &Outcome,
        recovery: Option<Duration>,
        waits: Option<Vec<Duration>>,
    ) -> Summary {
        let t = &o.tally;
        Summary {
            jitter: jitter.to_string(),
            clients: o.clients,
            requests: t.requests,
            requests_per_client: t.requests as f64 / f64::from(o.clients.max(1)),
            busiest_100ms: t.busiest,
            busiest_100ms_after_recovery: recovery.map(|_| t.busiest_after),
            requests_before_recovery: recovery.map(|_| t.before_recovery),
            median_success_ms: t.median_success.map(ms),
            last_success_ms: t.last_success.map(ms),
            succeeded: u32::try_from(t.succeeded).unwrap_or(u32::MAX),
            gave_up: o.gave_up,
            refused_by_budget: o.refused,
            truncated: o.truncated(),
            still_retrying: o.still_retrying,
            waits_ms: waits.map(|w| w.into_iter().map(ms).collect()),
            busiest_100ms_after_reset: o.at_reset,
            rejected_per_served: o.at_reset.map(|_| {
                let served = t.succeeded.max(1) as f64;
                t.requests.saturating_sub(t.succeeded) as f64 / served
            }),
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
    if let (Some(wave), Some(ratio)) = (s.busiest_100ms_after_reset, s.rejected_per_served) {
        let _ = writeln!(r, "  after a reset:        {wave}");
        let _ = writeln!(r, "rejected per served:    {ratio:.2}");
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
            "clients still retrying: {} of {} (stopped early at the request limit)",
            s.still_retrying, s.clients
        );
    }
    let _ = writeln!(r);
    let _ = writeln!(r, "{}", chart::TITLE);
    let end = o.tally.last_request.unwrap_or_default();
    r.push_str(&chart::render(&o.tally.timeline, end, width, 10, recovery));
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
    if runs.iter().any(|(s, _)| s.rejected_per_served.is_some()) {
        let waves: Vec<String> = runs
            .iter()
            .map(|(s, _)| {
                format!(
                    "{} {} in 100ms, {:.2} rejected per served",
                    s.jitter,
                    opt_n(s.busiest_100ms_after_reset),
                    s.rejected_per_served.unwrap_or_default()
                )
            })
            .collect();
        let _ = writeln!(r, "(after a reset: {})", waves.join("; "));
    }
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
    if runs.iter().any(|(s, _)| s.truncated) {
        let still: Vec<String> = runs
            .iter()
            .map(|(s, _)| format!("{} {}", s.jitter, s.still_retrying))
            .collect();
        let _ = writeln!(
            r,
            "(stopped early at the request limit; clients still retrying: {})",
            still.join(", ")
        );
    }
    // One time axis for all, so the charts compare at a glance.
    let end = runs
        .iter()
        .filter_map(|(_, o)| o.tally.last_request)
        .max()
        .unwrap_or_default();
    let _ = writeln!(r);
    let _ = writeln!(r, "{}", chart::TITLE);
    for (s, o) in runs {
        let _ = writeln!(r);
        let _ = writeln!(r, "{} jitter:", s.jitter);
        r.push_str(&chart::render(&o.tally.timeline, end, width, 5, recovery));
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::Tally;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn summary_figures() {
        let mut tally = Tally::new(4, Some(ms(1000)), false);
        for t in [0, 0, 0, 0, 1000, 1001, 1500] {
            tally.request(ms(t));
        }
        for t in [1000, 1001, 1500] {
            tally.success(ms(t));
        }
        let o = Outcome {
            clients: 4,
            tally,
            gave_up: 1,
            refused: 0,
            still_retrying: 0,
            at_reset: None,
        };
        let s = Summary::of("full", &o, Some(ms(1000)), None);
        assert_eq!(s.requests, 7);
        assert_eq!(s.busiest_100ms, 4);
        assert_eq!(s.busiest_100ms_after_recovery, Some(2));
        assert_eq!(s.requests_before_recovery, Some(4));
        assert_eq!(s.median_success_ms, Some(1001.0));
        assert_eq!(s.last_success_ms, Some(1500.0));
        assert_eq!((s.succeeded, s.gave_up), (3, 1));
        assert!(!s.truncated);
    }

    #[test]
    fn a_truncated_run_says_how_many_are_still_retrying() {
        let mut tally = Tally::new(10, None, false);
        tally.request(ms(0));
        tally.success(ms(0));
        let o = Outcome {
            clients: 10,
            tally,
            gave_up: 2,
            refused: 0,
            still_retrying: 7,
            at_reset: None,
        };
        let s = Summary::of("full", &o, None, None);
        assert!(s.truncated);
        assert_eq!(s.still_retrying, 7);
        let text = text("heading", &s, &o, 80, None);
        assert!(
            text.contains("clients still retrying: 7 of 10 (stopped early at the request limit)"),
            "{text}"
        );
        let json = serde_json::to_value(&s).expect("json");
        assert_eq!(json["still_retrying"], 7);
        let runs = vec![(s, o)];
        let table = table("heading", &runs, 80, None);
        assert!(table.contains("clients still retrying: full 7"), "{table}");
    }
}
