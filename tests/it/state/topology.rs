//! Redis deployments as teams run them, started by the tests on 127.0.0.1:
//! a master, a replica and three sentinels; a cluster of three masters and
//! three replicas made by `redis-cli --cluster create`. Each can fail over
//! on command (`SENTINEL FAILOVER`, `CLUSTER FAILOVER`) or by `kill -9` of
//! a master, and waits until the deployment has settled. Failure detection
//! is set short (a second) so that a failover takes a few seconds.
//!
//! The servers are Redis's (`redis-server`, `redis-sentinel`, `redis-cli`),
//! or Valkey's under their own names.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crate::util::{free_port, path_str, scratch};

/// Which server software: its programs' names.
#[derive(Clone, Copy)]
pub struct Flavor {
    pub server: &'static str,
    pub sentinel: &'static str,
    pub cli: &'static str,
}

pub const REDIS: Flavor = Flavor {
    server: "redis-server",
    sentinel: "redis-sentinel",
    cli: "redis-cli",
};

pub const VALKEY: Flavor = Flavor {
    server: "valkey-server",
    sentinel: "valkey-sentinel",
    cli: "valkey-cli",
};

/// The name the sentinels know the master by.
pub const MASTER: &str = "mymaster";

/// One server process; killed when dropped.
pub struct Node {
    pub port: u16,
    child: Option<Child>,
    /// Its directory, where it keeps its log (`log`).
    dir: PathBuf,
}

impl Node {
    fn start(program: &str, dir: &Path, args: &[String]) -> Child {
        // scripts/test.sh installs the servers; their absence is a failure, never a skip.
        Command::new(program)
            .args(args)
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("{program} must be installed (scripts/test.sh installs it): {e}")
            })
    }

    /// `program ARGS...` in `dir`, listening on `port`.
    pub fn spawn(program: &str, dir: &Path, port: u16, args: &[String]) -> Node {
        Node {
            port,
            child: Some(Node::start(program, dir, args)),
            dir: dir.to_path_buf(),
        }
    }

    /// The end of its log, for a test that fails waiting for it.
    pub fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.dir.join("log")).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(15)..].join("\n")
    }

    /// `kill -9`.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.kill();
    }
}

/// `CLI -p PORT [-a PASSWORD] WORDS...`: the reply as text, or what went wrong.
pub fn cli(flavor: Flavor, port: u16, password: Option<&str>, words: &[&str]) -> String {
    let mut cmd = Command::new(flavor.cli);
    cmd.args(["-h", "127.0.0.1", "-p", &port.to_string()]);
    if let Some(p) = password {
        // In the environment, not on the command line (redis-cli warns there).
        cmd.env("REDISCLI_AUTH", p);
    }
    bounded(cmd.args(words), flavor.cli)
}

/// The output of `cmd` (stdout, then stderr); fails the test if it runs
/// past a minute (`redis-cli --cluster create` waits for ever for nodes
/// that cannot meet).
fn bounded(cmd: &mut Command, program: &str) -> String {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{program} must be installed: {e}"));
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(Ok(out)) => {
            String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr)
        }
        Ok(Err(e)) => panic!("{program}: {e}"),
        Err(_) => {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
            panic!("{program} {:?} did not end within a minute", cmd.get_args());
        }
    }
}

/// `CLI --tls --cacert CA -p PORT WORDS...`: the reply as text.
pub fn cli_tls(flavor: Flavor, port: u16, ca: &Path, words: &[&str]) -> String {
    let mut cmd = Command::new(flavor.cli);
    cmd.args(["--tls", "--cacert"])
        .arg(ca)
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args(words);
    bounded(&mut cmd, flavor.cli)
}

/// Polls `ready` every 50 ms until it holds; fails naming `what` after `within`.
#[track_caller]
pub fn settle(what: &str, within: Duration, mut ready: impl FnMut() -> bool) {
    let until = Instant::now() + within;
    while !ready() {
        assert!(Instant::now() < until, "{what}: not within {within:?}");
        thread::sleep(Duration::from_millis(50));
    }
}

