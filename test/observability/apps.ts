/**
 * @module The observability suites' apps: one route template, `/api/items/:id`, limited on Express
 * (a router mounted at /api), Fastify (the plugin, route registered with its full path) and Koa
 * (@koa/router with prefix /api), each listening on a loopback port, so every test goes over real HTTP.
 */
import { createServer, type Server } from 'node:http';
import Router from '@koa/router';
import type { Limiter, RateLimitOptions } from '@tollgate/core';
import { rateLimit as expressRateLimit } from '@tollgate/express';
import fastifyRateLimit from '@tollgate/fastify';
import { rateLimit as koaRateLimit } from '@tollgate/koa';
import express from 'express';
import Fastify from 'fastify';
import Koa from 'koa';

/** The route template every app limits. */
export const ROUTE = '/api/items/:id';

export interface RunningApp {
  readonly name: 'express' | 'fastify' | 'koa';
  readonly url: string;
  readonly limiter: Limiter;
  close(): Promise<void>;
}

type Options = RateLimitOptions<unknown>;

function listening(server: Server): Promise<string> {
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      resolve(typeof address === 'object' && address !== null ? `http://127.0.0.1:${address.port}` : '');
    });
  });
}

function closing(server: Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

export async function startExpress(options: Options): Promise<RunningApp> {
  const app = express();
  const router = express.Router();
  const limiter = expressRateLimit(options as RateLimitOptions<express.Request>);
  router.get('/items/:id', limiter, (_req, res) => {
    res.json({ ok: true });
  });
  app.use('/api', router);
  const server = createServer(app);
  const url = await listening(server);
  return { name: 'express', url, limiter: limiter.limiter, close: () => closing(server) };
}

export async function startFastify(options: Options): Promise<RunningApp> {
  const app = Fastify();
  await app.register(fastifyRateLimit, options as Parameters<typeof fastifyRateLimit>[1]);
  app.get('/api/items/:id', async () => ({ ok: true }));
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  const url = typeof address === 'object' && address !== null ? `http://127.0.0.1:${address.port}` : '';
  return { name: 'fastify', url, limiter: app.rateLimit.limiter, close: () => app.close() };
}

export async function startKoa(options: Options): Promise<RunningApp> {
  const app = new Koa();
  const router = new Router({ prefix: '/api' });
  const limiter = koaRateLimit(options as RateLimitOptions<Koa.Context>);
  router.get('/items/:id', limiter, (ctx) => {
    ctx.body = { ok: true };
  });
  app.use(router.routes());
  const server = createServer(app.callback());
  const url = await listening(server);
  return { name: 'koa', url, limiter: limiter.limiter, close: () => closing(server) };
}

export const STARTERS = { express: startExpress, fastify: startFastify, koa: startKoa } as const;

/** Sends `n` GETs one after the other; returns the status codes. */
export async function hit(url: string, n: number, path = '/api/items/42'): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < n; i++) {
    const res = await fetch(`${url}${path}`);
    await res.arrayBuffer();
    statuses.push(res.status);
  }
  return statuses;
}
