/**
 * @module @tollgate/client's shaper through a Redis that hangs (SIGSTOP: the connection stays open, no
 * reply comes). The core's breaker lets one check through as a probe about once a second, and that check
 * waits `storeTimeoutMs` before `onStoreError: 'local'` answers it; a shaper decides its tasks one at a
 * time, so the whole queue waits with it. With the default `storeTimeoutMs` the queue keeps most of its
 * rate while Redis hangs (main before, with a default of 1 s: a third, 10 starts in 3 s).
 */
import { createShaper } from '@tollgate/client';
import { RedisStore } from '@tollgate/core';
import { Redis } from 'ioredis';
import { expect, it } from 'vitest';
import { describeRedis, HOST, randomPrefix, suiteRedis, waitFor } from './harness.js';

const RATE = 10;
const PAUSE_MS = 3_000;
/** Starts while Redis hangs, at least: 80 % of the local limiter's rate over the pause. */
const MIN_STARTS = Math.floor(((RATE * PAUSE_MS) / 1_000) * 0.8);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describeRedis('client shaper: a Redis that hangs', () => {
  const redis = suiteRedis();

  it(`onStoreError 'local' keeps the queue at most of its rate (at least ${MIN_STARTS} starts in ${PAUSE_MS} ms of SIGSTOP)`, async () => {
    const client = new Redis({ host: HOST, port: redis().port, autoResendUnfulfilledCommands: false, retryStrategy: () => 50 });
    client.on('error', () => undefined);
    await waitFor('ioredis ready', () => client.status === 'ready');
    const shaper = createShaper({
      policies: { name: 'partner', algorithm: 'sliding-log', limit: RATE, windowMs: 1_000 },
      store: new RedisStore({ client, prefix: randomPrefix(), logger: { warn: () => undefined, error: () => undefined } }),
      key: 'outage',
      maxDelayMs: 20_000,
    });
    const starts: number[] = [];
    const tasks = Array.from({ length: 70 }, () => shaper.schedule(() => starts.push(performance.now())).catch(() => undefined));
    try {
      await sleep(1_000);
      const from = performance.now();
      redis().signal('SIGSTOP');
      await sleep(PAUSE_MS);
      const to = performance.now();
      redis().signal('SIGCONT');
      await Promise.all(tasks);
      const during = starts.filter((t) => t >= from && t < to).length;
      console.info(`shaper while Redis hung ${PAUSE_MS} ms: ${during} starts (local rate ${RATE}/s)`);
      expect(during).toBeGreaterThanOrEqual(MIN_STARTS);
    } finally {
      redis().signal('SIGCONT');
      await shaper.close();
      client.disconnect();
    }
  }, 30_000);
});
