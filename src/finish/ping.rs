//! `--ping URL`: a heartbeat monitor (a dead man's switch) hears how the
//! run went, in the healthchecks.io protocol that Cronitor-style and
//! self-hosted monitors accept too: `URL/start` before the first attempt,
//! then `URL` when the run succeeds or `URL/STATUS` (the exit status) when
//! it gives up, is refused or is interrupted. Never once per attempt: a
//! failure that recovered raises no alarm.
//!
//! The first attempt waits for the start ping's answer [`START_WAIT`] at
//! most; a slower monitor gets it in the background, so it never holds the
//! command up longer. The final ping waits for it, so the monitor never
//! hears "started" after "done", but only while one try of the final ping
//! still fits in the reports' shared bound (`super::REPORTS`): an
//! unanswered start ping is then abandoned, and the final one, which
//! raises the alarm, goes. Each ping is tried up to [`TRIES`] times,
//! [`TRY_LIMIT`] each, with jittered pauses, within that bound; a ping
//! that fails costs one warning, never the exit status. The URL's path is
//! the secret, so logs show only its host. With `--ping-log`, the final
//! ping carries a masked summary of the run ([`body`]), fitted to what the
//! monitor keeps: the `Ping-Body-Limit` its answer to the start ping
//! announced (healthchecks.io's), or [`BODY_LIMIT`].

use std::fmt::Write;
use std::time::{Duration, Instant};

use rand::TryRng;
use reqwest::header::CONTENT_TYPE;
use reqwest::{Client, Url};
use tokio::task::JoinHandle;

use super::client;
use super::{Ctx, Output, ReportClock, RunSummary, Work};
use crate::backoff::{Backoff, DelayPolicy, Growth, Jitter};
use crate::event::Event;
use crate::human::human;
use crate::log::Tail;
use crate::mask;
use crate::rng::{self, JitterRng};

/// `--ping` and `--ping-log`, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PingOptions {
    pub url: Url,
    /// Send the run's summary with the final ping.
    pub log: bool,
}

/// The largest body a ping carries (what healthchecks.io keeps).
pub const BODY_LIMIT: usize = 10_000;
/// Tries per ping.
pub const TRIES: u32 = 3;
/// The limit of one try, connection included.
pub const TRY_LIMIT: Duration = Duration::from_secs(3);
/// How long the first attempt waits for the start ping's answer.
pub const START_WAIT: Duration = Duration::from_secs(1);

/// Pauses between tries: 250-500 ms, then 500 ms-1 s. With the tries,
/// a ping takes at most 10.5 s.
const PAUSES: DelayPolicy = DelayPolicy {
    growth: Growth::Exponential { multiplier: 2.0 },
    jitter: Jitter::Equal,
    base: Duration::from_millis(500),
    cap: Duration::from_secs(2),
};

/// What an answered ping learned: the monitor's `Ping-Body-Limit`, if it
/// gave one.
type Answered = Option<usize>;

/// The start ping: under way in the background, or over.
enum Start {
    Running(JoinHandle<Result<Answered, String>>),
    Done(Result<Answered, String>),
}

pub struct Ping {
    url: Url,
    send_log: bool,
    client: Option<Client>,
    start: Option<Start>,
    tail: Option<Tail>,
    clock: ReportClock,
}

impl Ping {
    pub fn new(options: &PingOptions) -> Ping {
        Ping {
            url: options.url.clone(),
            send_log: options.log,
            client: None,
            start: None,
            tail: None,
            clock: ReportClock::default(),
        }
    }

    /// The pings under the reports' shared bound.
    pub fn with_clock(self, clock: ReportClock) -> Ping {
        Ping { clock, ..self }
    }

    fn shown(&self) -> String {
        mask::url_host_only(self.url.as_str())
    }

    /// The client, built on first use; a failure is the warning's text.
    fn client(&mut self) -> Result<Client, String> {
        if let Some(c) = &self.client {
            return Ok(c.clone());
        }
        let c = client::build()?;
        self.client = Some(c.clone());
        Ok(c)
    }
}

/// `url` with one more path segment (`start`, `1`), its query kept.
pub fn with_segment(url: &Url, segment: &str) -> Url {
    let mut u = url.clone();
    if let Ok(mut path) = u.path_segments_mut() {
        path.pop_if_empty().push(segment);
    }
    u
}

