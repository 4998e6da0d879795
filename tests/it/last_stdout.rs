//! `--last-stdout`: stdout carries exactly the stdout of the attempt retry
//! exits with (the success, or the last attempt on giving up), never a
//! retried attempt's bytes; stderr and the log still stream; nothing is
//! ever dropped. Without it, a failed attempt whose stdout stays in a file
//! or a pipe gets a line saying so when it is retried.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use crate::pty::run_retry;
use crate::util::{command, path_str, retry, retry_sh, scratch, wait_for_file};

/// Prints a line on each stream naming the attempt, then fails until
/// attempt `ok` (never, with 0).
fn noisy(ok: u32) -> String {
    format!("echo out $RETRY_ATTEMPT; echo err $RETRY_ATTEMPT >&2; [ $RETRY_ATTEMPT = {ok} ]")
}

#[test]
fn a_retried_attempts_partial_stdout_never_reaches_the_pipe() {
    let out = retry_sh(&["--last-stdout", "--base", "10ms"], &noisy(2)).run();
    out.expect_code(0);
    assert_eq!(out.stdout_text(), "out 2\n");
    // stderr streamed: both attempts' lines, and the log.
    let err = out.stderr_text();
    assert!(err.contains("err 1\n") && err.contains("err 2\n"), "{err}");
    assert!(err.contains("succeeded on attempt 2"), "{err}");
    assert!(!err.contains("stays there"), "{err}");
    // A status --success-on names is a success too: out at once, alone.
    let script = "echo out $RETRY_ATTEMPT; [ $RETRY_ATTEMPT = 2 ] && exit 3; exit 1";
    let out = retry_sh(
        &["-q", "--last-stdout", "--base", "1ms", "--success-on", "3"],
        script,
    )
    .run();
    out.expect_code(0);
    assert_eq!(out.stdout_text(), "out 2\n");
}

#[test]
fn giving_up_brings_out_the_last_attempts_stdout_only_with_its_status() {
    let out = retry_sh(
        &["-q", "--last-stdout", "--max=3", "--base", "1ms"],
        "echo out $RETRY_ATTEMPT; exit $((10 + RETRY_ATTEMPT))",
    )
    .run();
    out.expect_code(13);
    assert_eq!(out.stdout_text(), "out 3\n");
}

#[test]
fn without_the_flag_a_retried_attempts_stdout_in_a_file_is_said_to_stay() {
    let dir = scratch();
    let file = dir.path().join("out");
    let status = command()
        .args(["--base", "1ms", "--max", "3", "--", "sh", "-c", &noisy(2)])
        .stdout(std::fs::File::create(&file).unwrap())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(status.status.code(), Some(0));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "out 1\nout 2\n");
    let err = String::from_utf8_lossy(&status.stderr);
    assert!(
        err.contains(
            "attempt 1 left 6 bytes on stdout, and attempt 2's output will follow them (--last-stdout keeps only the last attempt's)"
        ),
        "{err}"
    );
    assert_eq!(err.matches("on stdout").count(), 1, "{err}");
}

/// `retry ... >> big.log`: the line counted the file's old size too (a
/// 5 MB log made a 6-byte attempt read "4.77 MiB"): appending, the offset
/// stays at 0 until the first write moves it to the end.
#[test]
fn stdout_appended_to_a_file_counts_only_what_the_attempt_wrote() {
    let dir = scratch();
    let file = dir.path().join("out");
    std::fs::write(&file, vec![b'x'; 5 << 20]).unwrap();
    let appending = std::fs::OpenOptions::new()
        .append(true)
        .open(&file)
        .unwrap();
    let status = command()
        .args(["--base", "1ms", "--max", "3", "--", "sh", "-c", &noisy(3)])
        .stdout(appending)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(status.status.code(), Some(0));
    assert_eq!(std::fs::metadata(&file).unwrap().len(), (5 << 20) + 18);
    let err = String::from_utf8_lossy(&status.stderr);
    assert!(err.contains("attempt 1 left 6 bytes on stdout"), "{err}");
    assert!(err.contains("attempt 2 left 6 bytes on stdout"), "{err}");
    assert!(!err.contains("MiB"), "{err}");
}

