/**
 * @module Per-key concurrency through each adapter, over real HTTP with a slow handler: whatever the
 * mix of finishes, handler errors, client aborts and queue timeouts, at no instant do more than
 * `limit` handlers run for one key, and no lease leaks (afterwards the key admits `limit` again).
 * The 429 advertises `qu="concurrent-requests"` and says why.
 */
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { keys, type RateLimitOptions } from '@tollgate/core';
import { rateLimit as expressRateLimit } from '@tollgate/express';
import { fastifyRateLimit } from '@tollgate/fastify';
import { rateLimit as koaRateLimit } from '@tollgate/koa';
import express from 'express';
import Fastify from 'fastify';
import Koa from 'koa';
import { afterEach, describe, expect, it, vi } from 'vitest';

const LIMIT = 2;

/** Per key: handlers running now, and the most ever seen at once. */
class Meter {
  running = new Map<string, number>();
  peak = 0;
  enter(key: string): void {
    const n = (this.running.get(key) ?? 0) + 1;
    this.running.set(key, n);
    if (n > this.peak) this.peak = n;
  }
  leave(key: string): void {
    this.running.set(key, (this.running.get(key) ?? 1) - 1);
  }
}

/** Until `n` handlers of `key` run (their requests were admitted and hold their leases). */
async function running(meter: Meter, key: string, n: number): Promise<void> {
  await vi.waitFor(() => expect(meter.running.get(key)).toBe(n), { timeout: 5_000, interval: 5 });
}

/** The handler: waits `ms` (query), then answers 200, or throws when `fail=1`. */
async function work(meter: Meter, key: string, ms: number, fail: boolean): Promise<void> {
  meter.enter(key);
  try {
    await new Promise((r) => setTimeout(r, ms));
    if (fail) throw new Error('handler failed');
  } finally {
    meter.leave(key);
  }
}

interface App {
  server: Server;
  close(): Promise<void>;
}
// biome-ignore lint/suspicious/noExplicitAny: one option object serves the three frameworks.
type Make = (options: RateLimitOptions<any>, meter: Meter) => Promise<App>;

function listen(server: Server): Promise<Server> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}
function parse(url: string): { ms: number; fail: boolean } {
  const q = new URL(url, 'http://x').searchParams;
  return { ms: Number(q.get('ms') ?? 10), fail: q.get('fail') === '1' };
}

const makers: Record<string, Make> = {
  express: async (options, meter) => {
    const app = express();
    app.use(expressRateLimit(options));
    app.get('/export', async (req, res, next) => {
      const { ms, fail } = parse(req.originalUrl);
      try {
        await work(meter, String(req.headers['x-user']), ms, fail);
        res.json({ ok: true });
      } catch (error) {
        next(error);
      }
    });
    const server = await listen(createServer(app));
    return { server, close: () => new Promise((r) => server.close(() => r())) };
  },
  fastify: async (options, meter) => {
    const app = Fastify();
    await app.register(fastifyRateLimit, options);
    app.get('/export', async (req) => {
      const { ms, fail } = parse(req.url);
      await work(meter, String(req.headers['x-user']), ms, fail);
      return { ok: true };
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    return { server: app.server, close: () => app.close() };
  },
  koa: async (options, meter) => {
    const app = new Koa();
    app.silent = true;
    app.use(koaRateLimit(options));
    app.use(async (ctx) => {
      const { ms, fail } = parse(ctx.originalUrl);
      await work(meter, String(ctx.get('x-user')), ms, fail);
      ctx.body = { ok: true };
    });
    const server = await listen(createServer(app.callback()));
    return { server, close: () => new Promise((r) => server.close(() => r())) };
  },
};

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

function get(
  server: Server,
  path: string,
  user: string,
  abortAfterMs?: number,
  extra: Readonly<Record<string, string>> = {},
): Promise<Reply | 'aborted'> {
  const { port } = server.address() as AddressInfo;
  return new Promise((resolve) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, headers: { 'x-user': user, ...extra }, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        body += c;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      res.on('error', () => resolve('aborted'));
    });
    req.on('error', () => resolve('aborted'));
    req.end();
    if (abortAfterMs !== undefined) setTimeout(() => req.destroy(), abortAfterMs);
  });
}

/** A deterministic pseudo-random sequence, so a failure replays. */
function rng(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return s / 2147483648;
  };
}

const options = (queue: boolean) => ({
  key: keys.header('x-user'),
  policies: [
    { name: 'exports', algorithm: 'concurrency' as const, limit: LIMIT, ...(queue ? { queue: { size: 3, timeoutMs: 60 } } : {}) },
    { name: 'hourly', limit: 10_000, windowMs: 3_600_000 },
  ],
});

