/**
 * @module The concurrency kernel by hand (issue 29: the mutants that concurrency.test.ts let live): more leases
 * than the row's first buffer holds, every number of admitted, refused and uncharged answers (a cost that can
 * never fit reports the state as it stands), the latest deadline after a release moved the last lease into
 * another's place, a row read under a lower limit than it holds, and late renewals that fit and do not.
 * Limit 6, leases of 1000 ms.
 */
import { describe, expect, it } from 'vitest';
import { compilePolicy } from '../policy.js';
import { releaseLease, renewLease } from './concurrency.js';
import { createOutcome, type Outcome, type StateTable } from './kernel.js';

const policy = (limit: number) => compilePolicy({ name: 'c', algorithm: 'concurrency', limit, leaseMs: 1000 }, 'c', false);

function answer(t: StateTable, now: number, cost: number, limit = 6): Outcome {
  const p = policy(limit);
  const out = createOutcome();
  p.kernel.evaluate(t, 0, now, cost, p, out);
  return { ...out };
}

describe('concurrency kernel, six leases', () => {
  it('admits six (deadlines 1010 to 1060), refuses the seventh, and reports the state exactly', () => {
    const p = policy(6);
    const t: StateTable = { f: new Float64Array(1), stride: 1, logs: [] };
    p.kernel.init(t, 0);
    for (let i = 1; i <= 6; i++) {
      t.lease = i;
      const out = createOutcome();
      p.kernel.consume(t, 0, 10 * i, 1000, p, out);
      expect(out).toEqual({ allowed: true, exceeds: false, remaining: (6 - i) * 1000, retryAfterMs: 0, resetMs: 1000, delayMs: 0 });
    }
    expect(p.kernel.expiresAt(t, 0, p)).toBe(1060);
    expect(answer(t, 70, 1000)).toEqual({ allowed: false, exceeds: false, remaining: 0, retryAfterMs: 940, resetMs: 990, delayMs: 0 });
    expect(answer(t, 70, Number.POSITIVE_INFINITY)).toEqual({
      allowed: false,
      exceeds: true,
      remaining: 0,
      retryAfterMs: 0,
      resetMs: 990,
      delayMs: 0,
    });
    // Under a limit of 4 the row holds two more than it may: nothing left, not less than nothing.
    expect(answer(t, 70, 1000, 4)).toMatchObject({ allowed: false, remaining: 0 });
    expect(answer(t, 70, Number.POSITIVE_INFINITY, 4)).toMatchObject({ remaining: 0 });
    // Lease 3 ends; the last lease (6, deadline 1060) takes its place, and is still the latest.
    expect(releaseLease(t, 0, 3, 80)).toBe(true);
    expect(releaseLease(t, 0, 3, 80)).toBe(false);
    expect(answer(t, 80, Number.POSITIVE_INFINITY)).toEqual({
      allowed: false,
      exceeds: true,
      remaining: 1000,
      retryAfterMs: 0,
      resetMs: 980,
      delayMs: 0,
    });
    expect(renewLease(t, 0, 6, 90, p)).toBe(true);
    expect(p.kernel.expiresAt(t, 0, p)).toBe(1090);
    expect(answer(t, 90, 1000)).toEqual({ allowed: true, exceeds: false, remaining: 0, retryAfterMs: 0, resetMs: 1000, delayMs: 0 });
    // A late renewal (lease 99 is not live) takes the sixth slot, which was free, to 1095; a seventh does not fit.
    expect(renewLease(t, 0, 99, 95, p)).toBe(true);
    expect(p.kernel.expiresAt(t, 0, p)).toBe(1095);
    expect(answer(t, 95, 1000)).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: 915, resetMs: 1000 });
    expect(renewLease(t, 0, 98, 95, p)).toBe(false);
    expect(renewLease(t, 0, 98, 95, policy(7))).toBe(true);
    expect(renewLease(t, 0, 97, 95, policy(7))).toBe(false);
  });
});
