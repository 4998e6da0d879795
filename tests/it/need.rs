//! What a test needs that not every machine has (root, namespaces, an IPv6
//! loopback, a second loopback address), checked in one place: a test
//! either checks its subject or says, loudly and countably, that it could
//! not.
//!
//! A strict run (`CI` set and not empty, or `RETRY_TEST_STRICT=1`;
//! `RETRY_TEST_STRICT=0` turns it off) fails such a test instead of skipping
//! it. Otherwise a skip is written straight to the process's stderr, which
//! the test harness does not capture, and, when `RETRY_TEST_SKIPS` names a
//! file, appended to it as one line (`crate::test<TAB>what was missing`),
//! which `scripts/test.sh` counts. A missing tool is never a skip: the
//! tests' tools are installed by `scripts/test.sh`, and spawning one that is
//! not there fails the test.
//!
//! The unit tests of `src/` include this file too (`src/fsutil/tests.rs`).

use std::ffi::OsStr;
use std::io::Write;

/// Names the file skips are recorded in (one line per skip).
pub const SKIPS_VAR: &str = "RETRY_TEST_SKIPS";

/// Whether this run is strict, from the values of `CI` and
/// `RETRY_TEST_STRICT`.
pub fn strict_from(ci: Option<&OsStr>, flag: Option<&OsStr>) -> bool {
    match flag.and_then(OsStr::to_str) {
        Some("1") => true,
        Some("0") => false,
        _ => ci.is_some_and(|v| !v.is_empty()),
    }
}

/// Whether this run is strict: a missing precondition fails the test.
pub fn strict() -> bool {
    strict_from(
        std::env::var_os("CI").as_deref(),
        std::env::var_os("RETRY_TEST_STRICT").as_deref(),
    )
}

/// `have`, or else the test is skipped, visibly and counted (false: the
/// caller returns), or, in a strict run, fails here. `what` names what is
/// missing, as in "root (it changes file owners)".
#[track_caller]
pub fn met(have: bool, what: &str) -> bool {
    if have {
        return true;
    }
    assert!(
        !strict(),
        "missing in a strict run (CI or RETRY_TEST_STRICT=1): {what}"
    );
    let test = std::thread::current()
        .name()
        .unwrap_or("an unnamed test")
        .to_string();
    let test = format!("{}::{test}", env!("CARGO_CRATE_NAME"));
    let what = what.trim().replace(['\n', '\t'], " ");
    // Straight to the descriptor: eprintln! would be captured, and a
    // passing test's captured output is never shown.
    let _ = std::io::stderr().write_all(format!("SKIPPED {test}: {what}\n").as_bytes());
    if let Some(file) = std::env::var_os(SKIPS_VAR).filter(|f| !f.is_empty()) {
        let recorded = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&file)
            .and_then(|mut f| f.write_all(format!("{test}\t{what}\n").as_bytes()));
        if let Err(e) = recorded {
            panic!(
                "cannot record the skip in {SKIPS_VAR}={}: {e}",
                file.to_string_lossy()
            );
        }
    }
    false
}

/// Root, which changes file owners and plays other users; `why` says what
/// the test does with it.
#[track_caller]
pub fn root(why: &str) -> bool {
    met(
        nix::unistd::Uid::effective().is_root(),
        &format!("root ({why})"),
    )
}

/// `unshare ARGS` succeeds here (namespaces need root or user namespaces).
/// A missing `unshare` fails the test: scripts/test.sh installs it.
#[track_caller]
pub fn unshare(args: &[&str], what: &str) -> bool {
    let out = std::process::Command::new("unshare")
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot start unshare (util-linux): {e}"));
    met(
        out.status.success(),
        &format!(
            "{what}: unshare {} failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ),
    )
}

/// A TCP listener on `addr` (as "[::1]:0" or "127.0.0.2:0"), or a skip
/// saying that this machine has no such address.
#[track_caller]
pub fn listener(addr: &str) -> Option<std::net::TcpListener> {
    match std::net::TcpListener::bind(addr) {
        Ok(l) => Some(l),
        Err(e) => {
            met(false, &format!("a listener on {addr} ({e})"));
            None
        }
    }
}
