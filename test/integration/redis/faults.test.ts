/**
 * @module Faults, through the limiter's failure mode: redis-server stopped mid-run (requests keep being
 * answered per `onStoreError`, each within the store timeout), then restarted (the limiter recovers by
 * itself, no app restart), and a slow Redis (DEBUG SLEEP) that trips the timeout. No unhandled
 * rejection at any point.
 */
import { createLimiter, type Decision, formatLine, type LogFields, RedisStore } from '@tollgate/core';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { describeRedis, type RedisServer, randomPrefix, startRedis, waitFor } from './harness.js';

const TIMEOUT = 100;

describeRedis('RedisStore faults and the limiter failure mode', () => {
  let server: RedisServer;
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);

  beforeAll(async () => {
    server = await startRedis();
    process.on('unhandledRejection', onUnhandled);
  });
  afterAll(async () => {
    process.off('unhandledRejection', onUnhandled);
    await server.close();
  });
  afterEach(async () => {
    await server.start();
    // Let any late settlement surface before checking that nothing went unhandled.
    await new Promise((r) => setImmediate(r));
    expect(unhandled).toEqual([]);
  });

  function setup(onStoreError: 'open' | 'closed' | 'local') {
    // ioredis defaults (offline queue on, 20 retries per request) on purpose: the store must not hang on them.
    const client = server.client({ retryStrategy: () => 25 });
    const store = new RedisStore({ client, prefix: randomPrefix() });
    const logged: string[] = [];
    const events: string[] = [];
    const limiter = createLimiter({
      policies: { name: 'api', limit: 3, windowMs: 60_000 },
      store,
      onStoreError,
      storeTimeoutMs: TIMEOUT,
      localShare: 0.67,
      breaker: { failureThreshold: 2, cooldownMs: 100 },
      logger: {
        warn: (fields: LogFields, m: string) => logged.push(formatLine(fields, m)),
        error: (fields: LogFields, m: string) => logged.push(formatLine(fields, m)),
      },
    });
    limiter.on('store-error', () => events.push('store-error'));
    limiter.on('breaker', ({ state }) => events.push(`breaker:${state}`));
    return { client, store, limiter, logged, events };
  }

  async function timed(check: Promise<Decision>): Promise<[Decision, number]> {
    const started = performance.now();
    const d = await check;
    return [d, performance.now() - started];
  }

  const modes = {
    open: (ds: Decision[]) => {
      for (const d of ds) expect(d).toMatchObject({ allowed: true, degraded: true, reason: 'store-error' });
    },
    closed: (ds: Decision[]) => {
      for (const d of ds) expect(d).toMatchObject({ allowed: false, degraded: true, reason: 'store-error' });
    },
    // The in-process fallback holds 0.67 of the limit of 3: two requests, then 429s, all marked degraded.
    local: (ds: Decision[]) => {
      expect(ds.map((d) => d.allowed)).toEqual([true, true, false, false, false, false]);
      for (const d of ds) expect(d.degraded).toBe(true);
      expect(ds[2]?.reason).toBe('limited');
    },
  };

  for (const mode of Object.keys(modes) as (keyof typeof modes)[]) {
    it(`onStoreError '${mode}': Redis stopped mid-run, answers keep flowing within the timeout, then recovery on restart`, async () => {
      const { client, store, limiter, logged, events } = setup(mode);
      await waitFor('client ready', () => client.status === 'ready');
      expect(await limiter.check('user')).toMatchObject({ allowed: true, degraded: false, remaining: 2 });

      await server.stop();
      const during: Decision[] = [];
      for (let i = 0; i < 6; i++) {
        const [d, ms] = await timed(limiter.check('user'));
        expect(ms).toBeLessThan(TIMEOUT + 50);
        during.push(d);
      }
      modes[mode](during);
      expect(limiter.stats().storeErrors).toBe(6);
      expect(events).toContain('breaker:open');
      expect(logged.some((m) => m.startsWith('ERR_RL_STORE_FAILED'))).toBe(true);

      await server.start();
      await waitFor('the limiter to use Redis again', async () => !(await limiter.check('recovery')).degraded, 10_000);
      const after = await limiter.check('user');
      // Nothing was persisted: the restarted server starts afresh; the script was sent to it again.
      expect(after).toMatchObject({ allowed: true, degraded: false, remaining: 2 });
      expect(store.scriptReloads).toBeGreaterThanOrEqual(1);
      expect(events.at(-1)).toBe('breaker:closed');
    });
  }

  it('a slow Redis (DEBUG SLEEP) trips the timeout; the late reply changes nothing and is not unhandled', async () => {
    const { client, limiter, events } = setup('open');
    await waitFor('client ready', () => client.status === 'ready');
    expect((await limiter.check('user')).degraded).toBe(false);
    // Sent on the store's own connection, so the script is queued behind the sleep.
    const sleeping = client.call('DEBUG', 'SLEEP', '0.5');
    const [d, ms] = await timed(limiter.check('user'));
    expect(d).toMatchObject({ allowed: true, degraded: true, reason: 'store-error' });
    expect(ms).toBeGreaterThanOrEqual(TIMEOUT - 5);
    expect(ms).toBeLessThan(TIMEOUT + 100);
    expect(events).toEqual(['store-error']);
    await sleeping;
    const again = await limiter.check('user');
    expect(again.degraded).toBe(false);
    // The timed-out request was still charged when Redis woke up: under one request is left of 3.
    expect(again.remaining).toBeLessThan(1);
  });
});
