//! Secrets in every shape: a password that breaks a URL's parse, and secret
//! files another user could plant or own. The second user is real
//! (`nobody`, through setpriv).

use crate::util::{
    NOBODY, Sticky, as_nobody, path_str, plays_a_second_user, retry, retry_sh, scratch,
};

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

/// The secret-file flags, each with the rest of a command line that reads
/// the file and runs `true` (a store, gateway or monitor that is down only
/// costs a warning), and what the file holds.
fn secret_flags() -> [(&'static str, Vec<&'static str>, &'static str); 3] {
    [
        ("--ping-file", vec![], "http://127.0.0.1:9/ping\n"),
        (
            "--metrics-push-password-file",
            vec!["--metrics-push", "http://127.0.0.1:9/"],
            "hunter2\n",
        ),
        (
            "--state-password-file",
            vec!["--group", "g", "--budget", "--state", "redis://127.0.0.1:9"],
            "hunter2\n",
        ),
    ]
}

/// Secret files in a directory others can write to were read through
/// another user's symbolic link (at the last component or at a directory
/// before it), or from another user's file: each is refused with one line
/// naming the flag, exit 2, as retry refuses to write through them. The
/// caller's own file and link there are read as anywhere.
#[test]
fn secret_files_another_user_planted_or_owns_in_a_shared_directory_are_refused() {
    use std::os::unix::fs::symlink;
    if !plays_a_second_user() {
        return;
    }
    let tmp = Sticky::new();
    let mine = scratch();
    for (flag, rest, content) in secret_flags() {
        let secret = mine.path().join("secret");
        std::fs::write(&secret, content).expect("secret");
        let name = flag.trim_start_matches('-');
        let (link, theirs, dir_link) = (
            tmp.join(&format!("{name}-link")),
            tmp.join(&format!("{name}-theirs")),
            tmp.join(&format!("{name}-dir")),
        );
        as_nobody(&format!(
            "ln -s '{secret}' '{link}' && printf '{content}' > '{theirs}' && ln -s '{dir}' '{dir_link}'",
            secret = path_str(&secret),
            link = path_str(&link),
            theirs = path_str(&theirs),
            dir = path_str(mine.path()),
            dir_link = path_str(&dir_link),
        ));
        let run = |file: &str| {
            let mut args = rest.clone();
            args.extend([flag, file, "--", "true"]);
            retry(&args).run()
        };
        for (file, why) in [
            (
                link.clone(),
                format!("is a symbolic link made by another user (uid {NOBODY})"),
            ),
            (
                theirs.clone(),
                format!("is another user's file (uid {NOBODY})"),
            ),
            (
                dir_link.join("secret"),
                format!("-dir is a symbolic link made by another user (uid {NOBODY})"),
            ),
        ] {
            let line = run(&path_str(&file)).expect_usage_line(flag);
            assert!(line.contains(&why), "{line}");
        }
        // The caller's own file, and the caller's own link, are read.
        let own = tmp.join(&format!("{name}-own"));
        std::fs::write(&own, content).expect("own");
        let own_link = tmp.join(&format!("{name}-own-link"));
        symlink(&secret, &own_link).expect("own link");
        for file in [own, own_link] {
            let out = run(&path_str(&file));
            out.expect_code(0);
        }
    }
}

/// Judging where a secret file lies must not cost what worked before: a
/// file in a directory its reader may pass through but not list (mode
/// 0711, as a home directory often is) is read as before.
#[test]
fn a_secret_file_in_a_directory_that_cannot_be_listed_is_still_read() {
    use std::os::unix::fs::PermissionsExt;
    if !plays_a_second_user() {
        return;
    }
    let (_bin_dir, bin) = crate::util::bin_for_anyone();
    let top = crate::util::scratch_for_anyone();
    let dir = top.path().join("home");
    std::fs::create_dir(&dir).expect("mkdir");
    let file = dir.join("ping");
    std::fs::write(&file, "http://127.0.0.1:9/ping\n").expect("write");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o711)).expect("chmod");
    let out = crate::util::as_nobody_command(&format!(
        "'{}' --ping-file '{}' -- true",
        path_str(&bin),
        path_str(&file)
    ))
    .output()
    .expect("retry as nobody");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("ping to http://127.0.0.1:9/***"), "{err}");
}
