/**
 * @module Several keys in one decision on a real Redis Cluster, keys in different slots: the reserve /
 * confirm / give-back protocol (stores/redis/cluster-split.ts).
 * - Sequential traces decide exactly as the memory store (one atomic step), for every algorithm: a
 *   reservation given back leaves the state as if never charged.
 * - Under concurrency, no policy ever admits more than its limit, and once the burst is over every
 *   reservation of a refused request has been given back (the remaining is exactly limit - admitted).
 * - Refunds of a multi-slot charge reach every slot.
 * It prints the measured cost of a refused split decision (reserve + give back), the over-rejection window.
 */
import { type AlgorithmId, createLimiter, type Decision, MemoryStore, type PolicyOptions, RedisStore } from '@tollgate/core';
import fc from 'fast-check';
import type { Cluster } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { keySlot } from '../../../packages/core/src/stores/redis/cluster-slot.js';
import { describeRedis, type RedisClusterHarness, randomPrefix, startCluster } from './harness.js';

const ALGORITHMS: readonly AlgorithmId[] = ['fixed-window', 'sliding-window', 'token-bucket', 'gcra', 'leaky-bucket', 'sliding-log'];
const BASE = Date.now() + 10 * 365 * 86_400_000;
const quiet = { warn: () => undefined, error: () => undefined };

/** What policy `i` has left now, from a peek. */
function level(d: Decision, i: number): number {
  return d.policies[i]?.remaining ?? Number.NaN;
}

