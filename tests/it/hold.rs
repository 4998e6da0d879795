//! `--hold-output`, cron mode: nothing on stdout or stderr from an attempt
//! that is retried or succeeds; the last attempt's output, each stream on
//! its own and in order, when the run gives up or a signal ends it; held in
//! an unnamed file, never in memory.

use std::time::Duration;

use nix::sys::signal::Signal;

use crate::pty::run_retry;
use crate::util::{command, path_str, retry, retry_sh, scratch, wait_for_file};

const SETTLE: Duration = Duration::from_secs(5);

/// Prints a line on each stream naming the attempt, then fails until
/// attempt `ok` (never, with 0).
fn noisy(ok: u32) -> String {
    format!("echo out $RETRY_ATTEMPT; echo err $RETRY_ATTEMPT >&2; [ $RETRY_ATTEMPT = {ok} ]")
}

#[test]
fn a_run_that_recovers_prints_nothing_at_all_with_q() {
    let out = retry_sh(
        &["-q", "--hold-output", "--max=3", "--base", "10ms"],
        &noisy(3),
    )
    .run();
    out.expect_code(0);
    assert_eq!(out.stdout_text(), "");
    assert_eq!(out.stderr_text(), "");
    // Without -q only retry's own lines remain: none of the command's.
    let out = retry_sh(&["--hold-output", "--max=3", "--base", "10ms"], &noisy(2)).run();
    out.expect_code(0);
    assert_eq!(out.stdout_text(), "");
    assert!(!out.stderr_text().contains("err "), "{}", out.stderr_text());
}

#[test]
fn a_run_that_gives_up_writes_out_the_last_attempt_on_its_own_streams() {
    let out = retry_sh(
        &["-q", "--hold-output", "--max=3", "--base", "10ms"],
        &noisy(0),
    )
    .run();
    out.expect_code(1);
    assert_eq!(out.stdout_text(), "out 3\n");
    // The give-up line first, then the held stderr.
    let lines = out.stderr_lines();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines[0].contains("giving up after 3 attempts"), "{lines:?}");
    assert_eq!(lines[1], "err 3");
}

#[test]
fn held_output_through_2_and_1_comes_out_in_the_order_it_was_written() {
    let script = "i=0; while [ $i -lt 1000 ]; do echo \"out $i\"; echo \"err $i\" >&2; i=$((i+1)); done; exit 3";
    let (code, out) = retry_sh(
        &["-qq", "--hold-output", "--max=2", "--base", "1ms"],
        script,
    )
    .run_merged();
    assert_eq!(code, 3);
    let want: String = (0..1000).map(|i| format!("out {i}\nerr {i}\n")).collect();
    assert_eq!(String::from_utf8_lossy(&out), want);
}

#[test]
fn binary_output_is_held_byte_for_byte() {
    let dir = scratch();
    let out = retry_sh(
        &["-qq", "--hold-output", "--max=1"],
        &format!(
            "cd {}; head -c 3000000 /dev/urandom > data; cat data; cat data >&2; exit 1",
            path_str(dir.path())
        ),
    )
    .run();
    out.expect_code(1);
    assert_eq!(out.stdout.len(), 3_000_000);
    assert_eq!(out.stdout, out.stderr);
}

/// Starts a run whose attempt `n` writes a line on each stream, marks that
/// it has, and then sleeps; other attempts fail at once. Returns once
/// attempt `seen` has written. The JSON log goes to `log` in the directory
/// returned (stderr keeps only the final line, as with -q).
fn start_hanging_on(n: u32, seen: u32, base: &str) -> (crate::util::Running, tempfile::TempDir) {
    let dir = scratch();
    let script = format!(
        "echo out $RETRY_ATTEMPT; echo err $RETRY_ATTEMPT >&2; touch {d}/at.$RETRY_ATTEMPT; \
         [ $RETRY_ATTEMPT = {n} ] && exec sleep 30; exit 1",
        d = path_str(dir.path())
    );
    let log = path_str(&dir.path().join("log"));
    let running = retry_sh(
        &[
            "-q",
            "--hold-output",
            "--max=5",
            "--base",
            base,
            "--log-format",
            "json",
            "--log-file",
            &log,
        ],
        &script,
    )
    .spawn();
    wait_for_file(&dir.path().join(format!("at.{seen}")), SETTLE);
    (running, dir)
}

#[test]
fn a_signal_during_an_attempt_still_brings_its_output_out() {
    let (running, _dir) = start_hanging_on(2, 2, "10ms");
    running.signal(Signal::SIGTERM);
    let out = running.wait();
    out.expect_code(143);
    assert_eq!(out.stdout_text(), "out 2\n");
    let err = out.stderr_text();
    assert!(err.ends_with("err 2\n"), "{err}");
    assert!(!err.contains("err 1"), "{err}");
}

#[test]
fn a_signal_during_the_wait_brings_the_failed_attempts_output_out() {
    // Attempt 1 fails at once; the next one is 30 s away.
    let (running, dir) = start_hanging_on(9, 1, "30s");
    // Attempt 1 has ended and the wait has begun.
    crate::util::wait_for_line(
        &dir.path().join("log"),
        crate::util::SLEEP_EVENT,
        Duration::from_secs(20),
    );
    running.signal(Signal::SIGINT);
    let out = running.wait();
    out.expect_code(130);
    assert!(!dir.path().join("at.2").exists(), "attempt 2 ran");
    assert_eq!(out.stdout_text(), "out 1\n");
    assert!(
        out.stderr_text().ends_with("err 1\n"),
        "{}",
        out.stderr_text()
    );
}

