/**
 * @module Limiters never share state by accident (issue 25 item 1), on a real redis-server and on the
 * MemoryStore alike: a 5/min login limiter and an unrelated 100/min API limiter on one store keep
 * separate budgets when each has a `name`; two limiters without a name that would share key names are
 * refused at construction (`ERR_RL_SHARED_STATE`), also through two RedisStore objects on one client and
 * prefix, or on two clients (any library) of one server, database and prefix; a limiter without a name keeps the key names of earlier versions (its existing state is read
 * on); and the same name in two processes shares one budget, across a change of limit.
 */
import { createLimiter, type Limiter, type LimiterOptions, MemoryStore, RedisStore, type Store } from '@tollgate/core';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clearOfWindowEnd, describeRedis, type RedisServer, randomPrefix, startRedis, waitFor } from './harness.js';
import { nextMessage, startWorkers, stopWorkers } from './worker-pool.js';

const MINUTE = 60_000;
const quiet = { warn() {}, error() {} };

async function admitted(limiter: Limiter, key: string, n: number): Promise<number> {
  let ok = 0;
  for (let i = 0; i < n; i++) if ((await limiter.check(key)).allowed) ok += 1;
  return ok;
}

/** The cases every store must pass the same way; `fresh` gives a new store (Redis: a new prefix). */
function sameOnEveryStore(fresh: () => Store, twin?: (store: Store) => Store) {
  const base: Omit<LimiterOptions, 'policies'> = { storeTimeoutMs: 5_000, onStoreError: 'closed', logger: quiet };

  it('keeps the budgets of a 5/min login limiter and a 100/min API limiter apart when each has a name', async () => {
    await clearOfWindowEnd(MINUTE);
    const store = fresh();
    const login = createLimiter({ ...base, name: 'login', policies: { algorithm: 'fixed-window', limit: 5, windowMs: MINUTE }, store });
    const api = createLimiter({ ...base, name: 'api', policies: { algorithm: 'fixed-window', limit: 100, windowMs: MINUTE }, store });
    expect(await admitted(api, 'ip:10.0.0.1', 10)).toBe(10);
    // Before issue 25, on Redis: the first login after 10 API calls was a 429.
    expect(await admitted(login, 'ip:10.0.0.1', 6)).toBe(5);
    expect((await api.check('ip:10.0.0.1')).remaining).toBe(89);
    await Promise.all([login.close(), api.close()]);
  });

  it('refuses a second limiter without a name that would share key names, naming the fix', async () => {
    await clearOfWindowEnd(MINUTE);
    const store = fresh();
    const first = createLimiter({ ...base, policies: { algorithm: 'fixed-window', limit: 5, windowMs: MINUTE }, store });
    const second = () => createLimiter({ ...base, policies: { algorithm: 'fixed-window', limit: 100, windowMs: MINUTE }, store });
    expect(second).toThrow(expect.objectContaining({ code: 'ERR_RL_SHARED_STATE', option: 'name' }));
    expect(second).toThrow(/Give each limiter its own name .* or the same name to both to share one budget on purpose/);
    if (twin !== undefined)
      expect(() =>
        createLimiter({ ...base, policies: { algorithm: 'fixed-window', limit: 1, windowMs: MINUTE }, store: twin(store) }),
      ).toThrow(expect.objectContaining({ code: 'ERR_RL_SHARED_STATE' }));
    // Once the first is closed its key names are free again (a reload), with their state.
    expect(await admitted(first, 'k', 3)).toBe(3);
    await first.close();
    const replacement = second();
    expect((await replacement.check('k')).remaining).toBe(96);
    await replacement.close();
  });
}

describe('limiter identity on the MemoryStore (issue 25)', () => {
  sameOnEveryStore(() => new MemoryStore({ sweepIntervalMs: 0 }));
});

