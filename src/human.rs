//! **Pure.** Durations, counts and command lines as people read them.
//!
//! The log, the loop's messages, the dry-run and simulation reports and the
//! classification's explanations all show values the same way; this sits
//! below all of them so that none has to import another for a format.

pub mod tls;

use std::ffi::OsString;
use std::time::Duration;

/// A duration rounded to whole milliseconds, for display.
pub fn round_ms(d: Duration) -> Duration {
    Duration::from_millis(u64::try_from((d.as_micros() + 500) / 1000).unwrap_or(u64::MAX))
}

/// A duration for people: whole milliseconds, `870ms`, `2s 312ms`, `1m 5s`,
/// `1d 2h`. Days are the largest unit (a month or a year has no fixed
/// length), and every form reads back as a DUR.
pub fn human(d: Duration) -> String {
    let ms = round_ms(d).as_millis();
    if ms == 0 {
        return "0s".to_string();
    }
    let units: [(u128, &str); 5] = [
        (86_400_000, "d"),
        (3_600_000, "h"),
        (60_000, "m"),
        (1_000, "s"),
        (1, "ms"),
    ];
    let mut left = ms;
    let mut parts = Vec::new();
    for (size, name) in units {
        let n = left / size;
        left %= size;
        if n > 0 {
            parts.push(format!("{n}{name}"));
        }
    }
    parts.join(" ")
}

/// Waits beyond this (a year) are shown as "over a year": a server asking
/// for 584 million years means "never", not a date.
pub const ABSURD_WAIT: Duration = Duration::from_secs(365 * 86_400);

/// A wait someone else asked for (Retry-After), which may be absurd.
pub fn asked_wait(d: Duration) -> String {
    if d > ABSURD_WAIT {
        "over a year".to_string()
    } else {
        human(d)
    }
}

