//! A real thundering herd on loopback: N `retry --http` processes against a
//! server that holds the first N requests until all have arrived, fails them
//! all in the same instant, stays down for an outage, then recovers (with a
//! capacity, if given: requests beyond it fail). Every arrival is recorded,
//! and each client's JSON log gives its planned and actual waits. Shared by
//! the `herd` and `fleet` examples (the benches) and a small herd in the
//! integration tests.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// One herd run.
#[derive(Debug, Clone)]
pub struct Params {
    pub retry: PathBuf,
    pub clients: usize,
    pub outage: Duration,
    /// Policy flags given to every client (and to the simulation).
    pub policy: Vec<String>,
    /// Flags given to the real clients only (`--group`, `--state`).
    pub shared: Vec<String>,
    /// Requests a second the recovered server admits (a token bucket holding
    /// 100 ms worth, full when the outage ends); None: all.
    pub capacity: Option<f64>,
    /// Client i gets `--seed seed + i`.
    pub seed: u64,
    /// Where the clients' logs go.
    pub logs: PathBuf,
}

/// What happened, times relative to the moment the held requests failed.
#[derive(Debug, Clone, Default)]
pub struct Herd {
    /// Every request; the N held ones count at 0.
    pub arrivals: Vec<Duration>,
    pub successes: Vec<Duration>,
    pub exit_codes: Vec<i32>,
    /// Actual minus planned wait, per wait, in ms.
    pub lags_ms: Vec<f64>,
    /// Private memory (Private_Clean + Private_Dirty) per client during the outage, KiB.
    pub private_kib: Vec<u64>,
    /// Warnings in the clients' logs (a shared-state store that failed).
    pub warnings: Vec<String>,
}

#[derive(Default)]
struct State {
    held: usize,
    release: Option<Instant>,
    arrivals: Vec<Instant>,
    successes: Vec<Instant>,
    /// The capacity's token bucket: tokens, and when last refilled.
    tokens: f64,
    refilled: Option<Instant>,
}

struct Server {
    state: Mutex<State>,
    released: Condvar,
    clients: usize,
    outage: Duration,
    capacity: Option<f64>,
}

impl Server {
    fn handle(&self, mut conn: TcpStream) {
        // Read the request head; the requests carry no body.
        let mut reader = BufReader::new(match conn.try_clone() {
            Ok(c) => c,
            Err(_) => return,
        });
        let mut line = String::new();
        loop {
            line.clear();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) if line == "\r\n" || line == "\n" => break,
                Ok(_) => {}
            }
        }
        let ok = {
            let now = Instant::now();
            let mut s = self.state.lock().expect("state");
            match s.release {
                None => {
                    s.held += 1;
                    if s.held == self.clients {
                        s.release = Some(now);
                        self.released.notify_all();
                    }
                    while s.release.is_none() {
                        s = self.released.wait(s).expect("state");
                    }
                    let at = s.release.expect("released");
                    s.arrivals.push(at);
                    false
                }
                Some(at) => {
                    s.arrivals.push(now);
                    let recovered = at + self.outage;
                    let up = now >= recovered && self.admit(&mut s, recovered, now);
                    if up {
                        s.successes.push(now);
                    }
                    up
                }
            }
        };
        let status = if ok {
            "200 OK"
        } else {
            "503 Service Unavailable"
        };
        let _ = write!(
            conn,
            "HTTP/1.1 {status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        );
        let _ = conn.flush();
        let mut rest = [0u8; 64];
        let _ = conn.shutdown(std::net::Shutdown::Write);
        let _ = conn.read(&mut rest);
    }
}

