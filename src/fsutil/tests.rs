//! Tests of the safe file primitives, on real files in private temporary
//! directories; the cases about other users' files need root.

use super::*;
use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};

// The integration tests' precondition switch: strict runs fail where root
// is missing, others count the skip.
#[allow(dead_code)]
#[path = "../../tests/it/need.rs"]
mod need;

#[track_caller]
fn root() -> bool {
    need::root("the test changes file owners")
}

/// A user id that is not the caller's.
const OTHER: u32 = 65534;

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn a_temporary_file_appears_only_under_its_final_name() {
    let t = tmp();
    let dir = Dir::open(t.path()).unwrap();
    let mut f = dir.temp_file(OsStr::new("out"), 0o600).unwrap();
    f.file_mut().write_all(b"whole").unwrap();
    let meanwhile = names(t.path());
    if cfg!(feature = "portable") {
        // No unnamed files there: a temporary name of its own meanwhile,
        // never the final one.
        assert_eq!(meanwhile.len(), 1, "{meanwhile:?}");
        assert_ne!(meanwhile[0], "out");
    } else {
        assert!(meanwhile.is_empty(), "visible while written");
    }
    f.persist(OsStr::new("out"), Durability::Sync).unwrap();
    assert_eq!(names(t.path()), ["out"]);
    assert_eq!(std::fs::read(t.path().join("out")).unwrap(), b"whole");
}

#[test]
fn a_dropped_temporary_file_leaves_nothing() {
    let t = tmp();
    let dir = Dir::open(t.path()).unwrap();
    let mut f = dir.temp_file(OsStr::new("out"), 0o600).unwrap();
    f.file_mut().write_all(b"half").unwrap();
    drop(f);
    assert!(names(t.path()).is_empty());
    dir.probe_writable().unwrap();
    assert!(names(t.path()).is_empty());
}

#[test]
fn persist_replaces_a_planted_link_instead_of_writing_through_it() {
    let t = tmp();
    let victim = t.path().join("victim");
    std::fs::write(&victim, b"precious").unwrap();
    symlink(&victim, t.path().join("state.json")).unwrap();
    let dir = Dir::open(t.path()).unwrap();
    let mut f = dir.temp_file(OsStr::new("state.json"), 0o600).unwrap();
    f.file_mut().write_all(b"new").unwrap();
    f.persist(OsStr::new("state.json"), Durability::Fast)
        .unwrap();
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    let meta = std::fs::symlink_metadata(t.path().join("state.json")).unwrap();
    assert!(meta.file_type().is_file());
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
}

#[test]
fn open_at_refuses_a_link() {
    let t = tmp();
    std::fs::write(t.path().join("target"), b"x").unwrap();
    symlink("target", t.path().join("lock")).unwrap();
    symlink("missing", t.path().join("dangling")).unwrap();
    let dir = Dir::open(t.path()).unwrap();
    let e = dir
        .open_at(OsStr::new("lock"), OFlag::O_RDWR | OFlag::O_CREAT, 0o600)
        .unwrap_err();
    assert_eq!(e.raw_os_error(), Some(Errno::ELOOP as i32));
    let e = dir
        .open_at(
            OsStr::new("dangling"),
            OFlag::O_RDWR | OFlag::O_CREAT,
            0o600,
        )
        .unwrap_err();
    assert_eq!(e.raw_os_error(), Some(Errno::ELOOP as i32));
    assert!(
        !t.path().join("missing").exists(),
        "created through a dangling link"
    );
    assert!(dir.read_at(OsStr::new("lock")).is_err());
    assert!(dir.read_at(OsStr::new("absent")).unwrap().is_none());
}

#[test]
fn the_named_fallback_is_renamed_into_place_or_removed() {
    let t = tmp();
    let dir = Dir::open(t.path()).unwrap();
    let mode = Mode::from_bits_truncate(0o600);
    let mut f = dir.named_temp_file(OsStr::new("out"), mode).unwrap();
    f.file_mut().write_all(b"data").unwrap();
    assert_eq!(names(t.path()).len(), 1);
    f.persist(OsStr::new("out"), Durability::Fast).unwrap();
    assert_eq!(names(t.path()), ["out"]);
    drop(dir.named_temp_file(OsStr::new("out"), mode).unwrap());
    assert_eq!(names(t.path()), ["out"]);
}

