/**
 * @module The gcra kernel in Lua: gcra and leaky-bucket (gcra.ts, leaky-bucket.ts). State: `limit[:frac[:burst]]` (the limit it was written
 * under; the TAT's fraction in ticks, when not 0; the burst, when not the limit), then the refund frame; the
 * TAT is the expiry (less 1 ms when frac > 0; the frame's horizon less its offset while a frame lives). A
 * key of one policy that charges whole ms holds a small integer: Redis shares it, the key costs its name.
 * Locals: tat, frac, and debt = max(0, tat - now) in ticks, all in the reader's scale: state written under
 * another limit or burst is converted on load (gcra.ts gcraDebt), and conv is then true; gx and gh: the
 * refund frame; fr and fz: for converted state that owes something, a refusal's retry and reset in the
 * writer's scale (gcra.ts foreignRefusal; 0 otherwise): only a charge writes the state in this policy's
 * scale, so a refusal leaves it leaking at the writer's rate.
 */
import type { CompiledPolicy } from '../../../algorithms/kernel.js';
import { CLOCK_TOLERANCE_MS, ceilDiv, floorDiv, int, type LuaKernel, lua, names, repair, type Slot, ticksToMilli } from './lua.js';
import { bucketFields, bucketRefund, bucketSet, bucketSpan, closeFrame, frameAhead } from './refund-frame.js';

export const GC_STATE = ['tat', 'frac', 'debt', 'conv', 'gx', 'gh', 'fr', 'fz'] as const;

/** gcraReset(): ceil(max(0, tat - now)) in ms, without a division. */
export function gcraReset(s: Slot, target: string): string {
  const [tat, frac] = names(s, GC_STATE);
  return lua`
    ${target} = 0
    if ${tat} >= now then
      if ${frac} > 0 then ${target} = ${tat} - now + 1 else ${target} = ${tat} - now end
    end`;
}

/**
 * What is left at the debt in `debt` (algorithms/gcra.ts gcraLeft), into the slot's remaining: the room to
 * the capacity, and under a leaky-bucket `maxDelayMs` no more than the requests of cost 1 that fit from
 * the debt to that bound.
 */
export function gcraLeft(s: Slot, p: CompiledPolicy, debt: string = names(s, GC_STATE)[2]): string {
  const cap = p.capTicks;
  // A bound at or past the capacity (none: Infinity) never cuts the room.
  if (p.maxDelayTicks >= cap) {
    return lua`
      ${s.remaining} = 0
      if ${debt} < ${cap} then
        local left = ${cap} - ${debt}
        ${ticksToMilli(s.remaining, 'left', p.tokenTicks)}
      end`;
  }
  const unit = 1000 * p.tokenTicks;
  return lua`
    ${s.remaining} = 0
    if ${debt} < ${cap} and ${debt} <= ${p.maxDelayTicks} then
      local span = ${p.maxDelayTicks} - ${debt}
      ${floorDiv('n', 'span', unit)}
      local left = (n + 1) * ${unit}
      if left > ${cap} - ${debt} then left = ${cap} - ${debt} end
      ${ticksToMilli(s.remaining, 'left', p.tokenTicks)}
    end`;
}

/** leaky-bucket `maxDelayMs`: ` and debt <= max` (or ` or debt > max`) in the admission test; '' without it. */
export function overDelay(s: Slot, p: CompiledPolicy, join: string, op: string): string {
  if (!Number.isFinite(p.maxDelayTicks)) return '';
  return `${join}${names(s, GC_STATE)[2]} ${op} ${p.maxDelayTicks}`;
}

/**
 * leaky-bucket `maxDelayMs`, on a refusal: the wait until the request would wait no longer than the
 * maximum, if longer; and then nothing left to take now (gcra.ts evaluateGcra).
 */
export function maxDelayRetry(s: Slot, p: CompiledPolicy): string {
  if (!Number.isFinite(p.maxDelayTicks)) return '';
  const [, , debt] = names(s, GC_STATE);
  return lua`
    if ${debt} > ${p.maxDelayTicks} then
      ${s.remaining} = 0
      local late = ${debt} - ${p.maxDelayTicks}
      ${ceilDiv('q2', 'late', p.rate)}
      if q2 > ${s.retry} then ${s.retry} = q2 end
    end`;
}

