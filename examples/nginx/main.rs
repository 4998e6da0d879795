//! The nginx bench: herds of real `retry --http` processes, started at once,
//! against a real nginx whose `limit_req` admits 20 requests a second with
//! no burst (429 beyond), each row beside `retry --simulate` with the same
//! policy against `--capacity 20/s`: with the default bucket (100 ms worth,
//! two requests), with `--capacity-burst 1` (what `limit_req` without
//! `burst` is), and with `--capacity-burst 1` and the herd's own start-up
//! spread as `--stagger`.
//!
//! ```sh
//! apt-get install nginx-light      # or nginx
//! cargo build --release
//! cargo run --release --example nginx
//! cargo run --release --example nginx -- --clients 100,200 --variants none,full --rounds 5
//! ```
//! nginx runs as a private instance on 127.0.0.1 with its own prefix,
//! configuration and logs in a temporary directory, stopped at the end.
//! Options: `--clients` (default 100,200), `--variants` (none, full,
//! decorrelated, pace: full jitter with `--pace 18/s` on the local store;
//! default all), `--rounds` (real herds per row, default 3), `--seeds`
//! (simulations per row, default 10), `--nginx PATH`, `--binary PATH`.

#[path = "../herd/herd.rs"]
mod herd;
use herd::sibling_retry;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const RATE: u32 = 20;
const POLICY: [&str; 6] = ["--base", "200ms", "--cap", "3s", "--max", "10"];

struct Options {
    clients: Vec<usize>,
    variants: Vec<String>,
    rounds: usize,
    seeds: u64,
    nginx: PathBuf,
    binary: PathBuf,
}

