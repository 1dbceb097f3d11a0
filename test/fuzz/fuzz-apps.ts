/**
 * @module The apps the HTTP fuzz suite attacks: one route for GET, HEAD, OPTIONS and POST on Express
 * (5 or 4), Fastify and Koa, behind a pre-middleware that may start the response first (`x-start: end`
 * answers 503 a few ms later, like a request timeout; `x-start: stream` writes the head and a chunk at
 * once). The route records what ran: the decision the adapter attached, if any.
 */
import type { Server } from 'node:http';
import Router from '@koa/router';
import type { Decision } from '@tollgate/core';
import { rateLimit as expressRateLimit } from '@tollgate/express';
import fastifyRateLimit from '@tollgate/fastify';
import { rateLimit as koaRateLimit } from '@tollgate/koa';
import type express from 'express';
import type { NextFunction, Request, Response } from 'express';
import Fastify from 'fastify';
import type Koa from 'koa';
import type { AnyOptions } from '../conformance/suite.js';

export interface RouteRun {
  readonly id: string;
  readonly decision: Decision | undefined;
}

export interface FuzzApp {
  readonly server: Server;
  readonly runs: RouteRun[];
  close(): Promise<void>;
}

export type MakeFuzzApp = (options: AnyOptions) => Promise<FuzzApp>;

const PATH = '/x';
const header = (h: unknown): string | undefined => (typeof h === 'string' ? h : undefined);

/** Arms the pre-middleware: returns true when the response was streamed (the route must only end it). */
function startFirst(mode: string | undefined, res: import('node:http').ServerResponse): void {
  if (mode === 'stream') {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.write('streaming;');
  } else if (mode === 'end') {
    setTimeout(() => {
      if (!res.headersSent && !res.destroyed) {
        res.statusCode = 503;
        res.end('timed out');
      }
    }, 5);
  }
}

function finish(res: import('node:http').ServerResponse): boolean {
  if (!res.headersSent) return false;
  if (!res.writableEnded && !res.destroyed) res.end();
  return true;
}

export function makeExpressFuzzApp(createApp: typeof express): MakeFuzzApp {
  return async (options) => {
    const app = createApp();
    const runs: RouteRun[] = [];
    app.use((req: Request, res: Response, next: NextFunction) => {
      startFirst(header(req.headers['x-start']), res);
      next();
    });
    app.all(PATH, expressRateLimit(options), (req: Request, res: Response) => {
      runs.push({ id: String(req.headers['x-id']), decision: req.rateLimit });
      if (!finish(res)) res.send('ok');
    });
    const server = await new Promise<Server>((resolve) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
    });
    return { server, runs, close: () => new Promise<void>((r) => server.close(() => r())) };
  };
}

export const makeFastifyFuzzApp: MakeFuzzApp = async (options) => {
  const app = Fastify();
  const runs: RouteRun[] = [];
  app.addHook('onRequest', (request, _reply, done) => {
    startFirst(header(request.headers['x-start']), _reply.raw);
    done();
  });
  await app.register(fastifyRateLimit, options);
  app.route({
    method: ['GET', 'HEAD', 'OPTIONS', 'POST'],
    url: PATH,
    exposeHeadRoute: false,
    handler: async (request, reply) => {
      runs.push({ id: String(request.headers['x-id']), decision: request.rateLimit });
      if (reply.sent || finish(reply.raw)) return reply.hijack();
      return 'ok';
    },
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  return { server: app.server, runs, close: () => app.close() };
};

export function makeKoaFuzzApp(KoaApp: typeof Koa): MakeFuzzApp {
  return async (options) => {
    const app = new KoaApp();
    app.silent = true;
    const runs: RouteRun[] = [];
    app.use(async (ctx, next) => {
      startFirst(header(ctx.headers['x-start']), ctx.res);
      if (ctx.res.headersSent) ctx.respond = false;
      await next();
      if (ctx.headers['x-start'] === 'stream') finish(ctx.res);
    });
    const router = new Router();
    router.all(PATH, koaRateLimit(options), (ctx) => {
      runs.push({ id: String(ctx.headers['x-id']), decision: ctx.state.rateLimit });
      if (ctx.res.headersSent) {
        ctx.respond = false;
        finish(ctx.res);
      } else ctx.body = 'ok';
    });
    app.use(router.routes());
    const server = await new Promise<Server>((resolve) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
    });
    return { server, runs, close: () => new Promise<void>((r) => server.close(() => r())) };
  };
}
