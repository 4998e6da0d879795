//! `--dry-run`: the schedule a policy produces, pinned by seed, in every
//! duration form.

use crate::util::{path_str, retry, scratch};

#[test]
fn dry_run_prints_the_schedule_and_runs_nothing() {
    let dir = scratch();
    let marker = dir.path().join("ran");
    let args = [
        "--dry-run",
        "--max",
        "4",
        "--jitter",
        "none",
        "--base",
        "1s",
        "--seed",
        "7",
        "--",
        "touch",
    ];
    let mut all: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    all.push(path_str(&marker));
    let out = retry(&all).run();
    out.expect_code(0);
    assert!(out.stderr.is_empty());
    assert!(!marker.exists());
    let text = out.stdout_text();
    assert_eq!(
        rows(&text),
        vec![
            vec!["1", "2", "1s", "1s", "1s"],
            vec!["2", "3", "2s", "2s", "3s"],
            vec!["3", "4", "4s", "4s", "7s"],
        ],
        "{text}"
    );
    assert!(text.contains("worst case: 7s"), "{text}");
    assert!(text.contains("seed 7"));
}

#[test]
fn dry_run_with_a_seed_is_reproducible() {
    let run = |seed: &str| {
        retry(["--dry-run", "--max", "8", "--seed", seed])
            .run()
            .stdout_text()
    };
    assert_eq!(run("5"), run("5"));
    assert_ne!(run("5"), run("6"));
}

/// The rows of a `--dry-run` schedule table: the lines that start with a
/// digit, cut into cells at double spaces.
fn rows(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        .map(|l| {
            l.split("  ")
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect()
        })
        .collect()
}

/// Cell `n` of each row of the schedule `retry --dry-run ARGS...` prints.
fn column(args: &[&str], n: usize) -> Vec<String> {
    let mut all = vec!["--dry-run"];
    all.extend_from_slice(args);
    let out = retry(&all).run();
    out.expect_code(0);
    rows(&out.stdout_text())
        .into_iter()
        .filter_map(|row| row.get(n).cloned())
        .collect()
}

/// The ceilings `--dry-run --jitter none` shows for these flags.
fn ceilings(args: &[&str]) -> Vec<String> {
    column(&[&["--jitter", "none"], args].concat(), 2)
}

#[test]
fn durations_in_every_form_sleep_and_timeout_accept() {
    for (base, want) in [
        ("2", "2s"),
        ("0.25", "250ms"),
        (".5", "500ms"),
        ("5.", "5s"),
        ("1e-3", "1ms"),
        ("2.5e1", "25s"),
        ("2.5E-1s", "250ms"),
        ("0.0125m", "750ms"),
        (".01h", "36s"),
        ("0.000011574d", "1s"),
        ("0.12345678901234567890123", "123ms"),
        ("250ms", "250ms"),
        ("1m 30s", "1m 30s"),
    ] {
        assert_eq!(
            ceilings(&["--max", "2", "--cap", "1h", "--base", base]),
            vec![want.to_string()],
            "--base {base}"
        );
    }
}

#[test]
fn a_base_above_the_default_cap_raises_it() {
    assert_eq!(
        ceilings(&["--max", "3", "--base", "1m"]),
        vec!["1m".to_string(), "1m".to_string()]
    );
    assert_eq!(
        ceilings(&["--max", "3", "--base", "20s"]),
        vec!["20s".to_string(), "30s".to_string()]
    );
}

#[test]
fn decorrelated_dry_run_says_growth_settings_do_not_apply() {
    let out = retry(["--dry-run", "--jitter", "decorrelated", "--seed", "1"]).run();
    out.expect_code(0);
    let text = out.stdout_text();
    assert!(text.contains("growth settings do not apply"), "{text}");
    assert!(!text.contains("exponential"), "{text}");
}

/// A seed means the same schedule in every version and on every platform.
/// These are the delays (rounded to ms by the table) of the pinned stream.
#[test]
fn seeded_dry_runs_are_pinned() {
    let delays = |args: &[&str]| column(&[&["--max", "4"], args].concat(), 3);
    assert_eq!(delays(&["--seed", "42"]), ["372ms", "1s 714ms", "3s 925ms"]);
    assert_eq!(
        delays(&["--seed", "42", "-j", "decorrelated"]),
        ["1s 745ms", "4s 629ms", "13s 646ms"]
    );
    assert_eq!(
        delays(&["--seed", "42", "-j", "additive"]),
        ["1s 372ms", "2s 857ms", "4s 981ms"]
    );
    assert_eq!(
        delays(&["-j", "equal", "--seed", "9007199254740991"]),
        ["731ms", "1s 932ms", "3s 73ms"]
    );
}

#[test]
fn os_drawn_seeds_survive_a_json_reader() {
    for _ in 0..8 {
        let out = retry(["--log-format", "json", "--", "true"]).run();
        out.expect_code(0);
        let start = &out.json()[0];
        let seed = start["seed"].as_u64().expect("seed is a whole number");
        assert!(seed < 1 << 53, "{seed}");
        // What a double-based reader sees is the seed itself.
        assert_eq!(seed as f64 as u64, seed);
    }
}
