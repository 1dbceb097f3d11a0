/**
 * @module The loud configuration checks of RedisStore (config-checks.ts) against real servers: a
 * `maxmemory-policy` that may evict limiter keys warns once (`WRN_RL_EVICTION_POLICY`) on the first
 * connection, for every client and on a Cluster; `noeviction` stays quiet; ioredis `stringNumbers: true`
 * is refused at construction (`ERR_RL_CLIENT_STRING_NUMBERS`); ioredis' resending of unfulfilled commands
 * warns (`WRN_RL_CLIENT_RESENDS`), and a dropped connection shows why: with the default, requests Redis
 * already ran are charged twice; with the documented `autoResendUnfulfilledCommands: false`, never. An
 * ioredis Sentinel client without `failoverDetector` warns (`WRN_RL_SENTINEL_NO_FAILOVER_DETECTOR`).
 */
import { createServer, type Socket, connect as tcpConnect } from 'node:net';
import { createLimiter, type LogFields, RedisStore, type RedisStoreClient, type Store, type StorePlan } from '@tollgate/core';
import fastifyRateLimit from '@tollgate/fastify';
import Fastify from 'fastify';
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { CLIENT_KINDS, describeRedis, HOST, type RedisServer, randomPrefix, startCluster, startRedis, waitFor } from './harness.js';

/** A logger that keeps the codes it was given. */
function recorder() {
  const codes: string[] = [];
  return { codes, logger: { warn: (f: LogFields) => codes.push(String(f.code)), error: (f: LogFields) => codes.push(String(f.code)) } };
}

/** A limiter on `store`, and the plan it passes to the store. */
function limiterOn(store: RedisStore) {
  let plan: StorePlan | undefined;
  const spy: Store = {
    kind: 'redis',
    apply: (key, p, cost, now) => {
      plan = p;
      return store.apply(key, p, cost, now);
    },
    reset: (key, p) => store.reset(key, p),
  };
  const limiter = createLimiter({
    policies: { name: 'api', algorithm: 'fixed-window', limit: 1000, windowMs: 3_600_000 },
    store: spy,
    storeTimeoutMs: 5000,
    logger: { warn() {}, error() {} },
  });
  return { limiter, plan: () => plan as StorePlan };
}

