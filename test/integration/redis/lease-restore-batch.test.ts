/**
 * @module Many held leases go back after an empty restart in a few script calls, not one per lease. The
 * over-limit window after a restart lasts until the holder's leases are back (lease-restore.test.ts): put
 * back one EVALSHA at a time, each meeting NOSCRIPT first on the fresh server, 3,000 leases took 250-360 ms
 * (6,000 EVALSHA), and a second process was granted 777-886 of the keys they held meanwhile. On a Cluster
 * the leases go per slot (a script's keys must share one), each master getting its own.
 */
import { createLimiter, type Decision, type Limiter, RedisStore, type RedisStoreClient } from '@tollgate/core';
import type { Redis } from 'ioredis';
import { beforeAll, expect, it } from 'vitest';
import { type ClientKind, commandCalls, describeRedis, randomPrefix, startCluster, suiteRedis, waitFor } from './harness.js';

/** Leases held, one per key: limit 1 per key, as a per-user export slot. */
const HELD = 3_000;
/** The most script calls the put-back of HELD leases may take (before: 2 * HELD, half of them NOSCRIPT). */
const MOST_CALLS = 40;

/** The limiter of one process; `warnings` gets what its logger warns. */
/** A warning the limiter logged (its fields), and when (performance.now). */
type Warned = { readonly code?: unknown; readonly at: number } & Record<string, unknown>;

function limiterOn(client: RedisStoreClient, prefix: string, warnings: Warned[]): Limiter {
  return createLimiter({
    name: 'exports',
    policies: { name: 'exports', algorithm: 'concurrency', limit: 1, leaseMs: 30_000 },
    store: new RedisStore({ client, prefix, validate: false }),
    storeTimeoutMs: 2_000,
    onStoreError: 'closed',
    logger: { warn: (f: object) => void warnings.push({ ...f, at: performance.now() }), error() {} },
  });
}

/** Takes a lease of each of keys `k0 .. k<n-1>` (every one granted), 500 at a time. */
async function takeEach(limiter: Limiter, n: number): Promise<Decision[]> {
  const held: Decision[] = [];
  for (let i = 0; i < n; i += 500) {
    held.push(...(await Promise.all(Array.from({ length: Math.min(500, n - i) }, (_, j) => limiter.check(`k${i + j}`)))));
  }
  expect(held.every((d) => d.allowed && !d.degraded)).toBe(true);
  return held;
}

/** The leases `node` holds under `prefix`, summed in one script (not one ZCARD round trip per key). */
async function inRedis(node: Redis, prefix: string): Promise<number> {
  const sum = "local n = 0 for _, k in ipairs(redis.call('KEYS', ARGV[1])) do n = n + redis.call('ZCARD', k) end return n";
  return Number(await node.eval(sum, 0, `${prefix}*`));
}

/** Script calls `node` ran since its start (or CONFIG RESETSTAT): EVALSHA and EVAL. */
async function scriptCalls(node: Redis): Promise<number> {
  const calls = await commandCalls(node);
  return (calls['evalsha'] ?? 0) + (calls['eval'] ?? 0);
}

