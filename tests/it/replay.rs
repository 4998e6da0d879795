//! `--replay-stdin` bounded: the read of stdin gives way to `--max-time` and
//! to signals, and the spool has a size limit (`--replay-stdin-max`).

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::process::{Child, ChildStdin, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::util::{command, path_str, retry, scratch};

/// retry with stdin a pipe the test holds open (and writes to, or not);
/// stdout and stderr captured.
fn with_open_stdin(args: &[&str], tmpdir: Option<&std::path::Path>) -> (Child, ChildStdin) {
    let mut cmd = command();
    cmd.args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(dir) = tmpdir {
        cmd.env("TMPDIR", dir);
    }
    let mut child = cmd.spawn().expect("spawn retry");
    let stdin = child.stdin.take().expect("stdin");
    (child, stdin)
}

/// Wait for retry to end within `limit`; its status code (None: a signal),
/// stderr and how long it took from `since`.
fn finish(mut child: Child, since: Instant, limit: Duration) -> (Option<i32>, String, Duration) {
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            let took = since.elapsed();
            let out = child.wait_with_output().expect("output");
            return (
                status.code(),
                String::from_utf8_lossy(&out.stderr).into_owned(),
                took,
            );
        }
        if since.elapsed() > limit {
            let _ = child.kill();
            panic!("retry was still reading stdin after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits until the reader of `stdin` has taken everything written to it:
/// FIONREAD on a pipe's write end counts the bytes still in the pipe.
fn wait_until_read(stdin: &ChildStdin) {
    use std::os::fd::AsRawFd;
    crate::util::wait_until(Duration::from_secs(20), "retry reads stdin", || {
        let mut unread: nix::libc::c_int = 0;
        // SAFETY: FIONREAD writes one c_int through the pointer given.
        let ok = unsafe { nix::libc::ioctl(stdin.as_raw_fd(), nix::libc::FIONREAD, &mut unread) };
        ok == 0 && unread == 0
    });
}

/// `retry --replay-stdin --max-time 2s -- head -c 5`: stdin that never ends, or never stops.
const HEAD_UNDER_MAX_TIME: &[&str] = &[
    "--replay-stdin",
    "--max-time",
    "2s",
    "--",
    "head",
    "-c",
    "5",
];

#[test]
fn max_time_ends_a_read_of_stdin_that_never_ends_with_124() {
    // `sleep 30 | retry --replay-stdin --max-time 2s -- head -c 5`
    let started = Instant::now();
    let (child, stdin) = with_open_stdin(HEAD_UNDER_MAX_TIME, None);
    let (code, err, took) = finish(child, started, Duration::from_secs(20));
    drop(stdin);
    assert_eq!(code, Some(124), "{err}");
    assert!(took >= Duration::from_millis(1900), "{took:?}");
    assert!(took < Duration::from_secs(8), "{took:?}");
    assert!(
        err.contains("--max-time ran out while reading stdin for --replay-stdin"),
        "{err}"
    );
}

/// The most the stream below sends a second: by the time the test gives up
/// on retry (30 s) it is still short of the default --replay-stdin-max (1G),
/// so only --max-time can end the run.
const STREAM_RATE: f64 = 24.0 * 1024.0 * 1024.0;

#[test]
fn max_time_ends_an_endless_stream_before_the_disk_fills() {
    // `yes | retry --replay-stdin --max-time 2s -- head -c 5`, in a TMPDIR of
    // its own, with a stream that never ends and comes as fast as retry
    // takes it, up to STREAM_RATE: the deadline ends the read, and nothing
    // is left behind.
    let tmp = scratch();
    let started = Instant::now();
    let (child, mut stdin) = with_open_stdin(HEAD_UNDER_MAX_TIME, Some(tmp.path()));
    let writer = std::thread::spawn(move || {
        let block = vec![b'y'; 64 * 1024];
        let begun = Instant::now();
        let mut sent = 0usize;
        while stdin.write_all(&block).is_ok() {
            sent += block.len();
            let ahead = sent as f64 / STREAM_RATE - begun.elapsed().as_secs_f64();
            if ahead > 0.0 {
                std::thread::sleep(Duration::from_secs_f64(ahead));
            }
        }
        sent
    });
    let (code, err, took) = finish(child, started, Duration::from_secs(30));
    let sent = writer.join().expect("writer");
    assert_eq!(code, Some(124), "{err}");
    assert!(
        err.contains("--max-time ran out while reading stdin for --replay-stdin"),
        "{err}"
    );
    assert!(took >= Duration::from_millis(1900), "{took:?}");
    assert!(took < Duration::from_secs(8), "{took:?}");
    // The stream did flow: far more than a pipe holds.
    assert!(sent > 1 << 20, "{sent} bytes sent");
    assert_eq!(std::fs::read_dir(tmp.path()).expect("tmpdir").count(), 0);
}

#[test]
fn past_the_size_limit_nothing_runs_and_retry_exits_125() {
    let tmp = scratch();
    let marker = tmp.path().join("ran");
    let started = Instant::now();
    let (child, mut stdin) = with_open_stdin(
        &[
            "--replay-stdin",
            "--replay-stdin-max",
            "20M",
            "--",
            "touch",
            &path_str(&marker),
        ],
        Some(tmp.path()),
    );
    let writer = std::thread::spawn(move || {
        let block = vec![b'y'; 64 * 1024];
        while stdin.write_all(&block).is_ok() {}
    });
    let (code, err, took) = finish(child, started, Duration::from_secs(30));
    writer.join().expect("writer");
    assert_eq!(code, Some(125), "{err}");
    assert!(
        err.contains("stdin is larger than --replay-stdin-max (20 MiB)"),
        "{err}"
    );
    assert!(took < Duration::from_secs(10), "{took:?}");
    assert!(!marker.exists(), "the command ran");
    assert_eq!(std::fs::read_dir(tmp.path()).expect("tmpdir").count(), 0);
}

#[test]
fn an_input_of_exactly_the_limit_is_replayed_and_one_byte_more_is_not() {
    let ok = retry([
        "--replay-stdin",
        "--replay-stdin-max",
        "10",
        "--max",
        "2",
        "--base",
        "1ms",
        "--",
        "sh",
        "-c",
        "cat; exit 1",
    ])
    .stdin(b"0123456789".to_vec())
    .run();
    ok.expect_code(1);
    assert_eq!(ok.stdout_text(), "01234567890123456789");
    let over = retry(["--replay-stdin", "--", "cat"])
        .env("RETRY_REPLAY_STDIN_MAX", "10")
        .stdin(b"0123456789A".to_vec())
        .run();
    over.expect_code(125);
    assert!(over.stdout.is_empty());
    assert!(
        over.stderr_text().contains("(10 bytes)"),
        "{}",
        over.stderr_text()
    );
}

#[test]
fn a_signal_ends_the_read_of_stdin_with_128_plus_n() {
    for (sig, code) in [(Signal::SIGTERM, 143), (Signal::SIGINT, 130)] {
        let started = Instant::now();
        let (child, mut stdin) = with_open_stdin(&["--replay-stdin", "--", "cat"], None);
        // retry is in the read once it has taken what was written.
        stdin.write_all(b"partial line").expect("write");
        wait_until_read(&stdin);
        kill(Pid::from_raw(child.id() as i32), sig).expect("signal");
        let (got, err, took) = finish(child, started, Duration::from_secs(20));
        drop(stdin);
        assert_eq!(got, Some(code), "{err}");
        assert!(took < Duration::from_secs(5), "{took:?}");
        assert!(err.contains("while reading stdin"), "{err}");
    }
}

#[test]
fn a_large_input_is_spilled_only_to_a_temporary_directory_nobody_else_can_write() {
    let open = scratch();
    let loose = open.path().join("loose");
    std::fs::create_dir(&loose).expect("mkdir");
    std::fs::set_permissions(&loose, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let big = vec![b'x'; 9 * 1024 * 1024];
    let out = retry(["--replay-stdin", "--", "wc", "-c"])
        .env("TMPDIR", &loose)
        .stdin(big.clone())
        .run();
    out.expect_code(125);
    let err = out.stderr_text();
    assert!(err.contains("is writable by every user"), "{err}");
    assert!(err.contains("TMPDIR"), "{err}");
    assert_eq!(std::fs::read_dir(&loose).expect("dir").count(), 0);
    // A sticky one, as /tmp is, will do: nothing there has a name.
    std::fs::set_permissions(&loose, std::fs::Permissions::from_mode(0o1777)).expect("chmod");
    let out = retry(["--replay-stdin", "--", "wc", "-c"])
        .env("TMPDIR", &loose)
        .stdin(big)
        .run();
    out.expect_code(0);
    assert_eq!(out.stdout_text().trim(), (9 * 1024 * 1024).to_string());
    assert_eq!(std::fs::read_dir(&loose).expect("dir").count(), 0);
}

#[test]
fn replay_stdin_max_is_checked_like_every_flag() {
    for (args, env, says) in [
        (
            &["--replay-stdin", "--replay-stdin-max", "0"][..],
            None,
            "invalid value '0' for --replay-stdin-max: expected a size above zero",
        ),
        (
            &["--replay-stdin", "--replay-stdin-max", "1X"][..],
            None,
            "invalid value '1X' for --replay-stdin-max: expected a size in bytes",
        ),
        (
            &["--replay-stdin", "--replay-stdin-max", "-1"][..],
            None,
            "--replay-stdin-max",
        ),
        (
            &["--replay-stdin-max", "1G"][..],
            None,
            "--replay-stdin-max has no effect without --replay-stdin",
        ),
        (
            &["--replay-stdin"][..],
            Some("lots"),
            "RETRY_REPLAY_STDIN_MAX (--replay-stdin-max)",
        ),
    ] {
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["--", "true"]);
        let mut r = retry(all);
        if let Some(v) = env {
            r = r.env("RETRY_REPLAY_STDIN_MAX", v);
        }
        let out = r.run();
        out.expect_code(2);
        assert!(
            out.stderr_text().contains(says),
            "{args:?}: {}",
            out.stderr_text()
        );
    }
    // The variable alone, set for a whole session, is no mistake.
    retry(["--", "true"])
        .env("RETRY_REPLAY_STDIN_MAX", "64M")
        .run()
        .expect_code(0);
    let http = retry(["--http", "http://127.0.0.1:9/", "--replay-stdin-max", "1G"]).run();
    http.expect_code(2);
}