#[test]
fn a_scratch_file_has_no_name_either_way() {
    let t = tmp();
    let dir = Dir::open(t.path()).unwrap();
    let mode = Mode::from_bits_truncate(0o600);
    let named = dir.named_temp_file(OsStr::new("spool"), mode).unwrap();
    assert_eq!(names(t.path()).len(), 1);
    let mut f = named.into_unnamed().unwrap();
    assert!(names(t.path()).is_empty());
    let mut g = dir.scratch_file(0o600).unwrap();
    assert!(names(t.path()).is_empty());
    for file in [&mut f, &mut g] {
        file.write_all(b"kept").unwrap();
        file.rewind().unwrap();
        let mut back = String::new();
        file.read_to_string(&mut back).unwrap();
        assert_eq!(back, "kept");
        assert_eq!(file.metadata().unwrap().mode() & 0o777, 0o600);
    }
}

#[test]
fn the_fallback_name_is_unique_and_removed() {
    let a = temp_name(OsStr::new("x"));
    let b = temp_name(OsStr::new("x"));
    assert_ne!(a, b);
    assert!(a.to_string_lossy().starts_with(".x."));
    let long = "n".repeat(300);
    assert!(temp_name(OsStr::new(&long)).len() < 255);
}

#[test]
fn a_private_directory_is_created_0700_and_a_loose_one_refused() {
    let t = tmp();
    let p = t.path().join("a/b/retry");
    let d = Dir::create_private(&p).unwrap();
    assert_eq!(d.stat().unwrap().st_mode & 0o777, 0o700);
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o777)).unwrap();
    match Dir::create_private(&p) {
        Err(PrivateDirError::Untrusted(u)) => assert!(u.why.contains("every user"), "{u}"),
        other => panic!("{other:?}"),
    }
    // A sticky, world-writable directory is fine for an output only.
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let d = Dir::open(&p).unwrap();
    assert!(d.check(Rule::Private).is_err());
    assert!(d.check(Rule::Output).is_ok());
}

#[test]
fn a_link_in_place_of_the_private_directory_is_refused() {
    let t = tmp();
    std::fs::create_dir(t.path().join("elsewhere")).unwrap();
    symlink("elsewhere", t.path().join("retry")).unwrap();
    match Dir::create_private(&t.path().join("retry")) {
        Err(PrivateDirError::Untrusted(u)) => assert!(u.why.contains("symbolic link"), "{u}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_directory_of_another_user_is_refused() {
    if !root() {
        return;
    }
    let t = tmp();
    let p = t.path().join("retry");
    std::fs::create_dir(&p).unwrap();
    std::os::unix::fs::chown(&p, Some(OTHER), None).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o700)).unwrap();
    match Dir::create_private(&p) {
        Err(PrivateDirError::Untrusted(u)) => assert!(u.why.contains("another user"), "{u}"),
        other => panic!("{other:?}"),
    }
    let d = Dir::open(&p).unwrap();
    assert!(d.check(Rule::Output).is_err());
    // Root's own directories are trusted for outputs.
    assert!(Dir::open(t.path()).unwrap().check(Rule::Output).is_ok());
}

