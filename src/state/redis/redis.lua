-- The rules of src/state/rules/ as one Redis script, so that every change
-- to a group's state is atomic on the server. Times are microseconds on
-- the server's clock (TIME); budget counts are thousandths of a token.
-- KEYS[1]: retry:{GROUP}:state. ARGV[1]: the operation, ARGV[2]: the TTL
-- in milliseconds, then the operation's own arguments (see redis.rs).
if redis.replicate_commands then redis.replicate_commands() end
local key, op, ttl = KEYS[1], ARGV[1], ARGV[2]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local h = redis.call('HMGET', key, 'tat', 'spent', 'tok', 'fail', 'open', 'trial')
local tat = tonumber(h[1]) or 0
local spent = tonumber(h[2]) or 0
local tok = tonumber(h[3])
local fail = tonumber(h[4]) or 0
local open = tonumber(h[5]) or 0
local trial = tonumber(h[6]) or 0
local function num(x) return string.format('%d', x) end
local function save(...)
  local a = {...}
  for i = 2, #a, 2 do a[i] = num(a[i]) end
  redis.call('HSET', key, unpack(a))
  redis.call('PEXPIRE', key, ttl)
end
local function clamp(x, lo, hi) return math.max(lo, math.min(x, hi)) end
-- Tokens spent, bounded by this invocation's TOKENS; a count left (`tok`),
-- as earlier versions stored it, is read against the same TOKENS.
local function spent_of(max)
  if tok ~= nil then return clamp(max - tok, 0, max) end
  return clamp(spent, 0, max)
end
-- Stored breaker times bounded by the current flags (rules/breaker.rs).
local function bound_breaker(cooldown, lease, least)
  local o, tr = open, trial
  if open ~= 0 then open = math.min(open, math.max(now + cooldown, 1)) end
  trial = math.min(trial, now + math.max(lease, cooldown, least))
  return o ~= open or tr ~= trial
end
if op == 'record' then
  local max = tonumber(ARGV[3])
  local c = spent_of(max)
  if ARGV[5] == '1' then c = math.max(c - tonumber(ARGV[4]), 0)
  else c = math.min(c + 1000, max) end
  save('spent', c)
  if tok ~= nil then redis.call('HDEL', key, 'tok') end
  return {0}
elseif op == 'plan' then
  local max = tonumber(ARGV[5])
  if max >= 0 then
    local left = max - spent_of(max)
    if left * 2 <= max then return {1, left} end
  end
  local delay = tonumber(ARGV[3])
  local interval = tonumber(ARGV[6])
  if interval < 0 then return {0, delay, 0} end
  local burst = tonumber(ARGV[7])
  local earliest = now + delay
  tat = math.min(tat, earliest + interval * (tonumber(ARGV[8]) + burst))
  local slot = math.max(earliest, tat - interval * (burst - 1))
  local wait = slot - now
  local deadline = tonumber(ARGV[4])
  if deadline >= 0 and wait >= deadline then return {2, wait} end
  save('tat', math.max(tat, slot) + interval)
  return {0, wait, slot - earliest}
elseif op == 'admit' then
  local lease = math.max(tonumber(ARGV[3]), 1)
  if bound_breaker(tonumber(ARGV[4]), lease, tonumber(ARGV[5])) then
    save('open', open, 'trial', trial)
  end
  if open == 0 then return {0} end
  if now < open then return {2, open - now} end
  if now < trial then return {3, trial - now} end
  save('trial', now + lease)
  return {1}
elseif op == 'finish' then
  local threshold, cooldown = tonumber(ARGV[3]), tonumber(ARGV[4])
  bound_breaker(cooldown, 0, tonumber(ARGV[7]))
  if ARGV[5] == '1' then
    save('fail', 0, 'open', 0, 'trial', 0)
    return {0}
  end
  fail = fail + 1
  if ARGV[6] == '1' then
    save('fail', fail, 'open', math.max(now + cooldown, 1), 'trial', 0)
  elseif open == 0 and fail >= threshold then
    save('fail', fail, 'open', math.max(now + cooldown, 1), 'trial', trial)
  else
    save('fail', fail, 'open', open, 'trial', trial)
  end
  return {0}
elseif op == 'show' then
  return {redis.call('EXISTS', key), now, tat, spent, tok or -1, fail, open, trial}
elseif op == 'probe' then
  -- A write command, harmless on any key: refused by a read-only replica.
  redis.call('PEXPIRE', key, ttl)
  return {0}
end
return redis.error_reply('unknown operation ' .. tostring(op))
