/**
 * @module The algorithms in Lua, as fragments that scripts.ts assembles into one straight-line script per
 * plan. Each fragment is a line-by-line port of its TypeScript kernel (algorithms/*.ts): the same
 * integer arithmetic on doubles, the same order of operations and corrections, the same fixed-point
 * scales (milli-units of cost; ticks for the bucket family). The policy's parameters are baked in as
 * literals; its state lives in locals named after the policy's position (`tat1`, `used2`), so the
 * script makes no table but its reply and no closure at all.
 *
 * What a fragment may use: `now` and `cost` (the request), `out` (the reply: five numbers per policy,
 * all 0 until written, then `now`), `KEYS`, `rep` (the mask of repaired keys), and the aliases `INF`,
 * `floor`, `fmod` and `fmt` (math.huge, math.floor, math.fmod, string.format) that every script defines
 * first. Temporaries live in `do ... end` blocks, so
 * only the state locals count toward Lua's 200 locals per function.
 *
 * State that heals: `load` reads a key as never seen when it holds what no kernel writes (another type,
 * a non-integer or negative number, a key without expiry, a time further ahead of `now` than the policy
 * can reach plus `CLOCK_TOLERANCE_MS`), deletes it and sets the policy's bit in `rep` (state-repair.ts).
 */
import { MAX_LOG_ENTRIES } from '../../algorithms/sliding-log.js';
import type { CompiledPolicy } from '../../policy.js';
import type { AlgorithmId } from '../../types.js';

/** Where one policy's fragments read and write: its key, its reply slots, its locals. */
export interface Slot {
  /** The policy's position in the plan, from 1: `KEYS[i]`, and the suffix of its locals. */
  readonly i: number;
  readonly key: string;
  /** Reply slots: 1 admitted, 2 the cost can never fit, 0 rejected; 5 once charged (F_ALLOWED | F_CHARGED). */
  readonly flags: string;
  readonly remaining: string;
  readonly retry: string;
  readonly reset: string;
  readonly delay: string;
}

export function slot(i: number): Slot {
  const o = 5 * (i - 1);
  return {
    i,
    key: `KEYS[${i}]`,
    flags: `out[${o + 1}]`,
    remaining: `out[${o + 2}]`,
    retry: `out[${o + 3}]`,
    reset: `out[${o + 4}]`,
    delay: `out[${o + 5}]`,
  };
}

/** The fragments of one algorithm. Each returns Lua statements. */
export interface LuaKernel {
  /** The locals (before their suffix) that carry the state, as it stands at `now`, from `load` to `commit`. */
  readonly state: readonly string[];
  /** Declares the state locals and fills them from the key: the state as it stands at `now`. */
  load(s: Slot, p: CompiledPolicy): string;
  /** The kernel's `evaluate` for `cost`: writes the flags (1, 2 or 0) and the outcome; charges nothing. */
  evaluate(s: Slot, p: CompiledPolicy): string;
  /**
   * What `evaluate` answers for a cost that can never fit: `remaining` and `reset` of the state as it
   * stands, for a policy that admitted the request when another policy of its group refused it.
   */
  uncharged(s: Slot, p: CompiledPolicy): string;
  /** The kernel's `commit`: charges `cost`, admitted by `evaluate`, and sets the key's expiry. */
  commit(s: Slot, p: CompiledPolicy): string;
  /** The kernel's fused `consume`, for a policy that is its own group: flags 5 when it charged. */
  consume?(s: Slot, p: CompiledPolicy): string;
  /** The kernel's `adopt`, after `load` in the apply script only (never in peek): persists converted state. */
  adopt?(s: Slot, p: CompiledPolicy): string;
}

/**
 * Template tag for fragments: drops blank lines and the literal's common indentation, and indents every
 * line of a multi-line value as deep as the line it is placed on.
 */
export function lua(strings: TemplateStringsArray, ...values: readonly (string | number)[]): string {
  let text = strings[0] as string;
  for (let k = 0; k < values.length; k++) {
    const indent = /^ */.exec(text.slice(text.lastIndexOf('\n') + 1))?.[0] ?? '';
    text += String(values[k]).replaceAll('\n', `\n${indent}`) + (strings[k + 1] as string);
  }
  const lines = text.split('\n').filter((line) => line.trim() !== '');
  const margin = Math.min(...lines.map((line) => line.length - line.trimStart().length));
  return lines.map((line) => line.slice(margin).trimEnd()).join('\n');
}

/** The state locals of policy `s`: `names(s, ['tat', 'frac'])` is `['tat1', 'frac1']` for the first policy. */
function names<const T extends readonly string[]>(s: Slot, base: T): { readonly [K in keyof T]: string } {
  return base.map((b) => `${b}${s.i}`) as { readonly [K in keyof T]: string };
}

/**
 * `local q = floor(a / b)`, exact for integers 0 <= a < 2^53 and b > 0 (fixed-point.ts floorDiv: the
 * quotient is correctly rounded, so it is at most one off; correct it). `a` is a name, `b` a name or literal.
 */
export function floorDiv(q: string, a: string, b: string | number): string {
  if (b === 1) return `local ${q} = ${a}`;
  return lua`
    local ${q} = floor(${a} / ${b})
    if ${q} * ${b} > ${a} then ${q} = ${q} - 1 elseif (${q} + 1) * ${b} <= ${a} then ${q} = ${q} + 1 end`;
}

/** `local q = ceil(a / b)`, exact (fixed-point.ts ceilDiv). */
export function ceilDiv(q: string, a: string, b: string | number): string {
  if (b === 1) return `local ${q} = ${a}`;
  return lua`
    ${floorDiv(q, a, b)}
    if ${q} * ${b} ~= ${a} then ${q} = ${q} + 1 end`;
}

/** `target = ticks` in milli-units, floored (fixed-point.ts ticksToMilli; one milli-unit is `tpm` ticks). */
function ticksToMilli(target: string, ticks: string, tpm: number): string {
  if (tpm === 1) return `${target} = ${ticks}`;
  return lua`
    ${floorDiv('milli', ticks, tpm)}
    ${target} = milli`;
}

