//! What a response's rate-limit fields say: the earliest time to try again,
//! which field said it and how it was read, and whether the fields turn the
//! verdict (a 403 that is an exhausted quota, `Stripe-Should-Retry`).
//!
//! Pure: the status, the fields as name/value pairs and the local clock go
//! in; nothing is read from the network or the clock here.
//!
//! Precedence, first usable field wins: `Retry-After`; the IETF `RateLimit`
//! field's `t` (and an earlier draft's `RateLimit-Reset`); then the
//! `X-RateLimit-*` family: `X-RateLimit-Reset-After`, `X-RateLimit-Reset`,
//! `X-RateLimit-Requests-Reset`, `x-ratelimit-reset-requests` / `-tokens`.
//! A reset is taken from a quota whose remaining count is 0, or, with no
//! count, from a 429 (which says a limit was hit). Every value is parsed
//! strictly: one that fits none of its documented forms is skipped with a
//! reason (shown at `-v`), and the next field is consulted; nothing is
//! guessed.
//!
//! Epoch or delta (`X-RateLimit-Reset`, `X-RateLimit-Requests-Reset`): with
//! T the time in epoch seconds (by the local clock, unless the `Date` shows
//! it more than 1.5 s off and less than a day, when the Date is T), a value
//! below T/2 is seconds to wait, from T/2 up to 100·T epoch seconds, from
//! 100·T on epoch milliseconds. The ranges are far apart (T/2 is 28 years
//! of waiting, 100·T is beyond the year 5000 in seconds), so no real value
//! falls near a boundary.

use std::time::{Duration, SystemTime};

#[cfg(test)]
mod tests;

/// A field that can schedule the next attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    RetryAfter,
    /// The IETF draft's structured `RateLimit` field.
    RateLimit,
    /// An earlier IETF draft's `RateLimit-Reset` (seconds).
    RateLimitReset,
    /// Discord's seconds, with decimals.
    XResetAfter,
    XReset,
    /// Linear's requests quota.
    XRequestsReset,
    /// OpenAI's durations.
    XResetRequests,
    XResetTokens,
    /// No field: GitHub's documented minimum wait for a secondary rate
    /// limit its body names (see [`github_secondary`]).
    GitHubSecondary,
}

impl Field {
    /// The field's name as servers spell it.
    pub fn name(self) -> &'static str {
        match self {
            Field::RetryAfter => "Retry-After",
            Field::RateLimit => "RateLimit",
            Field::RateLimitReset => "RateLimit-Reset",
            Field::XResetAfter => "X-RateLimit-Reset-After",
            Field::XReset => "X-RateLimit-Reset",
            Field::XRequestsReset => "X-RateLimit-Requests-Reset",
            Field::XResetRequests => "x-ratelimit-reset-requests",
            Field::XResetTokens => "x-ratelimit-reset-tokens",
            Field::GitHubSecondary => "GitHub's secondary rate limit",
        }
    }
}

/// How a value was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    /// A number of seconds to wait.
    Seconds,
    HttpDate,
    EpochSeconds,
    EpochMillis,
    /// A duration string (`6m0s`).
    Duration,
    /// No value sent: the wait the server's documentation gives.
    Documented,
}

impl Reading {
    pub fn name(self) -> &'static str {
        match self {
            Reading::Seconds => "seconds",
            Reading::HttpDate => "date",
            Reading::EpochSeconds => "epoch",
            Reading::EpochMillis => "epoch ms",
            Reading::Duration => "duration",
            Reading::Documented => "documented wait",
        }
    }
}

/// The earliest the server wants the next request, as a wait from when the
/// response arrived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Floor {
    pub wait: Duration,
    pub field: Field,
    pub reading: Reading,
    /// The value as sent (control characters escaped, at most
    /// [`VALUE_MAX`] characters); for `RateLimit`, the policy taken.
    pub value: String,
}

