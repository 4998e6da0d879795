//! `--retry-if-output` and `--stop-if-output`: matching what the child
//! prints while its output still reaches retry's stdout and stderr byte for
//! byte; and, without them, the child writing to retry's own descriptors.

use std::process::Stdio;
use std::time::Duration;

use crate::pty::run_retry;
use crate::util::{command, path_str, read_pid, retry, retry_sh, scratch, wait_for_file};

/// Attempts made, from the `done` event of a JSON log.
fn attempts(out: &crate::util::Outcome) -> u64 {
    out.json()
        .iter()
        .find(|e| e["event"] == "done")
        .and_then(|e| e["attempts"].as_u64())
        .expect("a done event")
}

const FAST: [&str; 5] = ["--base", "10ms", "--log-format", "json", "--max=4"];

fn args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut all = FAST.to_vec();
    all.extend_from_slice(extra);
    all
}

#[test]
fn a_stop_match_split_across_writes_ends_the_run() {
    let out = retry_sh(
        &args(&["--stop-if-output", "connection refused"]),
        "printf 'error: conn'; sleep 0.1; printf 'ection ref'; sleep 0.1; printf 'used\\nbye\\n'; exit 1",
    )
    .run();
    out.expect_code(1);
    assert_eq!(attempts(&out), 1);
    assert_eq!(out.stdout_text(), "error: connection refused\nbye\n");
    let done = out
        .json()
        .into_iter()
        .find(|e| e["event"] == "done")
        .unwrap();
    assert!(
        done["reason"]
            .as_str()
            .unwrap()
            .contains("--stop-if-output 'connection refused'"),
        "{done}"
    );
}

#[test]
fn a_retry_match_makes_a_permanent_exit_retryable() {
    // 127 is never retried by its code alone.
    let out = retry_sh(
        &args(&["--retry-if-output", "^busy"]),
        "echo busy, try later; exit 127",
    )
    .run();
    out.expect_code(127);
    assert_eq!(attempts(&out), 4);
    // Without the match, one attempt.
    let out = retry_sh(
        &args(&["--retry-if-output", "^busy"]),
        "echo not busy; exit 127",
    )
    .run();
    assert_eq!(attempts(&out), 1);
}

#[test]
fn a_stop_match_wins_over_a_retry_match_and_success_stays_success() {
    let out = retry_sh(
        &args(&["--retry-if-output", "busy", "--stop-if-output", "denied"]),
        "echo busy; echo access denied; exit 1",
    )
    .run();
    out.expect_code(1);
    assert_eq!(attempts(&out), 1);
    let out = retry_sh(
        &args(&["--stop-if-output", "denied"]),
        "echo access denied; exit 0",
    )
    .run();
    out.expect_code(0);
    assert_eq!(attempts(&out), 1);
}

#[test]
fn a_match_printed_long_before_the_end_counts() {
    // The match comes first; then the attempt runs on until --timeout stops it.
    let out = retry_sh(
        &args(&["--stop-if-output", "FATAL", "--timeout", "300ms"]),
        "echo FATAL: bad config; exec sleep 10",
    )
    .run();
    out.expect_code(124);
    assert_eq!(attempts(&out), 1);
    assert!(out.elapsed < Duration::from_secs(5));
}

#[test]
fn a_line_longer_than_64_kib_is_matched_and_passed_whole() {
    let pad = 100_000;
    let script = format!(
        "head -c {pad} /dev/zero | tr '\\0' x; printf NEEDLE; head -c {pad} /dev/zero | tr '\\0' y; echo; exit 1"
    );
    let out = retry_sh(&args(&["--stop-if-output", "xNEEDLEy"]), &script).run();
    out.expect_code(1);
    assert_eq!(attempts(&out), 1);
    let mut want = vec![b'x'; pad];
    want.extend_from_slice(b"NEEDLE");
    want.extend(vec![b'y'; pad]);
    want.push(b'\n');
    assert!(
        out.stdout == want,
        "stdout differs ({} bytes)",
        out.stdout.len()
    );
}

