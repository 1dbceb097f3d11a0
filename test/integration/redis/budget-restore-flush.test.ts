/**
 * @module Budgets survive a Redis that loses its data without a reconnect (failure/restore/budget-restore.ts): a
 * `FLUSHALL`, a `FLUSHDB`, or a Redis behind a proxy that restarted while the client's connection stayed
 * up. No connection event tells of it; the first answer that could not follow the last one this process
 * remembers for a key (more budget than that key could have had back by now) makes the limiter ask for its
 * mark, and where it is gone, charge Redis again what each key it remembers had used. So a key with 8 of 10
 * used admits 2 after the flush, not 10, whichever algorithm counts it. Leases alike: a grant that finds
 * fewer leases in use than this limiter holds is given up, the held ones go back, and it is asked again. A
 * refund gives budget back without any loss: nothing is charged.
 */
import { type AlgorithmId, createLimiter, type Logger, RedisStore } from '@tollgate/core';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { clearOfWindowEnd, describeRedis, type RedisServer, randomPrefix, startRedis, waitFor } from './harness.js';

const WINDOW_MS = 600_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describeRedis('budgets after a Redis that lost its data without a reconnect', () => {
  let server: RedisServer;
  let admin: Redis;

  beforeAll(async () => {
    server = await startRedis();
    admin = await server.readyClient();
  });
  afterAll(async () => {
    await server?.close();
  });

  const cases: [AlgorithmId, string][] = [
    ['fixed-window', 'FLUSHALL'],
    ['gcra', 'FLUSHDB'],
    ['token-bucket', 'FLUSHALL'],
    ['sliding-window', 'FLUSHALL'],
  ];
  for (const [algorithm, flush] of cases) {
    it(`${algorithm}: a key with 8 of 10 used admits 2 after a ${flush} (before: 10), and the other keys keep theirs`, async () => {
      const into = Date.now() % WINDOW_MS;
      if (into > WINDOW_MS - 20_000) await sleep(WINDOW_MS - into + 50);
      const warnings: Record<string, unknown>[] = [];
      const limiter = createLimiter({
        name: `flush-${algorithm}`,
        policies: { algorithm, limit: 10, windowMs: WINDOW_MS },
        store: new RedisStore({ client: await server.storeClient('ioredis'), prefix: randomPrefix(), validate: false }),
        storeTimeoutMs: 2_000,
        logger: { warn: (o: Record<string, unknown>) => warnings.push(o), error() {} },
      });
      for (let i = 0; i < 8; i++) expect((await limiter.check('k')).allowed).toBe(true);
      for (let i = 0; i < 5; i++) expect((await limiter.check('other')).allowed).toBe(true);
      await admin.call(flush);
      let admitted = 0;
      for (let i = 0; i < 10; i++) {
        const d = await limiter.check('k');
        expect(d.degraded).toBe(false);
        if (d.allowed) admitted += 1;
      }
      expect(admitted).toBe(2);
      expect(warnings).toEqual([expect.objectContaining({ code: 'WRN_RL_BUDGETS_RESTORED', store: 'redis', keys: 2 })]);
      // A bucket refilled a little since: 4 and a thousandth, not 9.
      expect((await limiter.check('other')).remaining).toBeCloseTo(4, 1);
      await limiter.close();
    }, 30_000);
  }

  for (const algorithm of ['fixed-window', 'sliding-window', 'gcra'] as const) {
    it(`${algorithm}: 8 loops in flight on one key, a FLUSHALL after 80 of 100 admitted: 100 in all (before: 185)`, async () => {
      const into = Date.now() % WINDOW_MS;
      if (into > WINDOW_MS - 20_000) await sleep(WINDOW_MS - into + 50);
      const limiter = createLimiter({
        name: `flush-busy-${algorithm}`,
        policies: { algorithm, limit: 100, windowMs: WINDOW_MS },
        store: new RedisStore({ client: await server.storeClient('ioredis'), prefix: randomPrefix(), validate: false }),
        storeTimeoutMs: 2_000,
        logger: { warn() {}, error() {} },
      });
      let admitted = 0;
      let flush: Promise<unknown> | undefined;
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          for (let i = 0; i < 30; i++) {
            if ((await limiter.check('k')).allowed) admitted += 1;
            if (admitted >= 80 && flush === undefined) flush = admin.call('FLUSHALL');
            await flush;
          }
        }),
      );
      // The requests in flight as Redis emptied (at most 8) count on top of the 80 charged again: never past 100.
      expect(admitted).toBe(100);
      await limiter.close();
    }, 30_000);
  }

  for (const [algorithm, used] of [
    ['fixed-window', 20],
    ['gcra', 20],
    ['sliding-window', 8],
    ['token-bucket', 8],
  ] as const) {
    it(`${algorithm}: 16 checks sent at once right after a FLUSHALL, on a key with ${used} of 20 used: ${20 - used} admitted (before: 16, the loss denied, nothing charged again)`, async () => {
      await clearOfWindowEnd(WINDOW_MS, 20_000);
      const warnings: Record<string, unknown>[] = [];
      const limiter = createLimiter({
        name: `flush-burst-${algorithm}`,
        policies: { algorithm, limit: 20, windowMs: WINDOW_MS },
        store: new RedisStore({ client: await server.storeClient('ioredis'), prefix: randomPrefix(), validate: false }),
        storeTimeoutMs: 2_000,
        logger: { warn: (o: Record<string, unknown>) => warnings.push(o), error() {} },
      });
      for (let i = 0; i < used; i++) expect((await limiter.check('hot')).allowed).toBe(true);
      await admin.call('FLUSHALL');
      // The 16 answers come from the emptied key: the first makes the limiter ask for its mark; the key,
      // read back after them, holds their 16 charges (past half its use), which once denied the loss.
      const burst = await Promise.all(Array.from({ length: 16 }, () => limiter.check('hot')));
      expect(burst.filter((d) => d.allowed).length).toBe(20 - used);
      await waitFor('the restore', () => warnings.length > 0);
      expect(warnings).toEqual([expect.objectContaining({ code: 'WRN_RL_BUDGETS_RESTORED', keys: 1 })]);
      let after = 0;
      for (let i = 0; i < 5; i++) if ((await limiter.check('hot')).allowed) after += 1;
      expect(after).toBe(0);
      await limiter.close();
    }, 30_000);
  }

  it('4 loops checking an exhausted key without pause through a FLUSHALL: the limit, none more (before: twice the limit, then up to the 4 in flight)', async () => {
    await clearOfWindowEnd(WINDOW_MS, 20_000);
    const limiter = createLimiter({
      name: 'flush-race',
      policies: { algorithm: 'fixed-window', limit: 10, windowMs: WINDOW_MS },
      store: new RedisStore({ client: await server.storeClient('ioredis'), prefix: randomPrefix(), validate: false }),
      storeTimeoutMs: 2_000,
      logger: { warn() {}, error() {} },
    });
    let [admitted, refused, flushed] = [0, 0, false];
    const until = Date.now() + 600;
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (Date.now() < until) {
          if ((await limiter.check('k')).allowed) admitted += 1;
          else refused += 1;
          // Not waited for: the loops go on through it.
          if (refused > 50 && !flushed) {
            flushed = true;
            void admin.call('FLUSHALL');
          }
        }
      }),
    );
    // The checks in flight with the answer that found the loss are decided by what the key had (none
    // left); the restore's charge of what is left then goes before any other check (they are held until it
    // is sent). Before, a check slipped in ahead of each charge of what was left, and the key gave its whole
    // limit again; then the checks in flight with the first answer were admitted (up to 14).
    expect(flushed).toBe(true);
    expect(admitted).toBe(10);
    await limiter.close();
  }, 30_000);

  for (const algorithm of ['fixed-window', 'gcra'] as const) {
    it(`${algorithm} with localBatch: a hot key checked without pause, a FLUSHALL at 1,200 of 2,000: the limit in all (before: 3,269)`, async () => {
      await clearOfWindowEnd(WINDOW_MS, 20_000);
      const warnings: Record<string, unknown>[] = [];
      const limiter = createLimiter({
        name: `flush-batched-${algorithm}`,
        policies: { algorithm, limit: 2_000, windowMs: WINDOW_MS },
        store: new RedisStore({ client: await server.storeClient('ioredis'), prefix: randomPrefix(), validate: false, localBatch: true }),
        storeTimeoutMs: 2_000,
        logger: { warn: (o: Record<string, unknown>) => warnings.push(o), error() {} },
      });
      const started = Date.now();
      let [admitted, refused, flushed, until] = [0, 0, false, Number.POSITIVE_INFINITY];
      let after: { remaining: number; admitted: number } | undefined;
      // Fast enough for localBatch to answer the key from batches; the flush waited for at 1,200 admitted;
      // on for 300 ms after the first refusal.
      for (let i = 1; Date.now() < until; i++) {
        const d = await limiter.check('hot');
        if (d.allowed) admitted += 1;
        else if (refused++ === 0) until = Date.now() + 300;
        // The answers after the restore count its charge, those from units held before it too.
        if (warnings.length > 0 && after === undefined) after = { remaining: d.remaining, admitted };
        if (admitted === 1_200 && !flushed) {
          flushed = true;
          await admin.call('FLUSHALL');
        }
        if (i % 50 === 0) await sleep(1);
      }
      await limiter.close();
      const refill = algorithm === 'gcra' ? Math.ceil(((Date.now() - started) * 2_000) / WINDOW_MS) : 0;
      // The first answer from a batch taken on the flushed key could not follow the key's last: the mark is
      // asked, found gone, and the key charged again what it had used, its batches given back first.
      expect(admitted).toBeLessThanOrEqual(2_000 + refill);
      expect(admitted).toBeGreaterThanOrEqual(1_990);
      expect(warnings).toEqual([expect.objectContaining({ code: 'WRN_RL_BUDGETS_RESTORED', keys: 1 })]);
      expect(after?.remaining).toBeLessThanOrEqual(2_000 - (after?.admitted ?? 0) + refill);
    });
  }

  it('with localBatch, four processes checking an exhausted hot key without pause through a FLUSHALL: the limit once (before: up to twice, or a batch over)', async () => {
    await clearOfWindowEnd(WINDOW_MS, 20_000);
    const prefix = randomPrefix();
    const warnings: Record<string, unknown>[] = [];
    // Four limiters of one name, each with its own connection, as four processes are.
    const processes = await Promise.all(
      Array.from({ length: 4 }, async () =>
        createLimiter({
          name: 'flush-batched-processes',
          policies: { algorithm: 'fixed-window', limit: 1_000, windowMs: WINDOW_MS },
          store: new RedisStore({
            client: await server.storeClient('ioredis'),
            prefix,
            validate: false,
            localBatch: { minRate: 20, holdMs: 50, maxShare: 0.1 },
          }),
          storeTimeoutMs: 2_000,
          logger: { warn: (o: Record<string, unknown>) => warnings.push(o), error() {} },
        }),
      ),
    );
    let [admitted, refused, flushedAt] = [0, 0, 0];
    await Promise.all(
      processes.flatMap((limiter) =>
        Array.from({ length: 4 }, async (_, loop) => {
          for (let i = 1; flushedAt === 0 || Date.now() < flushedAt + 1_500; i++) {
            if ((await limiter.check('hot')).allowed) admitted += 1;
            else if (++refused === 400) {
              flushedAt = Date.now();
              await admin.call('FLUSHALL');
            }
            if (i % 64 === loop) await sleep(0);
          }
        }),
      ),
    );
    await Promise.all(processes.map((l) => l.close()));
    // Each process's answers from the emptied key wait for its question of the mark (one round trip), a
    // question asked before the FLUSHALL ran answering for none of them, and the batches it took there
    // are dropped once the loss is found; a restore's charge of what was left asks for seven eighths
    // while the others take some; the process that finds the loss (one still spending a batch) charges
    // what its replies saw the others take, not only its own view. Before: 2,000 (one process took the
    // whole limit again from batches while its answers waited on a question read before the FLUSHALL),
    // 1,100 (a batch spent), or 1,023 to 1,488 in one run of three (the finder charged its own view).
    expect(warnings.some((w) => w.code === 'WRN_RL_BUDGETS_RESTORED')).toBe(true);
    expect(admitted).toBeLessThanOrEqual(1_010);
    expect(admitted).toBeGreaterThanOrEqual(990);
  }, 60_000);

  it('with localBatch, a FLUSHALL while a process answers an exhausted key from memory, another process taking from the emptied key meanwhile: found within a second, the key exhausted again (before: the loss denied, the limit admitted again)', async () => {
    const BASE = 1_900_000_000_000;
    const prefix = randomPrefix();
    const warnings: Record<string, unknown>[] = [];
    const process = async (clock: () => number, logger: Logger = { warn() {}, error() {} }) =>
      createLimiter({
        name: 'flush-blind',
        policies: { algorithm: 'fixed-window', limit: 100, windowMs: WINDOW_MS },
        store: new RedisStore({
          client: await server.storeClient('ioredis'),
          prefix,
          validate: false,
          timeSource: 'limiter',
          localBatch: { minRate: 1, holdMs: 1_000, maxShare: 0.1 },
        }),
        clock,
        storeTimeoutMs: 2_000,
        breaker: false,
        logger,
      });
    let nowA = BASE;
    let nowC = BASE;
    const a = await process(() => nowA, { warn: (o: Record<string, unknown>) => void warnings.push(o), error() {} });
    const c = await process(() => nowC);
    let admitted = 0;
    for (let i = 0; i < 300; i++) {
      nowA += 1;
      if ((await a.check('hot')).allowed) admitted += 1;
    }
    expect(admitted).toBe(100);
    await admin.call('FLUSHALL');
    // A process started (or never blocked) takes 70 from the emptied key: past half of what it had used.
    for (let i = 0; i < 70; i++) {
      nowC += 1;
      if ((await c.check('hot')).allowed) admitted += 1;
    }
    // Within a second A asks Redis again: its answer could not follow, the mark is gone, and the key it
    // read was refilled by C's checks; it is no witness that Redis kept its data.
    for (let i = 0; i < 120; i++) {
      nowA += 10;
      if ((await a.check('hot')).allowed) admitted += 1;
    }
    await waitFor('the restore', () => warnings.length > 0, 5_000);
    expect(warnings).toEqual([expect.objectContaining({ code: 'WRN_RL_BUDGETS_RESTORED' })]);
    let after = 0;
    for (let i = 0; i < 50; i++) {
      nowC += 1;
      if ((await c.check('hot')).allowed) after += 1;
    }
    // C's 70 came before anyone could know; no more: the restore charged what was left (before: 100 more).
    expect(after).toBeLessThanOrEqual(10);
    expect(admitted + after).toBeLessThanOrEqual(190);
    await a.close();
    await c.close();
  }, 30_000);

  it('leases too: two held under a limit of 2, a FLUSHALL, and the third is refused (before: admitted); the held ones are back', async () => {
    const warnings: Record<string, unknown>[] = [];
    const limiter = createLimiter({
      name: 'flush-leases',
      policies: { algorithm: 'concurrency', limit: 2, leaseMs: 20_000 },
      store: new RedisStore({ client: await server.storeClient('ioredis'), prefix: randomPrefix(), validate: false }),
      storeTimeoutMs: 2_000,
      logger: { warn: (o: Record<string, unknown>) => warnings.push(o), error() {} },
    });
    const held = [await limiter.check('k'), await limiter.check('k')];
    expect(held.map((d) => d.allowed)).toEqual([true, true]);
    await admin.call('FLUSHALL');
    expect(await limiter.check('k')).toMatchObject({ allowed: false, degraded: false });
    expect(warnings).toEqual([expect.objectContaining({ code: 'WRN_RL_LEASES_RESTORED', restored: 2, held: 2 })]);
    held[0]?.release?.();
    await waitFor('a lease free again', async () => {
      const d = await limiter.check('k');
      d.release?.();
      return d.allowed;
    });
    held[1]?.release?.();
    await limiter.close();
  });

  it('a mark deleted alone, with one key (as an allkeys-* eviction does): the keys that kept their counts are not charged twice', async () => {
    const prefix = randomPrefix();
    const warnings: Record<string, unknown>[] = [];
    const limiter = createLimiter({
      name: 'flush-evicted',
      policies: { algorithm: 'fixed-window', limit: 10, windowMs: WINDOW_MS },
      store: new RedisStore({ client: await server.storeClient('ioredis'), prefix, validate: false }),
      storeTimeoutMs: 2_000,
      logger: { warn: (o: Record<string, unknown>) => warnings.push(o), error() {} },
    });
    for (let i = 0; i < 8; i++) await limiter.check('a');
    for (let i = 0; i < 5; i++) await limiter.check('b');
    const keys = (await admin.keys(`${prefix}:*`)) as string[];
    const mark = keys.find((k) => k.endsWith('~alive')) as string;
    const stateOfB = keys.find((k) => k.includes('{b}')) as string;
    expect([mark, stateOfB].every((k) => k !== undefined)).toBe(true);
    await admin.del(mark, stateOfB);
    // b's next answer could not follow and the mark is gone, but a kept its 8: no loss of the store.
    expect((await limiter.check('b')).remaining).toBe(9);
    await waitFor('the mark set again', async () => (await admin.exists(mark)) === 1);
    await sleep(50);
    // Before: a charged its 8 again (0 left).
    expect((await limiter.peek('a')).remaining).toBe(2);
    expect(warnings).toEqual([]);
    await limiter.close();
  });

  it('refunds give budget back without a loss: nothing is charged again, nothing is logged', async () => {
    const warnings: Record<string, unknown>[] = [];
    const limiter = createLimiter({
      name: 'flush-refunds',
      policies: { algorithm: 'fixed-window', limit: 10, windowMs: WINDOW_MS },
      store: new RedisStore({ client: await server.storeClient('ioredis'), prefix: randomPrefix(), validate: false }),
      storeTimeoutMs: 2_000,
      logger: { warn: (o: Record<string, unknown>) => warnings.push(o), error() {} },
    });
    for (let round = 0; round < 5; round++) {
      // Two checks in flight, then both refunded: the next answer has more budget than the last.
      const ds = await Promise.all([limiter.check('k'), limiter.check('k'), limiter.check('k')]);
      for (const d of ds) await limiter.refund(d);
    }
    await waitFor('the marks asked', async () => (await limiter.peek('k')).remaining === 10);
    expect((await limiter.check('k')).remaining).toBe(9);
    expect(warnings).toEqual([]);
    await limiter.close();
  });
});
