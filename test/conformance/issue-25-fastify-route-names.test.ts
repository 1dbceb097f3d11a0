/**
 * @module A Fastify route with its own `config.rateLimit` under a plugin whose `store` it shares keeps its
 * own budget (issue 25: limiters never share state by accident), instead of failing at startup with
 * ERR_RL_SHARED_STATE or sharing the plugin's keys.
 */
import { MemoryStore } from '@tollgate/core';
import fastifyRateLimit from '@tollgate/fastify';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';

describe('fastify: route limiters on the plugin store', () => {
  it('starts, and the route and the plugin keep separate budgets on one store', async () => {
    const store = new MemoryStore({ sweepIntervalMs: 0 });
    const app = Fastify();
    await app.register(fastifyRateLimit, { store, policies: { algorithm: 'fixed-window', limit: 2, windowMs: 60_000 }, key: () => 'k' });
    app.get('/', async () => 'plugin');
    app.get(
      '/users/:id',
      { config: { rateLimit: { policies: { algorithm: 'fixed-window', limit: 3, windowMs: 60_000 } } } },
      async () => 'route',
    );
    await app.ready();
    const codes = async (url: string, n: number) => {
      const out: number[] = [];
      for (let i = 0; i < n; i++) out.push((await app.inject({ url })).statusCode);
      return out;
    };
    expect(await codes('/', 3)).toEqual([200, 200, 429]);
    expect(await codes('/users/1', 4)).toEqual([200, 200, 200, 429]);
    await app.close();
  });

  it('derives the route name from the plugin name, so two plugins with names stay apart too', async () => {
    const store = new MemoryStore({ sweepIntervalMs: 0 });
    const app = Fastify();
    await app.register(fastifyRateLimit, {
      name: 'api',
      store,
      policies: { algorithm: 'fixed-window', limit: 1, windowMs: 60_000 },
      key: () => 'k',
    });
    app.get('/a', { config: { rateLimit: { policies: { algorithm: 'fixed-window', limit: 1, windowMs: 60_000 } } } }, async () => 'a');
    app.get('/b', { config: { rateLimit: { policies: { algorithm: 'fixed-window', limit: 1, windowMs: 60_000 } } } }, async () => 'b');
    await app.ready();
    expect((await app.inject({ url: '/a' })).statusCode).toBe(200);
    expect((await app.inject({ url: '/b' })).statusCode).toBe(200);
    expect((await app.inject({ url: '/a' })).statusCode).toBe(429);
    await app.close();
  });

  it('keeps GET and POST of one URL, and URLs that differ only in characters a name cannot hold, apart on one store', async () => {
    const store = new MemoryStore({ sweepIntervalMs: 0 });
    const app = Fastify();
    await app.register(fastifyRateLimit, { store, policies: { algorithm: 'fixed-window', limit: 100, windowMs: 60_000 }, key: () => 'k' });
    const own = () => ({ config: { rateLimit: { policies: { algorithm: 'fixed-window' as const, limit: 2, windowMs: 60_000 } } } });
    // One options object for both methods: still two routes, two budgets.
    const shared = own();
    app.get('/items', shared, async () => 'get');
    app.post('/items', shared, async () => 'post');
    app.get('/users/:id', own(), async () => 'param');
    app.get('/users/~id', own(), async () => 'tilde');
    await app.ready();
    const codes = async (method: 'GET' | 'POST' | 'HEAD', url: string, n: number) => {
      const out: number[] = [];
      for (let i = 0; i < n; i++) out.push((await app.inject({ method, url })).statusCode);
      return out;
    };
    expect(await codes('GET', '/items', 3)).toEqual([200, 200, 429]);
    expect(await codes('POST', '/items', 3)).toEqual([200, 200, 429]);
    expect(await codes('GET', '/users/7', 3)).toEqual([200, 200, 429]);
    expect(await codes('GET', '/users/~id', 3)).toEqual([200, 200, 429]);
    // HEAD is GET's route (Fastify adds it with GET's options): it shares GET's spent budget.
    expect(await codes('HEAD', '/items', 1)).toEqual([429]);
    // Four limiters: HEAD /items is GET /items'.
    expect(new Set(app.rateLimit.routes.values()).size).toBe(4);
    expect(app.rateLimit.routes.get('HEAD /items')).toBe(app.rateLimit.routes.get('GET /items'));
    await app.close();
  });

  it("gives the HEAD Fastify adds to a route of several methods that route's budget, and keeps one URL on two hosts apart", async () => {
    const store = new MemoryStore({ sweepIntervalMs: 0 });
    const app = Fastify();
    await app.register(fastifyRateLimit, { store, policies: { algorithm: 'fixed-window', limit: 100, windowMs: 60_000 }, key: () => 'k' });
    const own = () => ({ rateLimit: { policies: { algorithm: 'fixed-window' as const, limit: 2, windowMs: 60_000 } } });
    app.route({ method: ['GET', 'POST'], url: '/x', config: own(), handler: async () => 'x' });
    app.get('/h', { constraints: { host: 'a.example' }, config: own() }, async () => 'a');
    app.get('/h', { constraints: { host: 'b.example' }, config: own() }, async () => 'b');
    await app.ready();
    const codes = async (requests: { method: 'GET' | 'HEAD'; url: string; host?: string }[]) => {
      const out: number[] = [];
      for (const r of requests)
        out.push((await app.inject({ method: r.method, url: r.url, headers: { host: r.host ?? 'localhost' } })).statusCode);
      return out;
    };
    // HEAD shares GET,POST /x's two requests: it does not get two more.
    expect(
      await codes([
        { method: 'GET', url: '/x' },
        { method: 'HEAD', url: '/x' },
        { method: 'HEAD', url: '/x' },
      ]),
    ).toEqual([200, 200, 429]);
    expect(
      await codes([
        { method: 'GET', url: '/h', host: 'a.example' },
        { method: 'GET', url: '/h', host: 'a.example' },
        { method: 'GET', url: '/h', host: 'b.example' },
      ]),
    ).toEqual([200, 200, 200]);
    await app.close();
  });
});

