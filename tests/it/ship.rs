//! What makes `retry` ship as a finished tool: generated completions and man
//! page kept fresh, help text pinned, GitHub Actions annotations, colour only
//! where it belongs, and configuration by environment with flags winning.

use std::path::Path;

use assert_cmd::Command;

#[path = "../../examples/gen-docs/render.rs"]
mod render;

/// The shared harness's clean command, with assert_cmd's helpers.
fn retry() -> Command {
    Command::from_std(crate::util::command())
}

fn stdout_of(cmd: &mut Command) -> String {
    String::from_utf8(cmd.output().expect("retry runs").stdout).expect("utf-8")
}

fn stderr_of(cmd: &mut Command) -> String {
    String::from_utf8(cmd.output().expect("retry runs").stderr).expect("utf-8")
}

// ---- generated files -------------------------------------------------------

#[test]
fn generated_files_are_fresh() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let fresh = tempfile::tempdir().expect("temp dir");
    let mut stale = Vec::new();
    let mut generated = Vec::new();
    for (path, bytes) in render::files() {
        let new = fresh.path().join(&path);
        std::fs::create_dir_all(new.parent().expect("a parent")).expect("mkdir");
        std::fs::write(&new, &bytes).expect("write");
        let written = std::fs::read(&new).expect("read back");
        match std::fs::read(root.join(&path)) {
            Ok(old) if old == written => {}
            Ok(_) => stale.push(format!("{path} differs")),
            Err(_) => stale.push(format!("{path} is missing")),
        }
        generated.push(path);
    }
    // A checked-in file the generator no longer writes is stale too.
    for dir in ["completions", "man"] {
        for entry in std::fs::read_dir(root.join(dir)).expect("generated dir") {
            let name = format!(
                "{dir}/{}",
                entry.expect("entry").file_name().to_string_lossy()
            );
            if !generated.contains(&name) {
                stale.push(format!("{name} is no longer generated"));
            }
        }
    }
    assert!(
        stale.is_empty(),
        "generated files are out of date with the clap definition:\n  {}\nregenerate them with: {}",
        stale.join("\n  "),
        render::REGENERATE
    );
}

#[test]
fn man_page_has_the_documented_sections() {
    let (_, man) = render::files()
        .into_iter()
        .find(|(p, _)| p == "man/retry.1")
        .expect("a man page");
    let man = String::from_utf8(man).expect("utf-8");
    for section in [
        "NAME",
        "SYNOPSIS",
        "DESCRIPTION",
        "OPTIONS",
        "\"EXIT STATUS\"",
        "ENVIRONMENT",
        "EXAMPLES",
        "\"SEE ALSO\"",
    ] {
        assert!(
            man.contains(&format!(".SH {section}\n")),
            "no {section} section"
        );
    }
    for var in [
        "RETRY_MAX",
        "RETRY_BACKOFF",
        "RETRY_BASE",
        "RETRY_CAP",
        "RETRY_JITTER",
        "RETRY_MAX_TIME",
        "RETRY_TIMEOUT",
        "RETRY_NESTED",
        "RETRY_LOG_FORMAT",
        "RETRY_LOG_FILE",
        "NO_COLOR",
        "GITHUB_ACTIONS",
        "RETRY_ATTEMPT",
        "RETRY_MAX_ATTEMPTS",
        "RETRY_PREVIOUS_EXIT",
        "RETRY_DEPTH",
        "TMPDIR",
    ] {
        assert!(
            man.contains(&format!("\\fB{var}\\fR")),
            "{var} undocumented"
        );
    }
    for code in retry_tool::exit::TABLE.iter().map(|r| r.status) {
        assert!(
            man.contains(&format!("\\fB{code}\\fR")),
            "exit {code} undocumented"
        );
    }
}

#[test]
fn the_man_page_cron_example_holds_output_and_the_no_limit_rule_names_idle_timeout() {
    let man = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("man/retry.1"))
        .expect("man/retry.1");
    // roff escapes each '-' of an option.
    let cron = man
        .lines()
        .find(|l| l.starts_with("*/30 * * * * /usr/local/bin/retry "))
        .expect("a cron example");
    assert!(cron.contains("\\-\\-hold\\-output"), "{cron}");
    assert!(
        man.contains("For \\-\\-timeout, \\-\\-idle\\-timeout and \\-\\-max\\-time, 0 and inf"),
        "the 0/inf rule leaves out --idle-timeout"
    );
}

