/**
 * @module The eviction watch follows the server's `maxmemory-policy` (issue 25 item 5, the tester's
 * evict-live probe), on real redis-servers with a small `maxmemory` that start under `noeviction`: a live
 * `CONFIG SET maxmemory-policy allkeys-lru` is seen within `policyIntervalMs` and what Redis evicted since
 * the baseline is counted (`store.evictions`, `tollgate_store_evictions_total{store="redis"}`), with one
 * `WRN_RL_EVICTION_POLICY` line for the change; back under `noeviction` the readings slow down again; a
 * server restarted with `allkeys-lru` is seen through the reconnect and its new `run_id`, without waiting
 * for the policy check; on a Cluster, a master switched live is named. Real timers, intervals in ms.
 */
import { createLimiter, type Limiter, RedisStore, registerPrometheusMetrics } from '@tollgate/core';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { evictedBy, recorder, redisEvictions } from './eviction-helpers.js';
import {
  commandCalls,
  describeRedis,
  HOST,
  type RedisServer,
  randomPrefix,
  RedisServer as Server,
  startCluster,
  startRedis,
  waitFor,
} from './harness.js';

const SMALL = ['--maxmemory', '4mb'];

/** Floods `set` with 1 KB values until `admin`'s server evicted `atLeast` keys, keeping `limiter` in use. */
async function flood(set: (key: string, value: string) => Promise<unknown>, admin: RedisServerAdmin, limiter: Limiter, atLeast = 1_000) {
  const value = 'x'.repeat(1024);
  let i = 0;
  while ((await evictedBy(admin)) < atLeast) {
    await Promise.all(Array.from({ length: 200 }, () => set(`flood:${randomPrefix()}:${i++}`, value)));
    await limiter.check(`k${i % 20}`);
  }
}
type RedisServerAdmin = { info(section: string): Promise<string> };

