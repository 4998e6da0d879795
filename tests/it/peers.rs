//! Peers that lie, and words that are not what they seem: what a network
//! peer or COMMAND puts in a message reaches the text log and `--log-file`
//! escaped, never as bytes that drive a terminal.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::thread;

use crate::util::{retry, scratch};

/// Bytes that would drive a terminal (clear the screen, retitle the
/// window, return the carriage over what was written).
const DRIVES_A_TERMINAL: [u8; 3] = [0x1b, b'\r', 0x07];

/// Whether `log` holds a byte of [`DRIVES_A_TERMINAL`].
fn raw_controls(log: &[u8]) -> bool {
    log.iter().any(|b| DRIVES_A_TERMINAL.contains(b))
}

/// A Pushgateway whose refusal (HTTP 400) carried escape sequences in its
/// body reached the log raw: it is escaped as HTTP mode escapes a reply.
#[test]
fn a_gateways_reply_body_reaches_the_log_escaped() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { return };
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let body = "\x1b]0;owned\x07\x1b[2Jbad\rinput";
            let _ = write!(
                s,
                "HTTP/1.1 400 Bad Request\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    let dir = scratch();
    let file = dir.path().join("log");
    let url = format!("http://127.0.0.1:{port}/");
    let out = retry(["--metrics-push", &url, "--", "true"]).run();
    out.expect_code(0);
    let log_file = file.to_str().expect("utf-8");
    retry(["--metrics-push", &url, "--log-file", log_file, "--", "true"])
        .run()
        .expect_code(0);
    let written = std::fs::read(&file).expect("the log file");
    for (what, log) in [("stderr", &out.stderr), ("--log-file", &written)] {
        let text = String::from_utf8_lossy(log);
        assert!(text.contains("HTTP 400"), "{what}: {text}");
        assert!(!raw_controls(log), "{what}: {text:?}");
        assert!(
            text.contains(r"\x1b]0;owned\x07\x1b[2Jbad"),
            "{what}: {text}"
        );
    }
}

/// Control characters in COMMAND reached the terminal raw in "command not
/// found", its hint and `-v`'s "running" line.
#[test]
fn control_characters_in_command_reach_the_log_escaped() {
    let dir = scratch();
    let file = dir.path().join("log");
    for command in [
        &["\x1b[2Jprog\r", "x"][..],
        &["5", "\x1b]0;owned\x07curl", "x"][..],
        &["LANG=\x1b[2J", "run"][..],
    ] {
        let mut args = vec!["-v", "--max", "1", "--"];
        args.extend_from_slice(command);
        let out = retry(&args).run();
        out.expect_code(127);
        let text = out.stderr_text();
        assert!(
            text.contains("retry: running ") && text.contains(" $'"),
            "{text}"
        );
        assert!(text.contains("command not found"), "{text}");
        assert!(!raw_controls(&out.stderr), "{command:?}: {text:?}");
        let mut args = vec!["--log-file", file.to_str().expect("utf-8")];
        args.extend_from_slice(command);
        retry(&args).run().expect_code(127);
    }
    let written = std::fs::read(&file).expect("the log file");
    assert!(
        !raw_controls(&written),
        "{:?}",
        String::from_utf8_lossy(&written)
    );
    let text = String::from_utf8_lossy(&written);
    assert!(text.contains("retry: running $'"), "{text}");
    assert!(text.contains(r"command not found: \x1b[2Jprog\r"), "{text}");
    assert!(
        text.contains(r"write: retry --max 5 -- \x1b]0;owned\x07curl"),
        "{text}"
    );
    assert!(
        text.contains(r"write: retry -- env LANG=\x1b[2J run"),
        "{text}"
    );
}
