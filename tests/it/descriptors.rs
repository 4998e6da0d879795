//! The standard descriptors: the command gets them as retry was given them,
//! closed ones included; a producer whose reader has gone is not retried.

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::util::bin;

/// `sh -c SCRIPT` with `$R` naming the retry binary, its output captured:
/// how a user's shell line would start retry (redirections included).
fn shell(script: &str) -> Output {
    Command::new("sh")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("R", bin())
        .args(["-c", script])
        .stdin(Stdio::null())
        .output()
        .expect("sh runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Whether descriptor N of the command's shell is open, as /proc shows it.
/// (Collected first, written last: a redirection would open its file on
/// the lowest free number.)
const PROBE: &str = "s=; for n in 0 1 2; do if [ -e /proc/$$/fd/$n ]; then s=\"$s$n:open \"; else s=\"$s$n:closed \"; fi; done; echo $s > \"$REPORT\"";

fn probe(redirect: &str, flags: &str) -> String {
    let dir = crate::util::scratch();
    let report = dir.path().join("report");
    let out = shell(&format!(
        "REPORT={} \"$R\" --max 1 {flags} -- sh -c '{PROBE}' {redirect}",
        crate::util::path_str(&report)
    ));
    assert!(out.status.success(), "{}", text(&out.stderr));
    std::fs::read_to_string(&report).expect("report")
}

#[test]
fn a_closed_stdout_is_closed_for_the_command_too() {
    // Without retry: `sh -c 'echo hi' >&-` fails with an I/O error.
    let alone = shell("sh -c 'echo hi' >&- 2>/dev/null; echo status:$? >&2");
    assert!(text(&alone.stderr).contains("status:1"), "{alone:?}");
    let out = shell("\"$R\" --max 1 -- sh -c 'echo hi' >&-; echo status:$? >&2");
    let err = text(&out.stderr);
    assert!(err.contains("status:1"), "{err}");
    assert!(
        err.contains("I/O error") || err.contains("Bad file"),
        "{err}"
    );
    assert_eq!(probe(">&-", ""), "0:open 1:closed 2:open\n");
}

#[test]
fn a_closed_stdin_and_a_closed_stderr_are_closed_for_the_command_too() {
    let out = shell("\"$R\" --max 1 -- sh -c 'cat; echo cat:$?' <&-");
    assert!(text(&out.stdout).contains("cat:1"), "{out:?}");
    assert_eq!(probe("<&-", ""), "0:closed 1:open 2:open\n");
    assert_eq!(probe("2>&-", ""), "0:open 1:open 2:closed\n");
    assert_eq!(probe("<&- >&- 2>&-", ""), "0:closed 1:closed 2:closed\n");
}

#[test]
fn closed_descriptors_stay_closed_with_output_patterns_and_replayed_stdin() {
    assert_eq!(
        probe(">&- 2>&-", "--retry-if-output never-printed"),
        "0:open 1:closed 2:closed\n"
    );
    assert_eq!(probe("<&-", "--replay-stdin"), "0:closed 1:open 2:open\n");
    // And an open stdin is still replayed.
    let out = shell("echo data | \"$R\" --max 2 --base 1ms --replay-stdin -- sh -c 'cat; exit 1'");
    assert_eq!(text(&out.stdout), "data\ndata\n", "{out:?}");
}

/// Run `PRODUCER | head -1` under retry in a shell; returns the shell's
/// output (retry's log on stderr) and how long it took.
fn into_head(producer: &str) -> (Output, Duration) {
    let started = Instant::now();
    let out = shell(&format!(
        "\"$R\" --max 5 --base 100ms -- {producer} | head -1"
    ));
    (out, started.elapsed())
}

#[test]
fn a_python_producer_whose_reader_has_gone_runs_once() {
    // Python exits 1 on BrokenPipeError rather than dying of SIGPIPE.
    let (out, took) = into_head("python3 -c 'for i in range(10**7): print(i)'");
    assert_eq!(text(&out.stdout), "0\n");
    let err = text(&out.stderr);
    assert!(!err.contains("attempt 2"), "{err}");
    assert!(err.contains("reader") && err.contains("gone"), "{err}");
    assert!(took < Duration::from_secs(10), "{took:?}");
}

#[test]
fn a_shell_producer_whose_reader_has_gone_runs_once() {
    // A shell's echo to a broken pipe fails with EPIPE when SIGPIPE is
    // ignored, and the script chooses its own exit status.
    let (out, _) =
        into_head("sh -c 'trap \"\" PIPE; i=0; while echo $i; do i=$((i+1)); done; exit 3'");
    assert_eq!(text(&out.stdout), "0\n");
    let err = text(&out.stderr);
    assert!(!err.contains("attempt 2"), "{err}");
    assert!(err.contains("reader") && err.contains("gone"), "{err}");
}

#[test]
fn a_failure_while_stdout_still_has_a_reader_is_retried() {
    let out = shell("\"$R\" --max 2 --base 1ms -- sh -c 'echo x; exit 1' | cat");
    assert_eq!(text(&out.stdout), "x\nx\n", "{out:?}");
}

#[test]
fn a_closed_stdout_fails_once_as_a_gone_reader_does_not_five_times() {
    let started = Instant::now();
    let out = shell("\"$R\" --base 1s -- sh -c 'echo hi' >&-; echo status:$? >&2");
    let err = text(&out.stderr);
    assert!(err.contains("status:1"), "{err}");
    assert!(!err.contains("attempt 2"), "{err}");
    assert!(
        err.contains("nothing reads retry's stdout (it is closed"),
        "{err}"
    );
    // No backoff wait was slept.
    assert!(started.elapsed() < Duration::from_secs(1), "{err}");
    // A success stays a success.
    let out = shell("\"$R\" -- true >&-; echo status:$? >&2");
    assert!(text(&out.stderr).contains("status:0"), "{out:?}");
}