impl Floor {
    /// `X-RateLimit-Reset (epoch) 1764345600`: what the log names.
    pub fn describe(&self) -> String {
        format!(
            "{} ({}) {}",
            self.field.name(),
            self.reading.name(),
            self.value
        )
    }
}

impl Floor {
    /// `X-RateLimit-Reset 1764345600, read as epoch`: the field and value
    /// in a sentence, with the reading where the field has several.
    pub fn cite(&self) -> String {
        match self.field {
            Field::XReset | Field::XRequestsReset => format!(
                "{} {}, read as {}",
                self.field.name(),
                self.value,
                self.reading.name()
            ),
            _ => format!("{} {}", self.field.name(), self.value),
        }
    }
}

/// A verdict the fields impose, whatever the status's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Turn {
    /// A 403 that is an exhausted quota (`X-RateLimit-Remaining: 0` with a
    /// reset to come, or a `Retry-After`): retried after it, as a 429 is.
    RateLimited,
    /// `Stripe-Should-Retry: true` or `false`.
    ShouldRetry(bool),
}

/// Everything the fields of one response say.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hints {
    pub floor: Option<Floor>,
    pub turn: Option<Turn>,
    /// Fields present but not used, each with why: one `-v` line each.
    pub ignored: Vec<String>,
}

impl Hints {
    /// No field said anything (usable in statics).
    pub const NONE: Hints = Hints {
        floor: None,
        turn: None,
        ignored: Vec::new(),
    };

    /// A `Retry-After` of `wait`, in seconds, alone.
    pub fn retry_after(wait: Duration) -> Hints {
        let value = wait.as_secs().to_string();
        Hints::floor(wait, Field::RetryAfter, Reading::Seconds, value)
    }

    /// A floor alone, as the simulator's servers and tests give one.
    pub fn floor(wait: Duration, field: Field, reading: Reading, value: String) -> Hints {
        Hints {
            floor: Some(Floor {
                wait,
                field,
                reading,
                value,
            }),
            ..Hints::NONE
        }
    }
}

/// Values echoed in reasons and logs are cut to this many characters.
pub const VALUE_MAX: usize = 64;

/// A Date further than this from the local clock is not trusted.
const DATE_SKEW_MAX: Duration = Duration::from_secs(86_400);

/// A local clock within this of a Date's middle (the Date plus half its
/// rounding) agrees with it.
const DATE_AGREES: Duration = Duration::from_millis(1500);

/// Read the fields of a response with status `code`, arrived at `now` by the
/// local clock. Names are matched without regard to case; a field sent more
/// than once with different values is ignored (a `RateLimit` list is joined,
/// as lists may be split over several lines).
pub fn read(code: u16, fields: &[(&str, &[u8])], now: SystemTime) -> Hints {
    let mut r = Reader {
        code,
        fields,
        ignored: Vec::new(),
        server_now: now,
    };
    r.server_now = r.server_time(now);
    let (floor, exhausted) = match r.floor() {
        Some((floor, exhausted)) => (Some(floor), exhausted),
        None => (None, false),
    };
    let mut turn = None;
    if code == 403 && exhausted && floor.as_ref().is_some_and(|f| !f.wait.is_zero()) {
        turn = Some(Turn::RateLimited);
    }
    if let Some(v) = r.single("Stripe-Should-Retry") {
        match v {
            "true" => turn = Some(Turn::ShouldRetry(true)),
            "false" => turn = Some(Turn::ShouldRetry(false)),
            other => r.ignore("Stripe-Should-Retry", other, "is neither true nor false"),
        }
    }
    Hints {
        floor,
        turn,
        ignored: r.ignored,
    }
}

/// The words of GitHub's API in the body of a secondary rate limit.
const GITHUB_SECONDARY: &[u8] = b"secondary rate limit";

/// GitHub's rule for a secondary rate limit whose response says nothing in
/// its fields: wait at least a minute.
pub const GITHUB_SECONDARY_WAIT: Duration = Duration::from_secs(60);

