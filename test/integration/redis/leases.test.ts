/**
 * @module Redis concurrency leases (stores/redis/lease-script.ts) against a real redis-server:
 * the Lua twin makes the same decisions as the TypeScript kernel on random traces (injected time);
 * N processes contending for one key never hold more than `limit` leases at once; the leases of a
 * killed process are reclaimed after the lease time.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createLimiter, RedisLeases } from '@tollgate/core';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { acquireLease, type LeaseTable, releaseLease, renewLease } from '../../../packages/core/src/algorithms/concurrency.js';
import { describeRedis, HOST, type RedisServer, randomPrefix, startRedis, waitFor } from './harness.js';

function rng(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return s / 2147483648;
  };
}

describeRedis('Redis leases', () => {
  let server: RedisServer;
  let client: Redis;
  beforeAll(async () => {
    server = await startRedis();
    client = new Redis({ host: HOST, port: server.port });
  });
  afterAll(async () => {
    client?.disconnect();
    await server?.stop();
  });

  it('decides like the TypeScript kernel on random traces (differential, injected time)', async () => {
    for (const seed of [1, 2, 3, 4, 5]) {
      const random = rng(seed);
      const leases = new RedisLeases(client, randomPrefix());
      const table: LeaseTable = new Map();
      const limit = 1 + Math.floor(random() * 4);
      const leaseMs = 50 + Math.floor(random() * 200);
      let now = 1_000_000;
      let next = 1;
      const live: number[] = [];
      for (let step = 0; step < 150; step++) {
        now += Math.floor(random() * 40);
        const r = random();
        if (r < 0.5) {
          const id = next++;
          const ts = acquireLease(table, now, limit, leaseMs, id);
          const lua = await leases.acquire('k', 'p', limit, leaseMs, String(id), now);
          expect(lua.granted, `seed ${seed} step ${step} acquire`).toBe(ts);
          expect(lua.inFlight).toBe(table.size);
          if (ts) live.push(id);
        } else if (r < 0.8 && live.length > 0) {
          const id = live.splice(Math.floor(random() * live.length), 1)[0] as number;
          expect(await leases.release('k', 'p', String(id)), `seed ${seed} step ${step} release`).toBe(releaseLease(table, id));
        } else if (live.length > 0) {
          const id = live[Math.floor(random() * live.length)] as number;
          const ts = renewLease(table, id, now, leaseMs);
          expect(await leases.renew('k', 'p', leaseMs, String(id), now), `seed ${seed} step ${step} renew`).toBe(ts);
        }
      }
    }
  });

  it('shares a concurrency policy between limiters (processes) through Redis, all-or-nothing with a rate policy', async () => {
    const prefix = randomPrefix();
    const make = () =>
      createLimiter({
        policies: [
          { name: 'exports', algorithm: 'concurrency', limit: 2, leaseMs: 1_500, leases: new RedisLeases(client, prefix) },
          { name: 'hourly', algorithm: 'fixed-window', limit: 5, windowMs: 3_600_000 },
        ],
      });
    const a = make();
    const b = make();
    const held = [await a.check('u'), await a.check('u')];
    expect(held.every((d) => d.allowed)).toBe(true);
    const refused = await b.check('u');
    expect(refused).toMatchObject({ allowed: false, policy: 'exports', remaining: 0 });
    expect(refused.policies[0]).toMatchObject({ name: 'exports', remaining: 0 });
    // Refused for concurrency: the hourly policy of b was not charged.
    held[0]?.release?.();
    await waitFor(
      'the release to reach Redis',
      async () => (await client.zcard(new RedisLeases(client, prefix).keyOf('u', 'exports'))) === 1,
    );
    const admitted = await b.check('u');
    expect(admitted.allowed).toBe(true);
    expect(admitted.policies[1]?.remaining).toBe(4);
    // a "dies" holding its other lease: it expires after leaseMs and the slot comes back.
    admitted.release?.();
    await waitFor(
      'the released lease to leave Redis',
      async () => (await client.zcard(new RedisLeases(client, prefix).keyOf('u', 'exports'))) === 1,
    );
    expect((await b.check('u')).allowed).toBe(true);
    expect((await b.check('u')).allowed).toBe(false);
    await new Promise((r) => setTimeout(r, 1_550));
    const afterExpiry = [await b.check('u'), await b.check('u')];
    expect(afterExpiry.map((d) => d.allowed)).toEqual([true, true]);
    await a.close();
    await b.close();
  });

  it('never holds more than limit leases across processes, and reclaims a killed process’s leases', async () => {
    const prefix = randomPrefix();
    const LIMIT = 3;
    const script = fileURLToPath(new URL('./leases-worker.ts', import.meta.url));
    const workers: ChildProcess[] = [];
    const results: Promise<{ granted: number; maxSeen: number }>[] = [];
    for (let i = 0; i < 4; i++) {
      const w = fork(script, [], {
        execArgv: ['--import', 'tsx', '--conditions=@tollgate/source'],
        env: { ...process.env, REDIS_PORT: String(server.port), PREFIX: prefix, LIMIT: String(LIMIT), WORKER: String(i) },
      });
      workers.push(w);
      results.push(
        new Promise((resolve, reject) => {
          w.once('message', (m) => resolve(m as { granted: number; maxSeen: number }));
          w.once('exit', (code) => (code === 0 ? undefined : reject(new Error(`worker exited with ${code}`))));
        }),
      );
    }
    const done = await Promise.all(results);
    // Each worker counts holders in a Redis counter between its grant and its release: never above the limit.
    expect(Math.max(...done.map((d) => d.maxSeen))).toBeLessThanOrEqual(LIMIT);
    expect(done.reduce((n, d) => n + d.granted, 0)).toBeGreaterThan(LIMIT * 4);

    // A process takes every slot with a 400 ms lease, then dies without releasing.
    const killed = fork(script, [], {
      execArgv: ['--import', 'tsx', '--conditions=@tollgate/source'],
      env: { ...process.env, REDIS_PORT: String(server.port), PREFIX: prefix, LIMIT: String(LIMIT), HOG: '400' },
    });
    await new Promise((resolve) => killed.once('message', resolve));
    killed.kill('SIGKILL');
    const leases = new RedisLeases(client, prefix);
    expect((await leases.acquire('shared', 'exports', LIMIT, 400, 'after-kill')).granted).toBe(false);
    await waitFor(
      'leases of the killed process to expire',
      async () => (await leases.acquire('shared', 'exports', LIMIT, 400, 'after-kill')).granted,
      3_000,
    );
    for (const w of workers) w.kill();
  }, 60_000);
});
