//! The precondition switch of `need.rs`, end to end through the real test
//! harness: this test binary runs one of its own tests, which misses its
//! precondition, and that test is a visible, recorded skip, or, in a strict
//! run, a failure.

use std::ffi::OsStr;
use std::process::{Command, Output};

use crate::need;
use crate::util::scratch;

/// Set in the child run: the test then misses its precondition.
const PROBE: &str = "RETRY_TEST_PROBE_MISSING";
const NAME: &str = "skips::the_strict_switch_turns_a_skip_into_a_failure";

#[test]
fn strictness_comes_from_ci_or_the_switch() {
    let s = |v: &'static str| Some(OsStr::new(v));
    for (ci, flag, strict) in [
        (None, None, false),
        (s(""), None, false),
        (s("true"), None, true),
        (s("1"), s(""), true),
        (None, s("1"), true),
        (s("true"), s("0"), false),
        (None, s("0"), false),
        (None, s("yes"), false),
    ] {
        assert_eq!(
            need::strict_from(ci, flag),
            strict,
            "CI={ci:?} switch={flag:?}"
        );
    }
}

/// This test binary running only this test as the probe, with `env`.
fn probe(env: &[(&str, &OsStr)]) -> (Output, String, String) {
    let mut cmd = Command::new(std::env::current_exe().expect("the test binary"));
    cmd.args(["--exact", NAME])
        .env(PROBE, "1")
        .env_remove("CI")
        .env_remove("RETRY_TEST_STRICT")
        .env_remove(need::SKIPS_VAR);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run the test binary");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out, stdout, stderr)
}

#[test]
fn the_strict_switch_turns_a_skip_into_a_failure() {
    if std::env::var_os(PROBE).is_some() {
        let met = need::met(false, "a precondition no machine has");
        assert!(!met, "met a precondition no machine has");
        return;
    }
    let dir = scratch();
    let skips = dir.path().join("skipped");

    // Not strict: the test passes, says so on stderr, and is recorded.
    let (out, stdout, stderr) = probe(&[(need::SKIPS_VAR, skips.as_os_str())]);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("test result: ok. 1 passed"), "{stdout}");
    let line = format!("SKIPPED it::{NAME}: a precondition no machine has");
    assert!(stderr.contains(&line), "{stderr}");
    let recorded = std::fs::read_to_string(&skips).expect("the skip was recorded");
    assert_eq!(
        recorded,
        format!("it::{NAME}\ta precondition no machine has\n")
    );

    // Strict, by the switch or by CI: the same test fails, saying why, and
    // records nothing.
    std::fs::remove_file(&skips).expect("rm");
    for env in [
        [("RETRY_TEST_STRICT", OsStr::new("1"))],
        [("CI", OsStr::new("true"))],
    ] {
        let mut env = env.to_vec();
        env.push((need::SKIPS_VAR, skips.as_os_str()));
        let (out, stdout, stderr) = probe(&env);
        assert_eq!(out.status.code(), Some(101), "{env:?}: {stdout}{stderr}");
        assert!(stdout.contains("1 failed"), "{stdout}");
        assert!(
            stdout.contains("missing in a strict run")
                || stderr.contains("missing in a strict run"),
            "{stdout}{stderr}"
        );
        assert!(!skips.exists(), "a strict run recorded a skip");
    }

    // The switch at 0 wins over CI.
    let (out, stdout, stderr) = probe(&[
        ("CI", OsStr::new("true")),
        ("RETRY_TEST_STRICT", OsStr::new("0")),
    ]);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stderr.contains(&line), "{stderr}");
}
