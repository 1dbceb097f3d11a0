/**
 * @module Faults, through the limiter's failure mode: redis-server stopped mid-run (requests keep being
 * answered per `onStoreError`, each within the store timeout), then restarted (the limiter recovers by
 * itself, no app restart); a slow Redis (DEBUG SLEEP) that trips the watchdog; short faults (CLIENT KILL,
 * a ~100 ms restart, DEBUG SLEEP 0.2) whose degraded time stays within a small bound of the fault's own
 * length; OOM under `noeviction` (a node error: the failure mode answers, the node recovers when memory
 * frees); a corrupt hot key (WRONGTYPE, a foreign value) that heals by itself; and a limiter used before its client is
 * connected, which waits for the connection. No unhandled rejection at any point.
 */
import { createLimiter, type Decision, type LogFields, RedisStore } from '@tollgate/core';
import { formatLine } from '@tollgate/core/adapter';
import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { describeRedis, type RedisServer, randomPrefix, startRedis, waitFor } from './harness.js';

const TIMEOUT = 100;
const quiet = { warn() {}, error() {} };

/**
 * Checks back to back (4 in flight, a 1 ms pause between rounds) on keys `k0..k3` until `stop()`, noting
 * when each degraded decision was answered: the degraded time of a fault is `last - first` of those.
 */
