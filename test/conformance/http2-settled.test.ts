/**
 * @module Over HTTP/2 (h2c, node:http2's compatibility API, as Fastify's `http2: true` and Koa on
 * `http2.createServer` use it), a request whose stream the client cancels (RST_STREAM) did not finish:
 * under `skipFailedRequests` its charge goes back, as an HTTP/1.1 request whose client left does. Before,
 * node:http2 emits 'finish' on every stream close, so a cancelled request counted as a successful one
 * and stayed charged (a probe: 3 cancels left 6 of 10 where HTTP/1.1 left 9). A request that finished
 * is still one (`skipSuccessfulRequests` gives its charge back).
 */
import { type ClientHttp2Session, connect, constants, createServer, type Http2Server } from 'node:http2';
import type { AddressInfo } from 'node:net';
import type { Decision } from '@tollgate/core';
import { fastifyRateLimit } from '@tollgate/fastify';
import { rateLimit as koaRateLimit } from '@tollgate/koa';
import Fastify from 'fastify';
import Koa from 'koa';
import { afterEach, describe, expect, it } from 'vitest';

interface Gate {
  readonly started: Promise<void>;
  readonly open: () => void;
}

/** What the next /slow handler waits on: `started` when it runs, and the test opens it. */
function gate(): Gate & { markStarted: () => void; wait: Promise<void> } {
  let markStarted = () => {};
  let open = () => {};
  const started = new Promise<void>((r) => {
    markStarted = r;
  });
  const wait = new Promise<void>((r) => {
    open = r;
  });
  return { started, open, markStarted, wait };
}

interface App {
  port: number;
  /** The remaining of the last decision, in units. */
  remaining: () => number | undefined;
  next: () => Gate;
  close: () => Promise<void>;
}

type Skip = { skipFailedRequests: true } | { skipSuccessfulRequests: true };

const makers: Record<string, (skip: Skip) => Promise<App>> = {
  async fastify(skip) {
    let last: Decision | undefined;
    let g = gate();
    const app = Fastify({ http2: true });
    await app.register(fastifyRateLimit, {
      key: () => 'k',
      policies: { name: 'h2', algorithm: 'fixed-window', limit: 10, windowMs: 600_000 },
      onDecision: (d: Decision) => {
        last = d;
      },
      ...skip,
    });
    app.get('/slow', async () => {
      const mine = g;
      mine.markStarted();
      await mine.wait;
      return 'ok';
    });
    app.get('/fast', async () => 'ok');
    await app.listen({ port: 0, host: '127.0.0.1' });
    return {
      port: (app.server.address() as AddressInfo).port,
      remaining: () => last?.remaining,
      next: () => {
        g = gate();
        return g;
      },
      close: () => app.close(),
    };
  },
  async koa(skip) {
    let last: Decision | undefined;
    let g = gate();
    const app = new Koa();
    app.use(
      koaRateLimit({
        key: () => 'k',
        policies: { name: 'h2', algorithm: 'fixed-window', limit: 10, windowMs: 600_000 },
        onDecision: (d: Decision) => {
          last = d;
        },
        ...skip,
      }),
    );
    app.use(async (ctx) => {
      if (ctx.path === '/slow') {
        const mine = g;
        mine.markStarted();
        await mine.wait;
      }
      ctx.body = 'ok';
    });
    const server: Http2Server = createServer(app.callback());
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    return {
      port: (server.address() as AddressInfo).port,
      remaining: () => last?.remaining,
      next: () => {
        g = gate();
        return g;
      },
      close: () => new Promise((r) => server.close(() => r())),
    };
  },
};

/** A GET on `session`, read to its end; its status. */
function get(session: ClientHttp2Session, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = session.request({ ':path': path });
    let status = 0;
    s.on('response', (h) => {
      status = Number(h[':status']);
    });
    s.on('error', reject);
    s.resume();
    s.on('end', () => resolve(status));
  });
}

/** The remaining after a fast request, once it reads `want` (refunds land after the stream closed); at most 2 s. */
async function remainingSettles(app: App, session: ClientHttp2Session, want: number): Promise<number | undefined> {
  const end = Date.now() + 2_000;
  for (;;) {
    await get(session, '/fast');
    // This request is charged one more: what the earlier ones left is its remaining + 1.
    const left = (app.remaining() ?? -1) + 1;
    if (left >= want || Date.now() > end) return left;
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe.each(Object.keys(makers))('HTTP/2 on %s', (name) => {
  const make = makers[name] as (skip: Skip) => Promise<App>;
  let app: App | undefined;
  let session: ClientHttp2Session | undefined;
  afterEach(async () => {
    session?.close();
    await app?.close();
  });

  it('a stream the client cancels mid-handler did not finish: skipFailedRequests gives its charge back', async () => {
    app = await make({ skipFailedRequests: true });
    session = connect(`http://127.0.0.1:${app.port}`);
    for (let i = 0; i < 3; i++) {
      const g = app.next();
      const s = session.request({ ':path': '/slow' });
      s.on('error', () => {});
      await g.started;
      const closed = new Promise((r) => s.on('close', r));
      s.close(constants.NGHTTP2_CANCEL);
      await closed;
      g.open();
    }
    // The 3 cancelled are given back; the fast request that reads it counts (a 200 is not a failure).
    expect(await remainingSettles(app, session, 10)).toBe(10);
  });

  it('a stream that finished is one: skipSuccessfulRequests gives its charge back', async () => {
    app = await make({ skipSuccessfulRequests: true });
    session = connect(`http://127.0.0.1:${app.port}`);
    for (let i = 0; i < 3; i++) expect(await get(session, '/fast')).toBe(200);
    expect(await remainingSettles(app, session, 10)).toBe(10);
  });
});
