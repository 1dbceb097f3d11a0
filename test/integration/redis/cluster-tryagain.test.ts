/**
 * @module A Cluster slot caught mid-move: a two-policy key whose state is half on the old master and half
 * on the new one answers TRYAGAIN (node-redis hands it back, ioredis sends it again until its own
 * redirection budget runs out: at once with `retryDelayOnTryAgain: 0`). That is the key's fault, not its master's: the
 * master's other keys keep their store answers (before: node-redis counted each TRYAGAIN against the
 * node, ioredis' retried call timed out as late; either opened the master's breaker, and 90 to 99 % of
 * its other keys' checks degraded).
 */
import { createLimiter, RedisStore } from '@tollgate/core';
import { afterAll, beforeAll, expect, it } from 'vitest';
// Which slot a key lives in, computed as Redis does (an internal of the store, as tests may use).
import { keySlot } from '../../../packages/core/src/stores/redis/cluster-slot.js';
import { type ClientKind, describeRedis, type RedisClusterHarness, type RedisServer, randomPrefix, startCluster } from './harness.js';

const quiet = { warn() {}, error() {} };

describeRedis('Redis Cluster: a key whose slot is being moved (TRYAGAIN) degrades only itself', () => {
  let cluster: RedisClusterHarness;

  beforeAll(async () => {
    cluster = await startCluster(3);
  }, 60_000);
  afterAll(async () => {
    await cluster?.close();
  });

  const id = async (s: RedisServer) => String(await cluster.node(s).cluster('MYID'));

  it.each(['node-redis', 'node-redis-v4'] as const satisfies readonly ClientKind[])(
    '%s',
    async (kind) => {
      const prefix = randomPrefix();
      const limiter = createLimiter({
        name: 'moving',
        store: new RedisStore({ client: await cluster.storeClient(kind), prefix }),
        logger: quiet,
        policies: [
          { name: 'fw', algorithm: 'fixed-window', limit: 1_000_000, windowMs: 600_000 },
          { name: 'sw', algorithm: 'sliding-window', limit: 1_000_000, windowMs: 600_000 },
        ],
      });
      const hot = `hot-${kind}`;
      const slot = keySlot(`{${hot}}`);
      const source = await cluster.ownerOf(slot);
      const target = cluster.masters.find((m) => m !== source) as RedisServer;
      // Keys of other slots on the same master.
      const others: string[] = [];
      for (let i = 0; others.length < 12; i++) {
        const k = `other-${kind}-${i}`;
        if (keySlot(`{${k}}`) !== slot && (await cluster.ownerOf(keySlot(`{${k}}`))) === source) others.push(k);
      }
      await limiter.check(hot);
      for (const k of others) expect((await limiter.check(k)).degraded).toBe(false);
      // Half of the hot key's state moved: every check of it now meets TRYAGAIN.
      await cluster.node(target).cluster('SETSLOT', slot, 'IMPORTING', await id(source));
      await cluster.node(source).cluster('SETSLOT', slot, 'MIGRATING', await id(target));
      const names = (await cluster.node(source).cluster('GETKEYSINSLOT', slot, 10)) as string[];
      expect(names.length).toBe(2);
      await cluster.node(source).migrate('127.0.0.1', target.port, names[0] as string, 0, 5_000);
      try {
        let hotDegraded = 0;
        let othersDegraded = 0;
        let othersChecks = 0;
        const until = performance.now() + 1_500;
        while (performance.now() < until) {
          const [h, ...rest] = await Promise.all([limiter.check(hot), ...others.map((k) => limiter.check(k))]);
          if (h?.degraded === true) hotDegraded += 1;
          for (const d of rest) {
            othersChecks += 1;
            if (d.degraded) othersDegraded += 1;
          }
        }
        console.info(
          `${kind}, a slot mid-move: its key degraded ${hotDegraded} times; the master's other keys ${othersDegraded} of ${othersChecks}`,
        );
        expect(hotDegraded).toBeGreaterThan(0);
        expect(othersDegraded).toBe(0);
      } finally {
        // Finish the move, so the cluster is whole for the next case.
        for (;;) {
          const left = (await cluster.node(source).cluster('GETKEYSINSLOT', slot, 10)) as string[];
          if (left.length === 0) break;
          for (const k of left) await cluster.node(source).migrate('127.0.0.1', target.port, k, 0, 5_000);
        }
        for (const m of cluster.masters) await cluster.node(m).cluster('SETSLOT', slot, 'NODE', await id(target));
        await limiter.close();
      }
    },
    30_000,
  );
});
