//! Redis deployments for the state benchmark, on 127.0.0.1, persistence
//! off: a master with a replica and three sentinels, and a cluster of three
//! masters (with a replica each, or none) made by `redis-cli --cluster
//! create`. Every
//! server is killed when its `Server` is dropped.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Server(pub Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port()
}

/// `redis-cli -p PORT WORDS...`, its output.
pub fn cli(port: u16, words: &[&str]) -> String {
    let out = Command::new("redis-cli")
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args(words)
        .stdin(Stdio::null())
        .output()
        .expect("redis-cli (apt-get install redis-tools)");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn settle(what: &str, mut ready: impl FnMut() -> bool) {
    let until = Instant::now() + Duration::from_secs(30);
    while !ready() {
        assert!(Instant::now() < until, "{what}: not within 30s");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn spawn(program: &str, dir: &Path, args: &[String]) -> Server {
    std::fs::create_dir_all(dir).expect("server dir");
    let child = Command::new(program)
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{program} (apt-get install redis-server redis-sentinel): {e}"));
    Server(child)
}

fn server_args(port: u16) -> Vec<String> {
    [
        "--port",
        &port.to_string(),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
        "--repl-diskless-sync-delay",
        "0",
    ]
    .map(String::from)
    .to_vec()
}

/// A master, its replica and three sentinels; returns the servers, the
/// master's port and the store's URL.
pub fn sentinel(dir: &Path) -> (Vec<Server>, u16, String) {
    let master = free_port();
    let mut servers = vec![spawn(
        "redis-server",
        &dir.join("master"),
        &server_args(master),
    )];
    let mut replica = server_args(free_port());
    replica.extend(["--replicaof".into(), "127.0.0.1".into(), master.to_string()]);
    servers.push(spawn("redis-server", &dir.join("replica"), &replica));
    settle("the replica's sync", || {
        cli(master, &["INFO", "replication"]).contains("state=online")
    });
    let mut ports = Vec::new();
    for i in 0..3 {
        let port = free_port();
        let d = dir.join(format!("sentinel{i}"));
        std::fs::create_dir_all(&d).expect("sentinel dir");
        let conf = d.join("sentinel.conf");
        std::fs::write(
            &conf,
            format!(
                "port {port}\nbind 127.0.0.1\ndir {}\n\
                 sentinel monitor bench 127.0.0.1 {master} 2\n\
                 sentinel down-after-milliseconds bench 1000\n",
                d.display()
            ),
        )
        .expect("sentinel.conf");
        servers.push(spawn("redis-sentinel", &d, &[conf.display().to_string()]));
        ports.push(port);
    }
    for p in &ports {
        settle("the sentinels", || {
            cli(*p, &["SENTINEL", "SENTINELS", "bench"])
                .lines()
                .filter(|l| *l == "name")
                .count()
                == 2
        });
    }
    let list: Vec<String> = ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
    (
        servers,
        master,
        format!("redis+sentinel://{}/bench", list.join(",")),
    )
}

/// Three masters, each with a replica if `replicas`; returns the servers,
/// the masters' ports (for their command counts) and the store's URL.
pub fn cluster(dir: &Path, replicas: bool) -> (Vec<Server>, Vec<u16>, String) {
    let nodes = if replicas { 6 } else { 3 };
    let ports: Vec<u16> = (0..nodes).map(|_| free_port()).collect();
    let servers: Vec<Server> = ports
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let mut args = server_args(*p);
            args.extend(
                [
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    "nodes.conf",
                    "--cluster-port",
                    &free_port().to_string(),
                ]
                .map(String::from),
            );
            spawn("redis-server", &dir.join(format!("node{i}")), &args)
        })
        .collect();
    for p in &ports {
        settle("a node", || cli(*p, &["PING"]).contains("PONG"));
    }
    let mut create = vec!["--cluster".to_string(), "create".into()];
    create.extend(ports.iter().map(|p| format!("127.0.0.1:{p}")));
    let per_master = if replicas { "1" } else { "0" };
    create.extend(["--cluster-replicas", per_master, "--cluster-yes"].map(String::from));
    let words: Vec<&str> = create.iter().map(String::as_str).collect();
    cli(ports[0], &words);
    settle("the cluster", || {
        ports
            .iter()
            .all(|p| cli(*p, &["CLUSTER", "INFO"]).contains("cluster_state:ok"))
    });
    let masters = ports
        .iter()
        .copied()
        .filter(|p| cli(*p, &["ROLE"]).starts_with("master"))
        .collect();
    let url = format!(
        "redis+cluster://127.0.0.1:{},127.0.0.1:{}",
        ports[0], ports[1]
    );
    (servers, masters, url)
}

/// How many scripts the server on `port` has run (EVAL and EVALSHA).
pub fn scripts_run(port: u16) -> u64 {
    cli(port, &["INFO", "commandstats"])
        .lines()
        .filter(|l| l.starts_with("cmdstat_evalsha:") || l.starts_with("cmdstat_eval:"))
        .filter_map(|l| {
            l.split(['=', ','])
                .nth(1)
                .and_then(|n| n.trim().parse::<u64>().ok())
        })
        .sum()
}
