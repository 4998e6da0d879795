//! Tracing against a real receiver: an OTLP/HTTP server on 127.0.0.1
//! (`receiver.py`) that decodes every export with the official
//! `opentelemetry-proto` package, and a command that exports its own span
//! with the OpenTelemetry Python SDK (`child.py`), parented by the
//! TRACEPARENT retry hands it. `scripts/test.sh` installs both packages in
//! a virtual environment and names its interpreter in
//! `RETRY_TEST_OTEL_PYTHON`.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::util::{path_str, scratch};

mod context;
mod export;

/// The Python with the OpenTelemetry packages.
pub fn python() -> String {
    std::env::var("RETRY_TEST_OTEL_PYTHON").unwrap_or_else(|_| "python3".to_string())
}

pub fn here(file: &str) -> String {
    format!("{}/tests/it/trace/{file}", env!("CARGO_MANIFEST_DIR"))
}

/// A traceparent whose ids the tests know.
pub const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
pub const PARENT_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
pub const PARENT_SPAN: &str = "00f067aa0ba902b7";

/// A receiver running on 127.0.0.1.
pub struct Receiver {
    child: Child,
    pub port: u16,
    out: PathBuf,
    _dir: tempfile::TempDir,
}

impl Receiver {
    pub fn start() -> Receiver {
        Receiver::with(0.0, 0)
    }

    /// Answering each export `delay` seconds late, and the first `fail`
    /// probes with 503.
    pub fn with(delay: f64, fail: u32) -> Receiver {
        Receiver::serving(delay, fail, None)
    }

    /// Speaking HTTPS only, with the certificate and key `tls` names.
    pub fn tls(cert: &std::path::Path, key: &std::path::Path) -> Receiver {
        Receiver::serving(0.0, 0, Some((cert, key)))
    }

    fn serving(
        delay: f64,
        fail: u32,
        tls: Option<(&std::path::Path, &std::path::Path)>,
    ) -> Receiver {
        let dir = scratch();
        let out = dir.path().join("spans.jsonl");
        let port_file = dir.path().join("port");
        let mut cmd = Command::new(python());
        if let Some((cert, key)) = tls {
            cmd.env("RECEIVER_TLS_CERT", cert)
                .env("RECEIVER_TLS_KEY", key);
        }
        let mut child = cmd
            .arg(here("receiver.py"))
            .arg(&out)
            .arg(&port_file)
            .arg(delay.to_string())
            .arg(fail.to_string())
            .stdin(Stdio::null())
            .spawn()
            .expect("start the OTLP receiver (python3 with opentelemetry-proto)");
        crate::util::wait_until(Duration::from_secs(30), "the receiver's port", || {
            if let Ok(Some(status)) = child.try_wait() {
                panic!(
                    "receiver.py exited ({status}): {} lacks opentelemetry-proto; scripts/test.sh installs it and sets RETRY_TEST_OTEL_PYTHON",
                    python()
                );
            }
            port_file.exists()
        });
        let port = std::fs::read_to_string(&port_file)
            .expect("port")
            .trim()
            .parse()
            .expect("a port");
        Receiver {
            child,
            port,
            out,
            _dir: dir,
        }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn lines(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.out)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .collect()
    }

    /// The spans received so far.
    pub fn spans(&self) -> Vec<Value> {
        self.lines()
            .into_iter()
            .filter(|l| l.get("span").is_some())
            .collect()
    }

    /// The probes' requests received so far.
    pub fn probes(&self) -> Vec<Value> {
        self.lines()
            .into_iter()
            .filter(|l| l.get("probe").is_some())
            .collect()
    }

    /// The spans, once there are at least `n`.
    pub fn wait_spans(&self, n: usize) -> Vec<Value> {
        crate::util::wait_until(Duration::from_secs(30), "spans at the receiver", || {
            self.spans().len() >= n
        });
        self.spans()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The span named `name`.
pub fn named<'a>(spans: &'a [Value], name: &str) -> &'a Value {
    spans
        .iter()
        .find(|s| s["span"] == name)
        .unwrap_or_else(|| panic!("no span {name:?} in {spans:#?}"))
}

/// The spans named `name`, in order of start.
pub fn all_named<'a>(spans: &'a [Value], name: &str) -> Vec<&'a Value> {
    let mut found: Vec<&Value> = spans.iter().filter(|s| s["span"] == name).collect();
    found.sort_by_key(|s| s["start"].as_u64());
    found
}

/// `sh -c` running the child, exiting `code` (or `0` on attempt `ok_on`).
pub fn child_script(ok_on: u32, code: u32) -> String {
    format!(
        "if [ \"$RETRY_ATTEMPT\" = {ok_on} ]; then exec {py} {child} 0; else exec {py} {child} {code}; fi",
        py = python(),
        child = path_str(std::path::Path::new(&here("child.py"))),
    )
}