describeRedis('RedisStore eviction watch follows maxmemory-policy (issue 25)', () => {
  const registry = new Registry();
  let unregister: () => void;
  const servers: RedisServer[] = [];

  beforeAll(() => {
    unregister = registerPrometheusMetrics({ registry });
  });
  afterAll(async () => {
    unregister?.();
    await Promise.all(servers.map((s) => s.close()));
  });

  it.each(['ioredis', 'node-redis'] as const)(
    'sees a live CONFIG SET to allkeys-lru and counts every eviction since (%s)',
    async (kind) => {
      const server = await startRedis([...SMALL, '--maxmemory-policy', 'noeviction']);
      servers.push(server);
      const admin = await server.readyClient();
      const { lines, logger, coded } = recorder();
      const store = new RedisStore({
        client: await server.storeClient(kind),
        prefix: randomPrefix(),
        logger,
        evictionWatch: { intervalMs: 100, logIntervalMs: 60_000, policyIntervalMs: 300 },
      });
      const limiter = createLimiter({ name: kind, policies: { limit: 1_000, windowMs: 60_000 }, store, storeTimeoutMs: 5_000, logger });
      const metricBefore = redisEvictions(await registry.metrics());
      await limiter.check('warm-up');
      // The startup check found noeviction: no line; the watch takes its baseline.
      await new Promise((r) => setTimeout(r, 200));
      expect(lines).toHaveLength(0);

      await admin.config('SET', 'maxmemory-policy', 'allkeys-lru');
      await flood((k, v) => admin.set(k, v), admin, limiter);
      const evicted = await evictedBy(admin);
      // Every key Redis evicted after the CONFIG SET, counted from the baseline taken under noeviction.
      await waitFor('the watch to count them all', async () => {
        await limiter.check('again');
        return store.evictions >= evicted;
      });
      expect(store.evictions).toBeLessThanOrEqual(await evictedBy(admin));
      expect(redisEvictions(await registry.metrics()) - metricBefore).toBe(store.evictions);
      expect(coded('WRN_RL_EVICTION_POLICY')).toEqual([expect.objectContaining({ maxmemoryPolicy: 'allkeys-lru', was: 'noeviction' })]);
      await waitFor('the evicting line', () => coded('WRN_RL_STORE_EVICTING').length > 0);
      expect(coded('WRN_RL_STORE_EVICTING')[0]).toMatchObject({ maxmemoryPolicy: 'allkeys-lru' });

      // Back to noeviction: after the next policy check, INFO only with the policy checks (every 300 ms, not 100).
      await admin.config('SET', 'maxmemory-policy', 'noeviction');
      const inUse = async (ms: number) => {
        const until = performance.now() + ms;
        while (performance.now() < until) {
          await limiter.check('busy');
          await new Promise((r) => setTimeout(r, 20));
        }
      };
      const infoCalls = async () => (await commandCalls(admin)).info ?? 0;
      // Until the watch has seen it (a policy check, due every 300 ms): a 300 ms stretch in use with at most
      // one check's INFO pair and the probe's own, where an evicting policy reads a pair every 100 ms.
      await waitFor(
        'the watch to see noeviction',
        async () => {
          const at = await infoCalls();
          await inUse(300);
          return (await infoCalls()) - at <= 4;
        },
        10_000,
      );
      const before = await infoCalls();
      await inUse(900);
      // INFO server + INFO stats at each of about 3 policy checks, and the probe's own INFO commandstats.
      expect((await infoCalls()) - before).toBeLessThanOrEqual(9);
      expect(coded('WRN_RL_EVICTION_POLICY')).toHaveLength(1);
      await limiter.close();
      await store.close();
    },
  );

  it('sees a server restarted with allkeys-lru through the reconnect, before any policy check is due', async () => {
    const first = await startRedis([...SMALL, '--maxmemory-policy', 'noeviction']);
    servers.push(first);
    const { logger, coded } = recorder();
    const store = new RedisStore({
      client: await first.readyClient({ autoResendUnfulfilledCommands: false, retryStrategy: () => 50 }),
      prefix: randomPrefix(),
      logger,
      // The default policyIntervalMs (30 s) is far beyond this test: only the reconnect can tell.
      evictionWatch: { intervalMs: 100, logIntervalMs: 60_000 },
    });
    const limiter = createLimiter({ name: 'restart', policies: { limit: 1_000, windowMs: 60_000 }, store, storeTimeoutMs: 5_000, logger });
    await limiter.check('warm-up');
    await new Promise((r) => setTimeout(r, 200));
    await first.stop();
    const second = new Server(first.port, first.dir, [...SMALL, '--maxmemory-policy', 'allkeys-lru']);
    servers.push(second);
    await second.start();
    await waitFor('the new server to be seen', async () => {
      await limiter.check('again').catch(() => undefined);
      return coded('WRN_RL_EVICTION_POLICY').length > 0;
    });
    expect(coded('WRN_RL_EVICTION_POLICY')).toEqual([expect.objectContaining({ maxmemoryPolicy: 'allkeys-lru', was: 'noeviction' })]);
    const admin = await second.readyClient();
    await flood((k, v) => admin.set(k, v), admin, limiter);
    const evicted = await evictedBy(admin);
    await waitFor('the watch to count them', async () => {
      await limiter.check('again');
      return store.evictions >= evicted / 2 && coded('WRN_RL_STORE_EVICTING').length > 0;
    });
    expect(store.evictions).toBeLessThanOrEqual(await evictedBy(admin));
    await limiter.close();
    await store.close();
  });

  it('names the Cluster master switched to allkeys-lru live (ioredis and node-redis)', async () => {
    const cluster = await startCluster(3);
    try {
      const full = cluster.masters[2] as RedisServer;
      const admin = cluster.node(full);
      await admin.config('SET', 'maxmemory', '4mb');
      const watched = await Promise.all(
        (['ioredis', 'node-redis'] as const).map(async (kind) => {
          const { logger, coded } = recorder();
          const store = new RedisStore({
            client: await cluster.storeClient(kind),
            prefix: randomPrefix(),
            logger,
            evictionWatch: { intervalMs: 100, logIntervalMs: 60_000, policyIntervalMs: 300 },
          });
          const limiter = createLimiter({ name: kind, policies: { limit: 1_000, windowMs: 60_000 }, store, storeTimeoutMs: 5_000, logger });
          await limiter.check('warm-up');
          return { kind, coded, store, limiter };
        }),
      );
      await new Promise((r) => setTimeout(r, 200));
      await admin.config('SET', 'maxmemory-policy', 'allkeys-lru');
      const client = cluster.client();
      await flood((k, v) => client.set(k, v), admin, watched[0]?.limiter as Limiter);
      for (const w of watched) {
        await waitFor(`a reading through ${w.kind}`, async () => {
          await w.limiter.check('again');
          return w.store.evictions > 0 && w.coded('WRN_RL_STORE_EVICTING').length > 0;
        });
        expect(w.coded('WRN_RL_EVICTION_POLICY')).toEqual([expect.objectContaining({ maxmemoryPolicy: 'allkeys-lru' })]);
        expect(w.coded('WRN_RL_STORE_EVICTING')[0]?.nodes).toEqual([`${HOST}:${full.port}`]);
        expect(w.store.evictions).toBeLessThanOrEqual(await evictedBy(admin));
        await w.limiter.close();
        await w.store.close();
      }
    } finally {
      await cluster.close();
    }
  });
});
