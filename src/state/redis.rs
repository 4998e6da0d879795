//! The Redis store: one hash per group, `retry:{GROUP}:state`, changed only
//! by one Lua script so that every read-modify-write is atomic on the server.
//!
//! The script reads the server's `TIME`, so the pace schedule of a fleet does
//! not depend on its hosts' clocks agreeing. It carries out the same rules as
//! [`super::rules`]; the store tests run both through the same sequences. The
//! key expires a week after its last change. Connecting and each command are
//! bounded by short timeouts, and nothing here ever prints the URL.

use std::time::Duration;

use anyhow::{Context as _, anyhow, bail};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};

use super::Store;
use super::rules::{Admit, GroupState, Op, Plan, Reply};

/// Connecting, including TLS and AUTH.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// One script call: it takes microseconds on the server, but a busy host may
/// be slow to schedule the server or this process.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a group's state outlives its last change.
const TTL_MS: u64 = 7 * 24 * 3600 * 1000;

const SCRIPT: &str = r#"
if redis.replicate_commands then redis.replicate_commands() end
local key, op, ttl = KEYS[1], ARGV[1], ARGV[2]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local h = redis.call('HMGET', key, 'tat', 'tok', 'fail', 'open', 'trial')
local tat = tonumber(h[1]) or 0
local tok = tonumber(h[2])
local fail = tonumber(h[3]) or 0
local open = tonumber(h[4]) or 0
local trial = tonumber(h[5]) or 0
local function num(x) return string.format('%d', x) end
local function save(...)
  local a = {...}
  for i = 2, #a, 2 do a[i] = num(a[i]) end
  redis.call('HSET', key, unpack(a))
  redis.call('PEXPIRE', key, ttl)
end
local function tokens(max)
  if tok == nil or tok > max then return max end
  return tok
end
if op == 'record' then
  local max = tonumber(ARGV[3])
  local c = tokens(max)
  if ARGV[5] == '1' then c = math.min(c + tonumber(ARGV[4]), max)
  else c = math.max(c - 1000, 0) end
  save('tok', c)
  return {0}
elseif op == 'plan' then
  local max = tonumber(ARGV[5])
  if max >= 0 then
    local c = tokens(max)
    if c * 2 <= max then return {1, c} end
  end
  local delay = tonumber(ARGV[3])
  local interval = tonumber(ARGV[6])
  if interval < 0 then return {0, delay, 0} end
  local earliest = now + delay
  local slot = math.max(earliest, tat - interval * (tonumber(ARGV[7]) - 1))
  local wait = slot - now
  local deadline = tonumber(ARGV[4])
  if deadline >= 0 and wait >= deadline then return {2, wait} end
  save('tat', math.max(tat, slot) + interval)
  return {0, wait, slot - earliest}
elseif op == 'admit' then
  if open == 0 then return {0} end
  if now < open then return {2, open - now} end
  if now < trial then return {3, trial - now} end
  save('trial', now + math.max(tonumber(ARGV[3]), 1))
  return {1}
elseif op == 'finish' then
  local threshold, cooldown = tonumber(ARGV[3]), tonumber(ARGV[4])
  if ARGV[5] == '1' then
    save('fail', 0, 'open', 0, 'trial', 0)
    return {0}
  end
  fail = fail + 1
  if ARGV[6] == '1' then
    save('fail', fail, 'open', math.max(now + cooldown, 1), 'trial', 0)
  elseif open == 0 and fail >= threshold then
    save('fail', fail, 'open', math.max(now + cooldown, 1))
  else
    save('fail', fail)
  end
  return {0}
elseif op == 'show' then
  return {now, tat, tok or -1, fail, open, trial}
end
return redis.error_reply('unknown operation ' .. tostring(op))
"#;

pub struct RedisStore {
    client: redis::Client,
    conn: Option<ConnectionManager>,
    script: redis::Script,
}

impl RedisStore {
    pub fn new(url: &str) -> anyhow::Result<RedisStore> {
        // The error names what is wrong, never the URL itself.
        let client = redis::Client::open(url).map_err(|e| anyhow!("invalid Redis URL: {e}"))?;
        Ok(RedisStore {
            client,
            conn: None,
            script: redis::Script::new(SCRIPT),
        })
    }

    async fn connection(&mut self) -> anyhow::Result<&mut ConnectionManager> {
        if self.conn.is_none() {
            let config = ConnectionManagerConfig::new()
                .set_connection_timeout(Some(CONNECT_TIMEOUT))
                .set_response_timeout(Some(COMMAND_TIMEOUT))
                // No retries of its own: a store that is not there now is run without.
                .set_number_of_retries(0);
            let conn = self
                .client
                .get_connection_manager_with_config(config)
                .await
                .context("cannot connect")?;
            self.conn = Some(conn);
        }
        self.conn.as_mut().context("no connection")
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
    async fn open(&mut self) -> anyhow::Result<()> {
        self.connection().await.map(|_| ())
    }

    async fn apply(&mut self, group: &str, op: Op) -> anyhow::Result<Reply> {
        self.connection().await?;
        let key = format!("retry:{{{group}}}:state");
        let mut call = self.script.key(&key);
        let flag = |b: bool| if b { "1" } else { "0" };
        match op {
            Op::Admit { lease } => call.arg("admit").arg(TTL_MS).arg(arg(Some(lease))),
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
                .arg(pace.map_or(1, |p| p.burst)),
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
                .arg(flag(trial)),
            Op::Show => call.arg("show").arg(TTL_MS),
        };
        let conn = self.conn.as_mut().context("no connection")?;
        let v: Vec<i64> = call
            .invoke_async(conn)
            .await
            .context("the state script failed")?;
        let at = |i: usize| v.get(i).copied().unwrap_or(0);
        Ok(match op {
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
            Op::Show => Reply::Show {
                now: unsigned(at(0)),
                state: GroupState {
                    tat: unsigned(at(1)),
                    tokens_milli: (at(2) >= 0).then_some(at(2)),
                    failures: u32::try_from(at(3)).unwrap_or(u32::MAX),
                    open_until: unsigned(at(4)),
                    trial_until: unsigned(at(5)),
                },
            },
        })
    }
}
