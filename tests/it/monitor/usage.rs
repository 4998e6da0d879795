//! The monitoring flags' usage errors: one line naming the flag, exit 2,
//! nothing run or sent; `--dry-run`, `--simulate` and `--state-show` refuse
//! them; secrets in refused URLs are not shown.

use super::{Answer, Recorder};
use crate::util::{path_str, retry, retry_sh, scratch};

#[test]
fn bad_monitoring_flags_are_one_line_exit_2_and_run_nothing() {
    let hb = Recorder::start(|_, _| Answer::Status(200));
    let ping = hb.url("/check");
    let dir = scratch();
    let prom = path_str(&dir.path().join("m.prom"));
    let state = path_str(&dir.path().join("state"));
    // A file whose first line is no URL, and holds a secret.
    let secret_file = path_str(&dir.path().join("secret"));
    std::fs::write(&secret_file, "hunter2\n").expect("write");
    let missing = path_str(&dir.path().join("missing"));
    let empty = path_str(&dir.path().join("empty"));
    std::fs::write(&empty, "\n").expect("write");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["--metrics-job", "x"],
            "--metrics-job applies to the metrics of --metrics-file or --metrics-push",
        ),
        (vec!["--metrics-label", "a=b"], "--metrics-label applies to"),
        (
            vec!["--metrics-file", &prom, "--metrics-label", "1a=b"],
            "invalid value '1a=b' for --metrics-label: expected KEY=VALUE",
        ),
        (
            vec!["--metrics-file", &prom, "--metrics-label", "__name__=b"],
            "for --metrics-label",
        ),
        (
            vec!["--metrics-file", &prom, "--metrics-label", "a="],
            "for --metrics-label",
        ),
        (
            vec!["--metrics-file", &prom, "--metrics-label", "novalue"],
            "for --metrics-label",
        ),
        (
            vec!["--metrics-file", &prom, "--metrics-label", "job=x"],
            "--metrics-label cannot set job: use --metrics-job NAME",
        ),
        (
            vec![
                "--metrics-file",
                &prom,
                "--metrics-label",
                "a=1",
                "--metrics-label",
                "a=2",
            ],
            "--metrics-label a is given twice",
        ),
        (
            vec!["--metrics-file", &prom, "--metrics-job", " "],
            "for --metrics-job",
        ),
        (vec!["--metrics-file", "-x.prom"], "--metrics-file"),
        (
            vec!["--metrics-push", "ftp://gw:9091"],
            "invalid value 'ftp://gw:9091' for --metrics-push",
        ),
        (
            vec!["--metrics-push", "http://gw:9091/?a=1"],
            "for --metrics-push",
        ),
        (
            vec!["--metrics-push", "https://u:hunter2@"],
            "invalid value 'https://u:***@' for --metrics-push",
        ),
        (
            vec!["--ping", "mailto:x@y"],
            "invalid value '***' for --ping",
        ),
        (
            vec!["--ping-log"],
            "--ping-log sends the run's summary with the final ping: give --ping-file FILE or --ping URL",
        ),
        // The path of the URL is no host: the secret would be shown as one.
        (
            vec!["--ping", "https:///hunter2-uuid"],
            "invalid value 'https:///***' for --ping",
        ),
        (vec!["--ping", "http:hunter2"], "for --ping"),
        (
            vec!["--ping", &ping, "--ping-file", &secret_file],
            "--ping and --ping-file both give the heartbeat URL",
        ),
        (vec!["--ping-file", &missing], "cannot read --ping-file"),
        (vec!["--ping-file", &empty], "its first line is empty"),
        (
            vec!["--ping-file", &secret_file],
            "for the first line of --ping-file",
        ),
        (
            vec!["--metrics-push-password-file", &secret_file],
            "--metrics-push-password-file gives the password of --metrics-push URL: give the URL too",
        ),
        (
            vec![
                "--metrics-push",
                "http://u:hunter2@gw",
                "--metrics-push-password-file",
                &secret_file,
            ],
            "and the --metrics-push URL has one too",
        ),
        (
            vec!["--dry-run", "--ping-file", &secret_file],
            "--ping-file reports on a run, and --dry-run runs nothing",
        ),
        (
            vec!["--dry-run", "--metrics-file", &prom],
            "--metrics-file reports on a run, and --dry-run runs nothing",
        ),
        (
            vec!["--dry-run", "--ping", &ping],
            "--ping reports on a run, and --dry-run runs nothing",
        ),
        (
            vec![
                "--simulate",
                "10",
                "--outage",
                "1s",
                "--metrics-push",
                "http://gw",
            ],
            "--metrics-push reports on a run, and --simulate runs nothing",
        ),
        (
            vec![
                "--group",
                "g",
                "--state",
                &state,
                "--state-show",
                "--ping-log",
            ],
            "--ping-log reports on a run, and --state-show runs nothing",
        ),
    ];
    let marker = dir.path().join("ran");
    for (args, want) in &cases {
        let script = format!("touch {}", path_str(&marker));
        let out = if args.contains(&"--dry-run")
            || args.contains(&"--simulate")
            || args.contains(&"--state-show")
        {
            retry(args).run()
        } else {
            retry_sh(args, &script).run()
        };
        out.expect_code(2);
        let lines = out.stderr_lines();
        assert_eq!(lines.len(), 1, "{args:?}: {lines:?}");
        assert!(lines[0].contains(want), "{args:?}: {lines:?}");
        assert!(!lines[0].contains("hunter2"), "{lines:?}");
    }
    assert!(!marker.exists(), "nothing ran");
    assert!(!dir.path().join("m.prom").exists(), "nothing was written");
    assert!(!dir.path().join("missing").exists());
    assert!(hb.seen().is_empty(), "nothing was sent: {:?}", hb.lines());
}

