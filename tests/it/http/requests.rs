//! Requests and verdicts: statuses, Retry-After, idempotency, connection
//! failures, `--expect`, secrets, redirects.

use super::*;

#[test]
fn a_503_then_a_200_succeeds_on_the_second_request() {
    let s = Server::start(vec![reply(503), reply(200).body("all good")]);
    let r = retry(&["--http", &s.url, "-b", "10ms"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, "all good");
    assert_eq!(s.hits(), 2);
    assert!(r.stderr.contains("HTTP 503"), "{}", r.stderr);
}

#[test]
fn a_404_is_permanent_after_one_request() {
    let s = Server::start(vec![reply(404).body("not here")]);
    let r = retry(&["--http", &format!("{}/missing", s.url), "-b", "10ms"]);
    assert_eq!(r.code, 22, "{}", r.stderr);
    assert_eq!(s.hits(), 1);
    assert_eq!(s.seen()[0].path, "/missing");
    // As curl --fail: a failed response's body does not reach stdout.
    assert_eq!(r.stdout, "");
    assert!(
        r.stderr.contains("HTTP 404 is not retryable"),
        "{}",
        r.stderr
    );
}

#[test]
fn retry_after_seconds_is_waited_for_and_logged() {
    let s = Server::start(vec![
        reply(429).header("Retry-After", "1"),
        reply(200).body("ok"),
    ]);
    let r = retry(&[
        "--http",
        &s.url,
        "-b",
        "10ms",
        "-c",
        "10ms",
        "--log-format",
        "json",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(s.hits(), 2);
    assert!(r.took >= Duration::from_secs(1), "took {:?}", r.took);
    let attempt: serde_json::Value = r
        .stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["event"] == "attempt" && v["outcome"] == "retryable")
        .expect("a retryable attempt event");
    assert_eq!(attempt["http_status"], 429);
    assert_eq!(attempt["retry_after_ms"], 1000.0);
}

/// After a Retry-After, the log showed a wait longer than its own ceiling
/// (`next in 1s 6ms (full jitter, ceiling 10ms)`): the line names the
/// server's floor and the spread over it, which together bound the wait.
#[test]
fn after_a_retry_after_the_logged_wait_is_within_its_ceiling() {
    let replies = || vec![reply(429).header("Retry-After", "1"), reply(200).body("ok")];
    let s = Server::start(replies());
    let r = retry(&["--http", &s.url, "-b", "10ms", "-c", "10ms"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains(": Retry-After (seconds) 1 + ")
            && r.stderr.contains("ms full jitter over 10ms"),
        "{}",
        r.stderr
    );
    let s = Server::start(replies());
    let r = retry(&[
        "--http",
        &s.url,
        "-b",
        "10ms",
        "-c",
        "10ms",
        "--log-format",
        "json",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let sleep: serde_json::Value = r
        .stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["event"] == "sleep")
        .expect("a sleep event");
    assert_eq!(sleep["ceiling_ms"], 1010.0);
    let delay = sleep["delay_ms"].as_f64().expect("delay_ms");
    assert!((1000.0..=1010.0).contains(&delay), "{sleep}");
}

#[test]
fn retry_after_as_an_http_date_is_waited_for() {
    // Whole seconds only: three from now is a wait of more than two.
    let at = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(3));
    let s = Server::start(vec![
        reply(503).header("Retry-After", &at),
        reply(200).body("ok"),
    ]);
    let r = retry(&["--http", &s.url, "-b", "10ms", "-c", "10ms"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(s.hits(), 2);
    assert!(r.took >= Duration::from_millis(1900), "took {:?}", r.took);
    assert!(r.stderr.contains("Retry-After"), "{}", r.stderr);
}

#[test]
fn retry_after_past_max_time_gives_up_at_once() {
    let s = Server::start(vec![reply(503).header("Retry-After", "120")]);
    let r = retry(&["--http", &s.url, "--max-time", "10s"]);
    assert_eq!(r.code, 22, "{}", r.stderr);
    assert_eq!(s.hits(), 1);
    assert!(r.took < Duration::from_secs(5), "took {:?}", r.took);
    assert!(
        r.stderr.contains("Retry-After (2m) points past --max-time"),
        "{}",
        r.stderr
    );
}

#[test]
fn post_is_not_retried_without_a_key() {
    let s = Server::start(vec![reply(503), reply(200)]);
    let r = retry(&["--http", &s.url, "-d", "order=1", "-b", "10ms"]);
    assert_eq!(r.code, 22, "{}", r.stderr);
    assert_eq!(s.hits(), 1);
    let seen = s.seen();
    assert_eq!(seen[0].method, "POST");
    assert_eq!(seen[0].body, b"order=1");
    assert!(r.stderr.contains("POST is not idempotent"), "{}", r.stderr);
}

#[test]
fn a_post_answered_429_is_retried_as_it_was_not_processed() {
    let s = Server::start(vec![
        reply(429).header("Retry-After", "0"),
        reply(201).body("made"),
    ]);
    let r = retry(&["--http", &s.url, "-d", "order=1", "-b", "10ms"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, "made");
    assert_eq!(s.hits(), 2);
    assert!(s.seen().iter().all(|x| x.body == b"order=1"));
}

/// Reads one request (head and Content-Length body) from `reader`; false
/// when the client closed the connection instead.
fn read_request(reader: &mut BufReader<TcpStream>) -> bool {
    let mut len = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return false;
        }
        if line == "\r\n" {
            break;
        }
        if let Some((k, v)) = line.trim_end().split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            len = v.trim().parse().unwrap_or(0);
        }
    }
    reader.read_exact(&mut vec![0u8; len]).is_ok()
}

#[test]
fn each_attempt_gets_a_fresh_connection() {
    // The first connection answers 429 and stays open, then, like a server
    // whose keep-alive time ran out just as a request came, closes on the
    // next request without an answer. An attempt sent on that connection
    // would fail for a reason that says nothing about the server's health,
    // and a POST so failed could not be retried. Later connections answer.
    let first = Arc::new(Mutex::new(true));
    let s = RawServer::start(move |stream| {
        let mut reader = BufReader::new(stream.try_clone().expect("clone"));
        let mut stream = stream;
        if !read_request(&mut reader) {
            return;
        }
        if std::mem::replace(&mut *first.lock().expect("lock"), false) {
            let _ =
                stream.write_all(b"HTTP/1.1 429 X\r\nRetry-After: 0\r\nContent-Length: 0\r\n\r\n");
            let _ = read_request(&mut reader);
            return;
        }
        let _ = stream.write_all(b"HTTP/1.1 201 X\r\nContent-Length: 4\r\n\r\nmade");
    });
    let url = format!("http://{}/", s.addr);
    let r = retry(&["--http", &url, "-d", "order=1", "-n", "3", "-b", "10ms"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, "made");
    assert_eq!(s.connections(), 2, "{}", r.stderr);
}

#[test]
fn a_post_whose_tls_handshake_was_cut_off_is_retried() {
    // The connection ends during the handshake: the request never left.
    let s = RawServer::start(|mut stream| {
        let mut hello = [0u8; 16];
        let _ = stream.read(&mut hello);
    });
    let url = format!("https://{}/", s.addr);
    let r = retry(&["--http", &url, "-d", "order=1", "-n", "3", "-b", "10ms"]);
    assert_eq!(r.code, 7, "{}", r.stderr);
    assert_eq!(s.connections(), 3, "{}", r.stderr);
    assert!(!r.stderr.contains("not idempotent"), "{}", r.stderr);
}

#[test]
fn idempotency_key_given_twice_is_a_usage_error() {
    let s = Server::start(vec![reply(200)]);
    let r = retry(&[
        "--http",
        &s.url,
        "-d",
        "x",
        "-H",
        "Idempotency-Key: abc",
        "--idempotency-key",
        "auto",
    ]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(r.stderr.contains("--idempotency-key"), "{}", r.stderr);
    // In a header file too.
    let dir = tempfile::tempdir().expect("tempdir");
    let headers = dir.path().join("headers");
    std::fs::write(&headers, "idempotency-key: abc\n").expect("write");
    let at = format!("@{}", headers.display());
    let r = retry(&["--http", &s.url, "-H", &at, "--idempotency-key", "k"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("--idempotency-key"), "{}", r.stderr);
    assert_eq!(s.connections_before_now(), 0);
}

#[test]
fn idempotency_key_auto_sends_one_key_on_every_attempt() {
    let s = Server::start(vec![reply(503), reply(502), reply(201).body("made")]);
    let r = retry(&[
        "--http",
        &s.url,
        "-X",
        "POST",
        "-d",
        "{\"n\":1}",
        "--idempotency-key",
        "auto",
        "-b",
        "10ms",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, "made");
    let seen = s.seen();
    assert_eq!(seen.len(), 3);
    let keys: Vec<&str> = seen
        .iter()
        .map(|x| x.header("Idempotency-Key").expect("key sent"))
        .collect();
    assert!(keys.iter().all(|k| *k == keys[0]), "{keys:?}");
    // A UUID v4: 8-4-4-4-12 hex digits, version nibble 4.
    assert_eq!(keys[0].len(), 36, "{}", keys[0]);
    assert_eq!(keys[0].as_bytes()[14], b'4', "{}", keys[0]);
    assert!(seen.iter().all(|x| x.body == b"{\"n\":1}"));
    // The key is not shown in logs.
    assert!(!r.stderr.contains(keys[0]), "{}", r.stderr);
}

#[test]
fn a_given_idempotency_key_is_sent_as_is() {
    let s = Server::start(vec![reply(500), reply(200)]);
    let r = retry(&[
        "--http",
        &s.url,
        "-X",
        "PATCH",
        "--idempotency-key",
        "order-42",
        "-b",
        "10ms",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let seen = s.seen();
    assert_eq!(seen.len(), 2);
    assert!(seen.iter().all(|x| x.method == "PATCH"));
    assert!(
        seen.iter()
            .all(|x| x.header("Idempotency-Key") == Some("order-42"))
    );
}

#[test]
fn connection_refused_exits_7_after_every_attempt() {
    let url = format!("http://127.0.0.1:{}/", crate::util::free_port());
    let r = retry(&["--http", &url, "-n", "3", "-b", "10ms"]);
    assert_eq!(r.code, 7, "{}", r.stderr);
    assert!(r.stderr.contains("attempt 3/3 failed"), "{}", r.stderr);
    assert!(r.stderr.contains("could not connect"), "{}", r.stderr);
    assert!(
        r.stderr.contains("giving up after 3 attempts"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_connection_closed_without_a_response_is_retried() {
    let s = Server::start(vec![hang_up(), reply(200).body("back")]);
    let r = retry(&["--http", &s.url, "-b", "10ms"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!((r.stdout.as_str(), s.hits()), ("back", 2));
    assert!(r.stderr.contains("connection lost"), "{}", r.stderr);

    // ... but not for a POST: the server may have done the work.
    let s = Server::start(vec![hang_up(), reply(200)]);
    let r = retry(&["--http", &s.url, "-d", "x", "-b", "10ms"]);
    assert_eq!((r.code, s.hits()), (7, 1), "{}", r.stderr);
    assert!(r.stderr.contains("POST is not idempotent"), "{}", r.stderr);
}

#[test]
fn a_post_that_could_not_connect_is_retried() {
    // Nothing was sent, so repeating it cannot repeat its effect.
    let url = format!("http://127.0.0.1:{}/", crate::util::free_port());
    let r = retry(&["--http", &url, "-d", "x", "-n", "2", "-b", "10ms"]);
    assert_eq!(r.code, 7, "{}", r.stderr);
    assert!(
        r.stderr.contains("giving up after 2 attempts"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_slow_endpoint_times_out_with_28() {
    let s = Server::start(vec![reply(200).delay(Duration::from_secs(5))]);
    let r = retry(&[
        "--http",
        &s.url,
        "--timeout",
        "200ms",
        "-n",
        "2",
        "-b",
        "10ms",
    ]);
    assert_eq!(r.code, 28, "{}", r.stderr);
    assert!(r.took < Duration::from_secs(4), "took {:?}", r.took);
    assert_eq!(s.hits_at_least(2), 2);
    assert!(r.stderr.contains("timed out by --timeout"), "{}", r.stderr);
}

#[test]
fn expect_204_accepts_only_204() {
    let s = Server::start(vec![reply(204)]);
    let r = retry(&["--http", &s.url, "--expect", "204", "-X", "DELETE"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(s.seen()[0].method, "DELETE");

    let s = Server::start(vec![reply(200).body("surprise")]);
    let r = retry(&["--http", &s.url, "--expect", "204", "-b", "10ms"]);
    assert_eq!(r.code, 22, "{}", r.stderr);
    assert_eq!(s.hits(), 1);
    assert_eq!(r.stdout, "");
    assert!(r.stderr.contains("not in --expect"), "{}", r.stderr);
}

#[test]
fn retry_status_replaces_the_retryable_set() {
    let s = Server::start(vec![reply(404), reply(200).body("there")]);
    let r = retry(&["--http", &s.url, "--retry-status", "404,5xx", "-b", "10ms"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(s.hits(), 2);
    let s = Server::start(vec![reply(503)]);
    let r = retry(&["--http", &s.url, "--retry-status", "404", "-b", "10ms"]);
    assert_eq!((r.code, s.hits()), (22, 1), "{}", r.stderr);
}

#[test]
fn output_writes_the_body_to_a_file() {
    let s = Server::start(vec![reply(500), reply(200).body("payload")]);
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("body.out");
    let r = download(&s.url, &file, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, "");
    assert_eq!(std::fs::read_to_string(&file).expect("read"), "payload");
}

#[test]
fn secrets_are_masked_in_logs_but_sent_to_the_server() {
    let s = Server::start(vec![reply(503), reply(200)]);
    let url = format!("{}/x?token=t0ken-value&page=2", s.url);
    let r = retry(&[
        "--http",
        &url,
        "-H",
        "Authorization: Bearer s3cret-bearer",
        "-H",
        "X-Api-Key: k3y-value",
        "-H",
        "Cookie: session=c00kie",
        "-H",
        "Accept: text/plain",
        "-v",
        "-b",
        "10ms",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    for secret in ["s3cret-bearer", "k3y-value", "c00kie", "t0ken-value"] {
        assert!(!r.stderr.contains(secret), "{secret} leaked: {}", r.stderr);
    }
    assert!(r.stderr.contains("authorization: ***"), "{}", r.stderr);
    assert!(r.stderr.contains("accept: text/plain"), "{}", r.stderr);
    assert!(r.stderr.contains("page=2"), "{}", r.stderr);
    let seen = s.seen();
    assert_eq!(
        seen[0].header("Authorization"),
        Some("Bearer s3cret-bearer")
    );
    assert_eq!(seen[1].header("X-Api-Key"), Some("k3y-value"));
    assert_eq!(seen[0].path, "/x?token=t0ken-value&page=2");
}

#[test]
fn data_from_a_file_is_sent() {
    let s = Server::start(vec![reply(200)]);
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("body.json");
    std::fs::write(&file, "{\"from\":\"file\"}").expect("write");
    let data = format!("@{}", file.display());
    let r = retry(&["--http", &s.url, "-X", "PUT", "-d", &data]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let seen = s.seen();
    assert_eq!(seen[0].method, "PUT");
    assert_eq!(seen[0].body, b"{\"from\":\"file\"}");

    let missing = format!("@{}", dir.path().join("nope").display());
    let r = retry(&["--http", &s.url, "-d", &missing]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("--data"), "{}", r.stderr);
    assert_eq!(s.hits(), 1);
}

#[test]
fn data_from_a_file_loses_its_newlines_as_with_curl_and_data_binary_keeps_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("form");
    std::fs::write(&file, "a=1\r\n&b=2\n").expect("write");
    let at = format!("@{}", file.display());
    let s = Server::start(vec![reply(200)]);
    let r = retry(&["--http", &s.url, "-d", &at, "-d", "c=3\n"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    // Only the file's CR and LF go; a string is sent as given.
    assert_eq!(s.seen()[0].body, b"a=1&b=2&c=3\n");
    assert_eq!(
        s.seen()[0].header("Content-Type"),
        Some("application/x-www-form-urlencoded")
    );

    let s = Server::start(vec![reply(200)]);
    let r = retry(&["--http", &s.url, "--data-binary", &at, "-d", "c=3"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(s.seen()[0].method, "POST");
    assert_eq!(s.seen()[0].body, b"a=1\r\n&b=2\n&c=3");
    // In command-line order, whichever flag gave each piece.
    let s = Server::start(vec![reply(200)]);
    let r = retry(&["--http", &s.url, "-d", "c=3", "--data-binary", &at]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(s.seen()[0].body, b"c=3&a=1\r\n&b=2\n");
}

#[test]
fn http_and_a_command_are_a_usage_error() {
    let r = retry(&["--http", "http://127.0.0.1:9/", "--", "true"]);
    assert_eq!(r.code, 2);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(r.stderr.contains("--http"), "{}", r.stderr);
    let r = retry(&["--http", "gopher://127.0.0.1/"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("--http"), "{}", r.stderr);
    let r = retry(&["--http", "http://127.0.0.1:9/", "--replay-stdin"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("--replay-stdin"), "{}", r.stderr);
}

#[test]
fn dry_run_works_with_http() {
    let r = retry(&[
        "--http",
        "http://127.0.0.1:9/health",
        "-H",
        "Authorization: Bearer zzz",
        "--dry-run",
        "--seed",
        "1",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("GET http://127.0.0.1:9/health"),
        "{}",
        r.stdout
    );
    assert!(!r.stdout.contains("zzz"), "{}", r.stdout);
}

#[test]
fn redirects_are_followed_without_referer() {
    let s = Server::start(vec![
        reply(302).header("Location", "/moved"),
        reply(200).body("here"),
    ]);
    let r = retry(&[
        "--http",
        &format!("{}/start?token=t0k", s.url),
        "-H",
        "Authorization: Bearer same-origin",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, "here");
    let seen = s.seen();
    assert_eq!(seen[1].path, "/moved");
    // The URL we came from (token and all) is not passed on.
    assert_eq!(seen[1].header("Referer"), None);
    // Same origin: the credentials go along.
    assert_eq!(seen[1].header("Authorization"), Some("Bearer same-origin"));
}

#[test]
fn a_redirect_to_another_origin_drops_credentials() {
    let target = Server::start(vec![reply(200).body("elsewhere")]);
    // Another port is another origin.
    let origin = Server::start(vec![
        reply(307).header("Location", &format!("{}/landing", target.url)),
    ]);
    let r = retry(&[
        "--http",
        &format!("{}/start?sig=s1g", origin.url),
        "-H",
        "Authorization: Bearer s3cret",
        "-H",
        "Cookie: session=c00kie",
        "-H",
        "Accept: text/plain",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, "elsewhere");
    assert_eq!(
        origin.seen()[0].header("Authorization"),
        Some("Bearer s3cret")
    );
    let landed = &target.seen()[0];
    assert_eq!(landed.path, "/landing");
    assert_eq!(landed.header("Authorization"), None);
    assert_eq!(landed.header("Cookie"), None);
    assert_eq!(landed.header("Referer"), None);
    assert_eq!(landed.header("Accept"), Some("text/plain"));
}

#[test]
fn a_failed_tls_handshake_is_permanent_and_exits_35() {
    // A server that answers the TLS ClientHello with plain HTTP: no TLS
    // session can be set up, and trying again will not change that.
    let s = RawServer::start(|mut stream| {
        let mut hello = [0u8; 512];
        let _ = stream.read(&mut hello);
        let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
    });
    let r = retry(&[
        "--http",
        &format!("https://{}/", s.addr),
        "-n",
        "3",
        "-b",
        "10ms",
    ]);
    assert_eq!(r.code, 35, "{}", r.stderr);
    assert_eq!(s.connections(), 1, "{}", r.stderr);
    assert!(r.stderr.contains("TLS"), "{}", r.stderr);
    assert!(
        r.stderr.contains("giving up after 1 attempt"),
        "{}",
        r.stderr
    );
}

/// A URL with a space was percent-encoded and sent, where curl refuses it
/// (exit 3): it is refused in one line naming --http, and nothing is sent.
#[test]
fn a_url_with_a_space_is_refused_and_nothing_is_sent() {
    let s = Server::start(vec![reply(200)]);
    let url = format!("{}/a b?token=hunter2", s.url.replace("://", "://me:pw@"));
    let r = retry(&["--http", &url]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("--http") && r.stderr.contains("a space") && r.stderr.contains("%20"),
        "{}",
        r.stderr
    );
    assert!(
        !r.stderr.contains("hunter2") && !r.stderr.contains(":pw"),
        "{}",
        r.stderr
    );
    assert_eq!(s.hits(), 0);
}
