//! **Pure.** Hints for mistakes a newcomer makes in a first minute: a
//! command line that parses and runs, but not as its author meant (`retry
//! 5 curl …`, a URL or `host:port` as COMMAND, a whole command in one
//! quoted word), and other tools' names for retry's flags. A hint never
//! changes what runs; it rides on the line that reports the mistake, and
//! it repeats nothing unmasked that may hold a secret (only a program's
//! name or a URL, masked as the log masks them, or a `host:port`).

use std::ffi::OsString;

/// For a COMMAND that was not found: what its author most likely meant.
pub fn command_not_found(command: &[OsString]) -> Option<String> {
    let first = command.first()?.to_str()?;
    let rest = &command[1..];
    if first == "help" {
        return Some("for retry's own help, write: retry --help (or -h for a summary)".to_string());
    }
    // `retry 3 -- curl ...`: the `--` after the count only ends retry's
    // options, as it would after `--max 3`; the program is the word after.
    let after_count = match rest.first() {
        Some(w) if w == "--" => &rest[1..],
        _ => rest,
    };
    if let Some(program) = after_count.first().and_then(|p| p.to_str())
        && let Ok(n) = first.trim().parse::<u32>()
        && n >= 1
    {
        let rest = after_count;
        let more = if rest.len() > 1 { " ..." } else { "" };
        return Some(format!(
            "to make up to {n} attempts, write: retry --max {n} -- {}{more}",
            shown_program(program)
        ));
    }
    if let Some(h) = assignments_first(command) {
        return Some(h);
    }
    if let Some(hint) = grpc_probe_command(command) {
        return Some(hint);
    }
    let lower = first.to_ascii_lowercase();
    if rest.is_empty() && (lower.starts_with("http://") || lower.starts_with("https://")) {
        return Some(format!(
            "to probe a URL, write: retry --http {}",
            crate::mask::url(first)
        ));
    }
    if rest.is_empty() && is_host_port(first) {
        return Some(format!(
            "to wait for a TCP port, write: retry --tcp {first}"
        ));
    }
    if first.trim().contains(char::is_whitespace) {
        let program = first.split_whitespace().next().unwrap_or(first);
        let program = shown_program(program);
        return Some(format!(
            "COMMAND is one word with spaces in it: give its words apart (retry -- {program} ...) or to a shell (retry -- sh -c '{program} ...')"
        ));
    }
    None
}

/// `retry -- PGPASSWORD=x pg_isready`: assignments a shell would read
/// before the command, which exec takes for the program. Shown masked, as
/// the log shows them, in the `env` line that was meant.
fn assignments_first(command: &[OsString]) -> Option<String> {
    let words: Vec<&str> = command.iter().map(|w| w.to_str()).collect::<Option<_>>()?;
    let n = words
        .iter()
        .take_while(|w| crate::mask::is_assignment(w) && !w.contains(char::is_whitespace))
        .count();
    if n == 0 {
        return None;
    }
    let assignments: Vec<String> = words[..n]
        .iter()
        .map(|w| crate::mask::argument(w))
        .collect();
    let names: Vec<&str> = words[..n]
        .iter()
        .map(|w| w.split_once('=').map_or(*w, |(name, _)| name))
        .collect();
    let program = match words.get(n) {
        Some(p) => {
            let more = if words.len() > n + 1 { " ..." } else { "" };
            format!("{}{more}", shown_program(p))
        }
        None => "COMMAND".to_string(),
    };
    let (what, it) = if n == 1 {
        ("is a shell variable assignment", "it")
    } else {
        ("are shell variable assignments", "them")
    };
    Some(format!(
        "{} {what}, not a command: to set {it} for the command, write: retry -- env {} {program}",
        names.join(", "),
        assignments.join(" ")
    ))
}