/** Sets `local m` to `now`'s offset in its clock-aligned window and `target` to the window's start (kernel.ts alignedStart). */
function alignedStart(target: string, w: number): string {
  return lua`
    local m = fmod(now, ${w})
    ${target} = now - m
    if m < 0 then ${target} = ${target} - ${w} end`;
}

/**
 * How far ahead of `now` stored times may lie and still be read (a clock that stepped back by up to a
 * day): beyond it, state is foreign or corrupt, and would lock its key for ever.
 */
export const CLOCK_TOLERANCE_MS = 86_400_000;

/** A Lua condition: `v` (a name) is a number a kernel may store, an integer in [0, 2^53). */
function int(v: string): string {
  return `(${v} ~= nil and ${v} >= 0 and ${v} < ${2 ** 53} and ${v} == floor(${v}))`;
}

/** Deletes policy `s`'s key and marks it repaired in the reply (state-repair.ts). */
function repair(s: Slot): string {
  return `redis.call('DEL', ${s.key}); rep = rep + ${2 ** (s.i - 1)}`;
}

/**
 * Reads a window key: `value` (the stored string) and `expiry` (its PEXPIRETIME). Runs `parse`, which
 * sets `ok = true` (and the state) only for a value a kernel writes, when the key is a string with an
 * expiry at most `ahead` ms after now; anything else (another type, no expiry, a bad value) is repaired.
 */
function readWithExpiry(s: Slot, parse: string, ahead: number): string {
  return lua`
    local value = redis.pcall('GET', ${s.key})
    if value then
      local ok, expiry = false, -1
      if type(value) == 'string' then expiry = redis.call('PEXPIRETIME', ${s.key}) end
      if expiry >= 0 and expiry <= now + ${ahead + CLOCK_TOLERANCE_MS} then
        ${parse}
      end
      if not ok then ${repair(s)} end
    end`;
}

/** Splits a stored `a` or `a:b` into `first` and `second` (0 when absent); either may be nil if not a number. */
function splitPair(value: string, first: string, second: string): string {
  return lua`
    local at = string.find(${value}, ':', 1, true)
    if at == nil then
      ${first} = tonumber(${value})
    else
      ${first} = tonumber(string.sub(${value}, 1, at - 1)); ${second} = tonumber(string.sub(${value}, at + 1))
    end`;
}

// fixed-window (fixed-window.ts). State: `used` (milli-units); window start = expiry - windowMs.
// Locals: ws = the window a request at now falls in, used = its cost so far.
const FW_STATE = ['ws', 'used'] as const;

/** `stop` (the window's end) and `resetu` (reset as the state stands) from the evaluate's first lines. */
function fwView(s: Slot, p: CompiledPolicy): string {
  const [ws, used] = names(s, FW_STATE);
  return lua`
    local stop = ${ws} + ${p.windowMs}
    local resetu = 0
    if ${used} > 0 then resetu = stop - now end`;
}

function fwExceeds(s: Slot, p: CompiledPolicy): string {
  const [, used] = names(s, FW_STATE);
  return lua`
    ${s.remaining} = ${p.capMilli} - ${used}
    if ${s.remaining} < 0 then ${s.remaining} = 0 end
    ${s.reset} = resetu`;
}

const fixedWindow: LuaKernel = {
  state: FW_STATE,
  load(s, p) {
    const [ws, used] = names(s, FW_STATE);
    const w = p.windowMs;
    // currentWindow: never moves back when the clock does.
    const window = p.anchorFirst
      ? lua`
          if now >= start + ${w} then ${ws} = now else ${ws} = start end`
      : lua`
          ${alignedStart(ws, w)}
          if start > ${ws} then ${ws} = start end`;
    return lua`
      local ${ws}, ${used} = 0, 0
      do
        local start, stored = -INF, 0
        ${readWithExpiry(s, `local v = tonumber(value); if ${int('v')} then start = expiry - ${w}; stored = v; ok = true end`, w)}
        ${window}
        if ${ws} == start then ${used} = stored end
      end`;
  },
  evaluate(s, p) {
    const [, used] = names(s, FW_STATE);
    const cap = p.capMilli;
    return lua`
      do
        ${fwView(s, p)}
        if cost > ${cap} then
          ${s.flags} = 2
          ${fwExceeds(s, p)}
        elseif ${used} + cost <= ${cap} then
          ${s.flags} = 1; ${s.remaining} = ${cap} - ${used} - cost; ${s.reset} = stop - now
        else
          ${s.remaining} = ${cap} - ${used}; ${s.retry} = stop - now; ${s.reset} = resetu
          if ${s.remaining} < 0 then ${s.remaining} = 0 end
        end
      end`;
  },
  uncharged(s, p) {
    return lua`
      do
        ${fwView(s, p)}
        ${fwExceeds(s, p)}
      end`;
  },
  commit(s, p) {
    const [ws, used] = names(s, FW_STATE);
    return `redis.call('SET', ${s.key}, fmt('%d', ${used} + cost), 'PXAT', fmt('%d', ${ws} + ${p.windowMs}))`;
  },
};

// sliding-window (sliding-window.ts). State: `curr` or `curr:prev` (milli-units); current window start =
// expiry - 2 * windowMs. Locals: the counters rolled over to now (start, curr, prev).
const SW_STATE = ['start', 'curr', 'prev'] as const;

function swView(s: Slot, p: CompiledPolicy): string {
  const [start, curr, prev] = names(s, SW_STATE);
  const w = p.windowMs;
  return lua`
    -- A backward clock parks the estimate at the window start: it neither refunds nor charges twice.
    local behind = 0
    if ${start} > now then behind = ${start} - now end
    local e = now - ${start}
    if behind > 0 then e = 0 end
    local weighted = ${prev} * (${w} - e)
    local resetu = 0
    if ${curr} > 0 then resetu = ${start} + ${2 * w} - now elseif ${prev} > 0 then resetu = ${start} + ${w} - now end`;
}

