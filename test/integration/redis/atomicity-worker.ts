/**
 * @module A separate process for the atomicity suite: connects its own client (`CLIENT_KIND`: ioredis,
 * node-redis or iovalkey), waits for a 'go' message, fires its requests at one key all at once, and
 * reports how many were admitted.
 */
import { type AlgorithmId, createLimiter, RedisStore, type RedisStoreClient } from '@tollgate/core';
import { Redis } from 'ioredis';
import { Redis as Valkey } from 'iovalkey';
import { createClient } from 'redis';

interface Job {
  readonly algorithm: AlgorithmId | 'concurrency';
  readonly prefix: string;
  readonly limit: number;
  readonly requests: number;
}

const send = (message: unknown) => process.send?.(message);
const where = { host: '127.0.0.1', port: Number(process.env.REDIS_PORT) };
const kind = process.env.CLIENT_KIND ?? 'ioredis';
let client: RedisStoreClient;
let disconnect: () => unknown;
if (kind === 'node-redis') {
  const c = createClient({ socket: where });
  c.on('error', () => undefined);
  client = c;
  disconnect = () => c.destroy();
  c.connect().then(() => send({ ready: true }));
} else {
  const c =
    kind === 'iovalkey'
      ? new Valkey({ ...where, autoResendUnfulfilledCommands: false })
      : new Redis({ ...where, autoResendUnfulfilledCommands: false });
  c.on('error', () => undefined);
  c.once('ready', () => send({ ready: true }));
  client = c;
  disconnect = () => c.disconnect();
}

process.on('message', async (job: Job | 'exit') => {
  if (job === 'exit') {
    disconnect();
    process.exit(0);
  }
  const limiter = createLimiter({
    // A concurrency policy (leases held, never released here) beside a rate policy: one script decides both.
    policies:
      job.algorithm === 'concurrency'
        ? [
            { name: 'exports', algorithm: 'concurrency', limit: job.limit },
            { name: 'hourly', algorithm: 'fixed-window', limit: 10 * job.limit, windowMs: 3_600_000 },
          ]
        : { algorithm: job.algorithm, limit: job.limit, windowMs: 3_600_000 },
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
