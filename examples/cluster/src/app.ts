/**
 * @module The example app: a Fastify API limited per API key with three policies (a burst, an hourly
 * quota and a shadow candidate) applied in one Lua call on whichever cluster node owns the key's slot.
 */
import { keys, type Logger, RedisStore, type RedisStoreClient } from '@tollgate/core';
import fastifyRateLimit from '@tollgate/fastify';
import Fastify, { type FastifyInstance } from 'fastify';

export interface AppOptions {
  /** The cluster client: ioredis or iovalkey `Cluster`, or node-redis `createCluster()` (a single-node client works too). */
  redis: RedisStoreClient;
  /** Key prefix in Redis. Defaults to `'example'`. */
  prefix?: string;
  /** How long a check waits for Redis before failing open, in ms. Defaults to `50`. */
  storeTimeoutMs?: number;
  /** Where the limiter logs store failures and recoveries. Defaults to Fastify's request logger. */
  logger?: Logger;
}

export async function createApp({ redis, prefix = 'example', storeTimeoutMs = 50, logger }: AppOptions): Promise<FastifyInstance> {
  const app = Fastify();
  // Requests without an API key are refused before the limiter (registered first, so it runs first).
  app.addHook('onRequest', async (request, reply) => {
    if (typeof request.headers['x-api-key'] !== 'string') await reply.code(401).send({ error: 'send an x-api-key header' });
  });
  await app.register(fastifyRateLimit, {
    policies: [
      { name: 'burst', algorithm: 'token-bucket', limit: 5, windowMs: 1_000 },
      { name: 'hour', algorithm: 'fixed-window', limit: 1_000, windowMs: 3_600_000 },
    ],
    shadowPolicies: { name: 'strict', limit: 3, windowMs: 1_000 },
    key: keys.header('x-api-key'),
    store: new RedisStore({ client: redis, prefix }),
    onStoreError: 'open',
    storeTimeoutMs,
    ...(logger === undefined ? {} : { logger }),
  });
  app.get('/', async (request) => ({
    remaining: request.rateLimit?.remaining,
    degraded: request.rateLimit?.degraded,
    shadowWouldLimit: request.rateLimit?.shadow?.allowed === false,
  }));
  return app;
}