#[test]
fn resolve_follows_the_caller_s_link_and_refuses_another_user_s() {
    let t = tmp();
    let real = t.path().join("real");
    std::fs::create_dir(&real).unwrap();
    symlink("real/file", t.path().join("mine")).unwrap();
    let target = resolve(&t.path().join("mine"), Rule::Output).unwrap();
    assert_eq!(target.name, "file");
    assert_eq!(target.path(), t.path().join("real/file"));
    assert!(target.existing.is_none());
    if !root() {
        return;
    }
    // The same link made by another user in a directory anyone can
    // write to (as /tmp) is not followed.
    let shared = t.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let link = shared.join("out");
    symlink(t.path().join("real/file"), &link).unwrap();
    nix::unistd::fchownat(
        AT_FDCWD,
        &link,
        Some(Uid::from_raw(OTHER)),
        None,
        AtFlags::AT_SYMLINK_NOFOLLOW,
    )
    .unwrap();
    match resolve(&link, Rule::Output) {
        Err(ResolveError::Untrusted(u)) => assert!(u.why.contains("another user"), "{u}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn resolve_reports_an_existing_file_and_refuses_a_directory_or_a_loop() {
    let t = tmp();
    std::fs::write(t.path().join("f"), b"x").unwrap();
    let target = resolve(&t.path().join("f"), Rule::Output).unwrap();
    assert_eq!(target.existing.unwrap().st_size, 1);
    assert!(resolve(t.path(), Rule::Output).is_err());
    symlink("b", t.path().join("a")).unwrap();
    symlink("a", t.path().join("b")).unwrap();
    assert!(resolve(&t.path().join("a"), Rule::Output).is_err());
}

#[test]
fn mode_and_owner_are_set_on_the_temporary_file() {
    let t = tmp();
    let dir = Dir::open(t.path()).unwrap();
    let f = dir.temp_file(OsStr::new("tok"), 0o600).unwrap();
    let uid = root().then_some(OTHER);
    f.set_mode_and_owner(0o640, uid, None).unwrap();
    f.persist(OsStr::new("tok"), Durability::Fast).unwrap();
    let meta = std::fs::metadata(t.path().join("tok")).unwrap();
    assert_eq!(meta.permissions().mode() & 0o7777, 0o640);
    if let Some(uid) = uid {
        assert_eq!(meta.uid(), uid);
    }
}

#[test]
fn append_creates_then_appends() {
    let t = tmp();
    let p = t.path().join("log");
    for line in [b"a\n", b"b\n"] {
        let mut f = open_append(&p, Rule::Output).unwrap();
        f.write_all(line).unwrap();
    }
    let mut f = File::open(&p).unwrap();
    let mut s = String::new();
    f.rewind().unwrap();
    f.read_to_string(&mut s).unwrap();
    assert_eq!(s, "a\nb\n");
}

#[test]
fn the_umask_is_read_from_the_process_status() {
    let Some(before) = crate::sys::umask_from_status() else {
        // Not reported by this system: set and put back, twice the same.
        let first = umask();
        assert_eq!(umask(), first);
        assert_eq!(new_file_mode(), 0o666 & !first);
        return;
    };
    // Reading it changes nothing: the kernel reports the same value after.
    let reported = || crate::sys::umask_from_status().unwrap();
    assert_eq!(umask(), before);
    assert_eq!(new_file_mode(), 0o666 & !before);
    assert_eq!(reported(), before);
}

#[test]
fn an_ordinary_directory_has_room() {
    // A full or read-only file system is tried end to end, on a tmpfs of
    // its own (tests/it/state/failing.rs).
    let t = tmp();
    Dir::open(t.path()).unwrap().check_room().unwrap();
    assert!(names(t.path()).is_empty());
}

/// A directory anyone may write to, sticky, as /tmp; inside `t`.
fn sticky(t: &tempfile::TempDir) -> PathBuf {
    let shared = t.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    shared
}

#[test]
fn another_user_s_file_or_fifo_in_a_sticky_directory_is_refused() {
    if !root() {
        return;
    }
    let t = tmp();
    let shared = sticky(&t);
    let file = shared.join("install.sh");
    std::fs::write(&file, b"").unwrap();
    std::os::unix::fs::chown(&file, Some(OTHER), None).unwrap();
    let fifo = shared.join("secret.conf");
    nix::unistd::mkfifo(&fifo, Mode::from_bits_truncate(0o622)).unwrap();
    std::os::unix::fs::chown(&fifo, Some(OTHER), None).unwrap();
    for (path, kind) in [(&file, "file"), (&fifo, "FIFO")] {
        for result in [
            resolve(path, Rule::Output).map(drop),
            open_destination(path, Rule::Output).map(drop),
            open_append(path, Rule::Output).map(drop),
        ] {
            match result {
                Err(ResolveError::Untrusted(u)) => assert!(
                    u.why
                        .contains(&format!("another user's {kind} (uid {OTHER})")),
                    "{u}"
                ),
                other => panic!("{kind}: {other:?}"),
            }
        }
    }
    // The caller's own file there is written as anywhere.
    let mine = shared.join("mine");
    std::fs::write(&mine, b"").unwrap();
    assert!(resolve(&mine, Rule::Output).unwrap().shared);
    // Outside a shared directory another user's file keeps its place (its
    // owner and mode carry over to the new content).
    let theirs = t.path().join("theirs");
    std::fs::write(&theirs, b"").unwrap();
    std::os::unix::fs::chown(&theirs, Some(OTHER), None).unwrap();
    assert!(!resolve(&theirs, Rule::Output).unwrap().shared);
}

#[test]
fn a_fifo_nobody_reads_is_an_error_at_once_and_one_with_a_reader_is_written() {
    let t = tmp();
    let fifo = t.path().join("fifo");
    nix::unistd::mkfifo(&fifo, Mode::from_bits_truncate(0o600)).unwrap();
    let started = std::time::Instant::now();
    for e in [
        open_destination(&fifo, Rule::Output).map(drop).unwrap_err(),
        open_append(&fifo, Rule::Output).map(drop).unwrap_err(),
    ] {
        assert!(e.to_string().contains("nobody reads"), "{e}");
    }
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    // A reader (opened non-blocking, so this test waits for nothing either).
    let reader = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(&fifo)
        .unwrap();
    let Destination::Direct(mut f) = open_destination(&fifo, Rule::Output).unwrap() else {
        panic!("a FIFO is written directly");
    };
    f.write_all(b"body").unwrap();
    let mut got = [0u8; 4];
    (&reader).read_exact(&mut got).unwrap();
    assert_eq!(&got, b"body");
    // Writes wait for a slow reader again, as on stdout.
    let flags = nix::fcntl::fcntl(f.as_fd(), nix::fcntl::FcntlArg::F_GETFL).unwrap();
    assert_eq!(flags & nix::libc::O_NONBLOCK, 0);
}

#[test]
// There is no /proc on the systems the portable layer is for: nothing to
// assert in its stead.
#[cfg_attr(feature = "portable", ignore = "a descriptor link of Linux's /proc")]
fn dev_stdout_on_a_pipe_is_written_through_the_descriptor() {
    let (read, write) = nix::unistd::pipe().unwrap();
    let fd = write.as_raw_fd();
    let path = PathBuf::from(format!("/proc/self/fd/{fd}"));
    let Destination::Direct(mut f) = open_destination(&path, Rule::Output).unwrap() else {
        panic!("a pipe is written directly");
    };
    f.write_all(b"through").unwrap();
    drop(f);
    drop(write);
    let mut got = String::new();
    File::from(read).read_to_string(&mut got).unwrap();
    assert_eq!(got, "through");
}

#[test]
fn no_more_of_a_file_is_read_than_asked() {
    let t = tmp();
    let f = t.path().join("x.prom");
    // 3 GB, sparse: reading it whole would take seconds and gigabytes.
    File::create(&f).unwrap().set_len(3 << 30).unwrap();
    let dir = Dir::open(t.path()).unwrap();
    let bytes = dir
        .read_at_most(OsStr::new("x.prom"), 4096)
        .unwrap()
        .unwrap();
    assert_eq!(bytes.len(), 4096);
    assert_eq!(dir.read_at_most(OsStr::new("none"), 1).unwrap(), None);
    nix::unistd::mkfifo(&t.path().join("p"), Mode::from_bits_truncate(0o600)).unwrap();
    assert!(dir.read_at_most(OsStr::new("p"), 1).is_err());
}

#[test]
fn a_directory_writable_through_an_acl_is_refused() {
    let t = tmp();
    let d = t.path().join("acl");
    std::fs::create_dir(&d).unwrap();
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
    let granted = std::process::Command::new("setfacl")
        .args(["-m", &format!("u:{OTHER}:rwx")])
        .arg(&d)
        .status();
    match granted {
        Ok(s) if s.success() => {}
        // scripts/test.sh installs acl; a file system without ACLs cannot
        // hold the case at all.
        other => panic!("setfacl (Debian's acl) failed: {other:?}"),
    }
    let dir = Dir::open(&d).unwrap();
    if cfg!(feature = "portable") {
        // No ACL is read there: the mode bits alone (0755) decide.
        assert!(dir.check(Rule::Output).is_ok());
        return;
    }
    let u = dir.check(Rule::Output).unwrap_err();
    assert!(
        u.why.contains(&format!("user {OTHER} through an ACL")),
        "{u}"
    );
    assert!(Dir::create_private(&d).is_err());
    // A mask without write takes it away again.
    assert!(
        std::process::Command::new("setfacl")
            .args(["-m", "m::rx"])
            .arg(&d)
            .status()
            .unwrap()
            .success()
    );
    assert!(Dir::open(&d).unwrap().check(Rule::Output).is_ok());
}

#[test]
fn a_long_acl_is_read_whole() {
    let t = tmp();
    // 40 named users who may only read, and one more who may write: past
    // what the first read has room for.
    let mut spec: Vec<String> = (2000..2040).map(|u| format!("u:{u}:r-x")).collect();
    spec.push("u:2100:rwx".into());
    let granted = std::process::Command::new("setfacl")
        .args(["-m", &spec.join(",")])
        .arg(t.path())
        .status()
        .expect("setfacl (Debian's acl)");
    assert!(granted.success());
    let checked = Dir::open(t.path()).unwrap().check(Rule::Output);
    if cfg!(feature = "portable") {
        // No ACL is read there: the mode bits alone decide.
        assert!(checked.is_ok());
        return;
    }
    let u = checked.unwrap_err();
    assert!(u.why.contains("user 2100 through an ACL"), "{u}");
}
