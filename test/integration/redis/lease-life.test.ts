/**
 * @module A lease always ends (issue 25 item 4): on Express 4 an async handler that throws never answers
 * (Express 4 leaves the rejection unhandled) and the client keeps its connection open, so the adapter
 * renews the lease for as long as the response lives. The lease keeper stops renewing `maxLeaseMs`
 * after the lease was granted, so under a concurrency limit of 1 the route answers again once that much
 * time has passed, on a real redis-server and on the MemoryStore, instead of never.
 *
 * And a lease is not lost to a stalled process: a renewal that comes after the lease's deadline (a
 * handler blocked the event loop longer than leaseMs / 2) takes the slot again when it is still free, so
 * no second request runs beside the first; when another request took the slot meanwhile the lease has
 * ended, never running over the limit; and a lease that `limiter.reset(key)` ended is never revived.
 */
import { request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLimiter, MemoryStore, RedisStore, type Store, type StoreKey, type StorePlan } from '@tollgate/core';
import { rateLimit } from '@tollgate/express';
import express4 from 'express4';
import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { describeRedis, type RedisServer, randomPrefix, startRedis } from './harness.js';

// Renewed every leaseMs / 2 (400 ms): a renewal timer late by less than that on a loaded machine keeps the lease.
const LEASE_MS = 800;
const MAX_LEASE_MS = 3_200;

/** GET `path` on `port`: the status, or undefined when no answer came within `timeoutMs`. */
function get(port: number, path: string, timeoutMs: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const req = httpRequest({ host: '127.0.0.1', port, path }, (res) => {
      res.resume();
      resolve(res.statusCode);
    });
    req.setTimeout(timeoutMs, () => {
      req.destroy();
      resolve(undefined);
    });
    req.on('error', () => resolve(undefined));
    req.end();
  });
}

describeRedis('express 4: an async throw on an open connection holds its lease at most maxLeaseMs', () => {
  let redis: RedisServer;
  let server: Server | undefined;
  const open: { destroy(): void }[] = [];
  const onUnhandled = (): void => undefined;

  beforeAll(async () => {
    redis = await startRedis();
    process.on('unhandledRejection', onUnhandled);
  });
  afterEach(async () => {
    for (const r of open.splice(0)) r.destroy();
    await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
  });
  afterAll(async () => {
    process.off('unhandledRejection', onUnhandled);
    await redis?.close();
  });

  const cases: { name: string; store: () => Promise<Store>; maxLeaseMs: number | undefined }[] = [
    { name: 'memory', store: async () => new MemoryStore(), maxLeaseMs: MAX_LEASE_MS },
    {
      name: 'redis',
      store: async () => new RedisStore({ client: await redis.storeClient('ioredis'), prefix: randomPrefix(), validate: false }),
      maxLeaseMs: MAX_LEASE_MS,
    },
    // Without the option: 5 * leaseMs.
    { name: 'memory, default maxLeaseMs', store: async () => new MemoryStore(), maxLeaseMs: undefined },
  ];

  for (const { name, store: makeStore, maxLeaseMs } of cases) {
    const MAX = maxLeaseMs ?? 5 * LEASE_MS;
    it(`${name}: the route answers again maxLeaseMs (${MAX} ms) after the request that never answered`, async () => {
      const limit = rateLimit({
        policies: {
          name: 'one',
          algorithm: 'concurrency',
          limit: 1,
          leaseMs: LEASE_MS,
          ...(maxLeaseMs === undefined ? {} : { maxLeaseMs }),
        },
        key: () => 'k',
        store: await makeStore(),
        storeTimeoutMs: 2_000,
      });
      const app = express4();
      app.use(limit);
      // Express 4 leaves this rejection unhandled: the response is never answered.
      app.get('/throws', async () => {
        await new Promise((resolve) => setTimeout(resolve, 5));
        throw new Error('handler failed');
      });
      app.get('/ok', (_req, res) => {
        res.send('ok');
      });
      server = await new Promise<Server>((resolve) => {
        const s = app.listen(0, '127.0.0.1', () => resolve(s));
      });
      const { port } = server.address() as AddressInfo;
      // The client waits for ever on an open connection: nothing ends the response.
      const stuck = httpRequest({ host: '127.0.0.1', port, path: '/throws' });
      stuck.on('error', () => undefined);
      stuck.end();
      open.push(stuck);
      const granted = Date.now();
      // Held: the key is full, and stays full well past leaseMs (the adapter renews the lease).
      await new Promise((resolve) => setTimeout(resolve, 3 * LEASE_MS));
      expect(await get(port, '/ok', 2_000)).toBe(429);
      // Answered again by maxLeaseMs (plus a renewal interval of scheduling slack), not never.
      let status: number | undefined;
      while (status !== 200 && Date.now() - granted < 4 * MAX) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        status = await get(port, '/ok', 2_000);
      }
      const freedAfter = Date.now() - granted;
      console.log(`express 4 never-answering handler (${name}): key free again after ${freedAfter} ms (maxLeaseMs ${MAX})`);
      expect(status).toBe(200);
      expect(freedAfter).toBeGreaterThanOrEqual(MAX - LEASE_MS);
      expect(freedAfter).toBeLessThan(2 * MAX);
      // The stuck request is still open: its lease ended without it.
      expect(stuck.destroyed).toBe(false);
    }, 40_000);
  }
});