/// Each ping draws its pauses from the OS's randomness: hosts that ping one
/// monitor must not retry in step.
fn pause_rng() -> JitterRng {
    let seed = rand::rngs::SysRng
        .try_next_u64()
        .unwrap_or_else(|_| u64::from(std::process::id()));
    rng::seeded(rng::mask_seed(seed))
}

/// One ping, tried until it is answered with 2xx, refused for good (a 4xx
/// other than 408 and 429), out of tries (at most [`TRIES`] times
/// [`TRY_LIMIT`] plus the pauses, about 10 s), or out of time: `until`, if
/// given, cuts a try short and starts no pause it would not outlast.
async fn ping(
    client: Client,
    url: Url,
    body: Option<String>,
    until: Option<Instant>,
) -> Result<Answered, String> {
    let mut pauses = Backoff::new(PAUSES);
    let mut rng = pause_rng();
    let mut tries = 0;
    let left = || until.map(|u| u.saturating_duration_since(Instant::now()));
    loop {
        tries += 1;
        let limit = left().map_or(TRY_LIMIT, |l| l.min(TRY_LIMIT));
        let request = match &body {
            Some(b) => client
                .post(url.clone())
                .header(CONTENT_TYPE, "text/plain; charset=utf-8")
                .body(b.clone()),
            None => client.get(url.clone()),
        };
        let why = match client::exchange(request, limit).await {
            Ok(a) if (200..300).contains(&a.status) => {
                return Ok(a.body_limit.as_deref().and_then(body_limit));
            }
            Ok(a) => {
                let why = format!("HTTP {}", a.status);
                if a.status < 500 && !matches!(a.status, 408 | 429) {
                    return Err(why);
                }
                why
            }
            Err(f) => f.to_string(),
        };
        let pause = pauses.next(&mut rng).delay;
        if tries >= TRIES || left().is_some_and(|l| l <= pause) {
            let tries = if tries == 1 {
                "1 try".to_string()
            } else {
                format!("{tries} tries")
            };
            return Err(format!("{why} ({tries})"));
        }
        tokio::time::sleep(pause).await;
    }
}

impl Output for Ping {
    fn started<'a>(&'a mut self, ctx: &'a mut Ctx<'_>) -> Work<'a> {
        Box::pin(async move {
            if self.send_log {
                self.tail = Some(ctx.log.keep_tail(BODY_LIMIT));
            }
            match self.client() {
                Ok(c) => {
                    let url = with_segment(&self.url, "start");
                    let mut running = tokio::spawn(ping(c, url, None, None));
                    // Signals wait meanwhile: the attempt runner hears them.
                    self.start = Some(match tokio::time::timeout(START_WAIT, &mut running).await {
                        Ok(done) => Start::Done(done.unwrap_or_else(|e| Err(e.to_string()))),
                        Err(_) => Start::Running(running),
                    });
                }
                Err(why) => {
                    let message = format!("cannot ping {}: {why}", self.shown());
                    ctx.log.emit(&Event::Warning { message: &message });
                }
            }
        })
    }

    fn finished<'a>(&'a mut self, summary: &'a RunSummary, ctx: &'a mut Ctx<'_>) -> Work<'a> {
        Box::pin(async move {
            let shown = self.shown();
            // The start ping has its own limit; a monitor that heard the end
            // first would take a late "start" for a new run.
            let mut limit = BODY_LIMIT;
            if let Some(start) = self.start.take() {
                let outcome = match start {
                    Start::Done(r) => r,
                    Start::Running(mut running) => {
                        // One try of the final ping must still fit.
                        let wait = self
                            .clock
                            .left()
                            .map_or(TRIES * TRY_LIMIT, |l| l.saturating_sub(TRY_LIMIT));
                        let waited = tokio::time::timeout(wait, &mut running);
                        match client::unless_cut(waited, ctx).await {
                            Some(Ok(r)) => r.unwrap_or_else(|e| Err(e.to_string())),
                            Some(Err(_)) => {
                                running.abort();
                                Err("no answer before the final ping was due".into())
                            }
                            None => {
                                running.abort();
                                Err(client::cut_short(ctx))
                            }
                        }
                    }
                };
                match outcome {
                    Ok(announced) => {
                        let message = format!("pinged {shown} (start)");
                        ctx.log.emit(&Event::Note { message: &message });
                        if let Some(n) = announced.filter(|n| *n < BODY_LIMIT) {
                            limit = n;
                            let message = format!(
                                "{shown} keeps {n} bytes of a ping's body (Ping-Body-Limit): the summary is fitted to it"
                            );
                            ctx.log.emit(&Event::Note { message: &message });
                        }
                    }
                    Err(why) => {
                        let message = format!("the start ping to {shown} failed: {why}");
                        ctx.log.emit(&Event::Warning { message: &message });
                    }
                }
            }
            if ctx.cut.is_some() {
                return;
            }
            let (url, what) = if summary.ending.exit_code == 0 {
                (self.url.clone(), "success".to_string())
            } else {
                let code = summary.ending.exit_code.to_string();
                (
                    with_segment(&self.url, &code),
                    format!("exit status {code}"),
                )
            };
            let client = match self.client() {
                Ok(c) => c,
                Err(why) => {
                    let message = format!("cannot ping {shown}: {why}");
                    ctx.log.emit(&Event::Warning { message: &message });
                    return;
                }
            };
            let payload = self.send_log.then(|| {
                let tail = self.tail.as_ref().map(Tail::text).unwrap_or_default();
                body(summary, &tail, limit)
            });
            let until = self.clock.left().map(|l| Instant::now() + l);
            let outcome = client::unless_cut(ping(client, url, payload, until), ctx)
                .await
                .unwrap_or_else(|| Err(client::cut_short(ctx)));
            let message = match outcome {
                Ok(_) => {
                    let message = format!("pinged {shown} ({what})");
                    ctx.log.emit(&Event::Note { message: &message });
                    return;
                }
                Err(why) => format!(
                    "the {what} ping to {shown} failed: {why}; the exit status is unchanged"
                ),
            };
            ctx.log.emit(&Event::Warning { message: &message });
        })
    }
}

