/**
 * @module Differential suite for the plan operations: peek, refund and several keys in one decision,
 * through MemoryStore (the TypeScript kernels and algorithms/refund-kernels.ts) and RedisStore (the generated
 * Lua: scripts/plan-script.ts and scripts/peek-refund-scripts.ts) with `now` injected, on one Redis node. Every answer of every
 * operation must be equal number for number: the flags, remaining, retryAfterMs, resetMs and delayMs of
 * checks and peeks, and which policies took each refund. Hand-written traces and fast-check random ones
 * (weighted costs, partial refunds, refunds after the window rolled, a clock stepping back).
 */
import { type AlgorithmId, createLimiter, type Decision, MemoryStore, type PolicyOptions, RedisStore } from '@tollgate/core';
import fc from 'fast-check';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeRedis, type RedisServer, randomPrefix, startRedis } from './harness.js';
import { PlanTwin } from './twin-store.js';

const ALGORITHMS: readonly AlgorithmId[] = ['fixed-window', 'sliding-window', 'token-bucket', 'gcra', 'leaky-bucket', 'sliding-log'];
const BASE = Date.now() + 10 * 365 * 86_400_000;

type Op =
  | { readonly op: 'check' | 'peek'; readonly dt: number; readonly cost: number; readonly keys: readonly string[] }
  | { readonly op: 'refund'; readonly dt: number; readonly which: number; readonly part: number | undefined };

const policyArb = (name: string) =>
  fc
    .record({
      algorithm: fc.constantFrom(...ALGORITHMS),
      limit: fc.integer({ min: 1, max: 6 }),
      windowMs: fc.constantFrom(3, 10, 100, 333, 1000),
      burst: fc.option(fc.integer({ min: 1, max: 6 }), { nil: undefined }),
      anchor: fc.constantFrom<'clock' | 'first-request'>('clock', 'first-request'),
    })
    .map((r): PolicyOptions => {
      const bucket = r.algorithm === 'token-bucket' || r.algorithm === 'gcra' || r.algorithm === 'leaky-bucket';
      return {
        name,
        algorithm: r.algorithm,
        limit: r.limit,
        windowMs: r.windowMs,
        ...(bucket && r.burst !== undefined ? { burst: r.burst } : {}),
        ...(r.algorithm === 'fixed-window' ? { anchor: r.anchor } : {}),
      };
    });

const opArb = (n: number): fc.Arbitrary<Op> =>
  fc.oneof(
    {
      weight: 5,
      arbitrary: fc.record({
        op: fc.constantFrom<'check' | 'peek'>('check', 'check', 'peek'),
        dt: fc.oneof(fc.constant(0), fc.integer({ min: -30, max: 400 }), fc.integer({ min: 0, max: 2500 })),
        cost: fc.constantFrom(1, 1, 0.5, 2, 0.001, 3),
        keys: fc.array(fc.constantFrom('a', 'b'), { minLength: n, maxLength: n }),
      }),
    },
    {
      weight: 3,
      arbitrary: fc.record({
        op: fc.constant<'refund'>('refund'),
        dt: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 300 }), fc.integer({ min: -20, max: 20 })),
        which: fc.nat(),
        part: fc.option(fc.constantFrom(0.5, 1, 0.001), { nil: undefined }),
      }),
    },
  );

