/**
 * @module Atomicity: several processes, each with its own connection, hammer one key at the same moment;
 * for every algorithm, and for a concurrency policy whose leases are all held at once, exactly `limit`
 * requests are admitted (the read-compute-write is one script);
 * once per client (ioredis, node-redis, iovalkey).
 */
import type { ChildProcess } from 'node:child_process';
import type { AlgorithmId } from '@tollgate/core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeRedis, type RedisServer, randomPrefix, startRedis } from './harness.js';
import { nextMessage, startWorkers, stopWorkers } from './worker-pool.js';

const WORKERS = 4;
const REQUESTS = 40;
const LIMIT = 50;
const ALGORITHMS: readonly (AlgorithmId | 'concurrency')[] = [
  'fixed-window',
  'sliding-window',
  'token-bucket',
  'gcra',
  'leaky-bucket',
  'sliding-log',
  // Leases held by requests in flight, with a rate policy in the same script (leases.test.ts has the rest).
  'concurrency',
];

/** The clients the suite runs through (node-redis v4 is covered by the differential and store suites). */
const KINDS = ['ioredis', 'node-redis', 'iovalkey'] as const;

for (const kind of KINDS)
  describeRedis(`atomicity across processes (through ${kind})`, () => {
    let server: RedisServer;
    let workers: ChildProcess[] = [];

    beforeAll(async () => {
      server = await startRedis();
      workers = await startWorkers(new URL('./atomicity-worker.ts', import.meta.url), WORKERS, {
        REDIS_PORT: String(server.port),
        CLIENT_KIND: kind,
      });
    }, 60_000);

    afterAll(async () => {
      stopWorkers(workers);
      await server?.close();
    });

    for (const algorithm of ALGORITHMS) {
      it(`${algorithm}: ${WORKERS} processes x ${REQUESTS} concurrent requests on one key admit exactly ${LIMIT}`, async () => {
        const prefix = randomPrefix();
        const answers = workers.map((w) => nextMessage<{ admitted: number; degraded: number }>(w));
        for (const w of workers) w.send({ algorithm, prefix, limit: LIMIT, requests: REQUESTS });
        const results = await Promise.all(answers);
        expect(results.reduce((sum, r) => sum + r.degraded, 0)).toBe(0);
        expect(results.reduce((sum, r) => sum + r.admitted, 0)).toBe(LIMIT);
        // Every process took part: the requests really raced.
        expect(results.filter((r) => r.admitted > 0).length).toBeGreaterThan(1);
      });
    }
  });
