import { type Decision, RateLimitConfigError } from '@tollgate/core';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import defaultExport, { fastifyRateLimit } from './index.js';

const policies = { name: 'default', algorithm: 'fixed-window', limit: 1, windowMs: 60_000 } as const;
const clock = () => 1_800_000_000_000;
const apps: FastifyInstance[] = [];

function app(): FastifyInstance {
  const a = Fastify();
  apps.push(a);
  return a;
}

afterEach(async () => {
  await Promise.all(apps.splice(0).map((a) => a.close()));
});

describe('@tollgate/fastify', () => {
  it('has a default and a named export, the same plugin', () => {
    expect(defaultExport).toBe(fastifyRateLimit);
  });

  it('respects encapsulation: registered in a child context, it limits that context only', async () => {
    const root = app();
    await root.register(async (child) => {
      await child.register(fastifyRateLimit, { policies, clock });
      child.get('/inside', async () => 'in');
    });
    root.get('/outside', async () => 'out');
    expect((await root.inject('/inside')).statusCode).toBe(200);
    expect((await root.inject('/inside')).statusCode).toBe(429);
    for (let i = 0; i < 3; i++) {
      const res = await root.inject('/outside');
      expect(res.statusCode).toBe(200);
      expect(res.headers.ratelimit).toBeUndefined();
    }
  });

  it('requestWasSuccessful gets the request and reply.raw (the Node response), typed as such: a header the route set decides', async () => {
    const a = app();
    await a.register(fastifyRateLimit, {
      policies: { ...policies, limit: 2 },
      clock,
      skipFailedRequests: true,
      // `getHeader` is the Node response's: before, it was typed `{ statusCode }` alone.
      requestWasSuccessful: (_request, raw) => raw.getHeader('x-outcome') !== 'failed',
    });
    a.get('/', async (request, reply) => {
      if ((request.query as { fail?: string }).fail !== undefined) reply.header('x-outcome', 'failed');
      return 'ok';
    });
    for (let i = 0; i < 3; i++) expect((await a.inject('/?fail=1')).statusCode).toBe(200);
    expect((await a.inject('/')).statusCode).toBe(200);
    expect((await a.inject('/')).statusCode).toBe(200);
    expect((await a.inject('/')).statusCode).toBe(429);
  });

  it('counts a request once even when a route is reached through hooks added twice (HEAD routes, nested registration)', async () => {
    const a = app();
    await a.register(fastifyRateLimit, { policies: { ...policies, limit: 3 }, clock });
    a.get('/', async () => 'ok');
    const seen: number[] = [];
    for (let i = 0; i < 2; i++)
      seen.push(Number(/r=(\d+)/.exec(String((await a.inject({ method: 'HEAD', url: '/' })).headers.ratelimit))?.[1]));
    expect(seen).toEqual([2, 1]);
  });

  it('limits 404s through app.rateLimit.hook, counting a request once when a route falls through to them', async () => {
    const a = app();
    await a.register(fastifyRateLimit, { policies: { ...policies, limit: 2 }, clock });
    a.setNotFoundHandler({ preHandler: a.rateLimit.hook }, (_request, reply) => reply.code(404).send('nope'));
    a.get('/gone', (_request, reply) => reply.callNotFound());
    const missing = await a.inject('/missing');
    expect([missing.statusCode, missing.headers.ratelimit]).toEqual([404, '"default";r=1;t=60']);
    const gone = await a.inject('/gone');
    expect([gone.statusCode, gone.headers.ratelimit]).toEqual([404, '"default";r=0;t=60']);
    expect((await a.inject('/missing')).statusCode).toBe(429);
  });

  it('runs in the configured hook, per plugin or per route', async () => {
    const a = app();
    const order: string[] = [];
    a.addHook('preValidation', async () => {
      order.push('preValidation');
    });
    await a.register(fastifyRateLimit, { policies, clock, hook: 'preHandler', onDecision: () => order.push('limiter') });
    a.get('/', async () => 'ok');
    await a.inject('/');
    expect(order).toEqual(['preValidation', 'limiter']);
    await expect(
      (async () => {
        const b = app();
        await b.register(fastifyRateLimit, { policies, hook: 'onSend' as never });
        await b.ready();
      })(),
    ).rejects.toThrow(/ERR_RL_INVALID_HOOK: 'hook'/);
  });

  it('global: false limits only routes that ask for it; a bad route config fails at registration', async () => {
    const a = app();
    await a.register(fastifyRateLimit, { policies, clock, global: false });
    a.get('/free', async () => 'ok');
    a.get('/limited', { config: { rateLimit: {} } }, async () => 'ok');
    expect((await a.inject('/free')).headers.ratelimit).toBeUndefined();
    await a.inject('/limited');
    expect((await a.inject('/limited')).statusCode).toBe(429);
    expect(a.rateLimit.routes.get('GET /limited')?.stats().limited).toBe(1);
  });

  it('app.rateLimit.routes keeps one entry per route when routes differ only by their constraints', async () => {
    const a = app();
    await a.register(fastifyRateLimit, { policies, clock });
    a.get(
      '/v',
      { constraints: { version: '1.0.0' }, config: { rateLimit: { policies: { limit: 1, windowMs: 60_000 } } } },
      async () => 'v1',
    );
    a.get(
      '/v',
      { constraints: { version: '2.0.0' }, config: { rateLimit: { policies: { limit: 5, windowMs: 60_000 } } } },
      async () => 'v2',
    );
    await a.ready();
    const v1 = a.rateLimit.routes.get('GET /v {"version":"1.0.0"}');
    const v2 = a.rateLimit.routes.get('GET /v {"version":"2.0.0"}');
    // Before: one entry 'GET /v', the last declared; v1's limiter could not be found.
    expect(v1).toBeDefined();
    expect(v2).toBeDefined();
    expect(v1).not.toBe(v2);
    await a.inject({ url: '/v', headers: { 'accept-version': '1.0.0' } });
    expect((await a.inject({ url: '/v', headers: { 'accept-version': '1.0.0' } })).statusCode).toBe(429);
    expect(v1?.stats().limited).toBe(1);
    expect(v2?.stats().requests).toBe(0);
  });

  it.each([
    [{ rateLimit: 'yes' }, /ERR_RL_INVALID_ROUTE_CONFIG/],
    [{ rateLimit: { headers: 'draft-8' } }, /ERR_RL_INVALID_HEADERS: 'GET \/bad config.rateLimit.headers'/],
    // Every option's error names the route, also those the core's option readers find.
    [{ rateLimit: { policies: { limit: -1 } } }, /'GET \/bad config.rateLimit.policies.limit' must be a positive integer/],
    [{ rateLimit: { skip: 5 } }, /ERR_RL_INVALID_OPTION: 'GET \/bad config.rateLimit.skip' must be a function/],
    [{ rateLimit: { hook: 'onSend' } }, /ERR_RL_INVALID_HOOK: 'GET \/bad config.rateLimit.hook'/],
    // `global` is the plugin's: on a route it would be ignored, so it is refused.
    [{ rateLimit: { global: false } }, /ERR_RL_UNKNOWN_OPTION: 'GET \/bad config.rateLimit.global' is a plugin option/],
  ])('fails at startup for a bad route config %o', async (config, error) => {
    const a = app();
    await a.register(fastifyRateLimit, { policies, clock });
    await expect(
      (async () => {
        a.get('/bad', { config: config as never }, async () => 'x');
        await a.ready();
      })(),
    ).rejects.toThrow(error);
  });

  it("keeps the core's error as the cause of a route-named one", async () => {
    const a = app();
    await a.register(fastifyRateLimit, { policies, clock });
    let error: unknown;
    try {
      a.get('/bad', { config: { rateLimit: { skip: 5 as never } } }, async () => 'x');
      await a.ready();
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(RateLimitConfigError);
    const cause = (error as Error).cause;
    expect(cause).toBeInstanceOf(RateLimitConfigError);
    expect((cause as RateLimitConfigError).option).toBe('skip');
  });

  it('decorates request.rateLimit and exposes the shared limiter for stats', async () => {
    const a = app();
    await a.register(fastifyRateLimit, { policies, clock, mode: 'shadow' });
    let decision: Decision | undefined;
    a.get('/', async (request) => {
      decision = request.rateLimit;
      return 'ok';
    });
    await a.inject('/');
    await a.inject('/');
    expect(decision?.limited).toBe(true);
    expect(a.rateLimit.limiter.stats()).toMatchObject({ requests: 2, limited: 1 });
  });

  it('warns through the request logger', async () => {
    const lines: string[] = [];
    const stream = { write: (line: string) => lines.push(line) };
    const a = Fastify({ logger: { stream, level: 'warn' } });
    apps.push(a);
    await a.register(fastifyRateLimit, { policies, clock, key: () => undefined });
    a.get('/', async () => 'ok');
    await a.inject('/');
    const warning = lines.map((l) => JSON.parse(l)).find((l) => String(l.msg).startsWith('WRN_RL_UNKEYED'));
    expect(warning?.reqId).toBeDefined();
  });

  it('rejects invalid plugin options at registration', async () => {
    const a = app();
    await expect(a.register(fastifyRateLimit, { policies, global: 'yes' as never }).ready()).rejects.toThrow(/'global' must be a boolean/);
  });
});
