/**
 * @module The fixed-window kernel in Lua: fixed-window (fixed-window.ts). State: `used` (milli-units); window start = expiry - windowMs.
 * Locals: ws = the window a request at now falls in, used = its cost so far.
 */
import type { CompiledPolicy } from '../../../algorithms/kernel.js';
import { alignedStart, int, type LuaKernel, lua, names, readWithExpiry, type Slot } from './lua.js';

export const FW_STATE = ['ws', 'used'] as const;

/** `stop` (the window's end) and `resetu` (reset as the state stands) from the evaluate's first lines. */
export function fwView(s: Slot, p: CompiledPolicy): string {
  const [ws, used] = names(s, FW_STATE);
  return lua`
    local stop = ${ws} + ${p.windowMs}
    local resetu = 0
    if ${used} > 0 then resetu = stop - now end`;
}

export function fwExceeds(s: Slot, p: CompiledPolicy): string {
  const [, used] = names(s, FW_STATE);
  return lua`
    ${s.remaining} = ${p.capMilli} - ${used}
    if ${s.remaining} < 0 then ${s.remaining} = 0 end
    ${s.reset} = resetu`;
}

export const fixedWindow: LuaKernel = {
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