/** uncharged(): what is left now, before the request, at least 0. */
function swLeft(s: Slot, p: CompiledPolicy, target: string): string {
  const [, curr] = names(s, SW_STATE);
  const w = p.windowMs;
  return lua`
    local left = ${p.capMilli} * ${w} - weighted - ${curr} * ${w}
    ${target} = 0
    if left > 0 then
      ${floorDiv('q', 'left', w)}
      ${target} = q
    end`;
}

function swExceeds(s: Slot, p: CompiledPolicy): string {
  return lua`
    ${swLeft(s, p, s.remaining)}
    ${s.reset} = resetu`;
}

/** waitFrom(): the shortest wait after which `cost` fits, counted from the window start plus `e`. */
function swWait(s: Slot, p: CompiledPolicy): string {
  const [, curr, prev] = names(s, SW_STATE);
  const w = p.windowMs;
  const cap = p.capMilli;
  return lua`
    local wait = nil
    local room = ${cap} * ${w} - (${curr} + cost) * ${w}
    if room >= 0 and ${prev} > 0 then
      -- Inside this window: need prev * (w - e - d) <= room.
      local over = ${prev} * (${w} - e) - room
      ${ceilDiv('d', 'over', prev)}
      if d <= ${w} - e - 1 then wait = d end
    end
    if wait == nil then
      -- From the next boundary on, curr becomes prev: need curr * (w - e2) + cost * w <= cap * w.
      local room2 = (${cap} - cost) * ${w}
      local e2 = 0
      if ${curr} * ${w} > room2 then
        local over = ${curr} * ${w} - room2
        ${ceilDiv('q', 'over', curr)}
        e2 = q
      end
      wait = ${w} - e + e2
    end`;
}

const slidingWindow: LuaKernel = {
  state: SW_STATE,
  load(s, p) {
    const [start, curr, prev] = names(s, SW_STATE);
    const w = p.windowMs;
    const read = lua`
      local a, b = 0, 0
      ${splitPair('value', 'a', 'b')}
      if ${int('a')} and ${int('b')} then from = expiry - ${2 * w}; c = a; pv = b; ok = true end`;
    return lua`
      local ${start}, ${curr}, ${prev} = 0, 0, 0
      do
        local from, c, pv = -INF, 0, 0
        ${readWithExpiry(s, read, 2 * w)}
        -- roll: rolled over on a boundary, never moved back by a backward clock.
        local a
        ${alignedStart('a', w)}
        if a > from then
          ${start} = a
          if a == from + ${w} then ${prev} = c end
        else
          ${start} = from; ${curr} = c; ${prev} = pv
        end
      end`;
  },
  evaluate(s, p) {
    const [start, curr] = names(s, SW_STATE);
    const w = p.windowMs;
    const cap = p.capMilli;
    return lua`
      do
        ${swView(s, p)}
        if cost > ${cap} then
          ${s.flags} = 2
          ${swExceeds(s, p)}
        else
          local fits = ${cap} * ${w} - weighted - (${curr} + cost) * ${w}
          if fits >= 0 then
            ${s.flags} = 1
            ${floorDiv('q', 'fits', w)}
            ${s.remaining} = q; ${s.reset} = ${start} + ${2 * w} - now
          else
            ${swLeft(s, p, s.remaining)}
            ${swWait(s, p)}
            ${s.retry} = behind + wait; ${s.reset} = resetu
          end
        end
      end`;
  },
  uncharged(s, p) {
    return lua`
      do
        ${swView(s, p)}
        ${swExceeds(s, p)}
      end`;
  },
  commit(s, p) {
    const [start, curr, prev] = names(s, SW_STATE);
    return lua`
      if ${prev} > 0 then
        redis.call('SET', ${s.key}, fmt('%d:%d', ${curr} + cost, ${prev}), 'PXAT', fmt('%d', ${start} + ${2 * p.windowMs}))
      else
        redis.call('SET', ${s.key}, fmt('%d', ${curr} + cost), 'PXAT', fmt('%d', ${start} + ${2 * p.windowMs}))
      end`;
  },
};

// The refund frame of the bucket family (algorithms/refund-frame.ts), in the locals `<x>` (ticks given back,
// counted) and `<h>` (the horizon, ms; -INF without a live frame). Stored after the bucket's own fields,
// `:refunded:offset`, only while the frame lives; the key then expires at the horizon, and the offset is
// how long before it the bucket's own expiry would be.

/** The largest number `refunded` may reach (refund-frame.ts MAX_REFUNDED). */
const MAX_REFUNDED = 2 ** 52;

/**
 * Matches a bucket value, `a:b[:c]` or `a:b:c:refunded:offset`, into `f1` .. `f5` (nil where absent); a
 * value of one number is `f1` alone.
 */
function bucketFields(value: string): string {
  return lua`
    local f1, f2, f3, f4, f5 = tonumber(${value}), nil, nil, nil, nil
    if f1 == nil then
      f1, f2, f3, f4, f5 = string.match(${value}, '^(%d+):(%d+):(%d+):(%d+):(%d+)$')
      if f1 == nil then f1, f2, f3 = string.match(${value}, '^(%d+):(%d+):?(%d*)$') end
      f1, f2, f3, f4, f5 = tonumber(f1), tonumber(f2), tonumber(f3), tonumber(f4), tonumber(f5)
    end`;
}

/**
 * refund-frame.ts closeFrame, after a load read state of another limit or burst: the charges before it give
 * back nothing more. `full` is when the bucket was full again under the writer (-INF: full), `rw` its rate.
 */
function closeFrame(x: string, h: string, p: CompiledPolicy, full: string): string {
  return lua`
    local latest = ${h}
    if ${full} > latest then latest = ${full} end
    if latest > now then
      ${x} = ${x} + (latest - now) * rw
      if ${x} > ${MAX_REFUNDED} then ${x} = ${MAX_REFUNDED} end
      ${h} = latest
      if ${h} > now + ${bucketSpan(p)} then ${h} = now + ${bucketSpan(p)} end
    else
      ${x} = 0; ${h} = -INF
    end`;
}

