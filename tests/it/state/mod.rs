//! Shared state across invocations: pace, budget and breaker on the local
//! store and on a real Redis server that each test starts for itself (on a
//! private unix socket or 127.0.0.1 port, persistence off).

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crate::util::{command, free_port, path_str, retry, retry_sh, scratch, wait_for_port};

mod cluster;
mod failing;
mod hostile;
mod link;
mod rules;
mod same;
mod sentinel;
mod show;
mod tls;
mod topology;
mod valkey;

/// A redis-server of the test's own; stopped when dropped.
struct Redis {
    child: Child,
    url: String,
    /// For a unix-socket server: its socket and extra arguments, to restart it.
    sock: Option<(PathBuf, Vec<String>)>,
    _dir: tempfile::TempDir,
}

impl Redis {
    /// On a unix socket in a private directory.
    fn unix() -> Redis {
        Redis::unix_with(&[])
    }

    /// On a unix socket, with extra server arguments (`--timeout 1`...).
    fn unix_with(extra: &[&str]) -> Redis {
        let dir = scratch();
        let sock = dir.path().join("redis.sock");
        let extra: Vec<String> = extra.iter().map(|a| a.to_string()).collect();
        let mut redis = Redis {
            child: unix_server(dir.path(), &sock, &extra),
            url: format!("unix://{}", path_str(&sock)),
            sock: Some((sock, extra)),
            _dir: dir,
        };
        redis.wait_unix();
        redis
    }

    /// A Valkey server on a unix socket in a private directory.
    fn valkey() -> Redis {
        let dir = scratch();
        let sock = dir.path().join("valkey.sock");
        let s = path_str(&sock);
        let mut redis = Redis {
            child: server_of(
                "valkey-server",
                dir.path(),
                &["--port", "0", "--unixsocket", &s],
            ),
            url: format!("unix://{s}"),
            sock: Some((sock, Vec::new())),
            _dir: dir,
        };
        redis.wait_unix();
        redis
    }

    fn wait_unix(&mut self) {
        let sock = self.sock.as_ref().expect("a unix socket server").0.clone();
        self.wait_ready(|| UnixStream::connect(&sock).ok().map(Conn::Unix));
    }

    /// The server's unix socket.
    fn sock_path(&self) -> PathBuf {
        self.sock.as_ref().expect("a unix socket server").0.clone()
    }

    /// One command on the unix socket (with AUTH first when `password` is
    /// given); the server's reply as text.
    fn cmd(&self, password: Option<&str>, words: &[&str]) -> String {
        redis_cmd(&self.sock_path(), password, words)
    }

    /// Saves the data set, stops the server and starts it again on the same
    /// socket: connections made before are gone, the data stays.
    fn restart(&mut self) {
        self.cmd(None, &["SHUTDOWN", "SAVE"]);
        let _ = self.child.wait();
        let (sock, extra) = self.sock.clone().expect("a unix socket server");
        self.child = unix_server(self._dir.path(), &sock, &extra);
        self.wait_unix();
    }

    /// On 127.0.0.1 with a password.
    fn tcp_with_password(password: &str) -> Redis {
        let dir = scratch();
        let port = free_port();
        let p = port.to_string();
        let child = server(
            dir.path(),
            &[
                "--port",
                &p,
                "--bind",
                "127.0.0.1",
                "--requirepass",
                password,
            ],
        );
        let redis = Redis {
            child,
            url: format!("redis://127.0.0.1:{port}/0"),
            sock: None,
            _dir: dir,
        };
        redis.wait_ready(|| {
            std::net::TcpStream::connect(("127.0.0.1", port))
                .ok()
                .map(Conn::Tcp)
        });
        redis
    }

    /// TLS only, on 127.0.0.1, with a certificate from a throwaway CA;
    /// returns the server and the CA file to trust.
    fn tls() -> (Redis, PathBuf) {
        let dir = crate::pki::Pki::new().dir;
        let d = dir.path();
        let port = free_port();
        let args = tls_only(d, "server.pem", port);
        let child = server(d, &args.iter().map(String::as_str).collect::<Vec<_>>());
        let ca = d.join("ca.pem");
        let redis = Redis {
            child,
            url: format!("rediss://127.0.0.1:{port}/0"),
            sock: None,
            _dir: dir,
        };
        // Ready once the port accepts connections (a TLS handshake is the client's job).
        wait_for_port(port, Duration::from_secs(10), "redis-server (TLS)");
        (redis, ca)
    }

