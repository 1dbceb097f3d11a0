/**
 * @module Token bucket: capacity `burst` (default `limit`), refilled with `limit` tokens per `windowMs`,
 * lazily on each request; a new key starts full. A request of cost c is admitted iff the bucket holds c.
 *
 * Pro: average rate with bounded bursts; at most `burst + limit * T / windowMs` in any interval T.
 * Con: two numbers per key; "100 per minute" admits 200 in some 60 s span when burst = limit (by design).
 *
 * Fixed point: tokens are kept in ticks, `tokenTicks` ticks per milli-unit, and the bucket gains `rate`
 * ticks per ms; both are integers (see policy.ts), so refill is exact for any limit and window.
 * State: [tokens in ticks, last refill ms, the writer's limit, the writer's burst, then the refund frame
 * (refund-frame.ts)]. A key never seen: full, last = -Infinity. State written under another limit or burst (same window: it is in the key's
 * name) is refilled to now under the writer's, then what it lacks is converted to this policy's ticks,
 * rounded up, clamped to its capacity (the Lua load does the same operations in the same order).
 */
import { ceilDiv, ticksToMilli } from '../internal/fixed-point.js';
import type { AlgorithmKernel, CompiledPolicy, Outcome, StateTable } from './kernel.js';
import { evaluateThenCommit, waitToConvertTo, writeExceeds, writerScale } from './kernel.js';
import { closeFrame, FRAME_AT, horizonAt, initFrame, noteMark, refundedAt } from './refund-frame.js';

/** Tokens at `now` (ticks), never refilled twice when the clock steps back. */
function refill(tokens: number, last: number, now: number, cap: number, rate: number): number {
  // Stryker disable next-line ConditionalExpression,EqualityOperator: equivalent, `tokens >= cap` -> `false`, `>`, `now <= last` -> `<`: refill answers the same (full stays cap; elapsed 0 adds nothing)
  if (tokens >= cap || now <= last) return tokens;
  const elapsed = now - last;
  return elapsed >= ceilDiv(cap - tokens, rate) ? cap : tokens + elapsed * rate;
}

/** Tokens at `now` in the ticks of `p`, converting state written under another limit or burst. */
export function tbLevel(t: StateTable, o: number, now: number, p: CompiledPolicy): number {
  const stored = t.f[o] as number;
  const last = t.f[o + 1] as number;
  const limit = t.f[o + 2] as number;
  const burst = t.f[o + 3] as number;
  // Stryker disable next-line ConditionalExpression,LogicalOperator,BlockStatement: equivalent, the fast path -> `false`, `||` -> `&&`, a side -> `false`, emptied: the slow path converts the own scale as the identity
  if (stored === Number.POSITIVE_INFINITY || (limit === p.limit && burst === p.capacity)) {
    return refill(Math.min(stored, p.capTicks), last, now, p.capTicks, p.rate);
  }
  const [rw, tw, capw] = writerScale(limit, burst, p.windowMs);
  const used = capw - refill(Math.min(stored, capw), last, now, capw, rw);
  return p.capTicks - Math.min(p.capTicks, ceilDiv(used * p.tokenTicks, tw));
}

/**
 * A refusal of `need` ticks on state written under another limit or burst whose bucket is not full: a
 * refusal writes nothing (only a charge adopts the state, `adopt`), so it refills at the writer's rate,
 * and the waits are read in the writer's scale: the retry until what the writer's bucket lacks converts
 * to at most `capTicks - need`, the reset until it is full. Writes them into `out` and returns true
 * (`need` undefined: a cost that can never fit, or a policy admitted but not charged, only its reset);
 * false for state in `p`'s own scale or full, which the caller answers in `p`'s scale.
 */
function foreignRefusal(t: StateTable, o: number, now: number, p: CompiledPolicy, need: number | undefined, out: Outcome): boolean {
  const stored = t.f[o] as number;
  const limit = t.f[o + 2] as number;
  const burst = t.f[o + 3] as number;
  if (
    // Stryker disable next-line ConditionalExpression,LogicalOperator: equivalent, `stored === Infinity` -> `false`, with the scale test -> `false`, their `||` -> `&&`: a row stored Infinity is full (the last test), and `p`'s own scale read as a writer's is the identity
    stored === Number.POSITIVE_INFINITY ||
    // Stryker disable next-line ConditionalExpression: equivalent, -> `false`: `p`'s own scale read as a writer's is the identity, so the waits are the caller's, behind + ceilDiv(need - tokens, rate) and the reset
    (limit === p.limit && burst === p.capacity) ||
    tbLevel(t, o, now, p) >= p.capTicks
  )
    return false;
  const [rw, tw, capw] = writerScale(limit, burst, p.windowMs);
  const last = t.f[o + 1] as number;
  const from = Math.max(now, last);
  const used = capw - refill(Math.min(stored, capw), last, from, capw, rw);
  out.resetMs = from - now + ceilDiv(used, rw);
  // Stryker disable next-line BooleanLiteral: equivalent, `return true` -> `false`: evaluate's exceeds path, the one caller without `need`, ignores the answer
  if (need === undefined) return true;
  out.retryAfterMs = Math.max(1, from - now + waitToConvertTo(used, rw, tw, p, p.capTicks - need));
  return true;
}

/**
 * Records `tokens` (ticks of `p`) refilled at `last`, with `p`'s limit and burst, and the time the bucket
 * is full again in the refund frame.
 */
export function tbStore(t: StateTable, o: number, now: number, tokens: number, last: number, p: CompiledPolicy): void {
  t.f[o] = tokens;
  t.f[o + 1] = last;
  t.f[o + 2] = p.limit;
  t.f[o + 3] = p.capacity;
  // Stryker disable next-line ConditionalExpression,EqualityOperator: equivalent, -> `false`, `>`: tokens never exceed the capacity, and at equality last + ceilDiv(0, rate) is last
  noteMark(t, o, now, tokens >= p.capTicks ? last : last + ceilDiv(p.capTicks - tokens, p.rate));
}