/** How far ahead of now a mark of `p` may lie (ms): the time to fill an empty bucket. */
function bucketSpan(p: CompiledPolicy): number {
  return Math.ceil(p.capTicks / p.rate);
}

/**
 * `SET key` a bucket value: `fields` (a Lua expression of the bucket's own fields), then the live frame
 * of `x` and `h`, expiring at `at` (the bucket's own expiry) or at the frame's horizon when it lives; a
 * frame whose horizon passed is over (refund-frame.ts noteMark).
 */
function bucketSet(key: string, x: string, h: string, own: string, framed: string, at: string): string {
  return lua`
    if ${h} > now then
      if ${at} > ${h} then ${h} = ${at} end
      redis.call('SET', ${key}, fmt(${framed}, ${x}, ${h} - ${at}), 'PXAT', fmt('%d', ${h}))
    else
      ${x} = 0; ${h} = -INF
      redis.call('SET', ${key}, ${own}, 'PXAT', fmt('%d', ${at}))
    end`;
}

/**
 * A bucket refund (plans/refund-kernels.ts), after the policy's `load`: `debt` and `full` (when the bucket
 * was full again before it) as the state stands, `pos` the receipt's position less what it gave back;
 * `write` stores the bucket `take` ticks fuller. Sets `out[i]` when the state took it.
 */
function bucketRefund(
  s: Slot,
  p: CompiledPolicy,
  frame: readonly [string, string, string],
  debt: string,
  full: string,
  write: string,
): string {
  const [x, h, conv] = frame;
  return lua`
    local room = 0
    if now < mark and not ${conv} and ${x} >= rpos then room = (mark - now) * ${p.rate} + rpos - ${x} end
    local take = cost * ${p.tokenTicks}
    if take > ${debt} then take = ${debt} end
    if take > room then take = room end
    if take > 0 and ${x} + take <= ${MAX_REFUNDED} then
      -- Counted unless the charge was the newest (the debt left is all it may give back).
      if ${full} > ${h} then ${h} = ${full} end
      if mark > ${h} then ${h} = mark end
      if ${debt} > room then ${x} = ${x} + take end
      ${write}
      out[${s.i}] = 1
    end`;
}

// token-bucket (token-bucket.ts). State: `missing:limit[:burst]` (ticks the bucket lacks, and the limit
// and burst it was written under; burst only when it is not the limit), then the refund frame; the bucket
// is full again at the expiry (or the frame's horizon less its offset), and the last refill was
// ceil(missing / rate) before, under the writer's rate. Locals: tokens refilled to now, last = the last
// refill (a key never seen: full, last = -INF), tconv: the state was written under another limit or burst
// and converted (tbLevel), tx and th: the refund frame.
const TB_STATE = ['tokens', 'last', 'tconv', 'tx', 'th'] as const;

/**
 * `SET key missing:limit[:burst]` expiring when the bucket is full again, for `left` tokens refilled at
 * max(last, now), with the frame; leaves the charge's position (refund-frame.ts) in `pos`.
 */
function tbWrite(s: Slot, p: CompiledPolicy, left: string, last: string): string {
  const [, , , x, h] = names(s, TB_STATE);
  const params = p.capacity === p.limit ? `${p.limit}` : `${p.limit}:${p.capacity}`;
  return lua`
    local refilled = ${last}
    if now > refilled then refilled = now end
    local missing = ${p.capTicks} - ${left}
    ${ceilDiv('q', 'missing', p.rate)}
    local full = refilled + q
    ${bucketSet(s.key, x, h, `fmt('%d:${params}', missing)`, `'%d:${p.limit}:${p.capacity}:%d:%d', missing`, 'full')}
    local pos = ${x} - (q * ${p.rate} - missing)`;
}

/** The token-bucket refund (plans/refund-kernels.ts), after its `load`. */
export function tbRefund(s: Slot, p: CompiledPolicy): string {
  const [tokens, last, conv, x, h] = names(s, TB_STATE);
  const write = lua`
    local nxt = ${tokens} + take
    ${tbWrite(s, p, 'nxt', last)}`;
  return lua`
    local debt = ${p.capTicks} - ${tokens}
    local full = -INF
    if debt > 0 then
      ${ceilDiv('qf', 'debt', p.rate)}
      full = ${last} + qf
      if now > ${last} then full = now + qf end
    end
    ${bucketRefund(s, p, [x, h, conv], 'debt', 'full', write)}`;
}

/** resetUncharged(): time to full as the state stands. */
function tbResetUncharged(s: Slot, p: CompiledPolicy, target: string): string {
  const [tokens] = names(s, TB_STATE);
  return lua`
    if ${tokens} >= ${p.capTicks} then
      ${target} = 0
    else
      local missing = ${p.capTicks} - ${tokens}
      ${ceilDiv('q', 'missing', p.rate)}
      ${target} = behind + q
    end`;
}

function tbView(s: Slot): string {
  const [, last] = names(s, TB_STATE);
  return lua`
    -- Measured from the last refill when the clock stepped back, so waits stay exact.
    local behind = 0
    if ${last} > now then behind = ${last} - now end`;
}

function tbExceeds(s: Slot, p: CompiledPolicy): string {
  const [tokens] = names(s, TB_STATE);
  return lua`
    ${ticksToMilli(s.remaining, tokens, p.tokenTicks)}
    ${tbResetUncharged(s, p, s.reset)}`;
}