describeRedis('limiter identity on Redis (issue 25)', () => {
  let server: RedisServer;
  let client: Redis;

  beforeAll(async () => {
    server = await startRedis();
    client = await server.readyClient({ autoResendUnfulfilledCommands: false });
  });
  afterAll(async () => {
    await server?.close();
  });

  sameOnEveryStore(
    () => new RedisStore({ client, prefix: randomPrefix() }),
    (store) => new RedisStore({ client, prefix: (store as RedisStore).prefix }),
  );

  it('counts two clients of one server, database and prefix as one store, whichever library; another database apart', async () => {
    const prefix = randomPrefix();
    const policies = { algorithm: 'fixed-window', limit: 5, windowMs: MINUTE } as const;
    const first = createLimiter({ policies, store: new RedisStore({ client, prefix }), logger: quiet });
    const other = await server.readyClient({ autoResendUnfulfilledCommands: false });
    const elsewhere = await server.readyClient({ autoResendUnfulfilledCommands: false, db: 1 });
    // Before: each of these shared the first limiter's budget without a word (a second `new Redis(url)`
    // in another module, `redis.duplicate()`, node-redis beside ioredis).
    for (const twin of [
      other,
      client.duplicate({ lazyConnect: true }),
      await server.storeClient('node-redis'),
      await server.storeClient('node-redis-v4'),
    ]) {
      expect(() => createLimiter({ policies, store: new RedisStore({ client: twin, prefix }), logger: quiet })).toThrow(
        expect.objectContaining({
          code: 'ERR_RL_SHARED_STATE',
          message: expect.stringContaining(`(or another reaching the same keys: localhost:${server.port}/0, prefix '${prefix}')`),
        }),
      );
    }
    await clearOfWindowEnd(MINUTE);
    const apart = createLimiter({ policies, store: new RedisStore({ client: elsewhere, prefix }), logger: quiet });
    expect(await admitted(apart, 'ip:10.0.0.1', 5)).toBe(5);
    expect(await admitted(first, 'ip:10.0.0.1', 6)).toBe(5);
    await Promise.all([first.close(), apart.close()]);
    // Closed, the first one's key names are free for a limiter on another client.
    const replacement = createLimiter({ policies, store: new RedisStore({ client: other, prefix }), logger: quiet });
    expect((await replacement.check('ip:10.0.0.1')).allowed).toBe(false);
    await replacement.close();
  });

  it("finds two stores whose clients' options cannot say they reach one server once the server answers: the second limiter logs ERR_RL_SHARED_STATE", async () => {
    const prefix = randomPrefix();
    const policies = { algorithm: 'fixed-window', limit: 5, windowMs: MINUTE } as const;
    const lines = () => {
      const seen: Record<string, unknown>[] = [];
      return { seen, logger: { warn() {}, error: (o: Record<string, unknown>, message: string) => seen.push({ ...o, message }) } };
    };
    // A client tollgate knows by its `sendCommand` alone (a DNS name beside the IP of the same server alike):
    // its keyspace is not in its options, so construction cannot refuse it. Before: two budgets in one, silently.
    const raw = { sendCommand: (args: string[]) => client.call(args[0] as string, ...args.slice(1)) };
    const [a, b, c] = [lines(), lines(), lines()];
    const first = createLimiter({ policies, store: new RedisStore({ client, prefix }), logger: a.logger });
    const second = createLimiter({ policies, store: new RedisStore({ client: raw, prefix }), logger: b.logger });
    const apart = createLimiter({ policies, store: new RedisStore({ client: raw, prefix: randomPrefix() }), logger: c.logger });
    await waitFor('the shared key names found', () => b.seen.length > 0);
    expect(b.seen).toEqual([
      expect.objectContaining({
        code: 'ERR_RL_SHARED_STATE',
        message: expect.stringMatching(
          /^ERR_RL_SHARED_STATE: 'name' is missing, .* another store object reaches the same keys; the limiter runs on/,
        ),
      }),
    ]);
    await new Promise((r) => setTimeout(r, 50));
    expect([a.seen, c.seen]).toEqual([[], []]);
    // Closed, the first one's key names are free for a limiter through the other client.
    await Promise.all([first.close(), second.close()]);
    const d = lines();
    const replacement = createLimiter({ policies, store: new RedisStore({ client: raw, prefix }), logger: d.logger });
    expect((await replacement.check('k')).allowed).toBe(true);
    await new Promise((r) => setTimeout(r, 50));
    expect(d.seen).toEqual([]);
    await Promise.all([apart.close(), replacement.close()]);
  });

  it('puts the name before the hash tag, and keeps the key names of a limiter without one', async () => {
    const prefix = randomPrefix();
    const store = new RedisStore({ client, prefix });
    const policies = { algorithm: 'fixed-window', limit: 5, windowMs: MINUTE } as const;
    await clearOfWindowEnd(MINUTE);
    const named = createLimiter({ name: 'login', policies, store, storeTimeoutMs: 5_000 });
    const unnamed = createLimiter({ policies, store, storeTimeoutMs: 5_000 });
    await named.check('ip:10.0.0.1');
    await unnamed.check('ip:10.0.0.1');
    // Beside the state, each limiter's mark (failure/restore/budget-restore.ts): the head, then `~alive`.
    expect((await client.keys(`${prefix}:*`)).sort()).toEqual([
      `${prefix}:v2:login:{ip:10.0.0.1}:fw1m`,
      `${prefix}:v2:login:~alive`,
      `${prefix}:v2:{ip:10.0.0.1}:fw1m`,
      `${prefix}:v2:~alive`,
    ]);
    // State an earlier version wrote (the same names) is read on.
    await client.set(`${prefix}:v2:{ip:10.0.0.2}:fw1m`, '4000', 'PX', MINUTE);
    await client.del(`${prefix}:v2:{ip:10.0.0.1}:fw1m`);
    expect((await unnamed.check('ip:10.0.0.2')).remaining).toBe(0);
    await Promise.all([named.close(), unnamed.close()]);
  });

  it('shares one budget between processes running the limiter of one name, across a change of limit; other names apart', async () => {
    const workers = await startWorkers(new URL('./identity-worker.ts', import.meta.url), 3, { REDIS_PORT: String(server.port) });
    try {
      const prefix = randomPrefix();
      // Every request in one clock-aligned minute: the budgets are fixed windows.
      await clearOfWindowEnd(MINUTE, 5_000);
      const run = async (i: number, name: string | undefined, limit: number, requests: number) => {
        const w = workers[i] as (typeof workers)[number];
        const reply = nextMessage<{ admitted: number }>(w);
        w.send({ prefix, name, limit, requests, key: 'ip:10.0.0.9' });
        return (await reply).admitted;
      };
      const [a, b, other] = await Promise.all([run(0, 'login', 5, 4), run(1, 'login', 5, 4), run(2, 'api', 100, 10)]);
      expect(a + b).toBe(5);
      expect(other).toBe(10);
      // A deploy raises the limit to 8: the 5 already used count, 3 are left.
      expect(await run(0, 'login', 8, 5)).toBe(3);
      // Without a name, processes share too (the same key names as before issue 25).
      const [u1, u2] = await Promise.all([run(1, undefined, 5, 4), run(2, undefined, 5, 4)]);
      expect(u1 + u2).toBe(5);
    } finally {
      stopWorkers(workers);
    }
  });
});