    fn wait_ready(&self, connect: impl Fn() -> Option<Conn>) {
        let until = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(mut c) = connect() {
                // Any reply (PONG, or NOAUTH with a password) means it serves.
                let mut buf = [0u8; 64];
                if c.write_all(b"PING\r\n").is_ok() && c.read(&mut buf).is_ok_and(|n| n > 0) {
                    return;
                }
            }
            assert!(Instant::now() < until, "redis-server did not start");
            thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

enum Conn {
    Unix(UnixStream),
    Tcp(std::net::TcpStream),
}

impl Conn {
    fn write_all(&mut self, b: &[u8]) -> std::io::Result<()> {
        match self {
            Conn::Unix(s) => s.write_all(b),
            Conn::Tcp(s) => s.write_all(b),
        }
    }
    fn read(&mut self, b: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Conn::Unix(s) => s.read(b),
            Conn::Tcp(s) => s.read(b),
        }
    }
}

/// The arguments of a server that speaks TLS only, on 127.0.0.1:`port`,
/// presenting `cert` (with `server.key`) from the PKI in `pki`; clients
/// need no certificate.
fn tls_only(pki: &Path, cert: &str, port: u16) -> Vec<String> {
    let f = |n: &str| path_str(&pki.join(n));
    [
        "--port",
        "0",
        "--tls-port",
        &port.to_string(),
        "--bind",
        "127.0.0.1",
        "--tls-cert-file",
        &f(cert),
        "--tls-key-file",
        &f("server.key"),
        "--tls-ca-cert-file",
        &f("ca.pem"),
        "--tls-auth-clients",
        "no",
    ]
    .map(String::from)
    .to_vec()
}

fn server(dir: &Path, args: &[&str]) -> Child {
    server_of("redis-server", dir, args)
}

/// `program` (redis-server, or valkey-server) with `args`, persistence off.
fn server_of(program: &str, dir: &Path, args: &[&str]) -> Child {
    // scripts/test.sh installs the servers; their absence is a failure, never a skip.
    Command::new(program)
        .args(args)
        .args(["--save", "", "--appendonly", "no", "--dir"])
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("{program} must be installed (scripts/test.sh installs it): {e}")
        })
}

/// One command to the server on `sock`; its reply as text.
fn redis_cmd(sock: &Path, password: Option<&str>, words: &[&str]) -> String {
    let mut c = UnixStream::connect(sock).expect("connect to redis");
    c.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let resp = |words: &[&str]| {
        let mut out = format!("*{}\r\n", words.len());
        for w in words {
            out.push_str(&format!("${}\r\n{w}\r\n", w.len()));
        }
        out
    };
    let mut buf = [0u8; 4096];
    if let Some(p) = password {
        c.write_all(resp(&["AUTH", p]).as_bytes()).expect("send");
        let n = c.read(&mut buf).expect("reply");
        assert!(buf[..n].starts_with(b"+OK"), "AUTH: {:?}", &buf[..n]);
    }
    c.write_all(resp(words).as_bytes()).expect("send");
    let n = c.read(&mut buf).unwrap_or(0);
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

/// A server on a unix socket. Saving is off, but `SHUTDOWN SAVE` still
/// writes the data set, which a restart in the same directory reads.
fn unix_server(dir: &Path, sock: &Path, extra: &[String]) -> Child {
    let s = path_str(sock);
    let mut args = vec!["--port", "0", "--unixsocket", &s];
    args.extend(extra.iter().map(String::as_str));
    server(dir, &args)
}

/// The stores under test: a fresh directory, a fresh Redis server, or the
/// URL of servers the test holds (a Sentinel or Cluster deployment).
enum Store {
    Dir(tempfile::TempDir),
    Redis(Redis),
    Url(String),
}

impl Store {
    fn local() -> Store {
        Store::Dir(scratch())
    }
    fn redis() -> Store {
        Store::Redis(Redis::unix())
    }
    fn arg(&self) -> String {
        match self {
            Store::Dir(d) => path_str(&d.path().join("state")),
            Store::Redis(r) => r.url.clone(),
            Store::Url(u) => u.clone(),
        }
    }
}

/// `--state-show` for the group, on stdout.
fn show(store: &Store, group: &str, extra: &[&str]) -> String {
    show_at(&store.arg(), group, extra)
}

/// `--state-show` for the group in the store at `s`, on stdout.
fn show_at(s: &str, group: &str, extra: &[&str]) -> String {
    let mut args = vec!["--group", group, "--state", s, "--state-show"];
    args.extend_from_slice(extra);
    let out = retry(args).run();
    out.expect_code(0);
    out.stdout_text()
}

/// `--group GROUP --state STATE RULE SPEC --max 1`: runs of one attempt
/// under one shared rule.
fn one_attempt<'a>(group: &'a str, state: &'a str, rule: &'a str, spec: &'a str) -> [&'a str; 8] {
    ["--group", group, "--state", state, rule, spec, "--max", "1"]
}

