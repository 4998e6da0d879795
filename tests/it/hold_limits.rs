//! Held output under its bound (`--hold-max`) and on a full `$TMPDIR`:
//! cron mode keeps the head and the tail (the error line at the end is
//! never what goes), says what it dropped before the output, even with
//! `-q`, and the spool never grows past the bound; `--last-stdout` drops
//! nothing and passes stdout through instead. The full disks are small
//! tmpfs mounts in a private mount namespace.

use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use crate::util::{FILL_TMPFS, path_str, retry_sh, scratch, wait_for_file};

/// A cron job's noise: `lines` numbered lines on stdout, then its error on
/// stderr, and a failure.
fn chatty(lines: u32) -> String {
    format!("seq 1 {lines}; echo \"fatal: the mirror is gone\" >&2; exit 1")
}

/// `output` without retry's marking of the cut (`retry: warning: [...
/// dropped here]`, glued to the end of the head), and the marking.
fn split_at_mark(output: &str) -> (String, String) {
    let start = output.find("retry: warning: [").expect("the cut is marked");
    let end = start + output[start..].find("]\n").expect("the mark's end") + 2;
    let mark = output[start..end].to_string();
    (format!("{}{}", &output[..start], &output[end..]), mark)
}

/// The number in `text` just before `word` ("1,234 lines" → 1234).
fn number_before(text: &str, word: &str) -> u64 {
    let at = text
        .find(word)
        .unwrap_or_else(|| panic!("no {word:?} in {text}"));
    let digits: String = text[..at]
        .trim_end()
        .rsplit(|c: char| !c.is_ascii_digit() && c != ',')
        .next()
        .unwrap_or_default()
        .replace(',', "");
    digits
        .parse()
        .unwrap_or_else(|_| panic!("no number before {word:?} in {text}"))
}

/// Checks the cron form's output (stdout and stderr on one pipe) of
/// `chatty(total)` cut by the spool: the give-up line, the notice naming
/// the cut (which must contain `why`), the head, the mark, the tail with
/// the error line; the lines kept and dropped add up.
fn expect_cut(output: &[u8], total: u64, why: &str) {
    let output = String::from_utf8_lossy(output);
    let mut lines = output.splitn(3, '\n');
    let give_up = lines.next().unwrap_or_default();
    let notice = lines.next().unwrap_or_default();
    let rest = lines.next().unwrap_or_default();
    assert!(
        give_up.starts_with("retry: giving up after 1 attempt"),
        "{give_up}"
    );
    assert!(
        notice.starts_with("retry: warning: attempt 1's output "),
        "{notice}"
    );
    assert!(notice.contains(why), "{notice}");
    assert!(notice.contains("what follows is its first"), "{notice}");
    assert!(!notice.contains("os error"), "{notice}");
    let (kept, mark) = split_at_mark(rest);
    assert!(
        kept.starts_with("1\n2\n3\n"),
        "{}",
        &kept[..20.min(kept.len())]
    );
    assert!(
        kept.ends_with(&format!(
            "{}\n{total}\nfatal: the mirror is gone\n",
            total - 1
        )),
        "the end of the output, and its error line, are kept"
    );
    let dropped = number_before(notice, "lines) in between");
    assert_eq!(number_before(&mark, "lines) dropped here"), dropped);
    let kept_lines = kept.matches('\n').count() as u64;
    assert_eq!(
        kept_lines + dropped,
        total + 1,
        "every line kept or counted"
    );
}

#[test]
fn a_chatty_job_keeps_its_head_and_its_error_line_and_names_the_cut_first() {
    let (code, out) = retry_sh(
        &["-q", "--hold-output", "--hold-max", "1M", "--max=1"],
        &chatty(1_000_000),
    )
    .run_merged();
    assert_eq!(code, 1);
    expect_cut(&out, 1_000_000, "passed --hold-max (1 MiB)");
    // -qq: the output alone, still cut.
    let (_, out) = retry_sh(
        &["-qq", "--hold-output", "--hold-max", "1M", "--max=1"],
        &chatty(1_000_000),
    )
    .run_merged();
    let out = String::from_utf8_lossy(&out);
    assert!(
        out.starts_with("1\n2\n") && !out.contains("retry:"),
        "{}",
        &out[..40]
    );
}

#[test]
fn with_separate_streams_each_keeps_its_end() {
    let out = retry_sh(
        &["-q", "--hold-output", "--hold-max", "1M", "--max=1"],
        &chatty(1_000_000),
    )
    .run();
    out.expect_code(1);
    assert!(out.stdout_text().ends_with("999999\n1000000\n"));
    let err = out.stderr_text();
    assert!(err.ends_with("fatal: the mirror is gone\n"), "{err}");
    let notice = err.lines().nth(1).unwrap_or_default();
    assert!(notice.contains("passed --hold-max (1 MiB)"), "{err}");
}

/// The size of the unnamed spool file retry `pid` has open in `dir`.
fn spool_size(pid: i32, dir: &std::path::Path) -> Option<u64> {
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?;
    fds.flatten()
        .filter(|e| {
            std::fs::read_link(e.path())
                .is_ok_and(|p| p.to_string_lossy().starts_with(&path_str(dir)))
        })
        .find_map(|e| std::fs::metadata(e.path()).ok())
        .map(|m| m.len())
}