describe('fastify: route limiters named by the adapter, in two apps on one store', () => {
  const search = () => ({
    config: { rateLimit: { policies: { name: 'search', algorithm: 'fixed-window' as const, limit: 3, windowMs: 60_000 } } },
  });
  const pluginOn = async (store: MemoryStore, options: Record<string, unknown>) => {
    const app = Fastify();
    await app.register(fastifyRateLimit, { store, key: () => 'k', ...options });
    return app;
  };
  /** The app with its `GET /search`, ready; rejected when the route's limiter is refused (at the route or at ready()). */
  const withSearch = async (app: Awaited<ReturnType<typeof pluginOn>>) => {
    app.get('/search', search(), async () => 'search');
    await app.ready();
    return app;
  };
  const appOn = async (store: MemoryStore, options: Record<string, unknown>) => withSearch(await pluginOn(store, options));

  it('refuses the second app (ERR_RL_SHARED_STATE) where before the two spent one budget silently', async () => {
    const store = new MemoryStore({ sweepIntervalMs: 0 });
    const first = await appOn(store, { policies: { name: 'public', limit: 100, windowMs: 3_600_000 } });
    const second = await pluginOn(store, { policies: { name: 'internal', limit: 1000, windowMs: 3_600_000 } });
    await expect(withSearch(second)).rejects.toMatchObject({
      code: 'ERR_RL_SHARED_STATE',
      message: expect.stringContaining("the adapter named both 'route|GET|/search'"),
    });
    await second.close().catch(() => {});
    await first.close();
    // The first closed: its route's claim is free again.
    const third = await appOn(store, { policies: { name: 'other', limit: 1000, windowMs: 3_600_000 } });
    expect((await third.inject({ url: '/search' })).statusCode).toBe(200);
    await third.close();
  });

  it('lets a name given to the plugin or the route decide: different names apart, the same name shared on purpose', async () => {
    const store = new MemoryStore({ sweepIntervalMs: 0 });
    const a = await appOn(store, { name: 'public', policies: { limit: 100, windowMs: 3_600_000 } });
    const b = await appOn(store, { name: 'internal', policies: { limit: 100, windowMs: 3_600_000 } });
    const codes = async (app: typeof a, n: number) => {
      const out: number[] = [];
      for (let i = 0; i < n; i++) out.push((await app.inject({ url: '/search' })).statusCode);
      return out;
    };
    expect(await codes(b, 4)).toEqual([200, 200, 200, 429]);
    expect(await codes(a, 4)).toEqual([200, 200, 200, 429]);
    const c = await appOn(store, { name: 'public', policies: { limit: 100, windowMs: 3_600_000 } });
    expect(await codes(c, 1)).toEqual([429]);
    await Promise.all([a.close(), b.close(), c.close()]);
  });
});
