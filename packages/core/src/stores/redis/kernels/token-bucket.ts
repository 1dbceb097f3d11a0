/**
 * @module The token-bucket kernel in Lua: token-bucket (token-bucket.ts). State: `missing:limit[:burst]` (ticks the bucket lacks, and the limit
 * and burst it was written under; burst only when it is not the limit), then the refund frame; the bucket
 * is full again at the expiry (or the frame's horizon less its offset), and the last refill was
 * ceil(missing / rate) before, under the writer's rate. Locals: tokens refilled to now, last = the last
 * refill (a key never seen: full, last = -INF), tconv: the state was written under another limit or burst
 * and converted (tbLevel), tx and th: the refund frame; tfr and tfz: for converted state whose bucket is
 * not full, a refusal's retry and reset in the writer's scale (token-bucket.ts foreignRefusal; 0
 * otherwise): only a charge writes the state in this policy's scale, so a refusal leaves it refilling at
 * the writer's rate.
 */
import type { CompiledPolicy } from '../../../algorithms/kernel.js';
import { CLOCK_TOLERANCE_MS, ceilDiv, floorDiv, int, type LuaKernel, lua, names, repair, type Slot, ticksToMilli } from './lua.js';
import { bucketFields, bucketRefund, bucketSet, bucketSpan, closeFrame, frameAhead } from './refund-frame.js';

export const TB_STATE = ['tokens', 'last', 'tconv', 'tx', 'th', 'tfr', 'tfz'] as const;

/**
 * `SET key missing:limit[:burst]` expiring when the bucket is full again, for `left` tokens refilled at
 * max(last, now), with the frame; leaves the charge's position (refund-frame.ts) in `pos`.
 */
export function tbWrite(s: Slot, p: CompiledPolicy, left: string, last: string): string {
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

/** The token-bucket refund (algorithms/refund-kernels.ts), after its `load`. */
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
export function tbResetUncharged(s: Slot, p: CompiledPolicy, target: string): string {
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

export function tbView(s: Slot): string {
  const [, last] = names(s, TB_STATE);
  return lua`
    -- Measured from the last refill when the clock stepped back, so waits stay exact.
    local behind = 0
    if ${last} > now then behind = ${last} - now end`;
}

export function tbExceeds(s: Slot, p: CompiledPolicy): string {
  const [tokens, , , , , , fz] = names(s, TB_STATE);
  // On converted state (another limit or burst, not full), the reset in the writer's scale.
  return lua`
    ${ticksToMilli(s.remaining, tokens, p.tokenTicks)}
    ${tbResetUncharged(s, p, s.reset)}
    if ${fz} > 0 then ${s.reset} = ${fz} end`;
}

export const tokenBucket: LuaKernel = {
  state: TB_STATE,
  load(s, p) {
    const [tokens, last, conv, x, h, fr, fz] = names(s, TB_STATE);
    const cap = p.capTicks;
    const w = p.windowMs;
    const tt = p.tokenTicks;
    return lua`
      local ${tokens}, ${last}, ${conv}, ${x}, ${h}, ${fr}, ${fz} = INF, -INF, false, 0, -INF, 0, 0
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
                if m <= ${cap} and full <= now + ${bucketSpan(p) + CLOCK_TOLERANCE_MS} and ${frameAhead(x, h, bucketSpan(p))} then
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
                if capw < ${2 ** 53} and m <= capw and full <= now + span + ${CLOCK_TOLERANCE_MS} and ${frameAhead(x, h, 'span')} then
                  local tv = capw - m
                  ${ceilDiv('q', 'm', 'rw')}
                  ${last} = full - q
                  local writerFull = -INF
                  if m > 0 then writerFull = full end
                  ${closeFrame(x, h, 'writerFull')}
                  if tv < capw and now > ${last} then
                    if now - ${last} >= q then tv = capw else tv = tv + (now - ${last}) * rw end
                  end
                  local used = (capw - tv) * ${p.tokenTicks}
                  ${ceilDiv('u', 'used', 'tw')}
                  if u > 0 then
                    -- Not full under this policy: a refusal writes nothing, so the state refills at
                    -- the writer's rate and a refusal's waits are read in it (token-bucket.ts foreignRefusal).
                    local from = now
                    if ${last} > now then from = ${last} end
                    local uw = capw - tv
                    ${ceilDiv('fzw', 'uw', 'rw')}
                    ${fz} = from - now + fzw
                    if cost * ${tt} <= ${cap} then
                      local lim = (${cap} - cost * ${tt}) * tw
                      ${floorDiv('thr', 'lim', tt)}
                      local gap = uw - thr
                      ${ceilDiv('fw', 'gap', 'rw')}
                      if from - now + fw < 1 then ${fr} = 1 else ${fr} = from - now + fw end
                    end
                  end
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
  evaluate(s, p) {
    const [tokens, , , , , fr, fz] = names(s, TB_STATE);
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
          if ${fr} > 0 then ${s.retry} = ${fr}; ${s.reset} = ${fz} end
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
