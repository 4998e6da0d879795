//! `--grpc HOST:PORT` against real gRPC servers on 127.0.0.1: Python's
//! grpcio with the official health service (grpcio-health-checking, from
//! PyPI; scripts/test.sh installs both), flipping from NOT_SERVING to
//! SERVING, registering a named service late, serving TLS with a test CA,
//! and serving no health service at all.

use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use crate::pki::Pki;
use crate::util::{Outcome, free_port, path_str, retry, scratch};

/// A server of `tests/it/grpc/server.py`, killed when dropped.
struct Server {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether Python can serve gRPC health; else the test is skipped
/// (counted), or fails in a strict run.
fn have_grpcio() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import grpc, grpc_health.v1.health"])
        .status()
        .is_ok_and(|s| s.success());
    crate::need::met(
        ok,
        "Python's grpcio and grpcio-health-checking (scripts/test.sh installs them with pip)",
    )
}

fn server(args: &[&str]) -> Server {
    let dir = scratch();
    let port_file = dir.path().join("port");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/grpc/server.py");
    let child = Command::new("python3")
        .arg(script)
        .arg(&port_file)
        .args(args)
        // grpcio's own log of refused handshakes is not the test's.
        .env("GRPC_VERBOSITY", "NONE")
        .spawn()
        .expect("python3");
    let until = Instant::now() + Duration::from_secs(30);
    let port = loop {
        if let Ok(p) = std::fs::read_to_string(&port_file) {
            break p.trim().parse().expect("a port");
        }
        assert!(Instant::now() < until, "the gRPC server did not start");
        std::thread::sleep(Duration::from_millis(50));
    };
    Server {
        child,
        port,
        _dir: dir,
    }
}

fn done(out: &Outcome) -> serde_json::Value {
    out.json()
        .into_iter()
        .find(|e| e["event"] == "done")
        .expect("a done event")
}

fn reason(out: &Outcome) -> String {
    done(out)["reason"].as_str().unwrap_or_default().to_string()
}

fn run(extra: &[&str]) -> Outcome {
    let mut all = vec!["--base", "200ms", "--log-format", "json"];
    all.extend_from_slice(extra);
    retry(all).run()
}

#[test]
fn a_serving_server_succeeds_at_once() {
    if !have_grpcio() {
        return;
    }
    let s = server(&[]);
    let addr = format!("127.0.0.1:{}", s.port);
    let out = run(&["--grpc", &addr]);
    out.expect_code(0);
    assert_eq!(done(&out)["attempts"], 1);
    assert_eq!(out.json()[0]["command"][0], format!("grpc://{addr}"));
}

/// NOT_SERVING is retried until the server flips to SERVING; to the end,
/// it exits 4, as grpc-health-probe's "unhealthy".
#[test]
fn not_serving_is_retried_until_serving_and_exits_4_at_the_end() {
    if !have_grpcio() {
        return;
    }
    let s = server(&["--not-serving-for", "1.5"]);
    let addr = format!("127.0.0.1:{}", s.port);
    let out = run(&["--max-time", "20s", "--grpc", &addr]);
    out.expect_code(0);
    let first = out
        .json()
        .into_iter()
        .find(|e| e["event"] == "attempt")
        .expect("an attempt event");
    assert!(
        first["reason"].to_string().contains("NOT_SERVING"),
        "{first}"
    );
    let never = server(&["--not-serving-for", "600"]);
    let addr = format!("127.0.0.1:{}", never.port);
    let out = run(&["--max", "2", "--grpc", &addr]);
    out.expect_code(4);
    assert_eq!(done(&out)["attempts"], 2);
    assert!(reason(&out).contains("NOT_SERVING"), "{}", reason(&out));
}

/// A server without the health service cannot be asked: permanent at
/// once, in one line saying so, exit 100 + 12.
#[test]
fn no_health_service_is_permanent_at_once() {
    if !have_grpcio() {
        return;
    }
    let s = server(&["--no-health"]);
    let addr = format!("127.0.0.1:{}", s.port);
    let out = run(&["--max", "5", "--grpc", &addr]);
    out.expect_code(112);
    assert_eq!(done(&out)["attempts"], 1);
    assert!(
        reason(&out).contains("no health service"),
        "{}",
        reason(&out)
    );
}

/// A named service registered after the server listens is waited for; one
/// the server never knows is permanent once the grace (10 s) is over.
#[test]
fn a_named_service_is_waited_for_within_the_grace_only() {
    if !have_grpcio() {
        return;
    }
    let s = server(&["--service", "app.Api", "--register-after", "1.5"]);
    let addr = format!("127.0.0.1:{}", s.port);
    let out = run(&[
        "--max-time",
        "20s",
        "--grpc",
        &addr,
        "--grpc-service",
        "app.Api",
    ]);
    out.expect_code(0);
    assert!(done(&out)["attempts"].as_u64().unwrap() >= 2);
    let started = Instant::now();
    let out = run(&[
        "--max-time",
        "60s",
        "--cap",
        "2s",
        "--grpc",
        &addr,
        "--grpc-service",
        "other.Svc",
    ]);
    out.expect_code(105);
    assert!(started.elapsed() >= Duration::from_secs(10));
    assert!(reason(&out).contains("other.Svc"), "{}", reason(&out));
}

