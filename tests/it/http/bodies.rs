//! Bodies streamed and delivered whole or not at all; local inputs checked
//! before anything is sent; Retry-After not followed blindly.

use super::*;

// ---- bodies: streamed, delivered whole or not at all ----------------------

#[test]
fn a_200_mb_body_streams_in_flat_memory() {
    const SIZE: usize = 200 * 1024 * 1024;
    let s = Server::start(vec![reply(200).generated(SIZE)]);
    let dir = tempfile::tempdir().expect("tempdir");
    let peak = dir.path().join("peak");
    let out = dir.path().join("body");
    // GNU time reports the child's peak resident set (VmHWM) in KiB.
    let status = std::process::Command::new("/usr/bin/time")
        .arg("-f")
        .arg("%M")
        .arg("-o")
        .arg(&peak)
        .arg(crate::util::bin())
        .args(["--http", &s.url, "-o"])
        .arg(&out)
        .env_clear()
        .stdin(std::process::Stdio::null())
        .status()
        .expect("run /usr/bin/time (scripts/test.sh installs it)");
    assert_eq!(status.code(), Some(0));
    assert_eq!(
        std::fs::metadata(&out).expect("body written").len(),
        SIZE as u64
    );
    let kib: u64 = std::fs::read_to_string(&peak)
        .expect("time's report")
        .trim()
        .parse()
        .expect("a number of KiB");
    // Held whole, the body alone would be 200 MiB; streamed, retry stays
    // within a few MiB (a debug build's larger code included).
    assert!(kib < 32 * 1024, "peak RSS {kib} KiB");
}

