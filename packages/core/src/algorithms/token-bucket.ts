/**
 * @module Token bucket: capacity `burst` (default `limit`), refilled with `limit` tokens per `windowMs`,
 * lazily on each request; a new key starts full. A request of cost c is admitted iff the bucket holds c.
 *
 * Pro: average rate with bounded bursts; at most `burst + limit * T / windowMs` in any interval T.
 * Con: two numbers per key; "100 per minute" admits 200 in some 60 s span when burst = limit (by design).
 *
 * Fixed point: tokens are kept in ticks, `tokenTicks` ticks per milli-unit, and the bucket gains `rate`
 * ticks per ms; both are integers (see policy.ts), so refill is exact for any limit and window.
 * State: [tokens in ticks, last refill ms]. A key never seen: full, last = -Infinity.
 */
import { ceilDiv, ticksToMilli } from '../internal/fixed-point.js';
import type { AlgorithmKernel } from './kernel.js';
import { evaluateThenCommit, writeExceeds } from './kernel.js';

/** Tokens at `now` (ticks), never refilled twice when the clock steps back. */
function refill(tokens: number, last: number, now: number, cap: number, rate: number): number {
  if (tokens >= cap || now <= last) return tokens;
  const elapsed = now - last;
  return elapsed >= ceilDiv(cap - tokens, rate) ? cap : tokens + elapsed * rate;
}

function resetUncharged(tokens: number, cap: number, rate: number, behind: number): number {
  return tokens >= cap ? 0 : behind + ceilDiv(cap - tokens, rate);
}

export const tokenBucket: AlgorithmKernel = {
  id: 'token-bucket',
  stride: 2,
  init(t, slot) {
    t.f[slot * t.stride] = Number.POSITIVE_INFINITY;
    t.f[slot * t.stride + 1] = Number.NEGATIVE_INFINITY;
  },
  evaluate(t, slot, now, cost, p, out) {
    const o = slot * t.stride;
    const cap = p.capTicks;
    const rate = p.rate;
    const tpm = p.tokenTicks;
    const stored = t.f[o] as number;
    const tokens = refill(Math.min(stored, cap), t.f[o + 1] as number, now, cap, rate);
    // Measured from the last refill when the clock stepped back, so waits stay exact.
    const last = t.f[o + 1] as number;
    const behind = last > now ? last - now : 0;
    const need = cost * tpm;
    if (need > cap) {
      writeExceeds(out, ticksToMilli(tokens, tpm), resetUncharged(tokens, cap, rate, behind));
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
      out.retryAfterMs = behind + ceilDiv(need - tokens, rate);
      out.resetMs = resetUncharged(tokens, cap, rate, behind);
    }
  },
  commit(t, slot, now, cost, p) {
    const o = slot * t.stride;
    const cap = p.capTicks;
    const stored = t.f[o] as number;
    const last = t.f[o + 1] as number;
    t.f[o] = refill(Math.min(stored, cap), last, now, cap, p.rate) - cost * p.tokenTicks;
    t.f[o + 1] = Math.max(now, last);
  },
  consume: evaluateThenCommit,
  expiresAt(t, slot, p) {
    const tokens = t.f[slot * t.stride] as number;
    if (tokens >= p.capTicks) return Number.NEGATIVE_INFINITY;
    return (t.f[slot * t.stride + 1] as number) + ceilDiv(p.capTicks - tokens, p.rate);
  },
};
