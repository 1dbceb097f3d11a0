/**
 * @module Bucket refunds by hand, on the kernels' rows (algorithms/refund-kernels.ts; issue 29: each pins mutants of
 * the bucket refund that the random traces let live), for token-bucket, gcra and leaky-bucket:
 * - refunding the newest charge, then an older one, leaves the key as if neither had been charged: the newest
 *   charge's refund is not counted in the refund frame, so it takes nothing from what the older one may give;
 * - a receipt refunds only under the limit and burst its row is in (the module's contract): under another limit
 *   or another burst the kernel answers false and changes no word, under its own it gives the charge back;
 * - the refund frame never counts past `MAX_REFUNDED` (refund-frame.ts): a refund that would take it past is
 *   refused, one that reaches it exactly is taken. A frame gets that high only through `closeFrame`'s clamp
 *   (a limit change counting a huge rate), so the row is set by hand here: the frame's count and horizon, and
 *   the receipt's position as a charge made with the frame at that count would have it.
 */
import { describe, expect, it } from 'vitest';
import type { CompiledPolicy, Outcome, StateTable } from '../algorithms/kernel.js';
import { FRAME_AT, MAX_REFUNDED } from '../algorithms/refund-frame.js';
import { compilePolicy } from '../policy.js';
import { charge, type Receipt, refund, answers as rowAnswers, SLOT, STRIDE, table } from '../testing/bucket-rows.js';

type Bucket = 'token-bucket' | 'gcra' | 'leaky-bucket';
const BUCKETS: readonly Bucket[] = ['token-bucket', 'gcra', 'leaky-bucket'];
const O = SLOT * STRIDE;

function policy(algorithm: Bucket, limit: number, burst: number): CompiledPolicy {
  return compilePolicy({ name: 'p', algorithm, limit, windowMs: 1000, burst }, 'p', false);
}

/** What the row answers at `now` to a few costs (a copy: nothing charged). */
function answers(t: StateTable, now: number, p: CompiledPolicy): Outcome[] {
  return rowAnswers(t, now, p, [1, 999, 1000, 2500, p.capMilli, Number.POSITIVE_INFINITY]);
}

describe.each(BUCKETS)('%s refund vectors', (algorithm) => {
  it('refunding the newest charge, then an older one, leaves the key as if neither had been charged', () => {
    // Limit 3 per second (333.3 ms a unit: every mark is rounded), burst 4.
    const p = policy(algorithm, 3, 4);
    const t = table(p);
    const older = charge(t, 0, 2000, p);
    const newest = charge(t, 10, 1000, p);
    expect(refund(t, 20, 1000, newest, p)).toBe(true);
    expect(refund(t, 30, 2000, older, p)).toBe(true);
    const fresh = table(p);
    for (const at of [30, 31, 200, 1000]) expect(answers(t, at, p), `at ${at}`).toEqual(answers(fresh, at, p));
  });

  it('the same, with a part of each given back: as if each had been that much smaller', () => {
    const p = policy(algorithm, 3, 4);
    const t = table(p);
    const older = charge(t, 0, 2000, p);
    const newest = charge(t, 10, 1500, p);
    expect(refund(t, 10, 500, newest, p)).toBe(true);
    expect(refund(t, 10, 1500, older, p)).toBe(true);
    const smaller = table(p);
    charge(smaller, 0, 500, p);
    charge(smaller, 10, 1000, p);
    for (const at of [10, 11, 400, 1000]) expect(answers(t, at, p), `at ${at}`).toEqual(answers(smaller, at, p));
  });

  it('a receipt refunds only under the limit and burst its row is in', () => {
    const p = policy(algorithm, 3, 4);
    const t = table(p);
    const r = charge(t, 0, 2000, p);
    const before = Array.from(t.f);
    expect(refund(t, 5, 2000, r, policy(algorithm, 5, 4)), 'another limit').toBe(false);
    expect(Array.from(t.f)).toEqual(before);
    expect(refund(t, 5, 2000, r, policy(algorithm, 3, 6)), 'another burst').toBe(false);
    expect(Array.from(t.f)).toEqual(before);
    expect(refund(t, 5, 2000, r, p), 'its own').toBe(true);
    expect(answers(t, 5, p)).toEqual(answers(table(p), 5, p));
  });

  it('the refund frame never counts past MAX_REFUNDED', () => {
    const p = policy(algorithm, 3, 4);
    const take = 1000 * p.tokenTicks;
    // An older charge (counted when refunded: a newer one follows) and the newest one.
    const setUp = (counted: number): { t: StateTable; older: Receipt } => {
      const t = table(p);
      const older = charge(t, 0, 1000, p);
      charge(t, 0, 1000, p);
      t.f[O + FRAME_AT] = counted;
      t.f[O + FRAME_AT + 1] = 10_000;
      return { t, older: { mark: older.mark, position: older.position + counted } };
    };
    // Right after the charges, the older one's whole cost is still in the bucket: the refund takes `take` ticks.
    const exact = setUp(MAX_REFUNDED - take);
    expect(refund(exact.t, 0, 1000, exact.older, p), 'reaching MAX_REFUNDED').toBe(true);
    expect(exact.t.f[O + FRAME_AT]).toBe(MAX_REFUNDED);
    const over = setUp(MAX_REFUNDED - take + 1);
    const before = Array.from(over.t.f);
    expect(refund(over.t, 0, 1000, over.older, p), 'one tick past').toBe(false);
    expect(Array.from(over.t.f)).toEqual(before);
  });
});
