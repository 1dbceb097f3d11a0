/**
 * @module The memory store's apply path by hand, through the Store interface (issue 29: each pins a mutant that
 * the random traces of memory-store.apply.property.test.ts let live):
 * - `sweep()` sweeps as of the latest time any apply (`apply`, `applyOne`) or refund has seen, never an earlier one;
 * - a lease taken by an apply is the one a release ends;
 * - a refund reaches the rows of its own plan, also right after an apply of another plan;
 * - a multi-policy request marks its rows used (charged or refused), so eviction gives them a second chance.
 */
import { describe, expect, it } from 'vitest';
import { compilePolicy } from '../policy.js';
import type { AnyPolicyOptions } from '../types.js';
import { MemoryStore } from './memory-store.js';
import { R_POSITION, R_REMAINING, R_RESET, RESULT_STRIDE, type StorePlan } from './store.js';

function planOf(...policies: AnyPolicyOptions[]): StorePlan {
  return { enforcedCount: policies.length, policies: policies.map((p, i) => compilePolicy(p, `policies[${i}]`, false)) };
}

const fixed = (name: string, limit = 5): AnyPolicyOptions => ({ name, algorithm: 'fixed-window', limit, windowMs: 1000 });

/** What each policy of `plan` has left for `key` at `now` (milli-units), charging nothing. */
function left(store: MemoryStore, key: string, plan: StorePlan, now: number): number[] {
  const r = store.peek(key, plan, Number.POSITIVE_INFINITY, now);
  return plan.policies.map((_, i) => r[i * RESULT_STRIDE + R_REMAINING] as number);
}

describe('sweep() as of the latest time seen', () => {
  it('an apply with the clock stepped back does not move it back', () => {
    const store = new MemoryStore({ sweepIntervalMs: 0 });
    const plan = planOf(fixed('p'));
    store.apply('a', plan, 1000, 0);
    store.apply('c', plan, 1000, 2500);
    store.apply('b', plan, 1000, 500);
    // As of 2500: a and b (windows ending at 1000) go, c stays.
    expect(store.sweep()).toBe(2);
    expect(store.size).toBe(1);
  });

  it('applyOne (the solo path) moves it on, and with the clock stepped back does not move it back', () => {
    const store = new MemoryStore({ sweepIntervalMs: 0 });
    const plan = planOf(fixed('p'));
    store.applyOne('a', plan, 1000, 0);
    store.applyOne('c', plan, 1000, 2500);
    store.applyOne('b', plan, 1000, 500);
    // As of 2500: a and b (windows ending at 1000) go, c stays.
    expect(store.sweep()).toBe(2);
    expect(store.size).toBe(1);
  });

  it('a refund moves it on, and one with the clock stepped back does not move it back', () => {
    const store = new MemoryStore({ sweepIntervalMs: 0 });
    const plan = planOf(fixed('p'));
    store.apply('a', plan, 1000, 0);
    store.apply('b', plan, 1000, 0);
    // Too late to give anything back, but the store has now seen 1500.
    expect(Array.from(store.refund('a', plan, 1000, [1000], 1500))).toEqual([0]);
    expect(store.sweep()).toBe(2);
    store.apply('c', plan, 1000, 2500);
    store.apply('d', plan, 1000, 3100);
    // The window never moves back: half of d's charge is given back at 100, and the store still has seen 3100.
    expect(Array.from(store.refund('d', plan, 500, [4000], 100))).toEqual([1]);
    expect(store.sweep()).toBe(1);
    expect(left(store, 'd', plan, 3100)).toEqual([4500]);
  });
});

describe('leases', () => {
  it('the lease an apply takes is the one release ends', () => {
    const store = new MemoryStore({ sweepIntervalMs: 0 });
    const plan = planOf({ name: 'c', algorithm: 'concurrency', limit: 1, leaseMs: 10_000 });
    expect(store.apply('k', plan, 1000, 0, 7)[0]).not.toBe(0);
    expect(store.apply('k', plan, 1000, 1, 8)[0]).toBe(0);
    store.release('k', plan, 7, 2);
    expect(store.apply('k', plan, 1000, 3, 9)[0]).not.toBe(0);
  });
});

describe('refunds across plans', () => {
  it('a refund of plan y right after an apply of plan x gives back to y', () => {
    const store = new MemoryStore({ sweepIntervalMs: 0 });
    const [x, y] = [planOf(fixed('x')), planOf(fixed('y'))];
    store.apply('k', y, 1000, 0);
    store.apply('k', x, 1000, 0);
    expect(Array.from(store.refund('k', y, 1000, [1000], 0))).toEqual([1]);
    expect(left(store, 'k', y, 0)).toEqual([5000]);
    expect(left(store, 'k', x, 0)).toEqual([4000]);
  });
});

describe('eviction second chance in a multi-policy plan', () => {
  for (const [label, limit] of [
    ['charged', 5],
    ['refused', 1],
  ] as const) {
    it(`rows a request ${label} are marked used: the unused key goes`, () => {
      // Two policies, three keys: six rows, all the store holds.
      const store = new MemoryStore({ maxKeys: 6, sweepIntervalMs: 0 });
      const plan = planOf(fixed('a', limit), fixed('b', limit));
      const wide = planOf(fixed('a', 100), fixed('b', 100));
      for (const key of ['k1', 'k2', 'k3']) store.apply(key, plan, 1000, 0);
      for (const key of ['k1', 'k2']) store.apply(key, plan, 1000, 1);
      store.apply('k4', plan, 1000, 2);
      expect(store.evictions).toBe(2);
      // k1 and k2 kept their counts (two charges, or one and a refusal); k3 was evicted.
      const used = limit === 5 ? 2000 : 1000;
      expect(['k1', 'k2', 'k3'].map((k) => left(store, k, wide, 3)[0])).toEqual([100_000 - used, 100_000 - used, 100_000]);
    });
  }
});

describe('a receipt that gave back before', () => {
  it('gives back at most what its position, less what it gave, allows (7 ticks per milli-unit)', () => {
    // 1 per 7 ms: 1000 ticks a ms, 7 ticks per milli-unit, so the bucket's capacity is 7000 ticks.
    const store = new MemoryStore({ sweepIntervalMs: 0 });
    const plan = planOf({ name: 'g', algorithm: 'gcra', limit: 1, windowMs: 7 });
    const r = store.apply('k', plan, 1000, 0);
    expect([r[R_REMAINING], r[R_RESET]]).toEqual([0, 7]);
    // Marked at 7, position 0; 500 milli-units already given back: 500 more at most.
    expect(Array.from(store.refund('k', plan, 1000, [7, r[R_POSITION] as number, 500], 0))).toEqual([1]);
    expect(left(store, 'k', plan, 0)).toEqual([500]);
  });
});