/// Whether a response may be GitHub's secondary rate limit with nothing in
/// its fields, so that its body is worth a look: a 403 or 429 from GitHub's
/// API (`from_github`: it sent `X-GitHub-Request-Id`) whose fields set no
/// wait.
pub fn may_be_github_secondary(code: u16, from_github: bool, hints: &Hints) -> bool {
    from_github && matches!(code, 403 | 429) && hints.floor.is_none()
}

/// `hints` with GitHub's rule applied when `body` (its first bytes) names a
/// secondary rate limit: the next request no sooner than a minute, and a
/// 403 is a rate limit, retried as a 429 is. A 403 without those words is
/// a refusal (a token without the right scope), and stays one.
pub fn github_secondary(code: u16, mut hints: Hints, body: &[u8]) -> Hints {
    let named = body
        .windows(GITHUB_SECONDARY.len())
        .any(|w| w.eq_ignore_ascii_case(GITHUB_SECONDARY));
    if !named || hints.floor.is_some() {
        return hints;
    }
    hints.floor = Some(Floor {
        wait: GITHUB_SECONDARY_WAIT,
        field: Field::GitHubSecondary,
        reading: Reading::Documented,
        value: format!("{}s", GITHUB_SECONDARY_WAIT.as_secs()),
    });
    if code == 403 && hints.turn.is_none() {
        hints.turn = Some(Turn::RateLimited);
    }
    hints
}

struct Reader<'a> {
    code: u16,
    fields: &'a [(&'a str, &'a [u8])],
    ignored: Vec<String>,
    /// The time dates and epoch times are measured against (`server_time`).
    server_now: SystemTime,
}

/// A field's outcome: a floor, and whether it came from an exhausted quota
/// (what makes a 403 a rate limit).
type Found = Option<(Floor, bool)>;

