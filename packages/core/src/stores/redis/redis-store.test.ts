import { createServer } from 'node:net';
import { Cluster, Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { RateLimitConfigError } from '../../errors.js';
import { createLimiter } from '../../limiter/create-limiter.js';
import { compilePolicy } from '../../policy.js';
import type { StorePlan } from '../store.js';
import { RedisStore } from './redis-store.js';
import { RedisStoreError } from './redis-store-error.js';

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => resolve(typeof a === 'object' && a !== null ? a.port : 1));
    });
  });
}

const plan: StorePlan = Object.freeze({
  policies: [compilePolicy({ name: 'a', limit: 2, windowMs: 1000 }, 'policies[0]', false)],
  enforcedCount: 1,
});

const clients: (Redis | Cluster)[] = [];
function track<C extends Redis | Cluster>(c: C): C {
  c.on('error', () => undefined);
  clients.push(c);
  return c;
}
afterEach(() => {
  for (const c of clients.splice(0)) c.disconnect();
});

describe('RedisStore options', () => {
  const client = () => track(new Redis({ lazyConnect: true }));

  it('accepts ioredis Redis and Cluster clients as they are typed', () => {
    expect(new RedisStore({ client: client() }).prefix).toBe('tollgate');
    expect(new RedisStore({ client: track(new Cluster([{ host: '127.0.0.1', port: 1 }], { lazyConnect: true })) }).kind).toBe('redis');
    expect(new RedisStore({ client: client(), prefix: 'app', timeSource: undefined }).timeSource).toBe('redis');
  });

  it.each([
    [{ client: undefined }, 'ERR_RL_INVALID_CLIENT', 'client'],
    [{ client: {} }, 'ERR_RL_INVALID_CLIENT', 'client'],
    [{ client: 'redis://localhost' }, 'ERR_RL_INVALID_CLIENT', 'client'],
    [{ client: { status: 'ready', evalsha() {}, eval() {}, del() {} } }, 'ERR_RL_INVALID_CLIENT', 'client'],
    [{ prefix: '' }, 'ERR_RL_INVALID_PREFIX', 'prefix'],
    [{ prefix: 'app{1}' }, 'ERR_RL_INVALID_PREFIX', 'prefix'],
    [{ prefix: 42 }, 'ERR_RL_INVALID_PREFIX', 'prefix'],
    [{ prefix: 'tollgate:v2' }, 'ERR_RL_INVALID_PREFIX', 'prefix'],
    [{ prefix: 'v3' }, 'ERR_RL_INVALID_PREFIX', 'prefix'],
    [{ prefix: 'x'.repeat(65) }, 'ERR_RL_INVALID_PREFIX', 'prefix'],
    [{ timeSource: 'app' }, 'ERR_RL_INVALID_TIME_SOURCE', 'timeSource'],
    [{ keyPrefix: 'x' }, 'ERR_RL_UNKNOWN_OPTION', 'keyPrefix'],
  ])('rejects %o with %s', (extra, code, option) => {
    const options = { client: 'client' in extra ? extra.client : client(), ...extra };
    const thrown = (() => {
      try {
        // @ts-expect-error: bad input on purpose
        new RedisStore(options);
      } catch (error) {
        return error;
      }
      return undefined;
    })();
    expect(thrown).toBeInstanceOf(RateLimitConfigError);
    expect(thrown).toMatchObject({ code, option });
  });

  it('takes evictionWatch.policyIntervalMs as a positive integer of ms, and refuses anything else', () => {
    expect(() => new RedisStore({ client: client(), evictionWatch: { policyIntervalMs: 5_000 } })).not.toThrow();
    for (const bad of [0, -1, 1.5, '30s']) {
      expect(() => new RedisStore({ client: client(), evictionWatch: { policyIntervalMs: bad as number } })).toThrow(
        /evictionWatch\.policyIntervalMs/,
      );
    }
  });

  it('rejects a missing options object', () => {
    // @ts-expect-error: bad input on purpose
    expect(() => new RedisStore()).toThrow(RateLimitConfigError);
  });
});

