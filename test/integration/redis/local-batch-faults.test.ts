/**
 * @module RedisStore `localBatch` when things fail: a process killed while it holds a batch (its units
 * come back when the state they went into passes: the window's end, or the bucket's reset, never later),
 * and a Redis restart while a batch is held (what is held keeps being spent, nothing else is admitted
 * while Redis is away, and across the restart the limit is never passed).
 */
import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { type AlgorithmId, createLimiter, RedisStore } from '@tollgate/core';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { CLOSE_WAIT_MS } from '../../../packages/core/src/stores/redis/local-batch/local-batcher.js';
import { clearOfWindowEnd, describeRedis, type RedisServer, randomPrefix, startRedis, waitFor } from './harness.js';
import { nextMessage } from './worker-pool.js';

const WINDOW_MS = 600_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describeRedis('RedisStore localBatch under faults', () => {
  let server: RedisServer;
  let admin: Redis;

  beforeAll(async () => {
    // Persistence on, so a restart keeps the counts (without it a restart forgets every limit alike).
    server = await startRedis(['--appendonly', 'yes', '--appendfsync', 'always']);
    admin = await server.readyClient();
  });
  afterAll(async () => {
    await server?.close();
  });

  /** A limiter of one day-long fixed window of `limit` on a RedisStore that batches from the first checks on. */
  async function batched(name: string, limit: number, onStoreError: 'closed' | 'local') {
    const client = await server.readyClient({ autoResendUnfulfilledCommands: false, maxRetriesPerRequest: 0, retryStrategy: () => 20 });
    const store = new RedisStore({ client, prefix: randomPrefix(), localBatch: { minRate: 1, holdMs: 60_000, maxShare: 0.2 } });
    const limiter = createLimiter({
      name,
      policies: { name: 'api', algorithm: 'fixed-window', limit, windowMs: 86_400_000 },
      store,
      storeTimeoutMs: 1_000,
      onStoreError,
      logger: { warn() {}, error() {} },
    });
    return { client, store, limiter };
  }

  for (const [algorithm, windowMs] of [
    ['fixed-window', 1_500],
    ['token-bucket', 1_500],
  ] as const) {
    it(`${algorithm}: a process killed holding a batch; its units come back by the state's reset`, async () => {
      const prefix = randomPrefix();
      const limit = 400;
      const worker: ChildProcess = fork(fileURLToPath(new URL('./local-batch-worker.ts', import.meta.url)), [], {
        execArgv: ['--import', 'tsx', '--conditions=@tollgate/source'],
        env: { ...process.env, REDIS_PORT: String(server.port) },
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      });
      await nextMessage(worker);
      const report = nextMessage<{ admitted: number; held: number }>(worker);
      // A fixed window anchored at the worker's first request: one aligned to the clock could end between
      // the worker's charges and the check below (1.5 s windows: about one run in thirty).
      const anchor = algorithm === 'fixed-window' ? ('first-request' as const) : undefined;
      worker.send({ algorithm, prefix, limit, windowMs, anchor });
      const { admitted, held } = await report;
      worker.kill('SIGKILL');
      expect(held).toBeGreaterThan(0);
      const client = await server.readyClient({ autoResendUnfulfilledCommands: false });
      const store = new RedisStore({ client, prefix });
      const limiter = createLimiter({
        name: 'faults',
        policies: { name: 'api', algorithm: algorithm as AlgorithmId, limit, windowMs, ...(anchor && { anchor }) },
        store,
      });
      // The dead process's units are charged: what is left now is at most the limit minus admitted and held.
      const now = await limiter.check('hot');
      if (algorithm === 'fixed-window') expect(now.remaining).toBeLessThanOrEqual(limit - admitted - held - 1);
      // The documented time: the state's reset as Redis reports it (the window's end; the bucket full again).
      const started = Date.now();
      await new Promise((r) => setTimeout(r, now.resetMs + 20));
      const later = await limiter.check('hot');
      expect(later.remaining).toBe(limit - 1);
      expect(Date.now() - started).toBeLessThan(windowMs + 1_000);
    });
  }

  it('a Redis restart while a batch is held: the batch is spent, nothing more while Redis is away, never over the limit', async () => {
    const limit = 5_000;
    const { client, store, limiter } = await batched('restart', limit, 'closed');
    let before = 0;
    for (let i = 0; i < 2_000 && !(i > 300 && store.localBatchHeld > 5_000); i++) if ((await limiter.check('k')).allowed) before += 1;
    const held = store.localBatchHeld / 1000;
    expect(held).toBeGreaterThan(5);
    await server.stop();
    let during = 0;
    let degraded = 0;
    for (let i = 0; i < held + 200; i++) {
      const d = await limiter.check('k');
      if (d.allowed) during += 1;
      if (d.degraded) degraded += 1;
    }
    // What was held is spent, all of it, and nothing else (onStoreError: 'closed' refuses the rest).
    expect(during).toBe(held);
    expect(degraded).toBe(200);
    await server.start();
    await waitFor('client back', () => client.status === 'ready');
    let after = 0;
    for (let i = 0; i < limit + 500; i++) {
      const d = await limiter.check('k');
      if (d.allowed) after += 1;
      else if (!d.degraded) break;
    }
    expect(before + during + after).toBeLessThanOrEqual(limit);
    // Under-admission: at most what was held when the limit was reached.
    expect(before + during + after).toBeGreaterThan(limit - 0.2 * limit - 1);
    await store.close();
  });
  it("'local' across a Redis restart while a batch is held: the outage continues from what Redis had left, not from an older answer", async () => {
    const limit = 1_000;
    const { client, store, limiter } = await batched('restart-local', limit, 'local');
    let before = 0;
    // 400 checks, then more while the batch in hand happens to be nearly spent with the next one still on
    // its way (a loaded machine: 4 units held, seen once in CI), as the close test does: the restart needs a batch held.
    for (let i = 0; i < 400 || (store.localBatchHeld <= 5_000 && i < 600); i++) if ((await limiter.check('k')).allowed) before += 1;
    const held = store.localBatchHeld / 1000;
    expect(held).toBeGreaterThan(5);
    await server.stop();
    let during = 0;
    let degraded = 0;
    for (let i = 0; i < limit; i++) {
      const d = await limiter.check('k');
      if (d.allowed) during += 1;
      if (d.allowed && d.degraded) degraded += 1;
    }
    // Redis had charged what was admitted and what is held; the failure mode hands out only what it had
    // left (the batch's answers said so), so the outage ends exactly at the limit. Remembering only the
    // last round trip's answer, from before batching began, it handed out nearly a second limit.
    expect(before + during).toBeLessThanOrEqual(limit);
    expect(degraded).toBeGreaterThan(0);
    await server.start();
    await waitFor('client back', () => client.status === 'ready');
    await store.close();
  });
  for (const localBatch of [false, true]) {
    it(`a 1 s SIGSTOP under steady traffic on one key, ${localBatch ? 'with' : 'without'} localBatch: the limit in the window, not more`, async () => {
      // Before: 2,001 to 2,005 without localBatch (the check that ended the outage was answered before the
      // carry of the outage's admissions, and late replies' charges went back after it); 2,192 to 2,197
      // with it, where the refund script was not loaded yet: a batch's unspent units, given back as Redis
      // came back, landed after the carry had read the key's room.
      await clearOfWindowEnd(WINDOW_MS, 20_000);
      await admin.call('SCRIPT', 'FLUSH');
      const client = await server.readyClient({ autoResendUnfulfilledCommands: false, maxRetriesPerRequest: 0, retryStrategy: () => 20 });
      const limiter = createLimiter({
        name: `steady-stop-${localBatch}`,
        policies: { algorithm: 'fixed-window', limit: 2_000, windowMs: WINDOW_MS },
        store: new RedisStore({ client, prefix: randomPrefix(), validate: false, localBatch }),
        logger: { warn() {}, error() {} },
      });
      let [admitted, refused, stopped, until] = [0, 0, false, Number.POSITIVE_INFINITY];
      let resumed: Promise<void> | undefined;
      for (let i = 1; Date.now() < until; i++) {
        const d = await limiter.check('hot');
        if (d.allowed) admitted += 1;
        // On for 1.5 s after Redis refused a check itself (the outage over).
        else if (!d.degraded && refused++ === 0) until = Date.now() + 1_500;
        if (admitted === 1_200 && !stopped) {
          stopped = true;
          server.signal('SIGSTOP');
          resumed = sleep(1_000).then(() => server.signal('SIGCONT'));
        }
        if (i % 20 === 0) await sleep(1);
      }
      await resumed;
      expect(admitted).toBe(2_000);
      await limiter.close();
    }, 30_000);
  }

  it('store.close() holding a batch waits at most CLOSE_WAIT_MS for a Redis that does not answer', async () => {
    const client = await server.readyClient({ autoResendUnfulfilledCommands: false });
    const store = new RedisStore({ client, prefix: randomPrefix(), localBatch: { minRate: 1, holdMs: 60_000, maxShare: 0.2 } });
    const limiter = createLimiter({
      name: 'close-silent',
      policies: { name: 'api', algorithm: 'fixed-window', limit: 1_000, windowMs: 86_400_000 },
      store,
    });
    // 400 checks, then more while the batch in hand happens to be spent to the last unit with the next one
    // still on its way (a slow machine): the close needs something held.
    for (let i = 0; i < 400 || (store.localBatchHeld === 0 && i < 600); i++) await limiter.check('k');
    expect(store.localBatchHeld).toBeGreaterThan(0);
    await limiter.close();
    server.signal('SIGSTOP');
    try {
      const started = Date.now();
      await store.close();
      const waited = Date.now() - started;
      expect(waited).toBeGreaterThanOrEqual(CLOSE_WAIT_MS - 5);
      expect(waited).toBeLessThan(CLOSE_WAIT_MS + 500);
    } finally {
      server.signal('SIGCONT');
    }
  });
});
