/**
 * @module Bucket refunds across a change of limit and back, in Redis as in memory (issue 29's bug, fixed:
 * plans/bucket-refund.limit-back.test.ts has the memory side). A change of limit counts everything the charges
 * before it could still give back, and its refund frame lives until the latest mark of those charges, however
 * far past a full bucket of the new limit: a receipt made before the change gives nothing back after it, also
 * once the limit changes back. Here, through a PlanTwin (every answer of Redis equal to memory's):
 * - the 10 s vector of the memory test;
 * - spans more than a day apart (A fills in 5 days, B in 1): B reads the horizon A's charges left, further
 *   ahead than B's bucket plus the clock tolerance, as state a writer left (refund-frame.ts frameAhead), never
 *   as corrupt state; the key lives until A's mark;
 * - a horizon that far ahead on a frame that counted too little to have been closed by a change of limit is
 *   still repaired as corrupt;
 * - state the script before the fix wrote (the same layout, a frame's horizon cut short) reads as it did (a
 *   rolling deploy meets such keys; on those, the cut frame still ends early, until the key expires);
 * - random traces of charges, peeks and refunds under two limits taking turns (fast-check): every answer equal,
 *   and a receipt never gives anything back once a check under another limit or burst came after its charge.
 */
import { createLimiter, type Decision, MemoryStore, type PolicyOptions, RedisStore, type RepairedState } from '@tollgate/core';
import fc from 'fast-check';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeRedis, type RedisServer, randomPrefix, startRedis } from './harness.js';
import { PlanTwin } from './twin-store.js';

type Bucket = 'token-bucket' | 'gcra' | 'leaky-bucket';
const BUCKETS: readonly Bucket[] = ['token-bucket', 'gcra', 'leaky-bucket'];
const DAY = 86_400_000;
/** Limiter time ten years ahead: keys written at PXAT of it never expire in the server's time during a test. */
const BASE = Date.now() + 10 * 365 * DAY;

interface Shape {
  readonly limit: number;
  readonly burst: number | undefined;
}

const policy = (algorithm: Bucket, windowMs: number, s: Shape): PolicyOptions[] => [
  { name: 'api', algorithm, limit: s.limit, windowMs, ...(s.burst === undefined ? {} : { burst: s.burst }) },
];