#[test]
fn both_streams_pass_through_each_in_order() {
    let script = "for i in $(seq 1 300); do echo out$i; echo err$i >&2; done; exit 1";
    let out = retry([
        "-qq",
        "--max=1",
        "--retry-if-output",
        "err300$",
        "--",
        "sh",
        "-c",
        script,
    ])
    .run();
    out.expect_code(1);
    let want = |tag: &str| (1..=300).map(|i| format!("{tag}{i}\n")).collect::<String>();
    assert_eq!(out.stdout_text(), want("out"));
    assert_eq!(out.stderr_text(), want("err"));
}

#[test]
fn binary_output_passes_byte_for_byte() {
    let dir = scratch();
    let file = dir.path().join("blob");
    // Every byte value, newlines and NULs included, in a pseudo-random mix.
    let mut x: u32 = 12345;
    let blob: Vec<u8> = (0..3_000_000)
        .map(|_| {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            (x >> 16) as u8
        })
        .collect();
    std::fs::write(&file, &blob).unwrap();
    let cat = format!("cat {}; cat {} >&2", path_str(&file), path_str(&file));
    let out = retry([
        "-qq",
        "--max=1",
        "--retry-if-output",
        "never-there",
        "--",
        "sh",
        "-c",
        &cat,
    ])
    .run();
    out.expect_code(0);
    assert!(out.stdout == blob, "stdout differs");
    assert!(out.stderr == blob, "stderr differs");
}

/// retry's peak resident size (VmHWM, KiB) when its child prints `bytes`
/// bytes of zeros and then 10 MiB of short lines, with a pattern to match
/// and stdout on /dev/null. The child reads the figure once it is done.
fn peak_rss_kib(bytes: u64) -> u64 {
    let script = format!(
        "head -c {bytes} /dev/zero; yes line | head -c 10485760; grep VmHWM /proc/$PPID/status >&2"
    );
    let out = command()
        .args(["-qq", "--max=1", "--retry-if-output", "never-there", "--"])
        .args(["sh", "-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stderr);
    text.split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no VmHWM in {text:?}"))
}

#[test]
fn memory_stays_flat_with_200_mib_of_output() {
    let small = peak_rss_kib(1 << 20);
    let large = peak_rss_kib(200 << 20);
    assert!(
        large < small + 4 * 1024,
        "peak RSS {large} KiB after 200 MiB against {small} KiB after 1 MiB"
    );
}

#[test]
fn without_patterns_the_child_writes_to_retrys_own_stdout() {
    let script = "readlink /proc/self/fd/1; readlink /proc/$PPID/fd/1";
    let out = retry(["-qq", "--", "sh", "-c", script]).run();
    let lines: Vec<String> = out.stdout_text().lines().map(str::to_string).collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0], lines[1], "the child's stdout is retry's");
    // With a pattern, a pipe of retry's own sits in between.
    let out = retry(["-qq", "--retry-if-output", "x", "--", "sh", "-c", script]).run();
    let lines: Vec<String> = out.stdout_text().lines().map(str::to_string).collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_ne!(lines[0], lines[1]);
}

