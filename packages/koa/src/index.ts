/**
 * @module @tollgate/koa: `app.use(rateLimit({...}))` for Koa 3 and 2. A thin translation: the request's
 * socket address and headers go to the core, which decides and plans the response; this file only
 * says how to write in Koa and sets `ctx.state.rateLimit`. User callbacks receive the Koa `ctx`. The
 * core never writes once the response has started, and the middleware's own promise never rejects
 * (what `next()` rejects with belongs to the app and passes through untouched).
 */
import type { Decision, Limiter, LoadShedder, RateLimitOptions } from '@tollgate/core';
import { createRateLimitHandler, isPromiseLike, type RawResponse, type ResponseTarget } from '@tollgate/core/adapter';
import type { Context, Middleware, Next } from 'koa';

declare module 'koa' {
  interface DefaultState {
    /** The decision of the tollgate middleware that last ran; undefined when skipped. */
    rateLimit?: Decision;
  }
}

/** Options of `rateLimit()`; user callbacks (`key`, `cost`, `skip`, hooks) receive the Koa `ctx`, `requestWasSuccessful` `ctx.res` too. */
export type KoaRateLimitOptions = RateLimitOptions<Context, Context['res']>;

/** The middleware, with the limiter it uses (for `limiter.stats()`, `limiter.reset(key)`). */
export interface RateLimitMiddleware extends Middleware {
  readonly limiter: Limiter;
  /** The server-wide load shedder of the `loadShedding` option (`shedder.state()`); undefined when none. */
  readonly shedder: LoadShedder<Context> | undefined;
}

/** The route template @koa/router matched (`ctx._matchedRoute`) when the middleware runs inside a route. */
function routeOf(ctx: Context): string | undefined {
  const route = (ctx as { _matchedRoute?: unknown })._matchedRoute;
  return typeof route === 'string' ? route : undefined;
}

/**
 * How the core writes to one Koa response: one object per request, its methods on the prototype, where
 * four closures per request would each cost an allocation.
 */
class ContextTarget implements ResponseTarget {
  readonly raw: RawResponse;
  constructor(private readonly ctx: Context) {
    this.raw = ctx.res;
  }
  attach(decision: Decision): void {
    this.ctx.state.rateLimit = decision;
  }
  header(name: string, value: string): void {
    // What `ctx.set(name, value)` comes to for a string value, without its per-call arrays.
    this.ctx.res.setHeader(name, value);
  }
  reject(status: number, body: string): void {
    this.ctx.status = status;
    this.ctx.body = body;
  }
  abandon(): void {
    this.ctx.respond = false;
  }
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

  function rateLimitMiddleware(ctx: Context, next: Next): Promise<void> | undefined {
    // app.proxy makes ctx.ip an X-Forwarded-For entry: the left-most (client-written) one with
    // maxIpsCount 0, else the one maxIpsCount - 1 hops in.
    const { proxy, maxIpsCount } = ctx.app;
    handler.checkTrustProxy('Koa app.proxy (with maxIpsCount 0 or above 3)', proxy && (maxIpsCount === 0 || maxIpsCount > 3));
    const outcome = handler.run(
      {
        request: ctx,
        raw: ctx.req,
        remoteAddress: ctx.req.socket?.remoteAddress,
        headers: ctx.req.headers,
        method: ctx.method,
        url: ctx.originalUrl,
        route: routeOf(ctx),
      },
      new ContextTarget(ctx),
    );
    // Synchronous decisions (the common case) go on without a microtask turn of their own.
    if (isPromiseLike(outcome)) return outcome.then((o) => (o === 'next' ? proceed(ctx, next) : undefined));
    return outcome === 'next' ? proceed(ctx, next) : undefined;
  }

  /** The rest of the chain; a request holding a server-wide slot or leases holds them while its handler runs, even after the client left. */
  function proceed(ctx: Context, next: Next): Promise<void> {
    if (!handler.holding) return next();
    return next().finally(() => handler.settled(ctx.res));
  }

  return Object.assign(rateLimitMiddleware, { limiter: handler.limiter, shedder: handler.shedder });
}
