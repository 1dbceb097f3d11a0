/**
 * @module Starts the example against REDIS_URL (default redis://127.0.0.1:6379) on PORT (default 3000).
 */
import { Redis } from 'ioredis';
import { createApp } from './app.js';

const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const port = Number(process.env.PORT ?? 3000);
// No offline queue, quick reconnects: while Redis is away the limiters answer by their failure mode.
// No resending after a reconnect: Redis may already have run those calls (WRN_RL_CLIENT_RESENDS).
const redis = new Redis(url, {
  enableOfflineQueue: false,
  autoResendUnfulfilledCommands: false,
  retryStrategy: (times) => Math.min(times * 100, 1000),
});
redis.on('error', (error: Error) => console.error(`redis: ${error.message}`));

createApp({ redis }).listen(port, () => console.log(`listening on http://127.0.0.1:${port} (Redis at ${url})`));
