//! Peers that lie, and words that are not what they seem: what a network
//! peer or COMMAND puts in a message reaches the text log and `--log-file`
//! escaped, never as bytes that drive a terminal.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::thread;

use crate::util::{
    NOBODY, Sticky, as_nobody, as_nobody_command, bin_for_anyone, path_str, plays_a_second_user,
    retry, retry_sh, scratch,
};

/// Bytes that would drive a terminal (clear the screen, retitle the
/// window, return the carriage over what was written).
const DRIVES_A_TERMINAL: [u8; 3] = [0x1b, b'\r', 0x07];

/// Whether `log` holds a byte of [`DRIVES_A_TERMINAL`].
fn raw_controls(log: &[u8]) -> bool {
    log.iter().any(|b| DRIVES_A_TERMINAL.contains(b))
}

/// A port on 127.0.0.1 where every request gets `status` and `body`.
fn answering(status: &'static str, body: &'static str) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { return };
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let _ = write!(
                s,
                "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    port
}

/// A Pushgateway whose refusal (HTTP 400) carried escape sequences in its
/// body reached the log raw: it is escaped as HTTP mode escapes a reply.
#[test]
fn a_gateways_reply_body_reaches_the_log_escaped() {
    let port = answering("400 Bad Request", "\x1b]0;owned\x07\x1b[2Jbad\rinput");
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

/// A directory of an output path that is another user's symbolic link in a
/// shared directory (`/tmp/their-link/out`) was followed, where the same
/// link as the last component was not: every component is judged now, for
/// `-o`, `--log-file`, `--metrics-file` and `--plot`. The caller's own link
/// there is followed.
#[test]
fn another_users_link_anywhere_in_an_output_path_is_not_followed() {
    use std::os::unix::fs::symlink;
    if !plays_a_second_user() {
        return;
    }
    let tmp = Sticky::new();
    let mine = scratch();
    as_nobody(&format!(
        "ln -s '{}' '{}'",
        path_str(mine.path()),
        path_str(&tmp.join("theirs"))
    ));
    symlink(mine.path(), tmp.join("own")).expect("own link");
    let url = format!("http://127.0.0.1:{}/", answering("200 OK", "body"));
    let outputs: [(&str, &[&str]); 4] = [
        ("-o", &["--http", &url]),
        ("--log-file", &["--", "true"]),
        ("--metrics-file", &["--", "true"]),
        ("--plot", &["--simulate", "3", "--outage", "1s"]),
    ];
    for (flag, rest) in outputs {
        let name = format!("{}.out", flag.trim_start_matches('-'));
        let via = |link: &str| path_str(&tmp.join(link).join(&name));
        let theirs = via("theirs");
        let mut args = vec![flag, theirs.as_str()];
        args.extend_from_slice(rest);
        let out = retry(&args).run();
        let err = out.stderr_text();
        assert!(
            err.contains(&format!(
                "theirs is a symbolic link made by another user (uid {NOBODY})"
            )),
            "{flag}: {err}"
        );
        assert_ne!(out.code(), 0, "{flag}: {err}");
        assert!(!mine.path().join(&name).exists(), "{flag}: written");
        let own = via("own");
        let mut args = vec![flag, own.as_str()];
        args.extend_from_slice(rest);
        let out = retry(&args).run();
        assert!(
            mine.path().join(&name).exists(),
            "{flag}: {}",
            out.stderr_text()
        );
    }
}

/// `--log-file` in a shared directory appended into a hard link another
/// user planted to a file of the caller's elsewhere (possible where
/// `fs.protected_hardlinks` is 0, or was when the link was made): a regular
/// file with more than one link there is refused. The caller is `nobody`
/// here and the link root's, the one user who needs no setting to make it.
#[test]
fn a_log_file_with_a_second_hard_link_in_a_shared_directory_is_not_appended_to() {
    if !plays_a_second_user() {
        return;
    }
    let tmp = Sticky::new();
    let (_bin_dir, bin) = bin_for_anyone();
    let precious = tmp.join("precious");
    as_nobody(&format!("echo precious > '{}'", path_str(&precious)));
    let elsewhere = tmp.join("elsewhere");
    std::fs::create_dir(&elsewhere).expect("mkdir");
    let precious_moved = elsewhere.join("precious");
    std::fs::rename(&precious, &precious_moved).expect("move");
    let log = tmp.join("retry.log");
    std::fs::hard_link(&precious_moved, &log).expect("hard link");
    let out = as_nobody_command(&format!(
        "'{}' --log-file '{}' -- true",
        path_str(&bin),
        path_str(&log)
    ))
    .output()
    .expect("retry as nobody");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("has 2 hard links"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&precious_moved).expect("precious"),
        "precious\n"
    );
    // A file of one link there is appended to as before.
    let single = tmp.join("single.log");
    as_nobody(&format!(
        "'{}' -v --log-file '{}' -- true",
        path_str(&bin),
        path_str(&single)
    ));
    let text = std::fs::read_to_string(&single).expect("single");
    assert!(text.contains("succeeded"), "{text}");
}

