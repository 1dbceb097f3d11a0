/**
 * @module Issue 9, Fastify: logs belong to the app (`request.log` / `fastify.log` with the error object,
 * `console` when `Fastify()` has no logger instead of nowhere), and routes declared before the plugin are
 * warned about rather than silently unlimited. Real HTTP through real apps.
 */
import { Writable } from 'node:stream';
import fastifyRateLimit from '@tollgate/fastify';
import Fastify, { type FastifyInstance } from 'fastify';
import request from 'supertest';
import { afterEach, describe, expect, it, vi } from 'vitest';

const policies = { name: 'default', algorithm: 'fixed-window', limit: 2, windowMs: 60_000 } as const;
const apps: FastifyInstance[] = [];

async function listen(app: FastifyInstance): Promise<FastifyInstance> {
  apps.push(app);
  await app.listen({ port: 0, host: '127.0.0.1' });
  return app;
}

afterEach(async () => {
  vi.restoreAllMocks();
  await Promise.all(apps.splice(0).map((a) => a.close()));
});

function jsonLines(): { stream: Writable; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n')) if (line !== '') lines.push(JSON.parse(line));
      done();
    },
  });
  return { stream, lines };
}

describe('issue 9: @tollgate/fastify logging and route guards', () => {
  it('logs through request.log with the code and the error object when Fastify has a logger', async () => {
    const { stream, lines } = jsonLines();
    const app = Fastify({ logger: { level: 'warn', stream } });
    await app.register(fastifyRateLimit, {
      policies,
      key: () => {
        throw new Error('session store down');
      },
    });
    app.get('/', async () => 'ok');
    await listen(app);
    await request(app.server).get('/').expect(200);
    const line = lines.find((l) => l.code === 'WRN_RL_HOOK_FAILED');
    expect(line).toMatchObject({ level: 40, hook: 'key', err: { type: 'Error', message: 'session store down' } });
    expect((line?.err as { stack?: string } | undefined)?.stack).toContain('session store down');
    expect(line?.reqId).toBeDefined();
    expect(line?.msg).toMatch(/^WRN_RL_HOOK_FAILED: key threw or rejected/);
  });

  it("reports store failures through Fastify's logger too, with the error object, on one JSON line", async () => {
    const { stream, lines } = jsonLines();
    const app = Fastify({ logger: { level: 'warn', stream } });
    const broken = {
      kind: 'broken',
      apply(): never {
        throw new Error('redis down');
      },
      reset(): void {},
    };
    await app.register(fastifyRateLimit, { policies, store: broken, onStoreError: 'open' });
    app.get('/', async () => 'ok');
    await listen(app);
    await request(app.server).get('/').expect(200);
    const failed = lines.find((l) => l.code === 'ERR_RL_STORE_FAILED');
    expect(failed).toMatchObject({ level: 50, err: { type: 'Error', message: 'redis down' } });
  });

  it('falls back to console when Fastify() has no logger (its default logger writes nowhere)', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    const app = Fastify();
    await app.register(fastifyRateLimit, { policies, key: () => undefined });
    app.get('/', async () => 'ok');
    await listen(app);
    await request(app.server).get('/').expect(200);
    const lines = warn.mock.calls.map((c) => String(c[0]));
    expect(lines.filter((l) => l.startsWith('WRN_RL_UNKEYED: '))).toHaveLength(1);
    expect(lines.every((l) => !l.includes('\n'))).toBe(true);
  });

  it('stays silent when the app silenced its logger on purpose (pino level silent)', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    const app = Fastify({ logger: { level: 'silent' } });
    await app.register(fastifyRateLimit, { policies, key: () => undefined });
    app.get('/', async () => 'ok');
    await listen(app);
    await request(app.server).get('/').expect(200);
    expect(warn).not.toHaveBeenCalled();
  });

  it('warns once about a route declared before the plugin, which it cannot limit', async () => {
    const { stream, lines } = jsonLines();
    const app = Fastify({ logger: { level: 'warn', stream } });
    app.get('/early', async () => 'early');
    await app.register(fastifyRateLimit, { policies });
    app.get('/late', async () => 'late');
    await listen(app);
    for (let i = 0; i < 3; i++) await request(app.server).get('/early').expect(200);
    await request(app.server).get('/late').expect(200);
    await request(app.server).get('/late').expect(200);
    await request(app.server).get('/late').expect(429);
    await request(app.server).get('/missing').expect(404);
    const warned = lines.filter((l) => l.code === 'WRN_RL_ROUTES_BEFORE_REGISTER');
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatchObject({ route: 'GET /early' });
  });

  it('adds the check for earlier routes only when the router held routes at registration', async () => {
    // The check is an onResponse hook, and any onResponse hook makes Fastify put 'finish' and 'error'
    // listeners on every response: an app that registers the plugin first must not pay for them.
    const finishListeners = async (app: FastifyInstance, plugin: boolean): Promise<number> => {
      if (plugin) await app.register(fastifyRateLimit, { policies: { ...policies, limit: 100 } });
      let count = -1;
      app.get('/', async (_req, reply) => {
        count = reply.raw.listenerCount('finish');
        return 'ok';
      });
      await listen(app);
      await request(app.server).get('/').expect(200);
      return count;
    };
    const early = Fastify();
    early.get('/early', async () => 'early');
    const bare = await finishListeners(Fastify(), false);
    expect(await finishListeners(Fastify(), true)).toBe(bare);
    expect(await finishListeners(early, true)).toBeGreaterThan(bare);
  });

  it('does not warn for routes the plugin saw, opted out or not', async () => {
    const { stream, lines } = jsonLines();
    const app = Fastify({ logger: { level: 'warn', stream } });
    await app.register(fastifyRateLimit, { policies, global: false });
    app.get('/a', async () => 'a');
    app.get('/b', { config: { rateLimit: false } }, async () => 'b');
    app.post('/c', { config: { rateLimit: { policies } } }, async () => 'c');
    await app.register(
      async (child) => {
        child.get('/', async () => 'prefixed');
      },
      { prefix: '/api' },
    );
    await listen(app);
    await request(app.server).get('/api').expect(200);
    await request(app.server).get('/api/').expect(200);
    await request(app.server).get('/a').expect(200);
    await request(app.server).head('/b').expect(200);
    await request(app.server).post('/c').expect(200);
    expect(lines.filter((l) => l.code === 'WRN_RL_ROUTES_BEFORE_REGISTER')).toEqual([]);
  });

  it('shares one limiter between a GET route with its own config and the HEAD route Fastify adds', async () => {
    const app = Fastify();
    await app.register(fastifyRateLimit, { policies });
    let runs = 0;
    app.get('/upload', { config: { rateLimit: { policies: { ...policies, limit: 2 } } } }, async () => {
      runs += 1;
      return 'ok';
    });
    await listen(app);
    await request(app.server).head('/upload').expect(200);
    await request(app.server).get('/upload').expect(200);
    await request(app.server).head('/upload').expect(429);
    await request(app.server).get('/upload').expect(429);
    expect(runs).toBe(2);
    expect(app.rateLimit.routes.get('GET /upload')).toBe(app.rateLimit.routes.get('HEAD /upload'));
  });
});
