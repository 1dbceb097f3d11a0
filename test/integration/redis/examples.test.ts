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
  if (!server.listening) await new Promise((resolve) => server.once('listening', resolve));
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

  it('examples/redis: 429 past the burst; while Redis is down browsing continues the budget Redis counted and login answers 503', async () => {
    const client = await redis.readyClient({ enableOfflineQueue: false, retryStrategy: () => 25 });
    const server = createApp({ redis: client, prefix: randomPrefix(), storeTimeoutMs: 2000, logger: { warn() {}, error() {} } }).listen(0);
    servers.push(server);
    const base = await listen(server);
    expect((await fetch(`${base}/nowhere`)).status).toBe(404); // warms the HTTP client up
    const loginStatuses: number[] = [];
    for (let i = 0; i < 6; i++) loginStatuses.push((await fetch(`${base}/login`, { method: 'POST' })).status);
    expect(loginStatuses).toEqual([200, 200, 200, 200, 200, 429]);
    // Eleven at once: the burst of 10 refills at 1 per second, so exactly one is refused.
    const burstAt = performance.now();
    const statuses = await Promise.all(Array.from({ length: 11 }, async () => (await fetch(`${base}/`)).status));
    expect(statuses.sort()).toEqual([...Array(10).fill(200), 429]);
    // Units refilled since the burst, at most: one per whole second since before its first admission.
    const refilled = () => Math.floor((performance.now() - burstAt) / 1000);

    await redis.stop();
    // The outage continues the budget Redis had counted: the burst is spent, so the failure mode admits
    // only what refilled since (not a fresh local burst of 5, half the limit). Before a second has passed
    // (a loaded machine may take longer to stop Redis), that is a 429.
    let admitted = 0;
    const admit = async () => {
      const res = await fetch(`${base}/`);
      if (res.status === 200) {
        expect(await res.json()).toMatchObject({ degraded: true });
        admitted++;
      } else expect(res.status).toBe(429);
      return res.status;
    };
    await admit();
    expect(admitted).toBeLessThanOrEqual(refilled());
    // After the refill of one, one request more, from the failure mode; then no more than refilled
    // meanwhile. The outage refills at localShare (a half) of the rate, one every 2 s: each instance
    // admits its half of the refill, not the whole of it in every instance.
    await new Promise((r) => setTimeout(r, 2_100));
    expect(await admit()).toBe(200);
    for (let i = 0; i < 4; i++) await admit();
    expect(admitted).toBeLessThanOrEqual(refilled());
    const closed = await fetch(`${base}/login`, { method: 'POST' });
    expect(closed.status).toBe(503);
    expect(closed.headers.get('content-type')).toMatch(/^application\/problem\+json/);

    await redis.start();
    await waitFor('the app to use Redis again', async () => (await fetch(`${base}/login`, { method: 'POST' })).status !== 503);
    // The restarted Redis had lost its data: browsing's limiter charged it again what it remembered
    // (WRN_RL_BUDGETS_RESTORED), so the burst is still spent but for what refilled since: a 429, or a
    // request Redis admitted from that refill.
    const back = await fetch(`${base}/`);
    if (back.status === 200) expect(await back.json()).toMatchObject({ degraded: false });
    else expect(back.status).toBe(429);
  });

  it('examples/redis: the feed, one hot key for the whole fleet, is answered mostly from batches and never over its limit', async () => {
    await redis.start(); // running unless the test before failed while it was stopped
    const client = await redis.readyClient({ enableOfflineQueue: false });
    const prefix = randomPrefix();
    const logger = { warn() {}, error() {} };
    // Two instances of the app on one Redis share the feed's one budget.
    const bases: string[] = [];
    for (let i = 0; i < 2; i++) {
      const server = createApp({ redis: client, prefix, storeTimeoutMs: 2000, logger, feedLimit: 300 }).listen(0);
      servers.push(server);
      bases.push(await listen(server));
    }
    const statuses: number[] = [];
    const windowAt = () => Math.floor(Date.now() / 10_000); // fixed windows of 10 s, aligned to the epoch
    const firstWindow = windowAt();
    // 500 requests in waves of 10 over both instances, well past the rate at which a key takes batches.
    for (let wave = 0; wave < 50; wave++) {
      const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => fetch(`${bases[i % 2]}/feed`)));
      for (const a of answers) statuses.push(a.status);
    }
    const admitted = statuses.filter((s) => s === 200).length;
    // Never over the limit (every admission is a unit Redis charged); under it by at most what the two
    // instances hold (2 x maxShare 0.1 x 300). A run that crossed into the next window may admit up to two.
    const windows = windowAt() - firstWindow + 1;
    expect(admitted).toBeLessThanOrEqual(300 * windows);
    expect(admitted).toBeGreaterThanOrEqual(300 - 60);
    expect(statuses.filter((s) => s !== 200 && s !== 429)).toEqual([]);
    type FeedStats = { batched: number; charges: number };
    const stats = await Promise.all(bases.map(async (b) => ((await (await fetch(`${b}/stats`)).json()) as { feed: FeedStats }).feed));
    const batched = stats.reduce((n, s) => n + s.batched, 0);
    const charges = stats.reduce((n, s) => n + s.charges, 0);
    expect(batched).toBeGreaterThan(admitted / 2);
    expect(charges).toBeLessThan(statuses.length / 2);
  });

  it('examples/cluster: per API key on a Redis Cluster, shadow verdicts alongside, 429 past the burst', async () => {
    const client = await cluster.readyClient({ enableOfflineQueue: false });
    const app = await createClusterApp({ redis: client, prefix: randomPrefix(), storeTimeoutMs: 2000 });
    await app.listen({ port: 0, host: '127.0.0.1' });
    servers.push(app.server);
    const base = await listen(app.server);
    expect((await fetch(base)).status).toBe(401);
    // Six at once: one after another they would have to land within the 200 ms refill of a unit. On a
    // loaded machine six requests can still spread past a refill; such a burst proves nothing either way,
    // so it is sent again on a fresh API key (at most three times).
    const burst = async (apiKey: string) => {
      const started = performance.now();
      const answers = await Promise.all(
        Array.from({ length: 6 }, async () => {
          const res = await fetch(base, { headers: { 'x-api-key': apiKey } });
          const body = res.status === 200 ? ((await res.json()) as { shadowWouldLimit: boolean }) : undefined;
          return { status: res.status, shadow: body?.shadowWouldLimit };
        }),
      );
      return { answers, tight: performance.now() - started < 150 };
    };
    for (const apiKey of ['abc', 'def', 'ghi']) {
      let sent = await burst(apiKey);
      for (let retry = 1; !sent.tight && retry < 3; retry++) sent = await burst(`${apiKey}-${retry}`);
      const { answers } = sent;
      expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 200, 200, 200, 429]);
      // The stricter candidate (3 per second) would have refused two of the five admitted.
      expect(answers.filter((a) => a.shadow === true)).toHaveLength(2);
    }
  });
});
