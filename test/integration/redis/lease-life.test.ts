/**
 * @module A lease always ends (issue 25 item 4): on Express 4 an async handler that throws never answers
 * (Express 4 leaves the rejection unhandled) and the client keeps its connection open, so the adapter
 * renews the lease for as long as the response lives. The lease keeper stops renewing `maxLeaseMs`
 * after the lease was granted, so under a concurrency limit of 1 the route answers again once that much
 * time has passed, on a real redis-server and on the MemoryStore, instead of never.
 */
import { request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { MemoryStore, RedisStore, type Store } from '@tollgate/core';
import { rateLimit } from '@tollgate/express';
import express4 from 'express4';
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
