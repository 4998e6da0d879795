//! What retry's own entry point does before the retry loop, in place of
//! std's start-up: closed standard descriptors, a closed stderr pipe.

use std::os::unix::process::ExitStatusExt;
use std::process::Stdio;

use crate::util::command;

#[test]
fn a_closed_stdout_is_opened_on_dev_null_before_anything_else_can_take_it() {
    // sh closes fd 1, then execs retry; the command's test succeeds only if
    // its fd 1 (inherited from retry) is /dev/null.
    let out = std::process::Command::new("sh")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("R", crate::util::bin())
        .args([
            "-c",
            "exec >&- && exec \"$R\" --max 1 -- sh -c '[ /proc/self/fd/1 -ef /dev/null ]'",
        ])
        .output()
        .expect("sh runs");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
}

#[test]
fn a_log_written_into_a_closed_pipe_does_not_kill_retry() {
    let (read, write) = nix::unistd::pipe().expect("pipe");
    drop(read);
    let status = command()
        .args(["--max", "2", "--base", "1ms", "--", "false"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(write))
        .status()
        .expect("retry runs");
    // The log lines fail with EPIPE; the run still ends with false's status.
    assert_eq!(status.signal(), None, "{status:?}");
    assert_eq!(status.code(), Some(1));
}