/// A redis-server on 127.0.0.1 (persistence off) and, in front of it, the
/// lying sentinel of `peers/fake_sentinel.py` in `mode`; both stopped when
/// dropped.
struct LyingSentinel {
    children: [std::process::Child; 2],
    port: u16,
    _dir: tempfile::TempDir,
}

impl LyingSentinel {
    fn start(mode: &str) -> LyingSentinel {
        use std::process::{Command, Stdio};
        use std::time::Duration;
        let dir = scratch();
        let master = crate::util::free_port().to_string();
        let redis = Command::new("redis-server")
            .args(["--port", &master, "--bind", "127.0.0.1", "--save", ""])
            .args(["--appendonly", "no", "--dir", &path_str(dir.path())])
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server (package redis-server)");
        let port_file = dir.path().join("port");
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/it/peers/fake_sentinel.py"
        );
        let sentinel = Command::new("python3")
            .args([script, &path_str(&port_file), &master, mode])
            .spawn()
            .expect("python3");
        crate::util::wait_for_file(&port_file, Duration::from_secs(10));
        crate::util::wait_until(Duration::from_secs(10), "the port written", || {
            std::fs::read_to_string(&port_file).is_ok_and(|p| !p.is_empty())
        });
        let port = std::fs::read_to_string(&port_file)
            .expect("port")
            .trim()
            .parse()
            .expect("a port");
        crate::util::wait_for_port(
            master.parse().expect("port"),
            Duration::from_secs(10),
            "redis-server",
        );
        LyingSentinel {
            children: [redis, sentinel],
            port,
            _dir: dir,
        }
    }

    fn url(&self) -> String {
        format!("redis+sentinel://127.0.0.1:{}/m", self.port)
    }
}

impl Drop for LyingSentinel {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The most a run against a lying sentinel may hold (KiB): retry itself
/// holds under 20 MiB here; without a bound it held hundreds of MiB within
/// seconds.
const PEAK_RSS_MAX_KIB: u64 = 48 * 1024;

/// A sentinel that streams an endless `+switch-master` message to the
/// failover listener grew retry's memory without end (about 2 GB after
/// 10 s): the message is dropped at 64 KiB with the subscription, and the
/// run goes on paced by the store and ends as it should.
#[test]
fn an_endless_failover_message_costs_no_more_than_its_bound() {
    let s = LyingSentinel::start("endless-news");
    let url = s.url();
    let args = [
        "--state", &url, "--group", "g", "--budget", "--max", "4", "--base", "1s",
    ];
    let peak = crate::util::peak_rss_kib(&args, "exit 3", 3);
    assert!(peak < PEAK_RSS_MAX_KIB, "peak RSS {peak} KiB");
    // The store worked all along: the budget counted the failures.
    let out = retry_sh(
        &["--state", &url, "--group", "g", "--budget", "--max", "1"],
        "exit 3",
    )
    .run();
    out.expect_code(3);
    assert!(
        !out.stderr_text().contains("warning"),
        "{}",
        out.stderr_text()
    );
}

/// A 1.5 GB answer to the master lookup cost 890 MB: it is refused at
/// 64 KiB, said in one warning, and the run goes on without the store.
#[test]
fn a_huge_answer_to_the_master_lookup_is_refused_at_its_bound() {
    let s = LyingSentinel::start("huge-answer");
    let url = s.url();
    let args = [
        "--state", &url, "--group", "g", "--budget", "--max", "2", "--base", "10ms",
    ];
    let peak = crate::util::peak_rss_kib(&args, "exit 3", 3);
    assert!(peak < PEAK_RSS_MAX_KIB, "peak RSS {peak} KiB");
    let out = retry_sh(&args, "exit 3").run();
    out.expect_code(3);
    let err = out.stderr_text();
    assert!(err.contains("a reply of over 64 KiB"), "{err}");
    assert_eq!(err.matches("shared state at").count(), 1, "{err}");
}

/// A sentinel's master host and a store's error text reached the text log
/// and `--log-file` with their terminal escapes raw.
#[test]
fn a_sentinels_host_and_error_text_reach_the_log_escaped() {
    for mode in ["escapes", "escaped-error"] {
        let s = LyingSentinel::start(mode);
        let url = s.url();
        let dir = scratch();
        let file = dir.path().join("log");
        let log_file = path_str(&file);
        let base = [
            "--state",
            url.as_str(),
            "--group",
            "g",
            "--budget",
            "--max",
            "1",
        ];
        let out = retry_sh(&base, "exit 3").run();
        out.expect_code(3);
        let mut with_file = base.to_vec();
        with_file.extend(["--log-file", &log_file]);
        retry_sh(&with_file, "exit 3").run().expect_code(3);
        let written = std::fs::read(&file).expect("the log file");
        for (what, log) in [("stderr", &out.stderr), ("--log-file", &written)] {
            let text = String::from_utf8_lossy(log);
            assert!(
                text.contains(r"\x1b]0;owned\x07\x1b[2J"),
                "{mode} {what}: {text}"
            );
            assert!(!raw_controls(log), "{mode} {what}: {text:?}");
        }
    }
}
