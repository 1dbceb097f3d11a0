import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createLimiter } from '../../limiter/create-limiter.js';
import type { Limiter } from '../../limiter/limiter.js';
import { ProcessStore, Shared } from '../../testing/shared-store.js';

const settle = async () => {
  for (let i = 0; i < 5; i++) await new Promise((r) => setTimeout(r, 0));
};

describe('budgets after a loss, in every process (property)', () => {
  it('after a restart without persistence, each key holds the largest count any process had seen, whatever the processes decided and in whatever order they come back', async () => {
    const op = fc.record({ p: fc.nat(3), key: fc.nat(5), n: fc.integer({ min: 1, max: 4 }) });
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 2, max: 4 }), fc.array(op, { minLength: 1, maxLength: 25 }), fc.nat(), async (n, ops, turn) => {
        const shared = new Shared();
        const stores = Array.from({ length: n }, () => new ProcessStore(shared));
        const limiters: Limiter[] = stores.map((store) =>
          createLimiter({
            name: 'prop',
            policies: { algorithm: 'fixed-window', limit: 10, windowMs: 60_000 },
            store,
            clock: () => 1_000,
            logger: { warn() {}, error() {} },
          }),
        );
        await settle();
        // What each key had used by the view of each process (its last answer), and at most.
        const largest = new Map<string, number>();
        for (const { p, key, n: times } of ops) {
          const limiter = limiters[p % n] as Limiter;
          for (let i = 0; i < times; i++) {
            const d = await limiter.check(`k${key}`);
            largest.set(`k${key}`, Math.max(largest.get(`k${key}`) ?? 0, 10 - d.remaining));
          }
        }
        shared.wipe();
        // The processes come back in some order, one at a time.
        for (let i = 0; i < n; i++) {
          (stores[(i + turn) % n] as ProcessStore).reconnect();
          await settle();
        }
        for (const [key, used] of largest) expect([key, (await (limiters[0] as Limiter).peek(key)).remaining]).toEqual([key, 10 - used]);
        await Promise.all(limiters.map((l) => l.close()));
      }),
      { numRuns: 60 },
    );
  });
});
