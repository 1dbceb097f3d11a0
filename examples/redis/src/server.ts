/**
 * @module Starts the example against REDIS_URL (default redis://127.0.0.1:6379), or in Sentinel mode
 * against REDIS_SENTINELS (`host:port,...`, master REDIS_MASTER_NAME), on PORT (default 3000).
 */
import { Redis } from 'ioredis';
import { createApp } from './app.js';

const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const port = Number(process.env.PORT ?? 3000);
// REDIS_SENTINELS=host:port,host:port (and REDIS_MASTER_NAME, default 'mymaster'): Sentinel mode instead.
const sentinels = process.env.REDIS_SENTINELS?.split(',').map((hostPort) => {
  const [host = '127.0.0.1', p = '26379'] = hostPort.split(':');
  return { host, port: Number(p) };
});
// No offline queue, quick reconnects: while Redis is away the limiters answer by their failure mode.
// No resending after a reconnect: Redis may already have run those calls (WRN_RL_CLIENT_RESENDS).
const options = {
  enableOfflineQueue: false,
  autoResendUnfulfilledCommands: false,
  retryStrategy: (times: number) => Math.min(times * 100, 1000),
};
const redis =
  sentinels === undefined
    ? new Redis(url, options)
    : // failoverDetector: leave a demoted master as soon as the sentinels switch (packages/core/README.md, Redis Sentinel).
      new Redis({ ...options, sentinels, name: process.env.REDIS_MASTER_NAME ?? 'mymaster', failoverDetector: true });
redis.on('error', (error: Error) => console.error(`redis: ${error.message}`));

const where = sentinels === undefined ? url : `the master the sentinels ${process.env.REDIS_SENTINELS} name`;
createApp({ redis }).listen(port, () => console.log(`listening on http://127.0.0.1:${port} (Redis at ${where})`));
