/**
 * @module Smoke tests of examples/redis and examples/cluster against servers the harness starts: the
 * limits answer 429, the failure modes answer while Redis is down, and the apps recover by themselves.
 */
import type { AddressInfo } from 'node:net';
import { createApp as createClusterApp } from '@tollgate/example-cluster';
import { createApp } from '@tollgate/example-redis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeRedis, type RedisClusterHarness, type RedisServer, randomPrefix, startCluster, startRedis, waitFor } from './harness.js';

async function listen(server: import('node:http').Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describeRedis('examples', () => {
  let redis: RedisServer;
  let cluster: RedisClusterHarness;
  const servers: import('node:http').Server[] = [];

  beforeAll(async () => {
    [redis, cluster] = await Promise.all([startRedis(), startCluster(3)]);
  }, 60_000);
  afterAll(async () => {
    for (const s of servers) s.close();
    await Promise.all([redis?.close(), cluster?.close()]);
  });

  it('examples/redis: 429 past the burst; while Redis is down browsing degrades to local limits and login answers 503', async () => {
    const client = await redis.readyClient({ enableOfflineQueue: false, retryStrategy: () => 25 });
    const { server } = createApp({ redis: client, prefix: randomPrefix(), storeTimeoutMs: 2000, logger: { warn() {}, error() {} } });
    servers.push(server);
    const base = await listen(server);
    expect((await fetch(`${base}/nowhere`)).status).toBe(404); // warms the HTTP client up
    // Eleven at once: the burst of 10 refills at 1 per second, so exactly one is refused.
    const statuses = await Promise.all(Array.from({ length: 11 }, async () => (await fetch(`${base}/`)).status));
    expect(statuses.sort()).toEqual([...Array(10).fill(200), 429]);
    const loginStatuses: number[] = [];
    for (let i = 0; i < 6; i++) loginStatuses.push((await fetch(`${base}/login`, { method: 'POST' })).status);
    expect(loginStatuses).toEqual([200, 200, 200, 200, 200, 429]);

    await redis.stop();
    const down = await fetch(`${base}/`);
    expect(await down.json()).toMatchObject({ degraded: true });
    const closed = await fetch(`${base}/login`, { method: 'POST' });
    expect(closed.status).toBe(503);
    expect(await closed.json()).toMatchObject({ reason: 'store-error', degraded: true });

    await redis.start();
    await waitFor('the app to use Redis again', async () => {
      const body = (await (await fetch(`${base}/login`, { method: 'POST' })).json()) as { degraded: boolean };
      return !body.degraded;
    });
  });

  it('examples/cluster: per API key on a Redis Cluster, shadow verdicts alongside, 429 past the burst', async () => {
    const client = await cluster.readyClient({ enableOfflineQueue: false });
    const { server } = createClusterApp({ redis: client, prefix: randomPrefix(), storeTimeoutMs: 2000 });
    servers.push(server);
    const base = await listen(server);
    expect((await fetch(base)).status).toBe(401);
    for (const apiKey of ['abc', 'def', 'ghi']) {
      const answers = [];
      for (let i = 0; i < 6; i++) {
        const res = await fetch(base, { headers: { 'x-api-key': apiKey } });
        answers.push([res.status, ((await res.json()) as { shadowWouldLimit: boolean }).shadowWouldLimit]);
      }
      expect(answers).toEqual([
        [200, false],
        [200, false],
        [200, false],
        [200, true],
        [200, true],
        [429, true],
      ]);
    }
  });
});
