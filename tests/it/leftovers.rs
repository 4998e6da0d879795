//! Nothing an attempt started outlives the run: background jobs after an
//! interrupt, and the whole group after `kill -9` of retry (plain, under
//! nohup, and as PID 1 of a PID namespace).

use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use crate::util::{gone_within, path_str, read_pid, retry_sh, scratch, wait_for_file};

const SETTLE: Duration = Duration::from_secs(5);

#[test]
fn after_an_interrupt_a_background_job_that_ignores_sigint_gets_the_stop_signal_at_once() {
    // A non-interactive shell's background job ignores SIGINT: only the stop
    // signal (TERM), sent as soon as the main process has gone, ends it.
    let dir = scratch();
    let bg = dir.path().join("bg");
    let running = retry_sh(
        &["--max", "3", "--kill-after", "12s"],
        &format!("sleep 300 & echo $! > {}; sleep 300", path_str(&bg)),
    )
    .spawn();
    wait_for_file(&bg, SETTLE);
    std::thread::sleep(Duration::from_millis(200));
    let job = read_pid(&bg);
    let asked = Instant::now();
    running.signal(Signal::SIGINT);
    let out = running.wait();
    out.expect_code(130);
    assert!(
        asked.elapsed() < Duration::from_secs(6),
        "ended {:?} after the interrupt: the job waited for KILL",
        asked.elapsed()
    );
    assert!(gone_within(job, SETTLE), "the background job survived");
}

#[test]
fn after_an_interrupt_a_job_that_ignores_every_stop_signal_is_killed_after_the_grace() {
    let dir = scratch();
    let bg = dir.path().join("bg");
    let running = retry_sh(
        &["--max", "3", "--kill-after", "1s"],
        &format!(
            "sh -c 'trap \"\" INT TERM; echo $$ > {}; exec sleep 300' & sleep 300",
            path_str(&bg)
        ),
    )
    .spawn();
    wait_for_file(&bg, SETTLE);
    std::thread::sleep(Duration::from_millis(200));
    let job = read_pid(&bg);
    let asked = Instant::now();
    running.signal(Signal::SIGINT);
    let out = running.wait();
    out.expect_code(130);
    let took = asked.elapsed();
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(8),
        "{took:?}"
    );
    assert!(gone_within(job, SETTLE), "the job survived KILL");
}
