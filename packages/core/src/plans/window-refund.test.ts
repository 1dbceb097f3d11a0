/**
 * @module Window refunds computed by hand (algorithms/refund-kernels.ts): a refund that leaves a window key equal to
 * a key never seen drops it (the memory store's sweep takes it at once, as Redis deletes the key), and one that
 * leaves something keeps it. Limit 10 per 1000 ms. Issue 29 (mutation testing).
 */
import { describe, expect, it } from 'vitest';
import { createLimiter, MemoryStore } from '../index.js';
import type { PolicyOptions } from '../types.js';

function setup(policies: PolicyOptions) {
  const clock = { now: 0 };
  const store = new MemoryStore({ sweepIntervalMs: 0 });
  const limiter = createLimiter({ policies, store, clock: () => clock.now });
  return { clock, store, limiter };
}

describe('fixed-window refunds', () => {
  it('clock-aligned: refunding all of the window leaves a key never seen (swept at once); a part keeps it', async () => {
    const { clock, store, limiter } = setup({ algorithm: 'fixed-window', limit: 10, windowMs: 1000 });
    clock.now = 100;
    const d = await limiter.check('k', { cost: 2 });
    clock.now = 200;
    expect((await limiter.refund(d, { cost: 1 })).refunded).toBe(true);
    store.sweep(200);
    expect(store.size).toBe(1);
    expect(await limiter.peek('k', { cost: 10 })).toMatchObject({ allowed: false, remaining: 9, retryAfterMs: 800 });
    expect((await limiter.refund(d, { cost: 1 })).refunded).toBe(true);
    store.sweep(200);
    expect(store.size).toBe(0);
    expect(await limiter.peek('k', { cost: 10 })).toMatchObject({ allowed: true, remaining: 10 });
  });

  it("anchor 'first-request': a window refunded to nothing opens anew at the next request", async () => {
    const { clock, store, limiter } = setup({ algorithm: 'fixed-window', limit: 10, windowMs: 1000, anchor: 'first-request' });
    clock.now = 100;
    const d = await limiter.check('k', { cost: 2 });
    expect(d.resetMs).toBe(1000);
    clock.now = 200;
    expect((await limiter.refund(d)).refunded).toBe(true);
    expect(store.size).toBe(1);
    store.sweep(200);
    expect(store.size).toBe(0);
    clock.now = 300;
    // Anchored at 300, not at 100: it resets at 1300.
    expect(await limiter.check('k', { cost: 10 })).toMatchObject({ allowed: true, remaining: 0, resetMs: 1000 });
  });
});

describe('sliding-window refunds', () => {
  it('the current counter refunded to nothing with nothing before it: a key never seen (swept at once)', async () => {
    const { clock, store, limiter } = setup({ algorithm: 'sliding-window', limit: 10, windowMs: 1000 });
    clock.now = 100;
    const d = await limiter.check('k', { cost: 2 });
    clock.now = 200;
    expect((await limiter.refund(d)).refunded).toBe(true);
    store.sweep(200);
    expect(store.size).toBe(0);
  });

  it('refunded to nothing while the previous window still counts: kept, and the estimate still weighs the previous one', async () => {
    const { clock, store, limiter } = setup({ algorithm: 'sliding-window', limit: 10, windowMs: 1000 });
    clock.now = 900;
    await limiter.check('k', { cost: 4 });
    clock.now = 1100;
    const d = await limiter.check('k', { cost: 3 });
    clock.now = 1500;
    expect((await limiter.refund(d)).refunded).toBe(true);
    store.sweep(1500);
    expect(store.size).toBe(1);
    // prev 4 weighed by (1000 - 500) / 1000: 2 of the 10 used.
    expect(await limiter.peek('k', { cost: 10 })).toMatchObject({ allowed: false, remaining: 8 });
  });
});