/** When the bucket is full again as the state stands, under the writer's limit and burst (-Infinity: full). */
export function tbFullAt(t: StateTable, o: number, p: CompiledPolicy): number {
  const tokens = t.f[o] as number;
  const [rate, , cap] =
    // Stryker disable next-line ConditionalExpression,ArithmeticOperator: equivalent, -> `false`, `o + 2`, `o + 3` -> `-` in it: writerScale of the policy's own words is the policy's scale
    t.f[o + 2] === p.limit && t.f[o + 3] === p.capacity
      ? [p.rate, p.tokenTicks, p.capTicks]
      : writerScale(t.f[o + 2] as number, t.f[o + 3] as number, p.windowMs);
  // Stryker disable next-line ConditionalExpression,EqualityOperator: equivalent, -> `false`, `>`: a full row then reads `last`, and one with a finite `last` is left only by a refund, whose frame lives past it (closeFrame and expiresAt take the max); a charge overwrites adopt's
  if (tokens >= cap) return Number.NEGATIVE_INFINITY;
  return (t.f[o + 1] as number) + ceilDiv(cap - tokens, rate);
}

function resetUncharged(tokens: number, cap: number, rate: number, behind: number): number {
  return tokens >= cap ? 0 : behind + ceilDiv(cap - tokens, rate);
}

/**
 * Rewrites state written under another limit or burst in `p`'s scale (what `tbLevel` reads), so that it
 * refills at `p`'s rate from now on: only as a charge under `p` is made (`commit`), never on a refusal nor
 * in a peek. A refusal that rewrote it would change the rate the key refills at (a key decided under two
 * limits at once, as in a rolling deploy, would refill at the smaller one's rate after each refusal under
 * it) and, for an empty bucket, the clamp would forget what the key lacks under the writer beyond `p`'s
 * capacity (gcra.ts adoptGcra). A refusal waits in the writer's scale instead (`foreignRefusal`).
 */
function adopt(t: StateTable, o: number, now: number, p: CompiledPolicy): void {
  if (t.f[o + 2] === p.limit && t.f[o + 3] === p.capacity) return;
  // Stryker disable next-line ConditionalExpression,EqualityOperator: equivalent, -> `false`, the frame test -> `true`, `!==`: a shortcut; only init stores Infinity, with no frame, and the slow path starts the frame over and stores a full bucket that the charge's tbStore overwrites
  if (t.f[o] === Number.POSITIVE_INFINITY && horizonAt(t, o, now) === Number.NEGATIVE_INFINITY) return;
  // The charges made under the writer's limit refund nothing from now on (refund-frame.ts).
  const [rateW] = writerScale(t.f[o + 2] as number, t.f[o + 3] as number, p.windowMs);
  closeFrame(t, o, now, tbFullAt(t, o, p), rateW);
  tbStore(t, o, now, tbLevel(t, o, now, p), Math.max(now, t.f[o + 1] as number), p);
}

export const tokenBucket: AlgorithmKernel = {
  id: 'token-bucket',
  stride: 6,
  init(t, slot) {
    const o = slot * t.stride;
    t.f[o] = Number.POSITIVE_INFINITY;
    t.f[o + 1] = Number.NEGATIVE_INFINITY;
    t.f[o + 2] = 0;
    t.f[o + 3] = 0;
    initFrame(t, o);
  },
  evaluate(t, slot, now, cost, p, out) {
    const o = slot * t.stride;
    const cap = p.capTicks;
    const rate = p.rate;
    const tpm = p.tokenTicks;
    const tokens = tbLevel(t, o, now, p);
    // Measured from the last refill when the clock stepped back, so waits stay exact.
    const last = t.f[o + 1] as number;
    // Stryker disable next-line EqualityOperator: equivalent, `last > now` -> `>=`: `behind` is 0 either way at equality
    const behind = last > now ? last - now : 0;
    const need = cost * tpm;
    if (need > cap) {
      writeExceeds(out, ticksToMilli(tokens, tpm), resetUncharged(tokens, cap, rate, behind));
      foreignRefusal(t, o, now, p, undefined, out);
      return;
    }
    out.exceeds = false;
    out.delayMs = 0;
    if (tokens >= need) {
      out.allowed = true;
      out.remaining = ticksToMilli(tokens - need, tpm);
      out.retryAfterMs = 0;
      out.resetMs = behind + ceilDiv(cap - tokens + need, rate);
    } else {
      out.allowed = false;
      out.remaining = ticksToMilli(tokens, tpm);
      if (foreignRefusal(t, o, now, p, need, out)) return;
      out.retryAfterMs = behind + ceilDiv(need - tokens, rate);
      out.resetMs = resetUncharged(tokens, cap, rate, behind);
    }
  },
  commit(t, slot, now, cost, p) {
    const o = slot * t.stride;
    const left = tbLevel(t, o, now, p) - cost * p.tokenTicks;
    adopt(t, o, now, p);
    tbStore(t, o, now, left, Math.max(now, t.f[o + 1] as number), p);
  },
  consume: evaluateThenCommit,
  expiresAt(t, slot, p) {
    const o = slot * t.stride;
    return Math.max(tbFullAt(t, o, p), t.f[o + FRAME_AT + 1] as number);
  },
  position(t, slot, now, p) {
    const o = slot * t.stride;
    const missing = p.capTicks - (t.f[o] as number);
    return refundedAt(t, o, now) - (ceilDiv(missing, p.rate) * p.rate - missing);
  },
};
