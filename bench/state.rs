//! What shared state adds: the latency of one state operation on each store,
//! and what a whole invocation with `--group ... --budget --breaker` costs
//! over one without.
//!
//! `cargo build --release && cargo run --release --example state-bench [-- ROUNDS]`
//!
//! Starts its own redis-server (unix socket and a 127.0.0.1 port, persistence
//! off) in a temporary directory. Stores and operations are timed
//! interleaved, in a rotating order, so that noise on the machine falls on
//! all of them alike. Prints a markdown table.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use retry_tool::state::rules::{Breaker, Budget, Op, Pace};
use retry_tool::state::{AnyStore, Store, StoreAt};

const OPS: [&str; 4] = ["admit", "record", "plan", "finish"];

fn op(name: &str) -> Op {
    let breaker = Breaker {
        threshold: 1_000_000,
        cooldown: 30_000_000,
    };
    match name {
        "admit" => Op::Admit {
            lease: 60_000_000,
            breaker,
        },
        "record" => Op::Record {
            budget: Budget::DEFAULT,
            success: false,
        },
        "plan" => Op::Plan {
            delay: 1_000,
            deadline_in: None,
            // A budget that never runs out, so every plan also takes a pace slot.
            budget: Some(Budget {
                max_milli: i64::MAX / 4,
                ratio_milli: 100,
            }),
            pace: Some(Pace {
                interval: 1,
                burst: 1,
            }),
        },
        _ => Op::Finish {
            breaker,
            success: true,
            trial: false,
        },
    }
}

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn redis_server(dir: &Path, sock: &Path, port: u16) -> Server {
    let child = Command::new("redis-server")
        .args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--unixsocket",
        ])
        .arg(sock)
        .args(["--save", "", "--appendonly", "no", "--dir"])
        .arg(dir)
        .stdout(Stdio::null())
        .spawn()
        .expect("redis-server (apt-get install redis-server)");
    let until = Instant::now() + Duration::from_secs(10);
    while std::os::unix::net::UnixStream::connect(sock).is_err() {
        assert!(Instant::now() < until, "redis-server did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    Server(child)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i]
}

fn summary(samples: &mut [f64]) -> (f64, f64, f64) {
    samples.sort_by(f64::total_cmp);
    (
        percentile(samples, 0.5),
        percentile(samples, 0.9),
        percentile(samples, 0.99),
    )
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(2000);
    let tmp = tempfile::tempdir().expect("temp dir");
    let sock = tmp.path().join("redis.sock");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let _server = redis_server(tmp.path(), &sock, port);
    let stores = [
        ("local (/tmp)", StoreAt::Dir(tmp.path().join("state"))),
        (
            "redis unix socket",
            StoreAt::Url(format!("unix://{}", sock.display())),
        ),
        (
            "redis 127.0.0.1 TCP",
            StoreAt::Url(format!("redis://127.0.0.1:{port}/0")),
        ),
    ];
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");

    // Steady state: one open store each, every op timed in turn.
    let mut open: Vec<AnyStore> = stores
        .iter()
        .map(|(_, at)| {
            let mut s = AnyStore::new(at, None).expect("store");
            rt.block_on(s.open("bench")).expect("open");
            rt.block_on(s.apply("bench", op("admit"))).expect("warm up");
            s
        })
        .collect();
    let mut samples = vec![vec![Vec::with_capacity(rounds); OPS.len()]; stores.len()];
    for round in 0..rounds {
        for k in 0..stores.len() {
            let si = (k + round) % stores.len();
            for (oi, name) in OPS.iter().enumerate() {
                let t = Instant::now();
                rt.block_on(open[si].apply("bench", op(name))).expect("op");
                samples[si][oi].push(t.elapsed().as_secs_f64() * 1e6);
            }
        }
    }

    // Cold: what each invocation pays once to open the store and make its
    // first call (a new connection, for Redis).
    let cold_rounds = (rounds / 20).max(20);
    let mut cold = vec![Vec::with_capacity(cold_rounds); stores.len()];
    for round in 0..cold_rounds {
        for k in 0..stores.len() {
            let si = (k + round) % stores.len();
            let t = Instant::now();
            let mut s = AnyStore::new(&stores[si].1, None).expect("store");
            rt.block_on(async {
                s.open("bench").await?;
                s.apply("bench", op("admit")).await
            })
            .expect("cold op");
            cold[si].push(t.elapsed().as_secs_f64() * 1e6);
        }
    }

    println!("| store | op | median µs | p90 µs | p99 µs |");
    println!("|---|---|---|---|---|");
    for (si, (name, _)) in stores.iter().enumerate() {
        for (oi, o) in OPS.iter().enumerate() {
            let (m, p90, p99) = summary(&mut samples[si][oi]);
            println!("| {name} | {o} | {m:.0} | {p90:.0} | {p99:.0} |");
        }
        let (m, p90, p99) = summary(&mut cold[si]);
        println!("| {name} | open + first op | {m:.0} | {p90:.0} | {p99:.0} |");
    }

    invocations(&stores, tmp.path(), (rounds / 10).max(30));
}

/// Whole runs of the release binary: `retry --max 1 -- true` alone and with
/// `--group bench --budget --breaker` on each store (open, admit, record,
/// finish), interleaved.
fn invocations(stores: &[(&str, StoreAt)], tmp: &Path, rounds: usize) {
    let bin: PathBuf = std::env::current_exe()
        .ok()
        .and_then(|p| Some(p.parent()?.parent()?.join("retry")))
        .filter(|p| p.exists())
        .expect("build the binary first: cargo build --release");
    let mut variants: Vec<(String, Vec<String>)> = vec![("no shared state".into(), vec![])];
    for (name, at) in stores {
        let s = match at {
            StoreAt::Dir(d) => d.display().to_string(),
            StoreAt::Url(u) => u.clone(),
            StoreAt::Default => continue,
        };
        variants.push((
            format!("--budget --breaker, {name}"),
            [
                "--group",
                "bench-run",
                "--state",
                &s,
                "--budget",
                "--breaker",
            ]
            .map(String::from)
            .to_vec(),
        ));
    }
    let mut times = vec![Vec::with_capacity(rounds); variants.len()];
    for round in 0..rounds {
        for k in 0..variants.len() {
            let vi = (k + round) % variants.len();
            let t = Instant::now();
            let status = Command::new(&bin)
                .args(&variants[vi].1)
                .args(["--max", "1", "--", "true"])
                .env("HOME", tmp)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .expect("run retry");
            assert!(status.success());
            times[vi].push(t.elapsed().as_secs_f64() * 1e3);
        }
    }
    println!();
    println!("| `retry --max 1 -- true` with | median ms | added ms |");
    println!("|---|---|---|");
    let base = summary(&mut times[0]).0;
    for (vi, (name, _)) in variants.iter().enumerate() {
        let (m, _, _) = summary(&mut times[vi]);
        println!("| {name} | {m:.3} | {:+.3} |", m - base);
    }
}
