/**
 * @module The example app: an API limited per API key with three policies (a burst, an hourly quota and
 * a shadow candidate) applied in one Lua call on whichever cluster node owns the key's slot.
 */
import { createServer, type Server } from 'node:http';
import { createLimiter, type Limiter, type Logger, type RedisClientLike, RedisStore } from '@tollgate/core';

export interface AppOptions {
  /** An ioredis `Cluster` (or `Redis`) client. */
  redis: RedisClientLike;
  /** Key prefix in Redis. Defaults to `'example'`. */
  prefix?: string;
  /** How long a check waits for Redis before failing open, in ms. Defaults to `50`. */
  storeTimeoutMs?: number;
  /** Where the limiter logs store failures and recoveries. Defaults to `console`. */
  logger?: Logger;
}

export function createApp({ redis, prefix = 'example', storeTimeoutMs = 50, logger = console }: AppOptions): {
  server: Server;
  limiter: Limiter;
} {
  const limiter = createLimiter({
    policies: [
      { name: 'burst', algorithm: 'token-bucket', limit: 5, windowMs: 1_000 },
      { name: 'hour', algorithm: 'fixed-window', limit: 1_000, windowMs: 3_600_000 },
    ],
    shadow: { policies: { name: 'strict', limit: 3, windowMs: 1_000 } },
    store: new RedisStore({ client: redis, prefix }),
    onStoreError: 'open',
    storeTimeoutMs,
    logger,
  });
  const server = createServer(async (req, res) => {
    const apiKey = req.headers['x-api-key'];
    if (typeof apiKey !== 'string' || apiKey === '') {
      res.statusCode = 401;
      res.end('{"error":"send an x-api-key header"}');
      return;
    }
    const d = await limiter.check(`apikey:${apiKey}`);
    res.statusCode = d.allowed ? 200 : 429;
    res.setHeader('content-type', 'application/json');
    if (!d.allowed) res.setHeader('retry-after', String(Math.max(1, Math.ceil(d.retryAfterMs / 1000))));
    res.end(
      JSON.stringify({
        allowed: d.allowed,
        policy: d.policy,
        remaining: Math.floor(d.remaining),
        degraded: d.degraded,
        shadowWouldLimit: d.shadow?.allowed === false,
      }),
    );
  });
  return { server, limiter };
}
