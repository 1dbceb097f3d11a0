/**
 * @module Health per Cluster master: with a master of a three-master Redis Cluster killed, checks for keys
 * of its slots are answered by the failure mode while every key of the other masters keeps its store
 * answers (0 degraded), with the default failure options; once the master is back, its keys recover.
 */
import { createLimiter, type Decision, RedisStore } from '@tollgate/core';
import type { Cluster } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
// Which slot a key lives in, computed as Redis does (an internal of the store, as tests may use).
import { keySlot } from '../../../packages/core/src/stores/redis/cluster-slot.js';
import { describeRedis, type RedisClusterHarness, type RedisServer, randomPrefix, startCluster, waitFor } from './harness.js';

const quiet = { warn() {}, error() {} };

describeRedis('Redis Cluster: a master down degrades only the keys of its slots', () => {
  let cluster: RedisClusterHarness;
  let client: Cluster;
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);

  beforeAll(async () => {
    process.on('unhandledRejection', onUnhandled);
    cluster = await startCluster(3);
    client = await cluster.readyClient({ redisOptions: { maxRetriesPerRequest: 1 } });
  }, 60_000);
  afterAll(async () => {
    process.off('unhandledRejection', onUnhandled);
    await cluster?.close();
  });

  it('kill one master: its keys degrade, the other masters keys never do, and they recover when it is back', async () => {
    const victim = cluster.masters[2] as RedisServer;
    const breakers: string[] = [];
    const limiter = createLimiter({
      policies: { limit: 1_000_000, windowMs: 60_000 },
      store: new RedisStore({ client, prefix: randomPrefix() }),
      logger: quiet,
    });
    limiter.on('breaker', (e) => breakers.push(`${e.node}:${e.state}`));
    // 60 keys spread over the three masters (brace-free, so the key is its own hash tag).
    const keys = Array.from({ length: 60 }, (_, i) => `user${i}`);
    const onVictim = new Set<string>();
    for (const key of keys) if ((await cluster.ownerOf(keySlot(`{${key}}`))) === victim) onVictim.add(key);
    expect(onVictim.size).toBeGreaterThan(5);
    expect(onVictim.size).toBeLessThan(keys.length);
    for (const key of keys) expect((await limiter.check(key)).degraded).toBe(false);

    await victim.stop();
    let victimDegraded = 0;
    let victimChecks = 0;
    let othersDegraded = 0;
    let othersChecks = 0;
    const until = performance.now() + 1_500;
    while (performance.now() < until) {
      const ds: Decision[] = await Promise.all(keys.map((key) => limiter.check(key)));
      for (const d of ds) {
        if (onVictim.has(d.key)) {
          victimChecks += 1;
          if (d.degraded) victimDegraded += 1;
        } else {
          othersChecks += 1;
          if (d.degraded) othersDegraded += 1;
        }
      }
      await new Promise((r) => setTimeout(r, 5));
    }
    console.info(
      `cluster, one master down 1.5 s: its keys ${victimDegraded} of ${victimChecks} degraded; other masters' keys ${othersDegraded} of ${othersChecks}`,
    );
    expect(othersDegraded).toBe(0);
    expect(victimDegraded).toBeGreaterThan(victimChecks / 2);
    const victimNode = `127.0.0.1:${victim.port}`;
    expect(breakers.length).toBeGreaterThan(0);
    expect(breakers.every((b) => b.startsWith(`${victimNode}:`))).toBe(true);

    await victim.start();
    await waitFor(
      "the victim's keys decided by Redis again",
      async () => {
        const ds = await Promise.all([...onVictim].map((key) => limiter.check(key)));
        return ds.every((d) => !d.degraded);
      },
      15_000,
    );
    expect(breakers.at(-1)).toBe(`${victimNode}:closed`);
    await limiter.close();
    await new Promise((r) => setImmediate(r));
    expect(unhandled).toEqual([]);
  }, 60_000);

  it('concurrency leases too: while a killed master cannot take its leases back, new leases of the other masters keys go to Redis', async () => {
    const victim = cluster.masters[1] as RedisServer;
    const limiter = createLimiter({
      policies: { algorithm: 'concurrency', limit: 3, leaseMs: 2_000 },
      store: new RedisStore({ client, prefix: randomPrefix() }),
      logger: quiet,
    });
    const keys = Array.from({ length: 60 }, (_, i) => `lease${i}`);
    const onVictim = new Set<string>();
    for (const key of keys) if ((await cluster.ownerOf(keySlot(`{${key}}`))) === victim) onVictim.add(key);
    expect(onVictim.size).toBeGreaterThan(5);
    // One lease held on every key, renewed as an adapter renews it.
    const held = await Promise.all(keys.map((key) => limiter.check(key)));
    expect(held.every((d) => d.allowed && !d.degraded)).toBe(true);

    await victim.stop();
    let othersDegraded = 0;
    let othersChecks = 0;
    let victimDegraded = 0;
    const until = performance.now() + 1_500;
    while (performance.now() < until) {
      for (const d of held) d.renew?.();
      // The victim's keys too: the failure mode ('local') grants their leases, to be put into Redis once it is back.
      const ds: Decision[] = await Promise.all(keys.map((key) => limiter.check(key)));
      for (const d of ds) {
        if (onVictim.has(d.key)) victimDegraded += d.degraded ? 1 : 0;
        else {
          othersChecks += 1;
          if (d.degraded) othersDegraded += 1;
        }
        d.release?.();
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    console.info(
      `cluster, one master down 1.5 s, leases: its keys ${victimDegraded} degraded; other masters' keys ${othersDegraded} of ${othersChecks}`,
    );
    expect(victimDegraded).toBeGreaterThan(0);
    expect(othersDegraded).toBe(0);
    await victim.start();
    for (const d of held) d.release?.();
    await limiter.close();
  }, 60_000);
});
