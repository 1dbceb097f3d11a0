import type { Decision, LogFields } from '@tollgate/core';
import { formatLine } from '@tollgate/core/adapter';
import express from 'express';
import request from 'supertest';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { type RateLimitMiddleware, rateLimit } from './index.js';

const policies = { name: 'default', algorithm: 'fixed-window', limit: 1, windowMs: 60_000 } as const;
const clock = () => 1_800_000_000_000;

function recorder() {
  const lines: string[] = [];
  return {
    lines,
    warn: (fields: LogFields, m: string) => lines.push(formatLine(fields, m)),
    error: (fields: LogFields, m: string) => lines.push(formatLine(fields, m)),
  };
}

describe('@tollgate/express', () => {
  it("warns once when 'trust proxy' is true, and only then", async () => {
    for (const setting of [true, 1, 'loopback', false]) {
      const logger = recorder();
      const app = express();
      app.set('trust proxy', setting);
      app.use(rateLimit({ policies: { ...policies, limit: 5 }, clock, logger }));
      app.get('/', (_req, res) => res.send('ok'));
      await request(app).get('/');
      await request(app).get('/');
      expect(logger.lines.filter((l) => l.startsWith('WRN_RL_PERMISSIVE_TRUST_PROXY')).length).toBe(setting === true ? 1 : 0);
    }
  });

  it("requestWasSuccessful gets Express's res, typed as one: a header the route set decides", async () => {
    const app = express();
    app.use(
      rateLimit({
        policies: { ...policies, limit: 2 },
        clock,
        skipFailedRequests: true,
        // `res.get` is Express's own: before, `res` was typed `{ statusCode }` alone.
        requestWasSuccessful: (_req, res) => res.get('x-outcome') !== 'failed',
      }),
    );
    app.get('/', (req, res) => {
      if (req.query.fail !== undefined) res.set('x-outcome', 'failed');
      res.send('ok');
    });
    for (let i = 0; i < 3; i++) await request(app).get('/?fail=1').expect(200);
    await request(app).get('/').expect(200);
    await request(app).get('/').expect(200);
    await request(app).get('/').expect(429);
  });

  it('types and sets req.rateLimit, and exposes the limiter', async () => {
    const app = express();
    const limit = rateLimit({ policies, clock });
    app.use(limit);
    app.get('/', (req, res) => {
      expectTypeOf(req.rateLimit).toEqualTypeOf<Decision | undefined>();
      res.json({ remaining: req.rateLimit?.remaining });
    });
    expect((await request(app).get('/')).body).toEqual({ remaining: 0 });
    await request(app).get('/').expect(429);
    expect(limit.limiter.stats()).toMatchObject({ requests: 2, limited: 1 });
  });

  it('frames its 429 by its own body: a Content-Length an earlier middleware set is replaced', async () => {
    const app = express();
    app.use((_req, res, next) => {
      res.set('Content-Length', '5');
      next();
    });
    app.use(rateLimit({ policies: { limit: 1, windowMs: 60_000 } }));
    app.get('/', (_req, res) => res.send('hello'));
    await request(app).get('/').expect(200);
    const refused = await request(app).get('/').expect(429);
    // main before: Content-Length: 5 before a 300-byte body (the connection broke).
    expect(Number(refused.headers['content-length'])).toBe(Buffer.byteLength(JSON.stringify(refused.body)));
    expect(refused.body.status).toBe(429);
  });

  it('warns once when a middleware is created inside a request handler (each request got a fresh limiter)', async () => {
    const logger = recorder();
    const app = express();
    // A lazy singleton, made on its first request and kept, is not the mistake.
    let lazy: RateLimitMiddleware | undefined;
    app.get('/lazy', (req, res, next) => {
      lazy ??= rateLimit({ policies: { ...policies, limit: 100 }, clock, logger });
      return lazy(req, res, next);
    });
    app.get('/lazy', (_req, res) => res.send('ok'));
    app.get('/', (req, res, next) => rateLimit({ policies, clock, logger })(req, res, next));
    app.get('/', (_req, res) => res.send('ok'));
    for (let i = 0; i < 3; i++) await request(app).get('/lazy').expect(200);
    expect(logger.lines).toEqual([]);
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await request(app).get('/')).status);
    // What it warns about: limit 1, and every request is admitted.
    expect(statuses).toEqual([200, 200, 200, 200]);
    const warned = logger.lines.filter((l) => l.startsWith('WRN_RL_CREATED_IN_REQUEST_HANDLER: '));
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatch(/inside a request handler/);
  });

  it('limits only what it is mounted on', async () => {
    const app = express();
    app.use('/api', rateLimit({ policies, clock }));
    app.get('/api/a', (_req, res) => res.send('a'));
    app.get('/home', (_req, res) => res.send('home'));
    await request(app).get('/api/a').expect(200);
    await request(app).get('/api/a').expect(429);
    await request(app).get('/home').expect(200);
  });

  it('counts a request whose key function throws in the shared unkeyed bucket, never a 500', async () => {
    const app = express();
    app.use(
      rateLimit({
        policies,
        key: () => {
          throw new Error('no session store');
        },
      }),
    );
    app.get('/', (_req, res) => res.send('ok'));
    app.use((err: Error, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
      res.status(500).send(err.message);
    });
    expect((await request(app).get('/').expect(200)).text).toBe('ok');
  });

  it("gives keys that differ only in a lone surrogate, or that spell a long key's digest, buckets of their own", async () => {
    // A key function reading a JSON body can meet unpaired surrogates (`"\\ud800"` is valid JSON); keys
    // with no UTF-8 form, or beginning with `sha256:`, are hashed by their code units, never merged.
    const app = express();
    app.use(express.json());
    app.use(rateLimit({ policies, clock, key: (req) => (req.body as { user: string }).user }));
    app.post('/', (req, res) => res.json({ key: req.rateLimit?.key }));
    const long = 'u'.repeat(300);
    const first = await request(app)
      .post('/')
      .set('content-type', 'application/json')
      .send(JSON.stringify({ user: long }));
    expect(first.status).toBe(200);
    const digest = (first.body as { key: string }).key;
    expect(digest).toMatch(/^sha256:[\w-]{43}$/);
    const keys = [digest, '\\ud800', '\\ud801', 'a\\udc00', 'a\\udc01', '\\ufffd'];
    for (const raw of keys) {
      const body = `{"user":"${raw}"}`;
      const statuses = [];
      for (let i = 0; i < 2; i++) statuses.push((await request(app).post('/').set('content-type', 'application/json').send(body)).status);
      expect(statuses, raw).toEqual([200, 429]);
    }
  });

  it('rejects bad options when created', () => {
    expect(() => rateLimit({ policies, windowMs: 1000 } as never)).toThrow(/ERR_RL_UNKNOWN_OPTION: 'windowMs'/);
    expect(() => rateLimit({ policies, logger: { warn() {} } as never })).toThrow(/ERR_RL_INVALID_LOGGER: 'logger'/);
  });
});
