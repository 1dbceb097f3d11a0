/**
 * @module A separate process for the stress suite: its own ioredis client and a limiter with the default
 * failure options (50 ms storeTimeoutMs, breaker on, onStoreError 'local'); on each job it fires its checks
 * at one key all at once and reports how many were admitted and how many were degraded.
 */
import { createLimiter, RedisStore } from '@tollgate/core';
import { send, serveJobs } from './worker-side.js';

interface Job {
  readonly prefix: string;
  readonly limit: number;
  readonly requests: number;
}

serveJobs<Job>(async (job, client) => {
  const limiter = createLimiter({
    policies: { algorithm: 'gcra', limit: job.limit, windowMs: 3_600_000 },
    store: new RedisStore({ client, prefix: job.prefix }),
    logger: { warn() {}, error() {} },
  });
  const decisions = await Promise.all(Array.from({ length: job.requests }, () => limiter.check('hot-key')));
  send({
    admitted: decisions.filter((d) => d.allowed && !d.degraded).length,
    degraded: decisions.filter((d) => d.degraded).length,
  });
  await limiter.close();
});