const tokenBucket: LuaKernel = {
  state: TB_STATE,
  load(s, p) {
    const [tokens, last, conv, x, h] = names(s, TB_STATE);
    const cap = p.capTicks;
    const w = p.windowMs;
    return lua`
      local ${tokens}, ${last}, ${conv}, ${x}, ${h} = INF, -INF, false, 0, -INF
      do
        local value = redis.pcall('GET', ${s.key})
        if value then
          local ok = false
          if type(value) == 'string' then
            local expiry = redis.call('PEXPIRETIME', ${s.key})
            ${bucketFields('value')}
            if f3 == nil then f3 = f2 end
            if f4 == nil then f4 = 0 end
            if expiry >= 0 and f2 ~= nil and ${int('f1')} and ${int('f2')} and ${int('f3')} and ${int('f4')} and (f5 == nil or ${int('f5')}) then
              local m, wl, wb, full = f1, f2, f3, expiry
              if f5 ~= nil then ${x} = f4; ${h} = expiry; full = expiry - f5 end
              if ${h} <= now then ${x} = 0; ${h} = -INF end
              if wl == ${p.limit} and wb == ${p.capacity} then
                if m <= ${cap} and full <= now + ${bucketSpan(p) + CLOCK_TOLERANCE_MS} and ${h} <= now + ${bucketSpan(p) + 1 + CLOCK_TOLERANCE_MS} then
                  ${tokens} = ${cap} - m
                  ${ceilDiv('q', 'm', p.rate)}
                  ${last} = full - q
                  ok = true
                end
              elseif wl >= 1 and wb >= 1 and wl * 1000 < ${2 ** 53} then
                -- Written under another limit or burst: refill under the writer's to now, convert what it lacks.
                local gx, gy = ${w}, wl * 1000
                while gy > 0 do gx, gy = gy, fmod(gx, gy) end
                local rw, tw = wl * 1000 / gx, ${w} / gx
                local capw = wb * 1000 * tw
                ${ceilDiv('span', 'capw', 'rw')}
                if capw < ${2 ** 53} and m <= capw and full <= now + span + ${CLOCK_TOLERANCE_MS} and ${h} <= now + span + ${1 + CLOCK_TOLERANCE_MS} then
                  local tv = capw - m
                  ${ceilDiv('q', 'm', 'rw')}
                  ${last} = full - q
                  local writerFull = -INF
                  if m > 0 then writerFull = full end
                  ${closeFrame(x, h, p, 'writerFull')}
                  if tv < capw and now > ${last} then
                    if now - ${last} >= q then tv = capw else tv = tv + (now - ${last}) * rw end
                  end
                  local used = (capw - tv) * ${p.tokenTicks}
                  ${ceilDiv('u', 'used', 'tw')}
                  if u > ${cap} then u = ${cap} end
                  ${tokens} = ${cap} - u; ${conv} = true; ok = true
                end
              end
            end
          end
          if not ok then ${repair(s)}; ${x} = 0; ${h} = -INF end
        end
        if not ${conv} then
          -- refill(min(stored, cap)): never refilled twice when the clock steps back.
          if ${tokens} > ${cap} then ${tokens} = ${cap} end
          if ${tokens} < ${cap} and now > ${last} then
            local elapsed = now - ${last}
            local missing = ${cap} - ${tokens}
            ${ceilDiv('q', 'missing', p.rate)}
            if elapsed >= q then ${tokens} = ${cap} else ${tokens} = ${tokens} + elapsed * ${p.rate} end
          end
        end
      end`;
  },
  adopt(s, p) {
    const [tokens, last, conv] = names(s, TB_STATE);
    return lua`
      if ${conv} then
        do
          ${tbWrite(s, p, tokens, last)}
        end
      end`;
  },
  evaluate(s, p) {
    const [tokens] = names(s, TB_STATE);
    const cap = p.capTicks;
    const tpm = p.tokenTicks;
    return lua`
      do
        ${tbView(s)}
        local need = cost * ${tpm}
        if need > ${cap} then
          ${s.flags} = 2
          ${tbExceeds(s, p)}
        elseif ${tokens} >= need then
          ${s.flags} = 1
          local left = ${tokens} - need
          ${ticksToMilli(s.remaining, 'left', tpm)}
          local refill = ${cap} - ${tokens} + need
          ${ceilDiv('q', 'refill', p.rate)}
          ${s.reset} = behind + q
        else
          ${ticksToMilli(s.remaining, tokens, tpm)}
          local missing = need - ${tokens}
          ${ceilDiv('q', 'missing', p.rate)}
          ${s.retry} = behind + q
          ${tbResetUncharged(s, p, s.reset)}
        end
      end`;
  },
  uncharged(s, p) {
    return lua`
      do
        ${tbView(s)}
        ${tbExceeds(s, p)}
      end`;
  },
  commit(s, p) {
    const [tokens, last] = names(s, TB_STATE);
    return lua`
      do
        local left = ${tokens} - cost * ${p.tokenTicks}
        ${tbWrite(s, p, 'left', last)}
        ${s.retry} = pos
      end`;
  },
};

// gcra and leaky-bucket (gcra.ts, leaky-bucket.ts). State: `limit[:frac[:burst]]` (the limit it was written
// under; the TAT's fraction in ticks, when not 0; the burst, when not the limit), then the refund frame; the
// TAT is the expiry (less 1 ms when frac > 0; the frame's horizon less its offset while a frame lives). A
// key of one policy that charges whole ms holds a small integer: Redis shares it, the key costs its name.
// Locals: tat, frac, and debt = max(0, tat - now) in ticks, all in the reader's scale: state written under
// another limit or burst is converted on load (gcra.ts gcraDebt), and conv is then true; gx and gh: the
// refund frame.
const GC_STATE = ['tat', 'frac', 'debt', 'conv', 'gx', 'gh'] as const;

/** gcraReset(): ceil(max(0, tat - now)) in ms, without a division. */
function gcraReset(s: Slot, target: string): string {
  const [tat, frac] = names(s, GC_STATE);
  return lua`
    ${target} = 0
    if ${tat} >= now then
      if ${frac} > 0 then ${target} = ${tat} - now + 1 else ${target} = ${tat} - now end
    end`;
}