describeRedis('RedisStore configuration checks', () => {
  let evicting: RedisServer;
  let safe: RedisServer;

  beforeAll(async () => {
    [evicting, safe] = await Promise.all([
      startRedis(['--maxmemory', '64mb', '--maxmemory-policy', 'allkeys-lru']),
      startRedis(['--maxmemory', '64mb', '--maxmemory-policy', 'noeviction']),
    ]);
  });
  afterAll(async () => {
    await Promise.all([evicting?.close(), safe?.close()]);
  });

  for (const kind of CLIENT_KINDS) {
    it(`warns once about an evicting maxmemory-policy on the first connection (${kind}), never under noeviction`, async () => {
      const bad = recorder();
      const store = new RedisStore({ client: await evicting.storeClient(kind), prefix: randomPrefix(), logger: bad.logger });
      const { limiter } = limiterOn(store);
      for (let i = 0; i < 20; i++) expect((await limiter.check(`k${i % 3}`)).degraded).toBe(false);
      await waitFor('the eviction warning', () => bad.codes.includes('WRN_RL_EVICTION_POLICY'));
      for (let i = 0; i < 20; i++) await limiter.check('k');
      expect(bad.codes).toEqual(['WRN_RL_EVICTION_POLICY']);

      const good = recorder();
      const quiet = new RedisStore({ client: await safe.storeClient(kind), prefix: randomPrefix(), logger: good.logger });
      const other = limiterOn(quiet);
      for (let i = 0; i < 5; i++) await other.limiter.check('k');
      await new Promise((r) => setTimeout(r, 100));
      expect(good.codes).toEqual([]);
    });
  }

  it('asks again when CONFIG GET fails on the first connection (a Cluster still finding its masters), and warns then', async () => {
    const direct = await evicting.readyClient();
    let configGets = 0;
    const client = {
      sendCommand: async (args: string[]) => {
        if (args[0] === 'CONFIG') {
          configGets += 1;
          if (configGets === 1) throw new Error('CLUSTERDOWN The cluster is down');
        }
        return direct.call(args[0] as string, ...args.slice(1));
      },
    };
    const log = recorder();
    const store = new RedisStore({ client, prefix: randomPrefix(), logger: log.logger });
    await limiterOn(store).limiter.check('k');
    await waitFor('the eviction warning after a retry', () => log.codes.includes('WRN_RL_EVICTION_POLICY'), 5_000);
    expect(configGets).toBe(2);
    await store.close();
    direct.disconnect();
  });

  it('checks every master of a Cluster, and can be silenced', async () => {
    const cluster = await startCluster(3);
    try {
      const admin = cluster.node(cluster.masters[2] as RedisServer);
      await admin.config('SET', 'maxmemory-policy', 'volatile-ttl');
      for (const kind of ['ioredis', 'node-redis'] as const) {
        const client = await cluster.storeClient(kind);
        const log = recorder();
        const store = new RedisStore({ client, prefix: randomPrefix(), logger: log.logger });
        await limiterOn(store).limiter.check('k');
        // A Cluster client on a loaded machine may need a while to find its masters (the check asks again then).
        await waitFor(`the eviction warning through ${kind}`, () => log.codes.includes('WRN_RL_EVICTION_POLICY'), 20_000);
        const silent = recorder();
        const silenced = new RedisStore({
          client,
          prefix: randomPrefix(),
          logger: silent.logger,
          validate: { WRN_RL_EVICTION_POLICY: false },
        });
        await limiterOn(silenced).limiter.check('k');
        await new Promise((r) => setTimeout(r, 100));
        expect(silent.codes).toEqual([]);
      }
    } finally {
      await cluster.close();
    }
  }, 60_000);

  it('refuses an ioredis client with stringNumbers: true at construction', () => {
    const redis = new Redis({ lazyConnect: true, stringNumbers: true });
    const cluster = new Cluster([{ host: HOST, port: 1 }], { lazyConnect: true, redisOptions: { stringNumbers: true } });
    try {
      expect(() => new RedisStore({ client: redis })).toThrow(
        /^ERR_RL_CLIENT_STRING_NUMBERS: 'client' is an ioredis client with stringNumbers: true/,
      );
      expect(() => new RedisStore({ client: cluster })).toThrow(expect.objectContaining({ code: 'ERR_RL_CLIENT_STRING_NUMBERS' }));
    } finally {
      redis.disconnect();
      cluster.disconnect();
    }
  });

  it('warns about ioredis resending unfulfilled commands unless the client is told not to; node-redis never resends', async () => {
    const codes = (client: RedisStoreClient) => {
      const log = recorder();
      new RedisStore({ client, logger: log.logger });
      return log.codes;
    };
    const byDefault = new Redis({ lazyConnect: true });
    const told = new Redis({ lazyConnect: true, autoResendUnfulfilledCommands: false });
    const cluster = new Cluster([{ host: HOST, port: 1 }], { lazyConnect: true });
    const toldCluster = new Cluster([{ host: HOST, port: 1 }], {
      lazyConnect: true,
      redisOptions: { autoResendUnfulfilledCommands: false },
    });
    try {
      expect(codes(byDefault)).toEqual(['WRN_RL_CLIENT_RESENDS']);
      expect(codes(cluster)).toEqual(['WRN_RL_CLIENT_RESENDS']);
      expect(codes(told)).toEqual([]);
      expect(codes(toldCluster)).toEqual([]);
      expect(codes(await safe.storeClient('node-redis'))).toEqual([]);
    } finally {
      for (const c of [byDefault, told, cluster, toldCluster]) c.disconnect();
    }
  });

  it("a store given no logger warns through the first limiter's logger that names one, under its validate (console if none comes); a store's own logger and validate stay its own", async () => {
    const turn = () => new Promise((r) => setImmediate(r));
    const policies = { limit: 10, windowMs: 60_000 };
    const clients: Redis[] = [];
    const client = () => {
      const c = new Redis({ lazyConnect: true });
      clients.push(c);
      return c;
    };
    const limiters: { close(): Promise<void> }[] = [];
    const limiter = (store: RedisStore, log: ReturnType<typeof recorder>, validate?: Record<string, boolean>) => {
      limiters.push(
        createLimiter({
          name: `l${limiters.length}`,
          policies,
          store,
          logger: log.logger,
          ...(validate === undefined ? {} : { validate }),
        }),
      );
    };
    const consoleWarn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    try {
      // Before: the store's warning went to console, whatever the middleware's logger and validate said.
      const app = recorder();
      limiter(new RedisStore({ client: client() }), app);
      await turn();
      expect(app.codes).toEqual(['WRN_RL_CLIENT_RESENDS']);
      const silenced = recorder();
      limiter(new RedisStore({ client: client() }), silenced, { WRN_RL_CLIENT_RESENDS: false });
      const storeSilenced = recorder();
      limiter(new RedisStore({ client: client(), validate: { WRN_RL_CLIENT_RESENDS: false } }), storeSilenced);
      const [own, other] = [recorder(), recorder()];
      limiter(new RedisStore({ client: client(), logger: own.logger }), other);
      const shared = new RedisStore({ client: client() });
      const [first, second] = [recorder(), recorder()];
      limiter(shared, first);
      limiter(shared, second);
      await turn();
      expect([silenced.codes, storeSilenced.codes, own.codes, other.codes, first.codes, second.codes]).toEqual([
        [],
        [],
        ['WRN_RL_CLIENT_RESENDS'],
        [],
        ['WRN_RL_CLIENT_RESENDS'],
        [],
      ]);
      expect(consoleWarn).not.toHaveBeenCalled();
      // A limiter that names neither a logger nor a validate (a client shaper, a bare createLimiter) is not
      // taken for the app's; one built later, after other async work (a Fastify plugin after others), is.
      const later = new RedisStore({ client: client() });
      limiters.push(createLimiter({ name: 'bare', policies, store: later }));
      await turn();
      await new Promise((r) => setTimeout(r, 20));
      const app2 = recorder();
      limiter(later, app2);
      expect([app2.codes, consoleWarn.mock.calls.length]).toEqual([['WRN_RL_CLIENT_RESENDS'], 0]);
      // No limiter before the store's close (or its first call): console, the last resort.
      const alone = new RedisStore({ client: client() });
      await turn();
      expect(consoleWarn).not.toHaveBeenCalled();
      await alone.close();
      expect(consoleWarn).toHaveBeenCalledTimes(1);
      expect(String(consoleWarn.mock.calls[0]?.[0])).toMatch(/^WRN_RL_CLIENT_RESENDS: /);
    } finally {
      consoleWarn.mockRestore();
      await Promise.all(limiters.map((l) => l.close()));
      for (const c of clients) c.disconnect();
    }
  });

  it("Fastify: a plugin registered after others that do async work still gets the store's construction warning, under its validate", async () => {
    const consoleWarn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const clients: Redis[] = [];
    const app = async (validate?: Record<string, boolean>) => {
      const log = recorder();
      const client = new Redis({ lazyConnect: true });
      clients.push(client);
      const fastify = Fastify();
      // A plugin before tollgate's that awaits I/O: Fastify runs tollgate's body only after it.
      fastify.register(async () => {
        await new Promise((r) => setTimeout(r, 30));
      });
      fastify.register(fastifyRateLimit, {
        name: `fastify-${clients.length}`,
        policies: { limit: 10, windowMs: 60_000 },
        store: new RedisStore({ client }),
        logger: log.logger,
        ...(validate === undefined ? {} : { validate }),
      });
      await fastify.ready();
      await fastify.close();
      return log.codes;
    };
    try {
      // Before (held to the end of the turn only): console, past the plugin's logger and validate.
      expect(await app()).toEqual(['WRN_RL_CLIENT_RESENDS']);
      expect(await app({ WRN_RL_CLIENT_RESENDS: false })).toEqual([]);
      expect(consoleWarn).not.toHaveBeenCalled();
    } finally {
      consoleWarn.mockRestore();
      for (const c of clients) c.disconnect();
    }
  });

  it("refuses a store's validate that names no warning code (a misspelt one would silence nothing)", () => {
    const redis = new Redis({ lazyConnect: true });
    try {
      expect(() => new RedisStore({ client: redis, validate: { WRN_RL_CLIENT_RESENDZ: false } as never })).toThrow(
        expect.objectContaining({ code: 'ERR_RL_INVALID_OPTION', message: expect.stringMatching(/validate\.WRN_RL_CLIENT_RESENDZ/) }),
      );
      expect(() => new RedisStore({ client: redis, validate: 'no' as never })).toThrow(
        expect.objectContaining({ code: 'ERR_RL_INVALID_OPTION' }),
      );
    } finally {
      redis.disconnect();
    }
  });

  it('warns about an ioredis Sentinel client without failoverDetector; with it, without Sentinel, or node-redis, it stays quiet', async () => {
    const codes = (client: RedisStoreClient) => {
      const log = recorder();
      new RedisStore({ client, logger: log.logger });
      return log.codes.filter((c) => c !== 'WRN_RL_CLIENT_RESENDS');
    };
    const sentinels = [{ host: HOST, port: 1 }];
    const bare = new Redis({ sentinels, name: 'mymaster', lazyConnect: true });
    const detecting = new Redis({ sentinels, name: 'mymaster', lazyConnect: true, failoverDetector: true });
    const direct = new Redis({ lazyConnect: true });
    try {
      expect(codes(bare)).toEqual(['WRN_RL_SENTINEL_NO_FAILOVER_DETECTOR']);
      expect(codes(detecting)).toEqual([]);
      expect(codes(direct)).toEqual([]);
      expect(codes(await safe.storeClient('node-redis'))).toEqual([]);
      // Switched off like every warning of the store.
      const log = recorder();
      new RedisStore({ client: bare, logger: log.logger, validate: { WRN_RL_SENTINEL_NO_FAILOVER_DETECTOR: false } });
      expect(log.codes).not.toContain('WRN_RL_SENTINEL_NO_FAILOVER_DETECTOR');
    } finally {
      for (const c of [bare, detecting, direct]) c.disconnect();
    }
  });

  /**
   * A TCP proxy in front of `port` that can swallow Redis' replies on the connections open now and then
   * cut them: Redis has run the commands, the client never hears back, and reconnects (through the proxy,
   * which passes the new connection through).
   */
  async function replyDroppingProxy(port: number) {
    const open = new Set<{ client: Socket; server: Socket; swallow: boolean }>();
    const proxy = createServer((client) => {
      const server = tcpConnect(port, HOST);
      const pair = { client, server, swallow: false };
      open.add(pair);
      client.on('data', (d) => server.write(d));
      server.on('data', (d) => {
        if (!pair.swallow) client.write(d);
      });
      const end = () => {
        open.delete(pair);
        client.destroy();
        server.destroy();
      };
      client.on('close', end).on('error', end);
      server.on('close', end).on('error', end);
    });
    await new Promise<void>((r) => proxy.listen(0, HOST, r));
    const address = proxy.address();
    return {
      port: typeof address === 'object' && address !== null ? address.port : 0,
      swallow: () => {
        for (const p of open) p.swallow = true;
      },
      cut: () => {
        for (const p of [...open]) p.client.destroy();
      },
      close: () => new Promise((r) => proxy.close(r)),
    };
  }

  for (const resend of [true, false]) {
    it(`a dropped connection with 32 requests on the wire: ${resend ? 'the ioredis default charges them twice' : 'autoResendUnfulfilledCommands: false never does'}`, async () => {
      const proxy = await replyDroppingProxy(safe.port);
      const client = new Redis({ host: HOST, port: proxy.port, autoResendUnfulfilledCommands: resend, retryStrategy: () => 20 });
      client.on('error', () => undefined);
      const admin = await safe.readyClient();
      try {
        await waitFor('client ready', () => client.status === 'ready');
        const store = new RedisStore({ client, prefix: randomPrefix(), validate: false });
        const { limiter, plan } = limiterOn(store);
        await limiter.check('warm-up');
        const [name] = store.keyNames('hot', plan()) as [string];
        proxy.swallow();
        const calls = Array.from({ length: 32 }, () => Promise.resolve(store.apply('hot', plan(), 1000, 0)));
        for (const c of calls) c.catch(() => undefined);
        // Redis ran all 32 (1000 milli-units each); their replies went nowhere.
        await waitFor('Redis to run the 32 calls', async () => (await admin.get(name)) === '32000');
        proxy.cut();
        await waitFor('the client to reconnect', () => client.status === 'ready');
        if (resend) {
          await waitFor('the client to send the 32 calls again', async () => (await admin.get(name)) === '64000');
        } else {
          // Give a resend time to reach Redis and be answered: none comes.
          await new Promise((r) => setTimeout(r, 300));
          expect(await admin.get(name)).toBe('32000');
        }
      } finally {
        client.disconnect();
        await proxy.close();
      }
    });
  }
});