/// A `Ping-Body-Limit` value: a number of bytes (more than fits is as
/// good as no limit); anything else is ignored, as if it were absent.
pub fn body_limit(value: &str) -> Option<usize> {
    let v = value.trim();
    if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(v.parse().unwrap_or(usize::MAX))
}

/// The final ping's body with `--ping-log`: the run in a few lines, then
/// the log's last lines; masked, and at most `limit` bytes (at most
/// [`BODY_LIMIT`]): the oldest log lines give way first, so the end of the
/// log, the give-up line with it, always arrives; a limit too small for
/// the summary itself keeps its first lines.
pub fn body(summary: &RunSummary, tail: &str, limit: usize) -> String {
    let limit = limit.min(BODY_LIMIT);
    let mut out = String::new();
    let _ = writeln!(out, "outcome: {}", summary.ending.end.as_str());
    let _ = writeln!(out, "exit status: {}", summary.ending.exit_code);
    let _ = writeln!(out, "attempts: {}", summary.ending.attempts);
    if let Some(last) = &summary.ending.last_status {
        let _ = writeln!(out, "last attempt: {}", mask::text(&last.to_string()));
    }
    if summary.ending.retries_refused > 0 {
        let _ = writeln!(
            out,
            "retries refused by the group's budget: {}",
            summary.ending.retries_refused
        );
    }
    let _ = writeln!(
        out,
        "started: {}",
        humantime::format_rfc3339_millis(summary.started_at)
    );
    let _ = writeln!(out, "duration: {}", human(summary.duration));
    let tail = mask::text(tail);
    if !tail.is_empty() {
        out.push_str("\nlast lines of the log:\n");
    }
    if out.len() >= limit {
        return truncate_back(out, limit);
    }
    let room = limit - out.len();
    out.push_str(&truncate_front(tail, room));
    out
}

/// The start of `s` in at most `limit` bytes, ending at a line's end where
/// it can (else at a character's).
fn truncate_back(mut s: String, limit: usize) -> String {
    if s.len() <= limit {
        return s;
    }
    let mut to = limit;
    while !s.is_char_boundary(to) {
        to -= 1;
    }
    let cut = s[..to].rfind('\n').map_or(to, |nl| nl + 1);
    s.truncate(cut);
    s
}