#[test]
fn when_the_reader_goes_away_the_child_gets_sigpipe_as_without_retry() {
    use std::io::Read;
    let mut child = command()
        .args(["-qq", "--retry-if-output", "x", "--", "yes"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = [0u8; 10];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    // The pipe is closed here; `yes` dies of SIGPIPE, which is permanent.
    let status = crate::util::exit_within(&mut child, Duration::from_secs(20));
    assert_eq!(&first, b"y\ny\ny\ny\ny\n");
    assert_eq!(status.code(), Some(141));
}

#[test]
fn a_process_that_escapes_the_group_does_not_hold_the_run() {
    let dir = scratch();
    let pid_file = dir.path().join("escaped");
    let script = format!(
        "setsid sh -c 'echo $$ > {f}; exec sleep 30' & while [ ! -s {f} ]; do sleep 0.01; done; echo started; exit 1",
        f = path_str(&pid_file)
    );
    let out = retry([
        "--max=1",
        "--stop-if-output",
        "started",
        "--",
        "sh",
        "-c",
        &script,
    ])
    .run();
    wait_for_file(&pid_file, Duration::from_secs(5));
    let escaped = read_pid(&pid_file);
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(escaped),
        nix::sys::signal::Signal::SIGKILL,
    );
    out.expect_code(1);
    assert_eq!(out.stdout_text(), "started\n");
    assert!(
        out.elapsed < Duration::from_secs(10),
        "took {:?}",
        out.elapsed
    );
}

#[test]
fn on_a_terminal_the_child_still_sees_a_terminal() {
    let (screen, code) = run_retry(
        &[
            "--retry-if-output",
            "never-there",
            "--",
            "sh",
            "-c",
            "test -t 1 && echo out-is-a-tty; test -t 2 && echo err-is-a-tty >&2; printf 'a\\nb\\n'",
        ],
        &[],
    );
    assert_eq!(code, Some(0), "{screen}");
    assert!(screen.contains("out-is-a-tty"), "{screen:?}");
    assert!(screen.contains("err-is-a-tty"), "{screen:?}");
    // Newlines are translated once, by the real terminal, as without retry.
    assert!(screen.contains("a\r\nb\r\n"), "{screen:?}");
}

#[test]
fn bad_patterns_are_usage_errors() {
    let out = retry(["--stop-if-output", "(oops", "--", "true"]).run();
    out.expect_code(2);
    let err = out.stderr_text();
    assert!(
        err.contains("--stop-if-output") && err.contains("(oops"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    let out = retry(["--retry-if-output", "x", "--http", "http://127.0.0.1:9/"]).run();
    out.expect_code(2);
    assert!(out.stderr_text().contains("--retry-if-output"));
}

#[test]
fn output_arrives_at_once_not_at_the_end_of_a_line_or_of_the_attempt() {
    use std::io::Read;
    let mut child = command()
        .args(["-qq", "--max=1", "--stop-if-output", "x", "--"])
        .args(["sh", "-c", "printf 'partial'; exec sleep 5"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = [0u8; 64];
        let n = stdout.read(&mut buf).unwrap_or(0);
        let _ = tx.send(buf[..n].to_vec());
    });
    let first = rx.recv_timeout(Duration::from_secs(3));
    // Still running: the bytes came before the attempt ended.
    let running = child.try_wait().unwrap().is_none();
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(first.as_deref(), Ok(&b"partial"[..]));
    assert!(running);
}

#[test]
fn patterns_work_in_the_foreground_too() {
    let out = retry_sh(
        &args(&["--foreground", "--stop-if-output", "^fatal"]),
        "echo fatal: no such host; exit 1",
    )
    .run();
    out.expect_code(1);
    assert_eq!(attempts(&out), 1);
    assert_eq!(out.stdout_text(), "fatal: no such host\n");
}

/// 1,000 lines on stdout and 1,000 on stderr, alternating, each written
/// by its own write(2).
const ALTERNATING: &str =
    "i=0; while [ $i -lt 1000 ]; do echo \"out $i\"; echo \"err $i\" >&2; i=$((i+1)); done";

fn alternating() -> String {
    (0..1000).map(|i| format!("out {i}\nerr {i}\n")).collect()
}

#[test]
fn merged_streams_keep_their_one_order_through_the_pump() {
    // `2>&1 |`: retry's stdout and stderr are one pipe. The child gets one
    // channel for both, as it would without retry, so the order it wrote
    // in is the order that comes out: every pump user alike.
    for extra in [
        &["--retry-if-output", "never-there"][..],
        &["--stop-if-output", "never-there", "--retry-if-output", "x"],
        &["--idle-timeout", "30s"],
    ] {
        let mut args = vec!["-qq", "--max=1"];
        args.extend_from_slice(extra);
        let (code, out) = retry_sh(&args, ALTERNATING).run_merged();
        assert_eq!(code, 0, "{extra:?}");
        let out = String::from_utf8_lossy(&out);
        let want = alternating();
        let misplaced = out
            .lines()
            .zip(want.lines())
            .filter(|(a, b)| a != b)
            .count();
        assert_eq!(
            misplaced, 0,
            "{extra:?}: {misplaced} of 2000 lines out of order"
        );
        assert_eq!(out, want, "{extra:?}");
    }
}

#[test]
fn a_pattern_matches_the_merged_stream_whichever_stream_wrote_it() {
    let (code, out) = retry_sh(
        &[
            "-qq",
            "--max=3",
            "--base",
            "10ms",
            "--stop-if-output",
            "fatal",
        ],
        "echo start; echo fatal: no disk >&2; exit 1",
    )
    .run_merged();
    assert_eq!(code, 1);
    assert_eq!(String::from_utf8_lossy(&out), "start\nfatal: no disk\n");
}