fn options() -> Result<Options, String> {
    let mut o = Options {
        clients: vec![100, 200],
        variants: ["none", "full", "decorrelated", "pace"]
            .map(str::to_string)
            .to_vec(),
        rounds: 3,
        seeds: 10,
        nginx: PathBuf::from("/usr/sbin/nginx"),
        binary: sibling_retry(),
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    for pair in args.chunks(2) {
        let [flag, value] = pair else {
            return Err(format!("{} needs a value", pair[0]));
        };
        let num = || {
            value
                .parse::<usize>()
                .map_err(|_| format!("{flag}: not a number: {value}"))
        };
        match flag.as_str() {
            "--clients" => {
                o.clients = value
                    .split(',')
                    .map(|v| v.parse().map_err(|_| format!("--clients: {v}")))
                    .collect::<Result<_, _>>()?;
            }
            "--variants" => o.variants = value.split(',').map(str::to_string).collect(),
            "--rounds" => o.rounds = num()?,
            "--seeds" => o.seeds = num()? as u64,
            "--nginx" => o.nginx = PathBuf::from(value),
            "--binary" => o.binary = PathBuf::from(value),
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    Ok(o)
}

/// A private nginx on 127.0.0.1; stopped when dropped.
struct Nginx {
    child: Child,
    port: u16,
    access_log: PathBuf,
}

impl Nginx {
    fn start(binary: &Path, prefix: &Path) -> std::io::Result<Nginx> {
        // A free port: bound by us, released, then given to nginx.
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        for dir in ["logs", "html", "tmp"] {
            std::fs::create_dir_all(prefix.join(dir))?;
        }
        std::fs::write(prefix.join("html/index.html"), "ok\n")?;
        let p = prefix.display();
        let access_log = prefix.join("logs/access.log");
        // One process, in the foreground. limit_req runs in the preaccess
        // phase, so the location serves a file: a `return` would answer in
        // the rewrite phase, before the limit is ever asked.
        let conf = format!(
            "daemon off;
master_process off;
worker_processes 1;
error_log {p}/logs/error.log warn;
pid {p}/logs/nginx.pid;
events {{ worker_connections 8192; }}
http {{
    log_format timed '$msec $status';
    access_log {p}/logs/access.log timed;
    client_body_temp_path {p}/tmp/body;
    proxy_temp_path {p}/tmp/proxy;
    fastcgi_temp_path {p}/tmp/fastcgi;
    uwsgi_temp_path {p}/tmp/uwsgi;
    scgi_temp_path {p}/tmp/scgi;
    limit_req_zone $binary_remote_addr zone=herd:1m rate={RATE}r/s;
    limit_req_status 429;
    limit_req_log_level info;
    server {{
        listen 127.0.0.1:{port} backlog=4096;
        root {p}/html;
        location / {{ limit_req zone=herd; }}
    }}
}}
"
        );
        let conf_path = prefix.join("nginx.conf");
        std::fs::write(&conf_path, conf)?;
        let child = Command::new(binary)
            .arg("-p")
            .arg(prefix)
            .arg("-c")
            .arg(&conf_path)
            .arg("-e")
            .arg(prefix.join("logs/error.log"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        let nginx = Nginx {
            child,
            port,
            access_log,
        };
        let until = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if Instant::now() > until {
                return Err(std::io::Error::other("nginx did not start"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(nginx)
    }

    /// Every request logged since the last call: (seconds, status).
    fn take_log(&self) -> std::io::Result<Vec<(f64, u16)>> {
        let text = std::fs::read_to_string(&self.access_log)?;
        // nginx appends (O_APPEND): emptying the file starts it afresh.
        std::fs::write(&self.access_log, "")?;
        Ok(text
            .lines()
            .filter_map(|l| {
                let (t, s) = l.split_once(' ')?;
                Some((t.parse().ok()?, s.trim().parse().ok()?))
            })
            .collect())
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Served, rejected and gave up: one herd's or one simulation's.
#[derive(Debug, Clone, Copy, Default)]
struct Figures {
    served: f64,
    rejected: f64,
    gave_up: f64,
}

impl Figures {
    fn mean(all: &[Figures]) -> Figures {
        let n = all.len().max(1) as f64;
        Figures {
            served: all.iter().map(|f| f.served).sum::<f64>() / n,
            rejected: all.iter().map(|f| f.rejected).sum::<f64>() / n,
            gave_up: all.iter().map(|f| f.gave_up).sum::<f64>() / n,
        }
    }

    fn show(&self) -> String {
        format!(
            "{:.0} / {:.0} / {:.1}",
            self.served, self.rejected, self.gave_up
        )
    }
}

fn policy(variant: &str) -> Result<Vec<String>, String> {
    let mut p: Vec<String> = POLICY.map(str::to_string).to_vec();
    match variant {
        "none" | "full" | "decorrelated" => p.extend(["--jitter".into(), variant.into()]),
        "pace" => p.extend(["--jitter", "full", "--pace", "18/s"].map(str::to_string)),
        _ => return Err(format!("unknown variant {variant}")),
    }
    Ok(p)
}

/// `retry --simulate` with the policy, averaged over `seeds` seeds.
fn simulate(
    o: &Options,
    clients: usize,
    policy: &[String],
    extra: &[String],
) -> std::io::Result<Figures> {
    let mut all = Vec::new();
    for seed in 1..=o.seeds {
        let out = Command::new(&o.binary)
            .env_clear()
            .args(["--simulate", &clients.to_string()])
            .args(["--capacity", &format!("{RATE}/s")])
            .args(extra)
            .args(policy)
            .args(["--seed", &seed.to_string(), "--format", "json"])
            .output()?;
        let v: serde_json::Value =
            serde_json::from_slice(&out.stdout).map_err(std::io::Error::other)?;
        let r = &v["runs"][0];
        let requests = r["requests"].as_f64().unwrap_or(0.0);
        let succeeded = r["succeeded"].as_f64().unwrap_or(0.0);
        all.push(Figures {
            served: succeeded,
            rejected: requests - succeeded,
            gave_up: r["gave_up"].as_f64().unwrap_or(0.0),
        });
    }
    Ok(Figures::mean(&all))
}

fn load() -> String {
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    load.split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let o = options()?;
    if !o.nginx.exists() {
        return Err(format!(
            "{} not found: install nginx (Debian: apt-get install nginx-light) or give --nginx PATH",
            o.nginx.display()
        )
        .into());
    }
    let dir = tempfile::tempdir()?;
    let nginx = Nginx::start(&o.nginx, &dir.path().join("nginx"))?;
    let url = format!("http://127.0.0.1:{}/", nginx.port);
    println!(
        "nginx limit_req {RATE}r/s, no burst; {}; real: mean of {} herds, sim: mean of {} seeds; load before: {}",
        POLICY.join(" "),
        o.rounds,
        o.seeds,
        load()
    );
    println!("served / rejected / gave up");
    println!(
        "{:>7} {:<13} {:>24} {:>9} {:>20} {:>20} {:>20}",
        "clients",
        "variant",
        "real (min-max gave up)",
        "spawned",
        "sim, burst 2",
        "sim, burst 1",
        "burst 1 + stagger"
    );
    for &clients in &o.clients {
        for variant in &o.variants {
            let policy = policy(variant)?;
            let mut real = Vec::new();
            let mut spread = Vec::new();
            for round in 0..o.rounds {
                let state = dir
                    .path()
                    .join(format!("state-{clients}-{variant}-{round}"));
                let shared = if variant == "pace" {
                    vec![
                        "--group".to_string(),
                        "herd".to_string(),
                        "--state".to_string(),
                        state.display().to_string(),
                    ]
                } else {
                    Vec::new()
                };
                let p = herd::Params {
                    retry: o.binary.clone(),
                    clients,
                    outage: Duration::ZERO,
                    policy: policy.clone(),
                    shared,
                    capacity: None,
                    seed: 1 + (round * clients) as u64,
                    logs: dir.path().join(format!("logs-{clients}-{variant}-{round}")),
                };
                nginx.take_log()?;
                let started = Instant::now();
                let mut children = herd::spawn(&p, &url)?;
                spread.push(started.elapsed());
                let codes = herd::wait(&mut children)?;
                // The last responses' log lines are written as they go out.
                std::thread::sleep(Duration::from_millis(200));
                let log = nginx.take_log()?;
                real.push(Figures {
                    served: log.iter().filter(|(_, s)| *s == 200).count() as f64,
                    rejected: log.iter().filter(|(_, s)| *s == 429).count() as f64,
                    gave_up: codes.iter().filter(|c| **c != 0).count() as f64,
                });
            }
            let spawned = spread.iter().sum::<Duration>() / spread.len().max(1) as u32;
            let stagger = format!("{}ms", spawned.as_millis().max(1));
            let sim2 = simulate(&o, clients, &policy, &[])?;
            let one = ["--capacity-burst".to_string(), "1".to_string()];
            let sim1 = simulate(&o, clients, &policy, &one)?;
            let staggered = [one.to_vec(), vec!["--stagger".to_string(), stagger.clone()]].concat();
            let sim1s = simulate(&o, clients, &policy, &staggered)?;
            let lo = real.iter().map(|f| f.gave_up).fold(f64::INFINITY, f64::min);
            let hi = real.iter().map(|f| f.gave_up).fold(0.0, f64::max);
            println!(
                "{:>7} {:<13} {:>24} {:>9} {:>20} {:>20} {:>20}",
                clients,
                variant,
                format!("{} ({lo:.0}-{hi:.0})", Figures::mean(&real).show()),
                stagger,
                sim2.show(),
                sim1.show(),
                sim1s.show()
            );
        }
    }
    println!("load after: {}", load());
    Ok(())
}
