/**
 * @module Issue 26 item 4: Fastify plans and route policies compose. A route's `config.rateLimit` is
 * merged over the plugin's options, and `policies` / `plans` are one choice: a route's `policies`
 * replace the plugin's plans (with its `plan`, `defaultPlan`, `unknownPlan`), a route's `plans` replace
 * the plugin's `policies`, and a route may pick its own plan. Before, the merge kept both and the app
 * crashed at startup with `ERR_RL_INVALID_PLANS`. Express and Koa do not merge: two middlewares stack,
 * each with its own options, so the same setup starts there and both limits hold. Real HTTP on loopback.
 */
import type { Server } from 'node:http';
import Router from '@koa/router';
import type { HeaderBag, PolicyOptions } from '@tollgate/core';
import { rateLimit as expressRateLimit } from '@tollgate/express';
import fastifyRateLimit, { type FastifyRateLimitOptions, type FastifyRateLimitRouteOptions } from '@tollgate/fastify';
import { rateLimit as koaRateLimit } from '@tollgate/koa';
import express from 'express';
import Fastify, { type FastifyInstance } from 'fastify';
import Koa from 'koa';
import request from 'supertest';
import { afterEach, describe, expect, it } from 'vitest';

const T0 = 1_800_000_000_000;
const clock = () => T0;

const fw = (name: string, limit: number): PolicyOptions => ({ name, algorithm: 'fixed-window', limit, windowMs: 60_000 });

function header(headers: HeaderBag, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}
/** `x-plan` names the plan, as an API-key lookup would. */
const planFromHeader = (req: { headers: HeaderBag }) => header(req.headers, 'x-plan');

/** The plugin of these tests: free 1 and pro 3 per minute, the plan from `x-plan`. */
const pluginPlans = {
  plans: { free: [fw('minute', 1)], pro: [fw('minute', 3)] },
  plan: planFromHeader,
  clock,
} satisfies FastifyRateLimitOptions;

/** Every warning and error line the limiters write, by code. */
function capture(): { logger: FastifyRateLimitOptions['logger']; codes: string[] } {
  const codes: string[] = [];
  const record = (...args: unknown[]) => {
    const code = (args.find((a) => typeof a === 'object' && a !== null && 'code' in a) as { code?: unknown } | undefined)?.code;
    const text = args.map(String).join(' ');
    codes.push(typeof code === 'string' ? code : (/\b(?:ERR|WRN)_RL_[A-Z_]+/.exec(text)?.[0] ?? text));
  };
  return { logger: { warn: record, error: record }, codes };
}

const apps: FastifyInstance[] = [];
const servers: Server[] = [];

afterEach(async () => {
  await Promise.all(apps.splice(0).map((a) => a.close()));
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
});

/** A Fastify app: the plugin with `plugin`, `/` and `/other` under it, and `routes` with their own `config.rateLimit`. */
async function fastifyApp(plugin: FastifyRateLimitOptions, routes: Record<string, FastifyRateLimitRouteOptions>): Promise<FastifyInstance> {
  const app = Fastify();
  apps.push(app);
  await app.register(fastifyRateLimit, plugin);
  const body = async (req: { rateLimit?: { plan?: string } }) => ({ plan: req.rateLimit?.plan });
  app.get('/', body);
  app.get('/other', body);
  for (const [path, own] of Object.entries(routes)) app.get(path, { config: { rateLimit: own } }, body);
  await app.listen({ port: 0, host: '127.0.0.1' });
  return app;
}

