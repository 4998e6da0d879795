//! The Redis store: one hash per group, `retry:{GROUP}:state`, changed only
//! by one Lua script (`redis.lua`) so that every read-modify-write is atomic
//! on the server.
//!
//! The script reads the server's `TIME`, so the pace schedule of a fleet does
//! not depend on its hosts' clocks agreeing. It carries out the same rules as
//! [`super::rules`]; the store tests run both through the same sequences. The
//! key expires a week after its last change, and is the script's only key,
//! with the group as its hash tag: a cluster keeps a group's state on one
//! node. The servers are one, a Sentinel-managed master or a Cluster
//! (`address.rs`); `link.rs` connects to them and follows a failover,
//! `words.rs` tells failures in words. Nothing here ever prints the URL.

use std::path::Path;

use anyhow::{Context as _, anyhow, bail};
use redis::IntoConnectionInfo;
use rustls::pki_types::pem::PemObject;

use super::Store;
use super::rules::{Admit, GroupState, Micros, Op, Plan, Reply, SCHEDULE_AHEAD, TRIAL_LEASE};

mod address;
mod bounded;
mod link;
mod words;

pub use address::Address;
use link::Link;

/// How long a group's state outlives its last change.
const TTL_MS: u64 = 7 * 24 * 3600 * 1000;

const SCRIPT: &str = include_str!("redis.lua");

/// Whether `url` is a Redis URL this store can use: checked at start-up so
/// that a typo is a usage error. Returns what is wrong, in words that never
/// repeat the URL.
pub fn check_url(url: &str) -> Result<(), String> {
    if let Address::Sentinel(_) | Address::Cluster(_) = Address::parse(url)? {
        return Ok(());
    }
    // The URL parser's own words first: they say which part is wrong.
    let parsed = reqwest::Url::parse(url).map_err(|e| e.to_string())?;
    let unix = matches!(parsed.scheme(), "unix" | "redis+unix");
    if !unix && parsed.host_str().is_none_or(str::is_empty) {
        return Err("no host".into());
    }
    if unix && (parsed.host_str().is_some_and(|h| !h.is_empty()) || parsed.path().len() < 2) {
        return Err("a unix socket URL names an absolute path: unix:///PATH".into());
    }
    url.into_connection_info()
        .map(drop)
        .map_err(|e| e.to_string())
}

pub struct RedisStore {
    link: Link,
    script: redis::Script,
    /// From the last pace slot the store granted: how many runs share the
    /// group's pace (see [`Store::waiting`]).
    sharing: u32,
}

/// The Redis password from `--state-password-file`: the file's first line.
fn read_password(path: &Path) -> anyhow::Result<String> {
    // A line, and never a FIFO waiting for a writer.
    let bytes = crate::fsutil::read_regular(path, 64 * 1024)
        .with_context(|| format!("cannot read the password file {}", path.display()))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| anyhow!("the password file {} is not UTF-8 text", path.display()))?;
    let line = text.lines().next().unwrap_or("");
    if line.is_empty() {
        bail!("the password file {} is empty", path.display());
    }
    Ok(line.to_string())
}

/// `--state-cacert`'s certificates, as the redis crate takes them: PEM
/// text holding one at least, never a FIFO waiting for a writer.
fn read_cacert(path: &Path) -> anyhow::Result<Vec<u8>> {
    let shown = path.display();
    let pem = crate::fsutil::read_regular(path, 1 << 20)
        .with_context(|| format!("cannot read --state-cacert {shown}"))?;
    let mut certs = rustls::pki_types::CertificateDer::pem_slice_iter(&pem);
    match certs.next() {
        Some(Ok(_)) => Ok(pem),
        Some(Err(e)) => bail!("invalid --state-cacert {shown}: {e}"),
        None => bail!(
            "invalid --state-cacert {shown}: no certificate in it (-----BEGIN CERTIFICATE-----)"
        ),
    }
}

impl RedisStore {
    pub fn new(
        url: &str,
        password_file: Option<&Path>,
        cacert: Option<&Path>,
    ) -> anyhow::Result<RedisStore> {
        // The error names what is wrong, never the URL itself.
        let address = Address::parse(url).map_err(|why| anyhow!("invalid Redis URL: {why}"))?;
        let password = password_file.map(read_password).transpose()?;
        let roots = cacert.map(read_cacert).transpose()?;
        Ok(RedisStore {
            link: Link::new(address, password, roots)?,
            script: redis::Script::new(SCRIPT),
            sharing: 1,
        })
    }
}

/// Microseconds as the script's signed arguments; -1 stands for "none".
fn arg(v: Option<u64>) -> i64 {
    v.map_or(-1, |v| i64::try_from(v).unwrap_or(i64::MAX))
}

