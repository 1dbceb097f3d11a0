/**
 * @module Server-wide shedding through each adapter, over real HTTP: past the cap the answer is 503
 * problem+json with Retry-After and no RateLimit fields; the slot comes back exactly once when the
 * response finishes, when the handler errors, and when the client goes away; priorities shed low first.
 */
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pipeline, Readable } from 'node:stream';
import { createLoadShedder, type LoadShedder, OVERLOADED_TYPE, type RateLimitOptions } from '@tollgate/core';
import { rateLimit as expressRateLimit } from '@tollgate/express';
import { fastifyRateLimit } from '@tollgate/fastify';
import { rateLimit as koaRateLimit } from '@tollgate/koa';
import express from 'express';
import Fastify from 'fastify';
import Koa from 'koa';
import { afterEach, describe, expect, it } from 'vitest';
import { unhandledDuring } from '../../packages/core/src/testing/unhandled.js';

interface Gate {
  /** Handlers waiting on the gate. */
  readonly waiting: number;
  /** Lets every waiting handler go on; `fail` makes them throw. */
  open(fail?: boolean): void;
  wait(): Promise<void>;
}

function gate(): Gate {
  let waiters: { resolve: () => void; reject: (e: Error) => void }[] = [];
  return {
    get waiting() {
      return waiters.length;
    },
    open(fail = false) {
      const w = waiters;
      waiters = [];
      for (const x of w) fail ? x.reject(new Error('boom')) : x.resolve();
    },
    wait() {
      return new Promise((resolve, reject) => waiters.push({ resolve, reject }));
    },
  };
}

// biome-ignore lint/suspicious/noExplicitAny: one option object serves the three frameworks' request types.
type AnyOptions = RateLimitOptions<any>;
interface App {
  server: Server;
  shedder: () => LoadShedder | undefined;
  close(): Promise<void>;
}
type Make = (options: AnyOptions, g: Gate) => Promise<App>;

/** A body that never ends on its own: a chunk every 10 ms, until the response is destroyed. */
function endless(): Readable {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return new Readable({
    read() {
      timer = setTimeout(() => this.push('chunk\n'), 10);
    },
    destroy(error, callback) {
      clearTimeout(timer);
      callback(error);
    },
  });
}

function listen(server: Server): Promise<Server> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