describe('issue 26: @tollgate/fastify route policies and plans under a plugin with plans', () => {
  it("a route's policies replace the plugin's plans on that route only", async () => {
    const { logger, codes } = capture();
    const app = await fastifyApp({ ...pluginPlans, logger }, { '/search': { policies: fw('search', 2) } });
    const search = () => request(app.server).get('/search').set('x-plan', 'pro');
    const first = await search().expect(200);
    expect(first.headers['ratelimit-policy']).toBe('"search";q=2;w=60');
    // One plan, the route's: the plugin's `plan` is not asked, so no "unknown plan 'pro'" here.
    expect(first.body).toEqual({ plan: 'default' });
    await search().expect(200);
    const third = await search().expect(429);
    expect(third.body['violated-policies']).toEqual(['search']);
    // The plugin's plans still apply to the other routes, on their own budget (the route's did not charge it).
    const pro = await request(app.server).get('/').set('x-plan', 'pro').expect(200);
    expect(pro.headers['ratelimit-policy']).toBe('"minute";q=3;w=60');
    expect(pro.body).toEqual({ plan: 'pro' });
    await request(app.server).get('/other').set('x-plan', 'pro').expect(200);
    await request(app.server).get('/').set('x-plan', 'pro').expect(200);
    const out = await request(app.server).get('/').set('x-plan', 'pro').expect(429);
    expect(out.headers['ratelimit-policy']).toBe('"minute";q=3;w=60');
    expect(codes).toEqual([]);
    expect(app.rateLimit.routes.get('GET /search')?.plans.has('default')).toBe(true);
  });

  it("the plugin's defaultPlan and unknownPlan do not reach a route with its own policies", async () => {
    const app = await fastifyApp(
      {
        plans: { free: [fw('minute', 1)], strict: [fw('minute', 1)], pro: [fw('minute', 3)] },
        defaultPlan: 'pro',
        unknownPlan: 'strict',
        clock,
      },
      { '/search': { policies: fw('search', 1) } },
    );
    await request(app.server).get('/search').expect(200);
    await request(app.server).get('/search').expect(429);
    const free = await request(app.server).get('/').expect(200);
    expect(free.headers['ratelimit-policy']).toBe('"minute";q=3;w=60');
  });

  it('a route picks its own plan from the plugin plans', async () => {
    const app = await fastifyApp(pluginPlans, { '/report': { plan: () => 'pro' } });
    // The route's `plan` answers pro whatever the header says: three, then 429.
    for (let i = 0; i < 3; i++) {
      const ok = await request(app.server).get('/report').set('x-plan', 'free').expect(200);
      expect(ok.body).toEqual({ plan: 'pro' });
    }
    const out = await request(app.server).get('/report').set('x-plan', 'free').expect(429);
    expect(out.headers['ratelimit-policy']).toBe('"minute";q=3;w=60');
    // Elsewhere the plugin's plan function still decides: free allows one.
    await request(app.server).get('/').set('x-plan', 'free').expect(200);
    await request(app.server).get('/').set('x-plan', 'free').expect(429);
  });

  it("a route's plans replace the plugin's, chosen by the plugin's plan function and its defaultPlan", async () => {
    const app = await fastifyApp(
      { ...pluginPlans, defaultPlan: 'free' },
      { '/export': { plans: { pro: [fw('export', 4)], free: [fw('export', 2)] } } },
    );
    const pro = await request(app.server).get('/export').set('x-plan', 'pro').expect(200);
    expect(pro.headers['ratelimit-policy']).toBe('"export";q=4;w=60');
    expect(pro.body).toEqual({ plan: 'pro' });
    // No plan named: the plugin's defaultPlan 'free', which the route's plans have (not 'pro', listed first).
    const none = await request(app.server).get('/export').expect(200);
    expect(none.headers['ratelimit-policy']).toBe('"export";q=2;w=60');
    expect(none.body).toEqual({ plan: 'free' });
    // Same client, same route budget across plans: 2 used, free allows 2.
    await request(app.server).get('/export').set('x-plan', 'free').expect(429);
    await request(app.server).get('/').set('x-plan', 'pro').expect(200);
  });

  it("a route's plans that lack the plugin's defaultPlan fall back to their own first plan", async () => {
    const { logger, codes } = capture();
    const app = await fastifyApp(
      { ...pluginPlans, defaultPlan: 'free', logger },
      { '/export': { plans: { basic: [fw('export', 1)], premium: [fw('export', 5)] } } },
    );
    const none = await request(app.server).get('/export').expect(200);
    expect(none.body).toEqual({ plan: 'basic' });
    await request(app.server).get('/export').expect(429);
    expect(codes).toEqual([]);
  });

  it("a route's plans under a plugin with policies", async () => {
    const app = await fastifyApp(
      { policies: fw('minute', 1), clock },
      { '/export': { plans: { free: [fw('export', 1)], pro: [fw('export', 2)] }, plan: planFromHeader } },
    );
    await request(app.server).get('/export').set('x-plan', 'pro').expect(200);
    await request(app.server).get('/export').set('x-plan', 'pro').expect(200);
    await request(app.server).get('/export').set('x-plan', 'pro').expect(429);
    const plain = await request(app.server).get('/').expect(200);
    expect(plain.headers['ratelimit-policy']).toBe('"minute";q=1;w=60');
    await request(app.server).get('/').expect(429);
  });

  it("a route's own contradictions still fail at startup, naming the option", async () => {
    await expect(fastifyApp(pluginPlans, { '/both': { policies: fw('search', 1), plans: { free: [fw('search', 1)] } } })).rejects.toThrow(
      /ERR_RL_INVALID_PLANS/,
    );
    await expect(fastifyApp(pluginPlans, { '/default': { policies: fw('search', 1), defaultPlan: 'free' } })).rejects.toThrow(
      /ERR_RL_INVALID_PLANS.*defaultPlan/,
    );
    await expect(fastifyApp(pluginPlans, { '/typo': { defaultPlan: 'gold' } })).rejects.toThrow(/ERR_RL_UNKNOWN_PLAN/);
  });
});