describeRedis('bucket refunds across a change of limit and back: Redis answers as memory does', () => {
  let server: RedisServer;
  let client: Redis;

  beforeAll(async () => {
    server = await startRedis();
    client = await server.readyClient();
  });
  afterAll(async () => {
    await server.close();
  });

  /** A limiter of plans `a` and `b` on a PlanTwin, at `clock`; repairs of the Redis store go to `repairs`. */
  function twin(algorithm: Bucket, windowMs: number, a: Shape, b: Shape, clock: () => number) {
    const repairs: RepairedState[] = [];
    const store = new PlanTwin(
      new MemoryStore({ sweepIntervalMs: 0 }),
      new RedisStore({ client, prefix: randomPrefix(), timeSource: 'limiter', onStateRepaired: (e) => repairs.push(e) }),
    );
    const limiter = createLimiter({
      plans: { a: policy(algorithm, windowMs, a), b: policy(algorithm, windowMs, b) },
      store,
      clock,
      storeTimeoutMs: 60_000,
      breaker: false,
    });
    return { store, limiter, repairs };
  }

  describe.each(BUCKETS)('%s', (algorithm) => {
    it('two limits deciding one key at once (a rolling deploy) never go over the larger one, in Redis as in memory', async () => {
      const now = BASE;
      const { store, limiter, repairs } = twin(algorithm, 1000, { limit: 20, burst: undefined }, { limit: 2, burst: 1 }, () => now);
      // In one millisecond: drain under 20, then refusals under 2 between more checks under 20.
      let admitted = 0;
      for (let round = 0; round < 5; round++) {
        for (let i = 0; i < 25; i++) if ((await limiter.check('k', { plan: 'a' })).allowed) admitted += 1;
        const small = await limiter.check('k', { plan: 'b' });
        expect(small).toMatchObject({ allowed: false, remaining: 0 });
        // It waits while the state leaks at the writer's rate (20 a second) until nothing is owed: 20 x 50 ms.
        expect(small.retryAfterMs).toBe(1000);
        // A cost the smaller one can never hold: its reset too is the writer's (not 500, one unit at 2 a second).
        expect(await limiter.check('k', { plan: 'b', cost: 2 })).toMatchObject({ reason: 'cost-exceeds-capacity', resetMs: 1000 });
      }
      // Each refusal under 2 used to clamp what is owed to 1, and 19 more were admitted under 20 after it.
      expect(admitted).toBe(20);
      expect(store.diffs).toEqual([]);
      expect(repairs).toEqual([]);
    });

    it('vector: A charges, B charges, A charges; the first receipt refunds nothing (as in memory)', async () => {
      let now = BASE;
      const { store, limiter, repairs } = twin(algorithm, 10_000, { limit: 1, burst: 5 }, { limit: 100, burst: 100 }, () => now);
      const first = await limiter.check('k', { plan: 'a', cost: 5 });
      expect(first.allowed).toBe(true);
      now = BASE + 100;
      expect((await limiter.check('k', { plan: 'b', cost: 1 })).allowed).toBe(true);
      now = BASE + 20_000;
      expect((await limiter.check('k', { plan: 'a', cost: 1 })).allowed).toBe(true);
      now = BASE + 20_100;
      expect((await limiter.peek('k', { plan: 'a' })).remaining).toBe(4.01);
      expect((await limiter.refund(first)).refunded).toBe(false);
      expect((await limiter.peek('k', { plan: 'a' })).remaining).toBe(4.01);
      expect(store.diffs).toEqual([]);
      expect(repairs).toEqual([]);
    });

    it('spans more than a day apart: B keeps the horizon of A marks, unrepaired, and the key lives until the latest', async () => {
      let now = BASE;
      // A: 1 a day, burst 5 (a full bucket in 5 days); B: 100 a day, burst 100 (in 1 day).
      const { store, limiter, repairs } = twin(algorithm, DAY, { limit: 1, burst: 5 }, { limit: 100, burst: 100 }, () => now);
      const first = await limiter.check('k', { plan: 'a', cost: 5 });
      expect(first.allowed).toBe(true);
      now = BASE + 100;
      expect((await limiter.check('k', { plan: 'b', cost: 1 })).allowed).toBe(true);
      const [name] = store.redis.keyNames('k', store.plan as NonNullable<typeof store.plan>) as [string];
      // The frame lives until A's mark, 5 days after its charge: past B's bucket plus the clock tolerance (2 days).
      expect(await client.pexpiretime(name)).toBe(BASE + 5 * DAY);
      // B reads its own state with that horizon (the same-limit path), an hour later.
      now = BASE + 3_600_000;
      expect((await limiter.check('k', { plan: 'b', cost: 1 })).allowed).toBe(true);
      expect(await client.pexpiretime(name)).toBe(BASE + 5 * DAY);
      now = BASE + 3 * DAY;
      expect((await limiter.check('k', { plan: 'a', cost: 1 })).allowed).toBe(true);
      now = BASE + 3 * DAY + 100;
      const left = (await limiter.peek('k', { plan: 'a' })).remaining;
      expect((await limiter.refund(first)).refunded).toBe(false);
      expect((await limiter.peek('k', { plan: 'a' })).remaining).toBe(left);
      expect(store.diffs).toEqual([]);
      expect(repairs).toEqual([]);
    });
  });

  it('gcra: a horizon days past the span, on a frame that counted too little for a change of limit, is repaired', async () => {
    const now = BASE;
    const { store, limiter, repairs } = twin('gcra', DAY, { limit: 3, burst: undefined }, { limit: 3, burst: undefined }, () => now);
    // A check names the plan's keys (store.plan); a key never seen has 2 left after a cost of 1.
    expect((await limiter.check('warm-up', { plan: 'a' })).remaining).toBe(2);
    const [name] = store.redis.keyNames('k', store.plan as NonNullable<typeof store.plan>) as [string];
    // Peeks read `remaining` as the state stands, in milli-units.
    // `limit:frac:burst:refunded:offset`, expiring at the horizon: a TAT one token (8 hours) ahead, the
    // horizon 10 days ahead (a full bucket is one day), the TAT `offset` before it.
    const horizon = now + 10 * DAY;
    const tat = now + DAY / 3;
    const write = (refunded: number) => client.set(name, `3:0:3:${refunded}:${horizon - tat}`, 'PXAT', horizon);
    await write(5);
    const repaired = await store.redis.peek('k', store.plan as NonNullable<typeof store.plan>, 1000, now);
    expect(repairs.map((r) => r.key)).toEqual(['k']);
    expect(repaired[1]).toBe(3000);
    // Counted as a closed frame does (at least 1 tick per ms up to its horizon): state a writer left.
    await write(10 * DAY);
    const kept = await store.redis.peek('k', store.plan as NonNullable<typeof store.plan>, 1000, now);
    expect(repairs).toHaveLength(1);
    expect(kept[1]).toBe(2000);
  });

  it('gcra: a frame the previous script left (its horizon cut at a full bucket of the new limit) reads as it did, unrepaired', async () => {
    let now = BASE + 100;
    const { store, limiter, repairs } = twin('gcra', 10_000, { limit: 100, burst: 100 }, { limit: 1, burst: 5 }, () => now);
    expect((await limiter.check('warm-up', { plan: 'a' })).allowed).toBe(true);
    const [name] = store.redis.keyNames('k', store.plan as NonNullable<typeof store.plan>) as [string];
    // The vector's state after B's charge at 100, as the script before the fix wrote it: TAT 699 (5.99 of B's
    // 100 in debt, 10 ticks a ms), 49 900 counted, the horizon cut to 100 + 10 000 (the layout is unchanged).
    await client.set(name, `100:0:100:49900:${10_100 - 699}`, 'PXAT', BASE + 10_100);
    now = BASE + 200;
    const d = await store.redis.apply('k', store.plan as NonNullable<typeof store.plan>, 1000, now);
    expect(repairs).toEqual([]);
    // Debt (699 - 200) x 10 ticks, then the charge: 100 000 - 4 990 - 1 000 left.
    expect([d[0], d[1]]).toEqual([5, 94_010]);
    expect(await client.get(name)).toBe(`100:0:100:49900:${10_100 - 799}`);
    expect(await client.pexpiretime(name)).toBe(BASE + 10_100);
  });

  it('random traces under two limits taking turns: equal answers, and no receipt refunds after a change (fast-check)', async () => {
    // The generator of plans/bucket-refund.limit-back.property.test.ts: any limits and bursts, often a slow bucket
    // and a fast one; rounds of checks under one of them after a gap, refunds between, then every receipt refunded.
    const anyShape: fc.Arbitrary<Shape> = fc.record({
      limit: fc.integer({ min: 1, max: 12 }),
      burst: fc.option(fc.integer({ min: 1, max: 15 }), { nil: undefined }),
    });
    const slow = fc.record({ limit: fc.integer({ min: 1, max: 2 }), burst: fc.integer({ min: 4, max: 15 }) });
    const fast = fc.record({
      limit: fc.integer({ min: 6, max: 12 }),
      burst: fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined }),
    });
    const pair: fc.Arbitrary<readonly [Shape, Shape]> = fc.oneof(fc.tuple(anyShape, anyShape), fc.tuple(slow, fast), fc.tuple(fast, slow));
    const small = fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 100 }));
    const round = fc.record({
      plan: fc.constantFrom<'a' | 'b'>('a', 'b'),
      gap: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 300 }), fc.integer({ min: 0, max: 5000 })),
      checks: fc.array(fc.record({ dt: small, cost: fc.constantFrom(1, 1, 2, 0.5, 0.001, 3), peek: fc.boolean() }), { maxLength: 5 }),
      refunds: fc.array(fc.record({ dt: small, which: fc.nat(), part: fc.boolean() }), { maxLength: 3 }),
    });
    // Refunds of receipts a change had spent, over all runs: the property is not vacuous.
    let spent = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...BUCKETS),
        // A second of window, or a day (times scaled with it): spans then differ by more than the clock tolerance.
        fc.constantFrom(1000, DAY),
        pair,
        fc.array(round, { maxLength: 6 }),
        async (algorithm, windowMs, [a, b], rounds) => {
          let now = BASE;
          const { store, limiter, repairs } = twin(algorithm, windowMs, a, b, () => now);
          const shapes = { a, b };
          const same = (x: Shape, y: Shape) => x.limit === y.limit && (x.burst ?? x.limit) === (y.burst ?? y.limit);
          const charged: { d: Decision; plan: 'a' | 'b'; changed: boolean }[] = [];
          const scaled = (dt: number) => (dt * windowMs) / 1000;
          const refund = async (c: (typeof charged)[number], part: boolean) => {
            const cost = c.d.receipt?.cost ?? 0;
            const before = await limiter.peek('k', { plan: c.plan, cost: 0.001 });
            const r = await limiter.refund(c.d, part && cost > 0.001 ? { cost: Math.round(cost * 500) / 1000 } : undefined);
            if (!c.changed) return;
            spent += 1;
            expect(r.refunded).toBe(false);
            expect((await limiter.peek('k', { plan: c.plan, cost: 0.001 })).remaining).toBe(before.remaining);
          };
          for (const r of rounds) {
            now += scaled(r.gap);
            for (const step of r.checks) {
              now += scaled(step.dt);
              if (step.peek) await limiter.peek('k', { plan: r.plan, cost: step.cost });
              // A charge converts state of the other limit: older receipts of it are spent. A refusal writes
              // nothing, whatever room it found.
              const d = await limiter.check('k', { plan: r.plan, cost: step.cost });
              if (d.receipt === undefined) continue;
              for (const c of charged) if (!same(shapes[c.plan], shapes[r.plan])) c.changed = true;
              charged.push({ d, plan: r.plan, changed: false });
            }
            for (const step of r.refunds) {
              now += scaled(step.dt);
              const c = charged[step.which % Math.max(1, charged.length)];
              if (c !== undefined) await refund(c, step.part);
            }
          }
          for (const c of charged) await refund(c, false);
          expect(store.diffs).toEqual([]);
          expect(repairs).toEqual([]);
        },
      ),
      { numRuns: 150 },
    );
    expect(spent).toBeGreaterThan(50);
  });
});