describeRedis('several keys, one decision, on Redis Cluster (keys in different slots)', () => {
  let cluster: RedisClusterHarness;
  let client: Cluster;

  beforeAll(async () => {
    cluster = await startCluster(3);
    client = await cluster.readyClient({ redisOptions: { maxRetriesPerRequest: 1 } });
  }, 60_000);
  afterAll(async () => {
    await cluster?.close();
  });

  it('the keys used here live in different slots', () => {
    const prefix = 'p';
    const slots = new Set(['ip:1', 'acct:a', 'acct:b', 'tenant:t'].map((k) => keySlot(`${prefix}:{${k}}:x`)));
    expect(slots.size).toBeGreaterThan(1);
  });

  function pair(policies: readonly PolicyOptions[]) {
    let now = BASE;
    const common = { policies, clock: () => now, storeTimeoutMs: 10_000, breaker: false as const, logger: quiet };
    const memory = createLimiter({ ...common, store: new MemoryStore({ sweepIntervalMs: 0 }) });
    const redis = createLimiter({ ...common, store: new RedisStore({ client, prefix: randomPrefix(), timeSource: 'limiter' }) });
    return {
      memory,
      redis,
      advance(ms: number) {
        now += ms;
      },
    };
  }

  const view = (d: Decision) => [
    d.allowed,
    d.reason,
    d.policy,
    d.remaining,
    d.retryAfterMs,
    d.policies.map((p) => [p.allowed, p.remaining]),
  ];

  it('decides sequential traces exactly as one atomic step would (memory), every algorithm', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...ALGORITHMS),
        fc.constantFrom(...ALGORITHMS),
        fc.array(
          fc.record({
            dt: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 700 })),
            ip: fc.constantFrom('ip:1', 'ip:2'),
            account: fc.constantFrom('acct:a', 'acct:b', 'tenant:t'),
            cost: fc.constantFrom(1, 1, 2, 0.5),
            refund: fc.boolean(),
          }),
          { maxLength: 25 },
        ),
        async (a1, a2, steps) => {
          const { memory, redis, advance } = pair([
            { name: 'per-ip', algorithm: a1, limit: 3, windowMs: 1000 },
            { name: 'per-account', algorithm: a2, limit: 2, windowMs: 1000 },
          ]);
          for (const s of steps) {
            advance(s.dt);
            const keys = { 'per-ip': s.ip, 'per-account': s.account };
            const m = await memory.check(keys, { cost: s.cost });
            const r = await redis.check(keys, { cost: s.cost });
            expect(view(r)).toEqual(view(m));
            if (s.refund) {
              const rm = await memory.refund(m);
              const rr = await redis.refund(r);
              expect(rr).toEqual(rm);
            }
          }
        },
      ),
      { numRuns: 40 },
    );
  }, 120_000);

  it('never admits more than a policy allows under concurrency, and gives every reservation back', async () => {
    const store = new RedisStore({ client, prefix: randomPrefix() });
    const limiter = createLimiter({
      policies: [
        { name: 'per-ip', algorithm: 'fixed-window', limit: 10, windowMs: 86_400_000 },
        { name: 'per-account', algorithm: 'sliding-log', limit: 3, windowMs: 600_000 },
      ],
      store,
      storeTimeoutMs: 10_000,
      breaker: false,
      logger: quiet,
    });
    const accounts = ['acct:a', 'acct:b', 'acct:c', 'acct:d', 'acct:e'];
    const decisions = await Promise.all(
      Array.from({ length: 200 }, (_, i) => limiter.check({ 'per-ip': 'ip:1', 'per-account': accounts[i % accounts.length] as string })),
    );
    const admitted = decisions.filter((d) => d.allowed);
    expect(admitted.length).toBeLessThanOrEqual(10);
    for (const a of accounts) {
      const mine = admitted.filter((d) => d.key.endsWith(encodeURIComponent(a)));
      expect(mine.length).toBeLessThanOrEqual(3);
    }
    // Every refused request's reservation was given back: what is left is exactly what was admitted.
    const ipLeft = await limiter.peek({ 'per-ip': 'ip:1', 'per-account': 'acct:z' }, { cost: 0.001 });
    expect(level(ipLeft, 0)).toBe(10 - admitted.length);
    for (const a of accounts) {
      const left = await limiter.peek({ 'per-ip': 'ip:none', 'per-account': a }, { cost: 0.001 });
      const used = admitted.filter((d) => d.key.endsWith(encodeURIComponent(a))).length;
      expect(level(left, 1)).toBe(3 - used);
    }
    // Sequentially the budget is used to the last unit: refusals under the burst were over-rejections only.
    let more = 0;
    for (let i = 0; i < 20; i++) {
      if ((await limiter.check({ 'per-ip': 'ip:1', 'per-account': `acct:n${i}` })).allowed) more += 1;
    }
    expect(admitted.length + more).toBe(10);
  }, 60_000);

  it('concurrency policies on keys in different slots: leases reserved per slot, a refused request’s lease released', async () => {
    const store = new RedisStore({ client, prefix: randomPrefix() });
    const limiter = createLimiter({
      policies: [
        { name: 'per-tenant', algorithm: 'concurrency', limit: 4, leaseMs: 60_000 },
        { name: 'per-account', algorithm: 'concurrency', limit: 1, leaseMs: 60_000 },
        { name: 'per-ip', algorithm: 'fixed-window', limit: 100, windowMs: 86_400_000 },
      ],
      store,
      storeTimeoutMs: 10_000,
      breaker: false,
      logger: quiet,
    });
    const accounts = ['acct:a', 'acct:b', 'acct:c', 'acct:d', 'acct:e', 'acct:f'];
    const keys = (a: string) => ({ 'per-tenant': 'tenant:t', 'per-account': a, 'per-ip': 'ip:1' });
    const decisions = await Promise.all(Array.from({ length: 60 }, (_, i) => limiter.check(keys(accounts[i % accounts.length] as string))));
    const admitted = decisions.filter((d) => d.allowed);
    expect(admitted.length).toBeGreaterThan(0);
    expect(admitted.length).toBeLessThanOrEqual(4);
    for (const a of accounts) expect(admitted.filter((d) => d.key.includes(encodeURIComponent(a))).length).toBeLessThanOrEqual(1);
    // Refused requests gave back what they reserved: the leases held are exactly the admitted ones.
    const tenant = await limiter.peek(keys('acct:z'));
    expect(tenant.policies[0]?.remaining).toBe(4 - admitted.length);
    for (const d of admitted) d.release?.();
    // Releases reach every slot: then every account and the tenant are free again.
    let freed = false;
    for (let i = 0; i < 50 && !freed; i++) {
      await new Promise((r) => setTimeout(r, 20));
      freed = (await limiter.peek(keys('acct:a'))).allowed;
    }
    expect(freed).toBe(true);
    // The rate policy was charged for the admitted requests only.
    expect(level(await limiter.peek(keys('acct:z'), { cost: 0.001 }), 2)).toBe(100 - admitted.length);
    const again = [];
    for (const a of accounts.slice(0, 4)) again.push(await limiter.check(keys(a)));
    expect(again.map((d) => d.allowed)).toEqual([true, true, true, true]);
    expect((await limiter.check(keys('acct:e'))).policy).toBe('per-tenant');
  }, 60_000);

  it('refunds a multi-slot charge in every slot, and measures the give-back window', async () => {
    const store = new RedisStore({ client, prefix: randomPrefix() });
    const limiter = createLimiter({
      policies: [
        { name: 'per-ip', algorithm: 'gcra', limit: 2, windowMs: 600_000 },
        { name: 'per-account', algorithm: 'fixed-window', limit: 1, windowMs: 86_400_000 },
      ],
      store,
      storeTimeoutMs: 10_000,
      breaker: false,
      logger: quiet,
    });
    const d = await limiter.check({ 'per-ip': 'ip:9', 'per-account': 'acct:9' });
    expect(d.allowed).toBe(true);
    expect(await limiter.refund(d)).toEqual({ refunded: true, policies: ['per-ip', 'per-account'] });
    expect((await limiter.peek({ 'per-ip': 'ip:9', 'per-account': 'acct:9' })).policies.map((p) => p.remaining)).toEqual([2, 1]);
    // A refused split decision: per-account is out, per-ip reserves and gives back. Time it.
    await limiter.check({ 'per-ip': 'ip:9', 'per-account': 'acct:9' });
    const times: number[] = [];
    for (let i = 0; i < 50; i++) {
      const t = process.hrtime.bigint();
      const r = await limiter.check({ 'per-ip': `ip:t${i}`, 'per-account': 'acct:9' });
      times.push(Number(process.hrtime.bigint() - t) / 1e6);
      expect(r.allowed).toBe(false);
    }
    times.sort((a, b) => a - b);
    console.info(
      `cluster split, refused decision (reserve + give back): median ${times[25]?.toFixed(2)} ms, p95 ${times[47]?.toFixed(2)} ms`,
    );
    // Every per-ip reservation was given back.
    const left = await limiter.peek({ 'per-ip': 'ip:t0', 'per-account': 'acct:x' });
    expect(left.policies[0]?.remaining).toBe(2);
  }, 60_000);
});
