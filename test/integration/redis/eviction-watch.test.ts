/**
 * @module Eviction is loud while it happens (issue 25 item 5), on a real redis-server with a small
 * `maxmemory` and `allkeys-lru`: while keys are flooded in and Redis evicts, the RedisStore in use
 * counts the evictions (`store.evictions`, `tollgate_store_evictions_total{store="redis"}` on a
 * prom-client registry) and logs `WRN_RL_STORE_EVICTING` at most once per `logIntervalMs`, after the one
 * startup `WRN_RL_EVICTION_POLICY`; under `noeviction` it reads INFO once (the baseline), then only with
 * each policy check (`policyIntervalMs`, eviction-policy-change.test.ts); on a Cluster (ioredis
 * and node-redis) it reads every master and names the node that evicts. Real timers: the
 * watch's interval is shortened to 100 ms so the suite takes seconds.
 */
import { createLimiter, RedisStore, registerPrometheusMetrics } from '@tollgate/core';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { evictedBy, recorder, redisEvictions } from './eviction-helpers.js';
import { commandCalls, describeRedis, HOST, type RedisServer, randomPrefix, startCluster, startRedis, waitFor } from './harness.js';

describeRedis('RedisStore eviction watch (issue 25)', () => {
  let evicting: RedisServer;
  let safe: RedisServer;
  const registry = new Registry();
  let unregister: () => void;

  beforeAll(async () => {
    unregister = registerPrometheusMetrics({ registry });
    [evicting, safe] = await Promise.all([
      startRedis(['--maxmemory', '4mb', '--maxmemory-policy', 'allkeys-lru']),
      startRedis(['--maxmemory', '4mb', '--maxmemory-policy', 'noeviction']),
    ]);
  });
  afterAll(async () => {
    unregister?.();
    await Promise.all([evicting?.close(), safe?.close()]);
  });

  it('counts the keys Redis evicts while a flood goes on, and warns at most once per logIntervalMs', async () => {
    const client = await evicting.readyClient({ autoResendUnfulfilledCommands: false });
    const flood = await evicting.readyClient();
    const { lines, logger } = recorder();
    const store = new RedisStore({ client, prefix: randomPrefix(), logger, evictionWatch: { intervalMs: 100, logIntervalMs: 1_000 } });
    const limiter = createLimiter({
      name: 'evictions',
      policies: { algorithm: 'fixed-window', limit: 1_000, windowMs: 60_000 },
      store,
      storeTimeoutMs: 5_000,
      logger,
    });
    const metricBefore = redisEvictions(await registry.metrics());
    await limiter.check('warm-up');
    await waitFor('the startup check', () => lines.some((l) => l.fields.code === 'WRN_RL_EVICTION_POLICY'));
    const value = 'x'.repeat(1024);
    const started = performance.now();
    // About 2.5 s of flooding: 1 KB values, far past 4 MB, while the limiter keeps the store in use.
    let i = 0;
    while (performance.now() - started < 2_500) {
      const batch = flood.pipeline();
      for (let j = 0; j < 200; j++) batch.set(`flood:${i++}`, value);
      await batch.exec();
      await limiter.check(`k${i % 50}`);
    }
    const elapsed = performance.now() - started;
    await waitFor('a reading after the flood', async () => store.evictions > 0);
    const evictedByRedis = await evictedBy(flood);
    expect(evictedByRedis).toBeGreaterThan(1_000);
    // The watch reads every 100 ms; it has seen all but the last interval's evictions.
    await new Promise((r) => setTimeout(r, 300));
    expect(store.evictions).toBeGreaterThan(evictedByRedis / 2);
    // Never more than Redis counted: read again, since the limiter's own writes may evict after the flood.
    const evictedLater = await evictedBy(flood);
    expect(store.evictions).toBeLessThanOrEqual(evictedLater);
    expect(redisEvictions(await registry.metrics()) - metricBefore).toBe(store.evictions);
    const evicting1 = lines.filter((l) => l.fields.code === 'WRN_RL_STORE_EVICTING');
    // About 25 readings saw evictions; at most one line per second made it to the log.
    expect(evicting1.length).toBeGreaterThanOrEqual(1);
    expect(evicting1.length).toBeLessThanOrEqual(Math.ceil(elapsed / 1_000) + 1);
    for (let k = 1; k < evicting1.length; k++) {
      expect((evicting1[k]?.at ?? 0) - (evicting1[k - 1]?.at ?? 0)).toBeGreaterThanOrEqual(990);
    }
    expect(evicting1.reduce((sum, l) => sum + Number(l.fields.evicted), 0)).toBeLessThanOrEqual(store.evictions);
    expect(lines.filter((l) => l.fields.code === 'WRN_RL_EVICTION_POLICY')).toHaveLength(1);
    // Unused for a whole interval, the watch stops reading; close() stops it for good.
    const calls = async () => (await commandCalls(flood)).info ?? 0;
    await new Promise((r) => setTimeout(r, 400));
    const idle = await calls();
    await new Promise((r) => setTimeout(r, 500));
    expect((await calls()) - idle).toBeLessThanOrEqual(1); // only the test's own INFO commandstats
    await limiter.check('again');
    await waitFor('the watch to resume', async () => (await calls()) - idle > 3);
    store.close();
    await limiter.close();
    const closed = await calls();
    await new Promise((r) => setTimeout(r, 400));
    expect((await calls()) - closed).toBeLessThanOrEqual(2);
  });

  it('reads no INFO under noeviction between policy checks', async () => {
    const client = await safe.readyClient({ autoResendUnfulfilledCommands: false });
    const probe = await safe.readyClient();
    const { lines, logger } = recorder();
    const store = new RedisStore({ client, prefix: randomPrefix(), logger, evictionWatch: { intervalMs: 50 } });
    const limiter = createLimiter({ name: 'quiet', policies: { limit: 10, windowMs: 1_000 }, store, storeTimeoutMs: 5_000 });
    for (let k = 0; k < 10; k++) await limiter.check(`k${k}`);
    // After the clients' own INFO on connecting (ioredis' ready check), the limiter's one reading of
    // which server answers (INFO server, at start: the budget restore's) and the watch's baseline, nothing
    // reads INFO again before the next policy check (30 s by default).
    const before = (await commandCalls(probe)).info ?? 0;
    await new Promise((r) => setTimeout(r, 400));
    expect(((await commandCalls(probe)).info ?? 0) - before).toBe(1); // the probe's own first INFO
    expect(store.evictions).toBe(0);
    expect(lines).toHaveLength(0);
    await limiter.close();
    store.close();
  });

  it('reads every master of a Cluster and names the one that evicts (ioredis and node-redis)', async () => {
    const cluster = await startCluster(3);
    try {
      const full = cluster.masters[1] as RedisServer;
      const admin = cluster.node(full);
      await admin.config('SET', 'maxmemory', '4mb');
      await admin.config('SET', 'maxmemory-policy', 'allkeys-lru');
      const watched = await Promise.all(
        (['ioredis', 'node-redis'] as const).map(async (kind) => {
          const { lines, logger } = recorder();
          const store = new RedisStore({
            client: await cluster.storeClient(kind),
            prefix: randomPrefix(),
            logger,
            evictionWatch: { intervalMs: 100, logIntervalMs: 60_000 },
          });
          const limiter = createLimiter({ name: kind, policies: { limit: 1_000, windowMs: 60_000 }, store, storeTimeoutMs: 5_000, logger });
          await limiter.check('warm-up');
          await waitFor(`the startup check (${kind})`, () => lines.some((l) => l.fields.code === 'WRN_RL_EVICTION_POLICY'));
          return { kind, lines, store, limiter };
        }),
      );
      const flood = cluster.client();
      const value = 'x'.repeat(1024);
      let i = 0;
      const evicted = () => evictedBy(admin);
      while ((await evicted()) < 1_000) {
        await Promise.all(Array.from({ length: 300 }, () => flood.set(`flood:${i++}`, value)));
        for (const w of watched) await w.limiter.check(`k${i % 20}`);
      }
      for (const w of watched) {
        await waitFor(
          `a reading through ${w.kind}`,
          () => w.store.evictions > 0 && w.lines.some((l) => l.fields.code === 'WRN_RL_STORE_EVICTING'),
        );
        const line = w.lines.find((l) => l.fields.code === 'WRN_RL_STORE_EVICTING');
        expect(line?.fields.nodes).toEqual([`${HOST}:${full.port}`]);
        expect(w.store.evictions).toBeLessThanOrEqual(await evicted());
        w.store.close();
        await w.limiter.close();
      }
    } finally {
      await cluster.close();
    }
  });
});