/// The end of `s` in at most `limit` bytes, starting at a line's start
/// where it can (else at a character's).
fn truncate_front(s: String, limit: usize) -> String {
    if s.len() <= limit {
        return s;
    }
    let mut from = s.len() - limit;
    while !s.is_char_boundary(from) {
        from += 1;
    }
    let rest = &s[from..];
    if s.as_bytes()[from - 1] == b'\n' {
        return rest.to_string();
    }
    match rest.find('\n') {
        Some(nl) if nl + 1 < rest.len() => rest[nl + 1..].to_string(),
        _ => rest.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::Status;
    use crate::event::{End, Ending};
    use std::time::UNIX_EPOCH;

    fn summary() -> RunSummary {
        RunSummary {
            started_at: UNIX_EPOCH + Duration::from_secs(1_700_000_000),
            duration: Duration::from_millis(2_312),
            seed: 0,
            ending: Ending {
                end: End::Exhausted,
                attempts: 5,
                exit_code: 1,
                reason: "".into(),
                last_status: Some(Status::Exited(1)),
                retries_refused: 0,
                waited: std::time::Duration::ZERO,
            },
        }
    }

    #[test]
    fn pings_go_below_the_url_and_keep_its_query() {
        let base = Url::parse("https://hc-ping.com/uuid?rid=7").unwrap();
        assert_eq!(
            with_segment(&base, "start").as_str(),
            "https://hc-ping.com/uuid/start?rid=7"
        );
        let base = Url::parse("http://127.0.0.1:8000/ping/key/slug/").unwrap();
        assert_eq!(
            with_segment(&base, "143").as_str(),
            "http://127.0.0.1:8000/ping/key/slug/143"
        );
    }

    #[test]
    fn the_body_sums_up_the_run_then_the_log() {
        let tail = "retry: attempt 1/5 failed (exit 1) after 3ms\nretry: fetching https://u:pw@h/x?token=abc\n";
        let b = body(&summary(), tail, BODY_LIMIT);
        assert_eq!(
            b,
            "outcome: exhausted\nexit status: 1\nattempts: 5\nlast attempt: exit 1\n\
             started: 2023-11-14T22:13:20.000Z\nduration: 2s 312ms\n\n\
             last lines of the log:\nretry: attempt 1/5 failed (exit 1) after 3ms\n\
             retry: fetching https://u:***@h/x?token=***\n"
        );
    }

    #[test]
    fn the_body_keeps_the_newest_lines_within_10_kb() {
        let tail: String = (0..5000).map(|i| format!("retry: line {i}\n")).collect();
        let b = body(&summary(), &tail, usize::MAX);
        assert!(b.len() <= BODY_LIMIT, "{}", b.len());
        assert!(b.starts_with("outcome: exhausted\n"));
        assert!(b.ends_with("retry: line 4999\n"));
        let first_log_line = b.split("last lines of the log:\n").nth(1).unwrap();
        assert!(
            first_log_line.starts_with("retry: line "),
            "{first_log_line:.40}"
        );
        // Multi-byte text is cut at a character.
        let wide: String = "é".repeat(20_000);
        assert!(truncate_front(wide, 11).len() <= 11);
    }

    #[test]
    fn the_body_fits_the_monitors_limit_with_the_summary_and_newest_lines() {
        let tail: String = (0..50).map(|i| format!("retry: line {i}\n")).collect();
        let tail = tail + "retry: giving up after 5 attempts in 3s: no attempts left; exiting 1\n";
        let b = body(&summary(), &tail, 400);
        assert!(b.len() <= 400, "{}", b.len());
        assert!(b.starts_with("outcome: exhausted\nexit status: 1\n"), "{b}");
        assert!(b.ends_with("exiting 1\n"), "{b}");
        assert!(b.contains("\nretry: line 49\n"), "{b}");
        assert!(!b.contains("retry: line 0\n"), "{b}");
        // Too small for the summary: its first lines, whole.
        let b = body(&summary(), &tail, 40);
        assert_eq!(b, "outcome: exhausted\nexit status: 1\n");
        assert_eq!(body(&summary(), &tail, 0), "");
    }

    #[test]
    fn ping_body_limit_is_a_number_of_bytes_or_ignored() {
        assert_eq!(body_limit("100"), Some(100));
        assert_eq!(body_limit(" 0 "), Some(0));
        assert_eq!(body_limit("99999999999999999999999"), Some(usize::MAX));
        for bad in ["", "-1", "1e3", "10 KB", "ten"] {
            assert_eq!(body_limit(bad), None, "{bad:?}");
        }
    }
}
