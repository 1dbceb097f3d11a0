/**
 * @module Differential suite: the same traces through MemoryStore (the TypeScript kernels) and RedisStore
 * (the Lua script) with `now` injected, requiring identical flags, remaining, retryAfterMs, resetMs and
 * delayMs for every policy of every request: hand-written traces (boundaries, weighted costs, a clock
 * stepping back, several policies with shadow ones, long logs) and fast-check random ones. Also checks
 * that every key expires exactly when its state becomes equivalent to a key never seen. The suite runs
 * once per client (harness.ts CLIENT_KINDS: ioredis, node-redis v6 and v4, iovalkey).
 */
import {
  type AlgorithmId,
  createLimiter,
  type Limiter,
  MemoryStore,
  type PolicyOptions,
  RedisStore,
  type RedisStoreClient,
  type StorePlan,
} from '@tollgate/core';
import fc from 'fast-check';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { CLIENT_KINDS, describeRedis, type RedisServer, randomPrefix, startRedis } from './harness.js';
import { differences, type TwinAnswer, TwinStore } from './twin-store.js';

const ALGORITHMS: readonly AlgorithmId[] = ['fixed-window', 'sliding-window', 'token-bucket', 'gcra', 'leaky-bucket', 'sliding-log'];
/** The most policies RedisStore applies in one generated script (scripts/plan-script.ts MAX_SCRIPT_POLICIES). */
const MAX_SCRIPT_POLICIES = 16;
/** The most entries one key's sliding log keeps (algorithms/sliding-log.ts MAX_LOG_ENTRIES). */
const MAX_LOG_ENTRIES = 1024;
/** Virtual time far ahead of Redis' clock: key expiry times follow the injected clock (test-only mode). */
const BASE = Date.now() + 10 * 365 * 86_400_000;

interface Step {
  /** Added to the clock before the request; negative steps the clock back. */
  readonly dt: number;
  readonly key: string;
  readonly cost: number;
}

interface Setup {
  readonly policies: readonly PolicyOptions[];
  readonly shadow?: readonly PolicyOptions[];
}

const policyArb = (name: string) =>
  fc
    .record({
      algorithm: fc.constantFrom(...ALGORITHMS),
      limit: fc.integer({ min: 1, max: 8 }),
      windowMs: fc.constantFrom(1, 3, 7, 10, 100, 333, 1000, 60_000),
      burst: fc.option(fc.integer({ min: 1, max: 8 }), { nil: undefined }),
      anchor: fc.constantFrom<'clock' | 'first-request'>('clock', 'first-request'),
      delayAfter: fc.integer({ min: 0, max: 3 }),
      // leaky-bucket's queue bound: what is left under it and its waits (kernels/gcra.ts gcraLeft, maxDelayRetry).
      maxDelayMs: fc.option(fc.integer({ min: 0, max: 1500 }), { nil: undefined }),
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
        ...(r.algorithm === 'leaky-bucket' ? { delayAfter: r.delayAfter } : {}),
        ...(r.algorithm === 'leaky-bucket' && r.maxDelayMs !== undefined ? { maxDelayMs: r.maxDelayMs } : {}),
      };
    });

/** `e` enforced and `s` shadow policies, each of a random algorithm and parameters. */
const setupOf = (e: number, s: number): fc.Arbitrary<Setup> =>
  fc
    .record({
      policies: fc.tuple(...Array.from({ length: e }, (_, i) => policyArb(`p${i}`))),
      shadow: fc.tuple(...Array.from({ length: s }, (_, i) => policyArb(`s${i}`))),
    })
    .map((r) => ({ policies: r.policies, shadow: r.shadow.length > 0 ? r.shadow : undefined }));

const stepArb: fc.Arbitrary<Step> = fc.record({
  dt: fc.oneof(fc.constant(0), fc.integer({ min: -20, max: 20 }), fc.integer({ min: 0, max: 1500 }), fc.integer({ min: -3000, max: 3000 })),
  cost: fc.constantFrom(1, 1, 1, 0.5, 2, 0.001, 2.5, 3, 9),
  key: fc.constantFrom('a', 'b'),
});

