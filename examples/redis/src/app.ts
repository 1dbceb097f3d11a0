/**
 * @module The example app: Express, three endpoints limited through one Redis, each with the failure mode
 * it needs. Browsing fails open to an in-process limiter holding half of each limit; login fails closed
 * (503, never a 429 the client could not have earned). The public feed has one limit for the whole
 * fleet (a single hot key): its store takes batches of that key's budget (`localBatch`), so most checks
 * are answered in process, never over the limit. `GET /stats` shows what batching did.
 */
import { type Logger, RedisStore, type RedisStoreClient } from '@tollgate/core';
import { rateLimit } from '@tollgate/express';
import express, { type Express, type Request, type Response } from 'express';

export interface AppOptions {
  /** The Redis client: ioredis or iovalkey `Redis`/`Cluster`, node-redis `createClient()`/`createCluster()`, or `{ sendCommand }`. */
  redis: RedisStoreClient;
  /** Key prefix in Redis. Defaults to `'example'`. */
  prefix?: string;
  /** How long a check waits for Redis before the failure mode answers, in ms. Defaults to `50`. */
  storeTimeoutMs?: number;
  /** Where the limiters log store failures and recoveries. Defaults to `console`. */
  logger?: Logger;
  /** The feed's limit for the whole fleet, per 10 s. Defaults to `2000`. */
  feedLimit?: number;
}

export function createApp({ redis, prefix = 'example', storeTimeoutMs = 50, logger = console, feedLimit = 2000 }: AppOptions): Express {
  // The store reads Redis' maxmemory-policy again every 10 s while in use (30 s by default): a policy set to
  // evict while the app runs is logged once (WRN_RL_EVICTION_POLICY) and its evictions counted from then.
  const store = new RedisStore({ client: redis, prefix, evictionWatch: { policyIntervalMs: 10_000 } });
  // One key carries all of the feed's traffic: batches of its budget, charged in Redis first, answer
  // most checks in memory (docs/capacity.md). Other keys on this store would keep their round trip.
  const feedStore = new RedisStore({ client: redis, prefix, localBatch: true });
  const app = express();
  // Each limiter on the shared store has its own name (part of its key names): separate budgets, and
  // every instance of this app, running the same names, shares each one.
  const browse = rateLimit({
    name: 'browse',
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
  const login = rateLimit({
    name: 'login',
    policies: { name: 'login', algorithm: 'sliding-log', limit: 5, windowMs: 15 * 60_000 },
    store,
    onStoreError: 'closed', // never let a Redis outage open the door to password guessing
    storeTimeoutMs,
    logger,
  });
  const answer = (endpoint: string) => (req: Request, res: Response) => {
    res.json({ endpoint, remaining: req.rateLimit?.remaining, degraded: req.rateLimit?.degraded });
  };
  const feed = rateLimit({
    name: 'feed',
    policies: { name: 'fleet', algorithm: 'fixed-window', limit: feedLimit, windowMs: 10_000 },
    key: () => 'fleet', // one budget for every client of every instance
    store: feedStore,
    onStoreError: 'closed',
    storeTimeoutMs,
    logger,
  });
  app.get('/', browse, answer('browse'));
  app.post('/login', login, answer('login'));
  app.get('/feed', feed, answer('feed'));
  app.get('/stats', (_req, res) => {
    res.json({ feed: { ...feedStore.localBatchStats, heldMilli: feedStore.localBatchHeld } });
  });
  return app;
}
