/**
 * @module RedisStore `localBatch` in one process: the decisions, headers and problem bodies a batched
 * limiter gives equal those of the round trip on the same trace (one process, so the state agrees),
 * for every algorithm a batch can hold exactly; the others, shadow policies and several keys per check
 * stay on the round trip; a reset drops what is held; close gives it back.
 */
import {
  type AlgorithmId,
  createLimiter,
  type Decision,
  type Limiter,
  type PolicyOptions,
  RedisStore,
  registerPrometheusMetrics,
} from '@tollgate/core';
import type { Redis } from 'ioredis';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createHeaderWriter } from '../../../packages/core/src/http/response/header-writer.js';
import { createProblemBodyWriter, PROBLEM_TYPES } from '../../../packages/core/src/http/response/problem.js';
import { type ResponseConfig, respond } from '../../../packages/core/src/http/response/respond.js';
import { describeRedis, type RedisServer, randomPrefix, startRedis, waitFor } from './harness.js';

const BASE = 1_900_000_000_000;
const BATCHED: readonly { algorithm: AlgorithmId; windowMs: number }[] = [
  { algorithm: 'fixed-window', windowMs: 1_000 },
  // Within one window: the previous window's weight is what a batch does not see (docs/capacity.md).
  { algorithm: 'sliding-window', windowMs: 60_000 },
  { algorithm: 'token-bucket', windowMs: 1_000 },
  { algorithm: 'gcra', windowMs: 1_000 },
];

function responseConfig(limiter: Limiter): ResponseConfig {
  return {
    mode: 'enforce',
    headers: createHeaderWriter('draft-11', limiter.policies, undefined),
    problemTypes: PROBLEM_TYPES,
    units: new Map(limiter.policies.map((p) => [p.name, p.unit])),
    problemBody: createProblemBodyWriter(limiter.policies, PROBLEM_TYPES),
  };
}

function view(d: Decision, config: ResponseConfig, now: number) {
  const plan = respond(d, config, () => now);
  return {
    allowed: d.allowed,
    remaining: d.remaining,
    retryAfterMs: d.retryAfterMs,
    resetMs: d.resetMs,
    policy: d.policy,
    headers: plan.headers,
    body: plan.body,
  };
}

function peekView(d: Decision) {
  return { allowed: d.allowed, remaining: d.remaining, retryAfterMs: d.retryAfterMs, resetMs: d.resetMs };
}

