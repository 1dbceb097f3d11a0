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
});
