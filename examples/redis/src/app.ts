/**
 * @module The example app: two endpoints limited through one Redis, each with the failure mode it needs.
 * Browsing fails open to an in-process limiter holding half of each limit; login fails closed (503).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createLimiter, type Decision, type Limiter, type Logger, type RedisClientLike, RedisStore } from '@tollgate/core';

export interface AppOptions {
  /** An ioredis `Redis` (or `Cluster`) client. */
  redis: RedisClientLike;
  /** Key prefix in Redis. Defaults to `'example'`. */
  prefix?: string;
  /** How long a check waits for Redis before the failure mode answers, in ms. Defaults to `50`. */
  storeTimeoutMs?: number;
  /** Where the limiters log store failures and recoveries. Defaults to `console`. */
  logger?: Logger;
}

export interface App {
  server: Server;
  browse: Limiter;
  login: Limiter;
}

function send(res: ServerResponse, d: Decision, body: Record<string, unknown>): void {
  const status = d.allowed ? 200 : d.reason === 'store-error' ? 503 : 429;
  res.statusCode = status;
  res.setHeader('content-type', 'application/json');
  res.setHeader('ratelimit', `"${d.policy}";r=${Math.floor(d.remaining)};t=${Math.ceil(d.resetMs / 1000)}`);
  if (!d.allowed) res.setHeader('retry-after', String(Math.max(1, Math.ceil(d.retryAfterMs / 1000))));
  res.end(JSON.stringify({ status, reason: d.reason, degraded: d.degraded, remaining: Math.floor(d.remaining), ...body }));
}

export function createApp({ redis, prefix = 'example', storeTimeoutMs = 50, logger = console }: AppOptions): App {
  const store = new RedisStore({ client: redis, prefix });
  const browse = createLimiter({
    policies: [
      { name: 'burst', limit: 10, windowMs: 10_000 },
      { name: 'minute', algorithm: 'sliding-window', limit: 100, windowMs: 60_000 },
    ],
    store,
    onStoreError: 'local', // availability first, but bounded: each instance may admit half of each limit
    localShare: 0.5,
    storeTimeoutMs,
    logger,
  });
  const login = createLimiter({
    policies: { name: 'login', algorithm: 'sliding-log', limit: 5, windowMs: 15 * 60_000 },
    store,
    onStoreError: 'closed', // never let a Redis outage open the door to password guessing
    storeTimeoutMs,
    logger,
  });

  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const key = `ip:${req.socket.remoteAddress}`;
    if (req.method === 'POST' && req.url === '/login') {
      send(res, await login.check(key), { endpoint: 'login' });
    } else if (req.method === 'GET' && req.url === '/') {
      send(res, await browse.check(key), { endpoint: 'browse' });
    } else {
      res.statusCode = 404;
      res.end();
    }
  });
  return { server, browse, login };
}
