/**
 * @module @tollgate/express: `app.use(rateLimit({...}))` for Express 5 and 4. A thin translation: the
 * request's socket address and headers go to the core, which decides and plans the response; this file
 * only writes that plan (headers, then a rejection or `next()`).
 */
import {
  createRateLimitHandler,
  type Decision,
  type HandledRequest,
  type Limiter,
  type RateLimitOptions,
  waitUnlessClosed,
} from '@tollgate/core';
import type { NextFunction, Request, RequestHandler, Response } from 'express';

declare global {
  namespace Express {
    interface Request {
      /** The decision of the tollgate middleware that last ran on this request; undefined when skipped. */
      rateLimit?: Decision;
    }
  }
}

/** Options of `rateLimit()`; user callbacks (`key`, `cost`, `skip`, hooks) receive the Express `req`. */
export type ExpressRateLimitOptions = RateLimitOptions<Request>;

/** The middleware, with the limiter it uses (for `limiter.stats()`, `limiter.reset(key)`). */
export interface RateLimitMiddleware extends RequestHandler {
  readonly limiter: Limiter;
}

/** The matched route template (mount path + route path) when the middleware runs inside a route; never the raw URL. */
function routeOf(req: Request): string | undefined {
  const path = (req.route as { path?: unknown } | undefined)?.path;
  return typeof path === 'string' ? req.baseUrl + path : undefined;
}

/**
 * Creates the middleware; options are validated here, once (`RateLimitConfigError`). Mount it on the app
 * for a global limit, or on a router or path (`app.use('/api', rateLimit(...))`) for a per-route one.
 *
 * @example
 * app.use(rateLimit({ policies: [{ name: 'default', limit: 100, windowMs: 60_000 }] }));
 */
export function rateLimit(options: ExpressRateLimitOptions): RateLimitMiddleware {
  const handler = createRateLimitHandler<Request>(options);

  async function decide(req: Request): Promise<HandledRequest | undefined> {
    handler.checkTrustProxy("Express 'trust proxy'", req.app.get('trust proxy') === true);
    return handler.handle({
      request: req,
      remoteAddress: req.socket.remoteAddress,
      headers: req.headers,
      method: req.method,
      url: req.originalUrl,
      route: routeOf(req),
    });
  }

  async function rateLimitMiddleware(req: Request, res: Response, next: NextFunction): Promise<void> {
    let handled: HandledRequest | undefined;
    try {
      handled = await decide(req);
    } catch (error) {
      next(error);
      return;
    }
    if (handled === undefined) return next();
    const { decision, plan } = handled;
    req.rateLimit = decision;
    for (const [name, value] of plan.headers) res.setHeader(name, value);
    if (plan.action === 'reject') {
      res.statusCode = plan.status ?? 429;
      res.end(plan.body);
      return;
    }
    if (plan.delayMs > 0 && !(await waitUnlessClosed(plan.delayMs, res))) return;
    next();
  }

  return Object.assign(rateLimitMiddleware, { limiter: handler.limiter });
}