/// groff, warnings on, must accept the page without a word. scripts/test.sh
/// installs groff where it is missing, so a machine without it fails here
/// rather than passing unchecked.
#[test]
fn man_page_renders_without_groff_warnings() {
    let out = std::process::Command::new("groff")
        .args(["-ww", "-man", "-Tutf8", "-z"])
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("man/retry.1"))
        .output()
        .expect("groff runs (scripts/test.sh installs groff-base)");
    let warnings = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && warnings.is_empty(), "{warnings}");
}

// ---- help ------------------------------------------------------------------

/// Help as a user sees it, at a fixed width: COLUMNS is what clap reads when
/// stdout is not a terminal, and --help never grows past 100 columns anyway.
fn help(flag: &str) -> String {
    stdout_of(retry().env("COLUMNS", "100").arg(flag))
}

#[test]
fn short_help_snapshot() {
    insta::assert_snapshot!("help_short", help("-h"));
}

#[test]
fn long_help_snapshot() {
    insta::assert_snapshot!("help_long", help("--help"));
}

#[test]
fn long_help_shows_its_examples_before_the_options_and_short_help_ends_with_five() {
    let long = help("--help");
    let options = long.find("\nOptions:").expect("option groups");
    let examples = long.find("\nExamples:").expect("examples");
    assert!(
        examples < options,
        "--help's examples come after the options"
    );
    // Seen without scrolling: within the first screenful.
    assert!(long[..examples].lines().count() < 20);
    let short = help("-h");
    let last: Vec<&str> = short.trim_end().lines().rev().take(6).collect();
    assert_eq!(last[5], "Examples:", "{short}");
    assert!(
        last[..5].iter().all(|l| l.starts_with("  retry ")),
        "{last:?}"
    );
}

/// The commands `-h` shows as examples are real: one that runs a COMMAND
/// runs, with `true` for its COMMAND; a probe's dry run accepts it (a dry
/// run refuses what acts only on a run, such as `--hold-output`).
#[test]
fn short_help_examples_are_real_commands() {
    let short = help("-h");
    let examples: Vec<&str> = short
        .lines()
        .filter(|l| l.starts_with("  retry "))
        .collect();
    assert_eq!(examples.len(), 5);
    for line in examples {
        let command = line.split(" # ").next().unwrap_or(line);
        let command = command.split(" && ").next().unwrap_or(command);
        let mut words: Vec<&str> = command.split_whitespace().skip(1).collect();
        let mut cmd = retry();
        if let Some(at) = words.iter().position(|w| *w == "--") {
            words.truncate(at);
            words.extend(["--", "true"]);
        } else if !words.contains(&"--dry-run") {
            cmd.arg("--dry-run");
        }
        cmd.args(&words);
        let out = cmd.output().expect("retry runs");
        assert!(
            out.status.success(),
            "{line}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

// ---- GitHub Actions annotations ----------------------------------------------

/// Two failing attempts, 10 ms apart, printing to stdout.
fn two_failures(cmd: &mut Command) -> &mut Command {
    cmd.args(["--max", "2", "--base", "10ms", "--jitter", "none", "--"])
        .args(["sh", "-c", "echo child-out; exit 3"])
}

fn annotations(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.starts_with("::")).collect()
}

#[test]
fn annotations_appear_under_github_actions() {
    let out = two_failures(retry().env("GITHUB_ACTIONS", "true"))
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(3));
    let stderr = String::from_utf8(out.stderr).expect("utf-8");
    let lines = annotations(&stderr);
    assert_eq!(lines.len(), 3, "{stderr}");
    for (line, prefix) in lines.iter().zip([
        "::warning title=retry::attempt 1/2 failed (exit 3) after",
        "::warning title=retry::attempt 2/2 failed (exit 3) after",
        "::error title=retry::giving up after 2 attempts in",
    ]) {
        assert!(
            line.starts_with(prefix),
            "{line:?} should start with {prefix:?}"
        );
    }
    // stdout stays the child's alone.
    assert_eq!(
        String::from_utf8(out.stdout).expect("utf-8"),
        "child-out\nchild-out\n"
    );
}

#[test]
fn annotations_absent_outside_github_actions() {
    let unset = stderr_of(two_failures(&mut retry()));
    let not_true = stderr_of(two_failures(retry().env("GITHUB_ACTIONS", "false")));
    for stderr in [unset, not_true] {
        // The plain lines the annotations would repeat are there.
        assert!(
            stderr.contains("retry: attempt 1/2 failed (exit 3)"),
            "{stderr}"
        );
        assert!(
            stderr.contains("retry: giving up after 2 attempts"),
            "{stderr}"
        );
        assert!(annotations(&stderr).is_empty(), "{stderr}");
    }
}

#[test]
fn annotations_follow_the_flag() {
    let always = stderr_of(two_failures(retry().args(["--ci-annotations", "always"])));
    assert_eq!(annotations(&always).len(), 3, "{always}");
    let never = stderr_of(two_failures(
        retry()
            .env("GITHUB_ACTIONS", "true")
            .args(["--ci-annotations", "never"]),
    ));
    assert!(annotations(&never).is_empty(), "{never}");
}

#[test]
fn no_annotations_when_nothing_failed_or_when_quiet() {
    let ok = stderr_of(retry().env("GITHUB_ACTIONS", "true").args(["--", "true"]));
    assert!(annotations(&ok).is_empty(), "{ok}");
    // -q keeps only the give-up line, and so only its annotation.
    let quiet = stderr_of(two_failures(
        retry().env("GITHUB_ACTIONS", "true").arg("-q"),
    ));
    let quiet = annotations(&quiet);
    assert_eq!(quiet.len(), 1);
    assert!(quiet[0].starts_with("::error title=retry::giving up"));
}

#[test]
fn json_log_on_stderr_stays_pure_json_under_github_actions() {
    let stderr = stderr_of(two_failures(
        retry()
            .env("GITHUB_ACTIONS", "true")
            .args(["--log-format", "json"]),
    ));
    let events: Vec<serde_json::Value> = stderr
        .lines()
        .map(|line| serde_json::from_str(line).expect("every line is JSON"))
        .collect();
    // The whole log is there: start, two attempts with their waits, done,
    // and the warning that stdout (a pipe here) keeps the first attempt's
    // output ahead of the next one's.
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["event"].as_str()).collect();
    assert_eq!(
        kinds,
        ["start", "attempt", "sleep", "warning", "attempt", "done"],
        "{stderr}"
    );
}

