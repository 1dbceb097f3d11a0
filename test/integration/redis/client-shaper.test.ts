/**
 * @module @tollgate/client's shaper across processes (issue 28): four processes, each with its own
 * connection and its own shaper, share one 10-per-second budget on a real redis-server. Together they
 * start no more than the policy allows in any one-second window; tasks that cannot start before their
 * deadline are rejected (`ERR_RL_TASK_EXPIRED`), never run late; a cancelled task never runs and its
 * place goes to the others.
 */
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { WorkerReport } from './client-shaper-worker.js';
import { describeRedis, type RedisServer, randomPrefix, startRedis } from './harness.js';
import { nextMessage, startWorkers, stopWorkers } from './worker-pool.js';

const WORKERS = 4;
const TASKS = 10;
const MAX_DELAY_MS = 1_500;
/**
 * Starts are stamped by each process after Redis's reply reaches it, so two stamps can be closer than
 * the Redis `TIME`s that decided them by the reply latency of a loaded machine; windows are measured
 * that much shorter than a second (the policy's own window, on Redis's clock, is exact).
 */
const STAMP_SKEW_MS = 100;

/** The most timestamps in any left-open window (t - windowMs, t]. */
function maxInWindow(times: readonly number[], windowMs: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let max = 0;
  let lo = 0;
  for (let hi = 0; hi < sorted.length; hi++) {
    while ((sorted[lo] as number) <= (sorted[hi] as number) - windowMs) lo++;
    max = Math.max(max, hi - lo + 1);
  }
  return max;
}

describeRedis('client shaper: four processes share one 10/s budget through Redis', () => {
  let redis: RedisServer;
  let workers: ChildProcess[] = [];

  beforeAll(async () => {
    redis = await startRedis();
    workers = await startWorkers(new URL('./client-shaper-worker.ts', import.meta.url), WORKERS, { REDIS_PORT: String(redis.port) });
  });
  afterAll(async () => {
    stopWorkers(workers);
    await redis?.close();
  });

  it('no second starts more than 10, late tasks are rejected not run, a cancelled task never runs', async () => {
    const prefix = randomPrefix();
    const answers = workers.map((w) => nextMessage<WorkerReport>(w));
    workers.forEach((w, i) => {
      w.send({ prefix, tasks: TASKS, maxDelayMs: MAX_DELAY_MS, cancelOne: i === 0 });
    });
    const reports = await Promise.all(answers);

    const starts: number[] = [];
    let expired = 0;
    for (const r of reports) {
      for (const o of r.outcomes) {
        if ('started' in o) {
          starts.push(o.started);
          // Never late: every task that ran started before its deadline.
          expect(o.started - r.scheduledAt).toBeLessThanOrEqual(MAX_DELAY_MS);
        } else {
          expect(o.rejected).toBe('ERR_RL_TASK_EXPIRED');
          expired++;
        }
      }
    }
    expect(reports[0]?.cancelled).toBe('AbortError');
    expect(maxInWindow(starts, 1_000 - STAMP_SKEW_MS)).toBeLessThanOrEqual(10);
    // 40 tasks, 1.5 s each to start, 10 per second: the first second's 10 and the next second's 10 run
    // (the cancelled one took nothing), the rest cannot start in time. (A worker that got its job late
    // on a loaded machine has a later deadline, and may take a third second's slot.)
    expect(starts.length).toBeGreaterThanOrEqual(20);
    expect(starts.length).toBeLessThanOrEqual(30);
    expect(starts.length + expired).toBe(WORKERS * TASKS);
  });
});