/** The remaining when not charged: 0 when the debt fills the bucket. */
function gcraLeft(s: Slot, p: CompiledPolicy): string {
  const [, , debt] = names(s, GC_STATE);
  return lua`
    ${s.remaining} = 0
    if ${debt} < ${p.capTicks} then
      local left = ${p.capTicks} - ${debt}
      ${ticksToMilli(s.remaining, 'left', p.tokenTicks)}
    end`;
}

/** leaky-bucket `maxDelayMs`: ` and debt <= max` (or ` or debt > max`) in the admission test; '' without it. */
function overDelay(s: Slot, p: CompiledPolicy, join: string, op: string): string {
  if (!Number.isFinite(p.maxDelayTicks)) return '';
  return `${join}${names(s, GC_STATE)[2]} ${op} ${p.maxDelayTicks}`;
}

/** leaky-bucket `maxDelayMs`: the wait until the request would wait no longer than the maximum, if longer. */
function maxDelayRetry(s: Slot, p: CompiledPolicy): string {
  if (!Number.isFinite(p.maxDelayTicks)) return '';
  const [, , debt] = names(s, GC_STATE);
  return lua`
    if ${debt} > ${p.maxDelayTicks} then
      local late = ${debt} - ${p.maxDelayTicks}
      ${ceilDiv('q2', 'late', p.rate)}
      if q2 > ${s.retry} then ${s.retry} = q2 end
    end`;
}

/** The leaky-bucket delay; gcra never delays (its delayTicks is Infinity). */
function gcraDelay(s: Slot, p: CompiledPolicy): string {
  if (p.algorithm !== 'leaky-bucket') return '';
  const [, , debt] = names(s, GC_STATE);
  return lua`
    if ${debt} > ${p.delayTicks} then
      local late = ${debt} - ${p.delayTicks}
      ${ceilDiv('d', 'late', p.rate)}
      ${s.delay} = d
    end`;
}

/**
 * Writes the TAT `now + whole` ms and `frac` ticks: `limit[:frac[:burst]]` expiring at the TAT rounded up
 * (or the frame's), and leaves the charge's position (refund-frame.ts) in `pos`.
 */
function gcraWrite(s: Slot, p: CompiledPolicy, whole: string, frac: string): string {
  const [, , , , x, h] = names(s, GC_STATE);
  const own =
    p.capacity === p.limit
      ? `${frac} > 0 and fmt('${p.limit}:%d', ${frac}) or '${p.limit}'`
      : `fmt('${p.limit}:%d:${p.capacity}', ${frac})`;
  return lua`
    local tat = now + ${whole}
    local e = tat
    if ${frac} > 0 then e = tat + 1 end
    ${bucketSet(s.key, x, h, own, `'${p.limit}:%d:${p.capacity}:%d:%d', ${frac}`, 'e')}
    local pos = ${x}
    if ${frac} > 0 then pos = ${x} - ${p.rate} + ${frac} end`;
}

/**
 * gcraDebt() for state written under another limit (`wl`) or burst (`wb`), same window: checks it as the
 * writer would have written it (fraction below its rate, TAT and frame at most its span plus the clock
 * tolerance ahead), then converts the debt to this policy's ticks, rounded up and clamped to its capacity,
 * sets `tat` and `frac` in this policy's scale, and closes the refund frame (refund-frame.ts). Sets `bad`
 * when the state is not one the writer could write.
 */
function gcraConvert(s: Slot, p: CompiledPolicy): string {
  const [tat, frac, debt, conv, x, h] = names(s, GC_STATE);
  const w = p.windowMs;
  return lua`
    bad = not (wl >= 1 and wb >= 1 and wl * 1000 < ${2 ** 53})
    if not bad then
      local gx, gy = ${w}, wl * 1000
      while gy > 0 do gx, gy = gy, fmod(gx, gy) end
      local rw, tw = wl * 1000 / gx, ${w} / gx
      local capw = wb * 1000 * tw
      ${ceilDiv('span', 'capw', 'rw')}
      bad = not (capw < ${2 ** 53} and b < rw and a <= now + span + ${1 + CLOCK_TOLERANCE_MS} and ${h} <= now + span + ${1 + CLOCK_TOLERANCE_MS})
      if not bad and (a >= now or ${h} > now) then
        local full = a
        if b > 0 then full = a + 1 end
        ${closeFrame(x, h, p, 'full')}
        ${tat} = now; ${frac} = 0; ${conv} = true
        if a >= now then
          local dw = (a - now) * rw + b
          local scaled = dw * ${p.tokenTicks}
          ${ceilDiv('q', 'scaled', 'tw')}
          if q > ${p.capTicks} then q = ${p.capTicks} end
          ${floorDiv('whole', 'q', p.rate)}
          ${tat} = now + whole; ${frac} = q - whole * ${p.rate}; ${debt} = q
        end
      end
    end`;
}

/** The gcra and leaky-bucket refund (plans/refund-kernels.ts), after its `load`. */
export function gcraRefund(s: Slot, p: CompiledPolicy): string {
  const [tat, frac, debt, conv, x, h] = names(s, GC_STATE);
  const write = lua`
    local nxt = ${debt} - take
    ${floorDiv('whole', 'nxt', p.rate)}
    local fr = nxt - whole * ${p.rate}
    ${gcraWrite(s, p, 'whole', 'fr')}`;
  return lua`
    local full = ${tat}
    if ${frac} > 0 then full = ${tat} + 1 end
    ${bucketRefund(s, p, [x, h, conv], debt, 'full', write)}`;
}

