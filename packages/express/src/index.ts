/**
 * @module @tollgate/express: `app.use(rateLimit({...}))` for Express 5 and 4. A thin translation: the
 * request's socket address and headers go to the core, which decides and plans the response; this file
 * only says how to write in Express (headers, a rejection) and calls `next()` when the core says so.
 * The core never writes once the response has started, and the middleware's promise never rejects.
 */
import type { Decision, Limiter, LoadShedder, RateLimitOptions } from '@tollgate/core';
import {
  createRateLimitHandler,
  isPermissiveTrustFunction,
  isPromiseLike,
  type ResponseTarget,
  setReasonPhrase,
} from '@tollgate/core/adapter';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { routeTemplateOf } from './route-template.js';

declare global {
  namespace Express {
    interface Request {
      /** The decision of the tollgate middleware that last ran on this request; undefined when skipped. */
      rateLimit?: Decision;
    }
  }
}

/** Options of `rateLimit()`; user callbacks (`key`, `cost`, `skip`, hooks) receive the Express `req`, `requestWasSuccessful` its `res` too. */
export type ExpressRateLimitOptions = RateLimitOptions<Request, Response>;

/** The middleware, with the limiter it uses (for `limiter.stats()`, `limiter.reset(key)`). */
export interface RateLimitMiddleware extends RequestHandler {
  readonly limiter: Limiter;
  /** The server-wide load shedder of the `loadShedding` option (`shedder.state()`); undefined when none. */
  readonly shedder: LoadShedder<Request> | undefined;
}

/**
 * How the core writes to one Express response: one object per request, its methods on the prototype,
 * where four closures per request would each cost an allocation.
 */
class ResTarget implements ResponseTarget {
  constructor(
    private readonly req: Request,
    readonly raw: Response,
  ) {}
  attach(decision: Decision): void {
    this.req.rateLimit = decision;
  }
  header(name: string, value: string): void {
    this.raw.setHeader(name, value);
  }
  reject(status: number, body: string): void {
    this.raw.statusCode = status;
    setReasonPhrase(this.raw, status, this.req.httpVersionMajor);
    // The length of this body, always: one an earlier middleware set would frame the 429 wrong (Node
    // keeps a Content-Length it was given); and for HEAD, whose body Node drops with the length it would
    // have computed, sent as for GET (RFC 9110 9.3.2), as Fastify and Koa do.
    this.raw.setHeader('Content-Length', Buffer.byteLength(body));
    this.raw.end(body);
  }
  abandon(): void {}
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

  function rateLimitMiddleware(req: Request, res: Response, next: NextFunction): Promise<void> | undefined {
    handler.checkTrustProxy("Express 'trust proxy'", isPermissiveTrustFunction(req.app.get('trust proxy fn')));
    const outcome = handler.run(
      {
        request: req,
        raw: req,
        remoteAddress: req.socket?.remoteAddress,
        headers: req.headers,
        method: req.method,
        url: req.originalUrl,
        route: routeTemplateOf(req),
      },
      new ResTarget(req, res),
    );
    // Synchronous decisions (the common case) call next() at once, without a microtask turn. The promise
    // goes back to Express, as an async middleware's would: Express 5 passes what a later throw rejects with on.
    if (isPromiseLike(outcome)) {
      return outcome.then((o) => {
        if (o === 'next') next();
      });
    }
    if (outcome === 'next') next();
    return undefined;
  }

  return Object.assign(rateLimitMiddleware, { limiter: handler.limiter, shedder: handler.shedder });
}
