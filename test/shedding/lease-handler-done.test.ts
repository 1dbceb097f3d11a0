/**
 * @module A concurrency slot comes back once the handler is done with its response, on each adapter, also
 * where nothing ends the response: a client that left before the handler piped its body in (the pipe into
 * a closed response never unpipes), and a handler that destroys the response itself (an upstream error).
 * The lease is long here (5 s), so a slot kept until renewals stop would show.
 */
import { request as httpRequest, type Server } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { Readable } from 'node:stream';
import type { Limiter } from '@tollgate/core';
import { rateLimit as expressRateLimit } from '@tollgate/express';
import { fastifyRateLimit } from '@tollgate/fastify';
import { rateLimit as koaRateLimit } from '@tollgate/koa';
import express from 'express';
import Fastify from 'fastify';
import Koa from 'koa';
import { describe, expect, it } from 'vitest';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
// biome-ignore lint/suspicious/noExplicitAny: each framework passes its own request type to the key function.
const options = (key: (request: any) => string) => ({
  policies: { name: 'running', algorithm: 'concurrency' as const, limit: 1, leaseMs: 5_000 },
  logger: { warn() {}, error() {} },
  key,
});
/** A body of a few chunks, 5 ms apart. */
const body = () =>
  Readable.from(
    (async function* () {
      for (let i = 0; i < 5; i++) {
        await sleep(5);
        yield 'chunk\n';
      }
    })(),
  );

interface Running {
  server: Server;
  limiter: Limiter;
  close(): Promise<void>;
}

const apps: Record<string, () => Promise<Running>> = {
  express: async () => {
    const app = express();
    const mw = expressRateLimit(options((req: express.Request) => req.path));
    app.use(mw);
    app.get('/late-stream', async (_req, res) => {
      await sleep(60);
      body()
        .on('error', () => {})
        .pipe(res);
    });
    app.get('/destroy', async (_req, res) => {
      await sleep(10);
      res.destroy();
    });
    app.get('/p/:n', async (_req, res) => {
      await sleep(100);
      res.send('x');
    });
    // A stream that fails half way: Express's final handler destroys the socket, never ending the response.
    app.get('/socket', async (_req, res, next) => {
      res.write('partial');
      await sleep(10);
      next(new Error('upstream failed'));
    });
    const server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    return { server, limiter: mw.limiter, close: () => new Promise((r) => server.close(() => r())) };
  },
  fastify: async () => {
    const app = Fastify();
    await app.register(
      fastifyRateLimit,
      options((req: { url: string }) => req.url.split('?')[0] as string),
    );
    app.get('/late-stream', async (_request, reply) => {
      await sleep(60);
      return reply.send(body().on('error', () => {}));
    });
    app.get('/destroy', async (_request, reply) => {
      reply.hijack();
      await sleep(10);
      reply.raw.destroy();
    });
    app.get('/p/:n', async () => {
      await sleep(100);
      return 'x';
    });
    app.get('/socket', async (request, reply) => {
      reply.hijack();
      reply.raw.write('partial');
      await sleep(10);
      request.raw.socket.destroy();
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    return { server: app.server, limiter: app.rateLimit.limiter, close: () => app.close() };
  },
  koa: async () => {
    const app = new Koa();
    app.silent = true;
    const mw = koaRateLimit(options((ctx: Koa.Context) => ctx.path));
    app.use(mw);
    app.use(async (ctx) => {
      if (ctx.path === '/socket') {
        ctx.respond = false;
        ctx.res.write('partial');
        await sleep(10);
        ctx.req.socket.destroy();
        return;
      }
      if (ctx.path.startsWith('/p/')) {
        await sleep(100);
        ctx.body = 'x';
        return;
      }
      if (ctx.path === '/late-stream') {
        await sleep(60);
        ctx.body = body().on('error', () => {});
        return;
      }
      ctx.respond = false;
      await sleep(10);
      ctx.res.destroy();
    });
    const server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    return { server, limiter: mw.limiter, close: () => new Promise((r) => server.close(() => r())) };
  },
};

/** A GET of `path`; the client goes away after `abortAfterMs` when given. Resolves once the exchange is over. */
function get(server: Server, path: string, abortAfterMs?: number): Promise<void> {
  const { port } = server.address() as AddressInfo;
  return new Promise((resolve) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      res.resume();
      res.on('end', resolve);
      res.on('error', () => resolve());
      res.on('close', resolve);
    });
    req.on('error', () => resolve());
    req.end();
    if (abortAfterMs !== undefined) setTimeout(() => req.destroy(), abortAfterMs);
  });
}

/** How long the key's one slot stays taken, ms, polled every 10 ms up to 1 s. */
async function heldFor(limiter: Limiter, key: string): Promise<number> {
  const start = Date.now();
  while (!(await limiter.peek(key)).allowed && Date.now() - start < 1_000) await sleep(10);
  return Date.now() - start;
}

describe('a concurrency slot comes back when the handler is done with a response nothing ends', () => {
  for (const [name, make] of Object.entries(apps)) {
    it(`${name}: the client left before the handler piped its body in; the handler destroyed the response`, async () => {
      const app = await make();
      try {
        await get(app.server, '/late-stream', 20);
        // The handler pipes its body 60 ms after the request came.
        await sleep(80);
        expect(await heldFor(app.limiter, '/late-stream')).toBeLessThan(200);
        await get(app.server, '/destroy');
        await sleep(20);
        expect(await heldFor(app.limiter, '/destroy')).toBeLessThan(200);
      } finally {
        await app.close();
      }
    });

    it(`${name}: three requests pipelined on one connection whose client left while they ran: every slot comes back`, async () => {
      const app = await make();
      try {
        const { port } = app.server.address() as AddressInfo;
        const socket = connect(port, '127.0.0.1');
        socket.on('error', () => {});
        await new Promise((r) => socket.once('connect', r));
        socket.write(['/p/1', '/p/2', '/p/3'].map((p) => `GET ${p} HTTP/1.1\r\nHost: x\r\n\r\n`).join(''));
        await sleep(30);
        socket.destroy();
        // The handlers end 100 ms after the requests came. Before: the 2nd and 3rd responses, queued behind
        // the 1st, never emitted 'finish' or 'close', and their slots stayed taken for good.
        await sleep(150);
        for (const key of ['/p/1', '/p/2', '/p/3']) expect(await heldFor(app.limiter, key)).toBeLessThan(200);
      } finally {
        await app.close();
      }
    });

    it(`${name}: the app destroyed the connection itself after writing part of the body (an error mid-response)`, async () => {
      const app = await make();
      try {
        await get(app.server, '/socket');
        await sleep(20);
        // Before: taken as a client that left, the slot waited for renewals to stop (maxLeaseMs, 25 s here).
        expect(await heldFor(app.limiter, '/socket')).toBeLessThan(200);
      } finally {
        await app.close();
      }
    });
  }
});
