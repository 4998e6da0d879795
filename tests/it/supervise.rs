//! retry as a supervisor in the corners: PID 1 of a container, `kill -9`,
//! `nohup`, parents that ignore SIGCHLD or SIGPIPE, pipelines into `head`,
//! scripts without `#!`, resource shortages, and leftovers that must not
//! hold a run up.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use crate::util::{
    bin, bin_for_anyone, gone_within, path_str, read_pid, retry, retry_sh, scratch, wait_for_file,
};

const SETTLE: Duration = Duration::from_secs(5);

/// `sh -c SCRIPT` with `$R` naming the retry binary, in the harness's clean
/// environment: how a user's shell line would start retry.
fn shell(script: &str) -> Command {
    let sh = which("sh");
    let mut real = Command::new(sh);
    real.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("R", bin())
        .args(["-c", script]);
    real
}

fn which(name: &str) -> String {
    let path = std::env::var("PATH").unwrap_or_default();
    for dir in path.split(':') {
        let candidate = std::path::Path::new(dir).join(name);
        if candidate.is_file() {
            return candidate.to_string_lossy().into_owned();
        }
    }
    panic!("{name} is not on PATH");
}

/// A shell fragment that leaves a background job ignoring `signals` and
/// living `secs`, and waits until the job has set its traps, so that the
/// stop signal sent when the main process exits cannot beat them.
fn leftover(dir: &std::path::Path, signals: &str, secs: f64) -> String {
    let ready = path_str(&dir.join("ready"));
    format!(
        "(trap '' {signals}; touch {ready}; sleep {secs}) & until [ -e {ready} ]; do sleep 0.01; done;"
    )
}

/// The SigIgn mask a child reports from /proc: bit N-1 is signal N.
fn ignored_mask(report: &str) -> u64 {
    let line = report
        .lines()
        .find(|l| l.starts_with("SigIgn:"))
        .unwrap_or_else(|| panic!("no SigIgn line in {report:?}"));
    u64::from_str_radix(line.trim_start_matches("SigIgn:").trim(), 16).expect("hex mask")
}

const HUP_BIT: u64 = 1 << 0;
const PIPE_BIT: u64 = 1 << 12;

#[test]
fn as_pid_1_of_a_new_pid_namespace_zombies_never_hold_cleanup_up() {
    if !crate::need::unshare(
        &["--fork", "--pid", "--mount-proc", "true"],
        "a PID namespace",
    ) {
        return;
    }
    let dir = scratch();
    // Each attempt leaves a job that ignores the stop signal but ends on its
    // own after 300 ms. Its zombie must be reaped at once (retry is PID 1
    // here: nobody else would), not waited on for the 5 s grace period.
    let started = Instant::now();
    let out = Command::new("unshare")
        .args(["--fork", "--pid", "--mount-proc"])
        .arg(bin())
        .args(["--max", "3", "--base", "10ms", "--", "sh", "-c"])
        .arg(format!(
            "rm -f {0}; {1} echo parent:$PPID; exit 1",
            path_str(&dir.path().join("ready")),
            leftover(dir.path(), "TERM", 0.3)
        ))
        .stdin(Stdio::null())
        .output()
        .expect("unshare runs");
    let took = started.elapsed();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The attempts' parent is PID 1: retry itself.
    assert!(String::from_utf8_lossy(&out.stdout).contains("parent:1"));
    assert!(
        took < Duration::from_secs(4),
        "three attempts took {took:?}"
    );
}

#[test]
fn kill_9_of_retry_takes_the_command_along() {
    let dir = scratch();
    let pid_file = dir.path().join("pid");
    let running = retry_sh(
        &["--max", "1"],
        &format!("echo $$ > {}; exec sleep 30", path_str(&pid_file)),
    )
    .spawn();
    let child = read_pid(&pid_file);
    running.signal(Signal::SIGKILL);
    assert!(gone_within(child, SETTLE), "the command outlived retry");
    let status = running.wait_status();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(9)
    );
}

#[test]
fn under_nohup_a_hangup_neither_ends_retry_nor_reaches_the_command() {
    let dir = scratch();
    let report = path_str(&dir.path().join("report"));
    let pid = path_str(&dir.path().join("pid"));
    let script = format!(
        "nohup \"$R\" --max 1 -- sh -c 'grep SigIgn /proc/$$/status > {report}; echo $$ > {pid}; sleep 1; echo survived >> {report}' >/dev/null 2>&1 &
         until [ -s {pid} ]; do sleep 0.01; done
         kill -HUP $! $(cat {pid})
         wait $!; echo status:$?"
    );
    let out = shell(&script).output().expect("sh runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("status:0"), "{stdout}");
    let text = std::fs::read_to_string(&report).expect("report");
    assert!(ignored_mask(&text) & HUP_BIT != 0, "{text}");
    assert!(text.contains("survived"), "{text}");
}

#[test]
fn a_parent_that_ignores_sigchld_cannot_break_waiting() {
    let out = shell("trap '' CHLD; exec \"$R\" --max 2 --base 10ms -- sh -c 'exit 3'")
        .output()
        .expect("sh runs");
    // Not 126 for a lost child: the command's own code after two attempts.
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("attempt 2/2 failed (exit 3)"));
}