/// `--group g --state URL --budget --state-required`: a run that needs the
/// store.
fn needs_the_store(url: &str) -> [&str; 6] {
    [
        "--group",
        "g",
        "--state",
        url,
        "--budget",
        "--state-required",
    ]
}

/// Runs that need the store at `url`: trusted (`SSL_CERT_FILE` is `ca`, or
/// `--state-cacert ca`), the store is used; not trusted, the run is
/// refused for the certificate.
#[track_caller]
fn trusted_only(url: &str, ca: &Path) {
    let args = needs_the_store(url);
    let out = retry_sh(&args, "exit 0").env("SSL_CERT_FILE", ca).run();
    out.expect_code(0);
    let out = retry_sh(&args, "exit 0").run();
    out.expect_code(125);
    assert!(
        out.stderr_text().contains("certificate"),
        "{}",
        out.stderr_text()
    );
    // --state-cacert trusts the same CA for the store alone.
    let ca = path_str(ca);
    let mut args = args.to_vec();
    args.extend(["--state-cacert", &ca]);
    retry_sh(&args, "exit 0").run().expect_code(0);
}

/// The budget count `--state-show` reports.
fn budget_count(store: &Store, group: &str, tokens: &str) -> f64 {
    let text = show(store, group, &["--budget", tokens]);
    let line = text
        .lines()
        .find(|l| l.starts_with("budget:"))
        .unwrap_or_else(|| panic!("no budget line in {text}"));
    line.split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count in {line}"))
}

/// Start `n` retries of `sh -c SCRIPT` at once; each first attempt waits for
/// the returned gate file, so they all reach the store together.
fn herd(n: usize, args: &[String], script: &str, dir: &Path) -> Vec<(i32, Vec<serde_json::Value>)> {
    // One herd at a time: two at once on a small machine measure the
    // scheduler, not the store.
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let gate = dir.join("gate");
    let gated = format!(
        "while [ ! -e '{}' ]; do sleep 0.1; done; {script}",
        path_str(&gate)
    );
    let children: Vec<Child> = (0..n)
        .map(|_| {
            command()
                .args(args)
                .args(["--log-format", "json", "-v", "--", "sh", "-c", &gated])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn retry")
        })
        .collect();
    std::fs::write(&gate, b"").expect("open the gate");
    children
        .into_iter()
        .map(|c| {
            let out = c.wait_with_output().expect("wait");
            let log = String::from_utf8_lossy(&out.stderr)
                .lines()
                .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l}: {e}")))
                .collect();
            (out.status.code().expect("exit code"), log)
        })
        .collect()
}

fn events<'a>(
    logs: &'a [(i32, Vec<serde_json::Value>)],
    kind: &'a str,
) -> impl Iterator<Item = &'a serde_json::Value> + 'a {
    logs.iter()
        .flat_map(|(_, l)| l.iter())
        .filter(move |e| e["event"] == kind)
}

/// A log event's `time`, in seconds since the epoch.
fn epoch_secs(event: &serde_json::Value) -> f64 {
    let t = humantime::parse_rfc3339(event["time"].as_str().expect("time")).expect("rfc3339");
    t.duration_since(std::time::UNIX_EPOCH)
        .expect("after epoch")
        .as_secs_f64()
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// Whether the tests of a hostile second user can run: they change owners
/// and switch users, which needs root (as in CI).
fn root() -> bool {
    crate::need::root("the test plays a second user")
}

/// The second user of the hostile tests, and a script run as that user.
use crate::util::{NOBODY, as_nobody};
