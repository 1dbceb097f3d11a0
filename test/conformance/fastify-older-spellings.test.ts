/**
 * @module A Fastify route's `config.rateLimit` under a plugin, with renamed options spelled differently at
 * the two levels (issue 24 item 3): the route's option replaces the plugin's under either spelling, so
 * merging never trips the "both spellings" error and never keeps the plugin's value by its other name.
 */
import fastifyRateLimit from '@tollgate/fastify';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';

const policies = { algorithm: 'fixed-window', limit: 5, windowMs: 60_000 } as const;

describe('fastify: a route over the plugin, renamed options under either spelling', () => {
  it('starts with the older spelling on the plugin and the current one on the route, and the route wins', async () => {
    const app = Fastify();
    await app.register(fastifyRateLimit, { policies, key: () => 'k', pk: { secret: 'p'.repeat(32) }, hookTimeoutMs: 100 });
    app.get('/plain', { config: { rateLimit: { policies, partitionKey: false } } }, async () => 'route');
    app.get('/keyed', { config: { rateLimit: { policies, partitionKey: { secret: 'r'.repeat(32) } } } }, async () => 'keyed');
    app.get('/', async () => 'plugin');
    await app.ready();
    const plugin = (await app.inject({ url: '/' })).headers.ratelimit;
    const plain = (await app.inject({ url: '/plain' })).headers.ratelimit;
    const keyed = (await app.inject({ url: '/keyed' })).headers.ratelimit;
    expect(plugin).toMatch(/;pk=:/);
    expect(plain).not.toMatch(/pk=/);
    // Another secret: another partition key for the same key.
    expect(keyed).toMatch(/;pk=:/);
    expect(/pk=:[^:]*:/.exec(String(keyed))?.[0]).not.toBe(/pk=:[^:]*:/.exec(String(plugin))?.[0]);
    await app.close();
  });

  it('shares the plugin load shedder with a route unless the route brings its own, under either spelling', async () => {
    const app = Fastify();
    await app.register(fastifyRateLimit, { policies, key: () => 'k', shed: { maxInFlight: 7 } });
    app.get('/own', { config: { rateLimit: { policies, loadShedding: { maxInFlight: 2 } } } }, async () => 'own');
    app.get('/shared', { config: { rateLimit: { policies } } }, async () => 'shared');
    await app.ready();
    expect((await app.inject({ url: '/own' })).statusCode).toBe(200);
    expect((await app.inject({ url: '/shared' })).statusCode).toBe(200);
    expect(app.rateLimit.shedder?.state().limit).toBe(7);
    await app.close();
  });
});
