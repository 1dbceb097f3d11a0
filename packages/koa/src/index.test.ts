import type { LogFields } from '@tollgate/core';
import { formatLine } from '@tollgate/core/adapter';
import Koa from 'koa';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { rateLimit } from './index.js';

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

describe('@tollgate/koa', () => {
  it('sets ctx.state.rateLimit and exposes the limiter', async () => {
    const app = new Koa();
    const limit = rateLimit({ policies, clock });
    app.use(limit);
    app.use((ctx) => {
      ctx.body = { remaining: ctx.state.rateLimit?.remaining };
    });
    const server = app.callback();
    expect((await request(server).get('/')).body).toEqual({ remaining: 0 });
    await request(server).get('/').expect(429);
    expect(limit.limiter.stats()).toMatchObject({ requests: 2, limited: 1 });
  });

  it('requestWasSuccessful gets ctx and ctx.res (the Node response), typed as such: a header the route set decides', async () => {
    const app = new Koa();
    app.use(
      rateLimit({
        policies: { ...policies, limit: 2 },
        clock,
        skipFailedRequests: true,
        // `getHeader` is the Node response's: before, it was typed `{ statusCode }` alone.
        requestWasSuccessful: (_ctx, res) => res.getHeader('x-outcome') !== 'failed',
      }),
    );
    app.use((ctx) => {
      if (ctx.query.fail !== undefined) ctx.set('x-outcome', 'failed');
      ctx.body = 'ok';
    });
    const server = app.callback();
    for (let i = 0; i < 3; i++) await request(server).get('/?fail=1').expect(200);
    await request(server).get('/').expect(200);
    await request(server).get('/').expect(200);
    await request(server).get('/').expect(429);
  });

  it('warns once when a middleware is created inside a request (each request got a fresh limiter)', async () => {
    const logger = recorder();
    const app = new Koa();
    app.use(async (ctx, next) => {
      await Promise.resolve(); // an async middleware before it: still the request's tick when it is made
      return rateLimit({ policies, clock, logger })(ctx, next);
    });
    app.use((ctx) => {
      ctx.body = 'ok';
    });
    const server = app.callback();
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await request(server).get('/')).status);
    // What it warns about: limit 1, and every request is admitted.
    expect(statuses).toEqual([200, 200, 200, 200]);
    expect(logger.lines.filter((l) => l.startsWith('WRN_RL_CREATED_IN_REQUEST_HANDLER: '))).toHaveLength(1);
  });

  it('warns once when app.proxy trusts the left-most X-Forwarded-For entry', async () => {
    for (const [proxy, maxIpsCount, warned] of [
      [true, 0, 1],
      [true, 1, 0],
      [false, 0, 0],
    ] as const) {
      const logger = recorder();
      const app = new Koa({ proxy, maxIpsCount });
      app.use(rateLimit({ policies: { ...policies, limit: 5 }, clock, logger }));
      app.use((ctx) => {
        ctx.body = 'ok';
      });
      await request(app.callback()).get('/');
      await request(app.callback()).get('/');
      expect(logger.lines.filter((l) => l.startsWith('WRN_RL_PERMISSIVE_TRUST_PROXY')).length).toBe(warned);
    }
  });

  it('counts a request whose key function throws in the shared unkeyed bucket, never a 500', async () => {
    const app = new Koa();
    app.silent = true;
    app.use(
      rateLimit({
        policies,
        key: () => {
          throw new Error('boom');
        },
      }),
    );
    await request(app.callback()).get('/').expect(404);
  });
});
