/**
 * @module The sliding-window kernel in Lua: sliding-window (sliding-window.ts). State: `curr` or `curr:prev` (milli-units); current window start =
 * expiry - 2 * windowMs. Locals: the counters rolled over to now (start, curr, prev).
 */
import type { CompiledPolicy } from '../../../algorithms/kernel.js';
import { alignedStart, ceilDiv, floorDiv, int, type LuaKernel, lua, names, readWithExpiry, type Slot, splitPair } from './lua.js';

export const SW_STATE = ['start', 'curr', 'prev'] as const;

export function swView(s: Slot, p: CompiledPolicy): string {
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
export function swLeft(s: Slot, p: CompiledPolicy, target: string): string {
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

export function swExceeds(s: Slot, p: CompiledPolicy): string {
  return lua`
    ${swLeft(s, p, s.remaining)}
    ${s.reset} = resetu`;
}

/** waitFrom(): the shortest wait after which `cost` fits, counted from the window start plus `e`. */
export function swWait(s: Slot, p: CompiledPolicy): string {
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

export const slidingWindow: LuaKernel = {
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