#[test]
fn retry_ping_in_the_environment_does_not_stand_in_the_way_of_a_preview() {
    let hb = Recorder::start(|_, _| Answer::Status(200));
    retry(["--dry-run", "--max", "3"])
        .env("RETRY_PING", hb.url("/check"))
        .run()
        .expect_code(0);
    retry(["--simulate", "10", "--outage", "1s"])
        .env("RETRY_PING", hb.url("/check"))
        .run()
        .expect_code(0);
    assert!(hb.seen().is_empty(), "{:?}", hb.lines());
    // A bad one in the environment is named by its variable.
    let out = retry(["--", "true"]).env("RETRY_PING", "nope").run();
    out.expect_code(2);
    assert!(
        out.stderr_text().contains("for RETRY_PING (--ping)"),
        "{}",
        out.stderr_text()
    );
}

#[test]
fn a_ping_url_without_a_host_is_refused_and_its_secret_path_never_shown() {
    // The URL parser reads `http:///X` and `http:X` as the host X: the
    // secret would be shown in every warning as the host's name.
    for url in [
        "http:///S3CRET-uuid",
        "https:S3CRET-uuid",
        "http://@/S3CRET-uuid",
    ] {
        let out = retry(["--ping", url, "--", "true"]).run();
        let line = out.expect_usage_line("--ping");
        assert!(!line.contains("S3CRET"), "{url}: {line}");
    }
}

/// A secret file that is a FIFO nobody writes (planted in /tmp, or a
/// mistake) is refused at once, never waited on: the run must not hang
/// before its first attempt.
#[test]
fn a_secret_file_that_is_a_fifo_is_refused_at_once_not_waited_on() {
    let t = scratch();
    let fifo = t.path().join("ping");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).expect("mkfifo");
    let marker = t.path().join("ran");
    for flag in ["--ping-file", "--metrics-push-password-file"] {
        let mut args = vec![flag, fifo.to_str().expect("utf-8")];
        if flag == "--metrics-push-password-file" {
            args.extend(["--metrics-push", "http://127.0.0.1:9/"]);
        }
        let started = std::time::Instant::now();
        let line = retry_sh(&args, &format!("touch '{}'", path_str(&marker)))
            .run()
            .expect_usage_line("not a regular file");
        assert!(line.contains(flag), "{line}");
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        assert!(!marker.exists(), "{flag}: the command ran");
    }
    // The same flag with a regular file is accepted (the run goes on).
    let file = t.path().join("url");
    std::fs::write(&file, "http://127.0.0.1:9/check\n").expect("url file");
    retry(["-qq", "--ping-file", path_str(&file).as_str(), "--", "true"])
        .run()
        .expect_code(0);
}
