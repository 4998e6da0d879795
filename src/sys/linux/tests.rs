//! Tests of the Linux calls that read /proc: the lock table, process
//! states, group counts and the umask.

use std::time::Duration;

use super::*;

const LOCKS: &str = "\
1: FLOCK  ADVISORY  WRITE 9740 fe:00:10010818 0 EOF
1: -> FLOCK  ADVISORY  WRITE 9747 fe:00:10010818 0 EOF
1:  -> FLOCK  ADVISORY  WRITE 9749 fe:00:10010818 0 EOF
2: FLOCK  ADVISORY  WRITE 378 fe:00:5554544 0 EOF
3: POSIX  ADVISORY  READ 27848 08:01:10010818 0 EOF
";

#[test]
fn the_holder_and_the_waiters_are_read_from_proc_locks() {
    let id = LockId {
        major: 0xfe,
        minor: 0,
        ino: 10_010_818,
    };
    assert_eq!(
        parse_locks(LOCKS, id),
        Seen {
            holder: Some(9740),
            waiting: 2
        }
    );
    // Another device's lock on the same inode number is not this one.
    let other = LockId {
        major: 8,
        minor: 1,
        ..id
    };
    assert_eq!(
        parse_locks(LOCKS, other),
        Seen {
            holder: Some(27848),
            waiting: 0
        }
    );
    // On overlayfs the device differs: the inode alone decides.
    let overlay = LockId {
        major: 0,
        minor: 0x2f,
        ino: 5_554_544,
    };
    assert_eq!(parse_locks(LOCKS, overlay).holder, Some(378));
    assert_eq!(parse_locks("", id), Seen::default());
}

#[test]
fn a_stopped_process_is_seen_as_stopped() {
    let mut child = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .expect("sleep");
    let pid = child.id() as i32;
    assert!(!is_stopped(pid));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGSTOP,
    )
    .expect("stop");
    let until = std::time::Instant::now() + Duration::from_secs(10);
    while !is_stopped(pid) {
        assert!(std::time::Instant::now() < until, "never seen stopped");
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn the_umask_line_is_read_from_a_status_text() {
    let status = "Name:\tretry\nUmask:\t0027\nState:\tR (running)\n";
    assert_eq!(umask_in_status(status), Some(0o027));
    assert_eq!(umask_in_status("Name:\tretry\n"), None);
    assert_eq!(umask_in_status("Umask:\tzz\n"), None);
}

#[test]
fn a_pidless_lock_table_line_names_no_holder() {
    // A lock held by a process in another PID namespace shows pid -1.
    let id = LockId {
        major: 0xfe,
        minor: 0,
        ino: 7,
    };
    let text = "1: FLOCK  ADVISORY  WRITE -1 fe:00:7 0 EOF\n";
    assert_eq!(parse_locks(text, id), Seen::default());
}
