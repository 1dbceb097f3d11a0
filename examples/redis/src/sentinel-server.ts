/**
 * @module Starts the example through Redis Sentinel: ioredis in Sentinel mode against REDIS_SENTINELS
 * (`host:port,host:port`, default 127.0.0.1:26379) for the master named REDIS_MASTER_NAME (default
 * `mymaster`), on PORT (default 3000). `failoverDetector: true` makes the client leave a demoted master
 * as soon as the sentinels switch (packages/core/README.md, "Redis Sentinel"); the other options are
 * server.ts's: no offline queue, quick reconnects, no resending after a reconnect.
 */
import { Redis } from 'ioredis';
import { createApp } from './app.js';
import { logConnectionErrors } from './connection-errors.js';

const list = process.env.REDIS_SENTINELS ?? '127.0.0.1:26379';
const name = process.env.REDIS_MASTER_NAME ?? 'mymaster';
const port = Number(process.env.PORT ?? 3000);
const sentinels = list.split(',').map((hostPort) => {
  const [host = '127.0.0.1', p = '26379'] = hostPort.split(':');
  return { host, port: Number(p) };
});
const redis = new Redis({
  sentinels,
  name,
  failoverDetector: true,
  enableOfflineQueue: false,
  autoResendUnfulfilledCommands: false,
  retryStrategy: () => 50,
});
logConnectionErrors(redis, 'redis');

createApp({ redis }).listen(port, '127.0.0.1', () =>
  console.log(`listening on http://127.0.0.1:${port} (Redis: master '${name}' of ${list})`),
);