describe('RedisStore plans', () => {
  const many = (n: number, prefix: string) =>
    Array.from({ length: n }, (_, i) => ({ name: `${prefix}${i}`, limit: i + 1, windowMs: 1000 }));

  it('refuses, when the limiter is created, a plan of more policies than one script holds (16, enforced and shadow together)', () => {
    const store = new RedisStore({ client: track(new Redis({ lazyConnect: true })) });
    expect(createLimiter({ name: 'a', policies: many(12, 'p'), shadow: { policies: many(4, 's') }, store }).policies).toHaveLength(12);
    expect(() => createLimiter({ name: 'b', policies: many(12, 'p'), shadow: { policies: many(5, 's') }, store })).toThrow(
      /ERR_RL_TOO_MANY_POLICIES/,
    );
    expect(() => createLimiter({ name: 'c', policies: many(17, 'p'), store })).toThrow(
      /ERR_RL_TOO_MANY_POLICIES: 'policies' and shadowPolicies together list 17 policies/,
    );
  });

  it('rejects such a plan on apply too (a caller that skipped prepare), without throwing', async () => {
    const store = new RedisStore({ client: track(new Redis({ lazyConnect: true })) });
    const big: StorePlan = Object.freeze({
      policies: many(17, 'p').map((p, i) => compilePolicy(p, `policies[${i}]`, false)),
      enforcedCount: 17,
    });
    await expect(store.apply('k', big, 1000, 0)).rejects.toMatchObject({ code: 'ERR_RL_TOO_MANY_POLICIES' });
  });
});

/** Whether `p` settles before the event loop's next check phase: answered from what is in memory, with no I/O or timer to wait for. */
function beforeTheLoopTurns(p: Promise<unknown>): Promise<boolean> {
  return Promise.race([
    p.then(
      () => true,
      () => true,
    ),
    new Promise<boolean>((resolve) => setImmediate(() => resolve(false))),
  ]);
}

describe('RedisStore fails fast when the client is not ready', () => {
  it('rejects at once while ioredis reconnects, instead of queueing the command', async () => {
    const client = track(new Redis({ port: await closedPort(), retryStrategy: () => 50 }));
    const store = new RedisStore({ client });
    expect(client.status).not.toBe('ready');
    const answer = Promise.resolve(store.apply('k', plan, 1000, 0)).then(
      () => undefined,
      (e: unknown) => e,
    );
    // At once: settled before the event loop turns (no I/O, no timer), however loaded the machine is.
    expect(await beforeTheLoopTurns(answer)).toBe(true);
    const error = await answer;
    expect(error).toBeInstanceOf(RedisStoreError);
    expect(error).toMatchObject({ code: 'ERR_RL_STORE_NOT_READY' });
    expect(String(error)).toMatch(/'(connecting|reconnecting)', not 'ready'/);
    await expect(store.reset('k', plan)).rejects.toMatchObject({ code: 'ERR_RL_STORE_NOT_READY' });
  });

  it("says once that a client that has ended ('end') will not reconnect, and answers at once", async () => {
    const client = track(new Redis({ port: await closedPort(), retryStrategy: () => null }));
    const warnings: unknown[][] = [];
    const store = new RedisStore({ client, logger: { warn: (...a: unknown[]) => void warnings.push(a), error() {} } });
    await new Promise<void>((resolve) => (client.status === 'end' ? resolve() : client.once('end', () => resolve())));
    for (let i = 0; i < 3; i++) {
      const error = await Promise.resolve(store.apply('k', plan, 1000, 0)).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'ERR_RL_STORE_NOT_READY' });
      // Before: "until the client is ready again", which an ended client never is.
      expect(String(error)).toMatch(/has ended \('end'\) and will not reconnect/);
    }
    const ended = warnings.filter((w) => (w[0] as { code?: string }).code === 'WRN_RL_CLIENT_ENDED');
    expect(ended).toHaveLength(1);
    expect(ended[0]?.[0]).toMatchObject({ store: 'redis' });
  });

  it('starts a lazyConnect client that has not connected yet, and still answers at once', async () => {
    const client = track(new Redis({ port: await closedPort(), lazyConnect: true, retryStrategy: () => null }));
    expect(client.status).toBe('wait');
    const store = new RedisStore({ client });
    await expect(store.apply('k', plan, 1000, 0)).rejects.toMatchObject({ code: 'ERR_RL_STORE_NOT_READY' });
    expect(client.status).not.toBe('wait');
  });

  it('lets the limiter wait for the first connection only, then answer by its failure mode with no wait and no unhandled rejection', async () => {
    // The client gives up on its first connection (status 'end'): the startup wait ends with it.
    const client = track(new Redis({ port: await closedPort(), retryStrategy: () => null }));
    const limiter = createLimiter({
      policies: { limit: 2, windowMs: 1000 },
      store: new RedisStore({ client }),
      onStoreError: 'open',
      logger: { warn() {}, error() {} },
    });
    expect(await limiter.check('k')).toMatchObject({ allowed: true, degraded: true, reason: 'store-error' });
    const answer = limiter.check('k');
    expect(await beforeTheLoopTurns(answer)).toBe(true);
    expect(await answer).toMatchObject({ allowed: true, degraded: true, reason: 'store-error' });
  });
});
