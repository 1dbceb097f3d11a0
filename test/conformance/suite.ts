/**
 * @module The HTTP conformance suite: `defineConformance(name, makeApp)` runs the same scenarios over
 * real HTTP (supertest) against an app built by one adapter, and asserts the same wire output: strict
 * Structured Fields headers with values in range, problem+json invariants, Retry-After equal to the
 * wait, the compat byte formats, costs, skip, per-route limiters, shadow mode and shaping. Time is
 * virtual (the limiter's `clock`); the shaping tests fake `setTimeout` only.
 */
import { createHash, createHmac } from 'node:crypto';
import { request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Decision, LogFields, Logger, PolicyOptions, RateLimitOptions } from '@tollgate/core';
import { createLimiter, keys, MemoryStore, PROBLEM_TYPES } from '@tollgate/core';
import { formatLine } from '@tollgate/core/adapter';
import request from 'supertest';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { checkRateLimitField } from './strict-validator.js';

// biome-ignore lint/suspicious/noExplicitAny: each adapter passes its own request type to these callbacks.
export type AnyOptions = RateLimitOptions<any>;

/** The app every adapter builds: `/` and `/other` share the `global` limiter; `routes` have their own, or none. */
export interface AppSpec {
  readonly global: AnyOptions;
  readonly routes?: Readonly<Record<string, AnyOptions | false>>;
  /**
   * Middleware that runs before the limiter on every route and starts the response itself: `'end'`
   * answers 503 after `afterMs` (a request-timeout middleware), `'stream'` writes the head and a chunk
   * at once and goes on (a middleware that streams first). Routes then write only if nothing was sent.
   */
  readonly startFirst?: { readonly mode: 'end' | 'stream'; readonly afterMs: number };
  /**
   * Headers a middleware before the limiter sets on every response (as one does for the route's answer:
   * Express `res.setHeader`, Fastify `reply.header` in an earlier onRequest hook, Koa `ctx.set`).
   */
  readonly headersFirst?: Readonly<Record<string, string>>;
  /** The reason phrase a middleware before the limiter sets (Express `res.statusMessage`, Fastify `reply.raw`'s, Koa `ctx.res`'s). */
  readonly statusMessageFirst?: string;
  /**
   * The framework's own trust-proxy setting, as each spells it: Express `app.set('trust proxy', v)`,
   * Fastify `Fastify({ trustProxy: v })`, Koa `app.proxy = true; app.maxIpsCount = v` (a number).
   */
  readonly trustProxy?: unknown;
}

/** What a route answers: 200 with the decision the adapter attached to the request (null when none). */
export interface RouteBody {
  readonly rateLimit: { readonly key: string; readonly remaining: number; readonly limited: boolean } | null;
}

export interface TestApp {
  /** Listening on 127.0.0.1. */
  readonly server: Server;
  /** Route handler invocations so far. */
  readonly handled: () => number;
  close(): Promise<void>;
}

export type MakeApp = (spec: AppSpec) => Promise<TestApp>;

/**
 * Besides `/`, `/other` and `routes`, every app serves `/twice`, which runs the `global` limiter twice on
 * one request (Express and Koa: the middleware twice in the chain; Fastify: `app.rateLimit.hook` as a
 * preHandler on top of the plugin's hook). GET routes answer HEAD as each framework does.
 */

/** Builds the route body from whatever the adapter attached. */
export function routeBody(decision: Decision | undefined | null): RouteBody {
  return { rateLimit: decision ? { key: decision.key, remaining: decision.remaining, limited: decision.limited } : null };
}

const T0 = 1_800_000_000_000;
const FIXED: PolicyOptions = { name: 'default', algorithm: 'fixed-window', limit: 3, windowMs: 60_000 };

function recorder(): Logger & { lines: string[] } {
  const lines: string[] = [];
  return {
    lines,
    warn: (fields: LogFields, m: string) => lines.push(formatLine(fields, m)),
    error: (fields: LogFields, m: string) => lines.push(formatLine(fields, m)),
  };
}

/** GET (or `method`) over a raw socket: what a client sees of a response that may be cut off. */
function rawGet(
  server: Server,
  path: string,
  method = 'GET',
): Promise<{ status: number | undefined; message?: string; body: string; aborted: boolean; headers?: IncomingHttpHeaders }> {
  const { port } = server.address() as AddressInfo;
  return new Promise((resolve) => {
    let status: number | undefined;
    let message: string | undefined;
    let headers: IncomingHttpHeaders | undefined;
    let body = '';
    const done = (aborted: boolean) => resolve({ status, message, body, aborted, headers });
    const req = httpRequest({ host: '127.0.0.1', port, path, method, agent: false }, (res) => {
      status = res.statusCode;
      message = res.statusMessage;
      headers = res.headers;
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () => done(false));
      res.on('aborted', () => done(true));
      res.on('error', () => done(true));
    });
    req.on('error', () => done(true));
    req.end();
  });
}

function fields(res: request.Response): { policy: Map<string, Map<string, unknown>>; limit: Map<string, Map<string, unknown>> } {
  const toMap = (raw: string | undefined, field: 'RateLimit' | 'RateLimit-Policy') =>
    new Map(
      raw === undefined ? [] : checkRateLimitField(field, raw).map(([name, params]) => [name as string, params as Map<string, unknown>]),
    );
  return { policy: toMap(res.headers['ratelimit-policy'], 'RateLimit-Policy'), limit: toMap(res.headers.ratelimit, 'RateLimit') };
}

function expectNoRateLimitHeaders(res: request.Response): void {
  for (const h of ['ratelimit', 'ratelimit-policy', 'retry-after', 'x-ratelimit-limit', 'ratelimit-limit'])
    expect(res.headers[h]).toBeUndefined();
}

