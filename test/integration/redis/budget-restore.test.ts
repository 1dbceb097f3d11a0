/**
 * @module Budgets survive a Redis that comes back without its data (failure/restore/budget-restore.ts), on a real
 * redis-server restarted without persistence: the limiter finds its mark gone after the reconnect and
 * charges Redis again what each key it remembers had used, so a key with 8 of 10 used admits 2 in the
 * rest of its window, not 10. A reconnect to a Redis that kept its data (the connection killed) charges
 * nothing. Each client whose connection events tollgate watches (ioredis, iovalkey, node-redis). A restart
 * under steady traffic charges the outage's admissions once. A Redis back from an older snapshot charges
 * each key what it lacks, also a hot key answered from `localBatch` batches.
 */
import { createLimiter, type Decision, type Limiter, RedisStore } from '@tollgate/core';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { FaultProxy } from './fault-proxy.js';
import { clearOfWindowEnd, describeRedis, type RedisServer, randomPrefix, startRedis, waitFor } from './harness.js';

const WINDOW_MS = 600_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describeRedis('budgets after a Redis that lost its data', () => {
  let server: RedisServer;
  let admin: Redis;

  beforeAll(async () => {
    server = await startRedis();
    admin = await server.readyClient({ retryStrategy: () => 50 });
  });
  afterAll(async () => {
    await server?.close();
  });

  /** Restarts the server (with what it last saved, if anything) and waits until `limiter` is answered by it for `key`. */
  async function restart(limiter: Limiter, key: string): Promise<void> {
    await server.stop();
    await server.start();
    await waitFor('an answer from Redis', () =>
      limiter.peek(key).then(
        (d) => !d.degraded,
        () => false,
      ),
    );
  }

  /** Checks of one hot key (fast enough for `localBatch` to batch it); how many were admitted. */
  async function hot(limiter: Limiter, n: number): Promise<number> {
    let admitted = 0;
    for (let i = 0; i < n; i++) {
      if ((await limiter.check('hot')).allowed) admitted += 1;
      if (i % 50 === 0) await sleep(1);
    }
    return admitted;
  }

  /**
   * Checks `key` one after another until `stop()` (a 1 ms pause every `pauseEvery` checks), `each` told of
   * every decision before the next check; `stop()` resolves once the loop ended.
   */
  function withoutPause(
    limiter: Limiter,
    key: string,
    pauseEvery: number,
    each: (d: Decision) => Promise<unknown> | undefined,
  ): { stop: () => Promise<void> } {
    let stopped = false;
    const loop = (async () => {
      for (let i = 1; !stopped; i++) {
        await each(await limiter.check(key));
        if (i % pauseEvery === 0) await sleep(1);
      }
    })();
    return {
      stop: () => {
        stopped = true;
        return loop;
      },
    };
  }

  it('two processes of one limiter: both restore, and a key both decided is charged once, by the most either saw, not by both', async () => {
    const into = Date.now() % WINDOW_MS;
    if (into > WINDOW_MS - 20_000) await sleep(WINDOW_MS - into + 50);
    const prefix = randomPrefix();
    const warnings: Record<string, unknown>[] = [];
    const processes = await Promise.all(
      [0, 1].map(async () =>
        createLimiter({
          name: 'shared',
          policies: { algorithm: 'fixed-window', limit: 10, windowMs: WINDOW_MS },
          store: new RedisStore({ client: await server.storeClient('ioredis'), prefix, validate: false }),
          storeTimeoutMs: 2_000,
          logger: { warn: (o: Record<string, unknown>) => warnings.push(o), error() {} },
        }),
      ),
    );
    const [a, b] = processes as [Limiter, Limiter];
    // a saw 4 used; b, after it, 7.
    for (let i = 0; i < 4; i++) expect((await a.check('k')).allowed).toBe(true);
    for (let i = 0; i < 3; i++) expect((await b.check('k')).allowed).toBe(true);
    await server.stop();
    await sleep(200);
    await server.start();
    // Each client reconnects on its own backoff, so the second restore can come well after the first: wait
    // for 7 charged, then look again once both had time to charge more (a fixed pause was short on a busy machine).
    const remaining = () =>
      a.peek('k').then(
        (d) => (d.degraded ? undefined : d.remaining),
        () => undefined,
      );
    await waitFor('7 charged again', async () => (await remaining()) === 3);
    await sleep(1_000);
    // 7 charged again, in whichever order the two come (the ledger: test/integration/redis/budget-restore-processes.test.ts),
    // never 11 (both); the process that saw 4 charges nothing after the other, 3 before it.
    expect(warnings.filter((w) => w.code === 'WRN_RL_BUDGETS_RESTORED').length).toBeLessThanOrEqual(2);
    expect(await remaining()).toBe(3);
    await Promise.all([a.close(), b.close()]);
  }, 60_000);

  for (const algorithm of ['fixed-window', 'gcra'] as const) {
    it(`${algorithm}: a Redis back from an older snapshot (its mark in it): each key is charged what it had counted since, as it is next answered: 2 admitted, not 5`, async () => {
      const into = Date.now() % WINDOW_MS;
      if (into > WINDOW_MS - 20_000) await sleep(WINDOW_MS - into + 50);
      const warnings: Record<string, unknown>[] = [];
      const limiter = createLimiter({
        name: `behind-${algorithm}`,
        policies: { algorithm, limit: 10, windowMs: WINDOW_MS },
        store: new RedisStore({ client: await server.storeClient('ioredis'), prefix: randomPrefix(), validate: false }),
        storeTimeoutMs: 2_000,
        logger: { warn: (o: Record<string, unknown>) => warnings.push(o), error() {} },
      });
      for (let i = 0; i < 5; i++) expect((await limiter.check('k')).allowed).toBe(true);
      for (let i = 0; i < 4; i++) expect((await limiter.check('other')).allowed).toBe(true);
      // The snapshot (as `save` points or a BGSAVE take it), then three more; the server then dies unsaved.
      await admin.call('SAVE');
      for (let i = 0; i < 3; i++) expect((await limiter.check('k')).allowed).toBe(true);
      await restart(limiter, 'other');
      let admitted = 0;
      for (let i = 0; i < 10; i++) if ((await limiter.check('k')).allowed) admitted += 1;
      // Before: 5 (the mark came back with the snapshot, so nothing was restored).
      expect(admitted).toBe(2);
      // A key the snapshot had whole is charged nothing.
      expect((await limiter.check('other')).remaining).toBeCloseTo(5, 0);
      expect(warnings).toEqual([expect.objectContaining({ code: 'WRN_RL_BUDGETS_RESTORED', behind: true })]);
      await limiter.close();
    }, 60_000);
  }

  it('a restart that kept everything (saved as it stopped): nothing charged, nothing logged', async () => {
    const warnings: Record<string, unknown>[] = [];
    const limiter = createLimiter({
      name: 'behind-none',
      policies: { algorithm: 'fixed-window', limit: 10, windowMs: WINDOW_MS },
      store: new RedisStore({ client: await server.storeClient('ioredis'), prefix: randomPrefix(), validate: false }),
      storeTimeoutMs: 2_000,
      logger: { warn: (o: Record<string, unknown>) => warnings.push(o), error() {} },
    });
    for (let i = 0; i < 6; i++) expect((await limiter.check('k')).allowed).toBe(true);
    await admin.call('SAVE');
    await restart(limiter, 'k');
    expect((await limiter.check('k')).remaining).toBe(3);
    expect(warnings).toEqual([]);
    await limiter.close();
  }, 60_000);

  // The login recipe's limiter ('closed': a Redis outage never opens the door to password guessing):
  // before, a key at 5 of 5 took 5 more once Redis restarted empty, in 'closed' and 'open' alike.
  for (const onStoreError of ['closed', 'open'] as const) {
    it(`'${onStoreError}': a restart without persistence is charged again as with 'local': a key at 5 of 5 stays refused, one at 3 of 5 admits 2`, async () => {
      await clearOfWindowEnd(WINDOW_MS, 20_000);
      const warnings: Record<string, unknown>[] = [];
      const limiter = createLimiter({
        name: `login-${onStoreError}`,
        policies: { algorithm: 'sliding-log', limit: 5, windowMs: WINDOW_MS },
        store: new RedisStore({ client: await server.storeClient('ioredis'), prefix: randomPrefix(), validate: false }),
        onStoreError,
        storeTimeoutMs: 2_000,
        logger: { warn: (o: Record<string, unknown>) => warnings.push(o), error() {} },
      });
      for (let i = 0; i < 6; i++) await limiter.check('alice');
      for (let i = 0; i < 3; i++) expect((await limiter.check('bob')).allowed).toBe(true);
      await restart(limiter, 'alice');
      await waitFor('the budgets restored', () => warnings.some((w) => w.code === 'WRN_RL_BUDGETS_RESTORED'));
      const admitted = async (key: string) => {
        let n = 0;
        for (let i = 0; i < 5; i++) if ((await limiter.check(key)).allowed) n += 1;
        return n;
      };
      expect([await admitted('alice'), await admitted('bob')]).toEqual([0, 2]);
      await limiter.close();
    }, 60_000);
  }

  for (const algorithm of ['fixed-window', 'gcra'] as const) {
    it(`${algorithm}: a restart without persistence while one key is checked without pause: the window admits its limit, not the outage's admissions twice`, async () => {
      const into = Date.now() % WINDOW_MS;
      if (into > WINDOW_MS - 20_000) await sleep(WINDOW_MS - into + 50);
      const warnings: unknown[] = [];
      const limiter = createLimiter({
        name: `busy-restart-${algorithm}`,
        policies: { algorithm, limit: 2_000, windowMs: WINDOW_MS },
        store: new RedisStore({ client: await server.storeClient('ioredis'), prefix: randomPrefix(), validate: false }),
        logger: { warn: (o: Record<string, unknown>) => warnings.push(o.code), error() {} },
      });
      const started = Date.now();
      let admitted = 0;
      let degraded = 0;
      const loop = withoutPause(limiter, 'busy', 20, (d) => {
        if (d.allowed) admitted += 1;
        if (d.degraded) degraded += 1;
        return undefined;
      });
      await waitFor('1,200 admitted', () => admitted >= 1_200);
      await server.stop();
      await server.start();
      await waitFor('answers from Redis again', () => warnings.includes('WRN_RL_BUDGETS_RESTORED'));
      await sleep(1_000);
      await loop.stop();
      // The outage's admissions ('local' goes on from Redis' last answer) are charged to the restarted Redis
      // with what the key had counted before; a carry refused for want of room charges what is left before
      // the next checks take it. Before: 2,435 to 2,700 (the outage's admissions admitted again after it).
      // One more here: the check whose answer told that Redis was back; a few on a loaded machine, where a
      // carry can outlast the checks' 100 ms hold and lose a unit to each check until it lands.
      const refill = algorithm === 'gcra' ? Math.ceil(((Date.now() - started) * 2_000) / WINDOW_MS) : 0;
      expect(degraded).toBeGreaterThan(0);
      expect(admitted).toBeLessThanOrEqual(2_010 + refill);
      expect(admitted).toBeGreaterThanOrEqual(1_980);
      await limiter.close();
    }, 60_000);
  }

  for (const [algorithm, late] of [
    ['fixed-window', 0],
    ['gcra', 0],
    ['fixed-window', 150],
    ['gcra', 150],
  ] as const) {
    const slow = late > 0 ? `, every reply ${late} ms late through the restart` : '';
    it(`${algorithm} with localBatch${slow}: a hot key checked without pause on a Redis back from an older snapshot admits what its limit has left, not again what was charged since the snapshot`, async () => {
      await clearOfWindowEnd(WINDOW_MS, 20_000);
      const warnings: Record<string, unknown>[] = [];
      // Late replies (a TCP proxy delaying them) through the restart: the reads of the keys, the reading of
      // which server answers and the charges each take longer than the 100 ms a restore held checks for
      // (it now holds them up to storeTimeoutMs), while the checks' batches must not shorten the charge.
      const proxy = late > 0 ? await FaultProxy.start(server.port) : undefined;
      const client =
        proxy === undefined
          ? await server.storeClient('ioredis')
          : await server.readyClient({ port: proxy.port, retryStrategy: () => 50, autoResendUnfulfilledCommands: false });
      const limiter = createLimiter({
        name: `batch-behind-${algorithm}`,
        policies: { algorithm, limit: 2_000, windowMs: WINDOW_MS },
        store: new RedisStore({ client, prefix: randomPrefix(), validate: false, localBatch: true }),
        storeTimeoutMs: 2_000,
        logger: { warn: (o: Record<string, unknown>) => warnings.push(o), error() {} },
      });
      const started = Date.now();
      let admitted = 0;
      let refused = 0;
      // Fast enough for localBatch to batch the key, as the real traffic of a hot key is; the snapshot (as
      // `save` points or a BGSAVE take it) at 600 admitted, the loop waiting for it.
      const loop = withoutPause(limiter, 'hot', 50, (d) => {
        if (d.allowed) admitted += 1;
        else refused += 1;
        return admitted === 600 && refused === 0 ? admin.call('SAVE') : undefined;
      });
      try {
        await waitFor('1,200 admitted', () => admitted >= 1_200);
        proxy?.set({ kind: 'delay', ms: late });
        await server.stop();
        await server.start();
        await waitFor('the behind charge', () => warnings.length > 0);
        // Late replies through the restore only: near the limit a batch is one unit, a round trip each.
        proxy?.set({ kind: 'pass' });
        await waitFor('the limit spent', () => refused > 0, 30_000);
        await sleep(500);
      } finally {
        await loop.stop();
        await proxy?.close();
        await limiter.close();
      }
      // gcra refills 2,000 per 10 minutes while the test runs.
      const refill = algorithm === 'gcra' ? Math.ceil(((Date.now() - started) * 2_000) / WINDOW_MS) : 0;
      // Before: nothing charged, no warning (checks after the restart admitted 2,373 and 2,513 again). With
      // the key read once the reading of servers was back, after checks had taken batches: 2,072 and 2,222
      // (fixed-window) on a loaded CI machine. A few more on a loaded machine, as in the restart test above:
      // a carry of the outage's admissions can lose a unit to each check until it lands.
      expect(admitted).toBeLessThanOrEqual(2_010 + refill);
      // Short of the limit by at most one batch (maxShare, a tenth of it): a batch given back while Redis is
      // down (the key idle past 2 x holdMs during a slow restart) is lost, as documented (1,927 once here).
      expect(admitted).toBeGreaterThanOrEqual(1_800);
      expect(warnings).toEqual([expect.objectContaining({ code: 'WRN_RL_BUDGETS_RESTORED', behind: true })]);
    }, 60_000);
  }

  it('with localBatch, a restart that kept everything: nothing charged, nothing logged', async () => {
    const warnings: Record<string, unknown>[] = [];
    const limiter = createLimiter({
      name: 'batch-behind-none',
      policies: { algorithm: 'fixed-window', limit: 2_000, windowMs: WINDOW_MS },
      store: new RedisStore({ client: await server.storeClient('ioredis'), prefix: randomPrefix(), validate: false, localBatch: true }),
      storeTimeoutMs: 2_000,
      logger: { warn: (o: Record<string, unknown>) => warnings.push(o), error() {} },
    });
    const into = Date.now() % WINDOW_MS;
    if (into > WINDOW_MS - 20_000) await sleep(WINDOW_MS - into + 50);
    expect(await hot(limiter, 1_200)).toBe(1_200);
    // The key idle, its batch given back (a give-back Redis cannot take while down is lost: under-admission).
    await sleep(300);
    const left = (await limiter.peek('hot')).remaining;
    expect(left).toBeLessThanOrEqual(800);
    await admin.call('SAVE');
    await restart(limiter, 'hot');
    // The sweep after the change of server read the key and charged nothing.
    await sleep(200);
    expect((await limiter.peek('hot')).remaining).toBe(left);
    expect(await hot(limiter, 1_000)).toBe(left);
    expect(warnings).toEqual([]);
    await limiter.close();
  }, 60_000);

  it('a restart without persistence, Redis paused as the client comes back: the window admits its limit once (before: a key exhausted before admitted 8 again, one with 3 used 8 instead of 7)', async () => {
    await clearOfWindowEnd(WINDOW_MS, 20_000);
    // The checks sent while Redis is paused run late, on the emptied keys, as it goes on; the question of
    // the mark (sent first) is answered before them, and the reads of the keys after them.
    const client = server.client({ retryStrategy: () => 50, enableOfflineQueue: false, autoResendUnfulfilledCommands: false });
    await waitFor('client ready', () => client.status === 'ready');
    const warnings: Record<string, unknown>[] = [];
    const limiter = createLimiter({
      name: 'paused-at-ready',
      policies: { algorithm: 'fixed-window', limit: 10, windowMs: WINDOW_MS },
      store: new RedisStore({ client, prefix: randomPrefix(), validate: false }),
      logger: { warn: (o: Record<string, unknown>) => warnings.push(o), error() {} },
    });
    const admitted = { used: 0, spent: 0 };
    const check = async (key: 'used' | 'spent') => {
      if ((await limiter.check(key)).allowed) admitted[key] += 1;
    };
    /** `ms` of rounds of 8 checks at once, 10 ms apart, of `keys` in turn. */
    const rounds = async (ms: number, keys: readonly ('used' | 'spent')[]) => {
      for (const end = Date.now() + ms; Date.now() < end; await sleep(10))
        await Promise.all(Array.from({ length: 8 }, (_, i) => check(keys[i % keys.length] as 'used' | 'spent')));
    };
    for (let i = 0; i < 3; i++) await check('used');
    for (let i = 0; i < 12; i++) await check('spent');
    expect(admitted).toEqual({ used: 3, spent: 10 });
    let paused = false;
    client.once('ready', () => {
      server.signal('SIGSTOP');
      paused = true;
    });
    try {
      await server.stop();
      await server.start();
      await waitFor('Redis paused as the client came back', () => paused);
      await rounds(1_500, ['spent']);
    } finally {
      server.signal('SIGCONT');
    }
    await rounds(2_000, ['used', 'spent']);
    expect(admitted).toEqual({ used: 10, spent: 10 });
    // The loss is told: as a restore of both keys, or, on a loaded host where a key's answer came first from
    // the changed server, that key as behind and the other restored (clean-clone CI): the admissions above
    // are what counts.
    expect(warnings.length).toBeGreaterThan(0);
    expect(warnings.every((w) => w.code === 'WRN_RL_BUDGETS_RESTORED')).toBe(true);
    await limiter.close();
  }, 60_000);

  for (const kind of ['ioredis', 'iovalkey', 'node-redis'] as const) {
    it(`${kind}: a key with 8 of 10 used admits 2 after a restart without persistence (before: 10); a reconnect that lost nothing charges nothing`, async () => {
      // Not near the end of a ten-minute window (Redis TIME reads this machine's clock).
      const into = Date.now() % WINDOW_MS;
      if (into > WINDOW_MS - 20_000) await sleep(WINDOW_MS - into + 50);
      const windowStart = Date.now() - (Date.now() % WINDOW_MS);
      const client = await server.storeClient(kind);
      const warnings: Record<string, unknown>[] = [];
      const store = new RedisStore({ client, prefix: randomPrefix(), validate: false });
      const events: string[] = [];
      store.watchConnection((e) => events.push(e));
      const limiter = createLimiter({
        name: `budgets-${kind}`,
        policies: { algorithm: 'fixed-window', limit: 10, windowMs: WINDOW_MS },
        store,
        storeTimeoutMs: 2_000,
        logger: { warn: (o: Record<string, unknown>) => warnings.push(o), error() {} },
      });
      for (let i = 0; i < 8; i++) expect((await limiter.check('k')).allowed).toBe(true);
      expect((await limiter.check('other')).allowed).toBe(true);
      const left = async (key: string) => (await limiter.peek(key)).remaining;

      // The connection killed, the data kept: the mark is there, nothing is charged again.
      await admin.call('CLIENT', 'KILL', 'TYPE', 'normal');
      await waitFor('the reconnect', () => events.includes('ready'));
      await waitFor('an answer from Redis', async () => !(await limiter.peek('k')).degraded);
      expect([await left('k'), await left('other')]).toEqual([2, 9]);
      expect(warnings).toEqual([]);

      await server.stop();
      await sleep(200);
      await server.start();
      await waitFor('the budgets restored', () => warnings.some((w) => w.code === 'WRN_RL_BUDGETS_RESTORED'));
      expect(warnings).toEqual([expect.objectContaining({ code: 'WRN_RL_BUDGETS_RESTORED', store: 'redis', keys: 2 })]);
      let admitted = 0;
      for (let i = 0; i < 10; i++) {
        const d = await limiter.check('k');
        expect(d.degraded).toBe(false);
        if (d.allowed) admitted += 1;
      }
      expect(admitted).toBe(2);
      expect(await left('other')).toBe(9);
      expect(Date.now() - windowStart).toBeLessThan(WINDOW_MS);
      await limiter.close();
    }, 60_000);
  }
});