#[test]
fn without_the_flag_a_pipe_gets_the_line_and_a_terminal_or_dev_null_does_not() {
    // A pipe: retry cannot count what went into it, and says so.
    let out = retry_sh(&["--base", "1ms"], &noisy(2)).run();
    assert_eq!(out.stdout_text(), "out 1\nout 2\n");
    let err = out.stderr_text();
    assert!(
        err.contains("retry: warning: stdout is a pipe: what attempt 1 wrote to it, if anything, stays there, and the next attempts' output follows (--last-stdout keeps only the last attempt's)"),
        "{err}"
    );
    // Once a run: a pipe says no more the next time.
    let out = retry_sh(&["--base", "1ms"], &noisy(3)).run();
    assert_eq!(out.stderr_text().matches("stdout is a pipe").count(), 1);
    // stdout and stderr on one pipe (2>&1) is a log: no line.
    let (_, merged) = retry_sh(&["--base", "1ms"], &noisy(2)).run_merged();
    let merged = String::from_utf8_lossy(&merged);
    assert!(!merged.contains("stays there"), "{merged}");
    // Through the output pump (--idle-timeout), it is counted.
    let out = retry_sh(&["--base", "1ms", "--idle-timeout", "1m"], &noisy(2)).run();
    assert!(
        out.stderr_text()
            .contains("attempt 1 left 6 bytes on stdout"),
        "{}",
        out.stderr_text()
    );
    // Nothing written to a file: nothing to say.
    let dir = scratch();
    let out = command()
        .args([
            "--base",
            "1ms",
            "--",
            "sh",
            "-c",
            "echo err >&2; [ $RETRY_ATTEMPT = 2 ]",
        ])
        .stdout(std::fs::File::create(dir.path().join("out")).unwrap())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("stdout"), "{err}");
    // /dev/null keeps nothing.
    let out = command()
        .args(["--base", "1ms", "--", "sh", "-c", &noisy(2)])
        .stdout(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("stdout"), "{err}");
    // A terminal is a person reading, not a file being filled.
    let (screen, code) = run_retry(&["--base", "1ms", "--", "sh", "-c", &noisy(2)], &[]);
    assert_eq!(code, Some(0), "{screen}");
    assert!(
        !screen.contains("stays there") && !screen.contains("on stdout"),
        "{screen}"
    );
}

/// A server on 127.0.0.1 whose first answer declares all of `body` and is
/// cut after `cut` bytes; later answers are whole. Returns its URL.
pub fn cut_once_server(body: Vec<u8>, cut: usize) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/file.bin", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for (n, conn) in listener.incoming().enumerate() {
            let Ok(mut conn) = conn else { return };
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|r| r > 0) && line != "\r\n" {
                line.clear();
            }
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let end = if n == 0 { cut } else { body.len() };
            let _ = conn.write_all(head.as_bytes());
            let _ = conn.write_all(&body[..end]);
        }
    });
    url
}

#[test]
fn a_download_cut_off_midway_leaves_only_the_whole_body_in_the_file() {
    let body: Vec<u8> = (0..1_000_000u32).map(|i| (i % 253) as u8).collect();
    let dir = scratch();
    for (flag, want) in [(Some("--last-stdout"), 1_000_000), (None, 1_300_000)] {
        let url = cut_once_server(body.clone(), 300_000);
        let file = dir.path().join("out.bin");
        let mut args = vec!["--base", "10ms"];
        args.extend(flag);
        args.extend(["--", "curl", "-fsS", &url]);
        let out = command()
            .args(&args)
            .stdout(std::fs::File::create(&file).unwrap())
            .stderr(Stdio::piped())
            .output()
            .expect("curl (package curl)");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{flag:?}: {err}");
        let got = std::fs::read(&file).unwrap();
        assert_eq!(got.len(), want, "{flag:?}: {err}");
        if flag.is_some() {
            assert!(got == body, "the file is the whole body, byte for byte");
        } else {
            assert!(err.contains("attempt 1 left 293 KiB on stdout"), "{err}");
        }
    }
}

