//! Nothing an attempt started outlives the run: background jobs after an
//! interrupt, and the whole group after `kill -9` of retry (plain, under
//! nohup, and as PID 1 of a PID namespace).

use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use crate::util::{gone_within, path_str, read_pid, retry_sh, scratch, wait_for_file};

const SETTLE: Duration = Duration::from_secs(5);

/// Wait until each process in `pids` runs `sleep`: the shell has forked
/// it, set its traps and exec'd, so a signal now meets the real job.
fn until_sleeping(pids: &[i32]) {
    let until = Instant::now() + SETTLE;
    for pid in pids {
        while std::fs::read_to_string(format!("/proc/{pid}/comm")).map_or(true, |c| c != "sleep\n")
        {
            assert!(Instant::now() < until, "process {pid} never ran sleep");
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// Run `JOB & exec sleep 300` under retry with `--kill-after grace`; once
/// the job and the main process both run sleep (so JOB's traps are set),
/// interrupt retry with SIGINT. Returns the job's pid and how long retry
/// took to end (with 130) after the interrupt.
fn interrupted_with_job(grace: &str, job: &str) -> (i32, Duration) {
    let dir = scratch();
    let bg = dir.path().join("bg");
    let main = dir.path().join("main");
    let script = format!(
        "{job} & echo $! > {}; echo $$ > {}; exec sleep 300",
        path_str(&bg),
        path_str(&main)
    );
    let running = retry_sh(&["--max", "3", "--kill-after", grace], &script).spawn();
    wait_for_file(&bg, SETTLE);
    wait_for_file(&main, SETTLE);
    let job = read_pid(&bg);
    until_sleeping(&[job, read_pid(&main)]);
    let asked = Instant::now();
    running.signal(Signal::SIGINT);
    running.wait().expect_code(130);
    (job, asked.elapsed())
}

#[test]
fn after_an_interrupt_a_background_job_that_ignores_sigint_gets_the_stop_signal_at_once() {
    // A non-interactive shell's background job ignores SIGINT: only the stop
    // signal (TERM), sent as soon as the main process has gone, ends it.
    let (job, took) = interrupted_with_job("12s", "sleep 300");
    assert!(
        took < Duration::from_secs(6),
        "ended {took:?} after the interrupt: the job waited for KILL"
    );
    assert!(gone_within(job, SETTLE), "the background job survived");
}

#[test]
fn after_an_interrupt_a_job_that_ignores_every_stop_signal_is_killed_after_the_grace() {
    let (job, took) = interrupted_with_job("1s", "sh -c 'trap \"\" INT TERM; exec sleep 300'");
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(8),
        "{took:?}"
    );
    assert!(gone_within(job, SETTLE), "the job survived KILL");
}

/// A script that leaves two background jobs, one ignoring TERM, INT and
/// HUP, and writes the pids of all three processes to `dir`, then waits.
fn family(dir: &std::path::Path) -> (String, [std::path::PathBuf; 3]) {
    let files = ["main", "job", "stubborn"].map(|n| dir.join(n));
    let script = format!(
        "sleep 300 & echo $! > {job}; sh -c 'trap \"\" TERM INT HUP; echo $$ > {stubborn}; exec sleep 300' & echo $$ > {main}; wait",
        job = path_str(&files[1]),
        stubborn = path_str(&files[2]),
        main = path_str(&files[0]),
    );
    (script, files)
}

#[test]
fn kill_9_of_retry_ends_the_attempt_s_background_jobs_too() {
    // Both retry alone (`kill -9 PID`) and retry's whole job (`kill -9
    // -PGID`, as a CI runner or a shell ends a job) are covered.
    for whole_job in [false, true] {
        let dir = scratch();
        let (script, files) = family(dir.path());
        let mut cmd = crate::util::command();
        cmd.args(["--max", "1", "--", "sh", "-c", &script])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let mut running = cmd.spawn().expect("spawn retry");
        for f in &files {
            wait_for_file(f, SETTLE);
        }
        let pids = files.each_ref().map(read_pid);
        until_sleeping(&pids[1..]);
        let retry = nix::unistd::Pid::from_raw(running.id() as i32);
        if whole_job {
            nix::sys::signal::killpg(retry, Signal::SIGKILL).expect("killpg");
        } else {
            nix::sys::signal::kill(retry, Signal::SIGKILL).expect("kill");
        }
        let _ = running.wait();
        for (pid, what) in pids.iter().zip(["main process", "job", "TERM-proof job"]) {
            assert!(
                gone_within(*pid, SETTLE),
                "the attempt's {what} outlived retry (whole job: {whole_job})"
            );
        }
    }
}

#[test]
fn kill_9_of_retry_under_nohup_ends_the_attempt_s_background_jobs_too() {
    let dir = scratch();
    let (script, files) = family(dir.path());
    let rpid = dir.path().join("retry");
    let outer = format!(
        "nohup \"$R\" --max 1 -- sh -c '{}' >/dev/null 2>&1 & echo $! > {}; wait",
        script.replace('\'', "'\\''"),
        path_str(&rpid)
    );
    let mut sh = std::process::Command::new("sh")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("R", crate::util::bin())
        .args(["-c", &outer])
        .stdin(std::process::Stdio::null())
        .spawn()
        .expect("sh runs");
    wait_for_file(&rpid, SETTLE);
    for f in &files {
        wait_for_file(f, SETTLE);
    }
    let pids = files.each_ref().map(read_pid);
    until_sleeping(&pids[1..]);
    let retry = read_pid(&rpid);
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(retry), Signal::SIGKILL).expect("kill");
    let _ = sh.wait();
    for pid in pids {
        assert!(
            gone_within(pid, SETTLE),
            "a process of the attempt outlived retry"
        );
    }
}

/// Live processes whose command line contains `marker`.
fn with_marker(marker: &str) -> Vec<i32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        // Only the jobs: the command lines of unshare, retry and sh hold
        // the marker too.
        if text.starts_with("sleep ") && text.contains(marker) && crate::util::alive(pid) {
            found.push(pid);
        }
    }
    found
}