impl<'a> Reader<'a> {
    /// Every value of `name`, in order, as text (None for one that is not
    /// visible ASCII, which is recorded as ignored).
    fn values(&mut self, name: &str) -> Vec<Option<&'a str>> {
        let mut out = Vec::new();
        let fields = self.fields;
        for (n, v) in fields {
            if n.eq_ignore_ascii_case(name) {
                match std::str::from_utf8(v) {
                    Ok(s) if s.bytes().all(|b| b == b'\t' || (b' '..=b'~').contains(&b)) => {
                        out.push(Some(s.trim_matches([' ', '\t'])));
                    }
                    _ => {
                        let shown = String::from_utf8_lossy(v).into_owned();
                        self.ignore(name, &shown, "is not plain ASCII text");
                        out.push(None);
                    }
                }
            }
        }
        out
    }

    /// The one value of a field that must be sent once (the same value sent
    /// twice counts as once).
    fn single(&mut self, name: &str) -> Option<&'a str> {
        let values = self.values(name);
        let first = (*values.first()?)?;
        if values.iter().any(|v| *v != Some(first)) {
            self.ignore(name, first, "is sent more than once, with different values");
            return None;
        }
        Some(first)
    }

    fn ignore(&mut self, name: &str, value: &str, why: &str) {
        self.ignored
            .push(format!("ignored {name}: \"{}\" {why}", shown(value)));
    }

    /// The server's time: its Date when the local clock is off from it by
    /// more than [`DATE_AGREES`] beyond its rounding (and less than a day);
    /// else the local clock.
    fn server_time(&mut self, now: SystemTime) -> SystemTime {
        let Some(v) = self.single("Date") else {
            return now;
        };
        let Ok(date) = httpdate::parse_http_date(v) else {
            self.ignore("Date", v, "is not an HTTP date: the local clock is used");
            return now;
        };
        let skew = date
            .duration_since(now)
            .or_else(|_| now.duration_since(date))
            .unwrap_or(Duration::MAX);
        if skew > DATE_SKEW_MAX {
            self.ignore(
                "Date",
                v,
                "is more than a day from the local clock: the local clock is used",
            );
            return now;
        }
        // A Date has whole seconds: a local clock that agrees with it to
        // within its rounding and a second is the finer measure, and a
        // fleet keeps the spread of its own arrival times.
        let mid = date + Duration::from_millis(500);
        let off = mid
            .duration_since(now)
            .or_else(|_| now.duration_since(mid))
            .unwrap_or(Duration::MAX);
        if off <= DATE_AGREES {
            return now;
        }
        date
    }

    /// The first usable field, in precedence order.
    fn floor(&mut self) -> Found {
        if let Some(f) = self.retry_after() {
            return Some(f);
        }
        if let Some(f) = self.ietf() {
            return Some(f);
        }
        self.x_family()
    }

    fn retry_after(&mut self) -> Found {
        let v = self.single("Retry-After")?;
        let (wait, reading) = if is_digits(v) {
            (seconds(v), Reading::Seconds)
        } else if let Ok(at) = httpdate::parse_http_date(v) {
            (until(at, self.server_now), Reading::HttpDate)
        } else {
            self.ignore(
                "Retry-After",
                v,
                "is neither a number of seconds nor an HTTP date",
            );
            return None;
        };
        Some((floor(wait, Field::RetryAfter, reading, v), true))
    }

    /// `RateLimit` (a list of policies, each `"name";r=R;t=T`), then an
    /// earlier draft's `RateLimit-Reset: T`.
    fn ietf(&mut self) -> Found {
        let lines: Vec<&str> = self.values("RateLimit").into_iter().flatten().collect();
        if !lines.is_empty() {
            let joined = lines.join(", ");
            match policies(&joined) {
                Ok(Some((name, t))) => {
                    let value = format!("{name};r=0;t={t}");
                    let wait = Duration::from_secs(t);
                    return Some((
                        floor(wait, Field::RateLimit, Reading::Seconds, &value),
                        true,
                    ));
                }
                // Quota left: a valid value with nothing to wait for,
                // sent on every response by some servers; not worth a line.
                Ok(None) => {}
                Err(why) => self.ignore("RateLimit", &joined, &why),
            }
        }
        let exhausted = self.remaining("RateLimit-Remaining")?;
        let v = self.single("RateLimit-Reset")?;
        if !is_digits(v) {
            self.ignore("RateLimit-Reset", v, "is not a number of seconds");
            return None;
        }
        let f = floor(seconds(v), Field::RateLimitReset, Reading::Seconds, v);
        Some((f, exhausted))
    }

    /// The `X-RateLimit-*` family, each reset taken only when its own
    /// remaining count allows (`remaining`): a quota with requests left is
    /// not why a request was refused.
    fn x_family(&mut self) -> Found {
        if let Some(exhausted) = self.remaining("X-RateLimit-Remaining") {
            if let Some(v) = self.single("X-RateLimit-Reset-After") {
                match decimal(v, 1_000_000_000) {
                    Some(wait) => {
                        let f = floor(wait, Field::XResetAfter, Reading::Seconds, v);
                        return Some((f, exhausted));
                    }
                    None => self.ignore("X-RateLimit-Reset-After", v, "is not a number of seconds"),
                }
            }
            if let Some(f) = self.reset(Field::XReset) {
                return Some((f, exhausted));
            }
        }
        if let Some(exhausted) = self.remaining("X-RateLimit-Requests-Remaining")
            && let Some(f) = self.reset(Field::XRequestsReset)
        {
            return Some((f, exhausted));
        }
        self.durations()
    }

    /// Whether a remaining count lets its resets be used: Some(true) when it
    /// is 0 (decimals allowed: Reddit sends `0.0`); without a count,
    /// Some(false) on a 429, which says a limit was hit, and None on any
    /// other status, whose resets may describe a quota nobody spent; None
    /// too when requests are left, or the count is malformed (said).
    fn remaining(&mut self, name: &str) -> Option<bool> {
        let Some(v) = self.single(name) else {
            return (self.code == 429).then_some(false);
        };
        match decimal(v, 1) {
            Some(n) if n.is_zero() => Some(true),
            Some(_) => None,
            None => {
                self.ignore(name, v, "is not a count: its resets are not used");
                None
            }
        }
    }

    /// An epoch-or-delta reset, read by magnitude (see the module's notes).
    fn reset(&mut self, field: Field) -> Option<Floor> {
        let v = self.single(field.name())?;
        let Some(n) = decimal(v, 1_000_000_000) else {
            self.ignore(
                field.name(),
                v,
                "is not a number (epoch seconds, epoch milliseconds or seconds)",
            );
            return None;
        };
        let t = epoch(self.server_now);
        let (wait, reading) = if n < t / 2 {
            (n, Reading::Seconds)
        } else if n < t.saturating_mul(100) {
            (n.saturating_sub(t), Reading::EpochSeconds)
        } else {
            ((n / 1000).saturating_sub(t), Reading::EpochMillis)
        };
        Some(floor(wait, field, reading, v))
    }

    /// OpenAI's `x-ratelimit-reset-requests` and `-tokens`: of those whose
    /// remaining count is 0, the longer; with no count saying 0, the longer
    /// of the two (never shorter than the server may mean).
    fn durations(&mut self) -> Found {
        let mut best: Option<(Floor, bool)> = None;
        for (field, remaining) in [
            (Field::XResetRequests, "x-ratelimit-remaining-requests"),
            (Field::XResetTokens, "x-ratelimit-remaining-tokens"),
        ] {
            let Some(exhausted) = self.remaining(remaining) else {
                continue;
            };
            let Some(v) = self.single(field.name()) else {
                continue;
            };
            let Some(wait) = go_duration(v) else {
                self.ignore(
                    field.name(),
                    v,
                    "is not a duration (such as 1s, 6m0s, 20ms)",
                );
                continue;
            };
            let f = floor(wait, field, Reading::Duration, v);
            best = match best {
                None => Some((f, exhausted)),
                Some((b, be)) if (exhausted, f.wait) > (be, b.wait) => Some((f, exhausted)),
                keep => keep,
            };
        }
        best
    }
}

