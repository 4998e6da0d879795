//! Secrets in every shape: a password that breaks a URL's parse, and secret
//! files another user could plant or own. The second user is real
//! (`nobody`, through setpriv).

use crate::util::{retry, retry_sh};

/// The pieces of a password with every character that ends a URL's user
/// info early: none may show.
const PIECES: [&str; 4] = ["AAAA", "BBBB", "CCCC", "DDDD"];

fn shows_no_piece(line: &str) {
    for piece in PIECES {
        assert!(!line.contains(piece), "{piece} in {line}");
    }
}

/// A store password with a raw `/`, `?` or `#` (a third of `openssl rand
/// -base64` outputs) was printed in clear in the `--state` usage error, for
/// every Redis scheme.
#[test]
fn a_store_password_that_breaks_the_url_is_never_echoed() {
    for scheme in [
        "redis",
        "rediss",
        "redis+sentinel",
        "rediss+sentinel",
        "redis+cluster",
        "rediss+cluster",
    ] {
        for password in ["AAAA/BBBB?CCCC#DDDD", "AAAA#BBBB", "AAAA?BBBB/CCCC"] {
            let url = format!("{scheme}://app:{password}@db.example:6379/mymaster");
            let line = retry_sh(&["--group", "g", "--state", &url], "true")
                .run()
                .expect_usage_line("--state");
            shows_no_piece(&line);
            assert!(
                line.contains(&format!("'{scheme}://***@db.example")),
                "{line}"
            );
        }
    }
    // From the environment too.
    let line = retry(["--group", "g", "--budget", "--", "true"])
        .env("RETRY_STATE", "redis://:AAAA/BBBB@db.example")
        .run()
        .expect_usage_line("RETRY_STATE");
    shows_no_piece(&line);
}

/// The same hole in the other URLs retry takes: `--http`, `--ping`,
/// `--metrics-push`.
#[test]
fn a_web_password_that_breaks_the_url_is_never_echoed() {
    let url = "https://app:AAAA/BBBB?CCCC#DDDD@h.example:x/";
    for (flag, args) in [
        ("--http", vec!["--http", url]),
        ("--ping", vec!["--ping", url, "--", "true"]),
        ("--metrics-push", vec!["--metrics-push", url, "--", "true"]),
    ] {
        let line = retry(&args).run().expect_usage_line(flag);
        shows_no_piece(&line);
        assert!(line.contains("https://***@h.example"), "{line}");
    }
}
