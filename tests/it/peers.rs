//! Peers that lie, and words that are not what they seem: what a network
//! peer or COMMAND puts in a message reaches the text log and `--log-file`
//! escaped, never as bytes that drive a terminal.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::thread;

use crate::util::{
    NOBODY, Sticky, as_nobody, as_nobody_command, bin_for_anyone, path_str, plays_a_second_user,
    retry, scratch,
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
