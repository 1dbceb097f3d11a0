/**
 * @module The Lua side of RedisStore: one script applies a request to every policy of a plan (the
 * enforced group, then the shadow group, each all-or-nothing) and returns every per-policy result, in
 * one round trip. Each algorithm is a line-by-line port of its TypeScript kernel (algorithms/*.ts):
 * the same integer arithmetic on doubles, the same order of operations, the same fixed-point scales
 * (milli-units of cost; ticks for the bucket family), so both give identical numbers on any trace.
 *
 * State, in the smallest form that keeps it exact; every key expires (PXAT / PEXPIREAT) exactly when
 * its kernel's `expiresAt` says the state becomes equivalent to a key never seen, and the expiry time
 * carries part of the state, read back with PEXPIRETIME (Redis 7.0+):
 * - fixed-window:   `used` (milli-units); window start = expiry - windowMs.
 * - sliding-window: `curr` or `curr:prev` (milli-units); current window start = expiry - 2 * windowMs.
 * - token-bucket:   `tokens` (ticks); last refill = expiry - ceil((capTicks - tokens) / rate).
 * - gcra, leaky-bucket: `tat` or `tat:frac` (theoretical arrival time in ms, and its fraction in ticks
 *   when not 0); expiry = tat (+1 ms when frac > 0).
 * - sliding-log: a sorted set of admitted requests, one member per distinct millisecond, member = the
 *   time in ms, score = the running total of admitted cost (milli-units) up to and including it. Rank 0
 *   holds the base: `b` on a new log, `b<time>` once entries expired (the newest expired entry, whose
 *   time is the high-water mark when no entry is left). The cost in the window is `last score - base
 *   score`, with no walk over the entries; expired entries are dropped from the head, each once.
 *
 * Time is Redis `TIME`, the one clock of every instance; ARGV[1] may carry a `now` for tests only.
 */
import { createHash } from 'node:crypto';

/** A Lua script and the SHA1 that EVALSHA names it by (computed from the text, never pinned by hand). */
export interface LuaScript {
  /** Namespaced and versioned: bump the version whenever the state layout changes meaning. */
  readonly name: string;
  readonly lua: string;
  readonly sha: string;
  /** How many KEYS the script takes: one per policy of the plan, so given per call. */
  readonly numberOfKeys: 'per-policy';
  readonly readOnly: false;
}

/** Algorithm codes the script switches on (ARGV per policy). */
export const ALGORITHM_CODES = Object.freeze({
  'fixed-window': 1,
  'sliding-window': 2,
  'token-bucket': 3,
  gcra: 4,
  'leaky-bucket': 5,
  'sliding-log': 6,
});

