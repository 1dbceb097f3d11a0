/**
 * @module A process of the Redis leases suite: a limiter with a concurrency policy and an hourly rate
 * policy on a RedisStore (one script decides both). Jobs: `burst` fires its requests at one key all at
 * once and holds what it got until every answer is in (how many were admitted together); `churn`
 * checks, holds a few ms and releases, counting holders in a Redis counter (the most ever in flight);
 * `hog` takes every slot with a short lease and waits to be killed.
 */
import { createLimiter, type Decision, RedisStore } from '@tollgate/core';
import { serveJobs } from './worker-side.js';

interface Job {
  readonly kind: 'burst' | 'churn' | 'hog';
  readonly prefix: string;
  readonly limit: number;
  readonly requests: number;
  readonly leaseMs: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

serveJobs<Job | 'go'>(async (job, client) => {
  // 'go' ends a burst's hold (below).
  if (job === 'go') return;
  const limiter = createLimiter({
    policies: [
      { name: 'exports', algorithm: 'concurrency', limit: job.limit, leaseMs: job.leaseMs },
      { name: 'hourly', algorithm: 'fixed-window', limit: 10_000, windowMs: 3_600_000 },
    ],
    store: new RedisStore({ client, prefix: job.prefix }),
    storeTimeoutMs: 30_000,
    onStoreError: 'closed',
  });
  if (job.kind === 'burst') {
    const decisions = await Promise.all(Array.from({ length: job.requests }, () => limiter.check('shared')));
    const admitted = decisions.filter((d) => d.allowed).length;
    process.send?.({ admitted, degraded: decisions.filter((d) => d.degraded).length });
    // Held until the suite has every answer, then given back.
    await new Promise((r) => process.once('message', r));
    for (const d of decisions) d.release?.();
    process.send?.({ released: true });
  } else if (job.kind === 'churn') {
    const counter = `${job.prefix}:holders`;
    let granted = 0;
    let maxSeen = 0;
    for (let i = 0; i < job.requests; i++) {
      const d: Decision = await limiter.check('shared');
      if (!d.allowed) {
        await sleep(1);
        continue;
      }
      granted += 1;
      maxSeen = Math.max(maxSeen, await client.incr(counter));
      await sleep(2 + (i % 5));
      // Out of the count before the lease is given back: the count never runs ahead of the leases.
      await client.decr(counter);
      d.release?.();
    }
    process.send?.({ granted, maxSeen });
  } else {
    const held = await Promise.all(Array.from({ length: job.limit }, () => limiter.check('shared')));
    process.send?.({ held: held.filter((d) => d.allowed).length });
  }
});
