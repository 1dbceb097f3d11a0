/**
 * @module Sliding window counter (Cloudflare's approximation): two clock-aligned counters, and the
 * estimate `prev * (1 - elapsed / windowMs) + curr`. A request of cost c is admitted iff
 * `estimate + c <= limit`, computed as `prev * (W - elapsed) + (curr + c) * W <= limit * W` in integers.
 *
 * Pro: two numbers per key, no boundary burst of 2 x limit, smooth.
 * Con: assumes the previous window's traffic was uniform, so it errs both ways for clients living
 * near the limit (too lenient when the previous window's traffic sat at its end, too strict at its start).
 *
 * State: [currentStart ms, curr milli, prev milli].
 */

import { ceilDiv, floorDiv } from '../internal/fixed-point.js';
import type { CompiledPolicy } from './kernel.js';
import { type AlgorithmKernel, alignedStart, evaluateThenCommit, type Outcome, type StateTable, writeExceeds } from './kernel.js';

/** Scratch for the rolled-over view of a key's state at `now`. */
interface Rolled {
  start: number;
  curr: number;
  prev: number;
}
// Stryker disable next-line ObjectLiteral: equivalent, -> `{}`: `roll` writes all three fields before any read
const view: Rolled = { start: 0, curr: 0, prev: 0 };

/** The counters as they stand at `now`: rolled over on a boundary, never moved back by a backward clock. */
function roll(t: StateTable, o: number, now: number, w: number): Rolled {
  const start = t.f[o] as number;
  const aligned = alignedStart(now, w);
  if (aligned > start) {
    view.prev = aligned === start + w ? (t.f[o + 1] as number) : 0;
    view.curr = 0;
    view.start = aligned;
  } else {
    view.start = start;
    view.curr = t.f[o + 1] as number;
    view.prev = t.f[o + 2] as number;
  }
  return view;
}

/**
 * Shortest wait d >= 1 after which `cost` fits, counted from the window start plus `e` ms (the
 * estimate only decreases with time and is continuous across boundaries, so the answer is exact).
 */
function waitFrom(e: number, prev: number, curr: number, cost: number, cap: number, w: number): number {
  const room = cap * w - (curr + cost) * w;
  // Stryker disable next-line ConditionalExpression,LogicalOperator,EqualityOperator: equivalent, a rejected request with prev 0 has room < 0, and room <= 0 waits >= w - e, which line 50 sends on anyway
  if (room >= 0 && prev > 0) {
    // Inside this window: need prev * (w - e - d) <= room.
    const d = ceilDiv(prev * (w - e) - room, prev);
    // Stryker disable next-line ConditionalExpression,ArithmeticOperator: equivalent, -> `true`, `- 1` -> `+ 1`, `w - e` -> `w + e`: d <= w - e here, and at w - e the next-boundary formula answers w - e
    if (d <= w - e - 1) return d;
  }
  // From the next boundary on, curr becomes prev: need curr * (w - e2) + cost * w <= cap * w.
  const room2 = (cap - cost) * w;
  const e2 = curr * w <= room2 ? 0 : ceilDiv(curr * w - room2, curr);
  return w - e + e2;
}

/** What is left now, before the request: floor((cap * w - weighted - curr * w) / w), at least 0. */
function uncharged(weighted: number, curr: number, cap: number, w: number): number {
  const room = cap * w - weighted - curr * w;
  // Stryker disable next-line EqualityOperator: equivalent, `room <= 0` -> `<`: the same value at equality
  return room <= 0 ? 0 : floorDiv(room, w);
}

export const slidingWindow: AlgorithmKernel = {
  id: 'sliding-window',
  stride: 3,
  init(t, slot) {
    const o = slot * t.stride;
    t.f[o] = Number.NEGATIVE_INFINITY;
    t.f[o + 1] = 0;
    t.f[o + 2] = 0;
  },
  evaluate(t: StateTable, slot, now, cost, p: CompiledPolicy, out: Outcome) {
    const w = p.windowMs;
    const cap = p.capMilli;
    const s = roll(t, slot * t.stride, now, w);
    // A backward clock parks the estimate at the window start: it neither refunds nor charges twice.
    // Stryker disable next-line EqualityOperator: equivalent, `s.start > now` -> `>=`: the same value at equality
    const behind = s.start > now ? s.start - now : 0;
    const e = behind > 0 ? 0 : now - s.start;
    const weighted = s.prev * (w - e);
    const resetUncharged = s.curr > 0 ? s.start + 2 * w - now : s.prev > 0 ? s.start + w - now : 0;
    if (cost > cap) {
      writeExceeds(out, uncharged(weighted, s.curr, cap, w), resetUncharged);
      return;
    }
    out.exceeds = false;
    out.delayMs = 0;
    const room = cap * w - weighted - (s.curr + cost) * w;
    if (room >= 0) {
      out.allowed = true;
      out.remaining = floorDiv(room, w);
      out.retryAfterMs = 0;
      out.resetMs = s.start + 2 * w - now;
    } else {
      out.allowed = false;
      out.remaining = uncharged(weighted, s.curr, cap, w);
      out.retryAfterMs = behind + waitFrom(e, s.prev, s.curr, cost, cap, w);
      out.resetMs = resetUncharged;
    }
  },
  commit(t, slot, now, cost, p) {
    const o = slot * t.stride;
    const s = roll(t, o, now, p.windowMs);
    t.f[o] = s.start;
    t.f[o + 1] = s.curr + cost;
    t.f[o + 2] = s.prev;
  },
  consume: evaluateThenCommit,
  expiresAt(t, slot, p) {
    return (t.f[slot * t.stride] as number) + 2 * p.windowMs;
  },
};