#[test]
fn a_pipeline_into_jq_gets_one_document() {
    let script = "[ $RETRY_ATTEMPT = 1 ] && { printf '{\"items\": [1, 2'; exit 18; }; printf '{\"items\": [1, 2, 3]}'";
    let out = retry_sh(&["-q", "--last-stdout", "--base", "1ms"], script).run();
    out.expect_code(0);
    let mut jq = std::process::Command::new("jq")
        .args(["-c", ".items | length"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("jq (package jq)");
    jq.stdin.take().unwrap().write_all(&out.stdout).unwrap();
    let mut got = String::new();
    jq.stdout.take().unwrap().read_to_string(&mut got).unwrap();
    assert!(
        jq.wait().unwrap().success(),
        "jq refused {:?}",
        out.stdout_text()
    );
    assert_eq!(got, "3\n");
}

#[test]
fn stderr_and_the_log_stream_while_stdout_waits_for_the_attempts_fate() {
    let dir = scratch();
    let script = format!(
        "echo out $RETRY_ATTEMPT; echo err $RETRY_ATTEMPT >&2; touch {d}/at.$RETRY_ATTEMPT; \
         [ $RETRY_ATTEMPT = 2 ] && exec sleep 30; exit 1",
        d = path_str(dir.path())
    );
    let running = retry_sh(&["--last-stdout", "--base", "10ms"], &script).spawn();
    wait_for_file(&dir.path().join("at.2"), Duration::from_secs(5));
    // The signal ends the run during attempt 2: its stdout so far is the
    // run's, attempt 1's is gone.
    running.signal(Signal::SIGTERM);
    let out = running.wait();
    out.expect_code(143);
    assert_eq!(out.stdout_text(), "out 2\n");
    let err = out.stderr_text();
    assert!(
        err.find("err 1").unwrap() < err.find("attempt 1/5 failed").unwrap(),
        "{err}"
    );
    assert!(err.contains("err 2\n"), "{err}");
}

#[test]
fn replayed_stdin_reaches_every_attempt_and_stdout_is_the_last_ones() {
    let out = retry_sh(
        &["-q", "--last-stdout", "--replay-stdin", "--base", "1ms"],
        "printf '%s:' $RETRY_ATTEMPT; cat; [ $RETRY_ATTEMPT = 3 ]",
    )
    .stdin("the input\n")
    .run();
    out.expect_code(0);
    assert_eq!(out.stdout_text(), "3:the input\n");
}

#[test]
fn output_patterns_see_every_held_line() {
    // Exit 3 is permanent, unless the output asks for a retry; the line
    // that asks comes after 2 MiB, so past the bound as well.
    let script = "if [ $RETRY_ATTEMPT = 1 ]; then head -c 2097152 /dev/zero | tr '\\0' x; \
                  echo; echo 'lock held: try again'; exit 3; fi; echo done";
    let out = retry_sh(
        &[
            "--last-stdout",
            "--hold-max",
            "4M",
            "--base",
            "1ms",
            "--stop-on",
            "3",
            "--retry-if-output",
            "try again",
        ],
        script,
    )
    .run();
    out.expect_code(0);
    assert_eq!(out.stdout_text(), "done\n");
    // And a stop pattern on stdout ends the run with that attempt's stdout.
    let out = retry_sh(
        &["-q", "--last-stdout", "--stop-if-output", "^fatal"],
        "echo fatal: bad config; exit 1",
    )
    .run();
    out.expect_code(1);
    assert_eq!(out.stdout_text(), "fatal: bad config\n");
    assert!(out.stderr_text().contains("giving up after 1 attempt"));
}

#[test]
fn with_hold_output_a_success_gives_its_stdout_and_no_stderr() {
    let args = ["-q", "--last-stdout", "--hold-output", "--base", "1ms"];
    let out = retry_sh(&args, &noisy(2)).run();
    out.expect_code(0);
    assert_eq!(out.stdout_text(), "out 2\n");
    assert_eq!(out.stderr_text(), "", "stderr is held as in cron mode");
    // Through 2>&1 too: the streams are held apart.
    let (code, merged) = retry_sh(&args, &noisy(2)).run_merged();
    assert_eq!(code, 0);
    assert_eq!(String::from_utf8_lossy(&merged), "out 2\n");
    // Giving up: the last attempt's stdout and stderr, as in cron mode.
    let out = retry_sh(
        &["--max=2", "-q", "--last-stdout", "--hold-output"],
        &noisy(0),
    )
    .run();
    out.expect_code(1);
    assert_eq!(out.stdout_text(), "out 2\n");
    assert!(
        out.stderr_text().ends_with("err 2\n"),
        "{}",
        out.stderr_text()
    );
    assert!(
        !out.stderr_text().contains("err 1"),
        "{}",
        out.stderr_text()
    );
}

#[test]
fn past_the_bound_nothing_is_dropped_and_a_broken_promise_is_said_with_q() {
    // Attempt 1 writes 3 MiB, over --hold-max 1M, then fails: its stdout
    // passes through whole, and attempt 2's follows.
    let script = "if [ $RETRY_ATTEMPT = 1 ]; then head -c 3145728 /dev/zero; exit 1; fi; echo ok";
    let out = retry_sh(
        &["-q", "--last-stdout", "--hold-max", "1M", "--base", "1ms"],
        script,
    )
    .run();
    out.expect_code(0);
    assert_eq!(out.stdout.len(), 3 * 1024 * 1024 + 3);
    assert!(out.stdout.ends_with(b"ok\n"));
    let err = out.stderr_text();
    assert_eq!(
        err.trim_end(),
        "retry: warning: stdout holds more than the last attempt's output: attempt 1's stdout passed --hold-max (1 MiB), so it passed through as it came, and attempt 2's followed it"
    );
    // A success past the bound is still the one attempt's stdout, whole.
    let data = scratch();
    let src = data.path().join("data");
    let big: Vec<u8> = (0..3_000_000u32).map(|i| (i % 241) as u8).collect();
    std::fs::write(&src, &big).unwrap();
    let out = retry_sh(
        &["--last-stdout", "--hold-max", "1M"],
        &format!("cat {}", path_str(&src)),
    )
    .run();
    out.expect_code(0);
    assert!(out.stdout == big, "byte for byte");
    assert!(
        out.stderr_text()
            .contains("attempt 1's stdout passed --hold-max (1 MiB): it passed through as it came"),
        "{}",
        out.stderr_text()
    );
}

#[test]
fn a_success_whose_stdout_cannot_be_written_is_retrys_own_failure() {
    let out = command()
        .args(["--last-stdout", "--", "echo", "hello"])
        .stdout(
            std::fs::OpenOptions::new()
                .write(true)
                .open("/dev/full")
                .unwrap(),
        )
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(125));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("the command succeeded, but its stdout could not be written out: no space left on device"),
        "{err}"
    );
    assert!(!err.contains("os error"), "{err}");
    assert!(!err.contains("attempt 2"), "not retried: {err}");
}