/// retry's open descriptors that point into `dir`.
fn fds_into(pid: i32, dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("proc fd")
        .flatten()
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .map(|p| p.to_string_lossy().into_owned())
        .filter(|p| p.starts_with(&path_str(dir)))
        .collect()
}

#[test]
fn the_spool_lives_in_tmpdir_without_a_name() {
    let tmp = scratch();
    let marks = scratch();
    let script = format!(
        "echo held; touch {}/running; exec sleep 30",
        path_str(marks.path())
    );
    let running = retry_sh(&["-qq", "--hold-output", "--max=1"], &script)
        .env("TMPDIR", tmp.path())
        .spawn();
    wait_for_file(&marks.path().join("running"), SETTLE);
    let pid = running.pid().as_raw();
    let open = fds_into(pid, tmp.path());
    assert_eq!(open.len(), 1, "{open:?}");
    assert!(open[0].ends_with(" (deleted)"), "{open:?}");
    let names: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().flatten().collect();
    assert!(names.is_empty(), "{names:?}");
    running.signal(Signal::SIGTERM);
    let out = running.wait();
    out.expect_code(143);
    assert_eq!(out.stdout_text(), "held\n");
}

#[test]
fn a_tmpdir_others_can_write_is_refused_and_said_before_the_output_even_with_q() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = scratch();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let (code, out) = retry_sh(
        &["-q", "--hold-output", "--max=2", "--base", "1ms"],
        "echo out $RETRY_ATTEMPT; [ $RETRY_ATTEMPT = 2 ]",
    )
    .env("TMPDIR", tmp.path())
    .run_merged();
    assert_eq!(code, 0);
    // Not held (a success would have dropped it), and not moved to /tmp
    // behind the user's back: cron's mail says why, first, once.
    let out = String::from_utf8_lossy(&out);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert!(
        lines[0].starts_with("retry: warning: cannot hold the output for --hold-output, so every attempt's output passes through as it comes: the temporary directory"),
        "{out}"
    );
    assert!(lines[0].contains("writable by every user"), "{out}");
    assert!(
        lines[0].ends_with("set TMPDIR to a directory of your own"),
        "{out}"
    );
    assert_eq!(&lines[1..], ["out 1", "out 2"]);
    assert!(std::fs::read_dir(tmp.path()).unwrap().next().is_none());
    // -qq: nothing of retry's.
    let out = retry_sh(&["-qq", "--hold-output", "--max=1"], "echo out")
        .env("TMPDIR", tmp.path())
        .run();
    assert_eq!(out.stderr_text(), "");
}

#[test]
fn memory_stays_flat_however_much_is_held() {
    // Cut at the default bound, held whole, and stdout held whole for
    // --last-stdout; each written out to /dev/null.
    for (flags, exit) in [
        (&["--hold-output"][..], 1),
        (&["--hold-output", "--hold-max", "1G"], 1),
        (&["--last-stdout", "--hold-max", "1G"], 0),
    ] {
        let peak = |bytes: u64| {
            let mut args = vec!["-qq", "--max=1"];
            args.extend_from_slice(flags);
            let script = format!("head -c {bytes} /dev/zero; exit {exit}");
            crate::util::peak_rss_kib(&args, &script, exit)
        };
        let small = peak(1 << 20);
        let large = peak(300 << 20);
        eprintln!("{flags:?}: peak RSS {small} KiB holding 1 MiB, {large} KiB holding 300 MiB");
        assert!(
            large < small + 2 * 1024,
            "{flags:?}: peak RSS {large} KiB after holding 300 MiB against {small} KiB after 1 MiB"
        );
    }
}

#[test]
fn patterns_still_judge_held_output() {
    let out = retry_sh(
        &[
            "-q",
            "--hold-output",
            "--max=3",
            "--base",
            "10ms",
            "--stop-if-output",
            "^fatal",
        ],
        "echo fatal: bad config >&2; exit 1",
    )
    .run();
    out.expect_code(1);
    let err = out.stderr_text();
    assert!(err.contains("giving up after 1 attempt"), "{err}");
    assert!(err.ends_with("fatal: bad config\n"), "{err}");
}

#[test]
fn replayed_stdin_reaches_every_attempt_and_the_last_ones_output_is_held() {
    let out = retry_sh(
        &[
            "-qq",
            "--hold-output",
            "--replay-stdin",
            "--max=2",
            "--base",
            "1ms",
        ],
        "printf '%s:' $RETRY_ATTEMPT; cat; exit 1",
    )
    .stdin("the input\n")
    .run();
    out.expect_code(1);
    assert_eq!(out.stdout_text(), "2:the input\n");
}

#[test]
fn on_a_terminal_the_command_writes_to_pipes_and_its_output_comes_at_the_end() {
    let (screen, code) = run_retry(
        &[
            "-qq",
            "--hold-output",
            "--max=1",
            "--",
            "sh",
            "-c",
            "test -t 1 || echo out-is-a-pipe; test -t 2 || echo err-is-a-pipe >&2; exit 1",
        ],
        &[],
    );
    assert_eq!(code, Some(1), "{screen}");
    assert!(screen.contains("out-is-a-pipe"), "{screen:?}");
    assert!(screen.contains("err-is-a-pipe"), "{screen:?}");
}

#[test]
fn hold_output_applies_to_a_command_only() {
    for mode in [
        &["--http", "http://127.0.0.1:9/"][..],
        &["--tcp", "127.0.0.1:9"],
    ] {
        let mut args = vec!["--hold-output"];
        args.extend_from_slice(mode);
        let out = retry(&args).run();
        out.expect_code(2);
        assert!(
            out.stderr_text().contains("--hold-output"),
            "{}",
            out.stderr_text()
        );
    }
    let out = command()
        .args(["--hold-output", "--simulate", "3", "--outage", "1s"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}