export function defineConformance(name: string, makeApp: MakeApp): void {
  describe(`conformance: ${name}`, () => {
    let now = T0;
    const clock = () => now;
    const apps: TestApp[] = [];

    async function start(spec: AppSpec): Promise<TestApp> {
      const app = await makeApp(spec);
      apps.push(app);
      return app;
    }

    afterEach(async () => {
      vi.useRealTimers();
      now = T0;
      await Promise.all(apps.splice(0).map((a) => a.close()));
    });

    it('sends draft-11 headers that parse strictly, with values in range, and attaches the decision', async () => {
      const app = await start({ global: { policies: FIXED, clock } });
      for (const r of [2, 1, 0]) {
        const res = await request(app.server).get('/').expect(200);
        expect(res.headers['ratelimit-policy']).toBe('"default";q=3;w=60');
        const { limit } = fields(res);
        expect(limit.get('default')?.get('r')).toBe(r);
        const t = limit.get('default')?.get('t') as number;
        expect(t).toBeGreaterThanOrEqual(0);
        expect(t).toBeLessThanOrEqual(60);
        expect((res.body as RouteBody).rateLimit).toEqual({ key: 'ip:127.0.0.1', remaining: r, limited: false });
      }
    });

    it('answers 429 with problem+json whose members match the headers, and Retry-After equals the wait', async () => {
      const app = await start({ global: { policies: FIXED, clock } });
      for (let i = 0; i < 3; i++) await request(app.server).get('/').expect(200);
      now += 17_500;
      const res = await request(app.server).get('/').expect(429);
      expect(res.headers['content-type']).toBe('application/problem+json');
      expect(res.headers['cache-control']).toBe('no-store');
      const retryAfter = Number(res.headers['retry-after']);
      expect(res.headers['retry-after']).toMatch(/^[1-9]\d*$/);
      const { policy, limit } = fields(res);
      expect([...limit.keys()]).toEqual(['default']);
      expect(limit.get('default')?.get('r')).toBe(0);
      expect(limit.get('default')?.get('t')).toBe(retryAfter);
      expect(res.body).toEqual({
        type: PROBLEM_TYPES.limited,
        title: 'Too Many Requests',
        status: 429,
        detail: `Quota of 3 requests per 60 seconds exhausted (policy "default"); retry in ${retryAfter} seconds.`,
        policy: 'default',
        limit: 3,
        windowSeconds: 60,
        retryAfter,
        'violated-policies': ['default'],
      });
      expect(policy.get(res.body.policy)?.get('q')).toBe(res.body.limit);
      expect(policy.get(res.body.policy)?.get('w')).toBe(res.body.windowSeconds);
      expect(app.handled()).toBe(3);
      now += retryAfter * 1000 - 1000;
      await request(app.server).get('/').expect(429);
      now += 1000;
      await request(app.server).get('/').expect(200);
    });

    it("a 429 drops the headers an earlier middleware set for the route's representation (its body is not that)", async () => {
      const first = {
        'Content-Encoding': 'gzip',
        'Content-Language': 'de',
        'Content-Disposition': 'attachment; filename="report.csv"',
        ETag: '"v1"',
        'Last-Modified': 'Tue, 01 Dec 2026 00:00:00 GMT',
        Expires: 'Wed, 02 Dec 2026 00:00:00 GMT',
        // What CDNs obey instead of Cache-Control: kept, a CDN would serve this 429 to every client of the URL.
        'Cache-Control': 'public, max-age=60',
        'CDN-Cache-Control': 'public, max-age=3600',
        'Cloudflare-CDN-Cache-Control': 'max-age=600',
        'Surrogate-Control': 'max-age=86400',
        'Edge-Control': 'cache-maxage=1h',
        'X-Accel-Expires': '3600',
        'X-Request-Id': 'abc',
      };
      const app = await start({ global: { policies: { ...FIXED, limit: 1 }, clock }, headersFirst: first });
      // Over a raw socket: a client that believed the Content-Encoding could not read the body at all.
      const pass = await rawGet(app.server, '/');
      expect(pass.headers?.['content-encoding']).toBe('gzip');
      const res = await rawGet(app.server, '/');
      expect(res.status).toBe(429);
      const dropped = ['content-encoding', 'content-language', 'content-disposition', 'etag', 'last-modified', 'expires'];
      dropped.push('cdn-cache-control', 'cloudflare-cdn-cache-control', 'surrogate-control', 'edge-control', 'x-accel-expires');
      for (const name of dropped) expect(res.headers?.[name], name).toBeUndefined();
      expect(res.headers?.['cache-control']).toBe('no-store');
      expect(res.headers?.['x-request-id']).toBe('abc');
      expect(res.headers?.['content-type']).toBe('application/problem+json');
      expect(JSON.parse(res.body)).toMatchObject({ status: 429, policy: 'default' });
    });

    it('a rejection drops the rate-limit fields an earlier limiter set: a 429, 413 or 503 carries only its own (before: `r=98` on a 429)', async () => {
      // What an outer limiter (or another library) wrote when it admitted the request, in every format.
      const outer = {
        RateLimit: '"outer";r=98;t=2835',
        'RateLimit-Policy': '"outer";q=100;w=3600',
        'RateLimit-Limit': '100',
        'RateLimit-Remaining': '98',
        'RateLimit-Reset': '2835',
        'X-RateLimit-Limit': '100',
        'X-RateLimit-Remaining': '98',
        'X-RateLimit-Reset': '1795960861',
        'Retry-After': '7',
      };
      const broken = {
        kind: 'broken',
        apply: (): never => {
          throw new Error('store down');
        },
        reset(): void {},
      };
      const app = await start({
        global: { policies: { ...FIXED, limit: 1 }, clock, headers: false },
        routes: {
          '/strict': { name: 'strict', policies: { ...FIXED, limit: 1 }, clock, cost: () => 2 },
          '/down': { name: 'down', policies: FIXED, clock, store: broken, onStoreError: 'closed', logger: recorder() },
        },
        headersFirst: outer,
      });
      const rateLimitNames = Object.keys(outer).map((n) => n.toLowerCase());
      const own = (headers: IncomingHttpHeaders | undefined) => rateLimitNames.filter((n) => headers?.[n] !== undefined);
      expect(own((await rawGet(app.server, '/')).headers)).toEqual(rateLimitNames);
      const limited = await rawGet(app.server, '/');
      expect(limited.status).toBe(429);
      // `headers: false`: no fields of its own, only the wait.
      expect(own(limited.headers)).toEqual(['retry-after']);
      expect(limited.headers?.['retry-after']).toBe(String(JSON.parse(limited.body).retryAfter));
      const tooBig = await rawGet(app.server, '/strict');
      expect(tooBig.status).toBe(413);
      expect(own(tooBig.headers)).toEqual([]);
      const down = await rawGet(app.server, '/down');
      expect(down.status).toBe(503);
      expect(own(down.headers)).toEqual(['retry-after']);
      expect(down.headers?.['retry-after']).toBe(String(JSON.parse(down.body).retryAfter));
    });

    it('sends the reason phrase of its own status, not one a middleware before it set (before, Express and Fastify: `429 All Good`, `413 All Good`)', async () => {
      const app = await start({
        global: { policies: { ...FIXED, limit: 1 }, clock },
        routes: { '/strict': { policies: { ...FIXED, limit: 1 }, clock, cost: () => 2 } },
        statusMessageFirst: 'All Good',
      });
      const lines = [];
      for (const path of ['/', '/', '/strict']) {
        const res = await rawGet(app.server, path);
        lines.push(`${res.status} ${res.message}`);
      }
      // The success keeps the framework's own: Koa's `ctx.status` setter writes it, the others keep the middleware's.
      const success = name.startsWith('koa') ? '200 OK' : '200 All Good';
      expect(lines).toEqual([success, '429 Too Many Requests', '413 Payload Too Large']);
    });

    it("a 429 to HEAD has the Content-Length of the GET's problem body, not one set for the route's answer", async () => {
      const app = await start({ global: { policies: { ...FIXED, limit: 1 }, clock }, headersFirst: { 'Content-Length': '5' } });
      expect((await rawGet(app.server, '/head', 'HEAD')).status).toBe(200);
      const head = await rawGet(app.server, '/head', 'HEAD');
      expect(head.status).toBe(429);
      expect(head.body).toBe('');
      const get = await rawGet(app.server, '/head');
      expect(get.status).toBe(429);
      // Before, Fastify on a route declared for HEAD: the 5 an earlier hook set.
      expect(head.headers?.['content-length']).toBe(String(Buffer.byteLength(get.body)));
      expect(get.headers?.['content-length']).toBe(String(Buffer.byteLength(get.body)));
    });

    it('lists every enforced policy, and on 429 only the exhausted ones', async () => {
      const policies: PolicyOptions[] = [
        { name: 'burst', algorithm: 'fixed-window', limit: 2, windowMs: 1000 },
        { name: 'daily', algorithm: 'fixed-window', limit: 5, windowMs: 86_400_000 },
      ];
      const app = await start({ global: { policies, clock } });
      const first = await request(app.server).get('/').expect(200);
      expect(first.headers['ratelimit-policy']).toBe('"burst";q=2;w=1, "daily";q=5;w=86400');
      expect([...fields(first).limit.entries()].map(([n, p]) => [n, p.get('r')])).toEqual([
        ['burst', 1],
        ['daily', 4],
      ]);
      await request(app.server).get('/other').expect(200);
      const limited = await request(app.server).get('/').expect(429);
      expect(limited.headers.ratelimit).toBe('"burst";r=0;t=1');
      expect(limited.headers['retry-after']).toBe('1');
      expect(limited.body['violated-policies']).toEqual(['burst']);
      now += 1000;
      for (let i = 0; i < 2; i++) await request(app.server).get('/').expect(200);
      now += 1000;
      await request(app.server).get('/').expect(200);
      const daily = await request(app.server).get('/').expect(429);
      expect(fields(daily).limit.get('daily')?.get('r')).toBe(0);
      expect([...fields(daily).limit.keys()]).toEqual(['daily']);
      expect(Number(daily.headers['retry-after'])).toBe(fields(daily).limit.get('daily')?.get('t'));
    });

    it('gives each policy with a key of its own the partition key (pk) of that key, on both fields', async () => {
      const hmac = (key: string) => `:${createHmac('sha256', 'example-secret').update(key).digest().subarray(0, 9).toString('base64')}:`;
      const policies: AnyOptions['policies'] = [
        { name: 'per-ip', algorithm: 'fixed-window', limit: 5, windowMs: 60_000 },
        { name: 'per-key', algorithm: 'fixed-window', limit: 5, windowMs: 60_000, key: keys.header('x-api-key') },
      ];
      const app = await start({ global: { policies, partitionKey: { secret: 'example-secret' }, clock } });
      const ip = hmac('ip:127.0.0.1');
      for (const [apiKey, r] of [
        ['A', 4],
        ['B', 3],
      ] as const) {
        const res = await request(app.server).get('/').set('x-api-key', apiKey).expect(200);
        const perKey = hmac(`apikey:${createHash('sha256').update(apiKey).digest('base64url')}`);
        // The per-ip item names the same partition for both API keys; the per-key item, each key's own.
        expect(res.headers['ratelimit-policy']).toBe(`"per-ip";q=5;w=60;pk=${ip}, "per-key";q=5;w=60;pk=${perKey}`);
        expect(res.headers.ratelimit).toBe(`"per-ip";r=${r};t=60;pk=${ip}, "per-key";r=4;t=60;pk=${perKey}`);
      }
    });

    it('charges weighted costs, answers 413 for a cost that can never fit, and charges 1 for a bad cost', async () => {
      const logger = recorder();
      const app = await start({
        global: {
          policies: { ...FIXED, limit: 10 },
          clock,
          logger,
          cost: (req: { headers: Record<string, string> }) => Number(req.headers['x-cost'] ?? 1),
        },
      });
      expect(
        fields(await request(app.server).get('/').set('x-cost', '4').expect(200))
          .limit.get('default')
          ?.get('r'),
      ).toBe(6);
      expect(
        fields(await request(app.server).get('/').set('x-cost', '2.5').expect(200))
          .limit.get('default')
          ?.get('r'),
      ).toBe(3);
      const tooBig = await request(app.server).get('/').set('x-cost', '11').expect(413);
      expect(tooBig.headers['retry-after']).toBeUndefined();
      expect(tooBig.headers['cache-control']).toBe('no-store');
      expect(tooBig.headers['content-type']).toBe('application/problem+json');
      expect(tooBig.body).toMatchObject({
        type: PROBLEM_TYPES.costExceedsCapacity,
        status: 413,
        policy: 'default',
        limit: 10,
        capacity: 10,
        cost: 11,
      });
      expect(tooBig.body.retryAfter).toBeUndefined();
      expect(
        fields(await request(app.server).get('/').set('x-cost', 'lots').expect(200))
          .limit.get('default')
          ?.get('r'),
      ).toBe(2);
      expect(logger.lines.filter((l) => l.startsWith('WRN_RL_INVALID_COST'))).toHaveLength(1);
      const over = await request(app.server).get('/').set('x-cost', '3').expect(429);
      expect(fields(over).limit.get('default')?.get('r')).toBe(2);
    });

    it('sends no header and no body, and counts nothing, for a skipped request', async () => {
      const skip = (req: { headers: Record<string, string> }) => req.headers['x-skip'] === '1';
      const app = await start({ global: { policies: { ...FIXED, limit: 1 }, clock, skip } });
      for (let i = 0; i < 3; i++) {
        const res = await request(app.server).get('/').set('x-skip', '1').expect(200);
        expectNoRateLimitHeaders(res);
        expect((res.body as RouteBody).rateLimit).toBeNull();
      }
      await request(app.server).get('/').expect(200);
      const limited = await request(app.server).get('/').expect(429);
      expect(limited.body.status).toBe(429);
      expectNoRateLimitHeaders(await request(app.server).get('/').set('x-skip', '1').expect(200));
    });

    it('skips only when skip returns true: a truthy non-boolean is counted, with a warning', async () => {
      const logger = recorder();
      // `(req) => req.headers['x-internal']`: a client sending any value would skip its limit.
      const skip = (req: { headers: Record<string, string> }) => req.headers['x-internal'] as unknown as boolean;
      const app = await start({ global: { policies: { ...FIXED, limit: 1 }, clock, skip, logger } });
      await request(app.server).get('/').set('x-internal', 'false').expect(200);
      const res = await request(app.server).get('/').set('x-internal', 'yes').expect(429);
      expect(res.body.status).toBe(429);
      expect(logger.lines.filter((l) => l.startsWith('WRN_RL_HOOK_FAILED: skip returned something other than a boolean'))).toHaveLength(1);
    });

    it('gives routes their own limiter, or none', async () => {
      const global: AnyOptions = { policies: FIXED, clock };
      const app = await start({
        global,
        routes: {
          '/strict': { ...global, policies: { name: 'strict', algorithm: 'fixed-window', limit: 1, windowMs: 10_000 } },
          '/open': false,
        },
      });
      const strict = await request(app.server).get('/strict').expect(200);
      expect(strict.headers['ratelimit-policy']).toBe('"strict";q=1;w=10');
      expect((await request(app.server).get('/strict').expect(429)).body.policy).toBe('strict');
      expect(
        fields(await request(app.server).get('/').expect(200))
          .limit.get('default')
          ?.get('r'),
      ).toBe(2);
      for (let i = 0; i < 5; i++) {
        const open = await request(app.server).get('/open').expect(200);
        expectNoRateLimitHeaders(open);
        expect((open.body as RouteBody).rateLimit).toBeNull();
      }
    });

    it('shadow mode never blocks and sends nothing, while an enforcing twin blocks; would-be rejections are summed per interval', async () => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
      const logger = recorder();
      const seen: Decision[] = [];
      const policies = { ...FIXED, limit: 2 };
      const enforce: AnyOptions = { policies, clock, logger };
      const app = await start({
        global: enforce,
        routes: { '/shadow': { ...enforce, mode: 'shadow', onDecision: (d: Decision) => seen.push(d) } },
      });
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) {
        const res = await request(app.server).get('/shadow');
        statuses.push(res.status);
        expectNoRateLimitHeaders(res);
        expect((res.body as RouteBody).rateLimit?.limited).toBe(i >= 2);
        statuses.push(
          (
            await request(app.server)
              .get('/')
              .ok(() => true)
          ).status,
        );
      }
      expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 200, 429, 200, 429]);
      expect(seen.map((d) => [d.allowed, d.limited, d.mode])).toEqual([
        [true, false, 'shadow'],
        [true, false, 'shadow'],
        [true, true, 'shadow'],
        [true, true, 'shadow'],
        [true, true, 'shadow'],
      ]);
      expect(logger.lines.filter((l) => l.includes('WRN_RL_SHADOW_LIMITED'))).toHaveLength(0);
      await vi.advanceTimersByTimeAsync(60_000);
      const summary = logger.lines.filter((l) => l.includes('WRN_RL_SHADOW_LIMITED'));
      expect(summary).toHaveLength(1);
      expect(summary[0]).toMatch(/^WRN_RL_SHADOW_LIMITED: .*"wouldReject":3,"candidateRejections":0,"byPolicy":\{"default":3\}/);
    });

    it('evaluates shadow candidates without touching the enforced budget or the wire', async () => {
      const seen: Decision[] = [];
      const app = await start({
        global: {
          policies: { ...FIXED, limit: 4 },
          shadow: { policies: { name: 'candidate', algorithm: 'gcra', limit: 2, windowMs: 60_000 } },
          clock,
          onDecision: (d: Decision) => seen.push(d),
        },
      });
      for (let i = 0; i < 4; i++) {
        const res = await request(app.server).get('/').expect(200);
        expect(res.headers['ratelimit-policy']).toBe('"default";q=4;w=60');
      }
      expect(seen.map((d) => d.shadow?.allowed)).toEqual([true, true, false, false]);
    });

    describe('client IP (default keys.ip(), IPv6 /64)', () => {
      const keyOf = async (app: TestApp, xff: string | undefined, path = '/') => {
        const req = request(app.server).get(path);
        if (xff !== undefined) req.set('x-forwarded-for', xff);
        return ((await req.expect(200)).body as RouteBody).rateLimit?.key;
      };

      it('uses the socket address: a spoofed X-Forwarded-For from an untrusted peer changes nothing', async () => {
        const logger = recorder();
        const app = await start({
          global: { policies: FIXED, clock, logger },
          routes: { '/proxied': { policies: FIXED, clock, logger, key: keys.ip({ trustedProxies: ['10.0.0.0/8'] }) } },
        });
        const seen = [];
        for (const xff of ['203.0.113.9', '198.51.100.1, 203.0.113.10', 'garbage']) seen.push(await keyOf(app, xff));
        expect(seen).toEqual(['ip:127.0.0.1', 'ip:127.0.0.1', 'ip:127.0.0.1']);
        await request(app.server).get('/').set('x-forwarded-for', '192.0.2.77').expect(429);
        expect(await keyOf(app, '203.0.113.9', '/proxied')).toBe('ip:127.0.0.1');
        expect(logger.lines.filter((l) => l.startsWith('WRN_RL_'))).not.toHaveLength(0);
      });

      it('walks X-Forwarded-For from a trusted proxy: the right-most untrusted hop is the client', async () => {
        const app = await start({ global: { policies: FIXED, clock, logger: recorder(), key: keys.ip({ trustedProxies: ['loopback'] }) } });
        expect(await keyOf(app, '198.51.100.7')).toBe('ip:198.51.100.7');
        expect(await keyOf(app, '6.6.6.6, 198.51.100.7')).toBe('ip:198.51.100.7');
        const third = await request(app.server).get('/').set('x-forwarded-for', '1.1.1.1, 198.51.100.7').expect(200);
        expect(fields(third).limit.get('default')?.get('r')).toBe(0);
      });

      it('groups IPv6 by /64 (by range, not notation) and keys IPv4-mapped addresses as IPv4', async () => {
        const app = await start({
          global: { policies: { ...FIXED, limit: 10 }, clock, logger: recorder(), key: keys.ip({ trustedProxies: ['loopback'] }) },
        });
        const v6 = [];
        for (const xff of ['2001:db8:1:2::1', '2001:db8:1:2:ffff::9', '2001:DB8:1:2:0:0:0:1']) v6.push(await keyOf(app, xff));
        expect(v6).toEqual(['ip:2001:db8:1:2::/64', 'ip:2001:db8:1:2::/64', 'ip:2001:db8:1:2::/64']);
        const shared = await request(app.server).get('/').set('x-forwarded-for', '2001:db8:1:2::abcd').expect(200);
        expect(fields(shared).limit.get('default')?.get('r')).toBe(6);
        expect(await keyOf(app, '2001:db8:1:3::1')).toBe('ip:2001:db8:1:3::/64');
        const v4 = [];
        for (const xff of ['203.0.113.7', '::ffff:203.0.113.7', '::ffff:cb00:7107']) v4.push(await keyOf(app, xff));
        expect(v4).toEqual(['ip:203.0.113.7', 'ip:203.0.113.7', 'ip:203.0.113.7']);
        // Issue 9: the IPv4-compatible ::a.b.c.d is one address with its hex spelling (an IPv6 one, not ::ffff:).
        const compatible = [];
        for (const xff of ['::203.0.113.7', '::cb00:7107', '0:0:0:0:0:0:203.0.113.7']) compatible.push(await keyOf(app, xff));
        expect(new Set(compatible)).toEqual(new Set(['ip:::/64']));
      });

      it('stops the walk at a bad entry: garbage never becomes the key', async () => {
        const logger = recorder();
        const app = await start({
          global: { policies: { ...FIXED, limit: 10 }, clock, logger, key: keys.ip({ trustedProxies: ['loopback'] }) },
        });
        const seen = [];
        for (const xff of ['203.0.113.7, garbage', 'garbage', '203.0.113.7,,', `${'9'.repeat(300)}`]) seen.push(await keyOf(app, xff));
        expect(seen).toEqual(['ip:127.0.0.1', 'ip:127.0.0.1', 'ip:127.0.0.1', 'ip:127.0.0.1']);
        expect(logger.lines.filter((l) => l.startsWith('WRN_RL_MALFORMED_FORWARDED_HEADER'))).toHaveLength(1);
      });
    });

    it('counts requests without a key in one shared bucket, never a bypass', async () => {
      const logger = recorder();
      const app = await start({ global: { policies: { ...FIXED, limit: 1 }, clock, logger, key: () => undefined } });
      expect(((await request(app.server).get('/').expect(200)).body as RouteBody).rateLimit?.key).toBe('unkeyed');
      await request(app.server).get('/other').expect(429);
      expect(logger.lines.filter((l) => l.startsWith('WRN_RL_UNKEYED'))).toHaveLength(1);
    });

    it('lets onLimited replace the body without losing status or headers', async () => {
      const app = await start({
        global: { policies: { ...FIXED, limit: 1 }, clock, onLimited: ({ problem }) => ({ body: `slow down: ${problem.retryAfter}s` }) },
      });
      await request(app.server).get('/').expect(200);
      const res = await request(app.server).get('/').expect(429);
      expect(res.text).toBe('slow down: 60s');
      expect(res.headers['content-type']).toBe('text/plain; charset=utf-8');
      expect(res.headers['retry-after']).toBe('60');
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.headers.ratelimit).toBe('"default";r=0;t=60');
    });

    it('sends the problem details without the members of a problem.extend that returns no object, with a warning', async () => {
      for (const extra of ['oops', [1, 2], Promise.resolve({ instance: '/x' }), 42]) {
        const logger = recorder();
        const app = await start({ global: { policies: { ...FIXED, limit: 1 }, clock, logger, problem: { extend: () => extra as never } } });
        await request(app.server).get('/').expect(200);
        const res = await request(app.server).get('/').expect(429);
        expect(Object.keys(res.body)).not.toContain('0');
        expect(res.body).not.toHaveProperty('instance');
        expect(res.body).toMatchObject({ status: 429, title: 'Too Many Requests' });
        expect(logger.lines.filter((l) => l.startsWith('WRN_RL_HOOK_FAILED: problem.extend returned'))).toHaveLength(1);
      }
    });

    it('answers 503 problem+json with Retry-After when the store fails and the limiter fails closed; fail-open sends no numbers', async () => {
      const broken = {
        kind: 'broken',
        apply(): never {
          throw new Error('store down');
        },
        reset(): void {},
      };
      const logger = recorder();
      const app = await start({
        global: { policies: FIXED, clock, logger, store: broken, onStoreError: 'closed' },
        // Its own name: two limiters on one store each keep their own state (issue 25).
        routes: { '/open': { name: 'open', policies: FIXED, clock, logger, store: broken, onStoreError: 'open' } },
      });
      const res = await request(app.server).get('/').expect(503);
      expect(res.headers['content-type']).toBe('application/problem+json');
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.headers['retry-after']).toMatch(/^[1-9]\d*$/);
      expect(res.body).toMatchObject({ type: PROBLEM_TYPES.unavailable, status: 503, retryAfter: Number(res.headers['retry-after']) });
      expect(res.headers.ratelimit).toBeUndefined();
      expect(app.handled()).toBe(0);
      const open = await request(app.server).get('/open').expect(200);
      expectNoRateLimitHeaders(open);
    });

    describe('express-rate-limit byte formats (http-spec.md section 2: limit 2 per 60 s, three requests)', () => {
      const ERL_T0 = 1_795_960_801_000;
      const erl = (headers: 'draft-6' | 'draft-7' | 'legacy'): AnyOptions => ({
        policies: { name: 'default', algorithm: 'fixed-window', limit: 2, windowMs: 60_000, anchor: 'first-request' },
        headers,
        clock,
      });
      const pick = (res: request.Response, names: string[]) => names.map((n) => `${n}: ${res.headers[n]}`).join(' | ');

      it('draft-6', async () => {
        now = ERL_T0;
        const app = await start({ global: erl('draft-6') });
        const names = ['ratelimit-policy', 'ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset'];
        expect(pick(await request(app.server).get('/'), names)).toBe(
          'ratelimit-policy: 2;w=60 | ratelimit-limit: 2 | ratelimit-remaining: 1 | ratelimit-reset: 60',
        );
        await request(app.server).get('/').expect(200);
        const limited = await request(app.server).get('/').expect(429);
        expect(pick(limited, [...names, 'retry-after'])).toBe(
          'ratelimit-policy: 2;w=60 | ratelimit-limit: 2 | ratelimit-remaining: 0 | ratelimit-reset: 60 | retry-after: 60',
        );
        expect(limited.headers.ratelimit).toBeUndefined();
      });

      it('draft-7', async () => {
        now = ERL_T0;
        const app = await start({ global: erl('draft-7') });
        expect(pick(await request(app.server).get('/'), ['ratelimit', 'ratelimit-policy'])).toBe(
          'ratelimit: limit=2, remaining=1, reset=60 | ratelimit-policy: 2;w=60',
        );
        await request(app.server).get('/');
        expect(pick(await request(app.server).get('/').expect(429), ['ratelimit', 'ratelimit-policy', 'retry-after'])).toBe(
          'ratelimit: limit=2, remaining=0, reset=60 | ratelimit-policy: 2;w=60 | retry-after: 60',
        );
      });

      it('legacy', async () => {
        now = ERL_T0;
        const app = await start({ global: erl('legacy') });
        await request(app.server).get('/');
        await request(app.server).get('/');
        const limited = await request(app.server).get('/').expect(429);
        expect(pick(limited, ['retry-after', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'])).toBe(
          'retry-after: 60 | x-ratelimit-limit: 2 | x-ratelimit-remaining: 0 | x-ratelimit-reset: 1795960861',
        );
        expect(limited.headers.ratelimit).toBeUndefined();
      });

      it("several sets at once, in the order given: ['legacy', 'draft-7'] is legacyHeaders + standardHeaders 'draft-7'", async () => {
        now = ERL_T0;
        const app = await start({ global: { ...erl('legacy'), headers: ['legacy', 'draft-7'] } });
        await request(app.server).get('/');
        await request(app.server).get('/');
        now += 59_500;
        const limited = await request(app.server).get('/').expect(429);
        const names = ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'ratelimit-policy', 'ratelimit', 'retry-after'];
        expect(pick(limited, names)).toBe(
          'x-ratelimit-limit: 2 | x-ratelimit-remaining: 0 | x-ratelimit-reset: 1795960861 | ratelimit-policy: 2;w=60 | ' +
            'ratelimit: limit=2, remaining=0, reset=1 | retry-after: 1',
        );
        expect(Object.keys(limited.headers).filter((h) => names.includes(h))).toEqual(names);
        expect(limited.headers.date).toBe(new Date(now).toUTCString());
      });

      it('false sends no rate-limit header but keeps Retry-After on 429', async () => {
        const app = await start({ global: { policies: { ...FIXED, limit: 1 }, clock, headers: false } });
        expectNoRateLimitHeaders(await request(app.server).get('/').expect(200));
        const limited = await request(app.server).get('/').expect(429);
        expect(limited.headers.ratelimit).toBeUndefined();
        expect(limited.headers['retry-after']).toBe(String(limited.body.retryAfter));
      });
    });

    describe('issue 9: never crash, never bypass, never flood', () => {
      const unhandled: unknown[] = [];
      const onUnhandled = (reason: unknown) => unhandled.push(reason);
      beforeEach(() => {
        unhandled.length = 0;
        process.on('unhandledRejection', onUnhandled);
      });
      afterEach(() => {
        process.off('unhandledRejection', onUnhandled);
        expect(unhandled).toEqual([]);
      });
      const costFromHeader = (req: { headers: Record<string, string> }) => Number(req.headers['x-cost'] ?? 1);

      it.each(['draft-11', 'draft-7', 'draft-6', 'legacy'] as const)(
        'answers 413 for any cost past the capacity, however large (Infinity, 1e13, past 2^53), with nothing to retry on (%s)',
        async (headers) => {
          const logger = recorder();
          const app = await start({ global: { policies: { ...FIXED, limit: 10 }, clock, logger, headers, cost: costFromHeader } });
          for (const cost of ['Infinity', '1e13', '9007199254740993', '1e308', '11']) {
            const res = await request(app.server).get('/').set('x-cost', cost).expect(413);
            expect(res.body).toMatchObject({ status: 413, capacity: 10 });
            for (const h of [
              'retry-after',
              'ratelimit',
              'ratelimit-reset',
              'x-ratelimit-reset',
              'ratelimit-remaining',
              'x-ratelimit-remaining',
            ])
              expect(res.headers[h], `${cost}: ${h}`).toBeUndefined();
          }
          expect(app.handled()).toBe(0);
          await request(app.server).get('/').set('x-cost', '10').expect(200);
          await request(app.server).get('/').expect(429);
          expect(logger.lines.filter((l) => l.startsWith('WRN_RL_INVALID_COST'))).toEqual([]);
        },
      );

      it('never writes to a response a timeout middleware already answered: no crash, the route runs only when admitted', async () => {
        const logger = recorder();
        const key = () => new Promise<string>((resolve) => setTimeout(() => resolve('slow'), 40));
        const app = await start({
          global: { policies: { ...FIXED, limit: 1 }, clock, logger, key },
          startFirst: { mode: 'end', afterMs: 5 },
        });
        for (let i = 0; i < 3; i++) expect((await request(app.server).get('/')).status).toBe(503);
        await new Promise((r) => setTimeout(r, 60));
        // The admitted request goes on (Fastify itself then stops, its reply being sent); the others never run.
        expect(app.handled()).toBeLessThanOrEqual(1);
        expect(logger.lines.filter((l) => l.startsWith('WRN_RL_RESPONSE_STARTED'))).toHaveLength(1);
        expect((await request(app.server).get('/')).status).toBe(503);
      });

      it('never writes to a response that is already streaming: an admitted request goes on, a rejected one is aborted', async () => {
        const logger = recorder();
        const app = await start({
          global: { policies: { ...FIXED, limit: 1 }, clock, logger },
          startFirst: { mode: 'stream', afterMs: 0 },
        });
        const first = await rawGet(app.server, '/');
        expect(first).toMatchObject({ status: 200, body: 'streaming;', aborted: false });
        const second = await rawGet(app.server, '/');
        expect(second.aborted).toBe(true);
        expect(app.handled()).toBe(1);
        expect(logger.lines.filter((l) => l.startsWith('WRN_RL_RESPONSE_STARTED'))).toHaveLength(1);
      });

      it('charges HEAD and GET of one route from one budget', async () => {
        const app = await start({
          global: { policies: FIXED, clock },
          routes: { '/strict': { policies: { name: 'strict', algorithm: 'fixed-window', limit: 2, windowMs: 10_000 }, clock } },
        });
        await request(app.server).get('/strict').expect(200);
        await request(app.server).head('/strict').expect(200);
        const head = await request(app.server).head('/strict').expect(429);
        const get = await request(app.server).get('/strict').expect(429);
        // The same header fields as the GET, Content-Length included (RFC 9110 9.3.2), in every adapter.
        expect(head.headers['content-length']).toBe(get.headers['content-length']);
        expect(app.handled()).toBe(2);
      });

      it('charges a request once when the same limiter runs twice on it', async () => {
        const app = await start({ global: { policies: FIXED, clock } });
        const seen = [];
        for (let i = 0; i < 3; i++)
          seen.push(
            fields(await request(app.server).get('/twice').expect(200))
              .limit.get('default')
              ?.get('r'),
          );
        expect(seen).toEqual([2, 1, 0]);
        await request(app.server).get('/twice').expect(429);
      });

      it('bounds the wait for key, cost and skip functions that never settle, throw or reject (hookTimeoutMs)', async () => {
        const logger = recorder();
        const never = () => new Promise<never>(() => undefined);
        const spec = (over: Partial<AnyOptions>): AnyOptions => ({
          policies: { ...FIXED, limit: 2 },
          clock,
          logger,
          hookTimeoutMs: 30,
          ...over,
        });
        const app = await start({
          global: spec({ key: never }),
          routes: {
            '/skip': spec({ skip: never }),
            '/cost': spec({ cost: never }),
            '/throws': spec({
              key: () => {
                throw new Error('boom');
              },
              cost: () => Promise.reject(new Error('no')),
            }),
          },
        });
        expect(((await request(app.server).get('/').expect(200)).body as RouteBody).rateLimit?.key).toBe('unkeyed');
        for (const path of ['/skip', '/cost', '/throws']) {
          const res = await request(app.server).get(path).expect(200);
          expect(fields(res).limit.values().next().value?.get('r'), path).toBe(1);
        }
        expect(((await request(app.server).get('/throws').expect(200)).body as RouteBody).rateLimit?.key).toBe('unkeyed');
        expect(logger.lines.filter((l) => l.startsWith('WRN_RL_HOOK_TIMEOUT'))).not.toHaveLength(0);
        expect(logger.lines.filter((l) => l.startsWith('WRN_RL_HOOK_FAILED'))).not.toHaveLength(0);
        expect(logger.lines.every((l) => !l.includes('boom') || l.indexOf('boom') > l.indexOf('{'))).toBe(true);
      });

      it('rejects an uncalled key factory (key: keys.ip) at construction', async () => {
        await expect(start({ global: { policies: FIXED, key: keys.ip as never } })).rejects.toThrow(
          /^ERR_RL_KEY_FACTORY: 'key' is the factory keys\.ip/,
        );
        await expect(start({ global: { policies: FIXED, key: keys.header as never } })).rejects.toThrow(/ERR_RL_KEY_FACTORY/);
      });

      it('keeps its log under the budget when the store keeps failing, and reports the count', async () => {
        vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
        let calls = 0;
        const flapping = {
          kind: 'flapping',
          apply(key: string, plan: unknown, cost: number, at: number) {
            calls += 1;
            if (calls % 2 === 1) throw new Error(`down ${calls}`);
            return healthy.apply(key, plan as never, cost, at);
          },
          reset(): void {},
        };
        const healthy = new MemoryStore();
        const logger = recorder();
        const app = await start({
          global: {
            policies: { ...FIXED, limit: 1000 },
            clock,
            logger,
            store: flapping,
            onStoreError: 'open',
            logRate: { lines: 3, intervalMs: 60_000 },
          },
        });
        // Each outage (and each recovery) is a line: far more than the budget of 3.
        for (let i = 0; i < 20; i++) {
          await request(app.server).get('/').expect(200);
          now += 10_000;
        }
        expect(logger.lines).toHaveLength(3);
        await vi.advanceTimersByTimeAsync(60_000);
        expect(logger.lines).toHaveLength(4);
        expect(logger.lines[3]).toMatch(
          /^WRN_RL_LOG_SUPPRESSED: [1-9]\d* tollgate log lines were suppressed in the last interval \(at most 3 per 60000 ms\)/,
        );
      });

      it('says "per second" and "1 second", never "per 1 seconds"', async () => {
        const app = await start({ global: { policies: { name: 'burst', algorithm: 'fixed-window', limit: 1, windowMs: 1000 }, clock } });
        await request(app.server).get('/').expect(200);
        now += 500;
        const res = await request(app.server).get('/').expect(429);
        expect(res.body.detail).toBe('Quota of 1 request per second exhausted (policy "burst"); retry in 1 second.');
      });
    });

    describe('leaky-bucket shaping', () => {
      const shaper: AnyOptions = { policies: { name: 'shaper', algorithm: 'leaky-bucket', limit: 10, windowMs: 1000, burst: 5 }, clock };

      async function timerArmed(): Promise<void> {
        while (vi.getTimerCount() === 0) await new Promise((r) => setImmediate(r));
      }

      it('holds an admitted request for decision.delayMs before the route runs', async () => {
        const app = await start({ global: shaper });
        await request(app.server).get('/').expect(200);
        vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
        let done = false;
        const pending = request(app.server)
          .get('/')
          .then((res) => {
            done = true;
            return res;
          });
        await timerArmed();
        await vi.advanceTimersByTimeAsync(99);
        expect([done, app.handled()]).toEqual([false, 1]);
        await vi.advanceTimersByTimeAsync(1);
        const res = await pending;
        expect(res.status).toBe(200);
        expect(app.handled()).toBe(2);
      });

      it('gives up the wait when the client disconnects, and never runs the route', async () => {
        const app = await start({ global: shaper });
        await request(app.server).get('/').expect(200);
        vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
        const { port } = app.server.address() as AddressInfo;
        const req = httpRequest({ host: '127.0.0.1', port, path: '/' });
        req.on('error', () => undefined);
        req.end();
        await timerArmed();
        req.destroy();
        while (vi.getTimerCount() > 0) await new Promise((r) => setImmediate(r));
        await vi.advanceTimersByTimeAsync(1000);
        expect(app.handled()).toBe(1);
      });

      it('gives a client that left while delayed its charge back (issue 25)', async () => {
        const store = new MemoryStore({ sweepIntervalMs: 0 });
        const policies = { name: 'shaper', algorithm: 'leaky-bucket', limit: 10, windowMs: 1000, burst: 5 } as const;
        // The side limiter reads the middleware's state: the same name on one store shares on purpose.
        const app = await start({ global: { policies, clock, store, name: 'shaped', key: () => 'client' } });
        const side = createLimiter({ policies, clock, store, name: 'shaped' });
        await request(app.server).get('/').expect(200);
        const before = (await side.peek('client')).remaining;
        vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
        const { port } = app.server.address() as AddressInfo;
        const req = httpRequest({ host: '127.0.0.1', port, path: '/' });
        req.on('error', () => undefined);
        req.end();
        await timerArmed();
        expect((await side.peek('client')).remaining).toBe(before - 1);
        req.destroy();
        while ((await side.peek('client')).remaining !== before) await new Promise((r) => setImmediate(r));
        expect(app.handled()).toBe(1);
        await side.close();
      });
    });
  });
}