/// No persistence, and a log of its own in the server's directory.
pub const NO_DISK: [&str; 6] = ["--save", "", "--appendonly", "no", "--logfile", "log"];

/// The arguments every server gets: 127.0.0.1, no persistence, its own log.
fn base_args(port: u16, password: Option<&str>) -> Vec<String> {
    let mut a: Vec<String> = ["--port", &port.to_string(), "--bind", "127.0.0.1"]
        .iter()
        .chain(&NO_DISK)
        .chain(&["--repl-diskless-sync-delay", "0"])
        .map(|s| s.to_string())
        .collect();
    if let Some(p) = password {
        a.extend(["--requirepass", p, "--masterauth", p].map(String::from));
    }
    a
}

/// A master and its replica watched by three sentinels.
pub struct Sentinels {
    pub flavor: Flavor,
    /// The master's and replica's password, and the sentinels' own.
    pub password: Option<String>,
    pub sentinel_password: Option<String>,
    pub servers: Vec<Node>,
    pub sentinels: Vec<Node>,
    _dir: tempfile::TempDir,
}

impl Sentinels {
    pub fn new(flavor: Flavor) -> Sentinels {
        Sentinels::start(flavor, None, None)
    }

    /// With a password on the master and replica, and another on the
    /// sentinels.
    pub fn with_passwords(flavor: Flavor, password: &str, sentinel_password: &str) -> Sentinels {
        Sentinels::start(flavor, Some(password), Some(sentinel_password))
    }

    fn start(flavor: Flavor, password: Option<&str>, sentinel_password: Option<&str>) -> Sentinels {
        let dir = scratch();
        let mut servers = Vec::new();
        let master_port = free_port();
        for (i, replica_of) in [None, Some(master_port)].into_iter().enumerate() {
            let port = if i == 0 { master_port } else { free_port() };
            let d = dir.path().join(format!("server{i}"));
            std::fs::create_dir(&d).expect("server dir");
            let mut args = base_args(port, password);
            if let Some(m) = replica_of {
                args.extend(["--replicaof".into(), "127.0.0.1".into(), m.to_string()]);
            }
            servers.push(Node::spawn(flavor.server, &d, port, &args));
        }
        settle("the replica's first sync", Duration::from_secs(20), || {
            cli(flavor, master_port, password, &["INFO", "replication"]).contains("state=online")
        });
        let mut sentinels = Vec::new();
        for i in 0..3 {
            let port = free_port();
            let d = dir.path().join(format!("sentinel{i}"));
            std::fs::create_dir(&d).expect("sentinel dir");
            let mut conf = format!(
                "port {port}\nbind 127.0.0.1\nlogfile log\ndir {}\n\
                 sentinel monitor {MASTER} 127.0.0.1 {master_port} 2\n\
                 sentinel down-after-milliseconds {MASTER} 1000\n\
                 sentinel failover-timeout {MASTER} 3000\n",
                path_str(&d)
            );
            if let Some(p) = password {
                conf.push_str(&format!("sentinel auth-pass {MASTER} {p}\n"));
            }
            if let Some(p) = sentinel_password {
                conf.push_str(&format!("requirepass {p}\nsentinel sentinel-pass {p}\n"));
            }
            let file = d.join("sentinel.conf");
            std::fs::write(&file, conf).expect("sentinel.conf");
            sentinels.push(Node::spawn(flavor.sentinel, &d, port, &[path_str(&file)]));
        }
        let s = Sentinels {
            flavor,
            password: password.map(String::from),
            sentinel_password: sentinel_password.map(String::from),
            servers,
            sentinels,
            _dir: dir,
        };
        // Every sentinel knows the replica and the two other sentinels (they
        // find each other through the master, every two seconds).
        for sentinel in &s.sentinels {
            settle("the sentinels' view", Duration::from_secs(20), || {
                let count = |what| {
                    s.ask(sentinel.port, &["SENTINEL", what, MASTER])
                        .lines()
                        .filter(|l| *l == "name")
                        .count()
                };
                count("REPLICAS") == 1 && count("SENTINELS") == 2
            });
        }
        s
    }