// ---- colour and the countdown ---------------------------------------------------

const ESC: char = '\u{1b}';

#[test]
fn no_escapes_when_stderr_is_not_a_terminal() {
    let stderr = stderr_of(two_failures(&mut retry()));
    assert!(stderr.contains("retry: attempt 1/2 failed"), "{stderr}");
    assert!(!stderr.contains(ESC), "{stderr:?}");
}

#[test]
fn color_always_colours_even_into_a_pipe() {
    let stderr = stderr_of(two_failures(retry().args(["--color", "always"])));
    assert!(stderr.contains(ESC), "{stderr:?}");
}

/// Run retry on a pseudo-terminal that is its controlling terminal; return
/// everything the terminal received and the exit code.
fn in_pty(args: &[&str], env: &[(&str, &str)]) -> (String, Option<i32>) {
    crate::pty::run_retry(args, env)
}

/// Two quick failures after `extra`: the waits are short, so no countdown
/// draws and only colour could add escapes.
fn quick<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = extra.to_vec();
    args.extend(["--max", "2", "--base", "10ms", "--"]);
    args.extend(["sh", "-c", "echo child-out; exit 3"]);
    args
}

#[test]
fn a_terminal_gets_colour_by_default() {
    // The control case: proves the pseudo-terminal is seen as one.
    let (out, code) = in_pty(&quick(&[]), &[]);
    assert_eq!(code, Some(3));
    assert!(out.contains(ESC), "{out:?}");
}

#[test]
fn no_escapes_on_a_terminal_with_no_color() {
    let (out, code) = in_pty(&quick(&[]), &[("NO_COLOR", "1")]);
    assert_eq!(code, Some(3));
    assert!(out.contains("retry: attempt 1/2 failed"), "{out:?}");
    assert!(!out.contains(ESC), "{out:?}");
}

#[test]
fn no_escapes_on_a_terminal_with_color_never() {
    let (out, _) = in_pty(&quick(&["--color", "never"]), &[]);
    assert!(out.contains("retry: attempt 1/2 failed"), "{out:?}");
    assert!(!out.contains(ESC), "{out:?}");
}

