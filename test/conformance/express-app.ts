/**
 * @module The conformance app on Express (5 or 4, whichever `express` is passed): `/` and `/other`
 * share one middleware; per-route limiters are mounted on their route.
 */
import type { Server } from 'node:http';
import { rateLimit } from '@tollgate/express';
import type express from 'express';
import type { NextFunction, Request, Response } from 'express';
import { type MakeApp, routeBody } from './suite.js';

export function makeExpressApp(createApp: typeof express): MakeApp {
  return async (spec) => {
    const app = createApp();
    if (spec.trustProxy !== undefined) app.set('trust proxy', spec.trustProxy);
    const first = spec.headersFirst;
    if (first !== undefined) {
      app.use((_req: Request, res: Response, next: NextFunction) => {
        for (const [name, value] of Object.entries(first)) res.setHeader(name, value);
        next();
      });
    }
    const message = spec.statusMessageFirst;
    if (message !== undefined) {
      app.use((_req: Request, res: Response, next: NextFunction) => {
        res.statusMessage = message;
        next();
      });
    }
    const start = spec.startFirst;
    if (start !== undefined) {
      app.use((_req: Request, res: Response, next: NextFunction) => {
        if (start.mode === 'stream') {
          res.writeHead(200, { 'content-type': 'text/plain' });
          res.write('streaming;');
        } else {
          setTimeout(() => {
            if (!res.headersSent) res.status(503).end('timed out');
          }, start.afterMs);
        }
        next();
      });
    }
    let handled = 0;
    const route = (req: Request, res: Response) => {
      handled += 1;
      if (res.headersSent) res.end();
      else res.json(routeBody(req.rateLimit));
    };
    const global = rateLimit(spec.global);
    app.get('/', global, route);
    app.get('/other', global, route);
    app.get('/head', global, route);
    app.get('/twice', global, global, route);
    for (const [path, options] of Object.entries(spec.routes ?? {})) {
      if (options === false) app.get(path, route);
      else app.get(path, rateLimit(options), route);
    }
    const server = await new Promise<Server>((resolve) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
    });
    return {
      server,
      handled: () => handled,
      close: () => new Promise<void>((resolve) => server.close(() => resolve())),
    };
  };
}