function checkLoop(check: (key: string) => Promise<Decision>) {
  const degradedAt: number[] = [];
  let total = 0;
  let running = true;
  const done = (async () => {
    while (running) {
      const ds = await Promise.all([0, 1, 2, 3].map((i) => check(`k${i}`)));
      const t = performance.now();
      for (const d of ds) {
        total += 1;
        if (d.degraded) degradedAt.push(t);
      }
      await new Promise((r) => setTimeout(r, 1));
    }
  })();
  return {
    async stop() {
      running = false;
      await done;
      const first = degradedAt[0] ?? 0;
      const last = degradedAt.at(-1) ?? 0;
      return { total, degraded: degradedAt.length, degradedMs: Math.round(last - first) };
    },
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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
    // Except the one the docs tell users to turn off (WRN_RL_CLIENT_RESENDS): with it on, a check sent just
    // before the stop is sent again after the restart and charges 'user' there, which this test rules out.
    const client = server.client({ retryStrategy: () => 25, autoResendUnfulfilledCommands: false });
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
      // A key Redis exhausted before the stop, and never asked for during it.
      for (let i = 0; i < 3; i++) await limiter.check('spent');
      expect(await limiter.check('spent')).toMatchObject({ allowed: false, degraded: false });
      const window = Math.floor(Date.now() / 60_000);

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
      // Nothing was persisted: the restarted server starts afresh; the script was sent to it again. Every
      // mode remembers what 'spent' had used and charges it again (failure/restore/budget-restore.ts), unless its
      // window turned meanwhile. Read on 'spent', not 'user': a check of 'user' that ioredis took as its
      // socket died (into its offline queue, the defaults here) may be sent after the reconnect and charge
      // 'user' once more.
      const restores = Math.floor(Date.now() / 60_000) === window;
      if (restores) await waitFor('the budgets restored', () => logged.some((m) => m.startsWith('WRN_RL_BUDGETS_RESTORED')));
      const after = await limiter.check('spent');
      expect(after).toMatchObject(restores ? { allowed: false, degraded: false } : { allowed: true, degraded: false, remaining: 2 });
      expect(store.scriptReloads).toBeGreaterThanOrEqual(1);
      expect(events.at(-1)).toBe('breaker:closed');
    });
  }

  it('Redis stopped (connections refused): the breaker reads open between probes, not half-open; an idle limiter turns half-open once the client is ready again', async () => {
    const { client, limiter } = setup('local');
    let state = 'closed';
    const states: string[] = [];
    limiter.on('breaker', (e) => {
      state = e.state;
      states.push(e.state);
    });
    await waitFor('client ready', () => client.status === 'ready');
    await limiter.check('user');
    await server.stop();
    // A check every 40 ms (each one the probe, refused at once), the state read between them as a scrape would.
    const seen: string[] = [];
    for (let i = 0; i < 15; i++) {
      await limiter.check('user');
      await sleep(40);
      seen.push(state);
    }
    // Before: 'half-open' 10 ms after each refused probe, in 15 of 15 reads; the breaker alert waits for 'open'.
    expect(seen.filter((x) => x === 'open').length).toBeGreaterThanOrEqual(13);
    // No more checks: Redis comes back, and the breaker says the next call probes without one being made.
    // Cleared before the restart: the client may reconnect (every 25 ms) before start() has seen PING.
    states.length = 0;
    await server.start();
    await waitFor('client ready again', () => client.status === 'ready', 10_000);
    // Half-open, and then closed at once when the limiter's own calls after a reconnect (the budget restore's) answer.
    await waitFor('the breaker half-open', () => states.includes('half-open'), 5_000);
    expect(states[0]).toBe('half-open');
    expect((await limiter.check('user')).degraded).toBe(false);
    expect(state).toBe('closed');
    await limiter.close();
  });

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

  describe('short faults degrade about as long as they last (default failure options, storeTimeoutMs 50)', () => {
    // Reconnect quickly: ioredis' default waits 50 ms, then 100 ms… between attempts.
    async function defaults() {
      const client = await server.readyClient({ retryStrategy: () => 10 });
      const limiter = createLimiter({
        policies: { limit: 1_000_000, windowMs: 60_000 },
        store: new RedisStore({ client, prefix: randomPrefix() }),
        logger: quiet,
      });
      const loop = checkLoop((key) => limiter.check(key));
      await sleep(50);
      return { client, limiter, loop };
    }

    it('CLIENT KILL of the store connection', async () => {
      const { client, limiter, loop } = await defaults();
      const admin = await server.readyClient();
      const id = await client.client('ID');
      const closed = new Promise((r) => client.once('close', r));
      const killedAt = performance.now();
      await admin.client('KILL', 'ID', String(id));
      await closed;
      await waitFor('reconnected', () => client.status === 'ready');
      const reconnectMs = performance.now() - killedAt;
      await sleep(100);
      const r = await loop.stop();
      console.info(
        `CLIENT KILL: reconnected after ${Math.round(reconnectMs)} ms; ${r.degraded} of ${r.total} degraded over ${r.degradedMs} ms`,
      );
      expect(r.degradedMs).toBeLessThanOrEqual(reconnectMs + 100);
      expect(limiter.stats().outages).toBeLessThanOrEqual(1);
      expect((await limiter.check('after')).degraded).toBe(false);
    });

    it('a ~100 ms restart of redis-server', async () => {
      const { limiter, loop } = await defaults();
      const stoppedAt = performance.now();
      await server.stop();
      await sleep(100);
      await server.start();
      const downMs = performance.now() - stoppedAt;
      await sleep(150);
      const r = await loop.stop();
      console.info(`restart: down ${Math.round(downMs)} ms; ${r.degraded} of ${r.total} degraded over ${r.degradedMs} ms`);
      expect(r.degraded).toBeGreaterThan(0);
      expect(r.degradedMs).toBeLessThanOrEqual(downMs + 150);
      expect(limiter.stats().outages).toBe(1);
      expect((await limiter.check('after')).degraded).toBe(false);
    });

    it('DEBUG SLEEP 0.2 (Redis answers nobody for 200 ms)', async () => {
      const { limiter, loop } = await defaults();
      const admin = await server.readyClient();
      const started = performance.now();
      await admin.call('DEBUG', 'SLEEP', '0.2');
      const sleptMs = performance.now() - started;
      await sleep(100);
      const r = await loop.stop();
      console.info(`DEBUG SLEEP 0.2: slept ${Math.round(sleptMs)} ms; ${r.degraded} of ${r.total} degraded over ${r.degradedMs} ms`);
      expect(r.degraded).toBeGreaterThan(0);
      // Silent for 50 ms before the node is judged down; back on the first late reply.
      expect(r.degradedMs).toBeLessThanOrEqual(sleptMs);
      expect(limiter.stats().outages).toBe(1);
    });
  });

  it('OOM under noeviction is a node error: the failure mode answers, health goes red once, and it recovers when memory frees', async () => {
    const client = await server.readyClient();
    const admin = await server.readyClient();
    const errors: { scope: string; message: string }[] = [];
    const limiter = createLimiter({
      policies: { limit: 3, windowMs: 60_000 },
      store: new RedisStore({ client, prefix: randomPrefix() }),
      localShare: 0.67,
      logger: quiet,
    });
    limiter.on('store-error', (e) => errors.push({ scope: e.scope, message: String(e.error) }));
    expect((await limiter.check('user')).degraded).toBe(false);
    await admin.config('SET', 'maxmemory-policy', 'noeviction');
    await admin.config('SET', 'maxmemory', '1');
    try {
      const during: Decision[] = [];
      for (let i = 0; i < 4; i++) during.push(await limiter.check('fresh'));
      // The default 'local' fallback limits at 0.67 of 3: two, then refused; never off.
      expect(during.map((d) => [d.degraded, d.allowed])).toEqual([
        [true, true],
        [true, true],
        [true, false],
        [true, false],
      ]);
      expect(errors[0]).toMatchObject({ scope: 'node' });
      expect(errors[0]?.message).toMatch(/^ReplyError: OOM /);
      expect(limiter.stats().outages).toBe(1);
    } finally {
      await admin.config('SET', 'maxmemory', '0');
    }
    await waitFor('the store to answer again', async () => !(await limiter.check('after')).degraded);
  });

  it('a corrupt hot key (a foreign value, WRONGTYPE) heals by itself: other keys keep exact limits, store health stays green', async () => {
    const client = await server.readyClient();
    const admin = await server.readyClient();
    const prefix = randomPrefix();
    const states: string[] = [];
    const scopes = new Set<string>();
    const repaired: string[] = [];
    const limiter = createLimiter({
      policies: { algorithm: 'gcra', limit: 5, windowMs: 60_000 },
      store: new RedisStore({ client, prefix, logger: quiet, onStateRepaired: (e) => repaired.push(e.key) }),
      logger: quiet,
    });
    limiter.on('breaker', (e) => states.push(e.state));
    limiter.on('store-error', (e) => scopes.add(`${e.scope}:${e.key}`));
    await limiter.check('hot');
    await limiter.check('list');
    const [hotName] = await admin.keys(`${prefix}:v2:{hot}*`);
    const [listName] = await admin.keys(`${prefix}:v2:{list}*`);
    await admin.set(hotName as string, 'not a limiter state');
    await admin.del(listName as string);
    await admin.lpush(listName as string, 'x');
    let corruptDegraded = 0;
    const admitted = new Map<string, number>();
    for (let i = 0; i < 200; i++) {
      const [hot, list, other] = await Promise.all([limiter.check('hot'), limiter.check('list'), limiter.check(`user${i % 20}`)]);
      if (hot?.degraded) corruptDegraded += 1;
      if (list?.degraded) corruptDegraded += 1;
      expect(other?.degraded).toBe(false);
      if (hot?.allowed) admitted.set('hot', (admitted.get('hot') ?? 0) + 1);
      if (list?.allowed) admitted.set('list', (admitted.get('list') ?? 0) + 1);
      if (other?.allowed) admitted.set(`user${i % 20}`, (admitted.get(`user${i % 20}`) ?? 0) + 1);
    }
    console.info(`corrupt keys: ${corruptDegraded} of 400 checks on them degraded, 0 of 200 on 20 healthy keys`);
    // The script read each corrupt key as never seen (once), and it counted on exactly from there.
    expect(corruptDegraded).toBe(0);
    expect(repaired.sort()).toEqual(['hot', 'list']);
    expect(admitted.get('hot')).toBe(5);
    expect(admitted.get('list')).toBe(5);
    // Each healthy key: 10 checks against a limit of 5 (a burst of 5 within the same second).
    expect([...admitted.entries()].filter(([k]) => k.startsWith('user')).map(([, n]) => n)).toEqual(Array(20).fill(5));
    expect(states).toEqual([]);
    expect(limiter.stats().outages).toBe(0);
    expect([...scopes]).toEqual([]);
  });

  describe('startup', () => {
    async function firstChecks(client: Redis) {
      const limiter = createLimiter({
        policies: { limit: 10, windowMs: 60_000 },
        store: new RedisStore({ client, prefix: randomPrefix() }),
        logger: quiet,
      });
      const events: string[] = [];
      limiter.on('store-error', () => events.push('store-error'));
      limiter.on('breaker', (e) => events.push(e.state));
      const ds = await Promise.all(Array.from({ length: 20 }, () => limiter.check('user')));
      return { ds, events };
    }

    it('a limiter used right after new Redis(), before ready, waits for the connection and answers from Redis', async () => {
      const client = server.client();
      expect(client.status).not.toBe('ready');
      const { ds, events } = await firstChecks(client);
      expect(ds.filter((d) => d.degraded)).toHaveLength(0);
      expect(ds.filter((d) => d.allowed)).toHaveLength(10);
      expect(events).toEqual([]);
    });

    it('a lazyConnect client is connected by the first check, which waits for it', async () => {
      const client = server.client({ lazyConnect: true });
      expect(client.status).toBe('wait');
      const { ds, events } = await firstChecks(client);
      expect(ds.filter((d) => d.degraded)).toHaveLength(0);
      expect(events).toEqual([]);
    });
  });
});
