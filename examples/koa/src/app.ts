/**
 * @module The Koa example app: a global limiter on the app, a stricter one on `POST /api/upload`
 * charged by the declared body size, both routed with @koa/router.
 */
import Router from '@koa/router';
import type { Clock } from '@tollgate/core';
import { rateLimit } from '@tollgate/koa';
import Koa from 'koa';

export function createApp(options: { clock?: Clock } = {}): Koa {
  const app = new Koa();
  const router = new Router();
  app.use(rateLimit({ policies: { name: 'default', algorithm: 'gcra', limit: 5, windowMs: 10_000 }, clock: options.clock }));
  // Uploads: at most 1 MB per minute, charged by Content-Length (a validated, server-side attribute).
  const uploads = rateLimit({
    policies: { name: 'upload-bytes', algorithm: 'token-bucket', limit: 1_000_000, windowMs: 60_000, unit: 'content-bytes' },
    clock: options.clock,
    cost: (ctx) => Math.max(1, Number(ctx.get('content-length') || 1)),
  });
  router.get('/api/hello', (ctx) => {
    ctx.body = { hello: 'world', remaining: ctx.state.rateLimit?.remaining };
  });
  router.post('/api/upload', uploads, (ctx) => {
    ctx.body = { stored: Number(ctx.get('content-length') || 0) };
  });
  app.use(router.routes());
  return app;
}