const gcra: LuaKernel = {
  state: GC_STATE,
  adopt(s, p) {
    const [tat, frac, , conv] = names(s, GC_STATE);
    return lua`
      if ${conv} then
        do
          local whole = ${tat} - now
          ${gcraWrite(s, p, 'whole', frac)}
        end
      end`;
  },
  load(s, p) {
    const [tat, frac, debt, conv, x, h] = names(s, GC_STATE);
    return lua`
      local ${tat}, ${frac}, ${debt}, ${conv}, ${x}, ${h} = -INF, 0, 0, false, 0, -INF
      do
        local value = redis.pcall('GET', ${s.key})
        if value then
          local bad = true
          if type(value) == 'string' then
            local expiry = redis.call('PEXPIRETIME', ${s.key})
            ${bucketFields('value')}
            if f2 == nil then f2 = 0 end
            if f3 == nil then f3 = f1 end
            if f4 == nil then f4 = 0 end
            if expiry >= 0 and ${int('f1')} and ${int('f2')} and ${int('f3')} and ${int('f4')} and (f5 == nil or ${int('f5')}) then
              -- The TAT rounded up is the key's expiry, or the frame's less its offset.
              local wl, b, wb, a = f1, f2, f3, expiry
              if f5 ~= nil then ${x} = f4; ${h} = expiry; a = expiry - f5 end
              if b > 0 then a = a - 1 end
              if ${h} <= now then ${x} = 0; ${h} = -INF end
              if wl == ${p.limit} and wb == ${p.capacity} then
                local ahead = now + ${bucketSpan(p) + 1 + CLOCK_TOLERANCE_MS}
                if b < ${p.rate} and a <= ahead and ${h} <= ahead then
                  bad = false
                  ${tat} = a; ${frac} = b
                  if ${tat} >= now then ${debt} = (${tat} - now) * ${p.rate} + ${frac} end
                end
              else
                ${gcraConvert(s, p)}
              end
            end
          end
          if bad then ${repair(s)}; ${x} = 0; ${h} = -INF end
        end
      end`;
  },
  evaluate(s, p) {
    const [, , debt] = names(s, GC_STATE);
    const cap = p.capTicks;
    return lua`
      do
        local need = cost * ${p.tokenTicks}
        if need > ${cap} then
          ${s.flags} = 2
          ${gcraLeft(s, p)}
          ${gcraReset(s, s.reset)}
        else
          local after = ${debt} + need
          if after <= ${cap}${overDelay(s, p, ' and ', '<=')} then
            ${s.flags} = 1
            local left = ${cap} - after
            ${ticksToMilli(s.remaining, 'left', p.tokenTicks)}
            ${ceilDiv('q', 'after', p.rate)}
            ${s.reset} = q
            ${gcraDelay(s, p)}
          else
            ${gcraLeft(s, p)}
            local over = after - ${cap}
            ${ceilDiv('q', 'over', p.rate)}
            ${s.retry} = q
            ${maxDelayRetry(s, p)}
            ${gcraReset(s, s.reset)}
          end
        end
      end`;
  },
  uncharged(s, p) {
    return lua`
      ${gcraLeft(s, p)}
      ${gcraReset(s, s.reset)}`;
  },
  commit(s, p) {
    const [, , debt] = names(s, GC_STATE);
    return lua`
      do
        local after = ${debt} + cost * ${p.tokenTicks}
        ${floorDiv('whole', 'after', p.rate)}
        local frac = after - whole * ${p.rate}
        ${gcraWrite(s, p, 'whole', 'frac')}
        ${s.retry} = pos
      end`;
  },
  consume(s, p) {
    const [, , debt] = names(s, GC_STATE);
    const cap = p.capTicks;
    return lua`
      do
        local need = cost * ${p.tokenTicks}
        local after = ${debt} + need
        if after > ${cap}${overDelay(s, p, ' or ', '>')} then
          if need > ${cap} then
            ${s.flags} = 2
            ${gcraLeft(s, p)}
            ${gcraReset(s, s.reset)}
          else
            -- Rejected: the common over-the-limit path, kept as short as the admitted one.
            ${gcraLeft(s, p)}
            local over = after - ${cap}
            ${ceilDiv('q', 'over', p.rate)}
            ${s.retry} = q
            ${maxDelayRetry(s, p)}
            ${gcraReset(s, s.reset)}
          end
        else
          -- The new TAT and the reset time come from the same division of the debt by the rate.
          ${floorDiv('whole', 'after', p.rate)}
          local frac = after - whole * ${p.rate}
          ${gcraWrite(s, p, 'whole', 'frac')}
          ${s.retry} = pos
          ${s.flags} = 5
          local left = ${cap} - after
          ${ticksToMilli(s.remaining, 'left', p.tokenTicks)}
          if frac > 0 then ${s.reset} = whole + 1 else ${s.reset} = whole end
          ${gcraDelay(s, p)}
        end
      end`;
  },
};

// sliding-log (sliding-log.ts). State: a sorted set of admitted requests, one member per distinct
// millisecond, member = the time in ms, score = the running total of admitted cost (milli-units) up to
// and including it. Rank 0 holds the base: `b` on a new log, `b<time>` once entries expired (the newest
// expired entry, whose time is the high-water mark when no entry is left). The cost in the window is
// `last score - base score`, with no walk over the entries; expired entries are dropped from the head,
// each once. At most MAX_LOG_ENTRIES entries (plus the base) per key, as in the kernel: a full log folds
// its oldest entry into the next one. Locals: hw (high-water mark), base and last (scores), live (entries in the window), fresh
// (no log yet), expired (entries that left the window) and etime (the newest of them's time).
const SL_STATE = ['hw', 'base', 'last', 'live', 'fresh', 'expired', 'etime'] as const;
const MAX_SAFE = Number.MAX_SAFE_INTEGER;

function slView(s: Slot, p: CompiledPolicy): string {
  const [hw, base, last, live] = names(s, SL_STATE);
  return lua`
    local sum, resetu = 0, 0
    if ${live} > 0 then sum = ${last} - ${base}; resetu = ${hw} + ${p.windowMs} - now end`;
}

function slExceeds(s: Slot, p: CompiledPolicy): string {
  return lua`
    ${s.remaining} = ${p.capMilli} - sum
    if ${s.remaining} < 0 then ${s.remaining} = 0 end
    ${s.reset} = resetu`;
}