#[test]
fn no_escapes_on_a_dumb_terminal() {
    let (out, code) = in_pty(&quick(&[]), &[("TERM", "dumb")]);
    assert_eq!(code, Some(3));
    assert!(out.contains("retry: attempt 1/2 failed"), "{out:?}");
    assert!(!out.contains(ESC), "{out:?}");
}

#[test]
fn countdown_shows_during_a_long_wait_and_is_erased_before_the_child_runs() {
    let (out, code) = in_pty(
        &[
            "--max",
            "2",
            "--base",
            "1500ms",
            "--jitter",
            "none",
            "--color",
            "never",
            "--",
            "sh",
            "-c",
            "echo child-out; exit 3",
        ],
        &[],
    );
    assert_eq!(code, Some(3));
    assert!(out.contains("retry: attempt 2/2 starts in"), "{out:?}");
    // The second attempt's output starts on a cleared line, not after the
    // countdown's text.
    let second = out.rfind("child-out").expect("second attempt's output");
    let before = &out[..second];
    assert!(
        before.ends_with("\u{1b}[2K") || before.ends_with('\n'),
        "{out:?}"
    );
    // Every line retry itself logged is whole: it starts with "retry: ".
    for line in out.split("\r\n").filter(|l| l.contains("failed")) {
        assert!(line.starts_with("retry: "), "{line:?} in {out:?}");
    }
}

#[test]
fn no_countdown_when_quiet() {
    let (out, code) = in_pty(
        &[
            "-q", "--max", "2", "--base", "1500ms", "--jitter", "none", "--", "false",
        ],
        &[],
    );
    // The run went through its wait (the control case above draws the
    // countdown in it) and said only its last word.
    assert_eq!(code, Some(1));
    assert!(out.contains("after 2 attempts in"), "{out:?}");
    assert!(!out.contains("starts in"), "{out:?}");
}

// ---- environment configuration ---------------------------------------------

/// How many attempts ran, counted from what the child printed.
fn attempts(cmd: &mut Command) -> usize {
    let out = stdout_of(cmd.args(["--base", "1ms", "--jitter", "none", "--"]).args([
        "sh",
        "-c",
        "echo \"$RETRY_ATTEMPT\"; exit 1",
    ]));
    out.lines().count()
}

#[test]
fn env_sets_the_policy_and_flags_override_it() {
    assert_eq!(attempts(retry().env("RETRY_MAX", "2")), 2);
    assert_eq!(
        attempts(retry().env("RETRY_MAX", "2").args(["--max", "3"])),
        3
    );
    assert_eq!(attempts(retry().env("RETRY_MAX", "2").args(["-n", "4"])), 4);
    // An empty variable is unset: the default of 5.
    assert_eq!(attempts(retry().env("RETRY_MAX", "")), 5);
    assert_eq!(attempts(&mut retry()), 5);
}

#[test]
fn forever_wins_over_retry_max_from_the_environment() {
    let out = retry()
        .env("RETRY_MAX", "2")
        .args(["--forever", "--base", "1ms", "--jitter", "none", "--"])
        .args([
            "sh",
            "-c",
            "echo \"$RETRY_ATTEMPT\"; [ \"$RETRY_ATTEMPT\" -ge 4 ]",
        ])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "1\n2\n3\n4\n");
    // Both on the command line contradict each other.
    retry()
        .args(["--forever", "--max", "3", "--", "true"])
        .assert()
        .code(2);
}

#[test]
fn a_bad_value_from_the_environment_is_a_usage_error() {
    let out = retry()
        .env("RETRY_JITTER", "sometimes")
        .args(["--", "true"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--jitter"));
}

#[test]
fn log_settings_come_from_the_environment_too() {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = dir.path().join("retry.log");
    let out = retry()
        .env("RETRY_LOG_FORMAT", "json")
        .env("RETRY_LOG_FILE", &log)
        .args(["--max", "1", "--", "false"])
        .output()
        .expect("runs");
    // The file has the record; stderr only the plain give-up line.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("retry: giving up"), "{stderr}");
    let written = std::fs::read_to_string(&log).expect("log file");
    assert!(written.lines().all(|l| l.starts_with('{')), "{written}");
    // The flag wins over RETRY_LOG_FORMAT.
    let text = stderr_of(retry().env("RETRY_LOG_FORMAT", "json").args([
        "--log-format",
        "text",
        "--max",
        "1",
        "--",
        "false",
    ]));
    assert!(text.starts_with("retry: "), "{text}");
}
