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