describeRedis('plans: peek, refund and several keys decide identically in memory and in Redis', () => {
  let server: RedisServer;
  let client: Redis;

  beforeAll(async () => {
    server = await startRedis();
    client = await server.readyClient();
  });
  afterAll(async () => {
    await server.close();
  });

  async function run(policies: readonly PolicyOptions[], ops: readonly Op[], shadow?: readonly PolicyOptions[]): Promise<string[]> {
    let now = BASE;
    const store = new PlanTwin(
      new MemoryStore({ sweepIntervalMs: 0 }),
      new RedisStore({ client, prefix: randomPrefix(), timeSource: 'limiter' }),
    );
    const limiter = createLimiter({
      policies,
      shadow: shadow === undefined ? undefined : { policies: shadow },
      store,
      clock: () => now,
      storeTimeoutMs: 60_000,
      breaker: false,
    });
    const names = [...policies, ...(shadow ?? [])].map((p) => p.name ?? 'default');
    const charged: Decision[] = [];
    for (const op of ops) {
      now += op.dt;
      if (op.op === 'refund') {
        const d = charged[op.which % Math.max(1, charged.length)];
        if (d?.receipt !== undefined) {
          const left = d.receipt.cost;
          await limiter.refund(d, op.part === undefined || op.part > left ? undefined : { cost: op.part });
        }
        continue;
      }
      const keys = Object.fromEntries(names.map((name, i) => [name, op.keys[i % op.keys.length] as string]));
      const d = op.op === 'check' ? await limiter.check(keys, { cost: op.cost }) : await limiter.peek(keys, { cost: op.cost });
      if (d.receipt !== undefined) charged.push(d);
      if (store.diffs.length > 0) return store.diffs;
    }
    return store.diffs;
  }

  const checks = (...list: [dt: number, cost?: number][]): Op[] => list.map(([dt, cost = 1]) => ({ op: 'check', dt, cost, keys: ['k'] }));
  const refund = (which: number, dt = 0, part?: number): Op => ({ op: 'refund', dt, which, part });
  const peek = (dt = 0, cost = 1): Op => ({ op: 'peek', dt, cost, keys: ['k'] });

  for (const algorithm of ALGORITHMS) {
    it(`${algorithm}: refunds in the window, after it, partial, and of the newest and oldest entries`, async () => {
      const policies = [{ name: 'p', algorithm, limit: 4, windowMs: 1000 }];
      const ops: Op[] = [
        ...checks([0], [0, 2], [10], [0, 0.5]),
        peek(0, 1),
        refund(1),
        peek(0, 2),
        refund(3, 5, 0.25),
        refund(0, 1),
        ...checks([0], [0, 3]),
        peek(),
        refund(5, 1500),
        refund(4, 0),
        ...checks([-700], [0]),
        refund(6, 10),
        peek(0, 4),
        ...checks([2500], [0, 2], [0, 2]),
        refund(8, 0),
        refund(9, 0),
        peek(0, 4),
      ];
      expect(await run(policies, ops)).toEqual([]);
    });
  }

  it('leaky-bucket maxDelayMs: rejections and waits as in memory, with and without delayAfter', async () => {
    for (const extra of [{ maxDelayMs: 250 }, { maxDelayMs: 0 }, { maxDelayMs: 400, delayAfter: 1, burst: 6 }]) {
      const policies = [{ name: 'p', algorithm: 'leaky-bucket' as const, limit: 3, windowMs: 1000, ...extra }];
      const ops: Op[] = [...checks([0], [0], [0], [0], [0, 2], [100], [0], [234], [0], [1], [500], [0, 0.5], [0])];
      ops.push(peek(0), refund(0), ...checks([0], [0], [333], [0]));
      expect(await run(policies, ops)).toEqual([]);
    }
  });

  it('several keys and shadow policies: each policy on its own key, refunds on each', async () => {
    const policies = [
      { name: 'ip', algorithm: 'fixed-window' as const, limit: 3, windowMs: 1000 },
      { name: 'account', algorithm: 'sliding-log' as const, limit: 2, windowMs: 1000 },
    ];
    const shadow = [{ name: 'next', algorithm: 'gcra' as const, limit: 1, windowMs: 1000 }];
    const ops: Op[] = [
      { op: 'check', dt: 0, cost: 1, keys: ['1.1.1.1', 'alice', 'alice'] },
      { op: 'check', dt: 0, cost: 1, keys: ['1.1.1.1', 'alice', 'alice'] },
      { op: 'check', dt: 0, cost: 1, keys: ['1.1.1.1', 'alice', 'alice'] },
      { op: 'check', dt: 0, cost: 1, keys: ['1.1.1.1', 'bob', 'bob'] },
      refund(0),
      { op: 'peek', dt: 0, cost: 1, keys: ['1.1.1.1', 'alice', 'alice'] },
      { op: 'check', dt: 0, cost: 1, keys: ['1.1.1.1', 'carol', 'carol'] },
      { op: 'check', dt: 10, cost: 1, keys: ['1.1.1.1', 'alice', 'alice'] },
    ];
    expect(await run(policies, ops, shadow)).toEqual([]);
  });

  for (const algorithm of ALGORITHMS) {
    it(`${algorithm}: state carries over a change of limit (two plans, one policy name), clamped at zero`, async () => {
      let now = BASE;
      const store = new PlanTwin(
        new MemoryStore({ sweepIntervalMs: 0 }),
        new RedisStore({ client, prefix: randomPrefix(), timeSource: 'limiter' }),
      );
      const limiter = createLimiter({
        plans: {
          pro: [{ name: 'm', algorithm, limit: 5, windowMs: 1000 }],
          free: [{ name: 'm', algorithm, limit: 2, windowMs: 1000 }],
        },
        store,
        clock: () => now,
        storeTimeoutMs: 60_000,
        breaker: false,
      });
      const seen: unknown[] = [];
      for (const [dt, plan] of [
        [0, 'pro'],
        [0, 'pro'],
        [1, 'pro'],
        [0, 'pro'],
        [0, 'free'],
        [5, 'free'],
        [0, 'pro'],
        [300, 'free'],
        [900, 'free'],
      ] as const) {
        now += dt;
        const d = await limiter.check('k', { plan });
        seen.push([plan, d.allowed, d.remaining]);
        expect(d.remaining).toBeGreaterThanOrEqual(0);
      }
      expect(store.diffs).toEqual([]);
      expect(seen[4]).toEqual(['free', false, 0]);
    });
  }

  for (const algorithm of ['token-bucket', 'gcra', 'leaky-bucket'] as const) {
    it(`${algorithm}: a debt converts across limits and bursts (free 100/min, pro 1000/min, a contract with its own burst), weighted costs, refunds`, async () => {
      let now = BASE;
      const store = new PlanTwin(
        new MemoryStore({ sweepIntervalMs: 0 }),
        new RedisStore({ client, prefix: randomPrefix(), timeSource: 'limiter' }),
      );
      const limiter = createLimiter({
        plans: {
          free: [{ name: 'm', algorithm, limit: 100, windowMs: 60_000 }],
          pro: [{ name: 'm', algorithm, limit: 1000, windowMs: 60_000 }],
          contract: [{ name: 'm', algorithm, limit: 7, windowMs: 60_000, burst: 300 }],
        },
        store,
        clock: () => now,
        storeTimeoutMs: 60_000,
        breaker: false,
      });
      const plans = ['free', 'pro', 'contract'] as const;
      const costs = [1, 0.5, 2.5, 7, 0.001, 30, 1];
      for (let i = 0; i < 400; i++) {
        now += [0, 1, 17, 333, 0, 2500, -40][i % 7] as number;
        const plan = plans[Math.floor(i / 5) % 3] as (typeof plans)[number];
        const cost = costs[i % costs.length] as number;
        const d = await limiter.check('k', { plan, cost });
        if (i % 11 === 0 && d.allowed) await limiter.refund(d);
        if (i % 13 === 0) await limiter.peek('k', { plan, cost: 1 });
      }
      expect(store.diffs).toEqual([]);
    });
  }

  it('two limits taking turns on plans of two policies (a bucket beside a cap): a refusal writes nothing, in Redis as in memory (fast-check)', async () => {
    // packages/core/src/algorithms/refusal-writes-nothing.property.test.ts proves the memory side pure; here the
    // Lua answers every check and peek as memory does on such traces, refusals with room and group refusals included.
    const shape = fc.record({
      algorithm: fc.constantFrom<AlgorithmId>('token-bucket', 'gcra', 'leaky-bucket'),
      limit: fc.integer({ min: 1, max: 12 }),
      burst: fc.option(fc.integer({ min: 1, max: 15 }), { nil: undefined }),
      cap: fc.integer({ min: 2, max: 40 }),
    });
    const step = fc.record({
      plan: fc.constantFrom<'a' | 'b'>('a', 'b'),
      dt: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 120 }), fc.integer({ min: 0, max: 1500 })),
      cost: fc.constantFrom(1, 1, 2, 0.5, 3, 0.001),
      peek: fc.boolean(),
    });
    await fc.assert(
      fc.asyncProperty(shape, shape, fc.array(step, { minLength: 1, maxLength: 30 }), async (a, b, steps) => {
        let now = BASE;
        const store = new PlanTwin(
          new MemoryStore({ sweepIntervalMs: 0 }),
          new RedisStore({ client, prefix: randomPrefix(), timeSource: 'limiter' }),
        );
        const plan = (s: typeof a): PolicyOptions[] => [
          { name: 'api', algorithm: a.algorithm, limit: s.limit, windowMs: 1000, ...(s.burst === undefined ? {} : { burst: s.burst }) },
          { name: 'cap', algorithm: 'fixed-window', limit: s.cap, windowMs: 10_000 },
        ];
        const limiter = createLimiter({
          plans: { a: plan(a), b: plan(b) },
          store,
          clock: () => now,
          storeTimeoutMs: 60_000,
          breaker: false,
        });
        for (const st of steps) {
          now += st.dt;
          if (st.peek) await limiter.peek('k', { plan: st.plan, cost: st.cost });
          await limiter.check('k', { plan: st.plan, cost: st.cost });
        }
        expect(store.diffs).toEqual([]);
      }),
      { numRuns: 60 },
    );
  });

  it('random policies, keys, costs, peeks and refunds (fast-check)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 3 }).chain((n) =>
          fc.record({
            policies: fc.tuple(...Array.from({ length: n }, (_, i) => policyArb(`p${i}`))),
            ops: fc.array(opArb(n), { maxLength: 40 }),
          }),
        ),
        async ({ policies, ops }) => {
          expect(await run(policies, ops)).toEqual([]);
        },
      ),
      { numRuns: 60 },
    );
  });
});
