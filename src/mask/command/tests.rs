//! Command lines masked: curl's and other tools' forms, options named
//! like secrets, shell scripts word by word.

use super::*;

fn line(words: &[&str]) -> Vec<String> {
    let w: Vec<OsString> = words.iter().map(OsString::from).collect();
    command_line(&w)
}

#[test]
fn curl_command_lines() {
    assert_eq!(
        line(&[
            "curl",
            "-fsS",
            "-H",
            "Authorization: Bearer abc.def",
            "-H",
            "Accept: application/json",
            "-u",
            "admin:hunter2",
            "https://u:pw@api.example.com/v1?token=t0k&page=2",
        ]),
        [
            "curl",
            "-fsS",
            "-H",
            "Authorization: ***",
            "-H",
            "Accept: application/json",
            "-u",
            "admin:***",
            "https://u:***@api.example.com/v1?token=***&page=2",
        ]
    );
    assert_eq!(
        line(&["curl", "-uadmin:hunter2", "--user=me:pw", "-HX-Api-Key:abc"]),
        ["curl", "-uadmin:***", "--user=me:***", "-HX-Api-Key: ***"]
    );
    assert_eq!(
        line(&["curl", "-H", "X-Api-Key:abc", "-H", "cookie: a=b"]),
        ["curl", "-H", "X-Api-Key: ***", "-H", "cookie: ***"]
    );
    // A user without a password has nothing to hide.
    assert_eq!(
        line(&["curl", "-u", "admin", "h"]),
        ["curl", "-u", "admin", "h"]
    );
}

#[test]
fn secret_options() {
    assert_eq!(
        line(&[
            "deploy",
            "--password=hunter2",
            "--token",
            "t0k",
            "--api-key",
            "k3y",
            "--client-secret=s",
            "--verbose",
        ]),
        [
            "deploy",
            "--password=***",
            "--token",
            "***",
            "--api-key",
            "***",
            "--client-secret=***",
            "--verbose",
        ]
    );
    // A flag after a secret-named option is not its value.
    assert_eq!(
        line(&["x", "--token", "--dry-run"]),
        ["x", "--token", "--dry-run"]
    );
    // Where a secret is read from is not itself secret.
    assert_eq!(
        line(&["docker", "login", "--password-stdin", "registry.example"]),
        ["docker", "login", "--password-stdin", "registry.example"]
    );
    assert_eq!(
        line(&["x", "--password-file", "/run/secret"]),
        ["x", "--password-file", "/run/secret"]
    );
    assert_eq!(
        line(&["env", "API_TOKEN=abc", "DEBUG=1", "cmd"]),
        ["env", "API_TOKEN=***", "DEBUG=1", "cmd"]
    );
    assert_eq!(
        line(&["curl", "-d", "user=me&password=hunter2"]),
        ["curl", "-d", "user=me&password=***"]
    );
    assert_eq!(
        line(&["x", "--url=https://h/?sig=abc"]),
        ["x", "--url=https://h/?sig=***"]
    );
    assert_eq!(
        line(&[
            "curl",
            "--header=Authorization: Bearer abc",
            "--data=token=t"
        ]),
        ["curl", "--header=Authorization: ***", "--data=token=***"]
    );
    assert_eq!(
        line(&[
            "curl",
            "--json",
            "{\"user\": \"me\", \"password\": \"hunter2\"}"
        ]),
        [
            "curl",
            "--json",
            "{\"user\": \"me\", \"password\": \"***\"}"
        ]
    );
    assert_eq!(
        line(&["docker", "run", "-e", "AWS_SECRET_ACCESS_KEY=abc", "img"]),
        ["docker", "run", "-e", "AWS_SECRET_ACCESS_KEY=***", "img"]
    );
    assert_eq!(
        line(&["git", "clone", "https://oauth2:gh_t0k@example.com/r.git"]),
        ["git", "clone", "https://oauth2:***@example.com/r.git"]
    );
}

#[test]
fn harmless_words_are_untouched() {
    let words = [
        "make",
        "-j4",
        "test",
        "--max",
        "5",
        "a b c",
        "it's",
        "--",
        "x=1",
        "https://example.com/a?b=c",
        "-u",
    ];
    assert_eq!(line(&words), words);
    assert_eq!(line(&[]), Vec::<String>::new());
    // A program's name is never rewritten.
    assert_eq!(line(&["./token=x/run"]), ["./token=x/run"]);
}

/// `retry -- PGPASSWORD=x pg_isready` (meant for a shell, which reads the
/// assignment; exec takes it for the program) showed the password in every
/// log: assignments before the program are masked as `env`'s arguments.
#[test]
fn assignments_before_the_program_are_masked() {
    assert_eq!(
        line(&["PGPASSWORD=hunter2", "pg_isready", "-h", "db"]),
        ["PGPASSWORD=***", "pg_isready", "-h", "db"]
    );
    assert_eq!(
        line(&["LANG=C", "API_KEY=k", "GH_TOKEN=t", "./deploy=now", "x"]),
        ["LANG=C", "API_KEY=***", "GH_TOKEN=***", "./deploy=now", "x"]
    );
    assert_eq!(
        line(&["env", "DB_PASSWD=p", "AUTH=a", "run"]),
        ["env", "DB_PASSWD=***", "AUTH=***", "run"]
    );
    assert_eq!(
        line(&["sh", "-c", "MY_CREDENTIALS=c exec run"]),
        ["sh", "-c", "'MY_CREDENTIALS=***' exec run"]
    );
    // The program after the assignments is still a program: its own
    // password options are known.
    assert_eq!(
        line(&["A=1", "sshpass", "-p", "pw", "ssh", "h"]),
        ["A=1", "sshpass", "-p", "***", "ssh", "h"]
    );
}

