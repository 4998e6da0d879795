//! `--file` on a mount whose server never answers, as an NFS mount does
//! when its server is gone: a FUSE mount nobody serves, so every stat under
//! it blocks in the kernel. The attempt's bound and signals still end the
//! wait, and the run ends as promised.

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::time::Duration;

use nix::mount::{MntFlags, MsFlags, mount, umount2};
use nix::sys::signal::Signal;

use crate::util::{path_str, retry, scratch};

/// A FUSE mount whose device is never read: the kernel waits for ever for
/// its answer. Unmounted (lazily, so that blocked looks end) when dropped.
struct Silent {
    dir: tempfile::TempDir,
    _device: OwnedFd,
}

impl Silent {
    /// None, counted as a skip, on a machine without FUSE.
    fn mount() -> Option<Silent> {
        let fuse = std::path::Path::new("/dev/fuse");
        if !crate::need::met(fuse.exists(), "/dev/fuse (a FUSE mount)") {
            return None;
        }
        let dir = scratch();
        let device: OwnedFd = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/fuse")
            .expect("/dev/fuse opens (the suite runs as root)")
            .into();
        let data = format!(
            "fd={},rootmode=40000,user_id=0,group_id=0",
            device.as_raw_fd()
        );
        mount(
            Some("retry-silent"),
            dir.path(),
            Some("fuse"),
            MsFlags::empty(),
            Some(data.as_str()),
        )
        .expect("mount a FUSE file system");
        Some(Silent {
            dir,
            _device: device,
        })
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

impl Drop for Silent {
    fn drop(&mut self) {
        let _ = umount2(self.dir.path(), MntFlags::MNT_DETACH);
    }
}

#[test]
fn a_look_that_never_returns_is_ended_by_timeout_and_the_run_gives_up() {
    let Some(m) = Silent::mount() else { return };
    let token = path_str(&m.path("token"));
    let out = retry([
        "--file",
        &token,
        "--timeout",
        "300ms",
        "--max",
        "3",
        "--base",
        "10ms",
        "--log-format",
        "json",
    ])
    .run();
    // Each attempt is timed out; the run ends as a network probe's does.
    out.expect_code(28);
    assert!(out.elapsed < Duration::from_secs(20), "{:?}", out.elapsed);
    let log = out.json();
    let done = log.iter().find(|e| e["event"] == "done").expect("done");
    assert_eq!(done["attempts"], 3, "{done}");
    // Said once, as a warning naming the path; the same look is waited
    // for again by the later attempts, not started anew.
    let warnings: Vec<&str> = log
        .iter()
        .filter(|e| e["event"] == "warning")
        .filter_map(|e| e["message"].as_str())
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains(&token) && warnings[0].contains("has not returned"),
        "{warnings:?}"
    );
}

#[test]
fn a_look_that_never_returns_ends_at_max_time() {
    let Some(m) = Silent::mount() else { return };
    let token = path_str(&m.path("token"));
    let out = retry(["--file", &token, "--max-time", "1s"]).run();
    out.expect_code(28);
    assert!(out.elapsed < Duration::from_secs(15), "{:?}", out.elapsed);
    assert!(
        out.stderr_text().contains("--max-time"),
        "{}",
        out.stderr_text()
    );
}

#[test]
fn a_look_that_never_returns_gives_way_to_a_signal() {
    let Some(m) = Silent::mount() else { return };
    let token = path_str(&m.path("token"));
    let run = retry(["--file", &token]).spawn();
    std::thread::sleep(Duration::from_millis(500));
    run.signal(Signal::SIGTERM);
    let out = run.wait();
    out.expect_code(143);
    assert!(out.elapsed < Duration::from_secs(15), "{:?}", out.elapsed);
}

#[test]
fn a_look_that_never_returns_costs_one_thread_however_many_attempts_wait_for_it() {
    let Some(m) = Silent::mount() else { return };
    let token = path_str(&m.path("token"));
    let run = retry([
        "--file",
        &token,
        "--timeout",
        "100ms",
        "--max",
        "30",
        "--base",
        "10ms",
        "--cap",
        "10ms",
    ])
    .spawn();
    // Several attempts in (each 100 ms), well before the thirtieth.
    std::thread::sleep(Duration::from_millis(1500));
    let tasks = format!("/proc/{}/task", run.pid());
    let looks = std::fs::read_dir(&tasks)
        .expect("retry's threads")
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|name| name.trim() == "look")
        .count();
    run.signal(Signal::SIGTERM);
    run.wait().expect_code(143);
    assert_eq!(looks, 1);
}