/// A server that accepts and never answers: without --timeout the call is
/// given 10 s, as its deadline, and ends as DEADLINE_EXCEEDED (exit 104).
#[test]
fn a_silent_server_is_given_the_call_deadline() {
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = silent.local_addr().unwrap().to_string();
    let started = Instant::now();
    let out = run(&["--max", "1", "--grpc", &addr]);
    out.expect_code(104);
    assert!(started.elapsed() >= Duration::from_secs(10));
    assert!(
        reason(&out).contains("DEADLINE_EXCEEDED"),
        "{}",
        reason(&out)
    );
    // With --timeout, that is the bound instead.
    let started = Instant::now();
    let out = run(&["--max", "1", "--timeout", "1s", "--grpc", &addr]);
    out.expect_code(28);
    assert!(started.elapsed() < Duration::from_secs(8));
}

#[test]
fn a_refused_connection_is_retried_and_exits_7() {
    let addr = format!("127.0.0.1:{}", free_port());
    let out = run(&["--max", "3", "--grpc", &addr]);
    out.expect_code(7);
    assert_eq!(done(&out)["attempts"], 3);
}

/// TLS with HTTP mode's flags and words: --cacert trusts the test CA;
/// without it the certificate error says what to add; a name given with
/// --grpc-authority is checked against the certificate.
#[test]
fn tls_with_a_test_ca() {
    if !have_grpcio() {
        return;
    }
    let pki = Pki::new();
    let s = server(&["--tls", &pki.path("server.pem"), &pki.path("server.key")]);
    let addr = format!("127.0.0.1:{}", s.port);
    let ca = pki.path("ca.pem");
    run(&["--grpc", &addr, "--grpc-tls", "--cacert", &ca]).expect_code(0);
    // Plaintext to a TLS server: said once, not retried.
    let out = run(&["--max", "3", "--grpc", &addr]);
    out.expect_code(8);
    assert_eq!(done(&out)["attempts"], 1);
    assert!(reason(&out).contains("add --grpc-tls"), "{}", reason(&out));
    let out = run(&["--max", "1", "--grpc", &addr, "--grpc-tls"]);
    out.expect_code(35);
    assert!(reason(&out).contains("--cacert FILE"), "{}", reason(&out));
    let out = run(&[
        "--max",
        "1",
        "--grpc",
        &addr,
        "--grpc-tls",
        "--cacert",
        &ca,
        "--grpc-authority",
        "api.internal",
    ]);
    out.expect_code(35);
    assert!(reason(&out).contains("does not match"), "{}", reason(&out));
}

/// gRPC mode is a mode like the others: its flags are refused elsewhere,
/// TLS flags without --grpc-tls are refused, the dry run shows it, the
/// metrics job is named after it, and grpc-health-probe as COMMAND is
/// pointed to it.
#[test]
fn grpc_shares_every_mode_s_contract() {
    let out = retry(["--grpc-service", "a", "--", "true"]).run();
    out.expect_code(2);
    assert!(
        out.stderr_text()
            .contains("--grpc-service applies only to --grpc")
    );
    let out = retry(["--grpc", "127.0.0.1:1", "--cacert", "/x"]).run();
    out.expect_code(2);
    assert!(
        out.stderr_text().contains("add --grpc-tls"),
        "{}",
        out.stderr_text()
    );
    let out = retry([
        "--dry-run",
        "--max",
        "2",
        "--grpc",
        "api:50051",
        "--grpc-service",
        "a.B",
    ])
    .run();
    out.expect_code(0);
    assert!(
        out.stdout_text()
            .contains("command: grpc://api:50051 --grpc-service a.B")
    );
    let dir = scratch();
    let metrics = dir.path().join("m.prom");
    let addr = format!("127.0.0.1:{}", free_port());
    retry([
        "--max",
        "1",
        "--metrics-file",
        &path_str(&metrics),
        "--grpc",
        &addr,
    ])
    .run();
    let text = std::fs::read_to_string(&metrics).unwrap();
    assert!(text.contains("job=\"grpc\""), "{text}");
    let out = retry([
        "--max",
        "1",
        "--",
        "/nonexistent/grpc-health-probe",
        "-addr=db:50051",
        "-tls",
    ])
    .run();
    out.expect_code(127);
    assert!(
        out.stderr_text()
            .contains("did you mean retry --grpc db:50051 --grpc-tls"),
        "{}",
        out.stderr_text()
    );
    // Installed, and failing: the give-up line says it too.
    let probe = dir.path().join("grpc-health-probe");
    std::fs::write(&probe, "#!/bin/sh\nexit 2\n").unwrap();
    std::fs::set_permissions(&probe, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out = retry(["--max", "1", "--", &path_str(&probe), "-addr=db:50051"]).run();
    out.expect_code(2);
    assert!(
        out.stderr_text()
            .contains("did you mean retry --grpc db:50051"),
        "{}",
        out.stderr_text()
    );
}
