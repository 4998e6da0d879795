//! Signal names and numbers, both ways, as `kill -l` spells them.
//!
//! Pure. Accepts every name Linux's `kill -l` knows, with or without `SIG`,
//! in any case, the aliases `IOT`, `CLD` and `POLL`, the real-time signals
//! as `RTMIN`, `RTMIN+N`, `RTMAX-N` and `RTMAX`, and plain numbers. Numbers
//! stay raw `i32`s: `nix::sys::signal::Signal` has no real-time signals.

use nix::libc;

/// Standard signals: canonical names first, so [`name`] finds them before
/// the aliases that share their numbers.
const NAMED: &[(&str, i32)] = &[
    ("HUP", libc::SIGHUP),
    ("INT", libc::SIGINT),
    ("QUIT", libc::SIGQUIT),
    ("ILL", libc::SIGILL),
    ("TRAP", libc::SIGTRAP),
    ("ABRT", libc::SIGABRT),
    ("BUS", libc::SIGBUS),
    ("FPE", libc::SIGFPE),
    ("KILL", libc::SIGKILL),
    ("USR1", libc::SIGUSR1),
    ("SEGV", libc::SIGSEGV),
    ("USR2", libc::SIGUSR2),
    ("PIPE", libc::SIGPIPE),
    ("ALRM", libc::SIGALRM),
    ("TERM", libc::SIGTERM),
    #[cfg(any(target_os = "linux", target_os = "android"))]
    ("STKFLT", libc::SIGSTKFLT),
    ("CHLD", libc::SIGCHLD),
    ("CONT", libc::SIGCONT),
    ("STOP", libc::SIGSTOP),
    ("TSTP", libc::SIGTSTP),
    ("TTIN", libc::SIGTTIN),
    ("TTOU", libc::SIGTTOU),
    ("URG", libc::SIGURG),
    ("XCPU", libc::SIGXCPU),
    ("XFSZ", libc::SIGXFSZ),
    ("VTALRM", libc::SIGVTALRM),
    ("PROF", libc::SIGPROF),
    ("WINCH", libc::SIGWINCH),
    ("IO", libc::SIGIO),
    #[cfg(any(target_os = "linux", target_os = "android"))]
    ("PWR", libc::SIGPWR),
    ("SYS", libc::SIGSYS),
    // Aliases.
    ("IOT", libc::SIGABRT),
    ("CLD", libc::SIGCHLD),
    ("POLL", libc::SIGIO),
];

/// The real-time range, when the platform has one: (RTMIN, RTMAX).
fn realtime() -> Option<(i32, i32)> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        Some((libc::SIGRTMIN(), libc::SIGRTMAX()))
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        None
    }
}

/// The largest signal number accepted.
fn highest() -> i32 {
    realtime().map_or(31, |(_, max)| max)
}

/// `TERM`, `SIGTERM`, `term`, `15`, `RTMIN+2` or `SIGRTMAX-1` as a signal
/// number; None for anything else (including 0, which sends nothing).
pub fn parse(s: &str) -> Option<i32> {
    let t = s.trim();
    if t.bytes().all(|b| b.is_ascii_digit()) {
        return t
            .parse::<i32>()
            .ok()
            .filter(|&n| (1..=highest()).contains(&n));
    }
    let upper = t.to_ascii_uppercase();
    let bare = upper.strip_prefix("SIG").unwrap_or(&upper);
    if let Some(&(_, n)) = NAMED.iter().find(|(name, _)| *name == bare) {
        return Some(n);
    }
    let (min, max) = realtime()?;
    let offset = |rest: &str| -> Option<i32> {
        if rest.is_empty() || !rest.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        rest.parse::<i32>().ok()
    };
    let n = if bare == "RTMIN" {
        min
    } else if bare == "RTMAX" {
        max
    } else if let Some(rest) = bare.strip_prefix("RTMIN+") {
        min.checked_add(offset(rest)?)?
    } else if let Some(rest) = bare.strip_prefix("RTMAX-") {
        max.checked_sub(offset(rest)?)?
    } else {
        return None;
    };
    (min..=max).contains(&n).then_some(n)
}

