//! The unix-socket and file probes against real sockets and files: `--tcp
//! unix:PATH` (a listener that appears late, a path that is no socket),
//! and `--file PATH` written late by another process, `--non-empty`,
//! `--directory`, and the modes' shared contract (dry run, metrics job).

use std::os::unix::net::UnixListener;
use std::process::Command;

use crate::util::{Outcome, path_str, retry, scratch};

fn done(out: &Outcome) -> serde_json::Value {
    out.json()
        .into_iter()
        .find(|e| e["event"] == "done")
        .expect("a done event")
}

const FAST: [&str; 4] = ["--base", "50ms", "--log-format", "json"];

fn args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut all = FAST.to_vec();
    all.extend_from_slice(extra);
    all
}

#[test]
fn a_listening_unix_socket_succeeds_at_once() {
    let dir = scratch();
    let sock = dir.path().join("app.sock");
    let _listener = UnixListener::bind(&sock).expect("bind");
    let target = format!("unix:{}", path_str(&sock));
    let out = retry(args(&["--tcp", &target])).run();
    out.expect_code(0);
    assert_eq!(done(&out)["attempts"], 1);
    assert_eq!(out.json()[0]["command"][0], target.as_str());
}

/// A socket that is not there yet (ENOENT) is retried until a server
/// started late binds it.
#[test]
fn a_unix_socket_bound_late_is_waited_for() {
    let dir = scratch();
    let sock = dir.path().join("late.sock");
    let script = format!(
        "import socket, time\ntime.sleep(0.6)\ns = socket.socket(socket.AF_UNIX)\ns.bind({:?})\ns.listen()\ntime.sleep(20)\n",
        path_str(&sock)
    );
    let mut server = Command::new("python3")
        .args(["-c", &script])
        .spawn()
        .expect("python3");
    let target = format!("unix:{}", path_str(&sock));
    let out = retry(args(&["--max-time", "15s", "--tcp", &target])).run();
    let _ = server.kill();
    let _ = server.wait();
    out.expect_code(0);
    let attempts = done(&out)["attempts"].as_u64().unwrap();
    assert!(attempts >= 2, "{attempts}");
    let first = &out.json()[1];
    let reason = first["reason"].as_str().unwrap_or_default().to_string();
    assert!(reason.contains("no such file"), "{first}");
}

/// A socket file nobody listens on is ECONNREFUSED: retried.
#[test]
fn a_unix_socket_nobody_listens_on_is_retried_and_exits_7() {
    let dir = scratch();
    let sock = dir.path().join("dead.sock");
    drop(UnixListener::bind(&sock).expect("bind"));
    let target = format!("unix:{}", path_str(&sock));
    let out = retry(args(&["--max=3", "--tcp", &target])).run();
    out.expect_code(7);
    let d = done(&out);
    assert_eq!(d["attempts"], 3);
    assert!(d["reason"].as_str().unwrap().contains("refused"), "{d}");
}

#[test]
fn a_path_that_is_not_a_socket_is_permanent() {
    let dir = scratch();
    let file = dir.path().join("plain");
    std::fs::write(&file, "x").unwrap();
    let target = format!("unix:{}", path_str(&file));
    let out = retry(args(&["--max=5", "--tcp", &target])).run();
    out.expect_code(7);
    let d = done(&out);
    assert_eq!(d["attempts"], 1);
    assert!(
        d["reason"].as_str().unwrap().contains("not a socket"),
        "{d}"
    );
}

/// Another process writes the file while retry waits; with --non-empty an
/// empty file created first does not count.
#[test]
fn a_file_written_late_by_another_process_is_waited_for() {
    let dir = scratch();
    let token = dir.path().join("token");
    let shown = path_str(&token);
    let mut writer = Command::new("sh")
        .args([
            "-c",
            &format!(": > '{shown}'; sleep 0.6; echo secret > '{shown}'"),
        ])
        .spawn()
        .expect("sh");
    let out = retry(args(&[
        "--max-time",
        "15s",
        "--file",
        &shown,
        "--non-empty",
    ]))
    .run();
    let _ = writer.wait();
    out.expect_code(0);
    assert!(done(&out)["attempts"].as_u64().unwrap() >= 2);
    assert_eq!(out.json()[0]["command"][0], format!("file:{shown}"));
    // Nothing of the file reaches stdout.
    assert!(out.stdout.is_empty());
}

