/**
 * @module Clock skew: two app instances whose clocks differ by minutes share one limit through Redis and
 * still agree, because the script reads Redis TIME. The same pair trusting its own clocks (the test-only
 * `timeSource: 'limiter'`) disagrees: the instance behind is starved by the one ahead.
 */
import { type AlgorithmId, createLimiter, RedisStore } from '@tollgate/core';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { clearOfWindowEnd, describeRedis, type RedisServer, randomPrefix, startRedis } from './harness.js';

const SKEW = 4 * 60_000;
const ALGORITHMS: readonly AlgorithmId[] = ['fixed-window', 'sliding-window', 'token-bucket', 'gcra', 'leaky-bucket', 'sliding-log'];

describeRedis('instances with skewed clocks', () => {
  let server: RedisServer;
  let a: Redis;
  let b: Redis;

  beforeAll(async () => {
    server = await startRedis();
    a = await server.readyClient();
    b = await server.readyClient();
  });
  afterAll(async () => {
    await server.close();
  });

  function pair(algorithm: AlgorithmId, timeSource: 'redis' | 'limiter') {
    const prefix = randomPrefix();
    // Two instances of one limiter, so one name: in one process, two limiters without a name on one
    // server and prefix are refused (ERR_RL_SHARED_STATE), even through two clients.
    const make = (client: Redis, offset: number) =>
      createLimiter({
        name: 'api',
        policies: { algorithm, limit: 10, windowMs: 60_000 },
        store: new RedisStore({ client, prefix, timeSource }),
        clock: () => Date.now() + offset,
        storeTimeoutMs: 5000,
      });
    return [make(a, SKEW), make(b, -SKEW)] as const;
  }

  for (const algorithm of ALGORITHMS) {
    it(`${algorithm}: 4 minutes ahead and 4 minutes behind, they share one budget and agree on it`, async () => {
      const [ahead, behind] = pair(algorithm, 'redis');
      // Every check in one of Redis' clock-aligned minutes (fixed and sliding window).
      await clearOfWindowEnd(60_000, 5_000);
      let admitted = 0;
      const remaining: number[] = [];
      for (let i = 0; i < 16; i++) {
        const d = await (i % 2 === 0 ? ahead : behind).check('user');
        if (d.allowed) admitted += 1;
        remaining.push(d.remaining);
      }
      expect(admitted).toBe(10);
      // One count, seen alike from both sides: 9, 8, ... 0 whichever instance asks.
      expect(remaining.slice(0, 10).map(Math.floor)).toEqual([9, 8, 7, 6, 5, 4, 3, 2, 1, 0]);
      const reset = [(await ahead.check('user')).retryAfterMs, (await behind.check('user')).retryAfterMs];
      expect(Math.abs((reset[0] as number) - (reset[1] as number))).toBeLessThan(1000);
    });
  }

  it('without Redis TIME the same instances disagree: the one behind is starved', async () => {
    const [ahead, behind] = pair('gcra', 'limiter');
    expect((await ahead.check('user')).allowed).toBe(true);
    const d = await behind.check('user');
    expect(d.allowed).toBe(false);
    expect(d.retryAfterMs).toBeGreaterThan(SKEW);
  });
});
