/**
 * @module The refund-frame kernel in Lua: The refund frame of the bucket family (algorithms/refund-frame.ts), in the locals `<x>` (ticks given back,
 * counted) and `<h>` (the horizon, ms; -INF without a live frame). Stored after the bucket's own fields,
 * `:refunded:offset`, only while the frame lives; the key then expires at the horizon, and the offset is
 * how long before it the bucket's own expiry would be.
 */
import type { CompiledPolicy } from '../../../algorithms/kernel.js';
import { CLOCK_TOLERANCE_MS, lua, type Slot } from './lua.js';

/** The largest number `refunded` may reach (refund-frame.ts MAX_REFUNDED). */
export const MAX_REFUNDED = 2 ** 52;

/**
 * Matches a bucket value, `a:b[:c]` or `a:b:c:refunded:offset`, into `f1` .. `f5` (nil where absent); a
 * value of one number is `f1` alone.
 */
export function bucketFields(value: string): string {
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
 * back nothing more, and the frame lives until the latest of their marks. `full` is when the bucket was
 * full again under the writer (-INF: full), `rw` its rate.
 */
export function closeFrame(x: string, h: string, full: string): string {
  return lua`
    local latest = ${h}
    if ${full} > latest then latest = ${full} end
    if latest > now then
      ${x} = ${x} + (latest - now) * rw
      if ${x} > ${MAX_REFUNDED} then ${x} = ${MAX_REFUNDED} end
      ${h} = latest
    else
      ${x} = 0; ${h} = -INF
    end`;
}

/**
 * A Lua condition: `h`, the horizon of a frame that counted `x` ticks, is one a writer may leave, read at
 * `now` by a reader of the state whose span is `span` (a literal or a name; the writer's, for state of
 * another limit): at most a full bucket plus 1 ms ahead, or the horizon of a frame a change of limit closed
 * (refund-frame.ts: it counted at least 1 tick per ms up to it, or reached MAX_REFUNDED), within the clock
 * tolerance either way. Anything later is corrupt state (lua.ts).
 */
export function frameAhead(x: string, h: string, span: string | number): string {
  const ahead = typeof span === 'number' ? `${span + 1 + CLOCK_TOLERANCE_MS}` : `${span} + ${1 + CLOCK_TOLERANCE_MS}`;
  return `(${h} <= now + ${ahead} or ${h} - now <= ${x} + ${CLOCK_TOLERANCE_MS} or ${x} >= ${MAX_REFUNDED})`;
}

/** How far ahead of now a mark of `p` may lie (ms): the time to fill an empty bucket. */
export function bucketSpan(p: CompiledPolicy): number {
  return Math.ceil(p.capTicks / p.rate);
}

/**
 * `SET key` a bucket value: `fields` (a Lua expression of the bucket's own fields), then the live frame
 * of `x` and `h`, expiring at `at` (the bucket's own expiry) or at the frame's horizon when it lives; a
 * frame whose horizon passed is over (refund-frame.ts noteMark).
 */
export function bucketSet(key: string, x: string, h: string, own: string, framed: string, at: string): string {
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
 * A bucket refund (algorithms/refund-kernels.ts), after the policy's `load`: `debt` and `full` (when the bucket
 * was full again before it) as the state stands, `pos` the receipt's position less what it gave back;
 * `write` stores the bucket `take` ticks fuller. Sets `out[i]` when the state took it.
 */
export function bucketRefund(
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
    -- A batch's give-back (local-batch/local-batcher.ts) only while nothing was charged after it: moving
    -- the bucket back under a later charge would move it under units another process still holds.
    if newest_only and ${debt} > room then take = 0 end
    if take > 0 and ${x} + take <= ${MAX_REFUNDED} then
      -- Counted unless the charge was the newest (the debt left is all it may give back).
      if ${full} > ${h} then ${h} = ${full} end
      if mark > ${h} then ${h} = mark end
      if ${debt} > room then ${x} = ${x} + take end
      ${write}
      out[${s.i}] = 1
    end`;
}
