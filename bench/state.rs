//! What shared state adds: the latency of one state operation on each store,
//! and what a whole invocation with `--group ... --budget --breaker` costs
//! over one without.
//!
//! `cargo build --release && cargo run --release --example state-bench [-- ROUNDS]`
//!
//! Starts its own Redis deployments in a temporary directory, persistence
//! off: one redis-server (a unix socket and a 127.0.0.1 port), a master with
//! a replica watched by three sentinels, and a cluster of three masters and
//! three replicas (`deploy.rs`). Stores and operations are timed
//! interleaved, in a rotating order, so that noise on the machine falls on
//! all of them alike; a call through the cluster is set beside one to the
//! single server over TCP. Whole invocations are counted too: how many
//! scripts each runs on the servers. Prints markdown tables.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use retry_tool::state::rules::{Breaker, Budget, Op, Pace};
use retry_tool::state::{AnyStore, Store, StoreAt};

#[path = "deploy.rs"]
mod deploy;
use deploy::Server;

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
    let until = Instant::now() + std::time::Duration::from_secs(10);
    while std::os::unix::net::UnixStream::connect(sock).is_err() {
        assert!(Instant::now() < until, "redis-server did not start");
        std::thread::sleep(std::time::Duration::from_millis(20));
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
    let (_sentinel, master, sentinel_url) = deploy::sentinel(&tmp.path().join("sentinel"));
    let (_cluster, masters, cluster_url) = deploy::cluster(&tmp.path().join("cluster"), true);
    let (_bare, bare_masters, bare_url) = deploy::cluster(&tmp.path().join("bare"), false);
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
        // The sentinels' master, directly: one server that replicates each
        // change, as every master of the cluster does.
        (
            "redis 127.0.0.1 TCP, with a replica",
            StoreAt::Url(format!("redis://127.0.0.1:{master}/0")),
        ),
        ("redis sentinel, TCP", StoreAt::Url(sentinel_url)),
        ("redis cluster (3+3), TCP", StoreAt::Url(cluster_url)),
        (
            "redis cluster (3 masters, no replicas), TCP",
            StoreAt::Url(bare_url),
        ),
    ];
    // Where each store's scripts run, to count them.
    let script_servers: Vec<Vec<u16>> = vec![
        vec![],
        vec![port],
        vec![port],
        vec![master],
        vec![master],
        masters,
        bare_masters,
    ];
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");

    // Steady state: one open store each, every op timed in turn.
    let mut open: Vec<AnyStore> = stores
        .iter()
        .map(|(_, at)| {
            let mut s = AnyStore::new(at, None, None).expect("store");
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
            let mut s = AnyStore::new(&stores[si].1, None, None).expect("store");
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
    let mut figures = vec![vec![(0.0, 0.0); OPS.len()]; stores.len()];
    for (si, (name, _)) in stores.iter().enumerate() {
        for (oi, o) in OPS.iter().enumerate() {
            let (m, p90, p99) = summary(&mut samples[si][oi]);
            figures[si][oi] = (m, p99);
            println!("| {name} | {o} | {m:.0} | {p90:.0} | {p99:.0} |");
        }
        let (m, p90, p99) = summary(&mut cold[si]);
        println!("| {name} | open + first op | {m:.0} | {p90:.0} | {p99:.0} |");
    }

    // A call through a cluster against one to a single server, all over
    // TCP (the target is at most 1.5 times): like for like (no replica, or
    // a replica for every master), and the replicated cluster against the
    // lone server; through Sentinel against its master directly.
    let (single, replicated, sentinel, cluster, bare) = (2, 3, 4, 5, 6);
    println!();
    println!(
        "| op | cluster (3) / single server, median | p99 | cluster (3+3) / server with a replica, median | p99 | cluster (3+3) / single server, median | p99 | sentinel / its master, median | p99 |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for (oi, o) in OPS.iter().enumerate() {
        let ratio = |a: usize, b: usize| {
            let ((am, ap), (bm, bp)) = (figures[a][oi], figures[b][oi]);
            format!("{:.2} | {:.2}", am / bm, ap / bp)
        };
        println!(
            "| {o} | {} | {} | {} | {} |",
            ratio(bare, single),
            ratio(cluster, replicated),
            ratio(cluster, single),
            ratio(sentinel, replicated)
        );
    }

    invocations(&stores, &script_servers, tmp.path(), (rounds / 10).max(30));
}

/// Whole runs of the release binary: `retry --max 1 -- true` alone and with
/// `--group bench --budget --breaker` on each store (open, admit, record,
/// finish), interleaved.
fn invocations(stores: &[(&str, StoreAt)], servers: &[Vec<u16>], tmp: &Path, rounds: usize) {
    let bin: PathBuf = std::env::current_exe()
        .ok()
        .and_then(|p| Some(p.parent()?.parent()?.join("retry")))
        .filter(|p| p.exists())
        .expect("build the binary first: cargo build --release");
    let mut variants: Vec<(String, Vec<String>, Vec<u16>)> =
        vec![("no shared state".into(), vec![], vec![])];
    for ((name, at), ports) in stores.iter().zip(servers) {
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
            ports.clone(),
        ));
    }
    let run = |args: &[String]| {
        let status = Command::new(&bin)
            .args(args)
            .args(["--max", "1", "--", "true"])
            .env("HOME", tmp)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("run retry");
        assert!(status.success());
    };
    // Scripts per run, on the servers: the same for every topology.
    let per_run: Vec<Option<f64>> = variants
        .iter()
        .map(|(_, args, ports)| {
            if ports.is_empty() {
                return None;
            }
            let count = || ports.iter().map(|p| deploy::scripts_run(*p)).sum::<u64>();
            let before = count();
            for _ in 0..20 {
                run(args);
            }
            Some((count() - before) as f64 / 20.0)
        })
        .collect();
    let mut times = vec![Vec::with_capacity(rounds); variants.len()];
    for round in 0..rounds {
        for k in 0..variants.len() {
            let vi = (k + round) % variants.len();
            let t = Instant::now();
            run(&variants[vi].1);
            times[vi].push(t.elapsed().as_secs_f64() * 1e3);
        }
    }
    println!();
    println!("| `retry --max 1 -- true` with | median ms | added ms | scripts per run |");
    println!("|---|---|---|---|");
    let base = summary(&mut times[0]).0;
    for (vi, (name, _, _)) in variants.iter().enumerate() {
        let (m, _, _) = summary(&mut times[vi]);
        let scripts = per_run[vi].map_or("-".to_string(), |n| format!("{n:.1}"));
        println!("| {name} | {m:.3} | {:+.3} | {scripts} |", m - base);
    }
}