fn floor(wait: Duration, field: Field, reading: Reading, value: &str) -> Floor {
    Floor {
        wait,
        field,
        reading,
        value: shown(value),
    }
}

/// A value for a message: control characters escaped, cut to [`VALUE_MAX`].
fn shown(v: &str) -> String {
    let mut s: String = v.chars().take(VALUE_MAX).collect();
    if v.chars().nth(VALUE_MAX).is_some() {
        s.push('…');
    }
    crate::human::escape_controls(&s).into_owned()
}

fn is_digits(v: &str) -> bool {
    !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit())
}

/// Whole seconds; more digits than fit mean "a very long time".
fn seconds(v: &str) -> Duration {
    Duration::from_secs(v.parse::<u64>().unwrap_or(u64::MAX))
}

/// `at - now`, zero when `at` has passed.
fn until(at: SystemTime, now: SystemTime) -> Duration {
    at.duration_since(now).unwrap_or(Duration::ZERO)
}

/// `now` as a Duration since the epoch (zero before it).
fn epoch(now: SystemTime) -> Duration {
    now.duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
}

/// `DIGITS[.DIGITS]` in units of `unit` nanoseconds, rounded up to the
/// nanosecond (a wait is never shortened); saturating for huge values.
fn decimal(v: &str, unit: u64) -> Option<Duration> {
    let (int, frac) = match v.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (v, None),
    };
    if !is_digits(int) || frac.is_some_and(|f| !is_digits(f)) {
        return None;
    }
    let whole = int.parse::<u128>().unwrap_or(u128::MAX);
    let mut nanos = whole.saturating_mul(u128::from(unit));
    if let Some(f) = frac {
        // The fraction's digits times the unit, over 10^digits, rounded up;
        // digits past the nanosecond only round up.
        let mut part = 0u128;
        let mut scale = 1u128;
        for b in f.bytes().take(20) {
            part = part * 10 + u128::from(b - b'0');
            scale *= 10;
        }
        let extra = f.len() > 20 && f.bytes().skip(20).any(|b| b != b'0');
        let n = part * u128::from(unit);
        let mut add = n.div_ceil(scale);
        if extra && n.is_multiple_of(scale) {
            add += 1;
        }
        nanos = nanos.saturating_add(add);
    }
    Some(nanos_to_duration(nanos))
}