#[test]
fn a_reader_that_has_gone_ends_the_run_at_once() {
    let started = Instant::now();
    let out = command()
        .args(["--last-stdout", "--", "sh", "-c", "seq 1 100000"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = out;
    let mut first = [0u8; 2];
    child
        .stdout
        .as_mut()
        .unwrap()
        .read_exact(&mut first)
        .unwrap();
    drop(child.stdout.take());
    let status = crate::util::exit_within(&mut child, Duration::from_secs(20));
    assert_eq!(&first, b"1\n");
    assert_eq!(status.code(), Some(0), "the command succeeded");
    assert!(started.elapsed() < Duration::from_secs(15));
}

#[test]
fn last_stdout_and_hold_max_are_refused_where_they_cannot_work() {
    for (args, needle) in [
        (
            &["--last-stdout", "--http", "http://127.0.0.1:9/"][..],
            "--last-stdout",
        ),
        (&["--last-stdout", "--tcp", "127.0.0.1:9"], "--last-stdout"),
        (
            &["--last-stdout", "--restart-on-success", "--", "true"],
            "--restart-on-success",
        ),
        (
            &["--hold-max", "4M", "--", "true"],
            "--hold-max has no effect without --hold-output or --last-stdout",
        ),
        (
            &["--last-stdout", "--hold-max", "inf", "--", "true"],
            "held output always has a bound",
        ),
        (
            &["--last-stdout", "--hold-max", "512K", "--", "true"],
            "at least 1M",
        ),
    ] {
        let out = retry(args).run();
        out.expect_usage_line(needle);
    }
    let out = command()
        .args(["--last-stdout", "--simulate", "3", "--outage", "1s"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    // The variable, set for a whole session, is no mistake without the flags.
    retry(["--", "true"])
        .env("RETRY_HOLD_MAX", "4M")
        .run()
        .expect_code(0);
    let out = retry(["--last-stdout", "--", "true"])
        .env("RETRY_HOLD_MAX", "12")
        .run();
    out.expect_usage_line("RETRY_HOLD_MAX");
}
