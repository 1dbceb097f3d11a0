/**
 * @module The sliding-log kernel in Lua: sliding-log (sliding-log.ts). State: a sorted set of admitted requests, one member per distinct
 * millisecond, member = the time in ms, score = the running total of admitted cost (milli-units) up to
 * and including it. Rank 0 holds the base: `b` on a new log, `b<time>` once entries expired (the newest
 * expired entry, whose time is the high-water mark when no entry is left). The cost in the window is
 * `last score - base score`, with no walk over the entries; expired entries are dropped from the head,
 * each once. At most MAX_LOG_ENTRIES entries (plus the base) per key, as in the kernel: a full log folds
 * its oldest entry into the next one. Locals: hw (high-water mark), base and last (scores), live (entries in the window), fresh
 * (no log yet), expired (entries that left the window) and etime (the newest of them's time).
 */
import type { CompiledPolicy } from '../../../algorithms/kernel.js';
import { MAX_LOG_ENTRIES } from '../../../algorithms/sliding-log.js';
import { CLOCK_TOLERANCE_MS, int, type LuaKernel, lua, names, repair, type Slot } from './lua.js';

export const SL_STATE = ['hw', 'base', 'last', 'live', 'fresh', 'expired', 'etime'] as const;
export const MAX_SAFE = Number.MAX_SAFE_INTEGER;

export function slView(s: Slot, p: CompiledPolicy): string {
  const [hw, base, last, live] = names(s, SL_STATE);
  return lua`
    local sum, resetu = 0, 0
    if ${live} > 0 then sum = ${last} - ${base}; resetu = ${hw} + ${p.windowMs} - now end`;
}

export function slExceeds(s: Slot, p: CompiledPolicy): string {
  return lua`
    ${s.remaining} = ${p.capMilli} - sum
    if ${s.remaining} < 0 then ${s.remaining} = 0 end
    ${s.reset} = resetu`;
}

export const slidingLog: LuaKernel = {
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