fn nanos_to_duration(n: u128) -> Duration {
    let secs = n / 1_000_000_000;
    match u64::try_from(secs) {
        Ok(s) => Duration::new(s, (n % 1_000_000_000) as u32),
        Err(_) => Duration::MAX,
    }
}

/// A duration as Go prints one (`1h2m3.5s`, `6m0s`, `20ms`, `0s`): numbers
/// with units h, m, s, ms, us (or µs), ns, each unit at most once and
/// largest first.
fn go_duration(v: &str) -> Option<Duration> {
    const UNITS: [(&str, u64); 7] = [
        ("h", 3_600_000_000_000),
        ("m", 60_000_000_000),
        ("s", 1_000_000_000),
        ("ms", 1_000_000),
        ("us", 1_000),
        ("µs", 1_000),
        ("ns", 1),
    ];
    let mut rest = v;
    let mut total = Duration::ZERO;
    // Index into UNITS of the last unit seen: each must come after it.
    let mut last: Option<usize> = None;
    while !rest.is_empty() {
        let end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, tail) = rest.split_at(end);
        let unit_end = tail
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(tail.len());
        let (unit, next) = tail.split_at(unit_end);
        let i = UNITS.iter().position(|(u, _)| *u == unit)?;
        // us and µs are one unit.
        let rank = if i >= 5 { i - 1 } else { i };
        if last.is_some_and(|l| rank <= l) {
            return None;
        }
        last = Some(rank);
        total = total.saturating_add(decimal(number, UNITS[i].1)?);
        rest = next;
    }
    last.map(|_| total)
}

/// The exhausted policy (`r=0`) with the longest `t` in a `RateLimit`
/// field, as its name and `t`; None when no policy is exhausted. Err: the
/// field is not a list of policies.
fn policies(v: &str) -> Result<Option<(String, u64)>, String> {
    use sfv::{BareItem, ListEntry, Parser};
    let list: sfv::List = Parser::new(v)
        .parse()
        .map_err(|e| format!("is not a structured list ({e})"))?;
    let mut best: Option<(String, u64)> = None;
    for entry in &list {
        let ListEntry::Item(item) = entry else {
            return Err("holds an inner list, not a policy".into());
        };
        let name = match &item.bare_item {
            BareItem::String(s) => format!("\"{}\"", s.as_str()),
            BareItem::Token(t) => t.as_str().to_string(),
            _ => return Err("names a policy with neither a string nor a token".into()),
        };
        let mut r = None;
        let mut t = None;
        for (key, value) in &item.params {
            let slot = match key.as_str() {
                "r" => &mut r,
                "t" => &mut t,
                _ => continue,
            };
            let n = value
                .as_integer()
                .and_then(|i| u64::try_from(i64::from(i)).ok())
                .ok_or_else(|| format!("has a {} that is not a whole number ≥ 0", key.as_str()))?;
            *slot = Some(n);
        }
        if r == Some(0)
            && let Some(t) = t
            && best.as_ref().is_none_or(|(_, b)| t > *b)
        {
            best = Some((name, t));
        }
    }
    Ok(best)
}
