/**
 * @module State that heals: a limiter key holding what the script never writes (text, a negative or huge
 * number, a fraction, a time years ahead, a hash or a list, a key without expiry) is read as never seen,
 * deleted and reported: the request gets a fresh key's answer, never an error and never a negative wait;
 * the key heals at once (every key the script writes has a TTL); `onStateRepaired` hears of every repair
 * and `WRN_RL_CORRUPT_STATE` is logged once per store; other keys keep their exact limits.
 */
import {
  type AlgorithmId,
  createLimiter,
  type LogFields,
  type PolicyOptions,
  RedisStore,
  type RepairedState,
  type Store,
  type StorePlan,
} from '@tollgate/core';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeRedis, type RedisServer, randomPrefix, startRedis } from './harness.js';

const ALGORITHMS: readonly AlgorithmId[] = ['fixed-window', 'sliding-window', 'token-bucket', 'gcra', 'leaky-bucket', 'sliding-log'];
/** Windows of a day: clock-aligned ones (fixed window) restart at their boundary, and a minute's would now and then fall inside a test. */
const DAY = 86_400_000;
const TEN_YEARS = 10 * 365 * 86_400_000;

/** Ways to corrupt a key, each written by the test's own ioredis connection. */
const CORRUPTIONS: Record<string, (admin: Redis, key: string) => Promise<unknown>> = {
  text: (a, k) => a.set(k, 'not a number', 'PX', 600_000),
  negative: (a, k) => a.set(k, '-5', 'PX', 600_000),
  huge: (a, k) => a.set(k, '1e30', 'PX', 600_000),
  fraction: (a, k) => a.set(k, '2.5', 'PX', 600_000),
  'pair of text': (a, k) => a.set(k, 'x:y', 'PX', 600_000),
  'time years ahead': async (a, k) => {
    const [s] = await a.time();
    const ahead = Number(s) * 1000 + TEN_YEARS;
    return a.set(k, String(ahead), 'PXAT', ahead);
  },
  'no expiry': (a, k) => a.set(k, '1000'),
  hash: (a, k) => a.hset(k, 'tokens', '5', 'ts', '1'),
  list: (a, k) => a.rpush(k, '1', '2'),
  'zset of text': (a, k) => a.zadd(k, 1, 'b', 2, 'junk'),
  'zset years ahead': async (a, k) => {
    const [s] = await a.time();
    return a.zadd(k, 0, 'b', 1000, String(Number(s) * 1000 + TEN_YEARS));
  },
};

describeRedis('RedisStore heals corrupt state', () => {
  let server: RedisServer;
  let admin: Redis;

  beforeAll(async () => {
    server = await startRedis();
    admin = await server.readyClient();
  });
  afterAll(async () => {
    await server.close();
  });

  async function setup(policies: PolicyOptions[]) {
    const warnings: LogFields[] = [];
    const repairs: RepairedState[] = [];
    const client = await server.readyClient({ autoResendUnfulfilledCommands: false });
    const store = new RedisStore({
      client,
      prefix: randomPrefix(),
      logger: { warn: (fields: LogFields) => warnings.push(fields), error: () => undefined },
      onStateRepaired: (event) => repairs.push(event),
    });
    let plan: StorePlan | undefined;
    const spy: Store = {
      kind: 'redis',
      apply: (key, p, cost, now) => {
        plan = p;
        return store.apply(key, p, cost, now);
      },
      reset: (key, p) => store.reset(key, p),
    };
    const limiter = createLimiter({ policies, store: spy, storeTimeoutMs: 5000, logger: { warn() {}, error() {} } });
    return { limiter, store, warnings, repairs, plan: () => plan as StorePlan };
  }

  for (const algorithm of ALGORITHMS) {
    it(`${algorithm}: every corruption reads as a key never seen, heals, and is reported`, async () => {
      const { limiter, store, warnings, repairs, plan } = await setup([{ name: 'p', algorithm, limit: 3, windowMs: DAY }]);
      await limiter.check('warm-up');
      let n = 0;
      for (const [what, corrupt] of Object.entries(CORRUPTIONS)) {
        const key = `bad:${what}`;
        const [name] = store.keyNames(key, plan()) as [string];
        await corrupt(admin, name);
        const sent = performance.now();
        const d = await limiter.check(key);
        const fresh = await limiter.check(`fresh:${what}`);
        const between = performance.now() - sent;
        expect(d, what).toMatchObject({ allowed: true, degraded: false, retryAfterMs: 0 });
        // Whole units: a token bucket refills a little between two checks.
        expect(Math.floor(d.remaining), what).toBe(Math.floor(fresh.remaining));
        // Reset times of clock-aligned windows move on with the clock between the two checks (Redis' clock, in whole ms).
        expect(Math.abs(d.resetMs - fresh.resetMs), what).toBeLessThanOrEqual(between + 2);
        n += 1;
        expect(repairs, what).toHaveLength(n);
        expect(repairs[n - 1], what).toEqual({ key, policy: 'p', keyName: name });
        // Healed: the key now holds the script's own state, with an expiry, and counts on exactly.
        expect(await admin.pexpiretime(name), what).toBeGreaterThan(0);
        const again = await limiter.check(key);
        expect(again.allowed, what).toBe(true);
        expect(Math.floor(again.remaining), what).toBe(Math.floor(fresh.remaining) - 1);
        expect(repairs, what).toHaveLength(n);
      }
      // One warning per store, with the key in the fields (never in the message).
      expect(warnings.map((w) => w.code)).toEqual(['WRN_RL_CORRUPT_STATE']);
      expect(warnings[0]).toMatchObject({ key: 'bad:text', policy: 'p' });
    });
  }

  it('a corrupt key that is rejected anyway (a cost no policy can hold) is still deleted, never left without TTL', async () => {
    const { limiter, store, repairs, plan } = await setup([{ name: 'p', limit: 3, windowMs: 60_000 }]);
    await limiter.check('warm-up');
    const [name] = store.keyNames('k', plan()) as [string];
    await admin.set(name, 'garbage');
    const d = await limiter.check('k', { cost: 10 });
    expect(d.allowed).toBe(false);
    expect(d.retryAfterMs).toBeGreaterThanOrEqual(0);
    expect(await admin.exists(name)).toBe(0);
    expect(repairs).toHaveLength(1);
  });

  it('in a multi-policy plan, only the corrupt policy is repaired; the others keep their exact counts', async () => {
    const { limiter, store, repairs, plan } = await setup([
      { name: 'a', algorithm: 'fixed-window', limit: 5, windowMs: DAY },
      { name: 'b', algorithm: 'gcra', limit: 5, windowMs: 60_000 },
      { name: 'c', algorithm: 'sliding-log', limit: 5, windowMs: 60_000 },
    ]);
    for (let i = 0; i < 3; i++) await limiter.check('k');
    const names = store.keyNames('k', plan());
    await admin.set(names[1] as string, '1e30');
    const d = await limiter.check('k');
    expect(d.allowed).toBe(true);
    expect(d.policies.map((p) => [p.name, p.remaining])).toEqual([
      ['a', 1],
      ['b', 4],
      ['c', 1],
    ]);
    expect(repairs.map((r) => r.policy)).toEqual(['b']);
    // A neighbour on the same store never noticed.
    for (let i = 0; i < 5; i++) expect((await limiter.check('neighbour')).allowed).toBe(true);
    expect((await limiter.check('neighbour')).allowed).toBe(false);
  });
});
