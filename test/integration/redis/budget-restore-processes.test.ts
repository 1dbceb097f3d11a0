/**
 * @module Budgets survive a Redis that lost its data in every process of a limiter, not only the first to
 * find the loss (failure/restore/budget-restore.ts). Two RedisStores on two connections stand for two processes of
 * one limiter (same name, same prefix); each decided some keys alone and one key with the other. Before,
 * the first process to find the mark gone charged what it remembered and set the mark again, and the
 * other found it set: the keys only it had decided started from a full budget. Now the mark carries a
 * token, set anew at each loss, so the other process knows the store lost its state since it last looked;
 * and each process charges a key only what the others did not charge it already (a ledger per key in
 * Redis, raised atomically by each process to what it counts), so a shared key ends with what the process
 * that saw the most had counted, never the sum.
 */
import { createLimiter, type Limiter, RedisStore } from '@tollgate/core';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { RESTORED } from '../../../packages/core/src/stores/redis/scripts/restore-ledger.js';
import { describeRedis, type RedisServer, randomPrefix, startRedis, waitFor } from './harness.js';

const WINDOW_MS = 600_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describeRedis('budgets after a Redis that lost its data, in every process', () => {
  let server: RedisServer;
  let admin: Redis;

  beforeAll(async () => {
    server = await startRedis();
    admin = await server.readyClient({ retryStrategy: () => 50 });
  });
  afterAll(async () => {
    await server?.close();
  });

  /** Two processes of one limiter, `a` and `b`, and what each warned. */
  async function twoProcesses(name: string, algorithm: 'fixed-window' | 'gcra' = 'fixed-window') {
    const into = Date.now() % WINDOW_MS;
    if (into > WINDOW_MS - 20_000) await sleep(WINDOW_MS - into + 50);
    const prefix = randomPrefix();
    const warned: Record<string, unknown>[][] = [[], []];
    const [a, b] = (await Promise.all(
      [0, 1].map(async (i) =>
        createLimiter({
          name,
          policies: { algorithm, limit: 10, windowMs: WINDOW_MS },
          store: new RedisStore({ client: await server.storeClient('ioredis'), prefix, validate: false }),
          storeTimeoutMs: 2_000,
          logger: { warn: (o: Record<string, unknown>) => warned[i]?.push(o), error() {} },
        }),
      ),
    )) as [Limiter, Limiter];
    const restores = (i: number) => (warned[i] ?? []).filter((w) => w.code === 'WRN_RL_BUDGETS_RESTORED');
    return { a, b, prefix, restores };
  }

  /** `n` checks of `key` on `limiter`, all admitted. */
  async function use(limiter: Limiter, key: string, n: number): Promise<void> {
    for (let i = 0; i < n; i++) expect((await limiter.check(key)).allowed).toBe(true);
  }

  /** How many of `n` checks alternating between `limiters` are admitted. */
  async function admitted(limiters: readonly Limiter[], key: string, n: number): Promise<number> {
    let out = 0;
    for (let i = 0; i < n; i++) {
      const d = await (limiters[i % limiters.length] as Limiter).check(key);
      expect(d.degraded).toBe(false);
      if (d.allowed) out += 1;
    }
    return out;
  }

  it('a restart without persistence: the keys only the second process decided keep their counts too, and a shared key is charged once', async () => {
    const { a, b, restores } = await twoProcesses('procs-restart');
    await use(a, 'only-a', 8);
    await use(b, 'only-b', 8);
    // a saw 4 used of the shared key; b, after it, 7.
    await use(a, 'shared', 4);
    await use(b, 'shared', 3);
    await server.stop();
    await sleep(200);
    await server.start();
    await waitFor('both processes restored', () => restores(0).length + restores(1).length >= 2);
    await sleep(300);
    expect(await admitted([a], 'only-a', 10)).toBe(2);
    // Before: 10 (the second process found the mark set again by the first, and charged nothing).
    expect(await admitted([b], 'only-b', 10)).toBe(2);
    // 7 charged again (the most either saw), not 4 + 7.
    expect(await admitted([a, b], 'shared', 10)).toBe(3);
    await Promise.all([a.close(), b.close()]);
  }, 60_000);

  for (const algorithm of ['fixed-window', 'gcra'] as const) {
    it(`${algorithm}: a FLUSHALL with the connections up: each process restores its own keys when an answer of its own could not follow`, async () => {
      const { a, b, restores } = await twoProcesses(`procs-flush-${algorithm}`, algorithm);
      await use(a, 'only-a', 8);
      await use(b, 'only-b', 8);
      await use(a, 'shared', 3);
      await use(b, 'shared', 3);
      await admin.call('FLUSHALL');
      // a finds it first and charges what it remembers.
      expect(await admitted([a], 'only-a', 10)).toBe(2);
      await waitFor('a restored', () => restores(0).length === 1);
      // Before: 10 for b's own key, and 4 for the shared one (a charged the 3 it saw).
      expect(await admitted([b], 'only-b', 10)).toBe(2);
      await waitFor('b restored', () => restores(1).length === 1);
      expect(await admitted([a, b], 'shared', 10)).toBe(4);
      await Promise.all([a.close(), b.close()]);
    }, 30_000);
  }

  it('three processes, 40 keys decided in a random interleaving: after a restart each key holds the largest count any process saw, whatever order they restore in', async () => {
    const into = Date.now() % WINDOW_MS;
    if (into > WINDOW_MS - 20_000) await sleep(WINDOW_MS - into + 50);
    const prefix = randomPrefix();
    let restores = 0;
    const processes = await Promise.all(
      [0, 1, 2].map(async () =>
        createLimiter({
          name: 'procs-three',
          policies: { algorithm: 'fixed-window', limit: 10, windowMs: WINDOW_MS },
          store: new RedisStore({ client: await server.storeClient('ioredis'), prefix, validate: false }),
          storeTimeoutMs: 2_000,
          logger: {
            warn: (o: Record<string, unknown>) => {
              if (o.code === 'WRN_RL_BUDGETS_RESTORED') restores += 1;
            },
            error() {},
          },
        }),
      ),
    );
    // A fixed pseudo-random interleaving: each check by one of the three, on one of 40 keys.
    let seed = 7;
    const next = (n: number) => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed % n;
    };
    const seen = new Map<string, number>();
    for (let i = 0; i < 200; i++) {
      const key = `k${next(40)}`;
      const d = await (processes[next(3)] as Limiter).check(key);
      seen.set(key, Math.min(seen.get(key) ?? 10, d.remaining));
    }
    // What each key had used by the view of the process that saw it last (the largest view: fixed windows count up).
    const largest = new Map([...seen].map(([k, left]) => [k, 10 - left]));
    await server.stop();
    await sleep(200);
    await server.start();
    // Each restores (a process whose every key another charged as much already charges nothing, and says nothing).
    await waitFor('a restore', () => restores >= 1);
    // Each client reconnects on its own backoff, so the last restore can come well after the first: wait for
    // every key's count, then look again once all had time to charge more (a fixed pause is short on a busy machine).
    const left = async () => {
      const out: [string, number | undefined][] = [];
      for (const key of largest.keys()) {
        const d = await (processes[0] as Limiter).peek(key).catch(() => undefined);
        out.push([key, d && !d.degraded ? d.remaining : undefined]);
      }
      return out;
    };
    const expected = [...largest].map(([key, used]) => [key, 10 - used]);
    await waitFor('every key charged again', async () => JSON.stringify(await left()) === JSON.stringify(expected));
    await sleep(1_000);
    expect(await left()).toEqual(expected);
    await Promise.all(processes.map((l) => l.close()));
  }, 60_000);

  it('a mark deleted alone: the process that sets it again charges nothing, and the other, seeing a new mark, charges nothing either', async () => {
    const { a, b, prefix, restores } = await twoProcesses('procs-evicted');
    await use(a, 'only-a', 8);
    await use(b, 'only-b', 6);
    const mark = ((await admin.keys(`${prefix}:*`)) as string[]).find((k) => k.endsWith('~alive')) as string;
    expect(mark).toBeDefined();
    const before = await admin.get(mark);
    await admin.del(mark);
    // a's connection drops and comes back: it finds the mark gone, but its key kept its count.
    await admin.call('CLIENT', 'KILL', 'TYPE', 'normal');
    await waitFor('the mark set again', async () => (await admin.exists(mark)) === 1);
    await sleep(300);
    expect(await admin.get(mark)).not.toBe(before);
    expect([(await a.peek('only-a')).remaining, (await b.peek('only-b')).remaining]).toEqual([2, 4]);
    expect([restores(0), restores(1)]).toEqual([[], []]);
    await Promise.all([a.close(), b.close()]);
  }, 30_000);

  it('the ledger script: a raise asked again under its id answers as it did the first time (its reply lost), not with its own raise; one that raises nothing keeps no id', async () => {
    const prefix = randomPrefix();
    const [ledger, raises] = [`${prefix}~restored{k}:p`, `${prefix}~raises{k}:p`];
    const raise = (used: number, id: string) => admin.eval(RESTORED.lua, 2, ledger, raises, String(used), '60000', id);
    expect(await raise(8, 'a.1')).toBe('0');
    expect(await raise(9, 'b.1')).toBe('8');
    // A's raise sent again: what it found the first time, so A still charges its 8.
    expect(await raise(8, 'a.1')).toBe('0');
    expect(await raise(9, '')).toBe('9');
    expect(await raise(5, 'c.1')).toBe('9');
    expect(await admin.hget(raises, 'c.1')).toBeNull();
    expect(await admin.get(ledger)).toBe('9');
    const ttl = await admin.pttl(raises);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(60_000);
  });
});
