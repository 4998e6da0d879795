//! The herd bench: real `retry --http` processes against a loopback server
//! that fails them all at once, then stays down for an outage, next to
//! `retry --simulate` with the same policy.
//!
//! ```sh
//! cargo build --release && cargo run --release --example herd -- 100
//! cargo run --release --example herd -- 1000 none,full   # one size, chosen kinds
//! ```
//! Arguments: N (clients, default 100), jitter kinds (comma-separated,
//! default all), the retry binary (default: the `retry` built beside this example).

#[path = "herd.rs"]
mod herd;
use herd::sibling_retry;

use std::path::PathBuf;
use std::time::Duration;

const OUTAGE: Duration = Duration::from_secs(5);

fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn pct(v: &mut [f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * p).round() as usize]
}

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let clients: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(100);
    let kinds: Vec<String> = args
        .get(1)
        .map(|k| k.split(',').map(str::to_string).collect())
        .unwrap_or_else(|| {
            ["none", "full", "equal", "decorrelated", "additive"]
                .map(str::to_string)
                .to_vec()
        });
    let retry = args.get(2).map_or_else(sibling_retry, PathBuf::from);
    let logs = tempfile::tempdir()?;
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "herd: {clients} clients, outage {}s, --base 100ms --cap 10s --max 30; load before: {}",
        OUTAGE.as_secs(),
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    println!(
        "{:<13} {:>9} {:>9} {:>8} {:>10} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8} {:>8} {:>6}",
        "jitter",
        "requests",
        "sim",
        "in outage",
        "sim",
        "1st wave",
        "after rec",
        "sim",
        "last ok s",
        "sim",
        "lag p50",
        "lag p99",
        "priv KiB",
        "ok"
    );
    let mut none_after = None;
    for kind in &kinds {
        let mut policy: Vec<String> =
            ["--base", "100ms", "--cap", "10s", "--max", "30", "--jitter"]
                .map(str::to_string)
                .to_vec();
        policy.push(kind.clone());
        let p = herd::Params {
            retry: retry.clone(),
            clients,
            outage: OUTAGE,
            policy,
            shared: Vec::new(),
            capacity: None,
            seed: 1,
            logs: logs.path().join(kind),
        };
        let h = herd::run(&p)?;
        let f = h.figures(clients, OUTAGE);
        let (sim_req, sim_after, sim_last, sim_before) = herd::simulate(&p)?;
        let mut lags = h.lags_ms.clone();
        let mut mem: Vec<f64> = h.private_kib.iter().map(|k| *k as f64).collect();
        println!(
            "{:<13} {:>9} {:>9} {:>8} {:>10} {:>10} {:>9} {:>9} {:>9.2} {:>9.2} {:>9.2} {:>8.2} {:>8.0} {:>6}",
            kind,
            f.requests,
            sim_req,
            f.during_outage,
            sim_before,
            f.busiest_retry_wave,
            f.busiest_after_recovery,
            sim_after,
            f.last_success.map_or(f64::NAN, |d| d.as_secs_f64()),
            sim_last / 1000.0,
            median(&mut lags),
            pct(&mut lags, 0.99),
            median(&mut mem),
            format!("{}/{clients}", f.succeeded),
        );
        let diff = (f.requests as f64 / sim_req as f64 - 1.0) * 100.0;
        let mut checks = vec![
            (
                format!("requests within 10% of the simulation ({diff:+.1}%)"),
                diff.abs() <= 10.0,
            ),
            ("every client succeeds".to_string(), f.succeeded == clients),
        ];
        match kind.as_str() {
            "none" => {
                none_after = Some(f.busiest_after_recovery);
                checks.push((
                    format!(
                        "first retry wave: {} >= 0.9 N in one 100ms window",
                        f.busiest_retry_wave
                    ),
                    f.busiest_retry_wave as f64 >= 0.9 * clients as f64,
                ));
            }
            "full" => {
                checks.push((
                    format!(
                        "busiest after recovery {} <= 1.5 x simulation ({sim_after})",
                        f.busiest_after_recovery
                    ),
                    f.busiest_after_recovery as f64 <= 1.5 * sim_after as f64,
                ));
                if let Some(none) = none_after {
                    checks.push((
                        format!(
                            "busiest after recovery {} <= no-jitter's ({none}) / 10",
                            f.busiest_after_recovery
                        ),
                        f.busiest_after_recovery as f64 <= none as f64 / 10.0,
                    ));
                }
            }
            _ => {}
        }
        for (what, ok) in checks {
            println!("    {} {what}", if ok { "PASS" } else { "FAIL" });
        }
    }
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "load after: {}",
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    Ok(())
}
