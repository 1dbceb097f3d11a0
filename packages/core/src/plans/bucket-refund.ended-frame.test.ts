/**
 * @module A bucket receipt of an ended refund frame gives nothing back (algorithms/refund-kernels.ts `allowance`: "0 for a
 * charge of an ended frame"), on the kernels' rows, for token-bucket, gcra and leaky-bucket (issue 29, fifth round:
 * since the third round's fix a limit change no longer ends a frame early, so only this case reaches the guard
 * `refunded >= position`).
 *
 * The frame's count only grows while it lives (refund-frame.ts), and a receipt's position is at most the count when
 * it was made; so a frame that counts less than a receipt's position is not the receipt's frame. That happens when
 * the row is dropped and written anew (a `reset` of the key, an eviction: the store initialises the row again) while
 * the receipt's mark is still ahead. The charge it records is gone with the old row: giving it back would hand the
 * new row tokens it was never charged for.
 */
import { describe, expect, it } from 'vitest';
import type { CompiledPolicy, Outcome, StateTable } from '../algorithms/kernel.js';
import { compilePolicy } from '../policy.js';
import { charge, refund, answers as rowAnswers, SLOT, table } from '../testing/bucket-rows.js';

function policy(algorithm: 'token-bucket' | 'gcra' | 'leaky-bucket'): CompiledPolicy {
  return compilePolicy({ name: 'p', algorithm, limit: 10, windowMs: 1000, burst: 10 }, 'p', false);
}

/** What the row answers at `now` to a few costs (a copy: nothing charged). */
function answers(t: StateTable, now: number, p: CompiledPolicy): Outcome[] {
  return rowAnswers(t, now, p, [1, 1000, 2500, p.capMilli, Number.POSITIVE_INFINITY]);
}

describe.each(['token-bucket', 'gcra', 'leaky-bucket'] as const)('%s: a receipt of an ended refund frame', (algorithm) => {
  it('the row dropped and written anew: a receipt whose frame had counted a refund gives nothing to the new row', () => {
    // Limit 10 per second, burst 10: 10 ticks per ms, one tick a milli-unit, every mark a whole ms.
    const p = policy(algorithm);
    const t = table(p);
    const first = charge(t, 0, 1000, p);
    charge(t, 0, 1000, p);
    // Not the newest charge: its refund is counted in the frame (1000 ticks), so a charge made now has a position
    // of 1000, which only this frame's count can reach.
    expect(refund(t, 0, 1000, first, p)).toBe(true);
    const old = charge(t, 0, 1000, p);
    expect(old.position, 'the frame counted the refund before the charge').toBe(1000);
    // The key is dropped (a reset, an eviction) and written anew: its frame starts over at 0 with the new row.
    p.kernel.init(t, SLOT);
    charge(t, 10, 1000, p);
    const before = Array.from(t.f);
    // The old receipt's mark (2000 ticks owed at 0: full at 200) is still ahead, the row is in its limit and burst,
    // the new row owes 1000: only the frame tells the receipt's charge is not this row's. Nothing is given back,
    // no word changes.
    expect(old.mark).toBe(200);
    expect(refund(t, 10, 1000, old, p)).toBe(false);
    expect(Array.from(t.f)).toEqual(before);
    // The row answers as one charged only the new request.
    const fresh = table(p);
    charge(fresh, 10, 1000, p);
    for (const at of [10, 11, 50, 110]) expect(answers(t, at, p), `at ${at}`).toEqual(answers(fresh, at, p));
  });
});
