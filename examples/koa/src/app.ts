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
  // Uploads: at most 1 MB per minute, charged by Content-Length, which Node holds the body to (it reads no
  // byte past it). A chunked upload declares no length: charging it 1 would let any size through, so it is
  // refused before the limiter (411 Length Required); one over the quota's capacity gets tollgate's 413.
  const lengthRequired: Koa.Middleware = async (ctx, next) => {
    if (!/^\d+$/.test(ctx.get('content-length'))) {
      ctx.status = 411;
      ctx.body = { error: 'uploads are charged by their size: send Content-Length' };
      return;
    }
    await next();
  };
  const uploads = rateLimit({
    policies: { name: 'upload-bytes', algorithm: 'token-bucket', limit: 1_000_000, windowMs: 60_000, unit: 'content-bytes' },
    clock: options.clock,
    cost: (ctx) => Math.max(1, Number(ctx.get('content-length'))),
  });
  router.get('/api/hello', (ctx) => {
    ctx.body = { hello: 'world', remaining: ctx.state.rateLimit?.remaining };
  });
  router.post('/api/upload', lengthRequired, uploads, (ctx) => {
    ctx.body = { stored: Number(ctx.get('content-length') || 0) };
  });
  app.use(router.routes());
  return app;
}
