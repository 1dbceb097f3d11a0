/**
 * @module Section B's subjects: tollgate's RedisStore (one policy, two policies, one enforced plus one
 * shadow), the peers' Redis stores and the bare EVALSHA token bucket, each driving one ioredis client.
 * `create` answers "not available" (with the reason) for a subject that cannot run.
 */
import FastifyRedisStore from '@fastify/rate-limit/store/RedisStore.js';
import { createLimiter, type Decision, type LimiterOptions, RedisStore } from '@tollgate/core';
import type { Redis } from 'ioredis';
import { RedisStore as RateLimitRedisStore } from 'rate-limit-redis';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import { flexibleConsume } from '../flexible-consume.js';
import type { Loaded } from '../optional-import.js';
import { TOKEN_BUCKET_LUA } from './token-bucket-script.js';

/**
 * 1000 per day: a quota no key reaches in a run (a few dozen decisions per key), and one that keeps a
 * key's state alive for minutes after one request in every algorithm (a GCRA or token-bucket key lives
 * as long as its debt, `windowMs / limit` per request), so Redis memory is measured on live keys.
 */
export const REDIS_WINDOW_MS = 86_400_000;
export const REDIS_ALLOW_LIMIT = 1000;

export interface RedisSubject<R = unknown> {
  decide(key: string): Promise<R>;
  allowed(result: R): boolean;
  close(): Promise<void>;
}

export interface RedisSubjectSpec {
  readonly id: string;
  readonly label: string;
  readonly kind: 'tollgate' | 'peer' | 'baseline';
  create(client: Redis): Promise<Loaded<RedisSubject>>;
}

/**
 * The limiter's failure handling, set so that every timed decision is one the store made. With the
 * defaults (`storeTimeoutMs: 50`, breaker on), a connection that delivers no reply for 50 ms of time this
 * process could read (failure/watchdog.ts) has its pending calls answered by `onStoreError`, and five
 * such outages in a row open its breaker: a redis-server that the machine's other load deschedules for
 * that long (it shares 2 cores with the client and more) would then time the failure mode instead of
 * the store. The watchdog runs as in production (one timer per limiter, not one per call); only its
 * timeout changes. The peers have no timeout.
 */
const MEASURE_THE_STORE = { storeTimeoutMs: 10_000, breaker: false } as const satisfies Partial<LimiterOptions>;

function tollgate(id: string, label: string, options: Omit<LimiterOptions, 'store'>): RedisSubjectSpec {
  return {
    id,
    label,
    kind: 'tollgate',
    async create(client) {
      const store = new RedisStore({ client, prefix: 'tg' });
      const limiter = createLimiter({ ...options, ...MEASURE_THE_STORE, store });
      const subject: RedisSubject<Decision> = {
        decide: (key) => limiter.check(key),
        // A degraded decision was answered without the store (onStoreError): unexpected here.
        allowed: (d) => d.allowed && !d.degraded,
        close: () => limiter.close(),
      };
      return { ok: true, value: subject as RedisSubject };
    },
  };
}

const evalshaCeiling: RedisSubjectSpec = {
  id: 'evalsha-token-bucket',
  label: 'bare EVALSHA token bucket (ceiling)',
  kind: 'baseline',
  async create(client) {
    const sha = (await client.script('LOAD', TOKEN_BUCKET_LUA)) as string;
    const interval = REDIS_WINDOW_MS / REDIS_ALLOW_LIMIT;
    const per = String(interval);
    const tolerance = String(interval * REDIS_ALLOW_LIMIT);
    const subject: RedisSubject<number> = {
      decide: (key) => client.evalsha(sha, 1, `tb:${key}`, per, tolerance) as Promise<number>,
      allowed: (r) => r === 1,
      close: async () => undefined,
    };
    return { ok: true, value: subject as RedisSubject };
  },
};

const rateLimitRedis: RedisSubjectSpec = {
  id: 'rate-limit-redis',
  label: 'rate-limit-redis (express-rate-limit)',
  kind: 'peer',
  async create(client) {
    // The client hookup from rate-limit-redis's README for ioredis.
    const store = new RateLimitRedisStore({
      sendCommand: (command: string, ...args: string[]) => client.call(command, ...args) as Promise<number>,
    });
    await store.init({ windowMs: REDIS_WINDOW_MS } as Parameters<typeof store.init>[0]);
    const subject: RedisSubject<{ totalHits: number }> = {
      decide: (key) => store.increment(key),
      allowed: (r) => r.totalHits <= REDIS_ALLOW_LIMIT,
      close: async () => undefined,
    };
    return { ok: true, value: subject as RedisSubject };
  },
};

const fastifyRedis: RedisSubjectSpec = {
  id: 'fastify-rate-limit-redis',
  label: '@fastify/rate-limit RedisStore',
  kind: 'peer',
  async create(client) {
    const store = new FastifyRedisStore(false, false, client);
    const subject: RedisSubject<{ current: number }> = {
      // Exactly how the plugin awaits its callback store.
      decide: (key) =>
        new Promise((resolve, reject) => {
          store.incr(key, (err, res) => (err ? reject(err) : resolve(res)), REDIS_WINDOW_MS, REDIS_ALLOW_LIMIT);
        }),
      allowed: (r) => r.current <= REDIS_ALLOW_LIMIT,
      close: async () => undefined,
    };
    return { ok: true, value: subject as RedisSubject };
  },
};

const flexibleRedis: RedisSubjectSpec = {
  id: 'rate-limiter-flexible-redis',
  label: 'rate-limiter-flexible RateLimiterRedis',
  kind: 'peer',
  async create(client) {
    const limiter = new RateLimiterRedis({ storeClient: client, points: REDIS_ALLOW_LIMIT, duration: REDIS_WINDOW_MS / 1000 });
    const subject: RedisSubject<boolean> = {
      decide: (key) => flexibleConsume(limiter, key),
      allowed: (r) => r,
      close: async () => undefined,
    };
    return { ok: true, value: subject as RedisSubject };
  },
};

const gcra = { algorithm: 'gcra', limit: REDIS_ALLOW_LIMIT, windowMs: REDIS_WINDOW_MS } as const;

export const REDIS_SUBJECTS: readonly RedisSubjectSpec[] = [
  tollgate('tollgate-redis-1', 'tollgate RedisStore, one policy (gcra)', { policies: [gcra] }),
  tollgate('tollgate-redis-2', 'tollgate RedisStore, two policies (gcra + daily fixed-window)', {
    policies: [
      { ...gcra, name: 'steady' },
      { name: 'daily', algorithm: 'fixed-window', limit: 10 * REDIS_ALLOW_LIMIT, windowMs: REDIS_WINDOW_MS },
    ],
  }),
  tollgate('tollgate-redis-shadow', 'tollgate RedisStore, gcra + shadow sliding-window', {
    policies: [gcra],
    shadow: { policies: [{ name: 'candidate', algorithm: 'sliding-window', limit: REDIS_ALLOW_LIMIT, windowMs: REDIS_WINDOW_MS }] },
  }),
  rateLimitRedis,
  fastifyRedis,
  flexibleRedis,
  evalshaCeiling,
];

export function redisSubject(id: string): RedisSubjectSpec {
  const spec = REDIS_SUBJECTS.find((s) => s.id === id);
  if (spec === undefined) throw new TypeError(`unknown Redis subject '${id}'`);
  return spec;
}
