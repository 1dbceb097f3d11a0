/**
 * @module Section C's servers: a hello-world route on Express, Fastify or Koa, bare, behind tollgate's
 * adapter, or behind the framework's usual peer limiter, in allow mode (the limit is never reached) or
 * block mode (every request after the first is over the limit and answered 429). Each limiter keeps its
 * defaults (key: the client IP; its own headers and 429 body) apart from the limit.
 */
import fastifyRateLimit from '@fastify/rate-limit';
import express from 'express';
import { rateLimit as expressRateLimit } from 'express-rate-limit';
import Fastify from 'fastify';
import Koa from 'koa';
import koaRatelimit from 'koa-ratelimit';
import { importExport, type Loaded } from '../optional-import.js';

export type Framework = 'express' | 'fastify' | 'koa';
export type Variant = 'bare' | 'tollgate' | 'peer';
export type Mode = 'allow' | 'block';

export const FRAMEWORKS: readonly Framework[] = ['express', 'fastify', 'koa'];
export const PEERS: Readonly<Record<Framework, string>> = {
  express: 'express-rate-limit',
  fastify: '@fastify/rate-limit',
  koa: 'koa-ratelimit (memory driver)',
};
export const ADAPTERS: Readonly<Record<Framework, string>> = {
  express: '@tollgate/express',
  fastify: '@tollgate/fastify',
  koa: '@tollgate/koa',
};

const WINDOW_MS = 3_600_000;
const BODY = 'hello world';

function limitOf(mode: Mode): number {
  return mode === 'allow' ? 1_000_000_000 : 1;
}

export interface RunningApp {
  readonly port: number;
  close(): Promise<void>;
}

type Middleware = (...args: never[]) => unknown;
type AdapterFactory = (options: { policies: { limit: number; windowMs: number }[] }) => Middleware;

async function adapter(framework: Framework): Promise<Loaded<AdapterFactory>> {
  const name = ADAPTERS[framework];
  const exportName = framework === 'fastify' ? 'fastifyRateLimit' : 'rateLimit';
  const loaded = await importExport<AdapterFactory>([name], exportName);
  return loaded.ok ? loaded : { ok: false, reason: `the adapter is not on this branch yet (${loaded.reason})` };
}

async function startExpress(variant: Variant, mode: Mode): Promise<Loaded<RunningApp>> {
  const app = express();
  if (variant === 'tollgate') {
    const a = await adapter('express');
    if (!a.ok) return a;
    app.use(a.value({ policies: [{ limit: limitOf(mode), windowMs: WINDOW_MS }] }) as unknown as express.RequestHandler);
  } else if (variant === 'peer') {
    app.use(expressRateLimit({ windowMs: WINDOW_MS, limit: limitOf(mode) }));
  }
  app.get('/', (_req, res) => {
    res.send(BODY);
  });
  const server = await new Promise<import('node:http').Server>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const address = server.address();
  return {
    ok: true,
    value: {
      port: typeof address === 'object' && address !== null ? address.port : 0,
      close: () => new Promise((resolve) => server.close(() => resolve())),
    },
  };
}

async function startFastify(variant: Variant, mode: Mode): Promise<Loaded<RunningApp>> {
  const app = Fastify({ logger: false });
  if (variant === 'tollgate') {
    const a = await adapter('fastify');
    if (!a.ok) return a;
    // biome-ignore lint/suspicious/noExplicitAny: the adapter's plugin type is only known once it lands.
    await app.register(a.value as any, { policies: [{ limit: limitOf(mode), windowMs: WINDOW_MS }] });
  } else if (variant === 'peer') {
    await app.register(fastifyRateLimit, { max: limitOf(mode), timeWindow: WINDOW_MS });
  }
  app.get('/', async () => BODY);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  return {
    ok: true,
    value: {
      port: typeof address === 'object' && address !== null ? address.port : 0,
      close: () => app.close(),
    },
  };
}

async function startKoa(variant: Variant, mode: Mode): Promise<Loaded<RunningApp>> {
  const app = new Koa();
  if (variant === 'tollgate') {
    const a = await adapter('koa');
    if (!a.ok) return a;
    app.use(a.value({ policies: [{ limit: limitOf(mode), windowMs: WINDOW_MS }] }) as unknown as Koa.Middleware);
  } else if (variant === 'peer') {
    // Without a `db` Map the memory driver never limits (a new Map per request).
    app.use(koaRatelimit({ driver: 'memory', db: new Map(), duration: WINDOW_MS, max: limitOf(mode) }));
  }
  app.use((ctx) => {
    ctx.body = BODY;
  });
  const server = await new Promise<import('node:http').Server>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const address = server.address();
  return {
    ok: true,
    value: {
      port: typeof address === 'object' && address !== null ? address.port : 0,
      close: () => new Promise((resolve) => server.close(() => resolve())),
    },
  };
}

export function startApp(framework: Framework, variant: Variant, mode: Mode): Promise<Loaded<RunningApp>> {
  if (framework === 'express') return startExpress(variant, mode);
  if (framework === 'fastify') return startFastify(variant, mode);
  return startKoa(variant, mode);
}
