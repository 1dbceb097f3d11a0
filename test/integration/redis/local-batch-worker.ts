/**
 * @module A separate process for the localBatch fault suite: decides one hot key through a RedisStore
 * with `localBatch` until it holds a batch, reports what it admitted and holds, then waits to be killed.
 */
import { type AlgorithmId, createLimiter, RedisStore } from '@tollgate/core';
import { send, serveJobs } from './worker-side.js';

interface Job {
  readonly algorithm: AlgorithmId;
  readonly prefix: string;
  readonly limit: number;
  readonly windowMs: number;
  /** fixed-window: `'first-request'`, so a run never straddles a clock-aligned boundary. */
  readonly anchor?: 'first-request';
}

serveJobs<Job>(async (job, client) => {
  // holdMs far beyond the test: the units stay held until the process dies.
  const store = new RedisStore({ client, prefix: job.prefix, localBatch: { minRate: 1, holdMs: 600_000, maxShare: 0.5 } });
  const limiter = createLimiter({
    name: 'faults',
    policies: {
      name: 'api',
      algorithm: job.algorithm,
      limit: job.limit,
      windowMs: job.windowMs,
      ...(job.anchor && { anchor: job.anchor }),
    },
    store,
    storeTimeoutMs: 30_000,
    onStoreError: 'closed',
  });
  let admitted = 0;
  for (let i = 0; i < 100_000 && !(store.localBatchHeld > 0 && i > 200); i++) {
    if ((await limiter.check('hot')).allowed) admitted += 1;
  }
  send({ admitted, held: store.localBatchHeld / 1000 });
});