const makers: Record<string, Make> = {
  express: async (options, g) => {
    const app = express();
    const mw = expressRateLimit(options);
    app.use(mw);
    app.get('/slow', async (_req, res, next) => {
      try {
        await g.wait();
        res.json({ ok: true });
      } catch (error) {
        next(error);
      }
    });
    app.get('/health', (_req, res) => {
      res.json({ ok: true });
    });
    app.get('/stream', (_req, res) => {
      res.type('text/plain');
      pipeline(endless(), res, () => {});
    });
    app.get('/progress', async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('started\n');
      await g.wait();
      res.end('done\n');
    });
    const server = await listen(createServer(app));
    return { server, shedder: () => mw.shedder, close: () => new Promise((r) => server.close(() => r())) };
  },
  fastify: async (options, g) => {
    const app = Fastify();
    await app.register(fastifyRateLimit, options);
    app.get('/slow', async () => {
      await g.wait();
      return { ok: true };
    });
    app.get('/health', async () => ({ ok: true }));
    app.get('/stream', (_request, reply) => {
      reply.type('text/plain').send(endless());
    });
    app.get('/progress', async (_request, reply) => {
      reply.hijack();
      reply.raw.writeHead(200, { 'content-type': 'text/plain' });
      reply.raw.write('started\n');
      await g.wait();
      reply.raw.end('done\n');
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    return { server: app.server, shedder: () => app.rateLimit.shedder, close: () => app.close() };
  },
  koa: async (options, g) => {
    const app = new Koa();
    app.silent = true;
    const mw = koaRateLimit(options);
    app.use(mw);
    app.use(async (ctx) => {
      if (ctx.path === '/slow') await g.wait();
      if (ctx.path === '/stream') {
        ctx.type = 'text/plain';
        ctx.body = endless();
        return;
      }
      if (ctx.path === '/progress') {
        ctx.respond = false;
        ctx.res.writeHead(200, { 'content-type': 'text/plain' });
        ctx.res.write('started\n');
        await g.wait();
        ctx.res.end('done\n');
        return;
      }
      ctx.body = { ok: true };
    });
    const server = await listen(createServer(app.callback()));
    return { server, shedder: () => mw.shedder, close: () => new Promise((r) => server.close(() => r())) };
  },
};

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

function get(
  server: Server,
  path: string,
  headers: Record<string, string> = {},
): { done: Promise<Reply>; abort(): void; firstChunk: Promise<void> } {
  const { port } = server.address() as AddressInfo;
  let abort = () => {};
  let chunk = () => {};
  const firstChunk = new Promise<void>((resolve) => {
    chunk = resolve;
  });
  const done = new Promise<Reply>((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        body += c;
        chunk();
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
    abort = () => req.destroy();
  });
  return { done, abort, firstChunk };
}

async function until(check: () => boolean, ms = 3000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** The one slot stays taken (a 429) while the handler waits on `g`; once the handler ends, the next request is admitted. */
async function heldUntilHandlerEnds(server: Server, g: Gate): Promise<void> {
  expect((await get(server, '/health').done).status).toBe(429);
  g.open();
  await until(() => g.waiting === 0);
  await new Promise((r) => setTimeout(r, 50));
  expect((await get(server, '/health').done).status).toBe(200);
}

/** A logger that records each line's message into `lines`. */
function recording(lines: string[]) {
  return { warn: (_f: unknown, m: string) => lines.push(m), error: (_f: unknown, m: string) => lines.push(m) };
}

const POLICIES = [{ name: 'default', limit: 1000, windowMs: 60_000 }];

describe.each(Object.keys(makers))('shed on %s', (name) => {
  const make = makers[name] as Make;
  let app: App | undefined;
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  it('answers 503 problem+json with Retry-After past maxInFlight, and gives slots back on finish', async () => {
    const g = gate();
    app = await make({ policies: POLICIES, shed: { maxInFlight: 2, retryAfterMs: 2500 } }, g);
    const a = get(app.server, '/slow');
    const b = get(app.server, '/slow');
    await until(() => g.waiting === 2);
    const shed = await get(app.server, '/slow').done;
    expect(shed.status).toBe(503);
    expect(shed.headers['retry-after']).toBe('3');
    expect(shed.headers['content-type']).toBe('application/problem+json');
    expect(shed.headers.ratelimit).toBeUndefined();
    const problem = JSON.parse(shed.body) as Record<string, unknown>;
    expect(problem).toMatchObject({ type: OVERLOADED_TYPE, status: 503, retryAfter: 3, title: 'Service Overloaded' });
    g.open();
    expect((await a.done).status).toBe(200);
    expect((await b.done).status).toBe(200);
    await until(() => app?.shedder()?.state().inFlight === 0);
    expect(app.shedder()?.state()).toMatchObject({ inFlight: 0, admitted: 2, shed: 1, limit: 2 });
    expect((await get(app.server, '/health').done).status).toBe(200);
  });

  it('holds the slot of an abandoned request until its handler is done, and gives it back once when the handler fails', async () => {
    const g = gate();
    app = await make({ policies: POLICIES, shed: { maxInFlight: 1 } }, g);
    const a = get(app.server, '/slow');
    a.done.catch(() => {});
    await until(() => g.waiting === 1);
    a.abort();
    // The client is gone but its handler still runs: the slot stays taken until the handler is done.
    await new Promise((r) => setTimeout(r, 50));
    expect(app.shedder()?.state().inFlight).toBe(1);
    expect((await get(app.server, '/health').done).status).toBe(503);
    g.open();
    await until(() => app?.shedder()?.state().inFlight === 0);
    const b = get(app.server, '/slow');
    await until(() => g.waiting === 1);
    expect(app.shedder()?.state().inFlight).toBe(1);
    g.open(true);
    expect((await b.done).status).toBe(500);
    await until(() => app?.shedder()?.state().inFlight === 0);
    expect(app.shedder()?.state().inFlight).toBe(0);
  });

  it('gives the slot and the lease back when the client stops reading a streamed body (nothing will end that response)', async () => {
    app = await make(
      { policies: [{ name: 'one-at-a-time', algorithm: 'concurrency', limit: 1, leaseMs: 60_000 }], shed: { maxInFlight: 1 } },
      gate(),
    );
    const s = get(app.server, '/stream');
    s.done.catch(() => {});
    await s.firstChunk;
    expect(app.shedder()?.state().inFlight).toBe(1);
    s.abort();
    await until(() => app?.shedder()?.state().inFlight === 0);
    // The lease went back with it: the next request is admitted now, not leaseMs (a minute) later.
    expect((await get(app.server, '/health').done).status).toBe(200);
  });

  it('keeps the lease of a handler that sent its headers and still works after the client left', async () => {
    const g = gate();
    app = await make({ policies: [{ name: 'one-at-a-time', algorithm: 'concurrency', limit: 1, leaseMs: 60_000 }] }, g);
    const a = get(app.server, '/progress');
    a.done.catch(() => {});
    await a.firstChunk;
    a.abort();
    await new Promise((r) => setTimeout(r, 100));
    // The handler still runs (headers sent, its work not done): its slot is not handed out.
    await heldUntilHandlerEnds(app.server, g);
  });

  it('renews the lease of an abandoned handler while it runs: its slot is not handed out before it is done', async () => {
    const g = gate();
    app = await make({ policies: [{ name: 'one-at-a-time', algorithm: 'concurrency', limit: 1, leaseMs: 200 }] }, g);
    const a = get(app.server, '/slow');
    a.done.catch(() => {});
    await until(() => g.waiting === 1);
    a.abort();
    // Past leaseMs (renewed every 100 ms, for at most 5 x leaseMs): still held.
    await new Promise((r) => setTimeout(r, 500));
    await heldUntilHandlerEnds(app.server, g);
  });

  it('a priority function that throws or rejects gives normal priority, and every policy still applies', async () => {
    const unhandled = await unhandledDuring(async () => {
      for (const priority of [
        () => {
          throw new Error('no tenant table');
        },
        (async () => {
          throw new Error('no tenant table');
        }) as unknown as () => 'normal',
      ]) {
        const warnings: string[] = [];
        app = await make(
          {
            policies: [{ name: 'default', limit: 1, windowMs: 60_000 }],
            shed: { maxInFlight: 10, priority },
            logger: recording(warnings),
          },
          gate(),
        );
        expect((await get(app.server, '/health').done).status).toBe(200);
        expect((await get(app.server, '/health').done).status).toBe(429);
        expect(warnings.filter((w) => w.startsWith('ERR_RL_HANDLER_FAILED'))).toEqual([]);
        await app.close();
        app = undefined;
      }
    });
    expect(unhandled).toEqual([]);
  });

  it('a queued request whose client leaves is no misconfiguration: no WRN_RL_RESPONSE_STARTED for it', async () => {
    const g = gate();
    const warnings: string[] = [];
    app = await make(
      {
        policies: [{ name: 'one-at-a-time', algorithm: 'concurrency', limit: 1, queue: { size: 5, timeoutMs: 3_000 } }],
        logger: recording(warnings),
      },
      g,
    );
    const first = get(app.server, '/slow');
    await until(() => g.waiting === 1);
    const queued = get(app.server, '/slow');
    queued.done.catch(() => {});
    await new Promise((r) => setTimeout(r, 50));
    queued.abort();
    await new Promise((r) => setTimeout(r, 50));
    g.open();
    expect((await first.done).status).toBe(200);
    await new Promise((r) => setTimeout(r, 100));
    expect(warnings.filter((w) => w.startsWith('WRN_RL_RESPONSE_STARTED'))).toEqual([]);
  });

  it('sheds low priority first and keeps room for critical requests (health checks)', async () => {
    const g = gate();
    app = await make(
      {
        policies: POLICIES,
        shed: {
          maxInFlight: 4,
          // biome-ignore lint/suspicious/noExplicitAny: the request type differs per framework.
          priority: (req: any) => {
            return req.headers['x-priority'] ?? 'normal';
          },
        },
      },
      g,
    );
    const low = [get(app.server, '/slow', { 'x-priority': 'low' }), get(app.server, '/slow', { 'x-priority': 'low' })];
    await until(() => g.waiting === 2);
    // low may fill 0.5 of 4 = 2: a third low request is shed, a normal one is not.
    expect((await get(app.server, '/slow', { 'x-priority': 'low' }).done).status).toBe(503);
    const normal = get(app.server, '/slow', { 'x-priority': 'normal' });
    await until(() => g.waiting === 3);
    expect((await get(app.server, '/slow', { 'x-priority': 'normal' }).done).status).toBe(503);
    expect((await get(app.server, '/health', { 'x-priority': 'critical' }).done).status).toBe(200);
    g.open();
    await Promise.all([...low, normal].map((r) => r.done));
    expect(app.shedder()?.state().shedByPriority).toMatchObject({ low: 1, normal: 1, critical: 0 });
  });
});

describe('one createLoadShedder shared by stacked middlewares (a global one and a route one)', () => {
  const quiet = { warn() {}, error() {} };
  const stacked: Record<string, (shedder: LoadShedder, g: Gate) => Promise<Server>> = {
    express: async (shedder, g) => {
      const app = express();
      app.use(expressRateLimit({ name: 'global', policies: POLICIES, loadShedding: shedder, logger: quiet }));
      const route = expressRateLimit({
        name: 'route',
        policies: { algorithm: 'concurrency', limit: 5 },
        loadShedding: shedder,
        logger: quiet,
      });
      app.get('/slow', route, async (_req, res) => {
        await g.wait();
        res.json({ ok: true });
      });
      return listen(createServer(app));
    },
    koa: async (shedder, g) => {
      const app = new Koa();
      app.silent = true;
      app.use(koaRateLimit({ name: 'global', policies: POLICIES, loadShedding: shedder, logger: quiet }));
      app.use(koaRateLimit({ name: 'route', policies: { algorithm: 'concurrency', limit: 5 }, loadShedding: shedder, logger: quiet }));
      app.use(async (ctx) => {
        await g.wait();
        ctx.body = { ok: true };
      });
      return listen(createServer(app.callback()));
    },
  };
  for (const [name, make] of Object.entries(stacked)) {
    it(`${name}: a request takes one slot of the shared cap, not one per middleware`, async () => {
      const shedder = createLoadShedder({ maxInFlight: 2 });
      const g = gate();
      const server = await make(shedder, g);
      try {
        const first = get(server, '/slow');
        await until(() => g.waiting === 1);
        expect(shedder.state().inFlight).toBe(1);
        // The cap of 2 has room for a second request (it was shed as '2 requests in flight, limit 2').
        const second = get(server, '/slow');
        await until(() => g.waiting === 2);
        expect((await get(server, '/slow').done).status).toBe(503);
        g.open();
        expect((await first.done).status).toBe(200);
        expect((await second.done).status).toBe(200);
        await until(() => shedder.state().inFlight === 0);
      } finally {
        await new Promise<void>((r) => server.close(() => r()));
      }
    });
  }
});
