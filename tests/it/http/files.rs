//! `-o FILE`: what an existing file keeps (mode, owner, the link it was
//! reached by), that nothing is left whatever kills retry, and downloads
//! resumed with `Range` + `If-Range`.

use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
use std::path::Path;

use super::*;

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).expect("stat").mode() & 0o7777
}

// ---- what an existing file keeps ---------------------------------------------

#[test]
fn an_existing_file_keeps_its_mode() {
    let s = Server::start(vec![reply(200).body("new token")]);
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("token");
    std::fs::write(&file, "old token").expect("write");
    std::fs::set_permissions(&file, PermissionsExt::from_mode(0o600)).expect("chmod");
    let r = download(&s.url, &file, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(std::fs::read_to_string(&file).expect("read"), "new token");
    assert_eq!(mode(&file), 0o600);
    assert_eq!(listing(dir.path()), ["token"]);
}

#[test]
fn an_existing_file_keeps_its_owner_and_group() {
    if !crate::need::root("it changes file owners") {
        return;
    }
    let s = Server::start(vec![reply(200).body("new")]);
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("shared");
    std::fs::write(&file, "old").expect("write");
    // root:daemon 0640, as a service's configuration often is.
    let daemon = nix::unistd::Gid::from_raw(1);
    nix::unistd::chown(&file, Some(nix::unistd::Uid::from_raw(0)), Some(daemon)).expect("chown");
    std::fs::set_permissions(&file, PermissionsExt::from_mode(0o640)).expect("chmod");
    let r = download(&s.url, &file, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let meta = std::fs::metadata(&file).expect("stat");
    assert_eq!(
        (meta.uid(), meta.gid(), meta.mode() & 0o7777),
        (0, 1, 0o640)
    );
    assert_eq!(std::fs::read_to_string(&file).expect("read"), "new");
}

#[test]
fn a_new_file_gets_the_mode_the_umask_allows() {
    let s = Server::start(vec![reply(200).body("fresh")]);
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("new");
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg("umask 027; exec \"$0\" --http \"$1\" -o \"$2\"")
        .arg(crate::util::bin())
        .arg(&s.url)
        .arg(&file)
        .env_clear()
        .output()
        .expect("run retry through sh");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(mode(&file), 0o640);
}

#[test]
fn a_symbolic_link_is_written_through() {
    let s = Server::start(vec![reply(200).body("through the link")]);
    let dir = tempfile::tempdir().expect("tempdir");
    let real = dir.path().join("real");
    std::fs::create_dir(&real).expect("mkdir");
    let target = real.join("config");
    std::fs::write(&target, "old").expect("write");
    std::fs::set_permissions(&target, PermissionsExt::from_mode(0o640)).expect("chmod");
    let link = dir.path().join("config");
    symlink("real/config", &link).expect("symlink");
    let r = download(&s.url, &link, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        std::fs::symlink_metadata(&link)
            .expect("lstat")
            .file_type()
            .is_symlink(),
        "the link was replaced"
    );
    assert_eq!(
        std::fs::read_to_string(&target).expect("read"),
        "through the link"
    );
    assert_eq!(mode(&target), 0o640);
    assert_eq!(listing(&real), ["config"]);
    // A link to a file not yet there: the file is created where it points.
    let dangling = dir.path().join("later");
    symlink("real/later", &dangling).expect("symlink");
    let s = Server::start(vec![reply(200).body("made")]);
    let r = download(&s.url, &dangling, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        std::fs::read_to_string(real.join("later")).expect("read"),
        "made"
    );
}

// ---- nothing left behind -----------------------------------------------------

/// The descriptor `pid` holds on a file in `dir` (its unnamed temporary
/// file), found through /proc, and that file's mode.
fn temporary_in(pid: i32, dir: &Path) -> Option<u32> {
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?;
    for fd in fds.flatten() {
        // Not the directory itself, which retry holds open too.
        if let Ok(to) = std::fs::read_link(fd.path())
            && to.starts_with(dir)
            && to != dir
        {
            return std::fs::metadata(fd.path()).ok().map(|m| m.mode() & 0o7777);
        }
    }
    None
}

#[test]
fn a_download_killed_mid_way_leaves_nothing_and_was_private() {
    let s = Server::start(vec![
        reply(200)
            .body(&"x".repeat(100_000))
            .stall_after(40_000, Duration::from_secs(20)),
    ]);
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("big");
    std::fs::write(&file, "previous").expect("write");
    std::fs::set_permissions(&file, PermissionsExt::from_mode(0o644)).expect("chmod");
    let running = download_spawned(&s.url, &file);
    assert_eq!(s.hits_at_least(1), 1);
    let pid = running.pid().as_raw();
    // The body is being written to a file that has no name, readable by
    // nobody else.
    let until = Instant::now() + Duration::from_secs(10);
    let mut seen = None;
    while seen.is_none() && Instant::now() < until {
        seen = temporary_in(pid, dir.path());
        thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(seen, Some(0o600), "the temporary file's mode");
    assert_eq!(listing(dir.path()), ["big"]);
    running.signal(nix::sys::signal::Signal::SIGKILL);
    let _ = running.wait_status();
    assert_eq!(listing(dir.path()), ["big"]);
    assert_eq!(std::fs::read_to_string(&file).expect("read"), "previous");
}

#[test]
fn output_errors_name_the_target_only() {
    let s = Server::start(vec![reply(200).body("x")]);
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("out");
    let r = download(&s.url, &file, &["-v"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        !r.stderr.contains(".tmp") && !r.stderr.contains(".part"),
        "{}",
        r.stderr
    );
}

/// `-o DIR/` (a trailing slash) names a directory, as the shell and curl
/// read it: a usage error, whether DIR exists or not, and never a file
/// written at DIR itself (or over a file there).
#[test]
fn an_output_ending_in_a_slash_is_refused() {
    let s = Server::start(vec![reply(200).body("x")]);
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("plain"), "previous").expect("write");
    for name in ["new/", "new/.", "plain/"] {
        let path = format!("{}/{name}", dir.path().display());
        let r = retry(&["--http", &s.url, "-o", &path]);
        assert_eq!(r.code, 2, "{name}: {}", r.stderr);
        assert!(
            r.stderr.contains("--output") && r.stderr.lines().count() == 1,
            "{name}: {}",
            r.stderr
        );
        assert_eq!(listing(dir.path()), ["plain"], "{name}");
    }
    assert_eq!(
        std::fs::read_to_string(dir.path().join("plain")).expect("read"),
        "previous"
    );
    assert_eq!(s.hits(), 0);
}

// ---- a directory others can write to (as /tmp) -------------------------------

use crate::util::{NOBODY, Sticky, as_nobody, as_nobody_command, plays_a_second_user};

#[test]
fn an_output_file_another_user_made_in_a_sticky_directory_stays_unwritten() {
    if !plays_a_second_user() {
        return;
    }
    let s = Server::start(vec![reply(200).body("#!/bin/sh\necho root's script\n")]);
    let tmp = Sticky::new();
    let file = tmp.join("install.sh");
    as_nobody(&format!("touch '{0}' && chmod 666 '{0}'", file.display()));
    let r = download(&s.url, &file, &[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains(&format!("is another user's file (uid {NOBODY})")),
        "{}",
        r.stderr
    );
    // Nothing was asked for, and the file is as its owner left it.
    assert_eq!(s.hits(), 0);
    let meta = std::fs::metadata(&file).expect("stat");
    assert_eq!((meta.uid(), meta.len()), (NOBODY, 0));
    // A file of the caller's own there is replaced as anywhere.
    let mine = tmp.join("mine.sh");
    std::fs::write(&mine, "old").expect("write");
    let r = download(&s.url, &mine, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(read_text(&mine).contains("root's script"));
}

fn read_text(path: &Path) -> String {
    std::fs::read_to_string(path).expect("read")
}

#[test]
fn an_output_fifo_another_user_planted_hands_them_nothing() {
    if !plays_a_second_user() {
        return;
    }
    let s = Server::start(vec![reply(200).body("secret configuration")]);
    let tmp = Sticky::new();
    let fifo = tmp.join("secret.conf");
    let got = tmp.join("got");
    as_nobody(&format!("mkfifo -m 622 '{}'", fifo.display()));
    // Their reader waits on the FIFO.
    let mut reader = as_nobody_command(&format!(
        "exec cat '{}' > '{}'",
        fifo.display(),
        got.display()
    ))
    .spawn()
    .expect("reader");
    crate::util::wait_for_file(&got, Duration::from_secs(10));
    let r = download(&s.url, &fifo, &[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains(&format!("is another user's FIFO (uid {NOBODY})")),
        "{}",
        r.stderr
    );
    assert_eq!(s.hits(), 0);
    let _ = reader.kill();
    let _ = reader.wait();
    assert_eq!(read_text(&got), "");
}

#[test]
fn an_output_fifo_nobody_reads_fails_at_once_instead_of_hanging() {
    let s = Server::start(vec![reply(200).body("x")]);
    let dir = tempfile::tempdir().expect("tempdir");
    let fifo = dir.path().join("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).expect("mkfifo");
    let r = download(&s.url, &fifo, &["--max-time", "2s"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("is a FIFO that nobody reads"),
        "{}",
        r.stderr
    );
    assert!(r.took < Duration::from_secs(5), "{:?}", r.took);
    assert_eq!(s.hits(), 0);
}

// ---- resuming ------------------------------------------------------------------

fn range_of(seen: &Seen) -> Option<u64> {
    seen.header("Range")?
        .strip_prefix("bytes=")?
        .strip_suffix('-')?
        .parse()
        .ok()
}

#[test]
fn a_download_cut_several_times_is_resumed_and_whole() {
    let body = content(300_000);
    let tag = Some("\"v1\"");
    let s = Server::start(vec![
        reply(200)
            .resource(&body, tag, true)
            .stall_after(70_000, Duration::ZERO),
        reply(200)
            .resource(&body, tag, true)
            .stall_after(90_000, Duration::ZERO),
        reply(200)
            .resource(&body, tag, true)
            .stall_after(50_000, Duration::ZERO),
        reply(200).resource(&body, tag, true),
    ]);
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("download");
    let r = download(&s.url, &file, &["-n", "6", "-v"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(std::fs::read(&file).expect("read"), *body);
    let seen = s.seen();
    assert_eq!(seen.len(), 4, "{}", r.stderr);
    assert_eq!(range_of(&seen[0]), None);
    let ranges: Vec<u64> = seen[1..].iter().filter_map(range_of).collect();
    assert_eq!(ranges, [70_000, 160_000, 210_000], "{}", r.stderr);
    assert!(
        seen[1..]
            .iter()
            .all(|x| x.header("If-Range") == Some("\"v1\""))
    );
    assert!(r.stderr.contains("from byte 70000"), "{}", r.stderr);
    assert_eq!(listing(dir.path()), ["download"]);
}

#[test]
fn a_resumed_download_is_logged_as_the_206_the_server_sent() {
    let body = content(200_000);
    let tag = Some("\"v1\"");
    let cut_then_whole = || {
        Server::start(vec![
            reply(200)
                .resource(&body, tag, true)
                .stall_after(70_000, Duration::ZERO),
            reply(200).resource(&body, tag, true),
        ])
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("download");
    let s = cut_then_whole();
    let r = download(&s.url, &file, &["-v"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(range_of(&s.seen()[1]), Some(70_000));
    assert!(r.stderr.contains("succeeded (HTTP 206)"), "{}", r.stderr);
    assert!(!r.stderr.contains("HTTP 200"), "{}", r.stderr);
    assert_eq!(std::fs::read(&file).expect("read"), *body);
    // An --expect without 206 judges, and shows, the status it continues.
    std::fs::remove_file(&file).expect("rm");
    let s = cut_then_whole();
    let r = download(&s.url, &file, &["--expect", "200", "-v"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("succeeded (HTTP 200)"), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("HTTP 206: the rest of the HTTP 200 body, from byte 70000"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_whole_answer_to_a_range_starts_over() {
    let body = content(200_000);
    let s = Server::start(vec![
        reply(200)
            .resource(&body, Some("\"v1\""), true)
            .stall_after(80_000, Duration::ZERO),
        // This server (a replica, say) ignores ranges: a whole 200.
        reply(200).resource(&body, Some("\"v1\""), false),
    ]);
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("download");
    let r = download(&s.url, &file, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(s.seen().len(), 2);
    assert_eq!(range_of(&s.seen()[1]), Some(80_000));
    assert_eq!(std::fs::read(&file).expect("read"), *body);
}

#[test]
fn a_changed_etag_starts_over_with_the_new_body() {
    let old = content(200_000);
    let new: Arc<Vec<u8>> = Arc::new(old.iter().map(|b| b.wrapping_add(1)).collect());
    let s = Server::start(vec![
        reply(200)
            .resource(&old, Some("\"v1\""), true)
            .stall_after(80_000, Duration::ZERO),
        reply(200).resource(&new, Some("\"v2\""), true),
    ]);
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("download");
    let r = download(&s.url, &file, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let seen = s.seen();
    assert_eq!(seen[1].header("If-Range"), Some("\"v1\""));
    assert_eq!(std::fs::read(&file).expect("read"), *new);
}

#[test]
fn without_a_strong_validator_a_cut_download_starts_over() {
    let body = content(100_000);
    for (tag, ranges) in [
        (None, true),
        (Some("W/\"weak\""), true),
        (Some("\"v1\""), false),
    ] {
        let s = Server::start(vec![
            reply(200)
                .resource(&body, tag, ranges)
                .stall_after(30_000, Duration::ZERO),
            reply(200).resource(&body, tag, ranges),
        ]);
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("download");
        let r = download(&s.url, &file, &[]);
        assert_eq!(r.code, 0, "{tag:?} {ranges}: {}", r.stderr);
        assert_eq!(s.seen()[1].header("Range"), None, "{tag:?} {ranges}");
        assert_eq!(
            std::fs::read(&file).expect("read"),
            *body,
            "{tag:?} {ranges}"
        );
    }
}

#[test]
fn a_download_that_timed_out_is_resumed() {
    let body = content(200_000);
    let s = Server::start(vec![
        reply(200)
            .resource(&body, Some("\"v1\""), true)
            .stall_after(60_000, Duration::from_secs(10)),
        reply(200).resource(&body, Some("\"v1\""), true),
    ]);
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("download");
    let r = download(&s.url, &file, &["--idle-timeout", "500ms"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(range_of(&s.seen()[1]), Some(60_000));
    assert_eq!(std::fs::read(&file).expect("read"), *body);
}

#[test]
fn a_resumed_answer_from_another_version_starts_over_instead_of_mixing_them() {
    // A proxy that ignores If-Range: the first answer is v1, cut at 1000 of
    // 2000 bytes; the resumed one is the second half of v2.
    let v1 = content(2000);
    let v2: Arc<Vec<u8>> = Arc::new(v1.iter().map(|b| b.wrapping_add(1)).collect());
    let mut half_of_v2 =
        b"HTTP/1.1 206 Partial Content\r\nETag: \"v2\"\r\nAccept-Ranges: bytes\r\n\
Content-Range: bytes 1000-1999/2000\r\nContent-Length: 1000\r\nConnection: close\r\n\r\n"
            .to_vec();
    half_of_v2.extend_from_slice(&v2[1000..]);
    // The same tag, but another complete length: no more the same either.
    let mut longer = b"HTTP/1.1 206 Partial Content\r\nETag: \"v1\"\r\nAccept-Ranges: bytes\r\n\
Content-Range: bytes 1000-2999/3000\r\nContent-Length: 2000\r\nConnection: close\r\n\r\n"
        .to_vec();
    longer.extend_from_slice(&content(2000));
    for (name, second) in [("another tag", half_of_v2), ("another length", longer)] {
        let s = Server::start(vec![
            reply(200)
                .resource(&v1, Some("\"v1\""), true)
                .stall_after(1000, Duration::ZERO),
            raw(&second),
            reply(200).resource(&v2, Some("\"v2\""), true),
        ]);
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("download");
        let r = download(&s.url, &file, &["-v"]);
        assert_eq!(r.code, 0, "{name}: {}", r.stderr);
        let seen = s.seen();
        assert_eq!(range_of(&seen[1]), Some(1000), "{name}");
        // The third request asks for the whole body again.
        assert_eq!(seen.len(), 3, "{name}: {}", r.stderr);
        assert_eq!(seen[2].header("Range"), None, "{name}");
        assert!(r.stderr.contains("another version"), "{name}: {}", r.stderr);
        assert_eq!(std::fs::read(&file).expect("read"), *v2, "{name}");
    }
}
