/**
 * @module Section C's servers: a hello-world route on Express, Fastify or Koa, bare, behind tollgate's
 * adapter, or behind the framework's usual peer limiter, in allow mode (the limit is never reached) or
 * block mode (every request after the first is over the limit and answered 429). Each limiter keeps its
 * defaults (key: the client IP; its own headers and 429 body) apart from the limit. The "wire" variant
 * is the bare server answering with exactly what tollgate's adapter sends in that mode (status, rate-limit
 * header fields, 429 body), set statically with the framework's usual API and no limiter logic.
 */
import fastifyRateLimit from '@fastify/rate-limit';
import express from 'express';
import { rateLimit as expressRateLimit } from 'express-rate-limit';
import Fastify, { type FastifyPluginAsync } from 'fastify';
import Koa from 'koa';
import koaRatelimit from 'koa-ratelimit';
import { importExport, type Loaded } from '../optional-import.js';
import { secondResponse, type WireResponse, wireResponseOf } from './wire-response.js';

export type Framework = 'express' | 'fastify' | 'koa';
export type Variant = 'bare' | 'wire' | 'tollgate' | 'peer';
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

/** The captured header fields as one object, for the frameworks' many-at-once setters. */
function headerObject(wire: WireResponse): Record<string, string> {
  return Object.fromEntries(wire.headers);
}

/**
 * The wire variant's app is the bare one with these answers; `wire` is required for it.
 * Express: Node's `res.setHeader` per field and `res.end` for the 429, as Express's own `res.set` would
 * append a charset to the problem+json Content-Type and `res.send` would add an ETag tollgate does not send.
 */
async function startExpress(variant: Variant, mode: Mode, wire: WireResponse | undefined): Promise<Loaded<RunningApp>> {
  const app = express();
  if (variant === 'wire' && wire !== undefined) {
    const { status, headers, body } = wire;
    if (body !== undefined) {
      app.use((_req, res) => {
        for (const [name, value] of headers) res.setHeader(name, value);
        res.statusCode = status;
        res.end(body);
      });
    } else {
      app.use((_req, res, next) => {
        for (const [name, value] of headers) res.setHeader(name, value);
        next();
      });
    }
  } else if (variant === 'tollgate') {
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

/** Fastify: `reply.headers(...)`, and for the 429 `reply.code(...).send(buffer)` (a string would get a charset). */
async function startFastify(variant: Variant, mode: Mode, wire: WireResponse | undefined): Promise<Loaded<RunningApp>> {
  const app = Fastify({ logger: false });
  if (variant === 'wire' && wire !== undefined) {
    const headers = headerObject(wire);
    if (wire.body !== undefined) {
      const status = wire.status;
      const body = Buffer.from(wire.body);
      app.addHook('onRequest', async (_req, reply) => reply.code(status).headers(headers).send(body));
    } else {
      app.addHook('onRequest', async (_req, reply) => {
        reply.headers(headers);
      });
    }
  } else if (variant === 'tollgate') {
    const a = await adapter('fastify');
    if (!a.ok) return a;
    // Loaded by name and typed here: @tollgate/fastify's type augmentations clash with @fastify/rate-limit's
    // (both declare `rateLimit` on Fastify's types), and the peer cell imports the latter in this program.
    const plugin = a.value as unknown as FastifyPluginAsync<{ policies: { limit: number; windowMs: number }[] }>;
    await app.register(plugin, { policies: [{ limit: limitOf(mode), windowMs: WINDOW_MS }] });
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

/** Koa: `ctx.set({...})`, then `ctx.status` and `ctx.body` for the 429 (Koa keeps a Content-Type already set). */
async function startKoa(variant: Variant, mode: Mode, wire: WireResponse | undefined): Promise<Loaded<RunningApp>> {
  const app = new Koa();
  if (variant === 'wire' && wire !== undefined) {
    const headers = headerObject(wire);
    const { status, body } = wire;
    if (body !== undefined) {
      app.use((ctx) => {
        ctx.set(headers);
        ctx.status = status;
        ctx.body = body;
      });
    } else {
      app.use((ctx, next) => {
        ctx.set(headers);
        return next();
      });
    }
  } else if (variant === 'tollgate') {
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

/** Starts one server on a free loopback port; the wire variant needs `wire` (see `captureWire`). */
export function startApp(framework: Framework, variant: Variant, mode: Mode, wire?: WireResponse): Promise<Loaded<RunningApp>> {
  if (variant === 'wire' && wire === undefined) throw new TypeError('startApp: the wire variant needs the captured response');
  if (framework === 'express') return startExpress(variant, mode, wire);
  if (framework === 'fastify') return startFastify(variant, mode, wire);
  return startKoa(variant, mode, wire);
}

/** Starts tollgate's adapter for `framework` in `mode`, reads its answer to a second request, stops it. */
export async function captureWire(framework: Framework, mode: Mode): Promise<Loaded<WireResponse>> {
  const app = await startApp(framework, 'tollgate', mode);
  if (!app.ok) return { ok: false, reason: `no tollgate response to copy: ${app.reason}` };
  try {
    return { ok: true, value: wireResponseOf(await secondResponse(app.value.port)) };
  } finally {
    await app.value.close();
  }
}
