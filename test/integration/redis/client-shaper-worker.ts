/**
 * @module A separate process for the client-shaper suite: its own ioredis connection and its own
 * `createShaper` on a `RedisStore`, all workers on one key. On a job it schedules its tasks at once
 * (each records the wall-clock time it started), cancels one if asked, and reports every outcome.
 */
import { createShaper, type RateLimitClientError } from '@tollgate/client';
import { RedisStore } from '@tollgate/core';
import { send, serveJobs } from './worker-side.js';

interface Job {
  readonly prefix: string;
  readonly tasks: number;
  readonly maxDelayMs: number;
  readonly cancelOne: boolean;
}

export interface WorkerReport {
  readonly scheduledAt: number;
  /** Per task: when it started, or the code it was rejected with. */
  readonly outcomes: ({ started: number } | { rejected: string })[];
  readonly cancelled: string | undefined;
}

serveJobs<Job>(async (job, client) => {
  const shaper = createShaper({
    policies: { name: 'partner', algorithm: 'sliding-log', limit: 10, windowMs: 1_000 },
    store: new RedisStore({ client, prefix: job.prefix }),
    key: 'sms-partner',
    maxDelayMs: job.maxDelayMs,
    onStoreError: 'closed',
    // A loaded CI machine can hold a reply longer than the default second; this suite is about sharing, not outages.
    storeTimeoutMs: 30_000,
  });
  const scheduledAt = Date.now();
  const pending = Array.from({ length: job.tasks }, () =>
    shaper
      .schedule(() => Date.now())
      .then(
        (started) => ({ started }),
        (e: RateLimitClientError) => ({ rejected: e.code }),
      ),
  );
  // Queued behind the others (lowest priority), then cancelled while it waits.
  let cancelled: Promise<string> | undefined;
  if (job.cancelOne) {
    const controller = new AbortController();
    cancelled = shaper
      .schedule(() => 'ran although cancelled', { signal: controller.signal, priority: -1 })
      .then(
        (v) => v,
        (e: Error) => e.name,
      );
    setTimeout(() => controller.abort(), 100);
  }
  const outcomes = await Promise.all(pending);
  const report: WorkerReport = { scheduledAt, outcomes, cancelled: await cancelled };
  await shaper.close();
  send(report);
});
