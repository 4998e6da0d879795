//! Monitoring end to end: the metrics file served by a real node_exporter
//! and checked by promtool, a real Pushgateway, and a heartbeat endpoint on
//! 127.0.0.1 that records every ping. The servers are the Debian packages
//! scripts/test.sh installs; a test fails, never skips, when one is missing.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

mod gateway;
mod heartbeat;
mod report;
mod textfile;
mod usage;

/// A server binary from a Debian package, started on 127.0.0.1; killed
/// when dropped.
struct Daemon {
    child: Child,
    port: u16,
}

impl Daemon {
    /// Starts `program` with `args` (where `{port}` is replaced by a free
    /// port) and waits until `path` answers.
    fn start(program: &str, package: &str, args: &[&str], path: &str) -> Daemon {
        for _ in 0..5 {
            let port = crate::util::free_port();
            let args: Vec<String> = args
                .iter()
                .map(|a| a.replace("{port}", &port.to_string()))
                .collect();
            let child = Command::new(program)
                .args(&args)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| {
                    panic!("cannot run {program} ({e}): install the Debian package {package} (scripts/test.sh does)")
                });
            let mut daemon = Daemon { child, port };
            let until = Instant::now() + Duration::from_secs(20);
            while Instant::now() < until {
                if get(port, path).is_some() {
                    return daemon;
                }
                if let Ok(Some(_)) = daemon.child.try_wait() {
                    break; // Lost the port to someone else: another one.
                }
                thread::sleep(Duration::from_millis(20));
            }
            let _ = daemon.child.kill();
            let _ = daemon.child.wait();
        }
        panic!("{program} did not start");
    }

    fn get(&self, path: &str) -> String {
        get(self.port, path).expect("the server answers")
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `GET path` over HTTP/1.0: the body of a 200 answer.
fn get(port: u16, path: &str) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let (head, body) = text.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.1 200")
        .then(|| body.to_string())
        .or_else(|| head.starts_with("HTTP/1.0 200").then(|| body.to_string()))
}

/// The value of the one sample of `name` with exactly `labels` in a scrape.
fn sample(scrape: &str, name: &str, labels: &str) -> Option<f64> {
    let prefix = format!("{name}{labels} ");
    scrape
        .lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .and_then(|v| v.trim().parse().ok())
}

/// `promtool check metrics` on `text`: its whole output (empty when the
/// text is clean) and whether it passed.
fn promtool(text: &str) -> (String, bool) {
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("cannot run promtool ({e}): install the Debian package prometheus (scripts/test.sh does)")
        });
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("feed promtool");
    let out = child.wait_with_output().expect("promtool ends");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (said, out.status.success())
}

/// Now, in seconds since the Unix epoch.
fn epoch_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs_f64()
}

/// One request a test server saw.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    path: String,
    body: Vec<u8>,
    /// The Authorization header, if one came.
    authorization: Option<String>,
}

/// How a test server answers a request: a status, or never.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    Status(u16),
    /// A status with one more header line (`Name: value`).
    With(u16, &'static str),
    Hang,
}

/// An HTTP/1.1 server on 127.0.0.1 that records what it is sent and
/// answers as `answer` says (given the request and how many came before).
struct Recorder {
    port: u16,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Recorder {
    fn start(answer: impl Fn(&Seen, usize) -> Answer + Send + Sync + 'static) -> Recorder {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let answer = Arc::new(answer);
        let log = Arc::clone(&seen);
        thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let log = Arc::clone(&log);
                let answer = Arc::clone(&answer);
                thread::spawn(move || serve(stream, &log, &*answer));
            }
        });
        Recorder { port, seen }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("lock").clone()
    }

    /// `METHOD path` of every request, in order.
    fn lines(&self) -> Vec<String> {
        self.seen()
            .iter()
            .map(|s| format!("{} {}", s.method, s.path))
            .collect()
    }

    /// Waits (20 s at most, else fails naming `what`) until the requests
    /// seen so far satisfy `done`.
    fn wait_until(&self, what: &str, done: impl Fn(&[String]) -> bool) {
        let until = Instant::now() + Duration::from_secs(20);
        while !done(&self.lines()) {
            assert!(Instant::now() < until, "{what}: {:?}", self.lines());
            thread::sleep(Duration::from_millis(10));
        }
    }
}

/// Reads requests off one connection (keep-alive) and answers each.
fn serve(stream: TcpStream, log: &Mutex<Vec<Seen>>, answer: &dyn Fn(&Seen, usize) -> Answer) {
    let mut out = match stream.try_clone() {
        Ok(s) => s,
        Err(_) => return,
    };
    let mut reader = BufReader::new(stream);
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let mut parts = request_line.split_whitespace();
        let method = parts.next().unwrap_or("").to_string();
        let path = parts.next().unwrap_or("").to_string();
        let mut length = 0usize;
        let mut authorization = None;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((k, v)) = line.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    length = v.trim().parse().unwrap_or(0);
                } else if k.eq_ignore_ascii_case("authorization") {
                    authorization = Some(v.trim().to_string());
                }
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let request = Seen {
            method,
            path,
            body,
            authorization,
        };
        let n = {
            let mut seen = log.lock().expect("lock");
            seen.push(request.clone());
            seen.len() - 1
        };
        let (code, extra) = match answer(&request, n) {
            Answer::Status(code) => (code, String::new()),
            Answer::With(code, header) => (code, format!("{header}\r\n")),
            Answer::Hang => {
                // Keep the connection open and never answer.
                thread::sleep(Duration::from_secs(120));
                return;
            }
        };
        let reply = format!(
            "HTTP/1.1 {code} X\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n{extra}\r\nOK"
        );
        if out.write_all(reply.as_bytes()).is_err() {
            return;
        }
    }
}

/// A directory for a metrics file: the test's own, mode 0755 (as the
/// collector's directory is).
fn metrics_dir() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = crate::util::scratch();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    dir
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}