describe.each(Object.keys(makers))('concurrency on %s', (name) => {
  const make = makers[name] as Make;
  let app: App | undefined;
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  it.each([false, true])(
    'never runs more than limit handlers per key (queue: %s) across finishes, errors, aborts, timeouts',
    async (queue) => {
      const meter = new Meter();
      app = await make(options(queue), meter);
      const server = app.server;
      const random = rng(queue ? 7 : 3);
      const statuses = new Map<string, number>();
      const jobs: Promise<void>[] = [];
      for (let i = 0; i < 60; i++) {
        const user = random() < 0.7 ? 'alice' : 'bob';
        const ms = 5 + Math.floor(random() * 40);
        const r = random();
        const fail = r < 0.2;
        const abort = r > 0.8 ? Math.floor(random() * 30) : undefined;
        jobs.push(
          get(server, `/export?ms=${ms}&fail=${fail ? 1 : 0}`, user, abort).then((res) => {
            const k = res === 'aborted' ? 'aborted' : String(res.status);
            statuses.set(k, (statuses.get(k) ?? 0) + 1);
          }),
        );
        await new Promise((r2) => setTimeout(r2, Math.floor(random() * 6)));
      }
      await Promise.all(jobs);
      // Aborted handlers may still be sleeping: wait for every handler to end.
      const end = Date.now() + 3000;
      while ([...meter.running.values()].some((n) => n > 0) && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
      expect(meter.peak).toBeLessThanOrEqual(LIMIT);
      expect(meter.peak).toBe(LIMIT);
      expect(statuses.get('429') ?? 0).toBeGreaterThan(0);
      expect(statuses.get('500') ?? 0).toBeGreaterThan(0);
      expect(statuses.get('200') ?? 0).toBeGreaterThan(0);
      // No lease leaked: the key admits `limit` at once again.
      await new Promise((r) => setTimeout(r, 20));
      const again = await Promise.all([get(server, '/export?ms=30', 'alice'), get(server, '/export?ms=30', 'alice')]);
      expect(again.map((r) => (r === 'aborted' ? 0 : r.status))).toEqual([200, 200]);
    },
  );

  it('renews the leases of handlers that run longer than leaseMs', async () => {
    const meter = new Meter();
    app = await make(
      {
        key: keys.header('x-user'),
        // Renewed every 200 ms: an event-loop pause shorter than 200 ms (a loaded CI machine) keeps them.
        policies: [{ name: 'exports', algorithm: 'concurrency' as const, limit: LIMIT, leaseMs: 400 }],
      },
      meter,
    );
    // Handlers of 2 s: once both run, 800 ms (two leases of 400 ms) pass well before they end, on a loaded machine too.
    const long = [get(app.server, '/export?ms=2000', 'dave'), get(app.server, '/export?ms=2000', 'dave')];
    await running(meter, 'dave', 2);
    await new Promise((r) => setTimeout(r, 800));
    const third = await get(app.server, '/export?ms=1', 'dave');
    expect(third === 'aborted' ? 0 : third.status).toBe(429);
    await Promise.all(long);
    expect(meter.peak).toBe(LIMIT);
  });

  it('applies the concurrency policies of the request’s plan, each on its own key', async () => {
    const meter = new Meter();
    const perTenant = { name: 'per-tenant', algorithm: 'concurrency' as const, limit: 2, key: keys.header('x-tenant') };
    app = await make(
      {
        key: keys.header('x-user'),
        plan: (req: { headers: Record<string, unknown> }) => String(req.headers['x-plan']),
        plans: {
          free: [{ name: 'exports', algorithm: 'concurrency' as const, limit: 1 }, perTenant],
          pro: [{ name: 'exports', algorithm: 'concurrency' as const, limit: 2 }, perTenant],
        },
      },
      meter,
    );
    const as = (user: string, plan: string, tenant: string) => ({ 'x-plan': plan, 'x-tenant': tenant, 'x-user': user });
    const status = (r: Reply | 'aborted') => (r === 'aborted' ? 0 : r.status);
    const reason = (r: Reply | 'aborted') => (r === 'aborted' ? '' : (JSON.parse(r.body) as { policy: string }).policy);
    // Handlers that run 1 s: still in flight when the next request of their key comes, on a loaded machine too.
    const a1 = get(app.server, '/export?ms=1000', 'ann', undefined, as('ann', 'free', 't1'));
    await running(meter, 'ann', 1);
    const a2 = await get(app.server, '/export?ms=1', 'ann', undefined, as('ann', 'free', 't1'));
    expect([status(a2), reason(a2)]).toEqual([429, 'exports']); // free: one export in flight per user
    const b1 = get(app.server, '/export?ms=1000', 'ben', undefined, as('ben', 'pro', 't1'));
    await running(meter, 'ben', 1);
    const b2 = await get(app.server, '/export?ms=1', 'ben', undefined, as('ben', 'pro', 't1'));
    expect([status(b2), reason(b2)]).toEqual([429, 'per-tenant']); // pro allows two, the tenant is full
    const other = await get(app.server, '/export?ms=1', 'cat', undefined, as('cat', 'pro', 't2'));
    expect(status(other)).toBe(200);
    expect((await Promise.all([a1, b1])).map(status)).toEqual([200, 200]);
    // Everything was released: ben (pro) runs two at once on t1 again.
    const again = await Promise.all([
      get(app.server, '/export?ms=50', 'ben', undefined, as('ben', 'pro', 't1')),
      get(app.server, '/export?ms=50', 'ben', undefined, as('ben', 'pro', 't1')),
    ]);
    expect(again.map(status)).toEqual([200, 200]);
  });

  it('answers 429 with qu="concurrent-requests" and a detail that says why', async () => {
    const meter = new Meter();
    app = await make(options(false), meter);
    const slow = [get(app.server, '/export?ms=1000', 'carol'), get(app.server, '/export?ms=1000', 'carol')];
    await running(meter, 'carol', 2);
    const refused = await get(app.server, '/export?ms=1', 'carol');
    if (refused === 'aborted') throw new Error('aborted');
    expect(refused.status).toBe(429);
    expect(refused.headers['ratelimit-policy']).toContain('"exports";q=2;qu="concurrent-requests"');
    expect(refused.headers.ratelimit).toMatch(/^"exports";r=0;t=1/);
    expect(refused.headers['retry-after']).toBe('1');
    const problem = JSON.parse(refused.body) as { detail: string; policy: string };
    expect(problem.policy).toBe('exports');
    expect(problem.detail).toMatch(/2 concurrent requests of this client already in flight/);
    await Promise.all(slow);
  });
});