#[test]
fn the_spool_never_grows_past_the_bound() {
    let tmp = scratch();
    let marks = scratch();
    let script = format!(
        "seq 1 3000000; touch {}/written; exec sleep 30",
        path_str(marks.path())
    );
    let running = retry_sh(
        &["-qq", "--hold-output", "--hold-max", "1M", "--max=1"],
        &script,
    )
    .env("TMPDIR", tmp.path())
    .spawn();
    wait_for_file(&marks.path().join("written"), Duration::from_secs(20));
    let pid = running.pid().as_raw();
    // 20 MiB went in; the pump takes a moment to catch up with the pipe.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut largest = 0;
    while Instant::now() < deadline {
        let size = spool_size(pid, tmp.path()).expect("the spool is open");
        largest = largest.max(size);
        assert!(size <= 1 << 20, "the spool holds {size} bytes");
        if largest >= 1 << 19 {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(largest >= 1 << 19, "the spool reached {largest} bytes only");
    running.signal(Signal::SIGTERM);
    let out = running.wait();
    out.expect_code(143);
    assert!(out.stdout_text().ends_with("2999999\n3000000\n"));
}

/// Runs `script` with `$TMPDIR` on a tmpfs of `size` (`$M`, world-writable
/// and sticky as /tmp is) that `setup` (shell) prepares; `$R` is retry and
/// `$O` a directory for results. Returns what the script left in `$O/out`
/// and its exit code; None where mount namespaces are not allowed.
fn on_small_tmpfs(size: &str, setup: &str, script: &str) -> Option<(i32, Vec<u8>)> {
    let script = format!(
        "{setup}
         set +e
         export TMPDIR=\"$M\"
         {script}
         echo $? > \"$O/code\""
    );
    let (_t, o) = crate::util::in_private_tmpfs(&format!("size={size},mode=1777"), &script)?;
    let code = std::fs::read_to_string(o.join("code")).expect("code");
    Some((
        code.trim().parse().expect("a code"),
        std::fs::read(o.join("out")).unwrap_or_default(),
    ))
}

#[test]
fn a_full_tmpdir_keeps_the_end_of_the_output_and_says_so_before_it_even_with_q() {
    let script = format!(
        "\"$R\" -q --hold-output --max=1 -- sh -c '{}' > \"$O/out\" 2>&1",
        chatty(1_000_000)
    );
    let Some((code, out)) = on_small_tmpfs("1m", "", &script) else {
        return;
    };
    assert_eq!(code, 1, "{}", String::from_utf8_lossy(&out));
    expect_cut(&out, 1_000_000, "filled");
    let text = String::from_utf8_lossy(&out);
    assert!(
        text.contains("(no space left on device)"),
        "{}",
        &text[..400]
    );
}

/// `--hold-max 16T` cut the spool into 16 GiB blocks, so a disk that
/// filled up within the first left no ring, and cron mode (`-q`) passed
/// all the output through live: the blocks are cut from the room on the
/// disk, and the head and tail are kept, the loss named before them.
#[test]
fn a_huge_hold_max_on_a_full_tmpdir_still_keeps_head_and_tail_with_q() {
    let script = format!(
        "\"$R\" -q --hold-output --hold-max 16T --max=1 -- sh -c '{}' > \"$O/out\" 2>&1",
        chatty(1_000_000)
    );
    let Some((code, out)) = on_small_tmpfs("1m", "", &script) else {
        return;
    };
    assert_eq!(code, 1, "{}", String::from_utf8_lossy(&out));
    expect_cut(&out, 1_000_000, "(no space left on device)");
}

#[test]
fn a_tmpdir_full_from_the_start_lets_the_output_through_and_says_why_with_q() {
    let script = "\"$R\" -q --hold-output --max=1 -- sh -c 'echo the output' > \"$O/out\" 2>&1";
    let Some((code, out)) = on_small_tmpfs("256k", FILL_TMPFS, script) else {
        return;
    };
    assert_eq!(code, 0);
    let text = String::from_utf8_lossy(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert_eq!(lines[0], "the output");
    assert!(
        lines[1].starts_with("retry: warning: attempt 1's output could not be held in ")
            && lines[1].ends_with(" (no space left on device): it passed through as it came"),
        "{text}"
    );
}

#[test]
fn last_stdout_on_a_full_tmpdir_drops_nothing_and_says_what_stdout_holds() {
    let script = "\"$R\" -q --last-stdout --base 1ms -- sh -c \
                  '[ $RETRY_ATTEMPT = 1 ] && { head -c 3145728 /dev/zero; exit 1; }; echo ok' \
                  > \"$O/out\" 2> \"$O/err\"; c=$?; cat \"$O/err\" >> \"$O/out\"; (exit $c)";
    let Some((code, out)) = on_small_tmpfs("1m", "", script) else {
        return;
    };
    assert_eq!(code, 0);
    let stdout = &out[..3 * 1024 * 1024 + 3];
    assert!(stdout.iter().take(3 * 1024 * 1024).all(|&b| b == 0));
    assert_eq!(&stdout[3 * 1024 * 1024..], b"ok\n");
    let err = String::from_utf8_lossy(&out[stdout.len()..]);
    assert!(
        err.starts_with("retry: warning: stdout holds more than the last attempt's output: attempt 1's stdout could not be held in ")
            && err.contains("(no space left on device), so it passed through as it came, and attempt 2's followed it"),
        "{err}"
    );
}