describeRedis('RedisStore localBatch in one process', () => {
  let server: RedisServer;
  let client: Redis;

  beforeAll(async () => {
    server = await startRedis();
    client = await server.readyClient({ autoResendUnfulfilledCommands: false });
  });
  afterAll(async () => {
    await server?.close();
  });

  function pair(policies: PolicyOptions | PolicyOptions[], clock: () => number) {
    const plain = new RedisStore({ client, prefix: randomPrefix(), timeSource: 'limiter' });
    const batched = new RedisStore({
      client,
      prefix: randomPrefix(),
      timeSource: 'limiter',
      localBatch: { minRate: 1, holdMs: 1_000, maxShare: 1 },
    });
    const options = { policies, clock, storeTimeoutMs: 60_000, breaker: false } as const;
    return { plain, batched, a: createLimiter({ ...options, store: plain }), b: createLimiter({ ...options, store: batched }) };
  }

  const cases: [string, PolicyOptions[]][] = [
    ...BATCHED.map(({ algorithm, windowMs }): [string, PolicyOptions[]] => [algorithm, [{ name: 'api', algorithm, limit: 100, windowMs }]]),
    // Plans of several policies are batched too: a batch charges every one of them.
    [
      'fixed-window + gcra',
      [
        { name: 'second', algorithm: 'fixed-window', limit: 100, windowMs: 1_000 },
        { name: 'ten', algorithm: 'gcra', limit: 300, windowMs: 10_000 },
      ],
    ],
    [
      'token-bucket + sliding-window',
      [
        { name: 'second', algorithm: 'token-bucket', limit: 100, windowMs: 1_000 },
        { name: 'minute', algorithm: 'sliding-window', limit: 500, windowMs: 60_000 },
      ],
    ],
  ];
  for (const [label, policies] of cases) {
    it(`${label}: batched decisions, headers, bodies and peeks equal the round trip's, with far fewer calls`, async () => {
      let now = BASE;
      const { batched, a, b } = pair(policies, () => now);
      const ca = responseConfig(a);
      const cb = responseConfig(b);
      let admitted = 0;
      for (let i = 0; i < 1_500; i++) {
        now += 1;
        if (i % 7 === 0) {
          // peek: what is left now, the units this process holds counted as not spent (they are not).
          const [pa, pb] = [await a.peek('hot'), await b.peek('hot')];
          expect(peekView(pb), `peek before request ${i} at +${now - BASE} ms`).toEqual(peekView(pa));
        }
        const da = await a.check('hot');
        const db = await b.check('hot');
        expect(view(db, cb, now), `request ${i} at +${now - BASE} ms`).toEqual(view(da, ca, now));
        if (db.allowed) admitted += 1;
      }
      const stats = batched.localBatchStats;
      expect(admitted).toBeGreaterThanOrEqual(100);
      expect(stats?.batched).toBeGreaterThan(0);
      // Rejections answered here until Redis' wait is over, admissions from batches: few calls for 1500 checks.
      expect(stats?.charges).toBeLessThan(500);
    });
  }

  for (const policies of [
    { name: 'log', algorithm: 'sliding-log', limit: 50, windowMs: 1_000 },
    [
      { name: 'fw', algorithm: 'fixed-window', limit: 50, windowMs: 1_000 },
      { name: 'leaky', algorithm: 'leaky-bucket', limit: 50, windowMs: 1_000 },
    ],
  ] as const) {
    it(`${JSON.stringify(policies).slice(0, 60)}: not batched, every check is a round trip`, async () => {
      let now = BASE;
      const { batched, a, b } = pair(policies as PolicyOptions | PolicyOptions[], () => now);
      for (let i = 0; i < 200; i++) {
        now += 1;
        const [da, db] = [await a.check('hot'), await b.check('hot')];
        expect(db.allowed).toBe(da.allowed);
        expect(db.remaining).toBe(da.remaining);
      }
      expect(batched.localBatchStats).toMatchObject({ batched: 0, blocked: 0, charges: 0 });
    });
  }

  it('a reset drops what the process held; close gives the rest back to Redis', async () => {
    let now = BASE;
    const { batched, b } = pair({ name: 'api', algorithm: 'fixed-window', limit: 1_000, windowMs: 60_000 }, () => now);
    for (let i = 0; i < 200; i++) {
      now += 1;
      await b.check('k');
    }
    await b.reset('k');
    now += 1;
    expect((await b.check('k')).remaining).toBe(999);
    for (let i = 0; i < 200; i++) {
      now += 1;
      await b.check('k');
    }
    const [name] = (await client.keys(`${batched.prefix}:*`)).filter((k) => !k.endsWith('~alive')); // the limiter's mark beside the state (budget-restore.ts)
    const before = Number(await client.get(name as string));
    expect(before).toBeGreaterThan(201 * 1000);
    await batched.close();
    expect(Number(await client.get(name as string))).toBe(201 * 1000);
  });

  it('a peek counts as not spent the units of a batch call in flight and of a batch held past 2 x holdMs (it goes back, not spent)', async () => {
    // Inside one 60 s window, clear of its end.
    let now = Math.ceil(BASE / 60_000) * 60_000 + 1_000;
    const { batched, a, b } = pair({ name: 'api', algorithm: 'fixed-window', limit: 100, windowMs: 60_000 }, () => now);
    for (let i = 0; i < 10; i++) {
      await a.check('k');
      await b.check('k');
    }
    now += 60;
    // The 11th check takes a batch (the key's rate times holdMs, at most half of what is left: 45); the peek
    // sent behind it reads Redis with the batch charged. Before: 45 (the batch's units taken for spent).
    const check = b.check('k');
    const during = await b.peek('k');
    expect((await check).allowed).toBe(true);
    await a.check('k');
    expect(batched.localBatchHeld).toBeGreaterThan(10_000);
    // Linearized before or after the check in flight: 90 or 89, never below.
    expect(during.remaining).toBeGreaterThanOrEqual(89);
    // Held past 2 x holdMs: the next check gives the units back, so a peek counts them as Redis will.
    now += 2_001;
    expect(peekView(await b.peek('k'))).toEqual(peekView(await a.peek('k')));
    expect((await b.peek('k')).remaining).toBe(89);
  });

  /** A client that sends through `client`, counting the script calls in flight at once. */
  function countingClient() {
    const seen = { inFlight: 0, most: 0, scripts: 0 };
    return {
      seen,
      client: {
        sendCommand: async (args: string[]) => {
          const script = args[0] === 'EVALSHA' || args[0] === 'EVAL';
          if (script) {
            seen.scripts += 1;
            seen.inFlight += 1;
            seen.most = Math.max(seen.most, seen.inFlight);
          }
          try {
            return await client.call(args[0] as string, ...args.slice(1));
          } finally {
            if (script) seen.inFlight -= 1;
          }
        },
      },
    };
  }

  /** A batching store on a counting client (`maxShare` as given) and a limiter of `policy` on it. */
  function counted(maxShare: number, policy: PolicyOptions, clock: () => number) {
    const { seen, client: counting } = countingClient();
    const store = new RedisStore({
      client: counting,
      prefix: randomPrefix(),
      timeSource: 'limiter',
      localBatch: { minRate: 1, holdMs: 1_000, maxShare },
    });
    const limiter = createLimiter({ policies: policy, store, clock, storeTimeoutMs: 60_000, breaker: false });
    return { seen, store, limiter };
  }

  it('checks sized to themselves (no batch) go to Redis at once, side by side, not one after another', async () => {
    let now = BASE;
    // maxShare so small that every batch is one request: each check is the round trip.
    const { seen, store, limiter } = counted(1e-9, { algorithm: 'gcra', limit: 1e6, windowMs: 1_000 }, () => now);
    for (let i = 0; i < 50; i++) {
      now += 1;
      await limiter.check('k');
    }
    seen.most = 0;
    const ds = await Promise.all(Array.from({ length: 8 }, () => limiter.check('k')));
    expect(ds.every((d) => d.allowed)).toBe(true);
    expect(seen.most).toBe(8);
    expect(store.localBatchStats?.batched).toBe(0);
    await store.close();
  });

  it('one fixed-window policy: a rejection Redis gave answers every cost the window cannot take until it ends', async () => {
    let now = BASE;
    const { seen, store, limiter } = counted(1, { algorithm: 'fixed-window', limit: 100, windowMs: 60_000 }, () => now);
    let admitted = 0;
    for (let i = 0; i < 300 && seen.scripts < 1_000; i++) {
      now += 1;
      if ((await limiter.check('k', { cost: 1 + (i % 3) })).allowed) admitted += 1;
    }
    const calls = seen.scripts;
    const answers: Decision[] = [];
    for (const cost of [1, 7, 30, 2, 100, 3]) answers.push(await limiter.check('k', { cost }));
    expect(answers.every((d) => !d.allowed && d.reason === 'limited')).toBe(true);
    expect(seen.scripts).toBe(calls);
    // A cost above the limit is answered as such (by Redis: never held as a plain refusal).
    expect((await limiter.check('k', { cost: 101 })).reason).toBe('cost-exceeds-capacity');
    expect(admitted).toBeGreaterThan(30);
    await store.close();
  });

  it('a refund of a charge Redis made lifts the rejection held in process: the next check spends it, as a peek says (before: refused until the window ended)', async () => {
    let now = BASE;
    // Batches of one request: every admission is Redis's own charge, with a receipt a refund takes.
    const { store, limiter } = counted(1e-9, { algorithm: 'fixed-window', limit: 100, windowMs: 3_600_000 }, () => now);
    const charged: Decision[] = [];
    for (let i = 0; i < 200; i++) {
      now += 1;
      const d = await limiter.check('k');
      if (d.allowed && d.receipt !== undefined) charged.push(d);
    }
    const refused = await limiter.check('k');
    expect(refused.allowed).toBe(false);
    let back = 0;
    for (const d of charged) {
      if (back === 5) break;
      if ((await limiter.refund(d)).refunded) back += 1;
    }
    expect(back).toBe(5);
    expect((await limiter.peek('k')).remaining).toBe(5);
    const after = await limiter.check('k');
    expect(after).toMatchObject({ allowed: true, remaining: 4 });
    await store.close();
  });

  it('a rejection is answered in memory for a second at most, then one check asks Redis: a FLUSHALL meanwhile is found and charged again (before: unseen until the window ended)', async () => {
    let now = BASE;
    // A client whose connection tollgate watches (the counting one is not): the mark can tell a loss.
    const store = new RedisStore({
      client: await server.storeClient('ioredis'),
      prefix: randomPrefix(),
      timeSource: 'limiter',
      localBatch: { minRate: 1, holdMs: 1_000, maxShare: 0.1 },
    });
    const warnings: unknown[] = [];
    const limiter = createLimiter({
      policies: { algorithm: 'fixed-window', limit: 100, windowMs: 3_600_000 },
      store,
      clock: () => now,
      storeTimeoutMs: 60_000,
      breaker: false,
      logger: { warn: (o: unknown) => void warnings.push(o), error() {} },
    });
    let admitted = 0;
    for (let i = 0; i < 300; i++) {
      now += 1;
      if ((await limiter.check('k')).allowed) admitted += 1;
    }
    expect(admitted).toBe(100);
    await client.flushall();
    const blocked = store.localBatchStats?.blocked ?? 0;
    // Within a second of the rejection a check goes to Redis: its answer cannot follow the one this
    // process remembers, the mark is gone, and the key is charged again what it had used.
    for (let i = 0; i < 120; i++) {
      now += 10;
      if ((await limiter.check('k')).allowed) admitted += 1;
    }
    await waitFor('the restore', () => warnings.length > 0, 3_000);
    expect(warnings).toEqual([expect.objectContaining({ code: 'WRN_RL_BUDGETS_RESTORED' })]);
    // Most of the 120 checks were answered in memory (the rejection, then the exhausted key's again).
    expect((store.localBatchStats?.blocked ?? 0) - blocked).toBeGreaterThan(90);
    for (let i = 0; i < 20; i++) {
      now += 1;
      if ((await limiter.check('k')).allowed) admitted += 1;
    }
    // The answer that found the loss came from a batch on the emptied key: at most that batch (maxShare) is spent.
    expect(admitted).toBeLessThanOrEqual(110);
    await limiter.close();
    await store.close();
  });

  it('a process never holds more than maxShare of a limit, prefetching while a batch is still in hand', async () => {
    const store = new RedisStore({ client, prefix: randomPrefix(), localBatch: { minRate: 1, holdMs: 1_000, maxShare: 0.1 } });
    const limiter = createLimiter({
      policies: { algorithm: 'fixed-window', limit: 100_000, windowMs: 60_000 },
      store,
      storeTimeoutMs: 60_000,
    });
    let most = 0;
    const until = Date.now() + 1_500;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (Date.now() < until) {
          await limiter.check('hot');
          most = Math.max(most, store.localBatchHeld);
        }
      }),
    );
    // Milli-units: a tenth of 100,000 units.
    expect(most).toBeGreaterThan(1_000_000);
    expect(most).toBeLessThanOrEqual(10_000_000);
    await store.close();
  });

  it('past maxKeys, the key least recently seen is dropped, not the one tracked first', async () => {
    let now = BASE;
    const store = new RedisStore({
      client,
      prefix: randomPrefix(),
      timeSource: 'limiter',
      localBatch: { minRate: 1, holdMs: 1_000, maxShare: 1, maxKeys: 2 },
    });
    const limiter = createLimiter({
      policies: { name: 'api', algorithm: 'fixed-window', limit: 10_000, windowMs: 60_000 },
      store,
      clock: () => now,
      storeTimeoutMs: 60_000,
      breaker: false,
    });
    // 'hot' is tracked first and holds a batch; 'once' comes after it and is not seen again.
    for (let i = 0; i < 200; i++) {
      now += 1;
      await limiter.check('hot');
    }
    now += 1;
    await limiter.check('once');
    now += 1;
    await limiter.check('hot');
    const held = store.localBatchHeld;
    expect(held).toBeGreaterThan(0);
    // A third key: 'once' goes; 'hot' (seen since) keeps its batch.
    now += 1;
    await limiter.check('new');
    expect(store.localBatchHeld).toBe(held);
    expect(store.localBatchStats?.givenBackMilli).toBe(0);
    // Then 'hot' is the one not seen since it was passed over: the next key pushes it out, its units given back.
    now += 1;
    await limiter.check('new');
    now += 1;
    await limiter.check('newer');
    await new Promise((r) => setTimeout(r, 20));
    expect(store.localBatchHeld).toBe(0);
    expect(store.localBatchStats?.givenBackMilli).toBe(held);
    await store.close();
  });

  it('a reset while a batch call is in flight: its units went with the deleted state, never spent on the fresh one', async () => {
    let now = BASE;
    const limit = 1_000;
    const { batched, b } = pair({ name: 'api', algorithm: 'fixed-window', limit, windowMs: 60_000 }, () => now);
    // Warm the key up until batches are taken; then reset right after a check sent a charge (a batch, or
    // a prefetch of the next one) and before its reply came.
    let reset = false;
    for (let i = 0; i < 600 && !reset; i++) {
      now += 1;
      const charges = batched.localBatchStats?.charges ?? 0;
      const check = b.check('k');
      if (i > 100 && (batched.localBatchStats?.charges ?? 0) > charges) {
        await b.reset('k');
        reset = true;
      }
      await check;
    }
    expect(reset).toBe(true);
    let after = 0;
    for (let i = 0; i < 2 * limit; i++) {
      now += 1;
      if ((await b.check('k')).allowed) after += 1;
    }
    // The checks after the reset get at most the limit (the in-flight batch, charged on the old state,
    // would add its units on top: about 1.4x in a probe).
    expect(after).toBeLessThanOrEqual(limit);
  });

  it('hotKeys().busy ranks the hot key by decisions with its share of store calls, which batching brings down; the store-call rate is a metric', async () => {
    const registry = new Registry();
    const unregister = registerPrometheusMetrics({ registry });
    try {
      const share = async (localBatch: boolean) => {
        let now = BASE;
        const store = new RedisStore({
          client,
          prefix: randomPrefix(),
          timeSource: 'limiter',
          localBatch: localBatch && { minRate: 1, holdMs: 1_000 },
        });
        const limiter = createLimiter({
          policies: { name: 'api', algorithm: 'fixed-window', limit: 100_000, windowMs: 60_000 },
          store,
          clock: () => now,
          hotKeys: true,
        });
        for (let i = 0; i < 600; i++) {
          now += 1;
          await limiter.check('tenant:big');
          if (i % 3 === 0) await limiter.check(`user:${i}`);
        }
        const report = limiter.hotKeys(1);
        expect(report.busy[0]?.key).toBe('tenant:big');
        expect(report.busy[0]?.decisions).toBe(600);
        return { share: report.busy[0]?.storeShare ?? Number.NaN, calls: report.storeCalls };
      };
      const before = await share(false);
      const after = await share(true);
      // Without batching the big tenant causes 3 in 4 store calls; with it, a few of its 600 decisions do.
      expect(before.share).toBeCloseTo(600 / 800, 2);
      expect(after.share).toBeLessThan(before.share / 2);
      expect(after.calls).toBeLessThan(before.calls / 2);
      const text = await registry.metrics();
      const calls = Number(/^tollgate_store_calls_total\{store="redis"\} (\d+)$/m.exec(text)?.[1]);
      expect(calls).toBeGreaterThanOrEqual(before.calls + after.calls);
      expect(calls).toBeLessThan(before.calls + after.calls + 100);
    } finally {
      unregister();
    }
  });
});