describe('@tollgate/fastify registered again in a child context', () => {
  /** The plugin with plans free and pro at the root; again in a child (prefix /api) with plans gold and free. */
  async function nested(route: FastifyRateLimitRouteOptions): Promise<FastifyInstance> {
    const app = Fastify();
    apps.push(app);
    await app.register(fastifyRateLimit, { ...pluginPlans, name: 'root' });
    app.get('/', async () => ({ ok: true }));
    await app.register(
      async (child) => {
        await child.register(fastifyRateLimit, { name: 'child', plans: { gold: [fw('gold', 2)], free: [fw('child-free', 1)] }, clock });
        child.get('/s', { config: { rateLimit: route } }, async () => ({ ok: true }));
        child.setNotFoundHandler({ preHandler: child.rateLimit.hook }, async (_req, reply) => reply.code(404).send({ missing: true }));
      },
      { prefix: '/api' },
    );
    await app.listen({ port: 0, host: '127.0.0.1' });
    return app;
  }

  for (const route of [{ defaultPlan: 'gold' }, { unknownPlan: 'gold' }, { plan: () => 'gold' }] as FastifyRateLimitRouteOptions[]) {
    it(`a route's ${Object.keys(route)[0]} naming a plan only the nearer registration has starts, and both limits hold (before: ERR_RL_UNKNOWN_PLAN at startup)`, async () => {
      const app = await nested(route);
      const s = () => request(app.server).get('/api/s').set('x-plan', 'pro');
      const first = await s().expect(200);
      // The nearer registration decides with the route's options (gold 2); the root counts the route as any of its routes (pro 3).
      expect(first.headers['ratelimit-policy']).toContain('"gold";q=2;w=60');
      await s().expect(200);
      expect((await s().expect(429)).body['violated-policies']).toEqual(['gold']);
      // The root's pro budget took all three.
      const root = await request(app.server).get('/').set('x-plan', 'pro').expect(429);
      expect(root.headers['ratelimit-policy']).toBe('"minute";q=3;w=60');
      expect(app.rateLimit.routes.has('GET /api/s')).toBe(false);
    });
  }

  it("the child's fastify.rateLimit is its own registration's, the root's the root's (before: the root's in both)", async () => {
    const app = await nested({});
    expect(app.rateLimit.limiter.name).toBe('root');
    const missing = await request(app.server).get('/api/nothing').expect(404);
    // The child's shared limiter (its default plan, its first: gold 2) counted the 404s, not the root's.
    expect(missing.headers['ratelimit-policy']).toBe('"gold";q=2;w=60');
    await request(app.server).get('/api/nothing').expect(404);
    await request(app.server).get('/api/nothing').expect(429);
  });

  it('config.rateLimit: false opts a route out of both registrations', async () => {
    const app = await nested(false as never);
    for (let i = 0; i < 5; i++) await request(app.server).get('/api/s').set('x-plan', 'pro').expect(200);
  });
});

describe('issue 26: Express and Koa stack middlewares (no merge), so plans and policies side by side start and both hold', () => {
  async function listen(server: Server): Promise<Server> {
    servers.push(server);
    if (!server.listening) await new Promise<void>((resolve) => server.once('listening', () => resolve()));
    return server;
  }

  it('Express: app-wide plans, route policies on top', async () => {
    const app = express();
    app.use(expressRateLimit({ ...pluginPlans, plan: (req) => planFromHeader(req) }));
    app.get('/search', expressRateLimit({ policies: fw('search', 2), clock }), (_req, res) => {
      res.json({ ok: true });
    });
    app.get('/', (_req, res) => {
      res.json({ ok: true });
    });
    const server = await listen(app.listen(0, '127.0.0.1'));
    // Both limiters count /search: pro (3) is not the bound, the route's 2 is.
    await request(server).get('/search').set('x-plan', 'pro').expect(200);
    await request(server).get('/search').set('x-plan', 'pro').expect(200);
    const out = await request(server).get('/search').set('x-plan', 'pro').expect(429);
    expect(out.body['violated-policies']).toEqual(['search']);
    // The app-wide pro budget (3) was charged by all three /search requests: none left.
    const planOut = await request(server).get('/').set('x-plan', 'pro').expect(429);
    expect(planOut.headers['ratelimit-policy']).toBe('"minute";q=3;w=60');
  });

  it('Koa: app-wide plans, route policies on top', async () => {
    const app = new Koa();
    app.use(koaRateLimit({ ...pluginPlans, plan: (ctx) => planFromHeader(ctx.request) }));
    const router = new Router();
    router.get('/search', koaRateLimit({ policies: fw('search', 2), clock }), (ctx) => {
      ctx.body = { ok: true };
    });
    router.get('/', (ctx) => {
      ctx.body = { ok: true };
    });
    app.use(router.routes());
    const server = await listen(app.listen(0, '127.0.0.1'));
    await request(server).get('/search').set('x-plan', 'pro').expect(200);
    await request(server).get('/search').set('x-plan', 'pro').expect(200);
    const out = await request(server).get('/search').set('x-plan', 'pro').expect(429);
    expect(out.body['violated-policies']).toEqual(['search']);
    const planOut = await request(server).get('/').set('x-plan', 'pro').expect(429);
    expect(planOut.headers['ratelimit-policy']).toBe('"minute";q=3;w=60');
  });
});