describeRedis('many held leases go back in a few script calls', () => {
  const redis = suiteRedis();
  let admin: Redis;
  beforeAll(async () => {
    admin = await redis().readyClient();
  });

  for (const kind of ['ioredis', 'node-redis'] as const satisfies readonly ClientKind[]) {
    it(`${kind}: ${HELD} leases are back after an empty restart in at most ${MOST_CALLS} script calls, before any new lease`, async () => {
      const prefix = randomPrefix();
      const client = await redis().storeClient(kind);
      const warnings: Warned[] = [];
      const limiter = limiterOn(client, prefix, warnings);
      const held = await takeEach(limiter, HELD);
      let readyAt = 0;
      (client as unknown as NodeJS.EventEmitter).once('ready', () => {
        readyAt = performance.now();
      });
      await redis().stop();
      await redis().start();
      await waitFor('the store client ready again', () => readyAt > 0);
      await waitFor('the leases back', () => warnings.some((w) => w.code === 'WRN_RL_LEASES_RESTORED'), 5_000);
      const told = warnings.find((w) => w.code === 'WRN_RL_LEASES_RESTORED');
      const tookMs = (told?.at as number) - readyAt;
      expect(told).toMatchObject({ restored: HELD, held: HELD });
      const calls = await scriptCalls(admin);
      console.log(`${kind}: ${HELD} leases put back ${tookMs.toFixed(0)} ms after 'ready', in ${calls} script calls`);
      // Before: 6,000 (one EVALSHA per lease, and each again after its NOSCRIPT).
      expect(calls).toBeLessThanOrEqual(MOST_CALLS);
      expect(await inRedis(admin, prefix)).toBe(HELD);
      // Each key's one slot is taken by the lease still held: a new one is refused by Redis itself.
      const again = await limiter.check(`k${HELD - 1}`);
      expect([again.allowed, again.degraded]).toEqual([false, false]);
      // They still end: released in Redis too.
      for (const d of held) d.release?.();
      await waitFor('the leases released', async () => (await inRedis(admin, prefix)) === 0);
      limiter.close();
    });
  }

  it('a lease released while its batch is on its way is not put back: the release goes after the batch', async () => {
    const prefix = randomPrefix();
    const client = await redis().storeClient('ioredis');
    const limiter = limiterOn(client, prefix, []);
    const held = await takeEach(limiter, 1_000);
    // Half the requests end right after the first batch is sent, before Redis answers it.
    const ioredis = client as unknown as { evalsha(...args: unknown[]): Promise<unknown> };
    const evalsha = ioredis.evalsha.bind(ioredis);
    let ended = false;
    ioredis.evalsha = (...args: unknown[]) => {
      const reply = evalsha(...args);
      if (!ended && Number(args[1]) > 1) {
        ended = true;
        // Once the put-back is sent (the app's code never runs inside it), before any reply is read.
        queueMicrotask(() => {
          for (const d of held.slice(500)) d.release?.();
        });
      }
      return reply;
    };
    // Lost while connected (a failover to an empty replica): the next renewal finds it and puts all back.
    await admin.flushall();
    held[0]?.renew?.();
    await waitFor('the leases still held back, the ended ones not', async () => (await inRedis(admin, prefix)) === 500);
    await new Promise((r) => setTimeout(r, 50));
    expect(ended).toBe(true);
    expect(await inRedis(admin, prefix)).toBe(500);
    expect((await limiter.check('k0')).allowed).toBe(false);
    expect((await limiter.check('k999')).allowed).toBe(true);
    for (const d of held) d.release?.();
    limiter.close();
  });

  it('only the leases Redis lost count as put back: the batch tells a live lease from a lost one', async () => {
    const prefix = randomPrefix();
    const warnings: Warned[] = [];
    const limiter = limiterOn(await redis().storeClient('ioredis'), prefix, warnings);
    const held = await takeEach(limiter, 1_000);
    // k0 .. k299 lost while connected (an eviction, a failover to a replica that had not seen them).
    const lost = (await admin.keys(`${prefix}*`)).filter((k) => Number(/\{k(\d+)\}/.exec(k)?.[1]) < 300);
    expect(lost).toHaveLength(300);
    await admin.del(...lost);
    // k0's renewal finds it gone and puts it back itself; the others go back in the batches that follow.
    held[0]?.renew?.();
    await waitFor('the leases back', () => warnings.some((w) => w.code === 'WRN_RL_LEASES_RESTORED'));
    expect(warnings.find((w) => w.code === 'WRN_RL_LEASES_RESTORED')).toMatchObject({ restored: 300, held: 1_000 });
    expect(await inRedis(admin, prefix)).toBe(1_000);
    for (const d of held) d.release?.();
    limiter.close();
  });
});

describeRedis('many held leases go back per Cluster slot', () => {
  it('Cluster (3 masters): 1,000 leases over every master go back, one batch per slot at most, none refused as CROSSSLOT', async () => {
    const cluster = await startCluster(3);
    try {
      const prefix = randomPrefix();
      const warnings: unknown[] = [];
      const errors: unknown[] = [];
      const limiter = createLimiter({
        name: 'exports',
        policies: { name: 'exports', algorithm: 'concurrency', limit: 1, leaseMs: 30_000 },
        store: new RedisStore({ client: await cluster.storeClient('ioredis'), prefix, validate: false }),
        storeTimeoutMs: 2_000,
        onStoreError: 'closed',
        logger: { warn: (f: unknown) => void warnings.push(f), error: (f: unknown) => void errors.push(f) },
      });
      const held = await takeEach(limiter, 1_000);
      const masters = cluster.masters.map((m) => cluster.node(m));
      const count = async () => (await Promise.all(masters.map((m) => inRedis(m, prefix)))).reduce((a, b) => a + b, 0);
      // Every master loses its keys and its scripts (a restart without persistence, which a Cluster client does not report).
      for (const m of masters) {
        await m.flushall();
        await m.script('FLUSH');
        await m.config('RESETSTAT');
      }
      held[0]?.renew?.();
      await waitFor('every lease back', async () => (await count()) === 1_000);
      const calls = (await Promise.all(masters.map(scriptCalls))).reduce((a, b) => a + b, 0);
      console.log(`Cluster: 1,000 leases on 3 masters put back in ${calls} script calls`);
      // 1,000 keys lie in ~970 slots, a call each, the script loaded first on each master; before: 1,679
      // calls (a restore per lease, those sent before the master's SCRIPT LOAD sent twice).
      expect(calls).toBeLessThanOrEqual(1_050);
      expect(errors).toEqual([]);
      expect(warnings).toContainEqual(expect.objectContaining({ code: 'WRN_RL_LEASES_RESTORED', restored: 1_000, held: 1_000 }));
      expect((await limiter.check('k7')).allowed).toBe(false);
      for (const d of held) d.release?.();
      await waitFor('the leases released', async () => (await count()) === 0);
      limiter.close();
    } finally {
      await cluster.close();
    }
  });
});
