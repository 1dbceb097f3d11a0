/**
 * @module A separate process for the atomicity suite: connects its own ioredis client, waits for a
 * 'go' message, fires its requests at one key all at once, and reports how many were admitted.
 */
import { type AlgorithmId, createLimiter, RedisStore } from '@tollgate/core';
import { Redis } from 'ioredis';

interface Job {
  readonly algorithm: AlgorithmId;
  readonly prefix: string;
  readonly limit: number;
  readonly requests: number;
}

const send = (message: unknown) => process.send?.(message);
const client = new Redis({ host: '127.0.0.1', port: Number(process.env.REDIS_PORT) });
client.on('error', () => undefined);
client.once('ready', () => send({ ready: true }));

process.on('message', async (job: Job | 'exit') => {
  if (job === 'exit') {
    client.disconnect();
    process.exit(0);
  }
  const limiter = createLimiter({
    policies: { algorithm: job.algorithm, limit: job.limit, windowMs: 3_600_000 },
    store: new RedisStore({ client, prefix: job.prefix }),
    storeTimeoutMs: 30_000,
    onStoreError: 'closed',
  });
  const decisions = await Promise.all(Array.from({ length: job.requests }, () => limiter.check('hot-key')));
  send({
    admitted: decisions.filter((d) => d.allowed).length,
    degraded: decisions.filter((d) => d.degraded).length,
  });
});