/// A COMMAND that is grpc-health-probe: retry's own probe makes the same
/// check and tells its answers apart (`-addr=`, `-service=` and `-tls`
/// carried over; nothing else, which may hold a secret).
pub fn grpc_probe_command(command: &[OsString]) -> Option<String> {
    let program = command.first()?.to_str()?;
    if program.rsplit('/').next() != Some("grpc-health-probe") {
        return None;
    }
    let mut words = vec!["retry --grpc".to_string()];
    let mut addr = "HOST:PORT".to_string();
    for arg in command[1..].iter().filter_map(|a| a.to_str()) {
        let arg = arg.trim_start_matches('-');
        if let Some(a) = arg.strip_prefix("addr=") {
            addr = crate::human::escape_controls(a).into_owned();
        } else if let Some(s) = arg.strip_prefix("service=") {
            words.push(format!(
                "--grpc-service {}",
                crate::human::escape_controls(s)
            ));
        } else if arg == "tls" {
            words.push("--grpc-tls".to_string());
        }
    }
    words.insert(1, addr);
    Some(format!(
        "did you mean {}? it makes the same check and retries NOT_SERVING but not UNIMPLEMENTED",
        words.join(" ")
    ))
}

/// A program's name as a hint shows it: masked as the log masks an
/// argument (the word may be `API_KEY=...`, not a program at all), then its
/// last path component.
fn shown_program(program: &str) -> String {
    let masked = crate::mask::argument(program);
    match masked.rsplit('/').next().filter(|p| !p.is_empty()) {
        Some(last) => last.to_string(),
        None => masked,
    }
}

/// `host:port` or `[v6]:port` with a port from 1 to 65535, as `--tcp`
/// takes it.
fn is_host_port(s: &str) -> bool {
    let Some((host, port)) = s.rsplit_once(':') else {
        return false;
    };
    let port_ok = !port.is_empty()
        && port.bytes().all(|b| b.is_ascii_digit())
        && port.parse::<u16>().is_ok_and(|p| p > 0);
    let host_ok = match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        Some(v6) => v6.parse::<std::net::Ipv6Addr>().is_ok(),
        None => {
            !host.is_empty()
                && host
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'))
                && host.bytes().any(|b| b.is_ascii_alphabetic() || b == b'.')
        }
    };
    port_ok && host_ok
}

/// Whether clap's guess `suggested` for the unknown flag `typed` is near
/// enough to offer as "did you mean": a typo (an edit or two for a short
/// name, a few more for a long one: at least 70 % alike, as
/// Damerau-Levenshtein counts) or the start of the flag's name. clap's own
/// measure, made for subcommand names, finds `--multiplier` in `--limit`
/// and `--expect` in `--exponential`; a wrong pointer is worse than none.
pub fn near_enough(typed: &str, suggested: &str) -> bool {
    let bare = |f: &str| {
        let f = f.split('=').next().unwrap_or(f);
        f.trim_start_matches('-').to_ascii_lowercase()
    };
    let (typed, suggested) = (bare(typed), bare(suggested));
    // curl's names for what retry does not do: a near name of ours means
    // something else (`--form` is no `--format`, `--bearer` no `--breaker`).
    if matches!(typed.as_str(), "form" | "bearer" | "oauth2-bearer" | "user") {
        return false;
    }
    if typed.len() >= 3 && suggested.starts_with(&typed) {
        return true;
    }
    strsim::normalized_damerau_levenshtein(&typed, &suggested) >= 0.7
}

