//! A reader that stops reading (`retry … | sleep 60`): `--max-time` and a
//! SIGTERM still end the run on time, with the status they always give,
//! while retry writes out held output (`--last-stdout`, `--hold-output`)
//! or passes output on through its pump.

use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use crate::util::{retry, retry_sh};

/// Five times what a pipe holds: the writer blocks once the reader stops.
const OUTPUT: &str = "head -c 5000000 /dev/zero";

/// Long enough for retry to be blocked on the full pipe.
const SETTLE: Duration = Duration::from_millis(1500);

/// Whatever the load, well short of the 60 s the reader sleeps.
const WINDOW: Duration = Duration::from_secs(8);

#[test]
fn sigterm_ends_a_last_stdout_release_that_its_reader_stopped_taking() {
    let run = retry(["--last-stdout", "--", "sh", "-c", OUTPUT]).spawn_into_sleep();
    std::thread::sleep(SETTLE);
    let sent = Instant::now();
    run.signal(Signal::SIGTERM);
    let out = run.wait();
    assert!(
        sent.elapsed() < WINDOW,
        "took {:?} after TERM",
        sent.elapsed()
    );
    out.expect_code(143);
    let err = out.stderr_text();
    assert!(
        err.contains("stdout's reader had not taken all of its output by SIGTERM"),
        "{err}"
    );
}

#[test]
fn max_time_ends_a_last_stdout_release_that_its_reader_stopped_taking() {
    let out = retry([
        "--max-time",
        "2s",
        "--last-stdout",
        "--",
        "sh",
        "-c",
        OUTPUT,
    ])
    .spawn_into_sleep()
    .wait();
    assert!(
        out.elapsed < Duration::from_secs(2) + WINDOW,
        "took {:?}",
        out.elapsed
    );
    out.expect_code(124);
    let err = out.stderr_text();
    assert!(
        err.contains("stdout's reader had not taken all of its output by --max-time"),
        "{err}"
    );
}

#[test]
fn sigterm_bounds_writing_out_held_output_after_it_ended_the_run() {
    // The attempt is interrupted; its held stdout goes out at the end, to
    // a reader that takes none of it.
    let script = format!("{OUTPUT}; sleep 60");
    let run = retry_sh(&["--last-stdout"], &script).spawn_into_sleep();
    std::thread::sleep(SETTLE);
    let sent = Instant::now();
    run.signal(Signal::SIGTERM);
    let out = run.wait();
    // The held output gets 4 s after the signal, then is abandoned.
    assert!(
        sent.elapsed() < WINDOW,
        "took {:?} after TERM",
        sent.elapsed()
    );
    out.expect_code(143);
    let err = out.stderr_text();
    assert!(
        err.contains("4s after the signal, and the rest is abandoned"),
        "{err}"
    );
}

#[test]
fn a_second_signal_abandons_held_output_its_reader_stopped_taking() {
    let script = format!("{OUTPUT}; exit 1");
    let run = retry_sh(&["--hold-output", "--max", "1"], &script).spawn_into_sleep();
    std::thread::sleep(SETTLE);
    let sent = Instant::now();
    run.signal(Signal::SIGTERM);
    let out = run.wait();
    assert!(
        sent.elapsed() < WINDOW,
        "took {:?} after TERM",
        sent.elapsed()
    );
    // The run had given up: its status stands.
    out.expect_code(1);
}

#[test]
fn sigterm_ends_a_pump_blocked_on_a_reader_that_stopped_reading() {
    let run = retry_sh(&["--retry-if-output", "never printed"], OUTPUT).spawn_into_sleep();
    std::thread::sleep(SETTLE);
    let sent = Instant::now();
    run.signal(Signal::SIGTERM);
    let out = run.wait();
    assert!(
        sent.elapsed() < WINDOW,
        "took {:?} after TERM",
        sent.elapsed()
    );
    out.expect_code(143);
}

#[test]
fn max_time_ends_a_pump_that_spills_held_stdout_to_a_stopped_reader() {
    // Past --hold-max, --last-stdout's stdout passes through: the pump
    // writes it out while holding the spool, and stays blocked there.
    let out = retry_sh(
        &["--max-time", "2s", "--hold-max", "1M", "--last-stdout"],
        OUTPUT,
    )
    .spawn_into_sleep()
    .wait();
    assert!(
        out.elapsed < Duration::from_secs(2) + WINDOW,
        "took {:?}",
        out.elapsed
    );
    out.expect_code(124);
}