#[test]
fn kill_9_of_retry_as_pid_1_of_a_pid_namespace_leaves_nothing() {
    if !crate::need::unshare(
        &["--fork", "--pid", "--mount-proc", "true"],
        "a PID namespace",
    ) {
        return;
    }
    let dir = scratch();
    let ready = dir.path().join("ready");
    // Durations no other process has, to find the jobs from outside.
    let marker = format!("{}.{}", 300 + std::process::id() % 1000, std::process::id());
    let script = format!(
        "sleep {marker} & sh -c 'trap \"\" TERM INT HUP; exec sleep {marker}' & touch {}; wait",
        path_str(&ready)
    );
    let mut unshare = std::process::Command::new("unshare")
        .args(["--fork", "--pid", "--mount-proc"])
        .arg(crate::util::bin())
        .args(["--max", "1", "--", "sh", "-c", &script])
        .stdin(std::process::Stdio::null())
        // unshare reports its failure to re-raise the KILL its child died
        // of ("sigprocmask unblock failed"): noise, not the test's concern.
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("unshare runs");
    // retry is PID 1 inside, and unshare's child outside; whatever happens
    // to the test, the namespace goes with it.
    let mut children = String::new();
    let until = Instant::now() + SETTLE;
    while children.trim().is_empty() && Instant::now() < until {
        children = std::fs::read_to_string(format!("/proc/{0}/task/{0}/children", unshare.id()))
            .unwrap_or_default();
    }
    let retry: i32 = children
        .split_whitespace()
        .next()
        .expect("retry")
        .parse()
        .expect("pid");
    let namespace = EndOnDrop(retry);
    wait_for_file(&ready, SETTLE);
    let until = Instant::now() + SETTLE;
    while with_marker(&marker).len() < 2 {
        assert!(Instant::now() < until, "both jobs run");
        std::thread::sleep(Duration::from_millis(5));
    }
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(retry), Signal::SIGKILL).expect("kill");
    let _ = unshare.wait();
    drop(namespace);
    let until = Instant::now() + SETTLE;
    while !with_marker(&marker).is_empty() {
        assert!(Instant::now() < until, "a job outlived retry as PID 1");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Sends KILL to a process when dropped, so that a failed assertion does
/// not leave it (and what it holds) running.
struct EndOnDrop(i32);

impl Drop for EndOnDrop {
    fn drop(&mut self) {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.0), Signal::SIGKILL);
    }
}

#[test]
fn a_run_that_ends_normally_leaves_no_process_behind() {
    // The parent is a subreaper, as an init would be: anything retry left
    // running or unreaped (its watchdog included) would become its child.
    // Each run's leftovers are listed (peeked at, then reaped) after it.
    let probe = r#"
import ctypes, os, subprocess, sys, time
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
for args in (["--max", "1", "--", "true"], ["--max", "2", "--base", "1ms", "--", "sh", "-c", "sleep 0.2 & exit 1"]):
    subprocess.run([sys.argv[1]] + args, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    while True:
        try:  # __WALL, WNOWAIT: see it before reaping it
            r = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | 0x40000000 | os.WNOWAIT)
        except ChildProcessError:
            break
        if r is None:
            print("running:", args[-1])
            break
        comm = open("/proc/%d/comm" % r.si_pid).read().strip()
        print("left:", comm, "after:", args[-1])
        os.waitpid(r.si_pid, 0)
print("done")
"#;
    let out = std::process::Command::new("python3")
        .args(["-c", probe])
        .arg(crate::util::bin())
        .output()
        .expect("python3 runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let left: Vec<&str> = text.lines().collect();
    let err = String::from_utf8_lossy(&out.stderr);
    if cfg!(feature = "portable") {
        // No subreaper (docs/platforms.md): the background job retry
        // stopped was the parent's to reap, two attempts' worth; nothing
        // else, and never the watchdog.
        // (Killed as `sleep`, or as the `sh` that was about to exec it.)
        let job = |l: &&str| {
            ["sleep", "sh"]
                .map(|c| format!("left: {c} after: sleep 0.2 & exit 1"))
                .contains(&l.to_string())
        };
        assert_eq!(left.last(), Some(&"done"), "{err}");
        assert_eq!(left.len(), 3, "{left:?} {err}");
        assert!(left[..2].iter().all(job), "{left:?}");
    } else {
        assert_eq!(left, ["done"], "{err}");
    }
}
