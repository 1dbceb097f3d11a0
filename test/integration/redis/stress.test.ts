/**
 * @module Load on a healthy Redis never degrades a decision: with the default failure options (50 ms
 * storeTimeoutMs, breaker on), a process whose event loop is blocked in 80 ms slices, and four processes
 * firing 100 concurrent checks each at one key, and a backlog of 5,000 checks on one connection that takes
 * longer than the timeout to drain, get only store answers, exact to the unit. What a
 * "slow store" is (failure/watchdog.ts) is measured on Redis, not on this process's own lag.
 */
import type { ChildProcess } from 'node:child_process';
import { createLimiter, RedisStore } from '@tollgate/core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeRedis, type RedisServer, randomPrefix, startRedis } from './harness.js';
import { nextMessage, startWorkers, stopWorkers } from './worker-pool.js';

const quiet = { warn() {}, error() {} };
const WORKERS = 4;
const CONCURRENT = 100;

describeRedis('a healthy Redis under load gives no degraded decision', () => {
  let server: RedisServer;
  let workers: ChildProcess[] = [];

  beforeAll(async () => {
    server = await startRedis();
    workers = await startWorkers(new URL('./stress-worker.ts', import.meta.url), WORKERS, { REDIS_PORT: String(server.port) });
  }, 60_000);

  afterAll(async () => {
    stopWorkers(workers);
    await server?.close();
  });

  it('a check loop in a process that blocks its event loop in 80 ms slices: 0 degraded, limits exact', async () => {
    const client = await server.readyClient();
    const limiter = createLimiter({
      policies: { limit: 300, windowMs: 3_600_000 },
      store: new RedisStore({ client, prefix: randomPrefix() }),
      logger: quiet,
    });
    let blocked = 0;
    // Every 10 ms, 80 ms of synchronous work: the loop is blocked most of the time.
    const blocker = setInterval(() => {
      const until = performance.now() + 80;
      while (performance.now() < until) {
        // starving the event loop on purpose
      }
      blocked += 1;
    }, 10);
    let degraded = 0;
    let admitted = 0;
    const started = performance.now();
    try {
      for (let round = 0; round < 40; round++) {
        const ds = await Promise.all(Array.from({ length: 10 }, () => limiter.check('starved')));
        for (const d of ds) {
          if (d.degraded) degraded += 1;
          else if (d.allowed) admitted += 1;
        }
      }
    } finally {
      clearInterval(blocker);
    }
    const elapsed = performance.now() - started;
    console.info(`starved process: ${400} checks in ${Math.round(elapsed)} ms, ${blocked} blocked slices of 80 ms, ${degraded} degraded`);
    expect(blocked).toBeGreaterThanOrEqual(10);
    expect(degraded).toBe(0);
    // 400 checks against a limit of 300: exactly 300 admitted, by the store.
    expect(admitted).toBe(300);
    expect(limiter.stats()).toMatchObject({ storeErrors: 0, outages: 0 });
    await limiter.close();
  }, 60_000);

  it('a backlog of 5,000 checks in flight on one connection drains for longer than the timeout: 0 degraded', async () => {
    const client = await server.readyClient();
    const limiter = createLimiter({
      policies: [
        { name: 'second', limit: 1_000, windowMs: 1_000 },
        { name: 'hour', algorithm: 'sliding-window', limit: 4_000, windowMs: 3_600_000 },
      ],
      store: new RedisStore({ client, prefix: randomPrefix() }),
      logger: quiet,
    });
    await limiter.check('warm-up');
    const started = performance.now();
    const ds = await Promise.all(Array.from({ length: 5_000 }, (_, i) => limiter.check(`k${i % 50}`)));
    const drained = performance.now() - started;
    const degraded = ds.filter((d) => d.degraded).length;
    console.info(`backlog: 5000 checks drained in ${Math.round(drained)} ms (storeTimeoutMs 50), ${degraded} degraded`);
    expect(degraded).toBe(0);
    expect(limiter.stats()).toMatchObject({ storeErrors: 0, outages: 0 });
    await limiter.close();
  }, 60_000);

  it(`${WORKERS} processes x ${CONCURRENT} concurrent checks on one key: exact, 0 degraded (5 rounds)`, async () => {
    let degradedTotal = 0;
    for (let round = 0; round < 5; round++) {
      const prefix = randomPrefix();
      const answers = workers.map((w) => nextMessage<{ admitted: number; degraded: number }>(w));
      for (const w of workers) w.send({ prefix, limit: 250, requests: CONCURRENT });
      const results = await Promise.all(answers);
      const degraded = results.reduce((sum, r) => sum + r.degraded, 0);
      degradedTotal += degraded;
      expect(degraded).toBe(0);
      expect(results.reduce((sum, r) => sum + r.admitted, 0)).toBe(250);
    }
    console.info(`${WORKERS} x ${CONCURRENT} concurrent, 5 rounds: ${degradedTotal} of ${5 * WORKERS * CONCURRENT} degraded`);
  }, 60_000);
});
