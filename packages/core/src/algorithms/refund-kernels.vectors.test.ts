/**
 * @module Refund kernels by hand through the memory store (algorithms/refund-kernels.ts; issue 29: each pins a
 * mutant the random traces let live): a window refund names its window (a receipt of an earlier window gives
 * nothing to the current one); a counter or a log entry with nothing left to give answers 0; a sliding-log refund
 * in a full ring moves the newer entries back without touching the oldest; the key's expiry follows the newest
 * entry left.
 */
import { describe, expect, it } from 'vitest';
import { compilePolicy } from '../policy.js';
import { MemoryStore } from '../stores/memory-store.js';
import { R_REMAINING, R_RESET, type StorePlan } from '../stores/store.js';
import type { AnyPolicyOptions } from '../types.js';

function planOf(policy: AnyPolicyOptions): StorePlan {
  return { enforcedCount: 1, policies: [compilePolicy(policy, 'policies[0]', false)] };
}

/** What is left for `key` at `now` (milli-units), charging nothing. */
function left(store: MemoryStore, key: string, plan: StorePlan, now: number): number {
  return store.peek(key, plan, Number.POSITIVE_INFINITY, now)[R_REMAINING] as number;
}

describe('window refunds name their window', () => {
  it('fixed-window: a receipt of the window before gives nothing to the current one', () => {
    const store = new MemoryStore({ sweepIntervalMs: 0 });
    const plan = planOf({ name: 'f', algorithm: 'fixed-window', limit: 10, windowMs: 1000 });
    const first = store.apply('k', plan, 2000, 500);
    const mark = 500 + (first[R_RESET] as number);
    store.apply('k', plan, 3000, 1500);
    expect(Array.from(store.refund('k', plan, 2000, [mark], 1600))).toEqual([0]);
    expect(left(store, 'k', plan, 1600)).toBe(7000);
  });

  it('sliding-window: a receipt of the window before gives nothing to the current one', () => {
    const store = new MemoryStore({ sweepIntervalMs: 0 });
    const plan = planOf({ name: 's', algorithm: 'sliding-window', limit: 10, windowMs: 1000 });
    const first = store.apply('k', plan, 2000, 500);
    const mark = 500 + (first[R_RESET] as number);
    store.apply('k', plan, 3000, 1500);
    // At 1600: 2000 * (1000 - 600) / 1000 of the previous window and the current 3000 weigh in.
    expect(left(store, 'k', plan, 1600)).toBe(6200);
    expect(Array.from(store.refund('k', plan, 2000, [mark], 1600))).toEqual([0]);
    expect(left(store, 'k', plan, 1600)).toBe(6200);
  });

  it('sliding-window: a counter refunded to nothing answers 0 to a further refund', () => {
    const store = new MemoryStore({ sweepIntervalMs: 0 });
    const plan = planOf({ name: 's', algorithm: 'sliding-window', limit: 10, windowMs: 1000 });
    store.apply('k', plan, 4000, 900);
    const r = store.apply('k', plan, 3000, 1100);
    const mark = 1100 + (r[R_RESET] as number);
    expect(Array.from(store.refund('k', plan, 3000, [mark], 1200))).toEqual([1]);
    expect(Array.from(store.refund('k', plan, 3000, [mark], 1200))).toEqual([0]);
  });
});

describe('sliding-log refunds', () => {
  const policy: AnyPolicyOptions = { name: 'l', algorithm: 'sliding-log', limit: 10, windowMs: 1000 };

  it('an entry already removed answers 0 and changes nothing', () => {
    const store = new MemoryStore({ sweepIntervalMs: 0 });
    const plan = planOf(policy);
    for (const [at, cost] of [
      [100, 1000],
      [200, 2000],
      [300, 3000],
    ] as const)
      store.apply('k', plan, cost, at);
    expect(Array.from(store.refund('k', plan, 1000, [1100], 350))).toEqual([1]);
    expect(Array.from(store.refund('k', plan, 1000, [1100], 350))).toEqual([0]);
    expect(left(store, 'k', plan, 350)).toBe(5000);
    // 200 leaves at 1200, 300 at 1300: each with its own cost.
    expect(left(store, 'k', plan, 1200)).toBe(7000);
    expect(left(store, 'k', plan, 1300)).toBe(10_000);
  });

  it('in a full ring (four entries), removing the second keeps the oldest as it was', () => {
    const store = new MemoryStore({ sweepIntervalMs: 0 });
    const plan = planOf(policy);
    for (const [at, cost] of [
      [100, 1000],
      [200, 2000],
      [300, 3000],
      [400, 4000],
    ] as const)
      store.apply('k', plan, cost, at);
    expect(Array.from(store.refund('k', plan, 2000, [1200], 450))).toEqual([1]);
    // 100 (1) leaves at 1100: 3 + 4 left in the window.
    expect(left(store, 'k', plan, 1100)).toBe(3000);
    expect(left(store, 'k', plan, 1300)).toBe(6000);
  });

  it('the newest entry removed: the key expires with the newest one left', () => {
    const store = new MemoryStore({ sweepIntervalMs: 0 });
    const plan = planOf(policy);
    store.apply('k', plan, 1000, 100);
    store.apply('k', plan, 2000, 200);
    expect(Array.from(store.refund('k', plan, 2000, [1200], 250))).toEqual([1]);
    expect(store.sweep(1099)).toBe(0);
    expect(store.sweep(1100)).toBe(1);
  });
});