/// retry's flag for what other retry tools (and curl, and CI retry
/// actions) call `flag`, with a word on how they differ; also the words a
/// newcomer reaches for where a near name of ours would mislead.
pub fn other_tools_flag(flag: &str) -> Option<&'static str> {
    let name = flag.split('=').next().unwrap_or(flag);
    Some(match name {
        "--limit" => "--max (attempts in total) or --max-time (the whole run's deadline)",
        "--exp" | "--expo" | "--exponential" => "--backoff exponential (the default)",
        "--linear" => "--backoff linear",
        "--fixed" | "--constant" => "--backoff fixed",
        "--factor" | "--backoff-factor" => "--multiplier (exponential growth's factor)",
        "--initial-delay" | "--min-delay" | "--initial" => "--base (the first wait)",
        "--backoff-max" => "--cap (the longest single wait)",
        "--exit-code" | "--code" | "--codes" => {
            "--retry-on, --stop-on or --success-on (lists of exit codes)"
        }
        "--silent" => "--quiet (-q: give-up lines only; -qq: nothing)",
        "--debug" => "--verbose (-v)",
        "--no-color" | "--no-colour" => "--color never",
        "--out" => "--output (HTTP mode's body to a file)",
        "--head" => "--method HEAD (curl's -I is -X HEAD here)",
        "--retries" | "--retry" | "--max-retries" | "--max-retry" | "--retry-count" => {
            "--max (attempts in total, the first included: 3 retries are --max 4)"
        }
        "--times" | "--attempts" | "--tries" | "--max-attempts" | "--count" => {
            "--max (attempts in total, the first included)"
        }
        "--delay" | "--sleep" | "--interval" | "--wait" | "--pause" | "--retry-delay"
        | "--retry-wait" => "--base (the first wait; --backoff fixed keeps every wait at it)",
        "--max-delay" | "--max-wait" | "--max-interval" | "--max-backoff" | "--retry-max-delay" => {
            "--cap (the longest single wait)"
        }
        "--deadline" | "--total-timeout" | "--max-duration" | "--retry-max-time" => {
            "--max-time (the whole run's deadline)"
        }
        "--attempt-timeout" | "--timeout-per-attempt" => "--timeout (each attempt's limit)",
        "--exit-codes" | "--retry-on-exit-code" => "--retry-on (only these exit codes are retried)",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hint(words: &[&str]) -> Option<String> {
        let command: Vec<OsString> = words.iter().map(OsString::from).collect();
        command_not_found(&command)
    }

    #[test]
    fn grpc_health_probe_is_pointed_to_grpc_with_its_own_flags_only() {
        assert_eq!(
            hint(&[
                "/bin/grpc-health-probe",
                "-addr=db:50051",
                "--service=app.Api",
                "-tls",
                "-tls-client-key=/secret"
            ])
            .as_deref(),
            Some(
                "did you mean retry --grpc db:50051 --grpc-service app.Api --grpc-tls? it makes the same check and retries NOT_SERVING but not UNIMPLEMENTED"
            )
        );
        assert!(hint(&["grpc-health-probe"]).is_some_and(|h| h.contains("--grpc HOST:PORT")));
        assert_eq!(hint(&["grpc-health-probe-x"]), None);
    }

    #[test]
    fn a_count_before_the_command_is_taken_for_max() {
        assert_eq!(
            hint(&["5", "curl", "-fsS", "http://u:pw@h/"]).as_deref(),
            Some("to make up to 5 attempts, write: retry --max 5 -- curl ...")
        );
        assert_eq!(
            hint(&["3", "/usr/bin/make"]).as_deref(),
            Some("to make up to 3 attempts, write: retry --max 3 -- make")
        );
        assert_eq!(hint(&["5"]), None);
        assert_eq!(hint(&["0", "make"]), None);
    }

    #[test]
    fn a_count_before_a_double_dash_hints_the_program_not_the_dash() {
        // `retry 3 -- curl ...` hinted `retry --max 3 -- -- ...`.
        assert_eq!(
            hint(&["3", "--", "curl", "-fsS", "http://h/"]).as_deref(),
            Some("to make up to 3 attempts, write: retry --max 3 -- curl ...")
        );
        assert_eq!(
            hint(&["3", "--", "make"]).as_deref(),
            Some("to make up to 3 attempts, write: retry --max 3 -- make")
        );
        assert_eq!(hint(&["3", "--"]), None);
    }

    #[test]
    fn retry_help_points_at_the_help_flag() {
        assert_eq!(
            hint(&["help"]).as_deref(),
            Some("for retry's own help, write: retry --help (or -h for a summary)")
        );
        assert!(hint(&["help", "max"]).is_some_and(|h| h.contains("retry --help")));
    }

    #[test]
    fn suggestions_that_point_the_wrong_way_are_not_offered() {
        for (typed, theirs) in [
            ("--limit", "--multiplier"),
            ("--exponential", "--expect"),
            ("--linear", "--insecure"),
            ("--code", "--model"),
            ("--man", "--max"),
            ("--id", "--idle-timeout"),
            ("--on-failure", "--log-file"),
            ("--form", "--format"),
            ("--bearer", "--breaker"),
        ] {
            assert!(!near_enough(typed, theirs), "{typed} -> {theirs}");
        }
        for (typed, ours) in [
            ("--bse", "--base"),
            ("--max-tim", "--max-time"),
            ("--maxtime", "--max-time"),
            ("--jiter", "--jitter"),
            ("--colour", "--color"),
            ("--dry", "--dry-run"),
            ("--dry_run", "--dry-run"),
            ("--simulation", "--simulate"),
            ("--multiply=3", "--multiplier"),
        ] {
            assert!(near_enough(typed, ours), "{typed} -> {ours}");
        }
    }

    #[test]
    fn a_url_or_a_port_as_command_is_taken_for_a_probe() {
        assert_eq!(
            hint(&["https://example.com/health"]).as_deref(),
            Some("to probe a URL, write: retry --http https://example.com/health")
        );
        let masked = hint(&["https://u:secret@example.com/?token=abc"]).expect("a hint");
        assert!(
            !masked.contains("secret") && !masked.contains("abc"),
            "{masked}"
        );
        assert_eq!(
            hint(&["db:5432"]).as_deref(),
            Some("to wait for a TCP port, write: retry --tcp db:5432")
        );
        assert!(hint(&["[::1]:6379"]).is_some_and(|h| h.contains("--tcp [::1]:6379")));
        for not in ["db:0", "db:99999", "a:b", "12:30", "db:5432/x"] {
            assert_eq!(hint(&[not]), None, "{not}");
        }
    }

    #[test]
    fn a_command_in_one_word_is_taken_apart() {
        let h = hint(&["curl -fsS -u me:pw http://h/"]).expect("a hint");
        assert!(
            h.contains("retry -- curl ...") && h.contains("sh -c 'curl ...'"),
            "{h}"
        );
        assert!(!h.contains("pw"), "{h}");
        assert_eq!(hint(&["make"]), None);
    }

    #[test]
    fn a_word_taken_for_the_program_is_shown_masked() {
        let h = hint(&["PGPASSWORD=hunter2 psql -h db"]).expect("a hint");
        assert!(!h.contains("hunter2"), "{h}");
        assert!(h.contains("retry -- PGPASSWORD=*** ..."), "{h}");
        let h = hint(&["3", "API_TOKEN=hunter2", "./deploy"]).expect("a hint");
        assert!(!h.contains("hunter2"), "{h}");
    }

    /// `retry -- PGPASSWORD=x pg_isready` failed with 127 and no word on
    /// why: the hint names `env`, without the password.
    #[test]
    fn an_assignment_as_command_is_pointed_at_env() {
        assert_eq!(
            hint(&["PGPASSWORD=hunter2", "pg_isready", "-h", "db"]).as_deref(),
            Some(
                "PGPASSWORD is a shell variable assignment, not a command: to set it for the command, write: retry -- env PGPASSWORD=*** pg_isready ..."
            )
        );
        assert_eq!(
            hint(&["LANG=C", "API_KEY=k", "/usr/bin/deploy"]).as_deref(),
            Some(
                "LANG, API_KEY are shell variable assignments, not a command: to set them for the command, write: retry -- env LANG=C API_KEY=*** deploy"
            )
        );
        let h = hint(&["TOKEN=hunter2"]).expect("a hint");
        assert!(h.ends_with("env TOKEN=*** COMMAND"), "{h}");
    }

    #[test]
    fn other_tools_names_point_at_ours() {
        for (theirs, ours) in [
            ("--retries", "--max"),
            ("--times", "--max"),
            ("--attempts", "--max"),
            ("--delay", "--base"),
            ("--sleep", "--base"),
            ("--interval=5", "--base"),
            ("--max-delay", "--cap"),
            ("--limit", "--max"),
            ("--exponential", "--backoff exponential"),
            ("--linear", "--backoff linear"),
            ("--no-color", "--color never"),
        ] {
            let h = other_tools_flag(theirs).expect(theirs);
            assert!(h.starts_with(ours), "{theirs}: {h}");
        }
        assert_eq!(other_tools_flag("--bse"), None);
    }
}