const APPLY_LUA = `-- tollgate:apply:v1 (see packages/core/src/stores/redis/scripts.ts)
-- KEYS[i]  the state of policy i; every key of one call shares one hash tag (one cluster slot)
-- ARGV[1]  now in ms, or '' to read Redis TIME (a given now is for tests only)
-- ARGV[2]  cost in milli-units
-- ARGV[3]  enforced count e: KEYS[1..e] form one all-or-nothing group, the rest another
-- ARGV[4 + 7 * (i - 1) .. +6]  policy i: algorithm code, windowMs, capMilli, rate, tokenTicks, capTicks,
--          extra (fixed-window: 1 when anchored at the first request; leaky-bucket: delayTicks)
-- Returns 5 integers per policy (flags, remaining milli, retryAfterMs, resetMs, delayMs), then now.
local INF = math.huge
local MAX_SAFE = 9007199254740991
local now
if ARGV[1] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
else
  now = tonumber(ARGV[1])
end
local cost = tonumber(ARGV[2])
local enforced = tonumber(ARGV[3])
local n = #KEYS

local function fmt(x) return string.format('%d', x) end
local function floordiv(a, b)
  local q = math.floor(a / b)
  if q * b > a then q = q - 1 elseif (q + 1) * b <= a then q = q + 1 end
  return q
end
local function ceildiv(a, b)
  local q = floordiv(a, b)
  if q * b == a then return q end
  return q + 1
end
local function tomilli(ticks, tpm)
  if tpm == 1 then return ticks end
  return floordiv(ticks, tpm)
end
local function aligned(t, w)
  local m = math.fmod(t, w)
  if m < 0 then return t - m - w end
  return t - m
end
-- The expiry of an existing key (ms), or nil when it has none (then its value is not ours to trust).
local function expiry(k)
  local e = redis.call('PEXPIRETIME', k)
  if e < 0 then return nil end
  return e
end
local function pair(v)
  local at = string.find(v, ':', 1, true)
  if at == nil then return tonumber(v), 0 end
  return tonumber(string.sub(v, 1, at - 1)), tonumber(string.sub(v, at + 1))
end

-- Per policy: parameters, loaded state (a, b, c, d, fresh) and the outcome of evaluate.
local code, w, capm, rate, tpm, capt, extra = {}, {}, {}, {}, {}, {}, {}
local sa, sb, sc, sd, fresh = {}, {}, {}, {}, {}
local sx, sxt = {}, {}
local ok, ex, rem, retry, reset, delay = {}, {}, {}, {}, {}, {}
for i = 1, n do
  local o = 3 + 7 * (i - 1)
  code[i] = tonumber(ARGV[o + 1]); w[i] = tonumber(ARGV[o + 2]); capm[i] = tonumber(ARGV[o + 3])
  rate[i] = tonumber(ARGV[o + 4]); tpm[i] = tonumber(ARGV[o + 5]); capt[i] = tonumber(ARGV[o + 6])
  extra[i] = tonumber(ARGV[o + 7])
end

local function exceeds(i, remaining, resetms)
  ok[i] = false; ex[i] = true; rem[i] = remaining; retry[i] = 0; reset[i] = resetms; delay[i] = 0
end

-- fixed-window: sa = window start, sb = used.
local function fw_load(i, k)
  local v = redis.call('GET', k)
  local e = v and expiry(k)
  if not e then sa[i] = -INF; sb[i] = 0; return end
  sa[i] = e - w[i]; sb[i] = tonumber(v)
end
local function fw_window(i)
  local start = sa[i]
  if extra[i] == 1 then
    if now >= start + w[i] then return now end
    return start
  end
  return math.max(aligned(now, w[i]), start)
end
local function fw_eval(i, c)
  local ws = fw_window(i)
  local used = 0
  if ws == sa[i] then used = sb[i] end
  local e = ws + w[i]
  local cap = capm[i]
  local resetu = 0
  if used > 0 then resetu = e - now end
  if c > cap then return exceeds(i, cap - used, resetu) end
  ex[i] = false; delay[i] = 0
  if used + c <= cap then
    ok[i] = true; rem[i] = cap - used - c; retry[i] = 0; reset[i] = e - now
  else
    ok[i] = false; rem[i] = cap - used; retry[i] = e - now; reset[i] = resetu
  end
end
local function fw_commit(i, k)
  local ws = fw_window(i)
  local used = 0
  if ws == sa[i] then used = sb[i] end
  redis.call('SET', k, fmt(used + cost), 'PXAT', fmt(ws + w[i]))
end

-- sliding-window: sa = current window start, sb = curr, sc = prev.
local function sw_load(i, k)
  local v = redis.call('GET', k)
  local e = v and expiry(k)
  if not e then sa[i] = -INF; sb[i] = 0; sc[i] = 0; return end
  sa[i] = e - 2 * w[i]; sb[i], sc[i] = pair(v)
end
local function sw_roll(i)
  local start = sa[i]
  local a = aligned(now, w[i])
  if a > start then
    local prev = 0
    if a == start + w[i] then prev = sb[i] end
    return a, 0, prev
  end
  return start, sb[i], sc[i]
end
local function sw_uncharged(weighted, curr, cap, ww)
  local room = cap * ww - weighted - curr * ww
  if room <= 0 then return 0 end
  return floordiv(room, ww)
end
local function sw_wait(e, prev, curr, c, cap, ww)
  local room = cap * ww - (curr + c) * ww
  if room >= 0 and prev > 0 then
    local d = ceildiv(prev * (ww - e) - room, prev)
    if d <= ww - e - 1 then return d end
  end
  local room2 = (cap - c) * ww
  local e2 = 0
  if curr * ww > room2 then e2 = ceildiv(curr * ww - room2, curr) end
  return ww - e + e2
end
local function sw_eval(i, c)
  local ww = w[i]
  local cap = capm[i]
  local start, curr, prev = sw_roll(i)
  local behind = 0
  if start > now then behind = start - now end
  local e = now - start
  if behind > 0 then e = 0 end
  local weighted = prev * (ww - e)
  local resetu = 0
  if curr > 0 then resetu = start + 2 * ww - now elseif prev > 0 then resetu = start + ww - now end
  if c > cap then return exceeds(i, sw_uncharged(weighted, curr, cap, ww), resetu) end
  ex[i] = false; delay[i] = 0
  local room = cap * ww - weighted - (curr + c) * ww
  if room >= 0 then
    ok[i] = true; rem[i] = floordiv(room, ww); retry[i] = 0; reset[i] = start + 2 * ww - now
  else
    ok[i] = false; rem[i] = sw_uncharged(weighted, curr, cap, ww)
    retry[i] = behind + sw_wait(e, prev, curr, c, cap, ww); reset[i] = resetu
  end
end
local function sw_commit(i, k)
  local start, curr, prev = sw_roll(i)
  local v = fmt(curr + cost)
  if prev > 0 then v = v .. ':' .. fmt(prev) end
  redis.call('SET', k, v, 'PXAT', fmt(start + 2 * w[i]))
end

-- token-bucket: sa = tokens (ticks), sb = last refill.
local function tb_load(i, k)
  local v = redis.call('GET', k)
  local e = v and expiry(k)
  if not e then sa[i] = INF; sb[i] = -INF; return end
  sa[i] = tonumber(v); sb[i] = e - ceildiv(capt[i] - sa[i], rate[i])
end
local function tb_refill(tokens, last, cap, r)
  if tokens >= cap or now <= last then return tokens end
  local elapsed = now - last
  if elapsed >= ceildiv(cap - tokens, r) then return cap end
  return tokens + elapsed * r
end
local function tb_resetu(tokens, cap, r, behind)
  if tokens >= cap then return 0 end
  return behind + ceildiv(cap - tokens, r)
end
local function tb_eval(i, c)
  local cap = capt[i]
  local r = rate[i]
  local t = tpm[i]
  local tokens = tb_refill(math.min(sa[i], cap), sb[i], cap, r)
  local last = sb[i]
  local behind = 0
  if last > now then behind = last - now end
  local need = c * t
  if need > cap then return exceeds(i, tomilli(tokens, t), tb_resetu(tokens, cap, r, behind)) end
  ex[i] = false; delay[i] = 0
  if tokens >= need then
    ok[i] = true; rem[i] = tomilli(tokens - need, t); retry[i] = 0
    reset[i] = behind + ceildiv(cap - tokens + need, r)
  else
    ok[i] = false; rem[i] = tomilli(tokens, t); retry[i] = behind + ceildiv(need - tokens, r)
    reset[i] = tb_resetu(tokens, cap, r, behind)
  end
end
local function tb_commit(i, k)
  local cap = capt[i]
  local tokens = tb_refill(math.min(sa[i], cap), sb[i], cap, rate[i]) - cost * tpm[i]
  local last = math.max(now, sb[i])
  redis.call('SET', k, fmt(tokens), 'PXAT', fmt(last + ceildiv(cap - tokens, rate[i])))
end

-- gcra and leaky-bucket: sa = tat (ms), sb = fraction of a ms in ticks.
local function gc_load(i, k)
  local v = redis.call('GET', k)
  if not v then sa[i] = -INF; sb[i] = 0; return end
  sa[i], sb[i] = pair(v)
end
local function gc_debt(i)
  if sa[i] < now then return 0 end
  return (sa[i] - now) * rate[i] + sb[i]
end
local function gc_eval(i, c)
  local r = rate[i]
  local cap = capt[i]
  local t = tpm[i]
  local dticks = INF
  if code[i] == 5 then dticks = extra[i] end
  local debt = gc_debt(i)
  local need = c * t
  if need > cap then
    local remaining = 0
    if debt < cap then remaining = tomilli(cap - debt, t) end
    return exceeds(i, remaining, ceildiv(debt, r))
  end
  ex[i] = false
  local after = debt + need
  if after <= cap then
    ok[i] = true; rem[i] = tomilli(cap - after, t); retry[i] = 0; reset[i] = ceildiv(after, r)
    delay[i] = 0
    if debt > dticks then delay[i] = ceildiv(debt - dticks, r) end
  else
    ok[i] = false; rem[i] = 0
    if debt < cap then rem[i] = tomilli(cap - debt, t) end
    retry[i] = ceildiv(after - cap, r); reset[i] = ceildiv(debt, r); delay[i] = 0
  end
end
local function gc_commit(i, k)
  local r = rate[i]
  local after = gc_debt(i) + cost * tpm[i]
  local whole = floordiv(after, r)
  local tat = now + whole
  local frac = after - whole * r
  if frac > 0 then
    redis.call('SET', k, fmt(tat) .. ':' .. fmt(frac), 'PXAT', fmt(tat + 1))
  else
    redis.call('SET', k, fmt(tat), 'PXAT', fmt(tat))
  end
end

-- sliding-log: sa = high-water mark, sb = base score, sc = last score, sd = entries in the window.
local function member_time(m)
  if string.sub(m, 1, 1) == 'b' then return tonumber(string.sub(m, 2)) or -INF end
  return tonumber(m)
end
-- Loads the log and finds the entries that left the window; like the kernel, only a commit drops them
-- (sx = how many, sxt = the newest one's time): a rejected request never moves a key's window.
local function sl_load(i, k)
  sx[i] = 0
  local last = redis.call('ZRANGE', k, -1, -1, 'WITHSCORES')
  if #last == 0 then fresh[i] = true; sa[i] = -INF; sb[i] = 0; sc[i] = 0; sd[i] = 0; return end
  fresh[i] = false
  local hw = member_time(last[1])
  sa[i] = hw; sc[i] = tonumber(last[2])
  local bound = math.max(now, hw) - w[i]
  local card = redis.call('ZCARD', k)
  local base
  local expired, bt, bc = 0, nil, nil
  local from, size = 0, 4
  local done = false
  while not done do
    local items = redis.call('ZRANGE', k, from, from + size - 1, 'WITHSCORES')
    local j = 1
    if from == 0 then base = tonumber(items[2]); j = 3 end
    while j <= #items do
      local t = tonumber(items[j])
      if t > bound then done = true; break end
      expired = expired + 1; bt = t; bc = tonumber(items[j + 1])
      j = j + 2
    end
    from = from + size
    if from >= card then done = true end
    if size < 256 then size = size * 2 end
  end
  if expired > 0 then
    sx[i] = expired; sxt[i] = bt
    base = bc
  end
  sb[i] = base; sd[i] = card - 1 - expired
end
local function sl_eval(i, k, c)
  local ww = w[i]
  local cap = capm[i]
  local sum = 0
  if sd[i] > 0 then sum = sc[i] - sb[i] end
  local resetu = 0
  if sd[i] > 0 then resetu = sa[i] + ww - now end
  if c > cap then return exceeds(i, cap - sum, resetu) end
  ex[i] = false; delay[i] = 0
  if sum + c <= cap then
    ok[i] = true; rem[i] = cap - sum - c; retry[i] = 0
    local at = now
    if not fresh[i] and sa[i] > now then at = sa[i] end
    reset[i] = at + ww - now
    return
  end
  local first = redis.call('ZRANGEBYSCORE', k, fmt(sb[i] + (sum + c - cap)), '+inf', 'LIMIT', 0, 1)
  ok[i] = false; rem[i] = cap - sum; retry[i] = tonumber(first[1]) + ww - now; reset[i] = resetu
end
local function sl_commit(i, k)
  local hw = sa[i]
  if now > hw then hw = now end
  if fresh[i] then
    redis.call('ZADD', k, 0, 'b', fmt(cost), fmt(hw))
  else
    local base = sb[i]
    local last = sc[i]
    if sx[i] > 0 then
      -- Drop the expired entries (each once): the newest of them becomes the base.
      redis.call('ZREMRANGEBYRANK', k, 0, sx[i])
      redis.call('ZADD', k, fmt(base), 'b' .. fmt(sxt[i]))
    end
    if last + cost > MAX_SAFE then
      -- Running totals only grow while the key lives: rebase them before they leave exact integers.
      local all = redis.call('ZRANGE', k, 0, -1, 'WITHSCORES')
      for j = 1, #all, 2 do redis.call('ZADD', k, fmt(tonumber(all[j + 1]) - base), all[j]) end
      last = last - base
    end
    if sd[i] > 0 and sa[i] == hw then
      redis.call('ZINCRBY', k, fmt(cost), fmt(hw))
    else
      redis.call('ZADD', k, fmt(last + cost), fmt(hw))
    end
  end
  redis.call('PEXPIREAT', k, fmt(hw + w[i]))
end

local function load(i)
  local c = code[i]
  local k = KEYS[i]
  if c == 1 then fw_load(i, k) elseif c == 2 then sw_load(i, k) elseif c == 3 then tb_load(i, k)
  elseif c == 6 then sl_load(i, k) else gc_load(i, k) end
end
local function evaluate(i, c)
  local a = code[i]
  if a == 1 then fw_eval(i, c) elseif a == 2 then sw_eval(i, c) elseif a == 3 then tb_eval(i, c)
  elseif a == 6 then sl_eval(i, KEYS[i], c) else gc_eval(i, c) end
end
local function commit(i)
  local c = code[i]
  local k = KEYS[i]
  if c == 1 then fw_commit(i, k) elseif c == 2 then sw_commit(i, k) elseif c == 3 then tb_commit(i, k)
  elseif c == 6 then sl_commit(i, k) else gc_commit(i, k) end
end

local out = {}
local function group(from, to)
  local all = true
  for i = from, to do
    load(i)
    evaluate(i, cost)
    if not ok[i] then all = false end
  end
  for i = from, to do
    local o = 5 * (i - 1)
    if all then
      commit(i)
      out[o + 1] = 5; out[o + 2] = rem[i]; out[o + 3] = 0; out[o + 4] = reset[i]; out[o + 5] = delay[i]
    else
      local flags = 0
      if ok[i] then flags = 1 end
      if ex[i] then flags = flags + 2 end
      out[o + 1] = flags; out[o + 3] = retry[i]; out[o + 5] = 0
      -- Admitted here but not charged: report the state as it stands (a cost that can never fit does).
      if ok[i] then evaluate(i, INF) end
      out[o + 2] = rem[i]; out[o + 4] = reset[i]
    end
  end
end
group(1, enforced)
if n > enforced then group(enforced + 1, n) end
out[5 * n + 1] = now
return out
`;

function defineScript(name: string, lua: string): LuaScript {
  return Object.freeze({
    name,
    lua,
    sha: createHash('sha1').update(lua).digest('hex'),
    numberOfKeys: 'per-policy',
    readOnly: false,
  });
}

/** Applies a request to every policy of a plan: see the module comment and the script's header. */
export const APPLY_SCRIPT: LuaScript = defineScript('tollgate:apply:v1', APPLY_LUA);