#[test]
fn a_body_cut_short_once_is_retried_and_the_file_appears_whole() {
    let s = Server::start(vec![
        reply(200).body("first half").cut_short(100),
        reply(200).body("the whole body"),
    ]);
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("out.txt");
    let r = download(&s.url, &file, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(s.hits(), 2);
    assert!(r.stderr.contains("body cut short"), "{}", r.stderr);
    assert_eq!(
        std::fs::read_to_string(&file).expect("read"),
        "the whole body"
    );
    assert_eq!(listing(dir.path()), ["out.txt"]);
}

#[test]
fn a_body_always_cut_short_exits_18_and_leaves_no_file() {
    let s = Server::start(vec![reply(200).body("partial").cut_short(10)]);
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("out.txt");
    let r = download(&s.url, &file, &["-n", "3"]);
    assert_eq!(r.code, 18, "{}", r.stderr);
    assert_eq!(s.hits(), 3);
    assert!(
        r.stderr.contains("giving up after 3 attempts"),
        "{}",
        r.stderr
    );
    assert_no_files(dir.path());
}

#[test]
fn a_body_cut_short_after_reaching_stdout_is_not_retried() {
    let s = Server::start(vec![
        reply(200).body("partial").cut_short(10),
        reply(200).body("whole"),
    ]);
    let r = retry(&["--http", &s.url, "-b", "10ms"]);
    assert_eq!(r.code, 18, "{}", r.stderr);
    assert_eq!(s.hits(), 1);
    assert!(r.stderr.contains("-o FILE"), "{}", r.stderr);
}

#[test]
fn a_failed_run_leaves_an_existing_output_file_alone() {
    let s = Server::start(vec![reply(503).body("down")]);
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("out.txt");
    std::fs::write(&file, "previous").expect("write");
    let r = download(&s.url, &file, &["-n", "2"]);
    assert_eq!(r.code, 22, "{}", r.stderr);
    assert_eq!(std::fs::read_to_string(&file).expect("read"), "previous");
    assert_eq!(listing(dir.path()), ["out.txt"]);
    // The failed response's body is not delivered anywhere.
    assert_eq!(r.stdout, "");
    assert!(!r.stderr.contains("down"), "{}", r.stderr);
}

#[test]
fn output_to_dev_null_is_written_in_place() {
    let s = Server::start(vec![reply(200).body("discarded")]);
    let r = retry(&["--http", &s.url, "-o", "/dev/null"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let meta = std::fs::metadata("/dev/null").expect("/dev/null");
    assert!(
        std::os::unix::fs::FileTypeExt::is_char_device(&meta.file_type()),
        "/dev/null must stay a device"
    );
}

#[test]
fn a_closed_stdout_ends_the_run_with_23() {
    let s = Server::start(vec![reply(200).generated(8 * 1024 * 1024)]);
    let mut child = crate::util::command()
        .args(["--http", &s.url, "-b", "10ms"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn retry");
    // `| head -c 10`: read a little, then go away.
    let mut stdout = child.stdout.take().expect("stdout");
    let mut first = [0u8; 10];
    stdout.read_exact(&mut first).expect("first bytes");
    drop(stdout);
    let out = child.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(23), "{stderr}");
    assert_eq!(s.hits(), 1);
    assert!(!stderr.to_lowercase().contains("broken pipe"), "{stderr}");
    assert!(stderr.contains("stdout was closed"), "{stderr}");
}

// ---- local inputs are checked before anything is sent ----------------------

#[test]
fn a_bad_output_directory_is_a_usage_error_and_nothing_is_sent() {
    let s = Server::start(vec![reply(200)]);
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("missing/out");
    for (o, says) in [
        (
            missing.to_str().expect("utf-8"),
            "no such file or directory",
        ),
        (dir.path().to_str().expect("utf-8"), "is a directory"),
    ] {
        let r = retry(&["--http", &s.url, "-d", "order=1", "-o", o]);
        assert_eq!(r.code, 2, "{}", r.stderr);
        assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
        assert!(r.stderr.contains("--output"), "{}", r.stderr);
        assert!(r.stderr.contains(says), "{}", r.stderr);
    }
    assert_eq!(s.connections_before_now(), 0, "the server saw a connection");
    assert_no_files(dir.path());
}

#[test]
fn an_input_error_creates_no_log_file_and_appends_to_none() {
    let s = Server::start(vec![reply(200)]);
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("missing");
    let at = format!("@{}", missing.display());
    let cacert = missing.display().to_string();
    let open_dir = dir.path().join("open");
    std::fs::create_dir(&open_dir).expect("mkdir");
    std::fs::set_permissions(
        &open_dir,
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .expect("chmod 0777");
    let loose = open_dir.join("out").display().to_string();
    let cases: [&[&str]; 5] = [
        &["-H", &at],
        &["-d", &at],
        &["--cacert", &cacert],
        &["-o", &loose],
        &["-o", dir.path().to_str().expect("utf-8")],
    ];
    let log = dir.path().join("run.log");
    for case in cases {
        let mut args = vec!["--http", &s.url, "--log-file", log.to_str().expect("utf-8")];
        args.extend_from_slice(case);
        let r = retry(&args);
        assert_eq!(r.code, 2, "{case:?}: {}", r.stderr);
        assert_eq!(r.stderr.lines().count(), 1, "{case:?}: {}", r.stderr);
        assert!(!log.exists(), "{case:?} created the log file");
    }
    // An existing log file is not appended to either.
    std::fs::write(&log, "before\n").expect("write");
    let r = retry(&[
        "--http",
        &s.url,
        "--log-file",
        log.to_str().expect("utf-8"),
        "-d",
        &at,
    ]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert_eq!(std::fs::read_to_string(&log).expect("log"), "before\n");
    assert_eq!(s.connections_before_now(), 0, "the server saw a connection");
}

#[test]
fn input_errors_are_one_line_and_say_what_they_are_about() {
    let s = Server::start(vec![reply(200)]);
    let dir = tempfile::tempdir().expect("tempdir");
    // A file name with a newline and an escape sequence in it.
    let odd = format!("@{}/a\nb\u{1b}[2J", dir.path().display());
    let r = retry(&["--http", &s.url, "-H", &odd]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(r.stderr.contains("a\\nb\\x1b[2J"), "{}", r.stderr);
    assert!(!r.stderr.contains('\u{1b}'), "{}", r.stderr);
    // A value echoed by the flags' own checks, too.
    let r = retry(&["--http", &s.url, "--max-redirs", "3\n4"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(r.stderr.contains("'3\\n4'"), "{}", r.stderr);
    // --cacert takes a file, not @FILE: its errors do not speak of one.
    let missing = dir.path().join("ca.pem");
    let r = retry(&[
        "--http",
        &s.url,
        "--cacert",
        missing.to_str().expect("utf-8"),
    ]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains(&format!(
            "cannot read --cacert {}: no such file",
            missing.display()
        )),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains('@'), "{}", r.stderr);
}

#[test]
fn headers_from_a_file() {
    let s = Server::start(vec![reply(503), reply(200)]);
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("headers");
    std::fs::write(
        &file,
        "# sent with every attempt\nX-One: 1\n\nAuthorization: Bearer fr0m-file\r\n",
    )
    .expect("write");
    let at = format!("@{}", file.display());
    let r = retry(&[
        "--http", &s.url, "-H", &at, "-H", "X-Two: 2", "-v", "-b", "10ms",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    for seen in s.seen() {
        assert_eq!(seen.header("X-One"), Some("1"));
        assert_eq!(seen.header("X-Two"), Some("2"));
        assert_eq!(seen.header("Authorization"), Some("Bearer fr0m-file"));
    }
    assert!(!r.stderr.contains("fr0m-file"), "{}", r.stderr);

    // A bad line: named by number, never echoed (it may hold a secret).
    std::fs::write(&file, "X-One: 1\nBearer s3cret-line\n").expect("write");
    let r = retry(&["--http", &s.url, "-H", &at]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("line 2"), "{}", r.stderr);
    assert!(!r.stderr.contains("s3cret-line"), "{}", r.stderr);
    let missing = format!("@{}", dir.path().join("nope").display());
    let r = retry(&["--http", &s.url, "-H", &missing]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("--header"), "{}", r.stderr);
    assert_eq!(s.hits(), 2);
}

#[test]
fn data_is_joined_and_sent_as_a_form() {
    let s = Server::start(vec![reply(200)]);
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("part");
    std::fs::write(&file, "b=2").expect("write");
    let at = format!("@{}", file.display());
    let r = retry(&["--http", &s.url, "-d", "a=1", "-d", &at]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let seen = &s.seen()[0];
    assert_eq!(seen.method, "POST");
    assert_eq!(seen.body, b"a=1&b=2");
    assert_eq!(
        seen.header("Content-Type"),
        Some("application/x-www-form-urlencoded")
    );

    // A header sets its own Content-Type.
    let s = Server::start(vec![reply(200)]);
    let r = retry(&[
        "--http",
        &s.url,
        "-d",
        "<x/>",
        "-H",
        "Content-Type: text/xml",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(s.seen()[0].header("Content-Type"), Some("text/xml"));
}

#[test]
fn json_sets_content_type_and_accept() {
    let s = Server::start(vec![reply(200).body("{}")]);
    let r = retry(&["--http", &s.url, "--json", "{\"a\":1}", "-X", "PUT"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let seen = &s.seen()[0];
    assert_eq!(seen.method, "PUT");
    assert_eq!(seen.body, b"{\"a\":1}");
    assert_eq!(seen.header("Content-Type"), Some("application/json"));
    assert_eq!(seen.header("Accept"), Some("application/json"));
    let r = retry(&["--http", &s.url, "--json", "{}", "-d", "x"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert_eq!(s.hits(), 1);
}

// ---- Retry-After is not followed blindly -------------------------------------

#[test]
fn a_retry_after_of_years_gives_up_at_once() {
    // Absurd: not spelled out as a number of years.
    let s = Server::start(vec![reply(503).header("Retry-After", "99999999999999")]);
    let r = retry(&["--http", &s.url]);
    assert_eq!(r.code, 22, "{}", r.stderr);
    assert_eq!(s.hits(), 1);
    assert!(r.took < Duration::from_secs(5), "took {:?}", r.took);
    assert!(
        r.stderr.contains(
            "the server asked to wait more than --retry-after-max 10m (a Retry-After of over a year)"
        ),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("Retry-After over a year"), "{}", r.stderr);
    assert!(!r.stderr.contains("years"), "{}", r.stderr);
    // Long, in days and hours.
    let s = Server::start(vec![reply(503).header("Retry-After", "93600")]);
    let r = retry(&["--http", &s.url]);
    assert_eq!(r.code, 22, "{}", r.stderr);
    assert!(
        r.stderr.contains(
            "the server asked to wait 1d 2h (Retry-After), more than --retry-after-max 10m"
        ),
        "{}",
        r.stderr
    );

    let s = Server::start(vec![reply(429).header("Retry-After", "2")]);
    let r = retry(&["--http", &s.url, "--retry-after-max", "1s"]);
    assert_eq!((r.code, s.hits()), (22, 1), "{}", r.stderr);
    assert!(r.stderr.contains("--retry-after-max 1s"), "{}", r.stderr);
}

#[test]
fn verbose_logs_the_start_of_a_failed_body_masked() {
    let page =
        "{\"error\": \"overloaded\", \"access_token\": \"t0k3n\"}\nAuthorization: Bearer s3cret\n";
    let s = Server::start(vec![reply(503).body(page), reply(200).body("ok")]);
    let r = retry(&["--http", &s.url, "-v", "-b", "10ms"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains(
            "HTTP 503 body begins: {\"error\": \"overloaded\", \"access_token\": \"***\"}"
        ),
        "{}",
        r.stderr
    );
    assert!(
        !r.stderr.contains("t0k3n") && !r.stderr.contains("s3cret"),
        "{}",
        r.stderr
    );
    // Without -v, nothing of it.
    let s = Server::start(vec![reply(503).body(page), reply(200).body("ok")]);
    let r = retry(&["--http", &s.url, "-b", "10ms"]);
    assert!(!r.stderr.contains("overloaded"), "{}", r.stderr);
}

#[test]
fn an_interrupted_download_leaves_no_file() {
    use nix::sys::signal::Signal;
    let s = Server::start(vec![reply(200).body("late").delay(Duration::from_secs(5))]);
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("out.txt");
    let running = download_spawned(&s.url, &file);
    assert_eq!(s.hits_at_least(1), 1);
    // The temporary file has no name while the request runs.
    assert_no_files(dir.path());
    running.signal(Signal::SIGTERM);
    let out = running.wait();
    out.expect_code(143);
    assert_no_files(dir.path());
}
