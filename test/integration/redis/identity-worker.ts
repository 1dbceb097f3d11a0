/**
 * @module A process of the limiter identity suite (issue 25): for each job, a limiter with the job's
 * `name` (or none) and one fixed-window policy on a RedisStore, `requests` checks of one key in a row,
 * and the number admitted sent back. Several of these stand for several instances of one app.
 */
import { createLimiter, RedisStore } from '@tollgate/core';
import { serveJobs } from './worker-side.js';

interface Job {
  readonly prefix: string;
  readonly name: string | undefined;
  readonly limit: number;
  readonly requests: number;
  readonly key: string;
}

serveJobs<Job>(async (job, client) => {
  const limiter = createLimiter({
    name: job.name,
    policies: { algorithm: 'fixed-window', limit: job.limit, windowMs: 3_600_000 },
    store: new RedisStore({ client, prefix: job.prefix }),
    storeTimeoutMs: 30_000,
    onStoreError: 'closed',
  });
  let admitted = 0;
  for (let i = 0; i < job.requests; i++) if ((await limiter.check(job.key)).allowed) admitted += 1;
  await limiter.close();
  process.send?.({ admitted });
});
