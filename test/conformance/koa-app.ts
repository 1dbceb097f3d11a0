/**
 * @module The conformance app on Koa (3 or 2, whichever constructor is passed), routed by @koa/router:
 * `/` and `/other` share one middleware; per-route limiters sit on their route.
 */
import Router from '@koa/router';
import { rateLimit } from '@tollgate/koa';
import type Koa from 'koa';
import type { Context } from 'koa';
import { type MakeApp, routeBody } from './suite.js';

export function makeKoaApp(KoaApp: typeof Koa): MakeApp {
  return async (spec) => {
    const app = new KoaApp();
    if (spec.trustProxy !== undefined) {
      app.proxy = true;
      app.maxIpsCount = spec.trustProxy as number;
    }
    const first = spec.headersFirst;
    if (first !== undefined) {
      app.use(async (ctx, next) => {
        ctx.set({ ...first });
        await next();
      });
    }
    const message = spec.statusMessageFirst;
    if (message !== undefined) {
      app.use(async (ctx, next) => {
        ctx.res.statusMessage = message;
        await next();
      });
    }
    const start = spec.startFirst;
    if (start !== undefined) {
      app.use(async (ctx, next) => {
        if (start.mode === 'stream') {
          ctx.res.writeHead(200, { 'content-type': 'text/plain' });
          ctx.res.write('streaming;');
          ctx.respond = false;
          await next();
          if (!ctx.res.writableEnded && !ctx.res.destroyed) ctx.res.end();
          return;
        }
        const timer = setTimeout(() => {
          if (!ctx.res.headersSent) {
            ctx.res.statusCode = 503;
            ctx.res.end('timed out');
          }
        }, start.afterMs);
        try {
          await next();
        } finally {
          clearTimeout(timer);
        }
      });
    }
    const router = new Router();
    let handled = 0;
    const route = (ctx: Context) => {
      handled += 1;
      if (!ctx.headerSent) ctx.body = routeBody(ctx.state.rateLimit);
    };
    const global = rateLimit(spec.global);
    router.get('/', global, route);
    router.get('/other', global, route);
    router.get('/head', global, route);
    router.get('/twice', global, global, route);
    for (const [path, options] of Object.entries(spec.routes ?? {})) {
      if (options === false) router.get(path, route);
      else router.get(path, rateLimit(options), route);
    }
    app.use(router.routes());
    const server = await new Promise<import('node:http').Server>((resolve) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
    });
    return { server, handled: () => handled, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
  };
}
