//! retry on a real terminal: programs that prompt, Ctrl-C, Ctrl-Z with `fg`,
//! and a retry started in the background, each on a pseudo-terminal that is
//! the controlling terminal of its session (interactive bash where job
//! control is part of the case).

use std::time::{Duration, Instant};

use crate::pty::Pty;
use crate::util::bin;

const SOON: Duration = Duration::from_secs(10);

#[test]
fn a_program_that_prompts_reads_the_terminal() {
    let mut t = Pty::retry(
        &[
            "--max",
            "1",
            "--",
            "sh",
            "-c",
            "printf 'name? '; read x; echo got:$x",
        ],
        &[],
    );
    t.expect("name? ", SOON);
    t.type_keys(b"bob\n");
    let (screen, code) = t.wait(SOON);
    assert!(screen.contains("got:bob"), "{screen}");
    assert_eq!(code, Some(0), "{screen}");
}

#[test]
fn ctrl_c_at_the_terminal_ends_the_run_with_130_and_no_more_attempts() {
    let mut t = Pty::retry(
        &[
            "--max",
            "5",
            "--base",
            "10ms",
            "--",
            "sh",
            "-c",
            "echo ready:$RETRY_ATTEMPT; exec sleep 30",
        ],
        &[],
    );
    t.expect("ready:1", SOON);
    let pressed = Instant::now();
    t.type_keys(b"\x03");
    let (screen, code) = t.wait(SOON);
    assert_eq!(code, Some(130), "{screen}");
    assert!(pressed.elapsed() < Duration::from_secs(5), "{screen}");
    assert!(!screen.contains("ready:2"), "{screen}");
    assert!(screen.contains("interrupted by SIGINT"), "{screen}");
}

#[test]
fn ctrl_c_at_the_terminal_also_ends_a_background_job_of_the_attempt() {
    let dir = crate::util::scratch();
    let bg = dir.path().join("bg");
    let mut t = Pty::retry(
        &[
            "--max",
            "3",
            "--kill-after",
            "12s",
            "--",
            "sh",
            "-c",
            &format!(
                "sleep 300 & echo $! > {}; echo ready:$((6*7)); sleep 300",
                crate::util::path_str(&bg)
            ),
        ],
        &[],
    );
    t.expect("ready:42", SOON);
    let job = crate::util::read_pid(&bg);
    let pressed = Instant::now();
    t.type_keys(b"\x03");
    let (screen, code) = t.wait(SOON);
    assert_eq!(code, Some(130), "{screen}");
    assert!(pressed.elapsed() < Duration::from_secs(6), "{screen}");
    assert!(
        crate::util::gone_within(job, Duration::from_secs(5)),
        "the background job survived"
    );
}

/// An interactive bash on a fresh terminal, with `retry` on its PATH.
fn shell() -> Pty {
    let dir = bin().parent().expect("binary directory");
    let path = format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let t = Pty::spawn(
        "bash",
        &["--norc", "--noprofile", "-i"],
        &[("PATH", &path), ("PS1", "$ "), ("HISTFILE", "/dev/null")],
    );
    t.expect("$ ", SOON);
    t
}

#[test]
fn ctrl_z_suspends_the_attempt_and_retry_and_fg_resumes_both() {
    let mut t = shell();
    // The marker is computed, so the echo of the typed line cannot match it.
    t.type_keys(b"retry --max 1 -- sh -c 'echo ready:$((6*7)); read x; echo got:$x'\n");
    let at = t.expect("ready:42", SOON);
    t.type_keys(b"\x1a");
    // The shell sees the whole job stopped and gives its prompt back.
    let at = t.expect_after(at, "Stopped", SOON);
    let at = t.expect_after(at, "$ ", SOON);
    t.type_keys(b"fg\n");
    let at = t.expect_after(at, "retry", SOON);
    t.type_keys(b"hi\n");
    let at = t.expect_after(at, "got:hi", SOON);
    t.type_keys(b"echo status:$?\n");
    t.expect_after(at, "status:0", SOON);
    t.type_keys(b"exit\n");
    let (_, code) = t.wait(SOON);
    assert_eq!(code, Some(0));
}

#[test]
fn time_suspended_by_ctrl_z_is_not_idle_time() {
    let mut t = shell();
    // It talks within --idle-timeout whenever it runs; Ctrl-Z then keeps it
    // stopped for longer than that, which is not the command's silence. The
    // timeout leaves room for a loaded machine to deliver the Ctrl-Z late.
    // The sleep is started before the marker: a shell that vforks stays
    // unstoppable while its child, stopped by the Ctrl-Z before its exec,
    // holds it (a shell's job hangs there too, with or without retry), so
    // nothing may be forked once the Ctrl-Z can come.
    t.type_keys(
        b"retry --max 1 --idle-timeout 8s -- sh -c 'sleep 1 & echo ready:$((6*7)); wait; echo done:$((6*7))'\n",
    );
    let at = t.expect("ready:42", SOON);
    t.type_keys(b"\x1a");
    let at = t.expect_after(at, "Stopped", SOON);
    let at = t.expect_after(at, "$ ", SOON);
    // Suspended for more than --idle-timeout: a lower bound, whatever the load.
    std::thread::sleep(Duration::from_secs(9));
    t.type_keys(b"fg\n");
    let at = t.expect_after(at, "done:42", SOON);
    t.type_keys(b"echo status:$?\n");
    t.expect_after(at, "status:0", SOON);
    t.type_keys(b"exit\n");
    let (_, code) = t.wait(SOON);
    assert_eq!(code, Some(0));
}

#[test]
fn in_the_background_retry_leaves_the_terminal_alone_until_fg() {
    let mut t = shell();
    t.type_keys(b"retry --max 1 -- sh -c 'read x; echo got:$x' &\n");
    // The attempt tries to read the terminal from the background: the job
    // stops, as it would without retry. The shell polls its job table (up
    // to 20 s), then shows it; the marker is computed, so the echo of the
    // typed line cannot match it.
    t.type_keys(
        b"i=0; while [ -z \"$(jobs -s)\" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; echo polled:$((6*7)); jobs\n",
    );
    let at = t.expect("polled:42", Duration::from_secs(30));
    let at = t.expect_after(at, "Stopped", SOON);
    t.type_keys(b"fg\n");
    let at = t.expect_after(at, "retry", SOON);
    t.type_keys(b"bg-input\n");
    let at = t.expect_after(at, "got:bg-input", SOON);
    t.type_keys(b"echo status:$?\n");
    t.expect_after(at, "status:0", SOON);
    t.type_keys(b"exit\n");
    let (_, code) = t.wait(SOON);
    assert_eq!(code, Some(0));
}
