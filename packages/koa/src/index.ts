/**
 * @module @tollgate/koa: `app.use(rateLimit({...}))` for Koa 3 and 2. A thin translation: the request's
 * socket address and headers go to the core, which decides and plans the response; this file only
 * writes that plan and sets `ctx.state.rateLimit`. User callbacks receive the Koa `ctx`.
 */
import { createRateLimitHandler, type Decision, type Limiter, type RateLimitOptions, waitUnlessClosed } from '@tollgate/core';
import type { Context, Middleware, Next } from 'koa';

declare module 'koa' {
  interface DefaultState {
    /** The decision of the tollgate middleware that last ran; undefined when skipped. */
    rateLimit?: Decision;
  }
}

/** Options of `rateLimit()`; user callbacks (`key`, `cost`, `skip`, hooks) receive the Koa `ctx`. */
export type KoaRateLimitOptions = RateLimitOptions<Context>;

/** The middleware, with the limiter it uses (for `limiter.stats()`, `limiter.reset(key)`). */
export interface RateLimitMiddleware extends Middleware {
  readonly limiter: Limiter;
}

/** The route template @koa/router matched (`ctx._matchedRoute`) when the middleware runs inside a route. */
function routeOf(ctx: Context): string | undefined {
  const route = (ctx as { _matchedRoute?: unknown })._matchedRoute;
  return typeof route === 'string' ? route : undefined;
}

/**
 * Creates the middleware; options are validated here, once (`RateLimitConfigError`). Use it on the app
 * for a global limit, or on a router's route for a per-route one.
 *
 * @example
 * app.use(rateLimit({ policies: [{ name: 'default', limit: 100, windowMs: 60_000 }] }));
 */
export function rateLimit(options: KoaRateLimitOptions): RateLimitMiddleware {
  const handler = createRateLimitHandler<Context>(options);

  async function rateLimitMiddleware(ctx: Context, next: Next): Promise<void> {
    // app.proxy with maxIpsCount 0 makes ctx.ip the left-most (client-written) X-Forwarded-For entry.
    handler.checkTrustProxy('Koa app.proxy (with maxIpsCount 0)', ctx.app.proxy && ctx.app.maxIpsCount === 0);
    const handled = await handler.handle({
      request: ctx,
      remoteAddress: ctx.req.socket.remoteAddress,
      headers: ctx.req.headers,
      method: ctx.method,
      url: ctx.originalUrl,
      route: routeOf(ctx),
    });
    if (handled === undefined) return next();
    const { decision, plan } = handled;
    ctx.state.rateLimit = decision;
    for (const [name, value] of plan.headers) ctx.set(name, value);
    if (plan.action === 'reject') {
      ctx.status = plan.status ?? 429;
      ctx.body = plan.body;
      return;
    }
    if (plan.delayMs > 0 && !(await waitUnlessClosed(plan.delayMs, ctx.res))) {
      ctx.respond = false;
      return;
    }
    return next();
  }

  return Object.assign(rateLimitMiddleware, { limiter: handler.limiter });
}