const slidingLog: LuaKernel = {
  state: SL_STATE,
  load(s, p) {
    const [hw, base, last, live, fresh, expired, etime] = names(s, SL_STATE);
    // Like the kernel, only a commit drops the entries that left the window: a rejected request never
    // moves a key's window.
    return lua`
      local ${hw}, ${base}, ${last}, ${live}, ${fresh}, ${expired}, ${etime} = -INF, 0, 0, 0, true, 0, 0
      do
        local top = redis.pcall('ZRANGE', ${s.key}, -1, -1, 'WITHSCORES')
        -- bad: the key holds what no commit writes (another type, a member that is no time, a time too far
        -- ahead, running totals out of order): it is deleted and read as a log never seen.
        local bad = top.err ~= nil
        if not bad and #top > 0 then
          ${fresh} = false
          if string.sub(top[1], 1, 1) == 'b' then ${hw} = tonumber(string.sub(top[1], 2)) or -INF else ${hw} = tonumber(top[1]) end
          ${last} = tonumber(top[2])
          if ${hw} == nil or ${hw} > now + ${CLOCK_TOLERANCE_MS} or not ${int(last)} then bad = true end
        end
        if not bad and not ${fresh} then
          local bound = now
          if ${hw} > bound then bound = ${hw} end
          bound = bound - ${p.windowMs}
          local card = redis.call('ZCARD', ${s.key})
          local newest = nil
          local from, size, done = 0, 4, false
          while not done do
            local items = redis.call('ZRANGE', ${s.key}, from, from + size - 1, 'WITHSCORES')
            local j = 1
            if from == 0 then ${base} = tonumber(items[2]); j = 3 end
            while j <= #items do
              local t = tonumber(items[j])
              if t == nil then bad = true; done = true; break end
              if t > bound then done = true; break end
              ${expired} = ${expired} + 1; ${etime} = t; newest = tonumber(items[j + 1])
              j = j + 2
            end
            from = from + size
            if from >= card then done = true end
            if size < 256 then size = size * 2 end
          end
          if ${expired} > 0 then ${base} = newest end
          ${live} = card - 1 - ${expired}
          if not ${int(base)} or ${base} > ${last} then bad = true end
        end
        if bad then
          ${repair(s)}
          ${hw}, ${base}, ${last}, ${live}, ${fresh}, ${expired}, ${etime} = -INF, 0, 0, 0, true, 0, 0
        end
      end`;
  },
  evaluate(s, p) {
    const [hw, base, , , fresh] = names(s, SL_STATE);
    const w = p.windowMs;
    const cap = p.capMilli;
    return lua`
      do
        ${slView(s, p)}
        if cost > ${cap} then
          ${s.flags} = 2
          ${slExceeds(s, p)}
        elseif sum + cost <= ${cap} then
          -- The window never moves back: the new entry is recorded at the high-water mark.
          local at = now
          if not ${fresh} and ${hw} > now then at = ${hw} end
          ${s.flags} = 1; ${s.remaining} = ${cap} - sum - cost; ${s.reset} = at + ${w} - now
        else
          -- The oldest entry whose running total frees enough cost for this request to fit.
          local first = redis.call('ZRANGEBYSCORE', ${s.key}, fmt('%d', ${base} + (sum + cost - ${cap})), '+inf', 'LIMIT', 0, 1)
          ${s.remaining} = ${cap} - sum; ${s.retry} = tonumber(first[1]) + ${w} - now; ${s.reset} = resetu
          if ${s.remaining} < 0 then ${s.remaining} = 0 end
        end
      end`;
  },
  uncharged(s, p) {
    return lua`
      do
        ${slView(s, p)}
        ${slExceeds(s, p)}
      end`;
  },
  commit(s, p) {
    const [hw, base, last, live, fresh, expired, etime] = names(s, SL_STATE);
    return lua`
      do
        local at = ${hw}
        if now > at then at = now end
        if ${fresh} then
          redis.call('ZADD', ${s.key}, 0, 'b', fmt('%d', cost), fmt('%d', at))
        else
          local total = ${last}
          if ${expired} > 0 then
            -- Drop the expired entries (each once): the newest of them becomes the base.
            redis.call('ZREMRANGEBYRANK', ${s.key}, 0, ${expired})
            redis.call('ZADD', ${s.key}, fmt('%d', ${base}), fmt('b%d', ${etime}))
          end
          if total + cost > ${MAX_SAFE} then
            -- Running totals only grow while the key lives: rebase them before they leave exact integers.
            local all = redis.call('ZRANGE', ${s.key}, 0, -1, 'WITHSCORES')
            for j = 1, #all, 2 do redis.call('ZADD', ${s.key}, fmt('%d', tonumber(all[j + 1]) - ${base}), all[j]) end
            total = total - ${base}
          end
          if ${live} > 0 and ${hw} == at then
            redis.call('ZINCRBY', ${s.key}, fmt('%d', cost), fmt('%d', at))
          else
            if ${live} >= ${MAX_LOG_ENTRIES} then
              -- Full (sliding-log.ts MAX_LOG_ENTRIES): fold the oldest entries into the next one. With running
              -- totals that is removing them: the next entry's total already counts their cost, now at its
              -- later time (stricter, never looser). Ranks 1 .. live hold the entries; rank 0 the base.
              redis.call('ZREMRANGEBYRANK', ${s.key}, 1, ${live} - ${MAX_LOG_ENTRIES - 1})
            end
            redis.call('ZADD', ${s.key}, fmt('%d', total + cost), fmt('%d', at))
          end
        end
        redis.call('PEXPIREAT', ${s.key}, fmt('%d', at + ${p.windowMs}))
      end`;
  },
};

/** The Lua fragments of every algorithm of the core. */
export const LUA_KERNELS: Readonly<Record<AlgorithmId, LuaKernel>> = Object.freeze({
  'fixed-window': fixedWindow,
  'sliding-window': slidingWindow,
  'token-bucket': tokenBucket,
  gcra,
  'leaky-bucket': gcra,
  'sliding-log': slidingLog,
});