/// A value echoed in a message, on one line: control characters (a newline,
/// an escape sequence) are shown escaped, as `\n` or `\x1b`, so a message
/// can neither break into two lines nor drive the terminal.
pub fn escape_controls(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(char::is_control) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            // Control characters (Unicode's Cc) all lie below U+0100.
            c if c.is_control() => out.push_str(&format!("\\x{:02x}", u32::from(c))),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// `3/5`, or `3` without a limit.
pub fn of_max(attempt: u32, max: Option<u32>) -> String {
    match max {
        Some(m) => format!("{attempt}/{m}"),
        None => attempt.to_string(),
    }
}

/// Quote a command line the way a shell would read it back. A word with a
/// control character (an escape sequence, a carriage return) is written in
/// bash's `$'...'` form, escaped, so that showing it cannot drive the
/// terminal.
pub fn shell_line(command: &[OsString]) -> String {
    let words: Vec<String> = command
        .iter()
        .map(|w| {
            let w = w.to_string_lossy();
            if w.chars().any(char::is_control) {
                let inner =
                    escape_controls(&w.replace('\\', "\\\\").replace('\'', "\\'")).into_owned();
                return format!("$'{inner}'");
            }
            shlex::try_quote(&w).map_or_else(|_| format!("{w:?}"), |q| q.into_owned())
        })
        .collect();
    words.join(" ")
}

/// An I/O error in words, as `strerror` puts it but without Rust's
/// "(os error N)" suffix and with a lower-case start, to sit inside a
/// sentence: "connection refused".
pub fn io_error(e: &std::io::Error) -> String {
    let Some(code) = e.raw_os_error() else {
        return e.to_string();
    };
    let desc = nix::errno::Errno::from_raw(code).desc();
    let mut chars = desc.chars();
    match chars.next() {
        // Keep acronyms ("I/O error") as they are.
        Some(c) if chars.next().is_some_and(char::is_lowercase) => c
            .to_lowercase()
            .chain(desc[c.len_utf8()..].chars())
            .collect(),
        _ => desc.to_string(),
    }
}

/// A byte count as people read it: `1 GiB`, `64 MiB`, `1500 bytes`; exact
/// (a unit only where the count is a whole number of it).
pub fn human_size(bytes: u64) -> String {
    for (unit, scale) in [
        ("TiB", 1u64 << 40),
        ("GiB", 1 << 30),
        ("MiB", 1 << 20),
        ("KiB", 1 << 10),
    ] {
        if bytes >= scale && bytes.is_multiple_of(scale) {
            return format!("{} {unit}", bytes / scale);
        }
    }
    if bytes == 1 {
        "1 byte".to_string()
    } else {
        format!("{bytes} bytes")
    }
}

/// A byte count rounded for a person: `1500 bytes`, `12.3 KiB`, `1.2 GiB`
/// (three significant digits at most).
pub fn human_size_about(bytes: u64) -> String {
    for (unit, scale) in [
        ("TiB", 1u64 << 40),
        ("GiB", 1 << 30),
        ("MiB", 1 << 20),
        ("KiB", 1 << 10),
    ] {
        if bytes >= scale {
            let v = bytes as f64 / scale as f64;
            let text = match v {
                v if v >= 100.0 => format!("{v:.0}"),
                v if v >= 10.0 => format!("{v:.1}"),
                v => format!("{v:.2}"),
            };
            let text = match text.contains('.') {
                true => text.trim_end_matches('0').trim_end_matches('.').to_string(),
                false => text,
            };
            return format!("{text} {unit}");
        }
    }
    human_size(bytes)
}

/// A count with its thousands grouped: `1,234,567`.
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_grouped_in_thousands() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1000), "1,000");
        assert_eq!(grouped(1_234_567), "1,234,567");
    }

    #[test]
    fn sizes_about_keep_three_digits_and_no_trailing_zeros() {
        assert_eq!(human_size_about(1), "1 byte");
        assert_eq!(human_size_about(1023), "1023 bytes");
        assert_eq!(human_size_about(1024), "1 KiB");
        assert_eq!(human_size_about(1536), "1.5 KiB");
        assert_eq!(human_size_about(300_000), "293 KiB");
        assert_eq!(human_size_about(12_900_000), "12.3 MiB");
        assert_eq!(human_size_about(1_288_490_189), "1.2 GiB");
    }

    #[test]
    fn io_errors_read_as_part_of_a_sentence() {
        use std::io::Error;
        assert_eq!(
            io_error(&Error::from_raw_os_error(nix::libc::ECONNREFUSED)),
            "connection refused"
        );
        assert_eq!(
            io_error(&Error::from_raw_os_error(nix::libc::EIO)),
            "I/O error"
        );
        assert_eq!(io_error(&Error::other("as is")), "as is");
    }

    #[test]
    fn shell_quoting() {
        let cmd: Vec<OsString> = ["echo", "a b", "it's"].iter().map(OsString::from).collect();
        assert_eq!(shell_line(&cmd), r#"echo 'a b' "it's""#);
        // A control character in COMMAND (`-v`'s "running" line) reached
        // the terminal raw: it is written as bash reads it back, escaped.
        let cmd: Vec<OsString> = ["printf", "\x1b[2J\r'\\"]
            .iter()
            .map(OsString::from)
            .collect();
        assert_eq!(shell_line(&cmd), r"printf $'\x1b[2J\r\'\\'");
    }

    #[test]
    fn human_durations() {
        assert_eq!(human(Duration::from_micros(312_400)), "312ms");
        assert_eq!(human(Duration::from_millis(2312)), "2s 312ms");
        assert_eq!(human(Duration::from_secs(65)), "1m 5s");
        assert_eq!(human(Duration::ZERO), "0s");
        assert_eq!(human(Duration::from_secs(93_600)), "1d 2h");
        assert_eq!(human(Duration::from_millis(90_061_001)), "1d 1h 1m 1s 1ms");
        assert_eq!(human(Duration::from_secs(3600)), "1h");
        // Whatever the size, days stay the largest unit.
        assert_eq!(human(Duration::from_secs(99_999_999)), "1157d 9h 46m 39s");
        assert!(human(Duration::MAX).starts_with("213503982334d "));
    }

    #[test]
    fn human_durations_read_back_as_durations() {
        for ms in [1, 999, 1000, 61_001, 3_600_000, 93_784_005] {
            let d = Duration::from_millis(ms);
            let shown = human(d);
            assert_eq!(humantime::parse_duration(&shown).expect(&shown), d);
        }
    }

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(escape_controls("plain value"), "plain value");
        assert_eq!(escape_controls("a\nb\rc\td"), "a\\nb\\rc\\td");
        assert_eq!(escape_controls("\u{1b}[31mred"), "\\x1b[31mred");
        assert_eq!(escape_controls("\u{7f}\u{85}"), "\\x7f\\x85");
        assert_eq!(escape_controls("é ✓"), "é ✓");
    }

    #[test]
    fn sizes_as_people_read_them() {
        assert_eq!(human_size(1 << 30), "1 GiB");
        assert_eq!(human_size(64 << 20), "64 MiB");
        assert_eq!(human_size(1500), "1500 bytes");
        assert_eq!(human_size(1), "1 byte");
        assert_eq!(human_size(3 << 10), "3 KiB");
    }
}
