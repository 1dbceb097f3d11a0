/**
 * @module Starts the example against REDIS_URL (default redis://127.0.0.1:6379) on PORT (default 3000).
 */
import { Redis } from 'ioredis';
import { createApp } from './app.js';
import { logConnectionErrors } from './connection-errors.js';

const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const port = Number(process.env.PORT ?? 3000);
// No offline queue, quick reconnects (and quick ready checks while a restarted Redis loads its data):
// while Redis is away the limiters answer by their failure mode, and the outage ends when the client is
// ready again. No resending after a reconnect: Redis may already have run those calls (WRN_RL_CLIENT_RESENDS).
const redis = new Redis(url, {
  enableOfflineQueue: false,
  autoResendUnfulfilledCommands: false,
  retryStrategy: () => 50,
  maxLoadingRetryTime: 50,
});
logConnectionErrors(redis, 'redis');

createApp({ redis }).listen(port, '127.0.0.1', () => console.log(`listening on http://127.0.0.1:${port} (Redis at ${url})`));