    /// A command to the sentinel on `port`.
    pub fn ask(&self, port: u16, words: &[&str]) -> String {
        cli(self.flavor, port, self.sentinel_password.as_deref(), words)
    }

    /// A command to the server on `port`.
    pub fn server(&self, port: u16, words: &[&str]) -> String {
        cli(self.flavor, port, self.password.as_deref(), words)
    }

    /// The URL of the store, without credentials.
    pub fn url(&self) -> String {
        let list: Vec<String> = self
            .sentinels
            .iter()
            .map(|s| format!("127.0.0.1:{}", s.port))
            .collect();
        format!("redis+sentinel://{}/{MASTER}", list.join(","))
    }

    /// The master's port, as the first sentinel names it.
    pub fn master(&self) -> u16 {
        let reply = self.ask(
            self.sentinels[0].port,
            &["SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER],
        );
        reply
            .lines()
            .nth(1)
            .and_then(|p| p.trim().parse().ok())
            .unwrap_or_else(|| panic!("no master named: {reply}"))
    }

    /// The server that is not the master.
    pub fn other(&self, port: u16) -> u16 {
        self.servers
            .iter()
            .map(|s| s.port)
            .find(|p| *p != port)
            .expect("two servers")
    }

    /// Waits until every sentinel names `port` as the master and it says so itself.
    pub fn wait_for_master(&self, port: u16, within: Duration) {
        settle("the new master", within, || {
            self.server(port, &["ROLE"]).starts_with("master")
                && self.sentinels.iter().all(|s| {
                    self.ask(s.port, &["SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER])
                        .lines()
                        .nth(1)
                        == Some(&port.to_string())
                })
        });
    }

    /// `SENTINEL FAILOVER`; returns the new master's port once in place.
    pub fn failover(&self) -> u16 {
        let old = self.master();
        let new = self.other(old);
        let reply = self.ask(self.sentinels[0].port, &["SENTINEL", "FAILOVER", MASTER]);
        assert!(reply.starts_with("OK"), "SENTINEL FAILOVER: {reply}");
        self.wait_for_master(new, Duration::from_secs(20));
        new
    }

    /// `kill -9` of the master; returns the new master's port once the
    /// sentinels have promoted the replica.
    pub fn kill_master(&mut self) -> u16 {
        let old = self.master();
        let new = self.other(old);
        self.servers
            .iter_mut()
            .find(|s| s.port == old)
            .expect("the master")
            .kill();
        self.wait_for_master(new, Duration::from_secs(30));
        new
    }
}

/// The arguments that make a server a cluster node, with `more`.
pub fn cluster_args(more: &[&str]) -> Vec<String> {
    let mut a: Vec<String> = [
        "--cluster-enabled",
        "yes",
        "--cluster-config-file",
        "nodes.conf",
    ]
    .map(String::from)
    .to_vec();
    a.extend(more.iter().map(|s| s.to_string()));
    // The bus port is the port + 10000 unless given: past 65535 for
    // ephemeral ports.
    a.extend(["--cluster-port".to_string(), free_port().to_string()]);
    a
}

/// `--cluster create` of `nodes`, `replicas` replicas a master, once each
/// node answers (`what` is waited for, and a node that does not is shown
/// with its log); `cli` sends a node its words. Checks that every slot is
/// covered.
pub fn create_cluster(
    nodes: &[Node],
    replicas: &str,
    what: &str,
    cli: impl Fn(u16, &[&str]) -> String,
) {
    // Generous: six servers start at once beside the rest of the suite.
    for node in nodes {
        let until = Instant::now() + Duration::from_secs(30);
        while !cli(node.port, &["PING"]).contains("PONG") {
            assert!(
                Instant::now() < until,
                "{what} on port {}: no answer within 30s; its log ends:\n{}",
                node.port,
                node.log_tail()
            );
            thread::sleep(Duration::from_millis(50));
        }
    }
    let ports: Vec<u16> = nodes.iter().map(|n| n.port).collect();
    let mut create: Vec<String> = vec!["--cluster".into(), "create".into()];
    create.extend(ports.iter().map(|p| format!("127.0.0.1:{p}")));
    create.extend(["--cluster-replicas", replicas, "--cluster-yes"].map(String::from));
    let words: Vec<&str> = create.iter().map(String::as_str).collect();
    let out = cli(ports[0], &words);
    assert!(
        out.contains("All 16384 slots covered"),
        "cluster create: {out}"
    );
}

/// Three masters, each with a replica, over the cluster's 16384 slots.
pub struct Cluster {
    pub flavor: Flavor,
    pub password: Option<String>,
    pub nodes: Vec<Node>,
    _dir: tempfile::TempDir,
}

/// One line of `CLUSTER NODES`.
#[derive(Debug, Clone)]
pub struct ClusterNode {
    pub port: u16,
    pub master: bool,
    /// The slot ranges a master serves.
    pub slots: Vec<(u16, u16)>,
    pub id: String,
    /// A replica's master's id.
    pub of: Option<String>,
}

impl Cluster {
    pub fn new(flavor: Flavor) -> Cluster {
        Cluster::start(flavor, None)
    }

    pub fn with_password(flavor: Flavor, password: &str) -> Cluster {
        Cluster::start(flavor, Some(password))
    }

    fn start(flavor: Flavor, password: Option<&str>) -> Cluster {
        let dir = scratch();
        let nodes: Vec<Node> = (0..6)
            .map(|i| {
                let port = free_port();
                let d = dir.path().join(format!("node{i}"));
                std::fs::create_dir(&d).expect("node dir");
                let mut args = base_args(port, password);
                args.extend(cluster_args(&["--cluster-node-timeout", "1000"]));
                Node::spawn(flavor.server, &d, port, &args)
            })
            .collect();
        let c = Cluster {
            flavor,
            password: password.map(String::from),
            nodes,
            _dir: dir,
        };
        create_cluster(&c.nodes, "1", "a cluster node", |p, words| c.cli(p, words));
        c.wait_settled(Duration::from_secs(20));
        c
    }

    pub fn cli(&self, port: u16, words: &[&str]) -> String {
        cli(self.flavor, port, self.password.as_deref(), words)
    }

    /// The URL of the store (two seed nodes), without credentials.
    pub fn url(&self) -> String {
        format!(
            "redis+cluster://127.0.0.1:{},127.0.0.1:{}",
            self.nodes[0].port, self.nodes[1].port
        )
    }

    /// `CLUSTER NODES` as the node on `port` sees it.
    pub fn view(&self, port: u16) -> Vec<ClusterNode> {
        self.cli(port, &["CLUSTER", "NODES"])
            .lines()
            .filter_map(|l| {
                let w: Vec<&str> = l.split_whitespace().collect();
                if w.len() < 8 || w[2].contains("fail") {
                    return None;
                }
                let port = w[1]
                    .split(['@', ','])
                    .next()?
                    .rsplit(':')
                    .next()?
                    .parse()
                    .ok()?;
                let slots = w[8..]
                    .iter()
                    .filter(|s| !s.starts_with('['))
                    .filter_map(|s| match s.split_once('-') {
                        Some((a, b)) => Some((a.parse().ok()?, b.parse().ok()?)),
                        None => s.parse().ok().map(|x| (x, x)),
                    })
                    .collect();
                Some(ClusterNode {
                    port,
                    master: w[2].contains("master"),
                    slots,
                    id: w[0].to_string(),
                    of: (w[3] != "-").then(|| w[3].to_string()),
                })
            })
            .collect()
    }

    /// The ports of live nodes.
    fn live(&self) -> Vec<u16> {
        self.nodes
            .iter()
            .filter(|n| n.child.is_some())
            .map(|n| n.port)
            .collect()
    }

    /// Waits until every live node says the cluster is ok, sees three
    /// masters serving all slots, and agrees with the others.
    pub fn wait_settled(&self, within: Duration) {
        settle("the cluster", within, || {
            self.live().iter().all(|p| {
                let masters: Vec<ClusterNode> = self
                    .view(*p)
                    .into_iter()
                    .filter(|n| n.master && !n.slots.is_empty())
                    .collect();
                self.cli(*p, &["CLUSTER", "INFO"])
                    .contains("cluster_state:ok")
                    && masters.len() == 3
                    && masters
                        .iter()
                        .flat_map(|m| m.slots.iter())
                        .map(|(a, b)| usize::from(b - a) + 1)
                        .sum::<usize>()
                        == 16384
            })
        });
    }

    /// The master serving `key`, and its replica.
    pub fn shard_of(&self, key: &str) -> (ClusterNode, ClusterNode) {
        let port = self.live()[0];
        let slot: u16 = self
            .cli(port, &["CLUSTER", "KEYSLOT", key])
            .trim()
            .parse()
            .expect("a slot");
        let view = self.view(port);
        let master = view
            .iter()
            .find(|n| n.master && n.slots.iter().any(|(a, b)| (*a..=*b).contains(&slot)))
            .expect("a master for the slot")
            .clone();
        // A replica may not yet show in every node's view when the slots
        // already do: wait for it.
        let mut replica = None;
        settle("a replica of the master", Duration::from_secs(20), || {
            replica = self
                .view(port)
                .into_iter()
                .find(|n| n.of.as_deref() == Some(master.id.as_str()));
            replica.is_some()
        });
        (master, replica.expect("a replica of the master"))
    }

    /// `CLUSTER FAILOVER` on the replica of `key`'s master; returns the
    /// new master's port once the cluster has settled.
    pub fn failover(&self, key: &str) -> u16 {
        let (_, replica) = self.shard_of(key);
        let reply = self.cli(replica.port, &["CLUSTER", "FAILOVER"]);
        assert!(reply.starts_with("OK"), "CLUSTER FAILOVER: {reply}");
        settle("the promotion", Duration::from_secs(20), || {
            self.cli(replica.port, &["ROLE"]).starts_with("master")
        });
        self.wait_settled(Duration::from_secs(20));
        replica.port
    }

    /// `kill -9` of `key`'s master; returns its replica's port once the
    /// cluster has promoted it and settled.
    pub fn kill_master(&mut self, key: &str) -> u16 {
        let (master, replica) = self.shard_of(key);
        self.nodes
            .iter_mut()
            .find(|n| n.port == master.port)
            .expect("the master")
            .kill();
        settle("the promotion", Duration::from_secs(30), || {
            self.cli(replica.port, &["ROLE"]).starts_with("master")
        });
        self.wait_settled(Duration::from_secs(30));
        replica.port
    }

    /// Whether the node on `port` holds `key` (a replica too: it is asked
    /// with READONLY first, on the same connection).
    pub fn holds(&self, port: u16, key: &str) -> bool {
        use std::io::Write;
        let mut cmd = Command::new(self.flavor.cli);
        cmd.args(["-h", "127.0.0.1", "-p", &port.to_string()]);
        if let Some(p) = &self.password {
            cmd.env("REDISCLI_AUTH", p);
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("cli");
        let mut stdin = child.stdin.take().expect("stdin");
        let _ = writeln!(stdin, "READONLY\nEXISTS {key}");
        drop(stdin);
        let out = child.wait_with_output().expect("cli output");
        String::from_utf8_lossy(&out.stdout).lines().last() == Some("1")
    }
}

/// A run of one group that fails and retries (20 a second, its budget
/// counting every failure) until the test lets it succeed: the run a
/// failover happens under.
pub struct LongRun {
    running: crate::util::Running,
    done: PathBuf,
    url: String,
    group: String,
    _dir: tempfile::TempDir,
}

/// The options of such a run of `group` on `url`, for `max_time` at most,
/// logging in JSON.
pub fn long_run_args<'a>(group: &'a str, url: &'a str, max_time: &'a str) -> [&'a str; 19] {
    [
        "--group",
        group,
        "--state",
        url,
        "--budget",
        "100000",
        "--pace",
        "20/s",
        "--max",
        "100000",
        "--base",
        "1ms",
        "--cap",
        "1ms",
        "--max-time",
        max_time,
        "--log-format",
        "json",
        "-v",
    ]
}

/// The command of such a run: touches `started` and fails until `done` is there.
pub fn fails_until(done: &Path, started: &Path) -> String {
    format!(
        "[ -e '{}' ] && exit 0; touch '{}'; exit 1",
        path_str(done),
        path_str(started)
    )
}

impl LongRun {
    /// Started, and under way (its first attempt has run).
    pub fn start(url: &str, group: &str) -> LongRun {
        let dir = scratch();
        let started = dir.path().join("started");
        let done = dir.path().join("done");
        let running = crate::util::retry_sh(
            &long_run_args(group, url, "90s"),
            &fails_until(&done, &started),
        )
        .spawn();
        crate::util::wait_for_file(&started, Duration::from_secs(20));
        LongRun {
            running,
            done,
            url: url.to_string(),
            group: group.to_string(),
            _dir: dir,
        }
    }

    /// Once the run has spent five tokens more than now (its calls reach
    /// the store; fails saying `never` after `within`), lets the command
    /// succeed. The run must end with exit 0; returns the warnings and notes
    /// about shared state in its log.
    #[track_caller]
    pub fn finish_after_five_calls(
        self,
        within: Duration,
        never: &str,
    ) -> (Vec<String>, Vec<String>) {
        let before = spent(&self.url, &self.group);
        let until = Instant::now() + within;
        while spent(&self.url, &self.group) < before + 5.0 {
            if Instant::now() >= until {
                // Show what the run saw: its log, once stopped.
                self.running.signal(nix::sys::signal::Signal::SIGTERM);
                let out = self.running.wait();
                let err = out.stderr_text();
                let tail: Vec<&str> = err.lines().rev().take(20).collect();
                panic!(
                    "{never} within {within:?}; the run's log ends:\n{}",
                    tail.into_iter().rev().collect::<Vec<_>>().join("\n")
                );
            }
            thread::sleep(Duration::from_millis(100));
        }
        std::fs::write(&self.done, b"").expect("done");
        let out = self.running.wait();
        out.expect_code(0);
        let log = out.json();
        (messages(&log, "warning"), messages(&log, "note"))
    }
}

/// The budget's count of tokens spent on `group`, read by `--state-show`
/// through `url`, for a run with `--budget 100000`.
pub fn spent(url: &str, group: &str) -> f64 {
    let out = crate::util::retry([
        "--group",
        group,
        "--state",
        url,
        "--state-show",
        "--budget",
        "100000",
    ])
    .run();
    out.expect_code(0);
    let text = out.stdout_text();
    let count: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("budget:"))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no budget count in {text}"));
    100_000.0 - count
}

/// The messages of one kind about shared state in a JSON log (others, such
/// as what becomes of a failed attempt's output, are not the store's).
pub fn messages(log: &[serde_json::Value], kind: &str) -> Vec<String> {
    log.iter()
        .filter(|e| e["event"] == kind)
        .map(|e| e["message"].as_str().unwrap_or("").to_string())
        .filter(|m| m.starts_with("shared state"))
        .collect()
}
