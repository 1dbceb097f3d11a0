/**
 * @module RedisStore `localBatch` with two limiters of one `name` on one store (the README's "a middleware
 * and a peek on the side: give both the same name"): what one holds for a key is found by the key's Redis
 * names, so the other's peek counts it and the other's reset drops it (local-batch/plan-states.ts). Before,
 * the batcher found it by the plan object that took it: B's peek missed A's batches (615 of 700), after
 * `B.reset` A spent the batches taken before it on the fresh state (1,085 of 1,000), and an exhausted A
 * kept answering its remembered rejection for a second.
 */
import { type AlgorithmId, createLimiter, type PolicyOptions, RedisStore } from '@tollgate/core';
import type { Redis } from 'ioredis';
import { beforeAll, expect, it } from 'vitest';
import { describeRedis, randomPrefix, suiteRedis } from './harness.js';

const LIMIT = 1_000;
const WINDOW_MS = 3_600_000;
const ALGORITHMS: readonly AlgorithmId[] = ['fixed-window', 'sliding-window', 'gcra'];

describeRedis('RedisStore localBatch: two limiters with one name on one store', () => {
  const server = suiteRedis();
  let client: Redis;
  beforeAll(async () => {
    client = await server().readyClient({ autoResendUnfulfilledCommands: false });
  });

  /** A and B named `hot` on one batching store, on a virtual clock 1 s into a window. */
  function twins(algorithm: AlgorithmId, limitOfB = LIMIT) {
    const clock = { now: Math.ceil(1_900_000_000_000 / WINDOW_MS) * WINDOW_MS + 1_000 };
    const store = new RedisStore({ client, prefix: randomPrefix(), timeSource: 'limiter', localBatch: true });
    const policy = (limit: number): PolicyOptions => ({ name: 'm', algorithm, limit, windowMs: WINDOW_MS });
    const options = { name: 'hot', store, clock: () => clock.now, storeTimeoutMs: 60_000, breaker: false } as const;
    const a = createLimiter({ ...options, policies: policy(LIMIT) });
    const b = createLimiter({ ...options, policies: policy(limitOfB) });
    /** A's admissions in `n` checks, 1 ms apart. */
    const admit = async (n: number) => {
      let admitted = 0;
      for (let i = 0; i < n; i++) {
        clock.now += 1;
        if ((await a.check('k')).allowed) admitted += 1;
      }
      return admitted;
    };
    return { clock, store, a, b, admit };
  }

  for (const algorithm of ALGORITHMS) {
    it(`${algorithm}: after A admits 300, B's peek says limit - 300, as A's does (before: fewer, A's batches counted as spent)`, async () => {
      const { store, a, b, admit } = twins(algorithm);
      expect(await admit(300)).toBe(300);
      expect(store.localBatchHeld).toBeGreaterThan(0);
      // Whole units: a gcra bucket refilled a twelfth of one meanwhile.
      expect(Math.floor((await a.peek('k')).remaining)).toBe(LIMIT - 300);
      expect(Math.floor((await b.peek('k')).remaining)).toBe(LIMIT - 300);
      await store.close();
    });

    it(`${algorithm}: after B.reset(key), A admits exactly the limit (before: A spent its batches taken before the reset, over the limit)`, async () => {
      const { store, b, admit } = twins(algorithm);
      expect(await admit(300)).toBe(300);
      expect(store.localBatchHeld).toBeGreaterThan(0);
      await b.reset('k');
      const held = store.localBatchHeld;
      expect(await admit(2 * LIMIT)).toBe(LIMIT);
      expect(held).toBe(0);
      await store.close();
    });

    it(`${algorithm}: with A exhausted, B.reset(key) lets A's next check pass at once (before: A's remembered rejection stood)`, async () => {
      const { clock, store, a, b, admit } = twins(algorithm);
      expect(await admit(LIMIT + 50)).toBe(LIMIT);
      const blocked = store.localBatchStats?.blocked ?? 0;
      clock.now += 1;
      expect((await a.check('k')).allowed).toBe(false);
      // The refusal came from memory: A holds Redis' rejection.
      expect(store.localBatchStats?.blocked).toBe(blocked + 1);
      await b.reset('k');
      clock.now += 1;
      expect(await a.check('k')).toMatchObject({ allowed: true, remaining: LIMIT - 1 });
      await store.close();
    });
  }

  it('the same name under another limit (a limiter made again with a new one): B.reset drops what A holds, and B.peek counts it', async () => {
    // B's plan is not A's (another limit: its checks may not spend A's units), but it reaches the same keys.
    const { store, a, b, admit } = twins('fixed-window', 2 * LIMIT);
    expect(await admit(300)).toBe(300);
    expect(store.localBatchHeld).toBeGreaterThan(0);
    expect((await b.peek('k')).remaining).toBe(2 * LIMIT - 300);
    expect((await a.peek('k')).remaining).toBe(LIMIT - 300);
    await b.reset('k');
    const held = store.localBatchHeld;
    expect(await admit(2 * LIMIT)).toBe(LIMIT);
    expect(held).toBe(0);
    await store.close();
  });
});