for (const kind of CLIENT_KINDS)
  describeRedis(`RedisStore and MemoryStore decide identically (through ${kind})`, () => {
    let server: RedisServer;
    /** The client under test, as the app would pass it. */
    let client: RedisStoreClient;
    /** An ioredis connection of the test's own, to read keys. */
    let admin: Redis;

    beforeAll(async () => {
      server = await startRedis();
      client = await server.storeClient(kind);
      admin = await server.readyClient();
    });
    afterAll(async () => {
      await server.close();
    });

    function twin(setup: Setup, clock: () => number): { limiter: Limiter; store: TwinStore; names: string[] } {
      const store = new TwinStore(
        new MemoryStore({ sweepIntervalMs: 0 }),
        new RedisStore({ client, prefix: randomPrefix(), timeSource: 'limiter' }),
      );
      const limiter = createLimiter({
        policies: setup.policies,
        shadow: setup.shadow === undefined ? undefined : { policies: setup.shadow },
        store,
        clock,
        storeTimeoutMs: 60_000,
        breaker: false,
      });
      const names = [...setup.policies, ...(setup.shadow ?? [])].map((p) => p.name ?? 'default');
      return { limiter, store, names };
    }

    /** Replays `steps`; returns the first difference, or undefined. */
    async function replay(setup: Setup, steps: readonly Step[], start = BASE): Promise<string | undefined> {
      let now = start;
      const { limiter, store, names } = twin(setup, () => now);
      for (const step of steps) {
        now += step.dt;
        await limiter.check(step.key, { cost: step.cost });
        const a = store.last;
        if (a === undefined) return 'no answer recorded';
        const diff = differences(a, names);
        if (diff !== undefined) return diff;
        if (a.redis[a.redis.length - 1] !== now) return `the script used now ${a.redis[a.redis.length - 1]}, not ${now}`;
      }
      return undefined;
    }

    const steps = (...list: [dt: number, cost?: number, key?: string][]): Step[] =>
      list.map(([dt, cost = 1, key = 'k']) => ({ dt, cost, key }));

    for (const algorithm of ALGORITHMS) {
      const bucket = algorithm === 'token-bucket' || algorithm === 'gcra' || algorithm === 'leaky-bucket';

      it(`${algorithm}: exact boundaries`, async () => {
        // Start on a window boundary so requests land exactly on the edges.
        const start = Math.ceil(BASE / 60_000) * 60_000;
        const policies = [{ name: 'p', algorithm, limit: 3, windowMs: 1000 }];
        const trace = steps([0], [0], [0], [0], [999], [1], [0], [333], [334], [333], [1000], [1], [2000], [0], [0], [0], [0], [1]);
        expect(await replay({ policies }, trace, start)).toBeUndefined();
        // Retry exactly when told: the waits themselves are compared, so retrying at them probes the edge.
        const edge = steps([0], [0], [0], [0], [1], [332], [1], [665]);
        expect(await replay({ policies }, edge, start)).toBeUndefined();
        if (algorithm === 'fixed-window') {
          // Anchored windows open at the first request and end exactly windowMs later.
          const anchored = [{ name: 'p', algorithm, limit: 3, windowMs: 1000, anchor: 'first-request' as const }];
          const trace2 = steps([17], [0], [0], [0], [999], [1], [0], [0], [0], [1000], [0], [1500], [0]);
          expect(await replay({ policies: anchored }, trace2, start)).toBeUndefined();
        }
      });

      it(`${algorithm}: weighted and fractional costs, including costs that can never fit`, async () => {
        const policies = [{ name: 'p', algorithm, limit: 5, windowMs: 1000, ...(bucket ? { burst: 4 } : {}) }];
        const trace = steps(
          [0, 0.5],
          [0, 2.5],
          [0, 0.001],
          [0, 1],
          [10, 3],
          [0, 4],
          [0, 5],
          [0, 7.25],
          [100, 0.999],
          [250, 2],
          [700, 4],
          [1, 0.5],
        );
        expect(await replay({ policies }, trace)).toBeUndefined();
      });

      it(`${algorithm}: a clock that steps back never refunds nor charges twice`, async () => {
        const policies = [{ name: 'p', algorithm, limit: 4, windowMs: 1000 }];
        const trace = steps([0], [0], [400], [0], [-5000], [0], [0], [1200], [-300], [0], [-1], [2500], [0], [-60_000], [0], [70_000], [0]);
        expect(await replay({ policies }, trace)).toBeUndefined();
      });

      it(`${algorithm}: several policies and shadow policies, each group all-or-nothing`, async () => {
        const setup: Setup = {
          policies: [
            { name: 'burst', algorithm, limit: 3, windowMs: 1000 },
            { name: 'steady', algorithm: 'gcra', limit: 10, windowMs: 10_000 },
            { name: 'daily', algorithm: 'fixed-window', limit: 8, windowMs: 86_400_000 },
          ],
          shadow: [
            { name: 'candidate', algorithm, limit: 2, windowMs: 500 },
            { name: 'log', algorithm: 'sliding-log', limit: 5, windowMs: 2000 },
          ],
        };
        const trace = steps(
          [0],
          [0],
          [0, 1, 'j'],
          [0],
          [0, 2],
          [300],
          [600, 1, 'j'],
          [100],
          [1000],
          [0, 3],
          [-200],
          [2000],
          [0],
          [0, 1, 'j'],
          [5000],
          [0, 9],
        );
        expect(await replay(setup, trace)).toBeUndefined();
      });
    }

    it('sliding-log: thousands of entries, shared milliseconds, and a whole log expiring at once', async () => {
      const policies = [{ name: 'p', algorithm: 'sliding-log' as const, limit: 700, windowMs: 10_000 }];
      const trace: Step[] = [];
      for (let i = 0; i < 650; i++) trace.push({ dt: i % 3 === 0 ? 0 : 7, cost: i % 5 === 0 ? 0.5 : 1, key: 'k' });
      trace.push({ dt: 0, cost: 100, key: 'k' }, { dt: 3000, cost: 60, key: 'k' }, { dt: 5000, cost: 200, key: 'k' });
      trace.push({ dt: 20_000, cost: 700, key: 'k' }, { dt: 1, cost: 1, key: 'k' }, { dt: 9_999, cost: 1, key: 'k' });
      expect(await replay({ policies }, trace)).toBeUndefined();
    });

    it(`sliding-log: a log past ${MAX_LOG_ENTRIES} entries folds its oldest ones alike (unit and weighted costs)`, async () => {
      // A limit above the entry cap, and more admitted entries (distinct milliseconds) in one window than
      // the cap: both stores fold, so their waits (taken from the oldest entries) agree request for request.
      const policies = [{ name: 'p', algorithm: 'sliding-log' as const, limit: 3000, windowMs: 10_000 }];
      const unit: Step[] = [];
      for (let i = 0; i < 2600; i++) unit.push({ dt: i % 10 === 9 ? 0 : 3, cost: 1, key: 'k' });
      // Past the limit: rejected, with waits from the folded head; then the head leaves the window bit by bit.
      for (let i = 0; i < 500; i++) unit.push({ dt: i % 50 === 0 ? 400 : 1, cost: i % 7 === 0 ? 5 : 1, key: 'k' });
      expect(await replay({ policies }, unit)).toBeUndefined();
      const weighted: Step[] = [];
      const costs = [0.5, 2.5, 1, 0.001, 3, 0.75];
      for (let i = 0; i < 2400; i++) weighted.push({ dt: i % 6 === 5 ? 0 : 2, cost: costs[i % costs.length] as number, key: 'w' });
      for (let i = 0; i < 400; i++) weighted.push({ dt: i % 40 === 0 ? 700 : 1, cost: costs[i % costs.length] as number, key: 'w' });
      weighted.push({ dt: 10_000, cost: 3000, key: 'w' }, { dt: 1, cost: 0.5, key: 'w' });
      let now = BASE;
      const { limiter, store, names } = twin({ policies }, () => now);
      let admitted = 0;
      for (const step of weighted) {
        now += step.dt;
        const d = await limiter.check(step.key, { cost: step.cost });
        if (d.allowed) admitted += 1;
        expect(differences(store.last as TwinAnswer, names)).toBeUndefined();
      }
      expect(admitted).toBeGreaterThan(MAX_LOG_ENTRIES);
      // Redis memory is bounded alike: at most MAX_LOG_ENTRIES entries plus the base member.
      const [key] = store.redis.keyNames('w', store.plan as StorePlan) as [string];
      expect(await admin.zcard(key)).toBeLessThanOrEqual(MAX_LOG_ENTRIES + 1);
    });

    it('sliding-log: running totals are rebased before they leave exact integers', async () => {
      const limit = 4_000_000_000_000; // capacity 4e15 milli-units: three full windows pass 2^53
      const policies = [{ name: 'p', algorithm: 'sliding-log' as const, limit, windowMs: 1000 }];
      const trace = steps(
        [0, limit],
        [1000, limit],
        [1000, limit / 2],
        [0, limit / 2],
        [0, 1],
        [1000, limit],
        [999, 1],
        [1, 0.001],
        [1000, 0.001],
      );
      let now = BASE;
      const { limiter, store, names } = twin({ policies }, () => now);
      for (const step of trace) {
        now += step.dt;
        await limiter.check(step.key, { cost: step.cost });
        expect(differences(store.last as TwinAnswer, names)).toBeUndefined();
      }
      const [key] = store.redis.keyNames('k', store.plan as StorePlan) as [string];
      const scores = (await admin.zrange(key, '0', '-1', 'WITHSCORES')).filter((_, i) => i % 2 === 1).map(Number);
      expect(Math.max(...scores)).toBeLessThanOrEqual(Number.MAX_SAFE_INTEGER);
    });

    it('random traces (fast-check): every algorithm, several policies, shadow, weighted costs, clock steps both ways', async () => {
      const setupArb = fc.tuple(fc.integer({ min: 1, max: 3 }), fc.integer({ min: 0, max: 2 })).chain(([e, s]) => setupOf(e, s));
      await fc.assert(
        fc.asyncProperty(setupArb, fc.array(stepArb, { minLength: 1, maxLength: 40 }), async (setup, trace) => {
          expect(await replay(setup, trace)).toBeUndefined();
        }),
        { numRuns: 250 },
      );
    });

    it(`random plans up to the ${MAX_SCRIPT_POLICIES} policies one generated script holds (fast-check)`, async () => {
      const setupArb = fc
        .tuple(fc.integer({ min: 1, max: 10 }), fc.integer({ min: 0, max: 6 }))
        .filter(([e, s]) => e + s <= MAX_SCRIPT_POLICIES)
        .chain(([e, s]) => setupOf(e, s));
      await fc.assert(
        fc.asyncProperty(setupArb, fc.array(stepArb, { minLength: 1, maxLength: 30 }), async (setup, trace) => {
          expect(await replay(setup, trace)).toBeUndefined();
        }),
        { numRuns: 60 },
      );
    });

    for (const algorithm of ALGORITHMS) {
      it(`${algorithm}: ${MAX_SCRIPT_POLICIES} policies of it in one script (the most locals a script holds)`, async () => {
        const policy = (name: string, i: number): PolicyOptions => ({ name, algorithm, limit: 2 + (i % 5), windowMs: 100 * (1 + (i % 3)) });
        const policies = Array.from({ length: 10 }, (_, i) => policy(`p${i}`, i));
        const shadow = Array.from({ length: MAX_SCRIPT_POLICIES - 10 }, (_, i) => policy(`s${i}`, i + 10));
        const trace = steps([0], [0], [0, 2], [50], [0], [120, 0.5], [0], [-40], [300], [0, 3], [0]);
        expect(await replay({ policies, shadow }, trace)).toBeUndefined();
      });
    }

    it(`the largest plan: ${MAX_SCRIPT_POLICIES} policies, every algorithm in both groups`, async () => {
      const policies: PolicyOptions[] = [];
      const shadow: PolicyOptions[] = [];
      for (let i = 0; i < MAX_SCRIPT_POLICIES; i++) {
        const algorithm = ALGORITHMS[i % ALGORITHMS.length] as AlgorithmId;
        const p: PolicyOptions = { name: `p${i}`, algorithm, limit: 3 + (i % 4), windowMs: [100, 333, 1000][i % 3] as number };
        (i < 10 ? policies : shadow).push(p);
      }
      const trace: Step[] = [];
      for (let i = 0; i < 120; i++)
        trace.push({
          dt: [0, 1, 17, 40, 150, -30][i % 6] as number,
          cost: [1, 0.5, 2, 1, 3][i % 5] as number,
          key: i % 7 === 0 ? 'b' : 'a',
        });
      expect(await replay({ policies, shadow }, trace)).toBeUndefined();
    });

    for (const algorithm of ALGORITHMS) {
      it(`${algorithm}: a key expires exactly when its state becomes equivalent to a key never seen`, async () => {
        let now = BASE;
        const policies = [
          { name: 'a', algorithm, limit: 3, windowMs: 1000 },
          { name: 'b', algorithm, limit: 7, windowMs: 333 },
          // An emission interval of a whole 250 ms: GCRA state without a fraction (a and b have one).
          { name: 'c', algorithm, limit: 4, windowMs: 1000 },
        ];
        const { limiter, store } = twin({ policies }, () => now);
        for (const [dt, cost] of [
          [0, 1],
          [5, 0.5],
          [120, 1],
          [0, 0.5],
        ] as const) {
          now += dt;
          await limiter.check('k', { cost });
        }
        const plan = store.plan;
        if (plan === undefined) throw new Error('no plan');
        const keys = store.redis.keyNames('k', plan);
        const expiries = await Promise.all(keys.map((key) => admin.pexpiretime(key)));
        // A cost no policy can hold reports the state as it stands and charges nothing; probe in time order.
        const probe = async (at: number, key: string, i: number) => {
          now = at;
          await limiter.check(key, { cost: 100 });
          return store.last?.redis.slice(i * 5, i * 5 + 5);
        };
        for (const e of expiries) expect(e).toBeGreaterThan(now);
        for (const expiresAt of [...new Set(expiries)].sort((x, y) => x - y)) {
          const at = expiries.flatMap((e, i) => (e === expiresAt ? [i] : []));
          for (const i of at) expect(await probe(expiresAt - 1, 'k', i)).not.toEqual(await probe(expiresAt - 1, `never-seen-${i}-a`, i));
          for (const i of at) expect(await probe(expiresAt, 'k', i)).toEqual(await probe(expiresAt, `never-seen-${i}-b`, i));
        }
      });
    }
  });