/** The leaky-bucket delay; gcra never delays (its delayTicks is Infinity). */
export function gcraDelay(s: Slot, p: CompiledPolicy): string {
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
export function gcraWrite(s: Slot, p: CompiledPolicy, whole: string, frac: string): string {
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
 * gcra.ts foreignRefusal, inside gcraConvert, for state that owes something: a refusal writes nothing (only
 * a charge writes the state in this policy's scale), so after one the state still leaks at the writer's
 * rate (`rw` ticks per ms, `dw` owed): `fz` the wait until it is gone and, for a cost that can fit, `fr`
 * the wait until it converts to at most `capTicks - need` (and `maxDelayTicks`). Read only on a refusal,
 * or for a policy admitted but not charged.
 */
function foreignRefusal(s: Slot, p: CompiledPolicy): string {
  const [, , , , , , fr, fz] = names(s, GC_STATE);
  const tt = p.tokenTicks;
  const maxDelay = Number.isFinite(p.maxDelayTicks)
    ? lua`
        local lim2 = ${p.maxDelayTicks} * tw
        ${floorDiv('thr2', 'lim2', tt)}
        local gap2 = dw - thr2
        ${ceilDiv('fw2', 'gap2', 'rw')}
        if fw2 > fw then fw = fw2 end`
    : '';
  return lua`
    ${ceilDiv('fzw', 'dw', 'rw')}
    ${fz} = fzw
    if cost * ${tt} <= ${p.capTicks} then
      local lim = (${p.capTicks} - cost * ${tt}) * tw
      ${floorDiv('thr', 'lim', tt)}
      local gap = dw - thr
      ${ceilDiv('fw', 'gap', 'rw')}
      ${maxDelay}
      if fw < 1 then fw = 1 end
      ${fr} = fw
    end`;
}

/**
 * gcraDebt() for state written under another limit (`wl`) or burst (`wb`), same window: checks it as the
 * writer would have written it (fraction below its rate, TAT at most its span plus the clock tolerance
 * ahead, a frame's horizon as refund-frame.ts frameAhead takes it), then converts the debt to this
 * policy's ticks, rounded up and clamped to its capacity, sets `tat` and `frac` in this policy's scale, and
 * closes the refund frame (refund-frame.ts). Sets `bad` when the state is not one the writer could write.
 */
export function gcraConvert(s: Slot, p: CompiledPolicy): string {
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
      bad = not (capw < ${2 ** 53} and b < rw and a <= now + span + ${1 + CLOCK_TOLERANCE_MS} and ${frameAhead(x, h, 'span')})
      if not bad and (a >= now or ${h} > now) then
        local full = a
        if b > 0 then full = a + 1 end
        ${closeFrame(x, h, 'full')}
        ${tat} = now; ${frac} = 0; ${conv} = true
        if a >= now then
          local dw = (a - now) * rw + b
          local scaled = dw * ${p.tokenTicks}
          ${ceilDiv('q', 'scaled', 'tw')}
          ${foreignRefusal(s, p)}
          if q > ${p.capTicks} then q = ${p.capTicks} end
          ${floorDiv('whole', 'q', p.rate)}
          ${tat} = now + whole; ${frac} = q - whole * ${p.rate}; ${debt} = q
        end
      end
    end`;
}

/** A cost that can never fit (or a policy admitted, not charged) on converted state (see foreignRefusal): its reset in the writer's scale. */
function foreignReset(s: Slot): string {
  const [, , , , , , , fz] = names(s, GC_STATE);
  return `if ${fz} > 0 then ${s.reset} = ${fz} end`;
}

/** A refusal on converted state (see foreignRefusal): its retry and reset in the writer's scale. */
function foreignWaits(s: Slot): string {
  const [, , , , , , fr, fz] = names(s, GC_STATE);
  return `if ${fr} > 0 then ${s.retry} = ${fr}; ${s.reset} = ${fz} end`;
}

/** The gcra and leaky-bucket refund (algorithms/refund-kernels.ts), after its `load`. */
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

export const gcra: LuaKernel = {
  state: GC_STATE,
  load(s, p) {
    const [tat, frac, debt, conv, x, h, fr, fz] = names(s, GC_STATE);
    return lua`
      local ${tat}, ${frac}, ${debt}, ${conv}, ${x}, ${h}, ${fr}, ${fz} = -INF, 0, 0, false, 0, -INF, 0, 0
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
                if b < ${p.rate} and a <= ahead and ${frameAhead(x, h, bucketSpan(p))} then
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
          ${foreignReset(s)}
        else
          local after = ${debt} + need
          if after <= ${cap}${overDelay(s, p, ' and ', '<=')} then
            ${s.flags} = 1
            ${gcraLeft(s, p, 'after')}
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
            ${foreignWaits(s)}
          end
        end
      end`;
  },
  uncharged(s, p) {
    return lua`
      ${gcraLeft(s, p)}
      ${gcraReset(s, s.reset)}
      ${foreignReset(s)}`;
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
            ${foreignReset(s)}
          else
            -- Rejected: the common over-the-limit path, kept as short as the admitted one.
            ${gcraLeft(s, p)}
            local over = after - ${cap}
            ${ceilDiv('q', 'over', p.rate)}
            ${s.retry} = q
            ${maxDelayRetry(s, p)}
            ${gcraReset(s, s.reset)}
            ${foreignWaits(s)}
          end
        else
          -- The new TAT and the reset time come from the same division of the debt by the rate.
          ${floorDiv('whole', 'after', p.rate)}
          local frac = after - whole * ${p.rate}
          ${gcraWrite(s, p, 'whole', 'frac')}
          ${s.retry} = pos
          ${s.flags} = 5
          ${gcraLeft(s, p, 'after')}
          if frac > 0 then ${s.reset} = whole + 1 else ${s.reset} = whole end
          ${gcraDelay(s, p)}
        end
      end`;
  },
};
