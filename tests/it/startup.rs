//! What retry's own entry point does before the retry loop, in place of
//! std's start-up: closed standard descriptors, a closed stderr pipe.

use std::os::unix::process::ExitStatusExt;
use std::process::Stdio;

use crate::util::command;

#[test]
fn a_closed_stdout_is_held_on_dev_null_by_retry_and_closed_for_the_command() {
    // sh closes fd 1, then execs retry, which opens a log file: the file
    // must not take fd 1 (retry holds /dev/null there), and the command
    // must find its fd 1 closed, as it would have without retry.
    let dir = crate::util::scratch();
    let log = crate::util::path_str(&dir.path().join("log"));
    let out = std::process::Command::new("sh")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("R", crate::util::bin())
        .args([
            "-c",
            &format!(
                "exec >&- && exec \"$R\" --log-file {log} --max 1 -- sh -c '[ /proc/$PPID/fd/1 -ef /dev/null ] && [ ! -e /proc/$$/fd/1 ]'"
            ),
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
