//! The fleet bench: the herd of `examples/herd` (N real `retry --http`
//! processes failed at once, then a 5 s outage) against a server with a
//! capacity, with no shared state, with `--budget` and with `--pace` below
//! the capacity, each on the local store and on a private Redis server;
//! every real row next to `retry --simulate` with the same parameters.
//!
//! ```sh
//! cargo build --release
//! cargo run --release --example fleet -- --clients 300 --capacity 60 --rate 45
//! cargo run --release --example fleet -- --clients 1000 --capacity 100 --rate 85 --stores redis
//! ```
//! Other options: `--variants none,budget,pace`, `--stores local,redis`,
//! `--binary PATH` (default: the `retry` built beside this example).

#[path = "../herd/herd.rs"]
mod herd;
use herd::sibling_retry;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const OUTAGE: Duration = Duration::from_secs(5);
const POLICY: [&str; 8] = [
    "--base", "20ms", "--cap", "10s", "--max", "30", "--jitter", "full",
];

struct Options {
    clients: usize,
    capacity: f64,
    rate: f64,
    variants: Vec<String>,
    stores: Vec<String>,
    binary: PathBuf,
}

fn options() -> Result<Options, String> {
    let mut o = Options {
        clients: 100,
        capacity: 60.0,
        rate: 25.0,
        variants: ["none", "budget", "pace"].map(str::to_string).to_vec(),
        stores: ["local", "redis"].map(str::to_string).to_vec(),
        binary: sibling_retry(),
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    for pair in args.chunks(2) {
        let [flag, value] = pair else {
            return Err(format!("{} needs a value", pair[0]));
        };
        let num = || {
            value
                .parse::<f64>()
                .map_err(|_| format!("{flag}: not a number: {value}"))
        };
        let list = || value.split(',').map(str::to_string).collect::<Vec<_>>();
        match flag.as_str() {
            "--clients" => o.clients = num()? as usize,
            "--capacity" => o.capacity = num()?,
            "--rate" => o.rate = num()?,
            "--variants" => o.variants = list(),
            "--stores" => o.stores = list(),
            "--binary" => o.binary = PathBuf::from(value),
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    Ok(o)
}

/// A private redis-server on a unix socket, persistence off; stopped when dropped.
struct Redis {
    child: Child,
    url: String,
}

impl Redis {
    fn start(dir: &Path) -> std::io::Result<Redis> {
        let sock = dir.join("redis.sock");
        let child = Command::new("redis-server")
            .args(["--port", "0", "--unixsocket"])
            .arg(&sock)
            .args(["--save", "", "--appendonly", "no", "--maxclients", "4000"])
            .arg("--dir")
            .arg(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        let redis = Redis {
            child,
            url: format!("unix://{}", sock.display()),
        };
        let until = Instant::now() + Duration::from_secs(10);
        while std::os::unix::net::UnixStream::connect(&sock).is_err() {
            if Instant::now() > until {
                return Err(std::io::Error::other("redis-server did not start"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(redis)
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn load() -> String {
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    load.split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

fn secs(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_string(), |s| format!("{s:.2}"))
}

/// One row's figures: real, then simulated.
struct Row {
    requests: usize,
    during: usize,
    after: usize,
    last: Option<f64>,
    gave_up: usize,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let o = options()?;
    let dir = tempfile::tempdir()?;
    let redis = if o.stores.iter().any(|s| s == "redis") {
        Some(Redis::start(dir.path())?)
    } else {
        None
    };
    println!(
        "fleet: {} clients, outage {}s, capacity {}/s, {}; --pace {}/s; load before: {}",
        o.clients,
        OUTAGE.as_secs(),
        o.capacity,
        POLICY.join(" "),
        o.rate,
        load()
    );
    println!(
        "{:<6} {:<7} {:>9} {:>7} {:>9} {:>7} {:>9} {:>5} {:>9} {:>7} {:>7} {:>5} {:>8}",
        "store",
        "variant",
        "requests",
        "sim",
        "in outage",
        "sim",
        "after rec",
        "sim",
        "last ok s",
        "sim",
        "gave up",
        "sim",
        "warnings"
    );
    for store in &o.stores {
        let at = match (store.as_str(), &redis) {
            ("local", _) => None,
            ("redis", Some(r)) => Some(r.url.clone()),
            _ => return Err(format!("unknown store {store}").into()),
        };
        let mut alone: Option<Row> = None;
        for variant in &o.variants {
            let mut policy: Vec<String> = POLICY.map(str::to_string).to_vec();
            match variant.as_str() {
                "none" => {}
                "budget" => policy.push("--budget".into()),
                "pace" => policy.extend(["--pace".into(), format!("{}/s", o.rate)]),
                _ => return Err(format!("unknown variant {variant}").into()),
            }
            let state = at.clone().unwrap_or_else(|| {
                dir.path()
                    .join(format!("local-{variant}"))
                    .display()
                    .to_string()
            });
            let shared = if variant == "none" {
                Vec::new()
            } else {
                vec![
                    "--group".to_string(),
                    format!("fleet-{}-{variant}", o.clients),
                    "--state".to_string(),
                    state,
                ]
            };
            let p = herd::Params {
                retry: o.binary.clone(),
                clients: o.clients,
                outage: OUTAGE,
                policy,
                shared,
                capacity: Some(o.capacity),
                seed: 1,
                logs: dir.path().join(format!("logs-{store}-{variant}")),
            };
            let started = Instant::now();
            let h = herd::run(&p)?;
            let took = started.elapsed();
            let f = h.figures(o.clients, OUTAGE);
            let s = herd::simulate_json(&p)?;
            let real = Row {
                requests: f.requests,
                during: f.during_outage,
                after: f.busiest_after_recovery,
                last: f.last_success.map(|d| d.as_secs_f64()),
                gave_up: f.gave_up,
            };
            let sim = Row {
                requests: s["requests"].as_u64().unwrap_or(0) as usize,
                during: s["requests_before_recovery"].as_u64().unwrap_or(0) as usize,
                after: s["busiest_100ms_after_recovery"].as_u64().unwrap_or(0) as usize,
                last: s["last_success_ms"].as_f64().map(|ms| ms / 1000.0),
                gave_up: s["gave_up"].as_u64().unwrap_or(0) as usize,
            };
            println!(
                "{:<6} {:<7} {:>9} {:>7} {:>9} {:>7} {:>9} {:>5} {:>9} {:>7} {:>7} {:>5} {:>8}",
                store,
                variant,
                real.requests,
                sim.requests,
                real.during,
                sim.during,
                real.after,
                sim.after,
                secs(real.last),
                secs(sim.last),
                real.gave_up,
                sim.gave_up,
                h.warnings.len()
            );
            if let Some(w) = h.warnings.first() {
                println!("    first warning: {w}");
            }
            println!("    ({:.1}s, load {})", took.as_secs_f64(), load());
            match variant.as_str() {
                "none" => alone = Some(real),
                "pace" => checks(&o, &real, alone.as_ref()),
                _ => {}
            }
        }
    }
    println!("load after: {}", load());
    Ok(())
}

/// The pace targets, against the unshared run on the same store.
fn checks(o: &Options, paced: &Row, alone: Option<&Row>) {
    let mut checks = Vec::new();
    let window = o.rate / 10.0;
    let off = (paced.after as f64 / window - 1.0) * 100.0;
    checks.push((
        format!(
            "busiest 100 ms after recovery {} within 20% of RATE/10 = {window} ({off:+.0}%)",
            paced.after
        ),
        off.abs() <= 20.0,
    ));
    checks.push((
        format!("every client succeeds ({} gave up)", paced.gave_up),
        paced.gave_up == 0,
    ));
    if let Some(a) = alone {
        let ratio = a.during as f64 / paced.during.max(1) as f64;
        checks.push((
            format!(
                "requests during the outage {} vs {} unshared: {ratio:.1}x fewer (>= 5x)",
                paced.during, a.during
            ),
            ratio >= 5.0,
        ));
        checks.push((
            format!(
                "last success {} s no later than unshared {} s",
                secs(paced.last),
                secs(a.last)
            ),
            matches!((paced.last, a.last), (Some(p), Some(a)) if p <= a),
        ));
    }
    for (what, ok) in checks {
        println!("    {} {what}", if ok { "PASS" } else { "FAIL" });
    }
}