#[test]
fn an_ignored_sigpipe_stays_ignored_for_the_command_and_a_default_one_stays_default() {
    let probe = "\"$R\" --max 1 -- sh -c 'grep SigIgn /proc/$$/status'";
    let ignored = shell(&format!("trap '' PIPE; exec {probe}"))
        .output()
        .expect("sh");
    assert!(ignored_mask(&String::from_utf8_lossy(&ignored.stdout)) & PIPE_BIT != 0);
    let default = shell(&format!("exec {probe}")).output().expect("sh");
    assert!(ignored_mask(&String::from_utf8_lossy(&default.stdout)) & PIPE_BIT == 0);
}

#[test]
fn a_producer_piped_into_head_runs_once() {
    let dir = scratch();
    let count = dir.path().join("count");
    let script = format!(
        "\"$R\" --base 10ms -- sh -c 'echo run >> {}; exec yes' | head -1; echo done",
        path_str(&count)
    );
    let out = shell(&script).output().expect("sh runs");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "y\ndone\n");
    let runs = std::fs::read_to_string(&count).expect("count");
    assert_eq!(
        runs.lines().count(),
        1,
        "the producer ran again after its reader left"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("SIGPIPE"));
}

#[test]
fn sigpipe_is_retried_when_retry_on_names_141() {
    let out = retry_sh(
        &["--max", "2", "--base", "10ms", "--retry-on", "141"],
        "kill -PIPE $$",
    )
    .run();
    out.expect_code(141);
    assert!(
        out.stderr_text().contains("attempt 2/2"),
        "{}",
        out.stderr_text()
    );
}

#[test]
fn a_script_without_a_shebang_runs_through_sh() {
    let dir = scratch();
    let script = dir.path().join("plain");
    std::fs::write(&script, "echo plain:$1\n").expect("write");
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let out = retry(["--max", "1", "--", &path_str(&script), "arg"]).run();
    out.expect_code(0);
    assert_eq!(out.stdout_text(), "plain:arg\n");
}

#[test]
fn a_missing_command_is_named() {
    let out = retry(["--", "no-such-command-here"]).run();
    out.expect_code(127);
    assert!(
        out.stderr_text()
            .contains("command not found: no-such-command-here"),
        "{}",
        out.stderr_text()
    );
}

#[test]
fn a_process_limit_that_refuses_the_start_is_retried_and_ends_with_125() {
    // With RLIMIT_NPROC at 1, the clone that would start the command fails
    // with EAGAIN. root is exempt from the limit, so as root the run is made
    // as `nobody`, with a copy of the binary that nobody can reach wherever
    // the checkout lives.
    let (dir, copy) = bin_for_anyone();
    let mut cmd = Command::new("prlimit");
    cmd.args(["--nproc=1", "--"]);
    // SAFETY: geteuid has no preconditions.
    if unsafe { nix::libc::geteuid() } == 0 {
        cmd = Command::new("setpriv");
        cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .args(["prlimit", "--nproc=1", "--"]);
    }
    let out = cmd
        .current_dir(dir.path())
        .arg(&copy)
        .args(["--max", "3", "--base", "10ms", "--", "true"])
        .stdin(Stdio::null())
        .output()
        .expect("prlimit runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{stderr}");
    assert!(
        stderr.contains("attempt 3/3 failed (cannot start true: Resource temporarily unavailable"),
        "{stderr}"
    );
}