/** A RedisStore whose renewals (sent, not awaited, by the limiter) a test can wait for. */
class WatchedRedisStore extends RedisStore {
  renewing: Promise<unknown>[] = [];
  override renew(key: StoreKey, plan: StorePlan, lease: number, now: number): Promise<boolean> {
    const call = super.renew(key, plan, lease, now);
    this.renewing.push(call);
    return call;
  }
}

describeRedis('a late renewal (the process stalled past the deadline) takes the slot again only when it is free', () => {
  let redis: RedisServer;
  let admin: Redis;

  beforeAll(async () => {
    redis = await startRedis();
    admin = await redis.readyClient();
  });
  afterAll(async () => {
    await redis?.close();
  });

  /** The leases Redis holds under `prefix`. */
  async function inRedis(prefix: string): Promise<number> {
    let n = 0;
    for (const key of await admin.keys(`${prefix}*`)) n += await admin.zcard(key);
    return n;
  }

  /** A limit of 1, leases of 600 ms, in virtual time near the real one (Redis expires keys in real time). */
  async function setup(kind: 'memory' | 'redis') {
    let now = Date.now();
    const prefix = randomPrefix();
    const store =
      kind === 'memory'
        ? new MemoryStore()
        : new WatchedRedisStore({ client: await redis.storeClient('ioredis'), prefix, timeSource: 'limiter', validate: false });
    const limiter = createLimiter({
      policies: { name: 'one', algorithm: 'concurrency', limit: 1, leaseMs: 600 },
      store,
      clock: () => now,
      storeTimeoutMs: 2_000,
      onStoreError: 'closed',
    });
    /** Waits until the renewals sent so far have landed and the limiter has read their answers. */
    const landed = async () => {
      if (store instanceof WatchedRedisStore) await Promise.allSettled(store.renewing.splice(0));
      await new Promise((r) => setImmediate(r));
    };
    /** The leases the store holds: Redis' count, or null for the MemoryStore (its checks tell). */
    const held = async () => (kind === 'redis' ? inRedis(prefix) : null);
    return { limiter, landed, held, advance: (ms: number) => (now += ms) };
  }

  for (const kind of ['memory', 'redis'] as const) {
    it(`${kind}: a late renewal whose slot is still free takes it again: a new request is refused`, async () => {
      const { limiter, landed, held, advance } = await setup(kind);
      const a = await limiter.check('k');
      expect(a.allowed).toBe(true);
      // The renewal due at 300 ms comes at 700 (the handler blocked the loop), past the deadline (600).
      advance(700);
      // Before: false, renewals stopped for good, and the next check ran beside the request (2 for a limit of 1).
      expect(a.renew?.()).toBe(true);
      await landed();
      expect((await limiter.check('k')).allowed).toBe(false);
      expect(await held()).toBe(kind === 'redis' ? 1 : null);
      // Renewed on time from then on: still held past its first deadlines.
      advance(300);
      expect(a.renew?.()).toBe(true);
      await landed();
      advance(500);
      expect((await limiter.check('k')).allowed).toBe(false);
      a.release?.();
      await landed();
      expect((await limiter.check('k')).allowed).toBe(true);
      await limiter.close();
    });

    it(`${kind}: a late renewal whose slot another request took ends the lease: never over the limit`, async () => {
      const { limiter, landed, held, advance } = await setup(kind);
      const a = await limiter.check('k');
      advance(700);
      const b = await limiter.check('k');
      expect(b.allowed).toBe(true);
      // MemoryStore answers at once; on Redis the renewal is sent (true), and its answer ends the lease.
      expect(a.renew?.()).toBe(kind === 'redis');
      await landed();
      advance(300);
      expect(a.renew?.()).toBe(false);
      await landed();
      expect(await held()).toBe(kind === 'redis' ? 1 : null);
      expect((await limiter.check('k')).allowed).toBe(false);
      b.release?.();
      a.release?.();
      await landed();
      expect((await limiter.check('k')).allowed).toBe(true);
      await limiter.close();
    });

    it(`${kind}: a lease that reset(key) ended is not revived by a late renewal, though the slot is free`, async () => {
      const { limiter, landed, held, advance } = await setup(kind);
      const a = await limiter.check('k');
      advance(700);
      await limiter.reset('k');
      expect(a.renew?.()).toBe(false);
      await landed();
      expect(await held()).toBe(kind === 'redis' ? 0 : null);
      const b = await limiter.check('k');
      expect(b.allowed).toBe(true);
      expect((await limiter.check('k')).allowed).toBe(false);
      b.release?.();
      await landed();
      await limiter.close();
    });
  }
});