#[test]
fn a_missing_file_is_retried_and_exits_37() {
    let dir = scratch();
    let missing = path_str(&dir.path().join("never"));
    let out = retry(args(&["--max=3", "--file", &missing])).run();
    out.expect_code(37);
    let d = done(&out);
    assert_eq!(d["attempts"], 3);
    assert!(
        d["reason"].as_str().unwrap().contains("no such file"),
        "{d}"
    );
}

#[test]
fn directory_waits_for_a_directory() {
    let dir = scratch();
    let file = dir.path().join("f");
    std::fs::write(&file, "x").unwrap();
    let out = retry(args(&[
        "--max=2",
        "--file",
        &path_str(&file),
        "--directory",
    ]))
    .run();
    out.expect_code(37);
    assert!(
        done(&out)["reason"]
            .as_str()
            .unwrap()
            .contains("not a directory"),
    );
    retry(args(&["--file", &path_str(dir.path()), "--directory"]))
        .run()
        .expect_code(0);
}

/// The probes are modes like the others: a preview shows them, their
/// flags are refused elsewhere, and the metrics job is named after them.
#[test]
fn the_probes_share_every_mode_s_contract() {
    let dir = scratch();
    let out = retry(["--dry-run", "--max", "2", "--file", "/run/token"]).run();
    out.expect_code(0);
    assert!(out.stdout_text().contains("command: file:/run/token"));
    let out = retry(["--non-empty", "--", "true"]).run();
    out.expect_code(2);
    assert!(
        out.stderr_text()
            .contains("--non-empty applies only to --file PATH"),
        "{}",
        out.stderr_text()
    );
    let out = retry(["--file", "/x", "--tcp", "db:1"]).run();
    out.expect_code(2);
    assert!(out.stderr_text().contains("mutually exclusive"));
    let metrics = dir.path().join("m.prom");
    retry([
        "--metrics-file",
        &path_str(&metrics),
        "--file",
        &path_str(dir.path()),
    ])
    .run()
    .expect_code(0);
    let text = std::fs::read_to_string(&metrics).unwrap();
    assert!(text.contains("job=\"file\""), "{text}");
}

/// An HTTP server on a unix socket, in Python, bound after `delay`
/// seconds; it answers every GET with the path asked and the Host header.
fn socket_http_server(sock: &std::path::Path, delay: f64) -> std::process::Child {
    let script = format!(
        r#"
import http.server, socketserver, time
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = ("%s %s\n" % (self.path, self.headers.get("Host"))).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
time.sleep({delay})
socketserver.UnixStreamServer({path:?}, H).serve_forever()
"#,
        path = path_str(sock)
    );
    Command::new("python3")
        .args(["-c", &script])
        .spawn()
        .expect("python3")
}

/// `--unix-socket` as curl has it: the request goes through the socket,
/// the URL still gives the path and the Host header; a socket bound late
/// is waited for.
#[test]
fn http_through_a_unix_socket_bound_late() {
    let dir = scratch();
    let sock = dir.path().join("api.sock");
    let mut server = socket_http_server(&sock, 0.6);
    let out = retry(args(&[
        "--max-time",
        "15s",
        "--unix-socket",
        &path_str(&sock),
        "--http",
        "http://docker/v1.43/_ping",
    ]))
    .run();
    let _ = server.kill();
    let _ = server.wait();
    out.expect_code(0);
    assert_eq!(out.stdout_text(), "/v1.43/_ping docker\n");
    assert!(done(&out)["attempts"].as_u64().unwrap() >= 2);
    let command = &out.json()[0]["command"];
    assert!(command.to_string().contains("--unix-socket"), "{command}");
}

#[test]
fn http_through_a_path_that_is_not_a_socket_is_permanent() {
    let dir = scratch();
    let file = dir.path().join("plain");
    std::fs::write(&file, "x").unwrap();
    let out = retry(args(&[
        "--max=5",
        "--unix-socket",
        &path_str(&file),
        "--http",
        "http://localhost/",
    ]))
    .run();
    out.expect_code(7);
    let d = done(&out);
    assert_eq!(d["attempts"], 1);
    assert!(
        d["reason"].as_str().unwrap().contains("not a socket"),
        "{d}"
    );
    let out = retry(["--unix-socket", "/x", "--", "true"]).run();
    out.expect_code(2);
    assert!(out.stderr_text().contains("applies only to HTTP mode"));
}
