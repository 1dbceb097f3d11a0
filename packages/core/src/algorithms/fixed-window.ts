/**
 * @module Fixed window: at most `limit` per window. Windows are aligned to the clock
 * (`floor(now / windowMs)`), or open at a key's first request with `anchor: 'first-request'`.
 *
 * Pro: one counter per key, trivially explained ("100 per calendar minute"), a real reset time.
 * Con: up to 2 x limit in a short span around a boundary (limit just before, limit just after).
 *
 * State: [windowStart ms, used milli-units]. A key never seen has windowStart = -Infinity.
 */
import type { CompiledPolicy } from './kernel.js';
import { type AlgorithmKernel, alignedStart, evaluateThenCommit, type Outcome, type StateTable, writeExceeds } from './kernel.js';

/** The window a request at `now` falls in: [start, used]. Never moves back when the clock does. */
function currentWindow(start: number, now: number, p: CompiledPolicy): number {
  const w = p.windowMs;
  if (p.anchorFirst) return now >= start + w ? now : start;
  const aligned = alignedStart(now, w);
  return Math.max(aligned, start);
}

export const fixedWindow: AlgorithmKernel = {
  id: 'fixed-window',
  stride: 2,
  init(t, slot) {
    const o = slot * t.stride;
    t.f[o] = Number.NEGATIVE_INFINITY;
    t.f[o + 1] = 0;
  },
  evaluate(t: StateTable, slot, now, cost, p, out: Outcome) {
    const o = slot * t.stride;
    const start = t.f[o] as number;
    const ws = currentWindow(start, now, p);
    const used = ws === start ? (t.f[o + 1] as number) : 0;
    const end = ws + p.windowMs;
    const cap = p.capMilli;
    const resetUncharged = used > 0 ? end - now : 0;
    if (cost > cap) {
      // used > cap after the limit was lowered (state kept across a change of limit): nothing is left.
      writeExceeds(out, Math.max(0, cap - used), resetUncharged);
      return;
    }
    out.exceeds = false;
    out.delayMs = 0;
    if (used + cost <= cap) {
      out.allowed = true;
      out.remaining = cap - used - cost;
      out.retryAfterMs = 0;
      out.resetMs = end - now;
    } else {
      out.allowed = false;
      out.remaining = Math.max(0, cap - used);
      out.retryAfterMs = end - now;
      out.resetMs = resetUncharged;
    }
  },
  commit(t, slot, now, cost, p) {
    const o = slot * t.stride;
    const start = t.f[o] as number;
    const ws = currentWindow(start, now, p);
    t.f[o + 1] = (ws === start ? (t.f[o + 1] as number) : 0) + cost;
    t.f[o] = ws;
  },
  consume: evaluateThenCommit,
  expiresAt(t, slot, p) {
    return (t.f[slot * t.stride] as number) + p.windowMs;
  },
};
