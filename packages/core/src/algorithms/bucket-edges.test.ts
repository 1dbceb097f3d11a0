/**
 * @module Bucket edges computed by hand (issue 29: each pins a mutant the traces let live). Limit 10 per
 * 1000 ms: one token per 100 ms.
 * - A full bucket stays full when the clock steps back: it lends nothing and owes no reset time.
 * - A burst change under the same limit clamps the debt to the new capacity (no wait longer than a full
 *   bucket's), and spends the receipts made before it.
 */
import { describe, expect, it } from 'vitest';
import { createLimiter, MemoryStore } from '../index.js';

describe('token-bucket: a full bucket and a clock stepping back', () => {
  it('refunded to full at 1000, then read at 950: still full, reset 0, nothing taken for the 50 ms', async () => {
    let now = 1000;
    const limiter = createLimiter({
      policies: { algorithm: 'token-bucket', limit: 10, windowMs: 1000 },
      store: new MemoryStore({ sweepIntervalMs: 0 }),
      clock: () => now,
    });
    const d = await limiter.check('k');
    expect(d).toMatchObject({ allowed: true, remaining: 9, resetMs: 100 });
    expect((await limiter.refund(d)).refunded).toBe(true);
    now = 950;
    // A cost that can never fit reports the state as it stands: full, nothing to wait for.
    expect(await limiter.peek('k', { cost: 11 })).toMatchObject({ allowed: false, remaining: 10, resetMs: 0, retryAfterMs: 0 });
    expect(await limiter.check('k')).toMatchObject({ allowed: true, remaining: 9, resetMs: 150 });
  });
});

for (const algorithm of ['token-bucket', 'gcra', 'leaky-bucket'] as const) {
  describe(`${algorithm}: a burst change under the same limit`, () => {
    it('burst 10 -> 5: a bucket 10 short refuses until 4 are owed, at the old rate; a refusal converts nothing', async () => {
      const now = 1000;
      const limiter = createLimiter({
        plans: {
          wide: [{ name: 'api', algorithm, limit: 10, windowMs: 1000, burst: 10 }],
          narrow: [{ name: 'api', algorithm, limit: 10, windowMs: 1000, burst: 5 }],
        },
        store: new MemoryStore({ sweepIntervalMs: 0 }),
        clock: () => now,
      });
      const d = await limiter.check('k', { plan: 'wide', cost: 10 });
      expect(d).toMatchObject({ allowed: true, remaining: 0 });
      // 10 owed, more than the narrow bucket holds: a refusal writes nothing (clamping to 5 would forget 5
      // the wide bucket is owed), so the state leaks at the wide rate, one per 100 ms, until 4 are owed
      // (600 ms); it is gone in 1000.
      expect(await limiter.peek('k', { plan: 'narrow' })).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: 600, resetMs: 1000 });
      expect(await limiter.check('k', { plan: 'narrow' })).toMatchObject({ allowed: false, retryAfterMs: 600 });
      // Nothing was converted: the wide receipt still gives its charge back, and the narrow bucket is full.
      expect((await limiter.refund(d)).refunded).toBe(true);
      expect(await limiter.peek('k', { plan: 'narrow' })).toMatchObject({ allowed: true, remaining: 5 });
    });
  });
}

for (const algorithm of ['token-bucket', 'gcra', 'leaky-bucket'] as const) {
  describe(`${algorithm}: a limit change under the same burst`, () => {
    function slowAndFast(clock: () => number) {
      return createLimiter({
        plans: {
          slow: [{ name: 'api', algorithm, limit: 10, windowMs: 1000, burst: 10 }],
          fast: [{ name: 'api', algorithm, limit: 20, windowMs: 1000, burst: 10 }],
        },
        store: new MemoryStore({ sweepIntervalMs: 0 }),
        clock,
      });
    }

    it('limit 10 -> 20, burst 10: what leaked before the change leaked at the old rate; a charge under the new one adopts it', async () => {
      let now = 1000;
      const limiter = slowAndFast(() => now);
      expect(await limiter.check('k', { plan: 'slow', cost: 10 })).toMatchObject({ allowed: true, remaining: 0 });
      // 100 ms at 10 per second: one token back (not two). Nothing is charged under the new limit yet, so
      // the state goes on leaking at the old rate: 2 tokens fit at 1200, and it is full again at 2000.
      now = 1100;
      expect(await limiter.peek('k', { plan: 'fast', cost: 2 })).toMatchObject({
        allowed: false,
        remaining: 1,
        retryAfterMs: 100,
        resetMs: 900,
      });
      // A charge under the new limit rewrites the state in its scale: 50 ms per token from then on.
      expect(await limiter.check('k', { plan: 'fast' })).toMatchObject({ allowed: true, remaining: 0, resetMs: 500 });
      now = 1149;
      expect(await limiter.check('k', { plan: 'fast' })).toMatchObject({ allowed: false, retryAfterMs: 1 });
      now = 1150;
      expect(await limiter.check('k', { plan: 'fast' })).toMatchObject({ allowed: true, remaining: 0 });
    });

    it('limit 10 -> 20, burst 10: a refused check under the new limit writes nothing, however much room it found', async () => {
      let now = 1000;
      const limiter = slowAndFast(() => now);
      await limiter.check('k', { plan: 'slow', cost: 10 });
      now = 1100;
      // 9 owed, room for 1: a cost of 2 is refused, and the wait it gives holds to the ms, as the state
      // keeps leaking at the old rate (rewriting it at the new rate on the refusal would admit at 1150).
      expect(await limiter.check('k', { plan: 'fast', cost: 2 })).toMatchObject({
        allowed: false,
        remaining: 1,
        retryAfterMs: 100,
        resetMs: 900,
      });
      now = 1150;
      expect(await limiter.check('k', { plan: 'fast', cost: 2 })).toMatchObject({ allowed: false, remaining: 1.5, retryAfterMs: 50 });
      now = 1199;
      expect(await limiter.check('k', { plan: 'fast', cost: 2 })).toMatchObject({ allowed: false, retryAfterMs: 1 });
      now = 1200;
      expect(await limiter.check('k', { plan: 'fast', cost: 2 })).toMatchObject({ allowed: true, remaining: 0 });
      // The slow plan sees what was charged under the fast one: 10 owed again, leaking at the fast rate
      // until a charge under the slow one (one token in 50 ms).
      expect(await limiter.peek('k', { plan: 'slow' })).toMatchObject({ allowed: false, retryAfterMs: 50, resetMs: 500 });
    });
  });
}