#[test]
fn a_shortage_of_descriptors_is_retried_and_ends_with_125() {
    // Starting a command needs no descriptor, but replaying stdin needs a
    // pipe per attempt. Find a limit low enough that the pipe cannot be
    // made but high enough that retry itself starts.
    for limit in 6..24 {
        let out = Command::new("prlimit")
            .arg(format!("--nofile={limit}"))
            .arg(bin())
            .args([
                "--replay-stdin",
                "--max",
                "2",
                "--base",
                "10ms",
                "--",
                "true",
            ])
            .stdin(Stdio::null())
            .output()
            .expect("prlimit runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        // Too few descriptors for retry itself is its own failure, not a panic.
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert!(matches!(out.status.code(), Some(0 | 125)), "{stderr}");
        if stderr.contains("attempt 2/2 failed (cannot prepare stdin: Too many open files") {
            assert_eq!(out.status.code(), Some(125), "{stderr}");
            return;
        }
    }
    panic!("no descriptor limit made preparing an attempt fail and get retried");
}

#[test]
fn leftovers_get_the_stop_signal_at_once_and_are_counted_with_v() {
    let out = retry_sh(&["-v", "--max", "1"], "sleep 30 & sleep 30 & exit 0").run();
    out.expect_code(0);
    assert!(out.elapsed < Duration::from_secs(3), "{:?}", out.elapsed);
    // Without a count of the group's members (docs/platforms.md), the
    // portable build says it stopped some.
    let said = if cfg!(feature = "portable") {
        "stopped the leftover processes of attempt 1"
    } else {
        "stopped 2 leftover processes"
    };
    assert!(out.stderr_text().contains(said), "{}", out.stderr_text());
}

#[test]
fn the_logged_duration_is_the_main_process_s_own() {
    let dir = scratch();
    let out = retry_sh(
        &["--max", "1", "--log-format", "json"],
        &format!("{} exit 3", leftover(dir.path(), "TERM", 1.0)),
    )
    .run();
    out.expect_code(3);
    assert!(
        out.elapsed >= Duration::from_millis(900),
        "{:?}",
        out.elapsed
    );
    let attempt = out
        .json()
        .into_iter()
        .find(|e| e["event"] == "attempt")
        .expect("attempt event");
    let ms = attempt["duration_ms"].as_f64().expect("duration_ms");
    assert!(ms < 500.0, "{attempt}");
}

#[test]
fn a_second_interrupt_cuts_the_leftovers_grace_short() {
    let dir = scratch();
    let marker = dir.path().join("left");
    // The main process waits for the job's trap to be set: a stop signal
    // sent before it would end the job and the test with it.
    let script = format!(
        "(trap '' TERM INT; touch {m}; sleep 30) & until [ -e {m} ]; do sleep 0.01; done; exit 1",
        m = path_str(&marker)
    );
    let running = retry_sh(
        &["--max", "3", "--base", "10s", "--kill-after", "20s"],
        &script,
    )
    .spawn();
    wait_for_file(&marker, SETTLE);
    std::thread::sleep(Duration::from_millis(200));
    let asked = Instant::now();
    running.signal(Signal::SIGINT);
    std::thread::sleep(Duration::from_millis(200));
    running.signal(Signal::SIGINT);
    let out = running.wait();
    out.expect_code(130);
    assert!(
        asked.elapsed() < Duration::from_secs(5),
        "{:?}",
        asked.elapsed()
    );
}

#[test]
fn max_time_bounds_the_leftovers_grace() {
    let dir = scratch();
    let out = retry_sh(
        &["--max", "1", "--max-time", "1s", "--kill-after", "20s"],
        &format!("{} exit 1", leftover(dir.path(), "TERM", 30.0)),
    )
    .run();
    out.expect_code(1);
    assert!(out.elapsed < Duration::from_secs(4), "{:?}", out.elapsed);
}

#[test]
fn a_stopped_group_gets_sigcont_with_the_stop_signal() {
    let out = retry_sh(
        &["--max", "1", "--timeout", "300ms", "--kill-after", "20s"],
        "kill -STOP $$",
    )
    .run();
    out.expect_code(124);
    assert!(out.elapsed < Duration::from_secs(4), "{:?}", out.elapsed);
}

#[test]
fn json_lines_carry_time_run_and_pid() {
    let out = retry_sh(
        &["--max", "2", "--base", "10ms", "--log-format", "json"],
        "exit 1",
    )
    .run();
    let events = out.json();
    assert!(events.len() >= 4);
    let run = events[0]["run"].as_str().expect("run id").to_string();
    assert!(!run.is_empty());
    for e in &events {
        assert_eq!(e["run"], run.as_str());
        assert!(e["pid"].as_u64().is_some_and(|p| p > 1), "{e}");
        let time = e["time"].as_str().expect("time");
        assert!(time.ends_with('Z') && time.contains('T'), "{time}");
    }
    let again = retry_sh(&["--max", "1", "--log-format", "json"], "exit 1").run();
    assert_ne!(
        again.json()[0]["run"],
        run.as_str(),
        "each run gets its own id"
    );
}

#[test]
fn signals_blocked_by_the_parent_do_not_blind_retry() {
    // A parent that blocked SIGCHLD and SIGTERM before exec: retry must still
    // see its child end, and still time it out.
    let blocked = |args: &str| {
        Command::new("perl")
            .arg("-e")
            .arg(format!(
                "use POSIX qw(:signal_h); \
                 sigprocmask(SIG_BLOCK, POSIX::SigSet->new(SIGCHLD, SIGTERM, SIGALRM)) or die; \
                 exec '{}', {args} or die",
                bin().display()
            ))
            .stdin(Stdio::null())
            .output()
            .expect("perl runs")
    };
    let started = Instant::now();
    let quick = blocked("'--max', '2', '--base', '10ms', '--', 'sh', '-c', 'exit 3'");
    assert_eq!(
        quick.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&quick.stderr)
    );
    let timed = blocked("'--max', '1', '--timeout', '200ms', '--', 'sleep', '10'");
    assert_eq!(
        timed.status.code(),
        Some(124),
        "{}",
        String::from_utf8_lossy(&timed.stderr)
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn a_child_inherited_before_exec_does_not_confuse_retry() {
    // The shell's background sleep becomes retry's child through exec; its
    // end must not be taken for the attempt's.
    let out = shell("sleep 0.2 & exec \"$R\" --max 1 -- sh -c 'sleep 0.6; exit 3'")
        .output()
        .expect("sh runs");
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn secrets_in_the_command_line_never_reach_the_log() {
    let secrets = ["hunter2", "s3cr3t-token", "abcsig", "pa55"];
    let args = [
        "-v",
        "--max",
        "1",
        "--",
        "sh",
        "-c",
        "exit 0",
        "curl",
        "-H",
        "Authorization: Bearer hunter2",
        "https://example.com/x?token=s3cr3t-token&sig=abcsig",
        "-u",
        "me:pa55",
    ];
    let dir = scratch();
    let log = dir.path().join("log.jsonl");
    for format in ["text", "json"] {
        let mut all = vec!["--log-format", format];
        let log_arg = path_str(&log);
        if format == "json" {
            all.extend(["--log-file", &log_arg]);
        }
        all.extend(args);
        let out = retry(all).run();
        out.expect_code(0);
        let mut seen = out.stderr_text();
        if format == "json" {
            seen.push_str(&std::fs::read_to_string(&log).expect("log"));
            assert!(seen.contains("\"start\""), "{seen}");
        } else {
            assert!(seen.contains("retry: running sh -c"), "{seen}");
        }
        assert!(seen.contains("***"), "{seen}");
        for secret in secrets {
            assert!(!seen.contains(secret), "{secret} leaked: {seen}");
        }
    }
}

#[test]
fn the_command_inherits_no_descriptor_of_retry_s_own() {
    // retry is started with 0, 1 and 2 only (tests running alongside may hold
    // descriptors that would leak into a plain spawn). ls then lists the
    // descriptors of the shell retry started: the same three, whether retry
    // holds pipes for replayed stdin and for output matching or not.
    use std::os::unix::process::CommandExt;
    // No pipeline: the shell would hold the pipe's descriptors while ls looks.
    let script = "ls /proc/$$/fd";
    for args in [
        &["--max", "1"][..],
        &[
            "--max",
            "1",
            "--replay-stdin",
            "--retry-if-output",
            "never seen",
        ][..],
    ] {
        let mut cmd = Command::new(bin());
        cmd.args(args).args(["--", "sh", "-c", script]);
        // SAFETY: close_range is async-signal-safe.
        unsafe {
            cmd.pre_exec(|| {
                nix::libc::close_range(3, u32::MAX, 0);
                Ok(())
            });
        }
        let out = cmd.stdin(Stdio::null()).output().expect("retry runs");
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "0\n1\n2\n",
            "{args:?}"
        );
    }
}

#[test]
fn the_path_search_goes_on_past_a_file_that_cannot_run() {
    // As execvp(3): a directory early in PATH whose file of that name is not
    // executable does not hide a runnable one later; when no directory has a
    // runnable one, the error is "permission denied" (126), not "not found".
    let dir = scratch();
    let (early, late) = (dir.path().join("early"), dir.path().join("late"));
    for d in [&early, &late] {
        std::fs::create_dir(d).expect("mkdir");
    }
    std::fs::write(early.join("prog"), "#!/bin/sh\necho early\n").expect("write");
    std::fs::write(late.join("prog"), "#!/bin/sh\necho late\n").expect("write");
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &std::path::Path, m| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).expect("chmod");
    };
    mode(&early.join("prog"), 0o644);
    mode(&late.join("prog"), 0o755);
    let path = format!("{}:{}:/usr/bin:/bin", path_str(&early), path_str(&late));
    let out = retry(["--max", "1", "--", "prog"]).env("PATH", &path).run();
    out.expect_code(0);
    assert_eq!(out.stdout_text(), "late\n");

    mode(&late.join("prog"), 0o644);
    let out = retry(["--max", "1", "--", "prog"]).env("PATH", &path).run();
    out.expect_code(126);
    assert!(
        out.stderr_text().contains("prog: permission denied"),
        "{}",
        out.stderr_text()
    );
}