/// A COMMAND that is no program's name (a whole command line in one word,
/// a URL: the mistakes the hints point out) is masked as an argument, for
/// the log's first line shows it whole.
#[test]
fn a_command_line_or_a_url_given_as_the_command_is_masked() {
    assert_eq!(
        line(&["curl -u me:hunter2 http://h/"]),
        ["curl -u 'me:***' http://h/"]
    );
    assert_eq!(
        line(&["PGPASSWORD=hunter2 psql -h db"]),
        ["'PGPASSWORD=***' psql -h db"]
    );
    assert_eq!(
        line(&["https://me:hunter2@h/x?token=t"]),
        ["https://me:***@h/x?token=***"]
    );
    // A program whose path has a space keeps it.
    assert_eq!(line(&["/opt/My App/run", "x"]), ["/opt/My App/run", "x"]);
}

#[test]
fn secrets_inside_a_shell_script_are_masked_and_the_rest_kept() {
    assert_eq!(
        line(&[
            "sh",
            "-c",
            "curl -fsS -u admin:hunter2 -H 'Authorization: Bearer abc.def' https://h/x && deploy --password pw2 --verbose",
        ]),
        [
            "sh",
            "-c",
            "curl -fsS -u 'admin:***' -H 'Authorization: ***' https://h/x && deploy --password '***' --verbose",
        ]
    );
    // Nested, double-quoted, escaped: the words the shell sees decide.
    assert_eq!(
        line(&[
            "bash",
            "-lc",
            "ssh host \"sh -c 'mysql -pS3cr3t db'\"; echo \"--token\" t\\0k",
        ]),
        [
            "bash",
            "-lc",
            "ssh host \"sh -c \\\"mysql '-p***' db\\\"\"; echo \"--token\" '***'",
        ]
    );
    // A script with nothing to hide comes back byte for byte.
    let plain = "for f in *.txt; do grep -E 'a:b' \"$f\" || exit 1; done";
    assert_eq!(line(&["sh", "-c", plain]), ["sh", "-c", plain]);
}

#[test]
fn tools_whose_own_options_take_a_password() {
    for (given, shown) in [
        (
            &["docker", "login", "-u", "me", "-p", "pw", "reg.example"][..],
            &["docker", "login", "-u", "me", "-p", "***", "reg.example"][..],
        ),
        (
            &["podman", "login", "-pPW", "reg"],
            &["podman", "login", "-p***", "reg"],
        ),
        (
            &["mysql", "-uroot", "-pS3cr3t", "db"],
            &["mysql", "-uroot", "-p***", "db"],
        ),
        // mysql's -p alone prompts; the next word is the database.
        (&["mysql", "-p", "db"], &["mysql", "-p", "db"]),
        (
            &["sshpass", "-p", "pw", "ssh", "host"],
            &["sshpass", "-p", "***", "ssh", "host"],
        ),
        (
            &["redis-cli", "-a", "pw", "-h", "db", "ping"],
            &["redis-cli", "-a", "***", "-h", "db", "ping"],
        ),
        (
            &["redis-cli", "--pass", "pw", "-u", "redis://:pw@db"],
            &["redis-cli", "--pass", "***", "-u", "redis://:***@db"],
        ),
        (
            &[
                "curl",
                "-E",
                "client.pem:pw",
                "--cert=c.pem:pw2",
                "-Ec.pem:pw3",
                "h",
            ],
            &[
                "curl",
                "-E",
                "client.pem:***",
                "--cert=c.pem:***",
                "-Ec.pem:***",
                "h",
            ],
        ),
        (
            &["curl", "--key", "k.pem", "--pass", "phrase", "h"],
            &["curl", "--key", "***", "--pass", "***", "h"],
        ),
        (
            &["psql", "host=db user=app password=s3cret dbname=x"],
            &["psql", "host=db user=app 'password=***' dbname=x"],
        ),
        (
            &["psql", "postgresql://app:s3cret@db/x?sslpassword=k"],
            &["psql", "postgresql://app:***@db/x?sslpassword=***"],
        ),
    ] {
        assert_eq!(line(given), shown, "{given:?}");
    }
    // The same short options mean nothing secret to other tools.
    for words in [
        &["ssh", "-p", "2222", "host"][..],
        &["mkdir", "-p", "a/b"],
        &["docker", "run", "-p", "8080:80", "img"],
        &["grep", "-E", "a:b", "f"],
        &["tar", "-a", "-cf", "x.tgz", "d"],
    ] {
        assert_eq!(line(words), words, "{words:?}");
    }
}
