/**
 * @module sliding-log refunds computed by hand (algorithms/refund-kernels.ts): a refund that empties an entry which
 * is not the newest removes it and moves the newer ones back by one, each with its own time and cost, and the
 * window then expires them at their own times. Distinct costs per entry, so an entry moved with another's cost
 * shows. Limit 10 per 1000 ms. Issue 29 (mutation testing).
 */
import { describe, expect, it } from 'vitest';
import { createLimiter, MemoryStore } from '../index.js';

function limiterAt(clock: () => number) {
  return createLimiter({
    policies: { algorithm: 'sliding-log', limit: 10, windowMs: 1000 },
    store: new MemoryStore({ sweepIntervalMs: 0 }),
    clock,
  });
}

describe('sliding-log: refunding an entry that is not the newest', () => {
  it('A@0:1, B@100:2, C@200:3, A refunded: B leaves at 1100, C at 1200, each with its own cost', async () => {
    let now = 0;
    const limiter = limiterAt(() => now);
    const a = await limiter.check('k', { cost: 1 });
    now = 100;
    await limiter.check('k', { cost: 2 });
    now = 200;
    await limiter.check('k', { cost: 3 });
    now = 250;
    expect((await limiter.refund(a)).refunded).toBe(true);
    // 5 in the window: a cost of 10 waits for B (7 free at 1100) and C (10 free at 1200).
    expect(await limiter.peek('k', { cost: 10 })).toMatchObject({ allowed: false, remaining: 5, retryAfterMs: 950 });
    expect(await limiter.peek('k', { cost: 7 })).toMatchObject({ allowed: false, remaining: 5, retryAfterMs: 850 });
    now = 1100;
    expect(await limiter.peek('k', { cost: 7 })).toMatchObject({ allowed: true, remaining: 7 });
    now = 1199;
    expect(await limiter.peek('k', { cost: 8 })).toMatchObject({ allowed: false, remaining: 7, retryAfterMs: 1 });
    now = 1200;
    expect(await limiter.peek('k', { cost: 10 })).toMatchObject({ allowed: true, remaining: 10 });
  });

  it('the newest entry refunded: the one before it is the newest again, and a partial refund keeps the entry', async () => {
    let now = 0;
    const limiter = limiterAt(() => now);
    await limiter.check('k', { cost: 2 });
    now = 100;
    const b = await limiter.check('k', { cost: 3 });
    const c = await limiter.check('k', { cost: 4 });
    now = 150;
    // b and c share the entry at 100 (7): giving back 3 of it leaves 4 there.
    expect((await limiter.refund(b)).refunded).toBe(true);
    expect(await limiter.peek('k', { cost: 10 })).toMatchObject({ allowed: false, remaining: 4, retryAfterMs: 950 });
    expect((await limiter.refund(c)).refunded).toBe(true);
    // Only the entry at 0 is left: 8 free, all 10 at 1000.
    expect(await limiter.peek('k', { cost: 10 })).toMatchObject({ allowed: false, remaining: 8, retryAfterMs: 850 });
    now = 1000;
    expect(await limiter.peek('k', { cost: 10 })).toMatchObject({ allowed: true, remaining: 10 });
  });
});

describe('sliding-log: the high-water mark after a refund, with the clock stepping back', () => {
  it('the newest entry refunded: the mark falls back to the newest left (the key lives until 1100), so a request at 150 is recorded at 150', async () => {
    let now = 100;
    const store = new MemoryStore({ sweepIntervalMs: 0 });
    const limiter = createLimiter({ policies: { algorithm: 'sliding-log', limit: 10, windowMs: 1000 }, store, clock: () => now });
    await limiter.check('k', { cost: 1 });
    now = 200;
    const b = await limiter.check('k', { cost: 2 });
    expect((await limiter.refund(b)).refunded).toBe(true);
    store.sweep(1099);
    now = 150;
    // Recorded at 150 (not at 200, the mark before the refund): it leaves the window at 1150.
    expect(await limiter.check('k', { cost: 3 })).toMatchObject({ allowed: true, remaining: 6, resetMs: 1000 });
    now = 1100;
    expect(await limiter.peek('k', { cost: 10 })).toMatchObject({ allowed: false, remaining: 7, retryAfterMs: 50 });
  });

  it('the only entry refunded: the mark stays (a sweep keeps the key until 1200), so a request at 150 is recorded at 200', async () => {
    let now = 200;
    const store = new MemoryStore({ sweepIntervalMs: 0 });
    const limiter = createLimiter({ policies: { algorithm: 'sliding-log', limit: 10, windowMs: 1000 }, store, clock: () => now });
    const a = await limiter.check('k', { cost: 2 });
    expect((await limiter.refund(a)).refunded).toBe(true);
    store.sweep(1199);
    now = 150;
    expect(await limiter.check('k', { cost: 3 })).toMatchObject({ allowed: true, remaining: 7, resetMs: 1050 });
    now = 1199;
    expect(await limiter.peek('k', { cost: 10 })).toMatchObject({ allowed: false, remaining: 7, retryAfterMs: 1 });
  });
});
