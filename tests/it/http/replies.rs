//! What comes back: replies that are not HTTP, and redirects (followed by
//! retry hop by hop, with curl's exit statuses when they cannot be).

use super::*;

// ---- replies that are not HTTP: curl's 8, said in words ---------------------

#[test]
fn replies_that_are_not_http_exit_8_and_say_what_was_wrong() {
    for (bytes, says) in [
        (&b"hello there\r\n\r\n"[..], "it begins with 'hello there'"),
        (
            &b"HTTP/1.1 099 Odd\r\nContent-Length: 0\r\n\r\n"[..],
            "its status code is not a number from 100 to 999",
        ),
        (
            &b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd"[..],
            "Content-Length is invalid, or given twice with different values",
        ),
    ] {
        let s = Server::start(vec![raw(bytes)]);
        let r = retry(&["--http", &s.url, "-b", "10ms"]);
        assert_eq!(r.code, 8, "{says}: {}", r.stderr);
        assert!(r.stderr.contains(says), "{}", r.stderr);
        assert!(r.stderr.contains("the reply is not HTTP"), "{}", r.stderr);
        // Asking the same server again would get the same answer.
        assert_eq!(s.hits(), 1, "{says}: {}", r.stderr);
        assert_eq!(r.stdout, "");
        assert!(
            !r.stderr.contains("invalid HTTP version parsed"),
            "{}",
            r.stderr
        );
    }
}

#[test]
fn a_tls_server_behind_an_http_url_is_named_as_such() {
    // The start of a TLS alert record, as a TLS server answers plain text.
    let s = Server::start(vec![raw(&[21, 3, 3, 0, 2, 2, 50])]);
    expect_tls_named(&s.url);
    assert_eq!(s.hits(), 1);
}

// ---- redirects ---------------------------------------------------------------

#[test]
fn too_many_redirects_exit_47() {
    let s = Server::start(vec![reply(302).header("Location", "/again")]);
    let r = retry(&["--http", &s.url, "--max-redirs", "3", "-b", "10ms"]);
    assert_eq!(r.code, 47, "{}", r.stderr);
    assert!(
        r.stderr.contains("more than --max-redirs 3"),
        "{}",
        r.stderr
    );
    // The first request and three redirects followed; not retried.
    assert_eq!(s.hits(), 4);
}

#[test]
fn max_redirs_0_does_not_follow() {
    let s = Server::start(vec![
        reply(301).header("Location", "/moved"),
        reply(200).body("moved"),
    ]);
    let r = retry(&["--http", &s.url, "--max-redirs", "0"]);
    assert_eq!(r.code, 22, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("HTTP 301 is a redirect that was not followed"),
        "{}",
        r.stderr
    );
    assert_eq!(s.hits(), 1);
    // The redirect itself may be what is expected.
    let s = Server::start(vec![reply(301).header("Location", "/moved")]);
    let r = retry(&["--http", &s.url, "--max-redirs", "0", "--expect", "301"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
}

#[test]
fn a_redirect_to_another_scheme_exits_1() {
    let s = Server::start(vec![
        reply(302).header("Location", "ftp://user:pw@127.0.0.1/file"),
    ]);
    let r = retry(&["--http", &s.url, "-b", "10ms"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("http:// and https:// only"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("ftp://user:***@127.0.0.1/file"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("pw@"), "{}", r.stderr);
    assert_eq!(s.hits(), 1);
}

#[test]
fn an_invalid_location_is_named_and_shown_masked() {
    let s = Server::start(vec![
        reply(301).header("Location", "http://[::1/?token=t0k"),
    ]);
    let r = retry(&["--http", &s.url, "-b", "10ms"]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(
        r.stderr.contains("the redirect's Location is not a valid URL: HTTP 301 with Location: http://[::1/?token=***"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("t0k"), "{}", r.stderr);
    assert!(!r.stderr.contains("without a Location"), "{}", r.stderr);
}

#[test]
fn verbose_logs_each_hop_masked() {
    let s = Server::start(vec![
        reply(302).header("Location", "/second?token=t0k"),
        reply(307).header("Location", "/third"),
        reply(200).body("there"),
    ]);
    let r = retry(&["--http", &s.url, "-v"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, "there");
    let hops: Vec<&str> = r
        .stderr
        .lines()
        .filter(|l| l.contains("redirect "))
        .collect();
    assert_eq!(hops.len(), 2, "{}", r.stderr);
    assert!(hops[0].contains("redirect 1: HTTP 302 to "), "{}", hops[0]);
    assert!(hops[0].ends_with("/second?token=***"), "{}", hops[0]);
    assert!(hops[1].contains("redirect 2: HTTP 307 to "), "{}", hops[1]);
    assert!(!r.stderr.contains("t0k"), "{}", r.stderr);
    // Not without -v.
    let s = Server::start(vec![reply(302).header("Location", "/x"), reply(200)]);
    let r = retry(&["--http", &s.url]);
    assert!(!r.stderr.contains("redirect 1"), "{}", r.stderr);
}

#[test]
fn secret_looking_headers_stay_behind_on_another_origin() {
    let target = Server::start(vec![reply(200).body("elsewhere")]);
    let origin = Server::start(vec![
        reply(302).header("Location", &format!("{}/landing", target.url)),
    ]);
    let r = retry(&[
        "--http",
        &origin.url,
        "-H",
        "X-Api-Key: k3y",
        "-H",
        "X-Api-Token: t0k",
        "-H",
        "Private-Token: p4t",
        "-H",
        "X-Request-Id: 42",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(origin.seen()[0].header("X-Api-Key"), Some("k3y"));
    let landed = &target.seen()[0];
    for secret in ["X-Api-Key", "X-Api-Token", "Private-Token"] {
        assert_eq!(landed.header(secret), None, "{secret}");
    }
    assert_eq!(landed.header("X-Request-Id"), Some("42"));

    // On the same origin they go along.
    let s = Server::start(vec![reply(302).header("Location", "/next"), reply(200)]);
    let r = retry(&["--http", &s.url, "-H", "X-Api-Key: k3y"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(s.seen()[1].header("X-Api-Key"), Some("k3y"));
}

#[test]
fn a_post_answered_with_303_is_followed_by_a_get_without_its_body() {
    let s = Server::start(vec![
        reply(303).header("Location", "/status"),
        reply(200).body("done"),
    ]);
    let r = retry(&["--http", &s.url, "-d", "order=1"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let seen = s.seen();
    assert_eq!(
        (seen[0].method.as_str(), seen[0].body.as_slice()),
        ("POST", &b"order=1"[..])
    );
    assert_eq!(seen[1].method, "GET");
    assert!(seen[1].body.is_empty());
    assert_eq!(seen[1].header("Content-Type"), None);
    // 307 repeats the request as it was.
    let s = Server::start(vec![reply(307).header("Location", "/again"), reply(200)]);
    let r = retry(&["--http", &s.url, "-d", "order=1"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let seen = s.seen();
    assert_eq!(
        (seen[1].method.as_str(), seen[1].body.as_slice()),
        ("POST", &b"order=1"[..])
    );
}