/// `SIGTERM` for 15, `SIGRTMIN+2` or `SIGRTMAX-3` for real-time signals
/// (counted from the nearer end, as `kill -l` does), `signal N` otherwise.
pub fn name(n: i32) -> String {
    if let Some(&(name, _)) = NAMED.iter().find(|&&(_, num)| num == n) {
        return format!("SIG{name}");
    }
    match realtime() {
        Some((min, max)) if (min..=max).contains(&n) => {
            if n == min {
                "SIGRTMIN".to_string()
            } else if n == max {
                "SIGRTMAX".to_string()
            } else if n - min <= (max - min) / 2 {
                format!("SIGRTMIN+{}", n - min)
            } else {
                format!("SIGRTMAX-{}", max - n)
            }
        }
        _ => format!("signal {n}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_in_every_spelling() {
        for s in ["TERM", "SIGTERM", "term", "SigTerm", " 15 ", "15"] {
            assert_eq!(parse(s), Some(libc::SIGTERM), "{s}");
        }
        assert_eq!(parse("sigint"), Some(libc::SIGINT));
        assert_eq!(parse("9"), Some(libc::SIGKILL));
        assert_eq!(parse("IOT"), Some(libc::SIGABRT));
        assert_eq!(parse("cld"), Some(libc::SIGCHLD));
        assert_eq!(parse("SIGPOLL"), Some(libc::SIGIO));
        assert_eq!(parse("winch"), Some(libc::SIGWINCH));
    }

    #[test]
    fn every_standard_name_round_trips() {
        for &(n, num) in NAMED {
            assert_eq!(parse(n), Some(num), "{n}");
            assert_eq!(parse(&name(num)), Some(num), "{n}");
        }
    }

    #[test]
    fn rejects_what_is_not_a_signal() {
        for s in [
            "", "0", "NOPE", "SIG", "-9", "+9", "9x", "RTMIN+", "RTMIN+x", "RTMAX+1",
        ] {
            assert_eq!(parse(s), None, "{s:?}");
        }
        assert_eq!(parse(&(highest() + 1).to_string()), None);
        assert_eq!(parse("99999999999"), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn real_time_signals_as_kill_l_names_them() {
        let (min, max) = (libc::SIGRTMIN(), libc::SIGRTMAX());
        assert_eq!(parse("RTMIN"), Some(min));
        assert_eq!(parse("sigrtmin+2"), Some(min + 2));
        assert_eq!(parse("RTMAX-1"), Some(max - 1));
        assert_eq!(parse("RTMAX"), Some(max));
        assert_eq!(parse(&format!("RTMIN+{}", max - min)), Some(max));
        assert_eq!(parse(&format!("RTMIN+{}", max - min + 1)), None);
        assert_eq!(parse(&format!("RTMAX-{}", max - min + 1)), None);
        assert_eq!(parse("64"), Some(64));
        assert_eq!(name(min), "SIGRTMIN");
        assert_eq!(name(min + 2), "SIGRTMIN+2");
        assert_eq!(name(max - 1), "SIGRTMAX-1");
        assert_eq!(name(max), "SIGRTMAX");
        for n in min..=max {
            assert_eq!(parse(&name(n)), Some(n), "{n}");
        }
        // glibc keeps these two for itself: valid numbers, no name.
        assert_eq!(name(32), "signal 32");
    }

    #[test]
    fn unknown_numbers_say_signal_n() {
        assert_eq!(name(0), "signal 0");
        assert_eq!(name(99), "signal 99");
        assert_eq!(name(libc::SIGTERM), "SIGTERM");
        assert_eq!(name(libc::SIGABRT), "SIGABRT");
    }
}