impl Server {
    /// The capacity's token bucket, as the simulator's model: one 100 ms
    /// window's worth (at least one), full when the server recovers.
    fn admit(&self, s: &mut State, recovered: Instant, now: Instant) -> bool {
        let Some(rate) = self.capacity else {
            return true;
        };
        let burst = (rate * 0.1).max(1.0);
        let last = match s.refilled {
            Some(t) => t,
            None => {
                s.tokens = burst;
                recovered
            }
        };
        let gained = now.saturating_duration_since(last).as_secs_f64() * rate;
        s.tokens = (s.tokens + gained).min(burst);
        s.refilled = Some(now.max(last));
        if s.tokens >= 1.0 {
            s.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// Private memory of a process in KiB, from /proc/PID/smaps_rollup.
fn private_kib(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok()?;
    let mut total = 0;
    for line in text.lines() {
        if line.starts_with("Private_Clean:") || line.starts_with("Private_Dirty:") {
            total += line.split_whitespace().nth(1)?.parse::<u64>().ok()?;
        }
    }
    Some(total)
}

/// The warnings in one client's JSON log.
fn warnings(log: &Path) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(log) else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|v| v["event"] == "warning")
        .map(|v| v["message"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// Planned-versus-actual lag of every wait in one client's JSON log.
fn lags(log: &Path) -> Vec<f64> {
    let Ok(text) = std::fs::read_to_string(log) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut planned: Option<(f64, f64)> = None;
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let elapsed = v["elapsed_ms"].as_f64();
        match v["event"].as_str() {
            Some("sleep") => {
                planned = elapsed.zip(v["delay_ms"].as_f64());
            }
            Some("attempt_start") => {
                if let (Some((at, delay)), Some(now)) = (planned.take(), elapsed) {
                    out.push(now - at - delay);
                }
            }
            _ => {}
        }
    }
    out
}

/// A loopback listener whose accept queue holds the whole herd. std's
/// listener queues 128: a larger herd connecting in one instant overflows
/// it, and the kernel's retransmission (a second or more later) would be
/// measured as the clients' doing.
fn listener(clients: usize) -> std::io::Result<TcpListener> {
    use socket2::{Domain, Socket, Type};
    let socket = Socket::new(Domain::IPV4, Type::STREAM, None)?;
    socket.set_reuse_address(true)?;
    socket.bind(&std::net::SocketAddr::from(([127, 0, 0, 1], 0)).into())?;
    socket.listen(i32::try_from(clients.max(128) * 2).unwrap_or(i32::MAX))?;
    Ok(socket.into())
}

/// Start the herd's clients against `url`, all at once: `retry --http URL
/// -v --log-format json POLICY SHARED --seed SEED+i`, each logging to its
/// own file in `p.logs`.
pub fn spawn(p: &Params, url: &str) -> std::io::Result<Vec<(Child, PathBuf)>> {
    std::fs::create_dir_all(&p.logs)?;
    let mut children: Vec<(Child, PathBuf)> = Vec::with_capacity(p.clients);
    for i in 0..p.clients {
        let log = p.logs.join(format!("client-{i}.jsonl"));
        // A clean environment: no RETRY_* settings, no proxy for loopback.
        let child = Command::new(&p.retry)
            .env_clear()
            .args(["--http", url, "-v", "--log-format", "json"])
            .args(&p.policy)
            .args(&p.shared)
            .args(["--seed", &(p.seed + i as u64).to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log)?)
            .spawn()?;
        children.push((child, log));
    }
    Ok(children)
}

/// Every client's exit status (-1: killed after three minutes).
pub fn wait(children: &mut [(Child, PathBuf)]) -> std::io::Result<Vec<i32>> {
    let deadline = Instant::now() + Duration::from_secs(180);
    let mut codes = Vec::with_capacity(children.len());
    for (child, _) in children.iter_mut() {
        loop {
            if let Some(status) = child.try_wait()? {
                codes.push(status.code().unwrap_or(-1));
                break;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                codes.push(-1);
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    Ok(codes)
}

/// Run one herd. Panics only on failures of the machinery itself.
pub fn run(p: &Params) -> std::io::Result<Herd> {
    let listener = listener(p.clients)?;
    let addr = listener.local_addr()?;
    let server = Arc::new(Server {
        state: Mutex::new(State::default()),
        released: Condvar::new(),
        clients: p.clients,
        outage: p.outage,
        capacity: p.capacity,
    });
    let stop = Arc::new(AtomicBool::new(false));
    let acceptor = {
        let server = Arc::clone(&server);
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let server = Arc::clone(&server);
                std::thread::Builder::new()
                    .stack_size(64 * 1024)
                    .spawn(move || server.handle(conn))
                    .expect("thread");
            }
        })
    };

    let url = format!("http://{addr}/");
    let mut children = spawn(p, &url)?;

    // Memory: halfway through the outage every client is waiting.
    let release = loop {
        if let Some(at) = server.state.lock().expect("state").release {
            break at;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let sample_at = release + p.outage / 2;
    std::thread::sleep(sample_at.saturating_duration_since(Instant::now()));
    let private: Vec<u64> = children
        .iter()
        .filter_map(|(c, _)| private_kib(c.id()))
        .collect();

    let codes = wait(&mut children)?;
    stop.store(true, Ordering::SeqCst);
    let _ = TcpStream::connect(addr);
    let _ = acceptor.join();

    let s = server.state.lock().expect("state");
    let rel = |t: &Instant| t.saturating_duration_since(release);
    let mut arrivals: Vec<Duration> = s.arrivals.iter().map(rel).collect();
    arrivals.sort();
    let mut successes: Vec<Duration> = s.successes.iter().map(rel).collect();
    successes.sort();
    Ok(Herd {
        arrivals,
        successes,
        exit_codes: codes,
        lags_ms: children.iter().flat_map(|(_, log)| lags(log)).collect(),
        private_kib: private,
        warnings: children.iter().flat_map(|(_, log)| warnings(log)).collect(),
    })
}

/// Most arrivals in any window `[t, t + width)` among `arrivals` (sorted).
pub fn busiest(arrivals: &[Duration], width: Duration) -> usize {
    let mut best = 0;
    let mut lo = 0;
    for (hi, t) in arrivals.iter().enumerate() {
        while arrivals[lo] + width <= *t {
            lo += 1;
        }
        best = best.max(hi - lo + 1);
    }
    best
}

/// The figures the bench compares.
#[derive(Debug, Clone)]
pub struct Figures {
    pub requests: usize,
    pub during_outage: usize,
    /// Busiest 100 ms window among the retries (the held first wave left out).
    pub busiest_retry_wave: usize,
    pub busiest_after_recovery: usize,
    pub last_success: Option<Duration>,
    pub succeeded: usize,
    pub gave_up: usize,
}

impl Herd {
    pub fn figures(&self, clients: usize, outage: Duration) -> Figures {
        let w = Duration::from_millis(100);
        let from = self.arrivals.partition_point(|t| *t < outage);
        Figures {
            requests: self.arrivals.len(),
            during_outage: from,
            busiest_retry_wave: busiest(&self.arrivals[clients.min(self.arrivals.len())..], w),
            busiest_after_recovery: busiest(&self.arrivals[from..], w),
            last_success: self.successes.last().copied(),
            succeeded: self.exit_codes.iter().filter(|c| **c == 0).count(),
            gave_up: self.exit_codes.iter().filter(|c| **c != 0).count(),
        }
    }
}

/// `retry --simulate` with the same policy (and capacity): the JSON report's run.
pub fn simulate_json(p: &Params) -> std::io::Result<serde_json::Value> {
    let mut cmd = Command::new(&p.retry);
    cmd.env_clear()
        .args(["--simulate", &p.clients.to_string()])
        .args(["--outage", &format!("{}ms", p.outage.as_millis())]);
    if let Some(rate) = p.capacity {
        cmd.args(["--capacity", &format!("{rate}/s")]);
    }
    let out = cmd
        .args(&p.policy)
        .args(["--seed", &p.seed.to_string(), "--format", "json"])
        .output()?;
    let mut v: serde_json::Value =
        serde_json::from_slice(&out.stdout).map_err(std::io::Error::other)?;
    Ok(v["runs"][0].take())
}

/// `retry --simulate` with the same policy: (requests, busiest 100 ms after
/// recovery, last success in ms, requests before recovery).
pub fn simulate(p: &Params) -> std::io::Result<(u64, u64, f64, u64)> {
    let r = simulate_json(p)?;
    Ok((
        r["requests"].as_u64().unwrap_or(0),
        r["busiest_100ms_after_recovery"].as_u64().unwrap_or(0),
        r["last_success_ms"].as_f64().unwrap_or(f64::NAN),
        r["requests_before_recovery"].as_u64().unwrap_or(0),
    ))
}

/// The `retry` cargo built with this example: examples live in
/// `<profile dir>/examples/`, the binaries in `<profile dir>/`.
pub fn sibling_retry() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.join("retry")))
        .unwrap_or_else(|| PathBuf::from("retry"))
}