fn unsigned(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

impl Store for RedisStore {
    /// Connect, and make one harmless write (refused by a read-only
    /// replica), so that a store that cannot be used is known before the
    /// command first runs.
    async fn open(&mut self, group: &str) -> anyhow::Result<()> {
        let key = format!("retry:{{{group}}}:state");
        let mut call = self.script.key(&key);
        call.arg("probe").arg(TTL_MS);
        self.link.invoke(&call).await.map(drop)
    }

    async fn apply(&mut self, group: &str, op: Op) -> anyhow::Result<Reply> {
        let key = format!("retry:{{{group}}}:state");
        let mut call = self.script.key(&key);
        let flag = |b: bool| if b { "1" } else { "0" };
        match op {
            Op::Admit { lease, breaker } => call
                .arg("admit")
                .arg(TTL_MS)
                .arg(arg(Some(lease)))
                .arg(arg(Some(breaker.cooldown)))
                .arg(TRIAL_LEASE),
            Op::Record { budget, success } => call
                .arg("record")
                .arg(TTL_MS)
                .arg(budget.max_milli)
                .arg(budget.ratio_milli)
                .arg(flag(success)),
            Op::Plan {
                delay,
                deadline_in,
                budget,
                pace,
            } => call
                .arg("plan")
                .arg(TTL_MS)
                .arg(arg(Some(delay)))
                .arg(arg(deadline_in))
                .arg(budget.map_or(-1, |b| b.max_milli))
                .arg(arg(pace.map(|p| p.interval)))
                .arg(pace.map_or(1, |p| p.burst))
                .arg(SCHEDULE_AHEAD),
            Op::Finish {
                breaker,
                success,
                trial,
            } => call
                .arg("finish")
                .arg(TTL_MS)
                .arg(breaker.threshold)
                .arg(arg(Some(breaker.cooldown)))
                .arg(flag(success))
                .arg(flag(trial))
                .arg(TRIAL_LEASE),
        };
        let v = self.link.invoke(&call).await?;
        let at = |i: usize| v.get(i).copied().unwrap_or(0);
        let reply = match op {
            Op::Admit { .. } => Reply::Admit(match at(0) {
                0 => Admit::Closed,
                1 => Admit::Trial,
                2 => Admit::Open {
                    wait: unsigned(at(1)),
                },
                3 => Admit::TrialUnderWay {
                    wait: unsigned(at(1)),
                },
                other => bail!("unexpected reply {other} from the state script"),
            }),
            Op::Plan { .. } => Reply::Plan(match at(0) {
                0 => Plan::Go {
                    wait: unsigned(at(1)),
                    paced: unsigned(at(2)),
                },
                1 => Plan::BudgetSpent {
                    tokens_milli: at(1),
                },
                2 => Plan::PastDeadline {
                    wait: unsigned(at(1)),
                },
                other => bail!("unexpected reply {other} from the state script"),
            }),
            Op::Record { .. } | Op::Finish { .. } => Reply::Done,
        };
        if let (Op::Plan { pace: Some(p), .. }, Reply::Plan(Plan::Go { wait, .. })) = (op, &reply) {
            self.sharing = sharing(*wait, p.interval);
        }
        Ok(reply)
    }

    async fn show(&mut self, group: &str) -> anyhow::Result<(Micros, Option<GroupState>)> {
        let key = format!("retry:{{{group}}}:state");
        let mut call = self.script.key(&key);
        call.arg("show").arg(TTL_MS);
        let v = self.link.invoke(&call).await?;
        let at = |i: usize| v.get(i).copied().unwrap_or(0);
        let state = (at(0) == 1).then(|| GroupState {
            tat: unsigned(at(2)),
            spent_milli: at(3),
            tokens_milli: (at(4) >= 0).then_some(at(4)),
            failures: u32::try_from(at(5)).unwrap_or(u32::MAX),
            open_until: unsigned(at(6)),
            trial_until: unsigned(at(7)),
        });
        Ok((unsigned(at(1)), state))
    }

    fn bound(&mut self, until: Option<std::time::Instant>) {
        self.link.bound(until);
    }

    /// How many runs share the group's pace, as the last slot granted
    /// showed it: see [`sharing`].
    fn waiting(&mut self, _group: &str) -> u32 {
        self.sharing
    }
}

/// How many runs share a pace of one slot every `interval`, judged from a
/// slot granted `wait` from now: each slot booked ahead of this one is
/// another run's retry. The run's own delay counts too, which errs on the
/// side of sharing with more runs: a lone run whose delay is long spaces
/// its retries, alone, by about that delay, which its backoff does anyway.
fn sharing(wait: Micros, interval: Micros) -> u32 {
    let slots = wait.div_ceil(interval.max(1));
    u32::try_from(slots)
        .unwrap_or(u32::MAX)
        .clamp(1, MAX_SHARING)
}

/// The most runs [`sharing`] counts: a schedule is never longer than
/// [`SCHEDULE_AHEAD`] slots.
const MAX_SHARING: u32 = SCHEDULE_AHEAD as u32 + 1;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_urls_are_told_apart() {
        for bad in [
            "redis://:pw@",
            "unix://",
            "redis://127.0.0.1:99999/0",
            "redis://[::1",
            "redis://db/notanumber",
            "unix:///run/r.sock?db=x",
            "unix://host/run/r.sock",
        ] {
            let why = check_url(bad).expect_err(bad);
            assert!(!why.contains("pw"), "{why}");
        }
        for good in [
            "redis://127.0.0.1",
            "redis://:pw@127.0.0.1:6380/2",
            "rediss://db.example",
            "unix:///run/redis.sock",
            "redis+unix:///run/redis.sock?db=2&pass=x",
            "redis://[::1]:6379",
            "redis+sentinel://s1,s2:26380/mymaster/2",
            "rediss+sentinel://:pw@s1/mymaster?sentinel_password=x",
            "redis+cluster://n1:7000,n2:7001",
            "rediss+cluster://:pw@n1",
        ] {
            assert_eq!(check_url(good), Ok(()), "{good}");
        }
        assert!(check_url("redis+sentinel://:pw@s1").is_err_and(|why| !why.contains("pw")));
    }

    #[test]
    fn the_runs_sharing_a_pace_are_counted_from_the_slot_granted() {
        const MS: Micros = 1000;
        // 200 runs each retrying at once under --pace 50/s: a slot 4 s out.
        assert_eq!(sharing(4_000 * MS, 20 * MS), 200);
        assert_eq!(sharing(4_001 * MS, 20 * MS), 201);
        // A free slot, or a schedule beyond the bound, stays within it.
        assert_eq!(sharing(0, 20 * MS), 1);
        assert_eq!(sharing(u64::MAX, 1), MAX_SHARING);
    }
}
